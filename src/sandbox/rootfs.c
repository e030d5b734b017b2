/* The sandbox's root, built mount by mount: a fresh tmpfs holding, for each entry of the
 * host's /, a read-only clone of just that directory or file, the same symlink, or an empty
 * directory where labbox puts a file system of its own (/proc, /dev, /sys, /tmp, the hidden
 * top-level directories). A directory that holds a hidden or private directory with host's
 * mounts under it (/var with /var/tmp) is itself an empty directory whose entries are planned
 * the same way. The host's mounts under those places are never cloned, so they are not in the
 * sandbox's mount table, for root and for an ordinary user alike: a clone of the whole tree
 * would bring them along, locked under labbox's covers in an ordinary user's namespace. */
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

typedef struct plan_ctx {
	const lb_sandbox *sb;
	const char *host_root; /* "/" or a test's directory, without a trailing slash but "/" */
	char *const *mounts;
	size_t nmounts;
	lb_rootfs *rf;
	size_t room;
} plan_ctx;

static bool is_cover(const plan_ctx *p, const char *abs)
{
	return is_named(p->sb->hidden, p->sb->nhidden, abs) ||
	       is_named(p->sb->private_dirs, p->sb->nprivate, abs);
}

/* Where the sandbox mounts a file system of its own over a top-level entry, nothing of the
 * host's is cloned: the host's mounts under it would come along. */
static bool replaced(const plan_ctx *p, const char *name)
{
	static const char *const fresh[] = {"proc", "dev", "sys"};
	for (size_t i = 0; i < sizeof fresh / sizeof *fresh; i++)
		if (strcmp(name, fresh[i]) == 0)
			return strcmp(name, "sys") != 0 || p->sb->net != LB_NET_HOST;
	char path[260];
	snprintf(path, sizeof path, "/%s", name);
	return is_cover(p, path);
}

/* Whether a host's mount lies at or under dir (absolute, as the sandbox sees it). */
static bool mount_under(const plan_ctx *p, const char *dir)
{
	size_t rl = strcmp(p->host_root, "/") == 0 ? 0 : strlen(p->host_root);
	for (size_t i = 0; i < p->nmounts; i++) {
		const char *m = p->mounts[i];
		if (rl && (strncmp(m, p->host_root, rl) != 0 || m[rl] != '/'))
			continue;
		if (lb_path_under(m + rl, dir))
			return true;
	}
	return false;
}

/* A directory holding a hidden or private directory that the host mounts something under
 * is not cloned whole (the clone would bring those mounts, locked in an ordinary user's
 * namespace): its entries are planned one by one, the covered one left empty. */
static bool needs_split(const plan_ctx *p, const char *abs)
{
	const lb_sandbox *sb = p->sb;
	for (size_t i = 0; i < sb->nhidden + sb->nprivate; i++) {
		const char *c = i < sb->nhidden ? sb->hidden[i] : sb->private_dirs[i - sb->nhidden];
		if (strcmp(c, abs) != 0 && lb_path_under(c, abs) && mount_under(p, c))
			return true;
	}
	return false;
}

static int add_entry(plan_ctx *p, lb_rootfs_entry *e)
{
	lb_rootfs *rf = p->rf;
	if (rf->n == p->room) {
		size_t nr = p->room ? p->room * 2 : 32;
		lb_rootfs_entry *ne = realloc(rf->e, nr * sizeof *ne);
		if (!ne) {
			free(e->path);
			free(e->target);
			return -ENOMEM;
		}
		rf->e = ne;
		p->room = nr;
	}
	rf->e[rf->n++] = *e;
	return 0;
}

/* The type from readdir, which does not look into a mount on the entry (a stale network file
 * system there would hang a stat); a stat without following only where the type is unknown. */
static int entry_type(int dfd, const struct dirent *de)
{
	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	struct stat st;
	if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG
	       : S_ISLNK(st.st_mode)				   ? DT_LNK
									   : DT_UNKNOWN;
}

static int plan_dir(plan_ctx *p, int rootfd, const char *rel);

