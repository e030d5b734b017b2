/* Lines in the formats of other tools, read into values as line.c reads its own: Keras's
 * progress lines, a Markdown table's name|value row, Python logging's prefixes, a line that is
 * one object literal (JSON or a Python dict's repr), R's printed strings and NA, and Octave's
 * display of a variable. Pure, as line.c is; PyTorch Lightning's tables span lines and are
 * read in lightning.c. */
#include "labbox/collect.h"
#include "metrics_internal.h"
#include "text.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* Keras's progress lines -------------------------------------------------------------------- */

/* A count at s[i..len): digits, or a hole in a template (*hole set). Returns the index after
 * it, or i when there is none. */
static size_t scan_count(const char *s, size_t len, size_t i, bool holes, unsigned long *v,
			 bool *hole)
{
	size_t e;

	*hole = false;
	*v = 0;
	if (holes && i < len && s[i] == LB_METRIC_HOLE) {
		*hole = true;
		return i + 1;
	}
	e = lb_metric_skip_digits(s, len, i);
	if (e == i || e - i > 9)
		return i;
	for (size_t k = i; k < e; k++)
		*v = *v * 10 + (unsigned long)(s[k] - '0');
	return e;
}

static bool blank_or_end(const char *s, size_t len, size_t i)
{
	return i >= len || lb_text_blank(s[i]);
}

/* One timing token ("1s", "20ms/step", "1s/epoch", "215us/sample"): returns the index after
 * it, 0 when it is not one. */
static size_t scan_timing_token(const char *s, size_t len, size_t i, bool holes)
{
	static const char *const units[] = { "ms", "us", "\xc2\xb5s", "s" };
	static const char *const per[] = { "/step", "/epoch", "/sample" };
	size_t e = i;
	double x;
	bool unit = false;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		return 0;
	e = lb_metric_scan_number(s, len, i, holes, &x);
	if (e == i || (e > i && lb_metric_is_alpha(s[i])))
		return 0; /* nan, inf: no duration */
	for (size_t u = 0; u < LB_N_OF(units) && !unit; u++) {
		size_t n = strlen(units[u]);

		if (len - e >= n && memcmp(s + e, units[u], n) == 0) {
			e += n;
			unit = true;
		}
	}
	if (!unit)
		return 0;
	for (size_t p = 0; p < LB_N_OF(per); p++) {
		size_t n = strlen(per[p]);

		if (len - e >= n && memcmp(s + e, per[p], n) == 0) {
			e += n;
			break;
		}
	}
	return blank_or_end(s, len, e) ? e : 0;
}

/* A piece that says how long a step took: timing tokens separated by single blanks
 * ("1s 20ms/step"). Returns the index after it, 0 when it is not one. */
static size_t scan_timing(const char *s, size_t len, size_t i, bool holes)
{
	size_t e = scan_timing_token(s, len, i, holes), k;

	if (e == 0)
		return 0;
	while (e + 1 < len && s[e] == ' ' && (k = scan_timing_token(s, len, e + 1, holes)) > 0)
		e = k;
	return e;
}

/* "ETA: 3s", "ETA: 1:02", "ETA: 1:02:03": returns the index after it, 0 when it is not one. */
static size_t scan_eta(const char *s, size_t len, size_t i, bool holes)
{
	size_t e, k;
	unsigned long v;
	bool hole;

	if (len - i < 5 || memcmp(s + i, "ETA:", 4) != 0 || !lb_text_blank(s[i + 4]))
		return 0;
	i += 5;
	while (i < len && lb_text_blank(s[i]))
		i++;
	if ((e = scan_timing_token(s, len, i, holes)) > 0)
		return e;
	e = scan_count(s, len, i, holes, &v, &hole);
	if (e == i)
		return 0;
	for (int part = 0; part < 2 && e < len && s[e] == ':'; part++) {
		k = scan_count(s, len, e + 1, holes, &v, &hole);
		if (k == e + 1)
			return 0;
		e = k;
	}
	return blank_or_end(s, len, e) ? e : 0;
}

