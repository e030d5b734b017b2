/* Unit tests for collect: metric lines, the streaming collector, results files, validation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "labbox/collect.h"

/* A whole document of seed-template output, used by several tests. */
static const char seed_output[] =
	"TIME_ESTIMATE: 12s\n"
	"# comment: 1\n"
	"condition: baseline\n"
	"accuracy: 0.93\n"
	"loss: -1e-3\n"
	"model: resnet-50\n"
	"condition: lr=0.1\n"
	"accuracy: +5\n"
	"loss: nan\n"
	"loss: 2.5E+2\n"
	"loss: 0.25\n"
	"condition: lr=1.0\n"
	"accuracy: 0.5\n"
	"loss: -Infinity\n"
	"TIME_GUARD: 240.1s \xe2\x80\x94 saving partial results\n"
	"Total time: 250.3s\n";

static lb_metrics *collect(const char *data, size_t len)
{
	lb_metrics *m = NULL;

	assert_int_equal(lb_metrics_new(&m), 0);
	lb_metrics_feed(m, data, len);
	lb_metrics_finish(m);
	return m;
}

static char *to_json_text(const lb_metrics *m)
{
	struct json_object *doc = lb_metrics_to_json(m);
	char *s;

	assert_non_null(doc);
	s = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	return s;
}

static struct json_object *get(struct json_object *obj, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, "/", &save); k; k = strtok_r(NULL, "/", &save)) {
		struct json_object *next = NULL;

		if (!json_object_object_get_ex(obj, k, &next))
			fail_msg("no key %s in %s", k, path);
		obj = next;
	}
	return obj;
}

static void assert_double(struct json_object *o, double want)
{
	assert_true(json_object_is_type(o, json_type_double));
	assert_true(fabs(json_object_get_double(o) - want) < 1e-12 * (1 + fabs(want)));
}

static void assert_str(struct json_object *o, const char *want)
{
	assert_true(json_object_is_type(o, json_type_string));
	assert_string_equal(json_object_get_string(o), want);
}

/* Numbers ------------------------------------------------------------------------------- */

static bool num(const char *s, double *v)
{
	return lb_parse_number(s, strlen(s), v);
}

static void test_parse_number_values(void **state)
{
	static const struct {
		const char *text;
		double want;
	} cases[] = {
		{ "0.93", 0.93 },    { "-1e-3", -0.001 }, { "+5", 5 },	     { "1E10", 1e10 },
		{ "2.5e+2", 250 },   { "-7.5E-1", -0.75 }, { ".5", 0.5 },	     { "5.", 5 },
		{ "  3.25\t", 3.25 }, { "42", 42 },	    { "-0.0", -0.0 },   { "1e-300", 1e-300 },
	};
	double v;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(num(cases[i].text, &v));
		assert_true(v == cases[i].want);
	}
	assert_true(num("-0", &v));
	assert_true(v == 0 && signbit(v));
	assert_true(num("+0", &v));
	assert_true(v == 0 && !signbit(v));
	/* Python's float() overflows to inf; so does this, and validation flags it. */
	assert_true(num("1e400", &v));
	assert_true(isinf(v) && v > 0);
	assert_true(num("-1e400", &v));
	assert_true(isinf(v) && v < 0);
	/* Only len bytes are read: the rest of the buffer is not part of the number. */
	assert_true(lb_parse_number("12.5s", 4, &v));
	assert_true(v == 12.5);
}

static void test_parse_number_nonfinite_spellings(void **state)
{
	static const char *const nans[] = { "nan", "NaN", "NAN", "nAn", "-nan", "+nan", " nan " };
	static const char *const pos_inf[] = { "inf",	   "Inf",      "INF",	   "+inf",
					       "infinity", "Infinity", "INFINITY", "+Infinity" };
	static const char *const neg_inf[] = { "-inf", "-Inf", "-INF", "-infinity", "-Infinity",
					       "-INFINITY" };
	double v;

	(void)state;
	for (size_t i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
		v = 0;
		assert_true(num(nans[i], &v));
		assert_true(isnan(v));
	}
	for (size_t i = 0; i < sizeof(pos_inf) / sizeof(pos_inf[0]); i++) {
		assert_true(num(pos_inf[i], &v));
		assert_true(isinf(v) && v > 0);
	}
	for (size_t i = 0; i < sizeof(neg_inf) / sizeof(neg_inf[0]); i++) {
		assert_true(num(neg_inf[i], &v));
		assert_true(isinf(v) && v < 0);
	}
}

