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
	"Total time: 250.3s\n"
	"INFO: done\n";

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

/* A number of this value; an integer printed as one is a JSON integer. */
static void assert_double(struct json_object *o, double want)
{
	assert_true(json_object_is_type(o, json_type_double) ||
		    (json_object_is_type(o, json_type_int) && want == trunc(want)));
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

static void test_parse_number_matches_strtod(void **state)
{
	/* The fast path must give strtod's correctly rounded double, bit for bit, on every
	 * spelling: around its limits (2^53, 10^22), and on many random decimals. */
	static const char *const edge[] = {
		"9007199254740992",	   "9007199254740993",	   "9007199254740991.5",
		"0.1",			   "0.3",		   "1e22",
		"1e23",			   "1e-22",		   "1e-23",
		"123456789012345678901234567890", "4.9406564584124654e-324", "1.7976931348623157e308",
		"2.2250738585072014e-308", "0.000000000000000000000000001", "-0.0",
		"00000000000000000000000000001.5", "5.", ".5", "1E+5", "1e-0", "0e0",
		"12345.678e-3",		   "8.98846567431158e307", "3.0000000000000004",
	};
	unsigned long x = 0x9e3779b97f4a7c15UL;

	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		double a = 0, b = strtod(edge[i], NULL);

		assert_true(num(edge[i], &a));
		if (memcmp(&a, &b, sizeof(a)) != 0)
			fail_msg("%s: %.17g, strtod %.17g", edge[i], a, b);
	}
	for (int i = 0; i < 200000; i++) {
		char text[64];
		double a = 0, b;
		int digits, point, exp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		digits = 1 + (int)(x % 19);
		point = (int)((x >> 8) % (unsigned long)(digits + 1));
		exp = (int)((x >> 16) % 61) - 30;
		{
			int n = 0;
			unsigned long y = x;

			for (int d = 0; d < digits; d++) {
				if (d == point && d > 0)
					text[n++] = '.';
				text[n++] = (char)('0' + (y % 10));
				y = y / 10 ^ (y << 7);
			}
			if ((x >> 24) & 1)
				n += snprintf(text + n, sizeof(text) - (size_t)n, "e%d", exp);
			text[n] = '\0';
		}
		b = strtod(text, NULL);
		assert_true(num(text, &a));
		if (memcmp(&a, &b, sizeof(a)) != 0)
			fail_msg("%s: %.17g, strtod %.17g", text, a, b);
	}
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

	/* Text is not a metric: a URL is no label (docs/decisions.md). */
	assert_false(lb_metric_line_parse("url: http://x:8080/y", 20, &ml));

	/* Names researchers give error rates stay metrics; a name spelled as an exception
	 * class does not, whatever its value (test_exception_lines_are_no_metrics). */
	assert_true(lb_metric_line_parse("test_error: 0.3", 15, &ml));
	assert_true(ml.number == 0.3);
	assert_true(lb_metric_line_parse("Error rate: 0.1", 15, &ml));
	assert_string_equal(ml.name, "Error rate");
	assert_true(lb_metric_line_parse("Warning: 2", 10, &ml));
	assert_false(lb_metric_line_parse("TrainError: 0.5", 15, &ml));

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
		"Total time: 12.3s", /* a unit labbox does not read: not a number, not a label */
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


static struct json_object *issue(struct json_object *issues, size_t i);

/* Forms real training code prints (tenth session) ---------------------------------------- */

static void expect_pairs(const char *line, const char *const *names, const double *values,
			 size_t n)
{
	lb_metric_line ml;

	if (!lb_metric_line_parse(line, strlen(line), &ml))
		fail_msg("\"%s\" is not read", line);
	if (ml.n_values != n)
		fail_msg("\"%s\": %zu values, not %zu", line, ml.n_values, n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(ml.values[i].name, names[i]);
		assert_int_equal(ml.values[i].kind, LB_METRIC_NUMBER);
		assert_true(ml.values[i].number == values[i]);
	}
}

static void expect_not_metric(const char *const *lines, size_t n)
{
	lb_metric_line ml;

	for (size_t i = 0; i < n; i++)
		if (lb_metric_line_parse(lines[i], strlen(lines[i]), &ml))
			fail_msg("\"%s\" parsed as a metric (%s)", lines[i], ml.name);
}

static void test_line_parse_keras(void **state)
{
	static const char *const two[] = { "loss", "val_acc" };
	static const double two_v[] = { 0.1234, 0.88 };
	static const char *const four[] = { "loss", "accuracy", "val_loss", "val_accuracy" };
	static const double four_v[] = { 0.1234, 0.91, 0.2, 0.88 };
	static const char *const k3[] = { "accuracy", "loss" };
	static const double k3_v[] = { 0.91, 0.1234 };
	static const char *const bad[] = {
		/* an epoch not yet over: a running average */
		"5/32 [====>.........................] - ETA: 3s - loss: 0.5000 - accuracy: 0.7000",
		"5/32 \xe2\x94\x81\xe2\x94\x81\xe2\x94\x81 1s 20ms/step - accuracy: 0.5 - loss: 0.7",
		"Epoch 3/3", /* Keras's epoch header alone */
		"Epoch 4/3 - loss: 0.1",
		"Epoch 0/3 - loss: 0.1",
		"Epoch 3/3 - loss: 0.1 - note: two words",
		"Epoch 3/3 - loss: 0.1 - 12 apples",
		"Epoch 3/3 - loss: fast", /* Keras values are numbers */
		"Epoch 3/3 - step: 4 - loss: 0.1",
		"32/32 done loss: 0.1",
		"3/4 - of the runs failed",
		"10/10 - accuracy: 0.9", /* a fold of ten, not Keras: no bar, no timing */
		"32/32 [====]x - loss: 0.1",
		"32/32 [==x=] - loss: 0.1",
		"acc: 0.9 - 0.1",
		"delta: 5 - 3",
		"acc: 0.9 -",
		"acc: 0.9 -loss: 0.1",
		"ETA: 3s",
		"32/32 [======] - 1s 20ms/step", /* no pair */
	};

	(void)state;
	expect_pairs("Epoch 3/3 - loss: 0.1234 - val_acc: 0.8800", two, two_v, 2);
	expect_pairs("32/32 [==============================] - 1s 20ms/step - loss: 0.1234 - "
		     "accuracy: 0.9100 - val_loss: 0.2 - val_accuracy: 0.88",
		     four, four_v, 4);
	/* Keras 3's bar, its timing without a dash, and (verbose=2) timings after the pairs */
	expect_pairs("32/32 \xe2\x94\x81\xe2\x94\x81\xe2\x94\x81\xe2\x94\x81 1s 20ms/step - "
		     "accuracy: 0.9100 - loss: 0.1234",
		     k3, k3_v, 2);
	expect_pairs("32/32 - 0s - accuracy: 0.91 - loss: 0.1234 - 215ms/epoch - 7ms/step", k3, k3_v,
		     2);
	expect_pairs("\x1b[1m32/32\x1b[0m \x1b[32m\xe2\x94\x81\xe2\x94\x81\x1b[0m\x1b[37m\x1b[0m "
		     "\x1b[1m1s\x1b[0m 20ms/step - accuracy: 0.9100 - loss: 0.1234",
		     k3, k3_v, 2);
	/* " - " between plain pairs */
	expect_pairs("loss: 0.1234 - val_acc: 0.88", two, two_v, 2);
	expect_not_metric(bad, sizeof(bad) / sizeof(bad[0]));
}

static void test_line_parse_table_rows_and_logging(void **state)
{
	static const char *const bleu[] = { "bleu" };
	static const double bleu_v[] = { 27.3 };
	static const char *const acc[] = { "accuracy" };
	static const double acc_v[] = { 0.91 };
	static const char *const bad[] = {
		"|---|---|",
		"| :--- | ---: |",
		"| metric | value |",
		"| method | acc | f1 |",
		"| ours | 0.91 | 0.88 |",
		"| bleu | 27.3",
		"| bleu: 1 | 27.3 |",
		"| bleu | 27.3 | |",
		"| 1 | 0.5 |",
		"| model | resnet |",  /* labels are not read from tables */
		"| epoch | 3 |",
		"| condition | 3 |",
		"| a | 0.5, b: 1 |",
		"|  | 0.5 |",
		/* logging: other levels, other formats, messages that are no metric */
		"INFO:root:loading dataset",
		"WARNING:root:accuracy: 0.91",
		"ERROR:__main__:loss: nan",
		"INFO: accuracy: 0.91", /* the level alone: libraries' own text (Lightning's) */
		"INFO:accuracy: 0.91",
		"2026-12-01 10:00:00,123 - WARNING - accuracy: 0.91",
		"2026-12-01 10:00:00,123 - INFO - saved to /tmp/x",
		"2026-12-01 10:00:00,123 [WARNING] accuracy: 0.91",
		"2026-12-01 10:00:00.123 | ERROR    | __main__:main:12 - loss: 0.3",
		"[INFO] Epoch 3: loss: 0.5", /* a progress line's pair is not its message */
		"2026-12-01 10:00:00,123 INFO Epoch 3: loss: 0.5",
		"Loaded INFO file: 3 items", /* prose around a level word is no prefix */
	};
	lb_metric_line ml;

	(void)state;
	expect_pairs("| bleu | 27.3 |", bleu, bleu_v, 1);
	expect_pairs("  |bleu|27.3|  ", bleu, bleu_v, 1);
	assert_true(lb_metric_line_parse("| bleu | 27.3 |", 15, &ml));
	assert_true(ml.table_row);
	assert_true(lb_metric_line_parse("| Test BLEU | 27.3% |", 21, &ml));
	assert_string_equal(ml.name, "Test BLEU");
	assert_true(ml.values[0].percent && ml.number == 27.3);
	assert_true(lb_metric_line_parse("bleu: 27.3", 10, &ml));
	assert_false(ml.table_row);
	expect_pairs("INFO:root:accuracy: 0.91", acc, acc_v, 1);
	expect_pairs("INFO:my.module:accuracy: 0.91", acc, acc_v, 1);
	expect_pairs("2026-12-01 10:00:00,123 - INFO - accuracy: 0.91", acc, acc_v, 1);
	expect_pairs("2026-12-01 10:00:00,123 - __main__ - INFO - accuracy: 0.91", acc, acc_v, 1);
	expect_pairs("2026-12-01 10:00:00 - INFO - accuracy: 0.91", acc, acc_v, 1);
	expect_not_metric(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A log prefix is read by its fields (timestamp, level, logger, location), not format by
 * format: the formats research code configures, and loguru's, are all read by their message. */
static void test_line_parse_log_prefixes(void **state)
{
	static const char *const acc[] = { "accuracy" };
	static const double acc_v[] = { 0.91 };
	static const char *const lines[] = {
		"2026-12-01 10:00:00,123 [INFO] accuracy: 0.91",
		"[INFO] accuracy: 0.91",
		"2026-12-01 10:00:00,123 | INFO     | exp:<module>:12 - accuracy: 0.91",
		"2026-12-01 10:00:00.123 | INFO     | __main__:main:12 - accuracy: 0.91",
		"2026-12-01 10:00:00,123 INFO exp: accuracy: 0.91",
		"2026-12-01 10:00:00,123 INFO accuracy: 0.91",
		"2026-12-01T10:00:00Z INFO accuracy: 0.91",
		"[2026-12-01 10:00:00] [INFO] [exp] accuracy: 0.91",
		"10:00:00 INFO     accuracy: 0.91",
		"exp - INFO - accuracy: 0.91",
		"\x1b[32m2026-12-01 10:00:00.123\x1b[0m | \x1b[1mINFO    \x1b[0m | m:f:3 - accuracy: 0.91",
	};
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		expect_pairs(lines[i], acc, acc_v, 1);
		assert_true(lb_metric_line_parse(lines[i], strlen(lines[i]), &ml));
		assert_true(ml.logged);
	}
	/* The message is read whole: two pairs, a label, a heading's rule as on stdout. */
	assert_true(lb_metric_line_parse("12:00:01 [INFO] model: resnet lr: 0.1", 37, &ml));
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[0].name, "model");
	assert_string_equal(ml.values[1].name, "lr");
	assert_false(lb_metric_line_parse("accuracy: 0.91", 14, &ml) && ml.logged);
}

/* Bracketed fields need no blank between them (Hydra's job logging, "[%(asctime)s][%(name)s]
 * [%(levelname)s] - %(message)s"): the ']' says where each ends. Only with a level among
 * them: a progress counter or two tags in brackets are no log prefix, and a bracket glued to
 * the message stays no prefix. */
static void test_line_parse_log_prefixes_bracketed_touching(void **state)
{
	static const char *const acc[] = { "accuracy" };
	static const double acc_v[] = { 0.91 };
	static const char *const lines[] = {
		"[2024-05-01 12:00:00,123][__main__][INFO] - accuracy: 0.91",
		"[2024-05-01 12:00:00,123][INFO] - accuracy: 0.91",
		"[2024-05-01 12:00:00,123][__main__][INFO] accuracy: 0.91",
		"[2024-05-01 12:00:00,123][__main__][INFO]: accuracy: 0.91",
		"[2024-05-01 12:00:00,123] [__main__][INFO] - accuracy: 0.91",
		"[2024-05-01 12:00:00,123][INFO][exp] - accuracy: 0.91",
		"[INFO][exp] accuracy: 0.91",
	};
	static const char *const bad[] = {
		"[2024-05-01 12:00:00,123][__main__][WARNING] - accuracy: 0.91",
		"[2024-05-01 12:00:00,123][__main__] - accuracy: 0.91", /* no level */
		"[1/10][x] accuracy: 0.91",				/* a counter, a tag */
		"[x][y] accuracy: 0.91",
		"[1/10] accuracy: 0.91",
		"[INFO]accuracy: 0.91", /* a field glued to the message */
		"[2024-05-01 12:00:00,123][INFO]accuracy: 0.91",
		"[2024-05-01 12:00:00,123][__main__][INFO] - Epoch 3: loss: 0.5",
	};
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		expect_pairs(lines[i], acc, acc_v, 1);
		assert_true(lb_metric_line_parse(lines[i], strlen(lines[i]), &ml));
		assert_true(ml.logged);
	}
	expect_not_metric(bad, sizeof(bad) / sizeof(bad[0]));
}

/* absl.logging's prefix (JAX, TensorFlow, flax): the level letter, month and day, clock,
 * thread id (padded or not), file:line]. Only an INFO line's; a prefix cut short or another
 * level's letter is no log prefix. */
