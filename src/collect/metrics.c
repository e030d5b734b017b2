/* Metric lines on stdout: parsing, a streaming collector and validation. */
#include "labbox/collect.h"
#include "labbox/util.h"
#include "text.h"

#include <errno.h>
#include <json-c/json.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The store grows with distinct names only; these bound it against output that invents names
 * (a counter in the name, a hostile experiment). What falls beyond is counted, not kept. */
#define LB_METRICS_MAX_ENTRIES 10000
#define LB_METRICS_MAX_CONDITIONS 1000
/* Stored text is bounded too, so the worst case stays a few megabytes. */
#define LB_METRICS_STR_MAX 512
#define LB_METRICS_LABEL_MAX 256
/* Longest numeric text handed to strtod; longer is not a number anyone prints. */
#define LB_NUMBER_TEXT_MAX 512
/* lb_results_parse nests at most 24 deep; this only guards documents built elsewhere. */
#define LB_WALK_DEPTH_MAX 256
#define LB_PATH_MAX 512

#define NO_GROUP UINT32_MAX /* metrics after a condition that did not fit are dropped */

typedef struct lb_metric_entry {
	uint32_t group; /* 0: before any condition line, else condition index + 1 */
	uint32_t seen;
	lb_metric_kind kind;
	double number;
	char *str; /* NUL-terminated, valid UTF-8; set for LB_METRIC_STRING only */
	char name[LB_METRIC_NAME_MAX + 1];
} lb_metric_entry;

/* Open addressing over indices into an array; slot value 0 means empty, else index + 1. */
typedef struct lb_index {
	uint32_t *slots;
	size_t cap; /* power of two or 0 */
	size_t used;
} lb_index;

struct lb_metrics {
	char line[LB_METRIC_LINE_MAX];
	size_t line_len;
	bool skipping; /* inside a line that outgrew the buffer, until its newline */

	lb_metric_entry *entries;
	size_t n_entries, cap_entries;
	lb_index entry_index;

	char **conditions;
	size_t n_conditions, cap_conditions;
	lb_index condition_index;
	uint32_t group;

	double time_estimate;
	bool time_guard;
	char *time_guard_text;

	size_t dropped_metrics;
	size_t dropped_conditions;
	size_t long_lines;
};

static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t hash_entry(uint32_t group, const char *name)
{
	uint64_t h = hash_bytes(0xcbf29ce484222325ULL, &group, sizeof(group));

	return hash_bytes(h, name, strlen(name));
}

static uint64_t hash_label(const char *label)
{
	return hash_bytes(0xcbf29ce484222325ULL, label, strlen(label));
}

static bool entry_matches(const lb_metrics *m, uint32_t idx, const void *key, uint32_t group)
{
	const lb_metric_entry *e = &m->entries[idx];

	return e->group == group && strcmp(e->name, key) == 0;
}

static bool label_matches(const lb_metrics *m, uint32_t idx, const void *key, uint32_t group)
{
	(void)group;
	return strcmp(m->conditions[idx], key) == 0;
}

typedef bool (*lb_index_match)(const lb_metrics *m, uint32_t idx, const void *key, uint32_t group);

/* Slot holding the match, or the empty slot where it would go. */
static uint32_t *index_slot(const lb_metrics *m, const lb_index *ix, uint64_t h, lb_index_match match,
			    const void *key, uint32_t group)
{
	size_t mask = ix->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &ix->slots[i];

		if (*slot == 0 || match(m, *slot - 1, key, group))
			return slot;
	}
}

/* Keeps the table at most half full so probes stay short; rehashing needs the hash of every
 * member, so the caller passes a function giving it. */
static int index_grow(lb_metrics *m, lb_index *ix, uint64_t (*hash_of)(const lb_metrics *, uint32_t))
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

static uint64_t entry_hash_of(const lb_metrics *m, uint32_t idx)
{
	return hash_entry(m->entries[idx].group, m->entries[idx].name);
}

static uint64_t label_hash_of(const lb_metrics *m, uint32_t idx)
{
	return hash_label(m->conditions[idx]);
}

static char *dup_utf8(const char *s, size_t len, size_t max)
{
	char buf[LB_METRIC_LINE_MAX + 8];
	size_t cap = max + 1 < sizeof(buf) ? max + 1 : sizeof(buf);

	lb_text_utf8(buf, cap, s, len);
	return strdup(buf);
}

