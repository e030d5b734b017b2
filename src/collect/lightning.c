/* PyTorch Lightning's results tables, read from stdout as they stream past: a table spans
 * lines, so unlike the readings of formats.c this one keeps its place in the stream
 * (lb_metrics_stream's lt_* fields) and hands each row to the collector as a line. */
#include "labbox/collect.h"
#include "metrics_internal.h"
#include "text.h"

#include <stdio.h>
#include <string.h>

/* PyTorch Lightning's results table ----------------------------------------------------------
 *
 * trainer.test() and trainer.validate() print what they logged as a table on stdout
 * (docs/result-json.md), in one of two layouts. With rich importable, rich's default box:
 *
 *   ┏━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┓
 *   ┃ Test metric ┃ DataLoader 0 ┃
 *   ┡━━━━━━━━━━━━━╇━━━━━━━━━━━━━━┩
 *   │  test_acc   │     0.88     │
 *   └─────────────┴──────────────┘
 *
 * Without rich, a rule of '─' (or '-' where the encoding has no '─') the terminal's width,
 * then lines of W-column cells, each text centred as Python's "{:^W}" centres it
 * ((W - len) / 2 blanks before it), right blanks stripped:
 *
 *   ────────────────────────────────────────────────
 *          Test metric             DataLoader 0
 *   ────────────────────────────────────────────────
 *           test_acc            0.8812000155448914
 *   ────────────────────────────────────────────────
 *
 * A table is read only where its header ("Test metric" or "Validate metric", then
 * "DataLoader N" columns numbered on from one N) stands between its rules, so two columns of
 * prose, a log's rule lines or someone else's box are never rows. Its rows are then read as
 * `name: value` lines (values that are numbers only, same names and replacement rules);
 * DataLoader 0's column gives `name`, DataLoader N's `name/dataloader_idx_N`, Lightning's own
 * name for it (DECISION-lightning.md). A row's cells that are blank (a metric another
 * DataLoader did not log), not numbers, or cut short by rich ("…") are not read. */
enum { LT_NONE, LT_PLAIN_RULE, LT_PLAIN_HEAD, LT_PLAIN_ROWS, LT_RICH_TOP, LT_RICH_HEAD,
       LT_RICH_ROWS };

#define LT_COLS_MAX 64
#define LT_VALUE_MAX 64 /* longer cells are no number Python prints */

/* rich's HEAVY_HEAD box, as UTF-8 */
#define BOX_HEAVY_TL "\xe2\x94\x8f"     /* ┏ */
#define BOX_HEAVY_H "\xe2\x94\x81"      /* ━ */
#define BOX_HEAVY_DOWN "\xe2\x94\xb3"   /* ┳ */
#define BOX_HEAVY_TR "\xe2\x94\x93"     /* ┓ */
#define BOX_HEAVY_V "\xe2\x94\x83"      /* ┃ */
#define BOX_HEAD_L "\xe2\x94\xa1"       /* ┡ */
#define BOX_HEAD_CROSS "\xe2\x95\x87"   /* ╇ */
#define BOX_HEAD_R "\xe2\x94\xa9"       /* ┩ */
#define BOX_LIGHT_V "\xe2\x94\x82"      /* │ */
#define BOX_LIGHT_BL "\xe2\x94\x94"     /* └ */
#define BOX_LIGHT_H "\xe2\x94\x80"      /* ─ */
#define BOX_LIGHT_UP "\xe2\x94\xb4"     /* ┴ */
#define BOX_LIGHT_BR "\xe2\x94\x98"     /* ┘ */
#define BOX_LEN 3

typedef struct lt_cell {
	const char *s;
	size_t len;
} lt_cell;

/* The line without escape sequences (rich colours its cells on a terminal) and right blanks,
 * into buf (LB_METRIC_LINE_MAX bytes; a line is never longer). */
