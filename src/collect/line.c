/* One line read into values (lb_metric_line_parse, lb_metric_template_parse,
 * lb_metric_progress_parse): key=value tags, names, pairs, SUMMARY, PAIRED and tagged lines,
 * escapes, decorations, and the dispatch to the formats of other tools (formats.c). Pure: no
 * collector state. */
#include "labbox/collect.h"
#include "metrics_internal.h"
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A name's byte: a letter or '_' anywhere, and after the first also digits and . - / and the
 * @ and ^ of ranking and fit metrics (`Hits@10`, `NDCG@10`, `mAP@0.5`, `R^2`). */
static bool name_char(char c, bool first, bool holes)
{
	if (c == '_' || lb_metric_is_alpha(c) || (holes && c == LB_METRIC_HOLE))
		return true;
	return !first && (lb_metric_is_digit(c) || c == '.' || c == '-' || c == '/' || c == '@' ||
			  c == '^');
}

bool lb_metric_key_char(char c, bool first)
{
	if (c == '_' || lb_metric_is_alpha(c))
		return true;
	return !first && (lb_metric_is_digit(c) || c == '.' || c == '-');
}

/* One key=value token at s[i..len): returns the index after it, or 0 when there is none. The
 * token must end at a blank or the end of the text, so `a="x"y` is not one. */
static size_t scan_tag(const char *s, size_t len, size_t i, lb_metric_tag *t)
{
	size_t k = i, v;

	if (k >= len || !lb_metric_key_char(s[k], true))
		return 0;
	while (k < len && lb_metric_key_char(s[k], false))
		k++;
	if (k - i > LB_METRIC_TAG_KEY_MAX || k >= len || s[k] != '=')
		return 0;
	t->key = s + i;
	t->key_len = k - i;
	k++;
	if (k < len && s[k] == '"') {
		const char *q = memchr(s + k + 1, '"', len - k - 1);

		if (!q)
			return 0;
		t->value = s + k + 1;
		t->value_len = (size_t)(q - t->value);
		k = (size_t)(q - s) + 1;
	} else {
		v = k;
		while (k < len && !lb_text_blank(s[k]))
			k++;
		t->value = s + v;
		t->value_len = k - v;
	}
	if (t->value_len == 0 || (k < len && !lb_text_blank(s[k])))
		return 0;
	return k;
}

static int tag_cmp(const lb_metric_tag *a, const lb_metric_tag *b)
{
	size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
	int c = memcmp(a->key, b->key, n);

	if (c)
		return c;
	return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

static bool tag_is(const lb_metric_tag *t, const char *key)
{
	return t->key_len == strlen(key) && memcmp(t->key, key, t->key_len) == 0;
}

static bool has_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (lb_text_blank(s[i]))
			return true;
	return false;
}

size_t lb_metric_tags_text(const lb_metric_tag *tags, size_t n, char *buf, size_t cap)
{
	size_t o = 0;

	if (cap == 0)
		return (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		bool quote = has_blank(tags[i].value, tags[i].value_len);
		size_t need = (i ? 1 : 0) + tags[i].key_len + 1 + tags[i].value_len + (quote ? 2 : 0);

		if (o + need >= cap)
			return (size_t)-1;
		if (i)
			buf[o++] = ' ';
		memcpy(buf + o, tags[i].key, tags[i].key_len);
		o += tags[i].key_len;
		buf[o++] = '=';
		if (quote)
			buf[o++] = '"';
		memcpy(buf + o, tags[i].value, tags[i].value_len);
		o += tags[i].value_len;
		if (quote)
			buf[o++] = '"';
	}
	buf[o] = '\0';
	return o;
}

bool lb_tags_next(const char **cursor, lb_metric_tag *tag)
{
	const char *s = *cursor;
	size_t len, end;

	if (!s)
		return false;
	while (lb_text_blank(*s))
		s++;
	len = strlen(s);
	if (len == 0)
		return false;
	end = scan_tag(s, len, 0, tag);
	if (end == 0) {
		/* Stored text was built by lb_metric_tags_text, so this only happens to a value
		 * whose UTF-8 repair made it unlike what was parsed: the rest is one value. */
		const char *eq = memchr(s, '=', len);

		tag->key = s;
		tag->key_len = eq ? (size_t)(eq - s) : len;
		tag->value = eq ? eq + 1 : s + len;
		tag->value_len = eq ? len - tag->key_len - 1 : 0;
		end = len;
	}
	*cursor = s + end;
	return true;
}

/* Reads key=value tokens from s[*i..len) into tags; stops before the first token that is not
 * one (or at the end). false when there are too many, or a key repeats. Sorted by key. */
static bool scan_tags(const char *s, size_t len, size_t *i, lb_metric_tag *tags, size_t *n)
{
	*n = 0;
	for (;;) {
		size_t k = *i, end;
		lb_metric_tag t;

		while (k < len && lb_text_blank(s[k]))
			k++;
		end = scan_tag(s, len, k, &t);
		if (end == 0)
			break;
		if (*n >= LB_METRIC_TAGS_MAX + 2)
			return false;
		tags[(*n)++] = t;
		*i = end;
	}
	/* Insertion sort: at most 18 tokens. */
	for (size_t a = 1; a < *n; a++) {
		lb_metric_tag t = tags[a];
		size_t b = a;

		for (; b > 0 && tag_cmp(&tags[b - 1], &t) > 0; b--)
			tags[b] = tags[b - 1];
		tags[b] = t;
	}
	/* A repeated key would leave it to guessing which one was meant. */
	for (size_t a = 1; a < *n; a++)
		if (tag_cmp(&tags[a - 1], &tags[a]) == 0)
			return false;
	return true;
}

/* Moves the token with this key out of tags into *val; false when absent. */
static bool take_tag(lb_metric_tag *tags, size_t *n, const char *key, lb_metric_tag *val)
{
	for (size_t a = 0; a < *n; a++) {
		if (!tag_is(&tags[a], key))
			continue;
		*val = tags[a];
		memmove(tags + a, tags + a + 1, (*n - a - 1) * sizeof(*tags));
		(*n)--;
		return true;
	}
	return false;
}

static bool tags_fit(const lb_metric_tag *tags, size_t n)
{
	char buf[LB_METRIC_TAGS_TEXT_MAX + 1];

	return n <= LB_METRIC_TAGS_MAX &&
	       lb_metric_tags_text(tags, n, buf, sizeof(buf)) != (size_t)-1;
}

static void set_kind(lb_metric_line *out, const char *value, size_t value_len)
{
	out->str = value;
	out->str_len = value_len;
	if (lb_parse_number(value, value_len, &out->number)) {
		out->kind = LB_METRIC_NUMBER;
	} else {
		out->kind = LB_METRIC_STRING;
		out->number = 0;
	}
}