/* A bar after "N/M ": "[=====>....]" (Keras 2) or a run of box-drawing lines (Keras 3:
 * U+2501 and U+2500). Returns the index after it, i when there is none. */
static size_t scan_bar(const char *s, size_t len, size_t i)
{
	size_t e = i;

	if (i < len && s[i] == '[') {
		for (e = i + 1; e < len && (s[e] == '=' || s[e] == '>' || s[e] == '.'); e++)
			;
		return e < len && s[e] == ']' && e > i + 1 ? e + 1 : i;
	}
	while (e + 2 < len && (unsigned char)s[e] == 0xe2 && (unsigned char)s[e + 1] == 0x94 &&
	       ((unsigned char)s[e + 2] == 0x81 || (unsigned char)s[e + 2] == 0x80))
		e += 3;
	return e;
}

/* Keras's line at line[i..len), when it has Keras's head: "Epoch K/M - pieces" or
 * "N/M [bar] [timing] - pieces". *is_keras says whether the head was there (then the line is
 * Keras's or nothing). A bar before its end (N < M) is the running average of an epoch not
 * yet over, and not a metric line: the last line of each epoch is. */
bool lb_metric_parse_keras(const char *line, size_t len, size_t i, bool holes,
			   lb_metric_line *out, bool *is_keras)
{
	unsigned long n, total;
	bool hole_n, hole_total, epoch = false;
	size_t e, k;

	*is_keras = false;
	if (len - i > 6 && memcmp(line + i, "Epoch", 5) == 0 && lb_text_blank(line[i + 5])) {
		epoch = true;
		i += 6;
		while (i < len && lb_text_blank(line[i]))
			i++;
	}
	e = scan_count(line, len, i, holes, &n, &hole_n);
	if (e == i || e >= len || line[e] != '/')
		return false;
	k = scan_count(line, len, e + 1, holes, &total, &hole_total);
	if (k == e + 1 || !blank_or_end(line, len, k))
		return false;
	i = k;
	if (!epoch) {
		/* "N/M" alone starts many lines ("3/4 done"): only a bar or " - " makes it Keras's. */
		size_t b;

		while (i < len && lb_text_blank(line[i]))
			i++;
		b = scan_bar(line, len, i);
		if (b > i) {
			if (!blank_or_end(line, len, b))
				return false;
			i = b;
			while (i < len && lb_text_blank(line[i]))
				i++;
			if ((b = scan_timing(line, len, i, holes)) > 0)
				i = b;
		} else if (i + 1 < len && line[i] == '-' && lb_text_blank(line[i + 1])) {
			/* Keras's verbose=2 line, "32/32 - 0s - loss: ..." starts with a timing;
			 * without it "10/10 - accuracy: 0.9" is one fold of ten, whose number is
			 * not the experiment's result. */
			for (b = i + 1; b < len && lb_text_blank(line[b]); b++)
				;
			if (scan_timing(line, len, b, holes) == 0)
				return false;
		} else {
			return false;
		}
	}
	*is_keras = true;
	if (!hole_n && !hole_total && (n == 0 || n > total || (!epoch && n != total)))
		return false;
	out->n_values = 0;
	while (i < len) {
		while (i < len && lb_text_blank(line[i]))
			i++;
		if (i >= len)
			break;
		if (line[i] != '-' || !blank_or_end(line, len, i + 1))
			return false;
		i++;
		while (i < len && lb_text_blank(line[i]))
			i++;
		if ((e = scan_eta(line, len, i, holes)) > 0 || (e = scan_timing(line, len, i, holes)) > 0) {
			i = e;
			continue;
		}
		{
			lb_metric_value *v;

			e = lb_metric_next_name(line, len, i, holes, false, out, &v);
			if (e == 0)
				return false;
			e = lb_metric_scan_value(line, len, e, holes, v);
			if (e == 0 || v->kind != LB_METRIC_NUMBER || !blank_or_end(line, len, e) ||
			    lb_metric_special_name(v->name) ||
			    lb_metric_name_is_one_of(v->name, lb_metric_counter_words,
						     LB_N_OF(lb_metric_counter_words), true))
				return false;
			out->n_values++;
			i = e;
		}
	}
	if (out->n_values == 0 || lb_metric_log_line(&out->values[0]))
		return false;
	lb_metric_set_first(out);
	return true;
}


