/* The collected metrics as the JSON document labbox writes (lb_metrics_to_json). */
#include "labbox/collect.h"
#include "labbox/util.h"
#include "metrics_internal.h"
#include "text.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JSON ----------------------------------------------------------------------------------- */

/* The new container, already owned by parent, or NULL. */
static struct json_object *add_child(struct json_object *parent, const char *key,
				     struct json_object *child)
{
	return lb_obj_add(parent, key, child) < 0 ? NULL : child;
}

static struct json_object *entry_value(const lb_metric_entry *e)
{
	if (e->kind == LB_METRIC_NUMBER && e->integer == LB_INT_SIGNED)
		return json_object_new_int64(e->ival);
	if (e->kind == LB_METRIC_NUMBER && e->integer == LB_INT_UNSIGNED)
		return json_object_new_uint64((uint64_t)e->ival);
	if (e->kind == LB_METRIC_NUMBER && e->integer != LB_INT_WIDE)
		return lb_json_number(e->number);
	return json_object_new_string(e->str ? e->str : "");
}

/* A number when the text is one (an integer exactly, non-finite ones as their strings), else
 * the text. */
static struct json_object *text_value(const char *s, size_t len)
{
	double v;
	int64_t unused;

	struct json_object *j;

	if (lb_parse_integer(s, len, &unused) != LB_INT_NONE && (j = lb_json_integer(s, len)))
		return j;
	if (lb_parse_number(s, len, &v))
		return lb_json_number(v);
	return json_object_new_string_len(s, (int)len);
}

struct json_object *lb_tags_json(const char *tags)
{
	struct json_object *o = json_object_new_object();
	const char *cur = tags;
	lb_metric_tag t;

	if (!o)
		return NULL;
	while (lb_tags_next(&cur, &t)) {
		char key[LB_METRICS_TAGS_STORE_MAX + 1];
		size_t kl = t.key_len < sizeof(key) - 1 ? t.key_len : sizeof(key) - 1;

		memcpy(key, t.key, kl);
		key[kl] = '\0';
		if (lb_obj_add(o, key, json_object_new_string_len(t.value, (int)t.value_len)) < 0) {
			json_object_put(o);
			return NULL;
		}
	}
	return o;
}

static int add_count(struct json_object *obj, const char *key, size_t n)
{
	if (n == 0)
		return 0;
	return lb_obj_add(obj, key, json_object_new_int64((int64_t)n));
}

static int add_condition(const lb_metrics *m, struct json_object *obj, uint32_t group)
{
	if (group == 0)
		return lb_obj_add_null(obj, "condition");
	return lb_obj_add(obj, "condition", json_object_new_string(m->conditions[group - 1]));
}

/* The array under key in doc, created on first use, so empty ones never appear. */
static struct json_object *lazy_array(struct json_object *doc, const char *key,
				      struct json_object **arr)
{
	if (!*arr)
		*arr = add_child(doc, key, json_object_new_array());
	return *arr;
}

static int add_repeat(const lb_metrics *m, struct json_object *doc, struct json_object **repeats,
		      const lb_metric_entry *e)
{
	struct json_object *rep;

	if (!lazy_array(doc, "repeats", repeats))
		return -ENOMEM;
	rep = json_object_new_object();
	if (lb_arr_add(*repeats, rep) < 0 ||
	    lb_obj_add(rep, "metric", json_object_new_string(e->name)) < 0 ||
	    add_condition(m, rep, e->group) < 0 ||
	    lb_obj_add(rep, "seen", json_object_new_int64(e->seen)) < 0)
		return -ENOMEM;
	if (e->cls == LB_CLS_TAGGED)
		return lb_obj_add(rep, "tags", lb_tags_json(e->tags));
	if (e->cls == LB_CLS_SUMMARY)
		return lb_obj_add(rep, "summary", json_object_new_boolean(1));
	if (e->cls == LB_CLS_PAIRED)
		return lb_obj_add(rep, "paired", json_object_new_boolean(1));
	return 0;
}

static int add_tagged(const lb_metrics *m, struct json_object *arr, const lb_metric_entry *e)
{
	struct json_object *rec = json_object_new_object();

	if (lb_arr_add(arr, rec) < 0 || add_condition(m, rec, e->group) < 0 ||
	    lb_obj_add(rec, "metric", json_object_new_string(e->name)) < 0 ||
	    lb_obj_add(rec, "tags", lb_tags_json(e->tags)) < 0)
		return -ENOMEM;
	return lb_obj_add(rec, "value", entry_value(e));
}

