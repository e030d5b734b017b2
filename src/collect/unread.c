/* Lines the collector did not read, for what they say about a run that reported nothing:
 * log lines and stderr lines that would be metrics, results in a shape labbox does not read,
 * and progress lines, the last of which can stand in for the result
 * (lb_metrics_use_progress). */
#include "labbox/collect.h"
#include "metrics_internal.h"
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A log line whose message reads as metrics, in a format or at a level not read ("WARNING:
 * root:acc: 0.9", "INFO: acc: 0.9"): counted for the no_metrics issue, never collected. Only
 * lines holding a level word are tried, a few places each. Returns the level word's index in
 * lb_metric_level_words, -1 for no such line: the advice depends on whether it was INFO. */
int lb_metric_log_metric_like(const char *line, size_t len)
{
	lb_metric_line *ml;
	bool found = false;
	int level = -1;
	size_t first[LB_N_OF(lb_metric_level_words)];
	bool any = false;

	/* Each word's first place, in one pass over the line: the line is read once, not once a
	 * word (a flood of unread lines passes here line by line). */
	for (size_t w = 0; w < LB_N_OF(lb_metric_level_words); w++)
		first[w] = SIZE_MAX;
	for (size_t i = 0; i + 4 <= len; i++) {
		switch (line[i]) {
		case 'D': case 'I': case 'N': case 'W': case 'E': case 'C': case 'F': case 'T':
			break;
		default:
			continue;
		}
		for (size_t w = 0; w < LB_N_OF(lb_metric_level_words); w++) {
			if (first[w] != SIZE_MAX || lb_metric_level_words[w][0] != line[i] ||
			    line[i + 1] != lb_metric_level_words[w][1])
				continue;
			size_t wl = strlen(lb_metric_level_words[w]);
			if (wl <= len - i && memcmp(line + i, lb_metric_level_words[w], wl) == 0) {
				first[w] = i;
				any = true;
			}
		}
	}
	for (size_t w = 0; any && w < LB_N_OF(lb_metric_level_words) && !found; w++) {
		const char *p = first[w] == SIZE_MAX ? NULL : line + first[w];
		size_t tries = 0;

		if (!p)
			continue;
		ml = malloc(sizeof(*ml));
		if (!ml)
			return false;
		for (size_t k = (size_t)(p - line) + strlen(lb_metric_level_words[w]);
		     k < len && tries < 8 && !found; k++) {
			if (!strchr(": ]-|>)", line[k - 1]) ||
			    !(lb_metric_is_alpha(line[k]) || line[k] == '_'))
				continue;
			tries++;
			found = lb_metric_line_parse(line + k, len - k, ml) &&
				ml->form == LB_METRIC_FORM_PLAIN && ml->values[0].kind == LB_METRIC_NUMBER &&
				!lb_metric_special_name(ml->name);
		}
		free(ml);
		if (found)
			level = (int)w;
	}
	return level;
}

/* The line an issue quotes: trimmed, valid UTF-8, and without control bytes, since the
 * message is shown on a terminal. */
static void set_example(char *dst, size_t cap, const char *line, size_t len)
{
	lb_metric_trim(&line, &len);
	lb_text_utf8(dst, cap, line, len < cap - 1 ? len : cap - 1);
	for (char *c = dst; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

void lb_metrics_note_log_metric(lb_metrics *m, bool from_stderr, int level, const char *line,
				size_t len)
{
	/* stderr's first line is quoted when there is one, logging's stream: which of two lines
	 * of different streams came first is only as exact as the order they were read in. */
	if (!m->log_metric_lines++ || (from_stderr && !m->log_metric_example_stderr)) {
		set_example(m->log_metric_example, sizeof(m->log_metric_example), line, len);
		m->log_metric_example_stderr = from_stderr;
		size_t i = 0, starts[1 + LB_LOG_FIELDS_AFTER];
		bool alone = true;

		while (i < len && lb_text_blank(line[i]))
			i++;
		/* The level alone ("INFO: acc: 0.9") is a format not read, whatever follows it. */
		if (strcmp(lb_metric_level_words[level], "INFO") != 0)
			m->log_metric_example_kind = LB_LOG_LIKE_LEVEL;
		else if (lb_metric_log_message_starts(line, len, i, starts, &alone) && !alone)
			m->log_metric_example_kind = LB_LOG_LIKE_MESSAGE;
		else
			m->log_metric_example_kind = LB_LOG_LIKE_FORMAT;
	}
}

void lb_metrics_note_stderr_metric(lb_metrics *m, const char *line, size_t len)
{
	if (!m->stderr_metric_lines++)
		set_example(m->stderr_metric_example, sizeof(m->stderr_metric_example), line, len);
}

/* Whether a line no reading took holds a `name: number` or `name=number` pair (a name quoted
 * or not): numbers printed in a shape labbox does not read, which the no_metrics issue names
 * rather than say no such line was printed. One pass over the line. */
static bool unread_metric_like(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		size_t k = i, t;
		double x;

		if (!(lb_metric_is_alpha(line[i]) || line[i] == '_') ||
		    (i > 0 && lb_metric_key_char(line[i - 1], false)))
			continue;
		while (k < len && lb_metric_key_char(line[k], false))
			k++;
		i = k;
		if (k < len && (line[k] == '\'' || line[k] == '"'))
			k++;
		while (k < len && lb_text_blank(line[k]))
			k++;
		if (k >= len || (line[k] != ':' && line[k] != '='))
			continue;
		for (k++; k < len && lb_text_blank(line[k]); k++)
			;
		for (t = k; t < len && !lb_text_blank(line[t]) && !strchr(",;|})%", line[t]); t++)
			;
		if (t > k && lb_parse_number(line + k, t - k, &x))
			return true;
	}
	return false;
}

/* Words results are named by: a line that holds one followed by a number, with no ':'
 * between them, printed results in the `name value` shape labbox does not read. */
static const char *const result_words[] = { "loss", "acc",  "accuracy", "perplexity", "ppl",
					    "f1",   "bleu", "rouge",    "auc",	      "mse",
					    "rmse", "mae",  "wer",      "cer",	      "psnr",
					    "ssim", "mrr",  "ndcg",     "precision",  "recall",
					    "reward" };
#define RESULT_FIRSTS                                                                         \
	(LB_LETTER('l') | LB_LETTER('a') | LB_LETTER('p') | LB_LETTER('f') | LB_LETTER('b') |   \
	 LB_LETTER('r') | LB_LETTER('m') | LB_LETTER('w') | LB_LETTER('c') | LB_LETTER('s') |   \
	 LB_LETTER('n'))

static bool is_result_word(const char *s, size_t len)
{
	return lb_metric_word_in(s, len, result_words, LB_N_OF(result_words), RESULT_FIRSTS);
}

bool lb_metric_result_word_in(const char *name)
{
	for (const char *p = name; *p;) {
		const char *q = p;

		while (*q && (lb_metric_is_alpha(*q) || lb_metric_is_digit(*q)))
			q++;
		if (q > p && is_result_word(p, (size_t)(q - p)))
			return true;
		p = *q ? q + 1 : q;
	}
	return false;
}

/* The word before a result's word at w, when it qualifies it ("val", "train", "test"):
 * line[*p..*q); both w when there is none. */
static void qualifier_before(const char *line, size_t w, size_t *p, size_t *q)
{
	*p = *q = w;
	if (w == 0 || !lb_text_blank(line[w - 1]))
		return;
	for (*q = w - 1; *q > 0 && lb_text_blank(line[*q - 1]); (*q)--)
		;
	for (*p = *q; *p > 0 && (lb_metric_is_alpha(line[*p - 1]) || line[*p - 1] == '_'); (*p)--)
		;
	if (*p == *q || *q - *p > 24 ||
	    (*p > 0 && !lb_text_blank(line[*p - 1]) && !strchr("|[(", line[*p - 1])) ||
	    lb_metric_is_counter_word(line + *p, *q - *p))
		*p = *q = w;
}

/* Whether a line holds a result's word, blanks and a number (`val loss 6.17`, `| test ppl
 * 235.08`): fix gets the pair as a metric line would print it, with the word before the
 * result's word when it is one (`val loss: 6.17`). One pass over the line. */
static bool result_unread_like(const char *line, size_t len, char *fix, size_t cap)
{
	for (size_t i = 0; i < len; i++) {
		size_t k = i, b, t, p, q;
		double x;

		if (!lb_metric_is_alpha(line[i]) ||
		    (i > 0 && (lb_metric_is_alpha(line[i - 1]) || lb_metric_is_digit(line[i - 1]) ||
			       line[i - 1] == '_')))
			continue;
		while (k < len && (lb_metric_is_alpha(line[k]) || lb_metric_is_digit(line[k])))
			k++;
		for (b = k; b < len && lb_text_blank(line[b]); b++)
			;
		/* What may start a number comes first: it rejects nearly every word cheaply. */
		if (b == k || b >= len ||
		    !(lb_metric_is_digit(line[b]) || strchr("+-.nNiI", line[b])) ||
		    !is_result_word(line + i, k - i)) {
			i = k;
			continue;
		}
		for (t = b; t < len && !lb_text_blank(line[t]) && !strchr(",;|)", line[t]); t++)
			;
		if (b == k || t == b || !lb_parse_number(line + b, t - b, &x)) {
			i = k;
			continue;
		}
		qualifier_before(line, i, &p, &q);
		if (!fix)
			return true;
		if (t - b < 32 && k - i < 32)
			snprintf(fix, cap, "%.*s%s%.*s: %.*s", (int)(q - p), line + p, q > p ? " " : "",
				 (int)(k - i), line + i, (int)(t - b), line + b);
		else
			snprintf(fix, cap, "%.*s: 0.5", (int)(k - i < 32 ? k - i : 32), line + i);
		return true;
	}
	return false;
}

/* Whether a line is `name: number` whose name holds a result's word and, outside it, a digit
 * (a seed, a fold, an epoch counted into the name, which scan_name does not take as one):
 * fix gets the pair under the result's word and the word before it that qualifies it. */
static bool result_counted_like(const char *line, size_t len, char *fix, size_t cap)
{
	size_t c = 0, b, t, w = len, wend = 0;
	double x;

	while (c + 1 < len && !(line[c] == ':' && lb_text_blank(line[c + 1])))
		c++;
	if (c + 1 >= len || c == 0)
		return false;
	for (b = c + 1; b < len && lb_text_blank(line[b]); b++)
		;
	for (t = len; t > b && lb_text_blank(line[t - 1]); t--)
		;
	if (t == b || t - b > 40 || !lb_parse_number(line + b, t - b, &x))
		return false;
	for (size_t i = 0; i < c && w == len;) {
		size_t k = i;
		while (k < c && (lb_metric_is_alpha(line[k]) || lb_metric_is_digit(line[k])))
			k++;
		if (k > i && lb_metric_is_alpha(line[i]) && is_result_word(line + i, k - i)) {
			w = i;
			wend = k;
		}
		i = k > i ? k : i + 1;
	}
	if (w == len)
		return false;
	bool counted = false;
	for (size_t i = 0; i < c && !counted; i++)
		counted = lb_metric_is_digit(line[i]) && (i < w || i >= wend);
	if (!counted)
		return false;
	if (!fix)
		return true;
	size_t p, q; /* the word before the result's that qualifies it ("Test") */
	qualifier_before(line, w, &p, &q);
	snprintf(fix, cap, "%.*s%s%.*s: %.*s", (int)(q - p), line + p, q > p ? " " : "",
		 (int)(wend - w < 32 ? wend - w : 32), line + w, (int)(t - b), line + b);
	return true;
}

/* A line that no reading took and that holds a result in the `name value` shape: counted, the
 * first quoted (a step's line only until a line of another kind holds one). */
void lb_metrics_note_result_unread(lb_metrics *m, const char *line, size_t len)
{
	char fix[sizeof(m->result_unread_fix)];
	size_t w = 0;
	bool counter, quote;

	if (!result_unread_like(line, len, NULL, 0)) {
		if (result_counted_like(line, len, fix, sizeof fix) &&
		    m->result_counted_lines++ == 0) {
			set_example(m->result_counted_example, sizeof(m->result_counted_example),
				    line, len);
			snprintf(m->result_counted_fix, sizeof(m->result_counted_fix), "%s", fix);
		}
		return;
	}
	while (w < len && lb_metric_is_alpha(line[w]))
		w++;
	counter = lb_metric_is_counter_word(line, w);
	quote = m->result_unread_lines++ == 0 || (m->result_unread_example_counter && !counter);
	/* The pair to print is only made for a line that is quoted. */
	if (quote && result_unread_like(line, len, fix, sizeof(fix))) {
		set_example(m->result_unread_example, sizeof(m->result_unread_example), line, len);
		snprintf(m->result_unread_fix, sizeof(m->result_unread_fix), "%s", fix);
		m->result_unread_example_counter = counter;
	}
}

void lb_metrics_note_unread_metric(lb_metrics *m, const char *line, size_t len)
{
	if (!unread_metric_like(line, len))
		return;
	if (!m->unread_metric_lines++)
		set_example(m->unread_metric_example, sizeof(m->unread_metric_example), line, len);
}

/* A progress line is no metric, but what it holds is all a run that printed nothing else, or
 * was ended before its summary, has to show: its last one is kept for lb_metrics_use_progress
 * and the first one quoted by the no_metrics issue. */
void lb_metrics_note_progress(lb_metrics *m, const char *line, size_t len, lb_metric_line *ml)
{
	int level = lb_metric_progress_parse(line, len, ml);

	if (!level || len > sizeof(m->progress_last))
		return;
	if (!m->progress_lines++)
		set_example(m->progress_example, sizeof(m->progress_example), line, len);
	memcpy(m->progress_last, line, len);
	m->progress_last_len = len;
	m->progress_group = m->out.group;
	m->progress_level = level;
}

bool lb_metrics_use_progress(lb_metrics *m, bool completed)
{
	lb_metric_line *ml;

	/* Metrics printed only before the progress lines are start-up facts, not the result
	 * of the training the progress lines report: whether the last progress line is used
	 * does not depend on whether a run happened to print a dataset's size first. */
	if (!m || m->progress_closed || m->progress_lines == 0)
		return false;
	/* A completed run had every chance to print its result: a step's running loss is not
	 * one. An epoch's line is, as Keras's epoch line is read (the last epoch wins). */
	if (completed && m->progress_level != LB_METRIC_PROGRESS_EPOCH) {
		m->progress_ignored = m->reported_number; /* never silent: validation warns */
		return false;
	}
	ml = malloc(sizeof(*ml));
	if (!ml)
		return false;
	m->startup_entries = m->n_entries;
	if (lb_metric_progress_parse(m->progress_last, m->progress_last_len, ml)) {
		if (m->language == LB_METRICS_LANG_R)
			lb_metric_r_missing(ml);
		m->line_stdout = true; /* progress lines are stdout's */
		lb_metrics_add_values(m, m->progress_group, LB_CLS_PLAIN, ml);
		m->from_progress = m->n_entries > m->startup_entries || ml->n_values > 0;
	}
	/* From now on the line quoted is the one the values are read from. */
	if (m->from_progress)
		set_example(m->progress_example, sizeof(m->progress_example), m->progress_last,
			    m->progress_last_len);
	free(ml);
	return m->from_progress;
}