static void test_line_parse_absl_prefix(void **state)
{
	static const char *const acc[] = { "eval_accuracy" };
	static const double acc_v[] = { 0.913 };
	static const char *const lines[] = {
		"I1207 17:42:25.123456 4242 main.py:12] eval_accuracy: 0.913",
		"I1207 17:42:25.123456  42 train_lib.py:301] eval_accuracy: 0.913",
	};
	static const char *const bad[] = {
		"W1207 17:42:25.123456 4242 main.py:12] eval_accuracy: 0.913",
		"I1207 17:42:25.123456 4242 main.py] eval_accuracy: 0.913",
		"I1207 17:42:25 4242 main.py:12]eval_accuracy: 0.913",
		"I1207 17:42:25.123456 4242 main.py:12] step 100: loss = 0.01",
	};
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		expect_pairs(lines[i], acc, acc_v, 1);
		assert_true(lb_metric_line_parse(lines[i], strlen(lines[i]), &ml));
		assert_true(ml.logged);
	}
	expect_not_metric(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A split's head joined to the pairs by ':' or '|': the test split's names as printed, any
 * other's qualified by the head; a head followed by no pairs is the plain pair it was. */
static void test_line_parse_split_head(void **state)
{
	static const struct {
		const char *line;
		const char *names[2];
		double v[2];
		size_t n;
	} cases[] = {
		{ "test | loss: 0.30 | acc: 0.90", { "loss", "acc" }, { 0.30, 0.90 }, 2 },
		{ "Test set: Accuracy: 0.9", { "Accuracy" }, { 0.9 }, 1 },
		{ "test: f1: 0.85", { "f1" }, { 0.85 }, 1 },
		{ "eval | auc: 0.93", { "eval auc" }, { 0.93 }, 1 },
		{ "Train set: Accuracy: 0.99", { "Train set Accuracy" }, { 0.99 }, 1 },
		{ "VAL: loss: 0.2, acc: 0.8", { "VAL loss", "VAL acc" }, { 0.2, 0.8 }, 2 },
		{ "train: 50000", { "train" }, { 50000 }, 1 },
		{ "test: 0.5", { "test" }, { 0.5 }, 1 },
	};
	static const char *const bad[] = {
		"test: accuracy: 0.9 on cifar",
		"train | step 100 | loss: 0.3",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_pairs(cases[i].line, cases[i].names, cases[i].v, cases[i].n);
	expect_not_metric(bad, sizeof(bad) / sizeof(bad[0]));
}

/* How a table's context decides whether its rows are read. */
static void test_stream_markdown_tables(void **state)
{
	static const struct {
		const char *out;
		const char *json_has;  /* NULL: nothing collected */
	} cases[] = {
		{ "| bleu | 27.3 |\n", "\"bleu\":27.3" },
		{ "| bleu | 27.3 |", "\"bleu\":27.3" }, /* the last line, without newline */
		{ "| bleu | 27.3 |\r\n| rouge | 30.1 |\r\ndone\r\n", "\"rouge\":30.1" },
		{ "| metric | value |\n|---|---|\n| bleu | 27.3 |\n| rouge | 30.1 |\n",
		  "\"bleu\":27.3,\"rouge\":30.1" },
		{ "| Metric | Score |\n| :--- | ---: |\n| bleu | 27.3 |\n", "\"bleu\":27.3" },
		/* a header that names the column: rows are methods, not metric names */
		{ "| method | acc |\n|---|---|\n| ours | 0.91 |\n| base | 0.85 |\n", NULL },
		{ "| method | acc |\n| ours | 0.91 |\n", NULL },
		{ "| method | acc | f1 |\n|---|---|---|\n| ours | 0.91 | 0.88 |\n", NULL },
		/* a table ends at the first other line */
		{ "| method | acc |\n|---|---|\n| ours | 0.91 |\n\nbleu: 27.3\n", "{\"bleu\":27.3}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lb_metrics *m = collect(cases[i].out, strlen(cases[i].out));
		char *j = to_json_text(m);

		if (cases[i].json_has ? !strstr(j, cases[i].json_has) : lb_metrics_count(m) != 0)
			fail_msg("case %zu: %s", i, j);
		free(j);
		lb_metrics_free(m);
	}
}

/* The JSON text of one member of the collected document ("values", "conditions"). */
static char *member_text(const char *out, size_t len, bool bytewise, const char *key)
{
	lb_metrics *m = NULL;
	struct json_object *doc, *v = NULL;
	char *s;

	assert_int_equal(lb_metrics_new(&m), 0);
	if (bytewise) /* a "\r" and its "\n" in two reads, as a pipe may give them */
		for (size_t i = 0; i < len; i++)
			lb_metrics_feed(m, out + i, 1);
	else
		lb_metrics_feed(m, out, len);
	lb_metrics_finish(m);
	doc = lb_metrics_to_json(m);
	assert_non_null(doc);
	if (!json_object_object_get_ex(doc, key, &v))
		fail_msg("no %s", key);
	s = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	lb_metrics_free(m);
	return s;
}

/* A Markdown table ends at a blank line, and a header row with its separator row starts a
 * table of its own: the rows of a second table (a baseline's numbers) are read by its own
 * header, never as more rows of the first. */
static void test_stream_tables_end_where_markdown_ends_them(void **state)
{
	static const struct {
		const char *out, *values;
	} cases[] = {
		{ "| metric | value |\n|---|---|\n| accuracy | 0.91 |\n\n"
		  "| metric | baseline |\n|---|---|\n| accuracy | 0.95 |\n",
		  "{\"accuracy\":0.91}" },
		{ "| metric | value |\r\n|---|---|\r\n| accuracy | 0.91 |\r\n\r\n"
		  "| metric | baseline |\r\n|---|---|\r\n| accuracy | 0.95 |\r\n",
		  "{\"accuracy\":0.91}" },
		/* without a blank line: the header and its separator start the next table */
		{ "| metric | value |\n|---|---|\n| accuracy | 0.91 |\n"
		  "| metric | baseline |\n|---|---|\n| accuracy | 0.95 |\n",
		  "{\"accuracy\":0.91}" },
		{ "| bleu | 27.3 |\n\n| Model | Acc |\n|---|---|\n| baseline | 0.5 |\n| ours | 0.9 |\n",
		  "{\"bleu\":27.3}" },
		/* a blank line of blanks is one too */
		{ "| metric | value |\n|---|---|\n| acc | 0.91 |\n  \n| Model | Acc |\n|---|---|\n"
		  "| acc | 0.5 |\n",
		  "{\"acc\":0.91}" },
		/* and the table after it is read when its header says so */
		{ "| method | acc |\n|---|---|\n| ours | 0.9 |\n\n| metric | value |\n|---|---|\n"
		  "| acc | 0.91 |\n",
		  "{\"acc\":0.91}" },
		{ "| method | acc |\n|---|---|\n| ours | 0.9 |\n| metric | value |\n|---|---|\n"
		  "| acc | 0.91 |\n",
		  "{\"acc\":0.91}" },
		{ "| metric | value |\n|---|---|\n| a | 1 |\n\n| b | 2 |\n", "{\"a\":1,\"b\":2}" },
		/* a row that is not a number inside a read table ends nothing */
		{ "| metric | value |\n|---|---|\n| model | resnet |\n| acc | 0.9 |\n", "{\"acc\":0.9}" },
		/* "\r\n" ends one line: the rows go on */
		{ "| metric | value |\r\n|---|---|\r\n| a | 1 |\r\n| b | 2 |\r\n", "{\"a\":1,\"b\":2}" },
		/* a progress bar's "\r" between rows is no blank line either */
		{ "| metric | value |\n|---|---|\n| a | 1 |\n\r| b | 2 |\n", "{\"a\":1,\"b\":2}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			char *v = member_text(cases[i].out, strlen(cases[i].out), bytewise, "values");

			if (strcmp(v, cases[i].values) != 0)
				fail_msg("case %zu%s: %s, not %s", i, bytewise ? " (bytewise)" : "",
					 v, cases[i].values);
			free(v);
		}
}

/* PyTorch Lightning's results table (trainer.test(), trainer.validate()): read between its
 * rules under its own header, in rich's box and in the plain layout, whole or a byte a read;
 * DataLoader N > 0 gives name/dataloader_idx_N. Two columns of anything else are not. */
static void test_stream_lightning_tables(void **state)
{
#define RICH_TOP "\xe2\x94\x8f\xe2\x94\x81\xe2\x94\x81\xe2\x94\xb3\xe2\x94\x81\xe2\x94\x81\xe2\x94\x93\n"
#define RICH_SEP "\xe2\x94\xa1\xe2\x94\x81\xe2\x94\x81\xe2\x95\x87\xe2\x94\x81\xe2\x94\x81\xe2\x94\xa9\n"
#define RICH_BOT "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80\xe2\x94\xb4\xe2\x94\x80\xe2\x94\x80\xe2\x94\x98\n"
#define HV "\xe2\x94\x83" /* the header's bar */
#define LV "\xe2\x94\x82" /* a row's bar */
#define BAR "--------------------------------------------------------------------------------\n"
	static const struct {
		const char *out, *values;
	} cases[] = {
		{ RICH_TOP HV "  Test metric  " HV " DataLoader 0 " HV "\n" RICH_SEP
		  LV "   test_acc   " LV "     0.88     " LV "\n"
		  LV "  test_loss   " LV "     0.33     " LV "\n" RICH_BOT,
		  "{\"test_acc\":0.88,\"test_loss\":0.33}" },
		{ BAR "       Test metric             DataLoader 0\n" BAR
		  "        test_acc                   0.88\n"
		  "        test_loss                  0.33\n" BAR,
		  "{\"test_acc\":0.88,\"test_loss\":0.33}" },
		/* "\r\n" line ends (os.linesep) and escapes do not change the table */
		{ BAR "     Validate metric           DataLoader 0\r\n" BAR
		  "         \x1b[36mval_acc\x1b[0m                    0.9\r\n" BAR,
		  "{\"val_acc\":0.9}" },
		/* two dataloaders; a blank cell is no value */
		{ BAR "       Test metric             DataLoader 0             DataLoader 1\n" BAR
		  "         ood_auc                                             0.7\n"
		  "        test_acc                    0.5                      0.6\n" BAR,
		  "{\"ood_auc\\/dataloader_idx_1\":0.7,\"test_acc\":0.5,"
		  "\"test_acc\\/dataloader_idx_1\":0.6}" }, /* json-c writes \/ */
		/* a name wrapped at the column's width (25) is read whole, a label is not read */
		{ BAR "     Validate metric           DataLoader 0\n" BAR
		  "a_metric_name_longer_than            7\n"
		  "          _25c\n"
		  "          model                   resnet\n"
		  "        test_acc                    0.5\n" BAR,
		  "{\"a_metric_name_longer_than_25c\":7,\"test_acc\":0.5}" },
		/* a later table replaces an earlier value, as a later `name: value` line does */
		{ BAR "       Test metric             DataLoader 0\n" BAR
		  "        test_acc                    0.5\n" BAR
		  BAR "       Test metric             DataLoader 0\n" BAR
		  "        test_acc                    0.6\n" BAR,
		  "{\"test_acc\":0.6}" },
		/* not Lightning's: another header, no header, no rule under it, not centred */
		{ BAR "    epoch         loss\n" BAR "      1           0.52\n" BAR, "{}" },
		{ BAR "        test_acc                   0.88\n" BAR, "{}" },
		{ BAR "       Test metric             DataLoader 0\n"
		  "        test_acc                   0.88\n" BAR, "{}" },
		{ BAR "Test metric DataLoader 0\n" BAR "test_acc 0.88\n" BAR, "{}" },
		{ BAR "       Test metric             DataLoader 0\n\n" BAR
		  "        test_acc                   0.88\n" BAR, "{}" },
		{ RICH_TOP HV " Model " HV " Acc " HV "\n" RICH_SEP LV " ours " LV " 0.9 " LV "\n"
		  RICH_BOT, "{}" },
		{ LV "   test_acc   " LV "     0.88     " LV "\n", "{}" },
		/* a table's end: a blank line, a line of another kind; what follows is read */
		{ BAR "       Test metric             DataLoader 0\n" BAR
		  "        test_acc                   0.88\n\n        test_loss                  0.33\n"
		  "acc: 0.5\n",
		  "{\"test_acc\":0.88,\"acc\":0.5}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			char *v = member_text(cases[i].out, strlen(cases[i].out), bytewise, "values");

			if (strcmp(v, cases[i].values) != 0)
				fail_msg("case %zu%s: %s, not %s", i, bytewise ? " (bytewise)" : "",
					 v, cases[i].values);
			free(v);
		}
#undef RICH_TOP
#undef RICH_SEP
#undef RICH_BOT
#undef HV
#undef LV
#undef BAR
}

/* transformers' Trainer.log_metrics() blocks: `***** SPLIT metrics *****`, then rows
 * "  key  =  value" with one '=' column and one width; numbers read under their keys,
 * runtimes (h:mm:ss.cc), sizes (12MB, 3GF) and the epoch not; a block's value outranks the
 * per-log dicts before and after it, but not a later block or `name: value` line. */
static void test_stream_transformers_blocks(void **state)
{
#define EPOCHS "{'eval_loss': 0.3, 'eval_accuracy': 0.8612, 'epoch': 1.0}\n" \
	       "{'eval_loss': 0.3, 'eval_accuracy': 0.8801, 'epoch': 2.0}\n"
	static const struct {
		const char *out, *values;
	} cases[] = {
		{ EPOCHS "***** eval metrics *****\n"
			 "  epoch                   =        2.0\n"
			 "  eval_accuracy           =     0.8934\n"
			 "  eval_loss               =     0.2791\n"
			 "  eval_runtime            = 0:00:03.10\n"
			 "  eval_samples            =        408\n",
		  "{\"eval_loss\":0.2791,\"eval_accuracy\":0.8934,\"eval_samples\":408}" },
		/* the same, "\r\n" line ends */
		{ EPOCHS "***** eval metrics *****\r\n"
			 "  eval_accuracy = 0.8934\r\n"
			 "  eval_loss     = 0.2791\r\n",
		  "{\"eval_loss\":0.2791,\"eval_accuracy\":0.8934}" },
		/* train, predict, test; memory and flos are no numbers */
		{ "***** train metrics *****\n"
		  "  total_flos                =     1234GF\n"
		  "  train_loss                =     0.3112\n"
		  "  train_mem_cpu_alloc_delta =       12MB\n"
		  "  train_nan                 =        nan\n"
		  "***** predict metrics *****\n"
		  "  predict_f1 = 0.7\n"
		  "***** test metrics *****\n"
		  "  test_f1 = 0.6\n",
		  "{\"train_loss\":0.3112,\"train_nan\":\"NaN\",\"predict_f1\":0.7,"
		  "\"test_f1\":0.6}" },
		/* a later per-log dict does not replace a block's value; a later block or line does */
		{ "***** eval metrics *****\n  eval_acc = 0.9\n{'eval_acc': 0.5, 'epoch': 4.0}\n",
		  "{\"eval_acc\":0.9}" },
		{ "***** eval metrics *****\n  eval_acc = 0.9\n***** eval metrics *****\n"
		  "  eval_acc = 0.7\n",
		  "{\"eval_acc\":0.7}" },
		{ "***** eval metrics *****\n  eval_acc = 0.9\neval_acc: 0.4\n"
		  "{'eval_acc': 0.3, 'epoch': 5.0}\n",
		  "{\"eval_acc\":0.3}" },
		/* not a block: Trainer's "Running" headers, rows without a header, a blank line or
		 * another line before them, rows out of the block's columns */
		{ "***** Running Evaluation *****\n  Num examples = 408\n  Batch size = 8\n", "{}" },
		{ "  eval_acc = 0.9\n", "{}" },
		{ "***** eval metrics *****\n\n  eval_acc = 0.9\n", "{}" },
		{ "***** eval metrics *****\ndone\n  eval_acc = 0.9\n", "{}" },
		{ "***** eval metrics *****\n  eval_acc  = 0.9\n  eval_f1 = 0.8\n  eval_x    = 0.7\n",
		  "{\"eval_acc\":0.9}" },
		{ "***** eval metrics *****\n  eval_acc = 0.9\n   eval_f1 = 0.8\n", "{\"eval_acc\":0.9}" },
		{ "***** eval metrics *****\n  eval_acc = 0.9\nacc: 0.5\n  eval_f1  = 0.8\n",
		  "{\"eval_acc\":0.9,\"acc\":0.5}" },
		{ "*** eval metrics ***\n  eval_acc = 0.9\n", "{}" },
		{ "***** my eval metrics *****\n  eval_acc = 0.9\n", "{}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			char *v = member_text(cases[i].out, strlen(cases[i].out), bytewise, "values");

			if (strcmp(v, cases[i].values) != 0)
				fail_msg("case %zu%s: %s, not %s", i, bytewise ? " (bytewise)" : "",
					 v, cases[i].values);
			free(v);
		}
	/* stderr is no metrics block's */
	{
		static const char out[] = "***** eval metrics *****\n  eval_acc = 0.9\n";
		lb_metrics *m = NULL;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed_stderr_at(m, out, sizeof(out) - 1, -1);
		lb_metrics_finish(m);
		assert_int_equal(lb_metrics_count(m), 0);
		lb_metrics_free(m);
	}
#undef EPOCHS
}

/* After the condition blocks, a line set apart by a blank line that repeats a block's name or
 * names what the first block did not is the run's (values), not the last condition's. Blank
 * lines inside blocks keep them whole. */
static void test_stream_condition_blocks_end_at_the_runs_lines(void **state)
{
	static const struct {
		const char *out, *values, *conditions;
	} cases[] = {
		{ "condition: baseline\naccuracy: 0.7\ncondition: proposed\naccuracy: 0.9\n\n"
		  "accuracy: 0.8\n",
		  "{\"accuracy\":0.8}", "{\"baseline\":{\"accuracy\":0.7},\"proposed\":{\"accuracy\":0.9}}" },
		/* every line after it is the run's, until a condition: line */
		{ "condition: a\nacc: 0.7\n\ncondition: b\nacc: 0.9\n\nmean_acc: 0.8\nacc: 0.8\n"
		  "condition: c\nacc: 0.5\n",
		  "{\"mean_acc\":0.8,\"acc\":0.8}",
		  "{\"a\":{\"acc\":0.7},\"b\":{\"acc\":0.9},\"c\":{\"acc\":0.5}}" },
		{ "condition: a\r\nacc: 0.7\r\ncondition: b\r\nacc: 0.9\r\n\r\nacc: 0.8\r\n",
		  "{\"acc\":0.8}", "{\"a\":{\"acc\":0.7},\"b\":{\"acc\":0.9}}" },
		/* without a blank line the block goes on: the last value wins, as ever */
		{ "condition: a\nacc: 0.7\ncondition: b\nacc: 0.9\nacc: 0.8\n", "{}",
		  "{\"a\":{\"acc\":0.7},\"b\":{\"acc\":0.8}}" },
		{ "condition: a\r\nacc: 0.7\r\ncondition: b\r\nacc: 0.9\r\nacc: 0.8\r\n", "{}",
		  "{\"a\":{\"acc\":0.7},\"b\":{\"acc\":0.8}}" },
		/* a blank line inside each block: its later names are the first block's */
		{ "condition: a\nlr: 0.1\n\nacc: 0.7\ncondition: b\nlr: 0.2\n\nacc: 0.9\n", "{}",
		  "{\"a\":{\"lr\":0.1,\"acc\":0.7},\"b\":{\"lr\":0.2,\"acc\":0.9}}" },
		/* blocks of an epoch's lines, blank lines between: the first block says so */
		{ "condition: a\nval_acc: 0.5\n\nval_acc: 0.6\n\ncondition: b\nval_acc: 0.7\n\n"
		  "val_acc: 0.8\n\n",
		  "{}", "{\"a\":{\"val_acc\":0.6},\"b\":{\"val_acc\":0.8}}" },
		/* a blank line before a block's first metric ends nothing */
		{ "condition: a\n\nacc: 0.7\ncondition: b\n\nacc: 0.9\n", "{}",
		  "{\"a\":{\"acc\":0.7},\"b\":{\"acc\":0.9}}" },
		/* one condition: its block goes on */
		{ "condition: a\nacc: 0.7\n\nacc: 0.8\n", "{}", "{\"a\":{\"acc\":0.8}}" },
		/* lines before any condition stay the run's */
		{ "seed: 1\n\ncondition: a\nacc: 0.7\n", "{\"seed\":1}", "{\"a\":{\"acc\":0.7}}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			size_t len = strlen(cases[i].out);
			char *v = member_text(cases[i].out, len, bytewise, "values");
			char *c = member_text(cases[i].out, len, bytewise, "conditions");

			if (strcmp(v, cases[i].values) != 0 || strcmp(c, cases[i].conditions) != 0)
				fail_msg("case %zu%s: values %s conditions %s", i,
					 bytewise ? " (bytewise)" : "", v, c);
			free(v);
			free(c);
		}
}

/* A heading or a bracketed tag that names a split other than the test split qualifies the
 * names of its line, so a train line never replaces the test line's numbers; the test
 * split's names stay as they were. */
static void test_line_parse_split_qualifiers(void **state)
{
	static const struct {
		const char *line, *first, *second;
	} cases[] = {
		{ "Test set: Average loss: 0.0341, Accuracy: 9890/10000 (99%)", "Average loss",
		  "Accuracy" },
		{ "Train set: Average loss: 0.0100, Accuracy: 59800/60000 (100%)",
		  "Train set Average loss", "Train set Accuracy" },
		{ "Validation set: Average loss: 0.2, Accuracy: 0.9", "Validation set Average loss",
		  "Validation set Accuracy" },
		{ "test split: Average loss: 0.2, Accuracy: 0.9", "Average loss", "Accuracy" },
		{ "Test set (OOD): Average loss: 0.5, Accuracy: 0.7", "Test set (OOD) Average loss",
		  "Test set (OOD) Accuracy" },
		{ "[train] loss: 0.01, acc: 0.99", "train loss", "train acc" },
		{ "[val] loss: 0.2 acc: 0.8", "val loss", "val acc" },
		{ "==> [Validation] loss: 0.2, acc: 0.8", "Validation loss", "Validation acc" },
		{ "[test] loss: 0.40, acc: 0.75", "loss", "acc" },
		{ "==> [TEST] acc: 0.9, loss: 0.2", "acc", "loss" },
		{ "[RESULT] auc: 0.77, f1: 0.5", "auc", "f1" },
		{ "[train] condition=a acc: 0.9, loss: 0.1", "train acc", "train loss" },
	};
	lb_metric_line *ml = malloc(sizeof(*ml));
	lb_metrics *m;
	struct json_object *doc;
	static const char out[] = "Test set: Average loss: 0.0341, Accuracy: 9890/10000 (99%)\n"
				  "Train set: Average loss: 0.0100, Accuracy: 59800/60000 (100%)\n"
				  "[test] loss: 0.40, acc: 0.75\n"
				  "[train] loss: 0.01, acc: 0.99\n";

	(void)state;
	assert_non_null(ml);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!lb_metric_line_parse(cases[i].line, strlen(cases[i].line), ml))
			fail_msg("case %zu not read", i);
		assert_int_equal(ml->n_values, 2);
		if (strcmp(ml->values[0].name, cases[i].first) != 0 ||
		    strcmp(ml->values[1].name, cases[i].second) != 0 ||
		    strcmp(ml->name, cases[i].first) != 0)
			fail_msg("case %zu: %s, %s", i, ml->values[0].name, ml->values[1].name);
	}
	/* a split's tag qualifies no special name, and progress lines' values alike */
	assert_true(lb_metric_line_parse("[train] condition: a", 20, ml));
	assert_string_equal(ml->name, "condition");
	assert_int_equal(lb_metric_progress_parse("[train] epoch 3 loss: 0.5", 25, ml),
			 LB_METRIC_PROGRESS_EPOCH);
	assert_string_equal(ml->values[0].name, "train loss");
	free(ml);

	m = collect(out, sizeof(out) - 1);
	doc = lb_metrics_to_json(m);
	assert_double(get(doc, "values/Accuracy"), 0.989);
	assert_double(get(doc, "values/Average loss"), 0.0341);
	assert_double(get(doc, "values/Train set Accuracy"), 59800.0 / 60000);
	assert_double(get(doc, "values/acc"), 0.75);
	assert_double(get(doc, "values/train acc"), 0.99);
	json_object_put(doc);
	lb_metrics_free(m);
}

/* Keras prints a line per epoch: the last value wins and the repeats are counted, as for
 * any metric printed again. */
static void test_stream_keras_epochs(void **state)
{
	static const char out[] = "Epoch 1/2\n"
				  "1/2 [==============>...............] - ETA: 0s - loss: 0.9\r"
				  "2/2 [==============================] - 0s 2ms/step - loss: 0.5 - "
				  "val_acc: 0.7\n"
				  "Epoch 2/2\n"
				  "2/2 [==============================] - 0s 2ms/step - loss: 0.25 - "
				  "val_acc: 0.8\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m), *rep;

	(void)state;
	assert_double(get(doc, "values/loss"), 0.25);
	assert_double(get(doc, "values/val_acc"), 0.8);
	rep = get(doc, "repeats");
	assert_int_equal(json_object_array_length(rep), 2);
	assert_int_equal(json_object_get_int(get(json_object_array_get_idx(rep, 0), "seen")), 2);
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_validate_no_metrics_names_log_lines(void **state)
{
	static const char out[] = "WARNING:root:accuracy: 0.91\nINFO: loss: 0.3\nINFO: done\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *issues = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	const char *msg;

	(void)state;
	assert_int_equal(lb_metrics_count(m), 0);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(issue(issues, 0), "kind"), "no_metrics");
	msg = json_object_get_string(get(issue(issues, 0), "message"));
	assert_non_null(strstr(msg, "2 log lines like `WARNING:root:accuracy: 0.91`"));
	assert_non_null(strstr(msg, "level is not INFO"));
	json_object_put(issues);
	lb_metrics_free(m);
}

/* A decoration before a `name: value` line (pytorch/examples' `====> `, `==> `, `[RESULT]`, a
 * bullet) is read past; a level or a counter in brackets is no decoration, and a decorated
 * sentence stays no metric. Object lines of scalars are pairs; a step counter refuses them. */
static void test_line_parse_decorations_and_objects(void **state)
{
	static const struct {
		const char *line, *name;
		double number;
		size_t n;
	} yes[] = {
		{ "====> Test set loss: 158.0000", "Test set loss", 158.0, 1 },
		{ "==> val_acc: 0.91", "val_acc", 0.91, 1 },
		{ "--> acc: 0.5", "acc", 0.5, 1 },
		{ "[RESULT] auc: 0.77", "auc", 0.77, 1 },
		{ "  - f1: 0.80", "f1", 0.8, 1 },
		{ "==> [TEST] acc: 0.9, loss: 0.2", "acc", 0.9, 2 },
		{ "{'eval_loss': 0.35, 'eval_accuracy': 0.88, 'epoch': 3.0}", "eval_loss", 0.35, 2 },
		{ "{\"test_acc\": 0.905, \"test_loss\": 0.27}", "test_acc", 0.905, 2 },
		{ "{'acc': np.float64(0.5), 'model': 'resnet', 'x': None}", "acc", 0.5, 2 },
	};
	static const char *const no[] = {
		"[WARNING] acc: 0.9",
		"[epoch] loss: 0.3",
		"==> accuracy: 0.93 on the test set",
		"{\"step\": 10, \"loss\": 0.3}",
		"{'global_step': 10, 'loss': 0.3}",
		"{\"a\": {\"b\": 1}}",
		"{\"a\": [1, 2]}",
		"{\"note\": \"two words\"}",
		"{}",
		"=> ",
		"test_acc=0.905 test_loss=0.27",
	};
	lb_metric_line *ml = malloc(sizeof(*ml));

	(void)state;
	assert_non_null(ml);
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!lb_metric_line_parse(yes[i].line, strlen(yes[i].line), ml))
			fail_msg("not read: %s", yes[i].line);
		assert_string_equal(ml->values[0].name, yes[i].name);
		assert_true(ml->values[0].number == yes[i].number);
		if (ml->n_values != yes[i].n)
			fail_msg("%s: %zu values", yes[i].line, ml->n_values);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (lb_metric_line_parse(no[i], strlen(no[i]), ml))
			fail_msg("read: %s", no[i]);
	/* A decorated progress line is a progress line, not a metric line. */
	assert_false(lb_metric_line_parse("==> Epoch: 3, loss: 0.5", 23, ml));
	assert_int_equal(lb_metric_progress_parse("==> Epoch: 3, loss: 0.5", 23, ml),
			 LB_METRIC_PROGRESS_EPOCH);
	free(ml);
}

/* Labels alone (`Using device: cpu`) are no result: no_metrics names them, and they stay
 * recorded. A declared label found is the result the experiment said it reports. */
static void test_validate_labels_alone_are_no_result(void **state)
{
	static const char out[] = "Using device: cpu\nmodel: resnet18\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *issues = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	const char *declared[] = { "model" };
	const char *msg;

	(void)state;
	assert_int_equal(lb_metrics_count(m), 2);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(issue(issues, 0), "kind"), "no_metrics");
	msg = json_object_get_string(get(issue(issues, 0), "message"));
	assert_non_null(strstr(msg, "only labels, no number (`Using device: cpu`, `model: resnet18`)"));
	json_object_put(issues);
	issues = json_object_new_array();
	info.declared = declared;
	info.n_declared = 1;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	lb_metrics_free(m);
}

/* Numbers printed in a shape labbox does not read are named, never denied. */
static void test_validate_no_metrics_names_unread_lines(void **state)
{
	static const char out[] = "Using device: cpu\nloading\ntest_acc=0.905 test_loss=0.27\n"
				  "{\"step\": 10, \"loss\": 0.3}\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *issues = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	const char *msg;

	(void)state;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	msg = json_object_get_string(get(issue(issues, 0), "message"));
	assert_non_null(strstr(msg, "2 lines on stdout like `test_acc=0.905 test_loss=0.27`"));
	assert_non_null(strstr(msg, "`Using device: cpu`"));
	json_object_put(issues);
	lb_metrics_free(m);
}

/* Results printed as `name value` (llm.c) are not read, and never silently: a run whose metrics
 * are only settings is warned, with the line and the line to print; a run that read a result
 * is not; a run that read nothing quotes them in no_metrics. */
static void test_validate_results_printed_without_a_colon(void **state)
{
	static const char llmc[] = "using device: cpu\ntotal desired batch size: 128\n"
				   "=> calculated gradient accumulation steps: 1\n"
				   "step    1/20 | train loss 6.230000 | norm 1.6048 | lr 1.00e-04\n"
				   "val loss 6.25\nstep   20/20 | train loss 6.197274 | norm 1.8\n"
				   "val loss 6.17646336555481\nfinal 19 iters avg: 103.321ms\n";
	static const char with_result[] = "batch size: 128\nval loss 6.17\ntest_acc: 0.91\n";
	static const char alone[] = "step 20/20 | train loss 6.19 | norm 1.84\nval loss 6.17\n";
	static const char prose[] = "lr: 0.0006\nthe loss 5 times lower than before\n";
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	struct json_object *issues = json_object_new_array();
	struct json_object *warnings = json_object_new_array();
	lb_metrics *m = collect(llmc, sizeof(llmc) - 1);
	const char *msg;

	(void)state;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_str(get(issue(warnings, 0), "kind"), "results_unread");
	msg = json_object_get_string(get(issue(warnings, 0), "message"));
	/* Four lines; the quote is a line that is no step's. */
	assert_non_null(strstr(msg, "4 lines on stdout like `val loss 6.25`"));
	assert_non_null(strstr(msg, "(`val loss: 6.25`)"));
	assert_non_null(strstr(msg, "`total desired batch size`"));
	lb_metrics_free(m);
	/* Declared metrics say what the result is: no warning. */
	{
		const char *declared[] = { "total desired batch size" };

		m = collect(llmc, sizeof(llmc) - 1);
		json_object_put(warnings);
		warnings = json_object_new_array();
		info.declared = declared;
		info.n_declared = 1;
		assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
		assert_int_equal(json_object_array_length(warnings), 0);
		info.declared = NULL;
		info.n_declared = 0;
		lb_metrics_free(m);
	}
	/* A result read (a number under a result's name, or any fraction) stands. */
	m = collect(with_result, sizeof(with_result) - 1);
	json_object_put(warnings);
	warnings = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 0);
	lb_metrics_free(m);
	m = collect(prose, sizeof(prose) - 1);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 0);
	lb_metrics_free(m);
	/* Nothing read: no_metrics quotes them rather than deny any line was printed. */
	m = collect(alone, sizeof(alone) - 1);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 1);
	msg = json_object_get_string(get(issue(issues, 0), "message"));
	assert_non_null(strstr(msg, "2 lines on stdout like `val loss 6.17`"));
	assert_non_null(strstr(msg, "(`val loss: 6.17`)"));
	assert_null(strstr(msg, "no 'name: value' line"));
	json_object_put(issues);
	json_object_put(warnings);
	lb_metrics_free(m);
}