static void test_parse_number_rejects(void **state)
{
	static const char *const bad[] = { "1.5s",  "",	   " ",	      "-",	   "+",	   ".",
					   "e5",    "1e",  "1e+",     "0x10",	   "1,5",  "nan0",
					   "infinit", "inff", "1_000", "--1",	   "1 2",  "tensor(0.5)",
					   "12%",   "N/A", "+-1",     "1e5.5",	   "..5",  "nana" };
	double v = 123;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (num(bad[i], &v))
			fail_msg("accepted \"%s\" as %g", bad[i], v);
	}
	assert_false(lb_parse_number(NULL, 0, &v));
}

static void test_parse_number_ignores_locale(void **state)
{
	const char *loc = setlocale(LC_NUMERIC, "de_DE.UTF-8");
	double v = 0;

	(void)state;
	if (!loc)
		loc = setlocale(LC_NUMERIC, "fr_FR.UTF-8");
	/* Hosts without such a locale still run the rest; the check is then trivially true. */
	assert_true(num("0.25", &v));
	assert_true(v == 0.25);
	setlocale(LC_NUMERIC, "C");
}

/* Lines --------------------------------------------------------------------------------- */

static void test_line_parse_metrics(void **state)
{
	lb_metric_line ml;
	char longname[LB_METRIC_NAME_MAX + 8];

	(void)state;
	assert_true(lb_metric_line_parse("accuracy: 0.93", 14, &ml));
	assert_string_equal(ml.name, "accuracy");
	assert_int_equal(ml.kind, LB_METRIC_NUMBER);
	assert_true(ml.number == 0.93);

	assert_true(lb_metric_line_parse("   loss : -1e-3\r", 16, &ml));
	assert_string_equal(ml.name, "loss");
	assert_int_equal(ml.kind, LB_METRIC_NUMBER);
	assert_true(ml.number == -0.001);

	assert_true(lb_metric_line_parse("model: resnet-50  ", 18, &ml));
	assert_int_equal(ml.kind, LB_METRIC_STRING);
	assert_int_equal(ml.str_len, 9);
	assert_memory_equal(ml.str, "resnet-50", 9);

	assert_true(lb_metric_line_parse("val/top-1.acc:\t+5", 17, &ml));
	assert_string_equal(ml.name, "val/top-1.acc");
	assert_true(ml.number == 5);

	assert_true(lb_metric_line_parse("url: http://x:8080/y", 20, &ml));
	assert_int_equal(ml.kind, LB_METRIC_STRING);
	assert_memory_equal(ml.str, "http://x:8080/y", 15);

	/* A numeric value keeps a metric whose name looks like an exception class. */
	assert_true(lb_metric_line_parse("TrainError: 0.5", 15, &ml));
	assert_true(ml.number == 0.5);

	memset(longname, 'a', LB_METRIC_NAME_MAX);
	memcpy(longname + LB_METRIC_NAME_MAX, ": 1", 4);
	assert_true(lb_metric_line_parse(longname, strlen(longname), &ml));
	assert_int_equal(strlen(ml.name), LB_METRIC_NAME_MAX);
}

static void test_line_parse_non_metrics(void **state)
{
	static const char *const lines[] = {
		"# accuracy: 0.5",
		"   # loss: 1",
		"Traceback (most recent call last):",
		"  File \"/exp/train.py\", line 3, in <module>",
		"ValueError: could not convert string to float: 'x'",
		"torch.cuda.OutOfMemoryError: CUDA out of memory.",
		"Total time: 12.3s",
		"accuracy:0.5",
		"accuracy:",
		"accuracy:    ",
		"1abc: 2",
		"-x: 1",
		": 5",
		"",
		"plain text line",
		"name = 3",
	};
	char longname[LB_METRIC_NAME_MAX + 8];
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (lb_metric_line_parse(lines[i], strlen(lines[i]), &ml))
			fail_msg("\"%s\" parsed as a metric", lines[i]);
	}
	memset(longname, 'a', LB_METRIC_NAME_MAX + 1);
	memcpy(longname + LB_METRIC_NAME_MAX + 1, ": 1", 4);
	assert_false(lb_metric_line_parse(longname, strlen(longname), &ml));
}

/* Streaming collector ---------------------------------------------------------------------- */