/* A name word's first byte: the first word starts with a letter or '_' (so `12:00:01`, `1abc`
 * and a path start no name), a later one also with '(' or a digit (`Top 5 accuracy`). */
static bool name_start_char(char c, bool first, bool holes)
{
	return c == '_' || lb_metric_is_alpha(c) ||
	       (!first && (c == '(' || lb_metric_is_digit(c))) || (holes && c == LB_METRIC_HOLE);
}

/* A ':' inside a name word: only between digits or dots after an '@' (`mAP@0.5:0.95`, COCO's
 * IoU range), where it cannot end the name, since a name's ':' has a blank after it. */
static bool name_colon(const char *s, size_t len, size_t start, size_t i)
{
	return i > start && i + 1 < len && (lb_metric_is_digit(s[i + 1]) || s[i + 1] == '.') &&
	       (lb_metric_is_digit(s[i - 1]) || s[i - 1] == '.') &&
	       memchr(s + start, '@', i - start);
}

/* A name at s[i..len) and its ':' (see lb_metric_line_parse): copies it, blanks inside made
 * one space each, into out and returns the index after the ':' and the blank after it; 0 when
 * there is none. A later word may start with a digit (`Accuracy after 10 epochs`), but a name
 * is no count: its last word does not (`Sample 3: 0.5`, `Fold 2:` and `Epoch 5:` enumerate
 * what a loop prints, a name per line), and a counter word followed by a number (`Loss at
 * step 100`, `Epoch 3 loss`) makes it a progress line's. With comma, the line's first name
 * may hold ", " (`Predicted price of a 1650 sq-ft, 3 br house`): nothing before it on the
 * line is a pair, so the comma cannot separate two; a part that is a counter word alone
 * (`Saving model, epoch: 3`) is a progress line's. */
static size_t scan_name(const char *s, size_t len, size_t i, bool holes, bool comma, char *out)
{
	size_t o = 0, part = 0;
	size_t prev = 0, prev_len = 0; /* the word before, in out; none after a comma */
	bool first = true, digit_word = false, hole_word = false;

	for (;;) {
		size_t start, w;

		if (i >= len || !name_start_char(s[i], first, holes))
			return 0;
		if (!first) {
			if (o >= LB_METRIC_NAME_MAX)
				return 0;
			out[o++] = ' ';
		}
		start = i;
		w = o;
		while (i < len && (name_char(s[i], false, holes) || s[i] == '(' || s[i] == ')' ||
				   (s[i] == ':' && name_colon(s, len, start, i)))) {
			if (o >= LB_METRIC_NAME_MAX)
				return 0;
			out[o++] = s[i++];
		}
		digit_word = lb_metric_is_digit(s[start]);
		hole_word = holes && i == start + 1 && s[start] == LB_METRIC_HOLE;
		/* In a template a hole alone may be a number: after a counter word it is its
		 * count, and before a comma it may end a part as a number does. */
		if ((digit_word || hole_word) && lb_metric_is_counter_word(out + prev, prev_len))
			return 0;
		prev = w;
		prev_len = o - w;
		first = false;
		{
			size_t gap = i;

			while (i < len && lb_text_blank(s[i]))
				i++;
			if (i < len && s[i] == ':')
				break;
			/* After a pair (comma is the first name's), a name's words are one
			 * blank apart: a wider gap is a column's edge (statsmodels' summary,
			 * `Method:  Least Squares   F-statistic:  500.1`), and a name across it
			 * would be one the program never printed. The first name's blanks are
			 * any (`Train   acc: 0.9`). */
			if (!comma && (i - gap > 1 || (i > gap && s[gap] == '\t')))
				return 0;
		}
		if (comma && i + 1 < len && s[i] == ',' && lb_text_blank(s[i + 1])) {
			if (digit_word || hole_word ||
			    lb_metric_is_counter_word(out + part, o - part) ||
			    o >= LB_METRIC_NAME_MAX)
				return 0;
			out[o++] = ',';
			part = o + 1;
			prev_len = 0;
			for (i++; i < len && lb_text_blank(s[i]); i++)
				;
		}
	}
	if (digit_word || (part && lb_metric_is_counter_word(out + part, o - part)))
		return 0;
	out[o] = '\0';
	i++;
	if (i >= len || !lb_text_blank(s[i]))
		return 0;
	return i + 1;
}

bool lb_metric_name_is_one_of(const char *name, const char *const *words, size_t n, bool any_case)
{
	for (size_t k = 0; k < n; k++)
		if (any_case ? strcasecmp(name, words[k]) == 0 : strcmp(name, words[k]) == 0)
			return true;
	return false;
}

const char *const lb_metric_level_words[] = { "DEBUG", "INFO",     "NOTICE", "WARNING", "WARN",
					      "ERROR", "CRITICAL", "FATAL",  "TRACE" };
const char *const lb_metric_counter_words[] = { "epoch",     "step",        "batch",  "iter",
						"iteration", "global_step", "episode" };
#define COUNTER_FIRSTS                                                                         \
	(LB_LETTER('e') | LB_LETTER('s') | LB_LETTER('b') | LB_LETTER('i') | LB_LETTER('g'))

/* Whether s[0..len) is one of the lower-case words, any case. Checked on every word of
 * names and unread lines: the first letter rejects nearly all before a comparison. */
/* firsts: the letters the words start with, as LB_LETTER bits (defined beside each list, kept in
 * step with it), so that most words are rejected before any comparison. */
bool lb_metric_word_in(const char *s, size_t len, const char *const *words, size_t n,
		       uint32_t firsts)
{
	char c;

	if (len == 0 || !lb_metric_is_alpha(s[0]))
		return false;
	c = s[0] >= 'A' && s[0] <= 'Z' ? (char)(s[0] + 32) : s[0];
	if (!(firsts & (1u << (c - 'a'))))
		return false;
	for (size_t k = 0; k < n; k++) {
		const char *w = words[k];
		size_t j = 0;

		while (j < len && w[j] && (s[j] >= 'A' && s[j] <= 'Z' ? s[j] + 32 : s[j]) == w[j])
			j++;
		if (j == len && !w[j])
			return true;
	}
	return false;
}

bool lb_metric_is_counter_word(const char *s, size_t len)
{
	return lb_metric_word_in(s, len, lb_metric_counter_words, LB_N_OF(lb_metric_counter_words),
				 COUNTER_FIRSTS);
}

/* Words that count positions as well as the progress counters: a `k/n` under a name ending
 * in one ("best_epoch: 7/10", "stopped_at_iter: 120/500", "best_layer: 9/12") is "the k-th of
 * n", not a fraction (docs/decisions.md, thirtieth session). */
static const char *const position_words[] = { "round", "fold",	"trial", "generation",
					      "layer", "stage", "run" };

