/* libFuzzer target: the runtime gate's events channel, which the experiment can write to:
 * parsed whole, and fed to the reader in pieces as a pipe hands them over. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "labbox/gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *events = json_object_new_array();
	size_t dropped = 0, bad = 0;

	if (!events || lb_gate_parse_events((const char *)data, size, events, &dropped, &bad) < 0)
		abort();
	/* Bounded whatever the input, and every kept event is strict JSON once serialised. */
	if (json_object_array_length(events) > LB_GATE_MAX_EVENTS + LB_GATE_MAX_KINDS)
		abort();
	fuzz_assert_strict_json(events);
	json_object_put(events);

	/* The reader: pieces of 1 to 256 bytes (the first byte says how long), then the end. */
	lb_gate_channel ch = {0};
	ch.buf = malloc(LB_GATE_MAX_READ);
	ch.line = malloc(LB_GATE_MAX_LINE);
	if (!ch.buf || !ch.line)
		abort();
	size_t step = size ? (size_t)data[0] + 1 : 1;
	for (size_t i = 0; i < size; i += step)
		if (lb_gate_channel_feed(&ch, (const char *)data + i, size - i < step ? size - i : step,
					 false) < 0)
			abort();
	if (lb_gate_channel_feed(&ch, NULL, 0, true) < 0 || ch.len > LB_GATE_MAX_READ ||
	    ch.total != size)
		abort();
	struct json_object *g = lb_gate_collect(&ch, LB_GATE_ON, "standard", false, NULL, NULL);
	if (!g)
		abort();
	fuzz_assert_strict_json(g);
	json_object_put(g);
	lb_gate_channel_free(&ch);
	return 0;
}
