/* labbox sweep: a grid of conditions x seeds, each cell one ordinary run of the pipeline, on
 * this machine's cores; the result is the sweep document (sweep.json beside the runs). */
#include "cli.h"
#include "sweep_int.h"
#include "labbox/check.h"
#include "labbox/config.h"
#include "labbox/gate.h"
#include "labbox/record.h"
#include "labbox/report.h"
#include "labbox/run.h"
#include "labbox/lang.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sweep_help[] =
	"usage: labbox sweep [OPTIONS] [--param NAME=V1,V2 ...] [--seeds 0-4|0,3,7] EXPDIR [-- ARGS]\n"
	"       labbox sweep --resume SWEEP_ID [--jobs N] [--json] [--runs-dir DIR]\n"
	"\n"
	"Run EXPDIR once per cell of a grid of conditions (every combination of the parameters'\n"
	"values) x seeds, each cell an ordinary labbox run (its own run directory, result.json and\n"
	"index row, tagged with the sweep), several at once on this machine's CPUs, and write\n"
	"sweep.json beside the runs (.labbox/sweeps/SWEEP_ID/): every cell's status and metrics,\n"
	"and per condition over its seeds n, mean, std, a 95% interval (Student t), min and max of\n"
	"every metric, the failed cells with their failure class, and conditions that report\n"
	"identical results. The grid comes from labbox.yaml's `sweep:` (parameters, seeds, args,\n"
	"env, iterations, budget) and the flags below. Each parameter reaches the experiment as\n"
	"`--NAME VALUE` and the seed as `--seed S`, unless `sweep: args:` gives a template such\n"
	"as \"--lr {lr} --seed {seed}\" (or `env:` one such as LR: \"{lr}\"). The same command\n"
	"again, or --resume, runs only the cells that did not finish.\n"
	"\n"
	"Options:\n"
	"  --param NAME=V1,V2   a parameter and its values (repeatable; replaces labbox.yaml's\n"
	"                       values of NAME)\n"
	"  --seeds SPEC         seeds: 0-4, 0,3,7 or 0-2,10 (replaces labbox.yaml's seeds:)\n"
	"  --args TEMPLATE      the argument template, e.g. \"--lr {lr} --seed {seed}\"\n"
	"  --jobs N             cells at once (default: the CPUs labbox may use divided by each\n"
	"                       cell's --cpus, else one CPU each); each cell is pinned to its\n"
	"                       share of the CPUs and its thread counts (OMP_NUM_THREADS...)\n"
	"                       match it; more than the CPUs allow is refused\n"
	"  --budget SECONDS     each cell's time budget, as for labbox run\n"
	"  --sweep-budget SECONDS  the whole sweep's: when it is spent, running cells end as\n"
	"                       interrupted and the rest wait for --resume (exit 124)\n"
	"  --ignore-budget-table  run a plan outside the seed's compute-budget table\n"
	"  --resume ID          run what did not finish of sweep ID (a unique prefix will do)\n"
	"  --cell N             with --resume: run cell N alone, here, as one task of a job array\n"
	"                       would; a later --resume counts it as done (found in the index)\n"
	"  --plan-only          write sweep.json (status planned) and run nothing\n"
	"  --retry-failed       also run again the cells that failed (else only interrupted,\n"
	"                       infra_error and never run cells are)\n"
	"  --accept-grants      with --resume: resume a sweep whose sweep.json this user's labbox\n"
	"                       did not write (or that changed since) although it grants more\n"
	"                       than the defaults (mounts, a network, another backend...); without\n"
	"                       it such a resume is refused, naming them\n"
	"  --mode slurm         the cells to run as one Slurm job array (one sbatch call,\n"
	"                       --array=0-N%JOBS), each task running the cell with labbox on\n"
	"                       its node (its sandbox there); waits with squeue; Ctrl-C\n"
	"                       cancels the array; --memory, --cpus, --gpus 0,1 and --budget\n"
	"                       become the job's --mem, --cpus-per-task, --gres and --time;\n"
	"                       with --plan-only, shows the batch script it would submit\n"
	"  --partition NAME, --account NAME, --qos NAME\n"
	"                       mode slurm: where the array goes (default: labbox.yaml's slurm:)\n"
	"  --python PATH, --entry FILE, --mode local|docker|slurm, --image NAME, --engine NAME,\n"
	"  --runs-dir DIR, --metrics A,B, --log-limit SIZE, --policy NAME, --trust-project,\n"
	"  --runtime-gate off|record|on, --env auto|NAME|PATH\n"
	"                       as for labbox run, for every cell (kept for --resume)\n"
	CLI_SANDBOX_HELP
	"\n"
	"Progress goes to stderr: a live line on a terminal (cells done, running, failed, time\n"
	"left), plain lines otherwise. --json prints only the sweep document on stdout.\n"
	"Exit status: 0 every cell completed, 1 some cell did not, 2 usage error (a bad grid, a\n"
	"plan outside the budget table), 124 the sweep budget ran out, 128+N interrupted by\n"
	"signal N, 125 the sandbox could not be set up (mode slurm: the cluster cannot be\n"
	"reached; nothing then runs here instead).\n";

enum { OPT_PYTHON = OPT_FIRST_PRIVATE, OPT_RUNS_DIR, OPT_POLICY, OPT_TRUST, OPT_ENTRY, OPT_MODE,
       OPT_JOBS, OPT_PARAM, OPT_SEEDS, OPT_ARGS, OPT_SWEEP_BUDGET, OPT_RESUME, OPT_RETRY,
       OPT_IGNORE_TABLE, OPT_ACCEPT_GRANTS, OPT_CELL, OPT_PLAN_ONLY, OPT_METRICS, OPT_LOG_LIMIT, OPT_IMAGE,
       OPT_ENGINE, OPT_PARTITION, OPT_ACCOUNT, OPT_QOS, OPT_RUNTIME_GATE, OPT_ENV_CHOICE };


void sweep_strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

int sweep_strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof **v);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