/* Whether a metric's name is a position: its last word (after a blank, `_`, `-`, `.`, or
 * where a lower-case letter meets a capital: bestEpoch) is a counter or position word, and
 * the word before it is not "per" (`solved_per_round: 3/4` is a rate). */
bool lb_metric_position_name(const char *name)
{
	size_t len = strlen(name), w = len, p;

	while (w > 0 && lb_metric_is_alpha(name[w - 1]) &&
	       !(w < len && name[w] >= 'A' && name[w] <= 'Z' && name[w - 1] >= 'a' &&
		 name[w - 1] <= 'z'))
		w--;
	if (w == len)
		return false;
	if (!lb_metric_is_counter_word(name + w, len - w) &&
	    !lb_metric_word_in(name + w, len - w, position_words, LB_N_OF(position_words),
			       LB_LETTER('r') | LB_LETTER('f') | LB_LETTER('t') |
				       LB_LETTER('g') | LB_LETTER('l') | LB_LETTER('s')))
		return false;
	if (w > 0 && (name[w - 1] == '_' || name[w - 1] == ' ' || name[w - 1] == '-' ||
		      name[w - 1] == '.')) {
		p = w - 1;
		if (p >= 3 && strncasecmp(name + p - 3, "per", 3) == 0 &&
		    (p == 3 || !lb_metric_is_alpha(name[p - 4])))
			return false;
	} else if (w > 0 && lb_metric_is_alpha(name[w - 1])) {
		/* perEpoch */
		if (w >= 3 && strncasecmp(name + w - 3, "per", 3) == 0 &&
		    (w == 3 || !lb_metric_is_alpha(name[w - 4]) ||
		     (name[w - 4] >= 'a' && name[w - 4] <= 'z' && name[w - 3] == 'P')))
			return false;
	} else if (w > 0) {
		return false; /* "top5epoch", "x/epoch": not a word of its own */
	}
	return true;
}

/* A log line: its first name is, or starts with, a level word in capitals ("INFO: loaded",
 * "WARNING model: x"), or is a level word in any case with a value that is not a number
 * ("Warning: deprecated"); "error: 0.05" stays a metric. */
bool lb_metric_log_line(const lb_metric_value *first)
{
	char word[LB_METRIC_NAME_MAX + 1];
	size_t k = strcspn(first->name, " ,");

	memcpy(word, first->name, k);
	word[k] = '\0';
	if (lb_metric_name_is_one_of(word, lb_metric_level_words, LB_N_OF(lb_metric_level_words),
				     false))
		return true;
	return first->kind != LB_METRIC_NUMBER &&
	       lb_metric_name_is_one_of(first->name, lb_metric_level_words,
					LB_N_OF(lb_metric_level_words), true);
}

/* Names whose value says which data the lines after it are about (`dataset: svhn`,
 * `dataset=svhn top1: 0.95`), any case: a label of those lines' values. */
bool lb_metric_label_key(const char *s, size_t len)
{
	static const char *const keys[] = { "dataset", "data_set", "benchmark", "task" };

	for (size_t k = 0; k < LB_N_OF(keys); k++)
		if (strlen(keys[k]) == len && strncasecmp(s, keys[k], len) == 0)
			return true;
	return false;
}

bool lb_metric_special_name(const char *name)
{
	return strcmp(name, "condition") == 0 || strcmp(name, "TIME_ESTIMATE") == 0 ||
	       strcmp(name, "TIME_GUARD") == 0;
}

void lb_metric_set_first(lb_metric_line *out)
{
	const lb_metric_value *v = &out->values[0];

	memcpy(out->name, v->name, sizeof(out->name));
	out->kind = v->kind;
	out->number = v->number;
	out->str = v->str;
	out->str_len = v->str_len;
}

/* The next value slot of out and its name at line[i..): the offset after the name and the
 * blanks that follow it, 0 when out is full or no name starts there. */
size_t lb_metric_next_name(const char *line, size_t len, size_t i, bool holes, bool comma,
			   lb_metric_line *out, lb_metric_value **v)
{
	size_t e;

	if (out->n_values >= LB_METRIC_VALUES_MAX)
		return 0;
	*v = &out->values[out->n_values];
	e = scan_name(line, len, i, holes, comma, (*v)->name);
	if (e == 0)
		return 0;
	while (e < len && lb_text_blank(line[e]))
		e++;
	return e;
}

/* Whether a name is spelled as an exception class, the way a traceback's last line or
 * `print(f"{type(e).__name__}: {e}")` shows it: a CamelCase identifier, alone or ending a
 * dotted path (numpy.linalg.LinAlgError; socket.timeout too), with a stem before the suffix
 * (KeyError, UserWarning, SystemExit, KeyboardInterrupt, ExceptionGroup). "Error" and
 * "Warning" alone, "test_error" and "Error rate" are not: researchers name error rates so. */
static bool exception_class_name(const char *name)
{
	static const char *const suffixes[] = { "Error", "Exception", "Warning", "Exit",
						"Interrupt", "Iteration", "Group" };
	size_t len = strlen(name);
	const char *last = name;

	const char *dot = memrchr(name, '.', len);

	/* socket's classes are the lower-case exception to the convention; "val.error" is not. */
	if (dot && strncmp(name, "socket.", 7) == 0)
		return true;
	if (dot)
		last = dot + 1;
	while (*last == '_')
		last++;
	if (!(*last >= 'A' && *last <= 'Z'))
		return false;
	for (const char *c = last; *c; c++)
		if (*c == '_')
			return false; /* Train_Error is a name someone chose, not a class */
	len = strlen(last);
	for (size_t k = 0; k < LB_N_OF(suffixes); k++) {
		size_t n = strlen(suffixes[k]);

		if (len > n && strcmp(last + len - n, suffixes[k]) == 0)
			return true;
	}
	return false;
}

/* Whether a counter name is an epoch's: an epoch's line reports a finished pass over the data
 * (as Keras's does), a step's or a batch's a running value inside one. */
static int counter_level(const char *name, size_t len)
{
	return len == 5 && strncasecmp(name, "epoch", 5) == 0 ? LB_METRIC_PROGRESS_EPOCH
							     : LB_METRIC_PROGRESS_STEP;
}

/* "Test set: Average loss: 0.0341, Accuracy: 0.98" (PyTorch's MNIST example): the first pair's
 * one-word label, joined by blanks alone to more words and a ':', starts the next pair's name,
 * and the first name is a heading. Only where the line separates its pairs with , ; or |
 * elsewhere: with blanks alone ("model: resnet lr: 0.1") a blank is the separator, and the
 * label is the value (the several-pairs rule). And only where the first name is words of a
 * heading (more than one) and the label is capitalised as a name's first word: a setting
 * and its value ("optimizer: adam lr: 0.001, test_acc: 0.91") stay two pairs. v is the
 * label's pair, i the offset after it. */
