/* libFuzzer target: stdout metric collection. The input is output an experiment printed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "labbox/collect.h"

static char *collect_json(const uint8_t *data, size_t size, size_t chunk, lb_metrics **keep)
{
	lb_metrics *m = NULL;
	struct json_object *doc;
	char *text;

	if (lb_metrics_new(&m) < 0)
		abort();
	for (size_t i = 0; i < size; i += chunk)
		lb_metrics_feed(m, (const char *)data + i, size - i < chunk ? size - i : chunk);
	lb_metrics_finish(m);
	doc = lb_metrics_to_json(m);
	if (!doc)
		abort();
	fuzz_assert_strict_json(doc);
	text = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	if (keep)
		*keep = m;
	else
		lb_metrics_free(m);
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const declared[] = { "accuracy", "loss", "a.b", "condition" };
	size_t chunks[3] = { size ? size : 1, 1, 1 + (size ? data[0] % 61 : 0) };
	lb_metrics *m = NULL;
	struct json_object *issues;
	char *want;
	lb_metric_line ml;
	double v;

	/* However the output was cut into reads, the result is the same. */
	want = collect_json(data, size, chunks[0], &m);
	for (size_t i = 1; i < 3; i++) {
		char *got = collect_json(data, size, chunks[i], NULL);

		if (strcmp(got, want) != 0)
			abort();
		free(got);
	}
	issues = json_object_new_array();
	lb_metrics_validate(m, NULL, NULL, declared, 4, issues);
	fuzz_assert_strict_json(issues);
	json_object_put(issues);
	lb_metrics_free(m);
	free(want);

	/* The pure parsers on the raw input, which need no terminator. */
	if (lb_metric_line_parse((const char *)data, size, &ml) &&
	    (ml.str < (const char *)data || ml.str + ml.str_len > (const char *)data + size))
		abort();
	lb_parse_number((const char *)data, size, &v);
	return 0;
}
