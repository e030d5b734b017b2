/* labbox sweep --mode slurm: the cells to run as one Slurm job array (one sbatch call), task
 * k running `labbox sweep --resume ID --cell N --json` on its node, which makes cell N's run
 * there as `labbox run` would (its own run directory, result.json and index row on the shared
 * file system, the node's sandbox, the budget and its partial results). The sweep waits with
 * squeue, shows the same progress, and reads each cell's run back into sweep.json. */
#include "cli.h"
#include "labbox/record.h"
#include "labbox/run.h"
#include "labbox/util.h"
#include "sweep_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As mode slurm for one run: the job's time limit is the budget, its grace and what the
 * node's labbox needs around them; Slurm signals a minute ahead of it. */
#define JOB_OVERHEAD_S 120.0
#define SIGNAL_LEAD_S 60
#define JOB_MEM_EXTRA ((uint64_t)64 << 20)

typedef struct array_setup {
	char labbox[PATH_MAX];
	char runs_abs[PATH_MAX];
	char dir[PATH_MAX]; /* SWEEP_DIR/slurm */
	char cluster[128], version[64];
	char submitted_at[40];
	char name[64]; /* --job-name */
	lb_slurm_submit submit;
	lb_slurm_cell *cells;
	char ***argv;
	char **dirs;
	size_t n;
	const size_t *todo;
	size_t *task_of; /* [plan cell]: its array index */
	lb_sweep_slurm_task *tasks;
	sweep_ctx *c;
} array_setup;

int sweep_slurm_reach(sweep_ctx *c)
{
	char err[1024], cluster[128], version[64];
	const char *part = c->partition ? c->partition : c->cfg ? c->cfg->slurm_partition : NULL;
	if (lb_slurm_reach(part, cluster, version, err, sizeof err) < 0) {
		cli_error("sweep", "mode slurm: %s (nothing was run, here or there)", err);
		return LB_EXIT_INFRA;
	}
	return 0;
}

static void setup_free(array_setup *a)
{
	for (size_t i = 0; a->argv && i < a->n; i++)
		lb_slurm_argv_free(a->argv[i]);
	for (size_t i = 0; a->dirs && i < a->n; i++)
		free(a->dirs[i]);
	free(a->argv);
	free(a->dirs);
	free(a->cells);
	free(a->task_of);
}

/* The job's resources: the sandbox flags, else labbox.yaml's slurm: block. */
static int resources(sweep_ctx *c, lb_slurm_submit *s)
{
	const lb_exp_config *cfg = c->cfg;
	s->partition = c->partition ? c->partition : cfg ? cfg->slurm_partition : NULL;
	s->account = c->account ? c->account : cfg ? cfg->slurm_account : NULL;
	s->qos = c->qos ? c->qos : cfg ? cfg->slurm_qos : NULL;
	double cpus = c->o.cpus > 0 ? c->o.cpus : cfg ? cfg->slurm_cpus : 0;
	s->cpus = cpus > 0 ? (unsigned)ceil(cpus) : 0;
	uint64_t mem = c->o.memory ? c->o.memory : cfg ? cfg->slurm_memory : 0;
	s->mem_bytes = mem ? mem + JOB_MEM_EXTRA : 0;
	const char *g = c->o.gpus;
	if (g && strcmp(g, "all") == 0) {
		cli_error("sweep", "--gpus all names no number of GPUs for a Slurm job: give as many "
			  "indices as GPUs wanted per cell (--gpus 0,1 asks for two)");
		return CLI_EXIT_USAGE;
	}
	s->gpus = 0;
	if (g) {
		/* As many GPUs as the list names; a resumed sweep's value is parsed as a flag's. */
		lb_gpu_spec spec;
		char why[160];
		if (lb_sandbox_gpus_parse(g, &spec, why, sizeof why) < 0) {
			cli_error("sweep", "--gpus %s", why);
			return CLI_EXIT_USAGE;
		}
		s->gpus = (unsigned)spec.n;
	} else if (cfg) {
		s->gpus = cfg->slurm_gpus;
	}
	double grace = c->o.grace_set ? c->o.grace : 5.0;
	s->time_limit_s = c->o.budget > 0 ? c->o.budget + grace + JOB_OVERHEAD_S : 0;
	s->signal_lead_s = SIGNAL_LEAD_S;
	s->max_parallel = (unsigned)c->jobs;
	return 0;
}

