/* sweep: grids of conditions x seeds, each cell one ordinary labbox run.
 *
 *   spec (labbox.yaml `sweep:` + --param/--seeds) -> plan (conditions x seeds, each cell's
 *   arguments and environment) -> id (experiment content + grid) -> cells run by an executor
 *   (here: forked children on local cores, each calling the run pipeline; a Slurm array
 *   later, each task one `labbox run`) -> each cell's result.json -> the sweep document
 *   (sweep.json: per condition and metric n, mean, std, 95% interval, min, max; failures;
 *   identical conditions).
 *
 * Planning (lb_sweep_plan_make) and running a cell (the executor's callback) are separate so
 * that any executor can run the same cells: a cell is fully described by its arguments,
 * environment and tag (lb_sweep_cell_tag), which are what a `labbox run` needs.
 * Functions return 0 or a negative errno; errors a user must fix come with one line in err. */
#ifndef LABBOX_SWEEP_H
#define LABBOX_SWEEP_H

#include "labbox/backend.h"

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct json_object;

#define LB_SWEEP_SCHEMA "labbox.sweep/1"
#define LB_SWEEP_MAX_PARAMS 32
#define LB_SWEEP_MAX_VALUES 1000 /* per parameter */
#define LB_SWEEP_MAX_SEEDS 10000
#define LB_SWEEP_MAX_CELLS 10000
#define LB_SWEEP_ID_LEN 17 /* 16 hex digits and NUL */

/* ---- the grid as asked for ---------------------------------------------------------------- */

typedef struct lb_sweep_param {
	char *name;
	char **values;
	size_t nvalues;
} lb_sweep_param;

typedef struct lb_sweep_spec {
	lb_sweep_param *params;
	size_t nparams;
	long *seeds;
	size_t nseeds;
	bool seeds_set;
	/* Argument template, one token per element ("--lr", "{lr}"); NULL: the default, each
	 * parameter as `--NAME VALUE` and the seed as `--seed S`. */
	char **args;
	size_t nargs;
	bool args_set;
	/* Environment template: "NAME=template" elements. */
	char **env;
	size_t nenv;
	long iterations;     /* per condition, for the compute-budget table; 0: not given */
	double sweep_budget; /* `sweep: budget:`; 0: none */
} lb_sweep_spec;

void lb_sweep_spec_free(lb_sweep_spec *s);
/* "NAME=V1,V2,...": a parameter from the command line. One of the same name (from
 * labbox.yaml) has its values replaced; a new one is appended. -EINVAL with err for an empty
 * name or value, a name that is not [A-Za-z_][A-Za-z0-9_.-]*, or a value given twice. */
int lb_sweep_spec_param_arg(lb_sweep_spec *s, const char *arg, char *err, size_t errlen);
/* A parameter with its values (copied), replacing one of the same name; the checks of
 * lb_sweep_spec_param_arg. For values that hold commas (from labbox.yaml, or a sweep.json
 * being resumed). */
int lb_sweep_spec_set_param(lb_sweep_spec *s, const char *name, const char *const *values,
			    size_t n, char *err, size_t errlen);
/* Seeds "0-4", "0,3,7", "0-2,10": non-negative integers, ascending ranges, no repeats, at most
 * LB_SWEEP_MAX_SEEDS. *out is malloc'd. */
int lb_sweep_parse_seeds(const char *text, long **out, size_t *n, char *err, size_t errlen);
/* An argument template as one string, split at blanks ("--lr {lr} --seed {seed}"). */
int lb_sweep_split_template(const char *text, char ***out, size_t *n);
/* The `sweep:` block of labbox.yaml text (other keys are ignored; a missing block leaves s
 * empty). -EINVAL with err naming the line for a malformed block. */
int lb_sweep_spec_load_yaml(lb_sweep_spec *s, const char *text, size_t len, char *err,
			    size_t errlen);
