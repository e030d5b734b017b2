/* report: the pure parts (axis ticks, escaping for HTML, CSV and Markdown, the SVG of edge
 * cases, reading a sweep document, records' JSON, per-step series). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/report.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool nice_step(double step)
{
	double mag = pow(10, floor(log10(step)));
	double f = step / mag;
	return fabs(f - 1) < 1e-9 || fabs(f - 2) < 1e-9 || fabs(f - 2.5) < 1e-9 || fabs(f - 5) < 1e-9;
}

static void check_ticks(double lo, double hi, size_t max)
{
	double t0, step;
	size_t n;
	assert_int_equal(lb_report_ticks(lo, hi, max, &t0, &step, &n), 0);
	assert_true(n >= 2 && n <= max);
	assert_true(nice_step(step));
	double t1 = t0 + step * (double)(n - 1);
	double a = fmin(lo, hi), b = fmax(lo, hi);
	assert_true(t0 <= a + fabs(a) * 1e-12 && t1 >= b - fabs(b) * 1e-12);
	assert_true(t1 > t0);
	/* The first tick is a multiple of the step. */
	assert_true(fabs(t0 / step - round(t0 / step)) < 1e-6);
}

static void test_ticks(void **state)
{
	(void)state;
	double t0, step;
	size_t n;
	assert_int_equal(lb_report_ticks(0, 1.23, 6, &t0, &step, &n), 0);
	assert_true(t0 == 0 && step == 0.25 && n == 6);
	assert_int_equal(lb_report_ticks(-0.55, 0.1, 6, &t0, &step, &n), 0);
	assert_true(fabs(t0 + 0.6) < 1e-12 && fabs(step - 0.2) < 1e-12);
	static const double cases[][2] = {
		{0, 1},	      {3, 3},	    {0, 0},	   {-2, -2},	 {1e-9, 3e-9},
		{-5, 7},      {1e6, 1.5e6}, {7, -3},	   {0.001, 1000}, {-1e-3, -1e-4},
		{99.9, 100.1}, {1e200, 1e201}, {5e-300, 6e-300},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		for (size_t max = 3; max <= 8; max++)
			check_ticks(cases[i][0], cases[i][1], max);
	/* One value: a range around it. */
	assert_int_equal(lb_report_ticks(5, 5, 6, &t0, &step, &n), 0);
	assert_true(t0 < 5 && t0 + step * (double)(n - 1) > 5);
	assert_int_equal(lb_report_ticks(NAN, 1, 6, &t0, &step, &n), -EINVAL);
	assert_int_equal(lb_report_ticks(0, INFINITY, 6, &t0, &step, &n), -EINVAL);
	assert_int_equal(lb_report_ticks(0, 1, 2, &t0, &step, &n), -EINVAL);
	char lab[32];
	lb_report_tick_label(0.25, 0.25, lab, sizeof lab);
	assert_string_equal(lab, "0.25");
	lb_report_tick_label(1e-17, 0.5, lab, sizeof lab);
	assert_string_equal(lab, "0.0");
	lb_report_tick_label(-4, 2, lab, sizeof lab);
	assert_string_equal(lab, "-4");
	lb_report_tick_label(2e6, 1e6, lab, sizeof lab);
	assert_string_equal(lab, "2e+06");
}

static char *html(const char *s, size_t len)
{
	lb_buf b = {0};
	assert_int_equal(lb_report_html_escape(&b, s, len), 0);
	lb_buf_puts(&b, "");
	return b.data;
}

static void test_html_escape(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"a\"b'c&d", "a&quot;b&#39;c&amp;d"},
		{"caf\xc3\xa9 \xce\xbb", "caf\xc3\xa9 \xce\xbb"},
		{"bad \xff\xfe byte", "bad \\xff\\xfe byte"},
		{"esc \x1b[2J", "esc \\x1b[2J"},
		{"c1 \xc2\x85 del \x7f", "c1 \\xc2\\x85 del \\x7f"},
		{"over \xc0\xaf long", "over \\xc0\\xaf long"},
		{"line\nnext\ttab", "line\nnext\ttab"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *got = html(cases[i].in, strlen(cases[i].in));
		assert_string_equal(got, cases[i].out);
		free(got);
	}
	char *got = html("a\0<b", 4);
	assert_string_equal(got, "a\\x00&lt;b");
	free(got);
}

