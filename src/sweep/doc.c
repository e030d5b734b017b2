/* The sweep document: each cell's record from its result.json, and per condition the
 * statistics of every metric over its seeds, the failures and the identical conditions. */
#include "labbox/collect.h"
#include "labbox/record.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Results-file values kept per cell: as the run index keeps them. */
#define CELL_FILE_VALUES_MAX 2000

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

json_object *lb_sweep_cell_record(json_object *result)
{
	json_object *rec = json_object_new_object();
	const char *status = get_str(result, "status");
	json_object_object_add(rec, "status", json_object_new_string(status ? status : "unknown"));
	json_object_object_add(rec, "run_id", get(result, "id") ? json_object_get(get(result, "id")) : NULL);
	json_object_object_add(rec, "run_dir",
			       get(result, "run_dir") ? json_object_get(get(result, "run_dir")) : NULL);
	json_object *ec = get(result, "labbox_exit_code");
	json_object_object_add(rec, "exit_code", ec ? json_object_get(ec) : NULL);
	json_object *wall = get(get(result, "resources"), "wall_s");
	json_object_object_add(rec, "wall_s", wall ? json_object_get(wall) : NULL);
	/* The metrics under the run index's keys, so `labbox runs` and the sweep name them
	 * alike. */
	json_object *m = json_object_new_object(), *metrics = get(result, "metrics");
	json_object *values = get(metrics, "values");
	if (values && json_object_is_type(values, json_type_object)) {
		json_object_object_foreach(values, k, v)
		{
			if (v)
				json_object_object_add(m, k, json_object_get(v));
		}
	}
	json_object *conds = get(metrics, "conditions");
	if (conds && json_object_is_type(conds, json_type_object)) {
		json_object_object_foreach(conds, c, group)
		{
			if (!json_object_is_type(group, json_type_object))
				continue;
			json_object_object_foreach(group, k, v)
			{
				char key[1200];
				snprintf(key, sizeof key, "%s/%s", c, k);
				if (v)
					json_object_object_add(m, key, json_object_get(v));
			}
		}
	}
	json_object *files = get(metrics, "files");
	if (files && json_object_is_type(files, json_type_object)) {
		size_t left = CELL_FILE_VALUES_MAX;
		json_object_object_foreach(files, fname, fdoc)
		{
			json_object *flat = json_object_new_object();
			if (lb_results_flatten(fdoc, LB_FLATTEN_ARRAY_MAX, false, left, flat, NULL) >= 0) {
				json_object_object_foreach(flat, k, v)
				{
					char key[2200];
					if (json_object_object_get_ex(m, k, NULL))
						snprintf(key, sizeof key, "%s:%s", fname, k);
					else
						snprintf(key, sizeof key, "%s", k);
					json_object_object_add(m, key, v ? json_object_get(v) : NULL);
				}
				left -= (size_t)json_object_object_length(flat);
			}
			json_object_put(flat);
		}
	}
	json_object_object_add(rec, "metrics", m);
	/* The packages it imported (environment.txt's digest): a sweep's id names the
	 * interpreter's path, and the cells of one sweep, reused or new, must have run with
	 * the same packages to be pooled. */
	const char *rd = get_str(result, "run_dir");
	LB_AUTOFREE char *env = NULL;
	size_t envlen = 0;
	char hex[65];
	if (rd && lb_read_file_beneath(rd, "environment.txt", 16u << 20, &env, &envlen) == 0) {
		lb_sha256_buf_hex(env, envlen, hex);
		json_object_object_add(rec, "packages", json_object_new_string(hex));
	}
	json_object *failure = get(result, "failure");
	if (failure && json_object_is_type(failure, json_type_object)) {
		json_object *f = json_object_new_object();
		const char *cls = get_str(failure, "class"), *sum = get_str(failure, "summary");
		json_object_object_add(f, "class", cls ? json_object_new_string(cls) : NULL);
		json_object_object_add(f, "summary", sum ? json_object_new_string(sum) : NULL);
		json_object_object_add(rec, "failure", f);
	} else {
		json_object_object_add(rec, "failure", NULL);
	}
	return rec;
}

