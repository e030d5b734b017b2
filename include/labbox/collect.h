/* collect: metrics an experiment reports, and their validation.
 *
 * Sources: stdout lines, parsed as a stream in constant memory per line (independent of the
 * run.log cap):
 *   name: value                              the seed's lines
 *   condition: X                             later plain lines belong to condition X, up
 *                                            to the next one or the run's lines after the
 *                                            blocks (docs/result-json.md, Condition blocks)
 *   condition=X [key=v ...] name: value      one metric of condition X, qualified by tags
 *   SUMMARY [condition=X] metric=name mean=.. std=.. [key=v ...]
 * and results files (results.json of any nesting, AI-Scientist's final_info.json, names from
 * labbox.yaml) read with json-c, which accepts Python's NaN/Infinity. NaN and Inf are accepted
 * when read, then flagged by validation, never dropped. In the JSON documents labbox writes, a
 * non-finite number is the string "NaN", "Infinity" or "-Infinity", so the document stays
 * strict JSON (docs/result-json.md). */
#ifndef LABBOX_COLLECT_H
#define LABBOX_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* Longest line considered for metrics; longer lines are skipped (still logged by the caller). */
#define LB_METRIC_LINE_MAX 4096
#define LB_METRIC_NAME_MAX 128

typedef enum lb_metric_kind {
	LB_METRIC_NUMBER, /* value parsed as a double: sign, exponent, nan, inf accepted */
	LB_METRIC_STRING, /* anything else, kept verbatim (trimmed) */
} lb_metric_kind;

/* Tags of one line: at most this many key=v pairs besides condition= (and metric= on SUMMARY
 * lines), keys of at most LB_METRIC_TAG_KEY_MAX bytes, and at most LB_METRIC_TAGS_TEXT_MAX
 * bytes for all of them written as `k=v k2=v2`. A line past these is not a metric line. */
#define LB_METRIC_TAGS_MAX 16
#define LB_METRIC_TAG_KEY_MAX 64
#define LB_METRIC_TAGS_TEXT_MAX 256

typedef enum lb_metric_form {
	LB_METRIC_FORM_PLAIN,   /* name: value [name: value ...] (condition: X included) */
	LB_METRIC_FORM_TAGGED,  /* condition=X [key=v ...] name: value [name: value ...] */
	LB_METRIC_FORM_SUMMARY, /* SUMMARY [condition=X] metric=name field=v ... */
	LB_METRIC_FORM_PAIRED,  /* PAIRED: method vs baseline [regime=R] mean_diff=v ... */
} lb_metric_form;

/* One key=value pair; both point into the parsed line (the value without its quotes). For
 * PAIRED lines the method and baseline are pairs too, with the keys "method" and "baseline"
 * (static text, not in the line). */
typedef struct lb_metric_tag {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
} lb_metric_tag;

/* At most this many name: value pairs on one line; a line with more is not a metric line. */
#define LB_METRIC_VALUES_MAX 16
/* Longest text value (a label such as resnet-50) and longest (remark) after a number. */
#define LB_METRIC_LABEL_MAX 64
#define LB_METRIC_REMARK_MAX 64

/* One name: value pair of a line. The value is a number, possibly annotated (a ratio 3/4, a
 * percentage 12.3%, an uncertainty 0.5 +- 0.1, a remark 0.95 (best)), or a label: one token
 * of at most LB_METRIC_LABEL_MAX letters, digits and _ . + -, starting with a letter or '_'
 * (resnet-50, True, adam). "12.5s", "/a/path", "two words" are not values. */
typedef struct lb_metric_value {
	char name[LB_METRIC_NAME_MAX + 1]; /* blanks inside a name are one space each */
	lb_metric_kind kind;
	double number;	 /* a ratio's quotient; a percentage as printed (12.3 for 12.3%) */
	const char *str; /* the value as printed, annotations included; points into the line */
	size_t str_len;
	bool ratio;	      /* "3/4": number is 0.75 */
	bool percent;	      /* "12.3%" */
	bool has_uncertainty; /* "0.5 +- 0.1", "0.5 ± 0.1", "0.5 +/- 0.1" */
	double uncertainty;
	const char *remark; /* "best" of "0.95 (best)", NULL when none; points into the line */
	size_t remark_len;
	/* "tensor" of "tensor(0.5000, device='cuda:0')", "np.float64" of "np.float64(0.5)": the
	 * scalar's type as its repr names it, NULL when the number is bare; points into the line */
	const char *wrapper;
	size_t wrapper_len;
} lb_metric_value;