static void test_csv_and_md(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool text;
		const char *out;
	} csv[] = {
		{"plain", true, "plain"},
		{"lam=0.01,noise=0.1", true, "\"lam=0.01,noise=0.1\""},
		{"say \"hi\"", true, "\"say \"\"hi\"\"\""},
		{"two\nlines", true, "\"two\nlines\""},
		{" edge", true, "\" edge\""},
		{"=HYPERLINK(\"x\")", true, "\"'=HYPERLINK(\"\"x\"\")\""},
		{"@sum", true, "'@sum"},
		{" =1+1", true, "\"' =1+1\""},
		{"\xc2\xa0=1+1", true, "'\xc2\xa0=1+1"},
		{"  plain", true, "\"  plain\""},
		{"lr=\xe2\x80\xae" "1.0", true, "lr=\\u202e1.0"},
		{"-1.5", false, "-1.5"},
		{"bad\xff", true, "bad\\xff"},
	};
	for (size_t i = 0; i < sizeof csv / sizeof *csv; i++) {
		lb_buf b = {0};
		assert_int_equal(lb_report_csv_field(&b, csv[i].in, csv[i].text), 0);
		lb_buf_puts(&b, "");
		assert_string_equal(b.data, csv[i].out);
		lb_buf_free(&b);
	}
	static const struct {
		const char *in, *out;
	} md[] = {
		{"a|b", "a\\|b"},
		{"<img src=x>", "&lt;img src\\=x&gt;"},
		{"two\nlines", "two lines"},
		{"back\\slash `code`", "back\\\\slash \\`code\\`"},
		{"train_mse", "train\\_mse"},
		{"x\xff", "x\\xff"},
		{"a\xe2\x80\xae" "b", "a\\u202eb"},
		/* what Markdown would make a link, an image, emphasis or an autolink */
		{"![x](http://a.example/p.png?q=1)",
		 "\\!\\[x\\]\\(http\\:\\/\\/a\\.example\\/p\\.png\\?q\\=1\\)"},
		{"*em* ~~s~~ #h", "\\*em\\* \\~\\~s\\~\\~ \\#h"},
		{"www.a.example", "www\\.a\\.example"},
		{"me@a.example", "me`@`a\\.example"},
		{"lr=0.1,bs=32", "lr\\=0\\.1\\,bs\\=32"},
		{"caf\xc3\xa9 \xe2\x96\x88", "caf\xc3\xa9 \xe2\x96\x88"},
	};
	for (size_t i = 0; i < sizeof md / sizeof *md; i++) {
		lb_buf b = {0};
		assert_int_equal(lb_report_md_cell(&b, md[i].in), 0);
		lb_buf_puts(&b, "");
		assert_string_equal(b.data, md[i].out);
		lb_buf_free(&b);
	}
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* No coordinate may be NaN or infinite, whatever the values. */
static void assert_finite_svg(const char *svg)
{
	assert_null(strstr(svg, "nan"));
	assert_null(strstr(svg, "inf"));
	assert_null(strstr(svg, "NaN\""));
}

static lb_report_stat spread(double mean, double half, size_t n)
{
	return (lb_report_stat){.present = true, .n = n, .mean = mean, .min = mean - half,
				.max = mean + half, .has_spread = n >= 2, .std = half,
				.ci_low = mean - half, .ci_high = mean + half};
}

static char *svg_of(char **conds, size_t nc, lb_report_stat *stats, size_t *completed)
{
	static char metric[] = "acc<\xff>";
	char *metrics[] = {metric};
	size_t cells[8] = {2, 2, 2, 2, 2, 2, 2, 2};
	lb_report r = {.nconditions = nc, .conditions = conds, .cells = cells,
		       .completed = completed, .nmetrics = 1, .metrics = metrics, .stats = stats};
	lb_buf b = {0};
	assert_int_equal(lb_report_svg_metric(&r, 0, &b), 0);
	assert_int_equal(lb_report_svg_metric(&r, 1, &b), -EINVAL);
	assert_non_null(strstr(b.data, "data-metric=\"acc&lt;\\xff&gt;\""));
	assert_finite_svg(b.data);
	return b.data;
}

