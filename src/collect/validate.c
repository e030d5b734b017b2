/* Validation of collected metrics: non-finite numbers, declared metrics, the seed's timing
 * checks, and conditions that report identical results (docs/decisions.md says which of these
 * make a run invalid and which are warnings). */
#include "labbox/collect.h"
#include "labbox/util.h"
#include "metrics_internal.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* lb_results_parse nests at most 24 deep; this only guards documents built elsewhere. */
#define LB_WALK_DEPTH_MAX 256
#define LB_PATH_MAX 512
/* Top-level members of a results file compared for identical results; beyond this a file is
 * not a list of conditions anyone reads by eye. */
#define LB_IDENTICAL_MEMBERS_MAX 1000
/* Conditions named in one warning's message (all of them are in its "conditions" array). */
#define LB_IDENTICAL_NAMED 5

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

/* Appends {"kind", "metric": metric|null, "where", "message"} to arr and returns it, so the
 * caller can add fields; NULL when out of memory (the record is then not added). */
static struct json_object *push_record(struct json_object *arr, const char *kind,
				       const char *metric, const char *where, const char *message)
{
	struct json_object *rec = json_object_new_object();

	if (!rec)
		return NULL;
	if (lb_obj_add(rec, "kind", json_object_new_string(kind)) < 0 ||
	    (metric ? lb_obj_add(rec, "metric", json_object_new_string(metric))
		    : lb_obj_add_null(rec, "metric")) < 0 ||
	    lb_obj_add(rec, "where", json_object_new_string(where)) < 0 ||
	    lb_obj_add(rec, "message", json_object_new_string(message)) < 0 ||
	    json_object_array_add(arr, rec) < 0) {
		json_object_put(rec);
		return NULL;
	}
	return rec;
}

static void add_issue(lb_validation *val, const char *kind, const char *metric, const char *where,
		      const char *message)
{
	if (push_record(val->issues, kind, metric, where, message))
		val->count++;
}

/* A results file that was there and not read (too large, not JSON, a link...): its issue
 * came first, from the collector; "no results.json" would not be true. */
static const char *unread_results_file(const lb_validation *val)
{
	size_t n = json_object_array_length(val->issues);
	for (size_t i = 0; i < n; i++) {
		json_object *iss = json_object_array_get_idx(val->issues, i), *k, *w;
		if (json_object_object_get_ex(iss, "kind", &k) &&
		    strcmp(json_object_get_string(k), "unreadable") == 0 &&
		    json_object_object_get_ex(iss, "where", &w) && w)
			return json_object_get_string(w);
	}
	return NULL;
}

/* "stdout", "stdout condition X", "stdout condition X seed=1" or "stdout SUMMARY condition X" */
static void entry_where(const lb_metrics *m, const lb_metric_entry *e, char *where, size_t n)
{
	const char *cond = e->group ? m->conditions[e->group - 1] : NULL;

	snprintf(where, n, "stdout%s%s%s%s%s%s",
		 e->cls == LB_CLS_SUMMARY ? " SUMMARY"
		 : e->cls == LB_CLS_PAIRED ? " PAIRED "
					   : "",
		 e->cls == LB_CLS_PAIRED ? e->name : "",
		 cond ? " condition " : "", cond ? cond : "",
		 e->cls == LB_CLS_TAGGED ? " " : "", e->cls == LB_CLS_TAGGED ? e->tags : "");
}

static void check_summary(lb_validation *val, const lb_metrics *m, const lb_metric_entry *e)
{
	char where[LB_METRICS_LABEL_MAX + 64];
	const char *cur = e->tags;
	lb_metric_tag t;

	entry_where(m, e, where, sizeof(where));
	while (lb_tags_next(&cur, &t)) {
		char message[sizeof(where) + LB_METRIC_NAME_MAX + LB_METRICS_TAGS_STORE_MAX + 64];
		double v;

		if (!lb_parse_number(t.value, t.value_len, &v) || isfinite(v))
			continue;
		snprintf(message, sizeof(message), "%s %.*s is %s in %s", e->name, (int)t.key_len,
			 t.key, nonfinite_text(v), where);
		add_issue(val, nonfinite_kind(v), e->name, where, message);
	}
}

static void check_stdout(lb_validation *val, const lb_metrics *m)
{
	for (size_t i = 0; i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];
		char where[LB_METRICS_LABEL_MAX + LB_METRICS_TAGS_STORE_MAX + 64];
		char message[sizeof(where) + LB_METRIC_NAME_MAX + 64];

		if (e->cls == LB_CLS_SUMMARY || e->cls == LB_CLS_PAIRED) {
			check_summary(val, m, e);
			continue;
		}
		if (e->kind != LB_METRIC_NUMBER || isfinite(e->number))
			continue;
		entry_where(m, e, where, sizeof(where));
		snprintf(message, sizeof(message), "%s is %s in %s", e->name,
			 nonfinite_text(e->number), where);
		add_issue(val, nonfinite_kind(e->number), e->name, where, message);
	}
}

static bool is_declared(const lb_validation *val, const char *key, const char *path)
{
	for (size_t i = 0; i < val->n_declared; i++) {
		const char *d = val->declared[i];

		if (d && (strcmp(d, key) == 0 || strcmp(d, path) == 0))
			return true;
	}
	return false;
}

/* A declared metric counts as reported where it has a value: a JSON null (pandas writes NaN
 * so, and an empty CSV cell reads so) is the metric not computed. */
static void mark_declared(lb_validation *val, const char *key, const char *path,
			  struct json_object *value)
{
	if (!value)
		return;
	for (size_t i = 0; i < val->n_declared; i++) {
		const char *d = val->declared[i];

		if (!val->found[i] && d && (strcmp(d, key) == 0 || strcmp(d, path) == 0))
			val->found[i] = true;
	}
}

static void flag_null(lb_validation *val, const char *metric, const char *path)
{
	char where[LB_PATH_MAX + 64];
	char message[sizeof(where) + LB_PATH_MAX + 96];

	snprintf(where, sizeof(where), "%s at %s", val->results_name, path);
	snprintf(message, sizeof(message), "declared metric %s is null in %s at %s: no value",
		 metric, val->results_name, path);
	add_issue(val, "null", metric, where, message);
}

/* written: how the file spelt it when that was not a JSON number ("as a string", R's NA),
 * NULL when it was one. */
