/* Peak GPU memory of a sandboxed tree, sampled with nvidia-smi from the host.
 *
 * nvidia-smi lists the compute processes of every GPU with host pids; those whose pid
 * namespace is the sandbox's belong to the run. Their memory is summed at each sample and the
 * largest sum kept. A sample every second misses short peaks, which the result says. */
#include "gpumem.h"
#include "labbox/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static bool ns_inode(pid_t pid, ino_t *ino)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	if (stat(path, &st) < 0)
		return false;
	*ino = st.st_ino;
	return true;
}

int lb_gpumem_start(lb_gpumem *g, pid_t init)
{
	memset(g, 0, sizeof *g);
	char *exe = NULL;
	if (lb_find_executable("nvidia-smi", &exe) < 0)
		return -ENOENT;
	snprintf(g->smi, sizeof g->smi, "%s", exe);
	free(exe);
	if (!ns_inode(init, &g->ns))
		return -ESRCH;
	g->active = true;
	return 0;
}

/* Pure: the MiB used by the sandbox's processes in nvidia-smi's "pid, used_memory" lines. */
uint64_t lb_gpumem_parse(const char *csv, bool (*mine)(pid_t pid, void *ctx), void *ctx)
{
	uint64_t mib = 0;
	for (const char *line = csv; line && *line;) {
		const char *nl = strchr(line, '\n');
		char *end;
		long pid = strtol(line, &end, 10);
		if (end != line && *end == ',' && pid > 0) {
			unsigned long long used = strtoull(end + 1, &end, 10);
			if (mine(pid, ctx))
				mib += used;
		}
		line = nl ? nl + 1 : NULL;
	}
	return mib;
}

static bool in_ns(pid_t pid, void *ctx)
{
	ino_t ino;
	return ns_inode(pid, &ino) && ino == *(ino_t *)ctx;
}

void lb_gpumem_sample(lb_gpumem *g)
{
	if (!g->active)
		return;
	char *argv[] = {g->smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits",
			NULL};
	lb_buf out = {0};
	int st = 0;
	if (lb_capture(argv, 1 << 20, false, &out, &st) == 0 && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0 && out.data) {
		uint64_t bytes = lb_gpumem_parse(out.data, in_ns, &g->ns) << 20;
		if (bytes > g->peak_bytes)
			g->peak_bytes = bytes;
		g->samples++;
	}
	lb_buf_free(&out);
}
