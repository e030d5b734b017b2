/* gate: the reading side of the events channel, a FIFO drained while the run lasts. */
#include "labbox/gate.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Reads what the FIFO holds now, line by line (lb_gate_channel_feed). */
static void drain(lb_gate_channel *ch, bool at_end)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = read(ch->fd[0], chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EAGAIN: empty for now; never EOF, labbox holds a write end */
		/* -ENOMEM: what is lost is counted nowhere; the lines kept stay */
		lb_gate_channel_feed(ch, chunk, (size_t)n, false);
	}
	if (at_end)
		lb_gate_channel_feed(ch, NULL, 0, true);
}

static void *reader(void *arg)
{
	lb_gate_channel *ch = arg;
	struct pollfd p[2] = {{.fd = ch->fd[0], .events = POLLIN}, {.fd = ch->stop, .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			drain(ch, false);
		if (p[1].revents)
			break;
	}
	/* The run's processes are gone: what they wrote last is in the pipe. */
	drain(ch, true);
	return NULL;
}

int lb_gate_channel_start(lb_gate_channel *ch, lb_gate_paths *p)
{
	memset(ch, 0, sizeof *ch);
	ch->fd[0] = p->fd[0];
	ch->fd[1] = p->fd[1];
	p->fd[0] = p->fd[1] = -1;
	ch->stop = eventfd(0, EFD_CLOEXEC);
	ch->buf = malloc(LB_GATE_MAX_READ);
	ch->line = malloc(LB_GATE_MAX_LINE);
	ch->kept = json_object_new_array();
	int r = 0;
	if (ch->fd[0] < 0 || ch->stop < 0 || !ch->buf || !ch->line || !ch->kept)
		r = ch->fd[0] < 0 ? -EBADF : ch->stop < 0 ? -errno : -ENOMEM;
	else {
		/* With every signal blocked: the sandbox waits for its child's SIGCHLD on a
		 * signalfd, and a thread that left it unblocked would take it and drop it. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		if ((r = pthread_create(&ch->th, NULL, reader, ch)) != 0)
			r = -r;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	ch->running = r == 0;
	if (r < 0)
		lb_gate_channel_free(ch); /* stops too; buf NULL: the channel reads as unreadable */
	return r;
}

void lb_gate_channel_stop(lb_gate_channel *ch)
{
	if (ch->running) {
		uint64_t one = 1;
		while (write(ch->stop, &one, sizeof one) < 0 && errno == EINTR)
			;
		pthread_join(ch->th, NULL);
		ch->running = false;
	}
	int *fds[] = {&ch->fd[0], &ch->fd[1], &ch->stop};
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

void lb_gate_channel_free(lb_gate_channel *ch)
{
	lb_gate_channel_stop(ch);
	free(ch->buf);
	ch->buf = NULL;
	free(ch->line);
	ch->line = NULL;
	json_object_put(ch->kept);
	ch->kept = NULL;
}