typedef struct lb_metric_line {
	/* The first value, as values[0]: name, kind, number and str of SUMMARY and PAIRED lines
	 * describe the field shown (mean=, mean_diff=) and values[0] repeats them. */
	char name[LB_METRIC_NAME_MAX + 1]; /* SUMMARY: the metric= value; PAIRED: "M vs B" */
	lb_metric_kind kind;
	double number;
	const char *str; /* points into the parsed line */
	size_t str_len;
	lb_metric_form form;
	const char *condition; /* condition=X of TAGGED and SUMMARY lines, NULL when absent */
	size_t condition_len;
	size_t n_tags;
	/* TAGGED: the key=v pairs other than condition=; SUMMARY: the fields other than
	 * condition= and metric= (mean, std, n...); PAIRED: method, baseline and the fields
	 * (regime, mean_diff, ...). Sorted by key, keys unique. */
	lb_metric_tag tags[LB_METRIC_TAGS_MAX + 2];
	size_t n_values; /* >= 1 */
	lb_metric_value values[LB_METRIC_VALUES_MAX];
	/* A markdown table row "| name | value |" (PLAIN): the collector reads it only in a table
	 * whose context says its rows are name|value pairs (docs/decisions.md). */
	bool table_row;
	/* The line is a Python logging INFO line and the pairs are its message: the one kind of
	 * stderr line the collector reads (logging writes there by default). */
	bool logged;
	/* The line is one object literal (`{...}`, JSON or a Python dict's repr) shaped as
	 * Hugging Face Trainer's per-log dicts: Python's repr (single-quoted names) with an
	 * `'epoch'` member. A transformers metrics block's values outrank those (metrics.c); a
	 * script's own JSON line or a dict without an epoch is last-wins as other lines are. */
	bool object;
	/* PLAIN: what the line says its values are about, beside their names: a leading
	 * bracketed word that names no split, level or counter (`[cifar10] acc: 0.91`), or a
	 * lone dataset=X before the pairs (`dataset=svhn top1: 0.95`). NULL when none. The
	 * collector qualifies a name by it once the same name comes under two labels. */
	const char *label;
	size_t label_len;
	/* The line without its terminal escape sequences, when it had any: the pointers above
	 * then point in here. */
	char plain[LB_METRIC_LINE_MAX];
} lb_metric_line;

/* Whether s[0..len) names what the lines after it are about (`dataset: svhn`, any case):
 * their label (lb_metric_line's), by which the collector and the loss reading tell values of
 * the same name apart. */
bool lb_metric_label_key(const char *s, size_t len);