static void trim(const char **s, size_t *len)
{
	while (*len > 0 && (lb_text_blank(**s) || **s == '\r' || **s == '\n')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && (lb_text_blank((*s)[*len - 1]) || (*s)[*len - 1] == '\r' ||
			    (*s)[*len - 1] == '\n'))
		(*len)--;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static size_t skip_digits(const char *s, size_t len, size_t i)
{
	while (i < len && is_digit(s[i]))
		i++;
	return i;
}

/* Python's float() spelling of a decimal: digits with an optional point and exponent; ".5" and
 * "5." are accepted because float() accepts them. */
static bool decimal_syntax(const char *s, size_t len)
{
	size_t i = 0, int_end, frac_end;

	int_end = skip_digits(s, len, i);
	frac_end = int_end;
	if (int_end < len && s[int_end] == '.')
		frac_end = skip_digits(s, len, int_end + 1);
	if (int_end == 0 && frac_end <= 1)
		return false; /* no digit at all */
	i = frac_end;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t exp_start;

		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		exp_start = i;
		i = skip_digits(s, len, i);
		if (i == exp_start)
			return false;
	}
	return i == len;
}

static bool word_is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

bool lb_parse_number(const char *s, size_t len, double *out)
{
	char buf[LB_NUMBER_TEXT_MAX];
	bool negative = false;
	const char *body;
	size_t body_len;
	locale_t c_locale;
	double v;

	if (!s)
		return false;
	trim(&s, &len);
	body = s;
	body_len = len;
	if (body_len > 0 && (body[0] == '+' || body[0] == '-')) {
		negative = body[0] == '-';
		body++;
		body_len--;
	}
	if (word_is(body, body_len, "nan")) {
		*out = negative ? -NAN : NAN;
		return true;
	}
	if (word_is(body, body_len, "inf") || word_is(body, body_len, "infinity")) {
		*out = negative ? -INFINITY : INFINITY;
		return true;
	}
	if (!decimal_syntax(body, body_len) || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	/* A program embedding labbox may have set LC_NUMERIC; research code prints a '.'. The "C"
	 * locale object is static in glibc, so this allocates nothing. */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c_locale)
		return false;
	v = strtod_l(buf, NULL, c_locale);
	freelocale(c_locale);
	/* Overflow gives +-HUGE_VAL, which is what Python's float() says for "1e999" too. */
	*out = v;
	return true;
}

static bool name_char(char c, bool first)
{
	if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return !first && (is_digit(c) || c == '.' || c == '-' || c == '/');
}

bool lb_metric_line_parse(const char *line, size_t len, lb_metric_line *out)
{
	size_t i = 0, name_start, name_len;
	const char *value;
	size_t value_len;

	if (!line || !out)
		return false;
	while (i < len && lb_text_blank(line[i]))
		i++;
	name_start = i;
	if (i >= len || !name_char(line[i], true))
		return false; /* also rejects '#' comments */
	while (i < len && name_char(line[i], false))
		i++;
	name_len = i - name_start;
	if (name_len > LB_METRIC_NAME_MAX)
		return false;
	while (i < len && lb_text_blank(line[i]))
		i++;
	if (i >= len || line[i] != ':')
		return false;
	i++;
	if (i >= len || !lb_text_blank(line[i]))
		return false;
	value = line + i;
	value_len = len - i;
	trim(&value, &value_len);
	if (value_len == 0)
		return false;

	memcpy(out->name, line + name_start, name_len);
	out->name[name_len] = '\0';
	out->str = value;
	out->str_len = value_len;
	if (lb_parse_number(value, value_len, &out->number)) {
		out->kind = LB_METRIC_NUMBER;
		return true;
	}
	/* "ValueError: bad input" is the end of a traceback, not a metric; a numeric value keeps
	 * a metric that happens to be called TrainError. */
	if (lb_text_is_exception_name(out->name, name_len))
		return false;
	out->kind = LB_METRIC_STRING;
	out->number = 0;
	return true;
}