static void flag_result(lb_validation *val, const char *metric, const char *path, double v,
			const char *written)
{
	char where[LB_PATH_MAX + 64];
	char message[sizeof(where) + LB_PATH_MAX + 96];

	if (path[0])
		snprintf(where, sizeof(where), "%s at %s", val->results_name, path);
	else
		snprintf(where, sizeof(where), "%s (top level)", val->results_name);
	snprintf(message, sizeof(message), "%s is %s in %s%s%s%s", path[0] ? path : metric,
		 nonfinite_text(v), val->results_name, written ? " (written " : "",
		 written ? written : "", written ? ")" : "");
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

			mark_declared(val, k, path, child);
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

		/* lb_results_read_na's NaN keeps R's spelling as its text. */
		if (!isfinite(v))
			flag_result(val, metric, path, v,
				    isnan(v) && strcmp(json_object_get_string(node), "NA") == 0
					    ? "as NA, R's and Octave's missing number"
					    : NULL);
		break;
	}
	case json_type_string: {
		/* json.dump(..., default=str), as the seed's template does, writes numpy's
		 * float32 NaN as the string "nan": still a NaN metric. */
		double v;

		if (lb_parse_number(json_object_get_string(node),
				    (size_t)json_object_get_string_len(node), &v) &&
		    !isfinite(v))
			flag_result(val, metric, path, v, "as a string");
		break;
	}
	case json_type_null:
		if (key && val->n_declared && is_declared(val, key, path))
			flag_null(val, metric, path);
		break;
	default:
		break;
	}
}

static void walk_file(lb_validation *val, const char *name, struct json_object *doc)
{
	char path[LB_PATH_MAX] = "";

	val->results_name = name;
	walk_results(val, doc, NULL, path, 0, 0);
}

/* What languages print for no value: Python's None, JSON's null, R's NULL and NA. */
static bool null_label(const lb_metric_entry *e)
{
	static const char *const words[] = { "None", "null", "NULL", "NA" };

	if (e->kind != LB_METRIC_STRING || !e->str)
		return false;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(e->str, words[i]) == 0)
			return true;
	return false;
}

/* 1: stdout has name with a value; -1: only without one ("acc: None"); 0: not at all. */
static int in_stdout(const lb_metrics *m, const char *name)
{
	int r = 0;

	for (size_t i = 0; m && i < m->n_entries; i++) {
		if (strcmp(m->entries[i].name, name) != 0)
			continue;
		if (!null_label(&m->entries[i]))
			return 1;
		r = -1;
	}
	return r;
}

/* The missing-metric issues; sources names where was looked ("results.json" or "results.json
 * and run_0/final_info.json"), NULL for stdout only. */
static void check_declared(lb_validation *val, const lb_metrics *m, const char *sources)
{
	for (size_t i = 0; i < val->n_declared; i++) {
		char where[LB_PATH_MAX + 32];
		char message[LB_PATH_MAX * 3 + 256];
		const char *d = val->declared[i];
		int printed = d ? in_stdout(m, d) : 0;

		if (!d || val->found[i] || printed > 0)
			continue;
		snprintf(where, sizeof(where), "stdout%s%s", sources ? " and " : "",
			 sources ? sources : "");
		snprintf(message, sizeof(message),
			 "declared metric %s was not reported: %s '%s: value' line on stdout%s%s%s", d,
			 printed < 0 ? "no value (None, null or NA) in its" : "no", d,
			 sources ? " and no such key with a value in " : "", sources ? sources : "",
			 m && m->dropped_metrics ? " (some metric values were dropped: too many names)"
						 : "");
		add_issue(val, "missing", d, where, message);
	}
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
	const char *name = val.results_name;

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
	if (results)
		walk_file(&val, name, results);
	check_declared(&val, m, results ? name : NULL);
	return val.count;
}

/* Timing ------------------------------------------------------------------------------------ */

bool lb_time_estimate_accurate(double estimate_s, double actual_s, bool whole_plan_ran)
{
	double tolerance;

	if (!isfinite(estimate_s) || !isfinite(actual_s) || estimate_s < 0 || actual_s < 0)
		return true;
	/* A second of slack: labbox's clock includes interpreter start-up and sandbox set-up,
	 * which the experiment's own clock cannot see, and which dwarf 20% of a short run. */
	tolerance = 0.2 * actual_s > 1.0 ? 0.2 * actual_s : 1.0;
	if (estimate_s < actual_s - tolerance)
		return false;
	return !(whole_plan_ran && estimate_s > actual_s + tolerance);
}

bool lb_time_guard_premature(double fired_at_s, double budget_s)
{
	return isfinite(fired_at_s) && isfinite(budget_s) && fired_at_s >= 0 && budget_s > 0 &&
	       fired_at_s < 0.5 * budget_s;
}

static void check_time_guard(lb_validation *val, const lb_metrics *m, double budget_s)
{
	double at = lb_metrics_time_guard_at(m);
	char message[512];
	struct json_object *rec;

	if (!lb_time_guard_premature(at, budget_s))
		return;
	snprintf(message, sizeof(message),
		 "TIME_GUARD fired at %.1fs (%s), before half of the %.1fs budget: the experiment "
		 "saved partial results with most of its time left, so its guard is wrong (the "
		 "seed's guard fires at 80%% of the budget)",
		 at, m->time_guard_source ? m->time_guard_source : "unknown", budget_s);
	rec = push_record(val->issues, "time_guard_early", "TIME_GUARD", "stdout", message);
	if (!rec)
		return;
	val->count++;
	lb_obj_add(rec, "fired_at_s", lb_json_number(at));
	lb_obj_add(rec, "budget_s", lb_json_number(budget_s));
}

static void check_time_estimate(struct json_object *warnings, const lb_metrics *m,
				const lb_metrics_run_info *info)
{
	double est = lb_metrics_time_estimate(m);
	bool whole = info->completed && !lb_metrics_time_guard_fired(m);
	char message[512];
	struct json_object *rec;

	if (est < 0 || info->wall_s < 0 || lb_time_estimate_accurate(est, info->wall_s, whole))
		return;
	if (whole)
		snprintf(message, sizeof(message),
			 "TIME_ESTIMATE said %.1fs but the run took %.1fs (%+.0f%%); the seed asks "
			 "for an estimate within 20%%",
			 est, info->wall_s, (est - info->wall_s) / info->wall_s * 100);
	else
		snprintf(message, sizeof(message),
			 "TIME_ESTIMATE said %.1fs but the run had already taken %.1fs when it "
			 "stopped short of its plan; the seed asks for an estimate within 20%%",
			 est, info->wall_s);
	rec = push_record(warnings, "time_estimate", "TIME_ESTIMATE", "stdout", message);
	if (!rec)
		return;
	lb_obj_add(rec, "estimate_s", lb_json_number(est));
	lb_obj_add(rec, "actual_s", lb_json_number(info->wall_s));
}

