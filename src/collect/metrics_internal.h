/* Internal to collect: the collector's store, shared by the files that read metric lines
 * (number.c, line.c, formats.c), collect them (metrics.c, lightning.c, transformers.c,
 * unread.c), write them
 * (metrics_json.c) and validate them (validate.c), and the helpers those files share. Not a
 * public header. */
#ifndef LABBOX_COLLECT_METRICS_INTERNAL_H
#define LABBOX_COLLECT_METRICS_INTERNAL_H

#include "labbox/collect.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The store grows with distinct names only; these bound it against output that invents names
 * (a counter in the name, a hostile experiment). What falls beyond is counted, not kept. Each
 * form has its own cap so that fine-grained tagged series (per seed, per step) can never crowd
 * out the plain and SUMMARY lines that carry the results. */
#define LB_METRICS_MAX_ENTRIES 10000
#define LB_METRICS_MAX_TAGGED 5000
#define LB_METRICS_MAX_SUMMARIES 1000
#define LB_METRICS_MAX_PAIRED 1000
#define LB_METRICS_MAX_CONDITIONS 1000
#define LB_METRICS_MAX_SPLIT_NAMES 256
/* Stored text is bounded too, so the worst case stays in the tens of megabytes. */
#define LB_METRICS_STR_MAX 512
#define LB_METRICS_LABEL_MAX 256
/* Canonical tag text is at most LB_METRIC_TAGS_TEXT_MAX bytes before UTF-8 repair, which can
 * triple invalid bytes; this never cuts it. */
#define LB_METRICS_TAGS_STORE_MAX (3 * LB_METRIC_TAGS_TEXT_MAX + 8)

/* Why a log line holding metric-like text was not read: its level is not INFO; its INFO
 * prefix is not one labbox reads; or its prefix is, and the message is no metric line. The
 * no_metrics advice differs, so that it never asks for what the code already does. */
enum { LB_LOG_LIKE_LEVEL, LB_LOG_LIKE_FORMAT, LB_LOG_LIKE_MESSAGE };

#define LB_NO_GROUP UINT32_MAX /* metrics after a condition that did not fit are dropped */

enum { LB_CLS_PLAIN, LB_CLS_TAGGED, LB_CLS_SUMMARY, LB_CLS_PAIRED, LB_CLS_COUNT };

typedef struct lb_metric_entry {
	uint32_t group; /* 0: no condition, else condition index + 1 */
	uint32_t seen;
	uint8_t cls; /* LB_CLS_* */
	lb_metric_kind kind;
	/* An integer printed as one (LB_INT_*): recorded and compared as the integer, never as
	 * number, which rounds past 2^53 (checksums, hashes, counts). */
	uint8_t integer;
	bool from_stdout; /* the value is stdout's, which a stderr value never replaces */
	/* The value is a transformers metrics block's (transformers.c), which a later per-log
	 * dict line never replaces. */
	bool from_block;
	int64_t ival; /* LB_INT_SIGNED, or the bits of LB_INT_UNSIGNED */
	double number;
	char *str;  /* NUL-terminated, valid UTF-8; set for LB_METRIC_STRING, and for
		     * LB_INT_WIDE the integer's digits */
	char *tags; /* TAGGED: canonical "k=v k2=\"a b\"" (part of the identity); SUMMARY and
		     * PAIRED: the fields in the same syntax (the value); PLAIN: NULL */
	char *text; /* an annotated number (3/4, 12.3%, 0.5 +- 0.1, 0.95 (best)) as printed,
		     * valid UTF-8; NULL for plain numbers and labels */
	/* PLAIN: the label its lines carried (lb_metric_line's, or the stream's dataset:
	 * line's), NULL when none or when they differed in having one. */
	char *label;
	char name[LB_METRIC_NAME_MAX + 1];
} lb_metric_entry;

/* Open addressing over indices into an array; slot value 0 means empty, else index + 1. */
typedef struct lb_hindex {
	uint32_t *slots;
	size_t cap; /* power of two or 0 */
	size_t used;
} lb_hindex;

/* What one output stream is in the middle of. stdout and stderr each have their own: a chunk
 * of one never ends or continues a line, a table or a traceback of the other. */
