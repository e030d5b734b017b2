/* diskfs: a disk limit that is a property of the file system exp/ lives on.
 *
 * The staged exp/ is copied into a sparse ext4 image beside it (mke2fs -d), the image is
 * mounted over exp/ through a loop device for the run, and what the run changed is merged
 * back into the staged tree underneath when it has ended. The kernel then refuses the write
 * that would pass the limit (ENOSPC), however fast it comes: fallocate, bursts between two
 * checks and files held open after deletion all count, as blocks and inodes of a file system
 * do. The mount is in the host's mount namespace, so a labbox killed mid-run leaves exp/
 * readable where it was (the image stays mounted), never lost.
 *
 * Files the run did not touch keep the staged copy, with its identity (device, inode,
 * timestamps), so that the pipeline still tells a results file left by an earlier run from
 * one this run wrote. */
#include "diskfs.h"
#include "sandbox_internal.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define MiB (UINT64_C(1) << 20)
#define MERGE_MAX_DEPTH 1024
/* ext4 with 4 KiB blocks holds files up to 16 TiB; the image is one file of the host's. */
#define IMAGE_MAX (UINT64_C(16) << 40)

static const char *mke2fs_path(void)
{
	static const char *const paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

bool lb_diskfs_available(char *why, size_t len)
{
	if (geteuid() != 0) {
		snprintf(why, len, "mounting a file system of exp/'s own needs root (labbox runs as "
				   "uid %d)", (int)geteuid());
		return false;
	}
	if (access("/dev/loop-control", R_OK | W_OK) < 0) {
		snprintf(why, len, "this host has no loop devices (/dev/loop-control: %s)",
			 strerror(errno));
		return false;
	}
	if (!mke2fs_path()) {
		snprintf(why, len, "mke2fs (e2fsprogs) is not installed");
		return false;
	}
	return true;
}

static int make_image(lb_diskfs *fs, const char *dir, uint64_t size, uint64_t inodes, uid_t uid,
		      gid_t gid, char *err, size_t errlen)
{
	LB_AUTOCLOSE int fd = open(fs->image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create the file system image %s: %s", fs->image,
			 strerror(e));
		return -e;
	}
	char nbuf[32], ebuf[96];
	snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)inodes);
	/* No journal (a scratch file system; the kernel writes it back at unmount), no room kept
	 * for root, no resize reserve: what the limit allows is what the experiment gets. */
	snprintf(ebuf, sizeof ebuf, "root_owner=%u:%u,lazy_itable_init=1,nodiscard", (unsigned)uid,
		 (unsigned)gid);
	char *argv[] = {(char *)mke2fs_path(), "-q", "-F", "-t", "ext4", "-b", "4096", "-m", "0",
			"-O", "^has_journal,^resize_inode", "-N", nbuf, "-E", ebuf, "-d",
			(char *)dir, fs->image, NULL};
	lb_buf out = {0};
	int status = 0;
	int r = lb_capture(argv, 4096, true, &out, &status);
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char *nl = out.data ? strchr(out.data, '\n') : NULL;
		if (nl)
			*nl = '\0';
		snprintf(err, errlen, "mke2fs could not make exp/'s file system (%s): %s",
			 fs->image, r < 0 ? strerror(-r) : out.data && out.data[0] ? out.data
										  : "failed");
		lb_buf_free(&out);
		return r < 0 ? r : -EIO;
	}
	lb_buf_free(&out);
	return 0;
}

/* ---- two small hash tables: staged path -> inode, and inode -> merged path ---- */

typedef struct diskfs_slot {
	char *rel;
	ino_t ino;
} diskfs_slot;

struct diskfs_map {
	diskfs_slot *v;
	size_t cap, n; /* cap a power of two, at most half full */
};
typedef struct diskfs_map diskfs_map;

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static size_t hash_ino(ino_t ino)
{
	uint64_t x = (uint64_t)ino * 0x9E3779B97F4A7C15ULL;
	return (size_t)(x ^ (x >> 29));
}

static void map_free(diskfs_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->v[i].rel);
	free(m->v);
	free(m);
}