/* Pure: parse one line (no newline, may carry a trailing '\r'). Returns true for a metric line
 * of one of the forms; out->form says which. docs/decisions.md says why each rule is there.
 * Terminal escape sequences (CSI colours and erasures, OSC titles and hyperlinks, character
 * set designations) are read as absent: "\033[92maccuracy: 0.93\033[0m" is accuracy. R's
 * print() of one string, [1] "accuracy: 0.93", is the line between its quotes.
 * PLAIN, from an object: a line that is one `{...}` of scalar members, JSON or Python's dict
 *   repr (`{'eval_loss': 0.35, 'epoch': 3.0}`), each member a pair; an epoch member is left
 *   out, a step counter, nesting or a sentence value make it no metric line.
 * PLAIN: optional leading spaces and up to two decorations (an arrow `====> `, `==> `, a tag
 *   `[RESULT] ` that is no level or counter word, a bullet `- `), then one or more pairs
 *   `name: value`, separated by blanks
 *   and optionally one of , ; | ("acc: 0.5 loss: 0.25", "acc: 0.5, loss: 0.25").
 *   A name is words separated by blanks: the first starts with [A-Za-z_], later ones may
 *   start with '(' or a digit too, and words hold [A-Za-z0-9_.\-/()@^] ("Tokens per
 *   second", "UCB (Stochastic) cumulative_regret", "Hits@10", "R^2", "Top 5 accuracy"), a
 *   word with '@' also ':' between digits or dots ("mAP@0.5:0.95"); the line's first name
 *   may hold ", " ("Predicted price of a 1650 sq-ft, 3 br house"); no name ends in a word
 *   starting with a digit ("Sample 3"), holds a counter word and its number ("Loss at step
 *   100") or a comma part that is a counter word; at most LB_METRIC_NAME_MAX bytes; then optional
 *   blanks, ':', at least one blank, and a value (lb_metric_value). The whole line must be
 *   pairs: "accuracy: 0.93 on the test set", "p: /some/path", "url: http://x" are not
 *   metric lines. Not metric lines either: lines starting with '#'; the end of a Python
 *   traceback ("ValueError: bad input": an exception-shaped name with a value that is not a
 *   number); log lines (a name that is, or starts with, a logging level word in capitals,
 *   INFO, WARNING, WARN, ERROR, DEBUG, CRITICAL, FATAL, TRACE, NOTICE, or such a word in any
 *   case with a value that is not a number); progress lines (a pair named epoch, step,
 *   batch, iter, iteration, global_step or episode, any case: "Epoch: 1, Batch: 5, Loss:
 *   0.3"). The special names condition, TIME_ESTIMATE and TIME_GUARD, alone and first, take
 *   the rest of the line as their value (text), as they always did. A heading: a first
 *   pair whose one-word label is joined by blanks to more words and a ':', on a line that
 *   separates its pairs with , ; or | elsewhere, is no pair: the label starts the next name
 *   ("Test set: Average loss: 0.03, Accuracy: 0.98" is "Average loss" and "Accuracy"). A
 *   heading that is not the test split's ("Train set") qualifies the names: "Train set
 *   Accuracy". A decoration tag naming another split ("[train]", "[val]") qualifies them
 *   the same way: "train loss".
 * TAGGED: one or more key=value tokens separated by blanks, one of them condition=X, then
 *   PLAIN pairs ("condition=lr0.1 seed=2 accuracy: 0.93"). Keys are [A-Za-z_][A-Za-z0-9_.-]*;
 *   a value is a run of non-blank bytes or "double quoted" (no escapes, no quote inside), and
 *   never empty. Key=value lines without condition= are not metric lines (a per-step log line
 *   such as "step=5 loss: 0.3" stays what it was), nor are lines that repeat a key.
 * SUMMARY: the word SUMMARY, then nothing but key=value tokens: metric= (a metric name) is
 *   required, condition= is optional, and at least one other field (mean=, std=, n=...) is
 *   needed. kind/number/str describe mean= when present, else the first field.
 * PAIRED: AutoResearchClaw's paired comparison, "PAIRED: M vs B [regime=R] mean_diff=v
 *   std_diff=v t_stat=v p_value=v [ci95=(lo,hi)]": method and baseline are tokens without
 *   blanks, mean_diff= is required, other key=value tokens are fields (at most
 *   LB_METRIC_TAGS_MAX), and other text between them is ignored, as AutoResearchClaw does.
 *   kind/number/str describe mean_diff=.
 * Also PLAIN (tenth session, docs/decisions.md):
 *   pairs separated by " - " ("loss: 0.12 - val_acc: 0.88"), and Keras's progress lines:
 *   a head "Epoch K/M" or a finished bar "N/N [=====]" ("N/N ━━━━" in Keras 3), then
 *   " - " pieces that are pairs with numeric values, timings ("1s 20ms/step", "1s/epoch")
 *   or "ETA: 3s" (both skipped); an unfinished bar ("5/32 [==>...]") is not a metric line;
 *   a two-column markdown row "| bleu | 27.3 |" (numeric value; table_row is set);
 *   Python logging's INFO lines in its default format "INFO:logger:message" and in
 *   "ASCTIME - [NAME - ]INFO - message": the message is read as a line. */
bool lb_metric_line_parse(const char *line, size_t len, lb_metric_line *out);

/* Progress lines (docs/decisions.md, "Progress lines"): a line that is a per-epoch or per-step
 * report, not the run's result, and so no metric line. LB_METRIC_PROGRESS_EPOCH when its
 * counters are an epoch alone, LB_METRIC_PROGRESS_STEP when one is a step, batch, iter,
 * iteration, global_step or episode. */
#define LB_METRIC_PROGRESS_EPOCH 1
#define LB_METRIC_PROGRESS_STEP 2

/* Pure: whether a line that is not a metric line is a progress line holding metric pairs:
 * pairs with a counter among them ("epoch: 1, train_loss: 2.8, val_acc: 0.8", "Epoch: 3,
 * Train Loss: 0.321"), or a head "Epoch 3", "Epoch [3/10]", "[epoch 3]", "epoch=3", "step
 * 100" then pairs ("Epoch 3 | train_loss: 0.3 | val_acc: 0.7", "Epoch [3/10], Loss: 0.1234",
 * "epoch 3 train_loss: 0.5"). out->values are the pairs less the counters; at least one is a
 * number. Returns its level (above), 0 for any other line. Meant for lines
 * lb_metric_line_parse refuses: a metric line with a counter-free head is not checked. */