/* The same from EXPDIR/labbox.yaml (or .yml); a missing file is an empty block. */
int lb_sweep_spec_load(lb_sweep_spec *s, const char *expdir, char *err, size_t errlen);

/* ---- the plan ------------------------------------------------------------------------------ */

typedef struct lb_sweep_cell {
	size_t index;     /* position in the plan (condition-major, then seed) */
	size_t condition; /* index into the plan's conditions */
	bool has_seed;
	long seed;
	char **args; /* the template expanded: what follows the experiment's own base args */
	size_t nargs;
	char **env; /* NAME=VALUE */
	size_t nenv;
} lb_sweep_cell;

typedef struct lb_sweep_plan {
	size_t nparams;
	char **param_names;
	char ***param_values; /* [param]: its values, in order (the plan's own copies) */
	size_t *param_nvalues;
	size_t nconditions;
	char **condition_names;   /* "lr=0.1,model=mlp" ("all" for a grid without parameters) */
	char ***condition_values; /* [condition][param], pointing into param_values */
	long *seeds;
	size_t nseeds;
	lb_sweep_cell *cells;
	size_t ncells;
	char **args_template; /* as used (the default when the spec had none) */
	size_t nargs_template;
	char **env_template;
	size_t nenv_template;
} lb_sweep_plan;

/* Pure: the cells of a grid. -EINVAL with err for an empty grid, a parameter without values,
 * a name given twice, a template naming something that is neither a parameter nor {seed}, a
 * parameter (or the seeds) the template never passes, or more than LB_SWEEP_MAX_CELLS
 * cells. `{{` and `}}` in a template are literal braces. */
int lb_sweep_plan_make(const lb_sweep_spec *s, lb_sweep_plan *out, char *err, size_t errlen);
void lb_sweep_plan_free(lb_sweep_plan *p);
/* The plan as JSON: {parameters: [{name, values}], seeds, args_template, env_template,
 * conditions, cells}. */
struct json_object *lb_sweep_plan_json(const lb_sweep_plan *p);
/* What a cell's run records (result.json `sweep`, the index): {id, cell, condition, params:
 * {name: value}, seed}. */
struct json_object *lb_sweep_cell_tag(const lb_sweep_plan *p, size_t cell, const char *sweep_id);

/* The sweep's identity: sha256 of the experiment's content (every file under expdir except
 * .git, .labbox, __pycache__ and the paths in skip: labbox's own records when they live in
 * the experiment, by relative path and content; symbolic links by their target) and of the
 * plan and the strings in extra (entry, interpreter, base args...), its first 16 hex digits.
 * The same experiment and grid give the same id, so running the same command again finds
 * the cells it finished. */
int lb_sweep_id(const char *expdir, const char *const *skip, size_t nskip,
		const lb_sweep_plan *p, const char *const *extra, size_t nextra,
		char out[LB_SWEEP_ID_LEN]);

/* ---- statistics ---------------------------------------------------------------------------- */

typedef struct lb_sweep_stats {
	size_t n;
	double mean, min, max;
	bool has_spread; /* n >= 2 and the spread within the doubles: std and the interval are defined */
	double std;      /* sample standard deviation (n - 1) */
	double ci_low, ci_high; /* mean -+ t(0.975, n-1) * std / sqrt(n) */
} lb_sweep_stats;

/* Pure: statistics of n finite values (n >= 1; -EINVAL otherwise). */
int lb_sweep_stats_compute(const double *v, size_t n, lb_sweep_stats *out);
/* The two-sided 95% quantile of Student's t with df degrees of freedom (df >= 1). */
double lb_sweep_t975(unsigned df);

/* ---- the compute-budget table -------------------------------------------------------------- */

/* The seed's compute-budget table against the plan: with a sweep budget the whole plan
 * (conditions, seeds, iterations per condition) is checked against that budget's row; with a
 * per-cell budget only, each cell is one condition and one seed, so only the iterations are.
 * Returns 0 when it fits (or nothing is known), -E2BIG with err quoting the row otherwise. */