static int map_grow(diskfs_map *m, bool by_ino)
{
	size_t nc = m->cap ? m->cap * 2 : 1024;
	diskfs_slot *nv = calloc(nc, sizeof *nv);
	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->v[i].rel)
			continue;
		size_t h = (by_ino ? hash_ino(m->v[i].ino) : hash_str(m->v[i].rel)) & (nc - 1);
		while (nv[h].rel)
			h = (h + 1) & (nc - 1);
		nv[h] = m->v[i];
	}
	free(m->v);
	m->v = nv;
	m->cap = nc;
	return 0;
}

/* by_ino: the inode is the key (the first path of a file with several links); else the
 * path is. */
static int map_put(diskfs_map *m, const char *rel, ino_t ino, bool by_ino)
{
	if ((m->n + 1) * 2 > m->cap && map_grow(m, by_ino) < 0)
		return -ENOMEM;
	size_t h = (by_ino ? hash_ino(ino) : hash_str(rel)) & (m->cap - 1);
	while (m->v[h].rel)
		h = (h + 1) & (m->cap - 1);
	if (!(m->v[h].rel = strdup(rel)))
		return -ENOMEM;
	m->v[h].ino = ino;
	m->n++;
	return 0;
}

static const diskfs_slot *map_by_ino(const diskfs_map *m, ino_t ino)
{
	if (!m || !m->cap)
		return NULL;
	for (size_t h = hash_ino(ino) & (m->cap - 1); m->v[h].rel; h = (h + 1) & (m->cap - 1))
		if (m->v[h].ino == ino)
			return &m->v[h];
	return NULL;
}

static const diskfs_slot *map_by_rel(const diskfs_map *m, const char *rel)
{
	if (!m || !m->cap)
		return NULL;
	for (size_t h = hash_str(rel) & (m->cap - 1); m->v[h].rel; h = (h + 1) & (m->cap - 1))
		if (strcmp(m->v[h].rel, rel) == 0)
			return &m->v[h];
	return NULL;
}

/* Every staged regular file's inode in the image, by path: a file the run did not touch
 * is the one at its path still (a directory renamed over another moves its files, whose
 * own ctime does not change). Staging is at most 64 levels deep. */
static int record_staged(diskfs_map *m, int dfd, const char *prefix, int depth)
{
	if (depth > 64)
		return 0;
	DIR *d = lb_dir_stream(dfd);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	char rel[PATH_MAX];
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (depth == 0 && !strcmp(e->d_name, "lost+found")))
			continue;
		if (snprintf(rel, sizeof rel, "%s%s%s", prefix, prefix[0] ? "/" : "", e->d_name) >=
		    (int)sizeof rel)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			r = map_put(m, rel, st.st_ino, false);
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = record_staged(m, sub, rel, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
	return r;
}

/* A free loop device bound to the image, detached by the kernel once it is unmounted. */
static int attach_loop(const lb_diskfs *fs, char dev[32], char *err, size_t errlen)
{
	LB_AUTOCLOSE int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	LB_AUTOCLOSE int img = open(fs->image, O_RDWR | O_CLOEXEC);
	if (ctl < 0 || img < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", ctl < 0 ? "/dev/loop-control" : fs->image,
			 strerror(e));
		return -e;
	}
	for (int attempt = 0; attempt < 16; attempt++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			break;
		snprintf(dev, 32, "/dev/loop%d", n);
		int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			continue;
		struct loop_config cfg;
		memset(&cfg, 0, sizeof cfg);
		cfg.fd = (unsigned)img;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		int r = ioctl(lfd, LOOP_CONFIGURE, &cfg);
		if (r < 0 && errno == EINVAL) { /* before Linux 5.8 */
			r = ioctl(lfd, LOOP_SET_FD, img);
			if (r == 0) {
				struct loop_info64 info;
				memset(&info, 0, sizeof info);
				info.lo_flags = LO_FLAGS_AUTOCLEAR;
				if (ioctl(lfd, LOOP_SET_STATUS64, &info) < 0) {
					ioctl(lfd, LOOP_CLR_FD, 0);
					r = -1;
				}
			}
		}
		if (r == 0)
			return lfd; /* another process may take a free device first: try the next */
		close(lfd);
		if (errno != EBUSY)
			break;
	}
	int e = errno ? errno : EBUSY;
	snprintf(err, errlen, "cannot bind exp/'s file system image to a loop device: %s",
		 strerror(e));
	return -e;
}

