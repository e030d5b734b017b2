/* The `labbox run` pipeline. */
#include "labbox/run.h"
#include "labbox/lang.h"
#include "labbox/backend.h"
#include "labbox/check.h"
#include "labbox/collect.h"
#include "labbox/config.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/gate.h"
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
/* A timeout's: the stacks the main program printed as it ended come last, and what it said
 * before them is its last output (src/diagnose/timeout.c dg_read_dump). */
#define TAIL_FOR_TIMEOUT LB_RUNLOG_RECENT
/* How long the end of a run waits for the fingerprint of its mounted data. */
#define DATA_FINGERPRINT_WAIT_S 30.0

/* The last line a stream wrote that is not blank (its first LB_LAST_LINE_MAX bytes), and the
 * line it is writing now. stdout and stderr are two pipes read in turn, so their lines
 * interleave in run.log as labbox read them, not as they were written: each stream's own last
 * words are kept apart for the diagnosis (and result.json's last_lines). */
#define LB_LAST_LINE_MAX 400
typedef struct last_line {
	char cur[LB_LAST_LINE_MAX], last[LB_LAST_LINE_MAX];
	size_t cur_len, last_len;
	bool have;
} last_line;

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\f' && s[i] != '\v')
			return false;
	return true;
}

static void cur_append(last_line *l, const char *s, size_t n)
{
	size_t room = sizeof l->cur - l->cur_len;
	memcpy(l->cur + l->cur_len, s, n < room ? n : room);
	l->cur_len += n < room ? n : room;
}

static void set_last(last_line *l, const char *s, size_t n)
{
	if (n > sizeof l->last)
		n = sizeof l->last;
	memmove(l->last, s, n);
	l->last_len = n;
	l->have = true;
}

/* Only the end of each chunk is looked at (memrchr): a flood costs no pass over its bytes. */
static void last_line_feed(last_line *l, const char *d, size_t n)
{
	const char *nl = n ? memrchr(d, '\n', n) : NULL;
	if (!nl) {
		cur_append(l, d, n);
		return;
	}
	for (const char *end = nl;;) {
		const char *prev = end > d ? memrchr(d, '\n', (size_t)(end - d)) : NULL;
		if (!prev) { /* the chunk's first line ends the one being written */
			cur_append(l, d, (size_t)(end - d));
			if (!blank(l->cur, l->cur_len))
				set_last(l, l->cur, l->cur_len);
			break;
		}
		if (!blank(prev + 1, (size_t)(end - prev - 1))) {
			set_last(l, prev + 1, (size_t)(end - prev - 1));
			break;
		}
		end = prev;
	}
	l->cur_len = 0;
	cur_append(l, nl + 1, (size_t)(d + n - nl - 1));
}

/* At the end: a last line written without its newline counts. A line cut at
 * LB_LAST_LINE_MAX bytes loses the UTF-8 character the cut went through, not half of it. */
static json_object *last_line_json(last_line *l)
{
	if (l->cur_len && !blank(l->cur, l->cur_len))
		set_last(l, l->cur, l->cur_len);
	if (!l->have)
		return NULL;
	size_t n = l->last_len == sizeof l->last ? lb_utf8_whole_len(l->last, l->last_len)
						   : l->last_len;
	return json_object_new_string_len(l->last, (int)n);
}

typedef struct tee_ctx {
	lb_runlog *log;
	last_line *out_last, *err_last;
	lb_metrics **metrics; /* the pipeline's: a restart replaces it */
	lb_output_fn echo;
	void *echo_ctx;
	double t0; /* monotonic start: when each line arrived, for TIME_GUARD */
	const char *language; /* lb_metrics_set_language's: a restart's fresh collector too */
} tee_ctx;

static void tee_output(void *ctx, lb_stream stream, const char *data, size_t len)
{
	tee_ctx *t = ctx;
	lb_runlog_write_stream(t->log, stream == LB_STREAM_STDERR, data, len);
	last_line_feed(stream == LB_STREAM_STDERR ? t->err_last : t->out_last, data, len);
	if (stream == LB_STREAM_STDERR)
		lb_metrics_feed_stderr_at(*t->metrics, data, len, lb_time_monotonic() - t->t0);
	else
		lb_metrics_feed_at(*t->metrics, data, len, lb_time_monotonic() - t->t0);
	if (t->echo)
		t->echo(t->echo_ctx, stream, data, len);
}

/* A new attempt of the same run (Slurm requeued the job): the metrics are the last attempt's
 * alone, so a requeued run is counted once; run.log keeps every attempt's output. */
static void tee_restart(void *ctx)
{
	tee_ctx *t = ctx;
	lb_metrics *fresh = NULL;
	if (lb_metrics_new(&fresh) < 0)
		return;
	lb_metrics_set_language(fresh, t->language);
	lb_metrics_free(*t->metrics);
	*t->metrics = fresh;
	memset(t->out_last, 0, sizeof *t->out_last);
	memset(t->err_last, 0, sizeof *t->err_last);
	t->t0 = lb_time_monotonic();
}

/* Python's string hashing, fixed so that set and dict orders repeat from run to run. */
#define PYTHONHASHSEED "0"

typedef struct run_state {
	lb_exp_config cfg;
	/* The run's limits, for every sandbox around code the experiment chose before and beside
	 * the run (its own interpreter's probe and listing, the check's compile and parse with
	 * it, git's filters): run_limits. */
	lb_sandbox_limits limits;
	const char *degraded[16];
	bool own_interp; /* the R/Octave/Julia interpreter is the experiment's (probe_interpreter) */
	const char *hashseed; /* PYTHONHASHSEED the user asked for; NULL: labbox's */
	lb_lang lang;      /* the experiment's language: its interpreter, check and freeze */
	lb_python_info py; /* the interpreter, whatever the language */
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
	lb_record_data_job data; /* fingerprints of the -v volumes */
	char *cache; /* the user's cache directory, NULL when there is none */
	char *state; /* labbox's state directory (lb_record_state_dir), NULL when none */
	bool probe_cached;
	/* The code runs elsewhere (docker): --python names the interpreter there, and the local
	 * python3 serves the static check's compile() only. */
	bool remote;
	const char *backend_name; /* the backend lb_run_on was given */
	json_object *env_doc; /* result.json's environment block (--env), NULL without one */
} run_state;

static int usage_error(lb_run_result *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int probe_interpreter(const lb_run_request *req, run_state *st, lb_run_result *out,
			     const char *mode);
static int choose_env(const lb_run_request *req, run_state *st, lb_run_result *out,
		      const char *mode);
static int usage_error(lb_run_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->error, sizeof out->error, fmt, ap);
	va_end(ap);
	out->exit_code = LB_EXIT_USAGE;
	return 0;
}

/* Whether the entry point leads out of the experiment directory through a symbolic link
 * (itself or a directory on its path): staging copies links as links, so such an entry would
 * run a host file the manifest records only as "symlink". Refused when the path resolves
 * outside expdir (realpath'd), and for an absolute link anywhere on the path too, since in the
 * staged copy it leads back to the original directory rather than to the staged file. Returns
 * -ELOOP with target set to the offending link's target (or the resolved path), else 0. */
