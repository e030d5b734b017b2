/* libFuzzer target: failure diagnosis from the tail of an experiment's output. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "labbox/diagnose.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lb_failure_input in = {
		.log_tail = (const char *)data + (size ? 1 : 0),
		.log_tail_len = size ? size - 1 : 0,
		.exit_code = size ? (data[0] & 0x7f) + 1 : 1,
		.signal = size && (data[0] & 0x80) ? 9 : 0,
	};
	struct json_object *doc = lb_diagnose_failure(&in);

	/* Something failed, so there is always a verdict. */
	if (!doc)
		abort();
	fuzz_assert_strict_json(doc);
	json_object_put(doc);
	/* The same bytes as a whole run.log for the diagnosis warnings. */
	{
		lb_diagnosis_input win = { .log = (const char *)data, .log_len = size };
		struct json_object *ws = json_object_new_array();

		if (!ws || lb_diagnose_warnings(&win, ws) < 0)
			abort();
		fuzz_assert_strict_json(ws);
		json_object_put(ws);
	}
	return 0;
}