static int setup(sweep_ctx *c, const size_t *todo, size_t ntodo, array_setup *a)
{
	char err[1024];
	memset(a, 0, sizeof *a);
	a->c = c;
	a->todo = todo;
	a->n = ntodo;
	const char *runs = sweep_jstr(c->invocation, "runs_dir");
	/* Absolute: the nodes start elsewhere. */
	int r = lb_mkdir_p(runs ? runs : c->runs_dir, 0700);
	if (r < 0 || !realpath(runs ? runs : c->runs_dir, a->runs_abs)) {
		cli_error("sweep", "cannot create the runs directory %s: %s", runs ? runs : c->runs_dir,
			  strerror(r < 0 ? -r : errno));
		return LB_EXIT_INFRA;
	}
	if (lb_slurm_place_labbox(a->runs_abs, a->labbox, err, sizeof err) < 0) {
		cli_error("sweep", "mode slurm: %s", err);
		return LB_EXIT_INFRA;
	}
	snprintf(a->dir, sizeof a->dir, "%s/slurm", c->sweep_dir);
	r = resources(c, &a->submit);
	if (r)
		return r;
	a->cells = calloc(ntodo, sizeof *a->cells);
	a->argv = calloc(ntodo, sizeof *a->argv);
	a->dirs = calloc(ntodo, sizeof *a->dirs);
	a->task_of = calloc(c->plan.ncells, sizeof *a->task_of);
	if (!a->cells || !a->argv || !a->dirs || !a->task_of)
		return LB_EXIT_INFRA;
	for (size_t k = 0; k < ntodo; k++)
		a->task_of[todo[k]] = k;
	for (size_t k = 0; k < ntodo; k++) {
		char cell[32];
		snprintf(cell, sizeof cell, "%zu", todo[k]);
		if (asprintf(&a->dirs[k], "%s/cell-%zu", a->dir, todo[k]) < 0) {
			a->dirs[k] = NULL;
			return LB_EXIT_INFRA;
		}
		if ((r = lb_mkdir_p(a->dirs[k], 0700)) < 0) {
			cli_error("sweep", "cannot create %s: %s", a->dirs[k], strerror(-r));
			return LB_EXIT_INFRA;
		}
		/* What an earlier submission's task printed is not this one's. */
		char old[PATH_MAX + 16];
		snprintf(old, sizeof old, "%s/node.json", a->dirs[k]);
		unlink(old);
		size_t n = 0;
		/* --accept-grants: this labbox wrote the sweep.json the task reads (or checked its
		 * seal), and a node may keep another cache, so another record key. */
		const char *words[] = {a->labbox, "sweep", "--resume", c->id, "--cell", cell,
				       "--runs-dir", a->runs_abs, "--json", "--accept-grants"};
		for (size_t i = 0; i < 10; i++)
			if (sweep_strv_push(&a->argv[k], &n, words[i]) < 0)
				return LB_EXIT_INFRA;
		a->cells[k] = (lb_slurm_cell){.argv = a->argv[k], .dir = a->dirs[k]};
	}
	a->submit.dir = a->dir;
	a->submit.cells = a->cells;
	a->submit.ncells = ntodo;
	snprintf(a->name, sizeof a->name, "labbox-sweep-%s", c->id);
	a->submit.name = a->name;
	return 0;
}

