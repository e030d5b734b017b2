/* The `labbox run` pipeline. */
#include "labbox/run.h"
#include "labbox/check.h"
#include "labbox/collect.h"
#include "labbox/config.h"
#include "labbox/diagnose.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_LOG_LIMIT ((uint64_t)16 << 20)
#define TAIL_FOR_DIAGNOSIS 6144

typedef struct tee_ctx {
	lb_runlog *log;
	lb_metrics *metrics;
	lb_output_fn echo;
	void *echo_ctx;
	double t0; /* monotonic start: when each line arrived, for TIME_GUARD */
} tee_ctx;

static void tee_output(void *ctx, lb_stream stream, const char *data, size_t len)
{
	tee_ctx *t = ctx;
	lb_runlog_write(t->log, data, len);
	lb_metrics_feed_at(t->metrics, data, len, lb_time_monotonic() - t->t0);
	if (t->echo)
		t->echo(t->echo_ctx, stream, data, len);
}

/* Python's string hashing, fixed so that set and dict orders repeat from run to run. */
#define PYTHONHASHSEED "0"

typedef struct run_state {
	lb_exp_config cfg;
	lb_python_info py;
	char expdir[PATH_MAX];
	const char *entry;
	char *const *args;
	size_t nargs;
	double budget;
	const char **declared;
	size_t ndeclared;
	char *exp_dir; /* run_dir/exp */
	uint64_t disk_limit;
	lb_record_git_job git;
	char *cache; /* the user's cache directory, NULL when there is none */
	bool probe_cached;
} run_state;

static int usage_error(lb_run_result *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int usage_error(lb_run_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->error, sizeof out->error, fmt, ap);
	va_end(ap);
	out->exit_code = LB_EXIT_USAGE;
	return 0;
}

