/* Cells on this machine's cores: one forked child per running cell, each pinned to its share
 * of the CPUs, supervised from one poll loop with the signals read through a signalfd.
 *
 * Children rather than threads: the run pipeline and the sandbox supervise with process-wide
 * state (a blocked signal mask and a signalfd, SIGCHLD for their own children), which one
 * process can hold for one run at a time. A child per cell keeps every run exactly what
 * `labbox run` does, without exec'ing labbox again. The loop runs in a launcher process of its
 * own (relay.c), whose memory stays small and still, so that each fork copies little. */
#include "labbox/sweep.h"
#include "labbox/util.h"
#include "sweep_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

void lb_sweep_slot_cpus(const cpu_set_t *avail, size_t slot, double share, cpu_set_t *out)
{
	int ids[CPU_SETSIZE];
	size_t n = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, avail))
			ids[n++] = c;
	CPU_ZERO(out);
	if (n == 0)
		return;
	if (!(share > 0))
		share = 1;
	/* The small epsilon keeps 3 * (2/3) from rounding up into a CPU of the next slot. */
	size_t first = (size_t)floor((double)slot * share + 1e-9);
	size_t last = (size_t)ceil((double)(slot + 1) * share - 1e-9);
	if (last <= first)
		last = first + 1;
	if (last - first > n)
		last = first + n;
	for (size_t i = first; i < last; i++)
		CPU_SET(ids[i % n], out);
}

size_t lb_sweep_default_jobs(size_t ncpus, double cpus)
{
	if (ncpus == 0)
		return 1;
	double per = cpus > 0 ? cpus : 1;
	size_t j = (size_t)floor((double)ncpus / per + 1e-9);
	return j ? j : 1;
}

double lb_sweep_eta(const double *finished_wall, size_t nfinished, const double *running_elapsed,
		    const double *running_estimate, size_t nrunning, size_t npending, size_t jobs)
{
	/* A cell's expected duration: the mean of finished cells once there are some (they
	 * include labbox's own set-up and collection), else the experiments' TIME_ESTIMATEs. */
	double per = -1;
	if (nfinished) {
		double s = 0;
		for (size_t i = 0; i < nfinished; i++)
			s += finished_wall[i];
		per = s / (double)nfinished;
	} else {
		double s = 0;
		size_t k = 0;
		for (size_t i = 0; i < nrunning; i++)
			if (running_estimate[i] >= 0) {
				s += running_estimate[i];
				k++;
			}
		if (k)
			per = s / (double)k;
	}
	if (per < 0)
		return nrunning + npending == 0 ? 0 : -1;
	double total = 0, longest = 0;
	for (size_t i = 0; i < nrunning; i++) {
		double expect = running_estimate[i] >= 0 ? running_estimate[i] : per;
		double left = expect - running_elapsed[i];
		left = left > 0 ? left : 0;
		total += left;
		longest = left > longest ? left : longest;
	}
	total += per * (double)npending;
	double eta = total / (double)(jobs ? jobs : 1);
	return eta > longest ? eta : longest;
}

/* `TIME_ESTIMATE: 12.5s` (the seed's line), anywhere a line starts. */
static double parse_estimate(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	static const char key[] = "TIME_ESTIMATE:";
	if (strncmp(line, key, sizeof key - 1) != 0)
		return -1;
	char *end;
	double v = strtod(line + sizeof key - 1, &end);
	if (end == line + sizeof key - 1 || !isfinite(v) || v < 0)
		return -1;
	return v;
}

double lb_sweep_estimate_feed(lb_sweep_estimate_scan *s, const char *data, size_t len)
{
	double found = -1;
	for (size_t i = 0; i < len; i++) {
		char ch = data[i];
		if (ch == '\n' || ch == '\r') {
			if (!s->overlong) {
				s->line[s->len] = '\0';
				double v = parse_estimate(s->line);
				if (v >= 0)
					found = v;
			}
			s->len = 0;
			s->overlong = false;
			continue;
		}
		if (s->len + 1 >= sizeof s->line)
			s->overlong = true; /* no estimate line is this long */
		else
			s->line[s->len++] = ch;
	}
	return found;
}

int lb_sweep_report_estimate(int report_fd, double seconds)
{
	char line[64];
	int n = snprintf(line, sizeof line, "E %.3f\n", seconds);
	return lb_write_all(report_fd, line, (size_t)n);
}