/* Identical conditions ------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finalizer: fingerprints are sums of these, which only stay
	 * collision-poor when each term is well mixed. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h * 0x100000001b3ULL;
}

static uint64_t hash_double(double v)
{
	uint64_t bits;

	if (v == 0)
		v = 0; /* -0.0 == 0.0 */
	if (isnan(v))
		v = NAN;
	memcpy(&bits, &v, sizeof(bits));
	return mix64(bits);
}

/* An entry that takes part in the comparison: a number (a SUMMARY whose mean or first field is
 * one). Strings are labels ("model: resnet") more often than results. */
/* Timings differ between conditions that compute the same thing: they are left out, or a
 * condition that is never applied would hide behind its fit_seconds. */
static bool entry_counts(const lb_metric_entry *e)
{
	return e->group > 0 && e->kind == LB_METRIC_NUMBER && !lb_metric_is_timing(e->name);
}

static uint64_t entry_fingerprint(const lb_metric_entry *e)
{
	uint64_t h = hash_str(0xcbf29ce484222325ULL + e->cls, e->name);

	if (e->cls == LB_CLS_TAGGED)
		h = hash_str(h, e->tags);
	if (e->cls == LB_CLS_SUMMARY)
		return mix64(hash_str(h, e->tags));
	return mix64(h ^ hash_double(e->number));
}

static bool same_value(const lb_metric_entry *a, const lb_metric_entry *b)
{
	if (a->cls == LB_CLS_SUMMARY)
		return strcmp(a->tags, b->tags) == 0;
	/* Integers as the integers printed: 2^60+1 and 2^60+2 are one double. An integer and
	 * a float compare as numbers (5 and 5.0 alike), as lb_metric_values_equal does. Two
	 * forms differ in value: each holds what the one before it cannot. */
	if (a->integer != LB_INT_NONE && b->integer != LB_INT_NONE) {
		if (a->integer != b->integer)
			return false;
		return a->integer == LB_INT_WIDE ? strcmp(a->str, b->str) == 0 : a->ival == b->ival;
	}
	return a->number == b->number || (isnan(a->number) && isnan(b->number));
}

/* Whether groups ga and gb hold the same numbers; their counts are already known equal. */
static bool groups_equal(const lb_metrics *m, uint32_t ga, uint32_t gb)
{
	for (size_t i = 0; i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];
		long j;

		if (e->group != ga || !entry_counts(e))
			continue;
		j = lb_metrics_find(m, gb, e->cls, e->name, e->tags);
		if (j < 0 || !entry_counts(&m->entries[j]) || !same_value(e, &m->entries[j]))
			return false;
	}
	return true;
}

typedef struct fingerprint {
	uint64_t hash;
	size_t count;
	size_t index; /* group - 1, or member position in a file */
} fingerprint;

static int fp_cmp(const void *pa, const void *pb)
{
	const fingerprint *a = pa, *b = pb;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

typedef bool (*same_fn)(const void *ctx, size_t a, size_t b);

/* head[i] = the smallest index whose results equal i's (i itself when none). fps must be
 * sorted; candidates are runs of equal (hash, count). */
static void cluster(fingerprint *fps, size_t n, same_fn same, const void *ctx, size_t *head)
{
	for (size_t s = 0; s < n;) {
		size_t e = s + 1;

		while (e < n && fps[e].hash == fps[s].hash && fps[e].count == fps[s].count)
			e++;
		for (size_t a = s; a < e; a++) {
			if (head[fps[a].index] != fps[a].index)
				continue; /* already in an earlier cluster */
			for (size_t b = a + 1; b < e; b++)
				if (head[fps[b].index] == fps[b].index && same(ctx, fps[a].index, fps[b].index))
					head[fps[b].index] = fps[a].index;
		}
		s = e;
	}
}

typedef struct identical_ctx {
	struct json_object *warnings;
	lb_buf reported; /* "\x1e"-separated "\x1f"-joined name lists already warned about */
} identical_ctx;

static bool already_reported(const lb_buf *reported, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = reported->data; p && (p = strchr(p, '\x1e')); p++)
		if (strncmp(p + 1, key, kl) == 0 && (p[1 + kl] == '\x1e' || p[1 + kl] == '\0'))
			return true;
	return false;
}

/* One warning for the cluster of `first` (names[i] for members i with head[i] == first). */
static void warn_cluster(identical_ctx *ic, const char *where, bool from_file, const char *const *names,
			 const size_t *head, size_t n, size_t first, size_t metrics)
{
	LB_AUTOFREE char *key = NULL;
	lb_buf list = { 0 }, keyb = { 0 };
	struct json_object *arr = json_object_new_array(), *rec;
	size_t members = 0;
	char message[2048];

	if (!arr)
		return;
	for (size_t i = first; i < n; i++) {
		if (head[i] != first)
			continue;
		if (lb_arr_add(arr, json_object_new_string(names[i])) < 0)
			goto out;
		lb_buf_printf(&keyb, "%s\x1f", names[i]);
		if (members < LB_IDENTICAL_NAMED)
			lb_buf_printf(&list, "%s%s", members ? ", " : "", names[i]);
		members++;
	}
	if (members > LB_IDENTICAL_NAMED)
		lb_buf_printf(&list, " and %zu more", members - LB_IDENTICAL_NAMED);
	key = keyb.data ? lb_steal_ptr(&keyb.data) : strdup("");
	/* The seed's template prints each condition's metrics and writes them to results.json
	 * too: one warning for both. */
	if (!key || already_reported(&ic->reported, key))
		goto out;
	lb_buf_printf(&ic->reported, "\x1e%s", key);
	if (from_file)
		snprintf(message, sizeof(message),
			 "%zu entries of %s hold identical results (%s): check that each condition "
			 "really changes the experiment",
			 members, where, list.data ? list.data : "");
	else
		snprintf(message, sizeof(message),
			 "%zu conditions report identical results (%zu metric%s each: %s): check that "
			 "each condition really changes the experiment",
			 members, metrics, metrics == 1 ? "" : "s", list.data ? list.data : "");
	rec = push_record(ic->warnings, "identical_conditions", NULL, where, message);
	if (rec && lb_obj_add(rec, "conditions", arr) == 0)
		arr = NULL;
out:
	json_object_put(arr);
	lb_buf_free(&list);
	lb_buf_free(&keyb);
}

static bool stdout_same(const void *ctx, size_t a, size_t b)
{
	return groups_equal(ctx, (uint32_t)a + 1, (uint32_t)b + 1);
}