/* Everything that can be refused before a run directory exists. */
static int resolve(const lb_run_request *req, run_state *st, lb_run_result *out)
{
	struct stat sb;
	if (!req->expdir || !*req->expdir)
		return usage_error(out, "no experiment directory given");
	if (stat(req->expdir, &sb) < 0)
		return usage_error(out, "experiment directory '%s' does not exist", req->expdir);
	if (!S_ISDIR(sb.st_mode))
		return usage_error(out, "'%s' is not a directory", req->expdir);
	if (!realpath(req->expdir, st->expdir))
		return usage_error(out, "'%s': %s", req->expdir, strerror(errno));
	char err[512] = "";
	if (lb_config_load(st->expdir, &st->cfg, err, sizeof err) < 0)
		return usage_error(out, "%s", err);

	/* The command line wins over labbox.yaml, as for the other settings. */
	st->entry = req->entry ? req->entry : st->cfg.entry ? st->cfg.entry : "main.py";
	if (st->entry[0] == '/' || strstr(st->entry, ".."))
		return usage_error(out, "entry '%s' must be a path inside the experiment directory",
				   st->entry);
	LB_AUTOCLOSE int dfd = open(st->expdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat est;
	if (dfd < 0 || fstatat(dfd, st->entry, &est, 0) < 0)
		return usage_error(out, "entry point '%s' not found in '%s'%s", st->entry,
				   req->expdir,
				   req->entry || st->cfg.entry
					   ? ""
					   : " (name another with --entry FILE or entry: in labbox.yaml)");
	if (!S_ISREG(est.st_mode))
		return usage_error(out, "entry point '%s' in '%s' is not a regular file", st->entry,
				   req->expdir);

	st->args = req->nargs ? req->args : st->cfg.args;
	st->nargs = req->nargs ? req->nargs : st->cfg.nargs;
	st->budget = req->budget > 0 ? req->budget : st->cfg.budget;
	st->disk_limit = req->disk_limit;

	st->ndeclared = st->cfg.nmetrics + req->nmetrics;
	st->declared = calloc(st->ndeclared + 1, sizeof *st->declared);
	if (!st->declared)
		return -ENOMEM;
	for (size_t i = 0; i < st->cfg.nmetrics; i++)
		st->declared[i] = st->cfg.metrics[i];
	size_t nd = st->cfg.nmetrics;
	for (size_t i = 0; i < req->nmetrics; i++) {
		bool dup = false;
		for (size_t j = 0; j < nd; j++)
			if (strcmp(st->declared[j], req->metrics[i]) == 0)
				dup = true;
		if (!dup)
			st->declared[nd++] = req->metrics[i];
	}
	st->ndeclared = nd;

	const char *python = req->python ? req->python : st->cfg.python ? st->cfg.python : "python3";
	st->cache = lb_user_cache_dir();
	int pr;
	if (!req->python && st->cfg.python)
		/* The experiment directory chose it: it is the experiment's code. */
		pr = lb_python_probe_confined(python, st->expdir, &st->py, err, sizeof err);
	else if (st->cache)
		pr = lb_python_probe_cached(python, st->cache, &st->py, &st->probe_cached, err,
					    sizeof err);
	else
		pr = lb_python_probe(python, &st->py, err, sizeof err);
	if (pr < 0)
		return usage_error(out, "%s%s", err,
				   req->python ? "" : " (choose one with --python PATH)");
	return 0;
}

static json_object *strv_json(char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

static void add_time(json_object *o, const char *key, double t)
{
	char iso[40];
	lb_time_iso8601(t, iso);
	json_object_object_add(o, key, json_object_new_string(iso));
}

static const char *status_of(const lb_sandbox_result *res, size_t nissues, int *exit_code)
{
	bool exited_ok = res->outcome == LB_SB_EXITED && res->exit_code == 0;
	if (res->oom_killed && !exited_ok && res->outcome != LB_SB_TIMEOUT &&
	    res->outcome != LB_SB_SETUP_FAILED) {
		*exit_code = LB_EXIT_OOM;
		return "oom";
	}
	switch (res->outcome) {
	case LB_SB_SETUP_FAILED:
		*exit_code = LB_EXIT_INFRA;
		return "infra_error";
	case LB_SB_TIMEOUT:
		*exit_code = LB_EXIT_TIMEOUT;
		return "timeout";
	case LB_SB_INTERRUPTED:
		*exit_code = 128 + (res->interrupt_signal ? res->interrupt_signal : SIGINT);
		return "interrupted";
	case LB_SB_DISK_LIMIT:
		*exit_code = LB_EXIT_FAILED;
		return "disk_limit";
	case LB_SB_SIGNALED:
		*exit_code = LB_EXIT_FAILED;
		return "failed";
	case LB_SB_EXITED:
		if (res->exit_code != 0) {
			*exit_code = LB_EXIT_FAILED;
			return "failed";
		}
		break;
	}
	if (nissues) {
		*exit_code = LB_EXIT_INVALID_METRICS;
		return "invalid_metrics";
	}
	*exit_code = LB_EXIT_OK;
	return "completed";
}

static int write_environment(const char *run_dir, const lb_python_info *py, const char *cache,
			     json_object *manifest)
{
	lb_buf b = {0};
	LB_AUTOFREE char *freeze = NULL;
	bool hit = false;
	int fr = lb_python_freeze_of(py, cache, &freeze, &hit);
	int r = lb_buf_printf(&b, "Python %s\n", py->version);
	if (r == 0 && fr == 0)
		r = lb_buf_printf(&b, "# pip freeze (installed distributions of %s)\n%s", py->executable,
				  freeze);
	else if (r == 0)
		r = lb_buf_printf(&b, "# pip freeze: could not list the distributions of %s: %s\n",
				  py->executable, strerror(-fr));
	if (r == 0 && b.len && b.data[b.len - 1] != '\n')
		r = lb_buf_puts(&b, "\n");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/environment.txt", run_dir);
	if (r == 0)
		r = lb_write_file_atomic_mode(path, b.data, b.len, 0600);
	json_object_object_add(manifest, "packages_listed", json_object_new_boolean(fr == 0));
	json_object_object_add(manifest, "packages_from_cache", json_object_new_boolean(fr == 0 && hit));
	lb_buf_free(&b);
	return r;
}

/* Other runs are not the experiment's business, wherever the runs directory lives (under
 * /srv or /data it is not hidden like a home): the runs directory and the run index beside it
 * are hidden, and exp/ of this run alone is bound back. */
static int hide_records(lb_sandbox *sb, const lb_run_request *req, const char *run_dir)
{
	char runs[PATH_MAX];
	snprintf(runs, sizeof runs, "%s", run_dir);
	char *slash = strrchr(runs, '/');
	if (slash && slash != runs)
		*slash = '\0';
	int r = lb_sandbox_mask(sb, runs);
	LB_AUTOFREE char *index = NULL;
	if (r == 0)
		r = lb_index_path_for(req->runs_dir ? req->runs_dir : ".labbox/runs", &index);
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; r == 0 && i < sizeof sfx / sizeof *sfx; i++) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s%s", index, sfx[i]);
		r = lb_sandbox_mask(sb, p);
	}
	return r;
}