static void test_stream_seed_output(void **state)
{
	lb_metrics *m = collect(seed_output, sizeof(seed_output) - 1);
	struct json_object *doc = lb_metrics_to_json(m);
	struct json_object *order, *rep;
	const char *text;

	(void)state;
	assert_non_null(doc);
	/* 3 in baseline, 2 in each other condition; the repeated loss counts once. */
	assert_int_equal(lb_metrics_count(m), 7);
	assert_true(lb_metrics_time_estimate(m) == 12);
	assert_true(lb_metrics_time_guard_fired(m));

	assert_int_equal(json_object_object_length(get(doc, "values")), 0);
	order = get(doc, "condition_order");
	assert_int_equal(json_object_array_length(order), 3);
	assert_str(json_object_array_get_idx(order, 0), "baseline");
	assert_str(json_object_array_get_idx(order, 1), "lr=0.1");
	assert_str(json_object_array_get_idx(order, 2), "lr=1.0");

	assert_double(get(doc, "conditions/baseline/accuracy"), 0.93);
	assert_double(get(doc, "conditions/baseline/loss"), -0.001);
	assert_str(get(doc, "conditions/baseline/model"), "resnet-50");
	assert_double(get(doc, "conditions/lr=0.1/accuracy"), 5);
	/* The last of the repeated values wins. */
	assert_double(get(doc, "conditions/lr=0.1/loss"), 0.25);
	assert_str(get(doc, "conditions/lr=1.0/loss"), "-Infinity");
	assert_double(get(doc, "time_estimate_s"), 12);
	assert_str(get(doc, "time_guard"), "240.1s \xe2\x80\x94 saving partial results");

	rep = get(doc, "repeats");
	assert_int_equal(json_object_array_length(rep), 1);
	assert_str(get(json_object_array_get_idx(rep, 0), "metric"), "loss");
	assert_str(get(json_object_array_get_idx(rep, 0), "condition"), "lr=0.1");
	assert_int_equal(json_object_get_int(get(json_object_array_get_idx(rep, 0), "seen")), 3);

	/* Keys keep insertion order, and the document stays strict JSON. */
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	assert_non_null(strstr(text, "{\"accuracy\":0.93,\"loss\":-0.001,\"model\":\"resnet-50\"}"));
	assert_non_null(strstr(text, "\"loss\":\"-Infinity\""));
	assert_null(strstr(text, ":NaN"));
	assert_null(strstr(text, ":-Infinity"));
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_stream_values_before_conditions(void **state)
{
	static const char out[] = "epochs: 10\nnote: fine\ncondition: A\nx: 1\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m);

	(void)state;
	assert_double(get(doc, "values/epochs"), 10);
	assert_str(get(doc, "values/note"), "fine");
	assert_double(get(doc, "conditions/A/x"), 1);
	assert_true(json_object_get_type(get(doc, "time_estimate_s")) == json_type_null);
	assert_true(json_object_get_type(get(doc, "time_guard")) == json_type_null);
	assert_false(lb_metrics_time_guard_fired(m));
	assert_true(lb_metrics_time_estimate(m) < 0);
	/* Same-named metric in another group is a different metric, not a repeat. */
	assert_false(json_object_object_get_ex(doc, "repeats", NULL));
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_stream_crlf(void **state)
{
	static const char unix_out[] = "condition: a\nx: 1\ny: two\n";
	static const char dos_out[] = "condition: a\r\nx: 1\r\ny: two\r\n";
	lb_metrics *u = collect(unix_out, sizeof(unix_out) - 1);
	lb_metrics *d = collect(dos_out, sizeof(dos_out) - 1);
	char *ju = to_json_text(u), *jd = to_json_text(d);

	(void)state;
	assert_string_equal(ju, jd);
	assert_non_null(strstr(jd, "\"y\":\"two\""));
	free(ju);
	free(jd);
	lb_metrics_free(u);
	lb_metrics_free(d);
}

static void test_stream_split_every_position(void **state)
{
	const size_t len = sizeof(seed_output) - 1;
	lb_metrics *ref = collect(seed_output, len);
	char *want = to_json_text(ref);

	(void)state;
	for (size_t k = 0; k <= len; k++) {
		lb_metrics *m = NULL;
		char *got;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed(m, seed_output, k);
		lb_metrics_feed(m, seed_output + k, len - k);
		lb_metrics_finish(m);
		got = to_json_text(m);
		if (strcmp(got, want) != 0)
			fail_msg("split at %zu:\n%s\nwant\n%s", k, got, want);
		free(got);
		lb_metrics_free(m);
	}
	/* Byte by byte, and in three pieces at every pair of positions of a shorter text. */
	{
		lb_metrics *m = NULL;
		char *got;

		assert_int_equal(lb_metrics_new(&m), 0);
		for (size_t i = 0; i < len; i++)
			lb_metrics_feed(m, seed_output + i, 1);
		lb_metrics_finish(m);
		got = to_json_text(m);
		assert_string_equal(got, want);
		free(got);
		lb_metrics_free(m);
	}
	for (size_t a = 0; a <= 60; a++) {
		for (size_t b = a; b <= 60; b++) {
			lb_metrics *m = NULL, *r = collect(seed_output, 60);
			char *got, *w = to_json_text(r);

			assert_int_equal(lb_metrics_new(&m), 0);
			lb_metrics_feed(m, seed_output, a);
			lb_metrics_feed(m, seed_output + a, b - a);
			lb_metrics_feed(m, seed_output + b, 60 - b);
			lb_metrics_finish(m);
			got = to_json_text(m);
			assert_string_equal(got, w);
			free(got);
			free(w);
			lb_metrics_free(m);
			lb_metrics_free(r);
		}
	}
	free(want);
	lb_metrics_free(ref);
}

static void test_stream_last_line_without_newline(void **state)
{
	lb_metrics *m = NULL;
	struct json_object *doc;

	(void)state;
	assert_int_equal(lb_metrics_new(&m), 0);
	lb_metrics_feed(m, "a: 1\nb: 2", 9);
	assert_int_equal(lb_metrics_count(m), 1);
	lb_metrics_finish(m);
	assert_int_equal(lb_metrics_count(m), 2);
	doc = lb_metrics_to_json(m);
	assert_double(get(doc, "values/b"), 2);
	json_object_put(doc);
	lb_metrics_free(m);
}

static void feed_in_chunks(lb_metrics *m, const char *data, size_t len, size_t chunk)
{
	for (size_t i = 0; i < len; i += chunk)
		lb_metrics_feed(m, data + i, len - i < chunk ? len - i : chunk);
}

static void test_stream_overlong_line_skipped(void **state)
{
	static const size_t chunks[] = { 1, 7, 100, 4096, 1 << 20 };
	const size_t big = 3 * LB_METRIC_LINE_MAX;
	char *text = malloc(big + 64);
	size_t len;

	(void)state;
	/* "junk: xxxx...x" longer than the buffer, then metrics that must still be read. */
	memcpy(text, "junk: ", 6);
	memset(text + 6, 'x', big);
	len = 6 + big;
	len += (size_t)sprintf(text + len, "\nafter: 1\nsecond: 2\n");
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		lb_metrics *m = NULL;
		struct json_object *doc;

		assert_int_equal(lb_metrics_new(&m), 0);
		feed_in_chunks(m, text, len, chunks[c]);
		lb_metrics_finish(m);
		doc = lb_metrics_to_json(m);
		assert_int_equal(lb_metrics_count(m), 2);
		assert_false(json_object_object_get_ex(get(doc, "values"), "junk", NULL));
		assert_double(get(doc, "values/after"), 1);
		assert_double(get(doc, "values/second"), 2);
		assert_int_equal(json_object_get_int(get(doc, "long_lines_skipped")), 1);
		json_object_put(doc);
		lb_metrics_free(m);
	}
	free(text);
}

static void test_stream_line_at_limit_kept(void **state)
{
	char *text = malloc(LB_METRIC_LINE_MAX + 32);
	lb_metrics *m;
	struct json_object *doc;
	size_t len;

	(void)state;
	/* Exactly LB_METRIC_LINE_MAX bytes before the newline: still a metric. */
	memcpy(text, "s: ", 3);
	memset(text + 3, 'y', LB_METRIC_LINE_MAX - 3);
	len = LB_METRIC_LINE_MAX;
	text[len++] = '\n';
	m = NULL;
	assert_int_equal(lb_metrics_new(&m), 0);
	feed_in_chunks(m, text, len, 1000);
	lb_metrics_finish(m);
	assert_int_equal(lb_metrics_count(m), 1);
	doc = lb_metrics_to_json(m);
	/* Stored strings are capped, and the cut is marked with an ellipsis. */
	assert_true(json_object_get_string_len(get(doc, "values/s")) <= 520);
	assert_non_null(strstr(json_object_get_string(get(doc, "values/s")), "\xe2\x80\xa6"));
	json_object_put(doc);
	lb_metrics_free(m);
	free(text);
}

static void test_stream_comments_and_tracebacks_ignored(void **state)
{
	static const char out[] = "# accuracy: 0.1\n"
				  "Traceback (most recent call last):\n"
				  "  File \"/exp/train.py\", line 9, in <module>\n"
				  "    main()\n"
				  "ValueError: something: bad\n"
				  "accuracy: 0.9\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m);

	(void)state;
	assert_int_equal(lb_metrics_count(m), 1);
	assert_double(get(doc, "values/accuracy"), 0.9);
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_time_estimate_spellings(void **state)
{
	static const struct {
		const char *line;
		double want;
	} cases[] = {
		{ "TIME_ESTIMATE: 12s\n", 12 },	       { "TIME_ESTIMATE: 12.5\n", 12.5 },
		{ "TIME_ESTIMATE: 2m\n", 120 },	       { "TIME_ESTIMATE: 1.5 h\n", 5400 },
		{ "TIME_ESTIMATE: ~30 sec\n", 30 },    { "TIME_ESTIMATE: 3 minutes\n", 180 },
		{ "TIME_ESTIMATE: 250ms\n", 0.25 },    { "TIME_ESTIMATE: 1e2s\n", 100 },
		{ "TIME_ESTIMATE: soon\n", -1 },       { "TIME_ESTIMATE: 12 parsecs\n", -1 },
		{ "TIME_ESTIMATE: -5s\n", -1 },	       { "TIME_ESTIMATE: nan\n", -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lb_metrics *m = collect(cases[i].line, strlen(cases[i].line));

		if (fabs(lb_metrics_time_estimate(m) - cases[i].want) > 1e-9)
			fail_msg("%s -> %g", cases[i].line, lb_metrics_time_estimate(m));
		/* Special names are not metrics. */
		assert_int_equal(lb_metrics_count(m), 0);
		lb_metrics_free(m);
	}
	{
		/* An unreadable estimate does not erase a readable one. */
		static const char two[] = "TIME_ESTIMATE: 10s\nTIME_ESTIMATE: later\n";
		lb_metrics *m = collect(two, sizeof(two) - 1);

		assert_true(lb_metrics_time_estimate(m) == 10);
		lb_metrics_free(m);
	}
}

static void test_stream_caps(void **state)
{
	lb_metrics *m = NULL;
	struct json_object *doc;
	char line[64];

	(void)state;
	assert_int_equal(lb_metrics_new(&m), 0);
	for (int i = 0; i < 10005; i++) {
		int n = snprintf(line, sizeof(line), "metric_%d: %d\n", i, i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	assert_int_equal(lb_metrics_count(m), 10000);
	/* A repeat of a kept name still updates it at the cap. */
	lb_metrics_feed(m, "metric_0: 42\n", 13);
	for (int i = 0; i < 1003; i++) {
		int n = snprintf(line, sizeof(line), "condition: c%d\n", i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	lb_metrics_feed(m, "late: 1\n", 8);
	lb_metrics_finish(m);
	doc = lb_metrics_to_json(m);
	assert_double(get(doc, "values/metric_0"), 42);
	assert_int_equal(json_object_get_int(get(doc, "dropped_metrics")), 6);
	assert_int_equal(json_object_array_length(get(doc, "condition_order")), 1000);
	assert_int_equal(json_object_get_int(get(doc, "dropped_conditions")), 3);
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_stream_invalid_utf8_and_nul(void **state)
{
	static const char out[] = "label: caf\xc3\xa9 \xff\xfe ok\nnul: a\0b\ncondition: \xc0\xaf\nx: 1\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m);
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	struct json_tokener *tok = json_tokener_new();
	struct json_object *back;

	(void)state;
	assert_str(get(doc, "values/label"), "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd ok");
	assert_str(get(doc, "values/nul"), "a\xef\xbf\xbd" "b");
	/* The output passes a validating parser. */
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8 | JSON_TOKENER_STRICT);
	back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	assert_non_null(back);
	json_object_put(back);
	json_tokener_free(tok);
	json_object_put(doc);
	lb_metrics_free(m);
}

/* results files -------------------------------------------------------------------------- */

typedef struct tmpdir {
	char path[64];
	int fd;
} tmpdir;

static int tmpdir_setup(void **state)
{
	tmpdir *t = calloc(1, sizeof(*t));

	snprintf(t->path, sizeof(t->path), "/tmp/lb-test-collect-XXXXXX");
	if (!mkdtemp(t->path))
		return -1;
	t->fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = t;
	return t->fd < 0 ? -1 : 0;
}

static int tmpdir_teardown(void **state)
{
	tmpdir *t = *state;
	char cmd[128];

	close(t->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->path);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

static void write_at(tmpdir *t, const char *name, const char *data, size_t len)
{
	int fd = openat(t->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static int parse_text(const char *s, struct json_object **out, char *err, size_t errlen)
{
	return lb_results_parse(s, strlen(s), out, err, errlen);
}

static void test_json_c_reads_python_nonfinite(void **state)
{
	/* What Python's json.dump writes for float('nan'), float('inf'), -float('inf'). */
	static const char doc[] = "{\"a\": NaN, \"b\": Infinity, \"c\": -Infinity, \"d\": [NaN, 1.5]}";
	struct json_object *o = NULL;
	char err[128] = "";

	(void)state;
	assert_int_equal(parse_text(doc, &o, err, sizeof(err)), 0);
	assert_true(json_object_is_type(get(o, "a"), json_type_double));
	assert_true(isnan(json_object_get_double(get(o, "a"))));
	assert_true(isinf(json_object_get_double(get(o, "b"))) &&
		    json_object_get_double(get(o, "b")) > 0);
	assert_true(isinf(json_object_get_double(get(o, "c"))) &&
		    json_object_get_double(get(o, "c")) < 0);
	assert_true(isnan(json_object_get_double(json_object_array_get_idx(get(o, "d"), 0))));
	json_object_put(o);
}

static void test_results_parse_rejects(void **state)
{
	static const char *const bad[] = { "",	       "   ",	      "{",	     "{\"a\": 1} x",
					   "[1] [2]",  "42",	      "\"text\"",    "null",
					   "NaN",      "{\"a\": \xff}", "{\"a\": \"\xff\"}" };
	struct json_object *o = (struct json_object *)1;
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse_text(bad[i], &o, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_null(o);
		assert_true(err[0] != '\0');
	}
	/* A NUL byte inside the document. */
	assert_int_equal(lb_results_parse("{\"a\":1}\0{}", 10, &o, err, sizeof(err)), -EINVAL);
	assert_int_equal(lb_results_parse("[1,\0 2]", 7, &o, err, sizeof(err)), -EINVAL);
	/* Nesting is bounded: 24 levels read, 25 refused. */
	{
		char deep[50];

		memset(deep, '[', 25);
		memset(deep + 25, ']', 25);
		assert_int_equal(lb_results_parse(deep, sizeof(deep), &o, err, sizeof(err)),
				 -EINVAL);
		assert_int_equal(lb_results_parse(deep + 1, sizeof(deep) - 2, &o, err, sizeof(err)),
				 0);
		json_object_put(o);
	}
}

static void test_results_parse_accepts(void **state)
{
	struct json_object *o = NULL;
	char err[128];

	(void)state;
	/* A BOM, surrounding whitespace, and an array at the top level. */
	assert_int_equal(parse_text("\xef\xbb\xbf {\"a\": 1}\n\n", &o, err, sizeof(err)), 0);
	assert_int_equal(json_object_get_int(get(o, "a")), 1);
	json_object_put(o);
	assert_int_equal(parse_text("[{\"loss\": 0.5}]", &o, err, sizeof(err)), 0);
	assert_true(json_object_is_type(o, json_type_array));
	json_object_put(o);
	/* Not NUL-terminated: only len bytes are read. */
	assert_int_equal(lb_results_parse("{\"a\": 2}garbage", 8, &o, err, sizeof(err)), 0);
	json_object_put(o);
}

static void test_results_read_regular(void **state)
{
	static const char doc[] = "{\"baseline\": {\"accuracy\": 0.93, \"loss\": NaN}}\n";
	tmpdir *t = *state;
	struct json_object *o = NULL;
	char err[256] = "";

	write_at(t, "results.json", doc, sizeof(doc) - 1);
	assert_int_equal(lb_results_read(t->fd, "results.json", 1 << 20, &o, err, sizeof(err)), 0);
	assert_double(get(o, "baseline/accuracy"), 0.93);
	assert_true(isnan(json_object_get_double(get(o, "baseline/loss"))));
	json_object_put(o);

	/* A sub-directory path works when no component is a link. */
	assert_int_equal(mkdirat(t->fd, "out", 0755), 0);
	write_at(t, "out/final_info.json", doc, sizeof(doc) - 1);
	assert_int_equal(lb_results_read(t->fd, "out/final_info.json", 1 << 20, &o, err,
					 sizeof(err)),
			 0);
	json_object_put(o);
	assert_int_equal(lb_results_read(t->fd, "./out/final_info.json", 1 << 20, &o, err,
					 sizeof(err)),
			 0);
	json_object_put(o);
}

static void test_results_read_refusals(void **state)
{
	tmpdir *t = *state;
	struct json_object *o = (struct json_object *)1;
	char err[256];
	char big[4096];

	/* A hang here would mean the FIFO was opened blocking: the alarm ends the test. */
	alarm(10);
	assert_int_equal(mkfifoat(t->fd, "fifo.json", 0600), 0);
	err[0] = '\0';
	assert_int_equal(lb_results_read(t->fd, "fifo.json", 1 << 20, &o, err, sizeof(err)),
			 -EINVAL);
	assert_null(o);
	assert_non_null(strstr(err, "FIFO"));

	write_at(t, "real.json", "{}", 2);
	assert_int_equal(symlinkat("real.json", t->fd, "link.json"), 0);
	assert_int_equal(lb_results_read(t->fd, "link.json", 1 << 20, &o, err, sizeof(err)),
			 -ELOOP);
	assert_non_null(strstr(err, "symbolic link"));

	/* A symlink to the FIFO: refused as a link, still without blocking. */
	assert_int_equal(symlinkat("fifo.json", t->fd, "fifolink.json"), 0);
	assert_int_equal(lb_results_read(t->fd, "fifolink.json", 1 << 20, &o, err, sizeof(err)),
			 -ELOOP);

	/* A linked directory on the way is refused too. */
	assert_int_equal(mkdirat(t->fd, "d", 0755), 0);
	write_at(t, "d/r.json", "{}", 2);
	assert_int_equal(symlinkat("d", t->fd, "dl"), 0);
	assert_int_equal(lb_results_read(t->fd, "dl/r.json", 1 << 20, &o, err, sizeof(err)),
			 -ELOOP);
	assert_int_equal(lb_results_read(t->fd, "../x.json", 1 << 20, &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(lb_results_read(t->fd, "/etc/passwd", 1 << 20, &o, err, sizeof(err)),
			 -EINVAL);

	assert_int_equal(lb_results_read(t->fd, "absent.json", 1 << 20, &o, err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(lb_results_read(t->fd, "d", 1 << 20, &o, err, sizeof(err)), -EINVAL);

	memset(big, ' ', sizeof(big));
	big[0] = '[';
	big[sizeof(big) - 1] = ']';
	write_at(t, "big.json", big, sizeof(big));
	assert_int_equal(lb_results_read(t->fd, "big.json", sizeof(big) - 1, &o, err, sizeof(err)),
			 -EFBIG);
	assert_non_null(strstr(err, "limit"));
	assert_int_equal(lb_results_read(t->fd, "big.json", sizeof(big), &o, err, sizeof(err)), 0);
	json_object_put(o);

	write_at(t, "bad.json", "{\"a\": }", 7);
	assert_int_equal(lb_results_read(t->fd, "bad.json", 1 << 20, &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "bad.json: invalid JSON at byte"));
	alarm(0);
}

/* Sanitizing ----------------------------------------------------------------------------- */

static void test_json_number(void **state)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
		{ 0.1, "0.1" },	     { 0.93, "0.93" },	  { 5, "5.0" },		 { -0.0, "-0.0" },
		{ 1e300, "1e+300" }, { -1e-3, "-0.001" }, { 1.0 / 3, "0.3333333333333333" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *o = lb_json_number(cases[i].v);

		assert_true(json_object_is_type(o, json_type_double));
		assert_string_equal(json_object_to_json_string(o), cases[i].text);
		json_object_put(o);
	}
	{
		struct json_object *n = lb_json_number(NAN), *p = lb_json_number(INFINITY),
				   *q = lb_json_number(-INFINITY);

		assert_str(n, "NaN");
		assert_str(p, "Infinity");
		assert_str(q, "-Infinity");
		json_object_put(n);
		json_object_put(p);
		json_object_put(q);
	}
}

static void test_sanitize(void **state)
{
	static const char doc[] = "{\"a\": {\"b\": [NaN, 1., 1e400, -Infinity, 2]}, \"s\": \"NaN\","
				  " \"t\": true, \"n\": null, \"i\": 12345678901234567890}";
	struct json_object *o = NULL, *c, *back;
	struct json_tokener *tok;
	const char *text;
	char err[128];

	(void)state;
	assert_int_equal(parse_text(doc, &o, err, sizeof(err)), 0);
	c = lb_json_sanitize(o);
	assert_non_null(c);
	text = json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN);
	assert_string_equal(text, "{\"a\":{\"b\":[\"NaN\",1.0,\"Infinity\",\"-Infinity\",2]},"
				  "\"s\":\"NaN\",\"t\":true,\"n\":null,"
				  "\"i\":12345678901234567890}");
	/* A strict parser accepts the copy. */
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	assert_non_null(back);
	json_object_put(back);
	json_tokener_free(tok);
	/* The original still holds the doubles. */
	assert_true(isnan(json_object_get_double(json_object_array_get_idx(get(o, "a/b"), 0))));
	json_object_put(c);
	json_object_put(o);
}

/* Validation ----------------------------------------------------------------------------- */

static struct json_object *issue(struct json_object *issues, size_t i)
{
	return json_object_array_get_idx(issues, i);
}

static void test_validate_stdout_nonfinite(void **state)
{
	static const char out[] = "loss: nan\ncondition: B\nacc: 0.5\nloss: -inf\ncondition: C\n"
				  "loss: NaN\nok: 1\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *issues = json_object_new_array();

	(void)state;
	assert_int_equal(lb_metrics_validate(m, NULL, NULL, NULL, 0, issues), 3);
	assert_int_equal(json_object_array_length(issues), 3);
	assert_str(get(issue(issues, 0), "kind"), "nan");
	assert_str(get(issue(issues, 0), "metric"), "loss");
	assert_str(get(issue(issues, 0), "where"), "stdout");
	assert_str(get(issue(issues, 1), "kind"), "inf");
	assert_str(get(issue(issues, 1), "where"), "stdout condition B");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 1), "message")),
			       "-Infinity"));
	assert_str(get(issue(issues, 2), "where"), "stdout condition C");
	json_object_put(issues);
	lb_metrics_free(m);
}

static void test_validate_results_nested(void **state)
{
	static const char doc[] = "{\"baseline\": {\"metrics\": {\"loss\": NaN, \"acc\": 0.9}},"
				  " \"runs\": [{\"f1\": 0.1}, {\"f1\": Infinity}],"
				  " \"as_text\": {\"loss\": \"nan\"}, \"label\": \"banana\"}";
	struct json_object *o = NULL, *issues = json_object_new_array();
	char err[128];

	(void)state;
	assert_int_equal(parse_text(doc, &o, err, sizeof(err)), 0);
	assert_int_equal(lb_metrics_validate(NULL, o, "results.json", NULL, 0, issues), 3);
	assert_str(get(issue(issues, 0), "kind"), "nan");
	assert_str(get(issue(issues, 0), "metric"), "loss");
	assert_str(get(issue(issues, 0), "where"), "results.json at baseline.metrics.loss");
	assert_str(get(issue(issues, 1), "kind"), "inf");
	assert_str(get(issue(issues, 1), "metric"), "f1");
	assert_str(get(issue(issues, 1), "where"), "results.json at runs[1].f1");
	/* json.dump(default=str) writes numpy float32 NaN as "nan": still flagged. */
	assert_str(get(issue(issues, 2), "where"), "results.json at as_text.loss");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 2), "message")), "string"));
	json_object_put(issues);

	/* The file name given is the one reported. */
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate(NULL, o, "final_info.json", NULL, 0, issues), 3);
	assert_str(get(issue(issues, 0), "where"), "final_info.json at baseline.metrics.loss");
	json_object_put(issues);
	json_object_put(o);
}

static void test_validate_declared(void **state)
{
	static const char out[] = "condition: A\naccuracy: 0.9\n";
	static const char doc[] = "{\"A\": {\"eval\": {\"f1\": 0.5}}, \"top\": 1}";
	static const char *const declared[] = { "accuracy", "f1", "A.eval.f1", "eval",
						"precision", "A.f1" };
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *o = NULL, *issues = json_object_new_array();
	char err[128];

	(void)state;
	assert_int_equal(parse_text(doc, &o, err, sizeof(err)), 0);
	assert_int_equal(lb_metrics_validate(m, o, "results.json", declared, 6, issues), 2);
	assert_str(get(issue(issues, 0), "kind"), "missing");
	assert_str(get(issue(issues, 0), "metric"), "precision");
	assert_str(get(issue(issues, 0), "where"), "stdout and results.json");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 0), "message")),
			       "precision"));
	assert_str(get(issue(issues, 1), "metric"), "A.f1");
	json_object_put(issues);

	/* Without results, only stdout counts. */
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate(m, NULL, NULL, declared, 2, issues), 1);
	assert_str(get(issue(issues, 0), "metric"), "f1");
	assert_str(get(issue(issues, 0), "where"), "stdout");
	json_object_put(issues);
	json_object_put(o);
	lb_metrics_free(m);
}