/* Sockets, fifos and device nodes are left out (the root is nodev anyway). */
static int plan_one(plan_ctx *p, int rootfd, int dfd, const char *rel, const struct dirent *de)
{
	lb_rootfs_entry e = {.kind = LB_ROOTFS_DIR, .tree = -1, .mode = 0755};
	char childrel[4096], abs[4097];
	if (snprintf(childrel, sizeof childrel, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
	    (int)sizeof childrel)
		return 0; /* not reachable by a path anyway */
	snprintf(abs, sizeof abs, "/%s", childrel);
	int type = entry_type(dfd, de);
	bool split = false;
	if ((!*rel && replaced(p, de->d_name)) || (*rel && is_cover(p, abs))) {
		e.kind = LB_ROOTFS_DIR;
	} else if (type == DT_DIR && (split = needs_split(p, abs))) {
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? 0 : -errno;
		e.mode = st.st_mode & 07777;
		e.uid = st.st_uid;
		e.gid = st.st_gid;
		e.owned = true;
	} else if (type == DT_DIR || type == DT_REG) {
		e.kind = LB_ROOTFS_BIND;
		e.is_dir = type == DT_DIR;
	} else if (type == DT_LNK) {
		char target[4096];
		ssize_t n = readlinkat(dfd, de->d_name, target, sizeof target - 1);
		if (n < 0)
			return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
		target[n] = '\0';
		e.kind = LB_ROOTFS_LINK;
		if (!(e.target = strdup(target)))
			return -ENOMEM;
	} else {
		return 0;
	}
	if (!(e.path = strdup(childrel))) {
		free(e.target);
		return -ENOMEM;
	}
	int r = add_entry(p, &e);
	return r < 0 || !split ? r : plan_dir(p, rootfd, childrel);
}

static int plan_dir(plan_ctx *p, int rootfd, const char *rel)
{
	int dfd = openat(rootfd, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = plan_one(p, rootfd, dirfd(d), rel, de);
	}
	closedir(d);
	return r;
}

int lb_rootfs_plan(const lb_sandbox *sb, const char *host_root, char *const *mounts,
		   size_t nmounts, lb_rootfs *rf)
{
	memset(rf, 0, sizeof *rf);
	plan_ctx p = {.sb = sb, .host_root = host_root, .mounts = mounts, .nmounts = nmounts,
		      .rf = rf};
	int rootfd = open(host_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	int r = plan_dir(&p, rootfd, "");
	close(rootfd);
	/* The fresh file systems' places exist even where the host's / lacks them. */
	static const char *const needed[] = {"proc", "dev", "sys", "tmp"};
	for (size_t i = 0; r == 0 && i < sizeof needed / sizeof *needed; i++) {
		bool have = false;
		for (size_t k = 0; k < rf->n && !have; k++)
			have = strcmp(rf->e[k].path, needed[i]) == 0;
		if (have)
			continue;
		lb_rootfs_entry e = {.kind = LB_ROOTFS_DIR, .tree = -1, .mode = 0755};
		if (!(e.path = strdup(needed[i])))
			r = -ENOMEM;
		else
			r = add_entry(&p, &e);
	}
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
		e->tree = open_tree(rootfd, e->path,
				    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
					    AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW);
		if (e->tree < 0 && errno == ENOENT) {
			e->kind = LB_ROOTFS_GONE; /* removed since it was listed */
			continue;
		}
		if (e->tree < 0)
			return fail(err, errlen, -errno, "clone the host's /%s", e->path);
		if (mount_setattr(e->tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof ro) < 0)
			return fail(err, errlen, -errno, "make the host's /%s read-only", e->path);
	}
	return 0;
}

static int place(int nw, const lb_rootfs_entry *e)
{
	switch (e->kind) {
	case LB_ROOTFS_DIR:
		if (mkdirat(nw, e->path, 0755) < 0 || fchmodat(nw, e->path, e->mode, 0) < 0)
			return -errno;
		/* The owner where the sandbox's user namespace maps it (root's sandbox); an
		 * ordinary user's shows it as the overflow id either way. */
		if (e->owned && fchownat(nw, e->path, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno != EINVAL && errno != EPERM)
			return -errno;
		return 0;
	case LB_ROOTFS_LINK:
		return symlinkat(e->target, nw, e->path) < 0 ? -errno : 0;
	case LB_ROOTFS_BIND:
		break;
	default:
		return 0;
	}
	if (e->is_dir) {
		if (mkdirat(nw, e->path, 0755) < 0)
			return -errno;
	} else {
		int fd = openat(nw, e->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	if (move_mount(e->tree, "", nw, e->path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
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
			return fail(err, errlen, r, "put /%s in the new root", rf->e[i].path);
	}
	return 0;
}

void lb_rootfs_free(lb_rootfs *rf)
{
	for (size_t i = 0; i < rf->n; i++) {
		free(rf->e[i].path);
		free(rf->e[i].target);
		if (rf->e[i].tree >= 0)
			close(rf->e[i].tree);
	}
	free(rf->e);
	memset(rf, 0, sizeof *rf);
}