static void configure_sandbox(lb_sandbox *sb, const run_state *st, const char *id)
{
	char kv[PATH_MAX + 32];
	lb_sandbox_set_workdir(sb, st->exp_dir);
	lb_python_expose(sb, &st->py, true);
	/* Output unbuffered so nothing is lost when the budget kills the run; hashing fixed
	 * and bytecode off so reruns behave alike and the staged tree stays as staged. */
	lb_sandbox_add_env(sb, "PYTHONUNBUFFERED=1");
	lb_sandbox_add_env(sb, "PYTHONHASHSEED=" PYTHONHASHSEED);
	lb_sandbox_add_env(sb, "PYTHONDONTWRITEBYTECODE=1");
	lb_sandbox_add_env(sb, "MPLBACKEND=Agg");
	snprintf(kv, sizeof kv, "LABBOX_RUN_ID=%s", id);
	lb_sandbox_add_env(sb, kv);
	if (st->budget > 0) {
		snprintf(kv, sizeof kv, "LABBOX_BUDGET=%g", st->budget);
		lb_sandbox_add_env(sb, kv);
	}
	lb_sandbox_set_budget(sb, st->budget);
	lb_sandbox_set_disk_limit(sb, st->exp_dir, st->disk_limit);
}

static json_object *simple_failure(const char *cls, const char *summary, const char *suggestion)
{
	json_object *f = json_object_new_object();
	json_object_object_add(f, "class", json_object_new_string(cls));
	json_object_object_add(f, "summary", json_object_new_string(summary));
	json_object_object_add(f, "evidence", json_object_new_array());
	json_object_object_add(f, "suggestion", json_object_new_string(suggestion));
	return f;
}

/* A record that could not be written makes the run an infra_error, whatever the experiment
 * did: a clean exit over a missing manifest would be a verdict nobody can check. The first
 * such failure is the one named. */
static void record_failed(json_object *doc, int *exit_code, const char *path, int err)
{
	json_object *v;
	if (json_object_object_get_ex(doc, "infra_error", &v) && v &&
	    json_object_object_get_ex(v, "step", &v) && strcmp(json_object_get_string(v), "record") == 0)
		return;
	char msg[PATH_MAX + 96];
	snprintf(msg, sizeof msg, "cannot write %s: %s", path, strerror(-err));
	*exit_code = LB_EXIT_INFRA;
	json_object_object_add(doc, "status", json_object_new_string("infra_error"));
	json_object_object_add(doc, "labbox_exit_code", json_object_new_int(LB_EXIT_INFRA));
	json_object *e = json_object_new_object();
	json_object_object_add(e, "step", json_object_new_string("record"));
	json_object_object_add(e, "message", json_object_new_string(msg));
	json_object_object_add(doc, "infra_error", e);
	json_object_object_add(doc, "failure",
			       simple_failure("infra_error", msg,
					      "free space where the runs are kept (df -h on the run "
					      "directory's file system), or choose another --runs-dir"));
}

/* The run index is a record, not a protection: when it cannot be written the run goes on,
 * and result.json and a warning say so. */
static lb_index *open_index(const lb_run_request *req, lb_run_result *out, json_object *doc,
			    double started)
{
	LB_AUTOFREE char *path = NULL;
	char err[512] = "";
	lb_index *ix = NULL;
	json_object *info = json_object_new_object();
	int r = lb_index_path_for(req->runs_dir ? req->runs_dir : ".labbox/runs", &path);
	if (r == 0)
		r = lb_index_open(path, &ix, err, sizeof err);
	if (r == 0) {
		char iso[40];
		lb_time_iso8601(started, iso);
		char expdir[PATH_MAX] = "";
		if (!realpath(req->expdir, expdir))
			snprintf(expdir, sizeof expdir, "%s", req->expdir);
		if (lb_index_run_started(ix, out->id, out->run_dir, expdir, iso) < 0) {
			snprintf(err, sizeof err, "cannot write to the run index %s", path);
			lb_index_close(ix);
			ix = NULL;
			r = -EIO;
		}
	}
	char abs[PATH_MAX];
	json_object_object_add(info, "path",
			       json_object_new_string(path && realpath(path, abs) ? abs : path ? path : ""));
	json_object_object_add(info, "error", r < 0 ? json_object_new_string(err) : NULL);
	json_object_object_add(doc, "index", info);
	if (r < 0 && req->warn)
		req->warn(req->warn_ctx, err);
	return ix;
}