static int entry_leaves(int dfd, const char *expdir, const char *entry, char target[PATH_MAX])
{
	char prefix[PATH_MAX];
	size_t n = strlen(entry);
	if (n >= sizeof prefix)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		if (entry[i] != '/' && entry[i] != '\0')
			continue;
		memcpy(prefix, entry, i);
		prefix[i] = '\0';
		struct stat lst;
		if (i == 0 || fstatat(dfd, prefix, &lst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(lst.st_mode))
			continue;
		ssize_t len = readlinkat(dfd, prefix, target, PATH_MAX - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		if (target[0] == '/')
			return -ELOOP;
	}
	char full[PATH_MAX * 2], real[PATH_MAX];
	snprintf(full, sizeof full, "%s/%s", expdir, entry);
	if (!realpath(full, real))
		return 0; /* not there: the caller's stat already said so */
	size_t e = strlen(expdir);
	if (strncmp(real, expdir, e) == 0 && (real[e] == '/' || (e == 1 && expdir[0] == '/')))
		return 0;
	snprintf(target, PATH_MAX, "%s", real);
	return -ELOOP;
}

static int dir_refused(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The checks after labbox.yaml is read, shared with `labbox check` so that a directory one
 * refuses the other does not accept. */
int lb_run_dir_runnable(const char *expdir, const char *shown, const lb_exp_config *cfg,
			const char *mode_arg, const char *entry_arg, const char **entry_out,
			lb_lang *lang_out, char *err, size_t errlen)
{
	/* A mode this build has no backend for is refused, never run somewhere else. */
	const char *mode = mode_arg ? mode_arg : cfg->mode ? cfg->mode : "local";
	if (!lb_backend_known(mode))
		return dir_refused(err, errlen, "%s '%s' is not a backend of this labbox (it has: "
				   "local, docker, ssh, slurm, colab)",
				   mode_arg ? "--mode" : "labbox.yaml's mode:", mode);
	const char *entry = entry_arg ? entry_arg
			    : cfg->entry ? cfg->entry
					 : lb_lang_default_entry(expdir);
	if (entry[0] == '/' || strstr(entry, ".."))
		return dir_refused(err, errlen, "entry '%s' must be a path inside the experiment "
				   "directory", entry);
	/* The entry is the interpreter's first argument after its own options: a name that
	 * starts with '-' is read as options (python -S -c CODE, octave --eval=CODE), which
	 * would run code the check never read, without the gate. */
	if (entry[0] == '-')
		return dir_refused(err, errlen, "entry '%s' starts with '-', which the interpreter "
				   "would read as its own options: rename the file", entry);
	LB_AUTOCLOSE int dfd = open(expdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat est;
	if (dfd < 0 || fstatat(dfd, entry, &est, 0) < 0)
		return dir_refused(err, errlen, "entry point '%s' not found in '%s'%s", entry, shown,
				   entry_arg || cfg->entry
					   ? ""
					   : " (name another with --entry FILE or entry: in labbox.yaml)");
	if (!S_ISREG(est.st_mode))
		return dir_refused(err, errlen, "entry point '%s' in '%s' is not a regular file",
				   entry, shown);
	char link_target[PATH_MAX];
	if (entry_leaves(dfd, expdir, entry, link_target) < 0)
		return dir_refused(err, errlen,
				   "entry point '%s' is a symbolic link to '%s', which leads out of "
				   "the experiment directory '%s' (an absolute link leads out of its "
				   "staged copy): labbox runs and records the experiment's own files "
				   "only; copy the file into the experiment",
				   entry, link_target, shown);
	lb_lang lang;
	if (cfg->language && lb_lang_parse(cfg->language, &lang) < 0)
		return dir_refused(err, errlen, "labbox.yaml's language: '%s' is not one of python, r, "
				   "octave, julia", cfg->language);
	if (!cfg->language)
		lang = lb_lang_of_entry(entry);
	else if (lb_lang_of_entry(entry) != lang)
		return dir_refused(err, errlen, "entry point '%s' is not a %s file (labbox.yaml's "
				   "language: %s): name it .py, .R, .m or .jl as its language is",
				   entry, lb_lang_name(lang), cfg->language);
	if (entry_out)
		*entry_out = entry;
	if (lang_out)
		*lang_out = lang;
	return 0;
}

static int dir_refused(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Whether the interpreter name resolves (PATH lookup, symlinks followed) into expdir. */
static bool inside_experiment(const char *python, const char *expdir)
{
	return lb_program_inside(python, expdir);
}

/* The experiment directory may be a run's staged copy (rerun's source, RUNS/ID/exp), never
 * labbox's records themselves: a runs directory, a run's own directory, the index or the
 * sweeps, the user's cache or labbox's state. Staged, they would show every run's manifest (its -e
 * values), results and log to the experiment, which every run is kept from. */
static bool not_records(const lb_run_request *req, run_state *st, lb_run_result *out)
{
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	LB_AUTOFREE char *state = lb_record_state_dir();
	char area[PATH_MAX], rc[PATH_MAX];
	const char *rel = NULL;
	if (cache && realpath(cache, rc) && lb_path_under(st->expdir, rc)) {
		usage_error(out, "experiment directory '%s' is in labbox's cache (%s): name the "
			    "experiment's own directory", req->expdir, rc);
		return false;
	}
	if (state && realpath(state, rc) && lb_path_under(st->expdir, rc)) {
		usage_error(out, "experiment directory '%s' is in labbox's state directory (%s): "
			    "name the experiment's own directory", req->expdir, rc);
		return false;
	}
	if (!lb_record_records_area(state, req->runs_dir ? req->runs_dir : ".labbox/runs",
				    st->expdir, area, &rel))
		return true;
	const char *base = strrchr(area, '/');
	base = base ? base + 1 : area;
	/* A copy of an experiment: a run's staged copy (ID/exp) or a repair loop's working copy
	 * (.repair-ID/work/N, what its next attempt stages). */
	const char *id_end = strchr(rel, '/');
	const char *copy = !id_end || id_end == rel ? NULL
			   : strncmp(rel, ".repair-", 8) == 0 ? "work/" : "exp";
	const char *after = copy && strncmp(id_end + 1, copy, strlen(copy)) == 0
				    ? id_end + 1 + strlen(copy) : NULL;
	if (after && copy[0] == 'w') { /* the attempt's number */
		size_t digits = strspn(after, "0123456789");
		after = digits ? after + digits : NULL;
	}
	bool staged_copy = strcmp(base, "sweeps") != 0 && strncmp(base, "labbox.db", 9) != 0 &&
			   after && (*after == '\0' || *after == '/');
	if (staged_copy)
		return true;
	usage_error(out, "experiment directory '%s' is labbox's own records (%s): a run never "
		    "sees other runs' records; name the experiment's own directory, or a run's "
		    "staged copy (RUNS/ID/exp)", req->expdir, area);
	return false;
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
	if (!not_records(req, st, out))
		return 0;
	char err[512] = "";
	if (lb_config_load(st->expdir, &st->cfg, err, sizeof err) < 0)
		return usage_error(out, "%s", err);
	/* The static check's part of labbox.yaml (check:, plan:) is the check's to read; a
	 * mistake there is the configuration's, refused as `labbox check` refuses it, and never
	 * recorded as the check rejecting the code. */
	if (lb_check_dir_config_valid(st->expdir, err, sizeof err) < 0)
		return usage_error(out, "%s", err);

	/* The command line wins over labbox.yaml, as for the other settings. */
	const char *mode = req->mode ? req->mode : st->cfg.mode ? st->cfg.mode : "local";
	if (lb_run_dir_runnable(st->expdir, req->expdir, &st->cfg, req->mode, req->entry,
				&st->entry, &st->lang, err, sizeof err) < 0)
		return usage_error(out, "%s", err);
	st->remote = strcmp(mode, "local") != 0;
	if (strcmp(mode, st->backend_name) != 0)
		return usage_error(out, "mode '%s' was asked for, but this run was given the %s "
				   "backend: refused rather than run elsewhere", mode, st->backend_name);

	st->args = req->nargs ? req->args : st->cfg.args;
	st->nargs = req->nargs ? req->nargs : st->cfg.nargs;
	st->budget = req->budget > 0 ? req->budget : st->cfg.budget;
	st->limits.budget_s = st->budget;
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

	if (st->lang != LB_LANG_PYTHON)
		return probe_interpreter(req, st, out, mode);
	if (req->env || st->cfg.env)
		return choose_env(req, st, out, mode);
	const char *python = req->python ? req->python : st->cfg.python ? st->cfg.python : "python3";
	if (st->remote)
		python = "python3";
	st->cache = lb_user_cache_dir();
	int pr;
	if (st->remote)
		pr = st->cache ? lb_python_probe_cached(python, st->cache, &st->py, &st->probe_cached,
							err, sizeof err)
			       : lb_python_probe(python, &st->py, err, sizeof err);
	else if ((!req->python && st->cfg.python) || inside_experiment(python, st->expdir) ||
		 lb_record_holds_program(st->state, req->runs_dir ? req->runs_dir : ".labbox/runs",
					 python)) {
		/* The experiment directory chose it, or it lives there: it is the experiment's code.
		 * The confined probe reads a relative path from the experiment (labbox.yaml's);
		 * --python's was given relative to here. */
		char abs[PATH_MAX * 2], cwd[PATH_MAX];
		if (req->python && python[0] != '/' && strchr(python, '/') && getcwd(cwd, sizeof cwd) &&
		    snprintf(abs, sizeof abs, "%s/%s", cwd, python) < (int)PATH_MAX)
			python = abs;
		pr = lb_python_probe_confined(python, st->expdir, &st->limits, &st->py, err,
					      sizeof err);
	}
	else if (st->cache)
		pr = lb_python_probe_cached(python, st->cache, &st->py, &st->probe_cached, err,
					    sizeof err);
	else
		pr = lb_python_probe(python, &st->py, err, sizeof err);
	if (pr < 0 && st->remote)
		return usage_error(out, "%s (in mode %s the static check compiles the code with the "
				   "local python3, which is missing)", err, mode);
	if (pr < 0)
		return usage_error(out, "%s%s", err,
				   req->python ? "" : " (choose one with --python PATH)");
	return 0;
}

/* An R, Octave or Julia experiment's interpreter: asked what it is inside the sandbox. One
 * that labbox.yaml names is the experiment's choice: what it says of its own directories
 * exposes nothing, only the program itself is made visible. */
static int probe_interpreter(const lb_run_request *req, run_state *st, lb_run_result *out,
			     const char *mode)
{
	char err[512] = "";
	if (st->remote)
		return usage_error(out, "a %s experiment runs on the local backend in this build (mode "
				   "'%s' runs Python)", lb_lang_name(st->lang), mode);
	if (req->python)
		return usage_error(out, "--python names a Python interpreter; this is a %s experiment "
				   "(entry '%s'): name its interpreter with --interpreter PATH",
				   lb_lang_name(st->lang), st->entry);
	const char *interp = req->interpreter ? req->interpreter : st->cfg.interpreter;
	/* One labbox.yaml names, or one that is a program of the experiment's (exp/bin/R, a link
	 * into exp/), is the experiment's code: its probe and listing run under the run's limits,
	 * and what it says of itself (where its installation is, which could be any hidden
	 * directory) is not exposed to the run: it runs with what its path shows, as a Python of
	 * the experiment's does. */
	st->own_interp = (!req->interpreter && st->cfg.interpreter) ||
			 (interp && inside_experiment(interp, st->expdir));
	if (lb_lang_probe(st->lang, interp, st->own_interp ? &st->limits : NULL, &st->py, err,
			  sizeof err) < 0)
		return usage_error(out, "%s", err);
	if (st->own_interp) {
		st->py.prefix[0] = '\0';
		st->py.base_prefix[0] = '\0';
	}
	st->cache = lb_user_cache_dir();
	return 0;
}

/* --env (or labbox.yaml's env:): the environment lb_env_select picks, among those found here,
 * for what the code imports. Refused, naming what is missing, when none fits. */
static int choose_env(const lb_run_request *req, run_state *st, lb_run_result *out,
		      const char *mode)
{
	char err[512] = "";
	if (req->python || st->cfg.python)
		return usage_error(out, "%s and %s both name the interpreter: give one",
				   req->env ? "--env" : "labbox.yaml's env:",
				   req->python ? "--python" : "labbox.yaml's python:");
	if (st->remote)
		return usage_error(out, "--env chooses among this host's environments; mode '%s' "
				   "runs elsewhere (name its interpreter with --python)", mode);
	const char *how = req->env ? req->env : "auto";
	st->cache = lb_user_cache_dir();
	char **mods = NULL;
	size_t nm = 0;
	int r = lb_check_dir_imports(st->expdir, st->entry, &mods, &nm, err, sizeof err);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return usage_error(out, "--env: %s", err);
	lb_env_list l;
	lb_env_discover_opts o = {.expdir = st->expdir, .yaml_env = st->cfg.env, .cache_dir = st->cache};
	r = lb_env_discover(&o, &l);
	lb_env_choice c = {.index = -1};
	if (r == 0)
		r = lb_env_select(&l, how, mods, nm, st->cache, &c);
	if (r == -EINVAL)
		usage_error(out, "%s", l.note);
	else if (r == -ENOENT || r == -ESRCH)
		usage_error(out, "%s", c.reason);
	if (r == -ESRCH && c.imports_checked && req->warn)
		lb_env_each_lack(&l, req->warn, req->warn_ctx);
	if (r == 0 || r == -ENOENT || r == -ESRCH)
		st->env_doc = lb_env_choice_json(&l, &c, how, mods, nm);
	if (r == 0) {
		st->py = l.v[c.index].info;
		if (l.note[0] && req->warn)
			req->warn(req->warn_ctx, l.note);
	}
	for (size_t i = 0; i < nm; i++)
		free(mods[i]);
	free(mods);
	lb_env_list_free(&l);
	return r == -ENOMEM ? r : 0;
}

/* exp/'s own file system was full when the run failed. That is a failure of the disk limit
 * when the run met it (ENOSPC, a file too large, SIGBUS or SIGXFSZ); a run near its limit
 * that failed of something else failed of that, and the verdict says what. */
static void not_the_disk(lb_sandbox_result *res, lb_runlog *log)
{
	const char *by = res->isolation.disk_enforced_by;
	if (res->outcome != LB_SB_DISK_LIMIT || !log || !by || strncmp(by, "file system", 11) != 0 ||
	    res->term_signal == SIGBUS || res->term_signal == SIGXFSZ)
		return;
	size_t n = 0;
	LB_AUTOFREE char *t = lb_runlog_tail_n(log, TAIL_FOR_DIAGNOSIS, &n);
	static const char *const met[] = {"No space left on device", "[Errno 28]", "ENOSPC",
					  "Disk quota exceeded", "File too large"};
	for (size_t i = 0; t && i < sizeof met / sizeof *met; i++)
		if (memmem(t, n, met[i], strlen(met[i])))
			return;
	res->outcome = res->term_signal ? LB_SB_SIGNALED : LB_SB_EXITED;
	res->disk_limited = false;
	res->disk_detail[0] = '\0';
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

static int write_environment(const char *run_dir, lb_lang lang, const lb_python_info *py,
			     const lb_sandbox_limits *lang_lim, const char *cache,
			     json_object *manifest)
{
	lb_buf b = {0};
	LB_AUTOFREE char *freeze = NULL;
	bool hit = false;
	int fr, r;
	if (lang != LB_LANG_PYTHON) {
		lb_buf pk = {0};
		char ferr[512] = "";
		fr = lb_lang_freeze(lang, py, lang_lim, &pk, ferr, sizeof ferr);
		r = lb_buf_printf(&b, "%s %s\n", py->implementation, py->version);
		if (r == 0 && fr == 0)
			r = lb_buf_printf(&b, "# %s (installed packages of %s)\n%s",
					  lang == LB_LANG_R ? "installed.packages()" : "pkg list",
					  py->executable, pk.data ? pk.data : "");
		else if (r == 0)
			r = lb_buf_printf(&b, "# packages: could not list those of %s: %s\n",
					  py->executable, ferr);
		lb_buf_free(&pk);
		goto write;
	}
	fr = lb_python_freeze_of(py, cache, &freeze, &hit);
	r = lb_buf_printf(&b, "Python %s\n", py->version);
	if (r == 0 && fr == 0)
		r = lb_buf_printf(&b, "# pip freeze (installed distributions of %s)\n%s", py->executable,
				  freeze);
	else if (r == 0)
		r = lb_buf_printf(&b, "# pip freeze: could not list the distributions of %s: %s\n",
				  py->executable, strerror(-fr));
write:
	if (r == 0 && b.len && b.data[b.len - 1] != '\n')
		r = lb_buf_puts(&b, "\n");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/environment.txt", run_dir);
	/* Synced with the other records at the run's end (sync_records), not here before the
	 * experiment starts. */
	if (r == 0)
		r = lb_write_file_atomic_nosync(path, b.data, b.len, 0600);
	json_object_object_add(manifest, "packages_listed", json_object_new_boolean(fr == 0));
	json_object_object_add(manifest, "packages_from_cache", json_object_new_boolean(fr == 0 && hit));
	lb_buf_free(&b);
	return r;
}

/* What the pipeline adds to the backend's clean environment. Output unbuffered so nothing is
 * lost when the budget kills the run; hashing fixed and bytecode off so reruns behave alike
 * and the staged tree stays as staged; no user site: its .pth lines would run before the gate,
 * from wherever HOME points (a sweep's env could point it into the experiment). */
#define JOB_ENV_MAX 9
static size_t job_env(const run_state *st, const char *id, char store[3][PATH_MAX + 32],
		      char *env[JOB_ENV_MAX])
{
	size_t n = 0;
	env[n++] = "PYTHONNOUSERSITE=1";
	env[n++] = "PYTHONUNBUFFERED=1";
	/* The hash seed the user asked for (-e, a sweep's env:), else labbox's: never one
	 * replaced by the other while the records say it was applied. */
	snprintf(store[2], sizeof store[2], "PYTHONHASHSEED=%s",
		 st->hashseed ? st->hashseed : PYTHONHASHSEED);
	env[n++] = store[2];
	env[n++] = "PYTHONDONTWRITEBYTECODE=1";
	env[n++] = "MPLBACKEND=Agg";
	snprintf(store[0], sizeof store[0], "LABBOX_RUN_ID=%s", id);
	env[n++] = store[0];
	if (st->budget > 0) {
		snprintf(store[1], sizeof store[1], "LABBOX_BUDGET=%g", st->budget);
		env[n++] = store[1];
	}
	env[n] = NULL;
	return n;
}

/* Whether the caller's sandbox flags granted sockets (--network loopback or host). */
static bool sandbox_network(json_object *sandbox_config)
{
	json_object *v;
	return sandbox_config && json_object_object_get_ex(sandbox_config, "network", &v) &&
	       strcmp(json_object_get_string(v), "none") != 0;
}

/* Whether an interpreter of this version has audit hooks (PEP 578, 3.8+), so the gate can
 * install: 1 yes, 0 no, -1 when the version does not say. */
static int py_audit_hooks(const char *version)
{
	int maj = 0, min = 0;
	if (sscanf(version, "%d.%d", &maj, &min) != 2)
		return -1;
	return maj > 3 || (maj == 3 && min >= 8);
}

/* The programs R and Octave run themselves, which their exec guard lets the tree start: the
 * interpreter's start-up chain (R's bin/R is a bash script that runs uname and sed, then
 * bin/exec/R; Rscript starts it, and R's parallel workers are Rscript again) and what R runs
 * at start and exit by `sh -c` (which, uname, rm of its session directory). Everything else
 * the shell is asked to start is judged again, so a computed system() starts none of
 * python3, perl, a compiler or what the run wrote. The list lives in store, paths[] points
 * into it, NULL-terminated. */
#define LANG_EXEC_MAX 14
static void lang_exec_list(lb_lang lang, const char *home, char store[][4120],
			   const char *paths[LANG_EXEC_MAX + 1])
{
	static const char *const system_progs[] = {
		"/usr/bin/uname", "/bin/uname", "/usr/bin/sed", "/bin/sed", "/usr/bin/rm",
		"/bin/rm", "/usr/bin/which", "/bin/which"};
	static const char *const r_progs[] = {"bin/R", "bin/exec/R", "bin/Rscript"};
	size_t n = 0;
	for (size_t i = 0; i < sizeof system_progs / sizeof *system_progs; i++)
		paths[n++] = system_progs[i];
	for (size_t i = 0; lang == LB_LANG_R && home[0] == '/' && i < 3; i++) {
		snprintf(store[i], 4120, "%s/%s", home, r_progs[i]);
		paths[n++] = store[i];
	}
	paths[n] = NULL;
}

static json_object *simple_failure(const char *cls, const char *summary, const char *suggestion)
{
	json_object *f = json_object_new_object();
	json_object_object_add(f, "class", json_object_new_string(cls));
	json_object_object_add(f, "summary", json_object_new_string(summary));
	json_object_object_add(f, "evidence", json_object_new_array());
	json_object_object_add(f, "suggestion", json_object_new_string(suggestion));
	json_object_object_add(f, "confidence", json_object_new_string("high"));
	json_object_object_add(f, "confidence_reason", json_object_new_string("labbox decided it itself"));
	lb_diagnose_escalation(f, NULL);
	return f;
}

/* The execs the sandbox's exec guard refused, as runtime_gate events of their own: what the
 * kernel loaded, not what the gate was shown, so code that got past the gate is named. */
static void add_exec_refusals(json_object *gate, const lb_sandbox_result *res)
{
	json_object *events = NULL, *v;
	if (!gate || !res->exec_refused || !json_object_object_get_ex(gate, "events", &events))
		return;
	for (unsigned i = 0; i < res->exec_refused && i < LB_SB_MAX_EXEC_REFUSALS; i++) {
		const lb_exec_refusal *r = &res->exec_refusals[i];
		json_object *ev = json_object_new_object(), *args = json_object_new_array();
		json_object_array_add(args, json_object_new_string(r->exe));
		json_object_array_add(args, json_object_new_string(r->argv));
		json_object_object_add(ev, "event", json_object_new_string("exec"));
		json_object_object_add(ev, "args", args);
		json_object_object_add(ev, "refused", json_object_new_boolean(true));
		json_object_object_add(ev, "rule", json_object_new_string("LB101"));
		json_object_object_add(ev, "static_rule", json_object_new_string("LB101"));
		json_object_object_add(ev, "title", json_object_new_string("process creation"));
		json_object_object_add(ev, "file", NULL);
		json_object_object_add(ev, "line", NULL);
		json_object_object_add(ev, "pid", json_object_new_int(r->pid));
		char detail[320];
		snprintf(detail, sizeof detail,
			 "the sandbox's exec guard: %s; killed before it ran (the gate never saw it: "
			 "code past the gate, or a library's native code)", r->why);
		json_object_object_add(ev, "detail", json_object_new_string(detail));
		json_object_object_add(ev, "finding", NULL);
		json_object_array_add(events, ev);
	}
	int64_t refused = json_object_object_get_ex(gate, "refused", &v) ? json_object_get_int64(v) : 0;
	json_object_object_add(gate, "refused", json_object_new_int64(refused + res->exec_refused));
	if (res->exec_refused > LB_SB_MAX_EXEC_REFUSALS) {
		int64_t dropped = json_object_object_get_ex(gate, "dropped", &v) ? json_object_get_int64(v) : 0;
		json_object_object_add(gate, "dropped", json_object_new_int64(
			dropped + res->exec_refused - LB_SB_MAX_EXEC_REFUSALS));
	}
}

/* The failure's class, or NULL when there is none (the run completed). */
static const char *failure_class_of(json_object *failure)
{
	json_object *v;
	return failure && json_object_object_get_ex(failure, "class", &v) ? json_object_get_string(v)
									  : NULL;
}

/* A run the budget ended in which the runtime gate had refused something: the timeout is
 * what ended it, and it stays the class, but a refused task (a pool's, a queue's) leaves the
 * code waiting for an answer that never comes, and raising the budget would not help. The
 * first refusal is evidence, and the confidence says the two may be one. */
static void timeout_after_refusal(json_object *failure, json_object *gate)
{
	json_object *v, *events;
	const char *cls = failure_class_of(failure);
	if (!gate || !cls || strcmp(cls, "timeout") != 0)
		return;
	int64_t refused = json_object_object_get_ex(gate, "refused", &v) ? json_object_get_int64(v) : 0;
	if (refused <= 0 || !json_object_object_get_ex(gate, "events", &events) ||
	    !json_object_is_type(events, json_type_array))
		return;
	json_object *first = NULL;
	for (size_t i = 0; i < json_object_array_length(events) && !first; i++) {
		json_object *ev = json_object_array_get_idx(events, i);
		if (json_object_object_get_ex(ev, "refused", &v) && json_object_get_boolean(v))
			first = ev;
	}
	if (!first)
		return;
	const char *event = json_object_object_get_ex(first, "event", &v) ? json_object_get_string(v) : "?";
	const char *rule = json_object_object_get_ex(first, "rule", &v) ? json_object_get_string(v) : "?";
	const char *title = json_object_object_get_ex(first, "title", &v) && v ? json_object_get_string(v) : "";
	json_object *args = json_object_object_get_ex(first, "args", &v) ? v : NULL;
	char what[600];
	int n = snprintf(what, sizeof what, "the runtime gate refused %lld operation%s before the budget "
			 "ran out; the first: %s (%s%s%s)", (long long)refused, refused == 1 ? "" : "s",
			 event, rule, title[0] ? " " : "", title);
	if (args && json_object_array_length(args) > 0 && n > 0 && (size_t)n < sizeof what)
		snprintf(what + n, sizeof what - (size_t)n, " of %.200s",
			 json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
	json_object *ev_arr;
	if (json_object_object_get_ex(failure, "evidence", &ev_arr) &&
	    json_object_is_type(ev_arr, json_type_array))
		json_object_array_add(ev_arr, json_object_new_string(what));
	json_object_object_add(failure, "confidence", json_object_new_string("medium"));
	json_object_object_add(failure, "confidence_reason",
			       json_object_new_string("the budget ended the run, after the runtime gate had "
						      "refused an operation: a refused task can leave a pool or "
						      "a queue waiting for ever, and then a larger budget would "
						      "not help (runtime_gate lists the refusals)"));
	const char *sug = json_object_object_get_ex(failure, "suggestion", &v) ? json_object_get_string(v) : "";
	char more[1400];
	snprintf(more, sizeof more, "%s; but first see the runtime gate's refusals (result.json "
		 "runtime_gate): if the code waited on a task the gate refused, remove what it refused "
		 "(docs/check.md names the rule) rather than raise the budget", sug);
	json_object_object_add(failure, "suggestion", json_object_new_string(more));
}

/* A write the kernel refused in the interpreter's own environment, staged with the
 * experiment and kept read-only behind the exec guard: the flag that lifts it is the gate's,
 * not a volume (which the generic advice names). */
static void protected_env_refusal(json_object *failure, const char *prefix)
{
	json_object *ev;
	const char *cls = failure_class_of(failure);
	if (!cls || strcmp(cls, "sandbox_restriction") != 0 ||
	    !json_object_object_get_ex(failure, "evidence", &ev) ||
	    !json_object_is_type(ev, json_type_array))
		return;
	bool hit = false;
	for (size_t i = 0; i < json_object_array_length(ev) && !hit; i++) {
		const char *line = json_object_get_string(json_object_array_get_idx(ev, i));
		const char *at = line ? strstr(line, prefix) : NULL;
		size_t n = strlen(prefix);
		hit = at && strstr(line, "Read-only file system") && (at[n] == '/' || at[n] == '\'' ||
								      at[n] == '"' || at[n] == '\0');
	}
	if (!hit)
		return;
	char sug[1200];
	snprintf(sug, sizeof sug,
		 "the interpreter's environment %s is staged with the experiment and kept "
		 "read-only while the runtime gate is on, so that what the processes the run "
		 "starts read before their gate (pyvenv.cfg, .pth files) stays as staged: install "
		 "what the code needs before the run, write elsewhere in the experiment directory, "
		 "or run with --runtime-gate record", prefix);
	json_object_object_add(failure, "suggestion", json_object_new_string(sug));
	json_object_object_add(failure, "escalation", NULL);
}

/* A run in which the exec guard killed a process failed, whatever the experiment made of it:
 * a program it did not get to run, and code that got past the gate. */
static json_object *exec_refusal_failure(const lb_sandbox_result *res, lb_lang lang)
{
	const lb_exec_refusal *r = &res->exec_refusals[0];
	char sum[1024];
	if (lang == LB_LANG_PYTHON)
		snprintf(sum, sizeof sum,
			 "the sandbox killed a process the runtime gate never judged: %s (%s), %s; "
			 "%u in all", r->argv[0] ? r->argv : r->exe, r->exe, r->why,
			 res->exec_refused);
	else
		snprintf(sum, sizeof sum,
			 "the sandbox's exec guard killed a program the %s experiment started: %s "
			 "(%s), %s; %u in all", lb_lang_name(lang), r->argv[0] ? r->argv : r->exe,
			 r->exe, r->why, res->exec_refused);
	json_object *f = simple_failure(
		"gate_refused", sum,
		lang == LB_LANG_PYTHON
			? "something started a program without the gate seeing it: the experiment's "
			  "code past the gate (ctypes, native code it loaded) or a library's native "
			  "code. Remove it; a library's own program runs under --policy permissive "
			  "--runtime-gate off (the sandbox still holds)"
			: "an R or Octave experiment starts no program but the interpreter's own "
			  "(a shell command by a computed name, system() by another name, is one): "
			  "do the work in the language itself, or run under --policy permissive (the "
			  "sandbox still holds)");
	json_object_object_add(f, "rule", json_object_new_string("LB101"));
	json_object_object_add(f, "gate_event", json_object_new_string("exec"));
	json_object *ev = NULL;
	if (json_object_object_get_ex(f, "evidence", &ev))
		for (unsigned i = 0; i < res->exec_refused && i < LB_SB_MAX_EXEC_REFUSALS; i++) {
			char line[900];
			snprintf(line, sizeof line, "pid %d: %s: %s", res->exec_refusals[i].pid,
				 res->exec_refusals[i].argv, res->exec_refusals[i].why);
			json_object_array_add(ev, json_object_new_string(line));
		}
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

/* result.json's own seal (mac.c), once manifest.json's is in it: a record without a sealed
 * manifest is no labbox record however its result.json is sealed. */
static void seal_result(json_object *doc)
{
	json_object *v;
	if (json_object_object_get_ex(doc, "manifest_mac", &v) && json_object_is_type(v, json_type_string))
		lb_record_result_seal(doc);
	else
		json_object_object_del(doc, "result_mac");
}

/* The verdict last: run.log, environment.txt and manifest.json, written unsynced, are synced
 * together with result.json's text (concurrent syncs cost about one), and only then is
 * result.json renamed into place, so a result.json that exists has every record on disk
 * beside it. A failed sync is a record failure, as a failed write is. */
static int sync_records(const char *run_dir, json_object *doc, int *exit_code, bool log_ok,
			bool env_ok, bool manifest_ok)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/result.json", run_dir);
	char *tmp = NULL;
	/* Sealed as written, at each write: what a reader finds is labbox's verdict or refused. */
	seal_result(doc);
	int r = lb_record_write_json_pending(path, doc, &tmp);
	if (r < 0)
		return r;
	char names[4][PATH_MAX];
	const char *np[4];
	size_t n = 0;
	const char *const files[] = {"run.log", "environment.txt", "manifest.json"};
	const bool ok[] = {log_ok, env_ok, manifest_ok};
	for (size_t i = 0; i < 3; i++)
		if (ok[i]) {
			snprintf(names[n], sizeof names[n], "%s/%s", run_dir, files[i]);
			np[n] = names[n];
			n++;
		}
	np[n++] = tmp;
	size_t failed = 0;
	r = lb_fsync_all(AT_FDCWD, np, n, &failed);
	if (r < 0 && failed + 1 < n) {
		/* A record beside the verdict is not on disk: the verdict says so, synced alone. */
		lb_commit_file(tmp, path, r);
		record_failed(doc, exit_code, np[failed], r);
		seal_result(doc);
		return lb_record_write_json(path, doc);
	}
	return lb_commit_file(tmp, path, r);
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
		json_object *sw = NULL;
		if (lb_index_run_started(ix, out->id, out->run_dir, expdir, iso) < 0 ||
		    (json_object_object_get_ex(doc, "sweep", &sw) && sw &&
		     lb_index_tag_sweep(ix, out->id, sw) < 0)) {
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

/* A file the experiment opened by a relative path that an earlier run of the same experiment
 * wrote (a checkpoint to resume from, a model to evaluate): every run starts from a fresh copy
 * of the experiment directory and keeps what it writes in its own run directory, so the file
 * is not missing data and no mount of the host lifts it. The newest such run is named, with
 * the two ways to carry it over. */
static void earlier_output(json_object *failure, lb_index *ix, const char *expdir, const char *id)
{
	static const char lead[] = "file '";
	json_object *v;
	const char *cls = failure_class_of(failure);
	if (!ix || !cls || strcmp(cls, "missing_data") != 0 ||
	    !json_object_object_get_ex(failure, "summary", &v))
		return;
	const char *sum = json_object_get_string(v);
	if (strncmp(sum, lead, sizeof(lead) - 1) != 0 || sum[sizeof(lead) - 1] == '/')
		return;
	char rel[PATH_MAX];
	size_t n = strcspn(sum + sizeof(lead) - 1, "'");
	if (n == 0 || n >= sizeof(rel))
		return;
	memcpy(rel, sum + sizeof(lead) - 1, n);
	rel[n] = '\0';
	if (strstr(rel, "..")) /* a path out of the copy is not one an earlier run kept */
		return;
	lb_index_filter f = {.limit = 200};
	json_object *rows = NULL;
	char err[256];
	if (lb_index_list(ix, &f, &rows, err, sizeof(err)) < 0 || !rows)
		return;
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *row = json_object_array_get_idx(rows, i), *e, *rid, *rd;
		char path[PATH_MAX * 2];
		struct stat sb;
		if (!json_object_object_get_ex(row, "expdir", &e) || !e ||
		    strcmp(json_object_get_string(e), expdir) != 0 ||
		    !json_object_object_get_ex(row, "id", &rid) ||
		    strcmp(json_object_get_string(rid), id) == 0 ||
		    !json_object_object_get_ex(row, "run_dir", &rd) || !rd)
			continue;
		snprintf(path, sizeof(path), "%s/exp/%s", json_object_get_string(rd), rel);
		if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		char text[24576];
		snprintf(text, sizeof(text),
			 "file '%.1024s' is not in this run's copy of the experiment: run %.64s "
			 "wrote it (%.4096s), and every run starts from a fresh copy of the experiment directory "
			 "and keeps what it writes in its own run directory",
			 rel, json_object_get_string(rid), path);
		json_object_object_add(failure, "summary", json_object_new_string(text));
		/* cp does not make the directory the copy goes into */
		const char *slash = strrchr(rel, '/');
		char mk[6144] = "";
		if (slash)
			snprintf(mk, sizeof(mk), "mkdir -p %.4096s/%.*s && ", expdir,
				 (int)(slash - rel), rel);
		snprintf(text, sizeof(text),
			 "to start from it, copy it into the experiment directory (%scp %.4096s "
			 "%.4096s/%.1024s), "
			 "so the next run's copy holds it; or mount the earlier run's file read-only "
			 "at an absolute path (-v %.4096s:/labbox-prev/%.1024s:ro) and have the code open "
			 "that path",
			 mk, path, expdir, rel, path, rel);
		json_object_object_add(failure, "suggestion", json_object_new_string(text));
		json_object_object_add(failure, "confidence", json_object_new_string("high"));
		json_object_object_add(failure, "confidence_reason",
				       json_object_new_string("an earlier run of this experiment has "
							      "the file at that path in its own copy"));
		break;
	}
	json_object_put(rows);
}

/* The static check runs on the staged copy, the code that would run, so nothing can change
 * between the check and the run. Returns true when the code may run. */
/* rep's unread_dirs as "DEV:INO,..." (malloc'd; NULL when none), for the gate */
static char *unread_dirs_text(const lb_check_report *rep)
{
	lb_buf b = {0};
	size_t n = rep->unread_dirs ? json_object_array_length(rep->unread_dirs) : 0;
	for (size_t i = 0; i < n; i++) {
		if (i && lb_buf_puts(&b, ",") < 0)
			break;
		if (lb_buf_puts(&b, json_object_get_string(
					     json_object_array_get_idx(rep->unread_dirs, i))) < 0)
			break;
	}
	return b.data;
}

static bool degraded_accepts(const lb_run_request *req, const char *what);

/* What the static check said of the staged code. */
enum { CHECK_PASSED, CHECK_REJECTED, CHECK_FAILED /* its own machinery, or labbox.yaml */ };

/* Whether labbox was asked to stop; the first step that sees it is the one recorded. */
static bool interrupted_during(int *sig, const char **step, const char *name)
{
	if (!*sig && (*sig = lb_interrupt_pending()) != 0)
		*step = name;
	return *sig != 0;
}

/* The words for a step interrupted_during names. */
static const char *step_words(const char *step)
{
	if (strcmp(step, "stage") == 0)
		return "while the experiment was staged";
	if (strcmp(step, "environment") == 0)
		return "while the environment was recorded";
	if (strcmp(step, "check") == 0)
		return "during the static check";
	if (strcmp(step, "runtime_gate") == 0)
		return "while the runtime gate was set up";
	return "as the run started";
}

static int check_staged(const lb_run_request *req, const run_state *st, bool gate_refuses,
			 json_object *doc, json_object **findings, json_object **seeds,
			 char **unread_dirs, char *why, size_t whylen)
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
		lb_check_config_set_runtime_gate(cfg, gate_refuses);
		/* Without labbox's sandbox the run's `~` is the user's own home, where the check
		 * is the only gate: no write there is harmless. */
		lb_check_config_set_real_home(cfg, strcmp(st->backend_name, "colab") == 0 ||
							   (strcmp(st->backend_name, "ssh") == 0 &&
							    degraded_accepts(req, "isolation")));
		lb_check_config_set_python_info(cfg, &st->py);
		/* The check compiles or parses with the run's interpreter: the experiment's own
		 * one runs there under the run's limits. */
		if (st->py.confined || st->own_interp)
			lb_check_config_set_limits(cfg, &st->limits);
		lb_check_config_set_cache_dir(cfg, st->cache);
		lb_check_config_set_cache_name(cfg, st->expdir);
		lb_check_config_set_entry(cfg, st->entry);
		r = lb_check_dir(cfg, st->exp_dir, &rep, err, sizeof err);
	}
	json_object_object_add(info, "policy",
			       json_object_new_string(lb_check_policy_name((lb_check_policy)req->policy)));
	/* whether what a library call may reach was weighed against the runtime gate */
	json_object_object_add(info, "runtime_gate_refuses", json_object_new_boolean(gate_refuses));
	if (r < 0) {
		/* A check that could not run is never a pass. It is a refusal when the code is why
		 * (a file too large or unreadable for the check); when labbox.yaml or the check's
		 * own machinery is (its sandbox did not start or finish), nothing was judged. */
		bool machinery = rep.error_kind != LB_CHECK_ERR_CODE;
		json_object_object_add(info, "rejected", json_object_new_boolean(!machinery));
		json_object_object_add(info, "error",
				       json_object_new_string(err[0] ? err : strerror(-r)));
		snprintf(why, whylen, "%s", err[0] ? err : strerror(-r));
		*findings = json_object_new_array();
		json_object_object_add(doc, "needs", json_object_new_array());
		lb_check_config_free(cfg);
		lb_check_report_free(&rep);
		return machinery ? CHECK_FAILED : CHECK_REJECTED;
	}
	lb_check_finish(&rep);
	*findings = lb_check_findings_json(&rep);
	*seeds = rep.seeds ? json_object_get(rep.seeds) : NULL;
	*unread_dirs = unread_dirs_text(&rep);
	json_object_object_add(doc, "needs", lb_check_needs_json(&rep, req->sandbox_config));
	json_object_object_add(info, "rejected", json_object_new_boolean(rep.rejected));
	json_object_object_add(info, "files", json_object_new_int64((int64_t)rep.files));
	json_object_object_add(info, "syntax_by", json_object_new_string(rep.syntax_by));
	json_object_object_add(info, "syntax_cached_files",
			       json_object_new_int64((int64_t)rep.syntax_cached));
	json_object_object_add(info, "cached_files", json_object_new_int64((int64_t)rep.cached));
	LB_AUTOFREE char *llm = rep.rejected ? lb_check_llm_text(&rep) : NULL;
	json_object_object_add(info, "llm_text", llm ? json_object_new_string(llm) : NULL);
	bool ok = !rep.rejected;
	lb_check_config_free(cfg);
	lb_check_report_free(&rep);
	return ok ? CHECK_PASSED : CHECK_REJECTED;
}

/* Results files are this run's (issue 9): a results file staged with the code (left by an
 * earlier run in the experiment directory) that the run did not write is not its result.
 * The identity of every staged regular file is taken just before the experiment starts
 * (device, inode, size, mtime and ctime in ns), so whatever the run writes, renames over or
 * touches changes it; staging's own writes and chowns are behind it. */
static void identity_text(const struct stat *sb, char out[160])
{
	snprintf(out, 160, "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld", (unsigned long long)sb->st_dev,
		 (unsigned long long)sb->st_ino, (long long)sb->st_size, (long long)sb->st_mtim.tv_sec,
		 sb->st_mtim.tv_nsec, (long long)sb->st_ctim.tv_sec, sb->st_ctim.tv_nsec);
}

static json_object *snapshot_staged(const char *exp_dir, json_object *files)
{
	LB_AUTOCLOSE int efd = open(exp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_object *ids = json_object_new_object();
	if (efd < 0 || !ids)
		return ids;
	json_object_object_foreach(files, rel, sha)
	{
		struct stat sb;
		char idt[160];
		if (strcmp(json_object_get_string(sha), "symlink") == 0 ||
		    fstatat(efd, rel, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
			continue;
		identity_text(&sb, idt);
		json_object_object_add(ids, rel, json_object_new_string(idt));
	}
	return ids;
}

static bool same_sha256(int efd, const char *rel, const char *want)
{
	LB_AUTOCLOSE int fd = openat(efd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char hex[65];
	return fd >= 0 && lb_sha256_fd(fd, hex) == 0 && strcmp(hex, want) == 0;
}

/* Removes from files_read every results file the run did not write: staged (in the
 * manifest's files) with its identity unchanged and its bytes still the staged ones (the
 * second test covers a write within the file system's timestamp granularity). Without a
 * snapshot (ids NULL: the experiment never started) every staged file is stale. A file
 * rewritten with the same bytes counts as written: the run reported those numbers. Returns
 * the names removed (a json array), each also a stale_file warning. */
static json_object *drop_stale(int efd, json_object *files_read, json_object *staged,
			       json_object *ids, json_object *warnings)
{
	json_object *stale = json_object_new_array();
	json_object_object_foreach(files_read, name, doc)
	{
		(void)doc;
		json_object *sha, *idv;
		if (!json_object_object_get_ex(staged, name, &sha) ||
		    strcmp(json_object_get_string(sha), "symlink") == 0)
			continue; /* the run created it */
		if (ids) {
			struct stat sb;
			char idt[160];
			if (!json_object_object_get_ex(ids, name, &idv) ||
			    fstatat(efd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* cannot tell: it was read, so it counts */
			identity_text(&sb, idt);
			if (strcmp(idt, json_object_get_string(idv)) != 0 ||
			    !same_sha256(efd, name, json_object_get_string(sha)))
				continue;
		}
		json_object_array_add(stale, json_object_new_string(name));
	}
	for (size_t i = 0; i < json_object_array_length(stale); i++) {
		const char *sname = json_object_get_string(json_object_array_get_idx(stale, i));
		char msg[PATH_MAX + 200];
		snprintf(msg, sizeof msg,
			 "%s was staged with the code and %s: left by an earlier run, it is not "
			 "this run's result and was not collected",
			 sname, ids ? "the run did not write it" : "the experiment never ran");
		json_object *w = json_object_new_object();
		json_object_object_add(w, "kind", json_object_new_string("stale_file"));
		json_object_object_add(w, "metric", NULL);
		json_object_object_add(w, "where", json_object_new_string(sname));
		json_object_object_add(w, "message", json_object_new_string(msg));
		json_object_array_add(warnings, w);
	}
	for (size_t i = 0; i < json_object_array_length(stale); i++)
		json_object_object_del(files_read,
				       json_object_get_string(json_object_array_get_idx(stale, i)));
	return stale;
}

/* Whether a relative link target, read from the directory of rel, climbs above the root of
 * the tree ("../../x" from "a/link"). */
static bool climbs_out(const char *rel, const char *target)
{
	int depth = 0;
	for (const char *p = rel; *p; p++)
		depth += *p == '/';
	for (const char *p = target; *p;) {
		const char *slash = strchrnul(p, '/');
		size_t n = (size_t)(slash - p);
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return true;
		} else if (n > 0 && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p = *slash ? slash + 1 : slash;
	}
	return false;
}

/* The staged symbolic links with their targets, so the record says what each points to:
 * {rel: {"target", "outside": whether it leads out of the staged copy (absolute, climbing
 * above it, or resolving outside it), "resolves_to": the path it resolves to when outside,
 * null when dangling}}. Staging keeps links as links (manifest.files says "symlink"); what
 * they point to outside is not copied or fingerprinted, and this says so. */
static json_object *symlinks_json(const char *exp_dir, json_object *files)
{
	json_object *links = json_object_new_object();
	char root[PATH_MAX];
	LB_AUTOCLOSE int efd = open(exp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (efd < 0 || !realpath(exp_dir, root))
		return links;
	size_t rl = strlen(root);
	json_object_object_foreach(files, rel, sha)
	{
		if (strcmp(json_object_get_string(sha), "symlink") != 0)
			continue;
		char target[PATH_MAX], full[PATH_MAX * 2], real[PATH_MAX];
		ssize_t len = readlinkat(efd, rel, target, sizeof target - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		snprintf(full, sizeof full, "%s/%s", exp_dir, rel);
		bool resolves = realpath(full, real) != NULL;
		bool outside = target[0] == '/' || climbs_out(rel, target) ||
			       (resolves && !(strncmp(real, root, rl) == 0 && real[rl] == '/'));
		json_object *o = json_object_new_object();
		json_object_object_add(o, "target", json_object_new_string(target));
		json_object_object_add(o, "outside", json_object_new_boolean(outside));
		if (outside)
			json_object_object_add(o, "resolves_to",
					       resolves ? json_object_new_string(real) : NULL);
		json_object_object_add(links, rel, o);
	}
	return links;
}

/* The isolation block: the backend's own when it has one (a remote labbox's block as it was
 * reported), else what the result's struct says. */
static json_object *isolation_json(lb_backend *be, const lb_sandbox_result *res)
{
	json_object *o = be->ops->isolation ? be->ops->isolation(be) : NULL;
	return o ? o : lb_record_isolation_json(&res->isolation);
}

/* Why a run whose gate the experiment's own files could keep out does not start. */
static void preload_refusal(json_object *files, char *out, size_t n)
{
	char list[512] = "";
	size_t nf = json_object_array_length(files);
	for (size_t i = 0; i < nf && i < 4; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
			 json_object_get_string(json_object_array_get_idx(files, i)));
	snprintf(out, n,
		 "the runtime gate cannot be installed before the experiment's own code: %s%s "
		 "(the experiment's interpreter, or .pth files with import lines that Python's site "
		 "runs at start-up, before the gate) could keep it out. Use an interpreter and "
		 "environment from outside the experiment (--python, --env), or accept a gate that "
		 "is recorded as not enforced with --allow-degraded gate",
		 list, nf > 4 ? ", ..." : "");
}

/* --allow-degraded WHAT among the shared sandbox flags (isolation and gate are not part of
 * all: each is asked for by name). */
static bool degraded_accepts(const lb_run_request *req, const char *what)
{
	json_object *ad;
	if (!req->sandbox_config ||
	    !json_object_object_get_ex(req->sandbox_config, "allow_degraded", &ad) ||
	    !json_object_is_type(ad, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(ad); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(ad, i)), what) == 0)
			return true;
	return false;
}

static int run_pipeline(lb_backend *be, const lb_run_request *req, run_state *st,
			lb_run_result *out)
{
	/* A relative runs directory is found in the working directory, which is often the
	 * experiment's: a .labbox link shipped with it would put the records, and the staged
	 * code, wherever it points. */
	char link[PATH_MAX];
	int r = lb_record_runs_dir_link(req->runs_dir ? req->runs_dir : ".labbox/runs", link,
					sizeof link);
	if (r == -ELOOP)
		return usage_error(out, "'%s' is a symbolic link: labbox keeps its records in the "
				   "working directory only in directories of its own there (an "
				   "experiment directory can ship such a link); give the place with "
				   "--runs-dir DIR", link);
	char unsafe[PATH_MAX + 96] = "";
	r = lb_record_create_run_dir(req->runs_dir ? req->runs_dir : ".labbox/runs", out->id,
				     &out->run_dir, unsafe, sizeof unsafe);
	if (r == -ENAMETOOLONG)
		return usage_error(out, "the runs directory's path is too long: a run's records "
				   "would pass PATH_MAX (%d bytes); choose a shorter --runs-dir",
				   PATH_MAX);
	if (r == -EPERM && unsafe[0])
		return usage_error(out, "the runs directory '%s' is not safe to write in: %s; every "
				   "directory on its path must be root's or yours and closed to "
				   "others (or sticky, as /tmp): another user could move the run "
				   "away and send its records and staged code where they chose; "
				   "choose --runs-dir in a directory of your own",
				   req->runs_dir ? req->runs_dir : ".labbox/runs", unsafe);
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
	/* From the first record on, so an interrupted cell still says which cell it was. */
	if (req->sweep)
		json_object_object_add(doc, "sweep", json_object_get(req->sweep));
	double started = lb_time_now();
	add_time(doc, "started_at", started);
	snprintf(path, sizeof path, "%s/result.json", out->run_dir);
	/* A run whose labbox dies from here on still says what it was; a run that cannot say it
	 * is not started (a full disk would lose its results too). Not synced: a killed labbox
	 * leaves it in the page cache all the same, and a crash of the machine ends the run
	 * anyway; the verdict that replaces it is synced. */
	char record_err[PATH_MAX + 160] = "";
	r = lb_record_write_json_nosync(path, doc);
	if (r < 0)
		snprintf(record_err, sizeof record_err, "cannot write %s: %s", path, strerror(-r));
	r = 0;
	lb_index *index = open_index(req, out, doc, started);

	json_object *manifest = json_object_new_object();
	json_object *files = json_object_new_object();
	json_object *skipped = json_object_new_array();
	json_object *left_out = req->stage_only ? json_object_new_array() : NULL;
	if (asprintf(&st->exp_dir, "%s/exp", out->run_dir) < 0)
		st->exp_dir = NULL;
	uid_t uid;
	gid_t gid;
	be->ops->owner(be, &uid, &gid);
	char err[768] = "";
	/* What --hide keeps out of sight is not staged through a link either. */
	json_object *hj = NULL;
	size_t nh = req->sandbox_config && json_object_object_get_ex(req->sandbox_config, "hide", &hj) &&
				    json_object_is_type(hj, json_type_array)
			    ? json_object_array_length(hj)
			    : 0;
	LB_AUTOFREE char *hide_buf = nh ? calloc(nh, PATH_MAX) : NULL;
	LB_AUTOFREE const char **hide = nh ? calloc(nh, sizeof *hide) : NULL;
	size_t nhide = 0;
	for (size_t i = 0; hide_buf && hide && i < nh; i++) {
		const char *h = json_object_get_string(json_object_array_get_idx(hj, i));
		if (h && realpath(h, hide_buf + nhide * PATH_MAX)) {
			hide[nhide] = hide_buf + nhide * PATH_MAX;
			nhide++;
		}
	}
	/* Known before staging, so that its index and sweeps are left out when they sit inside
	 * the experiment (a --runs-dir of its own there), on its first run too. */
	if (st->state && !st->remote)
		lb_record_known_note(st->state, req->runs_dir ? req->runs_dir : ".labbox/runs");
	/* Asked to stop before or during a step that runs before the experiment: the first
	 * step that saw it is recorded, and nothing is started after it. */
	int isig = 0;
	const char *stopped_in = NULL;
	interrupted_during(&isig, &stopped_in, "start");
	int stage_r = isig ? -EINTR
		      : !st->exp_dir || (nh && (!hide_buf || !hide))
			      ? -ENOMEM
			      : lb_record_stage_listed(st->expdir, st->exp_dir,
						       uid == getuid() ? (uid_t)-1 : uid, gid,
						       st->disk_limit, hide, nhide, req->stage_only,
						       left_out, files, skipped, err, sizeof err);
	interrupted_during(&isig, &stopped_in, "stage");
	if (stage_r == 0)
		lb_python_restage(&st->py, st->exp_dir);
	int env_r = write_environment(out->run_dir, st->lang, &st->py,
				      st->own_interp ? &st->limits : NULL, st->cache, manifest);
	if (env_r < 0 && !record_err[0])
		snprintf(record_err, sizeof record_err, "cannot write %s/environment.txt: %s",
			 out->run_dir, strerror(-env_r));

	lb_sandbox_result res;
	memset(&res, 0, sizeof res);
	lb_metrics *metrics = NULL;
	LB_AUTOFREE last_line *lasts = calloc(2, sizeof *lasts); /* stdout's, stderr's */
	if (!lasts || lb_metrics_new(&metrics) < 0) {
		json_object_put(manifest);
		json_object_put(files);
		json_object_put(skipped);
		json_object_put(left_out);
		return -ENOMEM;
	}
	lb_metrics_set_language(metrics, st->lang == LB_LANG_PYTHON ? NULL : lb_lang_name(st->lang));
	lb_runlog *log = NULL;
	snprintf(path, sizeof path, "%s/run.log", out->run_dir);
	int log_r = lb_runlog_open(path, req->log_limit ? req->log_limit : DEFAULT_LOG_LIMIT, &log);

	LB_AUTOFREE char *argv_store = NULL;
	char **argv = st->lang != LB_LANG_PYTHON
			      ? lb_lang_argv(st->lang, &st->py, st->entry, st->args, st->nargs,
					     &argv_store)
			      : calloc(st->nargs + 3, sizeof *argv);
	if (!argv) {
		r = -ENOMEM;
	} else if (st->lang == LB_LANG_PYTHON) {
		argv[0] = st->py.executable;
		argv[1] = (char *)st->entry;
		for (size_t i = 0; i < st->nargs; i++)
			argv[2 + i] = st->args[i];
	}
	json_object *findings = NULL, *code_seeds = NULL;
	json_object *staged_ids = NULL; /* identities of the staged files when the run started */
	lb_gate_mode gate_mode = lb_gate_effective((lb_gate_mode)req->runtime_gate, req->policy);
	char gate_note[512] = "";
	/* The gate is an audit hook, a Python thing: an R or Octave interpreter never loads it,
	 * and a channel nobody writes to would read as a Python gate that broke. */
	if (st->lang != LB_LANG_PYTHON) {
		gate_mode = LB_GATE_OFF;
		snprintf(gate_note, sizeof gate_note,
			 "no runtime gate: it is an audit hook of Python's, and this is %s %s "
			 "experiment; the static check and the sandbox hold it",
			 st->lang == LB_LANG_JULIA ? "a" : "an", st->py.implementation);
	}
	lb_gate_paths gate_paths;
	lb_gate_channel gate_ch = {.fd = {-1, -1}, .stop = -1};
	json_object *gate_preload = NULL; /* the experiment's own code that runs before it */
	bool refuse_preload = false;
	char refusal[1024] = "";
	bool gate_staged = false;
	bool env_protected = false; /* the staged environment is read-only (lb_sandbox_protect) */
	bool gate_by_backend = false; /* the backend says why it has no gate (after the run) */
	/* The gate that will refuse what a library call reaches, as it happens: on, bound in by
	 * the backend, in an interpreter with audit hooks, and not accepted as degraded. */
	bool gate_refuses = gate_mode == LB_GATE_ON && (!st->remote || be->ops->binds_gate) &&
			    st->lang == LB_LANG_PYTHON && py_audit_hooks(st->py.version) == 1 &&
			    !degraded_accepts(req, "gate");
	LB_AUTOFREE char *unread_dirs = NULL; /* what the check did not read, for the gate */
	interrupted_during(&isig, &stopped_in, "environment");
	char check_err[600] = "";
	int checked = stage_r == 0 && !isig
			      ? check_staged(req, st, gate_refuses, doc, &findings, &code_seeds,
					     &unread_dirs, check_err, sizeof check_err)
			      : CHECK_PASSED;
	if (interrupted_during(&isig, &stopped_in, "check")) {
		checked = CHECK_PASSED; /* not judged: the interruption is the verdict */
		json_object *ci = json_object_object_get(doc, "check");
		if (ci && json_object_object_get(ci, "error")) {
			char msg[160];
			snprintf(msg, sizeof msg, "not finished: labbox was interrupted by %s",
				 strsignal(isig));
			json_object_object_add(ci, "rejected", json_object_new_boolean(false));
			json_object_object_add(ci, "error", json_object_new_string(msg));
		}
	}
	bool rejected = checked == CHECK_REJECTED;
	/* What the run is seeded with: the code's own seed calls, and the hash seed labbox sets. */
	json_object *seeds = json_object_new_object();
	json_object_object_add(seeds, "found_in_code",
			       code_seeds ? code_seeds : json_object_new_array());
	json_object_object_add(seeds, "PYTHONHASHSEED",
			       json_object_new_string(st->hashseed ? st->hashseed : PYTHONHASHSEED));
	json_object_object_add(seeds, "PYTHONHASHSEED_set_by",
			       json_object_new_string(st->hashseed ? "user" : "labbox"));
	json_object_object_add(manifest, "seeds", seeds);
	if (!findings)
		findings = json_object_new_array();
	if (record_err[0]) {
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "record");
		snprintf(res.setup_error, sizeof res.setup_error, "%s; nothing was executed",
			 record_err);
	} else if (isig) {
		res.outcome = LB_SB_INTERRUPTED;
		res.interrupted = true;
		res.interrupt_signal = isig;
	} else if (checked == CHECK_FAILED) {
		/* The check's own machinery failed: labbox's fault, not the code's. */
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "check");
		snprintf(res.setup_error, sizeof res.setup_error,
			 "the static check could not run: %s; nothing was executed", check_err);
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
	} else {
		staged_ids = snapshot_staged(st->exp_dir, files);
		tee_ctx tee = {.log = log, .out_last = &lasts[0], .err_last = &lasts[1],
			       .metrics = &metrics, .echo = req->echo,
			       .echo_ctx = req->echo_ctx, .t0 = lb_time_monotonic(),
			       .language = st->lang == LB_LANG_PYTHON ? NULL
								       : lb_lang_name(st->lang)};
		char store[3][PATH_MAX + 32];
		char *env[JOB_ENV_MAX];
		LB_AUTOFREE char *index_path = NULL;
		char runs[PATH_MAX];
		snprintf(runs, sizeof runs, "%s", out->run_dir);
		char *slash = strrchr(runs, '/');
		if (slash && slash != runs)
			*slash = '\0';
		lb_index_path_for(req->runs_dir ? req->runs_dir : ".labbox/runs", &index_path);
		/* The runtime gate goes into the run directory beside the records, for the
		 * backends that bind it in (the local sandbox, docker). */
		if (gate_mode != LB_GATE_OFF && (!st->remote || be->ops->binds_gate)) {
			int gr = lb_gate_stage(out->run_dir, uid == getuid() ? (uid_t)-1 : uid, gid,
					       &gate_paths);
			if (gr < 0)
				snprintf(gate_note, sizeof gate_note,
					 "the gate could not be written into the run directory: %s",
					 strerror(-gr));
			gate_staged = gr == 0;
			/* No reader, no gate: the gate's open of the FIFO would wait for one. */
			if (gate_staged && (gr = lb_gate_channel_start(&gate_ch, &gate_paths)) < 0) {
				snprintf(gate_note, sizeof gate_note,
					 "not installed: its events channel could not be read: %s",
					 strerror(-gr));
				lb_gate_cleanup(&gate_paths);
				gate_staged = false;
			}
			const char *exps[] = {st->exp_dir, st->expdir};
			if (gate_staged)
				gate_preload = lb_gate_preloaders(st->py.executable, st->py.prefix,
								   exps, 2);
			/* A gate that is to refuse, which the experiment's own files could keep out
			 * before it installs: said and stopped, unless the user accepted it. */
			if (gate_preload && json_object_array_length(gate_preload) &&
			    gate_mode == LB_GATE_ON && !degraded_accepts(req, "gate")) {
				preload_refusal(gate_preload, refusal, sizeof refusal);
				refuse_preload = true;
			}
			/* No audit hooks before Python 3.8 (PEP 578): a gate to refuse cannot be. */
			if (!refuse_preload && gate_staged && gate_mode == LB_GATE_ON &&
			    py_audit_hooks(st->py.version) == 0 && !degraded_accepts(req, "gate")) {
				snprintf(refusal, sizeof refusal,
					 "the runtime gate needs Python 3.8 or later (PEP 578 audit "
					 "hooks); %.400s is Python %.32s. Use a newer interpreter (--python, "
					 "--env), or accept a run without the gate with --allow-degraded "
					 "gate or --runtime-gate record",
					 st->py.executable, st->py.version);
				refuse_preload = true;
			}
		} else if (gate_mode != LB_GATE_OFF) {
			snprintf(gate_note, sizeof gate_note,
				 "not installed: mode %s does not bind the runtime gate into what runs "
				 "the code, which runs without it", be->ops->name);
			gate_by_backend = be->ops->gate_note != NULL;
		}
		/* R and Octave have no runtime gate: under a policy that refuses, the exec guard
		 * keeps the tree to the interpreter's own programs, since the static check cannot
		 * see every computed name (match.fun(paste0("sys", "tem"))). */
		bool lang_guard = (st->lang == LB_LANG_R || st->lang == LB_LANG_OCTAVE) &&
				  req->policy != LB_CHECK_PERMISSIVE;
		char lang_store[3][4120];
		const char *lang_progs[LANG_EXEC_MAX + 1];
		lang_exec_list(st->lang, st->py.prefix, lang_store, lang_progs);
		lb_backend_job job = {
			.id = out->id, .run_dir = out->run_dir, .runs_dir = runs,
			.index_path = index_path, .exp_dir = st->exp_dir, .python = &st->py,
			.argv = argv, .env = env, .nenv = job_env(st, out->id, store, env),
			.budget = st->budget, .disk_limit = st->disk_limit,
			.output = tee_output, .output_ctx = &tee, .restart = tee_restart,
			.gate_py_dir = gate_staged ? gate_paths.py_dir : NULL,
			.gate_events = gate_staged ? gate_paths.events : NULL,
			.gate_mode = (int)gate_mode,
			/* Behind a gate that refuses, in an interpreter that has one: the kernel's
			 * account of each exec, which code past the gate (ctypes) cannot hide. */
			.exec_guard = gate_staged && gate_mode == LB_GATE_ON && !refuse_preload &&
						      st->lang == LB_LANG_PYTHON &&
						      py_audit_hooks(st->py.version) == 1
					      ? (degraded_accepts(req, "gate") ? 2 : 1)
				      : lang_guard ? (degraded_accepts(req, "gate") ? 2 : 1)
					      : 0,
			.exec_listed = lang_guard ? lang_progs : NULL,
			.exec_shell = lang_guard ? "/bin/sh" : NULL,
			/* R and Octave have the static check and the sandbox, no runtime gate: a
			 * program or a shared object the run wrote is at least never run. */
			.noexec_writable = (st->lang == LB_LANG_R || st->lang == LB_LANG_OCTAVE) &&
					   req->policy != LB_CHECK_PERMISSIVE,
			.gate_policy = lb_check_policy_name((lb_check_policy)req->policy),
			.gate_unread_dirs = unread_dirs,
			.trust_project = req->trust_project,
		};
		env_protected = job.exec_guard && st->py.prefix[0] &&
				lb_path_under(st->py.prefix, st->exp_dir) &&
				strcmp(st->py.prefix, st->exp_dir) != 0;
		if (interrupted_during(&isig, &stopped_in, "runtime_gate")) {
			res.outcome = LB_SB_INTERRUPTED;
			res.interrupted = true;
			res.interrupt_signal = isig;
		} else if (refuse_preload) {
			res.outcome = LB_SB_SETUP_FAILED;
			snprintf(res.setup_step, sizeof res.setup_step, "runtime_gate");
			snprintf(res.setup_error, sizeof res.setup_error, "%s", refusal);
		} else if ((r = be->ops->prepare(be, &job, err, sizeof err)) < 0) {
			res.outcome = LB_SB_SETUP_FAILED;
			snprintf(res.setup_step, sizeof res.setup_step, "prepare");
			snprintf(res.setup_error, sizeof res.setup_error, "%s", err);
		} else if ((r = be->ops->run(be, &job, &res)) < 0) {
			res.outcome = LB_SB_SETUP_FAILED;
			snprintf(res.setup_step, sizeof res.setup_step, "supervise");
			snprintf(res.setup_error, sizeof res.setup_error, "%s", strerror(-r));
		} else if ((r = be->ops->fetch(be, &job, err, sizeof err)) < 0 &&
			   res.outcome != LB_SB_SETUP_FAILED) {
			/* The run happened, but what it left could not be brought back. */
			res.outcome = LB_SB_SETUP_FAILED;
			snprintf(res.setup_step, sizeof res.setup_step, "fetch");
			snprintf(res.setup_error, sizeof res.setup_error, "%s", err);
		}
		be->ops->cleanup(be);
		r = 0;
	}
	double ended = lb_time_now();
	lb_metrics_finish(metrics);
	/* The run's processes are gone: the gate's channel is read to its end, and a remote
	 * labbox's gate record is at hand. A main program that ended with an uncaught exception
	 * (the gate's record of it) did not complete, whatever made its exit status 0 afterwards
	 * (os._exit(0) in an atexit handler, a sys.excepthook of its own that swallows it): the
	 * run fails, and is diagnosed from its traceback (docs/result-json.md, "Failure"). */
	lb_gate_channel_stop(&gate_ch);
	json_object *remote_gate =
		gate_by_backend && be->ops->gate_record ? be->ops->gate_record(be) : NULL;
	json_object *uncaught = NULL; /* runtime_gate.uncaught */
	if (remote_gate && json_object_object_get_ex(remote_gate, "uncaught", &uncaught) &&
	    json_object_is_type(uncaught, json_type_object))
		json_object_get(uncaught);
	else if (!remote_gate && gate_staged && gate_ch.buf)
		uncaught = lb_gate_uncaught_record(lb_gate_uncaught(gate_ch.kept));
	else
		uncaught = NULL;
	bool exited_ok = res.outcome == LB_SB_EXITED && res.exit_code == 0;
	bool uncaught_exit0 = exited_ok && uncaught && !rejected;
	bool completed = exited_ok && !uncaught_exit0;

	/* Collect: stdout metrics and every results file, whatever state the run ended in. */
	json_object *stale = NULL;
	json_object *issues = json_object_new_array();
	json_object *warnings = json_object_new_array();
	json_object *files_read = json_object_new_object(); /* as parsed: never serialised */
	char out_dir_abs[256] = "";
	if (st->exp_dir && !rejected) {
		LB_AUTOCLOSE int efd = open(st->exp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (efd >= 0) {
			/* No --out_dir given: the one the entry point declares as its default. */
			const char *hint = lb_results_out_dir_hint(st->args, st->nargs);
			char dflt[256];
			LB_AUTOFREE char *src = NULL;
			size_t slen = 0;
			if (!hint && lb_read_file_at(efd, st->entry, (size_t)1 << 20, &src, &slen) == 0 &&
			    lb_results_out_dir_default(src, slen, dflt, sizeof dflt) == 0)
				hint = dflt;
			if (hint && hint[0] == '/')
				snprintf(out_dir_abs, sizeof out_dir_abs, "%s", hint);
			lb_results_collect(efd, (const char *const *)st->cfg.results, st->cfg.nresults,
					   hint, files_read, issues);
			stale = drop_stale(efd, files_read, files, staged_ids, warnings);
		}
	}
	json_object_put(staged_ids);
	/* R and Octave write a missing number as NA, in a results file too: a NaN to flag, where
	 * the file shows it stands for a number (lb_results_read_na; Python's "NA" is a label).
	 * Out of memory, the NAs not yet read stay labels, as before this rule. */
	if (st->lang == LB_LANG_R || st->lang == LB_LANG_OCTAVE)
		(void)lb_results_read_na(files_read, st->declared, st->ndeclared);
	/* A run that printed only progress lines and wrote no results file (any file read is
	 * the run's own account, values or not: {"error": ...}): its last progress line is what
	 * it has to show (docs/decisions.md); lb_metrics_use_progress decides. */
	if (!rejected && !st->cfg.metrics_none && json_object_object_length(files_read) == 0)
		lb_metrics_use_progress(metrics, completed);
	json_object *mjson = lb_metrics_to_json(metrics);
	if (stale && json_object_array_length(stale))
		json_object_object_add(mjson, "stale_results", stale);
	else
		json_object_put(stale);
	json_object_object_add(mjson, "files", lb_results_for_record(files_read, warnings));
	if (!rejected) {
		lb_metrics_run_info vi = {
			.files = files_read,
			.declared = st->declared,
			.n_declared = st->ndeclared,
			.wall_s = res.wall_s,
			.budget_s = st->budget,
			.completed = completed,
			.none_expected = st->cfg.metrics_none,
			.out_dir_outside = out_dir_abs[0] ? out_dir_abs : NULL,
		};
		lb_metrics_validate_run(metrics, &vi, issues, warnings);
	}

	not_the_disk(&res, log);
	int exit_code = LB_EXIT_OK;
	const char *status = status_of(&res, json_object_array_length(issues), &exit_code);
	if (rejected) {
		status = "rejected";
		exit_code = LB_EXIT_REJECTED;
	}
	/* What ended the run otherwise (a timeout, an OOM) stays the verdict. */
	/* Octave's missing-function hook formats its message with makeinfo, a perl script: the
	 * guard's kill of that is Octave's own help going unformatted, not a program the
	 * experiment started, and the error Octave raised stays the verdict (decisions.md). */
	bool help_only = st->lang == LB_LANG_OCTAVE && res.exec_refused &&
			 res.exec_refused <= LB_SB_MAX_EXEC_REFUSALS;
	for (unsigned i = 0; help_only && i < res.exec_refused; i++)
		help_only = lb_octave_help_formatter(res.exec_refusals[i].argv);
	bool exec_refused = res.exec_refused && !help_only && !rejected && !res.oom_killed &&
			    (res.outcome == LB_SB_EXITED || res.outcome == LB_SB_SIGNALED);
	if (exec_refused || uncaught_exit0) {
		status = "failed";
		exit_code = LB_EXIT_FAILED;
	}
	bool partial = res.outcome == LB_SB_TIMEOUT || res.outcome == LB_SB_INTERRUPTED ||
		       res.outcome == LB_SB_DISK_LIMIT ||
		       res.outcome == LB_SB_SIGNALED ||
		       (res.outcome == LB_SB_EXITED && res.exit_code != 0) || uncaught_exit0;
	partial = partial && (lb_metrics_count(metrics) > 0 || json_object_object_length(files_read) > 0);
	/* The experiment itself says it stopped early and saved what it had. */
	if (lb_metrics_time_guard_fired(metrics) && res.outcome != LB_SB_SETUP_FAILED)
		partial = true;

	/* The log of a run stopped before it started says so, rather than nothing at all. */
	if (log && stopped_in && res.outcome == LB_SB_INTERRUPTED) {
		char line[200];
		int n = snprintf(line, sizeof line, "labbox: interrupted by %s %s; the experiment "
				 "was not started\n", strsignal(res.interrupt_signal),
				 step_words(stopped_in));
		if (n > 0)
			lb_runlog_write(log, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	if (log)
		lb_runlog_end_streams(log); /* the diagnosis reads the unfinished last lines too */
	uint64_t seen = 0, written = 0;
	bool truncated = false;
	size_t tail_len = 0;
	LB_AUTOFREE char *tail =
		log ? lb_runlog_tail_n(log, res.outcome == LB_SB_TIMEOUT ? TAIL_FOR_TIMEOUT : TAIL_FOR_DIAGNOSIS,
				       &tail_len)
		    : NULL;
	int log_err = log ? lb_runlog_close_nosync(log, &seen, &written, &truncated) : 0;

	/* each stream's own last words (see last_line) */
	json_object *last_lines = json_object_new_object(), *lo = NULL, *le = NULL;
	json_object_object_add(last_lines, "stdout", lo = last_line_json(&lasts[0]));
	json_object_object_add(last_lines, "stderr", le = last_line_json(&lasts[1]));
	lb_failure_input fin = {
		.stdout_last = lo ? json_object_get_string(lo) : NULL,
		.stderr_last = le ? json_object_get_string(le) : NULL,
		.log_tail = tail,
		.log_tail_len = tail_len,
		.exit_code = res.outcome == LB_SB_EXITED ? res.exit_code : -1,
		.signal = res.term_signal,
		.timed_out = res.outcome == LB_SB_TIMEOUT,
		.oom_killed = res.oom_killed,
		.oom_counted = res.oom_counted,
		.infra_error = res.outcome == LB_SB_SETUP_FAILED,
		.infra_message = res.setup_error,
		.language = st->lang == LB_LANG_PYTHON ? NULL : lb_lang_name(st->lang),
		.full_tmpfs = res.nfull_tmpfs ? res.full_tmpfs[0].path : NULL,
		.full_tmpfs_bytes = res.nfull_tmpfs ? res.full_tmpfs[0].size_bytes : 0,
		.after_run = res.outcome == LB_SB_SETUP_FAILED &&
			     (strcmp(res.setup_step, "disk_merge") == 0 ||
			      strcmp(res.setup_step, "fetch") == 0),
	};
	/* The gate's record before the diagnosis: a refusal is the verdict only when the gate
	 * recorded it, not when the output merely says so. */
	if (gate_by_backend)
		be->ops->gate_note(be, gate_note, sizeof gate_note);
	/* A gate that was staged, whose channel was read, and that never said it was in: the
	 * experiment's code ran without it, so an exit 0 is no completed run (decisions.md,
	 * "A run whose gate never reported in"). A failing run keeps its own diagnosis. */
	bool gate_missing = !rejected && !exec_refused && gate_staged && gate_mode != LB_GATE_OFF &&
			    st->lang == LB_LANG_PYTHON && py_audit_hooks(st->py.version) == 1 &&
			    !gate_by_backend && gate_ch.buf && !lb_gate_heard(gate_ch.buf, gate_ch.len) &&
			    res.outcome == LB_SB_EXITED && res.exit_code == 0;
	if (gate_missing) {
		status = "failed";
		exit_code = LB_EXIT_FAILED;
	}
	json_object *rgate = lb_gate_collect(gate_staged ? &gate_ch : NULL, gate_mode,
					     lb_check_policy_name((lb_check_policy)req->policy),
					     sandbox_network(req->sandbox_config), findings,
					     gate_note[0] ? gate_note
					     : gate_mode == LB_GATE_OFF ? "turned off (--runtime-gate off)"
					     : rejected || !gate_staged ? "the experiment did not run"
									: NULL);
	if (gate_staged)
		lb_gate_note_preload(rgate, gate_preload);
	add_exec_refusals(rgate, &res);
	fin.exp_dir = st->exp_dir;
	/* A remote labbox's gate recorded its own refusals: the diagnosis reads that record. */
	fin.runtime_gate = remote_gate ? remote_gate : rgate;
	/* Also when it exited non-zero: its traceback may not be the output's last one, or not
	 * in it at all (an atexit handler raised another, a sys.excepthook swallowed it). */
	fin.uncaught = !rejected && res.outcome == LB_SB_EXITED ? uncaught : NULL;
	lb_diagnose_grants(&fin, req->sandbox_config);
	/* The volumes' sources are this host's, and the root this host's own, only for a local
	 * run: elsewhere neither is stat'ed from here. */
	if (!st->remote) {
		fin.payload_other_uid = uid != getuid();
		fin.payload_uid = (unsigned)uid;
		fin.payload_gid = (unsigned)gid;
		fin.host_root = true;
	}
	/* The message makeinfo would have formatted names the package; this host's Octave
	 * lists which function is whose (a remote run's Octave is not this one). */
	char unimpl[PATH_MAX];
	fin.octave_help_killed = help_only;
	if (help_only && !st->remote && st->py.prefix[0] && st->py.version[0] &&
	    snprintf(unimpl, sizeof unimpl, "%s/share/octave/%s/m/help/__unimplemented__.m",
		     st->py.prefix, st->py.version) < (int)sizeof unimpl)
		fin.octave_unimplemented = unimpl;
	fin.wall_s = res.wall_s;
	fin.cpu_s = res.cpu_user_s + res.cpu_sys_s;
	/* A backend that does not measure it reports 0: no process runs on no CPU at all. */
	fin.cpu_known = !st->remote && res.wall_s > 0 && fin.cpu_s > 0;
	/* The machine it ran on (the manifest's machine block is this one's): elsewhere labbox
	 * does not know it here. */
	if (!st->remote) {
		long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
		if (pages > 0 && page > 0)
			fin.machine_memory = (unsigned long long)pages * (unsigned long long)page;
		fin.machine_without_gpus = lb_sandbox_host_gpu_count() == 0;
	}
	json_object *failure = NULL;
	if (res.outcome == LB_SB_INTERRUPTED) {
		char sum[200];
		if (stopped_in)
			snprintf(sum, sizeof sum, "labbox received %s %s, before the experiment "
				 "started; nothing was executed", strsignal(res.interrupt_signal),
				 step_words(stopped_in));
		else
			snprintf(sum, sizeof sum, "labbox received %s and ended the run",
				 strsignal(res.interrupt_signal));
		failure = simple_failure("interrupted", sum, "run it again when it can finish");
	} else if (res.outcome == LB_SB_DISK_LIMIT) {
		char sum[400];
		snprintf(sum, sizeof sum,
			 "the experiment passed, or tried to pass, the disk limit of %llu bytes in exp/%s%s%s",
			 (unsigned long long)st->disk_limit, res.disk_detail[0] ? " (" : "",
			 res.disk_detail, res.disk_detail[0] ? ")" : "");
		failure = simple_failure("sandbox_restriction", sum,
					 "write less (checkpoints, logs), or raise --disk-limit");
	} else if (exec_refused) {
		failure = exec_refusal_failure(&res, st->lang);
	} else if (gate_missing) {
		failure = simple_failure(
			"gate_missing",
			"the runtime gate never started in the interpreter: the experiment's code ran "
			"without it, so nothing it did was checked or recorded, and its results are "
			"not trusted",
			"the gate loads through the interpreter's site module: run the entry as a "
			"script, without options that skip site (-S, -I) or replace it, or say "
			"--runtime-gate off to run without the gate knowingly");
	} else if (!rejected) {
		failure = lb_diagnose_failure(&fin);
		if (env_protected)
			protected_env_refusal(failure, st->py.prefix);
		earlier_output(failure, index, st->expdir, out->id);
	}

	json_object_object_add(doc, "status", json_object_new_string(status));
	/* A tree found past --disk-limit by the last measurement may have exited by itself
	 * (its write refused, the error caught): its code is how it ended. */
	bool exited = res.outcome == LB_SB_EXITED ||
		      (res.outcome == LB_SB_DISK_LIMIT && !res.term_signal);
	json_object_object_add(doc, "exit_code", exited ? json_object_new_int(res.exit_code) : NULL);
	json_object_object_add(doc, "signal",
			       res.term_signal ? json_object_new_int(res.term_signal) : NULL);
	json_object_object_add(doc, "timed_out", json_object_new_boolean(res.outcome == LB_SB_TIMEOUT));
	json_object_object_add(doc, "oom_killed", json_object_new_boolean(res.oom_killed));
	json_object_object_add(doc, "oom_counted", json_object_new_boolean(res.oom_counted));
	json_object_object_add(doc, "partial", json_object_new_boolean(partial));
	json_object_object_add(doc, "last_lines", last_lines);
	json_object_object_add(doc, "labbox_exit_code", json_object_new_int(exit_code));
	/* Which step the interruption stopped: "run" once the experiment had started. */
	if (res.outcome == LB_SB_INTERRUPTED)
		json_object_object_add(doc, "interrupted_in",
				       json_object_new_string(stopped_in ? stopped_in : "run"));
	add_time(doc, "ended_at", ended);
	json_object_object_add(doc, "budget_s", st->budget > 0 ? lb_record_fixed(st->budget, 3) : NULL);
	json_object_object_add(doc, "resources", lb_record_resources_json(&res));
	json_object_object_add(doc, "metrics", mjson);
	json_object_object_add(doc, "metric_issues", issues);
	json_object_object_add(doc, "metric_warnings", warnings);
	json_object_object_add(doc, "findings", findings);
	if (st->env_doc)
		json_object_object_add(doc, "environment", json_object_get(st->env_doc));
	json_object_object_add(doc, "failure", failure);
	json_object_object_add(doc, "runtime_gate", rgate);
	timeout_after_refusal(failure, rgate);
	json_object_put(gate_preload);
	json_object_put(remote_gate);
	json_object_put(uncaught);
	json_object_object_add(doc, "backend", be->ops->describe(be));
	json_object *dwarn = json_object_new_array();
	char log_path[PATH_MAX + 16];
	snprintf(log_path, sizeof log_path, "%s/run.log", out->run_dir);
	lb_diagnosis_input din = {.log_path = log_path, .metrics = mjson, .exp_dir = st->exp_dir,
				  .entry = st->entry, .args = st->args, .nargs = st->nargs,
				  .oom_kill_completed = res.oom_killed && completed,
				  .runtime_gate = json_object_object_get(doc, "runtime_gate"),
				  .failure_class = failure_class_of(failure),
				  .stdout_last = fin.stdout_last, .stderr_last = fin.stderr_last};
	if (!rejected && res.outcome != LB_SB_SETUP_FAILED)
		lb_diagnose_warnings(&din, dwarn);
	json_object_object_add(doc, "diagnosis_warnings", dwarn);
	json_object_object_add(doc, "isolation", isolation_json(be, &res));
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
	/* A write that failed (a full disk) lost what came after it as surely as the cap does */
	json_object_object_add(logj, "truncated", json_object_new_boolean(truncated || log_err < 0));
	if (log_err < 0) {
		char why[160];
		snprintf(why, sizeof why, "run.log could not be written past %llu of %llu bytes: %s",
			 (unsigned long long)written, (unsigned long long)seen, strerror(-log_err));
		json_object_object_add(logj, "error", json_object_new_string(why));
	}
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
	json_object_object_add(cfg, "mode", json_object_new_string(be->ops->name));
	if (st->remote) {
		json_object *bd = be->ops->describe(be), *bv;
		/* A built image is recorded by its base, so rerun builds it again from the staged
		 * requirements.txt (the same recipe reuses the same tag); a named one by name. */
		json_object *origin = NULL, *build = NULL;
		json_object_object_get_ex(bd, "image_origin", &origin);
		bool built = json_object_object_get_ex(bd, "build", &build) && build;
		json_object_object_add(cfg, "image",
				       !built && json_object_object_get_ex(bd, "image", &bv) ? json_object_get(bv) : NULL);
		json_object_object_add(cfg, "base_image",
				       built && json_object_object_get_ex(build, "base_image", &bv) ? json_object_get(bv) : NULL);
		json_object_object_add(cfg, "image_built",
				       built && json_object_object_get_ex(bd, "image", &bv) ? json_object_get(bv) : NULL);
		json_object_object_add(cfg, "engine_asked",
				       req->engine ? json_object_new_string(req->engine) : NULL);
		if (strcmp(be->ops->name, "ssh") == 0) {
			/* What rerun needs to go to the same host the same way. */
			json_object_object_add(cfg, "host", json_object_object_get_ex(bd, "host", &bv)
								    ? json_object_get(bv) : NULL);
			json_object_object_add(cfg, "remote_labbox_asked",
					       req->remote_labbox ? json_object_new_string(req->remote_labbox)
								  : NULL);
			json_object_object_add(cfg, "install_remote",
					       json_object_new_boolean(req->install_remote));
			json_object_object_add(cfg, "python_remote",
					       req->python ? json_object_new_string(req->python) : NULL);
		}
		json_object *pyj;
		json_object_object_add(cfg, "python_in_image",
				       json_object_object_get_ex(bd, "interpreter", &pyj) &&
						       json_object_object_get_ex(pyj, "path", &bv)
					       ? json_object_get(bv) : NULL);
		/* What `labbox rerun` needs to submit the same job again. */
		if (strcmp(be->ops->name, "slurm") == 0) {
			json_object *sl = json_object_new_object();
			json_object_object_add(sl, "partition", req->partition ? json_object_new_string(req->partition) : NULL);
			json_object_object_add(sl, "account", req->account ? json_object_new_string(req->account) : NULL);
			json_object_object_add(sl, "qos", req->qos ? json_object_new_string(req->qos) : NULL);
			json_object_object_add(cfg, "slurm", sl);
		}
		/* mode colab: the folder and labbox's own waiting, so rerun waits alike. */
		static const char *const ck[] = {"drive", "poll_s", "timeout_s", "stale_s"};
		static const char *const cn[] = {"drive", "colab_poll_s", "colab_timeout_s",
						 "colab_stale_s"};
		for (size_t i = 0; strcmp(be->ops->name, "colab") == 0 && i < 4; i++)
			if (json_object_object_get_ex(bd, ck[i], &bv))
				json_object_object_add(cfg, cn[i], json_object_get(bv));
		json_object_put(bd);
	}
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
	/* As asked (default when not given), so rerun asks the same; runtime_gate in result.json
	 * says what the run had. */
	json_object_object_add(cfg, "runtime_gate",
			       json_object_new_string(lb_gate_mode_name((lb_gate_mode)req->runtime_gate)));
	json_object_object_add(cfg, "disk_limit_bytes", json_object_new_int64((int64_t)st->disk_limit));
	json_object_object_add(cfg, "log_limit_bytes",
			       json_object_new_int64((int64_t)(req->log_limit ? req->log_limit : DEFAULT_LOG_LIMIT)));
	json_object *envj = json_object_new_object();
	json_object_object_add(envj, "PYTHONHASHSEED",
			       json_object_new_string(st->hashseed ? st->hashseed : PYTHONHASHSEED));
	json_object_object_add(envj, "PYTHONUNBUFFERED", json_object_new_string("1"));
	json_object_object_add(envj, "PYTHONDONTWRITEBYTECODE", json_object_new_string("1"));
	json_object_object_add(cfg, "environment", envj);
	if (req->sandbox_config)
		json_object_object_add(cfg, "sandbox", json_object_get(req->sandbox_config));
	json_object_object_add(manifest, "config", cfg);
	if (req->rerun_of)
		json_object_object_add(manifest, "rerun_of", json_object_new_string(req->rerun_of));
	if (req->sweep)
		json_object_object_add(manifest, "sweep", json_object_get(req->sweep));
	json_object *interp = json_object_new_object();
	json_object_object_add(interp, "path", json_object_new_string(st->py.executable));
	json_object_object_add(interp, "version", json_object_new_string(st->py.version));
	json_object_object_add(interp, "from_cache", json_object_new_boolean(st->probe_cached));
	bool py = st->lang == LB_LANG_PYTHON;
	json_object_object_add(interp, "named_by",
			       json_object_new_string(st->env_doc ? "env"
						      : (py ? req->python : req->interpreter) ? "command line"
						      : (py ? st->cfg.python : st->cfg.interpreter)
							      ? "labbox.yaml"
							      : "default"));
	/* Chosen by --env (or env:): a rerun chooses again, as asked, rather than running a path
	 * that may be the experiment's own interpreter on the host. */
	if (st->env_doc) {
		/* A path as typed was relative to where labbox ran: kept absolute. */
		json_object *ch = json_object_object_get(st->env_doc, "chosen");
		const char *p = json_object_get_string(json_object_object_get(ch, "path"));
		json_object_object_add(interp, "env_asked",
				       json_object_new_string(!req->env ? "auto"
							      : strchr(req->env, '/') && p ? p : req->env));
	}
	json_object_object_add(interp, "probed_in_sandbox", json_object_new_boolean(st->py.confined));
	/* Elsewhere this is the local python3 of the static check; the backend block says what
	 * ran the code. */
	json_object_object_add(interp, "role",
			       json_object_new_string(st->remote ? "static check (compile()) only; "
								   "the code ran in the backend's "
								   "interpreter (result.json backend)"
								 : "ran the code"));
	json_object_object_add(interp, "implementation", json_object_new_string(st->py.implementation));
	json_object_object_add(interp, "language", json_object_new_string(lb_lang_name(st->lang)));
	json_object_object_add(interp, "prefix", json_object_new_string(st->py.prefix));
	json_object_object_add(interp, "base_prefix", json_object_new_string(st->py.base_prefix));
	json_object_object_add(manifest, "interpreter", interp);
	json_object_object_add(manifest, "machine", lb_record_machine_json());
	json_object *git = NULL, *git_diff = NULL;
	lb_record_git_collect(&st->git, &git, &git_diff);
	json_object_object_add(manifest, "git_diff", git_diff);
	/* The child has had the whole run; a large data set still hashing gets a little more
	 * (it was started with the run, so a run as long as the hashing waits for nothing). */
	json_object *data = NULL;
	lb_record_data_collect(&st->data, DATA_FINGERPRINT_WAIT_S, &data);
	json_object_object_add(manifest, "data", data);
	json_object_object_add(manifest, "git", git);
	json_object_object_add(manifest, "files", files);
	json_object_object_add(manifest, "skipped_files", skipped);
	if (left_out)
		json_object_object_add(manifest, "left_out_files", left_out);
	json_object_object_add(manifest, "symlinks",
			       st->exp_dir && stage_r == 0 ? symlinks_json(st->exp_dir, files)
							   : json_object_new_object());
	json_object_object_add(manifest, "isolation", isolation_json(be, &res));
	snprintf(path, sizeof path, "%s/manifest.json", out->run_dir);
	/* run.log first: its loss came first (the output filled the disk), and the verdict names
	 * the first record that could not be written */
	char logpath[PATH_MAX];
	snprintf(logpath, sizeof logpath, "%s/run.log", out->run_dir);
	if (log_err < 0)
		record_failed(doc, &exit_code, logpath, log_err);
	/* Under manifest.json's seal: this record's result.json is sealed too (result_mac), so
	 * deleting that seal does not pass the record off as an older labbox's. */
	json_object_object_add(manifest, "result_sealed", json_object_new_boolean(true));
	int wr = lb_record_write_json_nosync(path, manifest);
	json_object_put(manifest);
	if (wr < 0)
		record_failed(doc, &exit_code, path, wr);
	/* The seal `labbox rerun` checks before it repeats what the manifest grants. */
	char mac[65];
	json_object_object_add(doc, "manifest_mac",
			       wr == 0 && lb_record_mac_file(out->run_dir, "manifest.json", mac) == 0
				       ? json_object_new_string(mac) : NULL);
	snprintf(path, sizeof path, "%s/result.json", out->run_dir);
	wr = sync_records(out->run_dir, doc, &exit_code, log_r == 0 && log_err == 0, env_r == 0,
			  wr == 0);
	if (wr < 0) {
		/* The "running" record must not outlive the run: without a verdict on disk the
		 * directory has no result.json at all, and the caller gets the document. */
		unlink(path);
		record_failed(doc, &exit_code, path, wr);
		seal_result(doc);
		if (lb_record_write_json(path, doc) < 0)
			unlink(path);
	}
	if (index) {
		if (lb_index_run_finished(index, doc) < 0) {
			/* The index keeps the row it had ("running", then "interrupted" once
			 * this labbox is gone): result.json says so, not only the terminal (a
			 * sweep's cells have none), and `runs` marks the row as differing from
			 * the record. */
			static const char msg[] = "could not record the end of the run in the run "
						  "index (locked by another process past the wait, or "
						  "no space left): its row there still says the run "
						  "started; result.json is the record";
			json_object *info = json_object_object_get(doc, "index");
			if (info && json_object_is_type(info, json_type_object)) {
				json_object_object_add(info, "error", json_object_new_string(msg));
				seal_result(doc);
				if (lb_record_write_json(path, doc) < 0 && req->warn)
					req->warn(req->warn_ctx, "could not write result.json again "
						  "with the run index's error");
			}
			if (req->warn)
				req->warn(req->warn_ctx, msg);
		}
		lb_index_close(index);
	}
	/* Last, once every record is written: removing it first would free the space a full
	 * disk needs to refuse them (the records' verdict must not depend on the gate). */
	if (gate_staged)
		lb_gate_cleanup(&gate_paths);
	lb_gate_channel_free(&gate_ch);
	json_object_put(files_read);
	lb_metrics_free(metrics);
	free(argv);
	out->exit_code = exit_code;
	return r;
}

int lb_run(lb_sandbox *sb, const lb_run_request *req, lb_run_result *out)
{
	lb_backend *be = NULL;
	int r = lb_backend_local(sb, &be);
	if (r < 0)
		return r;
	r = lb_run_on(be, req, out);
	lb_backend_free(be);
	return r;
}

/* Mode ssh: the host from --host or labbox.yaml's host:; --allow-degraded isolation (in the
 * shared flags) accepts a host without labbox. */
static int run_ssh(const lb_run_request *req, const lb_exp_config *cfg, lb_run_result *out)
{
	const char *host = req->host ? req->host : cfg ? cfg->host : NULL;
	if (!host) {
		memset(out, 0, sizeof *out);
		usage_error(out, "mode ssh needs a host: --host NAME or host: in labbox.yaml");
		return 0;
	}
	bool degraded = degraded_accepts(req, "isolation");
	lb_ssh_config sc = {.host = host, .remote_labbox = req->remote_labbox,
			    .install_remote = req->install_remote, .allow_degraded = degraded,
			    .python = req->python,
			    .sandbox = req->sandbox_config, .grace = req->grace};
	lb_backend *be = NULL;
	int r = lb_backend_ssh(&sc, &be);
	if (r == -EINVAL) {
		memset(out, 0, sizeof *out);
		usage_error(out, "%s '%s' is not a host name ssh and rsync can be given (no "
			    "leading '-', no white space, quotes, ':' or '/')",
			    req->host ? "--host" : "labbox.yaml's host:", host);
		return 0;
	}
	if (r < 0)
		return r;
	lb_run_request sreq = *req;
	sreq.mode = "ssh";
	r = lb_run_on(be, &sreq, out);
	lb_backend_free(be);
	return r;
}

/* Mode slurm: the job's settings from the request, else labbox.yaml's slurm: block; its
 * memory, cpus and gpus stand in for the flags' when those are not given, so the job asks for
 * them and the node's sandbox enforces them. */
static int run_slurm(const lb_run_request *req, const lb_exp_config *cfg, lb_run_result *out)
{
	json_object *sbj = req->sandbox_config ? json_object_get(req->sandbox_config)
					       : json_object_new_object();
	json_object *v;
	if (cfg && cfg->slurm_memory && !(json_object_object_get_ex(sbj, "memory_bytes", &v) && v))
		json_object_object_add(sbj, "memory_bytes", json_object_new_int64((int64_t)cfg->slurm_memory));
	if (cfg && cfg->slurm_cpus > 0 && !(json_object_object_get_ex(sbj, "cpus", &v) && v))
		json_object_object_add(sbj, "cpus", json_object_new_double(cfg->slurm_cpus));
	const char *g = json_object_object_get_ex(sbj, "gpus", &v) && v ? json_object_get_string(v) : NULL;
	if (cfg && cfg->slurm_gpus && (!g || strcmp(g, "none") == 0)) {
		/* N GPUs as the list --gpus would give for N of them. */
		char list[4096] = "";
		size_t n = 0;
		for (unsigned i = 0; i < cfg->slurm_gpus && n + 8 < sizeof list; i++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%u", i ? "," : "", i);
		json_object_object_add(sbj, "gpus", json_object_new_string(list));
	}
	lb_slurm_config sc = {
		.partition = req->partition ? req->partition : cfg ? cfg->slurm_partition : NULL,
		.account = req->account ? req->account : cfg ? cfg->slurm_account : NULL,
		.qos = req->qos ? req->qos : cfg ? cfg->slurm_qos : NULL,
		.python = req->python ? req->python : cfg ? cfg->python : NULL,
		.sandbox = sbj, .grace = req->grace, .policy = req->policy,
		.trust_project = req->trust_project, .log_limit = req->log_limit,
		.progress = req->progress, .progress_ctx = req->progress_ctx,
	};
	lb_backend *be = NULL;
	int r = lb_backend_slurm(&sc, &be);
	json_object_put(sbj);
	if (r == -EINVAL) {
		memset(out, 0, sizeof *out);
		return usage_error(out, "mode slurm: a partition, account or qos name must be one word "
				   "without spaces, '%%' or a leading '-'");
	}
	if (r < 0)
		return r;
	lb_run_request sreq = *req;
	sreq.mode = "slurm";
	/* What the job was given, so that rerun submits the same. */
	sreq.partition = sc.partition;
	sreq.account = sc.account;
	sreq.qos = sc.qos;
	r = lb_run_on(be, &sreq, out);
	lb_backend_free(be);
	return r;
}

/* Mode colab: the Drive folder from --drive (never labbox.yaml), the flags a Colab run cannot honour
 * refused (exit 2) rather than dropped, and the pipeline on the colab backend. */
static int run_colab(const lb_run_request *req, const lb_exp_config *cfg, lb_run_result *out)
{
	const char *drive = req->drive;
	if (!drive || !*drive) {
		memset(out, 0, sizeof *out);
		return usage_error(out, "mode colab needs the synced Google Drive folder: --drive DIR");
	}
	char err[512];
	if (lb_colab_check_flags(req->sandbox_config, err, sizeof err) < 0) {
		memset(out, 0, sizeof *out);
		return usage_error(out, "%s", err);
	}
	/* The declared metrics as the pipeline will merge them, for the job file. */
	const char **m = calloc((cfg ? cfg->nmetrics : 0) + req->nmetrics + 1, sizeof *m);
	if (!m)
		return -ENOMEM;
	size_t nm = 0;
	for (size_t i = 0; cfg && i < cfg->nmetrics; i++)
		m[nm++] = cfg->metrics[i];
	for (size_t i = 0; i < req->nmetrics; i++)
		m[nm++] = req->metrics[i];
	lb_colab_config cc = {.drive = drive, .poll = req->colab_poll,
			      .timeout = req->colab_timeout, .stale = req->colab_stale,
			      .grace = req->grace, .sandbox = req->sandbox_config,
			      .metrics = m, .nmetrics = nm};
	lb_backend *be = NULL;
	int r = lb_backend_colab(&cc, &be);
	free(m);
	if (r == -ENAMETOOLONG) {
		memset(out, 0, sizeof *out);
		return usage_error(out, "the Drive folder's path '%s' is too long", drive);
	}
	if (r < 0)
		return r;
	lb_run_request creq = *req;
	creq.mode = "colab";
	r = lb_run_on(be, &creq, out);
	lb_backend_free(be);
	return r;
}

bool lb_run_hashseed_valid(const char *v)
{
	if (strcmp(v, "random") == 0)
		return true;
	if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 10)
		return false;
	return strtoull(v, NULL, 10) <= 4294967295ULL;
}

int lb_run_mode(lb_sandbox *sb, const lb_run_request *req, lb_run_result *out)
{
	/* A PYTHONHASHSEED the user set is the run's, and recorded as such; one Python would
	 * refuse at start-up is refused here, before anything runs. */
	const char *hs = sb ? lb_sandbox_env_value(sb, "PYTHONHASHSEED") : NULL;
	lb_run_request with_seed;
	char hs_copy[16];
	if (hs) {
		if (!lb_run_hashseed_valid(hs)) {
			memset(out, 0, sizeof *out);
			usage_error(out, "PYTHONHASHSEED=%s: Python takes \"random\" or an integer "
				    "from 0 to 4294967295 (the run gets the value asked for)", hs);
			return 0;
		}
		/* A copy: the backend sets the job's PYTHONHASHSEED in the same sandbox, which
		 * replaces the string hs points to. */
		snprintf(hs_copy, sizeof hs_copy, "%s", hs);
		with_seed = *req;
		with_seed.hashseed = hs_copy;
		req = &with_seed;
	}
	/* The mode and image may come from labbox.yaml; a file that does not load is reported
	 * by the pipeline itself, on the local backend that never runs then. */
	lb_exp_config cfg;
	memset(&cfg, 0, sizeof cfg);
	char err[512];
	char expdir[PATH_MAX];
	bool loaded = req->expdir && realpath(req->expdir, expdir) &&
		      lb_config_load(expdir, &cfg, err, sizeof err) == 0;
	const char *mode = req->mode ? req->mode : loaded && cfg.mode ? cfg.mode : "local";
	int r;
	/* Another backend's settings on this run would be ignored: say so (a labbox.yaml that
	 * does not load leaves the mode unknown; the pipeline reports the file). */
	if ((req->mode || loaded) &&
	    lb_run_mode_flags_check(req, mode, "run", err, sizeof err) < 0) {
		memset(out, 0, sizeof *out);
		usage_error(out, "%s", err);
		lb_config_free(&cfg);
		return 0;
	}
	if (strcmp(mode, "ssh") == 0) {
		r = run_ssh(req, loaded ? &cfg : NULL, out);
		lb_config_free(&cfg);
		return r;
	}
	if (strcmp(mode, "slurm") == 0) {
		r = run_slurm(req, loaded ? &cfg : NULL, out);
		lb_config_free(&cfg);
		return r;
	}
	if (strcmp(mode, "colab") == 0) {
		r = run_colab(req, loaded ? &cfg : NULL, out);
		lb_config_free(&cfg);
		return r;
	}
	if (strcmp(mode, "docker") != 0) {
		r = lb_run(sb, req, out);
		lb_config_free(&cfg);
		return r;
	}
	/* No image named: the backend builds one from the base (docs/decisions.md). An image
	 * and a base together say two different things; the command line's image wins over
	 * labbox.yaml's base and the reverse, as flags win over the file. */
	const char *image = req->image ? req->image : req->base_image ? NULL : loaded ? cfg.image : NULL;
	const char *base = req->base_image ? req->base_image
			   : req->image	    ? NULL
			   : loaded	    ? cfg.base_image
					    : NULL;
	if (image && base) {
		memset(out, 0, sizeof *out);
		usage_error(out, "%s names the image to run and %s the base of one to build: give one "
			    "of them", req->image ? "--image" : "labbox.yaml's image:",
			    req->base_image ? "--base-image" : "labbox.yaml's base_image:");
		lb_config_free(&cfg);
		return 0;
	}
	/* Either name goes on the engine's command line: one that reads as an option (from an
	 * experiment's labbox.yaml: `image: --privileged`) must never reach it. */
	const char *bad = base && !lb_docker_image_name_ok(base)     ? base
			  : image && !lb_docker_image_name_ok(image) ? image
								     : NULL;
	if (bad) {
		memset(out, 0, sizeof *out);
		usage_error(out, "%s '%s' is not an image reference (letters, digits and ._-:/@+, "
			    "not starting with '-' nor a transport such as docker-archive:)",
			    bad == base ? (req->base_image ? "--base-image" : "labbox.yaml's base_image:")
					: (req->image ? "--image" : "labbox.yaml's image:"),
			    bad);
		lb_config_free(&cfg);
		return 0;
	}
	uid_t uid;
	gid_t gid;
	lb_sandbox_payload_ids(sb, &uid, &gid);
	lb_docker_config dc = {.engine = req->engine, .image = image, .base_image = base,
			       .python = req->python ? req->python : loaded ? cfg.python : NULL,
			       .sandbox = req->sandbox_config, .grace = req->grace,
			       .uid = uid, .gid = gid};
	lb_backend *be = NULL;
	r = lb_backend_docker(&dc, &be);
	lb_config_free(&cfg);
	if (r < 0)
		return r;
	lb_run_request dreq = *req;
	dreq.mode = "docker";
	r = lb_run_on(be, &dreq, out);
	lb_backend_free(be);
	return r;
}

/* The run's memory, pids and CPU limits and what it accepted less of, as the sandbox config
 * has them; the budget is added when resolve knows it. */
static void run_limits(const lb_run_request *req, run_state *st)
{
	json_object *j = req->sandbox_config, *v = NULL;
	if (!j)
		return;
	if (json_object_object_get_ex(j, "memory_bytes", &v) && v)
		st->limits.memory = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "pids_limit", &v) && v)
		st->limits.pids = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "cpus", &v) && v)
		st->limits.cpus = json_object_get_double(v);
	size_t n = 0;
	if (json_object_object_get_ex(j, "allow_degraded", &v) &&
	    json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v) &&
				   n < sizeof st->degraded / sizeof *st->degraded; i++) {
			const char *d = json_object_get_string(json_object_array_get_idx(v, i));
			if (d)
				st->degraded[n++] = d;
		}
	st->limits.degraded = st->degraded;
	st->limits.ndegraded = n;
}

int lb_run_on(lb_backend *be, const lb_run_request *req, lb_run_result *out)
{
	memset(out, 0, sizeof *out);
	run_state st;
	memset(&st, 0, sizeof st);
	st.backend_name = be->ops->name;
	st.hashseed = req->hashseed;
	st.state = lb_record_state_dir();
	run_limits(req, &st);
	int r = resolve(req, &st, out);
	/* Stopped while the experiment was resolved (its interpreter probed, its environment
	 * chosen): no run directory yet, and none is made; whatever resolve concluded from an
	 * interpreter that was stopped is not the answer. */
	int isig = lb_interrupt_pending();
	if (r == 0 && isig) {
		snprintf(out->error, sizeof out->error,
			 "interrupted by %s before the run started (while its interpreter and "
			 "configuration were looked at); nothing was executed or recorded",
			 strsignal(isig));
		out->exit_code = 128 + isig;
	}
	/* git's sandbox hides what the run's does: the runs directory and --hide's paths. */
	json_object *hj = NULL;
	size_t nh = req->sandbox_config &&
				json_object_object_get_ex(req->sandbox_config, "hide", &hj) &&
				json_object_is_type(hj, json_type_array)
			    ? json_object_array_length(hj)
			    : 0;
	LB_AUTOFREE const char **hide = nh ? calloc(nh, sizeof *hide) : NULL;
	size_t nhide = 0;
	for (size_t i = 0; hide && i < nh; i++) {
		const char *h = json_object_get_string(json_object_array_get_idx(hj, i));
		if (h)
			hide[nhide++] = h;
	}
	lb_record_git_view gview = {.runs_dir = req->runs_dir ? req->runs_dir : ".labbox/runs",
				    .hide = hide, .nhide = nhide, .limits = &st.limits,
				    .origin_untrusted = req->origin_untrusted};
	if (r == 0 && out->exit_code == 0 &&
	    lb_record_git_start(req->origin_expdir ? req->origin_expdir : st.expdir, &gview,
				(size_t)1 << 20, &st.git) < 0)
		st.git.pid = 0; /* the manifest then says no repository was seen */
	json_object *vols = NULL;
	/* Over ssh the volumes are the remote host's: the remote labbox fingerprints them (its
	 * manifest, kept under remote/). */
	if (r == 0 && out->exit_code == 0 && req->sandbox_config && strcmp(be->ops->name, "ssh") != 0 &&
	    json_object_object_get_ex(req->sandbox_config, "volumes", &vols) &&
	    lb_record_data_start(vols, &st.data) < 0)
		st.data.pid = 0; /* the manifest then says nothing was fingerprinted */
	if (r == 0 && out->exit_code == 0)
		r = run_pipeline(be, req, &st, out);
	json_object *dj = NULL;
	lb_record_data_collect(&st.data, 0, &dj);
	json_object_put(dj);
	json_object *gi = NULL, *gd = NULL;
	lb_record_git_collect(&st.git, &gi, &gd);
	json_object_put(gi);
	json_object_put(gd);
	lb_config_free(&st.cfg);
	free(st.declared);
	free(st.exp_dir);
	free(st.cache);
	free(st.state);
	json_object_put(st.env_doc);
	return r;
}

void lb_run_result_free(lb_run_result *out)
{
	free(out->run_dir);
	if (out->doc)
		json_object_put(out->doc);
	memset(out, 0, sizeof *out);
}
