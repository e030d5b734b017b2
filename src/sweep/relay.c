/* The cells are forked by a launcher process, not by the sweep's own process.
 *
 * fork() write-protects every page of the forking process, and each page it writes afterwards
 * costs a fault (and, on a machine whose page-table changes are dear, a flush on every CPU
 * that ran it). The sweep's own process grows with the sweep: every cell's record, the sweep's
 * document, the progress. When it forked each cell itself it paid those faults again after
 * every cell, more the larger the sweep (3 ms a cell at 40 cells, 6 ms at 200). The launcher
 * is forked once, before the cells, and keeps the loop (local.c): its memory no longer grows,
 * so its forks stay cheap, and the sweep's process, which never forks again, writes its
 * records at no such cost.
 *
 * Each event of the loop is sent to the sweep's process, which runs the caller's on_event
 * there and answers whether to start no more cells, so the loop behaves exactly as if it ran
 * in the caller. The launcher is in a process group of its own: a Ctrl-C at the terminal
 * reaches the sweep's process alone, which passes each signal on once (twice would take the
 * cells' grace away), and it ends with SIGTERM if the sweep's process dies. */
#include "labbox/sweep.h"
#include "labbox/util.h"
#include "sweep_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define RELAY_DONE (-1)

/* One message: the event (or the loop's end), then its strings, each NUL-ended. */
typedef struct relay_head {
	int kind; /* lb_sweep_event_kind, or RELAY_DONE */
	size_t cell;
	bool has_slot;
	lb_sweep_slot slot;
	double estimate, wall, eta;
	int exit_code, signal;
	size_t running;
	uint32_t len[3]; /* run_id, run_dir, message (RELAY_DONE: err); 0 for NULL */
	int r;           /* RELAY_DONE */
	lb_sweep_local_result out;
} relay_head;

typedef struct relay_ctx {
	const lb_sweep_local *cfg; /* the caller's */
	int ev_fd, rep_fd;         /* to the sweep's process, and its answers */
} relay_ctx;

static int read_full(int fd, void *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = read(fd, (char *)buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -EPIPE : -errno;
		off += (size_t)n;
	}
	return 0;
}

static int send_msg(int fd, relay_head *h, const char *const s[3])
{
	lb_buf b = {0};
	for (int i = 0; i < 3; i++)
		h->len[i] = s[i] ? (uint32_t)strlen(s[i]) + 1 : 0;
	int r = lb_buf_append(&b, h, sizeof *h);
	for (int i = 0; r == 0 && i < 3; i++)
		if (s[i])
			r = lb_buf_append(&b, s[i], h->len[i]);
	if (r == 0)
		r = lb_write_all(fd, b.data, b.len);
	lb_buf_free(&b);
	return r;
}

/* In the launcher: the event to the sweep's process, and its answer. A sweep's process that
 * is gone answers stop. */
static int relay_event(void *vctx, const lb_sweep_event *ev)
{
	relay_ctx *rc = vctx;
	relay_head h = {.kind = (int)ev->kind, .cell = ev->cell, .has_slot = ev->slot != NULL,
			.estimate = ev->estimate, .wall = ev->wall, .eta = ev->eta,
			.exit_code = ev->exit_code, .signal = ev->signal, .running = ev->running};
	if (ev->slot)
		h.slot = *ev->slot;
	const char *s[3] = {ev->run_id, ev->run_dir, ev->message};
	char answer = '1';
	if (send_msg(rc->ev_fd, &h, s) < 0 || read_full(rc->rep_fd, &answer, 1) < 0)
		return 1;
	return answer == '1';
}

/* In a cell's child: the relay's pipes are the launcher's alone. */
static int relay_run_cell(void *vctx, size_t cell, const lb_sweep_slot *slot, int report_fd)
{
	relay_ctx *rc = vctx;
	close(rc->ev_fd);
	close(rc->rep_fd);
	return rc->cfg->run_cell(rc->cfg->ctx, cell, slot, report_fd);
}

__attribute__((noreturn)) static void launcher_main(const lb_sweep_local *cfg, const size_t *todo,
						    size_t ntodo, int ev_fd, int rep_fd,
						    const sigset_t *oldmask)
{
	/* The caller's mask: the loop blocks what it reads itself, and each cell starts from
	 * what was blocked before it. */
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	signal(SIGPIPE, SIG_IGN); /* a sweep's process that is gone is a failed write */
	relay_ctx rc = {.cfg = cfg, .ev_fd = ev_fd, .rep_fd = rep_fd};
	lb_sweep_local lc = *cfg;
	lc.ctx = &rc;
	lc.run_cell = relay_run_cell;
	lc.on_event = cfg->on_event ? relay_event : NULL;
	lb_sweep_local_result res;
	char err[512] = "";
	int r = lb_sweep_run_cells(&lc, todo, ntodo, &res, err, sizeof err);
	relay_head h = {.kind = RELAY_DONE, .r = r, .out = res};
	const char *s[3] = {NULL, NULL, err[0] ? err : NULL};
	fflush(NULL);
	_exit(send_msg(ev_fd, &h, s) < 0 ? 125 : 0);
}