/* The static check runs on the staged copy, the code that would run, so nothing can change
 * between the check and the run. Returns true when the code may run. */
static bool check_staged(const lb_run_request *req, const run_state *st, json_object *doc,
			 json_object **findings, json_object **seeds)
{
	lb_check_config *cfg = NULL;
	lb_check_report rep;
	memset(&rep, 0, sizeof rep);
	char err[512] = "";
	json_object *info = json_object_new_object();
	json_object_object_add(doc, "check", info);
	int r = lb_check_config_new(&cfg);
	if (r == 0) {
		lb_check_config_set_policy(cfg, (lb_check_policy)req->policy);
		lb_check_config_set_trust_project(cfg, req->trust_project);
		lb_check_config_set_python_info(cfg, &st->py);
		lb_check_config_set_cache_dir(cfg, st->cache);
		lb_check_config_set_entry(cfg, st->entry);
		r = lb_check_dir(cfg, st->exp_dir, &rep, err, sizeof err);
	}
	json_object_object_add(info, "policy",
			       json_object_new_string(lb_check_policy_name((lb_check_policy)req->policy)));
	if (r < 0) {
		/* A check that could not run is a refusal, never a pass. */
		json_object_object_add(info, "rejected", json_object_new_boolean(true));
		json_object_object_add(info, "error",
				       json_object_new_string(err[0] ? err : strerror(-r)));
		*findings = json_object_new_array();
		lb_check_config_free(cfg);
		lb_check_report_free(&rep);
		return false;
	}
	lb_check_finish(&rep);
	*findings = lb_check_findings_json(&rep);
	*seeds = rep.seeds ? json_object_get(rep.seeds) : NULL;
	json_object_object_add(info, "rejected", json_object_new_boolean(rep.rejected));
	json_object_object_add(info, "files", json_object_new_int64((int64_t)rep.files));
	json_object_object_add(info, "syntax_by", json_object_new_string(rep.syntax_by));
	json_object_object_add(info, "syntax_cached_files",
			       json_object_new_int64((int64_t)rep.syntax_cached));
	LB_AUTOFREE char *llm = rep.rejected ? lb_check_llm_text(&rep) : NULL;
	json_object_object_add(info, "llm_text", llm ? json_object_new_string(llm) : NULL);
	bool ok = !rep.rejected;
	lb_check_config_free(cfg);
	lb_check_report_free(&rep);
	return ok;
}

