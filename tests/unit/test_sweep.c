/* sweep: the pure parts (seeds, grids, templates, statistics, the budget table, CPU slots,
 * time left, TIME_ESTIMATE lines, the document). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/record.h"
#include "labbox/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_seed_ranges(void **state)
{
	(void)state;
	long *v = NULL;
	size_t n = 0;
	char err[256] = "";
	assert_int_equal(lb_sweep_parse_seeds("0-4", &v, &n, err, sizeof err), 0);
	assert_int_equal(n, 5);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[4], 4);
	free(v);
	assert_int_equal(lb_sweep_parse_seeds("0,3,7", &v, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[2], 7);
	free(v);
	assert_int_equal(lb_sweep_parse_seeds("0-2,10,5-5", &v, &n, err, sizeof err), 0);
	assert_int_equal(n, 5);
	assert_int_equal(v[3], 10);
	assert_int_equal(v[4], 5);
	free(v);
	static const struct {
		const char *text, *words;
	} bad[] = {
		{"", "empty"},       {"4-1", "backwards"}, {"a", "non-negative"},
		{"1,1", "twice"},    {"0-3,2", "twice"},   {"0-", "needs an end"},
		{"0,", "comma"},     {"-1", "non-negative"}, {"1x", "unexpected"},
		{"0-100000", "more than"}, {"99999999999999999999", "non-negative"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		v = NULL;
		assert_int_equal(lb_sweep_parse_seeds(bad[i].text, &v, &n, err, sizeof err), -EINVAL);
		assert_null(v);
		if (!strstr(err, bad[i].words))
			fail_msg("seeds '%s': '%s' lacks '%s'", bad[i].text, err, bad[i].words);
	}
}

static void test_params_from_the_command_line(void **state)
{
	(void)state;
	lb_sweep_spec s = {0};
	char err[256] = "";
	assert_int_equal(lb_sweep_spec_param_arg(&s, "lr=0.1,0.01", err, sizeof err), 0);
	assert_int_equal(lb_sweep_spec_param_arg(&s, "model=mlp", err, sizeof err), 0);
	assert_int_equal(s.nparams, 2);
	assert_int_equal(s.params[0].nvalues, 2);
	assert_string_equal(s.params[0].values[1], "0.01");
	/* The same name again replaces its values in place. */
	assert_int_equal(lb_sweep_spec_param_arg(&s, "lr=1,2,3", err, sizeof err), 0);
	assert_int_equal(s.nparams, 2);
	assert_int_equal(s.params[0].nvalues, 3);
	static const char *const bad[] = {"lr", "=1", "lr=", "lr=1,,2", "lr=1,", "1a=1",
					  "a b=1", "seed=1", "lr=1,1"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(lb_sweep_spec_param_arg(&s, bad[i], err, sizeof err), -EINVAL);
	assert_int_equal(s.nparams, 2);
	lb_sweep_spec_free(&s);
}

