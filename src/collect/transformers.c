/* Hugging Face transformers' metrics blocks, read from stdout as they stream past: a block
 * spans lines, so, as lightning.c for Lightning's tables, this reading keeps its place in the
 * stream (lb_metrics_stream's hf_* fields) and hands each row to the collector as a line. */
#include "labbox/collect.h"
#include "metrics_internal.h"
#include "text.h"

#include <stdio.h>
#include <string.h>

/* Trainer.log_metrics(split, metrics) (transformers' trainer_pt_utils.py), which run_glue.py
 * and every example script call at the end for "train", "eval", "predict" or "test", prints
 *
 *   ***** eval metrics *****
 *     epoch                   =        3.0
 *     eval_accuracy           =     0.8934
 *     eval_runtime            = 0:00:03.10
 *     eval_samples            =        408
 *
 * each row "  {key: <K} = {value:>V}", K the longest key's width and V the longest value's,
 * keys sorted, so that every row of a block has its '=' in the same column and the same
 * width. metrics_format() has rounded floats to 4 places and written runtimes as h:mm:ss.cc,
 * memory as "12MB", total_flos as "3GF". The keys already carry the split's prefix
 * (eval_accuracy); they are the names.
 *
 * A block is read only under that header, and a row only when it has the block's columns: a
 * line of another shape ends the block and is read as any line is. Each row is read as the
 * line `key: value` would be (numbers only; an epoch is a counter, left out as in the
 * per-epoch dicts). A runtime, a memory size, the flos are no number and are not read, as
 * `train_time: 12.5s` is not: the seconds are in the dict Trainer printed before the block.
 * A block's values are the run's final ones for those names: a later per-log dict
 * (`{'eval_loss': ..., 'epoch': 3.0}`) does not replace them (add_metric, metrics.c); a
 * later block or `name: value` line does. */
enum { HF_NONE, HF_ROWS };

#define HF_VALUE_MAX 64 /* longer values are no number metrics_format writes */

/* Characters, not bytes, of UTF-8 text: Python pads a key by its characters. */
static size_t hf_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

static bool hf_name_char(char c)
{
	return lb_metric_is_alpha(c) || lb_metric_is_digit(c) || c == '_' || c == '-' || c == '.';
}

/* "***** SPLIT metrics *****", SPLIT one word (log_metrics prints what the script names). */
static bool hf_header(const char *s, size_t len)
{
	static const char head[] = "***** ", tail[] = " metrics *****";
	size_t h = sizeof(head) - 1, t = sizeof(tail) - 1, k;

	if (len <= h + t || memcmp(s, head, h) != 0 || memcmp(s + len - t, tail, t) != 0)
		return false;
	for (k = h; k < len - t; k++)
		if (!hf_name_char(s[k]))
			return false;
	return true;
}

/* A row "  key  =  value": two blanks, a key without blanks, blanks, '=', blanks, a value.
 * The offsets of the key's end, the '=' and the value's start; false when it is no row. */
static bool hf_row(const char *s, size_t len, size_t *key_end, size_t *eq, size_t *value)
{
	size_t k = 2;

	if (len < 7 || s[0] != ' ' || s[1] != ' ' || lb_text_blank(s[2]))
		return false;
	while (k < len && !lb_text_blank(s[k]) && s[k] != '=')
		k++;
	*key_end = k;
	if (k == len || s[k] == '=') /* a blank before '=' always: the padding's at least */
		return false;
	while (k < len && lb_text_blank(s[k]))
		k++;
	if (k + 2 >= len || s[k] != '=' || s[k + 1] != ' ')
		return false;
	*eq = k;
	for (k += 2; k < len && lb_text_blank(s[k]); k++)
		;
	*value = k;
	return k < len;
}

/* One row's value collected as the line `key: value` would be, when it is a number and the
 * key reads back whole as its name. */
static void hf_emit(lb_metrics *m, lb_metrics_stream *st, const char *key, size_t key_len,
		    const char *value, size_t value_len)
{
	char line[LB_METRIC_NAME_MAX + 2 + HF_VALUE_MAX + 1];
	lb_metric_line ml;
	double v;
	int n;

	if (key_len > LB_METRIC_NAME_MAX || value_len > HF_VALUE_MAX ||
	    memchr(key, ':', key_len) || memchr(key, '\0', key_len) ||
	    memchr(value, '\0', value_len) || !lb_parse_number(value, value_len, &v))
		return;
	n = snprintf(line, sizeof(line), "%.*s: %.*s", (int)key_len, key, (int)value_len, value);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	/* A key the line grammar reads otherwise (a counter: epoch; a level word; a name it
	 * does not take whole) is not read: as in the dicts, the grammar says what a name is. */
	if (!lb_metric_line_parse(line, (size_t)n, &ml) || ml.form != LB_METRIC_FORM_PLAIN ||
	    ml.logged || ml.n_values != 1 || ml.values[0].kind != LB_METRIC_NUMBER ||
	    lb_metric_special_name(ml.values[0].name) || strlen(ml.values[0].name) != key_len ||
	    memcmp(ml.values[0].name, key, key_len) != 0)
		return;
	m->line_block = true;
	lb_metrics_text_line(m, st, line, (size_t)n);
	m->line_block = false;
}

/* One stdout line seen by the metrics block reader: true when it is a row of a block, and so
 * no other reading's. The header goes on to the other readings (it is no metric of theirs);
 * a line that is no row ends the block and is theirs too. */
bool lb_metrics_transformers_line(lb_metrics *m, lb_metrics_stream *st, const char *line,
				  size_t len)
{
	size_t key_end, eq, value, eq_col, width;

	/* Every line of a flood passes here: outside a block only a header opens one. */
	if (st->hf_state == HF_NONE && line[0] != '*')
		return false;
	if (st->hf_state == HF_ROWS && hf_row(line, len, &key_end, &eq, &value)) {
		eq_col = hf_chars(line, eq);
		width = hf_chars(line, len);
		/* The first row sets the block's columns, every other row has them. */
		if (st->hf_eq == 0) {
			st->hf_eq = eq_col;
			st->hf_width = width;
		}
		if (eq_col == st->hf_eq && width == st->hf_width) {
			hf_emit(m, st, line + 2, key_end - 2, line + value, len - value);
			return true;
		}
	}
	lb_metrics_transformers_end(st);
	if (hf_header(line, len))
		st->hf_state = HF_ROWS;
	return false;
}

/* A block ends at a blank line, at a line that is none of its rows, and at the stream's end:
 * nothing is held, a row was read as it came. */
void lb_metrics_transformers_end(lb_metrics_stream *st)
{
	st->hf_state = HF_NONE;
	st->hf_eq = 0;
	st->hf_width = 0;
}