static void test_validate_clean_run(void **state)
{
	static const char out[] = "condition: A\nacc: 0.9\nmodel: mlp\n";
	static const char *const declared[] = { "acc" };
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *issues = json_object_new_array();

	(void)state;
	assert_int_equal(lb_metrics_validate(m, NULL, NULL, declared, 1, issues), 0);
	assert_int_equal(json_object_array_length(issues), 0);
	json_object_put(issues);
	lb_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_number_values),
		cmocka_unit_test(test_parse_number_nonfinite_spellings),
		cmocka_unit_test(test_parse_number_rejects),
		cmocka_unit_test(test_parse_number_ignores_locale),
		cmocka_unit_test(test_line_parse_metrics),
		cmocka_unit_test(test_line_parse_non_metrics),
		cmocka_unit_test(test_stream_seed_output),
		cmocka_unit_test(test_stream_values_before_conditions),
		cmocka_unit_test(test_stream_crlf),
		cmocka_unit_test(test_stream_split_every_position),
		cmocka_unit_test(test_stream_last_line_without_newline),
		cmocka_unit_test(test_stream_overlong_line_skipped),
		cmocka_unit_test(test_stream_line_at_limit_kept),
		cmocka_unit_test(test_stream_comments_and_tracebacks_ignored),
		cmocka_unit_test(test_time_estimate_spellings),
		cmocka_unit_test(test_stream_caps),
		cmocka_unit_test(test_stream_invalid_utf8_and_nul),
		cmocka_unit_test(test_json_c_reads_python_nonfinite),
		cmocka_unit_test(test_results_parse_rejects),
		cmocka_unit_test(test_results_parse_accepts),
		cmocka_unit_test_setup_teardown(test_results_read_regular, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_results_read_refusals, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_json_number),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_validate_stdout_nonfinite),
		cmocka_unit_test(test_validate_results_nested),
		cmocka_unit_test(test_validate_declared),
		cmocka_unit_test(test_validate_clean_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