static void test_grid_expansion_and_default_template(void **state)
{
	(void)state;
	lb_sweep_spec s = {0};
	char err[256] = "";
	assert_int_equal(lb_sweep_spec_param_arg(&s, "lr=0.1,0.01", err, sizeof err), 0);
	assert_int_equal(lb_sweep_spec_param_arg(&s, "model=mlp,cnn,rnn", err, sizeof err), 0);
	assert_int_equal(lb_sweep_parse_seeds("0-1", &s.seeds, &s.nseeds, err, sizeof err), 0);
	lb_sweep_plan p;
	assert_int_equal(lb_sweep_plan_make(&s, &p, err, sizeof err), 0);
	lb_sweep_spec_free(&s); /* the plan owns its copies */
	assert_int_equal(p.nconditions, 6);
	assert_int_equal(p.ncells, 12);
	/* The first parameter varies slowest, as itertools.product. */
	assert_string_equal(p.condition_names[0], "lr=0.1,model=mlp");
	assert_string_equal(p.condition_names[1], "lr=0.1,model=cnn");
	assert_string_equal(p.condition_names[3], "lr=0.01,model=mlp");
	const lb_sweep_cell *c = &p.cells[3]; /* condition 1, seed 1 */
	assert_int_equal(c->condition, 1);
	assert_true(c->has_seed);
	assert_int_equal(c->seed, 1);
	assert_int_equal(c->nargs, 6);
	const char *want[] = {"--lr", "0.1", "--model", "cnn", "--seed", "1"};
	for (size_t i = 0; i < 6; i++)
		assert_string_equal(c->args[i], want[i]);
	json_object *tag = lb_sweep_cell_tag(&p, 3, "abc");
	assert_string_equal(json_object_get_string(json_object_object_get(tag, "condition")),
			    "lr=0.1,model=cnn");
	assert_int_equal(json_object_get_int(json_object_object_get(tag, "seed")), 1);
	json_object_put(tag);
	json_object *pj = lb_sweep_plan_json(&p);
	json_object *params = json_object_object_get(pj, "parameters");
	json_object *vals = json_object_object_get(json_object_array_get_idx(params, 1), "values");
	assert_int_equal(json_object_array_length(vals), 3);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(vals, 2)), "rnn");
	json_object_put(pj);
	lb_sweep_plan_free(&p);
}

static int plan_of(const char *yaml, lb_sweep_plan *p, char *err, size_t errlen)
{
	lb_sweep_spec s = {0};
	int r = lb_sweep_spec_load_yaml(&s, yaml, strlen(yaml), err, errlen);
	if (r == 0)
		r = lb_sweep_plan_make(&s, p, err, errlen);
	lb_sweep_spec_free(&s);
	return r;
}

