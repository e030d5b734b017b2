/* The experiment's output echoed to the user: through lb_term_filter when it goes to a
 * terminal (what the terminal would obey is shown instead), byte for byte into a pipe or a
 * file, where nothing interprets it and a caller may want the exact bytes. */
#include "cli.h"
#include "labbox/util.h"

#include <unistd.h>

void cli_echo_init(cli_echo *e, int fd)
{
	*e = (cli_echo){.fd = fd, .tty = isatty(fd) == 1};
}

void cli_echo_write(cli_echo *e, const char *data, size_t len, bool final)
{
	if (e->broken)
		return;
	if (!e->tty) {
		if (len && lb_write_all(e->fd, data, len) < 0)
			e->broken = true;
		return;
	}
	lb_buf b = {0};
	if (lb_term_filter(&e->state, data, len, final, &b) < 0 ||
	    (b.len && lb_write_all(e->fd, b.data, b.len) < 0))
		e->broken = true;
	lb_buf_free(&b);
}
