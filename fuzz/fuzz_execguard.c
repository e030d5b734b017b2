/* libFuzzer target: the exec guard's reading of what a process of the experiment's execs (its
 * command line and environment, NUL-separated as /proc gives them, in any shape the
 * experiment chose) never crashes or reads out of bounds, and every refusal names a reason
 * that fits its buffer. Input: a command line, a 0xff byte, the environment, a 0xff byte,
 * the run's own environment (also read as the run's own command line). */
#include "../src/sandbox/sandbox_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A heap copy of exactly len bytes, so a read past the end is caught. */
static char *copy(const uint8_t *p, size_t len)
{
	char *c = malloc(len ? len : 1);
	if (c && len)
		memcpy(c, p, len);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cut1 = memchr(data, 0xff, size);
	if (!cut1)
		return 0;
	size_t cmdlen = (size_t)(cut1 - data);
	const uint8_t *rest = cut1 + 1;
	size_t restlen = size - cmdlen - 1;
	const uint8_t *cut2 = memchr(rest, 0xff, restlen);
	size_t envlen = cut2 ? (size_t)(cut2 - rest) : restlen;
	size_t reflen = cut2 ? restlen - envlen - 1 : 0;
	char *cmd = copy(data, cmdlen), *env = copy(rest, envlen),
	     *ref = copy(cut2 ? cut2 + 1 : rest, reflen);
	if (cmd && env && ref) {
		char why[200];
		memset(why, 'x', sizeof why);
		int r = sb_exec_python_args(cmd, cmdlen, ref, reflen, size & 1, why, sizeof why);
		if (r != 0 && (r != -EPERM || !memchr(why, '\0', sizeof why)))
			abort();
		memset(why, 'x', sizeof why);
		r = sb_exec_env_same(env, envlen, ref, reflen, why, sizeof why);
		if (r != 0 && (r != -EPERM || !memchr(why, '\0', sizeof why)))
			abort();
		if (envlen && cmdlen)
			(void)sb_exec_env_sensitive(env, envlen < cmdlen ? envlen : cmdlen);
	}
	free(cmd);
	free(env);
	free(ref);
	return 0;
}