/* The advice never asks for what the code already does: a line logged at INFO in a format
 * not read is told to change the format, not to use logging.info. */
static void test_validate_no_metrics_advice_fits_the_log_line(void **state)
{
	static const struct {
		const char *out, *has, *lacks;
	} cases[] = {
		{ "INFO: accuracy: 0.91\n", "give the logging format one", "with logging.info" },
		{ "2026-12-01 10:00:00,123 [INFO] Epoch 3: loss: 0.5\n",
		  "the message is not a 'name: value' line", "with logging.info" },
		{ "2026-12-01 10:00:00,123 [WARNING] accuracy: 0.91\n", "with logging.info",
		  "give the logging format" },
		/* Hydra's format is read: at another level it is the level that is not */
		{ "[2026-12-01 10:00:00,123][__main__][WARNING] - accuracy: 0.91\n",
		  "with logging.info", "give the logging format" },
		{ "[2026-12-01 10:00:00,123][__main__][INFO] - Epoch 3: loss: 0.5\n",
		  "the message is not a 'name: value' line", "give the logging format" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lb_metrics *m = collect(cases[i].out, strlen(cases[i].out));
		struct json_object *issues = json_object_new_array();
		lb_metrics_run_info info = { .wall_s = -1, .completed = true };
		const char *msg;

		assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
		msg = json_object_get_string(get(issue(issues, 0), "message"));
		if (!strstr(msg, cases[i].has) || strstr(msg, cases[i].lacks))
			fail_msg("case %zu: %s", i, msg);
		json_object_put(issues);
		lb_metrics_free(m);
	}
}


/* A heading before the pairs (PyTorch's MNIST example): "Test set:" is no metric and
 * "Average" is the first word of the next name. Pairs joined by blanks alone keep their
 * labels (the several-pairs rule). */
static void test_line_parse_heading(void **state)
{
	static const char mnist[] = "Test set: Average loss: 0.0341, Accuracy: 9890/10000 (99%)";
	lb_metric_line ml;

	(void)state;
	assert_true(lb_metric_line_parse(mnist, strlen(mnist), &ml));
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[0].name, "Average loss");
	assert_true(ml.values[0].number == 0.0341);
	assert_string_equal(ml.values[1].name, "Accuracy");
	assert_true(ml.values[1].ratio);
	assert_true(ml.values[1].number == 0.989);

	assert_true(lb_metric_line_parse("model: resnet lr: 0.1", 21, &ml));
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[0].name, "model");
	assert_int_equal(ml.values[0].kind, LB_METRIC_STRING);
	assert_string_equal(ml.values[1].name, "lr");

	assert_true(lb_metric_line_parse("GPU available: False, used: False", 33, &ml));
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[0].name, "GPU available");
	assert_string_equal(ml.values[1].name, "used");

	assert_true(lb_metric_line_parse("model: resnet, lr: 0.1", 22, &ml));
	assert_string_equal(ml.values[0].name, "model");
	assert_string_equal(ml.values[1].name, "lr");
}

/* Progress lines stay no metric lines, and lb_metric_progress_parse reads their pairs in
 * every form training code prints them. */
static void test_progress_parse_forms(void **state)
{
	static const struct {
		const char *line;
		int level;
		const char *first;
		double value;
		size_t n;
	} cases[] = {
		{ "epoch: 1, train_loss: 2.8, val_acc: 0.8", LB_METRIC_PROGRESS_EPOCH, "train_loss", 2.8, 2 },
		{ "Epoch: 3, Train Loss: 0.321, Val Acc: 0.88", LB_METRIC_PROGRESS_EPOCH, "Train Loss", 0.321, 2 },
		{ "Epoch 3 | train_loss: 0.3 | val_acc: 0.7", LB_METRIC_PROGRESS_EPOCH, "train_loss", 0.3, 2 },
		{ "Epoch [3/10], Loss: 0.1234", LB_METRIC_PROGRESS_EPOCH, "Loss", 0.1234, 1 },
		{ "epoch 3 train_loss: 0.5", LB_METRIC_PROGRESS_EPOCH, "train_loss", 0.5, 1 },
		{ "Epoch 3: train_loss: 0.4", LB_METRIC_PROGRESS_EPOCH, "train_loss", 0.4, 1 },
		{ "[epoch 3] val_loss: 0.25", LB_METRIC_PROGRESS_EPOCH, "val_loss", 0.25, 1 },
		{ "Epoch 3 - loss: 0.2", LB_METRIC_PROGRESS_EPOCH, "loss", 0.2, 1 },
		{ "epoch=3 loss: 0.2", LB_METRIC_PROGRESS_EPOCH, "loss", 0.2, 1 },
		{ "step 100, loss: 0.2", LB_METRIC_PROGRESS_STEP, "loss", 0.2, 1 },
		{ "Epoch: 1, Batch: 5, Loss: 0.3", LB_METRIC_PROGRESS_STEP, "Loss", 0.3, 1 },
		{ "\033[32mepoch 2\033[0m loss: 0.1", LB_METRIC_PROGRESS_EPOCH, "loss", 0.1, 1 },
	};
	static const char *const not_progress[] = {
		"Epoch 3/3", "epoch 3", "epoch: 3, phase: train", "best_epoch: 7, acc: 0.9",
		"accuracy: 0.9", "epoch 3x loss: 0.2", "Epoch [3/10 Loss: 0.1", "epoches 3 loss: 0.2",
		"epoch: three, loss: 0.2", "step 3 of 10 done",
	};
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *l = cases[i].line;

		if (lb_metric_line_parse(l, strlen(l), &ml))
			fail_msg("\"%s\" parsed as a metric line", l);
		if (lb_metric_progress_parse(l, strlen(l), &ml) != cases[i].level)
			fail_msg("\"%s\" is not a progress line of level %d", l, cases[i].level);
		assert_int_equal(ml.n_values, cases[i].n);
		assert_string_equal(ml.values[0].name, cases[i].first);
		assert_true(ml.values[0].number == cases[i].value);
	}
	for (size_t i = 0; i < sizeof(not_progress) / sizeof(not_progress[0]); i++)
		if (lb_metric_progress_parse(not_progress[i], strlen(not_progress[i]), &ml))
			fail_msg("\"%s\" read as a progress line", not_progress[i]);
}

static bool use_progress(const char *out, bool completed, char **json)
{
	lb_metrics *m = collect(out, strlen(out));
	bool used = lb_metrics_use_progress(m, completed);

	*json = to_json_text(m);
	lb_metrics_free(m);
	return used;
}

/* A run that printed only progress lines: the last one's values are its metrics, marked as
 * such, for a completed run only when it is an epoch's line; a final line wins. */
static void test_progress_values_when_nothing_else(void **state)
{
	char *j;

	(void)state;
	assert_true(use_progress("epoch: 1, train_loss: 2.8, val_acc: 0.7\n"
				 "epoch: 2, train_loss: 1.5, val_acc: 0.8\n", true, &j));
	assert_non_null(strstr(j, "\"values\":{\"train_loss\":1.5,\"val_acc\":0.8}"));
	assert_non_null(strstr(j, "\"source\":\"progress\",\"progress_lines\":2"));
	free(j);
	/* Steps: no result of a completed run, all a run ended early has. */
	assert_false(use_progress("step 1, loss: 0.5\nstep 2, loss: 0.4\n", true, &j));
	assert_non_null(strstr(j, "\"values\":{}"));
	assert_null(strstr(j, "source"));
	free(j);
	assert_true(use_progress("step 1, loss: 0.5\nstep 2, loss: 0.4\n", false, &j));
	assert_non_null(strstr(j, "\"values\":{\"loss\":0.4}"));
	free(j);
	/* In its condition. */
	assert_true(use_progress("condition: a\nepoch 1 loss: 0.5\n", false, &j));
	assert_non_null(strstr(j, "\"conditions\":{\"a\":{\"loss\":0.5}}"));
	free(j);
	/* A final metric is the result; a progress line on stderr is not read. */
	assert_false(use_progress("epoch: 1, loss: 0.5\nval_acc: 0.9\n", false, &j));
	assert_non_null(strstr(j, "\"values\":{\"val_acc\":0.9}"));
	free(j);
	{
		lb_metrics *m = NULL;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed_stderr_at(m, "epoch: 1, loss: 0.5\n", 20, -1);
		lb_metrics_finish(m);
		assert_false(lb_metrics_use_progress(m, false));
		lb_metrics_free(m);
	}
}

/* Metric lines that all came before the first progress line are start-up facts: the last
 * progress line is used as if they were not there, beside them; a completed run's step lines
 * are not, and validation says so. A metric line after the progress lines closes them. */
