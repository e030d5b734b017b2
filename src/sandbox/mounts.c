/* sandbox mounts: the tmpfs mounts and the /dev/shm size a caller asks for (docker's --tmpfs
 * and --shm-size), and labbox's own files placed in read-only tmpfs mounts. They are mounted
 * by init in run.c. */
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

/* The sandbox builds /, /proc, /sys and /dev itself: a tmpfs there would hide or break them
 * (/dev/shm has its own size, lb_sandbox_set_shm_size). */
static bool tmpfs_place_ok(const char *path)
{
	return lb_path_plain(path) && !lb_path_sandbox_own(path);
}

int lb_sandbox_add_tmpfs(lb_sandbox *sb, const char *path, uint64_t bytes, unsigned mode)
{
	if (!tmpfs_place_ok(path) || bytes == 0 || mode > 07777)
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

/* Relative, each part a name: init makes the parts below the file system it mounts. */
static bool file_name_ok(const char *name)
{
	if (!name || !*name || name[0] == '/' || strlen(name) >= 256)
		return false;
	for (const char *s = name;;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!e)
			return true;
		s = e + 1;
	}
}

int lb_sandbox_add_file(lb_sandbox *sb, const char *dir, const char *name, const void *data,
			size_t len)
{
	if (!tmpfs_place_ok(dir) || !file_name_ok(name) || (len && !data) || len > (64u << 20))
		return -EINVAL;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	for (size_t i = 0; i < sb->nfiles; i++)
		if (strlen(sb->files[i].dir) == dl && strncmp(sb->files[i].dir, dir, dl) == 0 &&
		    strcmp(sb->files[i].name, name) == 0)
			return -EEXIST;
	lb_memfile *nf = realloc(sb->files, (sb->nfiles + 1) * sizeof *nf);
	if (!nf)
		return -ENOMEM;
	sb->files = nf;
	lb_memfile f = {.dir = strndup(dir, dl), .name = strdup(name), .data = malloc(len ? len : 1),
			.len = len};
	if (!f.dir || !f.name || !f.data) {
		free(f.dir);
		free(f.name);
		free(f.data);
		return -ENOMEM;
	}
	if (len)
		memcpy(f.data, data, len);
	nf[sb->nfiles++] = f;
	return 0;
}

void lb_sandbox_free_mounts(lb_sandbox *sb)
{
	for (size_t i = 0; i < sb->nfiles; i++) {
		free(sb->files[i].dir);
		free(sb->files[i].name);
		free(sb->files[i].data);
	}
	free(sb->files);
	sb->files = NULL;
	sb->nfiles = 0;
	for (size_t i = 0; i < sb->ntmpfs; i++)
		free(sb->tmpfs[i].path);
	free(sb->tmpfs);
	sb->tmpfs = NULL;
	sb->ntmpfs = 0;
}