typedef struct lb_metrics_stream {
	char line[LB_METRIC_LINE_MAX];
	size_t line_len;
	bool skipping; /* inside a line that outgrew the buffer, until its newline */
	/* Markdown tables (process_line): a table's first row waits here until the next line
	 * says whether it is a header. */
	int table_state;
	char table_first[LB_METRIC_LINE_MAX];
	size_t table_first_len;
	/* In a table being read or skipped, its last row that was not read (a row it holds in
	 * table_first): the header of another table when a separator row follows it. */
	bool table_held;
	/* PyTorch Lightning's results tables (lb_metrics_lightning_line, lightning.c): where in
	 * one the stream is (LT_*), its header's first DataLoader index and number of
	 * DataLoader columns, the plain layout's column width and rule length, and a line held:
	 * the header until the rule under it confirms it, or a row whose name fills its column
	 * and may go on in the next line (lt_name, the name so far). */
	int lt_state;
	unsigned lt_first, lt_cols;
	size_t lt_width, lt_rule;
	char lt_held[LB_METRIC_LINE_MAX];
	size_t lt_held_len;
	bool lt_pending;
	char lt_name[LB_METRIC_NAME_MAX + 1];
	size_t lt_name_len;
	/* transformers' metrics blocks (lb_metrics_transformers_line, transformers.c): whether
	 * the stream is in one (HF_*), and the column of its rows' '=' and their width, in
	 * characters, once its first row set them (0 before). */
	int hf_state;
	size_t hf_eq, hf_width;
	int traceback; /* LB_TB_* (metrics.c): inside a Python traceback, whose lines are none */
	/* How the last line ended (LB_END_*, metrics.c): the '\n' of a "\r\n" ends no line of
	 * its own, where an empty line is a blank line that ends a table and a block. */
	int last_end;
	/* The group of this stream's last `condition:` line. Two pipes keep no order between
	 * them, so a condition printed on one never groups the other's lines. 0 also after the
	 * condition blocks, once a line was the run's (block_group, metrics.c). */
	uint32_t group;
	/* Condition blocks (block_group): the stream's first group, how many `condition:` lines
	 * it printed, whether the current block holds a metric and a blank line followed one,
	 * and whether a block printed a name again after such a blank line (blocks of repeated
	 * lines, epochs apart: a blank line then ends none). */
	uint32_t first_group;
	uint32_t condition_lines;
	/* The value of the stream's last `dataset: X` line (lb_metric_label_key): the label of
	 * the plain lines after it, until a `condition:` line. */
	char label[LB_METRIC_NAME_MAX + 1];
	bool block_metrics, block_closed, blocks_repeat;
} lb_metrics_stream;

struct lb_metrics {
	lb_metrics_stream out, err;
	double now; /* arrival time of the chunk being fed, < 0 unknown */

	lb_metric_entry *entries;
	size_t n_entries, cap_entries;
	size_t n_class[LB_CLS_COUNT];
	lb_hindex entry_index;

	char **conditions;
	size_t n_conditions, cap_conditions;
	lb_hindex condition_index;
	bool line_stdout; /* the line being collected is stdout's */
	bool line_block;  /* ... and a row of a transformers metrics block (transformers.c) */
	/* The label of the line being collected (NUL-terminated), NULL when none; and the names
	 * that came under two labels, whose values are since collected as "LABEL name". */
	const char *line_label;
	char (*split_names)[LB_METRIC_NAME_MAX + 1];
	size_t n_split_names;

	double time_estimate;
	bool time_guard;
	char *time_guard_text;
	double time_guard_at; /* < 0 unknown */
	const char *time_guard_source; /* "printed", "arrival" or NULL */

	size_t dropped_metrics;
	size_t dropped_tagged;
	size_t dropped_conditions;
	size_t long_lines;

