/* libFuzzer target: results documents (results.json, final_info.json, results.csv), parsed as
 * lb_results_read parses them, then sanitized and validated. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "labbox/collect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const declared[] = { "accuracy", "loss", "baseline.loss", "" };
	struct json_object *doc = NULL, *clean, *issues;
	char err[256];

	/* The same bytes as results.csv: rows of objects (or, in long format, one object of
	 * names and values) that sanitize to strict JSON. */
	if (lb_results_parse_csv((const char *)data, size, &doc, err, sizeof(err)) == 0) {
		struct json_object *rows = lb_json_sanitize(doc), *files = json_object_new_object();

		if (!rows || !(json_object_is_type(doc, json_type_array) ||
			       json_object_is_type(doc, json_type_object)))
			abort();
		fuzz_assert_strict_json(rows);
		json_object_put(rows);
		/* An R experiment's file: its NA cells read as missing numbers. */
		json_object_object_add(files, "results.csv", doc);
		if (lb_results_read_na(files, declared, 4) < 0)
			abort();
		rows = lb_json_sanitize(files);
		fuzz_assert_strict_json(rows);
		json_object_put(rows);
		json_object_put(files);
	} else if (doc) {
		abort();
	}
	/* The same bytes as an entry point's source: a declared --out_dir default. */
	char dflt[64];
	if (lb_results_out_dir_default((const char *)data, size, dflt, sizeof dflt) == 0 &&
	    (dflt[0] == '\0' || strlen(dflt) >= sizeof dflt))
		abort();
	doc = NULL;
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
	{
		/* As lb_results_collect hands it over: the same document as results.json and as
		 * an AI-Scientist final_info.json in an --out_dir, which also compares its
		 * top-level entries for identical results. */
		struct json_object *files = json_object_new_object(), *warnings, *shown;
		lb_metrics_run_info info = { .files = files, .declared = declared, .n_declared = 4,
					     .wall_s = -1 };

		json_object_object_add(files, "results.json", json_object_get(doc));
		json_object_object_add(files, "run_0/final_info.json", json_object_get(doc));
		if (lb_results_read_na(files, declared, 4) < 0)
			abort();
		issues = json_object_new_array();
		warnings = json_object_new_array();
		if (lb_metrics_validate_run(NULL, &info, issues, warnings) !=
		    json_object_array_length(issues))
			abort();
		fuzz_assert_strict_json(issues);
		fuzz_assert_strict_json(warnings);
		shown = lb_json_sanitize(files);
		fuzz_assert_strict_json(shown);
		json_object_put(shown);
		json_object_put(issues);
		json_object_put(warnings);
		json_object_put(files);
	}
	json_object_put(clean);
	json_object_put(doc);
	return 0;
}