static size_t lt_clean(const char *line, size_t len, char *buf)
{
	size_t o = 0;

	if (!memchr(line, '\x1b', len)) {
		o = len < LB_METRIC_LINE_MAX ? len : LB_METRIC_LINE_MAX;
		memcpy(buf, line, o);
	}
	for (size_t i = o; i < len && o < LB_METRIC_LINE_MAX;) {
		size_t n = line[i] == '\x1b' ? lb_metric_escape_len(line + i, len - i) : 0;

		if (n == 0)
			buf[o++] = line[i++];
		else
			i += n;
	}
	while (o > 0 && lb_text_blank(buf[o - 1]))
		o--;
	return o;
}

static bool box_at(const char *s, size_t len, size_t i, const char *box)
{
	return i + BOX_LEN <= len && memcmp(s + i, box, BOX_LEN) == 0;
}

/* A rule of rich's box: left, fills and joints, right. Returns the number of joints (one
 * fewer than the columns), -1 when it is no such rule. */
static int rich_rule(const char *s, size_t len, const char *left, const char *fill,
		     const char *joint, const char *right)
{
	int joints = 0;
	bool filled = false;

	if (len < 3 * BOX_LEN || !box_at(s, len, 0, left) || !box_at(s, len, len - BOX_LEN, right))
		return -1;
	for (size_t i = BOX_LEN; i < len - BOX_LEN; i += BOX_LEN) {
		if (box_at(s, len, i, fill))
			filled = true;
		else if (box_at(s, len, i, joint))
			joints++;
		else
			return -1;
	}
	return filled ? joints : -1;
}

/* The cells between a rich row's bars, trimmed; -1 when the line is no such row or has more
 * than max cells. */
static int rich_cells(const char *s, size_t len, const char *bar, lt_cell *cells, int max)
{
	int n = 0;
	size_t start = BOX_LEN;

	if (len < 2 * BOX_LEN || !box_at(s, len, 0, bar) || !box_at(s, len, len - BOX_LEN, bar))
		return -1;
	for (size_t i = BOX_LEN; i + BOX_LEN <= len; i++) {
		if (!box_at(s, len, i, bar))
			continue;
		if (n == max)
			return -1;
		cells[n].s = s + start;
		cells[n].len = i - start;
		lb_metric_trim(&cells[n].s, &cells[n].len);
		n++;
		start = i + BOX_LEN;
		i += BOX_LEN - 1;
	}
	return n;
}

/* The cells of a line Python's "{:^W}" * n wrote and stripped on the right: each cell's text
 * centred in its w columns, blank cells empty. -1 when a text is not where centring puts it
 * (prose, a cell wider than its column) or there are more than max cells. */
static int plain_cells(const char *s, size_t len, size_t w, lt_cell *cells, int max)
{
	int n = 0;

	for (size_t pos = 0; pos < len; pos += w) {
		const char *c = s + pos;
		size_t end = len - pos < w ? len - pos : w, lead = 0;

		if (n == max)
			return -1;
		while (lead < end && c[lead] == ' ')
			lead++;
		while (end > lead && c[end - 1] == ' ')
			end--;
		cells[n].s = c + lead;
		cells[n].len = end - lead;
		if (cells[n].len > 0 && lead != (w - cells[n].len) / 2)
			return -1;
		n++;
	}
	return n;
}

static const char *const lt_stages[] = { "Test metric", "Validate metric" };

/* "Test metric" or "Validate metric", then "DataLoader N" for N, N + 1, ...: Lightning's
 * header. Sets *first to the first N. */
