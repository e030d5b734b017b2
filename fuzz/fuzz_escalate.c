/* libFuzzer target: the --escalate list, and the escalation advice for any diagnosis (the
 * bytes as an experiment's last output). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "labbox/diagnose.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	unsigned mask = 0;
	char err[256];
	int r = lb_escalate_parse(s, &mask, err, sizeof err);
	/* Accepted: only the four kinds; refused: a message and nothing granted. */
	if (r == 0 && (mask == 0 || (mask & ~0xfu)))
		abort();
	if (r < 0 && (mask != 0 || !err[0]))
		abort();
	lb_failure_input in = {.log_tail = (const char *)data, .log_tail_len = size, .exit_code = 1};
	struct json_object *doc = lb_diagnose_failure(&in);
	if (!doc)
		abort();
	unsigned a = lb_diagnose_escalation(doc);
	/* At most one escalation, and one of the four. */
	if (a & (a - 1) || a & ~0xfu)
		abort();
	json_object_put(doc);
	free(s);
	return 0;
}
