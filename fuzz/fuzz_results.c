/* libFuzzer target: results documents (results.json, final_info.json), parsed as
 * lb_results_read parses them, then sanitized and validated. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "labbox/collect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const declared[] = { "accuracy", "loss", "baseline.loss", "" };
	struct json_object *doc = NULL, *clean, *issues;
	char err[256];

	if (lb_results_parse((const char *)data, size, &doc, err, sizeof(err)) < 0) {
		if (doc)
			abort();
		return 0;
	}
	clean = lb_json_sanitize(doc);
	if (!clean)
		abort(); /* objects and arrays only: never JSON null */
	fuzz_assert_strict_json(clean);
	issues = json_object_new_array();
	lb_metrics_validate(NULL, doc, "results.json", declared, 4, issues);
	fuzz_assert_strict_json(issues);
	json_object_put(issues);
	json_object_put(clean);
	json_object_put(doc);
	return 0;
}
