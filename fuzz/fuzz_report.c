/* libFuzzer target: what labbox report reads from records (a sweep document, with the \udcXX
 * escapes of bytes that are not UTF-8, and run.log text for per-step series) never crashes,
 * leaks or reads out of bounds, and the HTML written from any document holds no markup but
 * labbox's own: every string of a record comes out as text. The input is split at the first
 * NUL byte: the sweep document, then the run.log text. */
#include "labbox/report.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_point(void *ctx, const char *metric, const char *x_label, double x, double y)
{
	(void)x;
	(void)y;
	size_t *n = ctx;
	if (strlen(metric) > 1024 || strlen(x_label) > 64)
		abort();
	++*n;
}

static void assert_own_markup(const char *html)
{
	static const char *const foreign[] = {"<script", "<img", "<iframe", "<link", "<object",
					      "<embed", "<a ", "<base", "<form", "<meta http-equiv=\"refresh"};
	for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++)
		if (strcasestr(html, foreign[i]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	size_t doclen = nul ? (size_t)(nul - text) : size;
	const char *log = nul ? nul + 1 : text + size;
	size_t loglen = size - doclen - (nul ? 1 : 0);

	size_t points = 0;
	lb_report_scan_series(log, loglen, on_point, &points);

	json_object *doc = lb_report_parse_json(text, doclen);
	if (!doc)
		return 0;
	lb_report r;
	char err[512];
	if (lb_report_from_sweep(doc, &r, err, sizeof err) == 0) {
		for (int f = LB_REPORT_HTML; f <= LB_REPORT_CSV; f++) {
			lb_buf out = {0};
			if (lb_report_render(&r, (lb_report_format)f, &out) == 0 && f == LB_REPORT_HTML)
				assert_own_markup(out.data);
			lb_buf_free(&out);
		}
		lb_report_free(&r);
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
	json_object_put(doc);
	return 0;
}