static void identical_stdout(identical_ctx *ic, const lb_metrics *m)
{
	LB_AUTOFREE fingerprint *fps = NULL;
	LB_AUTOFREE fingerprint *by_group = NULL;
	LB_AUTOFREE size_t *head = NULL;
	size_t n = 0, g = m->n_conditions;

	if (g < 2)
		return;
	by_group = calloc(g, sizeof(*by_group));
	fps = calloc(g, sizeof(*fps));
	head = calloc(g, sizeof(*head));
	if (!by_group || !fps || !head)
		return;
	for (size_t i = 0; i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];

		if (!entry_counts(e) || e->group > g)
			continue;
		by_group[e->group - 1].hash += entry_fingerprint(e);
		by_group[e->group - 1].count++;
	}
	for (size_t i = 0; i < g; i++) {
		head[i] = i;
		if (by_group[i].count == 0)
			continue;
		fps[n] = by_group[i];
		fps[n++].index = i;
	}
	qsort(fps, n, sizeof(*fps), fp_cmp);
	cluster(fps, n, stdout_same, m, head);
	for (size_t i = 0; i < g; i++) {
		bool has_more = false;

		if (head[i] != i)
			continue;
		for (size_t j = i + 1; j < g && !has_more; j++)
			has_more = head[j] == i;
		if (has_more)
			warn_cluster(ic, "stdout", false, (const char *const *)m->conditions, head, g,
				     i, by_group[i].count);
	}
}

/* Order-independent for objects, as json_object_equal is; counts numbers into *numbers. */
static uint64_t json_fingerprint(struct json_object *o, int depth, size_t *numbers)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL * (uint64_t)(json_object_get_type(o) + 1);

	if (depth > LB_WALK_DEPTH_MAX)
		return h;
	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, k, child)
			h += mix64(hash_str(0, k) ^ json_fingerprint(child, depth + 1, numbers));
		return mix64(h);
	}
	case json_type_array: {
		size_t n = json_object_array_length(o);

		for (size_t i = 0; i < n; i++)
			h = mix64(h ^ json_fingerprint(json_object_array_get_idx(o, i), depth + 1,
						       numbers));
		return h;
	}
	case json_type_double:
		(*numbers)++;
		return mix64(h ^ hash_double(json_object_get_double(o)));
	case json_type_int:
		(*numbers)++;
		return mix64(h ^ (uint64_t)json_object_get_int64(o));
	case json_type_string:
		return mix64(hash_str(h, json_object_get_string(o)));
	case json_type_boolean:
		return mix64(h ^ (uint64_t)json_object_get_boolean(o));
	default:
		return h;
	}
}

typedef struct file_members {
	struct json_object **vals;
} file_members;

/* A condition's members but its timings (see entry_counts). */
static uint64_t condition_fingerprint(struct json_object *o, size_t *numbers)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL * (uint64_t)(json_type_object + 1);

	json_object_object_foreach(o, k, child) {
		if (!lb_metric_is_timing(k))
			h += mix64(hash_str(0, k) ^ json_fingerprint(child, 1, numbers));
	}
	return mix64(h);
}

static bool condition_members_in(struct json_object *a, struct json_object *b)
{
	json_object_object_foreach(a, k, va) {
		struct json_object *vb;

		if (lb_metric_is_timing(k))
			continue;
		if (!json_object_object_get_ex(b, k, &vb) || json_object_equal(va, vb) != 1)
			return false;
	}
	return true;
}

static bool file_same(const void *ctx, size_t a, size_t b)
{
	const file_members *fm = ctx;

	return condition_members_in(fm->vals[a], fm->vals[b]) &&
	       condition_members_in(fm->vals[b], fm->vals[a]);
}

/* Members of a file's top-level object that are objects holding numbers are the conditions
 * of the seed's results.json ({cond: {metric: v}}) and the datasets of final_info.json. */
static void identical_file(identical_ctx *ic, const char *name, struct json_object *doc)
{
	LB_AUTOFREE fingerprint *fps = NULL;
	LB_AUTOFREE size_t *head = NULL;
	LB_AUTOFREE const char **names = NULL;
	LB_AUTOFREE struct json_object **vals = NULL;
	size_t n = 0, cap;
	file_members fm;

	if (!json_object_is_type(doc, json_type_object))
		return;
	cap = (size_t)json_object_object_length(doc);
	if (cap > LB_IDENTICAL_MEMBERS_MAX)
		cap = LB_IDENTICAL_MEMBERS_MAX;
	if (cap < 2)
		return;
	fps = calloc(cap, sizeof(*fps));
	head = calloc(cap, sizeof(*head));
	names = calloc(cap, sizeof(*names));
	vals = calloc(cap, sizeof(*vals));
	if (!fps || !head || !names || !vals)
		return;
	json_object_object_foreach(doc, k, child) {
		size_t numbers = 0;
		uint64_t h;

		if (n >= cap)
			break;
		if (!json_object_is_type(child, json_type_object))
			continue;
		h = condition_fingerprint(child, &numbers);
		if (numbers == 0)
			continue;
		names[n] = k;
		vals[n] = child;
		head[n] = n;
		fps[n] = (fingerprint){ .hash = h, .count = numbers, .index = n };
		n++;
	}
	qsort(fps, n, sizeof(*fps), fp_cmp);
	fm.vals = vals;
	cluster(fps, n, file_same, &fm, head);
	for (size_t i = 0; i < n; i++) {
		bool has_more = false;

		if (head[i] != i)
			continue;
		for (size_t j = i + 1; j < n && !has_more; j++)
			has_more = head[j] == i;
		if (has_more)
			warn_cluster(ic, name, true, names, head, n, i, 0);
	}
}

/* The whole run ------------------------------------------------------------------------------ */

static void warn_dropped_tagged(struct json_object *warnings, const lb_metrics *m)
{
	char message[256];

	if (!m->dropped_tagged)
		return;
	snprintf(message, sizeof(message),
		 "%zu tagged metric values were not kept: labbox keeps at most %d distinct "
		 "condition=... series",
		 m->dropped_tagged, LB_METRICS_MAX_TAGGED);
	push_record(warnings, "dropped_tagged", NULL, "stdout", message);
}

/* Whether a document holds any value: a number, string or boolean at any depth (an empty
 * results.json or one of empty lists reports nothing). */
