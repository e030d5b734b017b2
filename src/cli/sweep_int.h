/* labbox sweep's own parts, shared by sweep.c (the command, local cores) and sweep_slurm.c
 * (the cells as one Slurm job array). Private to the command. */
#ifndef LABBOX_CLI_SWEEP_INT_H
#define LABBOX_CLI_SWEEP_INT_H

#include "cli.h"
#include "labbox/config.h"
#include "labbox/sweep.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sweep_ctx {
	cli_sandbox_opts o;
	const char *runs_dir;
	char expdir[PATH_MAX];
	char *python, *entry, *mode, *image, *engine;
	char **metrics; /* --metrics: declared for every cell */
	size_t nmetrics;
	uint64_t log_limit;
	int policy;
	int runtime_gate; /* lb_gate_mode (--runtime-gate); 0: the policy's default */
	char *env_asked;  /* --env auto|NAME|PATH: the Python environment, as for run */
	bool trust;
	char **base_args; /* after --, else labbox.yaml's args */
	size_t nbase;
	double budget, sweep_budget;
	size_t jobs;
	/* Cells that may run at once on this host: the default disk limit is shared by them. */
	size_t disk_jobs;
	lb_sweep_plan plan;
	char id[LB_SWEEP_ID_LEN];
	char *sweep_dir;
	int lock_fd;
	json_object *cells; /* one record per plan cell, null when not run */
	/* {"N": [{run_id, status, class, summary}]}: the runs of cell N that did not complete,
	 * newest first, as the index had them when this invocation started */
	json_object *attempts;
	json_object *invocation;
	char *started_at;
	char **argv;
	int argc;
	/* progress */
	bool tty, json;
	size_t ntodo, done, failed, running;
	double eta;
	double doc_written_at; /* lb_time_monotonic of the last sweep.json written */
	bool doc_dirty;        /* a cell ended since: written at the next tick */
	bool usage_failure; /* a cell could not become a run: stop starting others */
	bool ignore_table;  /* --ignore-budget-table, kept for --resume */
	bool accept_grants; /* --accept-grants: resume an unsealed sweep.json as it says */
	/* The resumed sweep.json's seal did not match: its expdir is the record's choice, and
	 * the git record follows no repository above it (lb_run_request.origin_untrusted). */
	bool origin_untrusted;
	int usage_rc;
	/* mode slurm */
	bool slurm;       /* the sweep's cells are a Slurm job array */
	bool cell_local;  /* --cell of a slurm sweep: the node's own run of the cell */
	char *partition, *account, *qos;
	const lb_exp_config *cfg;
	json_object *slurm_block; /* sweep.json's slurm: the job, its array, its tasks */
	json_object *prev;        /* the sweep.json found when it started, NULL: none */
	size_t newest;            /* the cell that completed last in this invocation, SIZE_MAX: none */
	/* what holds a local cell to its slot's CPUs: a cpuset cgroup's name, NULL: the affinity */
	const char *share_enforced_by;
} sweep_ctx;

void sweep_strv_free(char **v, size_t n);
int sweep_strv_push(char ***v, size_t *n, const char *s);
json_object *sweep_strv_json(char *const *v, size_t n);
const char *sweep_jstr(json_object *o, const char *key);
double sweep_jnum(json_object *o, const char *key);
json_object *sweep_load_json(const char *dir, const char *name);
void sweep_fmt_duration(double s, char out[32]);
void sweep_live_line(sweep_ctx *c);
void sweep_progress_line(sweep_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sweep_write_doc(sweep_ctx *c, const char *status, json_object **keep);
/* sweep.json as it stands while cells run, at most once a second (SWEEP_DOC_INTERVAL). */
void sweep_note_progress(sweep_ctx *c);

/* sweep_slurm.c. The cluster answers (else 125 with the reason, printed). */
int sweep_slurm_reach(sweep_ctx *c);
/* --plan-only: writes the batch script the array would run into the sweep directory and
 * sets the slurm block (script, command) without submitting; prints the script unless
 * --json. 0, or an exit status. */
int sweep_slurm_plan(sweep_ctx *c, const size_t *todo, size_t ntodo);
/* Runs the cells todo as one job array, recording each as it ends. 0, or an exit status for
 * a failed submission; out says how it ended. */
int sweep_slurm_run(sweep_ctx *c, const size_t *todo, size_t ntodo, lb_sweep_slurm_result *out);

#endif
