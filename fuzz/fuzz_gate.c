/* libFuzzer target: the runtime gate's events channel, which the experiment can write to. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "labbox/gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *events = json_object_new_array();
	size_t dropped = 0, bad = 0;

	if (!events || lb_gate_parse_events((const char *)data, size, events, &dropped, &bad) < 0)
		abort();
	/* Bounded whatever the input, and every kept event is strict JSON once serialised. */
	if (json_object_array_length(events) > LB_GATE_MAX_EVENTS)
		abort();
	fuzz_assert_strict_json(events);
	json_object_put(events);
	return 0;
}
