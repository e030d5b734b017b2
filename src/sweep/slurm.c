/* Cells as one Slurm job array: one sbatch call for every cell to run, task k running cell
 * todo[k] with labbox on its node (so each cell is sandboxed there as locally and writes its
 * own run directory, result.json and index row on the shared file system), then one squeue
 * call per interval for the whole array. The sweep sees the same events as from local cores;
 * what the node's labbox printed (node.json) says which run each task made. */
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* squeue failing this long in a row: the controller is lost and the array is cancelled. */
#define LOST_CONTACT_S 120.0
/* After the tasks were asked to stop: the node's grace plus this, then scancel. */
#define STOP_MARGIN_S 30.0
/* After scancel: how long the tasks may take to leave squeue's active states. */
#define CANCEL_WAIT_S 60.0
/* A task squeue never showed at all after this long is taken as gone. */
#define UNSEEN_S 30.0
/* PREEMPTED may be a step on the way to a requeue: final only when it lasts this long. */
#define PREEMPTED_S 10.0

typedef struct array_run {
	const lb_sweep_slurm *cfg;
	const size_t *todo;
	size_t ntodo;
	lb_sweep_slurm_task *tasks;
	lb_sweep_slurm_result *out;
	double t0;
	bool *seen;
	double *preempted_at; /* when the task was first seen PREEMPTED, 0: not */
	double *walls;
	size_t nwalls;
} array_run;

static size_t count_running(const array_run *a)
{
	size_t n = 0;
	for (size_t k = 0; k < a->ntodo; k++)
		n += a->tasks[k].started && !a->tasks[k].finished;
	return n;
}

static double eta(const array_run *a, double now)
{
	size_t nrun = 0, npend = 0;
	LB_AUTOFREE double *el = calloc(a->ntodo + 1, sizeof *el);
	LB_AUTOFREE double *est = calloc(a->ntodo + 1, sizeof *est);
	if (!el || !est)
		return -1;
	for (size_t k = 0; k < a->ntodo; k++) {
		const lb_sweep_slurm_task *t = &a->tasks[k];
		if (t->finished)
			continue;
		if (t->started) {
			el[nrun] = now - t->t_start;
			est[nrun++] = a->cfg->estimates_dir
					      ? lb_sweep_estimate_load(a->cfg->estimates_dir, a->todo[k])
					      : -1;
		} else {
			npend++;
		}
	}
	size_t jobs = a->cfg->submit.max_parallel ? a->cfg->submit.max_parallel : a->ntodo;
	return lb_sweep_eta(a->walls, a->nwalls, el, est, nrun, npend, jobs ? jobs : 1);
}

static int emit(array_run *a, lb_sweep_event_kind kind, size_t k, double now)
{
	if (!a->cfg->on_event)
		return 0;
	char task[64] = "";
	const lb_sweep_slurm_task *t = k < a->ntodo ? &a->tasks[k] : NULL;
	/* One cell is a plain job (no --array): its task is the job itself. */
	if (t && a->ntodo == 1)
		snprintf(task, sizeof task, "%s", a->out->job_id);
	else if (t)
		snprintf(task, sizeof task, "%s_%zu", a->out->job_id, k);
	lb_sweep_event ev = {
		.kind = kind,
		.cell = t ? a->todo[k] : 0,
		.task = kind == LB_SWEEP_SUBMITTED ? a->out->job_id : t ? task : NULL,
		.node = t ? t->node : NULL,
		.state = t ? t->state : NULL,
		.requeues = t ? t->requeues : 0,
		.stopped_by_us = t && t->stopped_by_us,
		.wall = t ? t->wall : 0,
		.exit_code = -1,
		.running = count_running(a),
		.signal = a->out->stop_signal,
		.eta = eta(a, now),
	};
	return a->cfg->on_event(a->cfg->ctx, &ev);
}

static void finish_task(array_run *a, size_t k, double now)
{
	lb_sweep_slurm_task *t = &a->tasks[k];
	t->finished = true;
	t->wall = t->started ? now - t->t_start : 0;
	if (t->started)
		a->walls[a->nwalls++] = t->wall;
	a->out->finished++;
	emit(a, LB_SWEEP_CELL_FINISHED, k, now);
}

/* One look at the array; false when squeue did not answer. */
static bool look(array_run *a, lb_slurm_task *now_tasks, double now)
{
	if (lb_slurm_poll_tasks(a->out->job_id, a->ntodo, now_tasks) < 0)
		return false;
	for (size_t k = 0; k < a->ntodo; k++) {
		lb_sweep_slurm_task *t = &a->tasks[k];
		const lb_slurm_task *p = &now_tasks[k];
		if (t->finished)
			continue;
		if (p->state[0]) {
			a->seen[k] = true;
			snprintf(t->state, sizeof t->state, "%s", p->state);
		}
		if (p->node[0])
			snprintf(t->node, sizeof t->node, "%s", p->node);
		/* Started again (requeued, preempted): counted, and its next start is reported;
		 * its cell stays one cell, whose record is the last attempt's run. */
		if (p->restarts > t->requeues) {
			t->requeues = p->restarts;
			t->started = false;
			emit(a, LB_SWEEP_CELL_REQUEUED, k, now);
		}
		bool running = strcmp(p->state, "RUNNING") == 0 || strcmp(p->state, "COMPLETING") == 0;
		if (running && !t->started) {
			t->started = true;
			t->t_start = now;
			emit(a, LB_SWEEP_CELL_STARTED, k, now);
		}
		bool preempted = strcmp(p->state, "PREEMPTED") == 0;
		if (!preempted)
			a->preempted_at[k] = 0;
		else if (!a->preempted_at[k])
			a->preempted_at[k] = now;
		if (preempted && now - a->preempted_at[k] < PREEMPTED_S)
			continue;
		if ((p->state[0] && lb_slurm_state_final(p->state)) ||
		    (!p->state[0] && (a->seen[k] || now - a->t0 > UNSEEN_S))) {
			if (!p->state[0] && !a->seen[k])
				t->state[0] = '\0';
			/* Pending array tasks that were cancelled leave squeue without a record. */
			if (!p->state[0] && t->stopped_by_us && !t->started)
				snprintf(t->state, sizeof t->state, "CANCELLED");
			finish_task(a, k, now);
		}
	}
	return true;
}