static void test_templates_and_yaml(void **state)
{
	(void)state;
	char err[256] = "";
	lb_sweep_plan p;
	assert_int_equal(plan_of("entry: x.py\n"
				 "sweep:\n"
				 "  parameters:\n"
				 "    lr: [0.5, \"a,b\"]\n"
				 "  seeds: [3, 7]\n"
				 "  args: \"--learning-rate={lr} {{literal}} --s {seed}\"\n"
				 "  env: {TAG: \"x-{lr}-{seed}\"}\n"
				 "  iterations: 10\n",
				 &p, err, sizeof err),
			 0);
	assert_int_equal(p.ncells, 4);
	const lb_sweep_cell *c = &p.cells[3];
	assert_int_equal(c->nargs, 4);
	assert_string_equal(c->args[0], "--learning-rate=a,b");
	assert_string_equal(c->args[1], "{literal}");
	assert_string_equal(c->args[3], "7");
	assert_int_equal(c->nenv, 1);
	assert_string_equal(c->env[0], "TAG=x-a,b-7");
	lb_sweep_plan_free(&p);

	static const struct {
		const char *yaml, *words;
	} bad[] = {
		{"sweep:\n  parameters:\n    lr: [1]\n  args: \"--lr {lrr}\"\n", "{lrr}"},
		{"sweep:\n  parameters:\n    lr: [1]\n    b: [2]\n  args: \"--lr {lr}\"\n", "never reaches"},
		{"sweep:\n  parameters:\n    lr: [1]\n  args: \"--lr {lr} {seed}\"\n", "no seeds"},
		{"sweep:\n  parameters:\n    lr: [1]\n  seeds: 0-1\n  args: \"--lr {lr}\"\n", "{seed}"},
		{"sweep:\n  parameters:\n    lr: [1]\n  args: \"--lr {lr\"\n", "without its"},
		{"sweep:\n  parameters:\n    lr: [1]\n  args: \"--lr lr}\"\n", "without its"},
		{"sweep:\n  parameters:\n    lr: []\n", "no values"},
		{"sweep:\n  parameters:\n    lr: [1, 1]\n", "twice"},
		{"sweep:\n  parameters:\n    lr: [1]\n    lr: [2]\n", "given twice"},
		{"sweep:\n  parameters:\n    lr: [[1]]\n", "plain value"},
		{"sweep:\n  parameters:\n    lr: 1\n", "list"},
		{"sweep:\n  seeds: []\n", "empty"},
		{"sweep:\n  seeds: 2-1\n", "backwards"},
		{"sweep:\n  other: 1\n", "unknown key"},
		{"sweep: 3\n", "mapping"},
		{"sweep:\n  iterations: many\n", "iterations"},
		{"sweep:\n  env: {1X: a}\n", "variable name"},
		{"other: 1\n", "grid is empty"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		assert_int_equal(plan_of(bad[i].yaml, &p, err, sizeof err), -EINVAL);
		if (!strstr(err, bad[i].words))
			fail_msg("yaml %zu: '%s' lacks '%s'", i, err, bad[i].words);
	}
}

static void test_t_quantiles(void **state)
{
	(void)state;
	/* Student's t table, two-sided 95%. */
	static const struct {
		unsigned df;
		double t;
	} table[] = {{1, 12.7062}, {2, 4.3027}, {3, 3.1824}, {4, 2.7764}, {9, 2.2622},
		     {29, 2.0452}, {100, 1.9840}, {1000, 1.9623}};
	for (size_t i = 0; i < sizeof table / sizeof *table; i++)
		assert_true(fabs(lb_sweep_t975(table[i].df) - table[i].t) < 1e-4);
	assert_true(isnan(lb_sweep_t975(0)));
}

static void test_statistics(void **state)
{
	(void)state;
	double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
	lb_sweep_stats st;
	assert_int_equal(lb_sweep_stats_compute(v, 8, &st), 0);
	assert_int_equal(st.n, 8);
	assert_true(st.mean == 5);
	assert_true(fabs(st.std - sqrt(32.0 / 7)) < 1e-12); /* sample, not population */
	double half = lb_sweep_t975(7) * st.std / sqrt(8);
	assert_true(fabs(st.ci_low - (5 - half)) < 1e-12);
	assert_true(fabs(st.ci_high - (5 + half)) < 1e-12);
	assert_true(st.min == 2 && st.max == 9);
	double one = 3.5;
	assert_int_equal(lb_sweep_stats_compute(&one, 1, &st), 0);
	assert_false(st.has_spread);
	assert_true(st.mean == 3.5);
	/* Large, close values: two passes keep the spread. */
	double big[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
	assert_int_equal(lb_sweep_stats_compute(big, 3, &st), 0);
	assert_true(fabs(st.std - 1) < 1e-6);
	double nan_v[] = {1, NAN};
	assert_int_equal(lb_sweep_stats_compute(nan_v, 2, &st), -EINVAL);
	assert_int_equal(lb_sweep_stats_compute(v, 0, &st), -EINVAL);

	/* Finite values near the double maximum: their sum overflows, their mean does not. */
	double huge[] = {1.7e308, 1.7e308, -1.7e308};
	assert_int_equal(lb_sweep_stats_compute(huge, 3, &st), 0);
	assert_true(isfinite(st.mean));
	assert_true(fabs(st.mean - 1.7e308 / 3) <= 1.7e308 / 3 * 1e-15);
	assert_true(st.min == -1.7e308 && st.max == 1.7e308);
	/* Their std (1.96e308) is past the doubles: no spread rather than inf or NaN. */
	assert_false(st.has_spread);
	double huge2[] = {1.5e308, 1.4e308, 1.3e308};
	assert_int_equal(lb_sweep_stats_compute(huge2, 3, &st), 0);
	assert_true(fabs(st.mean - 1.4e308) <= 1.4e308 * 1e-15);
	assert_true(st.has_spread);
	assert_true(fabs(st.std - 1e307) <= 1e307 * 1e-12);
	assert_true(isfinite(st.ci_low) && isfinite(st.ci_high) && st.ci_low < st.mean);
	/* The smallest subnormals are not lost either. */
	double tiny[] = {5e-324, 5e-324, 1e-323};
	assert_int_equal(lb_sweep_stats_compute(tiny, 3, &st), 0);
	assert_true(st.mean > 0 && st.mean <= 1e-323);
	/* Ordinary values: the same doubles as the plain sums. */
	double w[] = {0.1, 0.7, 0.2, 0.30000000000000004, 12.5};
	double sum = 0, ss = 0;
	for (int i = 0; i < 5; i++)
		sum += w[i];
	double mean = sum / 5;
	for (int i = 0; i < 5; i++)
		ss += (w[i] - mean) * (w[i] - mean);
	assert_int_equal(lb_sweep_stats_compute(w, 5, &st), 0);
	assert_true(st.mean == mean);
	assert_true(st.std == sqrt(ss / 4));
}

/* A condition's name is its own: values holding the separators are quoted, so two different
 * assignments never share a name (a report would refuse the sweep or pool the two). */
static void test_condition_names_are_unambiguous(void **state)
{
	(void)state;
	char err[256] = "";
	lb_sweep_plan p;
	assert_int_equal(plan_of("sweep:\n  parameters:\n    a: [\"1,b=2\", \"1\"]\n"
				 "    b: [\"3\", \"2,b=3\", '\"q\\\\\"', 'x=y']\n",
				 &p, err, sizeof err), 0);
	assert_int_equal(p.nconditions, 8);
	assert_string_equal(p.condition_names[0], "a=\"1,b=2\",b=3");
	assert_string_equal(p.condition_names[4], "a=1,b=3");
	assert_string_equal(p.condition_names[5], "a=1,b=\"2,b=3\"");
	/* YAML keeps backslashes in single quotes: the value is "q\\" */
	assert_string_equal(p.condition_names[6], "a=1,b=\"\\\"q\\\\\\\\\\\"\"");
	assert_string_equal(p.condition_names[7], "a=1,b=x=y");
	for (size_t i = 0; i < p.nconditions; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(p.condition_names[i], p.condition_names[j]) == 0)
				fail_msg("conditions %zu and %zu are both '%s'", j, i,
					 p.condition_names[i]);
	lb_sweep_plan_free(&p);
}

static void test_budget_table(void **state)
{
	(void)state;
	char err[600] = "";
	assert_int_equal(lb_sweep_budget_check(2, 2, 500, 100, 0, err, sizeof err), 0);
	assert_int_equal(lb_sweep_budget_check(3, 2, 0, 100, 0, err, sizeof err), -E2BIG);
	assert_non_null(strstr(err, "| < 120s | 1-2 | 1-2 |"));
	assert_non_null(strstr(err, "3 conditions"));
	assert_int_equal(lb_sweep_budget_check(5, 6, 0, 200, 0, err, sizeof err), -E2BIG);
	assert_non_null(strstr(err, "6 seeds"));
	assert_int_equal(lb_sweep_budget_check(50, 20, 1000000, 1000, 0, err, sizeof err), 0);
	/* A per-cell budget only bounds the iterations of one condition. */
	assert_int_equal(lb_sweep_budget_check(40, 20, 900, 0, 60, err, sizeof err), 0);
	assert_int_equal(lb_sweep_budget_check(1, 1, 2000, 0, 60, err, sizeof err), -E2BIG);
	assert_non_null(strstr(err, "per-cell"));
	assert_int_equal(lb_sweep_budget_check(99, 99, 99999, 0, 0, err, sizeof err), 0);
}

static void test_cpu_slots(void **state)
{
	(void)state;
	cpu_set_t avail, out;
	CPU_ZERO(&avail);
	for (int c = 0; c < 4; c++)
		CPU_SET(c * 2, &avail); /* CPUs 0, 2, 4, 6 */
	lb_sweep_slot_cpus(&avail, 1, 1, &out);
	assert_int_equal(CPU_COUNT(&out), 1);
	assert_true(CPU_ISSET(2, &out));
	lb_sweep_slot_cpus(&avail, 1, 2, &out);
	assert_int_equal(CPU_COUNT(&out), 2);
	assert_true(CPU_ISSET(4, &out) && CPU_ISSET(6, &out));
	/* Half a CPU each: two slots share one. */
	lb_sweep_slot_cpus(&avail, 0, 0.5, &out);
	assert_true(CPU_COUNT(&out) == 1 && CPU_ISSET(0, &out));
	lb_sweep_slot_cpus(&avail, 1, 0.5, &out);
	assert_true(CPU_COUNT(&out) == 1 && CPU_ISSET(0, &out));
	lb_sweep_slot_cpus(&avail, 2, 0.5, &out);
	assert_true(CPU_COUNT(&out) == 1 && CPU_ISSET(2, &out));
	/* Never more than there are. */
	lb_sweep_slot_cpus(&avail, 0, 10, &out);
	assert_int_equal(CPU_COUNT(&out), 4);
	assert_int_equal(lb_sweep_default_jobs(4, 0), 4);
	assert_int_equal(lb_sweep_default_jobs(4, 1.5), 2);
	assert_int_equal(lb_sweep_default_jobs(2, 4), 1);
	assert_int_equal(lb_sweep_default_jobs(8, 0.5), 16);
}

static void test_time_left(void **state)
{
	(void)state;
	double fin[] = {10, 20};
	double el[] = {5};
	double est[] = {-1};
	/* 15 s a cell: 10 s left of the running one and 3 pending, 2 at a time. */
	assert_true(fabs(lb_sweep_eta(fin, 2, el, est, 1, 3, 2) - (10 + 45) / 2.0) < 1e-9);
	/* Nothing finished: the experiments' own estimates. */
	double est2[] = {8, -1};
	double el2[] = {2, 1};
	assert_true(fabs(lb_sweep_eta(NULL, 0, el2, est2, 2, 2, 2) - (6 + 7 + 16) / 2.0) < 1e-9);
	assert_true(lb_sweep_eta(NULL, 0, el, est, 1, 5, 2) < 0);
	assert_true(lb_sweep_eta(NULL, 0, NULL, NULL, 0, 0, 2) == 0);
}

static double feed(lb_sweep_estimate_scan *sc, const char *s)
{
	return lb_sweep_estimate_feed(sc, s, strlen(s));
}

static void test_estimate_lines(void **state)
{
	(void)state;
	lb_sweep_estimate_scan sc = {0};
	assert_true(feed(&sc, "loss: 1\nTIME_EST") < 0);
	assert_true(feed(&sc, "IMATE: 12.5s\n") == 12.5);
	assert_true(feed(&sc, "  TIME_ESTIMATE: 3\nx\n") == 3);
	assert_true(feed(&sc, "TIME_ESTIMATE: soon\n") < 0);
	char big[600];
	memset(big, 'x', sizeof big);
	assert_true(lb_sweep_estimate_feed(&sc, big, sizeof big) < 0);
	assert_true(feed(&sc, "TIME_ESTIMATE: 1\n") < 0); /* same line */
	assert_true(feed(&sc, "TIME_ESTIMATE: 2\n") == 2);
}

static json_object *cell_rec(const char *status, double acc, double secs)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "status", json_object_new_string(status));
	json_object *m = json_object_new_object();
	json_object_object_add(m, "accuracy", json_object_new_double(acc));
	json_object_object_add(m, "fit_seconds", json_object_new_double(secs));
	json_object_object_add(r, "metrics", m);
	if (strcmp(status, "completed") != 0) {
		json_object *f = json_object_new_object();
		json_object_object_add(f, "class", json_object_new_string("code_error"));
		json_object_object_add(r, "failure", f);
	}
	return r;
}