int lb_sweep_budget_check(size_t conditions, size_t seeds, long iterations, double sweep_budget,
			  double cell_budget, char *err, size_t errlen);

/* ---- cells and the sweep document ---------------------------------------------------------- */

/* A cell's record from its run's result.json: {status, run_id, run_dir, exit_code, wall_s,
 * metrics: {key: value}, failure: {class, summary} | null}. Metric keys are those of the run
 * index: stdout metrics by name (COND/NAME for a condition the experiment printed) and
 * results-file values by dotted path (FILE:path when the path is taken). */
struct json_object *lb_sweep_cell_record(struct json_object *result);
/* {metric: {n, mean, std, ci95, min, max, nonfinite}} over one condition's cell records
 * (lb_sweep_cell_record): the finite values of its completed cells (recs, n) and its
 * invalid_metrics cells (bad, nbad), the others counted in nonfinite, integers past 2^53 exact.
 * sweep.json's statistics and the report's of runs given by id are this one function. */
struct json_object *lb_sweep_condition_stats(struct json_object **recs, size_t n,
					     struct json_object **bad, size_t nbad);
/* Whether a cell with this status is finished for good: every verdict the experiment earned
 * (completed, failed, invalid_metrics, timeout, oom, rejected, disk_limit); not interrupted,
 * infra_error, running or a cell never run. retry_failed: only completed is. */
bool lb_sweep_status_final(const char *status, bool retry_failed);

/* The sweep document (sweep.json): cells is an array with one record per plan cell (null for
 * a cell not run yet), each as lb_sweep_cell_record plus what the executor adds; info holds
 * members copied to the top level (status, timestamps, invocation...). Computes per
 * condition and metric {n, mean, std, ci95: {low, high}, min, max, nonfinite}, the failures
 * with their class, and groups of conditions with identical results. */
struct json_object *lb_sweep_document(const lb_sweep_plan *p, const char *id,
				      struct json_object *cells, struct json_object *info);

/* The directory of a sweep beside the runs directory (RUNS/../sweeps/ID). *out malloc'd. */
int lb_sweep_dir_for(const char *runs_dir, const char *id, char **out);
/* The sweep directory that id names, whole or by a unique prefix, as every command resolves
 * a sweep id: 0 and *dir (malloc'd); -ENOENT (none), -EEXIST (a prefix of several, two named)
 * or -EINVAL (not an id), with err saying so; -ENOMEM. */
int lb_sweep_resolve(const char *runs_dir, const char *id, char **dir, char *err, size_t errlen);

/* A sweep.json that says "running" while no labbox holds its sweep's lock (killed, OOM, a
 * reboot) is settled: its unfinished cells are read from the run index (each cell's newest
 * run: its status, run_id, run_dir), counts and failures follow, the status becomes
 * "interrupted", and the document is sealed and written again. Every reader of a sweep calls
 * it first. 1 when it settled one, 0 when there was nothing to settle, or -errno. */
int lb_sweep_settle(const char *runs_dir, const char *sweep_dir);
/* The in-memory part of it: doc (a sweep.json) reconciled with the index's rows of its runs. */
int lb_sweep_reconcile(struct json_object *doc, struct json_object *rows);

/* ---- running cells on this machine --------------------------------------------------------- */

/* The CPUs slot `slot` of a sweep may use: the CPUs in avail taken in order, slot s getting
 * those from floor(s * share) to ceil((s + 1) * share) - 1 (wrapping), so slots of one CPU
 * each are disjoint and fractional shares pack. Pure. */
void lb_sweep_slot_cpus(const cpu_set_t *avail, size_t slot, double share, cpu_set_t *out);
/* Cells at once without oversubscribing ncpus CPUs when each cell takes cpus (0: one). */
size_t lb_sweep_default_jobs(size_t ncpus, double cpus);