/* sweep.json's slurm block, before anything is known of the tasks. */
static json_object *block_new(array_setup *a, json_object *cmd)
{
	sweep_ctx *c = a->c;
	json_object *b = json_object_new_object();
	json_object_object_add(b, "job_id", NULL);
	char spec[64];
	if (a->submit.max_parallel)
		snprintf(spec, sizeof spec, "0-%zu%%%u", a->n - 1, a->submit.max_parallel);
	else
		snprintf(spec, sizeof spec, "0-%zu", a->n - 1);
	json_object_object_add(b, "array", a->n > 1 ? json_object_new_string(spec) : NULL);
	json_object_object_add(b, "job_name", json_object_new_string(a->submit.name));
	json_object_object_add(b, "partition", a->submit.partition ? json_object_new_string(a->submit.partition) : NULL);
	json_object_object_add(b, "account", a->submit.account ? json_object_new_string(a->submit.account) : NULL);
	json_object_object_add(b, "qos", a->submit.qos ? json_object_new_string(a->submit.qos) : NULL);
	json_object_object_add(b, "time_limit_s", a->submit.time_limit_s > 0
				  ? json_object_new_int64((int64_t)(ceil(a->submit.time_limit_s / 60.0) * 60)) : NULL);
	json_object_object_add(b, "command", json_object_get(cmd));
	char script[PATH_MAX + 16];
	snprintf(script, sizeof script, "%s/job.sh", a->dir);
	json_object_object_add(b, "script", json_object_new_string(script));
	json_object_object_add(b, "labbox", json_object_new_string(a->labbox));
	json_object *prev_jobs = json_object_new_array(), *pb, *pj;
	/* Earlier submissions of this sweep (an interrupted one that --resume continues). */
	if (c->prev && json_object_object_get_ex(c->prev, "slurm", &pb) && pb) {
		if (json_object_object_get_ex(pb, "previous_jobs", &pj) && pj)
			for (size_t i = 0; i < json_object_array_length(pj); i++)
				json_object_array_add(prev_jobs, json_object_get(json_object_array_get_idx(pj, i)));
		if (sweep_jstr(pb, "job_id"))
			json_object_array_add(prev_jobs, json_object_new_string(sweep_jstr(pb, "job_id")));
	}
	json_object_object_add(b, "previous_jobs", prev_jobs);
	json_object *tasks = json_object_new_array();
	for (size_t k = 0; k < a->n; k++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "task", NULL);
		json_object_object_add(t, "array_index", json_object_new_int64((int64_t)k));
		json_object_object_add(t, "cell", json_object_new_int64((int64_t)a->todo[k]));
		json_object_object_add(t, "node", NULL);
		json_object_object_add(t, "state", json_object_new_string("PLANNED"));
		json_object_object_add(t, "requeues", json_object_new_int(0));
		json_object_array_add(tasks, t);
	}
	json_object_object_add(b, "tasks", tasks);
	return b;
}

int sweep_slurm_plan(sweep_ctx *c, const size_t *todo, size_t ntodo)
{
	array_setup a;
	int rc = ntodo ? setup(c, todo, ntodo, &a) : 0;
	if (rc || !ntodo) {
		if (!ntodo)
			memset(&a, 0, sizeof a);
		setup_free(&a);
		return rc;
	}
	a.submit.plan_only = true;
	json_object *cmd = json_object_new_array();
	char job[32], err[1024];
	int r = lb_slurm_submit_array(&a.submit, cmd, job, err, sizeof err);
	if (r < 0) {
		cli_error("sweep", "mode slurm: %s", err);
		rc = r == -EINVAL ? CLI_EXIT_USAGE : LB_EXIT_INFRA;
	} else {
		json_object_put(c->slurm_block);
		c->slurm_block = block_new(&a, cmd);
		char path[PATH_MAX + 16];
		snprintf(path, sizeof path, "%s/job.sh", a.dir);
		FILE *f = fopen(path, "r");
		lb_buf sh = {0};
		char buf[4096];
		size_t k;
		while (f && (k = fread(buf, 1, sizeof buf, f)) > 0)
			lb_buf_append(&sh, buf, k);
		if (f)
			fclose(f);
		json_object_object_add(c->slurm_block, "script_text",
				       json_object_new_string(sh.data ? sh.data : ""));
		if (!c->json) {
			cli_printf("labbox: sweep %s would be submitted as one Slurm array:\n ", c->id);
			for (size_t i = 0; i < json_object_array_length(cmd); i++)
				cli_printf(" %s", json_object_get_string(json_object_array_get_idx(cmd, i)));
			cli_printf("\n%s:\n", path);
			cli_print_block(sh.data ? sh.data : "");
		}
		lb_buf_free(&sh);
	}
	json_object_put(cmd);
	setup_free(&a);
	return rc;
}

/* ---- the tasks' ends ------------------------------------------------------------------------ */

/* The last line of a file of the task (node.err, Slurm's own output), for a summary. */
static void last_line(const char *path, char *out, size_t n)
{
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0])
			snprintf(out, n, "%s", line);
	}
	fclose(f);
}

/* The run a task made: what its labbox printed (node.json), else the newest run of the cell
 * that the index shows started since the submission (a labbox killed before it printed). */
