/* libFuzzer target: failure diagnosis from the tail of an experiment's output. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "labbox/diagnose.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const languages[] = { NULL, "r", "octave", NULL };
	unsigned sel = size > 1 ? data[1] : 0;
	lb_failure_input in = {
		.log_tail = (const char *)data + (size ? 1 : 0),
		.log_tail_len = size ? size - 1 : 0,
		.exit_code = size ? (data[0] & 0x7f) + 1 : 1,
		/* SIGTERM with a timeout: the stacks the main program printed are read */
		.signal = size && (data[0] & 0x80) ? (sel & 128 ? 15 : 9) : 0,
		/* The frame parser reads paths against the experiment's, and Octave's
		 * "called from" lines when the language says so; the escalation reads what the
		 * verdict quotes of the log. */
		.language = languages[sel & 3],
		.exp_dir = (sel & 4) ? "/runs/x/exp" : (sel & 8) ? "/" : NULL,
		.network_host = sel & 16,
		.gpus = sel & 32,
		.memory_limit = (sel & 64) ? (unsigned long long)sel << 20 : 0,
		/* a timeout reads the stacks the main program printed as it ended */
		.timed_out = sel & 128,
	};
	struct json_object *doc = lb_diagnose_failure(&in);

	/* Something failed, so there is always a verdict. */
	if (!doc)
		abort();
	fuzz_assert_strict_json(doc);
	{
		struct json_object *cl = NULL, *esc = NULL, *v;

		/* code_location and escalation are always there, null or an object */
		if (!json_object_object_get_ex(doc, "code_location", &cl) ||
		    !json_object_object_get_ex(doc, "escalation", &esc) ||
		    !json_object_object_get_ex(doc, "confidence", &v))
			abort();
		if (cl && (!json_object_object_get_ex(cl, "line", &v) || json_object_get_int64(v) < 0))
			abort();
		/* a second escalation of the same failure replaces the first */
		if (lb_diagnose_escalation(doc, &in) < 0)
			abort();
		fuzz_assert_strict_json(doc);
	}
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