/* Markdown tables -------------------------------------------------------------------------- */

/* "| bleu | 27.3 |" at line[i..len) (line[i] is '|'): two cells, a name and a number, read as
 * "bleu: 27.3" would be. The line is rebuilt so in out->plain. */
bool lb_metric_parse_table_row(const char *line, size_t len, size_t i, bool holes,
			       lb_metric_line *out)
{
	char tmp[LB_METRIC_LINE_MAX];
	const char *c1, *c2, *bar2, *bar3;
	size_t n1, n2, n;

	if (len - i < 5 || line[len - 1] != '|')
		return false;
	bar2 = memchr(line + i + 1, '|', len - i - 1);
	if (!bar2 || bar2 == line + len - 1)
		return false;
	bar3 = memchr(bar2 + 1, '|', (size_t)(line + len - bar2 - 1));
	if (bar3 != line + len - 1)
		return false; /* more than two cells: see docs/decisions.md (tenth session) */
	c1 = line + i + 1;
	n1 = (size_t)(bar2 - c1);
	c2 = bar2 + 1;
	n2 = (size_t)(bar3 - c2);
	lb_metric_trim(&c1, &n1);
	lb_metric_trim(&c2, &n2);
	if (n1 == 0 || n2 == 0 || memchr(c1, ':', n1) || memchr(c2, ':', n2))
		return false;
	n = n1 + 2 + n2;
	if (n > sizeof(tmp))
		return false;
	memcpy(tmp, c1, n1);
	memcpy(tmp + n1, ": ", 2);
	memcpy(tmp + n1 + 2, c2, n2);
	memcpy(out->plain, tmp, n);
	if (!lb_metric_parse_pairs(out->plain, n, 0, holes, out) || out->n_values != 1 ||
	    out->values[0].kind != LB_METRIC_NUMBER || lb_metric_special_name(out->values[0].name))
		return false;
	out->table_row = true;
	return true;
}

/* Python logging ----------------------------------------------------------------------------- */

/* A log line's prefix is read as a small grammar, not format by format: a few fields (a
 * timestamp, a bracketed word, a logger's name) joined by separators, the level among them,
 * then the message. Only INFO: a result is logged so, and a warning's or an error's text is
 * not the experiment's answer. The formats research code uses all fit: logging's default
 * "INFO:root:msg", "ASCTIME - [name - ]INFO - msg", "ASCTIME [INFO] msg", "[INFO] msg",
 * "ASCTIME INFO name: msg", loguru's "ASCTIME | INFO     | module:func:12 - msg", and
 * Hydra's job logging "[ASCTIME][name][INFO] - msg" (bracketed fields need no separator
 * between them: a ']' ends one where it says). */
#define LOG_FIELDS_BEFORE 4 /* fields before the level: time, process, thread, logger */
#define LOG_PREFIX_MAX 160  /* where the level word must have started */

static bool logger_char(char c, bool first)
{
	return c == '_' || c == '<' || lb_metric_is_alpha(c) ||
	       (!first && (lb_metric_is_digit(c) || c == '.' || c == '>'));
}

/* A separator between two fields at s[i..): blanks, at most one of - | : and blanks again.
 * The offset after it; i when there is none. */
static size_t log_sep(const char *s, size_t len, size_t i, bool *blank_only)
{
	size_t k = i;

	while (k < len && lb_text_blank(s[k]))
		k++;
	*blank_only = true;
	if (k < len && (s[k] == '-' || s[k] == '|' || s[k] == ':')) {
		*blank_only = false;
		k++;
		while (k < len && lb_text_blank(s[k]))
			k++;
	}
	return k;
}