int lb_metric_progress_parse(const char *line, size_t len, lb_metric_line *out);

/* Pure: where the first line of s ends: the offset of its first '\n' or '\r', len when it
 * has neither. A carriage return ends a line as Python's universal newlines read it, so the
 * text a progress bar's "\r" updates leave before a metric is a line of its own. */
size_t lb_metric_line_end(const char *s, size_t len);

/* The byte that stands for an interpolated value in a print template. */
#define LB_METRIC_HOLE '\x01'

/* Pure: whether a line the code prints, known only as a template (an f-string, a %-format or
 * .format() string, a concatenation, print's arguments joined), is a metric line by
 * lb_metric_line_parse's rules, with every LB_METRIC_HOLE byte standing for what is computed
 * at run time: a number where a value goes, a word in a name or a tag value. The static check
 * (LB404) asks this, so code it passes prints lines the collector reads. */
bool lb_metric_template_parse(const char *line, size_t len, lb_metric_line *out);

/* Pure: parse a number the way research code prints it: "0.93", "-1e-3", "+5", "nan", "NaN",
 * "inf", "-Infinity", "1.5s" is NOT a number. Returns true and sets *out when the whole string
 * (spaces trimmed) is a number. */
bool lb_parse_number(const char *s, size_t len, double *out);

/* How an integer literal ([+-]?digits, blanks around allowed) is held exactly: in an int64, in
 * a uint64 past INT64_MAX, or past 64 bits only as its digits. */
typedef enum lb_int_form {
	LB_INT_NONE, /* not an integer literal: a fraction, an exponent, a word, nothing */
	LB_INT_SIGNED,
	LB_INT_UNSIGNED, /* *out holds the uint64's bits */
	LB_INT_WIDE,
} lb_int_form;

/* Pure: the form of s as an integer literal; *out gets its value for SIGNED and UNSIGNED. */
lb_int_form lb_parse_integer(const char *s, size_t len, int64_t *out);

/* The exact JSON of an integer literal: an int64, a uint64, or past 64 bits a string of its
 * digits (sign kept, '+' and leading zeros dropped), which every reader keeps and compares
 * exactly where 64-bit and double readers (json-c, jq, JavaScript) would saturate or round.
 * NULL when s is no integer literal, is longer than 4096 bytes or memory ran out. */
struct json_object *lb_json_integer(const char *s, size_t len);

/* Pure: whether v is a string lb_json_integer wrote for an integer past 64 bits. */
bool lb_json_is_wide_integer(struct json_object *v);

/* Streaming collector: feed output chunks as they arrive. Lines of a Python traceback (from
 * "Traceback (most recent call last):" to its exception's line, chained blocks included) are
 * never metrics. Special names of PLAIN lines:
 *   condition        starts a new group; later plain lines and SUMMARY lines without
 *                    condition= belong to it
 *   TIME_ESTIMATE    a duration such as "12s", "12.5", "3m" -> time_estimate_s
 *   TIME_GUARD       the time guard fired; its value is kept as text, and the time it fired
 *                    is the duration the value starts with ("240.1s - saving partial
 *                    results"), else the time its line arrived (lb_metrics_feed_at)
 * A TAGGED line belongs to its own condition=X and does not change the current group; without
 * tags besides condition= it is the same metric as "name: value" under "condition: X". The
 * same metric seen again (same group, name and, for TAGGED lines, tags; for SUMMARY lines the
 * fields are the value) keeps its last value and counts the repeats. */
typedef struct lb_metrics lb_metrics;
int lb_metrics_new(lb_metrics **out);
void lb_metrics_free(lb_metrics *m);
void lb_metrics_feed(lb_metrics *m, const char *data, size_t len);
/* As lb_metrics_feed, for a chunk that arrived elapsed_s seconds after the run started (on the
 * clock the budget is enforced with; < 0 for unknown). Lines this chunk completes carry that
 * time. Only a backend that streams output live should pass times: output read back after
 * the run would date every line at its end. */
void lb_metrics_feed_at(lb_metrics *m, const char *data, size_t len, double elapsed_s);
/* As lb_metrics_feed_at, for what the experiment wrote to stderr, when the backend keeps the
 * streams apart. Its lines are assembled apart from stdout's, and only Python logging's INFO
 * lines among them are read (lb_metric_line.logged): libraries print their own `name: value`
 * text there. A stderr line that would be a metric on stdout is counted for the no_metrics
 * issue instead. Output of a backend that merges the streams is fed as stdout. */