/* The file system holds the limit, not the limit plus what mke2fs left over: the rest is
 * taken by a file only root can reach (lost+found is root's, 0700). */
static int reserve_excess(lb_diskfs *fs, uint64_t limit, uint64_t staged)
{
	struct statvfs v;
	if (statvfs(fs->mountpoint, &v) < 0)
		return -errno;
	uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
	uint64_t want = limit > staged ? limit - staged : 0;
	if (avail <= want)
		return 0;
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/lost+found/.labbox-reserve", fs->mountpoint);
	LB_AUTOCLOSE int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	uint64_t excess = (avail - want) / 4096 * 4096;
	if (excess && fallocate(fd, 0, 0, (off_t)excess) < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0)
		fs->reserve = st.st_ino;
	return 0;
}

/* What the image holds on the host's disk: without discard, a block the file system wrote
 * stays allocated in it after the file is deleted, so this is the run's high-water mark. */
static uint64_t image_allocated(const lb_diskfs *fs)
{
	LB_AUTOCLOSE int mfd = open(fs->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd >= 0)
		syncfs(mfd);
	struct stat st;
	return stat(fs->image, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

int lb_diskfs_setup(lb_diskfs *fs, const char *dir, uint64_t limit, uint64_t inodes, uid_t uid,
		    gid_t gid, char *err, size_t errlen)
{
	memset(fs, 0, sizeof *fs);
	fs->host_fd = -1;
	fs->lock_fd = -1;
	if (snprintf(fs->mountpoint, sizeof fs->mountpoint, "%s", dir) >= (int)sizeof fs->mountpoint ||
	    snprintf(fs->image, sizeof fs->image, "%s.img", dir) >= (int)sizeof fs->image) {
		snprintf(err, errlen, "the path of exp/ is too long for its file system image");
		return -ENAMETOOLONG;
	}
	lb_disk_measure_t staged;
	if (lb_disk_measure(dir, &staged) < 0)
		memset(&staged, 0, sizeof staged);
	/* A limit past what the host's disk has left is the disk's size: the image never
	 * claims more than is there (its blocks are only taken as they are written). */
	struct statvfs v;
	uint64_t host_free = statvfs(dir, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : limit;
	uint64_t cap = limit;
	if (cap > host_free)
		cap = host_free;
	if (cap > IMAGE_MAX)
		cap = IMAGE_MAX;
	fs->limit = cap;
	/* ext4's own metadata (inode tables, bitmaps) comes on top; reserve_excess hands back
	 * what is over. */
	uint64_t size = cap + inodes * 256 + cap / 32 + 8 * MiB;
	size = (size + 4095) / 4096 * 4096;
	int r = make_image(fs, dir, size, inodes, uid, gid, err, errlen);
	if (r < 0) {
		unlink(fs->image);
		return r;
	}
	/* Held for the run: a later labbox that can take the lock knows this one is gone. */
	fs->lock_fd = open(fs->image, O_RDONLY | O_CLOEXEC);
	if (fs->lock_fd >= 0)
		flock(fs->lock_fd, LOCK_EX | LOCK_NB);
	fs->host_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fs->host_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open %s: %s", dir, strerror(-r));
		unlink(fs->image);
		return r;
	}
	char dev[32];
	int lfd = attach_loop(fs, dev, err, errlen);
	if (lfd < 0) {
		lb_diskfs_abandon(fs);
		return lfd;
	}
	/* noinit_itable: the image is a new sparse file, its inode tables read as zeros already;
	 * the kernel's zeroing of them would write inodes x 256 bytes to the host's disk. */
	r = mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "noinit_itable");
	int e = errno;
	close(lfd); /* the mount holds the device now; AUTOCLEAR frees it at unmount */
	if (r < 0) {
		snprintf(err, errlen, "cannot mount exp/'s file system (%s on %s): %s", dev, dir,
			 strerror(e));
		lb_diskfs_abandon(fs);
		return -e;
	}
	fs->mounted = true;
	snprintf(fs->device, sizeof fs->device, "%s", dev);
	/* A write during the run stamps its inode's ctime from the coarse clock, never earlier
	 * than this; the staged files carry their staging time (whole seconds) from mke2fs. */
	clock_gettime(CLOCK_REALTIME_COARSE, &fs->t_mount);
	r = reserve_excess(fs, cap, staged.bytes);
	if (r < 0) {
		snprintf(err, errlen, "cannot size exp/'s file system to the limit: %s",
			 strerror(-r));
		lb_diskfs_abandon(fs);
		return r;
	}
	fs->room = cap > staged.bytes ? cap - staged.bytes : 0;
	fs->allocated0 = image_allocated(fs);
	char lf[PATH_MAX + 16];
	struct stat lst;
	snprintf(lf, sizeof lf, "%s/lost+found", fs->mountpoint);
	if (lstat(lf, &lst) == 0)
		fs->lost_found = lst.st_ino;
	LB_AUTOCLOSE int root = open(fs->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fs->staged = calloc(1, sizeof *fs->staged);
	if (!fs->staged || root < 0 || (r = record_staged(fs->staged, root, "", 0)) < 0) {
		snprintf(err, errlen, "cannot list the staged files in exp/'s file system: %s",
			 strerror(fs->staged && root >= 0 ? -r : ENOMEM));
		lb_diskfs_abandon(fs);
		return fs->staged && root >= 0 ? r : -ENOMEM;
	}
	return 0;
}

bool lb_diskfs_full(const lb_diskfs *fs, bool final, char *detail, size_t len)
{
	struct statvfs v;
	if (!fs->mounted || statvfs(fs->mountpoint, &v) < 0)
		return false;
	/* Full as a writer meets it: ext4 refuses a write while it keeps some room for its own
	 * metadata and delayed allocations, so "full" is within a few blocks of the limit. */
	uint64_t slack = fs->limit / 32;
	if (slack > 64 * MiB)
		slack = 64 * MiB;
	if (slack < 2 * MiB)
		slack = 2 * MiB;
	/* A tree that filled it and ended at once (files deleted while open are freed when it
	 * exits) is told by the high-water mark the image keeps on the host. */
	uint64_t grown = final ? image_allocated(fs) : 0;
	grown = grown > fs->allocated0 ? grown - fs->allocated0 : 0;
	if ((uint64_t)v.f_bavail * v.f_frsize < slack || (final && grown + slack >= fs->room)) {
		snprintf(detail, len, "exp/ is full: its file system holds the limit of %llu bytes",
			 (unsigned long long)fs->limit);
		return true;
	}
	if (v.f_favail == 0) {
		snprintf(detail, len, "exp/ is full: its file system has no inodes left (%llu files "
				      "and directories)",
			 (unsigned long long)v.f_files);
		return true;
	}
	return false;
}

/* ---- merging the run's changes back into the staged tree ---- */

typedef struct merge_ctx {
	const lb_diskfs *fs;
	int host_root;
	diskfs_map links; /* inode -> the path it was merged to first */
	int max_depth;
	double until;      /* monotonic; 0 = no bound */
	unsigned long n;   /* entries looked at */
	char *err;
	size_t errlen;
} merge_ctx;

static int merge_fail(merge_ctx *c, int e, const char *what, const char *rel)
{
	/* The message must keep room for where the run's files are kept: a long path is cut
	 * to its end. */
	size_t n = strlen(rel);
	const char *shown = n > 120 ? rel + n - 120 : rel;
	if (!c->err[0])
		snprintf(c->err, c->errlen, "bringing back %s '%s%s' from exp/'s file system: %s",
			 what, n > 120 ? "..." : "", shown,
			 e == -ELOOP ? "deeper than labbox merges (1024 levels)" : strerror(-e));
	return e;
}

/* Untouched: the inode staged at this path, unchanged since the mount. */
static bool untouched(const merge_ctx *c, const char *rel, const struct stat *st)
{
	const struct timespec *t = &c->fs->t_mount;
	if (st->st_ctim.tv_sec > t->tv_sec ||
	    (st->st_ctim.tv_sec == t->tv_sec && st->st_ctim.tv_nsec >= t->tv_nsec))
		return false;
	const diskfs_slot *s = map_by_rel(c->fs->staged, rel);
	return s && s->ino == st->st_ino;
}

static int remove_at(int dfd, const char *name, int depth);

static int remove_tree_at(int dfd, const char *name, int depth)
{
	if (depth > MERGE_MAX_DEPTH)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			r = remove_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

static int remove_at(int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	return remove_tree_at(dfd, name, depth);
}

/* Data regions only: a sparse file stays sparse. */
static int copy_data(int in, int out, off_t size)
{
	off_t off = 0;
	while (off < size) {
		off_t data = lseek(in, off, SEEK_DATA);
		if (data < 0)
			break; /* ENXIO: no data past off */
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			hole = size;
		if (lseek(in, data, SEEK_SET) < 0 || lseek(out, data, SEEK_SET) < 0)
			return -errno;
		/* In the kernel first: no copy through labbox's memory. */
		off_t at = data;
		while (at < hole) {
			ssize_t n = sendfile(out, in, &at, (size_t)(hole - at));
			if (n <= 0)
				break;
		}
		if (at < hole && (lseek(in, at, SEEK_SET) < 0 || lseek(out, at, SEEK_SET) < 0))
			return -errno;
		char buf[1 << 16];
		while (at < hole) {
			size_t want = (size_t)(hole - at < (off_t)sizeof buf ? hole - at : (off_t)sizeof buf);
			ssize_t n = read(in, buf, want);
			if (n < 0)
				return -errno;
			if (n == 0)
				break;
			if (lb_write_all(out, buf, (size_t)n) < 0)
				return -errno;
			at += n;
		}
		off = hole;
	}
	return ftruncate(out, size) < 0 ? -errno : 0;
}

static void copy_attrs(int fd, const struct stat *st)
{
	if (fchown(fd, st->st_uid, st->st_gid) < 0) {
		/* the owner stays root's: the run directory is the user's own anyway */
	}
	fchmod(fd, st->st_mode & 01777);
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	futimens(fd, ts);
}

static int place_file(merge_ctx *c, int sdir, int ddir, const char *name, const char *rel,
		      const struct stat *st)
{
	/* Looked up whatever the link count says now: merged names leave the image. */
	const diskfs_slot *first = map_by_ino(&c->links, st->st_ino);
	if (first) {
		int r = remove_at(ddir, name, 0);
		if (r == 0 && linkat(c->host_root, first->rel, ddir, name, 0) < 0)
			r = -errno;
		if (r == 0)
			unlinkat(sdir, name, 0);
		return r < 0 ? merge_fail(c, r, "the hard link", rel) : 0;
	}
	LB_AUTOCLOSE int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return merge_fail(c, -errno, "the file", rel);
	char tmp[64];
	snprintf(tmp, sizeof tmp, ".labbox-merge-%ld", (long)getpid());
	unlinkat(ddir, tmp, 0);
	LB_AUTOCLOSE int out = openat(ddir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				      0600);
	if (out < 0)
		return merge_fail(c, -errno, "the file", rel);
	int r = copy_data(in, out, st->st_size);
	if (r == 0) {
		copy_attrs(out, st);
		struct stat dst;
		if (fstatat(ddir, name, &dst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(dst.st_mode))
			r = remove_tree_at(ddir, name, 0);
		if (r == 0 && renameat(ddir, tmp, ddir, name) < 0)
			r = -errno;
	}
	if (r < 0) {
		unlinkat(ddir, tmp, 0);
		return merge_fail(c, r, "the file", rel);
	}
	if (st->st_nlink > 1 && map_put(&c->links, rel, st->st_ino, true) < 0)
		return merge_fail(c, -ENOMEM, "the file", rel);
	/* Merged: out of the image, whose blocks go back to the host's disk (discard), so
	 * the merge never holds much more than the limit on the host. */
	unlinkat(sdir, name, 0);
	return 0;
}

static int place_symlink(merge_ctx *c, int sdir, int ddir, const char *name, const char *rel,
			 const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(sdir, name, target, sizeof target - 1);
	if (n < 0)
		return merge_fail(c, -errno, "the symbolic link", rel);
	target[n] = '\0';
	char cur[PATH_MAX];
	ssize_t m = readlinkat(ddir, name, cur, sizeof cur - 1);
	if (m == n && memcmp(cur, target, (size_t)n) == 0)
		return 0;
	int r = remove_at(ddir, name, 0);
	if (r == 0 && symlinkat(target, ddir, name) < 0)
		r = -errno;
	if (r < 0)
		return merge_fail(c, r, "the symbolic link", rel);
	if (fchownat(ddir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
		/* as for files: root's is readable by the run directory's owner */
	}
	return 0;
}

static int merge_dir(merge_ctx *c, int sdir, int ddir, const char *prefix, int depth);

static int merge_entry(merge_ctx *c, int sdir, int ddir, const char *name, const char *rel,
		       int depth)
{
	struct stat st, dst;
	/* The run chose how many files there are: past the time labbox has for it, the rest
	 * stays in the image. The clock is read every 64 entries. */
	if (c->until && ++c->n % 64 == 0 && lb_time_monotonic() >= c->until) {
		if (!c->err[0])
			snprintf(c->err, c->errlen, "bringing back exp/ from its file system was "
				 "stopped at the end of the budget and grace, after %lu entries",
				 c->n);
		return -ETIME;
	}
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return merge_fail(c, -errno, "the entry", rel);
	/* The file system's own (lost+found, the reserve), wherever the run moved them. */
	if (st.st_ino == c->fs->lost_found || st.st_ino == c->fs->reserve)
		return 0;
	bool have = fstatat(ddir, name, &dst, AT_SYMLINK_NOFOLLOW) == 0;
	if (S_ISREG(st.st_mode)) {
		/* Untouched: the staged file stays, and with it its identity. */
		if (have && S_ISREG(dst.st_mode) && st.st_size == dst.st_size &&
		    untouched(c, rel, &st))
			return 0;
		return place_file(c, sdir, ddir, name, rel, &st);
	}
	if (S_ISLNK(st.st_mode))
		return place_symlink(c, sdir, ddir, name, rel, &st);
	if (!S_ISDIR(st.st_mode)) {
		/* a FIFO or a socket: nothing to keep once the run is over */
		return have ? remove_at(ddir, name, 0) : 0;
	}
	if (depth >= c->max_depth)
		return merge_fail(c, -ELOOP, "the directory", rel);
	if (have && !S_ISDIR(dst.st_mode)) {
		if (unlinkat(ddir, name, 0) < 0)
			return merge_fail(c, -errno, "the directory", rel);
		have = false;
	}
	if (!have && mkdirat(ddir, name, 0700) < 0)
		return merge_fail(c, -errno, "the directory", rel);
	LB_AUTOCLOSE int s2 = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s2 < 0 && errno == EACCES) {
		/* closed to its owner by the run: root reads it all the same */
	}
	LB_AUTOCLOSE int d2 = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s2 < 0 || d2 < 0)
		return merge_fail(c, -errno, "the directory", rel);
	int r = merge_dir(c, s2, d2, rel, depth + 1);
	copy_attrs(d2, &st);
	return r;
}

static int merge_dir(merge_ctx *c, int sdir, int ddir, const char *prefix, int depth)
{
	/* What the run removed goes from the staged tree first: merged files leave the image
	 * as they are copied, so afterwards they would look removed too. */
	DIR *d = lb_dir_stream(ddir);
	if (!d)
		return merge_fail(c, -errno, "the directory", prefix[0] ? prefix : ".");
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(sdir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		int rr = remove_at(ddir, e->d_name, 0);
		if (rr < 0)
			r = merge_fail(c, rr, "the removed entry", e->d_name);
	}
	closedir(d);
	if (r < 0)
		return r;
	lseek(sdir, 0, SEEK_SET);
	d = lb_dir_stream(sdir);
	if (!d)
		return merge_fail(c, -errno, "the directory", prefix[0] ? prefix : ".");
	/* On the heap: a frame a level, and the tree may be a thousand levels deep. */
	LB_AUTOFREE char *rel = malloc(PATH_MAX);
	if (!rel) {
		closedir(d);
		return merge_fail(c, -ENOMEM, "the directory", prefix);
	}
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(rel, PATH_MAX, "%s%s%s", prefix, prefix[0] ? "/" : "", e->d_name) >=
		    PATH_MAX) {
			r = merge_fail(c, -ENAMETOOLONG, "the entry", prefix);
			break;
		}
		r = merge_entry(c, sdir, ddir, e->d_name, rel, depth);
	}
	closedir(d);
	return r;
}

/* Everything is in the staged tree now: removed from the image, what the run wrote and
 * the kernel has not written out yet is dropped instead of being written to the image at
 * unmount (tens of milliseconds a 64 MiB), and then freed on the host's disk again. */
static void drop_merged(int sroot)
{
	lseek(sroot, 0, SEEK_SET); /* the merge's walk shared this offset */
	DIR *d = lb_dir_stream(sroot);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "lost+found"))
			remove_at(sroot, e->d_name, 0);
	closedir(d);
}

