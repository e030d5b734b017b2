/* The streaming collector: the lb_metrics store and its index, feeding each stream line by
 * line (Markdown tables, tracebacks and condition blocks included) and finishing. Reading one
 * line is line.c's; the JSON document is metrics_json.c's; validation is validate.c's. */
#include "labbox/collect.h"
#include "labbox/util.h"
#include "metrics_internal.h"
#include "text.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The identity of an entry: tags are part of it for tagged series only, because a SUMMARY
 * line's fields are its value (a second SUMMARY of the same metric replaces the first). */
typedef struct entry_key {
	uint32_t group;
	int cls;
	const char *name;
	const char *tags;
} entry_key;

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t hash_entry(const entry_key *k)
{
	/* FNV-1a over group, form, name and (for series) tags, without strlen passes. */
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)k->group << 2 | (uint64_t)k->cls);

	h *= 0x100000001b3ULL;
	h = hash_str(h, k->name);
	if (k->cls == LB_CLS_TAGGED && k->tags)
		h = hash_str(h * 0x100000001b3ULL, k->tags);
	return h;
}

static uint64_t hash_label(const char *label)
{
	return hash_bytes(0xcbf29ce484222325ULL, label, strlen(label));
}

static bool entry_matches(const lb_metrics *m, uint32_t idx, const void *key)
{
	const lb_metric_entry *e = &m->entries[idx];
	const entry_key *k = key;

	if (e->group != k->group || e->cls != k->cls || strcmp(e->name, k->name) != 0)
		return false;
	if (k->cls != LB_CLS_TAGGED)
		return true;
	return strcmp(e->tags ? e->tags : "", k->tags ? k->tags : "") == 0;
}

static bool label_matches(const lb_metrics *m, uint32_t idx, const void *key)
{
	return strcmp(m->conditions[idx], key) == 0;
}

typedef bool (*lb_index_match)(const lb_metrics *m, uint32_t idx, const void *key);

/* Slot holding the match, or the empty slot where it would go. */
static uint32_t *index_slot(const lb_metrics *m, const lb_hindex *ix, uint64_t h,
			    lb_index_match match, const void *key)
{
	size_t mask = ix->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &ix->slots[i];

		if (*slot == 0 || match(m, *slot - 1, key))
			return slot;
	}
}

/* Keeps the table at most half full so probes stay short; rehashing needs the hash of every
 * member, so the caller passes a function giving it. */