void lb_metrics_feed_stderr_at(lb_metrics *m, const char *data, size_t len, double elapsed_s);
void lb_metrics_finish(lb_metrics *m); /* flush the last lines without newline */
/* The experiment's language ("r", "octave"; NULL or anything else: Python), set before the
 * first line is fed: R's `NA` is then a missing number (NaN, flagged by validation, as NaN
 * is) rather than a label, and Octave's display of a variable, `acc = 0.9300`, is the metric
 * acc (a number alone after "name = "; not `ans`, nor the progress words of PLAIN lines). */
void lb_metrics_set_language(lb_metrics *m, const char *language);
/* A run that reported no metric line (m holds no value) but printed progress lines: the
 * values of its last progress line become its metrics (in the group it was printed in), and
 * lb_metrics_to_json says so ("source": "progress", "progress_lines": n). For a completed
 * run only when that line's counter is an epoch (an epoch's summary; a step's or a batch's
 * running value is not the result of a run that could have printed one); for a run that
 * ended early, whatever the counter: its last values are all it left (partial). Call it
 * after lb_metrics_finish and only when no results file holds a value. Returns whether it
 * did. */
bool lb_metrics_use_progress(lb_metrics *m, bool completed);
/* Number of metric values collected (all groups and forms). */
size_t lb_metrics_count(const lb_metrics *m);
/* < 0 when no TIME_ESTIMATE line was seen. */
double lb_metrics_time_estimate(const lb_metrics *m);
bool lb_metrics_time_guard_fired(const lb_metrics *m);
/* Seconds after the start at which TIME_GUARD first fired; < 0 when it did not fire or its
 * time is unknown (no duration printed and no arrival time fed). */
double lb_metrics_time_guard_at(const lb_metrics *m);
/* New JSON object:
 *   {"values": {name: v}, "conditions": {cond: {name: v}}, "condition_order": [cond...],
 *    "time_estimate_s": x|null, "time_guard": "text"|null}
 * Numbers are JSON numbers, non-finite ones the strings above, strings stay strings (valid
 * UTF-8, at most 512 bytes; condition names at most 256). "values" and "conditions" hold the
 * PLAIN lines and the TAGGED lines without other tags; every condition named in any form has
 * an object in "conditions" and a place in "condition_order" (first seen first).
 * Present only when not empty, so documents of runs without these stay as they were:
 *   "tagged": [{"condition": cond, "metric": name, "tags": {key: "v"}, "value": v}...]
 *       TAGGED lines with tags, first seen first (tag values stay strings);
 *   "summaries": [{"condition": cond|null, "metric": name, field: v...}...]
 *       SUMMARY lines; fields (mean, std, n, ...) in key order, numbers as numbers;
 *   "time_guard_at_s": x|null and "time_guard_at_source": "printed"|"arrival"|null
 *       when TIME_GUARD fired;
 *   "repeats": [{"metric", "condition": cond|null, "seen": n, ["tags": {...}],
 *       ["summary": true]}...], "dropped_metrics": n (plain and SUMMARY values past 10000
 *       names or 1000 summaries), "dropped_tagged": n (past 5000 tagged series),
 *       "dropped_conditions": n (past 1000 conditions), "long_lines_skipped": n. */
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

/* results.csv: a header row of column names (unique, non-empty) and rows of as many cells
 * (RFC 4180 quoting; blank lines skipped; a BOM allowed). The document is an array of one
 * object per row, {column: value}: a cell that is a number (lb_parse_number, so nan and inf
 * too) is a number, an empty unquoted cell null, anything else a string (valid UTF-8). At
 * most 1024 columns, 100000 rows, 4096 bytes a cell. A table in long format, two columns
 * named as a name and a value (metric|name|key, value|score|result, any case) whose rows give
 * each a different text name, is instead the object {name: value} ("metric,value" then
 * "accuracy,0.91" is {"accuracy": 0.91}). lb_results_read uses it for every name ending in
 * .csv. Returns 0, -EINVAL with a reason in err, -EFBIG or -ENOMEM. */
int lb_results_parse_csv(const char *data, size_t len, struct json_object **out, char *err,
			 size_t errlen);

