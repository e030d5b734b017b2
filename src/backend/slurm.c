/* The Slurm backend: the run becomes a batch job of the cluster's own sbatch, and the job
 * runs this labbox (`labbox run --json`) on the staged experiment on its compute node, so the
 * experiment is sandboxed there exactly as locally. The submitting labbox waits with squeue
 * (accounting may be off, so sacct is never needed), streams the node run's run.log into the
 * pipeline as it grows, and brings the node run's facts back into the local run directory:
 * what the experiment wrote into exp/, environment.txt, the verdict, resources and the node's
 * isolation block as the node reported it.
 *
 * Layout (RUN_DIR is on the file system the nodes share):
 *   RUN_DIR/exp/                    staged by the pipeline; the node's labbox stages it again
 *   RUN_DIR/slurm/job.sh            the batch script (one case per cell)
 *   RUN_DIR/slurm/slurm-JOB.out     Slurm's own output (what failed before labbox started)
 *   RUN_DIR/slurm/node.json         the node labbox's stdout: its result document
 *   RUN_DIR/slurm/node.err          its stderr
 *   RUN_DIR/slurm/runs/NODE_ID/     the node's run directory (one per attempt)
 * and this labbox binary, content-addressed beside the runs directory (bin/labbox-SHA), so the
 * nodes run the same labbox as the one that submitted. */
#include "labbox/backend.h"
#include "labbox/gate.h"
#include "labbox/check.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The most a Slurm client may take before labbox gives up on it (a controller that accepts a
 * connection and never answers must not hang the run). */
#define CLIENT_TIMEOUT_S 30.0
/* Beyond the budget and the grace, what the node's labbox needs around the experiment (start,
 * staging, the static check, collection); the job's time limit is budget + grace + this. */
#define JOB_OVERHEAD_S 120.0
/* --signal=B:TERM@lead: Slurm may signal up to a minute early, so the lead is a minute, and
 * the overhead above keeps that minute after the budget has ended. */
#define SIGNAL_LEAD_S 60
/* How long squeue may fail in a row before the controller counts as lost. */
#define LOST_CONTACT_S 120.0
/* After labbox asked the node to stop: grace plus this, then scancel without mercy. */
#define STOP_MARGIN_S 30.0
/* The job's memory beyond the experiment's limit: the node's labbox and its helpers. */
#define JOB_MEM_EXTRA ((uint64_t)64 << 20)
#define NODE_JSON_MAX ((size_t)64 << 20)

void lb_slurm_argv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* ---- running the Slurm clients ------------------------------------------------------------ */

/* Runs argv (PATH lookup, no shell) with stdout (and stderr when merge) captured, at most
 * max bytes, killed after timeout seconds. Returns its exit status (128+N for a signal, 124
 * when it ran too long) or a negative errno when it could not run. */