	/* Log lines whose message reads as metrics but whose format or level is not read
	 * ("WARNING:root:acc: 0.9", "[INFO] acc: 0.9"): the no_metrics issue names them. */
	int language; /* LB_METRICS_LANG_* (below) */
	size_t log_metric_lines;
	char log_metric_example[128];
	bool log_metric_example_stderr;
	int log_metric_example_kind; /* LB_LOG_LIKE_*: what keeps the example from being read */
	/* Lines on stderr that would be metrics on stdout: metrics are stdout's, so they are not
	 * collected, and the no_metrics issue names them. */
	size_t stderr_metric_lines;
	char stderr_metric_example[128];
	/* Progress lines on stdout (lb_metric_progress_parse): the first quoted by the
	 * no_metrics issue, the last kept whole so that a run that printed nothing else can
	 * report its values (lb_metrics_use_progress), with its group and level. */
	size_t progress_lines;
	char progress_example[128];
	char progress_last[LB_METRIC_LINE_MAX];
	size_t progress_last_len;
	uint32_t progress_group;
	int progress_level;
	bool from_progress; /* the values are the last progress line's */
	/* A metric line came after a progress line: the progress lines were followed by what the
	 * run reported, so they are not its result. Until then, metric lines that all came
	 * before the first progress line are start-up facts (dataset sizes, a config echo) and
	 * do not stand in for a result (docs/decisions.md). */
	bool progress_closed;
	size_t startup_entries;  /* values printed before the progress lines, when those were used */
	/* A number was collected (not only labels such as `Using device: cpu`, which say what
	 * ran, not what came of it): until then the lines that explain a run that reported
	 * nothing are still noted. */
	bool reported_number;
	/* stdout lines that hold a `name: number` or `name=number` pair, or are an object of
	 * them, in a shape labbox does not read (`loss=0.3`, a decoration it does not strip, a
	 * per-step JSON object): the no_metrics issue names them. */
	size_t unread_metric_lines;
	char unread_metric_example[128];
	bool progress_ignored;   /* start-up facts only, and a completed run's step lines not used */
	/* stdout lines no reading took that hold a result's word and a number with no ':'
	 * between them (llm.c's `val loss 6.17`, `step 20/20 | train loss 6.19 | ...`): counted
	 * until a value that is no setting is read (reported_result), since config lines read
	 * as metrics do not make them read. The
	 * example prefers a line that does not start with a counter word (a step's line), and
	 * fix is the pair as a metric line would print it (`val loss: 6.17`). */
	bool reported_result; /* a value that is no setting (add_metric): sticky */
	size_t result_unread_lines;
	char result_unread_example[128];
	char result_unread_fix[96];
	bool result_unread_example_counter;
	/* stdout lines no reading took that are `name: number` with a result's word in the
	 * name and a count in it (`Test accuracy (seed 3): 0.66`, `val acc 2: 0.55`, `loss at
	 * epoch 10: 0.25`): a loop's enumeration, which is no metric's name. Counted as those
	 * above; fix is the pair under the name without its count (`Test accuracy: 0.66`). */
	size_t result_counted_lines;
	char result_counted_example[128];
	char result_counted_fix[96];
};

/* Whether a name holds a word results are named by (loss, acc, accuracy, f1, bleu,
 * perplexity...), any case, its words split at whatever is not a letter or a digit. */
bool lb_metric_result_word_in(const char *name);

/* Index of the entry with this identity (tags only matter for LB_CLS_TAGGED), or -1. */
long lb_metrics_find(const lb_metrics *m, uint32_t group, int cls, const char *name,
		     const char *tags);

/* Next key=value token of stored tag text (canonical syntax); false at the end. */
bool lb_tags_next(const char **cursor, lb_metric_tag *tag);

/* "k=v k2=v2" of the tags, quoted where a value holds a blank, into buf (NUL-terminated).
 * Returns the length, or (size_t)-1 when it needs more than cap - 1 bytes. */
size_t lb_metric_tags_text(const lb_metric_tag *tags, size_t n, char *buf, size_t cap);

/* json-c helpers that take ownership of val in every case, so callers can chain additions and
 * bail out on the first failure. A NULL val is an allocation that failed. */