static void test_svg_edge_cases(void **state)
{
	(void)state;
	char a[] = "one", bb[] = "<b>two</b>", c[] = "three", d[] = "four";
	char *conds[] = {a, bb, c, d};
	size_t completed[] = {2, 2, 2, 0};
	/* A single condition with one value: a point, no error bar, ticks around it. */
	lb_report_stat one[] = {spread(0.5, 0, 1)};
	char *svg = svg_of(conds, 1, one, completed);
	assert_int_equal(count(svg, "<circle"), 1);
	assert_int_equal(count(svg, "class=\"err\""), 0);
	assert_true(count(svg, "class=\"tick\"") >= 2);
	free(svg);
	/* All equal: every point at the same place, inside the axis. */
	lb_report_stat eq[] = {spread(3, 0, 2), spread(3, 0, 2), spread(3, 0, 2)};
	svg = svg_of(conds, 3, eq, completed);
	assert_int_equal(count(svg, "<circle"), 3);
	assert_int_equal(count(svg, "class=\"err\""), 9);
	assert_null(strstr(svg, "<b>"));
	assert_non_null(strstr(svg, "&lt;b&gt;two&lt;/b&gt;"));
	free(svg);
	/* NaN only, missing, negative, and a condition without a completed run. */
	lb_report_stat mixed[] = {
		spread(-2, 1, 3),
		{.present = true, .n = 0, .nonfinite = 2},
		{.present = false},
		{.present = false},
	};
	svg = svg_of(conds, 4, mixed, completed);
	assert_int_equal(count(svg, "<circle"), 1);
	assert_int_equal(count(svg, "not plotted: NaN/Inf only"), 1);
	assert_int_equal(count(svg, ">not reported<"), 1);
	assert_int_equal(count(svg, ">no completed run<"), 1);
	assert_non_null(strstr(svg, ">-2<") ? strstr(svg, ">-2<") : strstr(svg, ">-2.0<"));
	free(svg);
	/* Finite values with some NaN beside them are plotted and flagged. */
	lb_report_stat some[] = {spread(1, 0.5, 2), spread(-1, 0.25, 2)};
	some[1].nonfinite = 1;
	svg = svg_of(conds, 2, some, completed);
	assert_int_equal(count(svg, "<circle"), 2);
	assert_int_equal(count(svg, "+1 NaN/Inf"), 1);
	assert_int_equal(count(svg, "class=\"zero\""), 1);
	free(svg);
	/* Nothing plottable at all. */
	lb_report_stat none[] = {{.present = true, .n = 0, .nonfinite = 1}};
	svg = svg_of(conds, 1, none, completed);
	assert_int_equal(count(svg, "<circle"), 0);
	free(svg);
}

static void test_render_md_and_csv(void **state)
{
	(void)state;
	char a[] = "lam=0.1,noise=1", bb[] = "x|y";
	char *conds[] = {a, bb};
	char m0[] = "acc", m1[] = "=loss";
	char *metrics[] = {m0, m1};
	size_t cells[] = {3, 3}, completed[] = {3, 1};
	lb_report_stat stats[] = {spread(0.5, 0.1, 3), {.present = false}, spread(0.25, 0, 1),
				  {.present = true, .n = 0, .nonfinite = 1}};
	char title[] = "t";
	lb_report r = {.title = title, .nconditions = 2, .conditions = conds, .cells = cells,
		       .completed = completed, .nmetrics = 2, .metrics = metrics, .stats = stats};
	lb_buf b = {0};
	assert_int_equal(lb_report_render(&r, LB_REPORT_MD, &b), 0);
	assert_non_null(strstr(b.data, "| condition | runs | acc | \\=loss |\n|---|---:|---:|---:|\n"));
	assert_non_null(strstr(b.data, "| lam\\=0\\.1\\,noise\\=1 | 3/3 | 0.50 ± 0.10 | - |\n"));
	assert_non_null(strstr(b.data, "| x\\|y | 1/3 | 0.25 | NaN/Inf |\n"));
	lb_buf_free(&b);
	assert_int_equal(lb_report_render(&r, LB_REPORT_CSV, &b), 0);
	assert_string_equal(b.data,
			    "condition,metric,n,mean,std,ci_low,ci_high,min,max,nonfinite,runs,"
			    "completed,completed_after_retry,identical_to\r\n"
			    "\"lam=0.1,noise=1\",acc,3,0.5,0.1,0.4,0.6,0.4,0.6,0,3,3,0,\r\n"
			    "x|y,acc,1,0.25,,,,0.25,0.25,0,3,1,0,\r\n"
			    "x|y,'=loss,0,,,,,,,1,3,1,0,\r\n");
	lb_buf_free(&b);
	assert_int_equal(lb_report_render(&r, LB_REPORT_HTML, &b), 0);
	assert_int_equal(count(b.data, "<svg class=\"metric-plot\""), 2);
	assert_non_null(strstr(b.data, "@media print"));
	assert_null(strstr(b.data, "http://"));
	assert_null(strstr(b.data, "https://"));
	lb_buf_free(&b);
}