/* "dddd-dd-dd" or "dddd/dd/dd" at s[i..): the offset after it, i when none. */
static size_t log_date(const char *s, size_t len, size_t i)
{
	if (len - i < 10 || lb_metric_skip_digits(s, len, i) != i + 4 ||
	    (s[i + 4] != '-' && s[i + 4] != '/') ||
	    lb_metric_skip_digits(s, len, i + 5) != i + 7 || s[i + 7] != s[i + 4] ||
	    lb_metric_skip_digits(s, len, i + 8) != i + 10)
		return i;
	return i + 10;
}

/* "dd:dd:dd" with a fraction (",123", ".123456") and a zone ("Z", "+01:00") at s[i..). */
static size_t log_clock(const char *s, size_t len, size_t i)
{
	size_t k;

	if (len - i < 8 || lb_metric_skip_digits(s, len, i) != i + 2 || s[i + 2] != ':' ||
	    lb_metric_skip_digits(s, len, i + 3) != i + 5 || s[i + 5] != ':' ||
	    lb_metric_skip_digits(s, len, i + 6) != i + 8)
		return i;
	k = i + 8;
	if (k + 1 < len && (s[k] == ',' || s[k] == '.') && lb_metric_is_digit(s[k + 1]))
		k = lb_metric_skip_digits(s, len, k + 1);
	if (k < len && s[k] == 'Z')
		k++;
	else if (k + 3 < len && (s[k] == '+' || s[k] == '-') &&
		 lb_metric_skip_digits(s, len, k + 1) == k + 3)
		k = s[k + 3] == ':' && lb_metric_skip_digits(s, len, k + 4) == k + 6 ? k + 6
		    : lb_metric_skip_digits(s, len, k + 3) == k + 5			    ? k + 5
										    : k + 3;
	return k;
}

/* A timestamp: a date, a clock, or both joined by 'T' or one blank. */
static size_t log_time(const char *s, size_t len, size_t i)
{
	size_t k = log_date(s, len, i);

	if (k == i)
		return log_clock(s, len, i);
	if (k + 1 < len && (s[k] == 'T' || s[k] == ' ') && log_clock(s, len, k + 1) != k + 1)
		return log_clock(s, len, k + 1);
	return k;
}

/* A logger's name ("exp", "__main__", "lightning.pytorch", "<module>") or a line number. */
static size_t log_name(const char *s, size_t len, size_t i)
{
	size_t k = i;

	if (i < len && lb_metric_is_digit(s[i]))
		return lb_metric_skip_digits(s, len, i);
	while (k < len && k - i < LB_METRIC_NAME_MAX && logger_char(s[k], k == i))
		k++;
	return k;
}

/* The kinds of field before the level. */
enum { LOG_NONE, LOG_LEVEL, LOG_BRACKET_LEVEL, LOG_BRACKET, LOG_TIME, LOG_NAME };

/* Whether a field of this kind, ending at s[e], is followed by a field with nothing between
 * them: only a bracketed field and another ("[ts][__main__][INFO]"), since the ']' says
 * where the first ended; any other field runs into what follows ("INFOrmation",
 * "12:00:00x", "[INFO]acc"). */
static bool log_brackets_touch(int kind, const char *s, size_t len, size_t e)
{
	return (kind == LOG_BRACKET || kind == LOG_BRACKET_LEVEL) && e < len && s[e] == '[';
}

/* One field before the level at s[i..): its kind (LOG_NONE when none), *end after it. */
static int log_field(const char *s, size_t len, size_t i, size_t *end)
{
	if (i < len && s[i] == '[') {
		size_t n = len - i - 1 < 64 ? len - i - 1 : 64;
		const char *close = n ? memchr(s + i + 1, ']', n) : NULL;

		if (!close || close == s + i + 1)
			return LOG_NONE;
		*end = (size_t)(close - s) + 1;
		return *end - i == 6 && memcmp(s + i + 1, "INFO", 4) == 0 ? LOG_BRACKET_LEVEL
									   : LOG_BRACKET;
	}
	if (len - i >= 4 && memcmp(s + i, "INFO", 4) == 0 &&
	    (len - i == 4 || !logger_char(s[i + 4], false))) {
		*end = i + 4;
		return LOG_LEVEL;
	}
	*end = log_time(s, len, i);
	if (*end != i)
		return LOG_TIME;
	*end = log_name(s, len, i);
	return *end != i ? LOG_NAME : LOG_NONE;
}