/* "12s", "12.5", "2m", "1.5 h", "~30 sec": a leading '~' and a unit word are allowed. */
static bool parse_duration(const char *s, size_t len, double *out)
{
	static const struct {
		const char *word;
		double scale;
	} units[] = {
		{ "", 1 },	    { "s", 1 },	       { "sec", 1 },	  { "secs", 1 },
		{ "second", 1 },    { "seconds", 1 },  { "ms", 1e-3 },	  { "m", 60 },
		{ "min", 60 },	    { "mins", 60 },    { "minute", 60 },  { "minutes", 60 },
		{ "h", 3600 },	    { "hr", 3600 },    { "hrs", 3600 },	  { "hour", 3600 },
		{ "hours", 3600 },
	};
	size_t num_len = 0;
	const char *unit;
	size_t unit_len;
	double v;

	trim(&s, &len);
	if (len > 0 && s[0] == '~') {
		s++;
		len--;
		trim(&s, &len);
	}
	while (num_len < len && (is_digit(s[num_len]) || s[num_len] == '.' || s[num_len] == 'e' ||
				 s[num_len] == 'E' || s[num_len] == '+' || s[num_len] == '-'))
		num_len++;
	if (!lb_parse_number(s, num_len, &v))
		return false;
	unit = s + num_len;
	unit_len = len - num_len;
	trim(&unit, &unit_len);
	if (!isfinite(v) || v < 0)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (word_is(unit, unit_len, units[i].word)) {
			*out = v * units[i].scale;
			return true;
		}
	}
	return false;
}

int lb_metrics_new(lb_metrics **out)
{
	lb_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->time_estimate = -1;
	*out = m;
	return 0;
}

void lb_metrics_free(lb_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_entries; i++)
		free(m->entries[i].str);
	free(m->entries);
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

static void set_condition(lb_metrics *m, const char *value, size_t len)
{
	LB_AUTOFREE char *label = dup_utf8(value, len, LB_METRICS_LABEL_MAX);
	uint32_t *slot;

	if (!label || index_grow(m, &m->condition_index, label_hash_of) < 0) {
		m->dropped_conditions++;
		m->group = NO_GROUP;
		return;
	}
	slot = index_slot(m, &m->condition_index, hash_label(label), label_matches, label, 0);
	if (*slot) {
		m->group = *slot;
		return;
	}
	if (m->n_conditions >= LB_METRICS_MAX_CONDITIONS ||
	    grow_array((void **)&m->conditions, &m->cap_conditions, m->n_conditions,
		       sizeof(*m->conditions)) < 0) {
		m->dropped_conditions++;
		m->group = NO_GROUP;
		return;
	}
	m->conditions[m->n_conditions++] = lb_steal_ptr(&label);
	*slot = (uint32_t)m->n_conditions;
	m->condition_index.used++;
	m->group = (uint32_t)m->n_conditions;
}

static void set_value(lb_metric_entry *e, const lb_metric_line *ml, char *str)
{
	free(e->str);
	e->str = str;
	e->kind = ml->kind;
	e->number = ml->kind == LB_METRIC_NUMBER ? ml->number : 0;
}

static void add_metric(lb_metrics *m, const lb_metric_line *ml)
{
	LB_AUTOFREE char *str = NULL;
	lb_metric_entry *e;
	uint32_t *slot;

	if (m->group == NO_GROUP) {
		m->dropped_metrics++;
		return;
	}
	if (ml->kind == LB_METRIC_STRING) {
		str = dup_utf8(ml->str, ml->str_len, LB_METRICS_STR_MAX);
		if (!str)
			goto fail;
	}
	if (index_grow(m, &m->entry_index, entry_hash_of) < 0)
		goto fail;
	slot = index_slot(m, &m->entry_index, hash_entry(m->group, ml->name), entry_matches, ml->name,
			  m->group);
	if (*slot) {
		e = &m->entries[*slot - 1];
		if (e->seen < UINT32_MAX)
			e->seen++;
		set_value(e, ml, lb_steal_ptr(&str));
		return;
	}
	if (m->n_entries >= LB_METRICS_MAX_ENTRIES) {
		m->dropped_metrics++;
		return;
	}
	if (grow_array((void **)&m->entries, &m->cap_entries, m->n_entries, sizeof(*m->entries)) < 0)
		goto fail;
	e = &m->entries[m->n_entries++];
	memset(e, 0, sizeof(*e));
	e->group = m->group;
	e->seen = 1;
	memcpy(e->name, ml->name, sizeof(e->name));
	set_value(e, ml, lb_steal_ptr(&str));
	*slot = (uint32_t)m->n_entries;
	m->entry_index.used++;
	return;
fail:
	/* Out of memory is treated like the cap: counted, never fatal to collection. */
	m->dropped_metrics++;
}

