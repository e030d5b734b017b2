/* Unit tests for the flattening of results files and the equality rerun compares with. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "labbox/collect.h"

static json_object *parse(const char *text)
{
	json_object *doc = NULL;
	char err[256];
	assert_int_equal(lb_results_parse(text, strlen(text), &doc, err, sizeof err), 0);
	return doc;
}

static void test_flatten_ai_scientist(void **state)
{
	(void)state;
	json_object *doc = parse("{\"shakespeare_char\": {\"means\": {\"val_loss\": 1.47, \"iters\": 5000},"
				 " \"stderrs\": {\"val_loss\": 0.01}, \"note\": \"ok\", \"best\": true}}");
	json_object *out = json_object_new_object();
	size_t dropped = 9;
	assert_int_equal(lb_results_flatten(doc, LB_FLATTEN_ARRAY_MAX, true, 100, out, &dropped), 5);
	assert_int_equal(dropped, 0);
	assert_true(json_object_get_double(json_object_object_get(out, "shakespeare_char.means.val_loss")) == 1.47);
	assert_int_equal(json_object_get_int(json_object_object_get(out, "shakespeare_char.means.iters")), 5000);
	assert_string_equal(json_object_get_string(json_object_object_get(out, "shakespeare_char.note")), "ok");
	assert_true(json_object_get_boolean(json_object_object_get(out, "shakespeare_char.best")));
	json_object_put(out);
	json_object_put(doc);
}

static void test_flatten_arrays(void **state)
{
	(void)state;
	/* a results.csv document: rows by index */
	json_object *doc = parse("[{\"acc\": 0.5, \"name\": \"a\"}, {\"acc\": 0.75, \"name\": \"b\"}]");
	json_object *out = json_object_new_object();
	assert_int_equal(lb_results_flatten(doc, 4, true, 100, out, NULL), 4);
	assert_true(json_object_get_double(json_object_object_get(out, "1.acc")) == 0.75);
	json_object_put(out);
	json_object_put(doc);

	/* a long series is one digest, equal for equal numbers spelt differently */
	json_object *a = parse("{\"losses\": [1, 2, 3, 4, 5], \"x\": 1}");
	json_object *b = parse("{\"losses\": [1.0, 2.0, 3.0, 4.0, 5.0], \"x\": 1}");
	json_object *c = parse("{\"losses\": [1, 2, 3, 4, 6], \"x\": 1}");
	json_object *fa = json_object_new_object(), *fb = json_object_new_object(),
		    *fc = json_object_new_object();
	assert_int_equal(lb_results_flatten(a, 4, true, 100, fa, NULL), 2);
	assert_int_equal(lb_results_flatten(b, 4, true, 100, fb, NULL), 2);
	assert_int_equal(lb_results_flatten(c, 4, true, 100, fc, NULL), 2);
	const char *da = json_object_get_string(json_object_object_get(fa, "losses"));
	assert_true(strncmp(da, "sha256:", 7) == 0);
	assert_true(strlen(da) == 7 + 64 + 2 && strcmp(da + 71, "/5") == 0);
	assert_string_equal(da, json_object_get_string(json_object_object_get(fb, "losses")));
	assert_string_not_equal(da, json_object_get_string(json_object_object_get(fc, "losses")));
	/* without digests a long array is left out, and counted */
	json_object *fd = json_object_new_object();
	size_t dropped = 0;
	assert_int_equal(lb_results_flatten(a, 4, false, 100, fd, &dropped), 1);
	assert_int_equal(dropped, 1);
	assert_null(json_object_object_get(fd, "losses"));
	json_object *objs[] = {a, b, c, fa, fb, fc, fd};
	for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
		json_object_put(objs[i]);
}