static void test_progress_after_start_up_facts(void **state)
{
	static const char steps[] = "max word length: 10\nstep 500 train loss: 2.0 test loss: 2.1\n";
	lb_metrics *m = collect(steps, sizeof(steps) - 1);
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	const char *msg;
	char *j;

	(void)state;
	assert_true(use_progress("lr: 0.1\nepoch 1 loss: 0.5\nepoch 2 loss: 0.25\n", true, &j));
	assert_non_null(strstr(j, "\"values\":{\"lr\":0.1,\"loss\":0.25}"));
	free(j);
	assert_true(use_progress("lr: 0.1\nstep 1 loss: 0.5\n", false, &j));
	free(j);
	assert_false(use_progress("lr: 0.1\nepoch 1 loss: 0.5\nacc: 0.9\nepoch 2 loss: 0.25\n",
				  false, &j));
	assert_non_null(strstr(j, "\"values\":{\"lr\":0.1,\"acc\":0.9}"));
	free(j);
	assert_false(lb_metrics_use_progress(m, true));
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_str(get(json_object_array_get_idx(warnings, 0), "kind"), "progress_ignored");
	msg = json_object_get_string(get(json_object_array_get_idx(warnings, 0), "message"));
	assert_non_null(strstr(msg, "only `max word length`"));
	assert_non_null(strstr(msg, "(`test loss: 2.1`)"));
	json_object_put(issues);
	json_object_put(warnings);
	lb_metrics_free(m);
}

/* What validation tells of progress lines: the no_metrics issue says they were read and
 * how to print a result; values taken from them are a warning. */
static void test_validate_progress_lines(void **state)
{
	static const char steps[] = "step 1, loss: 0.5\nstep 2, loss: 0.4\n";
	static const char epochs[] = "epoch 1 loss: 0.5\nepoch 2 loss: 0.4\n";
	lb_metrics *m = collect(steps, sizeof(steps) - 1);
	struct json_object *issues = json_object_new_array();
	struct json_object *warnings = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	const char *msg;

	(void)state;
	assert_false(lb_metrics_use_progress(m, true));
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 1);
	assert_str(get(issue(issues, 0), "kind"), "no_metrics");
	msg = json_object_get_string(get(issue(issues, 0), "message"));
	assert_non_null(strstr(msg, "2 progress lines like `step 1, loss: 0.5` were read as "
				    "progress"));
	assert_non_null(strstr(msg, "(`loss: 0.4`)"));
	assert_int_equal(json_object_array_length(warnings), 0);
	lb_metrics_free(m);
	json_object_put(issues);
	json_object_put(warnings);

	m = collect(epochs, sizeof(epochs) - 1);
	issues = json_object_new_array();
	warnings = json_object_new_array();
	assert_true(lb_metrics_use_progress(m, true));
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_str(get(issue(warnings, 0), "kind"), "from_progress");
	msg = json_object_get_string(get(issue(warnings, 0), "message"));
	assert_non_null(strstr(msg, "last progress line (`epoch 2 loss: 0.4`, the last of 2)"));
	lb_metrics_free(m);
	json_object_put(issues);
	json_object_put(warnings);
}

/* The end of a traceback is no metric even when its value is a number: "KeyError: 0" is the
 * key that was missing. Names of error rates stay metrics. */
static void test_exception_lines_are_no_metrics(void **state)
{
	static const char *const lines[] = {
		"KeyError: 0",
		"KeyError: 3.0",
		"IndexError: 7",
		"SystemExit: 2",
		"KeyboardInterrupt: 1",
		"UserWarning: 0.5",
		"StopIteration: 1",
		"ExceptionGroup: 2",
		"_ArrayMemoryError: 1",
		"numpy.linalg.LinAlgError: 1",
		"torch.cuda.OutOfMemoryError: 2",
		"socket.timeout: 30",
		"acc: 0.5, KeyError: 0",
		"\033[1;35mKeyError\033[0m: \033[35m0\033[0m",
	};
	static const char *const metrics[] = {
		"error: 0.12", "Error: 0.05", "test_error: 0.3", "Error rate: 0.1", "val_loss: 0.2",
		"Warning: 3", "Exception: 1", "train_Error: 0.2", "val.error: 0.1", "Exit: 0",
		"errors: 4",
	};
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (lb_metric_line_parse(lines[i], strlen(lines[i]), &ml))
			fail_msg("\"%s\" parsed as a metric", lines[i]);
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
		if (!lb_metric_line_parse(metrics[i], strlen(metrics[i]), &ml))
			fail_msg("\"%s\" is no metric", metrics[i]);
}

/* Every line of a traceback is skipped, a worker thread's and a chained one's included, and
 * the lines after it are read again. */
static void test_stream_tracebacks_hold_no_metrics(void **state)
{
	static const char out[] =
		"loss: 0.5\n"
		"Exception in thread Thread-1 (evaluate):\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in evaluate\n"
		"    results[split] = scores[split]\n"
		"                     ~~~~~~^^^^^^^\n"
		"KeyError: 0\n"
		"acc: 0.9\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"IndexError: 3\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 5, in <module>\n"
		"LookupFailed: 4\n"
		"  + Exception Group Traceback (most recent call last):\n"
		"  |   File \"/exp/main.py\", line 8, in <module>\n"
		"  | ExceptionGroup: 2 (2 sub-exceptions)\n"
		"  +-+---------------- 1 ----------------\n"
		"    | weird: 5\n"
		"    +------------------------------------\n"
		"f1: 0.7\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	char *text = to_json_text(m);

	(void)state;
	/* LookupFailed ends its traceback as any class would; f1 after a group is read. */
	assert_non_null(strstr(text, "\"values\":{\"loss\":0.5,\"acc\":0.9,\"f1\":0.7}"));
	assert_int_equal(lb_metrics_count(m), 3);
	free(text);
	lb_metrics_free(m);
}

/* stderr: libraries' lines are not read; the experiment's logging.info lines are. A stderr
 * line that would be a metric is named by the no_metrics issue. Each stream's lines are
 * assembled apart, so chunks that interleave do not join. */
static void test_stream_stderr_is_not_metrics(void **state)
{
	static const char err1[] = "GPU available: False, used: False\nNon-trainable params: 0\n"
				   "INFO:root:accuracy: 0.91\nacc";
	static const char err2[] = "uracy_err: 0.5\n";
	lb_metrics *m = NULL;
	struct json_object *issues = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };
	char *text;

	(void)state;
	assert_int_equal(lb_metrics_new(&m), 0);
	lb_metrics_feed_stderr_at(m, err1, sizeof(err1) - 1, -1);
	lb_metrics_feed_at(m, "val_", 4, -1);
	lb_metrics_feed_stderr_at(m, err2, sizeof(err2) - 1, -1);
	lb_metrics_feed_at(m, "acc: 0.81\n", 10, -1);
	lb_metrics_finish(m);
	text = to_json_text(m);
	assert_non_null(strstr(text, "\"values\":{\"accuracy\":0.91,\"val_acc\":0.81}"));
	free(text);
	lb_metrics_free(m);

	assert_int_equal(lb_metrics_new(&m), 0);
	{
		static const char err[] = "Non-trainable params: 0\n"
					  "Traceback (most recent call last):\nKeyError: 0\n";

		lb_metrics_feed_stderr_at(m, err, sizeof(err) - 1, -1);
	}
	lb_metrics_finish(m);
	assert_int_equal(lb_metrics_count(m), 0);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(issue(issues, 0), "kind"), "no_metrics");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 0), "message")),
			       "1 line on stderr like `Non-trainable params: 0`"));
	json_object_put(issues);
	lb_metrics_free(m);
}

static lb_metrics *collect_lang(const char *language, const char *data)
{
	lb_metrics *m = NULL;

	assert_int_equal(lb_metrics_new(&m), 0);
	lb_metrics_set_language(m, language);
	lb_metrics_feed(m, data, strlen(data));
	lb_metrics_finish(m);
	return m;
}

/* Octave's display of a variable is a metric of Octave experiments only; R's NA is NaN in R
 * experiments only. */
static void test_stream_language_forms(void **state)
{
	static const char octave_out[] = "acc = 0.9300\nloss = NaN\nans = 0.5\ni = 3\nepoch = 2\n"
					 "x =\n\n   1   2\n\ns = done\nlr = 1e-3 (tuned)\n";
	lb_metrics *m = collect_lang("octave", octave_out);
	struct json_object *doc = lb_metrics_to_json(m), *v = get(doc, "values");
	struct json_object *issues = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };

	(void)state;
	assert_double(get(v, "acc"), 0.93);
	assert_str(get(v, "loss"), "NaN");
	assert_double(get(v, "i"), 3);
	assert_int_equal(json_object_object_length(v), 3); /* not ans, epoch, x, s, lr */
	json_object_put(doc);
	lb_metrics_free(m);
	/* The same lines from Python are not metrics. */
	m = collect_lang(NULL, octave_out);
	assert_int_equal(lb_metrics_count(m), 0);
	lb_metrics_free(m);

	m = collect_lang("r", "accuracy: NA\nregion: NAm\nf1: 0.5\n");
	doc = lb_metrics_to_json(m);
	assert_str(get(doc, "values/accuracy"), "NaN");
	assert_str(get(doc, "values/region"), "NAm");
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(issue(issues, 0), "kind"), "nan");
	json_object_put(doc);
	lb_metrics_free(m);
	/* Python's "NA" stays the label it always was. */
	m = collect_lang(NULL, "accuracy: NA\n");
	doc = lb_metrics_to_json(m);
	assert_str(get(doc, "values/accuracy"), "NA");
	json_object_put(doc);
	lb_metrics_free(m);
	json_object_put(issues);
}

/* Comma-grouped numbers stay unread: "1,234,567" and a list "128,256,512" look the same,
 * and "1,234" is 1.234 where a comma is the decimal sign. */