bool lb_sweep_status_final(const char *status, bool retry_failed)
{
	if (!status)
		return false;
	if (strcmp(status, "completed") == 0)
		return true;
	if (retry_failed)
		return false;
	static const char *const earned[] = {"failed", "invalid_metrics", "timeout", "oom",
					     "rejected", "disk_limit"};
	for (size_t i = 0; i < sizeof earned / sizeof *earned; i++)
		if (strcmp(status, earned[i]) == 0)
			return true;
	return false;
}

/* A metric value as a number: true for numbers and the spellings of non-finite ones. */
static bool as_number(json_object *v, double *out)
{
	if (!v)
		return false;
	if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
		*out = json_object_get_double(v);
		return true;
	}
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		if (strcmp(s, "NaN") == 0)
			*out = NAN;
		else if (strcmp(s, "Infinity") == 0)
			*out = INFINITY;
		else if (strcmp(s, "-Infinity") == 0)
			*out = -INFINITY;
		else if (lb_json_is_wide_integer(v))
			/* An integer past 64 bits, kept as its digits: a number all the same. */
			*out = strtod(s, NULL);
		else
			return false;
		return true;
	}
	return false;
}

static json_object *num(double v, bool defined)
{
	return defined && isfinite(v) ? json_object_new_double(v) : NULL;
}

/* A JSON integer as the integer it is; false for anything else. */
static bool exact_int(json_object *v, __int128 *out)
{
	if (!v || !json_object_is_type(v, json_type_int))
		return false;
	int64_t i = json_object_get_int64(v);
	*out = i == INT64_MAX ? (__int128)json_object_get_uint64(v) : (__int128)i;
	return true;
}

static json_object *int_json(__int128 v)
{
	return v > INT64_MAX ? json_object_new_uint64((uint64_t)v) : json_object_new_int64((int64_t)v);
}

/* Integers past 2^53 (checksums, hashes, counts) that doubles would round to one value, and
 * give std 0 and min == max: their statistics are taken of their differences from the first
 * (*first), which are exact while the integers lie within 2^53 of each other, and min and max
 * (*lo, *hi) are the integers themselves. false: the values are ordinary doubles. */
static bool shift_wide_ints(json_object **recs, size_t n, const char *key, double *vals, size_t k,
			    __int128 *first, __int128 *lo, __int128 *hi)
{
	__int128 x;
	size_t j = 0;
	bool wide = false;

	for (size_t i = 0; i < n; i++) {
		json_object *v = get(get(recs[i], "metrics"), key);
		double d;
		if (!as_number(v, &d) || !isfinite(d))
			continue;
		if (!exact_int(v, &x))
			return false;
		if (j++ == 0)
			*first = *lo = *hi = x;
		*lo = x < *lo ? x : *lo;
		*hi = x > *hi ? x : *hi;
		wide |= x > ((__int128)1 << 53) || x < -((__int128)1 << 53);
	}
	if (!wide || j != k)
		return false;
	j = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *v = get(get(recs[i], "metrics"), key);
		if (exact_int(v, &x))
			vals[j++] = (double)(x - *first);
	}
	return true;
}

/* first + diff as the double nearest to it, rounded once: (double)first alone would round
 * 2^53 + 1 down before the difference is added, and the sum round again (a mean of 2^53 + 1
 * and 2^53 + 3 came out as 2^53, below both). The whole part of diff is added as an integer,
 * its fraction in long double. With lo <= hi the result is kept within [lo, hi], where a
 * mean always lies. */
static double shift_back(__int128 first, double diff, __int128 lo, __int128 hi)
{
	double whole = nearbyint(diff);
	__int128 base = first + (__int128)whole;
	double m = (double)((long double)base + (long double)(diff - whole));
	if (lo <= hi && (long double)m < (long double)lo) {
		m = (double)lo;
		if ((long double)m < (long double)lo)
			m = nextafter(m, INFINITY);
	}
	if (lo <= hi && (long double)m > (long double)hi) {
		m = (double)hi;
		if ((long double)m > (long double)hi)
			m = nextafter(m, -INFINITY);
	}
	return m;
}

