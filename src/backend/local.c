/* The local backend: the sandbox of this host (src/sandbox). */
#include "labbox/backend.h"
#include "labbox/gate.h"
#include "labbox/record.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static lb_sandbox *sandbox_of(lb_backend *b)
{
	return b->state;
}

static void local_owner(lb_backend *b, uid_t *uid, gid_t *gid)
{
	lb_sandbox_payload_ids(sandbox_of(b), uid, gid);
}

/* Other runs are not the experiment's business, wherever the runs directory lives (under
 * /srv or /data it is not hidden like a home): the runs directory, the run index and the
 * sweeps beside it are hidden, and exp/ of this run alone is bound back. So are those of
 * every other runs directory this user's labbox has used (lb_record_hide_known). */
static int hide_records(lb_sandbox *sb, const lb_backend_job *job)
{
	int r = job->runs_dir ? lb_record_hide_runs_dir(sb, job->runs_dir, job->index_path, true)
			      : 0;
	if (r < 0)
		return r;
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	LB_AUTOFREE char *state = lb_record_state_dir();
	if (job->runs_dir && state)
		lb_record_known_note(state, job->runs_dir);
	return lb_record_hide_known_in(sb, cache, state);
}

int lb_local_hide_job_records(lb_sandbox *sb, const lb_backend_job *job)
{
	return hide_records(sb, job);
}

/* The gate's module, config and compiled form, from labbox's memory into the sandbox's
 * read-only LB_GATE_PY_DIR: written on the disk, removed after, they were most of what a run
 * made and deleted there. */
static int place_gate(lb_sandbox *sb, const lb_backend_job *job, const lb_gate_config *gc)
{
	int r = lb_sandbox_add_file(sb, LB_GATE_PY_DIR, "sitecustomize.py", lb_gate_source,
				    lb_gate_source_len);
	lb_buf cfg = {0};
	if (r == 0)
		r = lb_gate_config_text(gc, &cfg);
	if (r == 0)
		r = lb_sandbox_add_file(sb, LB_GATE_PY_DIR, LB_GATE_CONFIG, cfg.data, cfg.len);
	lb_buf_free(&cfg);
	/* Without it the gate compiles from source: slower, the same gate. */
	if (r == 0 && job->python && !job->python->confined) {
		LB_AUTOFREE char *cache = lb_user_cache_dir();
		LB_AUTOFREE char *pyc = NULL;
		char tag[64], name[96];
		size_t len = 0;
		bool hit;
		if (lb_gate_pyc_get(job->python, cache, tag, &pyc, &len, &hit) == 0 &&
		    snprintf(name, sizeof name, "__pycache__/sitecustomize.%s.pyc", tag) <
			    (int)sizeof name)
			r = lb_sandbox_add_file(sb, LB_GATE_PY_DIR, name, pyc, len);
	}
	return r;
}

/* The runtime gate: its directory read-only and its events FIFO at fixed paths
 * under /run (hidden, so they exist inside only), its directory alone on PYTHONPATH (the
 * PYTHONPATH given with -e goes in LB_GATE_PYTHONPATH_VAR, put on sys.path by the gate), and
 * its config naming the places this sandbox can write. */
static int expose_gate(lb_sandbox *sb, const lb_backend_job *job)
{
	/* Read-only: a FIFO is written through it all the same, but not chmod'ed. */
	int r = lb_sandbox_add_bind(sb, job->gate_events, LB_GATE_EVENTS, false);
	if (r < 0)
		return r;
	const char *outs[64];
	size_t n = lb_sandbox_writable_paths(sb, outs, sizeof outs / sizeof *outs);
	lb_network net = lb_sandbox_network(sb);
	lb_gate_config gc = {.mode = (lb_gate_mode)job->gate_mode, .policy = job->gate_policy,
			     .network = net != LB_NET_NONE, .exp_dir = job->exp_dir,
			     .outputs = outs, .noutputs = n, .staged_ns = lb_fs_now_ns(job->exp_dir),
			     .unread_dirs = job->gate_unread_dirs};
	/* The probe's sysconfig answer, for an interpreter of the user's (one the experiment
	 * named says of itself what it likes: the gate asks it at run time, as before). */
	const char *std[2];
	if (job->python && !job->python->confined && job->python->stdlib_for[0]) {
		for (unsigned i = 0; i < job->python->n_stdlib && i < 2; i++)
			std[gc.nstdlib++] = job->python->stdlib[i];
		gc.stdlib = std;
		gc.stdlib_for = job->python->stdlib_for;
	}
	r = place_gate(sb, job, &gc);
	if (r < 0)
		return r;
	const char *user = lb_sandbox_env_value(sb, "PYTHONPATH");
	LB_AUTOFREE char *kv = NULL, *given = NULL;
	if (user && *user) {
		if (asprintf(&given, LB_GATE_PYTHONPATH_VAR "=%s", user) < 0)
			return -ENOMEM;
		r = lb_sandbox_add_env(sb, given);
		if (r < 0)
			return r;
	}
	if (asprintf(&kv, "PYTHONPATH=%s", LB_GATE_PY_DIR) < 0)
		return -ENOMEM;
	r = lb_sandbox_add_env(sb, kv);
	return r < 0 ? r : lb_sandbox_add_env(sb, LB_GATE_MAIN_VAR "=1");
}

