/* libFuzzer target: parsing, name resolution and the rules never crash, leak or read out of
 * bounds on any input, under every policy, and the report is always strict JSON. */
#include "fuzz_common.h"
#include "labbox/check.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lb_check_config *cfg;
	if (lb_check_config_new(&cfg) < 0)
		return 0;
	/* The first byte picks the policy so all three are exercised ... */
	lb_check_policy pol = size ? (lb_check_policy)(data[0] % 3) : LB_CHECK_STANDARD;
	lb_check_config_set_policy(cfg, pol);
	/* ... and the next bit whether a gate refuses what a library call reaches */
	lb_check_config_set_runtime_gate(cfg, size && (data[0] / 3) % 2);
	lb_check_config_add_output_path(cfg, "/data/out");
	lb_check_report rep = {0};
	if (lb_check_source(cfg, "fuzz.py", (const char *)data, size, true, &rep) == 0) {
		lb_check_finish(&rep);
		struct json_object *doc = lb_check_report_json(&rep);
		fuzz_assert_strict_json(doc);
		json_object_put(doc);
		free(lb_check_text(&rep));
	}
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	return 0;
}