/* {metric: {n, mean, std, ci95, min, max, nonfinite}} over the seeds of one condition whose run
 * reported the metric: its completed cells (recs, n) and its invalid_metrics cells (bad, nbad).
 * A run is invalid_metrics for a value that is not a finite number (NaN, Infinity, null, a
 * declared metric missing), never for a finite one: a seed whose loss diverged to NaN still
 * reported its accuracy, and leaving that out would take the worst seeds out of the very
 * column a method is judged by. Finite values are in the statistics, the others counted in
 * nonfinite, so n + nonfinite is the seeds that reported the metric. */
static json_object *condition_stats(json_object **recs, size_t n, json_object **bad, size_t nbad)
{
	json_object *out = json_object_new_object();
	json_object *names = json_object_new_object(); /* every numeric key, in first-seen order */
	size_t all_n = n + nbad;
	json_object **all = calloc(all_n ? all_n : 1, sizeof *all);
	double *vals = calloc(all_n ? all_n : 1, sizeof *vals);
	if (!all || !vals) {
		free(all);
		free(vals);
		json_object_put(names);
		return out;
	}
	for (size_t i = 0; i < all_n; i++)
		all[i] = i < n ? recs[i] : bad[i - n];
	for (size_t i = 0; i < all_n; i++) {
		json_object_object_foreach(get(all[i], "metrics"), k, v)
		{
			double d;
			if (as_number(v, &d) && !json_object_object_get_ex(names, k, NULL))
				json_object_object_add(names, k, NULL);
		}
	}
	json_object_object_foreach(names, key, unused)
	{
		(void)unused;
		size_t k = 0, nonfinite = 0;
		for (size_t i = 0; i < all_n; i++) {
			double d;
			if (!as_number(get(get(all[i], "metrics"), key), &d))
				continue;
			if (isfinite(d))
				vals[k++] = d;
			else
				nonfinite++;
		}
		json_object *b = json_object_new_object();
		lb_sweep_stats st = {0};
		__int128 first = 0, lo = 0, hi = 0;
		bool ints = k > 0 && shift_wide_ints(all, all_n, key, vals, k, &first, &lo, &hi);
		bool ok = k > 0 && lb_sweep_stats_compute(vals, k, &st) == 0;
		if (ok && ints) {
			st.mean = shift_back(first, st.mean, lo, hi);
			st.ci_low = shift_back(first, st.ci_low, 1, 0);
			st.ci_high = shift_back(first, st.ci_high, 1, 0);
		}
		json_object_object_add(b, "n", json_object_new_int64((int64_t)k));
		json_object_object_add(b, "mean", num(st.mean, ok));
		json_object_object_add(b, "std", num(st.std, ok && st.has_spread));
		json_object *ci = NULL;
		if (ok && st.has_spread) {
			ci = json_object_new_object();
			json_object_object_add(ci, "low", num(st.ci_low, true));
			json_object_object_add(ci, "high", num(st.ci_high, true));
		}
		json_object_object_add(b, "ci95", ci);
		json_object_object_add(b, "min", ok && ints ? int_json(lo) : num(st.min, ok));
		json_object_object_add(b, "max", ok && ints ? int_json(hi) : num(st.max, ok));
		json_object_object_add(b, "nonfinite", json_object_new_int64((int64_t)nonfinite));
		json_object_object_add(out, key, b);
	}
	free(vals);
	free(all);
	json_object_put(names);
	return out;
}

json_object *lb_sweep_condition_stats(json_object **recs, size_t n, json_object **bad, size_t nbad)
{
	return condition_stats(recs, n, bad, nbad);
}

/* Whether two completed cells report the same results: the same numeric metrics that are not
 * timings (which differ between runs of the same computation), at least one, with equal
 * values. *compared gets the names when they are. */