static bool heading_label(const char *line, size_t len, size_t i, bool holes,
			  const lb_metric_value *v)
{
	char name[LB_METRIC_NAME_MAX + 1];
	size_t k = i;

	if (v->kind != LB_METRIC_STRING || v->wrapper || v->remark || i >= len ||
	    !lb_text_blank(line[i]) || !strchr(v->name, ' ') || !v->str ||
	    !(*v->str >= 'A' && *v->str <= 'Z'))
		return false;
	while (k < len && lb_text_blank(line[k]))
		k++;
	if (k >= len || strchr(",;|-", line[k]))
		return false;
	if (!memchr(line + k, ',', len - k) && !memchr(line + k, ';', len - k) &&
	    !memchr(line + k, '|', len - k))
		return false;
	return scan_name(line, len, (size_t)(v->str - line), holes, false, name) != 0;
}

/* Whether a heading names the test split: "Test set", "Test", "Testing set", "Test split",
 * "Test data", "Test dataset" (any case). Its pairs are the experiment's result, read under
 * their own names, as they always were; any other heading ("Train set", "Validation set",
 * "Model A") qualifies them (qualify_values). */
static bool test_heading(const char *name)
{
	static const char *const tests[] = { "test", "testing" };
	static const char *const sets[] = { "set", "split", "data", "dataset" };
	char word[LB_METRIC_NAME_MAX + 1];
	const char *sp = strchr(name, ' ');
	size_t k = sp ? (size_t)(sp - name) : strlen(name);

	memcpy(word, name, k);
	word[k] = '\0';
	if (!lb_metric_name_is_one_of(word, tests, LB_N_OF(tests), true))
		return false;
	return !sp || (!strchr(sp + 1, ' ') &&
		       lb_metric_name_is_one_of(sp + 1, sets, LB_N_OF(sets), true));
}

/* The names of out's values qualified by what the line says they are about: "QUAL name"
 * ("Train set Accuracy", "train loss"), as pytorch/examples prints "Test set loss". False
 * when a qualified name would pass LB_METRIC_NAME_MAX: the line is then not read, rather
 * than read under a name another split's line shares. */
static bool qualify_values(lb_metric_line *out, const char *qual, size_t qual_len)
{
	for (size_t k = 0; k < out->n_values; k++) {
		lb_metric_value *v = &out->values[k];
		size_t n = strlen(v->name);

		if (qual_len + 1 + n > LB_METRIC_NAME_MAX)
			return false;
		memmove(v->name + qual_len + 1, v->name, n + 1);
		memcpy(v->name, qual, qual_len);
		v->name[qual_len] = ' ';
	}
	lb_metric_set_first(out);
	return true;
}

/* A dtype as pandas prints it in a Series' footer: numpy's (float64, int8, uint32, complex128,
 * bool, object), pandas' nullable ones (Int64, Float32, UInt8, boolean, string) and category. */
static bool pandas_dtype(const char *s, size_t len)
{
	static const char *const words[] = { "object", "bool", "boolean", "category", "string" };
	static const char *const sized[] = { "float", "int", "uint", "complex", "Float", "Int",
					     "UInt" };
	size_t d = len;

	for (size_t k = 0; k < LB_N_OF(words); k++)
		if (strlen(words[k]) == len && memcmp(s, words[k], len) == 0)
			return true;
	while (d > 0 && lb_metric_is_digit(s[d - 1]))
		d--;
	if (d == len || d == 0 || len - d > 3)
		return false;
	for (size_t k = 0; k < LB_N_OF(sized); k++)
		if (strlen(sized[k]) == d && memcmp(s, sized[k], d) == 0)
			return true;
	return false;
}

/* The footer pandas prints under a Series (print(df.mean()), print(s.describe())):
 * `[Freq: F, ][Name: N, ][Length: L, ]dtype: T`, names as pandas spells them, T a dtype. It
 * describes the Series above it and is no result: `dtype: float64` is not the run's metric,
 * and `Name: accuracy` names the column whose rows labbox does not read. `Name: resnet` and
 * `dtype: bfloat16` alone, or `name: x, dtype: float64`, stay pairs. */
static bool pandas_footer(const lb_metric_line *out)
{
	const lb_metric_value *last = &out->values[out->n_values - 1];

	if (strcmp(last->name, "dtype") != 0 || last->kind != LB_METRIC_STRING ||
	    !pandas_dtype(last->str, last->str_len) || out->n_values > 4)
		return false;
	for (size_t k = 0; k + 1 < out->n_values; k++)
		if (strcmp(out->values[k].name, "Freq") != 0 &&
		    strcmp(out->values[k].name, "Name") != 0 &&
		    strcmp(out->values[k].name, "Length") != 0)
			return false;
	return true;
}

/* Pairs "name: value [sep] name: value ..." from line[i..len) into out->values. A pair named
 * as a progress counter (epoch, step...) refuses the line, unless counters is given: then
 * the counter is left out of the values and its level (LB_METRIC_PROGRESS_*) or'ed in. */
static bool pairs_of(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out,
		     int *counters)
{
	bool headed = false, first = true;
	char heading[LB_METRIC_NAME_MAX + 1] = "";

	out->n_values = 0;
	while (i < len && lb_text_blank(line[i]))
		i++;
	while (i < len) {
		lb_metric_value *v;
		/* Only the line's first name may hold a comma: before it there is no pair. */
		size_t e = lb_metric_next_name(line, len, i, holes, first, out, &v);

		first = false;

		if (e == 0)
			return false;
		if (out->n_values == 0 && lb_metric_special_name(v->name)) {
			/* condition, TIME_ESTIMATE and TIME_GUARD carry text ("240.1s - saving
			 * partial results"), read by the collector: the rest of the line. */
			const char *value = line + e;
			size_t value_len = len - e;

			lb_metric_trim(&value, &value_len);
			if (value_len == 0)
				return false;
			v->ratio = v->percent = v->has_uncertainty = false;
			v->uncertainty = 0;
			v->remark = NULL;
			v->remark_len = 0;
			v->wrapper = NULL;
			v->wrapper_len = 0;
			v->number = 0;
			v->kind = LB_METRIC_STRING;
			v->str = value;
			v->str_len = value_len;
			if (lb_parse_number(value, value_len, &v->number))
				v->kind = LB_METRIC_NUMBER;
			out->n_values = 1;
			lb_metric_set_first(out);
			return true;
		}
		i = lb_metric_scan_value(line, len, e, holes, v);
		if (i == 0)
			return false;
		/* "ValueError: bad input" is the end of a traceback, not a metric, and so is
		 * "KeyError: 0": a number there is the missing key, not a result. Only a name that
		 * is spelled as a class is refused whatever its value, so "Error: 0.05" and
		 * "test_error: 0.3" stay error rates. */
		if (lb_text_is_exception_name(v->name, strlen(v->name)) &&
		    (v->kind != LB_METRIC_NUMBER || exception_class_name(v->name)))
			return false;
		/* A per-step progress line: its numbers are not the experiment's results. */
		if (lb_metric_name_is_one_of(v->name, lb_metric_counter_words,
					     LB_N_OF(lb_metric_counter_words), true)) {
			if (!counters || v->kind != LB_METRIC_NUMBER)
				return false;
			*counters |= counter_level(v->name, strlen(v->name));
		} else if (out->n_values == 0 && !headed &&
			   heading_label(line, len, i, holes, v)) {
			/* The label is the first word of the next name: read on from it. The
			 * heading says what the pairs are about: another split's ("Train set")
			 * qualifies their names, so that its numbers never replace the test
			 * split's under the same name. */
			i = (size_t)(v->str - line);
			headed = true;
			if (!test_heading(v->name))
				memcpy(heading, v->name, sizeof(heading));
			continue;
		} else {
			out->n_values++;
		}
		{
			size_t after = i;

			while (i < len && lb_text_blank(line[i]))
				i++;
			/* "loss: 0.12 - acc: 0.9": a dash with blanks on both sides, as Keras
			 * joins its pairs; "-0.5" after a blank is a number, not this. */
			if (i > after && i + 1 < len && line[i] == '-' && lb_text_blank(line[i + 1])) {
				i += 2;
				while (i < len && lb_text_blank(line[i]))
					i++;
				continue;
			}
		}
		if (i < len && (line[i] == ',' || line[i] == ';' || line[i] == '|')) {
			i++;
			while (i < len && lb_text_blank(line[i]))
				i++;
		}
	}
	if (out->n_values == 0 || lb_metric_log_line(&out->values[0]) || pandas_footer(out))
		return false;
	lb_metric_set_first(out);
	return !heading[0] || qualify_values(out, heading, strlen(heading));
}