/* Digits follow the interval: a large value with a small spread, a loss that differs in the
 * fourth decimal, a tiny value; without an interval the exact shortest digits. */
static void test_fmt_stat(void **state)
{
	(void)state;
	lb_report_nums p;
	lb_report_stat a = {.present = true, .n = 3, .mean = 1234562, .has_spread = true, .std = 1,
			    .ci_low = 1234559.516, .ci_high = 1234564.484};
	lb_report_fmt_stat(&a, &p);
	assert_string_equal(p.mean, "1234562.0");
	assert_string_equal(p.lo, "1234559.5");
	assert_string_equal(p.hi, "1234564.5");
	assert_string_equal(p.half, "2.5");
	assert_string_equal(p.sd, "1.0");
	lb_report_stat l = {.present = true, .n = 3, .mean = 2.3152, .has_spread = true,
			    .std = 0.0001, .ci_low = 2.31495, .ci_high = 2.31545};
	lb_report_fmt_stat(&l, &p);
	assert_string_equal(p.mean, "2.31520");
	assert_string_equal(p.lo, "2.31495");
	assert_string_equal(p.hi, "2.31545");
	assert_string_equal(p.half, "0.00025");
	lb_report_stat t = {.present = true, .n = 3, .mean = 1.00002e-7, .has_spread = true,
			    .std = 1e-12, .ci_low = 1.00002e-7 - 3e-12, .ci_high = 1.00002e-7 + 3e-12};
	lb_report_fmt_stat(&t, &p);
	assert_string_equal(p.mean, "1.000020e-07");
	assert_string_not_equal(p.lo, p.hi);
	lb_report_stat one = {.present = true, .n = 1, .mean = 0.1};
	lb_report_fmt_stat(&one, &p);
	assert_string_equal(p.mean, "0.1");
	one.mean = 1234562;
	lb_report_fmt_stat(&one, &p);
	assert_string_equal(p.mean, "1234562");
	/* Bounds that differ print apart even where the half-width's digits would not do. */
	lb_report_stat z = {.present = true, .n = 2, .mean = 1, .has_spread = true, .std = 0,
			    .ci_low = 1, .ci_high = 1 + 1e-15};
	lb_report_fmt_stat(&z, &p);
	assert_string_not_equal(p.lo, p.hi);
	char x[32], y[32];
	lb_report_tick_label(1234562, 2, x, sizeof x);
	lb_report_tick_label(1234564, 2, y, sizeof y);
	assert_string_equal(x, "1234562");
	assert_string_equal(y, "1234564");
}