int lb_diskfs_finish(lb_diskfs *fs, double until, char *err, size_t errlen)
{
	if (!fs->mounted)
		return 0;
	err[0] = '\0';
	/* Two descriptors a level: the run may have made a tree as deep as its inodes allow. */
	struct rlimit nofile, raised;
	getrlimit(RLIMIT_NOFILE, &nofile);
	raised = nofile;
	raised.rlim_cur = nofile.rlim_max;
	setrlimit(RLIMIT_NOFILE, &raised);
	/* SIGINT and SIGTERM wait until the merge is done: a labbox killed in the middle would
	 * leave exp/ half merged and still mounted (the caller's record says interrupted). */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	/* Freed blocks go back to the host's disk from here on (the run's high-water mark has
	 * been read). */
	mount(NULL, fs->mountpoint, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOATIME,
	      "discard");
	rlim_t fds = raised.rlim_cur == RLIM_INFINITY ? 65536 : raised.rlim_cur;
	merge_ctx c = {.fs = fs, .host_root = fs->host_fd, .err = err, .errlen = errlen,
		       .until = until, .max_depth = fds > 256 ? (int)((fds - 128) / 2) : 64};
	/* The merge recurses: its stack, not the descriptors, is the bound that matters. A
	 * deeper tree is not merged; the image keeps it, and the error says where. */
	if (c.max_depth > MERGE_MAX_DEPTH)
		c.max_depth = MERGE_MAX_DEPTH;
	int r;
	LB_AUTOCLOSE int sroot = open(fs->mountpoint, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sroot < 0)
		r = merge_fail(&c, -errno, "the directory", ".");
	else
		r = merge_dir(&c, sroot, fs->host_fd, "", 0);
	struct stat st;
	if (r == 0 && sroot >= 0 && fstat(sroot, &st) == 0)
		copy_attrs(fs->host_fd, &st);
	if (r == 0 && sroot >= 0)
		drop_merged(sroot);
	setrlimit(RLIMIT_NOFILE, &nofile);
	for (size_t i = 0; i < c.links.cap; i++)
		free(c.links.v[i].rel);
	free(c.links.v);
	map_free(fs->staged);
	fs->staged = NULL;
	/* A signal that came during the merge is the caller's to see (sigpending). */
	fs->signal = 0;
	sigset_t pend;
	if (sigpending(&pend) == 0)
		for (int sg = 1; sg < 32 && !fs->signal; sg++)
			if (sigismember(&block, sg) && sigismember(&pend, sg)) {
				siginfo_t si;
				struct timespec zero = {0, 0};
				sigset_t one;
				sigemptyset(&one);
				sigaddset(&one, sg);
				if (sigtimedwait(&one, &si, &zero) == sg) {
					fs->signal = sg;
					lb_interrupt_note(sg); /* taken from labbox's handler */
				}
			}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (sroot >= 0) {
		close(sroot);
		sroot = -1;
	}
	if (umount2(fs->mountpoint, 0) < 0 && umount2(fs->mountpoint, MNT_DETACH) < 0) {
		if (r == 0) {
			r = -errno;
			snprintf(err, errlen, "cannot unmount exp/'s file system: %s", strerror(-r));
		}
		return r;
	}
	fs->mounted = false;
	if (r < 0) {
		/* What could not be merged is still in the image: kept, and named. */
		size_t n = strlen(err);
		snprintf(err + n, errlen - n, "; what the run left that is not in exp/ is kept in %s",
			 fs->image);
		close(fs->host_fd);
		fs->host_fd = -1;
		return r;
	}
	unlink(fs->image);
	close(fs->host_fd);
	fs->host_fd = -1;
	if (fs->lock_fd >= 0)
		close(fs->lock_fd);
	fs->lock_fd = -1;
	return 0;
}