static bool lt_header(const lt_cell *cells, int n, unsigned *first)
{
	static const char dl[] = "DataLoader ";
	bool stage = false;

	if (n < 2)
		return false;
	for (size_t k = 0; k < LB_N_OF(lt_stages); k++)
		stage |= cells[0].len == strlen(lt_stages[k]) &&
			 memcmp(cells[0].s, lt_stages[k], cells[0].len) == 0;
	if (!stage)
		return false;
	for (int j = 1; j < n; j++) {
		const char *d;
		size_t nd;
		unsigned long idx = 0;

		if (cells[j].len <= sizeof(dl) - 1 || memcmp(cells[j].s, dl, sizeof(dl) - 1) != 0)
			return false;
		d = cells[j].s + sizeof(dl) - 1;
		nd = cells[j].len - (sizeof(dl) - 1);
		if (nd > 6 || (nd > 1 && d[0] == '0'))
			return false;
		for (size_t k = 0; k < nd; k++) {
			if (!lb_metric_is_digit(d[k]))
				return false;
			idx = idx * 10 + (unsigned long)(d[k] - '0');
		}
		if (j == 1)
			*first = (unsigned)idx;
		else if (idx != *first + (unsigned)j - 1)
			return false;
	}
	return true;
}

/* A plain rule: '─' or '-' only, at least ten. Returns its length in characters, 0 when it
 * is none. */
static size_t plain_rule(const char *s, size_t len)
{
	size_t n = 0;

	if (len > 0 && s[0] == '-') {
		for (; n < len; n++)
			if (s[n] != '-')
				return 0;
		return n >= 10 ? n : 0;
	}
	for (size_t i = 0; i < len; i += BOX_LEN, n++)
		if (!box_at(s, len, i, BOX_LIGHT_H))
			return 0;
	return n >= 10 ? n : 0;
}

/* The plain header, its column width found from where the stage's text is centred in the
 * first column (two widths centre it there; the other cells say which). */
static bool plain_header(lb_metrics_stream *st, const char *s, size_t len)
{
	lt_cell cells[LT_COLS_MAX + 1];
	size_t lead = 0;
	unsigned first = 0;

	while (lead < len && s[lead] == ' ')
		lead++;
	for (size_t k = 0; k < LB_N_OF(lt_stages); k++) {
		size_t sl = strlen(lt_stages[k]);

		if (len - lead < sl || memcmp(s + lead, lt_stages[k], sl) != 0)
			continue;
		for (size_t w = 2 * lead + sl; w <= 2 * lead + sl + 1; w++) {
			int n = plain_cells(s, len, w, cells, LT_COLS_MAX + 1);

			if (w >= sizeof("DataLoader 0") - 1 && n >= 2 && lt_header(cells, n, &first)) {
				st->lt_width = w;
				st->lt_first = first;
				st->lt_cols = (unsigned)n - 1;
				return true;
			}
		}
	}
	return false;
}

/* One value cell of a row, collected as the line `name: value` would be, when it is a
 * number and the name reads back as itself. */
static void lt_emit(lb_metrics *m, lb_metrics_stream *st, const char *name, size_t name_len,
		    unsigned idx, const lt_cell *value)
{
	char line[LB_METRIC_NAME_MAX + sizeof("/dataloader_idx_4294967295: ") + LT_VALUE_MAX];
	lb_metric_line ml;
	double v;
	int n;

	/* A NUL would end the name or the value early in the line built from them. */
	if (value->len == 0 || value->len > LT_VALUE_MAX || name_len > LB_METRIC_NAME_MAX ||
	    memchr(name, ':', name_len) || memchr(name, '\0', name_len) ||
	    memchr(value->s, '\0', value->len) || !lb_parse_number(value->s, value->len, &v))
		return;
	if (idx == 0)
		n = snprintf(line, sizeof(line), "%.*s: %.*s", (int)name_len, name,
			     (int)value->len, value->s);
	else
		n = snprintf(line, sizeof(line), "%.*s/dataloader_idx_%u: %.*s", (int)name_len,
			     name, idx, (int)value->len, value->s);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	/* The name must read back whole: a name the line grammar reads otherwise (a log
	 * prefix, words it drops) is no name this table gave. */
	if (lb_metric_line_parse(line, (size_t)n, &ml) && ml.form == LB_METRIC_FORM_PLAIN &&
	    !ml.logged && ml.n_values == 1 && ml.values[0].kind == LB_METRIC_NUMBER &&
	    !lb_metric_special_name(ml.values[0].name) &&
	    strlen(ml.values[0].name) + 2 + value->len == (size_t)n &&
	    memcmp(ml.values[0].name, line, strlen(ml.values[0].name)) == 0)
		lb_metrics_text_line(m, st, line, (size_t)n);
}