bool lb_metric_parse_pairs(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out)
{
	return pairs_of(line, len, i, holes, out, NULL);
}

bool lb_metric_valid_name(const char *s, size_t len, bool holes)
{
	if (len == 0 || len > LB_METRIC_NAME_MAX || !name_char(s[0], true, holes))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!name_char(s[i], false, holes))
			return false;
	return true;
}

static void one_value(lb_metric_line *out)
{
	lb_metric_value *v = &out->values[0];

	memset(v, 0, sizeof(*v));
	memcpy(v->name, out->name, sizeof(v->name));
	v->kind = out->kind;
	v->number = out->number;
	v->str = out->str;
	v->str_len = out->str_len;
	out->n_values = 1;
}

static bool parse_summary(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out)
{
	lb_metric_tag tags[LB_METRIC_TAGS_MAX + 2], cond, metric;
	const lb_metric_tag *shown;
	size_t n;

	if (!scan_tags(line, len, &i, tags, &n))
		return false;
	while (i < len && lb_text_blank(line[i]))
		i++;
	if (i < len)
		return false; /* only key=value tokens on a SUMMARY line */
	if (!take_tag(tags, &n, "metric", &metric) ||
	    !lb_metric_valid_name(metric.value, metric.value_len, holes))
		return false;
	if (take_tag(tags, &n, "condition", &cond)) {
		out->condition = cond.value;
		out->condition_len = cond.value_len;
	}
	if (n == 0 || !tags_fit(tags, n))
		return false;
	memcpy(out->name, metric.value, metric.value_len);
	out->name[metric.value_len] = '\0';
	shown = &tags[0];
	for (size_t a = 0; a < n; a++)
		if (tag_is(&tags[a], "mean"))
			shown = &tags[a];
	set_kind(out, shown->value, shown->value_len);
	memcpy(out->tags, tags, n * sizeof(*tags));
	out->n_tags = n;
	out->form = LB_METRIC_FORM_SUMMARY;
	one_value(out);
	return true;
}

/* A non-blank token at s[*i..len): its start and length; false at the end. */
static bool next_token(const char *s, size_t len, size_t *i, const char **tok, size_t *tok_len)
{
	size_t k = *i;

	while (k < len && lb_text_blank(s[k]))
		k++;
	if (k >= len)
		return false;
	*tok = s + k;
	while (k < len && !lb_text_blank(s[k]))
		k++;
	*tok_len = (size_t)(s + k - *tok);
	*i = k;
	return true;
}

/* "PAIRED: M vs B ..." from line[i..len), i after "PAIRED:". */
static bool ascii_token(const char *s, size_t len, bool holes)
{
	for (size_t i = 0; i < len; i++)
		if (!(holes && s[i] == LB_METRIC_HOLE) && ((unsigned char)s[i] < 0x21 ||
							   (unsigned char)s[i] > 0x7e))
			return false;
	return true;
}

static bool parse_paired(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out)
{
	lb_metric_tag tags[LB_METRIC_TAGS_MAX + 2];
	const char *method, *vs, *baseline, *tok;
	size_t method_len, vs_len, baseline_len, tok_len, n = 0, o;
	const lb_metric_tag *shown = NULL;

	if (!next_token(line, len, &i, &method, &method_len) ||
	    !next_token(line, len, &i, &vs, &vs_len) || vs_len != 2 || memcmp(vs, "vs", 2) != 0 ||
	    !next_token(line, len, &i, &baseline, &baseline_len) ||
	    method_len + baseline_len + 4 > LB_METRIC_NAME_MAX ||
	    !ascii_token(method, method_len, holes) || !ascii_token(baseline, baseline_len, holes))
		return false; /* the name goes into documents as it is: ASCII, as names are */
	tags[n++] = (lb_metric_tag){ "method", 6, method, method_len };
	tags[n++] = (lb_metric_tag){ "baseline", 8, baseline, baseline_len };
	while (i < len) {
		lb_metric_tag t;
		size_t k = i, end;

		while (k < len && lb_text_blank(line[k]))
			k++;
		if (k >= len)
			break;
		end = 0;
		/* "ci95=(0.1, 0.3)": the interval may hold a blank. */
		if (k + 6 < len && memcmp(line + k, "ci95=(", 6) == 0) {
			const char *close = memchr(line + k, ')', len - k);

			if (close && close > line + k + 6 &&
			    lb_metric_value_end(line, len, (size_t)(close - line) + 1)) {
				t = (lb_metric_tag){ line + k, 4, line + k + 5,
						     (size_t)(close - line) + 1 - (k + 5) };
				end = (size_t)(close - line) + 1;
			}
		}
		if (end == 0)
			end = scan_tag(line, len, k, &t);
		if (end == 0) {
			/* Other text is skipped, as AutoResearchClaw's own reader skips it. */
			if (!next_token(line, len, &i, &tok, &tok_len))
				break;
			continue;
		}
		i = end;
		for (size_t a = 0; a < n; a++)
			if (tags[a].key_len == t.key_len && memcmp(tags[a].key, t.key, t.key_len) == 0)
				return false; /* a repeated key */
		if (n >= LB_METRIC_TAGS_MAX + 2)
			return false;
		tags[n++] = t;
	}
	for (size_t a = 1; a < n; a++) {
		lb_metric_tag t = tags[a];
		size_t b = a;

		for (; b > 0 && tag_cmp(&tags[b - 1], &t) > 0; b--)
			tags[b] = tags[b - 1];
		tags[b] = t;
	}
	for (size_t a = 0; a < n; a++)
		if (tag_is(&tags[a], "mean_diff"))
			shown = &tags[a];
	if (!shown || !tags_fit(tags, n > 2 ? n - 2 : n))
		return false;
	{
		char text[LB_METRIC_TAGS_TEXT_MAX * 2 + 64];

		if (lb_metric_tags_text(tags, n, text, sizeof(text)) == (size_t)-1)
			return false;
	}
	o = (size_t)snprintf(out->name, sizeof(out->name), "%.*s vs %.*s", (int)method_len, method,
			     (int)baseline_len, baseline);
	(void)o;
	set_kind(out, shown->value, shown->value_len);
	memcpy(out->tags, tags, n * sizeof(*tags));
	out->n_tags = n;
	out->form = LB_METRIC_FORM_PAIRED;
	one_value(out);
	return true;
}