static json_object *task_result(array_setup *a, size_t k)
{
	json_object *doc = sweep_load_json(a->dirs[k], "node.json");
	const char *rd = sweep_jstr(doc, "run_dir"), *id = sweep_jstr(doc, "id");
	char dir[PATH_MAX * 2] = "";
	if (rd)
		snprintf(dir, sizeof dir, "%s", rd);
	else if (id)
		snprintf(dir, sizeof dir, "%s/%s", a->runs_abs, id);
	json_object_put(doc);
	if (!dir[0]) {
		LB_AUTOFREE char *path = NULL;
		lb_index *ix = NULL;
		char err[256];
		if (lb_index_path_for(a->runs_abs, &path) == 0 && access(path, F_OK) == 0 &&
		    lb_index_open(path, &ix, err, sizeof err) == 0) {
			lb_index_filter f = {.sweep = a->c->id, .since = a->submitted_at};
			json_object *rows = NULL;
			if (lb_index_list(ix, &f, &rows, err, sizeof err) == 0) {
				for (size_t i = 0; !dir[0] && i < json_object_array_length(rows); i++) {
					json_object *row = json_object_array_get_idx(rows, i), *sw, *cl;
					if (json_object_object_get_ex(row, "sweep", &sw) && sw &&
					    json_object_object_get_ex(sw, "cell", &cl) && cl &&
					    json_object_get_int64(cl) == (int64_t)a->todo[k] &&
					    sweep_jstr(row, "run_dir"))
						snprintf(dir, sizeof dir, "%s", sweep_jstr(row, "run_dir"));
				}
				json_object_put(rows);
			}
			lb_index_close(ix);
		}
	}
	return dir[0] ? sweep_load_json(dir, "result.json") : NULL;
}

static void set_failure(json_object *rec, const char *status, const char *cls, const char *summary)
{
	json_object_object_add(rec, "status", json_object_new_string(status));
	json_object *f = json_object_new_object();
	json_object_object_add(f, "class", json_object_new_string(cls));
	json_object_object_add(f, "summary", json_object_new_string(summary));
	json_object_object_add(rec, "failure", f);
}

/* The cell's record from its run, with what Slurm says about the task: a task cancelled by
 * someone else, ended by its time limit or gone without a run is the cluster's doing, not
 * the code's, and says so. */
static json_object *cell_record(array_setup *a, size_t k, const lb_sweep_event *ev)
{
	json_object *res = task_result(a, k);
	json_object *rec = res ? lb_sweep_cell_record(res) : NULL;
	json_object_put(res);
	const char *st = ev->state && ev->state[0] ? ev->state : "gone from squeue";
	const char *node = ev->node && ev->node[0] ? ev->node : "no node";
	char why[1024];
	if (rec) {
		const char *rs = sweep_jstr(rec, "status");
		bool cut = !rs || strcmp(rs, "running") == 0 || strcmp(rs, "interrupted") == 0;
		if (rs && strcmp(rs, "running") == 0)
			json_object_object_add(rec, "status", json_object_new_string("interrupted"));
		if (cut && !ev->stopped_by_us && strcmp(st, "CANCELLED") == 0) {
			snprintf(why, sizeof why, "the Slurm task %s was cancelled outside labbox (on "
				 "%s); the cluster ended it, not the code: --resume runs it again",
				 ev->task, node);
			set_failure(rec, "infra_error", "slurm_cancelled", why);
		} else if (cut && !ev->stopped_by_us && strcmp(st, "TIMEOUT") == 0) {
			snprintf(why, sizeof why, "the Slurm task %s reached its time limit on %s",
				 ev->task, node);
			set_failure(rec, "timeout", "slurm_time_limit", why);
		} else if (cut && !ev->stopped_by_us && strcmp(st, "PREEMPTED") == 0) {
			snprintf(why, sizeof why, "the Slurm task %s was preempted on %s", ev->task, node);
			set_failure(rec, "interrupted", "slurm_preempted", why);
		}
		return rec;
	}
	rec = json_object_new_object();
	json_object_object_add(rec, "run_id", NULL);
	json_object_object_add(rec, "run_dir", NULL);
	json_object_object_add(rec, "exit_code", NULL);
	json_object_object_add(rec, "metrics", json_object_new_object());
	if (ev->stopped_by_us) {
		set_failure(rec, "interrupted", "interrupted",
			    "the cell's task was ended before its run was recorded");
	} else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
		snprintf(why, sizeof why, "the Slurm task %s ran out of memory on %s before its run "
			 "was recorded", ev->task, node);
		set_failure(rec, "oom", "oom", why);
	} else {
		char said[512], p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s/node.err", a->dirs[k]);
		last_line(p, said, sizeof said);
		snprintf(why, sizeof why, "the Slurm task %s ended %s on %s without a run%s%s",
			 ev->task, st, node, said[0] ? ": " : "", said);
		set_failure(rec, "infra_error",
			    strcmp(st, "CANCELLED") == 0 ? "slurm_cancelled" : "slurm_no_run", why);
	}
	return rec;
}