/* Seconds left, from the walls of finished cells, the elapsed time and TIME_ESTIMATE of the
 * running ones (estimate < 0: none) and the number pending, run jobs at a time; < 0 when
 * nothing is known yet. Pure. */
double lb_sweep_eta(const double *finished_wall, size_t nfinished, const double *running_elapsed,
		    const double *running_estimate, size_t nrunning, size_t npending, size_t jobs);

/* TIME_ESTIMATE lines in a cell's output, fed in chunks as they arrive. */
typedef struct lb_sweep_estimate_scan {
	char line[256];
	size_t len;
	bool overlong;
} lb_sweep_estimate_scan;
/* Returns the estimate in seconds of the last complete `TIME_ESTIMATE: Xs` line in the
 * chunk, or -1 when it held none. */
double lb_sweep_estimate_feed(lb_sweep_estimate_scan *s, const char *data, size_t len);

#define LB_SWEEP_CPULIST_MAX 4096
typedef struct lb_sweep_slot {
	size_t index;
	double cpus;     /* this cell's share */
	cpu_set_t cpuset; /* its affinity */
	/* "0" or "0-1": the whole list (its cpuset cgroup is written from it), which for any
	 * set of CPU_SETSIZE CPUs fits. */
	char cpulist[LB_SWEEP_CPULIST_MAX];
} lb_sweep_slot;

/* What the child running a cell tells the sweep (one line each on report_fd). */
int lb_sweep_report_estimate(int report_fd, double seconds);
int lb_sweep_report_done(int report_fd, int exit_code, const char *run_id, const char *run_dir);
/* The cell could not become a run (a usage or configuration error): one line saying why. */
int lb_sweep_report_error(int report_fd, const char *message);
/* A Slurm task's cell has no pipe to the sweep: its latest TIME_ESTIMATE is kept in a file of
 * the sweep's (estimates/N on the shared file system), overwritten in place, so however many
 * lines the experiment prints the file stays one record. */
int lb_sweep_estimate_store(int fd, double seconds);
/* The estimate stored for CELL under DIR; < 0 when there is none (yet). */
double lb_sweep_estimate_load(const char *dir, size_t cell);

typedef enum lb_sweep_event_kind {
	LB_SWEEP_CELL_STARTED,
	LB_SWEEP_CELL_ESTIMATE,
	LB_SWEEP_CELL_FINISHED,
	LB_SWEEP_TICK, /* about once a second, for a live progress line */
	LB_SWEEP_STOPPING, /* a signal or the sweep budget: running cells are being ended */
	LB_SWEEP_SUBMITTED, /* slurm: the array was accepted (task: the job id) */
	LB_SWEEP_CELL_REQUEUED, /* slurm: Slurm started the cell's task again */
} lb_sweep_event_kind;

typedef struct lb_sweep_event {
	lb_sweep_event_kind kind;
	size_t cell;
	const lb_sweep_slot *slot;
	double estimate;       /* CELL_ESTIMATE */
	int exit_code;         /* CELL_FINISHED: the run's, or 128+N when the child was killed */
	const char *run_id;    /* CELL_FINISHED; NULL when the child never said */
	const char *run_dir;
	double wall;           /* CELL_FINISHED: seconds since it started */
	const char *message;   /* CELL_FINISHED: why no run was made (lb_sweep_report_error) */
	size_t running;
	int signal;            /* STOPPING: the signal, 0 for the sweep budget */
	double eta;            /* TICK and FINISHED: lb_sweep_eta, < 0 unknown */
	/* slurm (slot is NULL there): the task ("JOB_K"), its node, its last state as squeue
	 * showed it ("" when squeue no longer shows it), how often Slurm started it again, and
	 * whether this sweep asked it to stop (a signal, the sweep budget). */
	const char *task, *node, *state;
	int requeues;
	bool stopped_by_us;
} lb_sweep_event;