static void test_sweep_documents(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *words;
	} bad[] = {
		{"[]", "not a JSON object"},
		{"{\"schema\": \"labbox.run/1\"}", "schema is 'labbox.run/1'"},
		{"{\"schema\": \"labbox.sweep/1\", \"conditions\": []}", "no id"},
		{"{\"schema\": \"labbox.sweep/1\", \"id\": \"x\"}", "no conditions"},
		{"{\"schema\": \"labbox.sweep/1\", \"id\": \"x\", \"conditions\": [{}]}", "no name"},
		{"{\"schema\": \"labbox.sweep/1\", \"id\": \"x\", \"conditions\": [{\"name\": \"a\"},"
		 "{\"name\": \"a\"}]}", "twice"},
		{"{\"schema\": \"labbox.sweep/1\", \"id\": \"x\", \"conditions\": [{\"name\": \"a\", "
		 "\"metrics\": {\"acc\": {\"n\": 2, \"mean\": \"hi\", \"min\": 0, \"max\": 1}}}]}",
		 "'acc'"},
		{"{\"schema\": \"labbox.sweep/1\", \"id\": \"x\", \"conditions\": [{\"name\": \"a\", "
		 "\"metrics\": {\"acc\": {\"mean\": 1}}}]}", "no count"},
		{"{\"schema\": \"labbox.sweep/1\", \"id\": \"x\", \"conditions\": [], \"failures\": 3}",
		 "failures"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_object *doc = json_tokener_parse(bad[i].doc);
		lb_report r;
		char err[256] = "";
		assert_int_equal(lb_report_from_sweep(doc, &r, err, sizeof err), -EINVAL);
		if (!strstr(err, bad[i].words))
			fail_msg("%s: '%s' lacks '%s'", bad[i].doc, err, bad[i].words);
		json_object_put(doc);
	}
	json_object *doc = json_tokener_parse(
		"{\"schema\": \"labbox.sweep/1\", \"id\": \"abc\", \"status\": \"failed\", "
		"\"conditions\": [{\"name\": \"a\", \"cells\": 3, \"completed\": 2, \"metrics\": "
		"{\"acc\": {\"n\": 2, \"mean\": 0.5, \"std\": 0.1, \"ci95\": {\"low\": 0.4, \"high\": "
		"0.6}, \"min\": 0.45, \"max\": 0.55, \"nonfinite\": 0}}}, {\"name\": \"b\", "
		"\"metrics\": {\"loss\": {\"n\": 1, \"mean\": -1, \"std\": null, \"ci95\": null, "
		"\"min\": -1, \"max\": -1, \"nonfinite\": 1}}}], \"failures\": [{\"cell\": 2, "
		"\"condition\": \"a\", \"seed\": 2, \"status\": \"failed\", \"run_id\": \"r1\", "
		"\"class\": \"code_error\", \"summary\": \"boom\"}], \"identical_conditions\": "
		"[{\"message\": \"a and b\"}]}");
	lb_report r;
	char err[256] = "";
	assert_int_equal(lb_report_from_sweep(doc, &r, err, sizeof err), 0);
	assert_string_equal(r.title, "sweep abc");
	assert_int_equal(r.nconditions, 2);
	assert_int_equal(r.nmetrics, 2);
	assert_true(r.stats[0].present && r.stats[0].has_spread && r.stats[0].ci_high == 0.6);
	assert_false(r.stats[1].present);
	assert_true(r.stats[3].present && !r.stats[3].has_spread && r.stats[3].nonfinite == 1);
	assert_int_equal(r.completed[0], 2);
	assert_int_equal(r.nfailures, 1);
	assert_string_equal(r.failures[0].class_, "code_error");
	assert_true(r.failures[0].has_seed && r.failures[0].seed == 2);
	assert_int_equal(r.nidentical, 1);
	lb_report_free(&r);
	json_object_put(doc);
}

static void test_record_json(void **state)
{
	(void)state;
	const char *text = "{\"a\": \"x\\udcffy\", \"b\": \"\\ud83d\\udc80\", \"c\": \"\\\\udcff\", "
			   "\"d\": \"\\u00e9\"}";
	json_object *doc = lb_report_parse_json(text, strlen(text));
	assert_non_null(doc);
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "a")), "x\xffy");
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "b")), "\xf0\x9f\x92\x80");
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "c")), "\\udcff");
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "d")), "\xc3\xa9");
	json_object_put(doc);
	assert_null(lb_report_parse_json("{\"a\": ", 6));
	assert_null(lb_report_parse_json("{} x", 4));
}

typedef struct points {
	char names[32][64];
	char xl[32][16];
	double x[32], y[32];
	size_t n;
} points;