/* Where the message of a Python logging INFO line may start, first choice first, into
 * starts[]; 0 when line[i..] has no such prefix. The message can start right after the
 * level, or after one of the fields that follow it (a logger's name, a location) when those
 * end with ':' or '-' or '|': "INFO exp: acc: 0.9" is exp's message "acc: 0.9", but
 * "[INFO] Epoch 3: loss: 0.5" is not "loss: 0.5" (the caller tries them in order, and a
 * field followed by a blank alone ends the choices). The level alone ("INFO: acc: 0.9") is no
 * prefix: libraries print that as their own text. */
/* absl's (glog's) prefix of an INFO line, as JAX, TensorFlow and flax code logs through
 * absl.logging: "I1207 17:42:25.123456 4242 main.py:12] msg" (the level's letter, month and
 * day, the clock, a thread id, blanks before it allowed, the file and line, "] "). The
 * offset of the message; 0 when s[i..) does not start so. */
static size_t absl_prefix(const char *s, size_t len, size_t i)
{
	size_t k, e;

	if (len - i < 20 || s[i] != 'I' || lb_metric_skip_digits(s, len, i + 1) != i + 5 ||
	    s[i + 5] != ' ')
		return 0;
	k = log_clock(s, len, i + 6);
	if (k == i + 6 || k >= len || s[k] != ' ')
		return 0;
	while (k < len && s[k] == ' ')
		k++;
	e = lb_metric_skip_digits(s, len, k);
	if (e == k || e >= len || s[e] != ' ')
		return 0;
	for (k = e + 1; k < len && s[k] != ':' && s[k] != ']' && !lb_text_blank(s[k]); k++)
		;
	if (k == e + 1 || k >= len || s[k] != ':')
		return 0;
	e = lb_metric_skip_digits(s, len, k + 1);
	if (e == k + 1 || e + 1 >= len || s[e] != ']' || s[e + 1] != ' ')
		return 0;
	return e + 2;
}

size_t lb_metric_log_message_starts(const char *s, size_t len, size_t i, size_t *starts,
				    bool *alone)
{
	size_t k = i, n = 0, end = len - i > LOG_PREFIX_MAX ? i + LOG_PREFIX_MAX : len;
	bool level = false, other = false, blank, touch = false;

	if (i < len && s[i] == 'I' && (k = absl_prefix(s, len, i)) != 0) {
		starts[0] = k;
		*alone = false;
		return 1;
	}
	k = i;
	if (!memmem(s + i, end - i, "INFO", 4))
		return 0; /* nearly every line: no level word, nothing to scan */
	for (size_t f = 0; f <= LOG_FIELDS_BEFORE && !level; f++) {
		size_t e = k;
		int kind = log_field(s, len, k, &e);

		if (kind == LOG_NONE || e >= len)
			return 0;
		level = kind == LOG_LEVEL || kind == LOG_BRACKET_LEVEL;
		other |= kind != LOG_LEVEL;
		k = log_sep(s, len, e, &blank);
		/* A field runs into the next ("INFOrmation", "12:00:00x"), unless both are
		 * bracketed; a word and a blank are only prose ("Loaded INFO file: 3"): a
		 * logger's name ends with - | or :. */
		touch = k == e && log_brackets_touch(kind, s, len, e);
		if ((k == e && !touch) || (kind == LOG_NAME && blank))
			return 0;
	}
	if (!level)
		return 0;
	*alone = !other;
	/* No message starts at a '[' the level's ']' touches: that is the next field. */
	if (other && !touch)
		starts[n++] = k;
	for (size_t f = 0; f < LB_LOG_FIELDS_AFTER; f++) {
		size_t e = k;
		int kind = s[k] == '[' ? log_field(s, len, k, &e) : LOG_NAME;

		if (kind == LOG_NAME)
			e = log_name(s, len, k);
		if (e == k || e >= len || kind != (s[k] == '[' ? LOG_BRACKET : LOG_NAME))
			break;
		k = log_sep(s, len, e, &blank);
		/* A bracketed name ends where it says; a bare word and a blank are the message's. */
		touch = k == e && log_brackets_touch(kind, s, len, e);
		if ((k == e && !touch) || (blank && kind == LOG_NAME))
			break;
		if (!touch)
			starts[n++] = k;
	}
	return n;
}