int lb_sweep_estimate_store(int fd, double seconds)
{
	char rec[32];
	/* One fixed-width record at offset 0: a reader never sees a shorter one half-written
	 * over a longer one. */
	int n = snprintf(rec, sizeof rec, "%20.3f\n", seconds);
	if (n < 0 || (size_t)n >= sizeof rec)
		return -EINVAL;
	ssize_t w = pwrite(fd, rec, (size_t)n, 0);
	return w == n ? 0 : w < 0 ? -errno : -EIO;
}

double lb_sweep_estimate_load(const char *dir, size_t cell)
{
	char path[PATH_MAX], rec[32];
	if (snprintf(path, sizeof path, "%s/%zu", dir, cell) >= (int)sizeof path)
		return -1;
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, rec, sizeof rec - 1, 0);
	if (n <= 0)
		return -1;
	rec[n] = '\0';
	char *end;
	double v = strtod(rec, &end);
	return end != rec && isfinite(v) && v >= 0 ? v : -1;
}

int lb_sweep_report_done(int report_fd, int exit_code, const char *run_id, const char *run_dir)
{
	lb_buf b = {0};
	/* Tabs and newlines cannot occur in a run id or in the run directory labbox made. */
	int r = lb_buf_printf(&b, "R %d\t%s\t%s\n", exit_code, run_id ? run_id : "",
			      run_dir ? run_dir : "");
	if (r == 0)
		r = lb_write_all(report_fd, b.data, b.len);
	lb_buf_free(&b);
	return r;
}

int lb_sweep_report_error(int report_fd, const char *message)
{
	lb_buf b = {0};
	int r = lb_buf_puts(&b, "X ");
	for (const char *p = message; r == 0 && *p; p++)
		r = lb_buf_append(&b, *p == '\n' ? " " : p, 1);
	if (r == 0)
		r = lb_buf_puts(&b, "\n");
	if (r == 0)
		r = lb_write_all(report_fd, b.data, b.len);
	lb_buf_free(&b);
	return r;
}

int lb_sweep_jobs_resolve(size_t jobs, double cpus, size_t *out, char *err, size_t errlen)
{
	cpu_set_t avail;
	if (sched_getaffinity(0, sizeof avail, &avail) < 0)
		return -errno;
	size_t ncpu = (size_t)CPU_COUNT(&avail);
	if (!jobs)
		jobs = lb_sweep_default_jobs(ncpu, cpus);
	if (cpus > 0 && (double)jobs * cpus > (double)ncpu + 1e-9) {
		snprintf(err, errlen,
			 "--jobs %zu with --cpus %g per cell needs %g CPUs; labbox may use %zu here: "
			 "lower --jobs (or --cpus) so the cells do not oversubscribe the machine",
			 jobs, cpus, (double)jobs * cpus, ncpu);
		return -EINVAL;
	}
	if (cpus <= 0 && jobs > ncpu) {
		snprintf(err, errlen,
			 "--jobs %zu is more cells at once than the %zu CPUs labbox may use here; "
			 "give each a fraction with --cpus (e.g. --cpus %.2g) to share CPUs on purpose",
			 jobs, ncpu, (double)ncpu / (double)jobs);
		return -EINVAL;
	}
	*out = jobs;
	return 0;
}

/* A cell that finished well, told after its slot has its next cell: writing the sweep's
 * document (and its sync) then overlaps that cell instead of leaving the CPU idle. */
typedef struct finished {
	lb_sweep_event ev;
	char run_id[64];
	char *run_dir;
	char *message;
} finished;

static bool tell_finished(const lb_sweep_local *cfg, finished *fin, size_t *nfin, size_t running)
{
	bool stop = false;
	for (size_t k = 0; k < *nfin; k++) {
		fin[k].ev.running = running; /* the slot's next cell is counted now */
		if (cfg->on_event && cfg->on_event(cfg->ctx, &fin[k].ev))
			stop = true;
		free(fin[k].run_dir);
		free(fin[k].message);
	}
	*nfin = 0;
	return stop;
}

