/* collect: metrics an experiment reports, and their validation.
 *
 * Sources: the seed's `name: value` stdout lines, grouped by the `condition: X` lines before
 * them, parsed as a stream in constant memory (independent of the run.log cap); and results
 * files (results.json of any nesting) read with json-c, which accepts Python's NaN/Infinity.
 * NaN and Inf are accepted when read, then flagged by validation, never dropped. In the JSON
 * documents labbox writes, a non-finite number is the string "NaN", "Infinity" or "-Infinity",
 * so the document stays strict JSON (docs/result-json.md). */
#ifndef LABBOX_COLLECT_H
#define LABBOX_COLLECT_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* Longest line considered for metrics; longer lines are skipped (still logged by the caller). */
#define LB_METRIC_LINE_MAX 4096
#define LB_METRIC_NAME_MAX 128

typedef enum lb_metric_kind {
	LB_METRIC_NUMBER, /* value parsed as a double: sign, exponent, nan, inf accepted */
	LB_METRIC_STRING, /* anything else, kept verbatim (trimmed) */
} lb_metric_kind;

typedef struct lb_metric_line {
	char name[LB_METRIC_NAME_MAX + 1];
	lb_metric_kind kind;
	double number;
	const char *str; /* points into the parsed line */
	size_t str_len;
} lb_metric_line;

/* Pure: parse one line (no newline, may carry a trailing '\r'). Returns true for a metric line:
 * optional leading spaces, a name of [A-Za-z_][A-Za-z0-9_.\-/]* (at most LB_METRIC_NAME_MAX),
 * optional spaces, ':', at least one space or tab, a non-empty value. Lines starting with '#'
 * are not metric lines, nor is the end of a Python traceback ("ValueError: bad input": a name
 * shaped like an exception class with a value that is not a number). str/str_len are the
 * trimmed value for numbers too. */
bool lb_metric_line_parse(const char *line, size_t len, lb_metric_line *out);

/* Pure: parse a number the way research code prints it: "0.93", "-1e-3", "+5", "nan", "NaN",
 * "inf", "-Infinity", "1.5s" is NOT a number. Returns true and sets *out when the whole string
 * (spaces trimmed) is a number. */
bool lb_parse_number(const char *s, size_t len, double *out);

/* Streaming collector: feed output chunks as they arrive. Special names:
 *   condition        starts a new group; later metrics belong to it
 *   TIME_ESTIMATE    a duration such as "12s", "12.5", "3m" -> time_estimate_s
 *   TIME_GUARD       the time guard fired (its value is kept as text)
 * A name seen again in the same group keeps its last value and counts the repeats. */
typedef struct lb_metrics lb_metrics;
int lb_metrics_new(lb_metrics **out);
void lb_metrics_free(lb_metrics *m);
void lb_metrics_feed(lb_metrics *m, const char *data, size_t len);
void lb_metrics_finish(lb_metrics *m); /* flush a last line without newline */
/* Number of metric values collected (all groups). */
size_t lb_metrics_count(const lb_metrics *m);
/* < 0 when no TIME_ESTIMATE line was seen. */
double lb_metrics_time_estimate(const lb_metrics *m);
bool lb_metrics_time_guard_fired(const lb_metrics *m);
/* New JSON object:
 *   {"values": {name: v}, "conditions": {cond: {name: v}}, "condition_order": [cond...],
 *    "time_estimate_s": x|null, "time_guard": "text"|null}
 * Numbers are JSON numbers, non-finite ones the strings above, strings stay strings (valid
 * UTF-8, at most 512 bytes; condition names at most 256). Present only when not empty:
 *   "repeats": [{"metric", "condition": cond|null, "seen": n}...], "dropped_metrics": n and
 *   "dropped_conditions": n (past 10000 names or 1000 conditions), "long_lines_skipped": n. */
struct json_object *lb_metrics_to_json(const lb_metrics *m);

/* Read a results file relative to dirfd without following symlinks and without blocking on a
 * FIFO (opened O_NONBLOCK|O_NOFOLLOW, must be a regular file of at most max bytes). On success
 * *out is the parsed document. -ENOENT when absent. On a parse or type error returns -EINVAL or
 * -ELOOP/-EFBIG and writes a one-line reason into err. */
int lb_results_read(int dirfd, const char *name, size_t max, struct json_object **out, char *err,
		    size_t errlen);

/* The parsing half of lb_results_read, for data already in memory (len bytes, no terminator
 * needed): an object or array, nested at most 24 deep, valid UTF-8, nothing but whitespace
 * after it; NaN, Infinity and -Infinity accepted. Returns 0, -EINVAL with a reason in err, or
 * -EFBIG/-ENOMEM. */
int lb_results_parse(const char *data, size_t len, struct json_object **out, char *err,
		     size_t errlen);

/* Deep copy of a json-c document with every non-finite double replaced by its string. */
struct json_object *lb_json_sanitize(struct json_object *doc);
/* A JSON number for v, or the string form when v is not finite. */
struct json_object *lb_json_number(double v);

/* Validation. Appends one object per issue to the json array `issues`:
 *   {"kind": "nan"|"inf"|"missing"|"unreadable", "metric": "name", "where": "...",
 *    "message": "one line a person reads"}
 * - every non-finite number in the stdout metrics (where: "stdout" or "stdout condition X")
 *   and in results (where: "results.json at a.b.c"; results may be NULL);
 * - every name in declared[] (n of them) found neither in the stdout metrics (any group) nor as
 *   a key anywhere in results (last dotted component or full dotted path).
 * Returns the number of issues appended. */
size_t lb_metrics_validate(const lb_metrics *m, struct json_object *results,
			   const char *results_name, const char *const *declared, size_t n,
			   struct json_object *issues);

#endif