/* R and Octave spell a missing number NA: R's write.csv and write.table write NA and NaN so,
 * jsonlite::write_json a numeric NA as the string "NA", Octave's dlmwrite and csvwrite its NA.
 * Pure: in the parsed results files (files_out of lb_results_collect) of an R or Octave run,
 * each string "NA" that stands for a number becomes a NaN (a double whose text is "NA"):
 *   - an element of an array whose other elements are numbers (a string lb_parse_number
 *     reads, "NaN" and "Inf" too, counts as one; nulls are allowed), at least one of them;
 *   - a cell of a column of an array of objects (a results.csv's rows; a row without the key
 *     is allowed) whose other cells are numbers so, at least one of them;
 *   - the value of a member named in declared[0..n) (its key), or an element of an array
 *     that is that value, when the array holds nothing but numbers, NAs and nulls.
 * A column or an array of strings keeps its "NA" as a label (R's write.csv quotes strings, so a
 * quoted number is a string and keeps its column a text one). Returns the number of values
 * turned into NaN, or -ENOMEM. */
int lb_results_read_na(struct json_object *files, const char *const *declared, size_t n);

/* Results files of a run ------------------------------------------------------------------ */

/* Largest results file read; a larger one is an "unreadable" issue. json-c holds a parsed
 * number in about ten times the bytes it took as text, and labbox's own memory is outside
 * the run's --memory: these bound it (docs/decisions.md). */
#define LB_RESULTS_MAX_BYTES ((size_t)8 << 20)
/* Most a results file may cost to parse, in units of one number (lb_results_parse_cost):
 * 8 MiB of `{"k":{"a":[{}]}}` would take json-c a gigabyte and more. */
#define LB_RESULTS_MAX_COST ((uint64_t)1 << 20)
/* Pure: an estimate of what parsing data costs json-c, in units of one parsed number (an
 * object counts 8, an array 2, each member, element or CSV cell 1; strings skipped). */
uint64_t lb_results_parse_cost(const char *data, size_t len);
/* All results files of a run together; past it a file is an "unreadable" issue too. */
#define LB_RESULTS_TOTAL_BYTES ((size_t)16 << 20)
/* Arrays longer than this are summarised, not copied, into result.json; so is any array of
 * more than 100 once LB_RESULTS_VALUES_KEEP array elements have been copied. */
#define LB_RESULTS_ARRAY_KEEP 10000
#define LB_RESULTS_VALUES_KEEP 200000
/* At most this many configured names are read (the defaults come on top). */
#define LB_RESULTS_MAX_NAMES 32

/* Pure: the directory an experiment was told to write into, from its arguments: the value of
 * the last --out_dir, --out-dir, --output_dir or --output-dir ("--out_dir run_0" or
 * "--out_dir=run_0"), as AI-Scientist templates (final_info.json) and Hugging Face scripts take
 * it. A pointer into args, or NULL when none is given. */
const char *lb_results_out_dir_hint(char *const *args, size_t n);
/* The same flag's default where the entry point's source declares it as argparse does,
 * `add_argument("--out_dir", ..., default="run_0")` (AI-Scientist's templates): a plain
 * string literal within the call; the first such declaration wins. 0 and out filled, or
 * -ENOENT. Used when the arguments name no output directory. */
int lb_results_out_dir_default(const char *src, size_t len, char *out, size_t outlen);

/* Collect every results file of a run, relative to expdirfd (the staged exp/ directory), with
 * lb_results_read's protections (no symlinks anywhere on the path, no FIFOs, regular files of
 * at most LB_RESULTS_MAX_BYTES, no "..", no absolute paths). Looked for, in this order, each
 * name once:
 *   results.json, final_info.json, results.csv,
 *   OUT/final_info.json, OUT/results.json and OUT/results.csv when out_dir_hint (OUT, see
 *     lb_results_out_dir_hint; may be NULL) is a relative path,
 *   names[0..n) (labbox.yaml's results files; relative paths, at most LB_RESULTS_MAX_NAMES).
 * Each file read is added to files_out (a JSON object) under the name it was found by, e.g.
 * "results.json" or "run_0/final_info.json", AS PARSED: non-finite numbers are still doubles,
 * so pass files_out to lb_metrics_validate_run, then put lb_json_sanitize(files_out) into
 * result.json, never files_out itself.
 * A default name that is absent is skipped silently, and so is anything under out_dir_hint that
 * cannot be opened (the hint is a guess). One issue is appended to issues_out (a JSON array)
 * per file that exists but is refused or does not parse:
 *   {"kind": "unreadable", "metric": null, "where": name, "message": "name: reason"}
 * and per configured name that is absent or refused before opening (an explicit promise):
 *   {"kind": "missing_file", "metric": null, "where": name, "message": ...}.
 * Returns the number of files read, -EINVAL when files_out or issues_out is not of its type,
 * -ENOMEM. */