static bool same_results(json_object *a, json_object *b, json_object *compared)
{
	json_object *ma = get(a, "metrics"), *mb = get(b, "metrics");
	size_t na = 0, nb = 0;
	double d;
	json_object_object_foreach(ma, ka, va)
	{
		if (!as_number(va, &d) || lb_metric_is_timing(ka))
			continue;
		na++;
		json_object *vb = get(mb, ka);
		if (!vb || !lb_metric_values_equal(va, vb))
			return false;
	}
	json_object_object_foreach(mb, kb, vb)
	{
		if (as_number(vb, &d) && !lb_metric_is_timing(kb))
			nb++;
	}
	if (na == 0 || na != nb)
		return false;
	if (compared && json_object_array_length(compared) == 0) {
		json_object_object_foreach(ma, k, v)
		{
			if (as_number(v, &d) && !lb_metric_is_timing(k))
				json_object_array_add(compared, json_object_new_string(k));
		}
	}
	return true;
}

static bool completed(json_object *rec)
{
	const char *s = get_str(rec, "status");
	return s && strcmp(s, "completed") == 0;
}

/* Conditions a and b are identical when each seed that completed in one completed in the
 * other with the same results (AutoResearchClaw's identical-conditions check, over seeds). */
static bool conditions_identical(const lb_sweep_plan *p, json_object *cells, size_t a, size_t b,
				 json_object *compared)
{
	size_t nseeds = p->nseeds ? p->nseeds : 1, both = 0;
	for (size_t k = 0; k < nseeds; k++) {
		json_object *ra = json_object_array_get_idx(cells, a * nseeds + k);
		json_object *rb = json_object_array_get_idx(cells, b * nseeds + k);
		bool ca = completed(ra), cb = completed(rb);
		if (ca != cb)
			return false;
		if (!ca)
			continue;
		if (!same_results(ra, rb, compared))
			return false;
		both++;
	}
	return both > 0;
}

static size_t uf_find(size_t *parent, size_t x)
{
	while (parent[x] != x)
		x = parent[x] = parent[parent[x]];
	return x;
}