static json_object *task_json(const lb_sweep_event *ev, size_t k)
{
	json_object *t = json_object_new_object();
	json_object_object_add(t, "task", json_object_new_string(ev->task));
	json_object_object_add(t, "array_index", json_object_new_int64((int64_t)k));
	json_object_object_add(t, "cell", json_object_new_int64((int64_t)ev->cell));
	json_object_object_add(t, "node", ev->node && ev->node[0] ? json_object_new_string(ev->node) : NULL);
	json_object_object_add(t, "state", json_object_new_string(ev->state && ev->state[0] ? ev->state : "UNKNOWN"));
	json_object_object_add(t, "requeues", json_object_new_int(ev->requeues));
	return t;
}

static int on_event(void *vctx, const lb_sweep_event *ev)
{
	array_setup *a = vctx;
	sweep_ctx *c = a->c;
	json_object *tasks = json_object_object_get(c->slurm_block, "tasks");
	size_t k = ev->task && ev->kind != LB_SWEEP_SUBMITTED ? a->task_of[ev->cell] : 0;
	const lb_sweep_cell *cl = ev->task && ev->kind != LB_SWEEP_SUBMITTED ? &c->plan.cells[ev->cell] : NULL;
	char seed[32] = "";
	if (cl && cl->has_seed)
		snprintf(seed, sizeof seed, " seed=%ld", cl->seed);
	const char *cond = cl ? c->plan.condition_names[cl->condition] : "";
	c->running = ev->running;
	c->eta = ev->eta;
	switch (ev->kind) {
	case LB_SWEEP_SUBMITTED:
		json_object_object_add(c->slurm_block, "job_id", json_object_new_string(ev->task));
		json_object_object_add(c->slurm_block, "submitted_at", json_object_new_string(a->submitted_at));
		for (size_t i = 0; i < a->n; i++) {
			char t[64];
			snprintf(t, sizeof t, a->n == 1 ? "%s" : "%s_%zu", ev->task, i);
			json_object *tj = json_object_array_get_idx(tasks, i);
			json_object_object_add(tj, "task", json_object_new_string(t));
			json_object_object_add(tj, "state", json_object_new_string("PENDING"));
		}
		sweep_progress_line(c, "submitted Slurm job %s: one array of %zu cell%s (%s)", ev->task,
				    a->n, a->n == 1 ? "" : "s", sweep_jstr(c->slurm_block, "array")
				    ? sweep_jstr(c->slurm_block, "array") : "a single task");
		sweep_write_doc(c, "running", NULL);
		break;
	case LB_SWEEP_CELL_STARTED:
		json_object_array_put_idx(tasks, k, task_json(ev, k));
		if (!c->tty)
			sweep_progress_line(c, "cell %zu (%s%s) running on %s (task %s)", ev->cell, cond,
					    seed, ev->node, ev->task);
		else
			sweep_live_line(c);
		break;
	case LB_SWEEP_CELL_REQUEUED:
		json_object_array_put_idx(tasks, k, task_json(ev, k));
		sweep_progress_line(c, "cell %zu (%s%s): Slurm requeued task %s (restart %d); it "
				    "counts once, as its last attempt", ev->cell, cond, seed, ev->task,
				    ev->requeues);
		break;
	case LB_SWEEP_CELL_ESTIMATE:
		break;
	case LB_SWEEP_TICK:
		sweep_live_line(c);
		if (c->doc_dirty)
			sweep_note_progress(c);
		break;
	case LB_SWEEP_STOPPING:
		if (ev->signal)
			sweep_progress_line(c, "%s: cancelling Slurm job %s (running cells end as "
					    "interrupted; resume with labbox sweep --resume %s)",
					    strsignal(ev->signal), sweep_jstr(c->slurm_block, "job_id"),
					    c->id);
		else
			sweep_progress_line(c, "the sweep budget is spent: cancelling Slurm job %s "
					    "(resume with labbox sweep --resume %s)",
					    sweep_jstr(c->slurm_block, "job_id"), c->id);
		break;
	case LB_SWEEP_CELL_FINISHED: {
		c->done++;
		json_object_array_put_idx(tasks, k, task_json(ev, k));
		json_object *tj = task_json(ev, k);
		json_object *rec = cell_record(a, k, ev);
		json_object_object_del(tj, "cell");
		json_object_object_add(tj, "job_id", json_object_new_string(sweep_jstr(c->slurm_block, "job_id")));
		json_object_object_add(rec, "slurm", tj);
		json_object_object_add(rec, "reused", json_object_new_boolean(false));
		const char *status = sweep_jstr(rec, "status");
		if (!status || strcmp(status, "completed") != 0)
			c->failed++;
		json_object *fail;
		const char *cls = json_object_object_get_ex(rec, "failure", &fail) && fail
					  ? sweep_jstr(fail, "class") : NULL;
		char wall[32];
		/* A task that started and ended between two looks: the run's own wall time. */
		sweep_fmt_duration(ev->wall > 0 ? ev->wall : sweep_jnum(rec, "wall_s"), wall);
		sweep_progress_line(c, "cell %zu (%s%s) %s%s%s in %s on %s (task %s%s)%s%s", ev->cell,
				    cond, seed, status ? status : "?", cls ? ": " : "", cls ? cls : "",
				    wall, ev->node && ev->node[0] ? ev->node : "no node", ev->task,
				    ev->requeues ? ", requeued" : "",
				    sweep_jstr(rec, "run_id") ? ", run " : "",
				    sweep_jstr(rec, "run_id") ? sweep_jstr(rec, "run_id") : "");
		json_object_array_put_idx(c->cells, ev->cell, rec);
		sweep_note_progress(c);
		break;
	}
	}
	return 0;
}