/* R's print() of one string, print(paste("accuracy:", acc)), shows it as a vector:
 * [1] "accuracy: 0.93". The text between the quotes is the line; a string holding a quote or
 * an escape, or a vector of several, stays what it is. */
void lb_metric_r_string(const char **line, size_t *len, size_t *i)
{
	const char *s = *line + *i;
	size_t n = *len - *i;

	if (n < 7 || memcmp(s, "[1] \"", 5) != 0 || s[n - 1] != '"' ||
	    memchr(s + 5, '"', n - 6) || memchr(s + 5, '\\', n - 6))
		return;
	*line = s + 5;
	*len = n - 6;
	*i = 0;
}

/* Where an object member's value ends: the next ',' or the closing '}' outside quotes and
 * parentheses (`tensor(0.5, device='cuda:0')`); len when the object is malformed. */
static size_t member_end(const char *s, size_t len, size_t i)
{
	int depth = 0;
	char quote = 0;

	for (; i < len; i++) {
		if (quote) {
			quote = s[i] == quote ? 0 : quote;
		} else if (s[i] == '\'' || s[i] == '"') {
			quote = s[i];
		} else if (s[i] == '(') {
			depth++;
		} else if (s[i] == ')') {
			depth--;
		} else if (depth == 0 && (s[i] == ',' || s[i] == '}')) {
			return i;
		} else if (s[i] == '{' || s[i] == '[' || s[i] == ']') {
			return len; /* nested: no flat record of results */
		}
	}
	return len;
}

/* One member `'name': value` or `"name": value` of an object line at s[i..): the offset
 * after its value (at ',' or '}'), 0 when it is no scalar member. *skip says a member that
 * is read but not kept (null, None). */
static size_t object_member(const char *s, size_t len, size_t i, bool holes, lb_metric_value *v,
			    bool *skip)
{
	char q = s[i];
	size_t k = i + 1, end, vs, ve;

	*skip = false;
	if (q != '\'' && q != '"')
		return 0;
	while (k < len && s[k] != q && s[k] != '\\')
		k++;
	if (k >= len || s[k] != q || !lb_metric_valid_name(s + i + 1, k - i - 1, holes) ||
	    k - i - 1 > LB_METRIC_NAME_MAX)
		return 0;
	memcpy(v->name, s + i + 1, k - i - 1);
	v->name[k - i - 1] = '\0';
	for (k++; k < len && lb_text_blank(s[k]); k++)
		;
	if (k >= len || s[k] != ':')
		return 0;
	for (k++; k < len && lb_text_blank(s[k]); k++)
		;
	end = member_end(s, len, k);
	if (end >= len)
		return 0;
	vs = k;
	ve = end;
	while (ve > vs && lb_text_blank(s[ve - 1]))
		ve--;
	if ((ve - vs == 4 && (memcmp(s + vs, "null", 4) == 0 || memcmp(s + vs, "None", 4) == 0))) {
		*skip = true;
		return end;
	}
	/* A quoted label ("model": "resnet") is the label; a sentence stays no value. */
	if (ve - vs >= 2 && (s[vs] == '"' || s[vs] == '\'') && s[ve - 1] == s[vs]) {
		vs++;
		ve--;
	}
	if (ve == vs || lb_metric_scan_value(s, ve, vs, holes, v) != ve)
		return 0;
	return end;
}