static bool holds_value(struct json_object *doc, int depth)
{
	if (!doc || depth > LB_WALK_DEPTH_MAX)
		return false;
	switch (json_object_get_type(doc)) {
	case json_type_object: {
		json_object_object_foreach(doc, k, v) {
			(void)k;
			if (holds_value(v, depth + 1))
				return true;
		}
		return false;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(doc); i++)
			if (holds_value(json_object_array_get_idx(doc, i), depth + 1))
				return true;
		return false;
	case json_type_string: {
		/* {"model": "resnet"} describes a run; it reports no result. A number written as
		 * a string is one: the seed's json.dump(..., default=str) writes numpy's float32
		 * so ("0.9312"), as the NaN check above already reads it. */
		double x;

		return lb_parse_number(json_object_get_string(doc),
				       (size_t)json_object_get_string_len(doc), &x);
	}
	case json_type_null:
		return false;
	default:
		return true;
	}
}

bool lb_results_hold_value(struct json_object *files)
{
	if (!files || !json_object_is_type(files, json_type_object))
		return false;
	json_object_object_foreach(files, name, doc) {
		(void)name;
		if (holds_value(doc, 0))
			return true;
	}
	return false;
}

/* A completed run whose metrics are its last epoch's progress line: valid (as Keras's epoch
 * lines are), but the reader is told where the numbers came from and how to print a result. */
static void warn_from_progress(struct json_object *warnings, const lb_metrics *m,
			       const lb_metrics_run_info *info)
{
	char message[512];

	if (!m->from_progress || !info->completed)
		return;
	snprintf(message, sizeof(message),
		 "the run printed no final metrics: its values are those of its last progress line "
		 "(`%s`, the last of %zu)%s; print the final metrics once at the end, as "
		 "'name: value' lines without the epoch counter, to report them as its result",
		 m->progress_example, m->progress_lines,
		 m->startup_entries ? ", beside those printed before its first progress line" : "");
	push_record(warnings, "from_progress", NULL, "stdout", message);
}

/* A completed run whose only metrics came before its step lines: the start-up facts stand
 * (nothing says they are not results), but the numbers of the step lines, often its
 * evaluation, were not collected, and a run that looks complete must say so. */
static void warn_progress_ignored(struct json_object *warnings, const lb_metrics *m)
{
	char message[768], names[256] = "", example[LB_METRIC_NAME_MAX + 48] = "val_loss: 0.5";
	LB_AUTOFREE lb_metric_line *ml = malloc(sizeof(*ml));
	size_t o = 0;

	if (!m->progress_ignored)
		return;
	for (size_t i = 0; i < m->n_entries && i < 3 && o < sizeof(names); i++)
		o += (size_t)snprintf(names + o, sizeof(names) - o, "%s`%s`", i ? ", " : "",
				      m->entries[i].name);
	if (ml && lb_metric_progress_parse(m->progress_last, m->progress_last_len, ml) &&
	    ml->values[ml->n_values - 1].str_len < 40)
		snprintf(example, sizeof(example), "%s: %.*s", ml->values[ml->n_values - 1].name,
			 (int)ml->values[ml->n_values - 1].str_len, ml->values[ml->n_values - 1].str);
	snprintf(message, sizeof(message),
		 "%zu progress line%s like `%s` came after the run's last metric line and %s not "
		 "collected (a step's line is a per-step report, not a completed run's result): "
		 "its metrics are only %s%s, printed before them; print the final metrics once "
		 "at the end, as 'name: value' lines without the step counter (`%s`)",
		 m->progress_lines, m->progress_lines == 1 ? "" : "s", m->progress_example,
		 m->progress_lines == 1 ? "was" : "were", names, m->n_entries > 3 ? "..." : "",
		 example);
	push_record(warnings, "progress_ignored", NULL, "stdout", message);
}

/* A run whose metrics are all settings while lines that no reading took hold a result's name
 * and a number (llm.c: `total desired batch size: 128` read, `val loss 6.17` not): it stays
 * valid (nothing says the settings are not what it reports), but it is told which lines were
 * not read and how to print them, as progress_ignored and labels_only tell theirs. */
static void warn_results_unread(struct json_object *warnings, const lb_metrics *m,
				const lb_metrics_run_info *info)
{
	char message[1024], names[256] = "";
	size_t o = 0, shown = 0;

	/* reported_result: a value that is no setting was read (a fraction, a SUMMARY, a name
	 * that holds a result's word), so the run reported what it reports. */
	if (!m->result_unread_lines || !m->reported_number || m->reported_result ||
	    m->from_progress || info->none_expected || (info->declared && info->n_declared) ||
	    lb_results_hold_value(info->files))
		return;
	for (size_t i = 0; i < m->n_entries && shown < 3 && o < sizeof(names); i++, shown++)
		o += (size_t)snprintf(names + o, sizeof(names) - o, "%s`%s`", i ? ", " : "",
				      m->entries[i].name);
	snprintf(message, sizeof(message),
		 "%zu line%s on stdout like `%s` hold%s a result's name and a number without the "
		 "':' labbox reads a metric by, and %s not collected: the run's metrics are only "
		 "%s%s, labels and counts a configuration prints; print the final metrics as "
		 "'name: value' lines (`%s`) or write them to results.json",
		 m->result_unread_lines, m->result_unread_lines == 1 ? "" : "s",
		 m->result_unread_example, m->result_unread_lines == 1 ? "s" : "",
		 m->result_unread_lines == 1 ? "was" : "were", names,
		 m->n_entries > shown ? ", ..." : "", m->result_unread_fix);
	push_record(warnings, "results_unread", NULL, "stdout", message);
}

/* no_metrics that quotes the first of n lines that held the run's results unread: "LEAD: N
 * lines on stdout like `EXAMPLE` VERB(s)WHAT (`FIX`)THEN". */
static void issue_quoting(lb_validation *val, const char *lead, size_t n, const char *example,
			  const char *what, const char *verb, const char *fix, const char *then)
{
	char message[1200];

	snprintf(message, sizeof(message), "%s: %zu line%s on stdout like `%s` %s%s%s (`%s`)%s",
		 lead, n, n == 1 ? "" : "s", example, verb, n == 1 ? "s" : "", what, fix, then);
	add_issue(val, "no_metrics", NULL, "stdout and results files", message);
}

/* A run that exits 0 having reported nothing has no result to trust: its metrics went
 * somewhere labbox does not read, or were never printed (docs/decisions.md). */
/* The experiment wrote its results where it was told to, outside exp/: the fact that explains
 * why nothing was reported, and a remedy that keeps the code as it is. */