int sweep_slurm_run(sweep_ctx *c, const size_t *todo, size_t ntodo, lb_sweep_slurm_result *out)
{
	memset(out, 0, sizeof *out);
	array_setup a;
	int rc = setup(c, todo, ntodo, &a);
	if (rc) {
		setup_free(&a);
		return rc;
	}
	LB_AUTOFREE lb_sweep_slurm_task *tasks = calloc(ntodo, sizeof *tasks);
	json_object *cmd = json_object_new_array();
	if (!tasks || !cmd) {
		json_object_put(cmd);
		setup_free(&a);
		return LB_EXIT_INFRA;
	}
	a.tasks = tasks;
	lb_time_iso8601(lb_time_now(), a.submitted_at);
	json_object_put(c->slurm_block);
	c->slurm_block = block_new(&a, cmd);
	/* Each task's cell keeps its TIME_ESTIMATE here (run_one_cell); old ones are gone first. */
	char est_dir[PATH_MAX];
	snprintf(est_dir, sizeof est_dir, "%s/estimates", c->sweep_dir);
	bool have_est = lb_mkdir_p(est_dir, 0700) == 0;
	for (size_t k = 0; have_est && k < ntodo; k++) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof p, "%s/%zu", est_dir, todo[k]);
		unlink(p);
	}
	lb_sweep_slurm sc = {
		.submit = a.submit,
		.estimates_dir = have_est ? est_dir : NULL,
		.grace = c->o.grace_set ? c->o.grace : 5.0,
		.sweep_budget = c->sweep_budget,
		.on_event = on_event,
		.ctx = &a,
	};
	char err[1024] = "";
	int r = lb_sweep_run_slurm(&sc, todo, ntodo, tasks, cmd, out, err, sizeof err);
	json_object_object_add(c->slurm_block, "command", json_object_get(cmd));
	json_object_put(cmd);
	if (r < 0) {
		cli_error("sweep", "mode slurm: %s (nothing was run)", err[0] ? err : strerror(-r));
		rc = r == -EINVAL ? CLI_EXIT_USAGE : LB_EXIT_INFRA;
	} else if (out->lost_contact) {
		cli_error("sweep", "mode slurm: lost contact with the Slurm controller (squeue -j %s "
			  "failed for two minutes); the job was cancelled and the unfinished cells "
			  "are recorded as interrupted: resume with labbox sweep --resume %s",
			  out->job_id, c->id);
		rc = LB_EXIT_INFRA;
	}
	setup_free(&a);
	return rc;
}