typedef struct slot_state {
	lb_sweep_slot slot;
	bool busy;
	pid_t pid;
	size_t cell;
	int fd; /* the child's reports */
	double started;
	double estimate;
	bool reaped;
	int status;
	bool pipe_done;
	char buf[8192];
	size_t len;
	int exit_code; /* from its R line, -1 when none came */
	char run_id[64];
	char *run_dir;
	char *message;
} slot_state;

static void cpulist(const cpu_set_t *set, char out[LB_SWEEP_CPULIST_MAX])
{
	lb_buf b = {0};
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		if (e == c)
			lb_buf_printf(&b, "%s%d", b.len ? "," : "", c);
		else
			lb_buf_printf(&b, "%s%d-%d", b.len ? "," : "", c, e);
		c = e;
	}
	snprintf(out, LB_SWEEP_CPULIST_MAX, "%s", b.data ? b.data : "");
	lb_buf_free(&b);
}

static void handle_line(const lb_sweep_local *cfg, slot_state *s, char *line)
{
	if (line[0] == 'E' && line[1] == ' ') {
		s->estimate = strtod(line + 2, NULL);
		lb_sweep_event ev = {.kind = LB_SWEEP_CELL_ESTIMATE, .cell = s->cell,
				     .slot = &s->slot, .estimate = s->estimate};
		if (cfg->on_event)
			cfg->on_event(cfg->ctx, &ev);
	} else if (line[0] == 'X' && line[1] == ' ') {
		free(s->message);
		s->message = strdup(line + 2);
	} else if (line[0] == 'R' && line[1] == ' ') {
		char *tab1 = strchr(line + 2, '\t');
		char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (!tab2)
			return;
		*tab1 = *tab2 = '\0';
		s->exit_code = atoi(line + 2);
		snprintf(s->run_id, sizeof s->run_id, "%s", tab1 + 1);
		free(s->run_dir);
		s->run_dir = tab2[1] ? strdup(tab2 + 1) : NULL;
	}
}

static void read_reports(const lb_sweep_local *cfg, slot_state *s)
{
	for (;;) {
		if (s->len == sizeof s->buf - 1)
			s->len = 0; /* a child that writes no newline: drop it */
		ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - 1 - s->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				s->pipe_done = true;
			return;
		}
		s->len += (size_t)n;
		s->buf[s->len] = '\0';
		char *start = s->buf, *nl;
		while ((nl = strchr(start, '\n'))) {
			*nl = '\0';
			handle_line(cfg, s, start);
			start = nl + 1;
		}
		s->len = (size_t)(s->buf + s->len - start);
		memmove(s->buf, start, s->len);
	}
}

static double eta_now(slot_state *slots, size_t jobs, const double *walls, size_t nwalls,
		      size_t npending)
{
	double el[CPU_SETSIZE], est[CPU_SETSIZE];
	size_t k = 0;
	double now = lb_time_monotonic();
	for (size_t i = 0; i < jobs && k < CPU_SETSIZE; i++)
		if (slots[i].busy) {
			el[k] = now - slots[i].started;
			est[k] = slots[i].estimate;
			k++;
		}
	return lb_sweep_eta(walls, nwalls, el, est, k, npending, jobs);
}

static pid_t start_cell(const lb_sweep_local *cfg, slot_state *slots, size_t jobs, size_t i,
			size_t cell, int sfd, const sigset_t *oldmask)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		/* The child holds only its own report pipe. */
		close(p[0]);
		close(sfd);
		for (size_t j = 0; j < jobs; j++)
			if (slots[j].busy && slots[j].fd >= 0)
				close(slots[j].fd);
		/* Its own process group: a Ctrl-C reaches the sweep alone, which passes it on once
		 * to each running cell (twice would take the sandbox's grace away). */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(128 + SIGTERM);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		sched_setaffinity(0, sizeof slots[i].slot.cpuset, &slots[i].slot.cpuset);
		int rc = cfg->run_cell(cfg->ctx, cell, &slots[i].slot, p[1]);
		fflush(NULL);
		_exit(rc & 0xff);
	}
	setpgid(pid, pid); /* also here, so a signal right after fork finds the group made */
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	slot_state *s = &slots[i];
	s->busy = true;
	s->pid = pid;
	s->cell = cell;
	s->fd = p[0];
	s->started = lb_time_monotonic();
	s->estimate = -1;
	s->reaped = s->pipe_done = false;
	s->len = 0;
	s->exit_code = -1;
	s->run_id[0] = '\0';
	free(s->run_dir);
	s->run_dir = NULL;
	free(s->message);
	s->message = NULL;
	return pid;
}