static void issue_out_dir_outside(lb_validation *val, const char *dir)
{
	static const char *const private_dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };
	char message[1400];
	bool private_dir = false;

	for (size_t i = 0; i < sizeof(private_dirs) / sizeof(*private_dirs); i++) {
		size_t n = strlen(private_dirs[i]);

		if (strncmp(dir, private_dirs[i], n) == 0 && (dir[n] == '/' || dir[n] == '\0'))
			private_dir = true;
	}
	snprintf(message, sizeof(message),
		 "the run completed but reported no metric: its output directory `%.300s` (its "
		 "--output_dir or --out_dir, given or the argparse default) is outside the "
		 "experiment directory, %s, so the results.json, final_info.json or results.csv it "
		 "may have written there could not be collected; pass a relative output directory "
		 "(e.g. --output_dir run_0, which labbox reads from exp/), or keep them on the host "
		 "with -v HOSTDIR:%.300s:rw (labbox reads results files only in exp/)",
		 dir,
		 private_dir ? "in the sandbox's private temporary directory, which is discarded "
			       "with the sandbox at the end of the run"
			     : "where labbox reads no results files",
		 dir);
	add_issue(val, "no_metrics", NULL, "stdout and results files", message);
}

/* Whether the run's values hold a result: a number, or a label the experiment declared. A
 * label alone (`Using device: cpu`, `model: resnet18`) says what ran, not what came of it. */
static bool reported_result(const lb_validation *val, const lb_metrics *m)
{
	for (size_t i = 0; i < val->n_declared; i++)
		if (val->found[i] || (val->declared[i] && in_stdout(m, val->declared[i]) > 0))
			return true;
	return m && m->reported_number;
}

/* How a no_metrics message begins: that nothing was reported, or that only labels were, named
 * (they stay recorded, as context). */
static void reported_lead(char *lead, size_t cap, const lb_metrics *m)
{
	size_t o = 0, n = 0;

	for (size_t i = 0; m && i < m->n_entries; i++) {
		const lb_metric_entry *e = &m->entries[i];

		if (e->kind != LB_METRIC_STRING || e->cls != LB_CLS_PLAIN || !e->str)
			continue;
		if (n++ < 2 && o < cap)
			o += (size_t)snprintf(lead + o, cap - o, "%s`%s: %.40s`",
					      n == 1 ? "the run completed but reported only labels, no "
						       "number ("
						     : ", ",
					      e->name, e->str);
	}
	if (n == 0 || o >= cap) {
		snprintf(lead, cap, "the run completed but reported no metric");
		return;
	}
	snprintf(lead + o, cap - o, "%s): a label says what ran, not its result, and was kept",
		 n > 2 ? ", ..." : "");
}

/* The no_metrics issue when no near miss of another kind explains it: numbers printed in a
 * shape labbox does not read, named, or nothing at all. */
static void issue_unread_or_nothing(lb_validation *val, const lb_metrics *m, const char *lead)
{
	if (m && m->unread_metric_lines > 0) {
		char message[1200];

		/* The numbers were printed in a shape labbox does not read: name the line, so that
		 * "no 'name: value' line" never denies what is in the log. */
		snprintf(message, sizeof(message),
			 "%s: %zu line%s on stdout like `%s` hold%s numbers in a shape labbox does "
			 "not read as metrics (`key=value` pairs are a config's or a step's, and a "
			 "JSON object with a step counter is a per-step report); print the final "
			 "metrics as 'name: value' lines (`test_loss: 0.25`) or write them to "
			 "results.json, or say `metrics: none` in labbox.yaml if the experiment "
			 "reports none",
			 lead, m->unread_metric_lines, m->unread_metric_lines == 1 ? "" : "s",
			 m->unread_metric_example, m->unread_metric_lines == 1 ? "s" : "");
		add_issue(val, "no_metrics", NULL, "stdout and results files", message);
		return;
	}
	/* Lines that hold the run's results in a shape that is not read: quoted, so that "no
	 * 'name: value' line" never hides that the log holds them. */
	if (m && m->result_unread_lines > 0) {
		/* llm.c's `val loss 6.17` */
		issue_quoting(val, lead, m->result_unread_lines, m->result_unread_example,
			      " a result's name and a number without the ':' labbox reads a metric "
			      "by (a 'name value' line is also how prose and step logs print "
			      "numbers, so it is not read); print the final metrics as 'name: value' "
			      "lines", "hold", m->result_unread_fix,
			      " or write them to results.json, or say `metrics: none` in labbox.yaml "
			      "if the experiment reports none");
		return;
	}
	if (m && m->result_counted_lines > 0) {
		/* `Test accuracy (seed 3): 0.66` */
		issue_quoting(val, lead, m->result_counted_lines, m->result_counted_example,
			      " a result with a count in the name (a seed, a fold, an epoch: how a "
			      "loop enumerates what it prints, so labbox does not read it as a "
			      "metric's name); print the final metrics once under a plain name",
			      "name", m->result_counted_fix,
			      " or write them to results.json, and run seeds as a sweep (labbox "
			      "sweep --seeds) so each has a run of its own");
		return;
	}
	{
		char message[1200];
		const char *unread = unread_results_file(val);

		if (unread)
			snprintf(message, sizeof(message),
				 "%s: no 'name: value' line on stdout, and no results file labbox "
				 "read holds a number: %.200s was not read (its own issue says why); "
				 "print the metrics, or make the file readable",
				 lead, unread);
		else
			snprintf(message, sizeof(message),
				 "%s: no 'name: value' line on stdout and no results.json, "
				 "final_info.json or results.csv with a number; print the metrics, or "
				 "say `metrics: none` in labbox.yaml if the experiment reports none",
				 lead);
		add_issue(val, "no_metrics", NULL, "stdout and results files", message);
	}
}

