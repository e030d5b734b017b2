/* libFuzzer target: the records a Colab worker writes into the shared Drive folder (done/ID/
 * exit.json, running/ID/heartbeat.json) are outside input; their parsers never crash, leak or
 * read out of bounds, and what they accept is within the bounds they promise. */
#include "labbox/backend.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		abort(); /* not terminated inside its field */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort(); /* a control character would reach the user's terminal */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	lb_colab_exit e;
	if (lb_colab_exit_parse((const char *)data, size, &e, err, sizeof err) == 0) {
		check_str(e.status, sizeof e.status);
		check_str(e.worker, sizeof e.worker);
		check_str(e.host, sizeof e.host);
		check_str(e.version, sizeof e.version);
		check_str(e.python, sizeof e.python);
		check_str(e.error, sizeof e.error);
		if (e.exit_code < -1 || e.exit_code > 255 || e.signal < 0 || e.signal > 64 ||
		    e.wall_s < 0)
			abort();
	}
	lb_colab_heartbeat h;
	if (lb_colab_heartbeat_parse((const char *)data, size, &h, err, sizeof err) == 0) {
		check_str(h.worker, sizeof h.worker);
		check_str(h.time, sizeof h.time);
		check_str(h.state, sizeof h.state);
		if (h.beat < 0 || !h.worker[0])
			abort();
	}
	return 0;
}