/* In the sweep's process: one message of the launcher, handled. Returns 1 at its end (out,
 * *r and err filled), 0 for an event, < 0 when the launcher is gone without its end. */
static int relay_one(const lb_sweep_local *cfg, int ev_fd, int rep_fd, lb_sweep_local_result *out,
		     int *r, char *err, size_t errlen)
{
	relay_head h;
	int rr = read_full(ev_fd, &h, sizeof h);
	if (rr < 0)
		return rr;
	char *s[3] = {NULL, NULL, NULL};
	for (int i = 0; rr == 0 && i < 3; i++) {
		if (!h.len[i])
			continue;
		if (!(s[i] = malloc(h.len[i])))
			rr = -ENOMEM;
		else if ((rr = read_full(ev_fd, s[i], h.len[i])) == 0)
			s[i][h.len[i] - 1] = '\0';
	}
	int done = 0;
	if (rr == 0 && h.kind == RELAY_DONE) {
		*out = h.out;
		*r = h.r;
		if (s[2])
			snprintf(err, errlen, "%s", s[2]);
		done = 1;
	} else if (rr == 0) {
		lb_sweep_event ev = {.kind = (lb_sweep_event_kind)h.kind, .cell = h.cell,
				     .slot = h.has_slot ? &h.slot : NULL, .estimate = h.estimate,
				     .exit_code = h.exit_code, .run_id = s[0], .run_dir = s[1],
				     .wall = h.wall, .message = s[2], .running = h.running,
				     .signal = h.signal, .eta = h.eta};
		char answer = cfg->on_event && cfg->on_event(cfg->ctx, &ev) ? '1' : '0';
		rr = lb_write_all(rep_fd, &answer, 1);
	}
	for (int i = 0; i < 3; i++)
		free(s[i]);
	return rr < 0 ? rr : done;
}

int lb_sweep_run_local(const lb_sweep_local *cfg, const size_t *todo, size_t ntodo,
		       lb_sweep_local_result *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int ev[2], rep[2];
	if (pipe2(ev, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(rep, O_CLOEXEC) < 0) {
		int e = -errno;
		close(ev[0]);
		close(ev[1]);
		return e;
	}
	sigset_t mask, oldmask;
	lb_block_stop_signals(&mask, &oldmask);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	int r = sfd < 0 ? -errno : 0;
	pid_t launcher = -1;
	if (r == 0) {
		fflush(NULL);
		pid_t parent = getpid();
		launcher = fork();
		if (launcher < 0)
			r = -errno;
		if (launcher == 0) {
			close(ev[0]);
			close(rep[1]);
			close(sfd);
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() != parent)
				_exit(128 + SIGTERM);
			launcher_main(cfg, todo, ntodo, ev[1], rep[0], &oldmask);
		}
	}
	close(ev[1]);
	close(rep[0]);
	if (launcher > 0)
		setpgid(launcher, launcher); /* also here, so a signal right after finds it */
	bool done = false;
	while (r == 0 && !done) {
		struct pollfd pfd[2] = {{.fd = ev[0], .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(pfd, 2, -1) < 0) {
			if (errno != EINTR)
				r = -errno;
			continue;
		}
		/* Signals first: a stop reaches the running cells before the next event is told. */
		for (struct signalfd_siginfo si; read(sfd, &si, sizeof si) == sizeof si;)
			if (si.ssi_signo != SIGCHLD)
				kill(launcher, (int)si.ssi_signo);
		if (pfd[0].revents) {
			int rr = relay_one(cfg, ev[0], rep[1], out, &r, err, errlen);
			if (rr < 0) {
				snprintf(err, errlen, "the sweep's cell launcher ended before the sweep did "
					 "(%s)", strerror(-rr));
				r = rr;
			}
			done = rr == 1;
		}
	}
	close(ev[0]);
	close(rep[1]);
	if (launcher > 0) {
		if (!done)
			kill(launcher, SIGTERM);
		while (waitpid(launcher, NULL, 0) < 0 && errno == EINTR)
			;
	}
	/* A signal that came after the last cell ended is still this sweep's: counted, and
	 * taken off the queue so that unblocking does not kill the caller before it writes the
	 * sweep's document. */
	for (struct signalfd_siginfo si; sfd >= 0 && read(sfd, &si, sizeof si) == sizeof si;)
		if (si.ssi_signo != SIGCHLD && !out->stop_signal)
			out->stop_signal = (int)si.ssi_signo;
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return r;
}
