/* report: one document of a sweep's or a list of runs' results, for people.
 *
 *   sweep.json (its per-condition statistics) or run directories (grouped by condition, the
 *   statistics of src/sweep/stats.c) -> the report (conditions x metrics statistics, the
 *   failures with their evidence, per-step series from run.log, reproducibility facts) ->
 *   HTML (self-contained: inline CSS and SVG, nothing fetched), Markdown or CSV.
 *
 * Reading never runs anything. Every string of a record is hostile input: HTML, Markdown and
 * CSV writers escape it, bytes that are not UTF-8 are shown as \xNN.
 * Functions return 0 or a negative errno; errors a user must fix come with one line in err. */
#ifndef LABBOX_REPORT_H
#define LABBOX_REPORT_H

#include "labbox/util.h"

#include <stdbool.h>
#include <stddef.h>

struct json_object;

#define LB_REPORT_MAX_CONDITIONS 10000
#define LB_REPORT_MAX_METRICS 200     /* the rest are counted in metrics_dropped */
#define LB_REPORT_MAX_SERIES 24       /* per-step series plotted */
#define LB_REPORT_MAX_POINTS 2000     /* per series and condition */
#define LB_REPORT_MAX_EVIDENCE 12     /* evidence lines kept per failure */

typedef struct lb_report_stat {
	bool present;   /* the condition reported the metric at all */
	size_t n;       /* finite values */
	size_t nonfinite;
	double mean, min, max; /* when n >= 1 */
	bool has_spread;       /* n >= 2 */
	double std, ci_low, ci_high;
	/* min and max as the integers they are where doubles would round them (past 2^53);
	 * empty otherwise */
	char min_int[24], max_int[24];
} lb_report_stat;

typedef struct lb_report_failure {
	char *condition, *run_id, *status, *class_, *summary;
	/* an earlier run of a sweep cell that was run again: the status the cell has now
	 * ("completed": it passed on a later attempt); NULL for a cell's own failure */
	char *then;
	bool has_seed;
	long seed;
	char **evidence;
	size_t nevidence;
} lb_report_failure;

/* A metric over steps: per condition the mean over its runs at each step. */
typedef struct lb_report_series {
	char *metric;
	char *x_label; /* "step", "epoch" ..., or "occurrence" for a repeated metric line */
	size_t *npoints; /* [condition] */
	double **x, **y, **count; /* [condition][point], x ascending */
} lb_report_series;

/* One reproducibility fact and its distinct values over the runs, with how many runs each. */
typedef struct lb_report_fact {
	char *name;
	size_t nvalues;
	char **values;
	size_t *runs;
} lb_report_fact;

typedef struct lb_report {
	char *title;  /* "sweep 1a2b..." or "3 runs" */
	char *source; /* what it was made from (an expdir, a sweep dir) */
	char *status; /* the sweep's status, NULL for runs */
	size_t nconditions;
	char **conditions;
	size_t *cells, *completed; /* [condition] */
	size_t *retried; /* [condition]: of the completed, those that completed only on a retry */
	size_t nmetrics, metrics_dropped;
	char **metrics;
	lb_report_stat *stats; /* [condition * nmetrics + metric] */
	size_t nfailures;
	lb_report_failure *failures;
	size_t nidentical;
	char **identical; /* messages of identical conditions, naming them */
	size_t *identical_group; /* [condition]: 1 + its group's index in identical, 0 none */
	size_t nseries;
	lb_report_series *series;
	size_t nfacts;
	lb_report_fact *facts;
	char *packages; /* environment.txt of the first run, NULL when none */
	size_t nsplits;
	char **splits; /* runs of one name kept apart by recorded settings: what differs */
	size_t runs_read;
} lb_report;

void lb_report_free(lb_report *r);

/* ---- reading --------------------------------------------------------------------------------- */

/* Pure: a record's JSON text parsed, its \udcXX escapes (bytes that are not UTF-8, as
 * lb_json_escape_invalid_utf8 writes them) turned back into those bytes. NULL when the text
 * is not one JSON document. */
struct json_object *lb_report_parse_json(const char *text, size_t len);

/* A sweep document (labbox.sweep/1): its conditions' statistics, failures and identical
 * conditions, checked member by member. Pure. -EINVAL with err naming what is wrong for a
 * document that is not a sweep document. Call lb_report_read_sweep_runs next for what the
 * run directories add. */
int lb_report_from_sweep(struct json_object *doc, lb_report *out, char *err, size_t errlen);
/* The sweep's cells' run directories: failures' evidence, series, reproducibility facts. A
 * run directory that is gone or unreadable is skipped (its failure keeps sweep.json's words). */
int lb_report_read_sweep_runs(lb_report *r, struct json_object *doc);

/* Runs given one by one: each run directory's result.json, manifest.json, environment.txt
 * and run.log. Runs are grouped by condition: a sweep cell's condition name, else the
 * experiment's directory name and its arguments without --seed (so seeds of one setting
 * pool); completed runs give the statistics, the others are failures. */
typedef struct lb_report_builder lb_report_builder;
int lb_report_builder_new(lb_report_builder **out);
void lb_report_builder_free(lb_report_builder *b);
/* -EINVAL with err for a directory without a readable result.json. */
int lb_report_builder_add_run(lb_report_builder *b, const char *run_dir, char *err,
			      size_t errlen);