static void check_reported(lb_validation *val, const lb_metrics *m, const lb_metrics_run_info *info)
{
	char lead[320];

	if (!info->completed || info->none_expected || reported_result(val, m))
		return;
	reported_lead(lead, sizeof(lead), m);
	if (lb_results_hold_value(info->files))
		return;
	if (info->out_dir_outside && info->out_dir_outside[0] == '/') {
		issue_out_dir_outside(val, info->out_dir_outside);
		return;
	}
	if (m && m->progress_lines > 0) {
		char message[1200], example[LB_METRIC_NAME_MAX + 48] = "val_acc: 0.8";
		LB_AUTOFREE lb_metric_line *ml = malloc(sizeof(*ml));

		/* The fix in the run's own words: the last progress line's first pair. */
		if (ml && lb_metric_progress_parse(m->progress_last, m->progress_last_len, ml) &&
		    ml->values[0].str_len < 40)
			snprintf(example, sizeof(example), "%s: %.*s", ml->values[0].name,
				 (int)ml->values[0].str_len, ml->values[0].str);

		/* The run did print numbers, every one on a line with an epoch or step counter:
		 * say that they were read, and why they are not its result. */
		snprintf(message, sizeof(message),
			 "%s: %zu progress line%s like `%s` "
			 "%s read as progress (a per-step report), not as the run's result; print "
			 "the final metrics once at the end, as 'name: value' lines without the "
			 "step counter (`%s`), or say `metrics: none` in labbox.yaml if the "
			 "experiment reports none",
			 lead, m->progress_lines, m->progress_lines == 1 ? "" : "s", m->progress_example,
			 m->progress_lines == 1 ? "was" : "were", example);
		add_issue(val, "no_metrics", NULL, "stdout and results files", message);
		return;
	}
	if (m && m->log_metric_lines > 0) {
		char message[1200];
		/* The advice never asks for what the code already does: a line logged at INFO
		 * needs another format, one at another level needs logging.info. */
		const char *why =
			m->log_metric_example_kind == LB_LOG_LIKE_LEVEL
				? "their level is not INFO (labbox reads logging's INFO lines only: a "
				  "warning's or an error's text is not a result); log the metrics with "
				  "logging.info or print them as 'name: value' lines"
			: m->log_metric_example_kind == LB_LOG_LIKE_MESSAGE
				? "their prefix is read, but the message is not a 'name: value' line; "
				  "log each result as a message of its own, "
				  "`log.info(f\"accuracy: {acc}\")`, or print them as 'name: value' lines"
				: "labbox reads a logged INFO line when its level stands with a "
				  "timestamp, a logger's name (then `:`, `-` or `|`) or in brackets, "
				  "not alone as libraries print their own text; give the logging format "
				  "one (`%(asctime)s [%(levelname)s] %(message)s`, "
				  "`%(levelname)s:%(name)s:%(message)s`) or print the metrics as "
				  "'name: value' lines";

		/* Its numbers were in the output, in log lines labbox does not read: say which,
		 * and how to print them, rather than only that nothing was found. */
		snprintf(message, sizeof(message),
			 "%s: %zu log line%s like `%s` hold "
			 "metric-like text that labbox does not read: %s, or say `metrics: none` in "
			 "labbox.yaml if the experiment reports none",
			 lead, m->log_metric_lines, m->log_metric_lines == 1 ? "" : "s",
			 m->log_metric_example, why);
		add_issue(val, "no_metrics", NULL, "stdout and results files", message);
		return;
	}
	if (m && m->stderr_metric_lines > 0) {
		char message[1200];

		/* The numbers were printed, to the stream labbox does not read metrics from. */
		snprintf(message, sizeof(message),
			 "%s: %zu line%s on stderr like `%s` "
			 "read as metrics, but labbox reads metrics from stdout (stderr is where "
			 "libraries and warnings write); print them to stdout, or say `metrics: none` "
			 "in labbox.yaml if the experiment reports none",
			 lead, m->stderr_metric_lines, m->stderr_metric_lines == 1 ? "" : "s",
			 m->stderr_metric_example);
		add_issue(val, "no_metrics", NULL, "stdout and results files", message);
		return;
	}
	issue_unread_or_nothing(val, m, lead);
}

static void issue_dropped(lb_validation *val, const lb_metrics *m)
{
	char message[256];

	if (!m->dropped_metrics)
		return;
	/* Metrics past the collector's caps are lost; that is never silent. */
	snprintf(message, sizeof(message),
		 "too many distinct metrics or conditions: %zu values were dropped (labbox keeps at "
		 "most %d metric names, %d SUMMARY lines and %d conditions)",
		 m->dropped_metrics, LB_METRICS_MAX_ENTRIES, LB_METRICS_MAX_SUMMARIES,
		 LB_METRICS_MAX_CONDITIONS);
	add_issue(val, "dropped", NULL, "stdout", message);
}

/* A run that reported labels and no number (`Using device: cpu`; a probe's `file: True`)
 * did report something, and a label may be the result (`converged: True`, `winner: B`): what
 * check_reported said of it is a warning, labels_only, which names what was read and what was
 * not, rather than a failure. A run that reported nothing at all stays no_metrics. */
static void labels_are_a_warning(lb_validation *val, const lb_metrics *m, size_t before,
				 struct json_object *warnings)
{
	bool label = false;
	for (size_t i = 0; m && i < m->n_entries && !label; i++)
		label = m->entries[i].kind == LB_METRIC_STRING && m->entries[i].cls == LB_CLS_PLAIN;
	size_t now = json_object_array_length(val->issues);
	if (!label || !warnings || now != before + 1)
		return;
	json_object *issue = json_object_get(json_object_array_get_idx(val->issues, before));
	json_object *kind = NULL;
	if (json_object_object_get_ex(issue, "kind", &kind) &&
	    strcmp(json_object_get_string(kind), "no_metrics") == 0) {
		json_object_array_del_idx(val->issues, before, 1);
		val->count--;
		json_object_object_add(issue, "kind", json_object_new_string("labels_only"));
		json_object_array_add(warnings, json_object_get(issue));
	}
	json_object_put(issue);
}

size_t lb_metrics_validate_run(const lb_metrics *m, const lb_metrics_run_info *info,
			       struct json_object *issues, struct json_object *warnings)
{
	LB_AUTOFREE bool *found = NULL;
	lb_validation val = { .issues = issues };
	identical_ctx ic = { .warnings = warnings };
	lb_buf sources = { 0 };
	size_t nfiles = 0, i = 0;

	if (!info || !issues || !json_object_is_type(issues, json_type_array))
		return 0;
	if (warnings && !json_object_is_type(warnings, json_type_array))
		warnings = ic.warnings = NULL;
	if (info->files && !json_object_is_type(info->files, json_type_object))
		return 0;
	val.declared = info->declared;
	val.n_declared = info->declared ? info->n_declared : 0;
	if (val.n_declared) {
		found = calloc(val.n_declared, sizeof(*found));
		if (!found)
			return 0;
		val.found = found;
	}
	if (m)
		check_stdout(&val, m);
	if (info->files) {
		nfiles = (size_t)json_object_object_length(info->files);
		json_object_object_foreach(info->files, name, doc) {
			walk_file(&val, name, doc);
			lb_buf_printf(&sources, "%s%s", i == 0 ? "" : i + 1 == nfiles ? " and " : ", ",
				      name);
			i++;
		}
	}
	if (m)
		issue_dropped(&val, m);
	check_declared(&val, m, sources.data);
	size_t before = json_object_array_length(issues);
	check_reported(&val, m, info);
	labels_are_a_warning(&val, m, before, warnings);
	if (m && m->time_guard)
		check_time_guard(&val, m, info->budget_s);
	lb_buf_free(&sources);
	if (!warnings)
		return val.count;
	if (m) {
		check_time_estimate(warnings, m, info);
		identical_stdout(&ic, m);
	}
	if (info->files) {
		json_object_object_foreach(info->files, name, doc)
			identical_file(&ic, name, doc);
	}
	if (m) {
		warn_dropped_tagged(warnings, m);
		warn_from_progress(warnings, m, info);
		warn_progress_ignored(warnings, m);
		warn_results_unread(warnings, m, info);
	}
	lb_buf_free(&ic.reported);
	return val.count;
}