static int run_pipeline(lb_sandbox *sb, const lb_run_request *req, run_state *st,
			lb_run_result *out)
{
	int r = lb_record_create_run_dir(req->runs_dir ? req->runs_dir : ".labbox/runs", out->id,
					 &out->run_dir);
	if (r == -ENAMETOOLONG)
		return usage_error(out, "the runs directory's path is too long: a run's records "
				   "would pass PATH_MAX (%d bytes); choose a shorter --runs-dir",
				   PATH_MAX);
	if (r < 0)
		return usage_error(out, "cannot create a run directory under '%s': %s",
				   req->runs_dir ? req->runs_dir : ".labbox/runs", strerror(-r));
	char path[PATH_MAX];
	json_object *doc = json_object_new_object();
	out->doc = doc;
	json_object_object_add(doc, "schema", json_object_new_string("labbox.run/1"));
	json_object_object_add(doc, "id", json_object_new_string(out->id));
	json_object_object_add(doc, "status", json_object_new_string("running"));
	json_object_object_add(doc, "run_dir", json_object_new_string(out->run_dir));
	double started = lb_time_now();
	add_time(doc, "started_at", started);
	snprintf(path, sizeof path, "%s/result.json", out->run_dir);
	/* A run whose labbox dies from here on still says what it was; a run that cannot say it
	 * is not started (a full disk would lose its results too). */
	char record_err[PATH_MAX + 160] = "";
	r = lb_record_write_json(path, doc);
	if (r < 0)
		snprintf(record_err, sizeof record_err, "cannot write %s: %s", path, strerror(-r));
	r = 0;
	lb_index *index = open_index(req, out, doc, started);

	json_object *manifest = json_object_new_object();
	json_object *files = json_object_new_object();
	json_object *skipped = json_object_new_array();
	if (asprintf(&st->exp_dir, "%s/exp", out->run_dir) < 0)
		st->exp_dir = NULL;
	uid_t uid;
	gid_t gid;
	lb_sandbox_payload_ids(sb, &uid, &gid);
	char err[512] = "";
	int stage_r = st->exp_dir ? lb_record_stage(st->expdir, st->exp_dir,
						    uid == getuid() ? (uid_t)-1 : uid, gid, files,
						    skipped, err, sizeof err)
				  : -ENOMEM;
	if (stage_r == 0)
		lb_python_restage(&st->py, st->exp_dir);
	int env_r = write_environment(out->run_dir, &st->py, st->cache, manifest);
	if (env_r < 0 && !record_err[0])
		snprintf(record_err, sizeof record_err, "cannot write %s/environment.txt: %s",
			 out->run_dir, strerror(-env_r));

	lb_sandbox_result res;
	memset(&res, 0, sizeof res);
	lb_metrics *metrics = NULL;
	if (lb_metrics_new(&metrics) < 0) {
		json_object_put(manifest);
		json_object_put(files);
		json_object_put(skipped);
		return -ENOMEM;
	}
	lb_runlog *log = NULL;
	snprintf(path, sizeof path, "%s/run.log", out->run_dir);
	int log_r = lb_runlog_open(path, req->log_limit ? req->log_limit : DEFAULT_LOG_LIMIT, &log);

	char **argv = calloc(st->nargs + 3, sizeof *argv);
	if (!argv) {
		r = -ENOMEM;
	} else {
		argv[0] = st->py.executable;
		argv[1] = (char *)st->entry;
		for (size_t i = 0; i < st->nargs; i++)
			argv[2 + i] = st->args[i];
	}
	json_object *findings = NULL, *code_seeds = NULL;
	bool rejected = stage_r == 0 && !check_staged(req, st, doc, &findings, &code_seeds);
	/* What the run is seeded with: the code's own seed calls, and the hash seed labbox sets. */
	json_object *seeds = json_object_new_object();
	json_object_object_add(seeds, "found_in_code",
			       code_seeds ? code_seeds : json_object_new_array());
	json_object_object_add(seeds, "PYTHONHASHSEED", json_object_new_string(PYTHONHASHSEED));
	json_object_object_add(manifest, "seeds", seeds);
	if (!findings)
		findings = json_object_new_array();
	if (record_err[0]) {
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "record");
		snprintf(res.setup_error, sizeof res.setup_error, "%s; nothing was executed",
			 record_err);
	} else if (rejected) {
		/* Rejected code is never executed. */
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "check");
		snprintf(res.setup_error, sizeof res.setup_error,
			 "rejected by the static check (policy %s); nothing was executed",
			 lb_check_policy_name((lb_check_policy)req->policy));
	} else if (stage_r < 0 || log_r < 0 || !argv) {
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "stage");
		snprintf(res.setup_error, sizeof res.setup_error, "%s",
			 stage_r < 0 ? err : "cannot create run.log");
	} else if ((r = hide_records(sb, req, out->run_dir)) < 0) {
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "stage");
		snprintf(res.setup_error, sizeof res.setup_error,
			 "cannot hide the runs directory from the experiment: %s", strerror(-r));
		r = 0;
	} else {
		configure_sandbox(sb, st, out->id);
		lb_sandbox_set_argv(sb, argv);
		tee_ctx tee = {.log = log, .metrics = metrics, .echo = req->echo,
			       .echo_ctx = req->echo_ctx, .t0 = lb_time_monotonic()};
		lb_sandbox_set_output(sb, true, tee_output, &tee);
		r = lb_sandbox_run(sb, &res);
		if (r < 0) {
			res.outcome = LB_SB_SETUP_FAILED;
			snprintf(res.setup_step, sizeof res.setup_step, "supervise");
			snprintf(res.setup_error, sizeof res.setup_error, "%s", strerror(-r));
			r = 0;
		}
	}
	double ended = lb_time_now();
	lb_metrics_finish(metrics);

	/* Collect: stdout metrics and every results file, whatever state the run ended in. */
	json_object *mjson = lb_metrics_to_json(metrics);
	json_object *issues = json_object_new_array();
	json_object *warnings = json_object_new_array();
	json_object *files_read = json_object_new_object(); /* as parsed: never serialised */
	if (st->exp_dir && !rejected) {
		LB_AUTOCLOSE int efd = open(st->exp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (efd >= 0)
			lb_results_collect(efd, (const char *const *)st->cfg.results, st->cfg.nresults,
					   lb_results_out_dir_hint(st->args, st->nargs), files_read,
					   issues);
	}
	json_object_object_add(mjson, "files", lb_json_sanitize(files_read));
	if (!rejected) {
		lb_metrics_run_info vi = {
			.files = files_read,
			.declared = st->declared,
			.n_declared = st->ndeclared,
			.wall_s = res.wall_s,
			.budget_s = st->budget,
			.completed = res.outcome == LB_SB_EXITED && res.exit_code == 0,
			.none_expected = st->cfg.metrics_none,
		};
		lb_metrics_validate_run(metrics, &vi, issues, warnings);
	}

	int exit_code = LB_EXIT_OK;
	const char *status = status_of(&res, json_object_array_length(issues), &exit_code);
	if (rejected) {
		status = "rejected";
		exit_code = LB_EXIT_REJECTED;
	}
	bool partial = res.outcome == LB_SB_TIMEOUT || res.outcome == LB_SB_INTERRUPTED ||
		       res.outcome == LB_SB_DISK_LIMIT ||
		       res.outcome == LB_SB_SIGNALED ||
		       (res.outcome == LB_SB_EXITED && res.exit_code != 0);
	partial = partial && (lb_metrics_count(metrics) > 0 || json_object_object_length(files_read) > 0);
	/* The experiment itself says it stopped early and saved what it had. */
	if (lb_metrics_time_guard_fired(metrics) && res.outcome != LB_SB_SETUP_FAILED)
		partial = true;

	uint64_t seen = 0, written = 0;
	bool truncated = false;
	size_t tail_len = 0;
	LB_AUTOFREE char *tail = log ? lb_runlog_tail_n(log, TAIL_FOR_DIAGNOSIS, &tail_len) : NULL;
	int log_err = log ? lb_runlog_close(log, &seen, &written, &truncated) : 0;

	lb_failure_input fin = {
		.log_tail = tail,
		.log_tail_len = tail_len,
		.exit_code = res.outcome == LB_SB_EXITED ? res.exit_code : -1,
		.signal = res.term_signal,
		.timed_out = res.outcome == LB_SB_TIMEOUT,
		.oom_killed = res.oom_killed,
		.infra_error = res.outcome == LB_SB_SETUP_FAILED,
		.infra_message = res.setup_error,
	};
	json_object *failure = NULL;
	if (res.outcome == LB_SB_INTERRUPTED) {
		char sum[96];
		snprintf(sum, sizeof sum, "labbox received %s and ended the run",
			 strsignal(res.interrupt_signal));
		failure = simple_failure("interrupted", sum, "run it again when it can finish");
	} else if (res.outcome == LB_SB_DISK_LIMIT) {
		char sum[160];
		snprintf(sum, sizeof sum,
			 "the experiment wrote more than the disk limit of %llu bytes into exp/",
			 (unsigned long long)st->disk_limit);
		failure = simple_failure("sandbox_restriction", sum,
					 "write less (checkpoints, logs), or raise --disk-limit");
	} else if (!rejected) {
		failure = lb_diagnose_failure(&fin);
	}

	json_object_object_add(doc, "status", json_object_new_string(status));
	json_object_object_add(doc, "exit_code",
			       res.outcome == LB_SB_EXITED ? json_object_new_int(res.exit_code) : NULL);
	json_object_object_add(doc, "signal",
			       res.term_signal ? json_object_new_int(res.term_signal) : NULL);
	json_object_object_add(doc, "timed_out", json_object_new_boolean(res.outcome == LB_SB_TIMEOUT));
	json_object_object_add(doc, "oom_killed", json_object_new_boolean(res.oom_killed));
	json_object_object_add(doc, "partial", json_object_new_boolean(partial));
	json_object_object_add(doc, "labbox_exit_code", json_object_new_int(exit_code));
	add_time(doc, "ended_at", ended);
	json_object_object_add(doc, "budget_s", st->budget > 0 ? lb_record_fixed(st->budget, 3) : NULL);
	json_object_object_add(doc, "resources", lb_record_resources_json(&res));
	json_object_object_add(doc, "metrics", mjson);
	json_object_object_add(doc, "metric_issues", issues);
	json_object_object_add(doc, "metric_warnings", warnings);
	json_object_object_add(doc, "findings", findings);
	json_object_object_add(doc, "failure", failure);
	json_object *dwarn = json_object_new_array();
	char log_path[PATH_MAX + 16];
	snprintf(log_path, sizeof log_path, "%s/run.log", out->run_dir);
	lb_diagnosis_input din = {.log_path = log_path, .metrics = mjson, .exp_dir = st->exp_dir,
				  .entry = st->entry, .args = st->args, .nargs = st->nargs};
	if (!rejected && res.outcome != LB_SB_SETUP_FAILED)
		lb_diagnose_warnings(&din, dwarn);
	json_object_object_add(doc, "diagnosis_warnings", dwarn);
	json_object_object_add(doc, "isolation", lb_record_isolation_json(&res.isolation));
	if (res.outcome == LB_SB_SETUP_FAILED && !rejected) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "step", json_object_new_string(res.setup_step));
		json_object_object_add(e, "message", json_object_new_string(res.setup_error));
		json_object_object_add(doc, "infra_error", e);
		/* The --json contract's error field, as labbox.error/1 carries it. */
		json_object_object_add(doc, "error", json_object_get(e));
	}
	json_object *logj = json_object_new_object();
	snprintf(path, sizeof path, "%s/run.log", out->run_dir);
	json_object_object_add(logj, "path", json_object_new_string(path));
	json_object_object_add(logj, "bytes", json_object_new_int64((int64_t)seen));
	json_object_object_add(logj, "bytes_kept", json_object_new_int64((int64_t)written));
	json_object_object_add(logj, "truncated", json_object_new_boolean(truncated));
	json_object_object_add(doc, "log", logj);

	/* manifest.json: what it takes to run this again. */
	json_object_object_add(manifest, "schema", json_object_new_string("labbox.manifest/1"));
	json_object_object_add(manifest, "id", json_object_new_string(out->id));
	json_object_object_add(manifest, "labbox_version", json_object_new_string(LABBOX_VERSION));
	add_time(manifest, "started_at", started);
	add_time(manifest, "ended_at", ended);
	json_object_object_add(manifest, "duration_s", lb_record_fixed(ended - started, 3));
	json_object_object_add(manifest, "command",
			       strv_json(req->command_line, req->command_argc > 0 ? (size_t)req->command_argc : 0));
	json_object_object_add(manifest, "experiment_command", strv_json(argv, argv ? st->nargs + 2 : 0));
	json_object *cfg = json_object_new_object();
	json_object_object_add(cfg, "expdir", json_object_new_string(req->origin_expdir ? req->origin_expdir
										  : st->expdir));
	json_object_object_add(cfg, "python_requested",
			       json_object_new_string(req->python ? req->python
						      : st->cfg.python ? st->cfg.python : "python3"));
	json_object_object_add(cfg, "entry", json_object_new_string(st->entry));
	json_object_object_add(cfg, "entry_named_by",
			       json_object_new_string(req->entry     ? "command line"
						      : st->cfg.entry ? "labbox.yaml"
								      : "default"));
	json_object_object_add(cfg, "args", strv_json(st->args, st->nargs));
	json_object_object_add(cfg, "budget_s", st->budget > 0 ? lb_record_fixed(st->budget, 3) : NULL);
	json_object_object_add(cfg, "grace_s", lb_record_fixed(req->grace, 3));
	json_object_object_add(cfg, "metrics", strv_json((char *const *)st->declared, st->ndeclared));
	json_object_object_add(cfg, "policy",
			       json_object_new_string(lb_check_policy_name((lb_check_policy)req->policy)));
	json_object_object_add(cfg, "trust_project", json_object_new_boolean(req->trust_project));
	json_object_object_add(cfg, "disk_limit_bytes", json_object_new_int64((int64_t)st->disk_limit));
	json_object_object_add(cfg, "log_limit_bytes",
			       json_object_new_int64((int64_t)(req->log_limit ? req->log_limit : DEFAULT_LOG_LIMIT)));
	json_object *envj = json_object_new_object();
	json_object_object_add(envj, "PYTHONHASHSEED", json_object_new_string(PYTHONHASHSEED));
	json_object_object_add(envj, "PYTHONUNBUFFERED", json_object_new_string("1"));
	json_object_object_add(envj, "PYTHONDONTWRITEBYTECODE", json_object_new_string("1"));
	json_object_object_add(cfg, "environment", envj);
	if (req->sandbox_config)
		json_object_object_add(cfg, "sandbox", json_object_get(req->sandbox_config));
	json_object_object_add(manifest, "config", cfg);
	if (req->rerun_of)
		json_object_object_add(manifest, "rerun_of", json_object_new_string(req->rerun_of));
	json_object *interp = json_object_new_object();
	json_object_object_add(interp, "path", json_object_new_string(st->py.executable));
	json_object_object_add(interp, "version", json_object_new_string(st->py.version));
	json_object_object_add(interp, "from_cache", json_object_new_boolean(st->probe_cached));
	json_object_object_add(interp, "named_by",
			       json_object_new_string(req->python ? "command line"
						      : st->cfg.python ? "labbox.yaml" : "default"));
	json_object_object_add(interp, "probed_in_sandbox", json_object_new_boolean(st->py.confined));
	json_object_object_add(interp, "implementation", json_object_new_string(st->py.implementation));
	json_object_object_add(interp, "prefix", json_object_new_string(st->py.prefix));
	json_object_object_add(interp, "base_prefix", json_object_new_string(st->py.base_prefix));
	json_object_object_add(manifest, "interpreter", interp);
	json_object_object_add(manifest, "machine", lb_record_machine_json());
	json_object *git = NULL, *git_diff = NULL;
	lb_record_git_collect(&st->git, &git, &git_diff);
	json_object_object_add(manifest, "git_diff", git_diff);
	json_object_object_add(manifest, "git", git);
	json_object_object_add(manifest, "files", files);
	json_object_object_add(manifest, "skipped_files", skipped);
	json_object_object_add(manifest, "isolation", lb_record_isolation_json(&res.isolation));
	snprintf(path, sizeof path, "%s/manifest.json", out->run_dir);
	int wr = lb_record_write_json(path, manifest);
	json_object_put(manifest);
	if (wr < 0)
		record_failed(doc, &exit_code, path, wr);
	snprintf(path, sizeof path, "%s/run.log", out->run_dir);
	if (log_err < 0)
		record_failed(doc, &exit_code, path, log_err);

	snprintf(path, sizeof path, "%s/result.json", out->run_dir);
	wr = lb_record_write_json(path, doc);
	if (wr < 0) {
		/* The "running" record must not outlive the run: without a verdict on disk the
		 * directory has no result.json at all, and the caller gets the document. */
		unlink(path);
		record_failed(doc, &exit_code, path, wr);
		if (lb_record_write_json(path, doc) < 0)
			unlink(path);
	}
	if (index) {
		if (lb_index_run_finished(index, doc) < 0 && req->warn)
			req->warn(req->warn_ctx, "could not record the end of the run in the run index");
		lb_index_close(index);
	}
	json_object_put(files_read);
	lb_metrics_free(metrics);
	free(argv);
	out->exit_code = exit_code;
	return r;
}

int lb_run(lb_sandbox *sb, const lb_run_request *req, lb_run_result *out)
{
	memset(out, 0, sizeof *out);
	run_state st;
	memset(&st, 0, sizeof st);
	int r = resolve(req, &st, out);
	if (r == 0 && out->exit_code == 0 &&
	    lb_record_git_start(req->origin_expdir ? req->origin_expdir : st.expdir, (size_t)1 << 20,
				&st.git) < 0)
		st.git.pid = 0; /* the manifest then says no repository was seen */
	if (r == 0 && out->exit_code == 0)
		r = run_pipeline(sb, req, &st, out);
	json_object *gi = NULL, *gd = NULL;
	lb_record_git_collect(&st.git, &gi, &gd);
	json_object_put(gi);
	json_object_put(gd);
	lb_config_free(&st.cfg);
	free(st.declared);
	free(st.exp_dir);
	free(st.cache);
	return r;
}

void lb_run_result_free(lb_run_result *out)
{
	free(out->run_dir);
	if (out->doc)
		json_object_put(out->doc);
	memset(out, 0, sizeof *out);
}