int lb_report_builder_finish(lb_report_builder *b, lb_report *out);

/* Pure: the name a run's condition starts from (malloc'd): a sweep cell's condition, else
 * the experiment directory's name and its arguments without the seed, an argument holding a
 * blank, a quote or a backslash (or empty) in double quotes. */
char *lb_report_run_condition(struct json_object *result, struct json_object *manifest);

/* What a run recorded that defines its computation, so runs that differ in any of it are
 * different conditions, not seeds of one. NULL members were not recorded (a value of their
 * own). A sweep cell's -e variables count as a run's do: its condition names only the
 * sweep's parameters, and two sweeps of one plan may run with different -e values. */
typedef struct lb_report_setting {
	char *base;        /* lb_report_run_condition */
	bool sweep_cell;
	char *entry;       /* config.entry */
	char **env;        /* -e NAME=VALUE of config.sandbox.env, by name, seed variables left out */
	size_t nenv;
	char *code;        /* sha256 hex of the staged files' names and digests and symlinks */
	char *interpreter; /* "cpython 3.11.2" */
	char *packages;    /* sha256 hex of environment.txt */
	char *data;        /* sha256 hex of the mounted data's fingerprints (manifest.data) */
} lb_report_setting;

/* Pure: the setting of a run; packages_sha the hex sha256 of its environment.txt or NULL. */
int lb_report_run_setting(struct json_object *result, struct json_object *manifest,
			  const char *packages_sha, lb_report_setting *out);
void lb_report_setting_free(lb_report_setting *s);
/* Pure: an injective text of a setting (lengths before members), for grouping. */
int lb_report_setting_key(const lb_report_setting *s, lb_buf *out);
/* Pure: names for n distinct settings: the base, and where settings of one base differ, what
 * differs (` --entry other.py`, ` LR=0.1`, ` LR unset`, ` (code 3f2a91)`, ` (cpython 3.12.1)`,
 * ` (packages 9c1e0b)`, ` (data 3f2a91)`), so names are distinct; a coincidence left (an argument that reads
 * like a suffix) gets the setting's digest. names[i] malloc'd. notes: one line per base whose
 * runs were kept apart, saying by what (malloc'd array of malloc'd strings). */
int lb_report_condition_names(const lb_report_setting *s, size_t n, char **names, char ***notes,
			      size_t *nnotes);

/* Pure: per-step series of one run's output: `name: value` lines seen more than once (x the
 * occurrence, 1, 2, ...) and progress lines (`step=5 loss: 0.3`, `Epoch: 2, Loss: 0.3`: x
 * the first counter's value). Calls fn for every point; condition is the `condition:` group
 * (NULL before any). */
typedef void (*lb_report_point_fn)(void *ctx, const char *metric, const char *x_label,
				   double x, double y);
void lb_report_scan_series(const char *text, size_t len, lb_report_point_fn fn, void *ctx);

/* ---- writing --------------------------------------------------------------------------------- */

typedef enum lb_report_format {
	LB_REPORT_HTML,
	LB_REPORT_MD,
	LB_REPORT_CSV,
} lb_report_format;

int lb_report_render(const lb_report *r, lb_report_format f, lb_buf *out);

/* Pure helpers, exposed for their tests. */
/* Axis ticks covering [lo, hi]: start, step (1, 2, 2.5 or 5 times a power of ten) and count,
 * at most max_ticks (>= 3: a range across zero needs three). lo == hi gets a range around the value. -EINVAL for a value
 * that is not finite. */
int lb_report_ticks(double lo, double hi, size_t max_ticks, double *start, double *step,
		    size_t *n);
/* A statistic's numbers as printed: every one ends at the decimal place of the second
 * significant digit of the 95% interval's half-width, with more digits where bounds that
 * differ would print alike; the shortest exact digits without an interval. */
typedef struct lb_report_nums {
	char mean[40], lo[40], hi[40], half[40], sd[40];
} lb_report_nums;
void lb_report_fmt_stat(const lb_report_stat *st, lb_report_nums *out);
/* A tick label: as many decimals (or significant digits) as the step needs. */
void lb_report_tick_label(double v, double step, char *out, size_t outlen);
/* Text for HTML (element content and attribute values): & < > " ' as entities, control
 * characters and bytes that are not UTF-8 as \xNN. */
int lb_report_html_escape(lb_buf *b, const char *s, size_t len);
/* One CSV field (RFC 4180): quoted when it holds , " CR LF or edge blanks; a text that a
 * spreadsheet would run as a formula (= + - @ first) gets a leading '; bytes that are not
 * UTF-8 are written as \xNN. */
int lb_report_csv_field(lb_buf *b, const char *s, bool text);
/* One Markdown table cell: < > & as entities, @ as the code span `@`, every other ASCII
 * punctuation character backslash-escaped (no link, image, emphasis or autolink can form),
 * line breaks as blanks, non-UTF-8 as \xNN. */
int lb_report_md_cell(lb_buf *b, const char *s);
/* The SVG plot of metric m across the conditions: mean and 95% interval (or the one value)
 * per condition, non-finite values and missing metrics flagged in place of a point. */
int lb_report_svg_metric(const lb_report *r, size_t m, lb_buf *out);
/* The SVG plot of series s: one line per condition. */
int lb_report_svg_series(const lb_report *r, size_t s, lb_buf *out);

#endif