static void test_comma_groups_are_not_numbers(void **state)
{
	static const char *const lines[] = { "samples: 1,234,567", "sizes: 128,256,512",
					     "a: 1,2", "acc: 0,93" };

	(void)state;
	expect_not_metric(lines, sizeof(lines) / sizeof(lines[0]));
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
	/* Exactly LB_METRIC_LINE_MAX bytes before the newline: still a metric. A value is at
	 * most a label, so the length is in a condition name. */
	memcpy(text, "condition: ", 11);
	memset(text + 11, 'y', LB_METRIC_LINE_MAX - 11);
	len = LB_METRIC_LINE_MAX;
	text[len++] = '\n';
	m = NULL;
	assert_int_equal(lb_metrics_new(&m), 0);
	feed_in_chunks(m, text, len, 1000);
	lb_metrics_finish(m);
	doc = lb_metrics_to_json(m);
	/* Stored strings are capped, and the cut is marked with an ellipsis. */
	{
		struct json_object *c = json_object_array_get_idx(get(doc, "condition_order"), 0);

		assert_non_null(c);
		assert_true(json_object_get_string_len(c) <= 260);
		assert_non_null(strstr(json_object_get_string(c), "\xe2\x80\xa6"));
	}
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
	/* Values are numbers or ASCII labels; text from the output reaches the document through
	 * condition names and tag values. */
	static const char out[] = "condition: caf\xc3\xa9 \xff\xfe ok\nx: 1\n"
				  "condition=a\0b seed=\xc0\xaf y: 2\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m);
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	struct json_tokener *tok = json_tokener_new();
	struct json_object *back;

	(void)state;
	assert_str(json_object_array_get_idx(get(doc, "condition_order"), 0),
		   "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd ok");
	assert_str(json_object_array_get_idx(get(doc, "condition_order"), 1), "a\xef\xbf\xbd" "b");
	assert_str(get(json_object_array_get_idx(get(doc, "tagged"), 0), "tags/seed"),
		   "\xef\xbf\xbd\xef\xbf\xbd");
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

static void test_results_big_integers_keep_their_value(void **state)
{
	(void)state;
	char err[256];
	struct json_object *doc = NULL, *v;
	const char *text = "{\"big\": 123456789012345678901234567890, \"neg\": -99999999999999999999,"
			   " \"max\": 18446744073709551615, \"min\": -9223372036854775808,"
			   " \"s\": \"\\\" 123456789012345678901234567890\","
			   " \"a\": [1e400, 000000000000000000000000001, 12345678901234567890123.5]}";
	assert_int_equal(parse_text(text, &doc, err, sizeof err), 0);
	/* Past 64 bits an integer is kept as the string of its digits: exact, where a double
	 * would round two checksums to one number. */
	assert_true(json_object_object_get_ex(doc, "big", &v));
	assert_true(json_object_is_type(v, json_type_string));
	assert_string_equal(json_object_get_string(v), "123456789012345678901234567890");
	assert_true(lb_json_is_wide_integer(v));
	assert_true(json_object_object_get_ex(doc, "neg", &v));
	assert_string_equal(json_object_get_string(v), "-99999999999999999999");
	/* What fits stays an exact integer. */
	assert_true(json_object_object_get_ex(doc, "max", &v));
	assert_true(json_object_is_type(v, json_type_int));
	assert_true(json_object_get_uint64(v) == UINT64_MAX);
	assert_true(json_object_object_get_ex(doc, "min", &v));
	assert_true(json_object_get_int64(v) == INT64_MIN);
	assert_true(json_object_object_get_ex(doc, "s", &v));
	assert_string_equal(json_object_get_string(v), "\" 123456789012345678901234567890");
	json_object_put(doc);
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

/* Tagged and SUMMARY lines ------------------------------------------------------------------ */

static bool parse(const char *line, lb_metric_line *ml)
{
	return lb_metric_line_parse(line, strlen(line), ml);
}

/* Spellings research code prints: an uncertainty without blanks, a percent sign after a blank,
 * Python's underscore grouping; a comma-joined list stays no number. */
static void test_tight_uncertainty_spaced_percent_grouping(void **state)
{
	lb_metric_line ml;
	(void)state;

	assert_true(parse("acc: 0.93\xc2\xb1" "0.01", &ml) && ml.number == 0.93);
	assert_true(ml.values[0].has_uncertainty && ml.values[0].uncertainty == 0.01);
	assert_true(parse("acc: 0.93+-0.01, loss: 2", &ml) && ml.n_values == 2);
	assert_true(parse("acc: 93.5 %", &ml) && ml.number == 93.5 && ml.values[0].percent);
	assert_int_equal(ml.str_len, 6);
	assert_true(parse("acc: 93.5 %, f1: 0.5", &ml) && ml.n_values == 2);
	assert_true(parse("tokens: 32_768", &ml) && ml.number == 32768);
	assert_true(parse("n: -1_000_000.25", &ml) && ml.number == -1000000.25);
	assert_false(parse("sizes: 128,256,512", &ml));
	assert_false(parse("n: 1_0000", &ml));
	assert_false(parse("n: 1_000_00", &ml));
	assert_false(parse("acc: 93.5 % of them", &ml));
}

/* A scalar's repr (torch's tensor(...), numpy 2's np.float64(...)) is its number, its type
 * kept as an annotation; a tensor of several elements and a repr cut short are not values. */
static void test_scalar_reprs_are_numbers(void **state)
{
	lb_metric_line ml;
	(void)state;

	assert_true(parse("loss: tensor(0.2500)", &ml));
	assert_true(ml.kind == LB_METRIC_NUMBER && ml.number == 0.25);
	assert_int_equal(ml.values[0].wrapper_len, 6);
	assert_memory_equal(ml.values[0].wrapper, "tensor", 6);
	assert_true(parse("val_loss: tensor(0.5, device='cuda:0', grad_fn=<NllLossBackward0>), "
			  "acc: np.float64(0.75)", &ml));
	assert_int_equal(ml.n_values, 2);
	assert_true(ml.values[0].number == 0.5 && ml.values[1].number == 0.75);
	assert_int_equal(ml.values[1].wrapper_len, 10);
	assert_true(parse("n: np.int64(-3)", &ml) && ml.number == -3);
	assert_false(parse("vec: tensor([0.5000, 0.2500])", &ml));
	assert_false(parse("f1: np.float64(0.88", &ml));
	assert_false(parse("f1: np.float64(0.88)x", &ml));
	assert_false(parse("f1: np.(0.88)", &ml));
	assert_false(parse("f1: tensor(0.5, dtype=f(x))", &ml));
	assert_true(parse("acc: 0.5", &ml) && ml.values[0].wrapper == NULL);
	/* R's print() of one string */
	assert_true(parse("[1] \"accuracy: 0.93\"", &ml) && ml.number == 0.93);
	assert_string_equal(ml.name, "accuracy");
	assert_true(parse("[1] \"condition=A acc: 0.5\"", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_TAGGED);
	assert_false(parse("[1] \"a: 1\" \"b: 2\"", &ml));
	assert_false(parse("[1] \"note: say \\\"hi\\\"\"", &ml));
	assert_false(parse("[2] \"acc: 1\"", &ml));
	assert_false(parse("[1] \"\"", &ml));
}

/* A carriage return ends a line as a newline does, in any chunking, and escape sequences are
 * read as absent: what a progress bar and a colour leave around a metric never hides it. */
static void test_returns_and_escapes_around_metrics(void **state)
{
	static const char out[] = "\r 10%|#  | 1/10\r100%|###| 10/10\r          \racc: 0.5\n"
				  "\x1b[92mf1: 0.25\x1b[0m\r\n"
				  "loss: \x1b[1m2\x1b(B\x1b[m\n"
				  "\x1b]8;;http://x\x1b\\auc\x1b]8;;\a: 0.75\n"
				  "half: \x1b[1\n";
	lb_metric_line ml;
	(void)state;

	for (size_t k = 1; k < sizeof(out) - 1; k++) {
		lb_metrics *m = NULL;
		struct json_object *doc, *v;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed(m, out, k);
		lb_metrics_feed(m, out + k, sizeof(out) - 1 - k);
		lb_metrics_finish(m);
		doc = lb_metrics_to_json(m);
		v = get(doc, "values");
		assert_int_equal(json_object_object_length(v), 4);
		assert_true(json_object_get_double(get(v, "acc")) == 0.5);
		assert_true(json_object_get_double(get(v, "f1")) == 0.25);
		assert_true(json_object_get_double(get(v, "loss")) == 2);
		assert_true(json_object_get_double(get(v, "auc")) == 0.75);
		json_object_put(doc);
		lb_metrics_free(m);
	}
	assert_int_equal(lb_metric_line_end("ab\rc\n", 5), 2);
	assert_int_equal(lb_metric_line_end("abc", 3), 3);
	assert_true(parse("\x1b[32maccuracy: 0.9\x1b[0m", &ml));
	assert_string_equal(ml.name, "accuracy");
	assert_int_equal(ml.str_len, 3);
	assert_memory_equal(ml.str, "0.9", 3);
	assert_false(parse("\x1b", &ml));
	assert_false(parse("acc: 0.5\x1b", &ml));
}

static void assert_tag(const lb_metric_tag *t, const char *key, const char *value)
{
	assert_int_equal(t->key_len, strlen(key));
	assert_memory_equal(t->key, key, t->key_len);
	assert_int_equal(t->value_len, strlen(value));
	assert_memory_equal(t->value, value, t->value_len);
}

static void test_line_parse_tagged(void **state)
{
	lb_metric_line ml;

	(void)state;
	assert_true(parse("condition=A seed=1 acc: 0.93", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_TAGGED);
	assert_string_equal(ml.name, "acc");
	assert_int_equal(ml.kind, LB_METRIC_NUMBER);
	assert_true(ml.number == 0.93);
	assert_int_equal(ml.condition_len, 1);
	assert_memory_equal(ml.condition, "A", 1);
	assert_int_equal(ml.n_tags, 1);
	assert_tag(&ml.tags[0], "seed", "1");

	/* condition= anywhere among the tags; the others come out sorted by key. */
	assert_true(parse("  z=9 lr=0.1 condition=lr0.1 b.c-d=x loss : -1e-3\r", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_TAGGED);
	assert_memory_equal(ml.condition, "lr0.1", 5);
	assert_int_equal(ml.n_tags, 3);
	assert_tag(&ml.tags[0], "b.c-d", "x");
	assert_tag(&ml.tags[1], "lr", "0.1");
	assert_tag(&ml.tags[2], "z", "9");
	assert_true(ml.number == -0.001);

	/* Quoted values hold blanks; values may hold '=' and ':'. */
	assert_true(parse("condition=\"big model\" note=\"a b\" opt=k=v:w model: resnet-50", &ml));
	assert_int_equal(ml.condition_len, 9);
	assert_memory_equal(ml.condition, "big model", 9);
	assert_tag(&ml.tags[0], "note", "a b");
	assert_tag(&ml.tags[1], "opt", "k=v:w");
	assert_int_equal(ml.kind, LB_METRIC_STRING);
	assert_int_equal(ml.str_len, 9);
	/* Two words are text, not a value. */
	assert_false(parse("condition=A model: resnet 50", &ml));

	/* Only condition=: no tags. */
	assert_true(parse("condition=A acc: 1", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_TAGGED);
	assert_int_equal(ml.n_tags, 0);

	/* A plain line says so, with no condition. */
	assert_true(parse("acc: 1", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_PLAIN);
	assert_null(ml.condition);
	assert_int_equal(ml.n_tags, 0);

	/* An exception class's name is no metric, as on plain lines. */
	assert_false(parse("condition=A KeyError: 0", &ml));
	assert_true(parse("condition=A train_error: 0.5", &ml));
	assert_false(parse("condition=A ValueError: bad input", &ml));
}

static void test_line_parse_tagged_rejects(void **state)
{
	static const char *const bad[] = {
		"step=5 loss: 0.3",		   /* no condition= */
		"condition=A",			   /* nothing after */
		"condition=A acc:1",		   /* no blank after ':' */
		"condition=A acc: ",		   /* no value */
		"condition=A seed=1 seed=2 acc: 1", /* a repeated key */
		"condition=A condition=B acc: 1",
		"condition= acc: 1",		   /* empty value */
		"condition=\"\" acc: 1",
		"condition=\"A acc: 1",		   /* unterminated quote */
		"condition=\"A\"x acc: 1",	   /* text after the quote */
		"condition=A x=1",		   /* no name */
		"condition=A 9acc: 1",		   /* not a name */
		"=A acc: 1",
		"# condition=A acc: 1",
	};
	lb_metric_line ml;
	char line[2048];
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &ml))
			fail_msg("accepted \"%s\"", bad[i]);

	/* 16 tags besides condition= are read, 17 are not. */
	n = snprintf(line, sizeof(line), "condition=A");
	for (int i = 0; i < LB_METRIC_TAGS_MAX; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " k%02d=v", i);
	snprintf(line + n, sizeof(line) - (size_t)n, " acc: 1");
	assert_true(parse(line, &ml));
	assert_int_equal(ml.n_tags, LB_METRIC_TAGS_MAX);
	snprintf(line + n, sizeof(line) - (size_t)n, " k99=v acc: 1");
	assert_false(parse(line, &ml));

	/* Tag text past LB_METRIC_TAGS_TEXT_MAX is refused; a key past 64 bytes is no key. */
	n = snprintf(line, sizeof(line), "condition=A t=");
	memset(line + n, 'v', LB_METRIC_TAGS_TEXT_MAX);
	snprintf(line + n + LB_METRIC_TAGS_TEXT_MAX, sizeof(line) - (size_t)n - LB_METRIC_TAGS_TEXT_MAX,
		 " acc: 1");
	assert_false(parse(line, &ml));
	n = snprintf(line, sizeof(line), "condition=A ");
	memset(line + n, 'k', LB_METRIC_TAG_KEY_MAX + 1);
	snprintf(line + n + LB_METRIC_TAG_KEY_MAX + 1, 32, "=1 acc: 1");
	assert_false(parse(line, &ml));
	line[n + LB_METRIC_TAG_KEY_MAX] = '\0';
	strcat(line, "=1 acc: 1");
	assert_true(parse(line, &ml));
}

static void test_line_parse_summary(void **state)
{
	lb_metric_line ml;

	(void)state;
	assert_true(parse("SUMMARY condition=A metric=acc mean=0.9 std=0.01 n=5", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_SUMMARY);
	assert_string_equal(ml.name, "acc");
	assert_memory_equal(ml.condition, "A", 1);
	assert_int_equal(ml.n_tags, 3);
	assert_tag(&ml.tags[0], "mean", "0.9");
	assert_tag(&ml.tags[1], "n", "5");
	assert_tag(&ml.tags[2], "std", "0.01");
	/* kind and number describe mean=. */
	assert_int_equal(ml.kind, LB_METRIC_NUMBER);
	assert_true(ml.number == 0.9);

	/* condition= is optional; without mean= the first field is shown. */
	assert_true(parse("  SUMMARY\tmetric=loss std=nan\r", &ml));
	assert_null(ml.condition);
	assert_true(isnan(ml.number));
	assert_true(parse("SUMMARY metric=acc mean=n/a", &ml));
	assert_int_equal(ml.kind, LB_METRIC_STRING);

	/* Not summaries: no metric=, nothing but metric=, text after the tokens, a metric= that
	 * is no name, a repeated key. */
	assert_false(parse("SUMMARY condition=A mean=1", &ml));
	assert_false(parse("SUMMARY metric=acc", &ml));
	assert_false(parse("SUMMARY condition=A metric=acc", &ml));
	assert_false(parse("SUMMARY metric=acc mean=1 and more", &ml));
	assert_false(parse("SUMMARY metric=1acc mean=1", &ml));
	assert_false(parse("SUMMARY metric=acc mean=1 mean=2", &ml));
	assert_false(parse("SUMMARY of results", &ml));
	/* Plain metrics called SUMMARY stay plain. */
	assert_true(parse("SUMMARY: 3", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_PLAIN);
	assert_string_equal(ml.name, "SUMMARY");
	assert_true(parse("SUMMARY : 3", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_PLAIN);
}

static const char mixed_output[] =
	"TIME_ESTIMATE: 10s\n"
	"epochs: 3\n"
	"condition: A\n"
	"acc: 0.9\n"
	"condition=C acc: 0.5\n"
	"loss: 0.1\n"
	"condition=A seed=1 acc: 0.91\n"
	"seed=2 condition=A acc: 0.89\n"
	"condition=A seed=1 acc: 0.92\n"
	"condition=\"big model\" lr=0.1 acc: 0.7\n"
	"condition=B model: mlp\n"
	"SUMMARY condition=A metric=acc mean=0.905 std=0.005 n=2\n"
	"SUMMARY metric=loss mean=0.1 std=0\n"
	"SUMMARY condition=A metric=acc mean=0.906 std=0.004 n=2\n"
	"step=5 loss: 0.3\n"
	"TIME_GUARD: 12.5s - saving partial results\n";

static void test_stream_tagged_and_summaries(void **state)
{
	lb_metrics *m = collect(mixed_output, sizeof(mixed_output) - 1);
	struct json_object *doc = lb_metrics_to_json(m), *tagged, *sums, *rec, *order, *reps;

	(void)state;
	/* epochs, A.acc, A.loss, C.acc, 2 tagged in A, 1 tagged in big model, B.model, 2 SUMMARY */
	assert_int_equal(lb_metrics_count(m), 10);
	assert_double(get(doc, "values/epochs"), 3);
	assert_double(get(doc, "conditions/A/acc"), 0.9);
	/* condition=C did not change the current group: loss is A's. */
	assert_double(get(doc, "conditions/A/loss"), 0.1);
	assert_double(get(doc, "conditions/C/acc"), 0.5);
	assert_str(get(doc, "conditions/B/model"), "mlp");
	assert_int_equal(json_object_object_length(get(doc, "conditions/big model")), 0);
	order = get(doc, "condition_order");
	assert_int_equal(json_object_array_length(order), 4);
	assert_str(json_object_array_get_idx(order, 1), "C");
	assert_str(json_object_array_get_idx(order, 2), "big model");

	tagged = get(doc, "tagged");
	assert_int_equal(json_object_array_length(tagged), 3);
	rec = json_object_array_get_idx(tagged, 0);
	assert_str(get(rec, "condition"), "A");
	assert_str(get(rec, "metric"), "acc");
	assert_str(get(rec, "tags/seed"), "1");
	assert_double(get(rec, "value"), 0.92); /* the last value of the series */
	assert_str(get(json_object_array_get_idx(tagged, 1), "tags/seed"), "2");
	assert_str(get(json_object_array_get_idx(tagged, 2), "condition"), "big model");
	assert_str(get(json_object_array_get_idx(tagged, 2), "tags/lr"), "0.1");

	sums = get(doc, "summaries");
	assert_int_equal(json_object_array_length(sums), 2);
	rec = json_object_array_get_idx(sums, 0);
	assert_str(get(rec, "condition"), "A");
	assert_str(get(rec, "metric"), "acc");
	assert_double(get(rec, "mean"), 0.906);
	assert_double(get(rec, "std"), 0.004);
	assert_double(get(rec, "n"), 2);
	/* Without condition=, the current group: A. */
	rec = json_object_array_get_idx(sums, 1);
	assert_str(get(rec, "condition"), "A");
	assert_str(get(rec, "metric"), "loss");

	reps = get(doc, "repeats");
	assert_int_equal(json_object_array_length(reps), 2);
	assert_str(get(json_object_array_get_idx(reps, 0), "tags/seed"), "1");
	assert_int_equal(json_object_get_int(get(json_object_array_get_idx(reps, 0), "seen")), 2);
	assert_true(json_object_get_boolean(get(json_object_array_get_idx(reps, 1), "summary")));

	assert_double(get(doc, "time_guard_at_s"), 12.5);
	assert_str(get(doc, "time_guard_at_source"), "printed");
	assert_false(json_object_object_get_ex(doc, "dropped_tagged", NULL));
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_stream_plain_document_unchanged(void **state)
{
	static const char out[] = "epochs: 10\ncondition: A\nx: 1\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	char *text = to_json_text(m);

	(void)state;
	/* Runs that print none of the new forms get the document they always got, but for
	 * integers, which are recorded as the integers printed. */
	assert_string_equal(text, "{\"values\":{\"epochs\":10},\"conditions\":{\"A\":{\"x\":1}},"
				  "\"condition_order\":[\"A\"],\"time_estimate_s\":null,"
				  "\"time_guard\":null}");
	free(text);
	lb_metrics_free(m);
}

static void test_stream_mixed_split_every_position(void **state)
{
	const size_t len = sizeof(mixed_output) - 1;
	lb_metrics *ref = collect(mixed_output, len);
	char *want = to_json_text(ref);

	(void)state;
	for (size_t k = 0; k <= len; k++) {
		lb_metrics *m = NULL;
		char *got;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed(m, mixed_output, k);
		lb_metrics_feed(m, mixed_output + k, len - k);
		lb_metrics_finish(m);
		got = to_json_text(m);
		if (strcmp(got, want) != 0)
			fail_msg("split at %zu:\n%s\nwant\n%s", k, got, want);
		free(got);
		lb_metrics_free(m);
	}
	free(want);
	lb_metrics_free(ref);
}

static void test_stream_tagged_caps(void **state)
{
	lb_metrics *m = NULL;
	struct json_object *doc;
	char line[96];

	(void)state;
	assert_int_equal(lb_metrics_new(&m), 0);
	/* A per-step series past its cap... */
	for (int i = 0; i < 5003; i++) {
		int n = snprintf(line, sizeof(line), "condition=A step=%d loss: %d\n", i, i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	/* ...does not crowd out the results, and SUMMARY lines have their own cap. */
	lb_metrics_feed(m, "final: 1\n", 9);
	for (int i = 0; i < 1002; i++) {
		int n = snprintf(line, sizeof(line), "SUMMARY metric=m%d mean=1\n", i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	lb_metrics_finish(m);
	doc = lb_metrics_to_json(m);
	assert_double(get(doc, "values/final"), 1);
	assert_int_equal(json_object_array_length(get(doc, "tagged")), 5000);
	assert_int_equal(json_object_get_int(get(doc, "dropped_tagged")), 3);
	assert_int_equal(json_object_array_length(get(doc, "summaries")), 1000);
	assert_int_equal(json_object_get_int(get(doc, "dropped_metrics")), 2);
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_stream_invalid_utf8_in_tags(void **state)
{
	static const char out[] = "condition=caf\xc3\xa9 k=\xff\x01 acc: 1\n"
				  "SUMMARY metric=acc mean=\xfe std=1\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m);
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	struct json_tokener *tok = json_tokener_new();
	struct json_object *back;

	(void)state;
	assert_str(get(json_object_array_get_idx(get(doc, "tagged"), 0), "tags/k"),
		   "\xef\xbf\xbd\xef\xbf\xbd");
	assert_str(get(json_object_array_get_idx(get(doc, "summaries"), 0), "mean"),
		   "\xef\xbf\xbd");
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8 | JSON_TOKENER_STRICT);
	back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	assert_non_null(back);
	json_object_put(back);
	json_tokener_free(tok);
	json_object_put(doc);
	lb_metrics_free(m);
}

/* TIME_GUARD ------------------------------------------------------------------------------ */

/* Which metrics a determinism check compares apart: their name says they measure a duration
 * or a rate per time as a whole. A time word that qualifies another quantity (a time series'
 * error, a second moment) names a result, which a rerun must compare. */
static void test_metric_is_timing(void **state)
{
	(void)state;
	const char *timing[] = {"fit_seconds", "train_time", "lambda_0.01/fit_seconds",
				"samples_per_sec", "step_ms", "Elapsed", "wall-clock",
				"epoch time s", "tokens_per_second", "results.json.runtime",
				"latency_p99", "throughput", "fit_s", "samples/s", "it/s",
				"epoch_time", "time_taken", "wall_clock", "time_elapsed", "time",
				"duration", "walltime", "fps", "trainTime", "step_time_mean",
				"images_per_sec_avg", "time_per_epoch", "gpu_hours", "step_times",
				"eval_secs", "runtime_total", "inference_latency_ms",
				"epoch_time_s", "train_s", "step_s", "tokens_per_s",
				"step_time_mean_ms", "s", "coco/time_s"};
	const char *not_timing[] = {"accuracy", "loss_min", "steps", "train_mse",
				    "lambda_0.01/test_mse", "timestep_count", "lr_0.01", "",
				    "s_weird/accuracy", "time_series_mse", "second_moment_error",
				    "first_second_ratio", "timestep_reward", "times_correct",
				    "timeSeriesMse", "time_series/mae", "seconds_order_accuracy",
				    "wall_distance", "clock_drift_error", "per_second_order", "min",
				    "total", "speedup", "realtime_factor_error", "elapsed_steps_ratio",
				    "coco/bbox_mAP_s", "segm_mAP_s", "bbox_mAP_s", "acc_s",
				    "loss_s", "AP_s", "f1_ms", "reward_mean_s", "dice_secs"};
	for (size_t i = 0; i < sizeof timing / sizeof *timing; i++)
		if (!lb_metric_is_timing(timing[i]))
			fail_msg("%s is a timing", timing[i]);
	for (size_t i = 0; i < sizeof not_timing / sizeof *not_timing; i++)
		if (lb_metric_is_timing(not_timing[i]))
			fail_msg("%s is no timing", not_timing[i]);
}

static void test_time_guard_time(void **state)
{
	static const struct {
		const char *line;
		double want; /* fed at 7 s; < 0: unknown */
		const char *source;
	} cases[] = {
		{ "TIME_GUARD: 240.1s \xe2\x80\x94 saving partial results\n", 240.1, "printed" },
		{ "TIME_GUARD: 12.3 s, stopping\n", 12.3, "printed" },
		{ "TIME_GUARD: 2m - saving\n", 120, "printed" },
		{ "TIME_GUARD: ~30 sec\n", 30, "printed" },
		{ "TIME_GUARD: 95\n", 95, "printed" },
		{ "TIME_GUARD: 95.5 (80% of budget)\n", 95.5, "printed" },
		{ "TIME_GUARD: 3 conditions done\n", 7, "arrival" },
		{ "TIME_GUARD: 12s5\n", 7, "arrival" },
		{ "TIME_GUARD: saving partial results\n", 7, "arrival" },
		{ "TIME_GUARD: -5s\n", 7, "arrival" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lb_metrics *m = NULL;
		struct json_object *doc;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed_at(m, cases[i].line, strlen(cases[i].line), 7);
		lb_metrics_finish(m);
		if (fabs(lb_metrics_time_guard_at(m) - cases[i].want) > 1e-9)
			fail_msg("%s -> %g", cases[i].line, lb_metrics_time_guard_at(m));
		doc = lb_metrics_to_json(m);
		assert_str(get(doc, "time_guard_at_source"), cases[i].source);
		json_object_put(doc);
		lb_metrics_free(m);
	}
	{
		/* No time printed and none fed: unknown, null in the document. */
		static const char out[] = "TIME_GUARD: stopping\n";
		lb_metrics *m = collect(out, sizeof(out) - 1);
		struct json_object *doc = lb_metrics_to_json(m);

		assert_true(lb_metrics_time_guard_fired(m));
		assert_true(lb_metrics_time_guard_at(m) < 0);
		assert_true(json_object_get_type(get(doc, "time_guard_at_s")) == json_type_null);
		assert_true(json_object_get_type(get(doc, "time_guard_at_source")) == json_type_null);
		json_object_put(doc);
		lb_metrics_free(m);
	}
	{
		/* The first firing counts; a line completed by a later chunk has that chunk's time;
		 * a later line only fills in a time the first one did not give. */
		lb_metrics *m = NULL;

		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed_at(m, "TIME_GUARD: sav", 15, 1);
		lb_metrics_feed_at(m, "ing\nTIME_GUARD: 99s\n", 20, 5);
		lb_metrics_finish(m);
		assert_true(lb_metrics_time_guard_at(m) == 5);
		lb_metrics_free(m);
		assert_int_equal(lb_metrics_new(&m), 0);
		lb_metrics_feed(m, "TIME_GUARD: saving\nTIME_GUARD: 99s\nTIME_GUARD: 120s\n", 50);
		lb_metrics_finish(m);
		assert_true(lb_metrics_time_guard_at(m) == 99);
		lb_metrics_free(m);
	}
}

static void test_time_checks_pure(void **state)
{
	(void)state;
	/* Within 20% of the actual time, with a second of slack. */
	assert_true(lb_time_estimate_accurate(100, 100, true));
	assert_true(lb_time_estimate_accurate(80, 100, true));
	assert_true(lb_time_estimate_accurate(120, 100, true));
	assert_false(lb_time_estimate_accurate(79, 100, true));
	assert_false(lb_time_estimate_accurate(121, 100, true));
	assert_true(lb_time_estimate_accurate(0, 0.8, true));
	assert_true(lb_time_estimate_accurate(2, 1.2, true));
	assert_false(lb_time_estimate_accurate(3, 1.2, true));
	/* When the plan did not run to its end, only a certain underestimate counts. */
	assert_true(lb_time_estimate_accurate(1000, 100, false));
	assert_false(lb_time_estimate_accurate(10, 100, false));
	/* Unknowns say nothing. */
	assert_true(lb_time_estimate_accurate(-1, 100, true));
	assert_true(lb_time_estimate_accurate(10, -1, true));
	assert_true(lb_time_estimate_accurate(NAN, 100, true));
	assert_true(lb_time_estimate_accurate(10, INFINITY, true));

	assert_true(lb_time_guard_premature(49.9, 100));
	assert_false(lb_time_guard_premature(50, 100));
	assert_false(lb_time_guard_premature(80, 100));
	assert_false(lb_time_guard_premature(10, 0));
	assert_false(lb_time_guard_premature(-1, 100));
	assert_false(lb_time_guard_premature(NAN, 100));
	assert_false(lb_time_guard_premature(10, INFINITY));
}

/* Results files of a run ---------------------------------------------------------------- */

static void test_out_dir_default(void **state)
{
	(void)state;
	char out[64];
	static const char ai[] = "p.add_argument(\"--out_dir\", type=str, default=\"run_0\", "
				 "help=\"the default (run_0) is fine\")\n";
	assert_int_equal(lb_results_out_dir_default(ai, sizeof ai - 1, out, sizeof out), 0);
	assert_string_equal(out, "run_0");
	static const char help_first[] = "add_argument('--output-dir', help='default is x', "
					 "default='out')";
	assert_int_equal(lb_results_out_dir_default(help_first, sizeof help_first - 1, out,
						    sizeof out), 0);
	assert_string_equal(out, "out");
	/* an expression, a default of another call, a cut source, none at all */
	static const char expr[] = "add_argument('--out_dir', default=os.path.join('a'))";
	static const char other[] = "add_argument('--out_dir')\nadd_argument('--x', default='y')";
	static const char cut[] = "add_argument(\"--out_dir\", default=\"run_";
	static const char esc[] = "add_argument('--out_dir', default='a\\nb')";
	assert_int_equal(lb_results_out_dir_default(expr, sizeof expr - 1, out, sizeof out), -ENOENT);
	assert_int_equal(lb_results_out_dir_default(other, sizeof other - 1, out, sizeof out),
			 -ENOENT);
	assert_int_equal(lb_results_out_dir_default(cut, sizeof cut - 1, out, sizeof out), -ENOENT);
	assert_int_equal(lb_results_out_dir_default(esc, sizeof esc - 1, out, sizeof out), -ENOENT);
	assert_int_equal(lb_results_out_dir_default("'--out_dir'", 11, out, sizeof out), -ENOENT);
	/* longer than the caller's buffer: not cut short into another directory */
	assert_int_equal(lb_results_out_dir_default(ai, sizeof ai - 1, out, 4), -ENOENT);
}

static void test_out_dir_hint(void **state)
{
	char *a1[] = { "--epochs", "3", "--out_dir", "run_0" };
	char *a2[] = { "--out_dir=run_1", "--seed", "2" };
	char *a3[] = { "--out-dir", "a", "--output_dir", "b" };
	char *a4[] = { "--output-dir=c" };
	char *a5[] = { "--out_dir" };
	char *a6[] = { "--out_dirx", "y", "--out_dir=" };
	char *a7[] = { "--", "--out_dir", "z" };
	char *a8[] = { "--out_dir", "first", "--out_dir=last" };

	(void)state;
	assert_string_equal(lb_results_out_dir_hint(a1, 4), "run_0");
	assert_string_equal(lb_results_out_dir_hint(a2, 3), "run_1");
	assert_string_equal(lb_results_out_dir_hint(a3, 4), "b");
	assert_string_equal(lb_results_out_dir_hint(a4, 1), "c");
	assert_null(lb_results_out_dir_hint(a5, 1));
	assert_null(lb_results_out_dir_hint(a6, 3));
	assert_null(lb_results_out_dir_hint(a7, 3));
	assert_string_equal(lb_results_out_dir_hint(a8, 3), "last");
	assert_null(lb_results_out_dir_hint(NULL, 0));
}

static const char final_info_doc[] =
	"{\"shakespeare_char\": {\"means\": {\"final_train_loss_mean\": 0.81, "
	"\"best_val_loss_mean\": NaN}, \"stds\": {\"final_train_loss_mean\": 0.01}}}";

static void test_results_collect(void **state)
{
	tmpdir *t = *state;
	struct json_object *files = json_object_new_object(), *issues = json_object_new_array();
	static const char *const names[] = { "metrics/extra.json", "./results.json", "absent.json",
					     "../up.json", "/etc/passwd", "link.json",
					     "nodir/x.json" };

	write_at(t, "results.json", "{\"A\": {\"acc\": 0.9}}", 19);
	write_at(t, "final_info.json", "{\"x\": 1}", 8);
	assert_int_equal(mkdirat(t->fd, "run_0", 0755), 0);
	write_at(t, "run_0/final_info.json", final_info_doc, sizeof(final_info_doc) - 1);
	assert_int_equal(mkdirat(t->fd, "metrics", 0755), 0);
	write_at(t, "metrics/extra.json", "[1, 2]", 6);
	write_at(t, "real.json", "{}", 2);
	assert_int_equal(symlinkat("real.json", t->fd, "link.json"), 0);

	assert_int_equal(lb_results_collect(t->fd, names, 7, "./run_0/", files, issues), 4);
	assert_int_equal(json_object_object_length(files), 4);
	assert_double(get(files, "results.json/A/acc"), 0.9);
	assert_int_equal(json_object_get_int(get(files, "final_info.json/x")), 1);
	/* As parsed: still a NaN double, for validation to find. */
	{
		struct json_object *fi = NULL, *extra = NULL;

		/* Keys hold slashes, which get() would split. */
		assert_true(json_object_object_get_ex(files, "run_0/final_info.json", &fi));
		assert_true(isnan(json_object_get_double(
			get(fi, "shakespeare_char/means/best_val_loss_mean"))));
		assert_true(json_object_object_get_ex(files, "metrics/extra.json", &extra));
		assert_true(json_object_is_type(extra, json_type_array));
	}

	/* absent.json, ../up.json, /etc/passwd and nodir/x.json are missing; link.json is
	 * refused. The default names that were absent said nothing. */
	assert_int_equal(json_object_array_length(issues), 5);
	assert_str(get(issue(issues, 0), "kind"), "missing_file");
	assert_str(get(issue(issues, 0), "where"), "absent.json");
	assert_str(get(issue(issues, 1), "kind"), "missing_file");
	assert_str(get(issue(issues, 1), "where"), "../up.json");
	assert_str(get(issue(issues, 2), "kind"), "missing_file");
	assert_str(get(issue(issues, 2), "where"), "/etc/passwd");
	assert_str(get(issue(issues, 3), "kind"), "unreadable");
	assert_str(get(issue(issues, 3), "where"), "link.json");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 3), "message")),
			       "symbolic link"));
	assert_true(json_object_get_type(get(issue(issues, 3), "metric")) == json_type_null);
	assert_str(get(issue(issues, 4), "where"), "nodir/x.json");
	json_object_put(files);
	json_object_put(issues);

	/* Wrong container types. */
	assert_int_equal(lb_results_collect(t->fd, NULL, 0, NULL, NULL, NULL), -EINVAL);
}

static void test_results_collect_hint_and_defaults(void **state)
{
	tmpdir *t = *state;
	struct json_object *files, *issues;
	static const char *const hints[] = { "missing_dir", "/abs/run", "../x", "", "linked" };

	/* Nothing there: nothing read, nothing said. */
	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
		files = json_object_new_object();
		issues = json_object_new_array();
		assert_int_equal(lb_results_collect(t->fd, NULL, 0, hints[i], files, issues), 0);
		assert_int_equal(json_object_array_length(issues), 0);
		json_object_put(files);
		json_object_put(issues);
	}
	/* A linked hint directory is not entered, silently (it was only a guess). */
	assert_int_equal(mkdirat(t->fd, "real_out", 0755), 0);
	write_at(t, "real_out/final_info.json", "{}", 2);
	assert_int_equal(symlinkat("real_out", t->fd, "linked"), 0);
	files = json_object_new_object();
	issues = json_object_new_array();
	assert_int_equal(lb_results_collect(t->fd, NULL, 0, "linked", files, issues), 0);
	assert_int_equal(json_object_array_length(issues), 0);
	json_object_put(files);
	json_object_put(issues);

	/* A broken default file is an issue; a FIFO in the hint directory too (it exists). */
	write_at(t, "results.json", "{\"a\": ", 6);
	assert_int_equal(mkdirat(t->fd, "out", 0755), 0);
	assert_int_equal(mkfifoat(t->fd, "out/final_info.json", 0600), 0);
	files = json_object_new_object();
	issues = json_object_new_array();
	alarm(10);
	assert_int_equal(lb_results_collect(t->fd, NULL, 0, "out", files, issues), 0);
	alarm(0);
	assert_int_equal(json_object_array_length(issues), 2);
	assert_str(get(issue(issues, 0), "kind"), "unreadable");
	assert_str(get(issue(issues, 0), "where"), "results.json");
	assert_str(get(issue(issues, 1), "where"), "out/final_info.json");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 1), "message")), "FIFO"));
	json_object_put(files);
	json_object_put(issues);

	/* The hint "." names the defaults again: each file is read once. */
	write_at(t, "results.json", "{\"a\": 1}", 8);
	files = json_object_new_object();
	issues = json_object_new_array();
	assert_int_equal(lb_results_collect(t->fd, NULL, 0, ".", files, issues), 1);
	assert_int_equal(json_object_object_length(files), 1);
	json_object_put(files);
	json_object_put(issues);
}

/* Validation of a whole run --------------------------------------------------------------- */

static struct json_object *parsed(const char *text)
{
	struct json_object *o = NULL;
	char err[128];

	assert_int_equal(parse_text(text, &o, err, sizeof(err)), 0);
	return o;
}

static void test_validate_run_files(void **state)
{
	static const char out[] = "condition: A\nacc: 0.9\ncondition=B seed=1 acc: -inf\n"
				  "SUMMARY condition=A metric=acc mean=nan std=0.1\n";
	static const char *const declared[] = { "acc", "final_train_loss_mean", "best_val_loss",
						"shakespeare_char.stds.final_train_loss_mean" };
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *files = json_object_new_object();
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .files = files, .declared = declared, .n_declared = 4,
				     .wall_s = -1 };

	(void)state;
	json_object_object_add(files, "results.json", parsed("{\"A\": {\"acc\": 0.9}}"));
	json_object_object_add(files, "run_0/final_info.json", parsed(final_info_doc));
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 4);
	assert_str(get(issue(issues, 0), "kind"), "inf");
	assert_str(get(issue(issues, 0), "where"), "stdout condition B seed=1");
	assert_str(get(issue(issues, 1), "kind"), "nan");
	assert_str(get(issue(issues, 1), "where"), "stdout SUMMARY condition A");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 1), "message")),
			       "acc mean is NaN"));
	assert_str(get(issue(issues, 2), "kind"), "nan");
	assert_str(get(issue(issues, 2), "where"),
		   "run_0/final_info.json at shakespeare_char.means.best_val_loss_mean");
	assert_str(get(issue(issues, 3), "kind"), "missing");
	assert_str(get(issue(issues, 3), "metric"), "best_val_loss");
	assert_str(get(issue(issues, 3), "where"),
		   "stdout and results.json and run_0/final_info.json");
	assert_int_equal(json_object_array_length(warnings), 0);
	json_object_put(issues);
	json_object_put(warnings);

	/* A metric reported only as a SUMMARY or a tagged series counts as reported. */
	{
		static const char out2[] = "SUMMARY metric=f1 mean=0.5\ncondition=A seed=1 auc: 1\n";
		static const char *const d2[] = { "f1", "auc" };
		lb_metrics *m2 = collect(out2, sizeof(out2) - 1);
		lb_metrics_run_info i2 = { .declared = d2, .n_declared = 2, .wall_s = -1 };

		issues = json_object_new_array();
		assert_int_equal(lb_metrics_validate_run(m2, &i2, issues, NULL), 0);
		json_object_put(issues);
		lb_metrics_free(m2);
	}
	json_object_put(files);
	lb_metrics_free(m);
}