static inline int lb_obj_add(struct json_object *obj, const char *key, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

static inline int lb_obj_add_null(struct json_object *obj, const char *key)
{
	return json_object_object_add(obj, key, NULL) < 0 ? -ENOMEM : 0;
}

static inline int lb_arr_add(struct json_object *arr, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_array_add(arr, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

/* A JSON object {key: "value"} of stored tag text; NULL when out of memory. */
struct json_object *lb_tags_json(const char *tags);

/* The language whose printed forms are read besides Python's (lb_metrics_set_language). */
enum { LB_METRICS_LANG_PYTHON, LB_METRICS_LANG_R, LB_METRICS_LANG_OCTAVE };

/* The number of elements of an array. */
#define LB_N_OF(a) (sizeof(a) / sizeof((a)[0]))
/* A lower-case letter's bit in the set of first letters lb_metric_word_in is given. */
#define LB_LETTER(c) (1u << ((c) - 'a'))

/* number.c: numbers, value tokens and durations. The character classes are inline: every
 * byte of a line passes through them. */
static inline bool lb_metric_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool lb_metric_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline size_t lb_metric_skip_digits(const char *s, size_t len, size_t i)
{
	while (i < len && lb_metric_is_digit(s[i]))
		i++;
	return i;
}

/* s[0..*len) without the blanks and line ends around it. */
void lb_metric_trim(const char **s, size_t *len);
/* Whether s[0..len) is word, any case. */
bool lb_metric_word_is(const char *s, size_t len, const char *word);
bool lb_metric_value_end(const char *s, size_t len, size_t i);
size_t lb_metric_scan_number(const char *s, size_t len, size_t i, bool holes, double *v);
size_t lb_metric_scan_value(const char *s, size_t len, size_t i, bool holes, lb_metric_value *v);
bool lb_metric_parse_duration(const char *s, size_t len, double *out);
bool lb_metric_parse_duration_prefix(const char *s, size_t len, double *out);

/* line.c: the reading of one line, and what the other readings share of it. */
extern const char *const lb_metric_level_words[9];
extern const char *const lb_metric_counter_words[7];
bool lb_metric_key_char(char c, bool first);
bool lb_metric_name_is_one_of(const char *name, const char *const *words, size_t n,
			      bool any_case);
bool lb_metric_word_in(const char *s, size_t len, const char *const *words, size_t n,
		       uint32_t firsts);
bool lb_metric_is_counter_word(const char *s, size_t len);
bool lb_metric_position_name(const char *name);
bool lb_metric_log_line(const lb_metric_value *first);
bool lb_metric_special_name(const char *name);
void lb_metric_set_first(lb_metric_line *out);
size_t lb_metric_next_name(const char *line, size_t len, size_t i, bool holes, bool comma,
			   lb_metric_line *out, lb_metric_value **v);
bool lb_metric_parse_pairs(const char *line, size_t len, size_t i, bool holes,
			   lb_metric_line *out);
bool lb_metric_valid_name(const char *s, size_t len, bool holes);
size_t lb_metric_escape_len(const char *s, size_t len);
const char *lb_metric_without_escapes(const char *line, size_t *len, lb_metric_line *out);

/* formats.c: the formats of other tools, one line at a time. */
/* Fields after the level: a logger's name, or loguru's module:function:line. */
#define LB_LOG_FIELDS_AFTER 3
bool lb_metric_parse_keras(const char *line, size_t len, size_t i, bool holes,
			   lb_metric_line *out, bool *is_keras);
bool lb_metric_parse_table_row(const char *line, size_t len, size_t i, bool holes,
			       lb_metric_line *out);
size_t lb_metric_log_message_starts(const char *s, size_t len, size_t i, size_t *starts,
				    bool *alone);
void lb_metric_r_string(const char **line, size_t *len, size_t *i);
bool lb_metric_parse_object(const char *line, size_t len, size_t i, bool holes,
			    lb_metric_line *out);
bool lb_metric_octave_display(const char *line, size_t len, lb_metric_line *out);
void lb_metric_r_missing(lb_metric_line *ml);

/* metrics.c: the collector's own steps that the other collecting files take too. */
void lb_metrics_add_values(lb_metrics *m, uint32_t group, int cls, const lb_metric_line *ml);
void lb_metrics_text_line(lb_metrics *m, lb_metrics_stream *st, const char *line, size_t len);

/* lightning.c: PyTorch Lightning's results tables. */
bool lb_metrics_lightning_line(lb_metrics *m, lb_metrics_stream *st, const char *line,
			       size_t len);
void lb_metrics_lightning_end(lb_metrics *m, lb_metrics_stream *st);

/* transformers.c: Hugging Face transformers' `***** eval metrics *****` blocks. */
bool lb_metrics_transformers_line(lb_metrics *m, lb_metrics_stream *st, const char *line,
				  size_t len);
void lb_metrics_transformers_end(lb_metrics_stream *st);

/* unread.c: the lines no reading took, noted for the no_metrics issue. */
int lb_metric_log_metric_like(const char *line, size_t len);
void lb_metrics_note_log_metric(lb_metrics *m, bool from_stderr, int level, const char *line,
				size_t len);
void lb_metrics_note_stderr_metric(lb_metrics *m, const char *line, size_t len);
void lb_metrics_note_result_unread(lb_metrics *m, const char *line, size_t len);
void lb_metrics_note_unread_metric(lb_metrics *m, const char *line, size_t len);
void lb_metrics_note_progress(lb_metrics *m, const char *line, size_t len, lb_metric_line *ml);

#endif