static void lt_emit_row(lb_metrics *m, lb_metrics_stream *st, const char *name,
			size_t name_len, const lt_cell *cells, int n)
{
	for (int j = 1; j < n; j++)
		lt_emit(m, st, name, name_len, st->lt_first + (unsigned)j - 1, &cells[j]);
}

/* The held row, under its whole name. */
static void lt_flush(lb_metrics *m, lb_metrics_stream *st)
{
	lt_cell cells[LT_COLS_MAX + 1];
	int n;

	if (!st->lt_pending)
		return;
	st->lt_pending = false;
	n = plain_cells(st->lt_held, st->lt_held_len, st->lt_width, cells, LT_COLS_MAX + 1);
	if (n > 1)
		lt_emit_row(m, st, st->lt_name, st->lt_name_len, cells, n);
}

/* A line inside a plain table's rows: false when it is no row, which ends the table. A name
 * longer than half the terminal goes on in the next lines, cut at the column's width with
 * the values on its first line: a row whose name fills its column waits for them. */
static bool plain_row(lb_metrics *m, lb_metrics_stream *st, const char *s, size_t len)
{
	lt_cell cells[LT_COLS_MAX + 1];
	size_t w = st->lt_width;
	int n = plain_cells(s, len, w, cells, (int)st->lt_cols + 1);

	if (n < 0) {
		/* A value wider than its column (a tensor's list) shifts the cells after it:
		 * still a row, by its name where a name is, but nothing in it is read. */
		if (len > w && plain_cells(s, w, w, cells, 1) == 1 && cells[0].len > 0) {
			lt_flush(m, st);
			return true;
		}
		return false;
	}
	if (n == 0 || cells[0].len == 0)
		return false;
	if (n == 1) {
		if (st->lt_pending && st->lt_name_len + cells[0].len <= LB_METRIC_NAME_MAX) {
			memcpy(st->lt_name + st->lt_name_len, cells[0].s, cells[0].len);
			st->lt_name_len += cells[0].len;
			if (cells[0].len < w)
				lt_flush(m, st);
		} else {
			st->lt_pending = false; /* a name too long for a metric's */
		}
		return true;
	}
	lt_flush(m, st);
	if (cells[0].len < w) {
		lt_emit_row(m, st, cells[0].s, cells[0].len, cells, n);
		return true;
	}
	memcpy(st->lt_held, s, len);
	st->lt_held_len = len;
	memcpy(st->lt_name, cells[0].s, cells[0].len);
	st->lt_name_len = cells[0].len;
	st->lt_pending = true;
	return true;
}

/* A line inside a rich table's rows: false when it is no row, which ends the table. A row
 * whose name cell is blank is the next line of a cell rich wrapped: not read. */
static bool rich_row(lb_metrics *m, lb_metrics_stream *st, const char *s, size_t len)
{
	lt_cell cells[LT_COLS_MAX + 1];
	int n = rich_cells(s, len, BOX_LIGHT_V, cells, (int)st->lt_cols + 1);

	if (n != (int)st->lt_cols + 1)
		return false;
	if (cells[0].len > 0)
		lt_emit_row(m, st, cells[0].s, cells[0].len, cells, n);
	return true;
}

/* Whatever of a table is still held goes where it would have gone without one: a header
 * whose rule never came is an ordinary line, a row waiting for its name's end is read. */