static int add_summary(const lb_metrics *m, struct json_object *arr, const lb_metric_entry *e)
{
	struct json_object *rec = json_object_new_object();
	const char *cur = e->tags;
	lb_metric_tag t;

	if (lb_arr_add(arr, rec) < 0 || add_condition(m, rec, e->group) < 0 ||
	    lb_obj_add(rec, "metric", json_object_new_string(e->name)) < 0)
		return -ENOMEM;
	while (lb_tags_next(&cur, &t)) {
		char key[LB_METRICS_TAGS_STORE_MAX + 1];
		size_t kl = t.key_len < sizeof(key) - 1 ? t.key_len : sizeof(key) - 1;

		memcpy(key, t.key, kl);
		key[kl] = '\0';
		if (lb_obj_add(rec, key, text_value(t.value, t.value_len)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* PAIRED: {"method", "baseline", fields...}; ci95=(lo,hi) becomes ci95_low and ci95_high, as
 * AutoResearchClaw's reader names them. */
static int add_paired(struct json_object *arr, const lb_metric_entry *e)
{
	struct json_object *rec = json_object_new_object();
	const char *cur = e->tags;
	lb_metric_tag t;

	if (lb_arr_add(arr, rec) < 0)
		return -ENOMEM;
	while (lb_tags_next(&cur, &t)) {
		char key[LB_METRICS_TAGS_STORE_MAX + 1];
		size_t kl = t.key_len < sizeof(key) - 1 ? t.key_len : sizeof(key) - 1;
		const char *comma;
		int r;

		memcpy(key, t.key, kl);
		key[kl] = '\0';
		comma = t.value_len > 2 ? memchr(t.value, ',', t.value_len) : NULL;
		if (strcmp(key, "ci95") == 0 && t.value[0] == '(' && t.value[t.value_len - 1] == ')' &&
		    comma) {
			r = lb_obj_add(rec, "ci95_low",
				       text_value(t.value + 1, (size_t)(comma - t.value) - 1));
			if (r == 0)
				r = lb_obj_add(rec, "ci95_high",
					       text_value(comma + 1, (size_t)(t.value + t.value_len -
									 comma) - 2));
		} else if (strcmp(key, "method") == 0 || strcmp(key, "baseline") == 0 ||
			   strcmp(key, "regime") == 0) {
			r = lb_obj_add(rec, key, json_object_new_string_len(t.value, (int)t.value_len));
		} else {
			r = lb_obj_add(rec, key, text_value(t.value, t.value_len));
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* An annotated number: {"metric", "condition", ["tags"], "value", "text", and what the text
 * says: "ratio": "3/4" (or "position": "7/10" under a position's name), "percent": true,
 * "uncertainty": x, "remark": "best", "type": "tensor"}. The stored text
 * is read again with the parser's own value scanner, so the fields cannot disagree with it. */
static int add_annotated(const lb_metrics *m, struct json_object *arr, const lb_metric_entry *e)
{
	struct json_object *rec = json_object_new_object();
	lb_metric_value v;
	size_t len = strlen(e->text);
	int r;

	if (lb_arr_add(arr, rec) < 0 || add_condition(m, rec, e->group) < 0 ||
	    lb_obj_add(rec, "metric", json_object_new_string(e->name)) < 0)
		return -ENOMEM;
	if (e->cls == LB_CLS_TAGGED && lb_obj_add(rec, "tags", lb_tags_json(e->tags)) < 0)
		return -ENOMEM;
	if (lb_obj_add(rec, "value", entry_value(e)) < 0 ||
	    lb_obj_add(rec, "text", json_object_new_string(e->text)) < 0)
		return -ENOMEM;
	if (lb_metric_scan_value(e->text, len, 0, false, &v) != len)
		return 0; /* UTF-8 repair changed it; the text says the rest */
	r = 0;
	if (v.ratio) {
		const char *slash = memchr(e->text, '/', len);
		size_t end = slash ? (size_t)(slash - e->text) + 1 : 0;

		while (end < len && lb_metric_is_digit(e->text[end]))
			end++;
		/* "best_epoch: 7/10" is the 7th of 10, its value 7 (metrics.c position_value) */
		r = lb_obj_add(rec,
			       (e->cls == LB_CLS_PLAIN || e->cls == LB_CLS_TAGGED) &&
					       lb_metric_position_name(e->name)
				       ? "position"
				       : "ratio",
			       json_object_new_string_len(e->text, (int)end));
	}
	if (r == 0 && v.percent)
		r = lb_obj_add(rec, "percent", json_object_new_boolean(1));
	if (r == 0 && v.has_uncertainty)
		r = lb_obj_add(rec, "uncertainty", lb_json_number(v.uncertainty));
	if (r == 0 && v.remark)
		r = lb_obj_add(rec, "remark",
			       json_object_new_string_len(v.remark, (int)v.remark_len));
	if (r == 0 && v.wrapper)
		r = lb_obj_add(rec, "type",
			       json_object_new_string_len(v.wrapper, (int)v.wrapper_len));
	return r;
}

static int add_time_guard(const lb_metrics *m, struct json_object *doc)
{
	int r;

	if (!m->time_guard)
		return lb_obj_add_null(doc, "time_guard");
	r = lb_obj_add(doc, "time_guard",
		       json_object_new_string(m->time_guard_text ? m->time_guard_text : ""));
	if (r < 0)
		return r;
	if (m->time_guard_at >= 0)
		r = lb_obj_add(doc, "time_guard_at_s", lb_json_number(m->time_guard_at));
	else
		r = lb_obj_add_null(doc, "time_guard_at_s");
	if (r < 0)
		return r;
	if (m->time_guard_source)
		return lb_obj_add(doc, "time_guard_at_source",
				  json_object_new_string(m->time_guard_source));
	return lb_obj_add_null(doc, "time_guard_at_source");
}

static int fill_json(const lb_metrics *m, struct json_object *doc)
{
	struct json_object *values, *conds, *order;
	struct json_object *repeats = NULL, *tagged = NULL, *summaries = NULL;
	struct json_object *paired = NULL, *annotations = NULL;
	int r;

	values = add_child(doc, "values", json_object_new_object());
	conds = values ? add_child(doc, "conditions", json_object_new_object()) : NULL;
	order = conds ? add_child(doc, "condition_order", json_object_new_array()) : NULL;
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_conditions; i++) {
		if (!add_child(conds, m->conditions[i], json_object_new_object()) ||
		    lb_arr_add(order, json_object_new_string(m->conditions[i])) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];
		struct json_object *target = values;

		if (e->cls == LB_CLS_TAGGED) {
			if (!lazy_array(doc, "tagged", &tagged) || add_tagged(m, tagged, e) < 0)
				return -ENOMEM;
		} else if (e->cls == LB_CLS_SUMMARY) {
			if (!lazy_array(doc, "summaries", &summaries) ||
			    add_summary(m, summaries, e) < 0)
				return -ENOMEM;
		} else if (e->cls == LB_CLS_PAIRED) {
			if (!lazy_array(doc, "paired", &paired) || add_paired(paired, e) < 0)
				return -ENOMEM;
		} else {
			if (e->group > 0)
				json_object_object_get_ex(conds, m->conditions[e->group - 1],
							  &target);
			if (lb_obj_add(target, e->name, entry_value(e)) < 0)
				return -ENOMEM;
		}
		if (e->text && (!lazy_array(doc, "annotated", &annotations) ||
				add_annotated(m, annotations, e) < 0))
			return -ENOMEM;
		if (e->seen > 1 && add_repeat(m, doc, &repeats, e) < 0)
			return -ENOMEM;
	}
	if (m->time_estimate >= 0)
		r = lb_obj_add(doc, "time_estimate_s", lb_json_number(m->time_estimate));
	else
		r = lb_obj_add_null(doc, "time_estimate_s");
	if (r < 0 || (r = add_time_guard(m, doc)) < 0)
		return r;
	/* Only for a run whose values came from its last progress line, so every other document
	 * stays as it was. */
	if (m->from_progress &&
	    (lb_obj_add(doc, "source", json_object_new_string("progress")) < 0 ||
	     add_count(doc, "progress_lines", m->progress_lines) < 0))
		return -ENOMEM;
	if (add_count(doc, "dropped_metrics", m->dropped_metrics) < 0 ||
	    add_count(doc, "dropped_tagged", m->dropped_tagged) < 0 ||
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