int lb_results_collect(int expdirfd, const char *const *names, size_t n, const char *out_dir_hint,
		       struct json_object *files_out, struct json_object *issues_out);

/* What result.json keeps of files_out (of lb_results_collect): lb_json_sanitize's copy, with
 * every array longer than LB_RESULTS_ARRAY_KEEP (or, past LB_RESULTS_VALUES_KEEP elements
 * copied, longer than 100) replaced by a summary
 *   {"labbox_summary": "array", "length", "numbers", "min", "max", "mean", "first": [10],
 *    "last": [10]}
 * so a results file of millions of values does not become a result.json of hundreds of MB.
 * One warning {"kind": "summarised", "where": "results.json at path", ...} per summarised
 * array is appended to warnings (the first 20, then one counting the rest). */
struct json_object *lb_results_for_record(struct json_object *files, struct json_object *warnings);

/* Results-file values as dotted paths (src/collect/flatten.c) ----------------------------- */

/* Arrays of at most this many elements are flattened element by element; longer ones are one
 * digest (or left out). */
#define LB_FLATTEN_ARRAY_MAX 64

/* Pure: the scalars of a results document as {dotted path: value} added to out: members of
 * objects joined with '.' ("shakespeare_char.means.val_loss"), elements of arrays of at most
 * array_max elements by index ("0.accuracy" for a results.csv row, "ds.losses.2"). A longer
 * array is one value, the string "sha256:HEX/N" (lb_metric_value_digest of the array, and its
 * length) when digest_long is set, else left out and counted. Scalars are copied as they are
 * (numbers, strings, booleans, null). At most max_values entries; a path longer than 1024
 * bytes is not added either; a path already in out (a key holding a '.') is added as
 * PATH~2, PATH~3, ... in document order. *dropped (may be
 * NULL) counts what was left out. Returns the number of entries added, -EINVAL when out is
 * not an object, -ENOMEM. */
int lb_results_flatten(struct json_object *doc, size_t array_max, bool digest_long,
		       size_t max_values, struct json_object *out, size_t *dropped);

/* Pure: whether two metric values are the same result. Numbers as numbers (an integer 1 equals
 * 1.0; the strings "NaN", "Infinity" and "-Infinity" labbox writes for non-finite numbers are
 * those numbers, and NaN equals NaN: the same NaN again repeats the run), strings byte for
 * byte, booleans and null as themselves; a number never equals a string. */
bool lb_metric_values_equal(struct json_object *a, struct json_object *b);

/* Pure: "sha256:" and 64 hex digits of a canonical form of v (object members sorted, numbers
 * as doubles), so values lb_metric_values_equal calls equal, and documents made of them, share
 * it. Returns 0. */
int lb_metric_value_digest(struct json_object *v, char out[72]);

/* Deep copy of a json-c document with every non-finite double replaced by its string. */
struct json_object *lb_json_sanitize(struct json_object *doc);
/* A JSON number for v, or the string form when v is not finite. */
struct json_object *lb_json_number(double v);

/* Validation. Appends one object per issue to the json array `issues`:
 *   {"kind": "nan"|"inf"|"missing"|"unreadable", "metric": "name", "where": "...",
 *    "message": "one line a person reads"}
 * - every non-finite number in the stdout metrics (where: "stdout", "stdout condition X",
 *   "stdout condition X seed=1" for a tagged series, "stdout SUMMARY condition X" for a
 *   SUMMARY field) and in results (where: "results.json at a.b.c"; results may be NULL);
 * - every name in declared[] (n of them) found neither in the stdout metrics (any group or
 *   form) nor as a key anywhere in results (last dotted component or full dotted path).
 * Returns the number of issues appended. One results document only; a whole run is validated
 * by lb_metrics_validate_run below. */
size_t lb_metrics_validate(const lb_metrics *m, struct json_object *results,
			   const char *results_name, const char *const *declared, size_t n,
			   struct json_object *issues);