static void stop_tasks(array_run *a, int sig, double now)
{
	if (sig)
		a->out->stop_signal = sig;
	else
		a->out->budget_exceeded = true;
	for (size_t k = 0; k < a->ntodo; k++)
		if (!a->tasks[k].finished)
			a->tasks[k].stopped_by_us = true;
	emit(a, LB_SWEEP_STOPPING, a->ntodo, now);
	/* Pending tasks would start only to be stopped; running ones end their runs cleanly
	 * (the node's labbox records them as interrupted) before anything is killed. */
	lb_slurm_cancel(a->out->job_id, NULL, false, "PENDING");
	lb_slurm_cancel(a->out->job_id, "TERM", true, NULL);
}

static int supervise(array_run *a, int sfd)
{
	const lb_sweep_slurm *cfg = a->cfg;
	double poll_s = cfg->poll_s > 0 ? cfg->poll_s : 0.5;
	LB_AUTOFREE lb_slurm_task *cur = calloc(a->ntodo, sizeof *cur);
	if (!cur)
		return -ENOMEM;
	double last_ok = lb_time_monotonic(), stop_at = 0, kill_at = 0, give_up_at = 0;
	bool stopping = false, killed = false;
	while (a->out->finished < a->ntodo) {
		struct pollfd pf = {.fd = sfd, .events = POLLIN};
		int n = poll(&pf, 1, (int)(poll_s * 1000));
		double now = lb_time_monotonic();
		if (n > 0) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && !stopping) {
				stopping = true;
				stop_at = now;
				stop_tasks(a, (int)si.ssi_signo, now);
			}
		}
		if (!stopping && cfg->sweep_budget > 0 && now - a->t0 >= cfg->sweep_budget) {
			stopping = true;
			stop_at = now;
			stop_tasks(a, 0, now);
		}
		if (stopping && !killed && now - stop_at > cfg->grace + STOP_MARGIN_S) {
			lb_slurm_cancel(a->out->job_id, NULL, false, NULL);
			killed = true;
			kill_at = now;
		}
		if (look(a, cur, now)) {
			last_ok = now;
		} else if (now - last_ok > LOST_CONTACT_S && !give_up_at) {
			a->out->lost_contact = true;
			lb_slurm_cancel(a->out->job_id, NULL, false, NULL);
			give_up_at = now;
		}
		/* Nothing more can be learnt: what is left is recorded as it stands. */
		if ((killed && now - kill_at > CANCEL_WAIT_S) || give_up_at) {
			for (size_t k = 0; k < a->ntodo; k++)
				if (!a->tasks[k].finished)
					finish_task(a, k, now);
			break;
		}
		emit(a, LB_SWEEP_TICK, a->ntodo, now);
	}
	return 0;
}

int lb_sweep_run_slurm(const lb_sweep_slurm *cfg, const size_t *todo, size_t ntodo,
		       lb_sweep_slurm_task *tasks, struct json_object *cmd, lb_sweep_slurm_result *out,
		       char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	memset(tasks, 0, ntodo * sizeof *tasks);
	if (!ntodo || cfg->submit.ncells != ntodo) {
		snprintf(err, errlen, "a job array needs one cell per task");
		return -EINVAL;
	}
	/* The signals are read from the moment of submission, so a Ctrl-C right after sbatch
	 * answered still cancels what it made. */
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
		return -errno;
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	/* A signal that came before the block was caught by labbox's handler: read here too. */
	lb_interrupt_rearm();
	if (sfd < 0) {
		int e = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return e;
	}
	int r = lb_slurm_submit_array(&cfg->submit, cmd, out->job_id, err, errlen);
	array_run a = {.cfg = cfg, .todo = todo, .ntodo = ntodo, .tasks = tasks, .out = out,
		       .t0 = lb_time_monotonic()};
	if (r == 0) {
		a.seen = calloc(ntodo, sizeof *a.seen);
		a.walls = calloc(ntodo, sizeof *a.walls);
		a.preempted_at = calloc(ntodo, sizeof *a.preempted_at);
		r = a.seen && a.walls && a.preempted_at ? 0 : -ENOMEM;
		if (r < 0)
			lb_slurm_cancel(out->job_id, NULL, false, NULL);
	}
	if (r == 0) {
		/* Killed outright, this labbox still takes the array with it. */
		lb_guard guard;
		(void)lb_slurm_guard_start(out->job_id, &guard);
		emit(&a, LB_SWEEP_SUBMITTED, ntodo, a.t0);
		r = supervise(&a, sfd);
		lb_guard_stop(&guard);
	}
	free(a.seen);
	free(a.walls);
	free(a.preempted_at);
	/* A signal that came after the last look is this sweep's, not a kill of labbox. */
	struct pollfd pf = {.fd = sfd, .events = POLLIN};
	struct signalfd_siginfo si;
	while (poll(&pf, 1, 0) > 0 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
		if (!out->stop_signal && r == 0)
			out->stop_signal = (int)si.ssi_signo;
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}
