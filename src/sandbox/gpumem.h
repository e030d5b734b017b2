/* GPU memory sampling of the sandbox (internal). */
#ifndef LABBOX_SANDBOX_GPUMEM_H
#define LABBOX_SANDBOX_GPUMEM_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define LB_GPUMEM_INTERVAL 1.0 /* seconds between samples */

typedef struct lb_gpumem {
	bool active;     /* nvidia-smi found and the sandbox's pid namespace known */
	char smi[PATH_MAX];
	ino_t ns;        /* the sandbox's pid namespace */
	uint64_t peak_bytes;
	unsigned samples;
} lb_gpumem;

/* -ENOENT when nvidia-smi is not on PATH. */
int lb_gpumem_start(lb_gpumem *g, pid_t init);
void lb_gpumem_sample(lb_gpumem *g);
uint64_t lb_gpumem_parse(const char *csv, bool (*mine)(pid_t pid, void *ctx), void *ctx);

#endif