static void test_validate_run_timing(void **state)
{
	static const char early[] = "TIME_ESTIMATE: 10s\nTIME_GUARD: 12.5s - saving\nacc: 1\n";
	static const char ontime[] = "TIME_ESTIMATE: 100s\nacc: 1\n";
	lb_metrics *m = collect(early, sizeof(early) - 1);
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = 30, .budget_s = 100, .completed = true };

	(void)state;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 1);
	assert_str(get(issue(issues, 0), "kind"), "time_guard_early");
	assert_str(get(issue(issues, 0), "metric"), "TIME_GUARD");
	assert_double(get(issue(issues, 0), "fired_at_s"), 12.5);
	assert_double(get(issue(issues, 0), "budget_s"), 100);
	/* The guard fired, so 30 s is a lower bound: an estimate of 10 s was certainly short. */
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_str(get(issue(warnings, 0), "kind"), "time_estimate");
	assert_double(get(issue(warnings, 0), "estimate_s"), 10);
	assert_double(get(issue(warnings, 0), "actual_s"), 30);
	assert_non_null(strstr(json_object_get_string(get(issue(warnings, 0), "message")),
			       "stopped short"));
	json_object_put(issues);
	json_object_put(warnings);

	/* Without a budget there is nothing to be early against. */
	issues = json_object_new_array();
	info.budget_s = 0;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	/* A guard at 60% of the budget is fine. */
	issues = json_object_new_array();
	info.budget_s = 20;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	lb_metrics_free(m);

	m = collect(ontime, sizeof(ontime) - 1);
	issues = json_object_new_array();
	warnings = json_object_new_array();
	info = (lb_metrics_run_info){ .wall_s = 110, .budget_s = 300, .completed = true };
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 0);
	info.wall_s = 50; /* a complete run twice as fast as said */
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_non_null(strstr(json_object_get_string(get(issue(warnings, 0), "message")),
			       "+100%"));
	/* The same run stopped by the budget: 50 s says nothing against 100 s. */
	info.completed = false;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	/* Unknown wall time: no check. */
	info = (lb_metrics_run_info){ .wall_s = -1, .completed = true };
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	json_object_put(issues);
	json_object_put(warnings);
	lb_metrics_free(m);
}

static void test_validate_run_identical_stdout(void **state)
{
	static const char out[] = "condition: A\nacc: 0.9\nloss: 0.0\nmodel: a\n"
				  "condition: B\nloss: -0.0\nacc: 0.90\nmodel: b\n"
				  "condition: C\nacc: 0.8\nloss: 0\n"
				  "condition: D\nacc: 0.9\nloss: 0.0\n"
				  "condition: E\nacc: 0.8\nloss: 0\n"
				  "condition: F\nmodel: a\n"
				  "condition: G\nmodel: a\n"
				  "condition: H\nacc: 0.9\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	struct json_object *conds;
	lb_metrics_run_info info = { .wall_s = -1 };

	(void)state;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	/* A, B, D alike (strings are labels, -0 is 0); C and E alike; F and G have no numbers;
	 * H has fewer metrics. */
	assert_int_equal(json_object_array_length(warnings), 2);
	assert_str(get(issue(warnings, 0), "kind"), "identical_conditions");
	assert_str(get(issue(warnings, 0), "where"), "stdout");
	assert_true(json_object_get_type(get(issue(warnings, 0), "metric")) == json_type_null);
	conds = get(issue(warnings, 0), "conditions");
	assert_int_equal(json_object_array_length(conds), 3);
	assert_str(json_object_array_get_idx(conds, 0), "A");
	assert_str(json_object_array_get_idx(conds, 1), "B");
	assert_str(json_object_array_get_idx(conds, 2), "D");
	assert_non_null(strstr(json_object_get_string(get(issue(warnings, 0), "message")),
			       "3 conditions report identical results (2 metrics each: A, B, D)"));
	conds = get(issue(warnings, 1), "conditions");
	assert_int_equal(json_object_array_length(conds), 2);
	assert_str(json_object_array_get_idx(conds, 0), "C");
	assert_str(json_object_array_get_idx(conds, 1), "E");
	json_object_put(issues);
	json_object_put(warnings);
	lb_metrics_free(m);
}

static void test_validate_run_identical_files(void **state)
{
	static const char out[] = "condition: A\nacc: 0.5\ncondition: B\nacc: 0.5\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *files = json_object_new_object();
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .files = files, .wall_s = -1 };

	(void)state;
	/* The seed's template writes what it printed: one warning for both. Other entries of a
	 * file that match are warned about where they are. */
	json_object_object_add(files, "results.json",
			       parsed("{\"A\": {\"acc\": 0.5}, \"B\": {\"acc\": 0.5}, "
				      "\"C\": {\"x\": {\"y\": [1, 2]}, \"s\": \"t\"}, "
				      "\"D\": {\"s\": \"t\", \"x\": {\"y\": [1, 2]}}, "
				      "\"E\": {\"x\": {\"y\": [2, 1]}, \"s\": \"t\"}, "
				      "\"F\": {\"label\": \"no numbers\"}, \"G\": {\"label\": \"no numbers\"},"
				      " \"n\": 1, \"m\": 1}"));
	json_object_object_add(files, "final_info.json",
			       parsed("{\"ds1\": {\"means\": {\"loss\": 1.5}, \"stds\": {\"loss\": 0}},"
				      " \"ds2\": {\"means\": {\"loss\": 1.5}, \"stds\": {\"loss\": 0}}}"));
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 3);
	assert_str(get(issue(warnings, 0), "where"), "stdout");
	assert_str(get(issue(warnings, 1), "where"), "results.json");
	assert_str(json_object_array_get_idx(get(issue(warnings, 1), "conditions"), 0), "C");
	assert_str(json_object_array_get_idx(get(issue(warnings, 1), "conditions"), 1), "D");
	assert_int_equal(json_object_array_length(get(issue(warnings, 1), "conditions")), 2);
	assert_str(get(issue(warnings, 2), "where"), "final_info.json");
	assert_non_null(strstr(json_object_get_string(get(issue(warnings, 2), "message")),
			       "2 entries of final_info.json hold identical results (ds1, ds2)"));
	json_object_put(issues);
	json_object_put(warnings);
	json_object_put(files);
	lb_metrics_free(m);
}

/* Conditions that compute the same results in different times are still identical: a
 * condition that is never applied must not hide behind its fit_seconds. */