static void on_point(void *ctx, const char *metric, const char *x_label, double x, double y)
{
	points *p = ctx;
	if (p->n == 32)
		return;
	snprintf(p->names[p->n], sizeof p->names[0], "%s", metric);
	snprintf(p->xl[p->n], sizeof p->xl[0], "%s", x_label);
	p->x[p->n] = x;
	p->y[p->n++] = y;
}

static void test_series_lines(void **state)
{
	(void)state;
	const char *log = "step=1 loss: 0.5\n"
			  "step=2 loss: 0.4 acc=0.7\n"
			  "acc: 0.1\n"
			  "INFO: starting\n"
			  "acc: 0.2\r\n"
			  "Epoch: 3/10, Loss: 0.3\n"
			  "epoch 4 done\n"
			  "condition: B\n"
			  "acc: 1\n"
			  "condition=C step=7 val: 2.5\n"
			  "TIME_ESTIMATE: 3s\n"
			  "final: 9";
	points p = {0};
	lb_report_scan_series(log, strlen(log), on_point, &p);
	assert_int_equal(p.n, 9);
	assert_string_equal(p.names[0], "loss");
	assert_string_equal(p.xl[0], "step");
	assert_true(p.x[0] == 1 && p.y[0] == 0.5);
	assert_string_equal(p.names[2], "acc");
	assert_true(p.x[2] == 2 && p.y[2] == 0.7); /* step=2 acc=0.7 */
	assert_string_equal(p.xl[3], "occurrence");
	assert_true(p.x[3] == 1 && p.y[3] == 0.1);
	assert_true(p.x[4] == 2 && p.y[4] == 0.2);
	assert_string_equal(p.names[5], "Loss");
	assert_string_equal(p.xl[5], "epoch");
	assert_true(p.x[5] == 3 && p.y[5] == 0.3);
	assert_string_equal(p.names[6], "B/acc");
	assert_string_equal(p.names[7], "C/val");
	assert_string_equal(p.xl[7], "step");
	assert_true(p.x[7] == 7 && p.y[7] == 2.5);
	assert_string_equal(p.names[8], "B/final"); /* still in condition B */
}

static json_object *js(const char *text)
{
	json_object *o = json_tokener_parse(text);
	assert_non_null(o);
	return o;
}

static void setting_of(lb_report_setting *st, const char *manifest, const char *pkg)
{
	json_object *res = js("{\"status\": \"completed\"}"), *man = js(manifest);
	assert_int_equal(lb_report_run_setting(res, man, pkg, st), 0);
	json_object_put(res);
	json_object_put(man);
}

#define MAN(args, entry, env, files)                                                          \
	"{\"config\": {\"expdir\": \"/x/exp\", \"args\": " args ", \"entry\": \"" entry "\", "   \
	"\"sandbox\": {\"env\": " env "}}, \"files\": " files ", \"interpreter\": "              \
	"{\"implementation\": \"cpython\", \"version\": \"3.11.2\"}}"