void lb_diskfs_abandon(lb_diskfs *fs)
{
	map_free(fs->staged);
	fs->staged = NULL;
	if (fs->mounted && umount2(fs->mountpoint, 0) < 0)
		umount2(fs->mountpoint, MNT_DETACH);
	fs->mounted = false;
	if (fs->host_fd >= 0)
		close(fs->host_fd);
	fs->host_fd = -1;
	if (fs->image[0])
		unlink(fs->image);
	if (fs->lock_fd >= 0)
		close(fs->lock_fd);
	fs->lock_fd = -1;
}

/* The mount at mp is a loop device whose backing file is mp.img: labbox's, not one a person
 * made there. */
static bool is_our_image(const char *mp, unsigned major, unsigned minor)
{
	if (major != 7) /* loop */
		return false;
	char dev[32], img[PATH_MAX + 8];
	snprintf(dev, sizeof dev, "/dev/loop%u", minor);
	snprintf(img, sizeof img, "%s.img", mp);
	LB_AUTOCLOSE int fd = open(dev, O_RDONLY | O_CLOEXEC);
	struct loop_info64 info;
	struct stat st;
	if (fd < 0 || ioctl(fd, LOOP_GET_STATUS64, &info) < 0 || lstat(img, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return false;
	return info.lo_inode == st.st_ino && info.lo_device == st.st_dev;
}

static bool reap_one(const char *mp)
{
	lb_diskfs fs;
	memset(&fs, 0, sizeof fs);
	fs.host_fd = fs.lock_fd = -1;
	if (snprintf(fs.mountpoint, sizeof fs.mountpoint, "%s", mp) >= (int)sizeof fs.mountpoint ||
	    snprintf(fs.image, sizeof fs.image, "%s.img", mp) >= (int)sizeof fs.image)
		return false;
	LB_AUTOCLOSE int lock = open(fs.image, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
		return false; /* not one of labbox's, or its labbox is alive */
	/* The image's root stays reachable through this descriptor once the mount is
	 * detached, and the path then leads to the staged tree underneath. */
	LB_AUTOCLOSE int sroot = open(mp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sroot < 0 || umount2(mp, MNT_DETACH) < 0)
		return false;
	fs.host_fd = open(mp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fs.host_fd < 0)
		return false;
	char err[PATH_MAX + 200] = "";
	merge_ctx c = {.fs = &fs, .host_root = fs.host_fd, .err = err, .errlen = sizeof err,
		       .max_depth = MERGE_MAX_DEPTH}; /* no staged map: every file from the image */
	struct stat lst;
	if (fstatat(sroot, "lost+found", &lst, AT_SYMLINK_NOFOLLOW) == 0)
		fs.lost_found = lst.st_ino;
	int r = merge_dir(&c, sroot, fs.host_fd, "", 0);
	for (size_t i = 0; i < c.links.cap; i++)
		free(c.links.v[i].rel);
	free(c.links.v);
	close(fs.host_fd);
	if (r == 0)
		unlink(fs.image);
	return r == 0;
}

int lb_diskfs_reap(const char *runs_dir)
{
	char root[PATH_MAX];
	if (geteuid() != 0 || !realpath(runs_dir, root))
		return 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	size_t n = strlen(root);
	char *line = NULL, **found = NULL;
	size_t cap = 0, nfound = 0;
	while (getline(&line, &cap, f) > 0) {
		lb_mountinfo_entry e;
		if (lb_mountinfo_parse(line, &e) < 0 || strcmp(e.fstype, "ext4") != 0)
			continue;
		const char *mp = e.mountpoint;
		unsigned major = e.major, minor = e.minor;
		size_t m = strlen(mp);
		/* RUNS/ID/exp, one level below the runs directory, and nothing else */
		if (strncmp(mp, root, n) != 0 || mp[n] != '/' || m < n + 6 ||
		    strcmp(mp + m - 4, "/exp") != 0 || memchr(mp + n + 1, '/', m - n - 5) ||
		    !is_our_image(mp, major, minor))
			continue;
		char **nf = realloc(found, (nfound + 1) * sizeof *nf);
		if (!nf)
			break;
		found = nf;
		if ((found[nfound] = strdup(mp)))
			nfound++;
	}
	free(line);
	fclose(f);
	int reaped = 0;
	for (size_t i = 0; i < nfound; i++) {
		reaped += reap_one(found[i]);
		free(found[i]);
	}
	free(found);
	return reaped;
}