json_object *lb_sweep_document(const lb_sweep_plan *p, const char *id, json_object *cells,
			       json_object *info)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string(LB_SWEEP_SCHEMA));
	json_object_object_add(doc, "id", json_object_new_string(id));
	if (info) {
		json_object_object_foreach(info, ik, iv)
		{
			json_object_object_add(doc, ik, iv ? json_object_get(iv) : NULL);
		}
	}
	json_object_object_add(doc, "plan", lb_sweep_plan_json(p));
	size_t nseeds = p->nseeds ? p->nseeds : 1;
	size_t n_completed = 0, n_failed = 0, n_interrupted = 0, n_not_run = 0, n_reused = 0;
	size_t n_retried = 0;
	json_object *cells_out = json_object_new_array();
	json_object *failures = json_object_new_array();
	/* The runs of cells that did not complete before the cell was run again: a seed that
	 * failed and then passed is a result too (how often the method fails). */
	json_object *retried = json_object_new_array();
	for (size_t i = 0; i < p->ncells; i++) {
		const lb_sweep_cell *c = &p->cells[i];
		json_object *rec = json_object_array_get_idx(cells, i);
		json_object *o = lb_sweep_cell_tag(p, i, id);
		json_object_object_del(o, "id");
		json_object *args = json_object_new_array();
		for (size_t k = 0; k < c->nargs; k++)
			json_object_array_add(args, json_object_new_string(c->args[k]));
		json_object_object_add(o, "args", args);
		const char *status = rec ? get_str(rec, "status") : NULL;
		if (!status)
			status = "not_run";
		json_object_object_add(o, "status", json_object_new_string(status));
		static const char *const keys[] = {"run_id", "run_dir", "exit_code", "wall_s",
						   "failure", "reused", "slot", "packages", "metrics"};
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
			json_object *v = get(rec, keys[k]);
			json_object_object_add(o, keys[k], v ? json_object_get(v)
							    : strcmp(keys[k], "metrics") == 0
								  ? json_object_new_object()
								  : NULL);
		}
		/* The executor's own facts of the cell (a Slurm task), where it has them. */
		if (get(rec, "slurm"))
			json_object_object_add(o, "slurm", json_object_get(get(rec, "slurm")));
		json_object *earlier = get(rec, "earlier_attempts");
		size_t nearlier = json_object_is_type(earlier, json_type_array)
					  ? json_object_array_length(earlier) : 0;
		json_object_object_add(o, "earlier_attempts",
				       nearlier ? json_object_get(earlier) : json_object_new_array());
		n_retried += nearlier > 0;
		for (size_t k = 0; k < nearlier; k++) {
			json_object *a = json_object_array_get_idx(earlier, k);
			if (!json_object_is_type(a, json_type_object))
				continue;
			json_object *f = json_object_new_object();
			json_object_object_add(f, "cell", json_object_new_int64((int64_t)i));
			json_object_object_add(f, "condition",
					       json_object_new_string(p->condition_names[c->condition]));
			json_object_object_add(f, "seed", c->has_seed ? json_object_new_int64(c->seed) : NULL);
			json_object_object_foreach(a, ak, av)
				json_object_object_add(f, ak, av ? json_object_get(av) : NULL);
			json_object_object_add(f, "then", json_object_new_string(status));
			json_object_array_add(retried, f);
		}
		if (strcmp(status, "completed") == 0)
			n_completed++;
		else if (strcmp(status, "not_run") == 0)
			n_not_run++;
		else if (strcmp(status, "interrupted") == 0)
			n_interrupted++;
		else
			n_failed++;
		json_object *reused = get(rec, "reused");
		if (reused && json_object_get_boolean(reused))
			n_reused++;
		if (strcmp(status, "completed") != 0 && strcmp(status, "not_run") != 0) {
			json_object *f = json_object_new_object();
			json_object *fail = get(rec, "failure");
			json_object_object_add(f, "cell", json_object_new_int64((int64_t)i));
			json_object_object_add(f, "condition",
					       json_object_new_string(p->condition_names[c->condition]));
			json_object_object_add(f, "seed", c->has_seed ? json_object_new_int64(c->seed) : NULL);
			json_object_object_add(f, "status", json_object_new_string(status));
			json_object_object_add(f, "run_id", get(rec, "run_id") ? json_object_get(get(rec, "run_id")) : NULL);
			const char *cls = get_str(fail, "class");
			json_object_object_add(f, "class", json_object_new_string(cls ? cls : status));
			json_object_object_add(f, "summary", get(fail, "summary") ? json_object_get(get(fail, "summary")) : NULL);
			json_object_array_add(failures, f);
		}
		json_object_array_add(cells_out, o);
	}
	json_object *counts = json_object_new_object();
	json_object_object_add(counts, "cells", json_object_new_int64((int64_t)p->ncells));
	json_object_object_add(counts, "completed", json_object_new_int64((int64_t)n_completed));
	json_object_object_add(counts, "failed", json_object_new_int64((int64_t)n_failed));
	json_object_object_add(counts, "interrupted", json_object_new_int64((int64_t)n_interrupted));
	json_object_object_add(counts, "not_run", json_object_new_int64((int64_t)n_not_run));
	json_object_object_add(counts, "reused", json_object_new_int64((int64_t)n_reused));
	json_object_object_add(counts, "retried", json_object_new_int64((int64_t)n_retried));
	json_object_object_add(doc, "counts", counts);

	json_object *conds = json_object_new_array();
	json_object **recs = calloc(nseeds, sizeof *recs);
	json_object **bad = calloc(nseeds, sizeof *bad);
	for (size_t c = 0; recs && bad && c < p->nconditions; c++) {
		size_t k = 0, nbad = 0, nretried = 0;
		json_object *seeds = json_object_new_array();
		json_object *seeds_nf = json_object_new_array();
		for (size_t s = 0; s < nseeds; s++) {
			json_object *rec = json_object_array_get_idx(cells, c * nseeds + s);
			json_object *earlier = get(rec, "earlier_attempts");
			nretried += completed(rec) && json_object_is_type(earlier, json_type_array) &&
				    json_object_array_length(earlier) > 0;
			if (completed(rec)) {
				recs[k++] = rec;
				if (p->nseeds)
					json_object_array_add(seeds, json_object_new_int64(p->seeds[s]));
			} else if (rec && strcmp(get_str(rec, "status") ? get_str(rec, "status") : "",
						 "invalid_metrics") == 0) {
				bad[nbad++] = rec;
				if (p->nseeds)
					json_object_array_add(seeds_nf, json_object_new_int64(p->seeds[s]));
			}
		}
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(p->condition_names[c]));
		json_object *params = json_object_new_object();
		for (size_t i = 0; i < p->nparams; i++)
			json_object_object_add(params, p->param_names[i],
					       json_object_new_string(p->condition_values[c][i]));
		json_object_object_add(o, "params", params);
		json_object_object_add(o, "cells", json_object_new_int64((int64_t)nseeds));
		json_object_object_add(o, "completed", json_object_new_int64((int64_t)k));
		json_object_object_add(o, "seeds_completed", seeds);
		/* Of the completed: those that completed only after an earlier run failed. */
		json_object_object_add(o, "completed_after_retry", json_object_new_int64((int64_t)nretried));
		/* The seeds whose run reported a metric that is not a number (NaN, Infinity): that
		 * value counted in its metric's nonfinite, their finite metrics in the statistics. */
		json_object_object_add(o, "invalid_metrics", json_object_new_int64((int64_t)nbad));
		json_object_object_add(o, "seeds_invalid_metrics", seeds_nf);
		json_object_object_add(o, "metrics", condition_stats(recs, k, bad, nbad));
		json_object_array_add(conds, o);
	}
	free(recs);
	free(bad);
	json_object_object_add(doc, "stats_over",
			       json_object_new_string("completed and invalid_metrics cells, finite values"));
	json_object_object_add(doc, "conditions", conds);
	json_object_object_add(doc, "failures", failures);
	json_object_object_add(doc, "retried_failures", retried);

	/* Groups of conditions that report identical results: a parameter that changes nothing
	 * is a bug more often than a finding, and only a person can tell. */
	json_object *ident = json_object_new_array();
	size_t *parent = calloc(p->nconditions, sizeof *parent);
	json_object **compared = calloc(p->nconditions, sizeof *compared);
	if (parent && compared) {
		for (size_t c = 0; c < p->nconditions; c++)
			parent[c] = c;
		for (size_t a = 0; a < p->nconditions; a++)
			for (size_t b = a + 1; b < p->nconditions; b++) {
				if (uf_find(parent, a) == uf_find(parent, b))
					continue;
				json_object *names = json_object_new_array();
				if (conditions_identical(p, cells, a, b, names)) {
					size_t ra = uf_find(parent, a), rb = uf_find(parent, b);
					parent[rb] = ra;
					if (!compared[ra]) {
						compared[ra] = names;
						names = NULL;
					}
				}
				json_object_put(names);
			}
		for (size_t r = 0; r < p->nconditions; r++) {
			if (uf_find(parent, r) != r)
				continue;
			json_object *members = json_object_new_array();
			for (size_t c = 0; c < p->nconditions; c++)
				if (uf_find(parent, c) == r)
					json_object_array_add(members,
							      json_object_new_string(p->condition_names[c]));
			if (json_object_array_length(members) < 2) {
				json_object_put(members);
				continue;
			}
			json_object *g = json_object_new_object();
			json_object_object_add(g, "conditions", members);
			json_object_object_add(g, "metrics",
					       compared[r] ? json_object_get(compared[r])
							   : json_object_new_array());
			json_object_object_add(g, "message",
					       json_object_new_string(
						       "these conditions report identical results for every "
						       "completed seed: check that the parameters that "
						       "tell them apart reach the computation"));
			json_object_array_add(ident, g);
		}
		for (size_t c = 0; c < p->nconditions; c++)
			json_object_put(compared[c]);
	}
	free(parent);
	free(compared);
	json_object_object_add(doc, "identical_conditions", ident);
	json_object_object_add(doc, "cells", cells_out);
	return doc;
}
