/* /proc/self/mountinfo: reading it. */
#include "sandbox_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Every mount point of this namespace, unescaped, in the table's order. */
int lb_mountinfo_points(char ***out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL, **found = NULL;
	size_t cap = 0, n = 0, room = 0;
	int r = 0;
	lb_mountinfo_entry *e = malloc(sizeof *e);
	if (!e)
		r = -ENOMEM;
	while (r == 0 && getline(&line, &cap, f) > 0) {
		if (lb_mountinfo_parse(line, e) < 0)
			continue;
		if (n == room) {
			size_t nr = room ? room * 2 : 64;
			char **nf = realloc(found, nr * sizeof *nf);
			if (!nf) {
				r = -ENOMEM;
				break;
			}
			found = nf;
			room = nr;
		}
		if (!(found[n] = strdup(e->mountpoint)))
			r = -ENOMEM;
		else
			n++;
	}
	free(e);
	free(line);
	fclose(f);
	if (r < 0) {
		lb_mountinfo_points_free(found, n);
		return r;
	}
	*out = found;
	*nout = n;
	return 0;
}

void lb_mountinfo_points_free(char **points, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(points[i]);
	free(points);
}
