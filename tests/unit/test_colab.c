/* backend/colab: the parsers of what a Colab worker writes into the shared folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int exit_of(const char *text, lb_colab_exit *e, char *err)
{
	return lb_colab_exit_parse(text, strlen(text), e, err, 256);
}

static void test_exit_record(void **state)
{
	(void)state;
	lb_colab_exit e;
	char err[256] = "";
	assert_int_equal(exit_of("{\"schema\": \"labbox.colab.exit/1\", \"status\": \"exited\", "
				 "\"exit_code\": 3, \"signal\": null, \"timed_out\": false, "
				 "\"wall_s\": 1.5, \"worker\": \"w1\", \"host\": \"colab\", "
				 "\"uid\": 0, \"max_rss_bytes\": 1024}\n",
				 &e, err),
			 0);
	assert_string_equal(e.status, "exited");
	assert_int_equal(e.exit_code, 3);
	assert_int_equal(e.signal, 0);
	assert_string_equal(e.worker, "w1");
	assert_int_equal(e.uid, 0);
	assert_int_equal(e.max_rss_bytes, 1024);
	assert_true(e.wall_s == 1.5);
	assert_int_equal(exit_of("{\"schema\": \"labbox.colab.exit/1\", \"status\": \"timeout\", "
				 "\"timed_out\": true, \"signal\": 15}", &e, err),
			 0);
	assert_true(e.timed_out);
	assert_int_equal(e.exit_code, -1);
	assert_int_equal(e.signal, 15);
}

static void test_exit_record_refusals_name_the_problem(void **state)
{
	(void)state;
	lb_colab_exit e;
	char err[256];
	static const struct {
		const char *text, *says;
	} bad[] = {
		{"not json", "not a JSON document"},
		{"[1]", "not a labbox.colab.exit/1"},
		{"{\"schema\": \"labbox.colab.job/1\", \"status\": \"exited\"}", "not a labbox.colab.exit/1"},
		{"{\"schema\": \"labbox.colab.exit/1\"}", "'status' is missing"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": 7}", "'status' is not a string"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"won\"}", "is not one of"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"exited\"}", "without an exit_code"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"exited\", \"exit_code\": 300}", "out of range"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"exited\", \"exit_code\": \"0\"}", "not a number"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"timeout\", \"timed_out\": 1}", "not a boolean"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"signaled\"}", "without a signal"},
		{"{\"schema\": \"labbox.colab.exit/1\", \"status\": \"error\"} trailing", "not a JSON document"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		assert_int_not_equal(exit_of(bad[i].text, &e, err), 0);
		if (!strstr(err, bad[i].says))
			fail_msg("'%s': error '%s' does not say '%s'", bad[i].text, err, bad[i].says);
	}
	/* Deeply nested input stops at json-c's depth limit instead of recursing. */
	char deep[4096];
	size_t n = 0;
	n += (size_t)snprintf(deep, sizeof deep, "{\"schema\": \"labbox.colab.exit/1\", \"x\": ");
	for (int i = 0; i < 100; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	assert_int_not_equal(exit_of(deep, &e, err), 0);
}

static void test_strings_are_bounded_and_cleaned(void **state)
{
	(void)state;
	lb_colab_exit e;
	char err[256];
	char text[2048];
	char longname[600];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	snprintf(text, sizeof text,
		 "{\"schema\": \"labbox.colab.exit/1\", \"status\": \"error\", \"worker\": \"%s\", "
		 "\"error\": \"bad\\u001b[2J\\nthing\"}",
		 longname);
	assert_int_equal(exit_of(text, &e, err), 0);
	assert_int_equal(strlen(e.worker), sizeof e.worker - 1);
	assert_string_equal(e.error, "bad?[2J?thing");
}

static void test_heartbeat(void **state)
{
	(void)state;
	lb_colab_heartbeat h;
	char err[256];
	const char *good = "{\"schema\": \"labbox.colab.heartbeat/1\", \"worker\": \"w\", \"beat\": 4, "
			   "\"time\": \"2026-12-01T13:15:21.000Z\", \"elapsed_s\": 2.5, \"log_bytes\": 10}";
	assert_int_equal(lb_colab_heartbeat_parse(good, strlen(good), &h, err, sizeof err), 0);
	assert_int_equal(h.beat, 4);
	assert_int_equal(h.log_bytes, 10);
	assert_string_equal(h.time, "2026-12-01T13:15:21.000Z");
	const char *nobeat = "{\"schema\": \"labbox.colab.heartbeat/1\", \"worker\": \"w\"}";
	assert_int_not_equal(lb_colab_heartbeat_parse(nobeat, strlen(nobeat), &h, err, sizeof err), 0);
	assert_non_null(strstr(err, "'beat' is missing"));
	const char *noworker = "{\"schema\": \"labbox.colab.heartbeat/1\", \"beat\": 1}";
	assert_int_not_equal(lb_colab_heartbeat_parse(noworker, strlen(noworker), &h, err, sizeof err), 0);
	/* A record too large to be one is refused before it is parsed. */
	static char big[70 << 10];
	memset(big, ' ', sizeof big);
	assert_int_not_equal(lb_colab_heartbeat_parse(big, sizeof big, &h, err, sizeof err), 0);
	assert_non_null(strstr(err, "larger than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_record),
		cmocka_unit_test(test_exit_record_refusals_name_the_problem),
		cmocka_unit_test(test_strings_are_bounded_and_cleaned),
		cmocka_unit_test(test_heartbeat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
