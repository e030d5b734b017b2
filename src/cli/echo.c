/* The experiment's output echoed to the user, through lb_term_filter: what a terminal would
 * obey is shown instead. Into a pipe or a file too, for run and rerun: `labbox run exp | tee
 * log` and `| less -R` end at a terminal, the echo is only a copy of what run.log keeps byte
 * for byte, and what passes the filter (text, \t, \n, colours) leaves a plain line such as a
 * metric line unchanged for grep. exec's output into a pipe is its command's product, as
 * docker exec's is, and stays exact (cli_echo_init's exact).
 *
 * The echo never holds the supervisor: writes to the terminal or pipe happen on a thread of
 * their own, fed through a bounded ring, so a reader that stops reading (`labbox run | less`
 * left alone) cannot keep labbox from ending the run at its budget. What does not fit in the
 * ring while nobody reads is not shown (run.log has all of it), and the end says how much. The
 * thread allocates nothing and takes no lock but the ring's: the sandbox is cloned (raw clone,
 * no atfork handlers) while it runs. */
#include "cli.h"
#include "labbox/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ECHO_RING ((size_t)1 << 20)
#define ECHO_CHUNK 16384

void cli_echo_init(cli_echo *e, int fd, bool exact)
{
	*e = (cli_echo){.fd = fd, .tty = !exact || isatty(fd) == 1};
}

static void *echo_thread(void *arg)
{
	cli_echo *e = arg;
	char chunk[ECHO_CHUNK];
	pthread_mutex_lock(&e->mu);
	for (;;) {
		while (!e->len && !e->closing)
			pthread_cond_wait(&e->cv, &e->mu);
		if (!e->len)
			break;
		size_t n = e->len < sizeof chunk ? e->len : sizeof chunk;
		size_t first = ECHO_RING - e->head < n ? ECHO_RING - e->head : n;
		memcpy(chunk, e->ring + e->head, first);
		memcpy(chunk + first, e->ring, n - first);
		e->head = (e->head + n) % ECHO_RING;
		e->len -= n;
		pthread_cond_broadcast(&e->cv); /* room, for a held echo's writer */
		pthread_mutex_unlock(&e->mu);
		int r = lb_write_all(e->fd, chunk, n);
		pthread_mutex_lock(&e->mu);
		if (r < 0) {
			e->broken = true;
			e->err = -r;
			e->len = 0;
			pthread_cond_broadcast(&e->cv);
			break;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static bool start(cli_echo *e)
{
	if (e->started)
		return true;
	if (!(e->ring = malloc(ECHO_RING)))
		return false;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	if (pthread_create(&e->thread, NULL, echo_thread, e) != 0) {
		free(e->ring);
		e->ring = NULL;
		return false;
	}
	e->started = true;
	return true;
}

static double echo_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether a held echo stops waiting for its reader: the budget is over, or labbox was
 * interrupted (the supervisor must get back to ending the command). */
static bool hold_over(const cli_echo *e)
{
	return lb_interrupt_pending() || (e->hold_until > 0 && echo_now() >= e->hold_until);
}

/* Into the ring, as much as it has room for; the rest is counted as not shown. A held echo
 * (exec's stdout) waits for room instead, as a pipe makes its writer wait. */
static void enqueue(cli_echo *e, const char *data, size_t len)
{
	pthread_mutex_lock(&e->mu);
	while (len && !e->broken) {
		size_t room = ECHO_RING - e->len;
		if (!room && e->hold && !hold_over(e)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
			continue;
		}
		size_t n = len < room ? len : room;
		size_t tail = (e->head + e->len) % ECHO_RING;
		size_t first = ECHO_RING - tail < n ? ECHO_RING - tail : n;
		memcpy(e->ring + tail, data, first);
		memcpy(e->ring, data + first, n - first);
		e->len += n;
		data += n;
		len -= n;
		pthread_cond_broadcast(&e->cv);
		if (!e->hold || hold_over(e))
			break;
	}
	if (!e->broken)
		e->dropped += len;
	pthread_mutex_unlock(&e->mu);
}

void cli_echo_hold(cli_echo *e, double seconds)
{
	e->hold = true;
	e->hold_until = seconds > 0 ? echo_now() + seconds : 0;
}

static void finish(cli_echo *e)
{
	if (!e->started)
		return;
	pthread_mutex_lock(&e->mu);
	e->closing = true;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	/* the run is over: waiting for a slow reader now holds nothing but labbox's exit */
	pthread_join(e->thread, NULL);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e->ring);
	e->ring = NULL;
	e->started = false;
	if (e->dropped && !e->broken && e->hold)
		fprintf(stderr, "labbox: %llu bytes of the command's output were not written: its "
			"reader had not taken them when the budget ended the command or labbox was "
			"interrupted\n", (unsigned long long)e->dropped);
	else if (e->dropped && !e->broken)
		fprintf(stderr, "labbox: %llu bytes of the experiment's output were not shown: nothing "
			"read labbox's output while the run went on (run.log has all of it)\n",
			(unsigned long long)e->dropped);
}

void cli_echo_write(cli_echo *e, const char *data, size_t len, bool final)
{
	if (e->broken && !e->started)
		return;
	lb_buf b = {0};
	const char *out = data;
	size_t n = len;
	if (e->tty) {
		if (lb_term_filter(&e->state, data, len, final, &b) < 0)
			e->broken = true;
		out = b.data;
		n = e->broken ? 0 : b.len;
	}
	if (n && (e->started || start(e)))
		enqueue(e, out, n);
	else if (n) { /* no thread to be had: as before */
		int r = lb_write_all(e->fd, out, n);
		if (r < 0) {
			e->broken = true;
			e->err = -r;
		}
	}
	lb_buf_free(&b);
	if (final)
		finish(e);
}

void cli_echo_break(cli_echo *e)
{
	if (!e->started && !e->state.held && !e->state.rows && !e->state.row && !e->state.sgr)
		return; /* nothing echoed since the last break */
	cli_echo_write(e, NULL, 0, true);
	e->state = (lb_term_filter_state){0};
	e->dropped = 0;
	e->closing = false;
}