static bool parse_tagged(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out)
{
	lb_metric_tag tags[LB_METRIC_TAGS_MAX + 2], cond;
	size_t n;

	if (!scan_tags(line, len, &i, tags, &n))
		return false;
	/* "dataset=svhn top1: 0.95": the one token names what the pairs are about, a label
	 * (lb_metric_line), not a series' tag. */
	if (n == 1 && lb_metric_label_key(tags[0].key, tags[0].key_len)) {
		if (!lb_metric_parse_pairs(line, len, i, holes, out))
			return false;
		out->label = tags[0].value;
		out->label_len = tags[0].value_len;
		return true;
	}
	if (!take_tag(tags, &n, "condition", &cond) || !tags_fit(tags, n))
		return false;
	if (!lb_metric_parse_pairs(line, len, i, holes, out))
		return false;
	out->condition = cond.value;
	out->condition_len = cond.value_len;
	memcpy(out->tags, tags, n * sizeof(*tags));
	out->n_tags = n;
	out->form = LB_METRIC_FORM_TAGGED;
	return true;
}

/* How many bytes the escape sequence at s[0] == ESC takes, 0 when it is not a whole one.
 * CSI (ESC [ params intermediates final) is what colour and line erasure use; OSC (ESC ]
 * ... BEL or ESC \\) sets titles and hyperlinks; ESC ( B and its kin designate character
 * sets (tput sgr0 writes one). */
size_t lb_metric_escape_len(const char *s, size_t len)
{
	size_t i = 2;

	if (len < 2)
		return 0;
	if (s[1] == '[') {
		while (i < len && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] <= 0x3f)
			i++;
		return i < len && (unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e ? i + 1
											       : 0;
	}
	if (s[1] == ']') {
		for (; i < len; i++) {
			if (s[i] == '\a')
				return i + 1;
			if (s[i] == '\x1b' && i + 1 < len && s[i + 1] == '\\')
				return i + 2;
		}
		return 0;
	}
	if (s[1] && strchr("()*+", s[1]) && len >= 3 && (unsigned char)s[2] > 0x20 &&
	    (unsigned char)s[2] < 0x7f)
		return 3;
	return 0;
}

/* The line without its escape sequences, in out->plain, when it has any and fits; else the
 * line as it is. A sequence that is not whole stays, and keeps the line from parsing. */
const char *lb_metric_without_escapes(const char *line, size_t *len, lb_metric_line *out)
{
	size_t o = 0;

	if (*len > sizeof(out->plain) || !memchr(line, '\x1b', *len))
		return line;
	for (size_t i = 0; i < *len;) {
		size_t n = line[i] == '\x1b' ? lb_metric_escape_len(line + i, *len - i) : 0;

		if (n == 0)
			out->plain[o++] = line[i++];
		else
			i += n;
	}
	*len = o;
	return out->plain;
}

size_t lb_metric_line_end(const char *s, size_t len)
{
	/* Eight bytes at a time: every byte of a flood passes here. A byte b of x is a line
	 * end when b ^ '\n' or b ^ '\r' is zero, found with the has-zero-byte test. */
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t x, a, b;
		memcpy(&x, s + i, 8);
		a = x ^ (ones * '\n');
		b = x ^ (ones * '\r');
		if (((a - ones) & ~a & highs) | ((b - ones) & ~b & highs))
			break;
	}
	for (; i < len; i++)
		if (s[i] == '\n' || s[i] == '\r')
			return i;
	return len;
}

/* What a reading fills in, cleared; not out->plain, which the line may point into. */
static void out_clear(lb_metric_line *out)
{
	out->form = LB_METRIC_FORM_PLAIN;
	out->condition = NULL;
	out->condition_len = 0;
	out->n_tags = 0;
	out->n_values = 0;
	out->table_row = false;
	out->object = false;
	out->label = NULL;
	out->label_len = 0;
}

/* How every reading of a line starts: its escapes out, out cleared, the trailing blanks and
 * line ends off (they never belong to a value, and a last token must end there), *i past
 * the leading blanks. */
static const char *line_begin(const char *line, size_t *len, size_t *i, lb_metric_line *out)
{
	line = lb_metric_without_escapes(line, len, out);
	out_clear(out);
	while (*len > 0 && (lb_text_blank(line[*len - 1]) || line[*len - 1] == '\r' ||
			    line[*len - 1] == '\n'))
		(*len)--;
	while (*i < *len && lb_text_blank(line[*i]))
		(*i)++;
	return line;
}

static bool parse_message(const char *line, size_t len, size_t i, bool holes,
			  lb_metric_line *out);

static bool parse_line(const char *line, size_t len, bool holes, lb_metric_line *out)
{
	size_t i = 0, starts[1 + LB_LOG_FIELDS_AFTER], n;
	bool alone;

	if (!line || !out)
		return false;
	line = line_begin(line, &len, &i, out);
	lb_metric_r_string(&line, &len, &i);
	n = lb_metric_log_message_starts(line, len, i, starts, &alone);
	out->logged = n > 0;
	if (n == 0)
		return parse_message(line, len, i, holes, out);
	/* A log line is its message or nothing: its prefix is never part of a name. */
	for (size_t k = 0; k < n; k++) {
		out_clear(out);
		if (parse_message(line, len, starts[k], holes, out))
			return true;
	}
	return false;
}

/* Past one decoration a result line commonly starts with (docs/decisions.md): an arrow
 * `====>`, `==>`, `-->`, `>` before a blank (pytorch/examples' `====> Test set loss: X`), a
 * tag `[RESULT]` before a blank, or a bullet `- `, `* `. Returns i when there is none. A
 * level word (`[WARNING]`) or a counter (`[epoch]`) in brackets is none: a log line's and
 * a progress line's readings are their own. */