/* The words of a metric name, split at '_', '-', spaces and a lower-to-upper case change
 * (trainTime); at most max, the rest dropped. */
typedef struct timing_word {
	const char *s;
	size_t n;
} timing_word;

static size_t timing_words(const char *name, timing_word *w, size_t max)
{
	size_t n = 0;
	const char *p = name;

	while (*p && n < max) {
		while (*p == '_' || *p == '-' || *p == ' ')
			p++;
		if (!*p)
			break;
		const char *q = p + 1;
		while (*q && *q != '_' && *q != '-' && *q != ' ' &&
		       !(islower((unsigned char)q[-1]) && isupper((unsigned char)q[0])))
			q++;
		w[n].s = p;
		w[n].n = (size_t)(q - p);
		n++;
		p = q;
	}
	return n;
}

static bool timing_word_in(const timing_word *w, const char *const *set)
{
	for (size_t i = 0; set[i]; i++)
		if (strlen(set[i]) == w->n && strncasecmp(w->s, set[i], w->n) == 0)
			return true;
	return false;
}

/* Whether the word before a unit's abbreviation (w[u]) makes the name a duration: a measure
 * of time (epoch_time_s, latency_ms), or a step of the work that took it (step_ms, fit_s,
 * eval_secs, tokens_per_s). Aggregates between them are skipped (step_time_mean_ms). Any
 * other word (AP, acc, loss) makes the abbreviation a qualifier of a result: when in doubt
 * the value is compared, as hiding a difference is the worse error. */
static bool unit_of_time(const timing_word *w, size_t u)
{
	static const char *const aggregates[] = {"mean", "avg", "average", "median", "std",
						 "stdev", "max", "min", "total", "sum", NULL};
	static const char *const before[] = {
		"time",	     "times",	   "timing",	"timings",   "elapsed",	  "duration",
		"runtime",   "wall",	   "walltime",	"wallclock", "clock",	  "latency",
		"taken",     "spent",	   "per",	"epoch",     "step",	  "iter",
		"iteration", "batch",	   "train",	"training",  "fit",	  "eval",
		"evaluation", "val",	   "validation", "test",     "inference", "infer",
		"predict",   "forward",	   "fwd",	"backward",  "bwd",	  "load",
		"loading",   "compile",	   "warmup",	"setup",     "init",	  "startup",
		"run",	     "save",	   "checkpoint", "ckpt",     "wait",	  "sleep",
		"sync",	     "cpu",	   "gpu",	"rollout",   "generation", "decode",
		"preprocess", "preprocessing", "io",	"job",	     "update",	  "solve",
		NULL,
	};
	size_t j = u;
	while (j > 0 && timing_word_in(&w[j - 1], aggregates))
		j--;
	return j == 0 || timing_word_in(&w[j - 1], before);
}

bool lb_metric_is_timing(const char *name)
{
	/* A name that ends in one of these measures a duration or a rate per time as a whole
	 * (train_time, fit_seconds, samples_per_sec, step_ms, throughput). The same word as a
	 * qualifier of another quantity (time_series_mse, second_moment_error, timestep_reward)
	 * does not make it one: that is a result, and a rerun must compare it. */
	static const char *const last_words[] = {
		"time",	    "times",   "timing",   "timings",	"seconds",
		"minutes",  "hours",   "duration", "elapsed", "runtime",   "wallclock", "walltime",
		"wall",	    "latency", "throughput", "fps",	NULL,
	};
	/* A unit's abbreviation also ends names of results (mmdetection's bbox_mAP_s is AP on
	 * small objects, acc_s a student's accuracy): a timing only alone (samples/s) or after
	 * a word that measures time or names what took it (unit_of_time). */
	static const char *const units[] = {"s", "ms", "us", "ns", "sec", "secs", "mins", "hrs", NULL};
	/* An aggregate after the measure keeps it a measure of time (latency_p99, step_time_mean). */
	static const char *const aggregates[] = {"mean", "avg", "average", "median", "std", "stdev",
						 "max",	 "min", "total",   "sum",    "p50", "p90",
						 "p95",	 "p99", NULL};
	/* time_taken, elapsed_total, time_per_epoch: a measure of time first, then only words
	 * that say of what or in what unit. */
	static const char *const first_words[] = {"time",     "elapsed",   "duration",
						  "runtime",  "wall",	   "walltime",
						  "wallclock", "latency",  "throughput", NULL};
	static const char *const qualifiers[] = {
		"taken", "elapsed", "spent", "per",  "epoch", "step", "iter", "iteration",
		"batch", "sample",  "token", "clock", "s",    "sec",  "secs", "seconds",
		"ms",	 "us",	    "ns",    "minutes", "mins", "hours", NULL,
	};
	static const char *const per[] = {"per", NULL}, *const second[] = {"second", NULL},
				  *const wall[] = {"wall", NULL}, *const clock[] = {"clock", NULL};
	timing_word w[16];
	const char *base = name;

	for (const char *p = name; *p; p++)
		if (*p == '/' || *p == '.')
			base = p + 1;
	size_t n = timing_words(base, w, sizeof w / sizeof *w);
	while (n > 1 && timing_word_in(&w[n - 1], aggregates))
		n--;
	if (n == 0)
		return false;
	if (timing_word_in(&w[n - 1], units))
		return n == 1 || unit_of_time(w, n - 1);
	if (timing_word_in(&w[n - 1], last_words))
		return true;
	/* tokens_per_second, wall_clock: words that are times only after these */
	if (n > 1 && ((timing_word_in(&w[n - 1], second) && timing_word_in(&w[n - 2], per)) ||
		      (timing_word_in(&w[n - 1], clock) && timing_word_in(&w[n - 2], wall))))
		return true;
	if (!timing_word_in(&w[0], first_words))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!timing_word_in(&w[i], qualifiers) && !timing_word_in(&w[i], aggregates))
			return false;
	return true;
}