static void test_validate_run_identical_but_timings(void **state)
{
	static const char out[] = "condition: A\nmse: 0.25\nfit_seconds: 0.271\n"
				  "condition: B\nmse: 0.25\nfit_seconds: 0.288\n"
				  "condition: C\nmse: 0.31\nfit_seconds: 0.275\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *files = json_object_new_object();
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .files = files, .wall_s = -1 };

	(void)state;
	json_object_object_add(files, "final_info.json",
			       parsed("{\"x\": {\"acc\": 0.5, \"train_time\": 3.1},"
				      " \"y\": {\"acc\": 0.5, \"train_time\": 2.9},"
				      " \"z\": {\"train_time\": 2.9}}"));
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 2);
	assert_str(get(issue(warnings, 0), "where"), "stdout");
	assert_non_null(strstr(json_object_get_string(get(issue(warnings, 0), "message")),
			       "2 conditions report identical results (1 metric each: A, B)"));
	assert_str(get(issue(warnings, 1), "where"), "final_info.json");
	assert_int_equal(json_object_array_length(get(issue(warnings, 1), "conditions")), 2);
	assert_str(json_object_array_get_idx(get(issue(warnings, 1), "conditions"), 0), "x");
	assert_str(json_object_array_get_idx(get(issue(warnings, 1), "conditions"), 1), "y");
	json_object_put(issues);
	json_object_put(warnings);
	json_object_put(files);
	lb_metrics_free(m);
}

static void test_validate_run_many_identical(void **state)
{
	lb_metrics *m = NULL;
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1 };
	char line[64];

	(void)state;
	/* 1000 conditions, all alike: one warning, quick, names five of them in the message. */
	assert_int_equal(lb_metrics_new(&m), 0);
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(line, sizeof(line), "condition: c%d\nacc: 1\nloss: 2\n", i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	lb_metrics_finish(m);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 0);
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_int_equal(json_object_array_length(get(issue(warnings, 0), "conditions")), 1000);
	assert_non_null(strstr(json_object_get_string(get(issue(warnings, 0), "message")),
			       "c0, c1, c2, c3, c4 and 995 more"));
	json_object_put(issues);
	json_object_put(warnings);
	lb_metrics_free(m);
}

static void test_validate_run_dropped(void **state)
{
	lb_metrics *m = NULL;
	struct json_object *issues = json_object_new_array(), *warnings = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1 };
	char line[64];

	(void)state;
	assert_int_equal(lb_metrics_new(&m), 0);
	for (int i = 0; i < 10001; i++) {
		int n = snprintf(line, sizeof(line), "m%d: 1\n", i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	for (int i = 0; i < 5001; i++) {
		int n = snprintf(line, sizeof(line), "condition=A step=%d loss: 1\n", i);

		lb_metrics_feed(m, line, (size_t)n);
	}
	lb_metrics_finish(m);
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, warnings), 1);
	assert_str(get(issue(issues, 0), "kind"), "dropped");
	assert_non_null(strstr(json_object_get_string(get(issue(issues, 0), "message")),
			       "1 values were dropped"));
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_str(get(issue(warnings, 0), "kind"), "dropped_tagged");
	json_object_put(issues);
	json_object_put(warnings);
	lb_metrics_free(m);

	/* Bad arguments append nothing. */
	issues = json_object_new_object();
	assert_int_equal(lb_metrics_validate_run(NULL, &info, issues, NULL), 0);
	assert_int_equal(lb_metrics_validate_run(NULL, NULL, issues, NULL), 0);
	json_object_put(issues);
}

/* Real research output (issue 9) ------------------------------------------------------------ */

static void test_line_parse_several_pairs(void **state)
{
	lb_metric_line ml;

	(void)state;
	assert_true(parse("acc: 0.5 loss: 0.25", &ml));
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[0].name, "acc");
	assert_true(ml.values[0].number == 0.5);
	assert_int_equal(ml.values[0].str_len, 3);
	assert_string_equal(ml.values[1].name, "loss");
	assert_true(ml.values[1].number == 0.25);
	/* The first value is also in the line's own fields. */
	assert_string_equal(ml.name, "acc");
	assert_true(ml.number == 0.5);

	assert_true(parse("acc: 0.5, loss: 0.25", &ml));
	assert_int_equal(ml.n_values, 2);
	assert_true(parse("acc: 0.5 | loss: 0.25; f1: 0.7,", &ml));
	assert_int_equal(ml.n_values, 3);
	assert_string_equal(ml.values[2].name, "f1");

	assert_true(parse("condition=A seed=1 acc: 0.5 loss: 0.25", &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_TAGGED);
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[1].name, "loss");
	assert_int_equal(ml.values[0].kind, LB_METRIC_NUMBER);
	assert_true(ml.values[1].number == 0.25);
}

static void test_line_parse_names_with_spaces(void **state)
{
	lb_metric_line ml;

	(void)state;
	assert_true(parse("Tokens per second: 1234.5", &ml));
	assert_string_equal(ml.name, "Tokens per second");
	assert_true(ml.number == 1234.5);
	assert_true(parse("UCB (Stochastic) cumulative_regret: 361.9", &ml));
	assert_string_equal(ml.name, "UCB (Stochastic) cumulative_regret");
	/* Blanks inside a name are one space each. */
	assert_true(parse("Train   acc: 0.9 Val acc: 0.8", &ml));
	assert_int_equal(ml.n_values, 2);
	assert_string_equal(ml.values[0].name, "Train acc");
	assert_string_equal(ml.values[1].name, "Val acc");
}

/* Names of ordinary research metrics: ranking and fit metrics with @ and ^, words that start
 * with a digit after the first, and a comma inside the line's first name (twenty-fifth
 * session). What stays unread: counts (a name ending in a number, a counter word and its
 * number), timestamps, paths, and a comma after a pair. */
static void test_line_parse_ranking_and_number_names(void **state)
{
	static const char *const read[] = {
		"Hits@10: 0.5",	     "Recall@20: 0.618",	"NDCG@10: 0.401",
		"mAP@0.5: 0.70",     "R^2: 0.91",		"mAP@0.5:0.95: 0.45",
		"Top 5 accuracy: 0.93", "Accuracy after 10 epochs: 0.91",
		"Predicted price of a 1650 sq-ft, 3 br house: 293081.46",
	};
	static const char *const unread[] = {
		"1abc: 2",		  /* a name starts with a letter */
		"12:00:01 loss: 0.3",	  /* a timestamp */
		"at 12:00:01 loss: 0.3",  /* a name ends in no number */
		"Sample 3: 0.5",	  /* an enumeration: a name per line */
		"Epoch 5: 0.3",		  /* nor is a counter with its count a name */
		"Loss at step 100: 0.3",
		"Saving model, epoch: 3", /* a counter after a comma */
		"acc: 0.5 note, loss: 0.3", /* a comma after a pair separates */
		"x: [1, 2], y: 3",
		"x = [1, 2], y = 3",
		"see http://x: 3",
		"Jan 01 12:00:01 host: 3",
		"INFO, acc: 0.5",	  /* a level word is a log line's, a comma after it too */
	};
	lb_metric_line ml;
#define T(s) lb_metric_template_parse(s, strlen(s), &ml)

	(void)state;
	for (size_t i = 0; i < sizeof(read) / sizeof(read[0]); i++)
		if (!parse(read[i], &ml) || ml.n_values != 1 || ml.kind != LB_METRIC_NUMBER)
			fail_msg("\"%s\" is not read", read[i]);
	assert_true(parse("Hits@10: 0.512", &ml));
	assert_string_equal(ml.name, "Hits@10");
	assert_true(parse("Predicted price of a 1650 sq-ft,  3 br house: 293081.46", &ml));
	assert_string_equal(ml.name, "Predicted price of a 1650 sq-ft, 3 br house");
	assert_true(parse("MRR: 0.355 Hits@1: 0.301 Hits@10: 0.512", &ml));
	assert_int_equal(ml.n_values, 3);
	assert_string_equal(ml.values[2].name, "Hits@10");
	assert_true(parse("acc: 0.5, loss: 0.25", &ml)); /* a comma after a pair still separates */
	assert_int_equal(ml.n_values, 2);
	expect_not_metric(unread, sizeof(unread) / sizeof(unread[0]));
	/* Progress lines stay progress lines. */
	assert_int_equal(lb_metric_progress_parse("Epoch 1 loss: 0.3", 17, &ml),
			 LB_METRIC_PROGRESS_EPOCH);
	assert_int_equal(lb_metric_progress_parse("step 100, loss: 0.2", 19, &ml),
			 LB_METRIC_PROGRESS_STEP);
	/* SUMMARY's metric= and a dict's members are names too. */
	assert_true(parse("SUMMARY metric=Hits@10 mean=0.5 std=0.1", &ml));
	assert_string_equal(ml.name, "Hits@10");
	assert_true(parse("{\"Hits@10\": 0.5, \"R^2\": 0.9}", &ml));
	assert_int_equal(ml.n_values, 2);
	/* LB404 reads the same names; a hole after a counter word is its count, and a hole
	 * alone before a comma may be a number, as the collector reads `Epoch: 3, Loss: 0.5`. */
	assert_true(T("Hits@\x01: \x01"));
	assert_true(T("Top \x01 accuracy: \x01"));
	assert_true(T("R^2: \x01"));
	assert_false(T("Epoch \x01 loss: \x01"));
	assert_false(T("Loss at step \x01: \x01"));
	assert_false(T("INFO:root:Epoch: \x01, Loss: \x01"));
#undef T
}

static void test_line_parse_annotated(void **state)
{
	lb_metric_line ml;

	(void)state;
	assert_true(parse("solved: 3/4", &ml));
	assert_true(ml.values[0].ratio);
	assert_true(ml.number == 0.75);
	assert_int_equal(ml.str_len, 3);
	assert_true(parse("hits: 0/0", &ml));
	assert_true(isnan(ml.number)); /* flagged by validation, not lost */

	assert_true(parse("accuracy: 12.3%", &ml));
	assert_true(ml.values[0].percent);
	assert_true(ml.number == 12.3);

	assert_true(parse("acc: 0.5 \xc2\xb1 0.1", &ml));
	assert_true(ml.values[0].has_uncertainty);
	assert_true(ml.values[0].uncertainty == 0.1);
	assert_true(ml.number == 0.5);
	assert_int_equal(ml.str_len, strlen("0.5 \xc2\xb1 0.1"));
	assert_true(parse("acc: 0.5 +- 0.1 loss: 2 +/- 0.5", &ml));
	assert_int_equal(ml.n_values, 2);
	assert_true(ml.values[1].uncertainty == 0.5);

	assert_true(parse("val_acc: 0.95 (best)", &ml));
	assert_int_equal(ml.values[0].remark_len, 4);
	assert_memory_equal(ml.values[0].remark, "best", 4);
	assert_true(ml.number == 0.95);
	assert_true(parse("acc: 93.5% (best) loss: 0.1", &ml));
	assert_true(ml.values[0].percent);
	assert_non_null(ml.values[0].remark);
	assert_int_equal(ml.n_values, 2);
}

static void test_line_parse_not_metrics_real(void **state)
{
	static const char *const lines[] = {
		"INFO: Starting training",
		"INFO: 3",
		"WARNING: something is deprecated",
		"ERROR: 0.5",
		"DEBUG: x",
		"CRITICAL: disk full",
		"Warning: something deprecated",
		"Info: done",
		/* INFO:root:accuracy: 0.5 is read since the tenth session: test_line_parse_table_rows_and_logging */
		"WARNING:__main__:loss is high",
		"INFO:root:loss is high",
		"INFO acc: 0.5",
		"Epoch: 1, Batch: 5, Loss: 0.3",
		"epoch: 3",
		"Step: 100 loss: 0.2",
		"loss: 0.2 step: 100",
		"condition=A seed=1 epoch: 3 loss: 0.2",
		"p: /some/path",
		"output: ./runs/x",
		"url: http://example.org/a",
		"accuracy: 0.93 on the test set",
		"note: two words",
		"acc: 0.5 loss",
		"acc: 0.5 loss:",
		"train_time: 12.5s",
		"KeyError: 'x'",
		"Epoch 1 loss: 0.3",
		"acc: 0.5 (",
		"acc: (best)",
	};
	lb_metric_line ml;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (parse(lines[i], &ml))
			fail_msg("\"%s\" parsed as a metric", lines[i]);
	/* What stays a metric: an error rate, labels, a lone level-shaped word in a name. */
	assert_true(parse("error: 0.05", &ml));
	assert_true(parse("Error: 0.05", &ml));
	assert_true(parse("model: resnet-50", &ml));
	assert_true(parse("use_amp: True", &ml));
	assert_true(parse("best_epoch: 7", &ml));
	assert_true(parse("info_gain: 0.3", &ml));
	/* Special names keep their text. */
	assert_true(parse("condition: lr 0.1 big", &ml));
	assert_int_equal(ml.str_len, 10);
	assert_true(parse("TIME_GUARD: 240.1s - saving partial results", &ml));
}

static void test_line_parse_paired(void **state)
{
	lb_metric_line ml;

	(void)state;
	assert_true(parse("PAIRED: ours vs baseline regime=low mean_diff=0.031 std_diff=0.012 "
			  "t_stat=4.2 p_value=0.003 ci95=(0.02,0.04)",
			  &ml));
	assert_int_equal(ml.form, LB_METRIC_FORM_PAIRED);
	assert_string_equal(ml.name, "ours vs baseline");
	assert_true(ml.number == 0.031);
	/* Sorted: baseline, ci95, mean_diff, method, p_value, regime, std_diff, t_stat. */
	assert_int_equal(ml.n_tags, 8);
	assert_tag(&ml.tags[0], "baseline", "baseline");
	assert_tag(&ml.tags[1], "ci95", "(0.02,0.04)");
	assert_tag(&ml.tags[3], "method", "ours");
	assert_tag(&ml.tags[5], "regime", "low");
	/* Text between the fields is skipped; a blank inside the interval is kept. */
	assert_true(parse("PAIRED: a vs b mean_diff=-0.5 (n=5 seeds) ci95=(-0.7, -0.3)", &ml));
	assert_tag(&ml.tags[1], "ci95", "(-0.7, -0.3)");
	assert_false(parse("PAIRED: a vs b std_diff=1", &ml)); /* no mean_diff */
	assert_false(parse("PAIRED: a b mean_diff=1", &ml));
	assert_false(parse("PAIRED: a vs b mean_diff=1 mean_diff=2", &ml));
	assert_false(parse("PAIRED: comparison done", &ml));
}

static void test_template_parse(void **state)
{
	lb_metric_line ml;
#define T(s) lb_metric_template_parse(s, strlen(s), &ml)

	(void)state;
	assert_true(T("acc: \x01"));
	assert_true(T("\x01: \x01"));
	assert_true(T("\x01_acc: \x01"));
	assert_true(T("condition=\x01 seed=\x01 acc: \x01 loss: \x01"));
	assert_true(T("solved: \x01/\x01"));
	assert_true(T("acc: \x01%"));
	assert_true(T("acc: \x01 \xc2\xb1 \x01"));
	assert_true(T("SUMMARY condition=\x01 metric=\x01 mean=\x01 std=\x01"));
	assert_true(T("PAIRED: \x01 vs \x01 mean_diff=\x01 p_value=\x01"));
	assert_false(T("INFO: \x01"));
	assert_false(T("Epoch: \x01, Batch: \x01, Loss: \x01"));
	assert_false(T("\x01"));
	assert_false(T("Saved to \x01"));
	assert_false(T("p: /tmp/\x01"));
	/* Outside templates a hole is an ordinary byte. */
	assert_false(parse("acc: \x01", &ml));
#undef T
}

static void test_stream_real_shapes_json(void **state)
{
	static const char out[] = "INFO: starting\n"
				  "Epoch: 1, Batch: 5, Loss: 0.3\n"
				  "acc: 0.5, loss: 0.25\n"
				  "Tokens per second: 1234.5\n"
				  "solved: 3/4\n"
				  "val: 0.5 \xc2\xb1 0.1 (best)\n"
				  "rate: 12.5%\n"
				  "PAIRED: ours vs base mean_diff=0.1 std_diff=0.02 t_stat=5 "
				  "p_value=nan ci95=(0.05,0.15)\n"
				  "p: /some/path\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m);
	struct json_object *ann, *paired, *issues = json_object_new_array();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };

	(void)state;
	assert_int_equal(json_object_object_length(get(doc, "values")), 6);
	assert_double(get(doc, "values/acc"), 0.5);
	assert_double(get(doc, "values/loss"), 0.25);
	assert_double(get(doc, "values/Tokens per second"), 1234.5);
	assert_double(get(doc, "values/solved"), 0.75);
	assert_double(get(doc, "values/rate"), 12.5);
	ann = get(doc, "annotated");
	assert_int_equal(json_object_array_length(ann), 3);
	assert_str(get(json_object_array_get_idx(ann, 0), "ratio"), "3/4");
	assert_str(get(json_object_array_get_idx(ann, 0), "text"), "3/4");
	assert_double(get(json_object_array_get_idx(ann, 1), "uncertainty"), 0.1);
	assert_str(get(json_object_array_get_idx(ann, 1), "remark"), "best");
	assert_true(json_object_get_boolean(get(json_object_array_get_idx(ann, 2), "percent")));
	paired = json_object_array_get_idx(get(doc, "paired"), 0);
	assert_str(get(paired, "method"), "ours");
	assert_str(get(paired, "baseline"), "base");
	assert_double(get(paired, "mean_diff"), 0.1);
	assert_double(get(paired, "ci95_low"), 0.05);
	assert_double(get(paired, "ci95_high"), 0.15);
	/* A NaN p_value is an issue like any other. */
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(json_object_array_get_idx(issues, 0), "where"), "stdout PAIRED ours vs base");
	json_object_put(issues);
	json_object_put(doc);
	lb_metrics_free(m);
}

/* A k/n under a name that is a position or counter ("best_epoch: 7/10") is the k-th of n:
 * recorded as k (the integer printed), its text in `annotated` as "position"; any other k/n is
 * the fraction it always was (docs/decisions.md, thirtieth session). */