static void test_document(void **state)
{
	(void)state;
	lb_sweep_spec s = {0};
	char err[256];
	assert_int_equal(lb_sweep_spec_param_arg(&s, "opt=a,b,c", err, sizeof err), 0);
	assert_int_equal(lb_sweep_parse_seeds("0-1", &s.seeds, &s.nseeds, err, sizeof err), 0);
	lb_sweep_plan p;
	assert_int_equal(lb_sweep_plan_make(&s, &p, err, sizeof err), 0);
	lb_sweep_spec_free(&s);
	json_object *cells = json_object_new_array();
	/* a and b identical per seed (timings differ); c differs; c's seed 1 failed. */
	json_object_array_add(cells, cell_rec("completed", 0.5, 1));
	json_object_array_add(cells, cell_rec("completed", 0.7, 2));
	json_object_array_add(cells, cell_rec("completed", 0.5, 3));
	json_object_array_add(cells, cell_rec("completed", 0.7, 4));
	json_object_array_add(cells, cell_rec("completed", 0.9, 5));
	json_object_array_add(cells, cell_rec("failed", 0.1, 6));
	json_object *doc = lb_sweep_document(&p, "id1", cells, NULL);
	json_object *conds = json_object_object_get(doc, "conditions");
	json_object *a = json_object_object_get(
		json_object_object_get(json_object_array_get_idx(conds, 0), "metrics"), "accuracy");
	assert_int_equal(json_object_get_int(json_object_object_get(a, "n")), 2);
	assert_true(fabs(json_object_get_double(json_object_object_get(a, "mean")) - 0.6) < 1e-12);
	assert_true(fabs(json_object_get_double(json_object_object_get(a, "std")) - sqrt(0.02)) < 1e-12);
	json_object *c = json_object_object_get(
		json_object_object_get(json_object_array_get_idx(conds, 2), "metrics"), "accuracy");
	assert_int_equal(json_object_get_int(json_object_object_get(c, "n")), 1);
	assert_null(json_object_object_get(c, "std"));
	assert_null(json_object_object_get(c, "ci95"));
	json_object *fails = json_object_object_get(doc, "failures");
	assert_int_equal(json_object_array_length(fails), 1);
	assert_string_equal(json_object_get_string(json_object_object_get(
				    json_object_array_get_idx(fails, 0), "class")), "code_error");
	json_object *ident = json_object_object_get(doc, "identical_conditions");
	assert_int_equal(json_object_array_length(ident), 1);
	json_object *members = json_object_object_get(json_object_array_get_idx(ident, 0), "conditions");
	assert_int_equal(json_object_array_length(members), 2);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(members, 1)), "opt=b");
	json_object *counts = json_object_object_get(doc, "counts");
	assert_int_equal(json_object_get_int(json_object_object_get(counts, "failed")), 1);
	json_object_put(doc);
	json_object_put(cells);
	lb_sweep_plan_free(&p);
	assert_true(lb_sweep_status_final("failed", false));
	assert_false(lb_sweep_status_final("failed", true));
	assert_false(lb_sweep_status_final("interrupted", false));
	assert_false(lb_sweep_status_final("infra_error", false));
	assert_true(lb_sweep_status_final("completed", true));
}