/* Settings a run recorded tell conditions apart; seeds (arguments and variables) do not. */
static void test_condition_settings(void **state)
{
	(void)state;
	lb_report_setting s[6];
	setting_of(&s[0], MAN("[\"--lr\", \"0.1\", \"--seed\", \"1\"]", "main.py",
			      "[\"LR=0.1\", \"SEED=1\", \"BS=32\"]", "{\"main.py\": \"aa\"}"), "p1");
	setting_of(&s[1], MAN("[\"--lr\", \"0.1\", \"--seed\", \"2\"]", "main.py",
			      "[\"BS=32\", \"SEED=2\", \"LR=0.1\", \"PYTHONHASHSEED=3\"]",
			      "{\"main.py\": \"aa\"}"), "p1");
	lb_buf k0 = {0}, k1 = {0};
	assert_int_equal(lb_report_setting_key(&s[0], &k0), 0);
	assert_int_equal(lb_report_setting_key(&s[1], &k1), 0);
	assert_string_equal(k0.data, k1.data); /* seeds of one setting pool */
	assert_string_equal(s[0].base, "exp --lr 0.1");
	assert_int_equal(s[0].nenv, 2);
	lb_report_setting_free(&s[1]);
	/* LR differs; another's code; another entry; BS unset; an argument with a blank. */
	setting_of(&s[1], MAN("[\"--lr\", \"0.1\"]", "main.py", "[\"LR=0.3\", \"BS=32\"]",
			      "{\"main.py\": \"aa\"}"), "p1");
	setting_of(&s[2], MAN("[\"--lr\", \"0.1\"]", "main.py", "[\"LR=0.1\", \"BS=32\"]",
			      "{\"main.py\": \"bb\"}"), "p1");
	setting_of(&s[3], MAN("[\"--lr\", \"0.1\"]", "other.py", "[\"LR=0.1\", \"BS=32\"]",
			      "{\"main.py\": \"aa\"}"), "p1");
	setting_of(&s[4], MAN("[\"--lr\", \"0.1\"]", "main.py", "[\"LR=0.1\"]",
			      "{\"main.py\": \"aa\"}"), "p1");
	setting_of(&s[5], MAN("[\"--lr 0.1\"]", "main.py", "[]", "{\"main.py\": \"aa\"}"), "p2");
	char *names[6], **notes;
	size_t nnotes;
	assert_int_equal(lb_report_condition_names(s, 6, names, &notes, &nnotes), 0);
	char c0[80], c2[80];
	lb_buf k = {0};
	assert_int_equal(lb_report_setting_key(&s[0], &k), 0);
	snprintf(c0, sizeof c0, "(code %.6s)", s[0].code);
	snprintf(c2, sizeof c2, "(code %.6s)", s[2].code);
	assert_non_null(strstr(names[0], "exp --lr 0.1 --entry main.py BS=32 LR=0.1 "));
	assert_non_null(strstr(names[0], c0));
	assert_non_null(strstr(names[1], "LR=0.3"));
	assert_non_null(strstr(names[2], c2));
	assert_non_null(strstr(names[3], "--entry other.py"));
	assert_non_null(strstr(names[4], "BS unset"));
	assert_string_equal(names[5], "exp \"--lr 0.1\""); /* alone under its base: nothing added */
	for (size_t i = 0; i < 6; i++)
		for (size_t j = i + 1; j < 6; j++)
			assert_string_not_equal(names[i], names[j]);
	assert_int_equal(nnotes, 1);
	assert_string_equal(notes[0], "exp --lr 0.1: runs differ in entry point, -e BS, -e LR, "
				      "staged code: 5 conditions, not seeds of one");
	for (size_t i = 0; i < 6; i++) {
		free(names[i]);
		lb_report_setting_free(&s[i]);
	}
	free(notes[0]);
	free(notes);
	lb_buf_free(&k);
	lb_buf_free(&k0);
	lb_buf_free(&k1);

	/* A directory named like a sweep's condition: the cell keeps its name, the run gets its
	 * setting's digest. */
	json_object *res = js("{\"sweep\": {\"condition\": \"lam=1\"}}"), *man = js("{}");
	assert_int_equal(lb_report_run_setting(res, man, NULL, &s[0]), 0);
	json_object_put(res);
	json_object_put(man);
	assert_true(s[0].sweep_cell);
	setting_of(&s[1], "{\"config\": {\"expdir\": \"/x/lam=1\"}}", NULL);
	assert_int_equal(lb_report_condition_names(s, 2, names, &notes, &nnotes), 0);
	assert_string_equal(names[0], "lam=1");
	assert_true(strncmp(names[1], "lam=1 [setting ", 15) == 0);
	assert_int_equal(nnotes, 0);
	for (size_t i = 0; i < 2; i++) {
		free(names[i]);
		lb_report_setting_free(&s[i]);
	}
	free(notes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_html_escape),
		cmocka_unit_test(test_csv_and_md),
		cmocka_unit_test(test_svg_edge_cases),
		cmocka_unit_test(test_render_md_and_csv),
		cmocka_unit_test(test_fmt_stat),
		cmocka_unit_test(test_sweep_documents),
		cmocka_unit_test(test_record_json),
		cmocka_unit_test(test_series_lines),
		cmocka_unit_test(test_condition_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