static int local_prepare(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	lb_sandbox *sb = sandbox_of(b);
	int r = hide_records(sb, job);
	if (r < 0) {
		snprintf(err, errlen, "cannot hide the runs directory from the experiment: %s",
			 strerror(-r));
		return r;
	}
	const char *what = "the work directory";
	r = lb_sandbox_set_workdir(sb, job->exp_dir);
	if (r == 0 && job->python) {
		what = "the interpreter";
		r = lb_python_expose(sb, job->python, true);
	}
	for (size_t i = 0; r == 0 && i < job->nenv; i++) {
		what = "the environment";
		r = lb_sandbox_add_env(sb, job->env[i]);
	}
	if (r == 0 && job->gate_py_dir) {
		what = "the runtime gate";
		r = expose_gate(sb, job);
	}
	if (r == 0 && job->exec_guard) {
		what = "the exec guard";
		r = lb_sandbox_set_exec_guard(sb, job->exec_listed ? LB_EXEC_LISTED
								  : LB_EXEC_GATED_PYTHON,
					      job->exec_guard == 2);
	}
	for (size_t i = 0; r == 0 && job->exec_guard && job->exec_listed && job->exec_listed[i];
	     i++)
		r = lb_sandbox_allow_exec(sb, job->exec_listed[i], false);
	if (r == 0 && job->exec_guard && job->exec_listed && job->exec_shell)
		r = lb_sandbox_allow_exec(sb, job->exec_shell, true);
	if (r == 0 && job->noexec_writable)
		r = lb_sandbox_set_noexec(sb, true);
	/* The guard lets a process start the run's interpreter again by the same name; an
	 * environment staged with the experiment (a venv in it) would then be read as the
	 * experiment left it: pyvenv.cfg and .pth files run before the gate. So it stays as
	 * staged, where nothing can replace it. */
	if (r == 0 && job->exec_guard && job->python) {
		const char *pfx[] = {job->python->prefix, job->python->base_prefix};
		for (size_t i = 0; r == 0 && i < 2; i++) {
			if (!pfx[i][0] || !lb_path_under(pfx[i], job->exp_dir) ||
			    strcmp(pfx[i], job->exp_dir) == 0)
				continue;
			r = lb_sandbox_protect(sb, pfx[i]);
			if (r < 0) {
				snprintf(err, errlen, "the interpreter's environment %s, staged with the "
					 "experiment, cannot be kept as staged (%s): the processes the "
					 "run starts would read what the experiment wrote there before "
					 "their runtime gate; keep the environment out of the experiment "
					 "directory, or run with --runtime-gate record", pfx[i],
					 r == -ELOOP   ? "a symbolic link is on its way"
					 : r == -EXDEV ? "a symbolic link in it leads out of it, to where "
							 "the experiment can write"
					 : r == -E2BIG ? "more than 500,000 entries to look at"
						       : strerror(-r));
				return r;
			}
		}
	}
	if (r == 0)
		r = lb_sandbox_set_budget(sb, job->budget);
	if (r == 0)
		r = lb_sandbox_set_disk_limit(sb, job->exp_dir, job->disk_limit);
	if (r == 0) {
		what = "the command";
		r = lb_sandbox_set_argv(sb, job->argv);
	}
	if (r == 0)
		r = lb_sandbox_set_output(sb, false, job->output, job->output_ctx);
	if (r < 0)
		snprintf(err, errlen, "cannot set up %s in the sandbox: %s", what, strerror(-r));
	return r;
}

static int local_run(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res)
{
	(void)job;
	return lb_sandbox_run(sandbox_of(b), res);
}

static int local_fetch(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	/* The run wrote into the local run directory itself. */
	(void)b;
	(void)job;
	(void)err;
	(void)errlen;
	return 0;
}

static void local_cleanup(lb_backend *b)
{
	(void)b; /* the sandbox removes its cgroup and its processes die with it */
}

static struct json_object *local_describe(lb_backend *b)
{
	(void)b;
	json_object *o = json_object_new_object();
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	json_object_object_add(o, "name", json_object_new_string("local"));
	json_object_object_add(o, "engine", json_object_new_string("labbox sandbox"));
	json_object_object_add(o, "version", json_object_new_string(LABBOX_VERSION));
	json_object_object_add(o, "host", json_object_new_string(host));
	/* The isolation block beside it says what labbox's sandbox had in effect. */
	json_object_object_add(o, "isolated_by", json_object_new_string("labbox"));
	return o;
}

static const lb_backend_ops local_ops = {
	.name = "local",
	.owner = local_owner,
	.prepare = local_prepare,
	.run = local_run,
	.fetch = local_fetch,
	.cleanup = local_cleanup,
	.describe = local_describe,
	.free = NULL,
};

int lb_backend_local(lb_sandbox *sb, lb_backend **out)
{
	lb_backend *b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	b->ops = &local_ops;
	b->state = sb;
	*out = b;
	return 0;
}