json_object *sweep_strv_json(char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

const char *sweep_jstr(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v &&
			       json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

double sweep_jnum(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_double(v) : 0;
}

json_object *sweep_load_json(const char *dir, const char *name)
{
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	LB_AUTOFREE char *text = NULL;
	if (lb_read_file_at(dfd, name, 256u << 20, &text, NULL) < 0)
		return NULL;
	return json_tokener_parse(text);
}

/* ---- progress ------------------------------------------------------------------------------ */

void sweep_fmt_duration(double s, char out[32])
{
	if (s < 0)
		snprintf(out, 32, "unknown");
	else if (s < 60)
		snprintf(out, 32, "%.1fs", s);
	else if (s < 3600)
		snprintf(out, 32, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(out, 32, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void sweep_live_line(sweep_ctx *c)
{
	if (!c->tty)
		return;
	char eta[32];
	sweep_fmt_duration(c->eta, eta);
	fprintf(stderr, "\r\033[Klabbox sweep %s: %zu/%zu done, %zu running, %zu failed, time left %s",
		c->id, c->done, c->ntodo, c->running, c->failed, eta);
	fflush(stderr);
}

void sweep_progress_line(sweep_ctx *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->tty)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "labbox sweep: %s\n", msg);
	sweep_live_line(c);
}

/* ---- the document -------------------------------------------------------------------------- */

/* The seal of the whole document (lb_record_sweep_seal): what --resume believes (the
 * invocation, the plan) and what report shows (the cells, the statistics), rewritten at
 * every write of sweep.json. */
static int doc_seal(json_object *doc, char hex[65])
{
	return lb_record_sweep_seal(doc, hex);
}

static json_object *build_doc(sweep_ctx *c, const char *status)
{
	json_object *info = json_object_new_object();
	json_object_object_add(info, "status", json_object_new_string(status));
	json_object_object_add(info, "sweep_dir", json_object_new_string(c->sweep_dir));
	json_object_object_add(info, "expdir", json_object_new_string(c->expdir));
	json_object_object_add(info, "started_at", json_object_new_string(c->started_at));
	char iso[40];
	lb_time_iso8601(lb_time_now(), iso);
	json_object_object_add(info, "updated_at", json_object_new_string(iso));
	json_object_object_add(info, "executor", json_object_new_string(c->slurm ? "slurm" : "local"));
	if (c->slurm_block)
		json_object_object_add(info, "slurm", json_object_get(c->slurm_block));
	json_object_object_add(info, "invocation", json_object_get(c->invocation));
	/* Each cell's earlier runs that did not complete, but for the one it records now. */
	for (size_t i = 0; c->attempts && i < json_object_array_length(c->cells); i++) {
		json_object *rec = json_object_array_get_idx(c->cells, i), *list;
		char key[32];
		snprintf(key, sizeof key, "%zu", i);
		if (!rec || !json_object_object_get_ex(c->attempts, key, &list))
			continue;
		const char *now = sweep_jstr(rec, "run_id");
		json_object *earlier = json_object_new_array();
		for (size_t k = 0; k < json_object_array_length(list); k++) {
			json_object *a = json_object_array_get_idx(list, k);
			if (!now || strcmp(sweep_jstr(a, "run_id"), now) != 0)
				json_object_array_add(earlier, json_object_get(a));
		}
		json_object_object_add(rec, "earlier_attempts", earlier);
	}
	json_object *doc = lb_sweep_document(&c->plan, c->id, c->cells, info);
	json_object_put(info);
	char seal[65];
	json_object_object_add(doc, "seal", doc_seal(doc, seal) == 0 ? json_object_new_string(seal) : NULL);
	return doc;
}

int sweep_write_doc(sweep_ctx *c, const char *status, json_object **keep)
{
	json_object *doc = build_doc(c, status);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/sweep.json", c->sweep_dir);
	int r = lb_record_write_json(path, doc);
	chmod(path, 0600);
	c->doc_written_at = lb_time_monotonic();
	c->doc_dirty = false;
	if (keep)
		*keep = doc;
	else
		json_object_put(doc);
	return r;
}

/* Each write is the whole document (every cell, every condition's statistics) and a sync: after
 * every cell, a sweep of n cells wrote n documents of n cells, and at 400 cells its own process
 * spent 19 s of CPU on them (and on the copy-on-write faults that writing its heap costs after
 * each cell's fork), a third of the sweep's wall time. Nothing is lost by writing less often:
 * --resume finds every finished cell through the index, where each run is recorded as it ends,
 * and the last document is written when the sweep ends, however it ends. */
#define SWEEP_DOC_INTERVAL 1.0

void sweep_note_progress(sweep_ctx *c)
{
	/* What is not written now is written at the next tick (once a second while cells run),
	 * not when the next cell ends, which may be hours later. */
	c->doc_dirty = true;
	if (lb_time_monotonic() - c->doc_written_at >= SWEEP_DOC_INTERVAL)
		sweep_write_doc(c, "running", NULL);
}

/* The sweep id of the experiment as it is now (lb_sweep_id): the code and the grid, and what
 * runs it with which fixed arguments. Limits (memory, budgets, jobs) are not in it: a finished
 * cell stays finished when they change. */
static void sweep_inputs_identity(const cli_sandbox_opts *o, lb_buf *b);

static int sweep_digest(const sweep_ctx *c, char id[LB_SWEEP_ID_LEN])
{
	lb_buf ba = {0};
	for (size_t i = 0; i < c->nbase; i++)
		lb_buf_printf(&ba, "%s\x1f", c->base_args[i]);
	/* --env chooses what runs it as --python does (the id of a sweep without it is
	 * as before). */
	char envpy[PATH_MAX + 64];
	snprintf(envpy, sizeof envpy, "%s --env %s",
		 c->python ? c->python : c->cfg->python ? c->cfg->python : "python3",
		 c->env_asked ? c->env_asked : "");
	const char *extra[] = {c->entry ? c->entry : c->cfg->entry ? c->cfg->entry : "main.py",
			       c->env_asked ? envpy
			       : c->python  ? c->python
			       : c->cfg->python ? c->cfg->python
					    : "python3",
			       c->mode ? c->mode : c->cfg->mode ? c->cfg->mode : "local",
			       ba.data ? ba.data : "",
			       c->image ? c->image : c->cfg->image ? c->cfg->image : "",
			       NULL};
	lb_buf inputs = {0};
	sweep_inputs_identity(&c->o, &inputs);
	size_t nextra = 5;
	if (inputs.data)
		extra[nextra++] = inputs.data;
	/* labbox's own records, when they live inside the experiment (--runs-dir exp/runs
	 * puts the index and the sweeps in exp/): they change with every run. */
	LB_AUTOFREE char *index_path = NULL, *sweeps = NULL;
	lb_index_path_for(c->runs_dir, &index_path);
	lb_sweep_dir_for(c->runs_dir, "", &sweeps);
	char wal[PATH_MAX], shm[PATH_MAX], journal[PATH_MAX];
	snprintf(wal, sizeof wal, "%s-wal", index_path ? index_path : "");
	snprintf(shm, sizeof shm, "%s-shm", index_path ? index_path : "");
	snprintf(journal, sizeof journal, "%s-journal", index_path ? index_path : "");
	if (sweeps && strlen(sweeps) > 1 && sweeps[strlen(sweeps) - 1] == '/')
		sweeps[strlen(sweeps) - 1] = '\0';
	const char *skip[] = {c->runs_dir, sweeps, index_path, wal, shm, journal};
	int r = lb_sweep_id(c->expdir, skip, 6, &c->plan, extra, nextra, id);
	lb_buf_free(&ba);
	lb_buf_free(&inputs);
	return r;
}

/* ---- one cell, in its child ---------------------------------------------------------------- */

typedef struct cell_echo {
	lb_sweep_estimate_scan scan;
	int fd;
	int store_fd; /* a Slurm task's estimates/N, or -1: estimates go to fd */
} cell_echo;

static void cell_output(void *ctx, lb_stream stream, const char *data, size_t len)
{
	(void)stream;
	cell_echo *e = ctx;
	double est = lb_sweep_estimate_feed(&e->scan, data, len);
	if (est >= 0 && e->store_fd >= 0)
		lb_sweep_estimate_store(e->store_fd, est);
	else if (est >= 0)
		lb_sweep_report_estimate(e->fd, est);
}

/* Without --disk-limit a cell's default is its share of what a lone run would get: cells
 * that start together each see the same free space, and each taking half of it would fill the
 * disk between them (and leave no room for the sweep's own records). */
static uint64_t sweep_cell_disk_limit(const sweep_ctx *c)
{
	return cli_disk_limit_shared(&c->o, c->runs_dir, c->disk_jobs);
}

static void cell_warn(void *ctx, const char *message)
{
	(void)ctx;
	(void)message; /* the run's result.json says it (index.error) */
}

/* The id was taken of the experiment when the sweep started, and each cell stages the live
 * directory: an edit (a git checkout) while the sweep runs would have the later cells run
 * other code under the same id, pooled with the earlier ones. Taken again just before
 * staging, a mismatch refuses the cell as a usage error, which also stops the sweep starting
 * more. false (reported on report_fd): not the sweep's code. */
static bool cell_code_unchanged(const sweep_ctx *c, int report_fd)
{
	char now[LB_SWEEP_ID_LEN];
	int dr = sweep_digest(c, now);
	if (dr == 0 && strcmp(now, c->id) == 0)
		return true;
	char msg[PATH_MAX + 512];
	if (dr < 0)
		snprintf(msg, sizeof msg, "cannot read the experiment directory '%s' again: %s",
			 c->expdir, strerror(-dr));
	else
		snprintf(msg, sizeof msg, "the experiment in %s changed since sweep %s started (it "
			 "is now sweep %s): the cell was not run, so that the sweep's cells all run "
			 "one code; its finished cells are kept, and labbox sweep on the experiment as "
			 "it is now starts the new sweep", c->expdir, c->id, now);
	lb_sweep_report_error(report_fd, msg);
	return false;
}

/* A cell's slot as its records say it: which CPUs, and how far that holds. A cpuset cgroup
 * holds the cell to them; without one, the share is only the cell's affinity, which the
 * experiment may widen again (sched_setaffinity is its to call, as outside labbox). --cpus
 * adds the run's cgroup quota, which bounds how much CPU the cell uses but not where. */
static json_object *slot_json(const sweep_ctx *c, const lb_sweep_slot *slot)
{
	json_object *sj = json_object_new_object();
	json_object_object_add(sj, "index", json_object_new_int64((int64_t)slot->index));
	json_object_object_add(sj, "cpus", json_object_new_double(slot->cpus));
	json_object_object_add(sj, "affinity", json_object_new_string(slot->cpulist));
	char by[160];
	snprintf(by, sizeof by, "%s%s",
		 c->share_enforced_by ? c->share_enforced_by
				      : "affinity (the experiment may change it)",
		 c->o.cpus > 0 ? "; its amount by --cpus (the run's isolation.cpus_enforced_by)"
			       : "");
	json_object_object_add(sj, "enforced_by", json_object_new_string(by));
	return sj;
}

/* One cell as one run of the pipeline. run_dir (may be NULL) gets the run's directory;
 * estimate_fd (-1: none) keeps its TIME_ESTIMATE instead of report_fd. */
static int cell_run(sweep_ctx *c, size_t cell, const lb_sweep_slot *slot, int report_fd,
		    int estimate_fd, char **run_dir, bool pin)
{
	const lb_sweep_cell *cl = &c->plan.cells[cell];
	if (!cell_code_unchanged(c, report_fd))
		return LB_EXIT_USAGE;
	lb_sandbox *sb = NULL;
	if (lb_sandbox_new(&sb) < 0) {
		lb_sweep_report_error(report_fd, "out of memory");
		return 125;
	}
	/* The sandbox flags of the command apply to every cell; errors go to the parent. On a
	 * Slurm node the cell's GPUs are the ones its job was given, whichever they are. */
	cli_sandbox_opts here = c->o;
	if (c->cell_local && c->o.gpus && strcmp(c->o.gpus, "none") != 0)
		here.gpus = getenv("SLURM_JOB_GPUS") && *getenv("SLURM_JOB_GPUS")
				    ? getenv("SLURM_JOB_GPUS") : "none";
	int rc = cli_sandbox_apply("sweep", &here, sb);
	/* Without --cpus the share is enforced by the affinity alone; the thread counts follow
	 * it, so cells do not each start a pool the size of the machine. */
	if (rc == 0 && c->o.cpus <= 0)
		rc = cli_thread_env(&c->o, floor(slot->cpus) >= 1 ? floor(slot->cpus) : 1, sb);
	/* The slot's CPUs as a fence where a cpuset can be had; the affinity alone otherwise. */
	if (rc == 0 && pin && c->share_enforced_by && lb_sandbox_set_cpuset(sb, slot->cpulist) < 0)
		rc = 125;
	for (size_t i = 0; rc == 0 && i < cl->nenv; i++)
		if (lb_sandbox_add_env(sb, cl->env[i]) < 0)
			rc = 125;
	if (rc != 0) {
		lb_sweep_report_error(report_fd, "the sandbox flags could not be applied");
		lb_sandbox_free(sb);
		return rc;
	}
	char **args = NULL;
	size_t nargs = 0;
	for (size_t i = 0; i < c->nbase; i++)
		sweep_strv_push(&args, &nargs, c->base_args[i]);
	for (size_t i = 0; i < cl->nargs; i++)
		sweep_strv_push(&args, &nargs, cl->args[i]);
	json_object *tag = lb_sweep_cell_tag(&c->plan, cell, c->id);
	json_object_object_add(tag, "env", sweep_strv_json(cl->env, cl->nenv));
	json_object_object_add(tag, "slot", slot_json(c, slot));
	cell_echo echo = {.fd = report_fd, .store_fd = estimate_fd};
	lb_run_request req = {
		.expdir = c->expdir,
		.origin_untrusted = c->origin_untrusted,
		.python = c->python,
		.entry = c->entry,
		.mode = c->cell_local ? "local" : c->mode,
		.image = c->image,
		.engine = c->engine,
		.metrics = (const char *const *)c->metrics,
		.nmetrics = c->nmetrics,
		.log_limit = c->log_limit,
		.runs_dir = c->runs_dir,
		.args = args,
		.nargs = nargs,
		.budget = c->o.budget,
		.grace = c->o.grace_set ? c->o.grace : 5.0,
		.disk_limit = sweep_cell_disk_limit(c),
		.echo = cell_output,
		.echo_ctx = &echo,
		.policy = c->policy,
		.runtime_gate = c->runtime_gate,
		.env = c->env_asked,
		.trust_project = c->trust,
		.sandbox_config = cli_sandbox_json(&c->o),
		.warn = cell_warn,
		.command_line = c->argv,
		.command_argc = c->argc,
		.sweep = tag,
	};
	lb_run_result out = {0};
	int r = lb_run_mode(sb, &req, &out);
	if (r < 0) {
		lb_sweep_report_error(report_fd, strerror(-r));
		rc = 125;
	} else if (!out.doc) {
		lb_sweep_report_error(report_fd, out.error);
		rc = out.exit_code;
	} else {
		lb_sweep_report_done(report_fd, out.exit_code, out.id, out.run_dir);
		rc = out.exit_code;
		if (run_dir && out.run_dir)
			*run_dir = strdup(out.run_dir);
	}
	lb_run_result_free(&out);
	json_object_put(req.sandbox_config);
	json_object_put(tag);
	sweep_strv_free(args, nargs);
	lb_sandbox_free(sb);
	return rc;
}

/* The executor's callback, in the cell's child. */
static int run_cell(void *vctx, size_t cell, const lb_sweep_slot *slot, int report_fd)
{
	sweep_ctx *c = vctx;
	if (c->lock_fd >= 0)
		close(c->lock_fd); /* the sweep's lock is the parent's */
	return cell_run(c, cell, slot, report_fd, -1, NULL, true);
}

/* `--resume ID --cell N`: cell N alone, here and now, as a task of a job array would run it.
 * No lock and no sweep.json: many such tasks may run at once, on other machines; the next
 * `labbox sweep --resume ID` finds their runs through the index. */
static int run_one_cell(sweep_ctx *c, size_t cell)
{
	lb_sweep_slot slot = {0};
	sched_getaffinity(0, sizeof slot.cpuset, &slot.cpuset);
	slot.cpus = c->o.cpus > 0 ? c->o.cpus : CPU_COUNT(&slot.cpuset);
	snprintf(slot.cpulist, sizeof slot.cpulist, "%d CPUs", CPU_COUNT(&slot.cpuset));
	LB_AUTOCLOSE int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	/* The submitting labbox reads the cell's TIME_ESTIMATE from here for its time left. */
	char est_path[PATH_MAX];
	LB_AUTOCLOSE int est = -1;
	if (snprintf(est_path, sizeof est_path, "%s/estimates/%zu", c->sweep_dir, cell) <
	    (int)sizeof est_path)
		est = open(est_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	LB_AUTOFREE char *run_dir = NULL;
	int rc = cell_run(c, cell, &slot, devnull, est, &run_dir, false);
	json_object *res = run_dir ? sweep_load_json(run_dir, "result.json") : NULL;
	if (!res) {
		cli_error("sweep", "cell %zu of sweep %s could not be run (exit %d)", cell, c->id, rc);
		return rc;
	}
	if (c->json)
		cli_json_print(res);
	else
		cli_printf("labbox: sweep %s cell %zu (%s): %s, run %s\n", c->id, cell,
			   c->plan.condition_names[c->plan.cells[cell].condition], sweep_jstr(res, "status"),
			   sweep_jstr(res, "id"));
	json_object_put(res);
	return rc;
}

/* The index's rows of this sweep's runs, newest first, or NULL when there is no index or it
 * cannot be read (then nothing is known of earlier runs). */
static json_object *sweep_index_rows(const sweep_ctx *c)
{
	LB_AUTOFREE char *path = NULL;
	lb_index *ix = NULL;
	char err[512];
	if (lb_index_path_for(c->runs_dir, &path) < 0 || access(path, F_OK) != 0 ||
	    lb_index_open(path, &ix, err, sizeof err) < 0)
		return NULL;
	lb_index_filter f = {.sweep = c->id};
	json_object *rows = NULL;
	if (lb_index_list(ix, &f, &rows, err, sizeof err) < 0)
		rows = NULL;
	lb_index_close(ix);
	return rows;
}

/* Runs of this sweep's cells that the index knows (run by `--cell`, or by a sweep whose
 * sweep.json was lost): {"N": run_dir} of the newest finished run of each cell. */
static json_object *indexed_cells(const sweep_ctx *c, bool retry)
{
	json_object *map = json_object_new_object();
	json_object *rows = sweep_index_rows(c);
	if (rows) {
		for (size_t i = 0; i < json_object_array_length(rows); i++) {
			json_object *row = json_object_array_get_idx(rows, i), *sw, *cell;
			const char *st = sweep_jstr(row, "status"), *rd = sweep_jstr(row, "run_dir");
			if (!json_object_object_get_ex(row, "sweep", &sw) || !sw ||
			    strcmp(sweep_jstr(sw, "id") ? sweep_jstr(sw, "id") : "", c->id) != 0 ||
			    !json_object_object_get_ex(sw, "cell", &cell) || !cell || !rd ||
			    !lb_sweep_status_final(st, retry))
				continue;
			/* Only a run this user's labbox recorded is taken as finished: a sweep id is
			 * the experiment's and the grid's digest, so an index that came with the
			 * experiment can name its cells, and their numbers would be sealed into
			 * this sweep.json as labbox's. */
			if (!lb_record_run_sealed(rd, sweep_jstr(row, "id")))
				continue;
			char key[32];
			snprintf(key, sizeof key, "%lld", (long long)json_object_get_int64(cell));
			if (!json_object_object_get_ex(map, key, NULL)) /* newest first */
				json_object_object_add(map, key, json_object_new_string(rd));
		}
		json_object_put(rows);
	}
	return map;
}

/* The runs of each cell of this sweep that did not complete (failed, diverged, interrupted),
 * as the index knows them: a cell run again (--retry-failed, --resume) keeps them in its
 * record, so that a seed which failed and then passed is not a clean first-attempt success.
 * Only runs this user's labbox sealed, as for indexed_cells. */
static json_object *cell_attempts(const sweep_ctx *c)
{
	json_object *map = json_object_new_object();
	json_object *rows = sweep_index_rows(c);
	if (rows) {
		for (size_t i = 0; i < json_object_array_length(rows); i++) {
			json_object *row = json_object_array_get_idx(rows, i), *sw, *cell, *list;
			const char *st = sweep_jstr(row, "status"), *rd = sweep_jstr(row, "run_dir");
			const char *rid = sweep_jstr(row, "id");
			if (!json_object_object_get_ex(row, "sweep", &sw) || !sw ||
			    strcmp(sweep_jstr(sw, "id") ? sweep_jstr(sw, "id") : "", c->id) != 0 ||
			    !json_object_object_get_ex(sw, "cell", &cell) || !cell || !rd || !st || !rid ||
			    strcmp(st, "completed") == 0 || strcmp(st, "running") == 0 ||
			    !lb_record_run_sealed(rd, rid))
				continue;
			char key[32];
			snprintf(key, sizeof key, "%lld", (long long)json_object_get_int64(cell));
			if (!json_object_object_get_ex(map, key, &list)) {
				list = json_object_new_array();
				json_object_object_add(map, key, list);
			}
			json_object *res = sweep_load_json(rd, "result.json");
			json_object *fail = res ? json_object_object_get(res, "failure") : NULL;
			const char *cls = sweep_jstr(fail, "class"), *sum = sweep_jstr(fail, "summary");
			json_object *a = json_object_new_object();
			json_object_object_add(a, "run_id", json_object_new_string(rid));
			json_object_object_add(a, "status", json_object_new_string(st));
			json_object_object_add(a, "class", cls ? json_object_new_string(cls) : NULL);
			json_object_object_add(a, "summary", sum ? json_object_new_string(sum) : NULL);
			json_object_array_add(list, a);
			json_object_put(res);
		}
		json_object_put(rows);
	}
	return map;
}

/* Cells that ran with other packages than the sweep's newest cell (a package upgraded in the
 * venv the sweep names, then the same command or --resume): the id names the interpreter's
 * path, not what it imports, so this is where two environments would be pooled. Such a cell
 * is recorded as environment_changed: out of the statistics, listed in failures, and run
 * again by the next --resume. newest: the cell whose packages are the reference (the newest
 * new cell), or SIZE_MAX when no cell ran in this invocation. The number flagged. */
static size_t flag_other_packages(sweep_ctx *c, size_t newest)
{
	json_object *ref = newest == SIZE_MAX ? NULL : json_object_array_get_idx(c->cells, newest);
	const char *want = sweep_jstr(ref, "packages");
	if (!want)
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < c->plan.ncells; i++) {
		json_object *rec = json_object_array_get_idx(c->cells, i);
		const char *st = sweep_jstr(rec, "status"), *have = sweep_jstr(rec, "packages");
		if (!st || strcmp(st, "completed") != 0 || !have || strcmp(have, want) == 0)
			continue;
		char sum[512];
		snprintf(sum, sizeof sum, "it ran with other packages (environment.txt sha256 %.12s) "
			 "than cell %zu, the newest (%.12s): kept out of the statistics; labbox sweep "
			 "--resume %s runs it again", have, newest, want, c->id);
		json_object *f = json_object_new_object();
		json_object_object_add(f, "class", json_object_new_string("environment_changed"));
		json_object_object_add(f, "summary", json_object_new_string(sum));
		json_object_object_add(rec, "failure", f);
		json_object_object_add(rec, "status", json_object_new_string("environment_changed"));
		n++;
	}
	if (n)
		cli_error("sweep", "warning: %zu cell%s of sweep %s ran with other packages than its "
			  "newest cell (the interpreter's environment changed between them): they are "
			  "kept out of the statistics and recorded as environment_changed; labbox sweep "
			  "--resume %s runs them again", n, n == 1 ? "" : "s", c->id, c->id);
	return n;
}

/* ---- events in the parent ------------------------------------------------------------------ */

static int on_event(void *vctx, const lb_sweep_event *ev)
{
	sweep_ctx *c = vctx;
	const lb_sweep_cell *cl = ev->kind == LB_SWEEP_TICK || ev->kind == LB_SWEEP_STOPPING
					  ? NULL : &c->plan.cells[ev->cell];
	char seed[32] = "";
	if (cl && cl->has_seed)
		snprintf(seed, sizeof seed, " seed=%ld", cl->seed);
	switch (ev->kind) {
	case LB_SWEEP_CELL_STARTED:
		c->running = ev->running;
		if (!c->tty)
			sweep_progress_line(c, "cell %zu (%s%s) started on CPUs %s", ev->cell,
				      c->plan.condition_names[cl->condition], seed, ev->slot->cpulist);
		else
			sweep_live_line(c);
		break;
	case LB_SWEEP_CELL_ESTIMATE:
	case LB_SWEEP_SUBMITTED:
	case LB_SWEEP_CELL_REQUEUED:
		break;
	case LB_SWEEP_TICK:
		c->eta = ev->eta;
		sweep_live_line(c);
		if (c->doc_dirty)
			sweep_note_progress(c);
		break;
	case LB_SWEEP_STOPPING:
		if (ev->signal)
			sweep_progress_line(c, "%s: ending the %zu running cell%s (they are recorded as "
				      "interrupted; resume with labbox sweep --resume %s)",
				      strsignal(ev->signal), ev->running, ev->running == 1 ? "" : "s", c->id);
		else
			sweep_progress_line(c, "the sweep budget is spent: ending the %zu running cell%s "
				      "(resume with labbox sweep --resume %s)", ev->running,
				      ev->running == 1 ? "" : "s", c->id);
		break;
	case LB_SWEEP_CELL_FINISHED: {
		c->running = ev->running;
		c->done++;
		c->eta = ev->eta;
		json_object *rec = NULL;
		json_object *result = ev->run_dir ? sweep_load_json(ev->run_dir, "result.json") : NULL;
		if (result) {
			rec = lb_sweep_cell_record(result);
			json_object_put(result);
			/* Still "running" after its child ended: the child died before the run's
			 * end was recorded, which is what the index calls interrupted too. */
			if (strcmp(sweep_jstr(rec, "status"), "running") == 0)
				json_object_object_add(rec, "status", json_object_new_string("interrupted"));
		} else {
			/* No run to read: killed before it had a record, or refused as a usage
			 * error before a run directory existed. */
			rec = json_object_new_object();
			bool sig = ev->exit_code >= 128; /* killed before its run was recorded */
			json_object_object_add(rec, "status",
					       json_object_new_string(sig ? "interrupted"
								  : ev->exit_code == LB_EXIT_USAGE ? "usage_error"
								  : "infra_error"));
			json_object_object_add(rec, "run_id", ev->run_id ? json_object_new_string(ev->run_id) : NULL);
			json_object_object_add(rec, "run_dir", ev->run_dir ? json_object_new_string(ev->run_dir) : NULL);
			json_object_object_add(rec, "exit_code", json_object_new_int(ev->exit_code));
			json_object *f = json_object_new_object();
			json_object_object_add(f, "class", json_object_new_string(sig ? "interrupted" : "infra_error"));
			json_object_object_add(f, "summary", json_object_new_string(
				ev->message ? ev->message : sig ? "the cell was ended before its run was recorded"
							       : "the cell could not be run"));
			json_object_object_add(rec, "failure", f);
			json_object_object_add(rec, "metrics", json_object_new_object());
			if (!sig && !c->usage_failure) {
				/* Every cell would fail alike: say it once and start no more. */
				c->usage_failure = true;
				c->usage_rc = ev->exit_code;
				cli_error("sweep", "cell %zu could not be run: %s", ev->cell,
					  ev->message ? ev->message : "usage error");
			}
		}
		json_object_object_add(rec, "slot", slot_json(c, ev->slot));
		json_object_object_add(rec, "reused", json_object_new_boolean(false));
		const char *status = sweep_jstr(rec, "status");
		if (!status || strcmp(status, "completed") != 0)
			c->failed++;
		char wall[32];
		sweep_fmt_duration(ev->wall, wall);
		json_object *fail;
		const char *cls = json_object_object_get_ex(rec, "failure", &fail) && fail ? sweep_jstr(fail, "class") : NULL;
		sweep_progress_line(c, "cell %zu (%s%s) %s%s%s in %s%s%s", ev->cell,
			      c->plan.condition_names[cl->condition], seed, status ? status : "?",
			      cls ? ": " : "", cls ? cls : "", wall, ev->run_id ? ", run " : "",
			      ev->run_id ? ev->run_id : "");
		if (status && strcmp(status, "completed") == 0)
			c->newest = ev->cell;
		json_object_array_put_idx(c->cells, ev->cell, rec);
		sweep_note_progress(c);
		break;
	}
	}
	return c->usage_failure;
}

/* ---- setting it up ------------------------------------------------------------------------- */

/* A sweep's directory is read back and believed (--resume runs the experiment, flags and
 * mounts its sweep.json names; finished cells are taken from it): another user's in its place,
 * or one they could replace, is refused, naming it. */
/* Whether run_dir is a run of the runs directory whose real path is runs_real ("" when it
 * does not exist yet: then none is). */
static bool in_runs(const char *run_dir, const char *runs_real)
{
	char real[PATH_MAX];
	return runs_real[0] && realpath(run_dir, real) && lb_path_under(real, runs_real);
}

/* dirname(3) into out, without changing path: "." for a bare name, "/" for the root's. */
static void parent_of(const char *path, char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%s", path);
	char *slash = strrchr(out, '/');
	if (!slash)
		snprintf(out, PATH_MAX, ".");
	else
		*(slash == out ? slash + 1 : slash) = '\0';
}

static int sweep_dir_own(const char *dir)
{
	char sweeps[PATH_MAX], top[PATH_MAX], doc[PATH_MAX], why[64];
	parent_of(dir, sweeps);
	parent_of(sweeps, top);
	snprintf(doc, sizeof doc, "%s/sweep.json", dir);
	const char *const own[] = {sweeps, dir, doc};
	const bool is_dir[] = {true, true, false};
	for (size_t i = 0; i < 3; i++) {
		int r = lb_path_own(own[i], is_dir[i], why, sizeof why);
		if (r < 0) {
			cli_error("sweep", "%s is not this user's own (%s): a sweep kept there could be "
				  "read or changed by another user; remove it, or choose --runs-dir in "
				  "a directory of your own", own[i], r == -EPERM ? why : strerror(-r));
			return r;
		}
	}
	if (lb_dir_open_to_others(top)) {
		cli_error("sweep", "%s is writable by others: they could replace the sweeps kept in "
			  "it; choose --runs-dir in a directory of your own", top);
		return -EPERM;
	}
	return 0;
}

/* The sweeps directory's entry that ID names (whole or a unique prefix). */
static int find_sweep(const char *runs_dir, const char *id, char **dir)
{
	char err[PATH_MAX + 512];
	int r = lb_sweep_resolve(runs_dir, id, dir, err, sizeof err);
	if (r < 0 && r != -ENOMEM)
		cli_error("sweep", "%s", err);
	if (r == 0) /* the earlier sweep's document as it must read, a dead one settled */
		lb_sweep_settle(runs_dir, *dir);
	return r;
}

/* The spec, flags and experiment of a sweep as sweep.json recorded them. */
/* The sandbox flags that change what a cell computes, for the sweep's identity: the -e
 * variables (names and values), the --secret-env names (their values stay out of every
 * record), each -v volume's real source, destination and mode, with a read-only volume's
 * data fingerprint (manifest.data's digest: the same files, or for a large tree the same
 * paths, sizes and mtimes), --network, --gpus and --hide. Empty when none is given, so a
 * sweep without them keeps the id it always had. A writable volume is named, not
 * fingerprinted: the cells write into it, and a resumed sweep must stay itself. */
static void sweep_inputs_identity(const cli_sandbox_opts *o, lb_buf *b)
{
	for (size_t i = 0; i < o->nenv; i++)
		lb_buf_printf(b, "env\x1f%s\x1e", o->env[i]);
	for (size_t i = 0; i < o->nsecret_env; i++)
		lb_buf_printf(b, "secret-env\x1f%s\x1e", o->secret_env[i]);
	for (size_t i = 0; i < o->nvolumes; i++) {
		LB_AUTOFREE char *spec = strdup(o->volumes[i]);
		if (!spec)
			continue;
		char *dst = strchr(spec, ':');
		char *mode = dst ? strchr(dst + 1, ':') : NULL;
		if (dst)
			*dst++ = '\0';
		if (mode)
			*mode++ = '\0';
		bool rw = mode && strcmp(mode, "rw") == 0;
		char real[PATH_MAX];
		bool found = realpath(spec, real) != NULL;
		lb_buf_printf(b, "volume\x1f%s\x1f%s\x1f%s", found ? real : spec, dst ? dst : "",
			      rw ? "rw" : "ro");
		if (found && !rw) {
			json_object *fp = lb_record_tree_fingerprint(real, LB_DATA_CONTENT_MAX_BYTES,
								     LB_DATA_CONTENT_MAX_FILES);
			json_object *d = fp ? json_object_object_get(fp, "digest") : NULL;
			lb_buf_printf(b, "\x1f%s", d ? json_object_get_string(d) : "unreadable");
			json_object_put(fp);
		}
		lb_buf_printf(b, "\x1e");
	}
	if (o->network != LB_NET_NONE)
		lb_buf_printf(b, "network\x1f%d\x1e", (int)o->network);
	if (o->gpus)
		lb_buf_printf(b, "gpus\x1f%s\x1e", o->gpus);
	for (size_t i = 0; i < o->nhide; i++)
		lb_buf_printf(b, "hide\x1f%s\x1e", o->hide[i]);
}

static int load_resume(sweep_ctx *c, const char *dir, lb_sweep_spec *spec, json_object **prev)
{
	if (sweep_dir_own(dir) < 0)
		return -EPERM;
	json_object *doc = sweep_load_json(dir, "sweep.json");
	json_object *inv, *plan, *v;
	if (!doc || !json_object_object_get_ex(doc, "invocation", &inv) ||
	    !json_object_object_get_ex(doc, "plan", &plan)) {
		cli_error("sweep", "%s/sweep.json is missing or not a sweep document", dir);
		json_object_put(doc);
		return -EINVAL;
	}
	/* Another user's labbox's sweep, or one changed since, is resumed with what it grants
	 * only when the user says so (rerun's rule, runs.c). */
	/* An older labbox's seal covers what matters here, the invocation and the plan. */
	c->origin_untrusted = lb_record_sweep_seal_of(doc) == LB_SEAL_NONE;
	if (!c->accept_grants && c->origin_untrusted) {
		lb_buf b = {0};
		if (cli_record_grants(inv, NULL, json_object_object_get(plan, "env_template"), &b)) {
			cli_error("sweep",
				  "%s/sweep.json was not written by this user's labbox, or was changed "
				  "since (its seal does not match): its cells would run with %s. Read it, "
				  "and if you want that, resume with labbox sweep --resume %s "
				  "--accept-grants",
				  dir, b.data, sweep_jstr(doc, "id") ? sweep_jstr(doc, "id") : "ID");
			lb_buf_free(&b);
			json_object_put(doc);
			return -EPERM;
		}
		lb_buf_free(&b);
	}
	const char *exp = sweep_jstr(inv, "expdir");
	snprintf(c->expdir, sizeof c->expdir, "%s", exp ? exp : "");
	if (sweep_jstr(inv, "python"))
		c->python = strdup(sweep_jstr(inv, "python"));
	if (sweep_jstr(inv, "entry"))
		c->entry = strdup(sweep_jstr(inv, "entry"));
	if (sweep_jstr(inv, "mode"))
		c->mode = strdup(sweep_jstr(inv, "mode"));
	if (sweep_jstr(inv, "image"))
		c->image = strdup(sweep_jstr(inv, "image"));
	if (sweep_jstr(inv, "engine"))
		c->engine = strdup(sweep_jstr(inv, "engine"));
	char **names[] = {&c->partition, &c->account, &c->qos};
	const char *keys[] = {"partition", "account", "qos"};
	for (size_t i = 0; i < 3; i++)
		if (!*names[i] && sweep_jstr(inv, keys[i]))
			*names[i] = strdup(sweep_jstr(inv, keys[i]));
	c->log_limit = (uint64_t)sweep_jnum(inv, "log_limit_bytes");
	if (json_object_object_get_ex(inv, "metrics", &v) && v)
		for (size_t i = 0; i < json_object_array_length(v); i++)
			sweep_strv_push(&c->metrics, &c->nmetrics,
				  json_object_get_string(json_object_array_get_idx(v, i)));
	lb_check_policy pol;
	if (sweep_jstr(inv, "policy") && lb_check_policy_parse(sweep_jstr(inv, "policy"), &pol) == 0)
		c->policy = (int)pol;
	c->trust = json_object_object_get_ex(inv, "trust_project", &v) && json_object_get_boolean(v);
	if (!c->env_asked && sweep_jstr(inv, "env_asked"))
		c->env_asked = strdup(sweep_jstr(inv, "env_asked"));
	lb_gate_mode gm;
	if (sweep_jstr(inv, "runtime_gate") && lb_gate_mode_parse(sweep_jstr(inv, "runtime_gate"), &gm) == 0)
		c->runtime_gate = (int)gm;
	c->ignore_table = json_object_object_get_ex(inv, "ignore_budget_table", &v) &&
			  json_object_get_boolean(v);
	if (!c->sweep_budget)
		c->sweep_budget = sweep_jnum(inv, "sweep_budget_s");
	if (!c->jobs)
		c->jobs = (size_t)sweep_jnum(inv, "jobs");
	if (json_object_object_get_ex(inv, "base_args", &v))
		for (size_t i = 0; i < json_object_array_length(v); i++)
			sweep_strv_push(&c->base_args, &c->nbase, json_object_get_string(json_object_array_get_idx(v, i)));
	if (json_object_object_get_ex(inv, "sandbox", &v))
		cli_sandbox_opts_from_json(v, &c->o);
	c->o.budget = sweep_jnum(inv, "budget_s");
	spec->iterations = (long)sweep_jnum(inv, "iterations");
	if (json_object_object_get_ex(plan, "parameters", &v))
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *p = json_object_array_get_idx(v, i), *vals = NULL;
			json_object_object_get_ex(p, "values", &vals);
			size_t nv = vals ? json_object_array_length(vals) : 0;
			const char **strs = calloc(nv + 1, sizeof *strs);
			for (size_t k = 0; strs && k < nv; k++)
				strs[k] = json_object_get_string(json_object_array_get_idx(vals, k));
			char perr[512];
			/* Anything that does not survive comes out in the id check below. */
			if (strs && sweep_jstr(p, "name"))
				lb_sweep_spec_set_param(spec, sweep_jstr(p, "name"), strs, nv, perr, sizeof perr);
			free(strs);
		}
	if (json_object_object_get_ex(plan, "seeds", &v) && json_object_array_length(v)) {
		spec->seeds = calloc(json_object_array_length(v), sizeof *spec->seeds);
		for (size_t i = 0; spec->seeds && i < json_object_array_length(v); i++)
			spec->seeds[spec->nseeds++] = json_object_get_int64(json_object_array_get_idx(v, i));
		spec->seeds_set = true;
	}
	if (json_object_object_get_ex(plan, "args_template", &v)) {
		for (size_t i = 0; i < json_object_array_length(v); i++)
			sweep_strv_push(&spec->args, &spec->nargs, json_object_get_string(json_object_array_get_idx(v, i)));
		spec->args_set = true;
	}
	if (json_object_object_get_ex(plan, "env_template", &v))
		for (size_t i = 0; i < json_object_array_length(v); i++)
			sweep_strv_push(&spec->env, &spec->nenv, json_object_get_string(json_object_array_get_idx(v, i)));
	*prev = doc;
	return 0;
}

static int lock_sweep(sweep_ctx *c)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/lock", c->sweep_dir);
	c->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (c->lock_fd < 0) {
		cli_error("sweep", "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		cli_error("sweep", "sweep %s is being run by another labbox right now (%s is locked)",
			  c->id, path);
		return -EBUSY;
	}
	return 0;
}

/* One metric of a condition, with the report's digits: as many as the interval's width
 * needs, so conditions that differ do not print alike. */
static void summary_stat(const char *k, json_object *b)
{
	json_object *v, *ci = NULL;
	lb_report_stat st = {.present = true};
	st.n = (size_t)sweep_jnum(b, "n");
	if (!json_object_object_get_ex(b, "mean", &v) || !v || st.n == 0) {
		cli_printf(" %s=NaN/Inf;", k);
		return;
	}
	st.mean = json_object_get_double(v);
	if (json_object_object_get_ex(b, "ci95", &ci) && ci && st.n >= 2) {
		st.has_spread = true;
		st.std = sweep_jnum(b, "std");
		st.ci_low = sweep_jnum(ci, "low");
		st.ci_high = sweep_jnum(ci, "high");
	}
	lb_report_nums p;
	lb_report_fmt_stat(&st, &p);
	cli_printf(" %s=%s", k, p.mean);
	if (st.has_spread)
		cli_printf(" \xc2\xb1 %s", p.half);
	cli_printf(";");
}

static void print_summary(sweep_ctx *c, json_object *doc)
{
	json_object *conds = NULL, *counts, *fails, *ident;
	json_object_object_get_ex(doc, "counts", &counts);
	cli_printf("\nlabbox: sweep %s %s: %d of %d cells completed (%d reused), %d failed, %d "
		   "interrupted, %d not run\n", c->id, sweep_jstr(doc, "status"),
		   (int)sweep_jnum(counts, "completed"), (int)sweep_jnum(counts, "cells"), (int)sweep_jnum(counts, "reused"),
		   (int)sweep_jnum(counts, "failed"), (int)sweep_jnum(counts, "interrupted"),
		   (int)sweep_jnum(counts, "not_run"));
	if (json_object_object_get_ex(doc, "conditions", &conds))
		for (size_t i = 0; i < json_object_array_length(conds); i++) {
			json_object *cd = json_object_array_get_idx(conds, i), *m;
			cli_printf("  %s (%d/%d", sweep_jstr(cd, "name"), (int)sweep_jnum(cd, "completed"),
				   (int)sweep_jnum(cd, "cells"));
			if (sweep_jnum(cd, "completed_after_retry") > 0)
				cli_printf(", %d after a retry", (int)sweep_jnum(cd, "completed_after_retry"));
			cli_printf("):");
			int shown = 0, more = 0;
			if (json_object_object_get_ex(cd, "metrics", &m)) {
				json_object_object_foreach(m, k, b)
				{
					if (shown >= 4) {
						more++;
						continue;
					}
					shown++;
					summary_stat(k, b);
				}
			}
			if (more)
				cli_printf(" +%d more (labbox report %s)", more, c->id);
			cli_printf("\n");
		}
	if (conds && json_object_array_length(conds))
		cli_printf("  (mean \xc2\xb1 half-width of the 95%% interval, Student's t, over "
			   "finite values)\n");
	if (json_object_object_get_ex(doc, "failures", &fails))
		for (size_t i = 0; i < json_object_array_length(fails) && i < 20; i++) {
			json_object *f = json_object_array_get_idx(fails, i);
			cli_printf("  failed: cell %d (%s) %s: %s%s%s\n", (int)sweep_jnum(f, "cell"),
				   sweep_jstr(f, "condition"), sweep_jstr(f, "status"), sweep_jstr(f, "class"),
				   sweep_jstr(f, "summary") ? ": " : "", sweep_jstr(f, "summary") ? sweep_jstr(f, "summary") : "");
		}
	if (json_object_object_get_ex(doc, "retried_failures", &fails))
		for (size_t i = 0; i < json_object_array_length(fails) && i < 20; i++) {
			json_object *f = json_object_array_get_idx(fails, i);
			cli_printf("  retried: cell %d (%s) run %s was %s%s%s; the cell is now %s\n",
				   (int)sweep_jnum(f, "cell"), sweep_jstr(f, "condition"),
				   sweep_jstr(f, "run_id"), sweep_jstr(f, "status"),
				   sweep_jstr(f, "class") ? ": " : "",
				   sweep_jstr(f, "class") ? sweep_jstr(f, "class") : "", sweep_jstr(f, "then"));
		}
	if (json_object_object_get_ex(doc, "identical_conditions", &ident))
		for (size_t i = 0; i < json_object_array_length(ident); i++) {
			json_object *g = json_object_array_get_idx(ident, i), *mem;
			json_object_object_get_ex(g, "conditions", &mem);
			cli_printf("  warning: identical results: %s\n",
				   json_object_to_json_string_ext(mem, JSON_C_TO_STRING_PLAIN));
		}
	cli_printf("  sweep.json: %s/sweep.json\n", c->sweep_dir);
}

int cli_sweep(int argc, char **argv)
{
	lb_index_keeper keeper = {.pid = -1, .fd = -1};
	static const struct option longopts[] = {
		CLI_SANDBOX_LONGOPTS,
		{"python", required_argument, NULL, OPT_PYTHON},
		{"entry", required_argument, NULL, OPT_ENTRY},
		{"mode", required_argument, NULL, OPT_MODE},
		{"runs-dir", required_argument, NULL, OPT_RUNS_DIR},
		{"policy", required_argument, NULL, OPT_POLICY},
		{"trust-project", no_argument, NULL, OPT_TRUST},
		{"jobs", required_argument, NULL, OPT_JOBS},
		{"param", required_argument, NULL, OPT_PARAM},
		{"seeds", required_argument, NULL, OPT_SEEDS},
		{"args", required_argument, NULL, OPT_ARGS},
		{"sweep-budget", required_argument, NULL, OPT_SWEEP_BUDGET},
		{"resume", required_argument, NULL, OPT_RESUME},
		{"retry-failed", no_argument, NULL, OPT_RETRY},
		{"ignore-budget-table", no_argument, NULL, OPT_IGNORE_TABLE},
		{"accept-grants", no_argument, NULL, OPT_ACCEPT_GRANTS},
		{"cell", required_argument, NULL, OPT_CELL},
		{"plan-only", no_argument, NULL, OPT_PLAN_ONLY},
		{"metrics", required_argument, NULL, OPT_METRICS},
		{"log-limit", required_argument, NULL, OPT_LOG_LIMIT},
		{"image", required_argument, NULL, OPT_IMAGE},
		{"engine", required_argument, NULL, OPT_ENGINE},
		{"partition", required_argument, NULL, OPT_PARTITION},
		{"account", required_argument, NULL, OPT_ACCOUNT},
		{"qos", required_argument, NULL, OPT_QOS},
		{"runtime-gate", required_argument, NULL, OPT_RUNTIME_GATE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	sweep_ctx c = {.lock_fd = -1, .eta = -1, .newest = SIZE_MAX};
	lb_sweep_spec spec = {0}, cli_spec = {0};
	char **params = NULL, *seeds_arg = NULL, *args_arg = NULL;
	size_t nparams = 0;
	const char *resume = NULL;
	bool retry = false, ignore_table = false, grid_flags = false;
	long one_cell = -1; /* --cell N */
	bool plan_only = false;
	int rc = CLI_EXIT_USAGE;
	json_object *prev = NULL, *final = NULL;
	lb_exp_config cfg = {0};
	char err[1024] = "";
	int dashdash = argc;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dashdash = i;
			break;
		}
	cli_json_begin("sweep", dashdash, argv, "he:v:", longopts, false);
	opterr = 0;
	int opt, longindex = -1;
	while ((opt = getopt_long(dashdash, argv, "he:v:", longopts, &longindex)) != -1) {
		/* As for run: --env spelled long with a value without '=' names the Python
		 * environment; -e always sets a variable. */
		bool spelled_long = longindex >= 0;
		longindex = -1;
		if (opt == 'e' && spelled_long && optarg && !strchr(optarg, '='))
			opt = OPT_ENV_CHOICE;
		int r = cli_sandbox_opt("sweep", opt, optarg, &c.o);
		if (r < 0)
			goto done;
		if (r > 0) {
			grid_flags |= opt != OPT_JSON;
			continue;
		}
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(sweep_help, stdout);
			rc = 0;
			goto done;
		case OPT_PYTHON:
			c.python = strdup(optarg);
			grid_flags = true;
			break;
		case OPT_ENTRY:
			if (!optarg[0]) {
				cli_error("sweep", "--entry needs a file name inside the experiment");
				goto done;
			}
			c.entry = strdup(optarg);
			grid_flags = true;
			break;
		case OPT_MODE:
			c.mode = strdup(optarg);
			grid_flags = true;
			break;
		case OPT_RUNS_DIR:
			c.runs_dir = optarg;
			break;
		case OPT_POLICY: {
			lb_check_policy p;
			if (lb_check_policy_parse(optarg, &p) < 0) {
				cli_error("sweep", "--policy '%s' is not one of strict, standard, permissive",
					  optarg);
				goto done;
			}
			c.policy = (int)p;
			grid_flags = true;
			break;
		}
		case OPT_TRUST:
			c.trust = true;
			grid_flags = true;
			break;
		case OPT_ENV_CHOICE:
			if (!*optarg) {
				cli_error("sweep", "--env needs auto, a name or a path");
				goto done;
			}
			free(c.env_asked);
			c.env_asked = strdup(optarg);
			grid_flags = true;
			break;
		case OPT_RUNTIME_GATE:
			if (cli_runtime_gate_opt("sweep", optarg, &c.runtime_gate) < 0)
				goto done;
			grid_flags = true;
			break;
		case OPT_JOBS: {
			long j;
			if (lb_parse_long(optarg, &j) < 0 || j <= 0 || j > 4096) {
				cli_error("sweep", "--jobs '%s' is not a number of cells from 1 to 4096", optarg);
				goto done;
			}
			c.jobs = (size_t)j;
			break;
		}
		case OPT_PARAM:
			sweep_strv_push(&params, &nparams, optarg);
			grid_flags = true;
			break;
		case OPT_SEEDS:
			seeds_arg = optarg;
			grid_flags = true;
			break;
		case OPT_ARGS:
			args_arg = optarg;
			grid_flags = true;
			break;
		case OPT_SWEEP_BUDGET:
			if (lb_parse_seconds(optarg, &c.sweep_budget) < 0) {
				cli_error("sweep", "--sweep-budget '%s' is not a positive number of seconds",
					  optarg);
				goto done;
			}
			break;
		case OPT_RESUME:
			resume = optarg;
			break;
		case OPT_RETRY:
			retry = true;
			break;
		case OPT_ACCEPT_GRANTS:
			c.accept_grants = true;
			break;
		case OPT_IGNORE_TABLE:
			ignore_table = true;
			break;
		case OPT_METRICS: {
			LB_AUTOFREE char *list = strdup(optarg);
			char *save = NULL;
			for (char *tok = list ? strtok_r(list, ",", &save) : NULL; tok;
			     tok = strtok_r(NULL, ",", &save))
				if (*tok)
					sweep_strv_push(&c.metrics, &c.nmetrics, tok);
			grid_flags = true;
			break;
		}
		case OPT_LOG_LIMIT:
			if (lb_parse_size(optarg, &c.log_limit) < 0 || c.log_limit < 1024) {
				cli_error("sweep", "--log-limit '%s' is not a size of at least 1k", optarg);
				goto done;
			}
			grid_flags = true;
			break;
		case OPT_IMAGE:
		case OPT_ENGINE:
			if (!optarg[0] || (opt == OPT_ENGINE && strcmp(optarg, "docker") != 0 &&
					   strcmp(optarg, "podman") != 0)) {
				cli_error("sweep", "--%s '%s' is not %s", opt == OPT_IMAGE ? "image" : "engine",
					  optarg, opt == OPT_IMAGE ? "an image name" : "one of docker, podman");
				goto done;
			}
			*(opt == OPT_IMAGE ? &c.image : &c.engine) = strdup(optarg);
			grid_flags = true;
			break;
		case OPT_PLAN_ONLY:
			plan_only = true;
			break;
		case OPT_PARTITION:
		case OPT_ACCOUNT:
		case OPT_QOS: {
			const char *flag = opt == OPT_PARTITION ? "--partition" : opt == OPT_ACCOUNT ? "--account" : "--qos";
			bool ok = optarg[0] && optarg[0] != '-' && strlen(optarg) <= 200;
			for (const char *p = optarg; ok && *p; p++)
				ok = (unsigned char)*p > 0x20 && *p != 0x7f && *p != '%';
			if (!ok) {
				cli_error("sweep", "%s '%s' is not one word (a Slurm name)", flag, optarg);
				goto done;
			}
			char **dst = opt == OPT_PARTITION ? &c.partition : opt == OPT_ACCOUNT ? &c.account : &c.qos;
			free(*dst);
			*dst = strdup(optarg);
			break;
		}
		case OPT_CELL:
			if (lb_parse_long(optarg, &one_cell) < 0) {
				cli_error("sweep", "--cell '%s' is not a cell number (0, 1, ...)", optarg);
				goto done;
			}
			break;
		default:
			cli_bad_option("sweep", argv, optopt);
			goto done;
		}
	}
	c.json = c.o.json;
	c.runs_dir = c.runs_dir ? c.runs_dir : ".labbox/runs";
	char link[PATH_MAX];
	if (lb_record_runs_dir_link(c.runs_dir, link, sizeof link) == -ELOOP) {
		cli_error("sweep", "'%s' is a symbolic link: labbox keeps its records in the working "
			  "directory only in directories of its own there (an experiment directory "
			  "can ship such a link); give the place with --runs-dir DIR", link);
		goto done;
	}
	if (c.accept_grants && !resume) {
		cli_error("sweep", "--accept-grants goes with --resume ID: a new sweep grants what its "
			  "own flags say");
		goto done;
	}
	if (one_cell >= 0 && !resume) {
		cli_error("sweep", "--cell N runs one cell of a sweep that exists: give --resume ID too");
		goto done;
	}
	if (resume) {
		if (grid_flags || optind < dashdash || dashdash < argc) {
			cli_error("sweep", "--resume runs the sweep as it was started: only --jobs, "
				  "--sweep-budget, --retry-failed, --accept-grants, --runs-dir and --json "
				  "may go with it");
			goto done;
		}
		LB_AUTOFREE char *dir = NULL;
		if (find_sweep(c.runs_dir, resume, &dir) < 0 || load_resume(&c, dir, &spec, &prev) < 0)
			goto done;
		ignore_table = ignore_table || c.ignore_table;
		snprintf(c.id, sizeof c.id, "%s", sweep_jstr(prev, "id") ? sweep_jstr(prev, "id") : "");
	} else {
		if (optind >= dashdash) {
			cli_error("sweep", "no experiment directory given (usage: labbox sweep [OPTIONS] "
				  "EXPDIR, or labbox sweep --resume ID)");
			goto done;
		}
		if (optind + 1 < dashdash) {
			cli_error("sweep", "unexpected argument '%s' (experiment arguments go after --)",
				  argv[optind + 1]);
			goto done;
		}
		struct stat st;
		if (stat(argv[optind], &st) < 0 || !S_ISDIR(st.st_mode) ||
		    !realpath(argv[optind], c.expdir)) {
			cli_error("sweep", "experiment directory '%s' %s", argv[optind],
				  stat(argv[optind], &st) < 0 ? "does not exist" : "is not a directory");
			goto done;
		}
		if ((rc = cli_hide_outside("sweep", &c.o, c.expdir)) != 0)
			goto done;
		rc = CLI_EXIT_USAGE;
		if (lb_sweep_spec_load(&spec, c.expdir, err, sizeof err) < 0) {
			cli_error("sweep", "%s", err);
			goto done;
		}
		for (size_t i = 0; i < nparams; i++) {
			/* Two --param of one name on the command line is a mistake, not an override. */
			for (size_t j = 0; j < i; j++) {
				size_t n = strcspn(params[i], "=");
				if (strncmp(params[i], params[j], n) == 0 && params[j][n] == '=') {
					cli_error("sweep", "--param %.*s is given twice", (int)n, params[i]);
					goto done;
				}
			}
			if (lb_sweep_spec_param_arg(&spec, params[i], err, sizeof err) < 0) {
				cli_error("sweep", "%s", err);
				goto done;
			}
		}
		if (seeds_arg) {
			free(spec.seeds);
			spec.seeds = NULL;
			if (lb_sweep_parse_seeds(seeds_arg, &spec.seeds, &spec.nseeds, err, sizeof err) < 0) {
				cli_error("sweep", "--%s", err);
				goto done;
			}
			spec.seeds_set = true;
		}
		if (args_arg) {
			sweep_strv_free(spec.args, spec.nargs);
			spec.args = NULL;
			spec.nargs = 0;
			if (lb_sweep_split_template(args_arg, &spec.args, &spec.nargs) < 0)
				goto done;
			spec.args_set = true;
		}
		if (!c.sweep_budget)
			c.sweep_budget = spec.sweep_budget;
	}
	if (lb_config_load(c.expdir, &cfg, err, sizeof err) < 0) {
		cli_error("sweep", "%s", err);
		goto done;
	}
	c.cfg = &cfg;
	{
		const char *mode = c.mode ? c.mode : cfg.mode ? cfg.mode : "local";
		c.slurm = strcmp(mode, "slurm") == 0;
		/* A task of the array runs its cell on its node, locally there: mode slurm again
		 * would submit the cell once more. */
		c.cell_local = c.slurm && one_cell >= 0;
		/* A backend's flag for a sweep in another mode would be ignored in every cell. */
		lb_run_request flags = {.image = c.image, .engine = c.engine,
					.partition = c.partition, .account = c.account,
					.qos = c.qos};
		if (lb_run_mode_flags_check(&flags, mode, "sweep", err, sizeof err) < 0) {
			cli_error("sweep", "%s", err);
			goto done;
		}
	}
	if (!resume) {
		if (dashdash + 1 < argc)
			for (int i = dashdash + 1; i < argc; i++)
				sweep_strv_push(&c.base_args, &c.nbase, argv[i]);
		else
			for (size_t i = 0; i < cfg.nargs; i++)
				sweep_strv_push(&c.base_args, &c.nbase, cfg.args[i]);
	}
	if (lb_sweep_plan_make(&spec, &c.plan, err, sizeof err) < 0) {
		cli_error("sweep", "%s", err);
		goto done;
	}
	/* A hash seed asked for is the cells' (lb_run_mode): one Python refuses is refused
	 * here, before any cell runs, rather than in every cell. */
	for (size_t i = 0; i < c.plan.ncells; i++) {
		const char *hs = NULL;
		for (size_t j = 0; j < c.o.nenv; j++)
			if (strncmp(c.o.env[j], "PYTHONHASHSEED=", 15) == 0)
				hs = c.o.env[j] + 15;
		for (size_t j = 0; j < c.plan.cells[i].nenv; j++)
			if (strncmp(c.plan.cells[i].env[j], "PYTHONHASHSEED=", 15) == 0)
				hs = c.plan.cells[i].env[j] + 15;
		if (hs && !lb_run_hashseed_valid(hs)) {
			cli_error("sweep", "cell %zu would run with PYTHONHASHSEED=%s: Python takes "
				  "\"random\" or an integer from 0 to 4294967295 (each cell gets the "
				  "value asked for)", i, hs);
			goto done;
		}
	}
	/* What each cell's run would refuse (mode, entry point, language), refused once here. */
	if (lb_run_dir_runnable(c.expdir, c.expdir, &cfg, c.mode, c.entry, NULL, NULL, err,
				sizeof err) < 0) {
		cli_error("sweep", "%s", err);
		goto done;
	}
	if (!c.o.budget)
		c.o.budget = cfg.budget;
	if (!ignore_table &&
	    lb_sweep_budget_check(c.plan.nconditions, c.plan.nseeds ? c.plan.nseeds : 1,
				  spec.iterations, c.sweep_budget, c.o.budget, err, sizeof err) < 0) {
		cli_error("sweep", "%s", err);
		goto done;
	}
	{
		/* The sandbox flags, checked once here rather than failing in every cell. */
		lb_sandbox *probe_sb = NULL;
		cli_sandbox_opts here = c.o;
		if (c.slurm && !c.cell_local)
			here.gpus = NULL; /* the job's GPUs, on its node: this host need not have them */
		int sr = lb_sandbox_new(&probe_sb) < 0 ? 125 : cli_sandbox_apply("sweep", &here, probe_sb);
		lb_sandbox_free(probe_sb);
		if (sr != 0) {
			rc = sr;
			goto done;
		}
	}
	size_t jobs = c.jobs;
	/* On Slurm --jobs is the array's %P: the cluster's CPUs, not this host's. */
	if (!c.slurm && lb_sweep_jobs_resolve(c.jobs, c.o.cpus, &jobs, err, sizeof err) < 0) {
		cli_error("sweep", "%s", err);
		goto done;
	}
	{
		char id[LB_SWEEP_ID_LEN];
		int r = sweep_digest(&c, id);
		if (r < 0) {
			cli_error("sweep", "cannot read the experiment directory '%s': %s", c.expdir,
				  strerror(-r));
			rc = 125;
			goto done;
		}
		if (resume && strcmp(id, c.id) != 0) {
			cli_error("sweep", "the experiment in %s, or the data a read-only -v volume of "
				  "the sweep mounts, changed since sweep %s started (it is now sweep "
				  "%s): its finished cells would not be the same experiment; start "
				  "the new sweep with labbox sweep", c.expdir, c.id, id);
			goto done;
		}
		snprintf(c.id, sizeof c.id, "%s", id);
	}
	{
		/* As a run refuses it, before the sweep's directory is made there. */
		char why[PATH_MAX + 96];
		if (lb_dir_chain_trusted(c.runs_dir, why, sizeof why) == -EPERM) {
			cli_error("sweep", "the runs directory '%s' is not safe to write in: %s; "
				  "every directory on its path must be root's or yours and closed "
				  "to others (or sticky, as /tmp); choose --runs-dir in a directory "
				  "of your own", c.runs_dir, why);
			rc = CLI_EXIT_USAGE;
			goto done;
		}
	}
	rc = 125;
	if (lb_sweep_dir_for(c.runs_dir, c.id, &c.sweep_dir) < 0 ||
	    lb_mkdir_p(c.sweep_dir, 0700) < 0) {
		cli_error("sweep", "cannot create the sweep directory for %s under %s: %s", c.id,
			  c.runs_dir, strerror(errno));
		goto done;
	}
	if (sweep_dir_own(c.sweep_dir) < 0) {
		rc = CLI_EXIT_USAGE; /* where --runs-dir put it, as a run's own refusal */
		goto done;
	}
	/* As a run refuses it: a sweep whose cells are all finished makes no run, and would
	 * believe the runs others could have put there. */
	if (lb_dir_open_to_others(c.runs_dir)) {
		cli_error("sweep", "the runs directory '%s' is writable by others (without the sticky "
			  "bit /tmp has): they could put runs of theirs in place of this sweep's; "
			  "chmod go-w it (or +t, shared), or choose another --runs-dir", c.runs_dir);
		rc = CLI_EXIT_USAGE;
		goto done;
	}
	{
		char abs[PATH_MAX];
		if (realpath(c.sweep_dir, abs)) {
			free(c.sweep_dir);
			c.sweep_dir = strdup(abs);
		}
	}
	if (one_cell >= 0) {
		if ((size_t)one_cell >= c.plan.ncells) {
			cli_error("sweep", "--cell %ld: sweep %s has cells 0 to %zu", one_cell, c.id,
				  c.plan.ncells - 1);
			rc = CLI_EXIT_USAGE;
			goto done;
		}
		c.argv = argv - 1;
		c.argc = argc + 1;
		rc = run_one_cell(&c, (size_t)one_cell);
		goto done;
	}
	if (lock_sweep(&c) < 0) {
		rc = CLI_EXIT_USAGE;
		goto done;
	}
	/* What finished before: the cells of the same sweep whose runs are still there. */
	if (!prev)
		prev = sweep_load_json(c.sweep_dir, "sweep.json");
	c.cells = json_object_new_array();
	size_t *todo = calloc(c.plan.ncells + 1, sizeof *todo);
	if (!todo || !c.cells)
		goto done;
	json_object *pcells = NULL;
	if (prev)
		json_object_object_get_ex(prev, "cells", &pcells);
	json_object *indexed = indexed_cells(&c, retry);
	c.attempts = cell_attempts(&c);
	/* Runs kept in another runs directory (beside this one, sharing its sweeps) are that
	 * directory's: a sweep asked to keep its runs here reuses none of them. */
	char runs_real[PATH_MAX];
	if (!realpath(c.runs_dir, runs_real))
		runs_real[0] = '\0';
	for (size_t i = 0; i < c.plan.ncells; i++) {
		json_object *pc = pcells ? json_object_array_get_idx(pcells, i) : NULL;
		const char *st = sweep_jstr(pc, "status"), *rd = sweep_jstr(pc, "run_dir");
		/* A cell's run is reused only as this user's labbox recorded it (its seal): a
		 * sweeps/ directory that came with the experiment names its own. */
		json_object *res = st && rd && lb_sweep_status_final(st, retry) && in_runs(rd, runs_real) &&
					   lb_record_run_sealed(rd, NULL)
					   ? sweep_load_json(rd, "result.json") : NULL;
		const char *rst = sweep_jstr(res, "status");
		if (!(res && rst && strcmp(rst, st) == 0)) {
			/* Not in sweep.json: a run of this cell made elsewhere (--cell). */
			char key[32];
			snprintf(key, sizeof key, "%zu", i);
			const char *ird = sweep_jstr(indexed, key);
			/* Its run was set aside for other packages: run the cell again. */
			if (st && strcmp(st, "environment_changed") == 0 && ird && rd && strcmp(ird, rd) == 0)
				ird = NULL;
			json_object_put(res);
			res = ird && in_runs(ird, runs_real) ? sweep_load_json(ird, "result.json") : NULL;
			json_object *sw = res ? json_object_object_get(res, "sweep") : NULL;
			json_object *swc = sw ? json_object_object_get(sw, "cell") : NULL;
			rst = sweep_jstr(res, "status");
			st = rst;
			if (!sw || strcmp(sweep_jstr(sw, "id") ? sweep_jstr(sw, "id") : "", c.id) != 0 || !swc ||
			    json_object_get_int64(swc) != (int64_t)i || !lb_sweep_status_final(rst, retry)) {
				json_object_put(res);
				res = NULL;
			}
		}
		if (res && rst && strcmp(rst, st) == 0) {
			json_object *rec = lb_sweep_cell_record(res);
			json_object *slot;
			if (json_object_object_get_ex(pc, "slot", &slot))
				json_object_object_add(rec, "slot", json_object_get(slot));
			if (json_object_object_get_ex(pc, "slurm", &slot))
				json_object_object_add(rec, "slurm", json_object_get(slot));
			json_object_object_add(rec, "reused", json_object_new_boolean(true));
			json_object_array_put_idx(c.cells, i, rec);
		} else {
			json_object_array_put_idx(c.cells, i, NULL);
			todo[c.ntodo++] = i;
		}
		json_object_put(res);
	}
	json_object_put(indexed);
	{
		json_object *prev_started = NULL;
		if (prev && json_object_object_get_ex(prev, "started_at", &prev_started) && prev_started)
			c.started_at = strdup(json_object_get_string(prev_started));
		else {
			char iso[40];
			lb_time_iso8601(lb_time_now(), iso);
			c.started_at = strdup(iso);
		}
		char runs_abs[PATH_MAX];
		if (!realpath(c.runs_dir, runs_abs))
			snprintf(runs_abs, sizeof runs_abs, "%s", c.runs_dir);
		c.invocation = json_object_new_object();
		json_object *inv = c.invocation;
		json_object_object_add(inv, "expdir", json_object_new_string(c.expdir));
		json_object_object_add(inv, "runs_dir", json_object_new_string(runs_abs));
		json_object_object_add(inv, "python", c.python ? json_object_new_string(c.python) : NULL);
		json_object_object_add(inv, "env_asked",
				       c.env_asked ? json_object_new_string(c.env_asked) : NULL);
		json_object_object_add(inv, "entry", c.entry ? json_object_new_string(c.entry) : NULL);
		json_object_object_add(inv, "mode", c.mode ? json_object_new_string(c.mode) : NULL);
		json_object_object_add(inv, "image", c.image ? json_object_new_string(c.image) : NULL);
		json_object_object_add(inv, "engine", c.engine ? json_object_new_string(c.engine) : NULL);
		json_object_object_add(inv, "partition", c.partition ? json_object_new_string(c.partition) : NULL);
		json_object_object_add(inv, "account", c.account ? json_object_new_string(c.account) : NULL);
		json_object_object_add(inv, "qos", c.qos ? json_object_new_string(c.qos) : NULL);
		json_object_object_add(inv, "metrics", sweep_strv_json(c.metrics, c.nmetrics));
		json_object_object_add(inv, "log_limit_bytes",
				       c.log_limit ? json_object_new_int64((int64_t)c.log_limit) : NULL);
		json_object_object_add(inv, "policy",
				       json_object_new_string(lb_check_policy_name((lb_check_policy)c.policy)));
		json_object_object_add(inv, "trust_project", json_object_new_boolean(c.trust));
		json_object_object_add(inv, "runtime_gate",
				       json_object_new_string(lb_gate_mode_name((lb_gate_mode)c.runtime_gate)));
		json_object_object_add(inv, "budget_s", c.o.budget > 0 ? json_object_new_double(c.o.budget) : NULL);
		json_object_object_add(inv, "sweep_budget_s",
				       c.sweep_budget > 0 ? json_object_new_double(c.sweep_budget) : NULL);
		json_object_object_add(inv, "jobs", json_object_new_int64((int64_t)jobs));
		json_object_object_add(inv, "iterations",
				       spec.iterations ? json_object_new_int64(spec.iterations) : NULL);
		json_object_object_add(inv, "base_args", sweep_strv_json(c.base_args, c.nbase));
		json_object_object_add(inv, "sandbox", cli_sandbox_json(&c.o));
		json_object_object_add(inv, "retry_failed", json_object_new_boolean(retry));
		json_object_object_add(inv, "ignore_budget_table", json_object_new_boolean(ignore_table));
	}
	c.argv = argv - 1;
	c.argc = argc + 1;
	c.tty = isatty(2) && !c.json;
	c.prev = prev;
	/* Unreachable is refused before the sweep says it runs: nothing runs anywhere. */
	if (c.slurm && !plan_only && c.ntodo && (rc = sweep_slurm_reach(&c)) != 0) {
		free(todo);
		goto done;
	}
	if (sweep_write_doc(&c, "running", NULL) < 0) {
		cli_error("sweep", "cannot write %s/sweep.json", c.sweep_dir);
		free(todo);
		goto done;
	}
	if (plan_only) {
		/* The sweep exists and says what it will run; cells come later (--cell N, as the
		 * tasks of a job array, or --resume). */
		rc = c.slurm ? sweep_slurm_plan(&c, todo, c.ntodo) : 0;
		free(todo);
		if (rc)
			goto done;
		rc = sweep_write_doc(&c, "planned", &final) < 0 ? 125 : 0;
		if (c.json)
			cli_json_print(final);
		else
			print_summary(&c, final);
		goto done;
	}
	if (c.ntodo < c.plan.ncells)
		sweep_progress_line(&c, "sweep %s: %zu of %zu cells finished already; running the other %zu",
			      c.id, c.plan.ncells - c.ntodo, c.plan.ncells, c.ntodo);
	else if (c.slurm)
		sweep_progress_line(&c, "sweep %s: %zu conditions x %zu seeds = %zu cells, one Slurm "
				    "array%s", c.id, c.plan.nconditions, c.plan.nseeds, c.plan.ncells,
				    jobs ? "" : " (no limit on tasks at once)");
	else
		sweep_progress_line(&c, "sweep %s: %zu conditions x %zu seeds = %zu cells, %zu at a time",
			      c.id, c.plan.nconditions, c.plan.nseeds, c.plan.ncells,
			      jobs < c.ntodo ? jobs : c.ntodo);
	c.disk_jobs = jobs && jobs < c.ntodo ? jobs : c.ntodo;
	/* Only labbox's own sandbox makes the cell's cgroup; a container's or another host's
	 * cells keep the affinity alone. */
	const char *cell_mode = c.mode ? c.mode : c.cfg && c.cfg->mode ? c.cfg->mode : "local";
	if (strcmp(cell_mode, "local") == 0)
		c.share_enforced_by = lb_sandbox_cpuset_enforcer();
	lb_sweep_local lc = {.jobs = jobs, .cpus = c.o.cpus, .sweep_budget = c.sweep_budget,
			     .run_cell = run_cell, .on_event = on_event, .ctx = &c};
	lb_sweep_local_result lr;
	memset(&lr, 0, sizeof lr);
	int r = 0;
	bool reported = false, lost = false;
	if (c.slurm && c.ntodo) {
		lb_sweep_slurm_result sr;
		int src = sweep_slurm_run(&c, todo, c.ntodo, &sr);
		lr.stop_signal = sr.stop_signal;
		lr.budget_exceeded = sr.budget_exceeded;
		lost = sr.lost_contact;
		if (src) {
			r = -EHOSTUNREACH;
			rc = src;
			reported = true; /* sweep_slurm_run said why */
		}
	} else if (c.ntodo) {
		/* One connection held for the whole sweep: the cells' own then neither rebuild the
		 * WAL's index nor checkpoint (with its syncs) at every end (docs/decisions.md).
		 * Stopped once the sweep's document is final (its checkpoint, signals unblocked
		 * again, must not stand between the last cell and that document). */
		LB_AUTOFREE char *ipath = NULL;
		if (c.ntodo > 1 && lb_index_path_for(c.runs_dir, &ipath) == 0)
			lb_index_keeper_start(ipath, &keeper);
		r = lb_sweep_run_local(&lc, todo, c.ntodo, &lr, err, sizeof err);
	}
	free(todo);
	if (c.tty)
		fputs("\r\033[K", stderr);
	if (r < 0 && !reported) {
		cli_error("sweep", "%s", err[0] ? err : strerror(-r));
		rc = r == -EINVAL ? CLI_EXIT_USAGE : 125;
	}
	flag_other_packages(&c, c.newest);
	size_t ncompleted = 0;
	for (size_t i = 0; i < c.plan.ncells; i++) {
		const char *st = sweep_jstr(json_object_array_get_idx(c.cells, i), "status");
		ncompleted += st && strcmp(st, "completed") == 0;
	}
	const char *status;
	if (lost) {
		status = "interrupted";
		rc = LB_EXIT_INFRA;
	} else if (lr.stop_signal) {
		status = "interrupted";
		rc = 128 + lr.stop_signal;
	} else if (lr.budget_exceeded) {
		status = "timeout";
		rc = LB_EXIT_TIMEOUT;
	} else if (c.usage_failure || r < 0) {
		status = "failed";
		rc = r < 0 ? rc : c.usage_rc;
	} else if (ncompleted == c.plan.ncells) {
		status = "completed";
		rc = 0;
	} else {
		status = "failed";
		rc = LB_EXIT_FAILED;
	}
	if (sweep_write_doc(&c, status, &final) < 0)
		cli_error("sweep", "warning: cannot write %s/sweep.json", c.sweep_dir);
	lb_index_keeper_stop(&keeper);
	if (c.json)
		cli_json_print(final);
	else
		print_summary(&c, final);
done:
	lb_index_keeper_stop(&keeper); /* idempotent; here for the paths that jump to done */
	json_object_put(final);
	json_object_put(prev);
	json_object_put(c.cells);
	json_object_put(c.attempts);
	json_object_put(c.invocation);
	if (c.lock_fd >= 0)
		close(c.lock_fd);
	lb_config_free(&cfg);
	lb_sweep_plan_free(&c.plan);
	lb_sweep_spec_free(&spec);
	lb_sweep_spec_free(&cli_spec);
	sweep_strv_free(params, nparams);
	sweep_strv_free(c.base_args, c.nbase);
	free(c.python);
	free(c.env_asked);
	free(c.entry);
	free(c.mode);
	free(c.image);
	free(c.engine);
	free(c.partition);
	free(c.account);
	free(c.qos);
	json_object_put(c.slurm_block);
	sweep_strv_free(c.metrics, c.nmetrics);
	free(c.sweep_dir);
	free(c.started_at);
	cli_sandbox_opts_free(&c.o);
	return rc;
}