static int client_run(char *const argv[], bool merge, size_t max, double timeout, lb_buf *out)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(p[1], 1);
		dup2(merge ? p[1] : nul, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	double end = lb_time_monotonic() + timeout;
	bool killed = false;
	char chunk[4096];
	for (;;) {
		double left = end - lb_time_monotonic();
		if (left <= 0 && !killed) {
			kill(pid, SIGKILL);
			killed = true;
		}
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int n = poll(&pf, 1, killed ? 1000 : (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (killed)
				break;
			continue;
		}
		ssize_t k = read(p[0], chunk, sizeof chunk);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		size_t take = (size_t)k;
		if (out->len + take > max)
			take = max > out->len ? max - out->len : 0;
		if (take && lb_buf_append(out, chunk, take) < 0)
			break;
	}
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	while (out->data && out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
		out->data[--out->len] = '\0';
	if (killed)
		return 124;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* One line of what a client said, for an error message. */
static void one_line(const lb_buf *b, char *out, size_t n)
{
	snprintf(out, n, "%s", b->data && b->len ? b->data : "no output");
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r' || (unsigned char)*p < 0x20)
			*p = ' ';
}

/* scancel in the background is not needed: it answers at once or the controller is gone, in
 * which case the bounded wait ends it. */
static void scancel(const char *job_id, const char *signal, bool batch_only)
{
	lb_strv a = {0};
	int r = lb_strv_push(&a, "scancel");
	if (r == 0 && signal)
		r = lb_strv_pushf(&a, "--signal=%s", signal);
	if (r == 0 && batch_only)
		r = lb_strv_push(&a, "--batch");
	if (r == 0)
		r = lb_strv_push(&a, job_id);
	lb_buf o = {0};
	if (r == 0)
		client_run(a.v, true, 4096, CLIENT_TIMEOUT_S, &o);
	lb_buf_free(&o);
	lb_strv_free(&a);
}

/* ---- the batch script and sbatch ------------------------------------------------------------ */

/* The one argument the script leaves to the node's shell: the job's own GPUs. */
#define JOB_GPUS_TOKEN "@LABBOX_SLURM_JOB_GPUS@"

/* s as one single-quoted word of sh: nothing in it is expanded on the node. */
static int shell_word(lb_buf *b, const char *s)
{
	if (strcmp(s, JOB_GPUS_TOKEN) == 0)
		return lb_buf_puts(b, "\"${SLURM_JOB_GPUS:-none}\"");
	int r = lb_buf_puts(b, "'");
	for (const char *p = s; r == 0 && *p; p++)
		r = *p == '\'' ? lb_buf_puts(b, "'\\''") : lb_buf_append(b, p, 1);
	return r ? r : lb_buf_puts(b, "'");
}

static bool is_abs_clean(const char *p)
{
	return p && p[0] == '/' && !strchr(p, '\n') && !strchr(p, '%');
}

int lb_slurm_submit_array(const lb_slurm_submit *s, json_object *cmd, char job_id[32], char *err,
			  size_t errlen)
{
	job_id[0] = '\0';
	if (!s->ncells || !s->cells || !is_abs_clean(s->dir)) {
		snprintf(err, errlen, "a Slurm submission needs cells and an absolute directory "
			 "without %% or newlines");
		return -EINVAL;
	}
	/* The script: one case per cell, each exec'ing its command, so the batch shell becomes
	 * labbox and --signal=B:TERM reaches it. Its output goes to the cell's own files. */
	lb_buf sh = {0};
	int r = lb_buf_printf(&sh, "#!/bin/sh\n# Generated by labbox %s: %zu cell%s; Slurm array "
			      "task i runs cell i with labbox on its node.\n"
			      "case \"${SLURM_ARRAY_TASK_ID:-0}\" in\n",
			      LABBOX_VERSION, s->ncells, s->ncells == 1 ? "" : "s");
	for (size_t i = 0; r == 0 && i < s->ncells; i++) {
		const lb_slurm_cell *c = &s->cells[i];
		if (!c->argv || !c->argv[0] || c->argv[0][0] != '/' || !is_abs_clean(c->dir)) {
			snprintf(err, errlen, "cell %zu has no absolute command or directory", i);
			lb_buf_free(&sh);
			return -EINVAL;
		}
		r = lb_buf_printf(&sh, "%zu)\n\texec", i);
		for (size_t j = 0; r == 0 && c->argv[j]; j++)
			r = lb_buf_puts(&sh, " ") || shell_word(&sh, c->argv[j]) ? -ENOMEM : 0;
		if (r == 0)
			r = lb_buf_puts(&sh, " >");
		if (r == 0) {
			char p[PATH_MAX + 16];
			snprintf(p, sizeof p, "%s/node.json", c->dir);
			r = shell_word(&sh, p);
			snprintf(p, sizeof p, "%s/node.err", c->dir);
			if (r == 0)
				r = lb_buf_puts(&sh, " 2>") || shell_word(&sh, p) ? -ENOMEM : 0;
		}
		if (r == 0)
			r = lb_buf_puts(&sh, "\n\t;;\n");
	}
	if (r == 0)
		r = lb_buf_puts(&sh, "*)\n\techo \"labbox: no cell for array task "
				     "$SLURM_ARRAY_TASK_ID\" >&2\n\texit 2\n\t;;\nesac\n");
	char script[PATH_MAX + 16];
	snprintf(script, sizeof script, "%s/job.sh", s->dir);
	if (r == 0)
		r = lb_write_file_atomic_mode(script, sh.data, sh.len, 0700);
	lb_buf_free(&sh);
	if (r < 0) {
		snprintf(err, errlen, "cannot write %s: %s", script, strerror(-r));
		return r;
	}

	lb_strv a = {0};
	r = lb_strv_push(&a, "sbatch");
	r |= lb_strv_push(&a, "--parsable");
	r |= lb_strv_pushf(&a, "--job-name=%s", s->name && *s->name ? s->name : "labbox");
	r |= lb_strv_pushf(&a, "--chdir=%s", s->dir);
	r |= lb_strv_pushf(&a, "--output=%s/slurm-%s.out", s->dir, s->ncells > 1 ? "%A_%a" : "%j");
	r |= lb_strv_push(&a, "--open-mode=truncate");
	/* The user's environment, as sbatch gives it by default: PATH, SLURM_CONF and the names
	 * --secret-env passes on are read from it on the node. */
	r |= lb_strv_push(&a, "--export=ALL");
	r |= lb_strv_push(&a, "--nodes=1");
	r |= lb_strv_push(&a, "--ntasks=1");
	if (s->partition)
		r |= lb_strv_pushf(&a, "--partition=%s", s->partition);
	if (s->account)
		r |= lb_strv_pushf(&a, "--account=%s", s->account);
	if (s->qos)
		r |= lb_strv_pushf(&a, "--qos=%s", s->qos);
	if (s->cpus)
		r |= lb_strv_pushf(&a, "--cpus-per-task=%u", s->cpus);
	if (s->mem_bytes)
		r |= lb_strv_pushf(&a, "--mem=%lluM",
				(unsigned long long)((s->mem_bytes + (1 << 20) - 1) >> 20));
	if (s->gpus)
		r |= lb_strv_pushf(&a, "--gres=gpu:%u", s->gpus);
	if (s->time_limit_s > 0) {
		unsigned long long min = (unsigned long long)ceil(s->time_limit_s / 60.0);
		r |= lb_strv_pushf(&a, "--time=%llu", min ? min : 1);
	}
	if (s->signal_lead_s)
		r |= lb_strv_pushf(&a, "--signal=B:TERM@%u", s->signal_lead_s);
	if (s->ncells > 1) {
		if (s->max_parallel)
			r |= lb_strv_pushf(&a, "--array=0-%zu%%%u", s->ncells - 1, s->max_parallel);
		else
			r |= lb_strv_pushf(&a, "--array=0-%zu", s->ncells - 1);
	}
	r |= lb_strv_push(&a, script);
	if (r) {
		lb_strv_free(&a);
		return -ENOMEM;
	}
	for (size_t i = 0; cmd && i < a.n; i++)
		json_object_array_add(cmd, json_object_new_string(a.v[i]));
	if (s->plan_only) {
		lb_strv_free(&a);
		return 0;
	}
	lb_buf o = {0};
	int st = client_run(a.v, true, 65536, CLIENT_TIMEOUT_S, &o);
	lb_strv_free(&a);
	/* --parsable prints "JOBID" or "JOBID;CLUSTER" (warnings may come first, on their own
	 * lines): the last line that starts with digits is the id. */
	char said[400];
	one_line(&o, said, sizeof said);
	const char *last = NULL;
	for (char *line = o.data; st == 0 && line && *line;) {
		char *nl = strchr(line, '\n');
		if (line[0] >= '0' && line[0] <= '9')
			last = line;
		if (!nl)
			break;
		line = nl + 1;
	}
	size_t n = 0;
	while (last && n < 31 && last[n] >= '0' && last[n] <= '9') {
		job_id[n] = last[n];
		n++;
	}
	job_id[n] = '\0';
	lb_buf_free(&o);
	if (st != 0 || n == 0 || n >= 31) {
		job_id[0] = '\0';
		snprintf(err, errlen, "sbatch %s: %s; `sinfo` shows the partitions and their state",
			 st == 124 ? "did not answer" : st < 0 ? "could not run" : "refused the job",
			 said);
		return -EHOSTUNREACH;
	}
	return 0;
}

/* ---- squeue ------------------------------------------------------------------------------ */

/* Marks the tasks that squeue's %K field names: "N/A" (not an array: task 0), "3", "0-9",
 * "[1-9%2]", "1,3,5-7". Anything else is ignored. */
static void mark_tasks(const char *k, size_t ntasks, bool *mark)
{
	if (strcmp(k, "N/A") == 0 || !*k) {
		if (ntasks)
			mark[0] = true;
		return;
	}
	char buf[256];
	snprintf(buf, sizeof buf, "%s", k[0] == '[' ? k + 1 : k);
	buf[strcspn(buf, "]%")] = '\0';
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		errno = 0;
		unsigned long a = strtoul(t, &end, 10), b = a;
		if (errno || end == t)
			continue;
		if (*end == '-') {
			char *e2;
			b = strtoul(end + 1, &e2, 10);
			if (errno || e2 == end + 1 || *e2)
				continue;
		} else if (*end) {
			continue;
		}
		for (unsigned long i = a; i <= b && i < ntasks; i++)
			mark[i] = true;
	}
}

int lb_slurm_poll(const char *job_id, size_t ntasks, char (*states)[32], char (*nodes)[128])
{
	for (size_t i = 0; i < ntasks; i++) {
		states[i][0] = '\0';
		if (nodes)
			nodes[i][0] = '\0';
	}
	for (const char *p = job_id; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	char *argv[] = {"squeue", "-h", "-r", "-t", "all", "-j", (char *)job_id, "-o", "%K|%T|%N",
			NULL};
	lb_buf o = {0};
	int st = client_run(argv, true, 1 << 20, CLIENT_TIMEOUT_S, &o);
	if (st != 0) {
		/* A job squeue has forgotten (MinJobAge passed) is an error for some versions:
		 * "Invalid job id specified". That is an answer (every task "": gone), not a lost
		 * controller. */
		bool forgotten = o.data && strstr(o.data, "Invalid job id");
		lb_buf_free(&o);
		return forgotten ? 0 : -EHOSTUNREACH;
	}
	LB_AUTOFREE bool *mark = calloc(ntasks ? ntasks : 1, sizeof *mark);
	if (!mark) {
		lb_buf_free(&o);
		return -ENOMEM;
	}
	char *save = NULL;
	for (char *line = o.data ? strtok_r(o.data, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f1 = strchr(line, '|');
		char *f2 = f1 ? strchr(f1 + 1, '|') : NULL;
		if (!f2)
			continue; /* not a line of ours */
		*f1++ = '\0';
		*f2++ = '\0';
		/* States are upper-case words; anything else is not believed. */
		bool ok = *f1 && strlen(f1) < 32;
		for (const char *c = f1; ok && *c; c++)
			ok = (*c >= 'A' && *c <= 'Z') || *c == '_';
		if (!ok)
			continue;
		memset(mark, 0, ntasks * sizeof *mark);
		mark_tasks(line, ntasks, mark);
		for (size_t i = 0; i < ntasks; i++) {
			if (!mark[i])
				continue;
			snprintf(states[i], 32, "%s", f1);
			if (nodes)
				snprintf(nodes[i], 128, "%.127s", f2);
		}
	}
	lb_buf_free(&o);
	return 0;
}

static bool state_final(const char *s)
{
	static const char *const fin[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
					  "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
					  "DEADLINE", "REVOKED"};
	for (size_t i = 0; i < sizeof fin / sizeof *fin; i++)
		if (strcmp(s, fin[i]) == 0)
			return true;
	return false;
}

/* ---- the node-side command ------------------------------------------------------------------ */

static const char *json_str(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v &&
			       json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static int64_t json_i64(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : 0;
}

static double json_dbl(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_double(v) : 0;
}

static bool js_bool(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v && json_object_get_boolean(v);
}

static json_object *json_arr(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array)
		       ? v
		       : NULL;
}

static int push_each(lb_strv *a, const char *flag, json_object *list)
{
	int r = 0;
	for (size_t i = 0; list && r == 0 && i < json_object_array_length(list); i++) {
		json_object *v = json_object_array_get_idx(list, i);
		if (!json_object_is_type(v, json_type_string))
			continue;
		r = lb_strv_push(a, flag) || lb_strv_push(a, json_object_get_string(v)) ? -ENOMEM : 0;
	}
	return r;
}

int lb_slurm_node_argv(const lb_slurm_node_run *n, char ***out)
{
	*out = NULL;
	if (!n->labbox || !n->runs_dir || !n->expdir || !n->entry)
		return -EINVAL;
	json_object *sb = n->sandbox;
	lb_strv a = {0};
	int r = 0;
	r |= lb_strv_push(&a, n->labbox);
	r |= lb_strv_push(&a, "run");
	r |= lb_strv_push(&a, "--json");
	/* On the node the run is local: the staged labbox.yaml may say mode: slurm, which would
	 * submit the job again from inside itself. */
	r |= lb_strv_push(&a, "--mode");
	r |= lb_strv_push(&a, "local");
	/* The output is in the node's run.log, which the submitting labbox streams. */
	r |= lb_strv_push(&a, "--quiet");
	r |= lb_strv_push(&a, "--runs-dir");
	r |= lb_strv_push(&a, n->runs_dir);
	r |= lb_strv_push(&a, "--python");
	r |= lb_strv_push(&a, n->python ? n->python : "python3");
	r |= lb_strv_push(&a, "--policy");
	r |= lb_strv_push(&a, lb_check_policy_name((lb_check_policy)n->policy));
	if (n->trust_project)
		r |= lb_strv_push(&a, "--trust-project");
	if (n->gate_mode != LB_GATE_DEFAULT)
		r |= lb_strv_push(&a, "--runtime-gate") ||
		     lb_strv_push(&a, lb_gate_mode_name((lb_gate_mode)n->gate_mode));
	if (n->budget > 0)
		r |= lb_strv_push(&a, "--budget") || lb_strv_pushf(&a, "%.3f", n->budget);
	r |= lb_strv_push(&a, "--grace") || lb_strv_pushf(&a, "%.3f", n->grace > 0 ? n->grace : 0);
	r |= lb_strv_push(&a, "--disk-limit") ||
	     lb_strv_pushf(&a, "%llu", (unsigned long long)n->disk_limit);
	if (n->log_limit >= 1024)
		r |= lb_strv_push(&a, "--log-limit") ||
		     lb_strv_pushf(&a, "%llu", (unsigned long long)n->log_limit);
	const char *net = json_str(sb, "network");
	if (net)
		r |= lb_strv_push(&a, "--network") || lb_strv_push(&a, net);
	if (json_i64(sb, "memory_bytes") > 0)
		r |= lb_strv_push(&a, "--memory") ||
		     lb_strv_pushf(&a, "%lld", (long long)json_i64(sb, "memory_bytes"));
	if (json_dbl(sb, "cpus") > 0)
		r |= lb_strv_push(&a, "--cpus") || lb_strv_pushf(&a, "%g", json_dbl(sb, "cpus"));
	if (json_i64(sb, "pids_limit") > 0)
		r |= lb_strv_push(&a, "--pids-limit") ||
		     lb_strv_pushf(&a, "%lld", (long long)json_i64(sb, "pids_limit"));
	if (json_i64(sb, "shm_size_bytes") > 0)
		r |= lb_strv_push(&a, "--shm-size") ||
		     lb_strv_pushf(&a, "%lld", (long long)json_i64(sb, "shm_size_bytes"));
	const char *gpus = json_str(sb, "gpus");
	if (n->gpus_from_job)
		r |= lb_strv_push(&a, "--gpus") || lb_strv_push(&a, JOB_GPUS_TOKEN);
	else if (gpus)
		r |= lb_strv_push(&a, "--gpus") || lb_strv_push(&a, gpus);
	if (r == 0)
		r = push_each(&a, "-e", json_arr(sb, "env"));
	if (r == 0)
		r = push_each(&a, "--secret-env", json_arr(sb, "secret_env"));
	if (r == 0)
		r = push_each(&a, "-v", json_arr(sb, "volumes"));
	if (r == 0)
		r = push_each(&a, "--tmpfs", json_arr(sb, "tmpfs"));
	if (r == 0)
		r = push_each(&a, "--allow-degraded", json_arr(sb, "allow_degraded"));
	if (r == 0)
		r = push_each(&a, "--hide", json_arr(sb, "hide"));
	for (size_t i = 0; r == 0 && i < n->nhide; i++)
		r = lb_strv_push(&a, "--hide") || lb_strv_push(&a, n->hide[i]) ? -ENOMEM : 0;
	r |= lb_strv_push(&a, "--entry");
	r |= lb_strv_push(&a, n->entry);
	r |= lb_strv_push(&a, n->expdir);
	if (n->nargs) {
		r |= lb_strv_push(&a, "--");
		for (size_t i = 0; i < n->nargs; i++)
			r |= lb_strv_push(&a, n->args[i]);
	}
	if (r) {
		lb_strv_free(&a);
		return -ENOMEM;
	}
	*out = a.v;
	return 0;
}

/* ---- the backend ------------------------------------------------------------------------- */

typedef struct slurm_state {
	char *partition, *account, *qos, *python, *labbox_given;
	json_object *sandbox; /* a reference to the caller's flags */
	double grace, poll_s;
	int policy;
	bool trust_project;
	int gate_mode; /* the job's effective lb_gate_mode, which the node's gate runs in */
	uint64_t log_limit;
	void (*progress)(void *ctx, const char *line);
	void *progress_ctx;

	char conf[PATH_MAX];    /* SLURM_CONF, or the default that exists */
	char cluster[128];
	char version[64];
	char labbox[PATH_MAX];  /* what the node runs */
	char dir[PATH_MAX];     /* RUN_DIR/slurm */
	char node_runs[PATH_MAX];
	char run_dir[PATH_MAX];
	unsigned gpus;
	double time_limit_s;    /* 0: the partition's */
	double ran_s;           /* seconds the job was seen RUNNING (its last attempt) */
	lb_strv node_argv;
	json_object *sbatch_cmd; /* the sbatch command line, for the record */
	char job_id[32];
	char job_state[32];     /* the last state squeue showed */
	char ran_partition[64];
	char node[128];
	int restarts;           /* attempts after the first (requeued or preempted) */
	bool cancelled_by_us;
	bool active;            /* submitted and not known to be over */
	/* the current attempt's node run directory and how far its run.log was streamed */
	char attempt[256];
	int log_fd;
	json_object *node_doc;  /* the node's result document */
	json_object *node_iso;
	char node_host[256];
	char node_run_dir[PATH_MAX];
	char peak_source[32], peak_memory_source[96];
	lb_guard guard; /* cancels the job if labbox dies; wr -1 when there is none */
} slurm_state;

static slurm_state *state_of(lb_backend *b)
{
	return b->state;
}

static void progress(slurm_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(slurm_state *s, const char *fmt, ...)
{
	if (!s->progress)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	s->progress(s->progress_ctx, line);
}

static void slurm_owner(lb_backend *b, uid_t *uid, gid_t *gid)
{
	(void)b;
	/* The staged exp/ is the node labbox's source, read by the same user: no chown. */
	*uid = getuid();
	*gid = getgid();
}

/* The configuration the clients will read. A missing file would make every client retry
 * for a minute before failing, so it is refused at once, by name. */
static int find_conf(slurm_state *s, char *err, size_t errlen)
{
	const char *env = getenv("SLURM_CONF");
	if (env && *env) {
		if (access(env, R_OK) < 0) {
			snprintf(err, errlen, "SLURM_CONF=%s cannot be read (%s): the Slurm cluster "
				 "cannot be reached; `sinfo` shows what is wrong", env, strerror(errno));
			return -EHOSTUNREACH;
		}
		snprintf(s->conf, sizeof s->conf, "%s", env);
		return 0;
	}
	/* The Debian default, and where configless slurmd keeps its copy. */
	static const char *const dflt[] = {"/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf",
					   "/etc/slurm-llnl/slurm.conf"};
	for (size_t i = 0; i < sizeof dflt / sizeof *dflt; i++)
		if (access(dflt[i], R_OK) == 0) {
			snprintf(s->conf, sizeof s->conf, "%s", dflt[i]);
			return 0;
		}
	snprintf(err, errlen, "no Slurm configuration: SLURM_CONF is not set and "
		 "/etc/slurm/slurm.conf does not exist; point SLURM_CONF at the cluster's "
		 "slurm.conf (`sinfo` shows whether it answers)");
	return -EHOSTUNREACH;
}

/* The controller answers, and says its cluster's name and version. */
static int reach_controller(slurm_state *s, char *err, size_t errlen)
{
	static const char *const need[] = {"sbatch", "squeue", "scancel", "scontrol", "sinfo"};
	for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
		LB_AUTOFREE char *p = NULL;
		if (lb_find_executable(need[i], &p) < 0) {
			snprintf(err, errlen, "the Slurm client is not installed (no '%s' on PATH): "
				 "mode slurm submits through the cluster's own sbatch", need[i]);
			return -ENOENT;
		}
	}
	int r = find_conf(s, err, errlen);
	if (r < 0)
		return r;
	char *argv[] = {"scontrol", "show", "config", NULL};
	lb_buf o = {0};
	int st = client_run(argv, true, 1 << 20, CLIENT_TIMEOUT_S, &o);
	if (st != 0) {
		char said[400];
		one_line(&o, said, sizeof said);
		lb_buf_free(&o);
		snprintf(err, errlen, "the Slurm controller does not answer (SLURM_CONF=%s)%s: %s; "
			 "`sinfo` shows what is wrong", s->conf,
			 st == 124 ? " within 30 s" : "", said);
		return -EHOSTUNREACH;
	}
	char *save = NULL;
	for (char *line = o.data ? strtok_r(o.data, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char key[64], val[64];
		if (sscanf(line, "%63s = %63s", key, val) != 2)
			continue;
		if (strcmp(key, "ClusterName") == 0)
			snprintf(s->cluster, sizeof s->cluster, "%s", val);
		else if (strcmp(key, "SLURM_VERSION") == 0)
			snprintf(s->version, sizeof s->version, "%s", val);
	}
	lb_buf_free(&o);
	if (!s->partition)
		return 0;
	/* A partition that does not exist is named now rather than by sbatch's terse refusal. */
	char *pargv[] = {"sinfo", "-h", "-o", "%R", NULL};
	st = client_run(pargv, false, 1 << 20, CLIENT_TIMEOUT_S, &o);
	bool found = false;
	lb_buf names = {0};
	save = NULL;
	for (char *line = st == 0 && o.data ? strtok_r(o.data, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		found = found || strcmp(line, s->partition) == 0;
		lb_buf_printf(&names, "%s%s", names.len ? ", " : "", line);
	}
	if (st == 0 && !found) {
		snprintf(err, errlen, "the Slurm cluster %s has no partition '%s' (it has: %s); "
			 "`sinfo` lists them", s->cluster[0] ? s->cluster : "(unnamed)",
			 s->partition, names.data ? names.data : "none");
		r = -ENOENT;
	}
	lb_buf_free(&names);
	lb_buf_free(&o);
	return r;
}

/* This binary where the nodes can run it: beside the runs directory, named by its content,
 * so runs (and the cells of a sweep) share one copy and a rebuilt labbox gets its own. */
static int place_labbox(slurm_state *s, const char *runs_dir, char *err, size_t errlen)
{
	if (s->labbox_given) {
		if (s->labbox_given[0] != '/') {
			snprintf(err, errlen, "the labbox for the nodes must be an absolute path, not "
				 "'%s'", s->labbox_given);
			return -EINVAL;
		}
		snprintf(s->labbox, sizeof s->labbox, "%s", s->labbox_given);
		return 0;
	}
	LB_AUTOCLOSE int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	char hex[65];
	int r = fd < 0 ? -errno : lb_sha256_fd(fd, hex);
	if (r < 0) {
		snprintf(err, errlen, "cannot read this labbox binary: %s", strerror(-r));
		return r;
	}
	/* The nodes run whatever is at this path as the user: in a directory others can write
	 * (/tmp/bin beside /tmp/runs) another user could have put their own program there under
	 * the name this binary's digest gives. It lives where the other records do, and the
	 * directory and the copy must be the user's own. */
	LB_AUTOFREE char *bindir = NULL;
	if ((r = lb_records_place(runs_dir, "bin", &bindir)) < 0)
		return r;
	int n = snprintf(s->labbox, sizeof s->labbox, "%s/labbox-%.16s", bindir, hex);
	if (n < 0 || (size_t)n >= sizeof s->labbox)
		return -ENAMETOOLONG;
	char why[64];
	const char *bad = bindir;
	/* Where others may create entries at all (a 1777 runs directory), they could make the
	 * missing bin directory theirs between this look and the copy. */
	char holder[PATH_MAX];
	snprintf(holder, sizeof holder, "%s", bindir);
	char *cut = strrchr(holder, '/');
	if (cut)
		*(cut == holder ? cut + 1 : cut) = '\0';
	struct stat hs;
	if (stat(cut ? holder : ".", &hs) == 0 && (hs.st_mode & 022)) {
		snprintf(err, errlen, "%s, where the nodes' labbox is kept, is in %s, which others "
			 "may write: a program put there would run as you; choose --runs-dir in a "
			 "directory of your own", bindir, cut ? holder : ".");
		return -EPERM;
	}
	/* The nodes run bin/labbox-SHA by path: any directory above it that another user owns
	 * could be moved and replaced between this look and their exec. */
	char unsafe[PATH_MAX + 96];
	if (lb_dir_chain_trusted(cut ? holder : ".", unsafe, sizeof unsafe) == -EPERM) {
		snprintf(err, errlen, "%s, where the nodes' labbox is kept, is not safe: %s; "
			 "choose --runs-dir in a directory of your own", bindir, unsafe);
		return -EPERM;
	}
	r = lb_path_own(bindir, true, why, sizeof why);
	if (r == 0) {
		bad = s->labbox;
		r = lb_path_own(s->labbox, false, why, sizeof why);
	}
	if (r < 0) {
		if (r == -EPERM)
			snprintf(err, errlen, "%s, where the nodes' labbox is kept, is not this user's "
				 "own (%s): a program there would run as you; remove it, or choose "
				 "--runs-dir in a directory of your own", bad, why);
		else
			snprintf(err, errlen, "cannot look at %s: %s", bad, strerror(-r));
		return r;
	}
	struct stat sb;
	if (stat(s->labbox, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0111))
		return 0;
	if ((r = lb_mkdir_p(bindir, 0755)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", bindir, strerror(-r));
		return r;
	}
	/* Copied through a temporary name and renamed, so a node never runs half a binary. */
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", s->labbox, (int)getpid());
	LB_AUTOCLOSE int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-r));
		return r;
	}
	char buf[65536];
	ssize_t k;
	while ((k = read(fd, buf, sizeof buf)) > 0)
		if ((r = lb_write_all(out, buf, (size_t)k)) < 0)
			break;
	if (k < 0)
		r = -errno;
	if (r == 0 && fchmod(out, 0755) < 0)
		r = -errno;
	if (r == 0 && rename(tmp, s->labbox) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		snprintf(err, errlen, "cannot copy labbox to %s: %s", s->labbox, strerror(-r));
	}
	return r;
}

/* --gpus LIST asks for that many GPUs of the job; "all" names no number the cluster knows. */
static int count_gpus(slurm_state *s, char *err, size_t errlen)
{
	const char *g = json_str(s->sandbox, "gpus");
	s->gpus = 0;
	if (!g || strcmp(g, "none") == 0)
		return 0;
	if (strcmp(g, "all") == 0) {
		snprintf(err, errlen, "--gpus all names no number of GPUs for a Slurm job: give as "
			 "many indices as GPUs wanted (--gpus 0,1 asks for two; the node's labbox "
			 "uses the ones Slurm allocates)");
		return -EINVAL;
	}
	/* As many GPUs as the list names (a record's value is parsed as a flag's is). */
	lb_gpu_spec spec;
	char why[160];
	if (lb_sandbox_gpus_parse(g, &spec, why, sizeof why) < 0) {
		snprintf(err, errlen, "--gpus %s", why);
		return -EINVAL;
	}
	s->gpus = (unsigned)spec.n;
	return 0;
}

static int slurm_prepare(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	slurm_state *s = state_of(b);
	int r = reach_controller(s, err, errlen);
	if (r < 0)
		return r;
	if ((r = count_gpus(s, err, errlen)) < 0)
		return r;
	if (!realpath(job->run_dir, s->run_dir)) {
		snprintf(err, errlen, "%s: %s", job->run_dir, strerror(errno));
		return -errno;
	}
	if (strchr(s->run_dir, '%') || strchr(s->run_dir, '\n')) {
		snprintf(err, errlen, "the run directory's path has a %% or a newline, which "
			 "sbatch's --output cannot name: choose another --runs-dir");
		return -EINVAL;
	}
	if (snprintf(s->dir, sizeof s->dir, "%.4000s/slurm", s->run_dir) >= (int)sizeof s->dir - 6 ||
	    snprintf(s->node_runs, sizeof s->node_runs, "%.4080s/runs", s->dir) >= (int)sizeof s->node_runs) {
		snprintf(err, errlen, "the run directory's path is too long for the Slurm job's files");
		return -ENAMETOOLONG;
	}
	if ((r = lb_mkdir_p(s->node_runs, 0700)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", s->node_runs, strerror(-r));
		return r;
	}
	char runs_abs[PATH_MAX];
	if (!job->runs_dir || !realpath(job->runs_dir, runs_abs))
		snprintf(runs_abs, sizeof runs_abs, "%s", s->run_dir);
	if ((r = place_labbox(s, runs_abs, err, errlen)) < 0)
		return r;
	/* The node's labbox hides its own records; the submitting side's runs directory (other
	 * runs) and index are hidden too, as the local backend hides them. */
	char index_abs[PATH_MAX];
	const char *hide[2] = {runs_abs, NULL};
	size_t nhide = 1;
	if (job->index_path && realpath(job->index_path, index_abs))
		hide[nhide++] = index_abs;
	char expdir[PATH_MAX + 8];
	snprintf(expdir, sizeof expdir, "%s/exp", s->run_dir);
	s->gate_mode = job->gate_mode;
	lb_slurm_node_run nr = {
		.labbox = s->labbox, .runs_dir = s->node_runs, .python = s->python,
		.expdir = expdir, .entry = job->argv[1], .args = job->argv[1] ? job->argv + 2 : NULL,
		.budget = job->budget, .grace = s->grace, .disk_limit = job->disk_limit,
		.log_limit = s->log_limit, .policy = s->policy, .trust_project = s->trust_project,
		.gate_mode = job->gate_mode, .sandbox = s->sandbox, .hide = hide, .nhide = nhide,
		.gpus_from_job = s->gpus > 0,
	};
	for (size_t i = 2; job->argv[1] && job->argv[i]; i++)
		nr.nargs++;
	char **v = NULL;
	if ((r = lb_slurm_node_argv(&nr, &v)) < 0) {
		snprintf(err, errlen, "cannot build the node's command: %s", strerror(-r));
		return r;
	}
	s->node_argv.v = v;
	while (v[s->node_argv.n])
		s->node_argv.n++;
	s->node_argv.cap = s->node_argv.n + 1;
	if (job->budget > 0)
		s->time_limit_s = job->budget + s->grace + JOB_OVERHEAD_S;
	return 0;
}

static void setup_failed(lb_sandbox_result *res, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void setup_failed(lb_sandbox_result *res, const char *step, const char *fmt, ...)
{
	res->outcome = LB_SB_SETUP_FAILED;
	res->exit_code = -1;
	snprintf(res->setup_step, sizeof res->setup_step, "%s", step);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->setup_error, sizeof res->setup_error, fmt, ap);
	va_end(ap);
}

/* The newest node run directory: the node's labbox makes one per attempt, and its ids sort
 * by time. */
static bool newest_attempt(slurm_state *s, char out[256])
{
	DIR *d = opendir(s->node_runs);
	if (!d)
		return false;
	out[0] = '\0';
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strlen(e->d_name) < 256 && strcmp(e->d_name, out) > 0)
			snprintf(out, 256, "%s", e->d_name);
	closedir(d);
	return out[0] != '\0';
}

/* What the node's run.log gained since the last look, into the pipeline; a new attempt
 * (Slurm requeued the job) starts from the beginning of its own log. */
static void stream_log(slurm_state *s, const lb_backend_job *job)
{
	char newest[256];
	if (newest_attempt(s, newest) && strcmp(newest, s->attempt) != 0) {
		if (s->attempt[0]) {
			s->restarts++;
			char note[512];
			int n = snprintf(note, sizeof note,
					 "\n[labbox] Slurm restarted job %s (attempt %d): what follows "
					 "is that attempt's output, and the run's record is that attempt's\n",
					 s->job_id, s->restarts + 1);
			if (job->output && n > 0)
				job->output(job->output_ctx, LB_STREAM_STDERR, note, (size_t)n);
			if (job->restart)
				job->restart(job->output_ctx);
		}
		snprintf(s->attempt, sizeof s->attempt, "%s", newest);
		if (s->log_fd >= 0)
			close(s->log_fd);
		s->log_fd = -1;
	}
	if (!s->attempt[0])
		return;
	if (s->log_fd < 0) {
		char p[PATH_MAX + 300];
		snprintf(p, sizeof p, "%s/%s/run.log", s->node_runs, s->attempt);
		s->log_fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (s->log_fd < 0)
			return;
	}
	char buf[65536];
	ssize_t k;
	while ((k = read(s->log_fd, buf, sizeof buf)) > 0)
		if (job->output)
			job->output(job->output_ctx, LB_STREAM_STDOUT, buf, (size_t)k);
}

/* The node labbox's stdout: one JSON document once it has finished. */
static json_object *read_node_doc(slurm_state *s)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/node.json", s->dir);
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	if (lb_read_file_at(AT_FDCWD, p, NODE_JSON_MAX, &text, &len) < 0 || len == 0)
		return NULL;
	json_tokener *tok = json_tokener_new_ex(64);
	if (!tok)
		return NULL;
	json_object *doc = json_tokener_parse_ex(tok, text, (int)len);
	bool complete = json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	if (!complete || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

/* The last line of node.err (or Slurm's own output), for a verdict without a document. */
static void node_said(slurm_state *s, char *out, size_t n)
{
	snprintf(out, n, "nothing");
	char p[PATH_MAX + 64];
	const char *names[] = {"node.err", NULL};
	char sl[64];
	snprintf(sl, sizeof sl, "slurm-%s.out", s->job_id);
	names[1] = sl;
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof p, "%s/%s", s->dir, names[i]);
		LB_AUTOFREE char *text = NULL;
		size_t len = 0;
		if (lb_read_file_at(AT_FDCWD, p, 1 << 20, &text, &len) < 0 || len == 0)
			continue;
		while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
			text[--len] = '\0';
		char *last = strrchr(text, '\n');
		snprintf(out, n, "%s: %.300s", names[i], last ? last + 1 : text);
		for (char *c = out; *c; c++)
			if ((unsigned char)*c < 0x20)
				*c = ' ';
		return;
	}
}

static void fill_from_node(slurm_state *s, json_object *doc, lb_sandbox_result *res)
{
	json_object *rs, *v;
	if (json_object_object_get_ex(doc, "resources", &rs) && rs) {
		res->wall_s = json_dbl(rs, "wall_s");
		res->cpu_user_s = json_dbl(rs, "cpu_user_s");
		res->cpu_sys_s = json_dbl(rs, "cpu_sys_s");
		res->peak_rss_bytes = (uint64_t)json_i64(rs, "peak_rss_bytes");
		res->peak_memory_bytes = (uint64_t)json_i64(rs, "peak_memory_bytes");
		res->max_rss_bytes = (uint64_t)json_i64(rs, "max_rss_bytes");
		const char *src = json_str(rs, "peak_rss_source");
		snprintf(s->peak_source, sizeof s->peak_source, "%s", src ? src : "unknown");
		res->peak_source = s->peak_source;
		src = json_str(rs, "peak_memory_source");
		snprintf(s->peak_memory_source, sizeof s->peak_memory_source, "%s",
			 src ? src : "unknown");
		res->peak_memory_source = s->peak_memory_source;
		if (json_object_object_get_ex(rs, "peak_gpu_bytes", &v) && v) {
			res->gpu_sampled = true;
			res->peak_gpu_bytes = (uint64_t)json_object_get_int64(v);
		}
	}
	if (json_object_object_get_ex(doc, "isolation", &v) && json_object_is_type(v, json_type_object))
		s->node_iso = json_object_get(v);
	json_object *be;
	if (json_object_object_get_ex(doc, "backend", &be)) {
		const char *h = json_str(be, "host");
		snprintf(s->node_host, sizeof s->node_host, "%s", h ? h : "");
	}
	const char *rd = json_str(doc, "run_dir");
	snprintf(s->node_run_dir, sizeof s->node_run_dir, "%s", rd ? rd : "");
	res->oom_killed = js_bool(doc, "oom_killed");
}

/* The verdict from the node's document and the job's end. */
static void conclude(slurm_state *s, json_object *doc, lb_sandbox_result *res)
{
	const char *state = s->job_state;
	bool cancelled_outside = strcmp(state, "CANCELLED") == 0 && !s->cancelled_by_us;
	if (doc)
		fill_from_node(s, doc, res);
	const char *schema = doc ? json_str(doc, "schema") : NULL;
	const char *status = doc ? json_str(doc, "status") : NULL;
	if (res->interrupted) {
		res->outcome = LB_SB_INTERRUPTED;
		return;
	}
	if (res->timed_out || (doc && js_bool(doc, "timed_out")) || strcmp(state, "TIMEOUT") == 0 ||
	    strcmp(state, "DEADLINE") == 0) {
		res->timed_out = true;
		res->outcome = LB_SB_TIMEOUT;
		return;
	}
	if (cancelled_outside) {
		setup_failed(res, "slurm job",
			     "the Slurm job %s was cancelled outside labbox (state CANCELLED, "
			     "scancel or an administrator) before the run finished; its output so "
			     "far is kept; `scontrol show job %s` shows who and when",
			     s->job_id, s->job_id);
		return;
	}
	if (!schema || strcmp(schema, "labbox.run/1") != 0 || !status) {
		char said[400];
		const char *msg = NULL;
		json_object *e;
		if (doc && json_object_object_get_ex(doc, "errors", &e) &&
		    json_object_is_type(e, json_type_array) && json_object_array_length(e))
			msg = json_object_get_string(json_object_array_get_idx(e, 0));
		if (msg)
			snprintf(said, sizeof said, "%.380s", msg);
		else
			node_said(s, said, sizeof said);
		if (strcmp(state, "OUT_OF_MEMORY") == 0) {
			res->oom_killed = true;
			res->outcome = LB_SB_SIGNALED;
			res->term_signal = SIGKILL;
			return;
		}
		setup_failed(res, "slurm job",
			     "the Slurm job %s ended %s without a result from labbox on node %s: %s; "
			     "`scontrol show job %s` and %s/slurm-%s.out say more",
			     s->job_id, state[0] ? state : "(state unknown)",
			     s->node[0] ? s->node : "(none)", said, s->job_id, s->dir, s->job_id);
		return;
	}
	if (strcmp(status, "interrupted") == 0) {
		/* Nobody here asked. Near the job's time limit it is the signal Slurm sends ahead
		 * of it (--signal, up to a minute early); well before it, someone signalled the
		 * job (scancel --signal), which is no timeout. */
		if (s->time_limit_s > 0 && s->ran_s < s->time_limit_s - 2 * SIGNAL_LEAD_S) {
			setup_failed(res, "slurm job",
				     "labbox on node %s was signalled after %.0f s, well before the "
				     "job's time limit of %.0f s, by someone other than this labbox "
				     "(scancel --signal?); its output so far is kept; `scontrol show "
				     "job %s` says more",
				     s->node[0] ? s->node : "?", s->ran_s, s->time_limit_s, s->job_id);
			return;
		}
		res->timed_out = true;
		res->outcome = LB_SB_TIMEOUT;
		return;
	}
	if (strcmp(status, "infra_error") == 0 || strcmp(status, "rejected") == 0) {
		json_object *ie;
		const char *m = NULL;
		if (json_object_object_get_ex(doc, "infra_error", &ie) && ie)
			m = json_str(ie, "message");
		setup_failed(res, strcmp(status, "rejected") == 0 ? "node check" : "node sandbox",
			     "labbox on node %s: %s", s->node[0] ? s->node : "?",
			     m ? m : strcmp(status, "rejected") == 0
					     ? "the static check on the node rejected the code"
					     : "the node's sandbox could not be set up");
		return;
	}
	if (strcmp(status, "disk_limit") == 0) {
		res->outcome = LB_SB_DISK_LIMIT;
		res->disk_limited = true;
		snprintf(res->disk_detail, sizeof res->disk_detail, "on node %s", s->node);
		return;
	}
	json_object *v;
	if (json_object_object_get_ex(doc, "exit_code", &v) && v) {
		res->outcome = LB_SB_EXITED;
		res->exit_code = json_object_get_int(v);
	} else if (json_object_object_get_ex(doc, "signal", &v) && v) {
		res->outcome = LB_SB_SIGNALED;
		res->term_signal = json_object_get_int(v);
	} else {
		setup_failed(res, "slurm job", "labbox on node %s reported status '%s' without an "
			     "exit code or signal", s->node, status);
	}
}

static void scancel_orphan(void *job_id)
{
	execlp("scancel", "scancel", (const char *)job_id, (char *)NULL);
	_exit(127);
}

int lb_slurm_guard_start(const char *job_id, lb_guard *g)
{
	return lb_guard_start(g, scancel_orphan, (void *)job_id);
}

static int slurm_run(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res)
{
	slurm_state *s = state_of(b);
	res->exit_code = -1;
	res->peak_source = "unknown";
	res->peak_memory_source = "not measured (the node's labbox did not report)";
	res->isolation.filesystem = "unknown: labbox on the Slurm node did not report its sandbox";

	char cell_dir[PATH_MAX];
	snprintf(cell_dir, sizeof cell_dir, "%s", s->dir);
	lb_slurm_cell cell = {.argv = s->node_argv.v, .dir = cell_dir};
	uint64_t mem = (uint64_t)json_i64(s->sandbox, "memory_bytes");
	double cpus = json_dbl(s->sandbox, "cpus");
	char name[96];
	snprintf(name, sizeof name, "labbox-%s", job->id);
	lb_slurm_submit sub = {
		.dir = s->dir, .name = name, .partition = s->partition, .account = s->account,
		.qos = s->qos, .cpus = cpus > 0 ? (unsigned)ceil(cpus) : 0,
		.mem_bytes = mem ? mem + JOB_MEM_EXTRA : 0, .gpus = s->gpus,
		.time_limit_s = s->time_limit_s, .signal_lead_s = SIGNAL_LEAD_S,
		.cells = &cell, .ncells = 1,
	};
	char err[512] = "";
	s->sbatch_cmd = json_object_new_array();
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	/* Blocked from before the submission: a Ctrl-C while sbatch runs still cancels the job. */
	sigprocmask(SIG_BLOCK, &mask, &old);
	LB_AUTOCLOSE int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* A signal that came before the block was caught by labbox's handler: read here too. */
	lb_interrupt_rearm();
	if (sfd < 0) {
		int e = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return e;
	}
	int r = lb_slurm_submit_array(&sub, s->sbatch_cmd, s->job_id, err, sizeof err);
	if (r < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		setup_failed(res, "sbatch", "%s", err);
		return 0;
	}
	s->active = true;
	/* Without it (no descriptor or process left) a labbox killed outright leaves the job
	 * to its time limit; the run itself still ends it at cleanup. */
	(void)lb_slurm_guard_start(s->job_id, &s->guard);
	progress(s, "submitted Slurm job %s%s%s to cluster %s", s->job_id,
		 s->partition ? ", partition " : "", s->partition ? s->partition : "",
		 s->cluster[0] ? s->cluster : "(unnamed)");

	double t0 = lb_time_monotonic(), t_run = 0, last_ok = t0, stop_at = 0, next_poll = 0;
	bool killed = false, seen = false, was_running = false, gone = false;
	char prev[32] = "";
	for (;;) {
		double now = lb_time_monotonic();
		/* Output first, so the progress line of the job's end follows what it printed. */
		stream_log(s, job);
		if (now >= next_poll) {
			char st[1][32], nd[1][128];
			int pr = lb_slurm_poll(s->job_id, 1, st, nd);
			next_poll = now + (s->poll_s > 0 ? s->poll_s : 0.5);
			if (pr == 0) {
				last_ok = now;
				if (!st[0][0] && seen)
					gone = true;
				if (st[0][0]) {
					seen = true;
					snprintf(s->job_state, sizeof s->job_state, "%s", st[0]);
					if (nd[0][0] && strcmp(nd[0], "(null)") != 0)
						snprintf(s->node, sizeof s->node, "%s", nd[0]);
				}
			} else if (now - last_ok > LOST_CONTACT_S) {
				setup_failed(res, "slurm job", "lost contact with the Slurm controller "
					     "for %.0f s while job %s ran (SLURM_CONF=%s); the job may "
					     "still run: `squeue -j %s`", now - last_ok, s->job_id,
					     s->conf, s->job_id);
				break;
			}
			if (strcmp(prev, s->job_state) != 0 && s->job_state[0]) {
				if (strcmp(s->job_state, "RUNNING") == 0)
					progress(s, "Slurm job %s RUNNING on %s", s->job_id,
						 s->node[0] ? s->node : "?");
				else
					progress(s, "Slurm job %s %s", s->job_id, s->job_state);
				snprintf(prev, sizeof prev, "%s", s->job_state);
			}
			if (strcmp(s->job_state, "RUNNING") == 0) {
				if (!t_run)
					t_run = now;
				was_running = true;
			} else if (was_running && (strcmp(s->job_state, "PENDING") == 0 ||
						   strncmp(s->job_state, "REQUEUE", 7) == 0)) {
				/* Requeued (preempted, a node failure): the time limit is the new
				 * attempt's; stream_log counts the attempt when its directory
				 * appears. */
				t_run = 0;
				was_running = false;
			}
		}
		if (state_final(s->job_state))
			break;
		/* squeue no longer shows a job it showed: it ended long enough ago to be
		 * forgotten; the node's document says how. */
		if (gone)
			break;
		if (!seen && now - t0 > LOST_CONTACT_S) {
			setup_failed(res, "slurm job", "squeue never showed job %s (SLURM_CONF=%s): "
				     "`squeue -j %s` and `sinfo` say more", s->job_id, s->conf, s->job_id);
			break;
		}
		if (stop_at == 0 && t_run && s->time_limit_s > 0 &&
		    now - t_run > s->time_limit_s + SIGNAL_LEAD_S) {
			/* Slurm should have ended it: labbox's own limit is the backstop. */
			res->timed_out = true;
			s->cancelled_by_us = true;
			scancel(s->job_id, "TERM", true);
			stop_at = now;
		}
		if (stop_at && !killed && now - stop_at > s->grace + STOP_MARGIN_S) {
			killed = true;
			scancel(s->job_id, NULL, false);
		}
		struct pollfd pf = {.fd = sfd, .events = POLLIN};
		double wait = next_poll - lb_time_monotonic();
		int n = poll(&pf, 1, wait > 0 ? (int)(wait * 1000) + 1 : 0);
		if (n > 0 && (pf.revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && !res->interrupted) {
				res->interrupted = true;
				res->interrupt_signal = (int)si.ssi_signo;
				s->cancelled_by_us = true;
				if (strcmp(s->job_state, "RUNNING") == 0) {
					/* labbox on the node ends the experiment with its grace and
					 * keeps what it wrote; then the job goes. */
					scancel(s->job_id, "TERM", true);
					stop_at = lb_time_monotonic();
				} else {
					scancel(s->job_id, NULL, false);
					stop_at = lb_time_monotonic();
					killed = true;
				}
				progress(s, "cancelling Slurm job %s (%s)", s->job_id,
					 strsignal(res->interrupt_signal));
			}
		}
	}
	res->wall_s = lb_time_monotonic() - (t_run ? t_run : t0);
	s->ran_s = t_run ? lb_time_monotonic() - t_run : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (res->outcome == LB_SB_SETUP_FAILED)
		return 0;
	s->active = !gone && !state_final(s->job_state) && s->job_state[0];
	/* The document is written before labbox on the node exits; on a shared file system it
	 * may show up a moment after the job's end. */
	json_object *doc = NULL;
	for (int i = 0; i < 20 && !(doc = read_node_doc(s)); i++) {
		if (strcmp(s->job_state, "COMPLETED") != 0)
			break;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	stream_log(s, job);
	s->node_doc = doc;
	conclude(s, doc, res);
	return 0;
}

/* ---- fetch: the node run's files into the local run directory ---------------------------- */

static bool same_content(const char *a, const char *b, const struct stat *sa)
{
	struct stat sb;
	if (lstat(b, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size != sa->st_size)
		return false;
	LB_AUTOCLOSE int fa = open(a, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	LB_AUTOCLOSE int fb = open(b, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char ha[65], hb[65];
	return fa >= 0 && fb >= 0 && lb_sha256_fd(fa, ha) == 0 && lb_sha256_fd(fb, hb) == 0 &&
	       strcmp(ha, hb) == 0;
}

/* Moves (renames: the same file system) every regular file the node's run created or changed
 * into the local exp/, and makes the directories it made; a file that still holds its staged
 * bytes is left alone, so the local staged copy keeps its identity and a stale results file
 * is still told from one the run wrote. */
static int mirror_in(const char *from, const char *to, const char *rel)
{
	char src[PATH_MAX], dst[PATH_MAX];
	snprintf(src, sizeof src, "%s%s%s", from, *rel ? "/" : "", rel);
	snprintf(dst, sizeof dst, "%s%s%s", to, *rel ? "/" : "", rel);
	DIR *d = opendir(src);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char crel[PATH_MAX], cs[PATH_MAX * 2 + 2], cd[PATH_MAX * 2 + 2];
		int n = snprintf(crel, sizeof crel, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (n < 0 || (size_t)n >= sizeof crel)
			continue;
		snprintf(cs, sizeof cs, "%s/%s", from, crel);
		snprintf(cd, sizeof cd, "%s/%s", to, crel);
		struct stat st;
		if (lstat(cs, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			struct stat dt;
			if (lstat(cd, &dt) < 0 && mkdir(cd, st.st_mode & 07777) < 0) {
				r = -errno;
				break;
			}
			r = mirror_in(from, to, crel);
		} else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
			if (S_ISREG(st.st_mode) && same_content(cs, cd, &st))
				continue;
			if (S_ISLNK(st.st_mode)) {
				char t1[PATH_MAX], t2[PATH_MAX];
				ssize_t l1 = readlink(cs, t1, sizeof t1 - 1);
				ssize_t l2 = readlink(cd, t2, sizeof t2 - 1);
				if (l1 >= 0 && l1 == l2 && memcmp(t1, t2, (size_t)l1) == 0)
					continue;
			}
			struct stat dt;
			if (lstat(cd, &dt) == 0 && S_ISDIR(dt.st_mode))
				continue; /* a directory here, a file there: keep ours */
			if (rename(cs, cd) < 0)
				r = -errno;
		}
	}
	closedir(d);
	return r;
}

/* Files of the staged copy that the node's run deleted are deleted here too. */
static void mirror_deletions(const char *from, const char *to, const char *rel)
{
	char dst[PATH_MAX];
	snprintf(dst, sizeof dst, "%s%s%s", to, *rel ? "/" : "", rel);
	DIR *d = opendir(dst);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char crel[PATH_MAX], cs[PATH_MAX * 2 + 2], cd[PATH_MAX * 2 + 2];
		int n = snprintf(crel, sizeof crel, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (n < 0 || (size_t)n >= sizeof crel)
			continue;
		snprintf(cs, sizeof cs, "%s/%s", from, crel);
		snprintf(cd, sizeof cd, "%s/%s", to, crel);
		struct stat st, ss;
		if (lstat(cd, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (lstat(cs, &ss) == 0 && S_ISDIR(ss.st_mode))
				mirror_deletions(from, to, crel);
		} else if (lstat(cs, &ss) < 0 && errno == ENOENT) {
			unlink(cd);
		}
	}
	closedir(d);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	int r = lb_read_file_at(AT_FDCWD, from, (size_t)64 << 20, &text, &len);
	return r < 0 ? r : lb_write_file_atomic_mode(to, text, len, 0600);
}

static int slurm_fetch(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	slurm_state *s = state_of(b);
	if (!s->attempt[0])
		return 0; /* the node never started a run: nothing to bring back */
	char node_run[PATH_MAX + 300], node_exp[PATH_MAX + 310];
	snprintf(node_run, sizeof node_run, "%s/%s", s->node_runs, s->attempt);
	snprintf(node_exp, sizeof node_exp, "%s/exp", node_run);
	struct stat st;
	if (stat(node_exp, &st) < 0)
		return 0;
	/* Deletions first: once moved, a file is no longer in the node's copy. */
	mirror_deletions(node_exp, job->exp_dir, "");
	int r = mirror_in(node_exp, job->exp_dir, "");
	if (r < 0) {
		snprintf(err, errlen, "cannot bring the node's exp/ (%s) into %s: %s", node_exp,
			 job->exp_dir, strerror(-r));
		return r;
	}
	/* What is left there is the node's staged copy: the local exp/ holds the run's files. */
	nftw(node_exp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	char from[PATH_MAX + 320], to[PATH_MAX + 32];
	snprintf(from, sizeof from, "%s/environment.txt", node_run);
	snprintf(to, sizeof to, "%s/environment.txt", job->run_dir);
	if (stat(from, &st) == 0 && (r = copy_file(from, to)) < 0) {
		snprintf(err, errlen, "cannot copy the node's environment.txt: %s", strerror(-r));
		return r;
	}
	return 0;
}

static void slurm_cleanup(lb_backend *b)
{
	slurm_state *s = state_of(b);
	/* A job labbox lost track of (the controller went away while it ran) must not run on
	 * unwatched. */
	if (s->job_id[0] && s->active) {
		scancel(s->job_id, NULL, false);
		s->active = false;
	}
	lb_guard_stop(&s->guard);
	if (s->log_fd >= 0) {
		close(s->log_fd);
		s->log_fd = -1;
	}
}

static struct json_object *slurm_describe(lb_backend *b)
{
	slurm_state *s = state_of(b);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string("slurm"));
	json_object_object_add(o, "engine", json_object_new_string("slurm"));
	json_object_object_add(o, "version", s->version[0] ? json_object_new_string(s->version) : NULL);
	json_object_object_add(o, "host", s->node[0] ? json_object_new_string(s->node) : NULL);
	/* The node's labbox sandboxed the experiment; its isolation block is kept as it said. */
	json_object_object_add(o, "isolated_by", json_object_new_string("labbox on the Slurm node"));
	json_object_object_add(o, "cluster", s->cluster[0] ? json_object_new_string(s->cluster) : NULL);
	json_object_object_add(o, "partition", s->partition ? json_object_new_string(s->partition) : NULL);
	json_object_object_add(o, "account", s->account ? json_object_new_string(s->account) : NULL);
	json_object_object_add(o, "qos", s->qos ? json_object_new_string(s->qos) : NULL);
	json_object_object_add(o, "job_id", s->job_id[0] ? json_object_new_string(s->job_id) : NULL);
	json_object_object_add(o, "job_state", s->job_state[0] ? json_object_new_string(s->job_state) : NULL);
	json_object_object_add(o, "node", s->node[0] ? json_object_new_string(s->node) : NULL);
	json_object_object_add(o, "node_hostname", s->node_host[0] ? json_object_new_string(s->node_host) : NULL);
	json_object_object_add(o, "restarts", json_object_new_int(s->restarts));
	json_object_object_add(o, "time_limit_s", s->time_limit_s > 0
					   ? json_object_new_int64((int64_t)ceil(s->time_limit_s / 60.0) * 60)
					   : NULL);
	json_object_object_add(o, "slurm_conf", s->conf[0] ? json_object_new_string(s->conf) : NULL);
	json_object_object_add(o, "labbox", s->labbox[0] ? json_object_new_string(s->labbox) : NULL);
	json_object_object_add(o, "node_run_dir",
			       s->node_run_dir[0] ? json_object_new_string(s->node_run_dir) : NULL);
	json_object *py = json_object_new_object();
	json_object_object_add(py, "path", json_object_new_string(s->python ? s->python : "python3"));
	json_object_object_add(o, "interpreter", py);
	json_object_object_add(o, "command", s->sbatch_cmd ? json_object_get(s->sbatch_cmd)
							   : json_object_new_array());
	json_object *node_cmd = json_object_new_array();
	for (size_t i = 0; i < s->node_argv.n; i++)
		json_object_array_add(node_cmd, json_object_new_string(s->node_argv.v[i]));
	json_object_object_add(o, "node_command", node_cmd);
	return o;
}

static struct json_object *slurm_isolation(lb_backend *b)
{
	slurm_state *s = state_of(b);
	return s->node_iso ? json_object_get(s->node_iso) : NULL;
}

/* The node labbox's own record, from its result document. */
static struct json_object *slurm_gate_record(lb_backend *b)
{
	slurm_state *s = state_of(b);
	json_object *g;
	if (s->node_doc && json_object_object_get_ex(s->node_doc, "runtime_gate", &g) && g)
		return json_object_get(g);
	return NULL;
}

static void slurm_free(lb_backend *b)
{
	slurm_state *s = state_of(b);
	if (!s)
		return;
	if (s->log_fd >= 0)
		close(s->log_fd);
	if (s->guard.wr >= 0)
		close(s->guard.wr); /* not stopped: the job goes with this labbox */
	free(s->partition);
	free(s->account);
	free(s->qos);
	free(s->python);
	free(s->labbox_given);
	json_object_put(s->sandbox);
	json_object_put(s->sbatch_cmd);
	json_object_put(s->node_doc);
	json_object_put(s->node_iso);
	lb_strv_free(&s->node_argv);
	free(s);
}

/* The node's labbox runs the code in its own sandbox, under its own gate, in the mode this
 * run's gate would have had here (passed on as --runtime-gate). */
static void slurm_gate_note(lb_backend *b, char *note, size_t n)
{
	slurm_state *s = b->state;
	snprintf(note, n, "not installed by this labbox: the labbox on the node ran the code under "
		 "its own runtime gate (policy %s, so mode %s); its events are in slurm/node.json's "
		 "runtime_gate", lb_check_policy_name((lb_check_policy)s->policy),
		 lb_gate_mode_name(lb_gate_effective((lb_gate_mode)s->gate_mode, s->policy)));
}

static const lb_backend_ops slurm_ops = {
	.name = "slurm",
	.owner = slurm_owner,
	.prepare = slurm_prepare,
	.run = slurm_run,
	.fetch = slurm_fetch,
	.cleanup = slurm_cleanup,
	.describe = slurm_describe,
	.free = slurm_free,
	.isolation = slurm_isolation,
	.gate_note = slurm_gate_note,
	.gate_record = slurm_gate_record,
};

/* Names Slurm takes as they are (partition, account, qos): no spaces, no control
 * characters, nothing that would read as another option. */
static bool slurm_name_ok(const char *v)
{
	if (!v)
		return true;
	if (!*v || *v == '-' || strlen(v) > 200)
		return false;
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '%')
			return false;
	return true;
}

int lb_backend_slurm(const lb_slurm_config *cfg, lb_backend **out)
{
	if (!slurm_name_ok(cfg->partition) || !slurm_name_ok(cfg->account) ||
	    !slurm_name_ok(cfg->qos))
		return -EINVAL;
	lb_backend *b = calloc(1, sizeof *b);
	slurm_state *s = calloc(1, sizeof *s);
	if (!b || !s) {
		free(b);
		free(s);
		return -ENOMEM;
	}
	s->log_fd = -1;
	s->guard.wr = -1;
	b->ops = &slurm_ops;
	b->state = s;
	bool oom = false;
#define DUP(field)                                                                             \
	if (cfg->field && !(s->field = strdup(cfg->field)))                                    \
		oom = true;
	DUP(partition)
	DUP(account)
	DUP(qos)
	DUP(python)
#undef DUP
	if (cfg->labbox && !(s->labbox_given = strdup(cfg->labbox)))
		oom = true;
	s->sandbox = cfg->sandbox ? json_object_get(cfg->sandbox) : NULL;
	s->grace = cfg->grace > 0 ? cfg->grace : 0;
	s->poll_s = cfg->poll_s;
	s->policy = cfg->policy;
	s->trust_project = cfg->trust_project;
	s->log_limit = cfg->log_limit;
	s->progress = cfg->progress;
	s->progress_ctx = cfg->progress_ctx;
	if (oom) {
		lb_backend_free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

/* ---- labbox probe --mode slurm ----------------------------------------------------------- */

int lb_slurm_probe(struct json_object **out, char *err, size_t errlen)
{
	*out = NULL;
	slurm_state s;
	memset(&s, 0, sizeof s);
	int r = reach_controller(&s, err, errlen);
	if (r < 0)
		return r;
	char *argv[] = {"sinfo", "-h", "-o", "%P|%a|%l|%D|%T|%c|%m|%G", NULL};
	lb_buf o = {0};
	int st = client_run(argv, true, 1 << 20, CLIENT_TIMEOUT_S, &o);
	if (st != 0) {
		char said[400];
		one_line(&o, said, sizeof said);
		lb_buf_free(&o);
		snprintf(err, errlen, "sinfo failed (SLURM_CONF=%s): %s", s.conf, said);
		return -EHOSTUNREACH;
	}
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "cluster", s.cluster[0] ? json_object_new_string(s.cluster) : NULL);
	json_object_object_add(doc, "version", s.version[0] ? json_object_new_string(s.version) : NULL);
	json_object_object_add(doc, "slurm_conf", json_object_new_string(s.conf));
	json_object *parts = json_object_new_object();
	char *save = NULL;
	/* One line per partition and node state: summed per partition. */
	for (char *line = o.data ? strtok_r(o.data, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[8];
		size_t nf = 0;
		for (char *p = line; nf < 8; nf++) {
			f[nf] = p;
			char *bar = strchr(p, '|');
			if (!bar) {
				nf++;
				break;
			}
			*bar = '\0';
			p = bar + 1;
		}
		if (nf != 8 || !*f[0])
			continue;
		size_t len = strlen(f[0]);
		bool dflt = f[0][len - 1] == '*';
		if (dflt)
			f[0][len - 1] = '\0';
		json_object *pj;
		if (!json_object_object_get_ex(parts, f[0], &pj)) {
			pj = json_object_new_object();
			json_object_object_add(pj, "default", json_object_new_boolean(dflt));
			json_object_object_add(pj, "available", json_object_new_string(f[1]));
			json_object_object_add(pj, "time_limit", json_object_new_string(f[2]));
			json_object_object_add(pj, "nodes", json_object_new_int(0));
			json_object_object_add(pj, "nodes_idle", json_object_new_int(0));
			json_object_object_add(pj, "cpus_per_node", json_object_new_string(f[5]));
			json_object_object_add(pj, "memory_mb_per_node", json_object_new_string(f[6]));
			json_object_object_add(pj, "gres", strcmp(f[7], "(null)") ? json_object_new_string(f[7]) : NULL);
			json_object_object_add(parts, f[0], pj);
		}
		long n = strtol(f[3], NULL, 10);
		json_object_object_add(pj, "nodes", json_object_new_int((int)(json_i64(pj, "nodes") + n)));
		if (strncmp(f[4], "idle", 4) == 0)
			json_object_object_add(pj, "nodes_idle",
					       json_object_new_int((int)(json_i64(pj, "nodes_idle") + n)));
	}
	lb_buf_free(&o);
	json_object_object_add(doc, "partitions", parts);
	*out = doc;
	return 0;
}

/* ---- what a sweep's job array needs of the backend ---------------------------------------- */

int lb_slurm_reach(const char *partition, char cluster[128], char version[64], char *err,
		   size_t errlen)
{
	slurm_state *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	if (!slurm_name_ok(partition)) {
		free(s);
		snprintf(err, errlen, "a partition name must be one word");
		return -EINVAL;
	}
	s->partition = (char *)partition;
	int r = reach_controller(s, err, errlen);
	snprintf(cluster, 128, "%s", s->cluster);
	snprintf(version, 64, "%s", s->version);
	free(s);
	return r;
}

int lb_slurm_place_labbox(const char *runs_dir, char out[PATH_MAX], char *err, size_t errlen)
{
	slurm_state *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	int r = place_labbox(s, runs_dir, err, errlen);
	snprintf(out, PATH_MAX, "%s", s->labbox);
	free(s);
	return r;
}

void lb_slurm_cancel(const char *job_id, const char *signal, bool batch_only, const char *state)
{
	lb_strv a = {0};
	int r = lb_strv_push(&a, "scancel");
	if (r == 0 && signal)
		r = lb_strv_pushf(&a, "--signal=%s", signal);
	if (r == 0 && batch_only)
		r = lb_strv_push(&a, "--batch");
	if (r == 0 && state)
		r = lb_strv_pushf(&a, "--state=%s", state);
	if (r == 0)
		r = lb_strv_push(&a, job_id);
	lb_buf o = {0};
	if (r == 0)
		client_run(a.v, true, 4096, CLIENT_TIMEOUT_S, &o);
	lb_buf_free(&o);
	lb_strv_free(&a);
}

bool lb_slurm_state_final(const char *state)
{
	return state_final(state);
}

int lb_slurm_tasks_parse(char *text, size_t ntasks, lb_slurm_task *tasks)
{
	for (size_t i = 0; i < ntasks; i++)
		memset(&tasks[i], 0, sizeof tasks[i]);
	LB_AUTOFREE bool *mark = calloc(ntasks ? ntasks : 1, sizeof *mark);
	if (!mark)
		return -ENOMEM;
	char *save = NULL;
	for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = {line};
		size_t nf = 1;
		for (char *q = line; *q && nf < 4; q++)
			if (*q == '|') {
				*q = '\0';
				f[nf++] = q + 1;
			}
		if (nf < 4)
			continue; /* not a line of ours */
		f[3][strcspn(f[3], "|")] = '\0';
		for (char *q = f[0] + strlen(f[0]); q > f[0] && q[-1] == ' ';)
			*--q = '\0';
		/* States are upper-case words and restarts a count; anything else is not believed. */
		bool ok = *f[1] && strlen(f[1]) < 32;
		for (const char *c = f[1]; ok && *c; c++)
			ok = (*c >= 'A' && *c <= 'Z') || *c == '_';
		char *end;
		errno = 0;
		long restarts = strtol(f[2], &end, 10);
		if (!ok || errno || end == f[2] || *end || restarts < 0)
			continue;
		memset(mark, 0, ntasks * sizeof *mark);
		mark_tasks(f[0], ntasks, mark);
		for (size_t i = 0; i < ntasks; i++) {
			if (!mark[i])
				continue;
			snprintf(tasks[i].state, sizeof tasks[i].state, "%s", f[1]);
			snprintf(tasks[i].node, sizeof tasks[i].node, "%.127s", f[3]);
			tasks[i].restarts = restarts > 1000000 ? 1000000 : (int)restarts;
		}
	}
	return 0;
}

int lb_slurm_poll_tasks(const char *job_id, size_t ntasks, lb_slurm_task *tasks)
{
	for (size_t i = 0; i < ntasks; i++)
		memset(&tasks[i], 0, sizeof tasks[i]);
	for (const char *p = job_id; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	char *argv[] = {"squeue", "-h", "-r", "-t", "all", "-j", (char *)job_id, "-O",
			"ArrayTaskID:|,State:|,RestartCnt:|,NodeList:|", NULL};
	lb_buf o = {0};
	int st = client_run(argv, true, 4u << 20, CLIENT_TIMEOUT_S, &o);
	if (st != 0) {
		/* As for lb_slurm_poll: a forgotten job is an answer, anything else is not. */
		bool forgotten = o.data && strstr(o.data, "Invalid job id");
		lb_buf_free(&o);
		return forgotten ? 0 : -EHOSTUNREACH;
	}
	int r = lb_slurm_tasks_parse(o.data, ntasks, tasks);
	lb_buf_free(&o);
	return r;
}
