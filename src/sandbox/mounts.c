/* sandbox mounts: the tmpfs mounts and the /dev/shm size a caller asks for (docker's --tmpfs
 * and --shm-size). They are mounted by init in run.c. */
#include "sandbox_internal.h"
#include "labbox/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lb_sandbox_set_shm_size(lb_sandbox *sb, uint64_t bytes)
{
	if (bytes == 0)
		return -EINVAL;
	sb->shm_size = bytes;
	return 0;
}

int lb_sandbox_add_tmpfs(lb_sandbox *sb, const char *path, uint64_t bytes, unsigned mode)
{
	/* The sandbox builds /, /proc, /sys and /dev itself: a tmpfs there would hide or break
	 * them (/dev/shm has its own size, lb_sandbox_set_shm_size). */
	if (!path || path[0] != '/' || strcmp(path, "/") == 0 || strstr(path, "/../") ||
	    lb_path_under(path, "/proc") || lb_path_under(path, "/sys") || lb_path_under(path, "/dev") || bytes == 0 ||
	    mode > 07777)
		return -EINVAL;
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	/* Trailing slashes would make the same path look like two. */
	for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
		p[n - 1] = '\0';
	for (size_t i = 0; i < sb->ntmpfs; i++)
		if (strcmp(sb->tmpfs[i].path, p) == 0) {
			free(p);
			sb->tmpfs[i].size = bytes;
			sb->tmpfs[i].mode = mode;
			return 0;
		}
	lb_tmpfs *nt = realloc(sb->tmpfs, (sb->ntmpfs + 1) * sizeof *nt);
	if (!nt) {
		free(p);
		return -ENOMEM;
	}
	sb->tmpfs = nt;
	nt[sb->ntmpfs++] = (lb_tmpfs){.path = p, .size = bytes, .mode = mode};
	return 0;
}

void lb_sandbox_free_mounts(lb_sandbox *sb)
{
	for (size_t i = 0; i < sb->ntmpfs; i++)
		free(sb->tmpfs[i].path);
	free(sb->tmpfs);
	sb->tmpfs = NULL;
	sb->ntmpfs = 0;
}