static void test_flatten_cap(void **state)
{
	(void)state;
	json_object *doc = parse("{\"a\": 1, \"b\": 2, \"c\": {\"d\": 3, \"e\": 4}}");
	json_object *out = json_object_new_object();
	size_t dropped = 0;
	/* Indexed: the values past the cap are counted as dropped. */
	assert_int_equal(lb_results_flatten(doc, 64, false, 3, out, &dropped), 3);
	assert_int_equal(dropped, 1);
	assert_false(json_object_object_get_ex(out, "labbox.rest", NULL));
	/* Compared: they are one value, the rest's digest, which changes with any of them. */
	json_object *cmp = json_object_new_object(), *cmp2 = json_object_new_object();
	json_object *doc2 = parse("{\"a\": 1, \"b\": 2, \"c\": {\"d\": 3, \"e\": 5}}");
	assert_int_equal(lb_results_flatten(doc, 64, true, 3, cmp, &dropped), 3);
	assert_int_equal(dropped, 0);
	assert_int_equal(lb_results_flatten(doc2, 64, true, 3, cmp2, &dropped), 3);
	json_object *r1, *r2;
	assert_true(json_object_object_get_ex(cmp, "labbox.rest", &r1));
	assert_true(json_object_object_get_ex(cmp2, "labbox.rest", &r2));
	assert_string_not_equal(json_object_get_string(r1), json_object_get_string(r2));
	json_object_put(cmp);
	json_object_put(cmp2);
	json_object_put(doc2);
	/* A member whose path is too long to name is compared under a cut name and a digest. */
	char big[1300];
	memset(big, 'k', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	json_object *wide = json_object_new_object();
	json_object_object_add(wide, big, json_object_new_int(7));
	cmp = json_object_new_object();
	assert_int_equal(lb_results_flatten(wide, 64, true, 100, cmp, &dropped), 1);
	assert_int_equal(dropped, 0);
	json_object_put(cmp);
	cmp = json_object_new_object();
	assert_int_equal(lb_results_flatten(wide, 64, false, 100, cmp, &dropped), 0);
	assert_int_equal(dropped, 1);
	json_object_put(cmp);
	json_object_put(wide);
	json_object *arr = json_object_new_array();
	assert_true(lb_results_flatten(doc, 64, true, 3, arr, NULL) == -EINVAL);
	json_object_put(arr);
	json_object_put(out);
	json_object_put(doc);
}

/* An object's digest does not depend on its members' order, and an object of many members
 * in reverse order is digested in n log n (an insertion sort took minutes at this size). */
static void test_digest_member_order(void **state)
{
	(void)state;
	enum { N = 300000 };
	json_object *fwd = json_object_new_object(), *rev = json_object_new_object();
	char key[32];
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof key, "m%07d", i);
		json_object_object_add(fwd, key, json_object_new_int(i));
		snprintf(key, sizeof key, "m%07d", N - 1 - i);
		json_object_object_add(rev, key, json_object_new_int(N - 1 - i));
	}
	char d1[72], d2[72];
	lb_metric_value_digest(fwd, d1);
	lb_metric_value_digest(rev, d2);
	assert_string_equal(d1, d2);
	json_object_object_add(rev, "m0000000", json_object_new_int(7));
	lb_metric_value_digest(rev, d2);
	assert_string_not_equal(d1, d2);
	json_object_put(fwd);
	json_object_put(rev);
}

static void test_values_equal(void **state)
{
	(void)state;
	json_object *one = json_object_new_int(1), *onef = json_object_new_double(1.0),
		    *two = json_object_new_double(2.0), *s1 = json_object_new_string("1"),
		    *nan_s = json_object_new_string("NaN"), *nan_d = json_object_new_double(NAN),
		    *inf_s = json_object_new_string("Infinity"), *t = json_object_new_boolean(1),
		    *f = json_object_new_boolean(0), *adam = json_object_new_string("adam");
	json_object *adam2 = json_object_new_string("adam");
	/* Integers past what a double holds exactly are compared and digested exactly. */
	json_object *big1 = json_object_new_int64((INT64_C(1) << 60) + 62),
		    *big2 = json_object_new_int64((INT64_C(1) << 60) + 993),
		    *big1b = json_object_new_int64((INT64_C(1) << 60) + 62);
	assert_false(lb_metric_values_equal(big1, big2));
	assert_true(lb_metric_values_equal(big1, big1b));
	char d1[72], d2[72];
	lb_metric_value_digest(big1, d1);
	lb_metric_value_digest(big2, d2);
	assert_string_not_equal(d1, d2);
	json_object_put(big1);
	json_object_put(big2);
	json_object_put(big1b);
	assert_true(lb_metric_values_equal(one, onef));
	assert_false(lb_metric_values_equal(one, two));
	assert_false(lb_metric_values_equal(one, s1)); /* a number is never a string */
	assert_true(lb_metric_values_equal(nan_s, nan_d));
	assert_true(lb_metric_values_equal(nan_d, nan_d));
	assert_false(lb_metric_values_equal(nan_s, inf_s));
	assert_false(lb_metric_values_equal(t, f));
	assert_true(lb_metric_values_equal(adam, adam2));
	assert_true(lb_metric_values_equal(NULL, NULL));
	assert_false(lb_metric_values_equal(NULL, one));
	json_object *objs[] = {one, onef, two, s1, nan_s, nan_d, inf_s, t, f, adam, adam2};
	for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
		json_object_put(objs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flatten_ai_scientist),
		cmocka_unit_test(test_flatten_arrays),
		cmocka_unit_test(test_flatten_cap),
		cmocka_unit_test(test_values_equal),
		cmocka_unit_test(test_digest_member_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