static size_t skip_decoration(const char *s, size_t len, size_t i, const char **split,
			      size_t *split_len, const char **label, size_t *label_len)
{
	/* A tag that names a split other than the test split: "[train] loss: 0.01" is the train
	 * loss, which a "[test] loss: 0.40" line must not share a name with. "[test]" and tags
	 * that name no split ("[RESULT]") stay decorations, read past. */
	static const char *const splits[] = { "train", "training", "val", "valid", "validation",
					      "dev" };
	size_t k = i, gts = 0;

	if (i + 1 < len && (s[i] == '-' || s[i] == '*') && lb_text_blank(s[i + 1]))
		return i + 2;
	while (k < len && k - i < 12 && (s[k] == '=' || s[k] == '-'))
		k++;
	while (k < len && s[k] == '>' && gts < 3) {
		k++;
		gts++;
	}
	if (gts > 0 && k < len && lb_text_blank(s[k]))
		return k + 1;
	if (i < len && s[i] == '[') {
		char tag[25];
		size_t n = 0;

		for (k = i + 1; k < len && n < sizeof(tag) - 1 && lb_metric_key_char(s[k], n == 0);
		     k++)
			tag[n++] = s[k];
		tag[n] = '\0';
		if (n > 0 && k + 1 < len && s[k] == ']' && lb_text_blank(s[k + 1]) &&
		    !lb_metric_name_is_one_of(tag, lb_metric_level_words,
					      LB_N_OF(lb_metric_level_words), true) &&
		    !lb_metric_name_is_one_of(tag, lb_metric_counter_words,
					      LB_N_OF(lb_metric_counter_words), true)) {
			if (lb_metric_name_is_one_of(tag, splits, LB_N_OF(splits), true)) {
				if (!*split) {
					*split = s + i + 1;
					*split_len = n;
				}
			} else if (label && !*label) {
				/* "[cifar10] acc:", "[baseline] acc:": what the values are
				 * about, which tells them apart from the same name under
				 * another tag (the collector's labels). */
				*label = s + i + 1;
				*label_len = n;
			}
			return k + 2;
		}
	}
	return i;
}

static bool parse_undecorated(const char *line, size_t len, size_t i, bool holes,
			      lb_metric_line *out);

/* Names qualified by a split's tag, when the line had one (skip_decoration), unless it is a
 * special name's line (condition: X) or its names are given (SUMMARY, PAIRED). */
static bool qualify_split(lb_metric_line *out, const char *split, size_t split_len)
{
	if (!split || (out->form != LB_METRIC_FORM_PLAIN && out->form != LB_METRIC_FORM_TAGGED) ||
	    lb_metric_special_name(out->values[0].name))
		return true;
	return qualify_values(out, split, split_len);
}

/* A head that names a split before the pairs, joined to them by ':' or '|': "test | loss:
 * 0.30 | acc: 0.90", "test: f1: 0.85", "Test set: Accuracy: 0.9", "eval | auc: 0.93". A
 * split's word (the split tags' and eval, evaluation, test, testing, any case), alone or with
 * set, split, data or dataset. The offset of the pairs, 0 when none; *head_len the head's
 * length. */
static size_t split_head(const char *s, size_t len, size_t i, size_t *head_len)
{
	static const char *const words[] = { "test", "testing", "train",      "training",
					     "val",  "valid",	"validation", "dev",
					     "eval", "evaluation" };
	static const char *const sets[] = { "set", "split", "data", "dataset" };
	size_t w = i, k;

	while (w < len && lb_metric_is_alpha(s[w]))
		w++;
	if (!lb_metric_word_in(s + i, w - i, words, LB_N_OF(words), UINT32_MAX))
		return 0;
	k = w;
	if (k + 1 < len && s[k] == ' ' && lb_metric_is_alpha(s[k + 1])) {
		size_t e = k + 1;

		while (e < len && lb_metric_is_alpha(s[e]))
			e++;
		if (lb_metric_word_in(s + k + 1, e - k - 1, sets, LB_N_OF(sets), UINT32_MAX))
			w = k = e;
	}
	while (k < len && lb_text_blank(s[k]))
		k++;
	if (k >= len || (s[k] != ':' && s[k] != '|') || k + 1 >= len || !lb_text_blank(s[k + 1]))
		return 0;
	*head_len = w - i;
	for (k++; k < len && lb_text_blank(s[k]); k++)
		;
	return k < len ? k : 0;
}

/* A line with a split's head: its pairs, named as a split's tag names them (qualify_split),
 * the test split's as printed. False when what follows the head is no pairs. */
static bool parse_split_head(const char *line, size_t len, size_t i, bool holes,
			     lb_metric_line *out)
{
	size_t head_len = 0, k = split_head(line, len, i, &head_len);
	char head[LB_METRIC_NAME_MAX + 1];

	if (k == 0 || !lb_metric_parse_pairs(line, len, k, holes, out))
		return false;
	memcpy(head, line + i, head_len);
	head[head_len] = '\0';
	return test_heading(head) || qualify_split(out, line + i, head_len);
}

/* "Results: {'acc': 0.9, 'f1': 0.8}", as print("Results:", d) writes a dict: a head of
 * words, ':', then one object. The offset of its '{', 0 when the line is not so; *head_len
 * the head's length. */
static size_t object_head(const char *s, size_t len, size_t i, size_t *head_len)
{
	size_t k = i;

	if (i >= len || !lb_metric_is_alpha(s[i]))
		return 0;
	while (k < len && k - i <= 40 &&
	       (lb_metric_is_alpha(s[k]) || lb_metric_is_digit(s[k]) || s[k] == '_' || s[k] == ' '))
		k++;
	if (k >= len || s[k] != ':' || s[k - 1] == ' ')
		return 0;
	*head_len = k - i;
	for (k++; k < len && lb_text_blank(s[k]); k++)
		;
	return k > i + *head_len + 1 && k < len && s[k] == '{' ? k : 0;
}