int lb_sweep_run_cells(const lb_sweep_local *cfg, const size_t *todo, size_t ntodo,
		       lb_sweep_local_result *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	cpu_set_t avail;
	if (sched_getaffinity(0, sizeof avail, &avail) < 0)
		return -errno;
	size_t ncpu = (size_t)CPU_COUNT(&avail);
	size_t jobs;
	int jr = lb_sweep_jobs_resolve(cfg->jobs, cfg->cpus, &jobs, err, errlen);
	if (jr < 0)
		return jr;
	/* The share follows the jobs asked for, not the cells left: a resumed sweep's last cell
	 * runs with the thread counts its siblings had. */
	double share = cfg->cpus > 0 ? cfg->cpus : (double)ncpu / (double)jobs;
	if (jobs > ntodo && ntodo > 0)
		jobs = ntodo;
	if (jobs == 0)
		jobs = 1;
	slot_state *slots = calloc(jobs, sizeof *slots);
	double *walls = calloc(ntodo + 1, sizeof *walls);
	if (!slots || !walls) {
		free(slots);
		free(walls);
		return -ENOMEM;
	}
	for (size_t i = 0; i < jobs; i++) {
		slots[i].fd = -1;
		slots[i].slot.index = i;
		slots[i].slot.cpus = share;
		lb_sweep_slot_cpus(&avail, i, share, &slots[i].slot.cpuset);
		cpulist(&slots[i].slot.cpuset, slots[i].slot.cpulist);
	}
	sigset_t mask, oldmask;
	lb_block_stop_signals(&mask, &oldmask);
	int r = 0;
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		r = -errno;
		goto out;
	}
	size_t next = 0, running = 0, nwalls = 0, nfin = 0;
	finished *fin = calloc(jobs, sizeof *fin);
	if (!fin) {
		close(sfd);
		r = -ENOMEM;
		goto out;
	}
	bool stopping = false;
	/* Asked to stop before the block (while the sweep was planned and checked): no cell is
	 * started; each is recorded as not run, for --resume. */
	if ((out->stop_signal = lb_interrupt_caught()) != 0) {
		stopping = true;
		lb_sweep_event ev = {.kind = LB_SWEEP_STOPPING, .signal = out->stop_signal};
		if (cfg->on_event)
			cfg->on_event(cfg->ctx, &ev);
	}
	double t0 = lb_time_monotonic(), last_tick = t0;
	for (;;) {
		while (!stopping && next < ntodo && running < jobs) {
			size_t i = 0;
			while (slots[i].busy)
				i++;
			pid_t pid = start_cell(cfg, slots, jobs, i, todo[next], sfd, &oldmask);
			if (pid < 0) {
				snprintf(err, errlen, "cannot start a cell: %s", strerror((int)-pid));
				r = (int)pid;
				stopping = true;
				break;
			}
			next++;
			running++;
			out->started++;
			lb_sweep_event ev = {.kind = LB_SWEEP_CELL_STARTED, .cell = slots[i].cell,
					     .slot = &slots[i].slot, .running = running};
			if (cfg->on_event && cfg->on_event(cfg->ctx, &ev))
				stopping = true;
		}
		if (tell_finished(cfg, fin, &nfin, running))
			stopping = true;
		if (running == 0)
			break;
		struct pollfd pfd[CPU_SETSIZE + 1];
		size_t map[CPU_SETSIZE + 1];
		size_t np = 0;
		pfd[np].fd = sfd;
		pfd[np++].events = POLLIN;
		for (size_t i = 0; i < jobs && np < CPU_SETSIZE; i++)
			if (slots[i].busy && !slots[i].pipe_done) {
				map[np] = i;
				pfd[np].fd = slots[i].fd;
				pfd[np++].events = POLLIN;
			}
		int pr = poll(pfd, np, 250);
		if (pr < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		for (size_t k = 1; pr > 0 && k < np; k++)
			if (pfd[k].revents)
				read_reports(cfg, &slots[map[k]]);
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			if (!out->stop_signal)
				out->stop_signal = (int)si.ssi_signo;
			stopping = true;
			lb_sweep_event ev = {.kind = LB_SWEEP_STOPPING, .signal = (int)si.ssi_signo,
					     .running = running};
			if (cfg->on_event)
				cfg->on_event(cfg->ctx, &ev);
			/* Passed on as received: the cell's sandbox ends its tree with grace on the
			 * first, at once on a second. */
			for (size_t i = 0; i < jobs; i++)
				if (slots[i].busy && !slots[i].reaped)
					kill(slots[i].pid, (int)si.ssi_signo);
		}
		double now = lb_time_monotonic();
		if (cfg->sweep_budget > 0 && !stopping && now - t0 >= cfg->sweep_budget) {
			stopping = true;
			out->budget_exceeded = true;
			lb_sweep_event ev = {.kind = LB_SWEEP_STOPPING, .signal = 0, .running = running};
			if (cfg->on_event)
				cfg->on_event(cfg->ctx, &ev);
			for (size_t i = 0; i < jobs; i++)
				if (slots[i].busy && !slots[i].reaped)
					kill(slots[i].pid, SIGTERM);
		}
		/* Reap: a cell is finished when its child has exited and its reports are read. */
		int st;
		pid_t pid;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			for (size_t i = 0; i < jobs; i++)
				if (slots[i].busy && slots[i].pid == pid) {
					slots[i].reaped = true;
					slots[i].status = st;
				}
		for (size_t i = 0; i < jobs; i++) {
			slot_state *s = &slots[i];
			if (!s->busy || !s->reaped)
				continue;
			if (!s->pipe_done)
				read_reports(cfg, s);
			close(s->fd);
			s->fd = -1;
			s->busy = false;
			running--;
			out->finished++;
			double wall = lb_time_monotonic() - s->started;
			walls[nwalls++] = wall;
			int code = s->exit_code >= 0 ? s->exit_code
				   : WIFEXITED(s->status) ? WEXITSTATUS(s->status)
				   : WIFSIGNALED(s->status) ? 128 + WTERMSIG(s->status)
							  : 125;
			lb_sweep_event ev = {.kind = LB_SWEEP_CELL_FINISHED, .cell = s->cell,
					     .slot = &s->slot, .exit_code = code,
					     .run_id = s->run_id[0] ? s->run_id : NULL,
					     .run_dir = s->run_dir, .wall = wall, .running = running,
					     .message = s->message};
			ev.eta = eta_now(slots, jobs, walls, nwalls, stopping ? 0 : ntodo - next);
			/* A failure is told at once: it may be one that every cell would meet
			 * (on_event then starts no more). */
			if (code == 0 && s->run_dir && !stopping && next < ntodo) {
				finished *f = &fin[nfin++];
				f->ev = ev;
				memcpy(f->run_id, s->run_id, sizeof f->run_id);
				f->run_dir = s->run_dir;
				f->message = s->message;
				s->run_dir = NULL;
				s->message = NULL;
				f->ev.run_id = s->run_id[0] ? f->run_id : NULL;
				f->ev.run_dir = f->run_dir;
				f->ev.message = f->message;
			} else if (cfg->on_event && cfg->on_event(cfg->ctx, &ev)) {
				stopping = true;
			}
		}
		if (now - last_tick >= 1.0) {
			last_tick = now;
			lb_sweep_event ev = {.kind = LB_SWEEP_TICK, .running = running};
			ev.eta = eta_now(slots, jobs, walls, nwalls, stopping ? 0 : ntodo - next);
			if (cfg->on_event)
				cfg->on_event(cfg->ctx, &ev);
		}
	}
	/* A signal that came after the last cell ended is still this sweep's: counted, and
	 * taken off the queue so that unblocking does not kill the caller before it writes the
	 * sweep's document. */
	for (struct signalfd_siginfo si; read(sfd, &si, sizeof si) == sizeof si;)
		if (si.ssi_signo != SIGCHLD && !out->stop_signal)
			out->stop_signal = (int)si.ssi_signo;
	tell_finished(cfg, fin, &nfin, running); /* none left, unless the loop ended on an error */
	free(fin);
	close(sfd);
out:
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	for (size_t i = 0; i < jobs; i++) {
		free(slots[i].run_dir);
		free(slots[i].message);
	}
	free(slots);
	free(walls);
	return r;
}