typedef struct lb_sweep_local {
	size_t jobs;
	double cpus;         /* per cell (--cpus); 0: the CPUs divided among the jobs */
	double sweep_budget; /* seconds for the whole sweep; 0: none */
	/* Runs cell in a forked child, in its own process group, with its affinity set already;
	 * returns the child's exit status. It reports through report_fd. */
	int (*run_cell)(void *ctx, size_t cell, const lb_sweep_slot *slot, int report_fd);
	/* Returns nonzero to start no more cells (the running ones finish). */
	int (*on_event)(void *ctx, const lb_sweep_event *ev);
	void *ctx;
} lb_sweep_local;

/* The number of cells at once: jobs (0: lb_sweep_default_jobs of the CPUs this process may
 * use), refused with -EINVAL and err when jobs cells of cpus each (0: the CPUs divided among
 * them, at least one each) would oversubscribe them. */
int lb_sweep_jobs_resolve(size_t jobs, double cpus, size_t *out, char *err, size_t errlen);

typedef struct lb_sweep_local_result {
	int stop_signal;      /* the first SIGINT/SIGTERM/SIGHUP received, 0 for none */
	bool budget_exceeded; /* the sweep budget ended it */
	size_t started, finished;
} lb_sweep_local_result;

/* Runs the cells listed in todo (plan indices) at most jobs at a time. On SIGINT, SIGTERM or
 * SIGHUP, or when the sweep budget is spent, starts nothing more and passes the signal
 * (SIGTERM for the budget) to the running cells, whose runs then end as interrupted with
 * their records, and waits for them. -EINVAL with err for a plan this machine cannot run. */
int lb_sweep_run_local(const lb_sweep_local *cfg, const size_t *todo, size_t ntodo,
		       lb_sweep_local_result *out, char *err, size_t errlen);

/* ---- running cells as one Slurm job array -------------------------------------------------- */

typedef struct lb_sweep_slurm {
	/* The job's settings and one cell per entry of todo, in that order: array task k runs
	 * plan cell todo[k]. */
	lb_slurm_submit submit;
	double poll_s;       /* squeue interval; 0: 0.5 s, as for one run */
	double sweep_budget; /* seconds from submission; 0: none */
	double grace;        /* the node's grace: a stop waits grace + 30 s before scancel */
	const char *estimates_dir; /* where running tasks' cells keep their TIME_ESTIMATE
				    * (lb_sweep_estimate_store); NULL: finished cells only */
	int (*on_event)(void *ctx, const lb_sweep_event *ev);
	void *ctx;
} lb_sweep_slurm;

typedef struct lb_sweep_slurm_task {
	char state[32], node[128];
	int requeues;
	bool started, finished, stopped_by_us;
	double t_start, wall;
} lb_sweep_slurm_task;

typedef struct lb_sweep_slurm_result {
	int stop_signal;      /* the first SIGINT/SIGTERM/SIGHUP, 0 for none */
	bool budget_exceeded;
	bool lost_contact;    /* squeue failed for two minutes: the array was cancelled */
	char job_id[32];
	size_t finished;
} lb_sweep_slurm_result;

/* Submits the cells as one array (one sbatch call), then waits with squeue until every task
 * is over, reporting SUBMITTED, CELL_STARTED (RUNNING on a node), CELL_REQUEUED,
 * CELL_FINISHED and TICK. On SIGINT, SIGTERM or SIGHUP, or when the sweep budget is spent,
 * pending tasks are cancelled and running ones get SIGTERM (the node's labbox ends its run as
 * interrupted, with its records), then scancel after the grace. tasks has ntodo entries; cmd
 * (may be NULL) gets the sbatch command line. -EHOSTUNREACH with err when sbatch refused. */
int lb_sweep_run_slurm(const lb_sweep_slurm *cfg, const size_t *todo, size_t ntodo,
		       lb_sweep_slurm_task *tasks, struct json_object *cmd,
		       lb_sweep_slurm_result *out, char *err, size_t errlen);

#endif