static int index_grow(lb_metrics *m, lb_hindex *ix, uint64_t (*hash_of)(const lb_metrics *, uint32_t))
{
	size_t cap = ix->cap ? ix->cap * 2 : 64;
	uint32_t *slots;

	if ((ix->used + 1) * 2 <= ix->cap)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		uint32_t v = ix->slots[i];
		size_t j;

		if (!v)
			continue;
		for (j = hash_of(m, v - 1) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = v;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

static entry_key key_of(const lb_metric_entry *e)
{
	return (entry_key){ .group = e->group, .cls = e->cls, .name = e->name, .tags = e->tags };
}

static uint64_t entry_hash_of(const lb_metrics *m, uint32_t idx)
{
	entry_key k = key_of(&m->entries[idx]);

	return hash_entry(&k);
}

static uint64_t label_hash_of(const lb_metrics *m, uint32_t idx)
{
	return hash_label(m->conditions[idx]);
}

long lb_metrics_find(const lb_metrics *m, uint32_t group, int cls, const char *name,
		     const char *tags)
{
	entry_key k = { .group = group, .cls = cls, .name = name, .tags = tags };
	const uint32_t *slot;

	if (!m || m->entry_index.cap == 0)
		return -1;
	slot = index_slot(m, &m->entry_index, hash_entry(&k), entry_matches, &k);
	return *slot ? (long)*slot - 1 : -1;
}

static char *dup_utf8(const char *s, size_t len, size_t max)
{
	char buf[LB_METRIC_LINE_MAX + 8];
	size_t cap = max + 1 < sizeof(buf) ? max + 1 : sizeof(buf);

	lb_text_utf8(buf, cap, s, len);
	return strdup(buf);
}

int lb_metrics_new(lb_metrics **out)
{
	lb_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->time_estimate = -1;
	m->time_guard_at = -1;
	m->now = -1;
	*out = m;
	return 0;
}

void lb_metrics_free(lb_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_entries; i++) {
		free(m->entries[i].str);
		free(m->entries[i].text);
		free(m->entries[i].tags);
		free(m->entries[i].label);
	}
	free(m->entries);
	free(m->split_names);
	free(m->entry_index.slots);
	for (size_t i = 0; i < m->n_conditions; i++)
		free(m->conditions[i]);
	free(m->conditions);
	free(m->condition_index.slots);
	free(m->time_guard_text);
	free(m);
}

static int grow_array(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = reallocarray(*arr, ncap, elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* The group of condition `value`, added when new; LB_NO_GROUP (counted) when it cannot be. */
static uint32_t condition_group(lb_metrics *m, const char *value, size_t len)
{
	LB_AUTOFREE char *label = dup_utf8(value, len, LB_METRICS_LABEL_MAX);
	uint32_t *slot;

	if (!label || index_grow(m, &m->condition_index, label_hash_of) < 0)
		goto fail;
	slot = index_slot(m, &m->condition_index, hash_label(label), label_matches, label);
	if (*slot)
		return *slot;
	if (m->n_conditions >= LB_METRICS_MAX_CONDITIONS ||
	    grow_array((void **)&m->conditions, &m->cap_conditions, m->n_conditions,
		       sizeof(*m->conditions)) < 0)
		goto fail;
	m->conditions[m->n_conditions++] = lb_steal_ptr(&label);
	*slot = (uint32_t)m->n_conditions;
	m->condition_index.used++;
	return (uint32_t)m->n_conditions;
fail:
	m->dropped_conditions++;
	return LB_NO_GROUP;
}

static void set_value(lb_metric_entry *e, const lb_metric_value *v, char *str, char *text,
		      lb_int_form integer, int64_t ival)
{
	free(e->str);
	e->str = str;
	free(e->text);
	e->text = text;
	e->kind = v->kind;
	e->number = v->kind == LB_METRIC_NUMBER ? v->number : 0;
	e->integer = (uint8_t)integer;
	e->ival = ival;
}

/* A plain number printed as an integer: its form, and for LB_INT_WIDE its digits in *wide
 * (NULL when out of memory or too long to keep, and then the value is a double). */
static lb_int_form integer_value(const lb_metric_value *v, int64_t *ival, char **wide)
{
	struct json_object *j;
	lb_int_form f = lb_parse_integer(v->str, v->str_len, ival);

	*wide = NULL;
	if (f != LB_INT_WIDE)
		return f;
	j = v->str_len <= LB_METRICS_STR_MAX ? lb_json_integer(v->str, v->str_len) : NULL;
	if (j)
		*wide = strdup(json_object_get_string(j));
	json_object_put(j);
	return *wide ? LB_INT_WIDE : LB_INT_NONE;
}

static bool annotated(const lb_metric_value *v)
{
	return v->kind == LB_METRIC_NUMBER &&
	       (v->ratio || v->percent || v->has_uncertainty || v->remark || v->wrapper);
}

static void count_drop(lb_metrics *m, int cls)
{
	if (cls == LB_CLS_TAGGED)
		m->dropped_tagged++;
	else
		m->dropped_metrics++;
}

static const size_t class_cap[LB_CLS_COUNT] = {
	[LB_CLS_PLAIN] = LB_METRICS_MAX_ENTRIES,
	[LB_CLS_TAGGED] = LB_METRICS_MAX_TAGGED,
	[LB_CLS_SUMMARY] = LB_METRICS_MAX_SUMMARIES,
	[LB_CLS_PAIRED] = LB_METRICS_MAX_PAIRED,
};

static bool printable_ascii(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* A ratio under a position's name ("best_epoch: 7/10", lb_metric_position_name) is the
 * numerator: the 7th epoch of 10. Its text stays in `annotated` (as "position"). */
static bool position_value(int cls, const lb_metric_value *v, lb_metric_value *copy)
{
	const char *slash;
	double k;

	if ((cls != LB_CLS_PLAIN && cls != LB_CLS_TAGGED) || v->kind != LB_METRIC_NUMBER ||
	    !v->ratio || !lb_metric_position_name(v->name))
		return false;
	slash = memchr(v->str, '/', v->str_len);
	if (!slash || !lb_parse_number(v->str, (size_t)(slash - v->str), &k))
		return false;
	*copy = *v;
	copy->number = k;
	return true;
}

/* Whether a label names the test split: its values keep their names, as `[test] acc:` and
 * `Test set: Accuracy:` always did, since they are the experiment's result. */
static bool test_label(const char *label)
{
	return strcasecmp(label, "test") == 0 || strcasecmp(label, "testing") == 0;
}

/* v under the name its label gives it, "LABEL name" (the name alone for a test label), in *q;
 * false when that does not fit a name. */
static bool label_qualified(const char *label, const lb_metric_value *v, lb_metric_value *q)
{
	*q = *v;
	if (test_label(label))
		return true;
	return (size_t)snprintf(q->name, sizeof(q->name), "%s %s", label, v->name) < sizeof(q->name);
}

static bool split_name(const lb_metrics *m, const char *name)
{
	for (size_t i = 0; i < m->n_split_names; i++)
		if (strcmp(m->split_names[i], name) == 0)
			return true;
	return false;
}

/* Every entry into the index again, after one was renamed. */
static void reindex_entries(lb_metrics *m)
{
	memset(m->entry_index.slots, 0, m->entry_index.cap * sizeof(*m->entry_index.slots));
	m->entry_index.used = 0;
	for (size_t i = 0; i < m->n_entries; i++) {
		entry_key k = key_of(&m->entries[i]);
		uint32_t *slot = index_slot(m, &m->entry_index, hash_entry(&k), entry_matches, &k);

		*slot = (uint32_t)i + 1;
		m->entry_index.used++;
	}
}

/* A plain value whose line carries a label (`[svhn] acc: 0.95`, after `dataset: svhn`): once
 * its name came under another label before (`[cifar10] acc: 0.91`), the labels are what tell
 * the values apart, and each is kept as "LABEL name" ("cifar10 acc", "svhn acc"), the entry
 * already collected renamed; the test split's keep the plain name. A name under one label
 * only, or with and without one, is collected as ever. 1: *q holds v qualified; 0: v as it
 * is; -1: the qualified name does not fit, the value is dropped. */
static int label_value(lb_metrics *m, uint32_t group, const lb_metric_value *v, lb_metric_value *q)
{
	const char *label = m->line_label;
	lb_metric_entry *e;
	char renamed[LB_METRIC_NAME_MAX + 1];
	long at;

	if (split_name(m, v->name))
		return label_qualified(label, v, q) ? 1 : -1;
	at = lb_metrics_find(m, group, LB_CLS_PLAIN, v->name, NULL);
	if (at < 0 || !m->entries[at].label || strcmp(m->entries[at].label, label) == 0 ||
	    m->n_split_names >= LB_METRICS_MAX_SPLIT_NAMES)
		return 0;
	e = &m->entries[at];
	if (!test_label(e->label)) {
		if ((size_t)snprintf(renamed, sizeof(renamed), "%s %s", e->label, e->name) >=
			    sizeof(renamed) ||
		    lb_metrics_find(m, group, LB_CLS_PLAIN, renamed, NULL) >= 0)
			return 0;
	}
	if (!m->split_names) {
		m->split_names = calloc(LB_METRICS_MAX_SPLIT_NAMES, sizeof(*m->split_names));
		if (!m->split_names)
			return 0;
	}
	memcpy(m->split_names[m->n_split_names++], v->name, sizeof(*m->split_names));
	if (!test_label(e->label)) {
		memcpy(e->name, renamed, sizeof(e->name));
		reindex_entries(m);
	}
	free(e->label);
	e->label = NULL;
	return label_qualified(label, v, q) ? 1 : -1;
}

static void add_metric(lb_metrics *m, uint32_t group, int cls, const lb_metric_line *ml,
		       const lb_metric_value *v)
{
	lb_metric_value labelled;
	const char *label = cls == LB_CLS_PLAIN ? m->line_label : NULL;
	lb_metric_value pos;
	bool position = position_value(cls, v, &pos);
	LB_AUTOFREE char *str = NULL;
	LB_AUTOFREE char *text = NULL;
	LB_AUTOFREE char *tags = NULL;
	LB_AUTOFREE char *label_copy = NULL;
	char tag_text[LB_METRICS_TAGS_STORE_MAX + 1] = "";
	lb_metric_entry *e;
	uint32_t *slot;
	entry_key key;
	lb_int_form iform = LB_INT_NONE;
	int64_t ival = 0;

	if (group == LB_NO_GROUP) {
		count_drop(m, cls);
		return;
	}
	if (label) {
		int r = label_value(m, group, v, &labelled);

		if (r < 0) {
			count_drop(m, cls);
			return;
		}
		if (r > 0) {
			v = &labelled;
			label = NULL; /* the name says it */
		}
	}
	m->reported_number |= v->kind == LB_METRIC_NUMBER || cls == LB_CLS_SUMMARY ||
			      cls == LB_CLS_PAIRED;
	/* A value that is no setting: a SUMMARY, a PAIRED, a number that is not an integer
	 * (or annotated), or one named as a result. Labels and counts are a config's too. */
	if (!m->reported_result) {
		int64_t unused;

		/* A position is a count, as `best_epoch: 7` is: no result by its form. */
		m->reported_result = cls == LB_CLS_SUMMARY || cls == LB_CLS_PAIRED ||
				     (v->kind == LB_METRIC_NUMBER &&
				      ((!position &&
					(annotated(v) || lb_parse_integer(v->str, v->str_len,
									  &unused) == LB_INT_NONE)) ||
				       lb_metric_result_word_in(v->name)));
	}
	if (position)
		v = &pos;
	if (v->kind == LB_METRIC_STRING) {
		str = dup_utf8(v->str, v->str_len, LB_METRICS_STR_MAX);
		if (!str)
			goto fail;
	} else if (annotated(v)) {
		text = dup_utf8(v->str, v->str_len, LB_METRICS_STR_MAX);
		if (!text)
			goto fail;
		if (position) {
			/* the 7 of 7/10 is recorded as the integer printed, as `best_epoch: 7` */
			const char *slash = memchr(v->str, '/', v->str_len);

			iform = lb_parse_integer(v->str, (size_t)(slash - v->str), &ival);
			if (iform == LB_INT_WIDE)
				iform = LB_INT_NONE;
		}
	} else {
		iform = integer_value(v, &ival, &str);
	}
	if (cls != LB_CLS_PLAIN) {
		char raw[LB_METRIC_TAGS_TEXT_MAX + 1];
		size_t n = lb_metric_tags_text(ml->tags, ml->n_tags, raw, sizeof(raw));

		/* The parser refuses tags that do not fit, so n is never (size_t)-1 here. Text
		 * that is printable ASCII needs no repair, which is nearly all of it. */
		if (n == (size_t)-1)
			n = 0;
		if (printable_ascii(raw, n))
			memcpy(tag_text, raw, n + 1);
		else
			lb_text_utf8(tag_text, sizeof(tag_text), raw, n);
	}
	if (index_grow(m, &m->entry_index, entry_hash_of) < 0)
		goto fail;
	key = (entry_key){ .group = group, .cls = cls, .name = v->name, .tags = tag_text };
	slot = index_slot(m, &m->entry_index, hash_entry(&key), entry_matches, &key);
	if (*slot) {
		e = &m->entries[*slot - 1];
		if (e->seen < UINT32_MAX)
			e->seen++;
		/* stdout is the metric channel and logging's stderr lines its fallback; the two
		 * pipes are read in no reliable order, so "the last value" across them would be
		 * the reader's choice: a stdout value stands whatever stderr says after it. */
		if (e->from_stdout && !m->line_stdout)
			return;
		/* A transformers metrics block is the run's final value of its names; the dicts
		 * Trainer prints at each log are its progress (transformers.c). */
		if (e->from_block && ml->object && !m->line_block)
			return;
		/* Lines with and without a label, or under another: it no longer tells them
		 * apart (label_value). */
		if (e->label && (!label || strcmp(e->label, label) != 0)) {
			free(e->label);
			e->label = NULL;
		}
		e->from_stdout = m->line_stdout;
		e->from_block = m->line_block;
		set_value(e, v, lb_steal_ptr(&str), lb_steal_ptr(&text), iform, ival);
		/* A SUMMARY's or PAIRED's fields are its value; a tagged series keeps its tags. */
		if ((cls == LB_CLS_SUMMARY || cls == LB_CLS_PAIRED) && strcmp(e->tags, tag_text) != 0) {
			char *t = strdup(tag_text);

			if (!t)
				goto fail;
			free(e->tags);
			e->tags = t;
		}
		return;
	}
	if (cls != LB_CLS_PLAIN) {
		tags = strdup(tag_text);
		if (!tags)
			goto fail;
	}
	if (label) {
		label_copy = strdup(label);
		if (!label_copy)
			goto fail;
	}
	if (m->n_class[cls] >= class_cap[cls]) {
		count_drop(m, cls);
		return;
	}
	if (grow_array((void **)&m->entries, &m->cap_entries, m->n_entries, sizeof(*m->entries)) < 0)
		goto fail;
	e = &m->entries[m->n_entries++];
	memset(e, 0, sizeof(*e));
	e->group = group;
	e->cls = (uint8_t)cls;
	e->seen = 1;
	e->from_stdout = m->line_stdout;
	e->from_block = m->line_block;
	memcpy(e->name, v->name, sizeof(e->name));
	e->tags = lb_steal_ptr(&tags);
	e->label = lb_steal_ptr(&label_copy);
	set_value(e, v, lb_steal_ptr(&str), lb_steal_ptr(&text), iform, ival);
	*slot = (uint32_t)m->n_entries;
	m->entry_index.used++;
	m->n_class[cls]++;
	return;
fail:
	/* Out of memory is treated like the cap: counted, never fatal to collection. */
	count_drop(m, cls);
}

static void time_guard_line(lb_metrics *m, const lb_metric_line *ml)
{
	char *text = dup_utf8(ml->str, ml->str_len, LB_METRICS_STR_MAX);
	double at;

	m->time_guard = true;
	if (text) {
		free(m->time_guard_text);
		m->time_guard_text = text;
	}
	/* The first firing is what the premature check is about; a later line only fills in a
	 * time the first one did not give. The printed time comes first: it is the experiment's
	 * own clock, right for every backend, where the arrival time is right only for output
	 * streamed live. */
	if (m->time_guard_at >= 0)
		return;
	if (lb_metric_parse_duration_prefix(ml->str, ml->str_len, &at)) {
		m->time_guard_at = at;
		m->time_guard_source = "printed";
	} else if (m->now >= 0) {
		/* Milliseconds: finer would only be the noise of the pipe. */
		m->time_guard_at = (double)(long long)(m->now * 1000 + 0.5) / 1000;
		m->time_guard_source = "arrival";
	}
}


/* Every value of a line but special names, which only mean something alone ("acc: 1
 * condition: B" does not start a group). */
void lb_metrics_add_values(lb_metrics *m, uint32_t group, int cls, const lb_metric_line *ml)
{
	for (size_t i = 0; i < ml->n_values; i++)
		if (!lb_metric_special_name(ml->values[i].name))
			add_metric(m, group, cls, ml, &ml->values[i]);
}

void lb_metrics_set_language(lb_metrics *m, const char *language)
{
	if (!m)
		return;
	m->language = !language			    ? LB_METRICS_LANG_PYTHON
		      : strcmp(language, "r") == 0	    ? LB_METRICS_LANG_R
		      : strcmp(language, "octave") == 0 ? LB_METRICS_LANG_OCTAVE
							    : LB_METRICS_LANG_PYTHON;
}

/* Python tracebacks (docs/decisions.md): from "Traceback (most recent call last):" through
 * its indented frames to the exception's line, with the chained blocks' "During handling..."
 * and "The above exception..." lines between them. None of it is a metric, whatever it holds:
 * "KeyError: 0" of a worker thread's traceback is a missing key, not a result. An exception
 * group's traceback is indented as a whole ("  + Exception Group Traceback", "  | ..."), so
 * it ends at the first line that is not. */
enum { LB_TB_NONE, LB_TB_FRAMES, LB_TB_INDENTED };

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

static bool traceback_line(lb_metrics_stream *st, const char *line, size_t len)
{
	lb_metric_line *plain = NULL;
	const char *s = line;
	size_t n = len, k = 0;
	bool indented, part = false;

	/* FORCE_COLOR makes Python 3.13 colour its tracebacks. */
	if (memchr(line, '\x1b', len)) {
		plain = malloc(sizeof(*plain));
		if (plain)
			s = lb_metric_without_escapes(line, &n, plain);
	}
	while (n > 0 && (s[n - 1] == '\r' || lb_text_blank(s[n - 1])))
		n--;
	while (k < n && (lb_text_blank(s[k]) || s[k] == '|' || s[k] == '+'))
		k++;
	indented = k > 0;
	if (starts_with(s + k, n - k, "Traceback (most recent call last):") ||
	    starts_with(s + k, n - k, "Exception Group Traceback (most recent call last):")) {
		st->traceback = indented ? LB_TB_INDENTED : LB_TB_FRAMES;
		part = true;
	} else if (k == n && st->traceback != LB_TB_NONE) {
		part = true; /* a blank line inside it, or before a chained block */
	} else if (starts_with(s + k, n - k, "During handling of the above exception") ||
		   starts_with(s + k, n - k, "The above exception was the direct cause")) {
		part = true;
	} else if (st->traceback == LB_TB_FRAMES) {
		/* The first line at the margin is the exception's: the traceback ends there. */
		if (!indented)
			st->traceback = LB_TB_NONE;
		part = true;
	} else if (st->traceback == LB_TB_INDENTED) {
		if (indented)
			part = true;
		else
			st->traceback = LB_TB_NONE;
	}
	free(plain);
	return part;
}

/* Whether the group holds a plain metric of this name. */
static bool group_has(const lb_metrics *m, uint32_t group, const char *name)
{
	return lb_metrics_find(m, group, LB_CLS_PLAIN, name, "") >= 0;
}

/* The group a plain line's values go to: the stream's current condition's, unless the line
 * comes after the condition blocks and is the run's own (docs/result-json.md, "Condition
 * blocks"). A blank line after a block's metrics ends the block (blank_line); a line after
 * that, before the next `condition:` line, in a stream of two or more blocks, is the run's
 * when one of its names is one the block holds already (printed again, it would replace the
 * block's value: a mean over the conditions, as the last block's) or one the stream's first
 * block did not report (a block with a blank line inside reports its first block's names).
 * From that line on the stream's lines are the run's, until a `condition:` line. Where the
 * first block printed a name again after a blank line inside it (an epoch's lines, blank
 * lines between), a blank line ends no block: blocks repeat their names. */
static uint32_t block_group(lb_metrics *m, lb_metrics_stream *st, const lb_metric_line *ml)
{
	bool again = false, unknown = false;

	if (st->group == 0 || st->group == LB_NO_GROUP)
		return st->group;
	if (!st->block_closed) {
		st->block_metrics = true;
		return st->group;
	}
	for (size_t i = 0; i < ml->n_values; i++) {
		const char *name = ml->values[i].name;

		if (lb_metric_special_name(name))
			continue;
		if (group_has(m, st->group, name))
			again = true;
		else if (st->first_group != st->group && st->first_group != LB_NO_GROUP &&
			 !group_has(m, st->first_group, name))
			unknown = true;
	}
	if (st->condition_lines < 2 || st->blocks_repeat) {
		st->blocks_repeat |= again;
		return st->group;
	}
	if (again || unknown)
		st->group = 0;
	return st->group;
}

/* One line that is not part of a table's context: its metrics collected. Returns whether it
 * was a metric line. */
static bool collect_line(lb_metrics *m, lb_metrics_stream *st, const char *line, size_t len)
{
	lb_metric_line ml;
	uint32_t group;

	m->line_stdout = st == &m->out;

	if (!lb_metric_line_parse(line, len, &ml) &&
	    !(m->language == LB_METRICS_LANG_OCTAVE && st == &m->out &&
	      lb_metric_octave_display(line, len, &ml))) {
		/* What else a line holds only explains a run that reported nothing (the
		 * no_metrics issue, the progress fallback), and entries are never taken back:
		 * after the first metric, a flood of other lines costs its parse alone. */
		/* Only while nothing read is a result: then they can be all the run has. */
		if (st == &m->out && !m->reported_result)
			lb_metrics_note_result_unread(m, line, len);
		if (m->reported_number) {
			/* Until a metric line follows them, progress lines may be all the run
			 * has to show besides start-up facts. */
			if (st == &m->out && !m->progress_closed)
				lb_metrics_note_progress(m, line, len, &ml);
			return false;
		}
		int level = lb_metric_log_metric_like(line, len);

		if (level >= 0) {
			lb_metrics_note_log_metric(m, st == &m->err, level, line, len);
		} else if (st == &m->out) {
			size_t before = m->progress_lines;

			lb_metrics_note_progress(m, line, len, &ml);
			if (m->progress_lines == before)
				lb_metrics_note_unread_metric(m, line, len);
		}
		return false;
	}
	/* Metrics are stdout's (the seed's `name: value` lines). stderr is where libraries
	 * talk (Lightning's "GPU available: False, used: False", warnings, tqdm), so of its
	 * lines only Python logging's INFO lines are read: the experiment's own logging.info,
	 * which writes there by default. */
	if (st == &m->err && !ml.logged) {
		if (ml.form != LB_METRIC_FORM_PAIRED && ml.values[0].kind == LB_METRIC_NUMBER)
			lb_metrics_note_stderr_metric(m, line, len);
		return false;
	}
	m->progress_closed |= m->progress_lines > 0;
	if (m->language == LB_METRICS_LANG_R && ml.form != LB_METRIC_FORM_SUMMARY &&
	    ml.form != LB_METRIC_FORM_PAIRED)
		lb_metric_r_missing(&ml);
	switch (ml.form) {
	case LB_METRIC_FORM_TAGGED:
		/* "condition=A condition: B" and the like mean nothing; they are not metrics. */
		group = condition_group(m, ml.condition, ml.condition_len);
		lb_metrics_add_values(m, group, ml.n_tags ? LB_CLS_TAGGED : LB_CLS_PLAIN, &ml);
		return true;
	case LB_METRIC_FORM_SUMMARY:
		group = ml.condition ? condition_group(m, ml.condition, ml.condition_len) : st->group;
		add_metric(m, group, LB_CLS_SUMMARY, &ml, &ml.values[0]);
		return true;
	case LB_METRIC_FORM_PAIRED:
		/* A comparison of two conditions belongs to neither. */
		add_metric(m, 0, LB_CLS_PAIRED, &ml, &ml.values[0]);
		return true;
	case LB_METRIC_FORM_PLAIN:
		break;
	}
	if (strcmp(ml.name, "condition") == 0) {
		st->group = condition_group(m, ml.str, ml.str_len);
		st->label[0] = '\0';
		if (st->condition_lines == 0)
			st->first_group = st->group;
		if (st->condition_lines < UINT32_MAX)
			st->condition_lines++;
		st->block_metrics = st->block_closed = false;
	} else if (strcmp(ml.name, "TIME_ESTIMATE") == 0) {
		double v;

		/* An unreadable estimate is ignored rather than guessed at. */
		if (lb_metric_parse_duration(ml.str, ml.str_len, &v))
			m->time_estimate = v;
	} else if (strcmp(ml.name, "TIME_GUARD") == 0) {
		time_guard_line(m, &ml);
	} else {
		char label[LB_METRIC_NAME_MAX + 1];

		/* "dataset: svhn": the lines after it are about svhn (their label), itself a
		 * value as before. */
		if (ml.n_values == 1 && ml.kind == LB_METRIC_STRING && !ml.label &&
		    lb_metric_label_key(ml.name, strlen(ml.name)))
			lb_text_utf8(st->label, sizeof(st->label), ml.str, ml.str_len);
		else if (ml.label)
			lb_text_utf8(label, sizeof(label), ml.label, ml.label_len);
		m->line_label = ml.label		     ? label
				: st->label[0] && !lb_metric_label_key(ml.name, strlen(ml.name)) ? st->label
								 : NULL;
		lb_metrics_add_values(m, block_group(m, st, &ml), LB_CLS_PLAIN, &ml);
		m->line_label = NULL;
	}
	return true;
}

/* Markdown tables (docs/decisions.md, tenth session). A table's first row waits until the
 * next line: followed by a separator row it is a header, and the rows are read as name|value
 * pairs only under a header that says so ("| metric | value |"); under any other header
 * ("| method | acc |") a row's first cell is not a metric's name, and nothing is read. A table
 * without a header is read when its first row is a name|number row itself (a first row
 * "| method | acc |" without its separator is a header all the same). */
enum { TABLE_NONE, TABLE_FIRST, TABLE_READ, TABLE_SKIP };

static bool table_line(const char *s, size_t len)
{
	lb_metric_trim(&s, &len);
	return len >= 2 && s[0] == '|' && s[len - 1] == '|';
}

static bool table_separator(const char *s, size_t len)
{
	bool dash = false;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '-')
			dash = true;
		else if (!strchr("|: \t\r", s[i]))
			return false;
	}
	return dash;
}

static bool cell_is(const char *s, size_t len, const char *const *words, size_t n)
{
	lb_metric_trim(&s, &len);
	for (size_t k = 0; k < n; k++)
		if (lb_metric_word_is(s, len, words[k]))
			return true;
	return false;
}

/* "| metric | value |" and its kin: a header under which rows are names and values. */
static bool name_value_header(const char *s, size_t len)
{
	static const char *const names[] = { "metric", "metrics", "name", "key", "measure" };
	static const char *const values[] = { "value", "score", "result" };
	const char *bar1, *bar2;

	lb_metric_trim(&s, &len);
	bar1 = s;
	bar2 = memchr(s + 1, '|', len - 1);
	if (!bar2 || bar2 == s + len - 1 || memchr(bar2 + 1, '|', (size_t)(s + len - bar2 - 2)))
		return false;
	return cell_is(bar1 + 1, (size_t)(bar2 - bar1 - 1), names, LB_N_OF(names)) &&
	       cell_is(bar2 + 1, (size_t)(s + len - bar2 - 2), values, LB_N_OF(values));
}

/* How a line ended: a '\n' (or the start), a '\r' after text, a '\r' after nothing but
 * blanks. A "\r\n" is one line end, so the empty line between its two bytes is none. */
enum { LB_END_LF, LB_END_CR_TEXT, LB_END_CR_BLANK };

static bool blank_text(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!lb_text_blank(s[i]))
			return false;
	return true;
}

/* A blank line ends a Markdown table, as Markdown reads one: the rows after it are another
 * table's, read by its own header. And it ends the condition block it follows, once that
 * holds a metric (block_group). */
static void blank_line(lb_metrics *m, lb_metrics_stream *st)
{
	lb_metrics_lightning_end(m, st); /* no Lightning table holds a blank line */
	lb_metrics_transformers_end(st);  /* nor a transformers metrics block */
	if (st->table_state == TABLE_FIRST)
		collect_line(m, st, st->table_first, st->table_first_len);
	st->table_state = TABLE_NONE;
	st->table_held = false;
	if (st->group != 0 && st->group != LB_NO_GROUP && st->block_metrics)
		st->block_closed = true;
}

/* A table row not read where its table is read or skipped: held, since a separator row after
 * it makes it the header of another table. */
static void hold_row(lb_metrics_stream *st, const char *line, size_t len)
{
	memcpy(st->table_first, line, len);
	st->table_first_len = len;
	st->table_held = true;
}

/* A line that is no Markdown table row: it ends the table being read, and is collected. */
void lb_metrics_text_line(lb_metrics *m, lb_metrics_stream *st, const char *line, size_t len)
{
	if (st->table_state == TABLE_FIRST)
		collect_line(m, st, st->table_first, st->table_first_len);
	st->table_state = TABLE_NONE;
	st->table_held = false;
	collect_line(m, st, line, len);
}

/* One line, without its end; end is the byte that ended it ('\n', '\r'), 0 for the last
 * line of a stream that did not end one. */
static void process_line(lb_metrics *m, lb_metrics_stream *st, const char *line, size_t len,
			 char end)
{
	int prev = st->last_end;
	bool blank = blank_text(line, len);

	st->last_end = end != '\r' ? LB_END_LF : blank ? LB_END_CR_BLANK : LB_END_CR_TEXT;
	/* A line of blanks ended by '\n' is a blank line, but not the '\n' of a "\r\n" after
	 * text, nor a '\r' of a progress bar's (its line goes on). Inside a traceback blank
	 * lines are the traceback's. */
	if (blank && end == '\n' && prev != LB_END_CR_TEXT && st->traceback == LB_TB_NONE) {
		blank_line(m, st);
		return;
	}
	if (len == 0)
		return; /* the empty line between a "\r" and its "\n" ends no table */
	if (traceback_line(st, line, len))
		return;
	if (st == &m->out && lb_metrics_lightning_line(m, st, line, len))
		return;
	if (st == &m->out && lb_metrics_transformers_line(m, st, line, len))
		return;
	if (!table_line(line, len)) {
		lb_metrics_text_line(m, st, line, len);
		return;
	}
	switch (st->table_state) {
	case TABLE_NONE:
		memcpy(st->table_first, line, len);
		st->table_first_len = len;
		st->table_state = TABLE_FIRST;
		st->table_held = false;
		return;
	case TABLE_FIRST:
		if (table_separator(line, len)) {
			st->table_state = name_value_header(st->table_first, st->table_first_len) ? TABLE_READ
											       : TABLE_SKIP;
			return;
		}
		st->table_state = collect_line(m, st, st->table_first, st->table_first_len) ? TABLE_READ
										     : TABLE_SKIP;
		break;
	default:
		/* "| metric | baseline |" then "|---|---|" inside a table: a table of its own
		 * begins, read or not by its header as any table is. */
		if (st->table_held && table_separator(line, len)) {
			st->table_state = name_value_header(st->table_first, st->table_first_len) ? TABLE_READ
											       : TABLE_SKIP;
			st->table_held = false;
			return;
		}
		break;
	}
	if (st->table_state == TABLE_READ && collect_line(m, st, line, len))
		st->table_held = false;
	else
		hold_row(st, line, len);
}

static void feed(lb_metrics *m, lb_metrics_stream *st, const char *data, size_t len,
		 double elapsed_s)
{
	m->now = isfinite(elapsed_s) && elapsed_s >= 0 ? elapsed_s : -1;
	while (len > 0) {
		/* A carriage return ends a line too: a progress bar's updates before a metric are
		 * lines of their own, never a prefix that hides it or makes it too long. */
		size_t chunk = lb_metric_line_end(data, len);
		bool nl = chunk < len;
		size_t used = nl ? chunk + 1 : chunk;

		if (st->skipping) {
			if (nl)
				st->skipping = false;
		} else if (st->line_len + chunk > LB_METRIC_LINE_MAX) {
			m->long_lines++;
			st->line_len = 0;
			st->skipping = !nl;
		} else if (nl && st->line_len == 0) {
			/* Whole line in this chunk: parse it in place, no copy. */
			process_line(m, st, data, chunk, data[chunk]);
		} else {
			memcpy(st->line + st->line_len, data, chunk);
			st->line_len += chunk;
			if (nl) {
				process_line(m, st, st->line, st->line_len, data[chunk]);
				st->line_len = 0;
			}
		}
		data += used;
		len -= used;
	}
}

void lb_metrics_feed_at(lb_metrics *m, const char *data, size_t len, double elapsed_s)
{
	feed(m, &m->out, data, len, elapsed_s);
}

void lb_metrics_feed_stderr_at(lb_metrics *m, const char *data, size_t len, double elapsed_s)
{
	feed(m, &m->err, data, len, elapsed_s);
}

void lb_metrics_feed(lb_metrics *m, const char *data, size_t len)
{
	lb_metrics_feed_at(m, data, len, -1);
}

static void finish(lb_metrics *m, lb_metrics_stream *st)
{
	if (st->line_len > 0 && !st->skipping)
		process_line(m, st, st->line, st->line_len, 0);
	lb_metrics_lightning_end(m, st);
	lb_metrics_transformers_end(st);
	if (st->table_state == TABLE_FIRST)
		collect_line(m, st, st->table_first, st->table_first_len);
	st->table_state = TABLE_NONE;
	st->table_held = false;
	st->last_end = LB_END_LF;
	st->line_len = 0;
	st->skipping = false;
	st->traceback = LB_TB_NONE;
}

void lb_metrics_finish(lb_metrics *m)
{
	finish(m, &m->out);
	finish(m, &m->err);
}

size_t lb_metrics_count(const lb_metrics *m)
{
	return m ? m->n_entries : 0;
}

double lb_metrics_time_estimate(const lb_metrics *m)
{
	return m ? m->time_estimate : -1;
}

bool lb_metrics_time_guard_fired(const lb_metrics *m)
{
	return m && m->time_guard;
}

double lb_metrics_time_guard_at(const lb_metrics *m)
{
	return m && m->time_guard ? m->time_guard_at : -1;
}