/* A line that is one object of scalars, as JSON (`{"loss": 0.3}`) or as Python's repr of a
 * dict (Hugging Face's `{'eval_loss': 0.35, 'epoch': 3.0}`): each member a metric, the last
 * value of a name winning as for other lines. An epoch member is its counter, left out; a
 * step's, batch's or iteration's counter makes the line a per-step report, not read (as
 * progress lines are not), and so does any nesting or more members than a line holds. */
bool lb_metric_parse_object(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out)
{
	if (len - i < 2 || line[i] != '{' || line[len - 1] != '}')
		return false;
	bool repr = true, epoch = false;

	out->n_values = 0;
	for (i++; i < len;) {
		lb_metric_value *v;
		bool skip;

		while (i < len && lb_text_blank(line[i]))
			i++;
		if (line[i] == '}' && i + 1 == len)
			break;
		if (line[i] != '\'')
			repr = false;
		if (out->n_values >= LB_METRIC_VALUES_MAX)
			return false;
		v = &out->values[out->n_values];
		i = object_member(line, len, i, holes, v, &skip);
		if (i == 0 || lb_text_is_exception_name(v->name, strlen(v->name)))
			return false;
		if (lb_metric_name_is_one_of(v->name, lb_metric_counter_words,
					     LB_N_OF(lb_metric_counter_words), true)) {
			if (strcasecmp(v->name, "epoch") != 0)
				return false;
			epoch = true;
		} else if (!skip && !lb_metric_special_name(v->name)) {
			out->n_values++;
		}
		if (line[i] == ',')
			i++;
	}
	if (out->n_values == 0)
		return false;
	out->object = repr && epoch;
	lb_metric_set_first(out);
	return true;
}

/* Octave shows a variable assigned without a semicolon as "acc = 0.9300" (and NaN, Inf,
 * -Inf so): the metric acc. Only a number alone after "name = ", the name an identifier;
 * not `ans` (an unnamed expression's value, which names no metric) nor a progress counter.
 * A matrix ("x =" then rows) or a string ("s = text") is not read. */
bool lb_metric_octave_display(const char *line, size_t len, lb_metric_line *out)
{
	const char *s = line;
	size_t n = len, k = 0, e;
	lb_metric_value *v = &out->values[0];

	lb_metric_trim(&s, &n);
	if (n == 0 || !(lb_metric_is_alpha(s[0]) || s[0] == '_'))
		return false;
	while (k < n && (lb_metric_is_alpha(s[k]) || lb_metric_is_digit(s[k]) || s[k] == '_'))
		k++;
	if (k > LB_METRIC_NAME_MAX || n - k < 4 || memcmp(s + k, " = ", 3) != 0)
		return false;
	memset(v, 0, sizeof(*v));
	memcpy(v->name, s, k);
	v->name[k] = '\0';
	if (strcmp(v->name, "ans") == 0 || lb_metric_special_name(v->name) ||
	    lb_metric_name_is_one_of(v->name, lb_metric_counter_words,
				     LB_N_OF(lb_metric_counter_words), true))
		return false;
	e = lb_metric_scan_number(s, n, k + 3, false, &v->number);
	if (e != n || e == k + 3)
		return false;
	v->kind = LB_METRIC_NUMBER;
	v->str = s + k + 3;
	v->str_len = n - k - 3;
	out->form = LB_METRIC_FORM_PLAIN;
	out->condition = NULL;
	out->condition_len = 0;
	out->n_tags = 0;
	out->table_row = false;
	out->object = false;
	out->n_values = 1;
	lb_metric_set_first(out);
	return true;
}

/* R's NA is a value that is missing: a NaN (R's NA_real_ is one), flagged as NaN is, never
 * the label "NA". */
void lb_metric_r_missing(lb_metric_line *ml)
{
	for (size_t i = 0; i < ml->n_values; i++) {
		lb_metric_value *v = &ml->values[i];

		if (v->kind == LB_METRIC_STRING && v->str_len == 2 && memcmp(v->str, "NA", 2) == 0 &&
		    !lb_metric_special_name(v->name)) {
			v->kind = LB_METRIC_NUMBER;
			v->number = NAN;
		}
	}
	lb_metric_set_first(ml);
}