/* Validation of a whole run, per the seed. Issues make the run invalid (status
 * invalid_metrics, exit 4); warnings are reported and change nothing (docs/decisions.md).
 * Issues, appended to `issues` in this order, objects as above plus the fields named:
 *   "nan"/"inf"          every non-finite number on stdout (all forms) and in every file;
 *   "dropped"            plain or SUMMARY values lost past the collector's caps;
 *   "missing"            a declared metric found nowhere: no stdout line of any form and no
 *                        key (last dotted component or full dotted path) in any file;
 *   "no_metrics"         the entry point exited 0 (completed) having reported no metric
 *                        at all: no stdout metric of any form and no value in any results
 *                        file, unless none_expected (labbox.yaml `metrics: none`);
 *   "time_guard_early"   TIME_GUARD fired before half of the budget had passed, so the
 *                        experiment cut its own results short with most of its time left
 *                        ("fired_at_s", "budget_s"); needs budget_s > 0 and a known time.
 * Warnings, appended to `warnings` (may be NULL: not produced), same shape with "metric" null
 * where no one metric is concerned:
 *   "time_estimate"         TIME_ESTIMATE was off by more than 20% of the actual time (with
 *                           a second of slack for start-up), see lb_time_estimate_accurate
 *                           ("estimate_s", "actual_s");
 *   "identical_conditions"  two or more conditions report the same numbers: the same metric
 *                           names with equal values on stdout, or equal members of a results
 *                           file's top-level object ("conditions": [names]);
 *   "dropped_tagged"        TAGGED series lost past the collector's cap;
 *   "from_progress"         a completed run's values are its last progress line's
 *                           (lb_metrics_use_progress).
 * Returns the number of issues appended. */
typedef struct lb_metrics_run_info {
	struct json_object *files;  /* files_out of lb_results_collect (as parsed), or NULL */
	const char *const *declared; /* metric names that must be reported */
	size_t n_declared;
	double wall_s;   /* the run's wall-clock seconds; < 0: unknown, no estimate check */
	double budget_s; /* the time budget; <= 0: none, no guard check */
	bool completed;  /* the entry point exited with status 0; false when it failed or the
			  * budget, a signal or labbox ended it (its plan did not run to its end) */
	bool none_expected; /* labbox.yaml `metrics: none`: reporting nothing is no issue */
	/* The output directory the experiment was told to write into (its --output_dir, or the
	 * argparse default of its entry point) when that is an absolute path: labbox cannot read
	 * it, so a run that reported nothing is told where its results went. NULL: none. */
	const char *out_dir_outside;
} lb_metrics_run_info;
size_t lb_metrics_validate_run(const lb_metrics *m, const lb_metrics_run_info *info,
			       struct json_object *issues, struct json_object *warnings);
/* Whether any results file (files_out of lb_results_collect) holds a value: a number, a
 * bool or a number written as a string; labels and nulls are none. */
bool lb_results_hold_value(struct json_object *files);

/* Pure pieces of the timing checks.
 * The estimate is accurate when |estimate - actual| <= max(0.2 * actual, 1 s). When the plan
 * did not run to its end (completed false, or TIME_GUARD fired) the actual time is only a lower
 * bound of what the plan needed, so only an estimate that was certainly too short counts as
 * inaccurate: estimate < actual - max(0.2 * actual, 1 s). True (no evidence against it)
 * when an input is negative or not finite. */
bool lb_time_estimate_accurate(double estimate_s, double actual_s, bool whole_plan_ran);
/* Fired before half of the budget: fired_at_s < 0.5 * budget_s (false without a budget or a
 * known time). */
bool lb_time_guard_premature(double fired_at_s, double budget_s);
/* Whether a metric measures time (and so differs between runs of the same code): its name
 * says so as a whole. Of its last component (after the last '/' or '.', words split at '_',
 * '-', spaces and a lower-to-upper case change, any case), less trailing aggregates (mean,
 * avg, median, std, max, min, total, sum, p50...p99): the last word is a unit or a measure of
 * time (time, times, timing, seconds, secs, sec, s, ms, us, ns, minutes, mins, hours, hrs,
 * duration, elapsed, runtime, wall, walltime, wallclock, latency, throughput, fps), or it is
 * `per second` or `wall clock`, or the first word is a measure of time followed only by words
 * of what or in what unit (time_taken, time_per_epoch). fit_seconds, train_time,
 * samples_per_sec, samples/s, tokens_per_second, step_ms, latency_p99 are; a time word that
 * qualifies another quantity is not: time_series_mse, second_moment_error, timestep_reward,
 * times_correct, nor accuracy, loss_min, steps. */
bool lb_metric_is_timing(const char *name);

#endif