static void test_stream_position_ratios_are_the_numerator(void **state)
{
	static const char out[] = "test_acc: 0.912\n"
				  "best_epoch: 7/10\n"
				  "stopped_at_iter: 120/500\n"
				  "best_layer: 9/12\n"
				  "Best Round: 3/5\n"
				  "bestEpoch: 4/10\n"
				  "early_stop_global_step: 800/1000\n"
				  "solved: 3/4\n"
				  "solved_per_epoch: 1/4\n"
				  "epochs_solved: 2/8\n"
				  "top5epoch: 1/2\n";
	lb_metrics *m = collect(out, sizeof(out) - 1);
	struct json_object *doc = lb_metrics_to_json(m), *ann, *a;

	(void)state;
	assert_true(json_object_is_type(get(doc, "values/best_epoch"), json_type_int));
	assert_int_equal(json_object_get_int64(get(doc, "values/best_epoch")), 7);
	assert_int_equal(json_object_get_int64(get(doc, "values/stopped_at_iter")), 120);
	assert_int_equal(json_object_get_int64(get(doc, "values/best_layer")), 9);
	assert_int_equal(json_object_get_int64(get(doc, "values/Best Round")), 3);
	assert_int_equal(json_object_get_int64(get(doc, "values/bestEpoch")), 4);
	assert_int_equal(json_object_get_int64(get(doc, "values/early_stop_global_step")), 800);
	/* fractions */
	assert_double(get(doc, "values/solved"), 0.75);
	assert_double(get(doc, "values/solved_per_epoch"), 0.25);
	assert_double(get(doc, "values/epochs_solved"), 0.25);
	assert_double(get(doc, "values/top5epoch"), 0.5);
	ann = get(doc, "annotated");
	assert_int_equal(json_object_array_length(ann), 10);
	a = json_object_array_get_idx(ann, 0);
	assert_str(get(a, "metric"), "best_epoch");
	assert_str(get(a, "text"), "7/10");
	assert_str(get(a, "position"), "7/10");
	assert_false(json_object_object_get_ex(a, "ratio", NULL));
	assert_int_equal(json_object_get_int64(get(a, "value")), 7);
	a = json_object_array_get_idx(ann, 6);
	assert_str(get(a, "metric"), "solved");
	assert_double(get(a, "value"), 0.75);
	assert_str(get(a, "ratio"), "3/4");
	assert_false(json_object_object_get_ex(a, "position", NULL));
	json_object_put(doc);
	lb_metrics_free(m);
}

/* pandas ends a printed Series with a footer, `[Freq: F, ][Name: N, ][Length: L, ]dtype: T`:
 * no metric line. A run whose only pairs were footers reported nothing (no_metrics); `Name:`
 * and `dtype:` in other shapes stay pairs. */
static void test_line_parse_pandas_footers(void **state)
{
	static const char *const footers[] = {
		"dtype: float64",
		"dtype: object",
		"Name: accuracy, dtype: float64",
		"Name: 0, dtype: int64",
		"Length: 5, dtype: int64",
		"Name: acc, Length: 100, dtype: float32",
		"Freq: D, Name: close, dtype: float64",
		"Name: label, dtype: category",
		"dtype: Int64",
		"dtype: boolean",
		"Name: x, dtype: uint8",
	};
	static const char *const pairs[] = {
		"Name: resnet",
		"name: resnet, dtype: float64",
		"dtype: bfloat16",
		"dtype: float",
		"Length: 5",
		"Name: acc, dtype: float64, acc: 0.9",
		"model: resnet, dtype: float32",
	};
	static const char out[] = "accuracy    0.9120\n"
				  "f1          0.8810\n"
				  "dtype: float64\n"
				  "count    5.000000\n"
				  "mean     0.912000\n"
				  "Name: accuracy, dtype: float64\n";
	lb_metric_line ml;
	lb_metrics *m;
	struct json_object *doc, *issues = json_object_new_array();
	struct json_object *files = json_object_new_object();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };

	(void)state;
	for (size_t i = 0; i < sizeof(footers) / sizeof(footers[0]); i++)
		if (parse(footers[i], &ml))
			fail_msg("read the pandas footer \"%s\" as a metric line", footers[i]);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (!parse(pairs[i], &ml))
			fail_msg("did not read \"%s\"", pairs[i]);
	m = collect(out, sizeof(out) - 1);
	doc = lb_metrics_to_json(m);
	assert_int_equal(json_object_object_length(get(doc, "values")), 0);
	info.files = files;
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(json_object_array_get_idx(issues, 0), "kind"), "no_metrics");
	json_object_put(files);
	json_object_put(issues);
	json_object_put(doc);
	lb_metrics_free(m);
}

static void test_validate_run_no_metrics(void **state)
{
	lb_metrics *m = collect("INFO: done\nEpoch: 1, Loss: 0.3\nSaved to /tmp/x\n", 48);
	struct json_object *issues = json_object_new_array();
	struct json_object *files = json_object_new_object();
	lb_metrics_run_info info = { .wall_s = -1, .completed = true };

	(void)state;
	/* Completed with log lines only: invalid. */
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	assert_str(get(issue(issues, 0), "kind"), "no_metrics");
	assert_true(json_object_is_type(get(issue(issues, 0), "metric"), json_type_null));
	json_object_put(issues);
	/* labbox.yaml `metrics: none` says so; a failed run is already failed. */
	info.none_expected = true;
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	info.none_expected = false;
	info.completed = false;
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	/* An empty results file reports nothing; one with a value reports. */
	info.completed = true;
	info.files = files;
	json_object_object_add(files, "results.json", json_object_new_object());
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	json_object_put(issues);
	/* Labels describe a run; they report no result. */
	{
		struct json_object *doc = json_object_new_object();

		json_object_object_add(doc, "model", json_object_new_string("resnet"));
		json_object_object_add(files, "results.json", doc);
	}
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 1);
	json_object_put(issues);
	{
		struct json_object *doc = json_object_new_object();

		json_object_object_add(doc, "acc", json_object_new_double(0.5));
		json_object_object_add(files, "final_info.json", doc);
	}
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	json_object_put(files);
	lb_metrics_free(m);
	/* One stdout metric is enough. */
	m = collect("acc: 0.5\n", 9);
	info.files = NULL;
	issues = json_object_new_array();
	assert_int_equal(lb_metrics_validate_run(m, &info, issues, NULL), 0);
	json_object_put(issues);
	lb_metrics_free(m);
}

static void test_results_parse_csv(void **state)
{
	static const char ok[] = "\xef\xbb\xbf" "condition,seed,acc,loss,note\r\n"
				 "A,1,0.5,nan,\"x, \"\"y\"\"\"\r\n"
				 "\n"
				 "B,2,0.75,0.1,\n";
	static const char *const bad[] = {
		"",
		"\n\n",
		"a,,b\n1,2,3\n",
		"a,a\n1,2\n",
		"a,b\n1\n",
		"a,b\n1,2,3\n",
		"a,b\n\"1,2\n",
		"a,b\n\"1\"x,2\n",
	};
	struct json_object *doc = NULL, *row;
	char err[256];

	(void)state;
	assert_int_equal(lb_results_parse_csv(ok, sizeof(ok) - 1, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_object_array_length(doc), 2);
	row = json_object_array_get_idx(doc, 0);
	assert_str(get(row, "condition"), "A");
	assert_double(get(row, "seed"), 1);
	assert_double(get(row, "acc"), 0.5);
	assert_true(isnan(json_object_get_double(get(row, "loss"))));
	assert_str(get(row, "note"), "x, \"y\"");
	row = json_object_array_get_idx(doc, 1);
	assert_true(json_object_is_type(get(row, "note"), json_type_null));
	json_object_put(doc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		doc = NULL;
		if (lb_results_parse_csv(bad[i], strlen(bad[i]), &doc, err, sizeof(err)) == 0)
			fail_msg("accepted CSV \"%s\"", bad[i]);
		assert_null(doc);
		assert_true(err[0] != '\0');
	}
}


/* A long-format CSV, `metric,value` and a row a result, reads as {name: value}; any other
 * table, and a long table that gives a name twice or a name that is a number, stays rows. */
static void test_results_parse_csv_long_format(void **state)
{
	static const char *const long_ok[] = {
		"metric,value\naccuracy,0.91\nf1,0.88\n",
		"Metric,Value\r\naccuracy,0.91\r\nf1,0.88\r\n",
		"name,score\naccuracy,0.91\nf1,0.88\n",
		"\"key\",\"result\"\n\"accuracy\",0.91\n\"f1\",0.88\n",
	};
	static const char *const rows_still[] = {
		"metric,value,seed\naccuracy,0.91,1\n", /* three columns */
		"model,score\nresnet,0.91\n",		/* not a name column */
		"metric,value\naccuracy,0.91\naccuracy,0.93\n", /* a name twice */
		"metric,value\n1,0.91\n",		 /* a number as the name */
		"metric,value\n,0.91\n",		 /* no name */
		"metric,value\n",			 /* no row */
	};
	struct json_object *doc = NULL;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(long_ok) / sizeof(long_ok[0]); i++) {
		assert_int_equal(lb_results_parse_csv(long_ok[i], strlen(long_ok[i]), &doc, err,
						      sizeof(err)),
				 0);
		assert_true(json_object_is_type(doc, json_type_object));
		assert_int_equal(json_object_object_length(doc), 2);
		assert_double(get(doc, "accuracy"), 0.91);
		assert_double(get(doc, "f1"), 0.88);
		json_object_put(doc);
		doc = NULL;
	}
	/* A name holding NUL ("acc" then "uracy") would be cut to "acc" as a member name:
	 * the reader refuses NUL in any cell (and long_format checks again). */
	static const char nul[] = "metric,value\nacc\0uracy,0.5\nacc,0.1\n";

	assert_int_equal(lb_results_parse_csv(nul, sizeof(nul) - 1, &doc, err, sizeof(err)),
			 -EINVAL);
	doc = NULL;
	static const char mixed[] = "metric,value\nacc,\nmodel,resnet\n";

	assert_int_equal(lb_results_parse_csv(mixed, sizeof(mixed) - 1, &doc, err, sizeof(err)), 0);
	assert_true(json_object_is_type(get(doc, "acc"), json_type_null));
	assert_str(get(doc, "model"), "resnet");
	json_object_put(doc);
	for (size_t i = 0; i < sizeof(rows_still) / sizeof(rows_still[0]); i++) {
		doc = NULL;
		assert_int_equal(lb_results_parse_csv(rows_still[i], strlen(rows_still[i]), &doc, err,
						      sizeof(err)),
				 0);
		if (!json_object_is_type(doc, json_type_array))
			fail_msg("read \"%s\" as names and values", rows_still[i]);
		json_object_put(doc);
	}
}

/* result.json keeps short arrays whole and summarises long ones truthfully, within a budget
 * of values copied across all files. */
static void test_results_for_record(void **state)
{
	(void)state;
	struct json_object *files = json_object_new_object();
	struct json_object *doc = json_object_new_object();
	struct json_object *small = json_object_new_array(), *big = json_object_new_array();
	for (int i = 0; i < 50; i++)
		json_object_array_add(small, json_object_new_int(i));
	for (int i = 0; i < LB_RESULTS_ARRAY_KEEP + 1; i++)
		json_object_array_add(big, json_object_new_double(i % 7 == 0 ? NAN : (double)i));
	json_object_object_add(doc, "small", small);
	json_object_object_add(doc, "big", big);
	json_object_object_add(files, "results.json", doc);
	struct json_object *warnings = json_object_new_array();
	struct json_object *rec = lb_results_for_record(files, warnings);
	struct json_object *r = json_object_object_get(rec, "results.json");
	assert_int_equal(json_object_array_length(json_object_object_get(r, "small")), 50);
	struct json_object *sum = json_object_object_get(r, "big");
	assert_string_equal(json_object_get_string(json_object_object_get(sum, "labbox_summary")),
			    "array");
	assert_int_equal(json_object_get_int64(json_object_object_get(sum, "length")),
			 LB_RESULTS_ARRAY_KEEP + 1);
	/* NaN is not a number to summarise: min 1, max the last finite value */
	assert_true(json_object_get_double(json_object_object_get(sum, "min")) == 1.0);
	assert_true(json_object_get_double(json_object_object_get(sum, "max")) ==
		    (double)LB_RESULTS_ARRAY_KEEP);
	/* the NaN among the first ten is kept as the string labbox writes for it */
	struct json_object *first = json_object_object_get(sum, "first");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(first, 0)), "NaN");
	assert_int_equal(json_object_array_length(warnings), 1);
	assert_non_null(strstr(json_object_get_string(json_object_object_get(
				       json_object_array_get_idx(warnings, 0), "where")),
			       "results.json at big"));
	json_object_put(rec);
	json_object_put(warnings);
	json_object_put(files);
}

static void test_results_read_na(void **state)
{
	(void)state;
	const char *declared[] = { "score" };
	struct json_object *files = json_object_new_object(), *csv = NULL, *doc, *v;
	char err[256];
	const char text[] = "\"fold\",\"acc\",\"region\",\"note\"\n1,0.81,\"EU\",NA\n"
			    "2,NA,\"NA\",x\n3,NaN,NA,y\n";

	assert_int_equal(lb_results_parse_csv(text, sizeof text - 1, &csv, err, sizeof err), 0);
	json_object_object_add(files, "results.csv", csv);
	doc = json_tokener_parse("{\"acc\": [0.81, \"NA\", \"NaN\"], \"labels\": [\"NA\", \"x\"],"
				 " \"score\": \"NA\", \"other\": \"NA\", \"only\": [\"NA\"],"
				 " \"score2\": {\"score\": [\"NA\", null]}}");
	json_object_object_add(files, "results.json", doc);
	/* acc column (1), acc array (1), score (1), score2.score (1) */
	assert_int_equal(lb_results_read_na(files, declared, 1), 4);
	v = json_object_object_get(json_object_array_get_idx(csv, 1), "acc");
	assert_true(json_object_is_type(v, json_type_double) && isnan(json_object_get_double(v)));
	assert_string_equal(json_object_get_string(v), "NA");
	/* a text column keeps its NA, quoted or not */
	v = json_object_object_get(json_object_array_get_idx(csv, 1), "region");
	assert_true(json_object_is_type(v, json_type_string));
	v = json_object_object_get(json_object_array_get_idx(csv, 0), "note");
	assert_true(json_object_is_type(v, json_type_string));
	assert_true(json_object_is_type(json_object_array_get_idx(json_object_object_get(doc, "labels"), 0),
					json_type_string));
	assert_true(json_object_is_type(json_object_object_get(doc, "other"), json_type_string));
	assert_true(json_object_is_type(json_object_array_get_idx(json_object_object_get(doc, "only"), 0),
					json_type_string));
	assert_true(json_object_is_type(json_object_object_get(doc, "score"), json_type_double));

	struct json_object *issues = json_object_new_array();
	lb_metrics_run_info info = { .files = files, .wall_s = -1, .completed = true };
	lb_metrics_validate_run(NULL, &info, issues, NULL);
	bool said = false;
	for (size_t i = 0; i < json_object_array_length(issues); i++)
		said |= strstr(json_object_get_string(json_object_object_get(
				       json_object_array_get_idx(issues, i), "message")),
			       "written as NA") != NULL;
	assert_true(said);
	json_object_put(issues);
	assert_int_equal(lb_results_read_na(NULL, NULL, 0), 0);
	json_object_put(files);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_number_values),
		cmocka_unit_test(test_results_read_na),
		cmocka_unit_test(test_returns_and_escapes_around_metrics),
		cmocka_unit_test(test_scalar_reprs_are_numbers),
		cmocka_unit_test(test_tight_uncertainty_spaced_percent_grouping),
		cmocka_unit_test(test_parse_number_nonfinite_spellings),
		cmocka_unit_test(test_parse_number_rejects),
		cmocka_unit_test(test_parse_number_ignores_locale),
		cmocka_unit_test(test_parse_number_matches_strtod),
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
		cmocka_unit_test(test_line_parse_several_pairs),
		cmocka_unit_test(test_line_parse_names_with_spaces),
		cmocka_unit_test(test_line_parse_ranking_and_number_names),
		cmocka_unit_test(test_validate_results_printed_without_a_colon),
		cmocka_unit_test(test_line_parse_annotated),
		cmocka_unit_test(test_line_parse_not_metrics_real),
		cmocka_unit_test(test_line_parse_paired),
		cmocka_unit_test(test_template_parse),
		cmocka_unit_test(test_stream_real_shapes_json),
		cmocka_unit_test(test_validate_run_no_metrics),
		cmocka_unit_test(test_line_parse_keras),
		cmocka_unit_test(test_line_parse_table_rows_and_logging),
		cmocka_unit_test(test_line_parse_log_prefixes),
		cmocka_unit_test(test_line_parse_log_prefixes_bracketed_touching),
		cmocka_unit_test(test_line_parse_absl_prefix),
		cmocka_unit_test(test_line_parse_split_head),
		cmocka_unit_test(test_stream_markdown_tables),
		cmocka_unit_test(test_stream_tables_end_where_markdown_ends_them),
		cmocka_unit_test(test_stream_lightning_tables),
		cmocka_unit_test(test_stream_transformers_blocks),
		cmocka_unit_test(test_stream_position_ratios_are_the_numerator),
		cmocka_unit_test(test_line_parse_pandas_footers),
		cmocka_unit_test(test_results_parse_csv_long_format),
		cmocka_unit_test(test_stream_condition_blocks_end_at_the_runs_lines),
		cmocka_unit_test(test_line_parse_split_qualifiers),
		cmocka_unit_test(test_stream_keras_epochs),
		cmocka_unit_test(test_validate_no_metrics_names_log_lines),
		cmocka_unit_test(test_validate_no_metrics_advice_fits_the_log_line),
		cmocka_unit_test(test_line_parse_decorations_and_objects),
		cmocka_unit_test(test_validate_labels_alone_are_no_result),
		cmocka_unit_test(test_validate_no_metrics_names_unread_lines),
		cmocka_unit_test(test_line_parse_heading),
		cmocka_unit_test(test_progress_parse_forms),
		cmocka_unit_test(test_progress_values_when_nothing_else),
		cmocka_unit_test(test_progress_after_start_up_facts),
		cmocka_unit_test(test_validate_progress_lines),
		cmocka_unit_test(test_exception_lines_are_no_metrics),
		cmocka_unit_test(test_stream_tracebacks_hold_no_metrics),
		cmocka_unit_test(test_stream_stderr_is_not_metrics),
		cmocka_unit_test(test_stream_language_forms),
		cmocka_unit_test(test_comma_groups_are_not_numbers),
		cmocka_unit_test(test_results_parse_csv),
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
		cmocka_unit_test(test_line_parse_tagged),
		cmocka_unit_test(test_line_parse_tagged_rejects),
		cmocka_unit_test(test_line_parse_summary),
		cmocka_unit_test(test_stream_tagged_and_summaries),
		cmocka_unit_test(test_stream_plain_document_unchanged),
		cmocka_unit_test(test_stream_mixed_split_every_position),
		cmocka_unit_test(test_stream_tagged_caps),
		cmocka_unit_test(test_stream_invalid_utf8_in_tags),
		cmocka_unit_test(test_time_guard_time),
		cmocka_unit_test(test_metric_is_timing),
		cmocka_unit_test(test_time_checks_pure),
		cmocka_unit_test(test_out_dir_hint),
		cmocka_unit_test_setup_teardown(test_results_collect, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_results_collect_hint_and_defaults, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_validate_run_files),
		cmocka_unit_test(test_validate_run_timing),
		cmocka_unit_test(test_validate_run_identical_stdout),
		cmocka_unit_test(test_validate_run_identical_files),
		cmocka_unit_test(test_validate_run_identical_but_timings),
		cmocka_unit_test(test_validate_run_many_identical),
		cmocka_unit_test(test_validate_run_dropped),
		cmocka_unit_test(test_results_for_record),
		cmocka_unit_test(test_out_dir_default),
		cmocka_unit_test(test_results_big_integers_keep_their_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
