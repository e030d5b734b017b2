/* The sandbox's root, built mount by mount: a fresh tmpfs holding, for each entry of the
 * host's /, a read-only clone of just that directory or file, the same symlink, or an empty
 * directory where labbox puts a file system of its own (/proc, /dev, /sys, /tmp, the hidden
 * top-level directories). The host's mounts under those places are never cloned, so they are
 * not in the sandbox's mount table, for root and for an ordinary user alike: a clone of the
 * whole tree would bring them along, locked under labbox's covers in an ordinary user's
 * namespace. */
#include "sandbox_internal.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_named(char *const *dirs, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(dirs[i], path) == 0)
			return true;
	return false;
}

/* Where the sandbox mounts a file system of its own over a top-level entry, nothing of the
 * host's is cloned: the host's mounts under it would come along. */
static bool replaced(const lb_sandbox *sb, const char *name)
{
	static const char *const fresh[] = {"proc", "dev", "sys"};
	for (size_t i = 0; i < sizeof fresh / sizeof *fresh; i++)
		if (strcmp(name, fresh[i]) == 0)
			return strcmp(name, "sys") != 0 || sb->net != LB_NET_HOST;
	char path[260];
	snprintf(path, sizeof path, "/%s", name);
	return is_named(sb->hidden, sb->nhidden, path) ||
	       is_named(sb->private_dirs, sb->nprivate, path);
}

static int add_entry(lb_rootfs *rf, size_t *room, const lb_rootfs_entry *e)
{
	if (rf->n == *room) {
		size_t nr = *room ? *room * 2 : 32;
		lb_rootfs_entry *ne = realloc(rf->e, nr * sizeof *ne);
		if (!ne)
			return -ENOMEM;
		rf->e = ne;
		*room = nr;
	}
	rf->e[rf->n++] = *e;
	return 0;
}

/* The type from readdir, which does not look into a mount on the entry (a stale network file
 * system there would hang a stat); a stat without following only where the type is unknown. */
static int entry_type(int rootfd, const struct dirent *de)
{
	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	struct stat st;
	if (fstatat(rootfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG
	       : S_ISLNK(st.st_mode)				   ? DT_LNK
									   : DT_UNKNOWN;
}

/* Sockets, fifos and device nodes at the top are left out (the root is nodev anyway). */
static int plan_one(const lb_sandbox *sb, int rootfd, const struct dirent *de, lb_rootfs *rf,
		    size_t *room)
{
	lb_rootfs_entry e;
	memset(&e, 0, sizeof e);
	e.tree = -1;
	snprintf(e.name, sizeof e.name, "%s", de->d_name);
	int type = entry_type(rootfd, de);
	if (replaced(sb, de->d_name)) {
		e.kind = LB_ROOTFS_DIR;
	} else if (type == DT_DIR || type == DT_REG) {
		e.kind = LB_ROOTFS_BIND;
		e.is_dir = type == DT_DIR;
	} else if (type == DT_LNK) {
		char target[4096];
		ssize_t n = readlinkat(rootfd, de->d_name, target, sizeof target - 1);
		if (n < 0)
			return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
		target[n] = '\0';
		e.kind = LB_ROOTFS_LINK;
		if (!(e.target = strdup(target)))
			return -ENOMEM;
	} else {
		return 0;
	}
	int r = add_entry(rf, room, &e);
	if (r < 0)
		free(e.target);
	return r;
}

int lb_rootfs_plan(const lb_sandbox *sb, const char *host_root, lb_rootfs *rf)
{
	memset(rf, 0, sizeof *rf);
	int rootfd = open(host_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	DIR *d = fdopendir(rootfd);
	if (!d) {
		int e = errno;
		close(rootfd);
		return -e;
	}
	size_t room = 0;
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = plan_one(sb, dirfd(d), de, rf, &room);
	}
	/* The fresh file systems' places exist even where the host's / lacks them. */
	static const char *const needed[] = {"proc", "dev", "sys", "tmp"};
	for (size_t i = 0; r == 0 && i < sizeof needed / sizeof *needed; i++) {
		bool have = false;
		for (size_t k = 0; k < rf->n && !have; k++)
			have = strcmp(rf->e[k].name, needed[i]) == 0;
		if (!have) {
			lb_rootfs_entry e = {.kind = LB_ROOTFS_DIR, .tree = -1};
			snprintf(e.name, sizeof e.name, "%s", needed[i]);
			r = add_entry(rf, &room, &e);
		}
	}
	closedir(d);
	if (r < 0)
		lb_rootfs_free(rf);
	return r;
}

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

int lb_rootfs_clone(lb_rootfs *rf, const char *host_root, char *err, size_t errlen)
{
	LB_AUTOCLOSE int rootfd = open(host_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return fail(err, errlen, -errno, "open the host's root");
	struct mount_attr ro = {0};
	ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	for (size_t i = 0; i < rf->n; i++) {
		lb_rootfs_entry *e = &rf->e[i];
		if (e->kind != LB_ROOTFS_BIND || e->tree >= 0)
			continue;
		/* An automount point is cloned as it is, not triggered. */
		e->tree = open_tree(rootfd, e->name,
				    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
					    AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW);
		if (e->tree < 0 && errno == ENOENT) {
			e->kind = LB_ROOTFS_GONE; /* removed since it was listed */
			continue;
		}
		if (e->tree < 0)
			return fail(err, errlen, -errno, "clone the host's /%s", e->name);
		if (mount_setattr(e->tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof ro) < 0)
			return fail(err, errlen, -errno, "make the host's /%s read-only", e->name);
	}
	return 0;
}

static int place(int nw, const lb_rootfs_entry *e)
{
	switch (e->kind) {
	case LB_ROOTFS_DIR:
		return mkdirat(nw, e->name, 0755) < 0 ? -errno : 0;
	case LB_ROOTFS_LINK:
		return symlinkat(e->target, nw, e->name) < 0 ? -errno : 0;
	case LB_ROOTFS_BIND:
		break;
	default:
		return 0;
	}
	if (e->is_dir) {
		if (mkdirat(nw, e->name, 0755) < 0)
			return -errno;
	} else {
		int fd = openat(nw, e->name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	if (move_mount(e->tree, "", nw, e->name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

int lb_rootfs_build(const lb_rootfs *rf, const char *newroot, char *err, size_t errlen)
{
	/* The entries only: the payload never writes here (sealed read-only once populated). */
	if (mount("tmpfs", newroot, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		return fail(err, errlen, -errno, "mount the new root's tmpfs");
	LB_AUTOCLOSE int nw = open(newroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (nw < 0)
		return fail(err, errlen, -errno, "open the new root");
	for (size_t i = 0; i < rf->n; i++) {
		int r = place(nw, &rf->e[i]);
		if (r < 0)
			return fail(err, errlen, r, "put /%s in the new root", rf->e[i].name);
	}
	return 0;
}

bool lb_rootfs_is_top(const char *path)
{
	return path[0] == '/' && path[1] && !strchr(path + 1, '/');
}

void lb_rootfs_free(lb_rootfs *rf)
{
	for (size_t i = 0; i < rf->n; i++) {
		free(rf->e[i].target);
		if (rf->e[i].tree >= 0)
			close(rf->e[i].tree);
	}
	free(rf->e);
	memset(rf, 0, sizeof *rf);
}