static void process_line(lb_metrics *m, const char *line, size_t len)
{
	lb_metric_line ml;

	if (!lb_metric_line_parse(line, len, &ml))
		return;
	if (strcmp(ml.name, "condition") == 0) {
		set_condition(m, ml.str, ml.str_len);
	} else if (strcmp(ml.name, "TIME_ESTIMATE") == 0) {
		double v;

		/* An unreadable estimate is ignored rather than guessed at. */
		if (parse_duration(ml.str, ml.str_len, &v))
			m->time_estimate = v;
	} else if (strcmp(ml.name, "TIME_GUARD") == 0) {
		char *text = dup_utf8(ml.str, ml.str_len, LB_METRICS_STR_MAX);

		m->time_guard = true;
		if (text) {
			free(m->time_guard_text);
			m->time_guard_text = text;
		}
	} else {
		add_metric(m, &ml);
	}
}

void lb_metrics_feed(lb_metrics *m, const char *data, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t chunk = nl ? (size_t)(nl - data) : len;
		size_t used = nl ? chunk + 1 : chunk;

		if (m->skipping) {
			if (nl)
				m->skipping = false;
		} else if (m->line_len + chunk > LB_METRIC_LINE_MAX) {
			m->long_lines++;
			m->line_len = 0;
			m->skipping = !nl;
		} else if (nl && m->line_len == 0) {
			/* Whole line in this chunk: parse it in place, no copy. */
			process_line(m, data, chunk);
		} else {
			memcpy(m->line + m->line_len, data, chunk);
			m->line_len += chunk;
			if (nl) {
				process_line(m, m->line, m->line_len);
				m->line_len = 0;
			}
		}
		data += used;
		len -= used;
	}
}

