/* libFuzzer target: squeue's output as `labbox sweep --mode slurm` reads it (the long
 * format ArrayTaskID|State|RestartCnt|NodeList|, one task a line, pending ranges such as
 * [2-9%2]) never crashes or reads out of bounds, and every task it fills holds a state of
 * upper-case letters, a bounded node name and a count that is not negative. */
#include "labbox/backend.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* The number of tasks comes from the input too, so ranges meet both ends. */
	size_t ntasks = size ? (size_t)(data[0] % 64) : 0;
	lb_slurm_task tasks[64];
	if (lb_slurm_tasks_parse(buf, ntasks, tasks) == 0)
		for (size_t i = 0; i < ntasks; i++) {
			if (strlen(tasks[i].state) >= sizeof tasks[i].state ||
			    strlen(tasks[i].node) >= sizeof tasks[i].node || tasks[i].restarts < 0)
				abort();
			for (const char *c = tasks[i].state; *c; c++)
				if (!((*c >= 'A' && *c <= 'Z') || *c == '_'))
					abort();
		}
	free(buf);
	return 0;
}
