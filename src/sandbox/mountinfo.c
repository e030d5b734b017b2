/* /proc/self/mountinfo: reading it (pure), and detaching the host's mounts that a sandbox's
 * own file systems are about to cover. */
#include "sandbox_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
void lb_mountinfo_unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* id parent major:minor root mountpoint options [optional fields] - fstype source superopts */
int lb_mountinfo_parse(const char *line, lb_mountinfo_entry *e)
{
	memset(e, 0, sizeof *e);
	const char *sep = strstr(line, " - ");
	if (!sep)
		return -EINVAL;
	const char *p = line;
	for (int field = 0; field < 4; field++) {
		p = strchr(p, ' ');
		if (!p || p > sep)
			return -EINVAL;
		p++;
	}
	if (sscanf(line, "%*s %*s %u:%u", &e->major, &e->minor) != 2)
		return -EINVAL;
	size_t len = strcspn(p, " \n");
	if (len == 0 || len >= sizeof e->mountpoint || p + len > sep)
		return -ENAMETOOLONG;
	memcpy(e->mountpoint, p, len);
	e->mountpoint[len] = '\0';
	lb_mountinfo_unescape(e->mountpoint);
	const char *fs = sep + 3;
	len = strcspn(fs, " \n");
	if (len == 0 || len >= sizeof e->fstype)
		return -EINVAL;
	memcpy(e->fstype, fs, len);
	e->fstype[len] = '\0';
	return 0;
}

static bool at_or_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int by_length(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
	return (la > lb) - (la < lb);
}

/* The host's mounts at and under each of dirs (/dev with /dev/shm and /dev/pts, /run with its netns,
 * /sys with the cgroup hierarchies) would stay listed in the sandbox's mount table beneath the
 * file systems that cover them, naming the host's devices, sizes and services. Detached first,
 * outermost first (which takes what is under it along), they are not there to be listed.
 * Mounts that came from a more privileged namespace are locked (an ordinary user's sandbox)
 * and stay: the cover still hides their contents. Returns how many were detached. */
int lb_mountinfo_detach_under(const char *const *dirs, size_t ndirs)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL, **found = NULL;
	size_t cap = 0, n = 0, room = 0;
	int r = 0;
	while (getline(&line, &cap, f) > 0) {
		lb_mountinfo_entry e;
		if (lb_mountinfo_parse(line, &e) < 0)
			continue;
		bool covered = false;
		for (size_t k = 0; k < ndirs && !covered; k++)
			covered = at_or_under(e.mountpoint, dirs[k]);
		if (!covered)
			continue;
		if (n == room) {
			size_t nr = room ? room * 2 : 16;
			char **nf = realloc(found, nr * sizeof *nf);
			if (!nf) {
				r = -ENOMEM;
				break;
			}
			found = nf;
			room = nr;
		}
		if (!(found[n] = strdup(e.mountpoint))) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	free(line);
	fclose(f);
	if (n)
		qsort(found, n, sizeof *found, by_length);
	int detached = 0;
	for (size_t i = 0; i < n; i++) {
		/* Stacked mounts on one point come off one at a time; EINVAL: not a mount any
		 * more (went with its parent) or locked. */
		for (int k = 0; k < 64 && umount2(found[i], MNT_DETACH | UMOUNT_NOFOLLOW) == 0; k++)
			detached++;
		free(found[i]);
	}
	free(found);
	return r < 0 ? r : detached;
}