void lb_metrics_finish(lb_metrics *m)
{
	if (m->line_len > 0 && !m->skipping)
		process_line(m, m->line, m->line_len);
	m->line_len = 0;
	m->skipping = false;
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

/* Takes ownership of val in every case, so callers can chain additions and bail out on the first
 * failure. A NULL val is an allocation that failed; JSON null goes through obj_add_null. */
static int obj_add(struct json_object *obj, const char *key, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

static int obj_add_null(struct json_object *obj, const char *key)
{
	return json_object_object_add(obj, key, NULL) < 0 ? -ENOMEM : 0;
}

static int arr_add(struct json_object *arr, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_array_add(arr, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

/* The new container, already owned by parent, or NULL. */
static struct json_object *add_child(struct json_object *parent, const char *key,
				     struct json_object *child)
{
	return obj_add(parent, key, child) < 0 ? NULL : child;
}

static struct json_object *entry_value(const lb_metric_entry *e)
{
	if (e->kind == LB_METRIC_NUMBER)
		return lb_json_number(e->number);
	return json_object_new_string(e->str ? e->str : "");
}

static int add_count(struct json_object *obj, const char *key, size_t n)
{
	if (n == 0)
		return 0;
	return obj_add(obj, key, json_object_new_int64((int64_t)n));
}

static int add_repeat(const lb_metrics *m, struct json_object *doc, struct json_object **repeats,
		      const lb_metric_entry *e)
{
	struct json_object *rep;

	if (!*repeats) {
		*repeats = add_child(doc, "repeats", json_object_new_array());
		if (!*repeats)
			return -ENOMEM;
	}
	rep = json_object_new_object();
	if (arr_add(*repeats, rep) < 0 || obj_add(rep, "metric", json_object_new_string(e->name)) < 0)
		return -ENOMEM;
	if (e->group ? obj_add(rep, "condition", json_object_new_string(m->conditions[e->group - 1]))
		     : obj_add_null(rep, "condition"))
		return -ENOMEM;
	return obj_add(rep, "seen", json_object_new_int64(e->seen));
}

static int fill_json(const lb_metrics *m, struct json_object *doc)
{
	struct json_object *values, *conds, *order, *repeats = NULL;
	int r;

	values = add_child(doc, "values", json_object_new_object());
	conds = values ? add_child(doc, "conditions", json_object_new_object()) : NULL;
	order = conds ? add_child(doc, "condition_order", json_object_new_array()) : NULL;
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_conditions; i++) {
		if (!add_child(conds, m->conditions[i], json_object_new_object()) ||
		    arr_add(order, json_object_new_string(m->conditions[i])) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];
		struct json_object *target = values;

		if (e->group > 0)
			json_object_object_get_ex(conds, m->conditions[e->group - 1], &target);
		if (obj_add(target, e->name, entry_value(e)) < 0)
			return -ENOMEM;
		if (e->seen > 1 && add_repeat(m, doc, &repeats, e) < 0)
			return -ENOMEM;
	}
	if (m->time_estimate >= 0)
		r = obj_add(doc, "time_estimate_s", lb_json_number(m->time_estimate));
	else
		r = obj_add_null(doc, "time_estimate_s");
	if (r < 0)
		return r;
	if (m->time_guard)
		r = obj_add(doc, "time_guard",
			    json_object_new_string(m->time_guard_text ? m->time_guard_text : ""));
	else
		r = obj_add_null(doc, "time_guard");
	if (r < 0)
		return r;
	if (add_count(doc, "dropped_metrics", m->dropped_metrics) < 0 ||
	    add_count(doc, "dropped_conditions", m->dropped_conditions) < 0 ||
	    add_count(doc, "long_lines_skipped", m->long_lines) < 0)
		return -ENOMEM;
	return 0;
}

struct json_object *lb_metrics_to_json(const lb_metrics *m)
{
	struct json_object *doc;

	if (!m)
		return NULL;
	doc = json_object_new_object();
	if (!doc)
		return NULL;
	if (fill_json(m, doc) < 0) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

/* Validation ---------------------------------------------------------------------------- */

typedef struct lb_validation {
	struct json_object *issues;
	size_t count;
	const char *results_name;
	const char *const *declared;
	size_t n_declared;
	bool *found;
} lb_validation;

static const char *nonfinite_kind(double v)
{
	return isnan(v) ? "nan" : "inf";
}

static const char *nonfinite_text(double v)
{
	if (isnan(v))
		return "NaN";
	return v > 0 ? "Infinity" : "-Infinity";
}

static void add_issue(lb_validation *val, const char *kind, const char *metric, const char *where,
		      const char *message)
{
	struct json_object *issue = json_object_new_object();

	if (!issue)
		return;
	if (obj_add(issue, "kind", json_object_new_string(kind)) < 0 ||
	    obj_add(issue, "metric", json_object_new_string(metric)) < 0 ||
	    obj_add(issue, "where", json_object_new_string(where)) < 0 ||
	    obj_add(issue, "message", json_object_new_string(message)) < 0 ||
	    arr_add(val->issues, issue) < 0) {
		json_object_put(issue);
		return;
	}
	val->count++;
}

static void check_stdout(lb_validation *val, const lb_metrics *m)
{
	for (size_t i = 0; i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];
		char where[LB_METRICS_LABEL_MAX + 64];
		char message[sizeof(where) + LB_METRIC_NAME_MAX + 64];

		if (e->kind != LB_METRIC_NUMBER || isfinite(e->number))
			continue;
		if (e->group)
			snprintf(where, sizeof(where), "stdout condition %s",
				 m->conditions[e->group - 1]);
		else
			snprintf(where, sizeof(where), "stdout");
		snprintf(message, sizeof(message), "%s is %s in %s", e->name,
			 nonfinite_text(e->number), where);
		add_issue(val, nonfinite_kind(e->number), e->name, where, message);
	}
}

static void mark_declared(lb_validation *val, const char *key, const char *path)
{
	for (size_t i = 0; i < val->n_declared; i++) {
		const char *d = val->declared[i];

		if (!val->found[i] && d && (strcmp(d, key) == 0 || strcmp(d, path) == 0))
			val->found[i] = true;
	}
}

static void flag_result(lb_validation *val, const char *metric, const char *path, double v,
			bool was_string)
{
	char where[LB_PATH_MAX + 64];
	char message[sizeof(where) + LB_PATH_MAX + 96];

	if (path[0])
		snprintf(where, sizeof(where), "%s at %s", val->results_name, path);
	else
		snprintf(where, sizeof(where), "%s (top level)", val->results_name);
	snprintf(message, sizeof(message), "%s is %s in %s%s", path[0] ? path : metric,
		 nonfinite_text(v), val->results_name, was_string ? " (written as a string)" : "");
	add_issue(val, nonfinite_kind(v), metric, where, message);
}

/* Appends a component to path[0..len); a path too long for the buffer is kept cut, and then
 * only matches declared names by its last key. */
static size_t path_push(char *path, size_t len, const char *key, long index)
{
	int n;

	if (key)
		n = snprintf(path + len, LB_PATH_MAX - len, "%s%s", len ? "." : "", key);
	else
		n = snprintf(path + len, LB_PATH_MAX - len, "[%ld]", index);
	if (n < 0 || (size_t)n >= LB_PATH_MAX - len)
		return LB_PATH_MAX - 1;
	return len + (size_t)n;
}

static void walk_results(lb_validation *val, struct json_object *node, const char *key, char *path,
			 size_t path_len, int depth)
{
	const char *metric = key ? key : (path[0] ? path : "(top level)");

	if (depth > LB_WALK_DEPTH_MAX)
		return;
	switch (json_object_get_type(node)) {
	case json_type_object: {
		json_object_object_foreach(node, k, child) {
			size_t n = path_push(path, path_len, k, 0);

			mark_declared(val, k, path);
			walk_results(val, child, k, path, n, depth + 1);
			path[path_len] = '\0';
		}
		break;
	}
	case json_type_array: {
		size_t n = json_object_array_length(node);

		for (size_t i = 0; i < n; i++) {
			size_t l = path_push(path, path_len, NULL, (long)i);

			walk_results(val, json_object_array_get_idx(node, i), key, path, l,
				     depth + 1);
			path[path_len] = '\0';
		}
		break;
	}
	case json_type_double: {
		double v = json_object_get_double(node);

		if (!isfinite(v))
			flag_result(val, metric, path, v, false);
		break;
	}
	case json_type_string: {
		/* json.dump(..., default=str), as the seed's template does, writes numpy's
		 * float32 NaN as the string "nan": still a NaN metric. */
		double v;

		if (lb_parse_number(json_object_get_string(node),
				    (size_t)json_object_get_string_len(node), &v) &&
		    !isfinite(v))
			flag_result(val, metric, path, v, true);
		break;
	}
	default:
		break;
	}
}

static bool in_stdout(const lb_metrics *m, const char *name)
{
	for (size_t i = 0; m && i < m->n_entries; i++)
		if (strcmp(m->entries[i].name, name) == 0)
			return true;
	return false;
}

size_t lb_metrics_validate(const lb_metrics *m, struct json_object *results,
			   const char *results_name, const char *const *declared, size_t n,
			   struct json_object *issues)
{
	LB_AUTOFREE bool *found = NULL;
	lb_validation val = {
		.issues = issues,
		.results_name = results_name ? results_name : "results.json",
		.declared = declared,
		.n_declared = declared ? n : 0,
	};

	if (!issues || !json_object_is_type(issues, json_type_array))
		return 0;
	if (val.n_declared) {
		found = calloc(val.n_declared, sizeof(*found));
		if (!found)
			return 0;
		val.found = found;
	}
	if (m)
		check_stdout(&val, m);
	if (results) {
		char path[LB_PATH_MAX] = "";

		walk_results(&val, results, NULL, path, 0, 0);
	}
	for (size_t i = 0; i < val.n_declared; i++) {
		char where[LB_PATH_MAX + 32];
		char message[LB_PATH_MAX * 2 + 256];
		const char *d = declared[i];

		if (!d || found[i] || in_stdout(m, d))
			continue;
		if (results)
			snprintf(where, sizeof(where), "stdout and %s", val.results_name);
		else
			snprintf(where, sizeof(where), "stdout");
		snprintf(message, sizeof(message),
			 "declared metric %s was not reported: no '%s: value' line on stdout%s%s%s", d,
			 d, results ? " and no such key in " : "", results ? val.results_name : "",
			 m && m->dropped_metrics ? " (some metric values were dropped: too many names)"
						 : "");
		add_issue(&val, "missing", d, where, message);
	}
	return val.count;
}