void lb_metrics_lightning_end(lb_metrics *m, lb_metrics_stream *st)
{
	if (st->lt_state == LT_PLAIN_HEAD || st->lt_state == LT_RICH_HEAD)
		lb_metrics_text_line(m, st, st->lt_held, st->lt_held_len);
	else if (st->lt_state == LT_PLAIN_ROWS)
		lt_flush(m, st);
	st->lt_state = LT_NONE;
	st->lt_pending = false;
}

static void lt_hold(lb_metrics_stream *st, const char *line, size_t len, int state)
{
	memcpy(st->lt_held, line, len);
	st->lt_held_len = len;
	st->lt_state = state;
}

/* One stdout line seen by the Lightning table reader: true when it is part of a table (its
 * header, the rules under the header, a row) and so no other reading's. A table's first rule
 * is everybody's, as is any line that turns out to be none of a table's. */
bool lb_metrics_lightning_line(lb_metrics *m, lb_metrics_stream *st, const char *line, size_t len)
{
	char buf[LB_METRIC_LINE_MAX];
	lt_cell cells[LT_COLS_MAX + 1];
	size_t n, rule;
	unsigned first = 0;
	int k;

	/* Every line of a flood passes here: outside a table only a rule opens one, and a
	 * rule starts with '-' or a box character's lead byte (or an escape before it). */
	if (st->lt_state == LT_NONE && line[0] != '-' && line[0] != '\xe2' && line[0] != '\x1b')
		return false;
	n = lt_clean(line, len, buf);
	switch (st->lt_state) {
	case LT_PLAIN_RULE:
		if (n <= st->lt_rule && plain_header(st, buf, n)) {
			lt_hold(st, line, len, LT_PLAIN_HEAD);
			return true;
		}
		break;
	case LT_PLAIN_HEAD:
		if (plain_rule(buf, n) == st->lt_rule) {
			st->lt_state = LT_PLAIN_ROWS;
			st->lt_pending = false;
			return true;
		}
		lb_metrics_lightning_end(m, st);
		break;
	case LT_PLAIN_ROWS:
		if (plain_rule(buf, n) == st->lt_rule) {
			lb_metrics_lightning_end(m, st);
			return true;
		}
		if (plain_row(m, st, buf, n))
			return true;
		lb_metrics_lightning_end(m, st);
		break;
	case LT_RICH_TOP:
		k = rich_cells(buf, n, BOX_HEAVY_V, cells, LT_COLS_MAX + 1);
		if (k == (int)st->lt_cols + 1 && lt_header(cells, k, &first)) {
			st->lt_first = first;
			lt_hold(st, line, len, LT_RICH_HEAD);
			return true;
		}
		break;
	case LT_RICH_HEAD:
		if (rich_rule(buf, n, BOX_HEAD_L, BOX_HEAVY_H, BOX_HEAD_CROSS, BOX_HEAD_R) ==
		    (int)st->lt_cols) {
			st->lt_state = LT_RICH_ROWS;
			return true;
		}
		lb_metrics_lightning_end(m, st);
		break;
	case LT_RICH_ROWS:
		if (rich_rule(buf, n, BOX_LIGHT_BL, BOX_LIGHT_H, BOX_LIGHT_UP, BOX_LIGHT_BR) ==
		    (int)st->lt_cols) {
			st->lt_state = LT_NONE;
			return true;
		}
		if (rich_row(m, st, buf, n))
			return true;
		st->lt_state = LT_NONE;
		break;
	default:
		break;
	}
	/* Not a table's line: it may open one. */
	if ((rule = plain_rule(buf, n)) > 0) {
		st->lt_state = LT_PLAIN_RULE;
		st->lt_rule = rule;
	} else if ((k = rich_rule(buf, n, BOX_HEAVY_TL, BOX_HEAVY_H, BOX_HEAVY_DOWN,
				  BOX_HEAVY_TR)) >= 1 && k <= LT_COLS_MAX) {
		st->lt_state = LT_RICH_TOP;
		st->lt_cols = (unsigned)k;
	} else {
		st->lt_state = LT_NONE;
	}
	return false;
}