/* The mean of integers past 2^53 is the double nearest their true mean, within [min, max]:
 * 2^53+1 and 2^53+3 average to 2^53+2 (a double), never 2^53, below both. */
static void test_document_wide_integer_mean(void **state)
{
	(void)state;
	static const struct {
		int64_t a, b;
		double mean;
	} cases[] = {
		{((int64_t)1 << 53) + 1, ((int64_t)1 << 53) + 3, 9007199254740994.0},
		{((int64_t)1 << 60) + 1, ((int64_t)1 << 60) + 100, 1152921504606846976.0 + 50.5},
		{-((int64_t)1 << 53) - 3, -((int64_t)1 << 53) - 1, -9007199254740994.0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		lb_sweep_spec s = {0};
		char err[256];
		assert_int_equal(lb_sweep_spec_param_arg(&s, "opt=a", err, sizeof err), 0);
		assert_int_equal(lb_sweep_parse_seeds("0-1", &s.seeds, &s.nseeds, err, sizeof err), 0);
		lb_sweep_plan p;
		assert_int_equal(lb_sweep_plan_make(&s, &p, err, sizeof err), 0);
		lb_sweep_spec_free(&s);
		json_object *cells = json_object_new_array();
		int64_t v[2] = {cases[i].a, cases[i].b};
		for (int k = 0; k < 2; k++) {
			json_object *r = json_object_new_object(), *m = json_object_new_object();
			json_object_object_add(r, "status", json_object_new_string("completed"));
			json_object_object_add(m, "checksum", json_object_new_int64(v[k]));
			json_object_object_add(r, "metrics", m);
			json_object_array_add(cells, r);
		}
		json_object *doc = lb_sweep_document(&p, "id1", cells, NULL);
		json_object *b = json_object_object_get(json_object_object_get(
			json_object_array_get_idx(json_object_object_get(doc, "conditions"), 0),
			"metrics"), "checksum");
		double mean = json_object_get_double(json_object_object_get(b, "mean"));
		assert_true(mean == cases[i].mean);
		assert_int_equal(json_object_get_int64(json_object_object_get(b, "min")), cases[i].a);
		assert_int_equal(json_object_get_int64(json_object_object_get(b, "max")), cases[i].b);
		/* No double lies between 2^60+1 and 2^60+100: the nearest to the mean is 2^60. */
		assert_true(i == 1 || ((long double)mean >= (long double)cases[i].a &&
			    (long double)mean <= (long double)cases[i].b));
		json_object_put(doc);
		json_object_put(cells);
		lb_sweep_plan_free(&p);
	}
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_sweep_id(void **state)
{
	(void)state;
	char dir[] = "/tmp/sweep-unit-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600], runs[512];
	snprintf(path, sizeof path, "%s/main.py", dir);
	write_text(path, "print('a: 1')\n");
	lb_sweep_spec s = {0};
	char err[256];
	assert_int_equal(lb_sweep_spec_param_arg(&s, "lr=1,2", err, sizeof err), 0);
	lb_sweep_plan p;
	assert_int_equal(lb_sweep_plan_make(&s, &p, err, sizeof err), 0);
	snprintf(runs, sizeof runs, "%s/records/runs", dir);
	const char *skip[] = {runs};
	const char *extra[] = {"main.py", "python3"};
	char a[LB_SWEEP_ID_LEN], b[LB_SWEEP_ID_LEN];
	assert_int_equal(lb_sweep_id(dir, skip, 1, &p, extra, 2, a), 0);
	assert_int_equal(strlen(a), 16);
	/* Records appearing inside, and empty directories, change nothing. */
	snprintf(path, sizeof path, "%s/records", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(mkdir(runs, 0700), 0);
	snprintf(path, sizeof path, "%s/run1", runs);
	write_text(path, "x");
	assert_int_equal(lb_sweep_id(dir, skip, 1, &p, extra, 2, b), 0);
	assert_string_equal(a, b);
	/* The code, the extra strings and the grid do. */
	const char *extra2[] = {"train.py", "python3"};
	assert_int_equal(lb_sweep_id(dir, skip, 1, &p, extra2, 2, b), 0);
	assert_string_not_equal(a, b);
	snprintf(path, sizeof path, "%s/main.py", dir);
	write_text(path, "print('a: 2')\n");
	assert_int_equal(lb_sweep_id(dir, skip, 1, &p, extra, 2, b), 0);
	assert_string_not_equal(a, b);
	lb_sweep_plan_free(&p);
	assert_int_equal(lb_sweep_spec_param_arg(&s, "lr=1,3", err, sizeof err), 0);
	assert_int_equal(lb_sweep_plan_make(&s, &p, err, sizeof err), 0);
	char c2[LB_SWEEP_ID_LEN];
	assert_int_equal(lb_sweep_id(dir, skip, 1, &p, extra, 2, c2), 0);
	assert_string_not_equal(b, c2);
	lb_sweep_plan_free(&p);
	lb_sweep_spec_free(&s);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_sweep_dir(void **state)
{
	(void)state;
	char *d = NULL;
	assert_int_equal(lb_sweep_dir_for(".labbox/runs", "ab", &d), 0);
	assert_string_equal(d, ".labbox/sweeps/ab");
	free(d);
	assert_int_equal(lb_sweep_dir_for("runs/", "ab", &d), 0);
	assert_string_equal(d, "sweeps/ab");
	free(d);
	assert_int_equal(lb_sweep_dir_for("/runs", "ab", &d), 0);
	assert_string_equal(d, "/sweeps/ab");
	free(d);
	/* The runs directory spelt ".", "x/." or "x/..": the same place as by its path. */
	char tmpl[] = "/var/tmp/lbt-place-XXXXXX", cwd[4096], want[8192];
	assert_non_null(mkdtemp(tmpl));
	char runs[4200];
	snprintf(runs, sizeof runs, "%s/runs", tmpl);
	assert_int_equal(mkdir(runs, 0700), 0);
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(runs), 0);
	snprintf(want, sizeof want, "%s/sweeps/ab", tmpl);
	const char *spelt[] = {".", "./", "../runs/.", "sub/.."};
	assert_int_equal(mkdir("sub", 0700), 0);
	for (size_t i = 0; i < sizeof spelt / sizeof *spelt; i++) {
		assert_int_equal(lb_sweep_dir_for(spelt[i], "ab", &d), 0);
		assert_string_equal(d, want);
		free(d);
	}
	assert_int_equal(lb_index_path_for(".", &d), 0);
	snprintf(want, sizeof want, "%s/labbox.db", tmpl);
	assert_string_equal(d, want);
	free(d);
	assert_int_equal(chdir(cwd), 0);
	snprintf(want, sizeof want, "rm -rf '%s'", tmpl);
	assert_int_equal(system(want), 0);
}

/* A task's estimate file: rewritten in place, a shorter value over a longer one reads back
 * whole; no file, an empty one or junk is no estimate. */
static void test_estimate_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-est-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/3", dir);
	assert_true(lb_sweep_estimate_load(dir, 3) < 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_true(lb_sweep_estimate_load(dir, 3) < 0);
	assert_int_equal(lb_sweep_estimate_store(fd, 123456.5), 0);
	assert_true(fabs(lb_sweep_estimate_load(dir, 3) - 123456.5) < 1e-9);
	assert_int_equal(lb_sweep_estimate_store(fd, 7), 0);
	assert_true(fabs(lb_sweep_estimate_load(dir, 3) - 7) < 1e-9);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 21); /* one record, however many were written */
	assert_int_equal(pwrite(fd, "nonsense\n", 9, 0), 9);
	assert_int_equal(ftruncate(fd, 9), 0);
	assert_true(lb_sweep_estimate_load(dir, 3) < 0);
	close(fd);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_ranges),
		cmocka_unit_test(test_params_from_the_command_line),
		cmocka_unit_test(test_grid_expansion_and_default_template),
		cmocka_unit_test(test_templates_and_yaml),
		cmocka_unit_test(test_t_quantiles),
		cmocka_unit_test(test_statistics),
		cmocka_unit_test(test_condition_names_are_unambiguous),
		cmocka_unit_test(test_budget_table),
		cmocka_unit_test(test_cpu_slots),
		cmocka_unit_test(test_time_left),
		cmocka_unit_test(test_estimate_lines),
		cmocka_unit_test(test_estimate_file),
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_document_wide_integer_mean),
		cmocka_unit_test(test_sweep_dir),
		cmocka_unit_test(test_sweep_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