/* The line from i on, past a log prefix if it had one. */
static bool parse_message(const char *line, size_t len, size_t i, bool holes, lb_metric_line *out)
{
	const char *split = NULL, *label = NULL;
	size_t split_len = 0, label_len = 0;

	while (i < len && lb_text_blank(line[i]))
		i++;
	if (i < len && line[i] == '{')
		return lb_metric_parse_object(line, len, i, holes, out);
	{
		size_t head_len = 0, k = object_head(line, len, i, &head_len);

		/* The head says whose the members are as a split's head does (split_head): a
		 * split other than the test split qualifies them, any other head leaves them. */
		if (k && lb_metric_parse_object(line, len, k, holes, out)) {
			size_t unused;

			if (split_head(line, len, i, &unused) == k) {
				char head[LB_METRIC_NAME_MAX + 1];

				memcpy(head, line + i, head_len);
				head[head_len] = '\0';
				return test_heading(head) || qualify_split(out, line + i, head_len);
			}
			return true;
		}
		if (k)
			out_clear(out); /* read on as before: the pairs' reading decides */
	}
	/* Up to two decorations (`==> [TEST] acc: 0.9`); what follows is read as ever, so a
	 * decorated sentence is no more a metric than a bare one. */
	for (int d = 0; d < 2; d++) {
		size_t k = skip_decoration(line, len, i, &split, &split_len, &label, &label_len);

		if (k == i)
			break;
		for (i = k; i < len && lb_text_blank(line[i]); i++)
			;
	}
	if (!split && parse_split_head(line, len, i, holes, out))
		return true;
	if (!parse_undecorated(line, len, i, holes, out) || !qualify_split(out, split, split_len))
		return false;
	if (label && out->form == LB_METRIC_FORM_PLAIN && !out->label) {
		out->label = label;
		out->label_len = label_len;
	}
	return true;
}

/* The line from i on, past its decorations. */
static bool parse_undecorated(const char *line, size_t len, size_t i, bool holes,
			      lb_metric_line *out)
{
	if (i < len && line[i] == '|')
		return lb_metric_parse_table_row(line, len, i, holes, out);
	if (i < len && (line[i] == 'E' || lb_metric_is_digit(line[i]) ||
			(holes && line[i] == LB_METRIC_HOLE))) {
		bool is_keras;

		if (lb_metric_parse_keras(line, len, i, holes, out, &is_keras))
			return true;
		if (is_keras)
			return false; /* Keras's head: the line is Keras's or nothing */
	}
	if (len - i > 8 && memcmp(line + i, "SUMMARY", 7) == 0 && lb_text_blank(line[i + 7])) {
		if (parse_summary(line, len, i + 8, holes, out))
			return true;
		/* "SUMMARY : 3" stays the plain metric it always was. */
		out->condition = NULL;
		out->condition_len = 0;
		out->n_tags = 0;
	}
	if (len - i > 7 && memcmp(line + i, "PAIRED:", 7) == 0 && lb_text_blank(line[i + 7])) {
		/* Never a plain metric called PAIRED: its value is a sentence. */
		return parse_paired(line, len, i + 8, holes, out);
	}
	/* A name never holds '=', so a plain line never starts with a key=value token: the
	 * byte after the first run of key characters tells the two apart. */
	{
		size_t k = i;

		while (k < len && lb_metric_key_char(line[k], k == i))
			k++;
		if (k > i && k < len && line[k] == '=')
			return parse_tagged(line, len, i, holes, out);
	}
	return lb_metric_parse_pairs(line, len, i, holes, out);
}

bool lb_metric_line_parse(const char *line, size_t len, lb_metric_line *out)
{
	return parse_line(line, len, false, out);
}

bool lb_metric_template_parse(const char *line, size_t len, lb_metric_line *out)
{
	return parse_line(line, len, true, out);
}

/* Progress lines ------------------------------------------------------------------------------ */

/* A count "3", "3/10", "[3/10]" or "(3/10)" at s[i..): the offset after it, 0 when none. */
static size_t scan_progress_count(const char *s, size_t len, size_t i)
{
	char close = 0;
	size_t start;

	if (i < len && (s[i] == '[' || s[i] == '(')) {
		close = s[i] == '[' ? ']' : ')';
		i++;
	}
	start = i;
	i = lb_metric_skip_digits(s, len, i);
	if (i == start)
		return 0;
	if (i < len && s[i] == '/') {
		size_t d = lb_metric_skip_digits(s, len, i + 1);

		if (d == i + 1)
			return 0;
		i = d;
	}
	if (close) {
		if (i >= len || s[i] != close)
			return 0;
		i++;
	}
	return i;
}

/* A progress line's head, a counter word and its count, at s[i..): "Epoch 3", "epoch=3",
 * "Epoch [3/10]", "[epoch 3]", "step 100", then what joins it to the pairs (",", ":", "|",
 * ";", " - " or blanks). The offset of the first pair and the counter's level
 * (LB_METRIC_PROGRESS_*), 0 when the line does not start so. */
static size_t scan_progress_head(const char *s, size_t len, size_t i, int *level)
{
	bool bracket = i < len && s[i] == '[';
	size_t w, k;

	if (bracket)
		i++;
	for (w = i; w < len && (lb_metric_is_alpha(s[w]) || s[w] == '_'); w++)
		;
	for (k = 0; k < LB_N_OF(lb_metric_counter_words); k++)
		if (strlen(lb_metric_counter_words[k]) == w - i &&
		    strncasecmp(s + i, lb_metric_counter_words[k], w - i) == 0)
			break;
	if (k == LB_N_OF(lb_metric_counter_words))
		return 0;
	*level = counter_level(s + i, w - i);
	i = w;
	if (i < len && s[i] == '=') {
		i++;
	} else {
		if (i >= len || !lb_text_blank(s[i]))
			return 0;
		while (i < len && lb_text_blank(s[i]))
			i++;
	}
	i = scan_progress_count(s, len, i);
	if (i == 0)
		return 0;
	if (bracket) {
		if (i >= len || s[i] != ']')
			return 0;
		i++;
	}
	while (i < len && lb_text_blank(s[i]))
		i++;
	if (i < len && strchr(",:|;", s[i]))
		i++;
	else if (i + 1 < len && s[i] == '-' && lb_text_blank(s[i + 1]))
		i += 2;
	else if (!lb_text_blank(s[i - 1]))
		return 0; /* "epoch 3x" */
	while (i < len && lb_text_blank(s[i]))
		i++;
	return i;
}

int lb_metric_progress_parse(const char *line, size_t len, lb_metric_line *out)
{
	size_t i = 0, head, split_len = 0;
	const char *split = NULL;
	int level = 0;

	if (!line || !out)
		return 0;
	line = line_begin(line, &len, &i, out);
	out->logged = false;
	i = skip_decoration(line, len, i, &split, &split_len, NULL, NULL);
	while (i < len && lb_text_blank(line[i]))
		i++;
	head = scan_progress_head(line, len, i, &level);
	if (head && head < len)
		i = head;
	if (!pairs_of(line, len, i, false, out, &level) || level == 0 ||
	    !qualify_split(out, split, split_len))
		return 0;
	/* A counter and labels alone ("epoch: 3, phase: train") report no number. */
	for (size_t k = 0; k < out->n_values; k++)
		if (out->values[k].kind == LB_METRIC_NUMBER)
			return (level & LB_METRIC_PROGRESS_STEP) ? LB_METRIC_PROGRESS_STEP
								 : LB_METRIC_PROGRESS_EPOCH;
	return 0;
}
