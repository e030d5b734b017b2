/* sandbox run: supervisor, init and payload.
 *
 *   supervisor (labbox)          init (pid 1 of the new namespaces)      payload
 *   clone(NEWUSER|NEWPID|...) -> wait for the id maps
 *   write uid_map/gid_map        setup_root, setup_net, setup_uts
 *   compile seccomp, cgroup      wait until init is in its cgroup
 *   relay output, watch budget   fork ---------------------------------> setup_fds, setup_session,
 *   SIGTERM, grace, SIGKILL      reap everything; payload gone: kill    setup_rlimits, chdir,
 *                                the rest; report the payload status    setup_credentials, exec
 *
 * Setup failures travel back on the error channel (a CLOEXEC pipe: a successful exec closes it
 * empty). Init dies with the supervisor through PR_SET_PDEATHSIG, and the kernel then kills
 * every process of the pid namespace, so nothing outlives labbox, even after SIGKILL. */
#include "cgroup.h"
#include "gpumem.h"
#include "seccomp.h"
#include "diskfs.h"
#include "sandbox_internal.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define NEWROOT "/tmp/.labbox-root"

typedef struct chan_msg {
	int err;
	char step[32];
	char msg[440];
} chan_msg;

/* What init reports as it ends: the payload's wait status, and the exec guard's account. */
typedef struct status_msg {
	int payload_status;
	bool guarded; /* the exec guard traced the tree */
	unsigned exec_refused;
	lb_exec_refusal refusals[LB_SB_MAX_EXEC_REFUSALS];
	unsigned nfull;
	lb_full_tmpfs full[LB_SB_MAX_FULL];
} status_msg;

typedef struct init_ctx {
	const lb_sandbox *sb;
	int sync_rd;
	int chan_wr;
	int status_wr;
	int out_wr;
	int errout_wr;
	int in_rd; /* stdin pipe, or -1 for /dev/null */
	int *bind_fds; /* one per sb->binds, plus the workdir at the end */
	int bpf_fd;   /* the compiled seccomp filter, written by the supervisor during setup */
	int bpf_ready; /* one byte from the supervisor: 'y' when bpf_fd holds the filter */
	uint64_t rlimit_data; /* accepted fallbacks for limits no cgroup could enforce */
	long rlimit_nproc;
	int *dev_fds; /* the standard nodes, then sb->devices */
	int *cgroup_fds; /* v1 tasks files init moves itself into; NULL when the supervisor moves it */
	long ucount_cap[4]; /* caps of ucount_names in the sandbox's user namespace; 0: leave */
	bool disk_fs;       /* exp/ is a file system of the limit's size: no file size limit */
	bool landlock;      /* the kernel has Landlock: no writes under /proc or /sys */
	int trace_go;       /* the payload waits for a byte here first: init traces it (exec guard) */
	lb_rootfs *rootfs;  /* the new root's entries (rootfs.c), planned by the supervisor */
} init_ctx;

/* Per-user kernel counters that the sandbox's user namespace is charged to the host user's:
 * an experiment that used them up would starve every other process of that user. */
static const char *const ucount_names[4] = {"max_inotify_instances", "max_inotify_watches",
					    "max_fanotify_groups", "max_fanotify_marks"};

/* A quarter of what this user may have, read before the sandbox's namespace exists. */
static void plan_ucounts(long caps[4])
{
	for (size_t i = 0; i < 4; i++) {
		char path[96], buf[32] = "";
		snprintf(path, sizeof path, "/proc/sys/user/%s", ucount_names[i]);
		caps[i] = 0;
		LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (n <= 0)
			continue;
		long v = strtol(buf, NULL, 10);
		caps[i] = v > 4 ? v / 4 : 1;
	}
}


#define NSTD_DEV 5
static const char *const dev_nodes[NSTD_DEV] = {"null", "zero", "full", "random", "urandom"};

static size_t dev_count(const lb_sandbox *sb)
{
	return NSTD_DEV + sb->ndevices;
}

/* Name under /dev of device i: "null", "nvidia0", "nvidia-caps/nvidia-cap1". */
static const char *dev_name(const lb_sandbox *sb, size_t i)
{
	return i < NSTD_DEV ? dev_nodes[i] : sb->devices[i - NSTD_DEV];
}

/* Report a setup failure to the supervisor and end this process. */
__attribute__((noreturn, format(printf, 4, 5))) static void
chan_fail(int fd, const char *step, int err, const char *fmt, ...)
{
	chan_msg m;
	memset(&m, 0, sizeof m);
	m.err = err;
	snprintf(m.step, sizeof m.step, "%s", step);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(m.msg, sizeof m.msg, fmt, ap);
	va_end(ap);
	if (err && n >= 0 && (size_t)n < sizeof m.msg)
		snprintf(m.msg + n, sizeof m.msg - (size_t)n, ": %s", strerror(err));
	/* One write below PIPE_BUF is atomic, so the supervisor sees all of it or nothing. */
	ssize_t w = write(fd, &m, sizeof m);
	(void)w;
	_exit(125);
}

/* In init, which holds every capability in the sandbox's own user namespace: its counters
 * get their caps. A kernel without one of them has nothing to cap. */
static void setup_ucounts(init_ctx *c)
{
	for (size_t i = 0; i < 4; i++) {
		if (!c->ucount_cap[i])
			continue;
		char path[96], val[32];
		snprintf(path, sizeof path, "/proc/sys/user/%s", ucount_names[i]);
		LB_AUTOCLOSE int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue;
		int n = snprintf(val, sizeof val, "%ld\n", c->ucount_cap[i]);
		if (fd < 0 || write(fd, val, (size_t)n) != n)
			chan_fail(c->chan_wr, "setup_ucounts", errno, "cap %s", ucount_names[i]);
	}
}

static void nr_path(char *out, size_t n, const char *path)
{
	snprintf(out, n, NEWROOT "%s", path);
}

static int attach_clone(int srcfd, const char *target, bool writable, bool recursive, bool dev)
{
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH;
	if (recursive)
		flags |= AT_RECURSIVE;
	LB_AUTOCLOSE int tree = open_tree(srcfd, "", flags);
	if (tree < 0)
		return -errno;
	struct mount_attr attr = {0};
	attr.attr_set = MOUNT_ATTR_NOSUID | (dev ? 0 : MOUNT_ATTR_NODEV);
	if (writable)
		attr.attr_clr = MOUNT_ATTR_RDONLY;
	else
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
			  sizeof attr) < 0)
		return -errno;
	if (move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* A mount point for a bind: the path exists in the read-only root, or is created inside one
 * of the tmpfs labbox put over a hidden or private directory. */
static int make_mount_point(const char *target, bool is_dir)
{
	struct stat st;
	if (lstat(target, &st) == 0)
		return 0;
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", target);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		int r = lb_mkdir_p(parent, 0755);
		if (r < 0)
			return r;
	}
	if (is_dir)
		return mkdir(target, 0755) < 0 && errno != EEXIST ? -errno : 0;
	int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Under the exec guard, what the payload can write maps no code: no program runs from there
 * (the guard's), and no shared object is loaded from there either, whatever leads a library
 * to one (OPENSSL_CONF, a GIO module directory, a plugin path): native code of the
 * experiment's is refused by the kernel as the gate refuses it in Python. */
static unsigned long writable_noexec(const init_ctx *c)
{
	return c->sb->exec_guard != LB_EXEC_ANY || c->sb->noexec ? MS_NOEXEC : 0;
}

/* Device nodes are bound from the original /dev: the cloned root is nodev. */
static void setup_dev(init_ctx *c)
{
	char p[4096];
	nr_path(p, sizeof p, "/dev");
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
		chan_fail(c->chan_wr, "setup_dev", errno, "mount tmpfs on /dev");
	for (size_t i = 0; i < dev_count(c->sb); i++) {
		const char *name = dev_name(c->sb, i);
		nr_path(p, sizeof p, "/dev/");
		strncat(p, name, sizeof p - strlen(p) - 1);
		int r = make_mount_point(p, false);
		if (r < 0)
			chan_fail(c->chan_wr, "setup_dev", -r, "create /dev/%s", name);
		r = attach_clone(c->dev_fds[i], p, true, false, true);
		if (r < 0)
			chan_fail(c->chan_wr, "setup_dev", -r, "bind /dev/%s", name);
	}
	static const char *const links[][2] = {{"/proc/self/fd", "fd"},
					       {"/proc/self/fd/0", "stdin"},
					       {"/proc/self/fd/1", "stdout"},
					       {"/proc/self/fd/2", "stderr"}};
	for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
		nr_path(p, sizeof p, "/dev/");
		strncat(p, links[i][1], sizeof p - strlen(p) - 1);
		if (symlink(links[i][0], p) < 0)
			chan_fail(c->chan_wr, "setup_dev", errno, "symlink /dev/%s", links[i][1]);
	}
	nr_path(p, sizeof p, "/dev/shm");
	if (mkdir(p, 0755) < 0)
		chan_fail(c->chan_wr, "setup_dev", errno, "mkdir /dev/shm");
	char opts[64];
	uint64_t shm = c->sb->shm_size ? c->sb->shm_size : c->sb->tmpfs_size;
	snprintf(opts, sizeof opts, "mode=1777,size=%llu", (unsigned long long)shm);
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | writable_noexec(c), opts) < 0)
		chan_fail(c->chan_wr, "setup_dev", errno, "mount tmpfs on /dev/shm");
}

/* Directories of the new root replaced by a mirror (mirror_dir), sealed read-only once the
 * binds are in. init is a process of its own, so this state is its alone. */
#define MAX_MIRRORS 32
static char mirrored[MAX_MIRRORS][4096];
static int mirror_fds[MAX_MIRRORS]; /* the tmpfs itself: a bind may later cover its path */
static size_t nmirrored;

/* Whether a mount point at dst lands in a file system the sandbox makes itself (a hidden or
 * private directory's cover, /dev, /proc, one of the first ntmpfs --tmpfs mounts, which are
 * mounted before it), which takes it without a mirror. */
static bool in_sandbox_fs(const lb_sandbox *sb, const char *dst, size_t ntmpfs)
{
	if (lb_sandbox_path_hidden(sb, dst) || lb_path_under(dst, "/dev") || lb_path_under(dst, "/proc"))
		return true;
	for (size_t i = 0; i < ntmpfs; i++)
		if (lb_path_under(dst, sb->tmpfs[i].path))
			return true;
	return false;
}

/* Replace directory nr of the new root (shown: its path inside) by a tmpfs holding the same
 * entries: each directory and file bound from the original with its submounts (clones keep
 * the read-only attributes of the root), each symlink copied. The host's directory is never
 * written to; the tmpfs only gains the mount points the sandbox needs. */
static void mirror_dir(init_ctx *c, const char *nr, const char *shown)
{
	if (nmirrored == MAX_MIRRORS)
		chan_fail(c->chan_wr, "setup_binds", 0,
			  "mount point for %s: more than %d directories would need one", shown,
			  MAX_MIRRORS);
	LB_AUTOCLOSE int old = open(nr, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (old < 0 || fstat(old, &st) < 0)
		chan_fail(c->chan_wr, "setup_binds", errno, "mount point under %s: open", shown);
	char opts[64];
	snprintf(opts, sizeof opts, "mode=%o,size=1m", (unsigned)(st.st_mode & 07777));
	if (mount("tmpfs", nr, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		chan_fail(c->chan_wr, "setup_binds", errno, "mount point under %s: tmpfs", shown);
	/* old still names the covered directory: its entries are read and bound from it. */
	int nw = open(nr, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd = fcntl(old, F_DUPFD_CLOEXEC, 0);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (nw < 0 || !d)
		chan_fail(c->chan_wr, "setup_binds", errno, "mount point under %s: read", shown);
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		struct stat es;
		if (fstatat(old, name, &es, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISLNK(es.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(old, name, target, sizeof target - 1);
			if (n < 0)
				chan_fail(c->chan_wr, "setup_binds", errno, "mirror %s/%s", shown, name);
			target[n] = '\0';
			if (symlinkat(target, nw, name) < 0)
				chan_fail(c->chan_wr, "setup_binds", errno, "mirror %s/%s", shown, name);
			continue;
		}
		int r = S_ISDIR(es.st_mode) ? mkdirat(nw, name, 0755) : 0;
		if (!S_ISDIR(es.st_mode)) {
			int fd = openat(nw, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			r = fd;
			if (fd >= 0)
				close(fd);
		}
		if (r < 0)
			chan_fail(c->chan_wr, "setup_binds", errno, "mirror %s/%s", shown, name);
		LB_AUTOCLOSE int tree = open_tree(old, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
								 AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
		if (tree < 0 || move_mount(tree, "", nw, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			chan_fail(c->chan_wr, "setup_binds", errno, "mirror %s/%s", shown, name);
	}
	closedir(d);
	mirror_fds[nmirrored] = nw; /* kept open until the seal */
	snprintf(mirrored[nmirrored++], sizeof mirrored[0], "%s", nr);
}

/* A mount point for dst that the host lacks, made inside the sandbox: docker creates missing
 * mount points too, but in the container's own root; here the root holds the host's read-only
 * directories, so the nearest existing one above dst is mirrored onto a tmpfs first. */
static void ensure_mount_point(init_ctx *c, const char *dst, bool is_dir, size_t ntmpfs)
{
	if (in_sandbox_fs(c->sb, dst, ntmpfs))
		return;
	char p[4096];
	nr_path(p, sizeof p, dst);
	struct stat st;
	if (lstat(p, &st) == 0)
		return;
	if (errno != ENOENT)
		chan_fail(c->chan_wr, "setup_binds", errno, "mount point for %s", dst);
	char anc[4000], nra[4096];
	snprintf(anc, sizeof anc, "%s", dst);
	for (;;) {
		char *slash = strrchr(anc, '/');
		if (!slash)
			chan_fail(c->chan_wr, "setup_binds", EINVAL, "mount point for %s", dst);
		slash[slash == anc ? 1 : 0] = '\0';
		nr_path(nra, sizeof nra, anc);
		if (lstat(nra, &st) == 0)
			break;
		if (errno != ENOENT)
			chan_fail(c->chan_wr, "setup_binds", errno, "mount point for %s", dst);
	}
	if (!S_ISDIR(st.st_mode))
		chan_fail(c->chan_wr, "setup_binds", ENOTDIR, "mount point for %s: %s", dst, anc);
	/* The root's own tmpfs (/, and a directory built entry by entry) is writable until
	 * sealed: no mirror needed there. */
	struct stat rs;
	bool done = stat(NEWROOT, &rs) == 0 && rs.st_dev == st.st_dev;
	for (size_t i = 0; i < nmirrored && !done; i++)
		done = strcmp(mirrored[i], nra) == 0;
	if (!done)
		mirror_dir(c, nra, anc);
	int r = make_mount_point(p, is_dir);
	if (r < 0)
		chan_fail(c->chan_wr, "setup_binds", -r, "mount point for %s", dst);
}

/* Mount points first, while the new root is still the plain clone of the host's: a mirror
 * made later would cover the hidden and private directories' tmpfs. */
static void prepare_mount_points(init_ctx *c)
{
	const lb_sandbox *sb = c->sb;
	for (size_t i = 0; i < sb->ntmpfs; i++)
		ensure_mount_point(c, sb->tmpfs[i].path, true, i);
	for (size_t i = 0; i < sb->nbinds; i++) {
		struct stat st;
		if (fstat(c->bind_fds[i], &st) < 0)
			chan_fail(c->chan_wr, "setup_binds", errno, "stat %s", sb->binds[i].src);
		ensure_mount_point(c, sb->binds[i].dst, S_ISDIR(st.st_mode), sb->ntmpfs);
	}
	for (size_t i = 0; i < sb->nfiles; i++)
		ensure_mount_point(c, sb->files[i].dir, true, sb->ntmpfs);
}

/* One of labbox's files into the tmpfs at root (nr path), with the parts of its name below:
 * modes set outright, whatever the umask labbox was started with. */
static void place_file(init_ctx *c, const char *root, const lb_memfile *f)
{
	char p[4096];
	int n = snprintf(p, sizeof p, "%s/%s", root, f->name);
	if (n < 0 || (size_t)n >= sizeof p)
		chan_fail(c->chan_wr, "setup_files", ENAMETOOLONG, "%s/%s", f->dir, f->name);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if ((mkdir(p, 0755) < 0 && errno != EEXIST) || chmod(p, 0755) < 0)
			chan_fail(c->chan_wr, "setup_files", errno, "mkdir %s/%s", f->dir, f->name);
		*s = '/';
	}
	LB_AUTOCLOSE int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int r = fd < 0 ? -errno : lb_write_all(fd, f->data, f->len);
	if (r == 0 && fchmod(fd, 0644) < 0)
		r = -errno;
	if (r < 0)
		chan_fail(c->chan_wr, "setup_files", -r, "write %s/%s", f->dir, f->name);
}

/* labbox's own files (lb_sandbox_add_file): a tmpfs a directory, just large enough, sealed
 * read-only once written. They are written here, in memory, so that a run costs the host's
 * disk no file made and removed for them. */
static void place_files(init_ctx *c)
{
	const lb_sandbox *sb = c->sb;
	char p[4096], opts[64];
	for (size_t i = 0; i < sb->nfiles; i++) {
		const char *dir = sb->files[i].dir;
		bool first = true;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(sb->files[j].dir, dir) != 0;
		if (!first)
			continue;
		unsigned long long size = 64 * 1024; /* the directories, and slack */
		for (size_t j = i; j < sb->nfiles; j++)
			if (strcmp(sb->files[j].dir, dir) == 0)
				size += (sb->files[j].len + 4095) / 4096 * 4096;
		nr_path(p, sizeof p, dir);
		int r = make_mount_point(p, true);
		if (r < 0)
			chan_fail(c->chan_wr, "setup_files", -r, "mount point for %s", dir);
		snprintf(opts, sizeof opts, "mode=0755,size=%llu", size);
		if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
			chan_fail(c->chan_wr, "setup_files", errno, "mount a tmpfs at %s", dir);
		for (size_t j = i; j < sb->nfiles; j++)
			if (strcmp(sb->files[j].dir, dir) == 0)
				place_file(c, p, &sb->files[j]);
		struct mount_attr ro = {0};
		ro.attr_set = MOUNT_ATTR_RDONLY;
		if (mount_setattr(AT_FDCWD, p, 0, &ro, sizeof ro) < 0)
			chan_fail(c->chan_wr, "setup_files", errno, "seal %s", dir);
	}
}

static void mount_tmpfs_dirs(init_ctx *c)
{
	char p[4096], opts[96];
	for (size_t i = 0; i < c->sb->ntmpfs; i++) {
		const lb_tmpfs *t = &c->sb->tmpfs[i];
		nr_path(p, sizeof p, t->path);
		int r = make_mount_point(p, true);
		if (r < 0)
			chan_fail(c->chan_wr, "setup_tmpfs", -r, "mount point for --tmpfs %s", t->path);
		snprintf(opts, sizeof opts, "mode=%o,size=%llu", t->mode, (unsigned long long)t->size);
		if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | writable_noexec(c), opts) < 0)
			chan_fail(c->chan_wr, "setup_tmpfs", errno, "mount --tmpfs %s", t->path);
	}
}

static void bind_one(init_ctx *c, int srcfd, const char *dst, bool writable)
{
	char p[4096];
	/* Joined to the new root by spelling: a ".." would make its mount point on the host. */
	if (!lb_path_plain(dst))
		chan_fail(c->chan_wr, "setup_binds", EINVAL, "mount point %s has a . or .. part", dst);
	nr_path(p, sizeof p, dst);
	struct stat st;
	if (fstat(srcfd, &st) < 0)
		chan_fail(c->chan_wr, "setup_binds", errno, "stat %s", dst);
	int r = make_mount_point(p, S_ISDIR(st.st_mode));
	if (r < 0)
		chan_fail(c->chan_wr, "setup_binds", -r, "mount point for %s", dst);
	r = attach_clone(srcfd, p, writable, true, false);
	if (r < 0)
		chan_fail(c->chan_wr, "setup_binds", -r, "bind %s%s", dst,
			  writable ? " (writable)" : "");
}

/* The host's /sys names the host's network interfaces and their MAC addresses, and its
 * cgroup tree names every other service and container. A sysfs mounted in the sandbox's own
 * network namespace shows only its loopback, and none of the cgroup mounts that sit on the
 * host's /sys. With the host's network there is no namespace of ours to mount it for. */
static void setup_sys(init_ctx *c)
{
	if (c->sb->net == LB_NET_HOST)
		return;
	char p[4096];
	nr_path(p, sizeof p, "/sys");
	if (mount("sysfs", p, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
		chan_fail(c->chan_wr, "setup_sys", errno, "mount a sysfs of the sandbox's network");
}

/* What the kernel shows of the host that no experiment needs, masked as container engines
 * mask it: the kernel's memory image and keys, timer and scheduler internals (which name other
 * processes), firmware tables, ACPI and SCSI details. Files read as /dev/null, directories as
 * an empty tmpfs; what this kernel lacks is skipped. */
static const char *const kernel_files[] = {"/proc/kcore", "/proc/keys", "/proc/key-users",
					   "/proc/timer_list", "/proc/sched_debug",
					   "/proc/latency_stats", "/proc/sysrq-trigger"};
static const char *const kernel_dirs[] = {"/proc/acpi", "/proc/scsi", "/sys/firmware",
					  /* block devices name their backing files: other runs'
					   * exp.img among them (diskfs) */
					  "/sys/block", "/sys/devices/virtual/block", "/sys/fs/ext4",
					  "/sys/dev/block"};

/* Whether a mount at p failed with err because what was there is gone since labbox looked
 * (another project's runs directory or index, deleted by its owner or a test's clean-up
 * meanwhile): then nothing is left there to hide. */
static bool removed_since(int err, const char *p)
{
	struct stat st;
	return err == ENOENT && lstat(p, &st) < 0 && errno == ENOENT;
}

static void mask_file(init_ctx *c, const char *null, const char *path)
{
	char p[4096];
	nr_path(p, sizeof p, path);
	struct stat st;
	if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode))
		return; /* absent, or under a hidden directory already */
	if (mount(null, p, NULL, MS_BIND, NULL) < 0) {
		int e = errno;
		if (!removed_since(e, p))
			chan_fail(c->chan_wr, "setup_root", e, "mask %s", path);
	} else if (mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL) < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "mask %s", path);
}

static void setup_masks(init_ctx *c)
{
	char p[4096], null[4096];
	nr_path(null, sizeof null, "/dev/null");
	for (size_t i = 0; i < sizeof kernel_files / sizeof *kernel_files; i++)
		mask_file(c, null, kernel_files[i]);
	for (size_t i = 0; i < sizeof kernel_dirs / sizeof *kernel_dirs; i++) {
		nr_path(p, sizeof p, kernel_dirs[i]);
		struct stat st;
		if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		/* The host's /sys is shown with --network host; its firmware stays covered. */
		if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
			  "size=4k,mode=0555") < 0)
			chan_fail(c->chan_wr, "setup_root", errno, "mask %s", kernel_dirs[i]);
	}
	/* Files labbox hides (the run index beside the runs directory). */
	for (size_t i = 0; i < c->sb->nmasked; i++)
		mask_file(c, null, c->sb->masked[i]);
}

/* What lb_sandbox_mask hid (the runs directory, the run index, --hide) stays hidden where a
 * bind shows it again from above: `-v $PWD:/work` with the runs in $PWD/.labbox, and exec's
 * work directory, bound at its own path after the masks. */
/* In a writable bind, each directory on the way down to a hidden record (from the bind's
 * root, exclusive, to the record, exclusive) is made a mount point of itself: the kernel
 * refuses to rename a mount point, so the run cannot move another project's .labbox (and the
 * covers mounted on its records with it) to where the next run, which knows the records by
 * their path, would not look. The binds are recursive: what is mounted below stays. */
static void pin_way(init_ctx *c, const char *to, const char *rest)
{
	char dst[3072], p[4096];
	for (const char *s = strchr(rest + (rest[0] == '/'), '/'); s; s = strchr(s + 1, '/')) {
		int k = snprintf(dst, sizeof dst, "%s%.*s", to, (int)(s - rest), rest);
		if (k < 0 || k >= (int)sizeof dst)
			return;
		nr_path(p, sizeof p, dst);
		struct stat st;
		if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			return; /* gone, or a link: nothing further down is reached through it */
		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 && !removed_since(errno, p))
			chan_fail(c->chan_wr, "setup_binds", errno, "pin %s", dst);
	}
}

static void mask_in_binds(init_ctx *c)
{
	const lb_sandbox *sb = c->sb;
	char null[4096], p[4096], dst[3072];
	nr_path(null, sizeof null, "/dev/null");
	for (size_t i = 0; i < sb->nbinds + (sb->workdir ? 1 : 0); i++) {
		bool wd = i == sb->nbinds;
		const char *src = wd ? sb->workdir : sb->binds[i].src;
		const char *to = wd ? sb->workdir : sb->binds[i].dst;
		bool writable = wd || sb->binds[i].writable;
		size_t n = strlen(src);
		for (size_t k = 0; k < sb->nmasked_dirs + sb->nmasked; k++) {
			bool dir = k < sb->nmasked_dirs;
			const char *m = dir ? sb->masked_dirs[k] : sb->masked[k - sb->nmasked_dirs];
			bool under = strcmp(src, "/") == 0 ||
				     (strncmp(m, src, n) == 0 && (m[n] == '/' || m[n] == '\0'));
			if (!under)
				continue;
			const char *rest = strcmp(src, "/") == 0 ? m : m + n;
			if (snprintf(dst, sizeof dst, "%s%s", to, rest) >= (int)sizeof dst)
				chan_fail(c->chan_wr, "setup_binds", ENAMETOOLONG, "hide %s", m);
			if (writable && rest[0])
				pin_way(c, strcmp(to, "/") == 0 ? "" : to, rest);
			if (!dir) {
				mask_file(c, null, dst);
				continue;
			}
			nr_path(p, sizeof p, dst);
			struct stat st;
			if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
				continue;
			if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=0755") < 0) {
				int e = errno;
				if (!removed_since(e, p))
					chan_fail(c->chan_wr, "setup_binds", e, "hide %s in %s", m, dst);
			}
		}
	}
}

/* lb_sandbox_protect's directories, after the work directory is bound: each directory on the
 * way down from it bound on itself (a mount point cannot be renamed or removed), the last one
 * read-only. Nothing of the experiment runs yet, so the way is as the supervisor saw it. */
static void protect_dirs(init_ctx *c)
{
	const lb_sandbox *sb = c->sb;
	char p[4096];
	for (size_t i = 0; i < sb->nprotect; i++) {
		const char *d = sb->protect[i];
		size_t w = strlen(sb->workdir);
		for (const char *s = d + w + 1;; s++) {
			const char *slash = strchr(s, '/');
			char part[3072];
			snprintf(part, sizeof part, "%.*s", (int)((slash ? slash : s + strlen(s)) - d), d);
			nr_path(p, sizeof p, part);
			struct stat st;
			if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
				chan_fail(c->chan_wr, "setup_root", lstat(p, &st) < 0 ? errno : ENOTDIR,
					  "protect %s", part);
			if (mount(p, p, NULL, MS_BIND, NULL) < 0)
				chan_fail(c->chan_wr, "setup_root", errno, "pin %s", part);
			if (!slash) {
				/* Read-only, and so its programs and shared objects may run again
				 * (the work directory's noexec, inherited, is cleared): a venv staged
				 * with the experiment. The other flags stay as they are. */
				struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY,
							.attr_clr = MOUNT_ATTR_NOEXEC};
				if (mount_setattr(AT_FDCWD, p, 0, &ro, sizeof ro) < 0)
					chan_fail(c->chan_wr, "setup_root", errno, "protect %s", part);
				break;
			}
			s = slash;
		}
	}
}

/* A hidden directory covered by an empty tmpfs; one removed since labbox looked is skipped,
 * not the run failed. */
static void hide_one(init_ctx *c, const char *path)
{
	char p[4096];
	nr_path(p, sizeof p, path);
	/* Removed by its owner meanwhile: nothing left to hide. Made again just after (a test's
	 * clean-up that removes and recreates it): hidden, at the next try. */
	int e = 0;
	for (int tries = 0; tries < 16; tries++) {
		if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") == 0)
			return;
		e = errno;
		if (e != ENOENT)
			break;
		if (removed_since(e, p))
			return;
	}
	chan_fail(c->chan_wr, "setup_root", e, "hide %s", path);
}

/* Whether p is the root of a mount: a cover hide_one made, where it made one. */
static bool is_mount_root(const char *p)
{
	struct statx stx;
	if (statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) < 0)
		return false;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static void setup_root(init_ctx *c)
{
	const lb_sandbox *sb = c->sb;
	char p[4096];

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "make the mount tree private");
	/* Every source is opened before the staging tmpfs covers /tmp, where some of them live. */
	for (size_t i = 0; i < sb->nbinds; i++) {
		c->bind_fds[i] = open(sb->binds[i].src, O_PATH | O_CLOEXEC);
		if (c->bind_fds[i] < 0)
			chan_fail(c->chan_wr, "setup_binds", errno, "open %s", sb->binds[i].src);
	}
	if (sb->workdir) {
		c->bind_fds[sb->nbinds] = open(sb->workdir, O_PATH | O_CLOEXEC | O_DIRECTORY);
		if (c->bind_fds[sb->nbinds] < 0)
			chan_fail(c->chan_wr, "setup_binds", errno, "open %s", sb->workdir);
	}
	for (size_t i = 0; i < dev_count(sb); i++) {
		snprintf(p, sizeof p, "/dev/%s", dev_name(sb, i));
		c->dev_fds[i] = open(p, O_PATH | O_CLOEXEC);
		if (c->dev_fds[i] < 0)
			chan_fail(c->chan_wr, "setup_dev", errno, "open %s", p);
	}

	/* Cloned in the sandbox's namespace, where the mounts under each clone are locked to it,
	 * before the staging tmpfs covers the host's /tmp, like the sources above. */
	char err[400];
	int r = lb_rootfs_clone(c->rootfs, "/", err, sizeof err);
	if (r < 0)
		chan_fail(c->chan_wr, "setup_root", -r, "%s", err);
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k") < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "mount the staging tmpfs");
	if (mkdir(NEWROOT, 0755) < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "mkdir " NEWROOT);
	r = lb_rootfs_build(c->rootfs, NEWROOT, err, sizeof err);
	if (r < 0)
		chan_fail(c->chan_wr, "setup_root", -r, "%s", err);
	prepare_mount_points(c);

	for (size_t i = 0; i < sb->nhidden; i++)
		hide_one(c, sb->hidden[i]);
	char opts[64];
	snprintf(opts, sizeof opts, "mode=1777,size=%llu", (unsigned long long)sb->tmpfs_size);
	for (size_t i = 0; i < sb->nprivate; i++) {
		if (strcmp(sb->private_dirs[i], "/dev/shm") == 0)
			continue; /* made with /dev */
		nr_path(p, sizeof p, sb->private_dirs[i]);
		struct stat st;
		if (stat(p, &st) < 0)
			continue;
		if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | writable_noexec(c), opts) < 0)
			chan_fail(c->chan_wr, "setup_root", errno, "private %s", sb->private_dirs[i]);
	}
	setup_dev(c);
	nr_path(p, sizeof p, "/proc");
	if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		chan_fail(c->chan_wr, "setup_proc", errno, "mount a fresh /proc");
	setup_sys(c);
	setup_masks(c);
	mount_tmpfs_dirs(c);

	for (size_t i = 0; i < sb->nbinds; i++)
		bind_one(c, c->bind_fds[i], sb->binds[i].dst, sb->binds[i].writable);
	if (sb->workdir) {
		bind_one(c, c->bind_fds[sb->nbinds], sb->workdir, true);
		struct mount_attr nx = {.attr_set = MOUNT_ATTR_NOEXEC};
		nr_path(p, sizeof p, sb->workdir);
		if (writable_noexec(c) && mount_setattr(AT_FDCWD, p, 0, &nx, sizeof nx) < 0)
			chan_fail(c->chan_wr, "setup_binds", errno, "noexec %s", sb->workdir);
	}
	place_files(c);
	mask_in_binds(c);
	protect_dirs(c);

	/* The covers over hidden directories, and /dev, become read-only once populated. */
	struct mount_attr ro_only = {0};
	ro_only.attr_set = MOUNT_ATTR_RDONLY;
	for (size_t i = 0; i < sb->nhidden; i++) {
		nr_path(p, sizeof p, sb->hidden[i]);
		if (!is_mount_root(p))
			continue; /* gone when hide_one looked: no cover there */
		if (mount_setattr(AT_FDCWD, p, 0, &ro_only, sizeof ro_only) < 0)
			chan_fail(c->chan_wr, "setup_root", errno, "seal %s", sb->hidden[i]);
	}
	for (size_t i = 0; i < nmirrored; i++) {
		if (mount_setattr(mirror_fds[i], "", AT_EMPTY_PATH, &ro_only, sizeof ro_only) < 0)
			chan_fail(c->chan_wr, "setup_root", errno, "seal the mount points");
		close(mirror_fds[i]);
	}
	nr_path(p, sizeof p, "/dev");
	if (mount_setattr(AT_FDCWD, p, 0, &ro_only, sizeof ro_only) < 0)
		chan_fail(c->chan_wr, "setup_dev", errno, "seal /dev");
	if (mount_setattr(AT_FDCWD, NEWROOT, 0, &ro_only, sizeof ro_only) < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "seal the new root");

	if (chdir(NEWROOT) < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "chdir to the new root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "detach the old root");
	if (chdir("/") < 0)
		chan_fail(c->chan_wr, "setup_root", errno, "chdir /");
}

static void setup_net(init_ctx *c)
{
	if (c->sb->net == LB_NET_HOST)
		return;
	LB_AUTOCLOSE int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		chan_fail(c->chan_wr, "setup_net", errno, "socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		chan_fail(c->chan_wr, "setup_net", errno, "read loopback flags");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		chan_fail(c->chan_wr, "setup_net", errno, "bring up loopback");
}

/* The sandbox's pid 1 is a copy of labbox, and its command line (/proc/1/cmdline, which any
 * process of the pid namespace may read, unlike environ or mem) would still be labbox's own:
 * a --repair-cmd with a key in it, the host paths of -v and --hide, the runs directory. The
 * copy's argument area is overwritten with its own name before anything of the run's starts;
 * only the area's length is left. The area is found in /proc/self/stat (fields 48 and 49),
 * so nothing of main()'s argv has to be carried here. */
static void setup_cmdline(init_ctx *c)
{
	char buf[1024];
	LB_AUTOCLOSE int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (n <= 0)
		chan_fail(c->chan_wr, "init", fd < 0 ? errno : EIO, "read /proc/self/stat");
	buf[n] = '\0';
	/* the fields after the name, which may itself hold ") " */
	char *p = strrchr(buf, ')');
	unsigned long long start = 0, end = 0;
	int field = 2;
	for (char *tok = p ? p + 1 : NULL; tok && *tok && field < 49; field++) {
		while (*tok == ' ')
			tok++;
		char *next = strchr(tok, ' ');
		if (field + 1 == 48)
			start = strtoull(tok, NULL, 10);
		else if (field + 1 == 49)
			end = strtoull(tok, NULL, 10);
		tok = next;
	}
	if (field < 49 || start == 0 || end <= start || end - start > (64u << 20))
		chan_fail(c->chan_wr, "init", EINVAL, "find the argument area in /proc/self/stat");
	static const char name[] = "labbox-init";
	char *area = (char *)(uintptr_t)start;
	size_t len = (size_t)(end - start);
	memset(area, 0, len);
	memcpy(area, name, len > sizeof name ? sizeof name - 1 : len - 1);
}

static void setup_uts(init_ctx *c)
{
	if (sethostname("labbox", 6) < 0)
		chan_fail(c->chan_wr, "setup_uts", errno, "sethostname");
}

static void setup_fds(init_ctx *c)
{
	int devnull = c->in_rd >= 0 ? c->in_rd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		chan_fail(c->chan_wr, "setup_fds", errno, "open /dev/null");
	int errfd = c->sb->merged ? c->out_wr : c->errout_wr;
	if (dup2(devnull, 0) < 0 || dup2(c->out_wr, 1) < 0 || dup2(errfd, 2) < 0)
		chan_fail(c->chan_wr, "setup_fds", errno, "dup2");
	/* Everything else closes at exec; the error channel stays open until then. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		chan_fail(c->chan_wr, "setup_fds", errno, "close_range");
}

static void setup_session(init_ctx *c)
{
	if (setsid() < 0)
		chan_fail(c->chan_wr, "setup_session", errno, "setsid");
}

static void setup_rlimits(init_ctx *c)
{
	struct rlimit core = {0, 0};
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		chan_fail(c->chan_wr, "setup_rlimits", errno, "RLIMIT_CORE");
	if (c->sb->disk_limit && !c->disk_fs) {
		/* One file cannot pass a polled disk limit in a single write between two checks. */
		struct rlimit fsize = {c->sb->disk_limit, c->sb->disk_limit};
		if (setrlimit(RLIMIT_FSIZE, &fsize) < 0)
			chan_fail(c->chan_wr, "setup_rlimits", errno, "RLIMIT_FSIZE");
	}
	/* Queued signals and POSIX message queue bytes are counted per user, the host user's
	 * included: the payload may have a quarter of what labbox was allowed. */
	static const int shared[] = {RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE};
	for (size_t i = 0; i < sizeof shared / sizeof *shared; i++) {
		struct rlimit rl;
		if (getrlimit(shared[i], &rl) < 0)
			chan_fail(c->chan_wr, "setup_rlimits", errno, "read a per-user limit");
		rlim_t cap = rl.rlim_cur == RLIM_INFINITY ? (rlim_t)1 << 16 : rl.rlim_cur / 4;
		if (cap < 16)
			cap = rl.rlim_cur < 16 ? rl.rlim_cur : 16;
		rl.rlim_cur = rl.rlim_max = cap;
		if (setrlimit(shared[i], &rl) < 0)
			chan_fail(c->chan_wr, "setup_rlimits", errno, "cap a per-user limit");
	}
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		/* Data loaders open many files; the soft limit is raised to what the host allows. */
		nofile.rlim_cur = nofile.rlim_max > 1048576 ? 1048576 : nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
}

/* The accepted fallbacks for limits no cgroup could enforce come last, right before exec:
 * a data limit would otherwise starve labbox's own allocations (and a sanitizer's). */
static void setup_fallback_limits(init_ctx *c)
{
	if (c->rlimit_data) {
		struct rlimit data = {c->rlimit_data, c->rlimit_data};
		if (setrlimit(RLIMIT_DATA, &data) < 0)
			chan_fail(c->chan_wr, "setup_rlimits", errno, "RLIMIT_DATA");
	}
	if (c->rlimit_nproc) {
		struct rlimit nproc = {(rlim_t)c->rlimit_nproc, (rlim_t)c->rlimit_nproc};
		if (setrlimit(RLIMIT_NPROC, &nproc) < 0)
			chan_fail(c->chan_wr, "setup_rlimits", errno, "RLIMIT_NPROC");
	}
}

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
#define PR_MDWE_REFUSE_EXEC_GAIN 1UL
#endif

/* Under the listed exec guard (R, Octave), no memory is made executable after it was
 * writable, nor both at once: an interpreter that embeds a virtual machine (Octave's Java)
 * would otherwise copy code of the run's into memory and call it, which no exec, mount or
 * memfd rule sees. Kept across fork and exec; R and Octave compile nothing to machine code. */
static void setup_no_write_exec(init_ctx *c)
{
	if (c->sb->exec_guard != LB_EXEC_LISTED)
		return;
	if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) < 0 &&
	    !c->sb->exec_guard_optional)
		chan_fail(c->chan_wr, "setup_exec_guard", errno,
			  "memory both writable and executable cannot be refused (PR_SET_MDWE, Linux "
			  "6.3 or later)");
}

static void setup_credentials(init_ctx *c)
{
	const lb_sandbox *sb = c->sb;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		chan_fail(c->chan_wr, "setup_credentials", errno, "no_new_privs");
	setup_no_write_exec(c);
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			chan_fail(c->chan_wr, "setup_credentials", errno, "drop capability %d", cap);
		}
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (sb->host_uid == 0) {
		if (setgroups(0, NULL) < 0)
			chan_fail(c->chan_wr, "setup_credentials", errno, "setgroups");
		if (setresgid(sb->sb_gid, sb->sb_gid, sb->sb_gid) < 0)
			chan_fail(c->chan_wr, "setup_credentials", errno, "setresgid %d",
				  (int)sb->sb_gid);
		if (setresuid(sb->sb_uid, sb->sb_uid, sb->sb_uid) < 0)
			chan_fail(c->chan_wr, "setup_credentials", errno, "setresuid %d",
				  (int)sb->sb_uid);
	}
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		chan_fail(c->chan_wr, "setup_credentials", errno, "capset");
}

static char **build_env(const lb_sandbox *sb)
{
	static const char *const defaults[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" LB_SANDBOX_HOME, "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"};
	size_t nd = sizeof defaults / sizeof *defaults;
	char **env = calloc(nd + sb->nenv + 1, sizeof *env);
	if (!env)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < nd; i++) {
		size_t klen = (size_t)(strchr(defaults[i], '=') - defaults[i]);
		bool overridden = false;
		for (size_t j = 0; j < sb->nenv; j++)
			if (strncmp(sb->env[j], defaults[i], klen + 1) == 0)
				overridden = true;
		if (!overridden)
			env[n++] = (char *)defaults[i];
	}
	for (size_t j = 0; j < sb->nenv; j++)
		env[n++] = sb->env[j];
	env[n] = NULL;
	return env;
}

/* The experiment is the process its memory limit's OOM killer should end: pages of a tmpfs
 * belong to no process, so without a preference the killer weighs resident sizes alone and may
 * end the sandbox's init (larger under a sanitizer), which reads as labbox's own failure.
 * Raising one's own score needs no privilege; where it cannot be written nothing changes. */
static void setup_oom_preference(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "500", 3) < 0) {
		/* best effort: the kernel's default choice stays */
	}
	close(fd);
}

__attribute__((noreturn)) static void payload_main(init_ctx *c)
{
	if (c->trace_go >= 0) {
		/* Init traces this process first (or knows it cannot, and says so): the attach is
		 * judged on the credentials it has now, before they are dropped. */
		char go = 0;
		if (read(c->trace_go, &go, 1) != 1)
			_exit(125);
		close(c->trace_go);
	}
	/* labbox may ignore SIGPIPE for itself; the payload starts with every default. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setup_fds(c);
	setup_session(c);
	setup_rlimits(c);
	setup_oom_preference();
	const char *cwd = c->sb->workdir ? c->sb->workdir : "/tmp";
	if (chdir(cwd) < 0)
		chan_fail(c->chan_wr, "setup_workdir", errno, "chdir %s", cwd);
	setup_credentials(c);
	if (c->landlock) {
		int lr = sb_landlock_confine_writes();
		if (lr < 0)
			chan_fail(c->chan_wr, "setup_landlock", -lr,
				  "confine writes with Landlock (no writes under /proc or /sys)");
	}
	char **env = build_env(c->sb);
	if (!env)
		chan_fail(c->chan_wr, "setup_environment", ENOMEM, "environment");
	/* Last, so every earlier step may still use what the filter denies. The supervisor
	 * compiled it while init built the root. */
	char ready = 0;
	if (read(c->bpf_ready, &ready, 1) != 1 || ready != 'y')
		chan_fail(c->chan_wr, "setup_seccomp", 0, "the seccomp filter could not be built");
	int r = lb_seccomp_load_bpf(c->bpf_fd);
	if (r < 0)
		chan_fail(c->chan_wr, "setup_seccomp", -r, "load the seccomp filter");
	setup_fallback_limits(c);
	if (c->sb->fn) {
		/* Nothing is exec'd, so nothing closes at exec: close it now, the error channel
		 * last, once setup can no longer fail. */
		close_range(3, ~0U, 0);
		environ = env;
		int st = c->sb->fn(c->sb->fn_arg);
		fflush(NULL);
		_exit(st & 0xff);
	}
	execve(c->sb->argv[0], c->sb->argv, env);
	chan_fail(c->chan_wr, "exec", errno, "%s", c->sb->argv[0]);
}

/* The exec guard's side in init: the payload traced from before its exec, and every process
 * and thread it starts with it (ptrace's auto-attach), stopped only at forks, clones,
 * signals and execs. False when the guard is optional and the kernel refused the trace. */
static bool trace_payload(init_ctx *c, pid_t payload)
{
	long opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
		    PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL;
	if (ptrace(PTRACE_SEIZE, payload, 0, (void *)opts) == 0)
		return true;
	if (c->sb->exec_guard_optional)
		return false;
	int e = errno;
	kill(payload, SIGKILL);
	chan_fail(c->chan_wr, "setup_exec_guard", e,
		  "trace the experiment's processes (ptrace), which the runtime gate's exec guard "
		  "needs; --allow-degraded gate runs without the guard");
}

/* One stop of a traced process. An exec is judged before the new program runs: a refused
 * one is killed where it stands. Everything else goes on as it would untraced (a signal is
 * delivered; a stop is not kept: the run has no job control). */
static void trace_stop(pid_t p, int st, pid_t payload, sb_exec_ref *ref,
		       const sb_exec_list *list, status_msg *msg)
{
	int sig = WSTOPSIG(st);
	int event = (int)((unsigned)st >> 16);
	if (event == PTRACE_EVENT_EXEC) {
		lb_exec_refusal r;
		int v = list ? sb_exec_judge_listed(p, payload, ref, list, &r)
			     : sb_exec_judge(p, payload, ref, &r);
		if (v < 0) {
			memset(&r, 0, sizeof r);
			r.pid = (int)p;
			snprintf(r.why, sizeof r.why, "labbox could not read what it execs: %s",
				 strerror(-v));
		}
		if (v != 0) {
			kill(p, SIGKILL);
			if (msg->exec_refused < LB_SB_MAX_EXEC_REFUSALS)
				msg->refusals[msg->exec_refused] = r;
			msg->exec_refused++;
			return;
		}
		ptrace(PTRACE_CONT, p, 0, 0);
		return;
	}
	if (event != 0) {
		ptrace(PTRACE_CONT, p, 0, 0); /* fork, vfork, clone, or a new tracee's first stop */
		return;
	}
	ptrace(PTRACE_CONT, p, 0, (void *)(long)sig);
}

/* A tmpfs is full when what is left is under a hundredth of it: a write that failed on it
 * leaves at most the part of a page or a chunk it could not fit. */
#define FULL_TMPFS_LEFT_PER 100

/* Which of the sandbox's own tmpfs (private /tmp, /var/tmp, /dev/shm, --tmpfs) are full now
 * that the tree has ended: the fact that explains an error a writer words without ENOSPC
 * (numpy's short write, torch's "file write failed"). Only tmpfs count: a volume the user
 * mounted there is the host's disk. */
static void full_tmpfs(const lb_sandbox *sb, status_msg *msg)
{
	for (size_t i = 0; i < sb->nprivate + sb->ntmpfs && msg->nfull < LB_SB_MAX_FULL; i++) {
		const char *path = i < sb->nprivate ? sb->private_dirs[i]
						    : sb->tmpfs[i - sb->nprivate].path;
		struct statfs f;
		bool seen = false;

		if (statfs(path, &f) < 0 || f.f_type != TMPFS_MAGIC || f.f_blocks == 0 ||
		    (uint64_t)f.f_bavail * FULL_TMPFS_LEFT_PER > (uint64_t)f.f_blocks ||
		    strlen(path) >= sizeof msg->full[0].path)
			continue;
		for (unsigned k = 0; k < msg->nfull; k++)
			seen = seen || strcmp(msg->full[k].path, path) == 0;
		if (seen)
			continue; /* a --tmpfs over a private directory */
		snprintf(msg->full[msg->nfull].path, sizeof msg->full[0].path, "%s", path);
		msg->full[msg->nfull++].size_bytes = (uint64_t)f.f_blocks * (uint64_t)f.f_bsize;
	}
}

__attribute__((noreturn)) static void init_main(init_ctx *c)
{
	/* Dies with the supervisor; the kernel then kills the rest of the pid namespace. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		_exit(125);
	/* A process group of its own: a Ctrl-C at the terminal (a signal to labbox's group)
	 * reaches the supervisor alone, which passes it on once. In labbox's group init got it
	 * too and passed it on as well, so the experiment could take a second KeyboardInterrupt
	 * inside the handler that saves its partial results. */
	setpgid(0, 0);
	/* Into the run's cgroup before anything is forked, so every process of the sandbox is
	 * born inside it. */
	int cr = c->cgroup_fds ? lb_cgroup_enter_self(c->cgroup_fds) : 0;
	if (cr < 0)
		chan_fail(c->chan_wr, "setup_cgroup", -cr, "move into the run's cgroup");
	char go;
	if (read(c->sync_rd, &go, 1) != 1)
		_exit(125); /* the supervisor is gone or the id maps failed */

	setup_cmdline(c);
	setup_root(c);
	setup_ucounts(c);
	setup_net(c);
	setup_uts(c);
	/* On cgroup v2 the supervisor moves init into its cgroup meanwhile (by pid: an RCU
	 * grace period, often 10 ms); the payload must be born inside it, so its fork waits for
	 * the second byte. */
	if (read(c->sync_rd, &go, 1) != 1)
		_exit(125);
	close(c->sync_rd);
	/* Now in the run's cgroup: a cgroup namespace rooted there, so /proc/self/cgroup names no
	 * host path (a container's id, labbox's pid) and the tree sees its own cgroup as "/". */
	if (unshare(CLONE_NEWCGROUP) < 0)
		chan_fail(c->chan_wr, "init", errno, "a cgroup namespace of the run's own");

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		chan_fail(c->chan_wr, "init", errno, "signalfd");

	/* What the listed programs are, looked up here, in the sandbox's own view of the
	 * system, before any code of the run's can run. */
	sb_exec_list list;
	if (c->sb->exec_guard == LB_EXEC_LISTED)
		sb_exec_list_resolve(c->sb, &list);
	int tgo[2] = {-1, -1};
	if (c->sb->exec_guard != LB_EXEC_ANY && pipe2(tgo, O_CLOEXEC) < 0)
		chan_fail(c->chan_wr, "setup_exec_guard", errno, "pipe");
	c->trace_go = tgo[0];
	pid_t payload = fork();
	if (payload < 0)
		chan_fail(c->chan_wr, "init", errno, "fork the payload");
	if (payload == 0) {
		close(sfd);
		if (tgo[1] >= 0)
			close(tgo[1]);
		payload_main(c);
	}
	status_msg msg = {0};
	if (tgo[1] >= 0) {
		close(tgo[0]);
		msg.guarded = trace_payload(c, payload);
		if (write(tgo[1], "g", 1) != 1)
			_exit(125);
		close(tgo[1]);
	}
	sb_exec_ref ref = {0};
	close(c->chan_wr);
	close(c->out_wr);
	if (c->errout_wr >= 0)
		close(c->errout_wr);
	if (c->in_rd >= 0)
		close(c->in_rd);

	int payload_status = 0;
	bool payload_done = false;
	for (;;) {
		struct signalfd_siginfo si;
		ssize_t n = read(sfd, &si, sizeof si);
		if (n != sizeof si) {
			if (n < 0 && errno == EINTR)
				continue;
			_exit(125);
		}
		if (si.ssi_signo != SIGCHLD) {
			/* Only the supervisor may end the run: its signals come from the parent pid
			 * namespace and carry no sender pid here. A process of the sandbox that signals
			 * init (it may share init's uid) is ignored. */
			if (si.ssi_pid == 0) /* every process of the namespace but init */
				kill(-1, si.ssi_signo == SIGINT ? SIGINT : SIGTERM);
			continue;
		}
		int st;
		pid_t p;
		/* __WALL: a traced tree's threads stop too */
		while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
			if (WIFSTOPPED(st)) {
				trace_stop(p, st, payload, &ref,
					   c->sb->exec_guard == LB_EXEC_LISTED ? &list : NULL, &msg);
				continue;
			}
			if (p == payload) {
				payload_status = st;
				payload_done = true;
			}
		}
		if (payload_done)
			break;
	}
	/* The run ends with its main process: daemons it left behind are killed and reaped so
	 * their CPU time is accounted and nothing outlives the run. */
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
		;
	full_tmpfs(c->sb, &msg);
	msg.payload_status = payload_status;
	const char *b = (const char *)&msg;
	for (size_t off = 0; off < sizeof msg;) {
		ssize_t w = write(c->status_wr, b + off, sizeof msg - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(125);
		off += (size_t)w;
	}
	_exit(0);
}

static int write_proc_file(pid_t pid, const char *name, const char *data)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	LB_AUTOCLOSE int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, data, strlen(data));
	if (n < 0)
		return -errno;
	return (size_t)n == strlen(data) ? 0 : -EIO;
}

static int write_id_maps(const lb_sandbox *sb, pid_t pid, char *err, size_t errlen)
{
	char uid_map[96], gid_map[96];
	int r;
	if (sb->host_uid == 0) {
		/* Root inside (to build the root) and the unprivileged id the payload switches to. */
		snprintf(uid_map, sizeof uid_map, "0 0 1\n%d %d 1\n", (int)sb->sb_uid,
			 (int)sb->sb_uid);
		snprintf(gid_map, sizeof gid_map, "0 0 1\n%d %d 1\n", (int)sb->sb_gid,
			 (int)sb->sb_gid);
	} else {
		snprintf(uid_map, sizeof uid_map, "%d %d 1\n", (int)sb->host_uid, (int)sb->host_uid);
		snprintf(gid_map, sizeof gid_map, "%d %d 1\n", (int)sb->host_gid, (int)sb->host_gid);
		r = write_proc_file(pid, "setgroups", "deny");
		if (r < 0) {
			snprintf(err, errlen, "write setgroups: %s", strerror(-r));
			return r;
		}
	}
	r = write_proc_file(pid, "uid_map", uid_map);
	if (r < 0) {
		snprintf(err, errlen, "write uid_map: %s", strerror(-r));
		return r;
	}
	r = write_proc_file(pid, "gid_map", gid_map);
	if (r < 0) {
		snprintf(err, errlen, "write gid_map: %s", strerror(-r));
		return r;
	}
	return 0;
}

static void set_setup_failure(lb_sandbox_result *res, const char *step, int err, const char *msg)
{
	res->outcome = LB_SB_SETUP_FAILED;
	res->setup_errno = err;
	snprintf(res->setup_step, sizeof res->setup_step, "%s", step);
	size_t n = strlen(msg);
	if (n >= sizeof res->setup_error)
		n = sizeof res->setup_error - 1; /* one line, cut where it must be */
	memcpy(res->setup_error, msg, n);
	res->setup_error[n] = '\0';
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

typedef struct supervise_state {
	const lb_diskfs *fs; /* exp/'s own file system, when the disk limit is one */
	bool fs_full_seen;   /* it was full at some check */
	int out_rd, errout_rd, chan_rd, status_rd, sfd;
	int in_src; /* the caller's input, relayed so the payload never holds a terminal fd */
	int in_wr;  /* the payload's stdin pipe */
	char in_buf[65536];
	size_t in_len;
	chan_msg chan;
	size_t chan_got;
	int payload_status;
	status_msg status;
	size_t status_got;
	bool have_status;
	bool init_done;
	int init_status;
	struct rusage ru;
	double deadline;      /* monotonic; 0 = none */
	double kill_deadline; /* monotonic; 0 = not terminating */
	double next_disk_check; /* monotonic; 0 = no disk limit */
	double next_gpu_sample; /* monotonic; 0 = no GPU sampling */
	lb_gpumem gpu;
	uint64_t free_at_start; /* bytes available on the disk limit's file system */
	uint64_t inodes_at_start; /* inodes available there */
	uint64_t inode_limit;
	uint64_t floor;       /* free bytes kept on that file system, whatever the limit */
	uint64_t bytes_at_start; /* exp/'s bytes when the run began, when there is a floor */
	pid_t init_pid;
	bool disk_limited;
	char disk_detail[160];
	bool timed_out;
	bool interrupted;
	int interrupt_signal;
	bool term_next; /* SIGINT was sent: SIGTERM follows at kill_deadline, then SIGKILL */
} supervise_state;

/* Ctrl-C (SIGINT to labbox) reaches the experiment as SIGINT, as it would at a terminal, so
 * code that saves its results on KeyboardInterrupt can; the budget, a disk limit, SIGTERM and
 * SIGHUP send SIGTERM. After --grace seconds a SIGINT is followed by SIGTERM (code that
 * ignores Ctrl-C still gets the ending it would have had) and a SIGTERM by SIGKILL. */
static void terminate(const lb_sandbox *sb, supervise_state *s, pid_t init, double now, int sig)
{
	if (s->kill_deadline == 0) {
		kill(init, sig);
		s->kill_deadline = now + sb->grace;
		s->term_next = sig == SIGINT;
		if (sb->grace == 0)
			kill(init, SIGKILL);
	}
}

static void drain(const lb_sandbox *sb, int *fd, lb_stream stream)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	if (sb->out_fn)
		sb->out_fn(sb->out_ctx, stream, buf, (size_t)n);
}

static void close_in(supervise_state *s)
{
	if (s->in_wr >= 0)
		close(s->in_wr);
	s->in_wr = -1;
	s->in_len = 0;
}

static void relay_in_read(supervise_state *s)
{
	ssize_t n = read(s->in_src, s->in_buf, sizeof s->in_buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close_in(s); /* end of input: the payload sees EOF */
		return;
	}
	s->in_len = (size_t)n;
}

static void relay_in_write(supervise_state *s)
{
	ssize_t n = write(s->in_wr, s->in_buf, s->in_len);
	if (n < 0) {
		if (errno != EINTR && errno != EAGAIN)
			close_in(s); /* the payload closed its stdin */
		return;
	}
	memmove(s->in_buf, s->in_buf + n, s->in_len - (size_t)n);
	s->in_len -= (size_t)n;
}

#define DISK_CHECK_INTERVAL 0.25
/* A statvfs of exp/'s own file system costs a microsecond: checked often, a full one is seen
 * even in a short run (the verdict says disk_limit, not only "failed"). */
#define DISK_FS_CHECK_INTERVAL 0.02
/* The least time exp/'s files have to come back from its file system after a run that used
 * its whole budget. */
#define MERGE_LEAST_S 5.0

static uint64_t fs_available(const char *path, uint64_t *inodes)
{
	struct statvfs v;
	if (statvfs(path, &v) < 0)
		return *inodes = 0;
	*inodes = (uint64_t)v.f_favail;
	return (uint64_t)v.f_bavail * v.f_frsize;
}

/* The free space every polled run leaves on its file system: runs that start together each
 * see the same free space and their limits add up, so a limit alone does not keep room for
 * labbox's records (result.json, the log, sweep.json, the index) or the host. 5% of the file
 * system, at most 1 GiB (and at most half of what was free when the run began). */
static uint64_t fs_floor(const char *path)
{
	struct statvfs v;
	if (statvfs(path, &v) < 0)
		return 0;
	uint64_t floor = (uint64_t)v.f_blocks * v.f_frsize / 20;
	return floor < ((uint64_t)1 << 30) ? floor : (uint64_t)1 << 30;
}

/* Whether ino was seen already; else remembered (past the list's room an inode may count
 * twice: more, never less). */
typedef struct {
	ino_t v[256];
	size_t n;
} seen_inodes;

static bool seen_before(seen_inodes *seen, ino_t ino)
{
	for (size_t i = 0; i < seen->n; i++)
		if (seen->v[i] == ino)
			return true;
	if (seen->n < sizeof seen->v / sizeof *seen->v)
		seen->v[seen->n++] = ino;
	return false;
}

/* Deleted files of exp/'s file system that a process maps without holding a descriptor (a
 * file written, mapped, closed and unlinked keeps every block while the mapping lasts). The
 * file's own size through map_files where labbox may follow those links (root); else the
 * extent mapped, the least such a file holds. */
/* The scans below are the run's to make long (a process holding 20,000 descriptors, hundreds
 * of processes): they look at the clock every so many entries and give up at until, so the
 * loop that enforces the time budget is never held past a bound (out_of_time). */
#define DISK_SCAN_MAX 1.0
#define SCAN_CLOCK_EVERY 256

static bool out_of_time(unsigned *count, double until)
{
	return ++*count % SCAN_CLOCK_EVERY == 0 && lb_time_monotonic() >= until;
}

static uint64_t deleted_but_mapped(const char *pid, dev_t dev, seen_inodes *seen, double until,
				   unsigned *count, bool *late)
{
	char p[300];
	snprintf(p, sizeof p, "/proc/%s/maps", pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	uint64_t total = 0;
	char line[PATH_MAX + 256];
	while (fgets(line, sizeof line, f)) {
		if (out_of_time(count, until)) {
			*late = true;
			break;
		}
		unsigned long long start, end, off, ino;
		unsigned maj, mnr;
		int n = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &start, &end, &off, &maj, &mnr,
			   &ino, &n) < 6 || !ino || makedev(maj, mnr) != dev ||
		    !strstr(line + n, " (deleted)"))
			continue;
		if (seen_before(seen, (ino_t)ino))
			continue;
		struct stat st;
		snprintf(p, sizeof p, "/proc/%s/map_files/%llx-%llx", pid, start, end);
		if (stat(p, &st) == 0 && st.st_ino == (ino_t)ino && st.st_dev == dev)
			total += st.st_nlink == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_blocks * 512 : 0;
		else
			total += end - start + off;
	}
	fclose(f);
	return total;
}

/* Files the tree deleted but still holds open or mapped take space no walk of exp/ sees: the
 * descriptors and mappings of every process in the sandbox's pid namespace, on exp/'s file
 * system, with no name left. Each inode once. -ETIME: until came first, *total is a part. */
static int deleted_but_open(pid_t init, dev_t dev, double until, uint64_t *total_out)
{
	char p[64];
	struct stat ns;
	*total_out = 0;
	snprintf(p, sizeof p, "/proc/%d/ns/pid", (int)init);
	if (stat(p, &ns) < 0)
		return 0;
	DIR *procs = opendir("/proc");
	if (!procs)
		return 0;
	uint64_t total = 0;
	seen_inodes seen = {.n = 0};
	struct dirent *e;
	unsigned count = 0;
	bool late = false;
	while (!late && (e = readdir(procs))) {
		if (out_of_time(&count, until)) {
			late = true;
			break;
		}
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char q[300];
		struct stat st;
		snprintf(q, sizeof q, "/proc/%s/ns/pid", e->d_name);
		if (stat(q, &st) < 0 || st.st_ino != ns.st_ino || st.st_dev != ns.st_dev)
			continue;
		snprintf(q, sizeof q, "/proc/%s/fd", e->d_name);
		DIR *fds = opendir(q);
		if (fds) {
			struct dirent *f;
			while ((f = readdir(fds))) {
				if (out_of_time(&count, until)) {
					late = true;
					break;
				}
				char fp[600];
				snprintf(fp, sizeof fp, "%s/%s", q, f->d_name);
				if (f->d_name[0] == '.' || stat(fp, &st) < 0 || st.st_dev != dev ||
				    st.st_nlink != 0 || !S_ISREG(st.st_mode))
					continue;
				if (!seen_before(&seen, st.st_ino))
					total += (uint64_t)st.st_blocks * 512;
			}
			closedir(fds);
		}
		if (!late)
			total += deleted_but_mapped(e->d_name, dev, &seen, until, &count, &late);
	}
	closedir(procs);
	*total_out = total;
	return late ? -ETIME : 0;
}

/* What the tree wrote is told by the file system's free space and free inodes, which cost one
 * statvfs; only when they say a limit may be passed is the directory itself measured, so other
 * writers on the same file system cannot end the run. A part of exp/ the walk cannot see (a
 * directory the payload closed to its owner) while the space is gone counts as over: what
 * cannot be measured is not let through. final: the tree has ended, measure whatever the
 * file system says. */
static bool disk_limit_exceeded(const lb_sandbox *sb, supervise_state *s, bool final)
{
	if (s->fs) {
		/* The kernel holds the limit; a full file system is remembered for the verdict. */
		if (!s->fs_full_seen)
			s->fs_full_seen = lb_diskfs_full(s->fs, final, s->disk_detail,
							 sizeof s->disk_detail);
		return false;
	}
	uint64_t inodes;
	uint64_t avail = fs_available(sb->disk_path, &inodes);
	bool bytes_may = final || avail + sb->disk_limit < s->free_at_start;
	bool inodes_may = s->inode_limit && (final || inodes + s->inode_limit < s->inodes_at_start);
	bool under_floor = !final && avail < s->floor;
	if (!bytes_may && !inodes_may && !under_floor)
		return false;
	lb_disk_measure_t m;
	if (lb_disk_measure(sb->disk_path, &m) < 0)
		return false;
	/* Only a run that has written is ended by the floor: one that has not is not what
	 * filled the disk (1 MiB of slack for the interpreter's own files). */
	if (under_floor && m.bytes > s->bytes_at_start + ((uint64_t)1 << 20)) {
		snprintf(s->disk_detail, sizeof s->disk_detail,
			 "%llu bytes in exp/ while its file system had %llu bytes free, under the "
			 "%llu labbox keeps free",
			 (unsigned long long)m.bytes, (unsigned long long)avail,
			 (unsigned long long)s->floor);
		return true;
	}
	if (m.bytes > sb->disk_limit) {
		snprintf(s->disk_detail, sizeof s->disk_detail, "%llu bytes in exp/",
			 (unsigned long long)m.bytes);
		return true;
	}
	if (s->inode_limit && m.inodes > s->inode_limit) {
		snprintf(s->disk_detail, sizeof s->disk_detail,
			 "%llu files and directories in exp/, more than the %llu allowed",
			 (unsigned long long)m.inodes, (unsigned long long)s->inode_limit);
		return true;
	}
	if (!bytes_may || final)
		return false;
	if (!m.complete) {
		snprintf(s->disk_detail, sizeof s->disk_detail,
			 "a part of exp/ that labbox cannot read while the disk filled");
		return true;
	}
	struct stat st;
	if (s->init_pid > 0 && stat(sb->disk_path, &st) == 0) {
		/* Bounded by the budget too: at the deadline the loop ends the run for its time. */
		double until = lb_time_monotonic() + DISK_SCAN_MAX;
		bool by_deadline = s->deadline && s->deadline < until;
		if (by_deadline)
			until = s->deadline;
		uint64_t hidden;
		int late = deleted_but_open(s->init_pid, st.st_dev, until, &hidden);
		if (m.bytes + hidden > sb->disk_limit) {
			snprintf(s->disk_detail, sizeof s->disk_detail,
				 "%llu bytes in exp/ and %llu in files deleted but still open or mapped",
				 (unsigned long long)m.bytes, (unsigned long long)hidden);
			return true;
		}
		if (late == -ETIME && !by_deadline) {
			/* What cannot be measured while the space is gone is not let through. */
			snprintf(s->disk_detail, sizeof s->disk_detail,
				 "the run's processes hold more descriptors and mappings than labbox "
				 "can examine in %.0f s while the disk filled (%llu bytes in exp/)",
				 DISK_SCAN_MAX, (unsigned long long)m.bytes);
			return true;
		}
	}
	return false;
}

static int supervise(const lb_sandbox *sb, pid_t init, supervise_state *s)
{
	for (;;) {
		double now = lb_time_monotonic();
		/* A thread of labbox's that had the signals unblocked took one: the same request. */
		int caught = lb_interrupt_caught();
		if (caught && !s->interrupted && !s->timed_out && !s->init_done) {
			s->interrupted = true;
			s->interrupt_signal = caught;
			terminate(sb, s, init, now, caught == SIGINT ? SIGINT : SIGTERM);
		}
		if (s->next_disk_check && now >= s->next_disk_check && !s->init_done) {
			s->next_disk_check =
				now + (s->fs ? DISK_FS_CHECK_INTERVAL : DISK_CHECK_INTERVAL);
			if (!s->disk_limited && disk_limit_exceeded(sb, s, false)) {
				s->disk_limited = true;
				terminate(sb, s, init, now, SIGTERM);
			}
		}
		if (s->next_gpu_sample && now >= s->next_gpu_sample && !s->init_done) {
			lb_gpumem_sample(&s->gpu);
			now = lb_time_monotonic();
			s->next_gpu_sample = now + LB_GPUMEM_INTERVAL;
		}
		if (s->deadline && !s->timed_out && now >= s->deadline && !s->init_done) {
			s->timed_out = true;
			terminate(sb, s, init, now, SIGTERM);
		}
		if (s->kill_deadline && now >= s->kill_deadline && !s->init_done) {
			if (s->term_next) {
				s->term_next = false;
				kill(init, SIGTERM);
				s->kill_deadline = now + sb->grace;
			} else {
				kill(init, SIGKILL);
				s->kill_deadline = now + 3600; /* once */
			}
		}
		if (s->init_done && s->out_rd < 0 && s->errout_rd < 0 && s->chan_rd < 0 &&
		    s->status_rd < 0)
			return 0;

		struct pollfd pfd[7];
		int fds[7] = {s->out_rd, s->errout_rd, s->chan_rd, s->status_rd, s->sfd,
			      s->in_len == 0 && s->in_wr >= 0 ? s->in_src : -1,
			      s->in_len > 0 ? s->in_wr : -1};
		for (int i = 0; i < 7; i++) {
			pfd[i].fd = fds[i];
			pfd[i].events = i == 6 ? POLLOUT : POLLIN;
			pfd[i].revents = 0;
		}
		int timeout = -1;
		double next = 0;
		if (!s->init_done) {
			if (s->deadline && !s->timed_out)
				next = s->deadline;
			if (s->kill_deadline && (!next || s->kill_deadline < next))
				next = s->kill_deadline;
			if (s->next_disk_check && (!next || s->next_disk_check < next))
				next = s->next_disk_check;
			if (s->next_gpu_sample && (!next || s->next_gpu_sample < next))
				next = s->next_gpu_sample;
		}
		if (next) {
			double ms = (next - now) * 1000.0 + 1;
			timeout = ms < 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms;
		}
		int n = poll(pfd, 7, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[5].revents)
			relay_in_read(s);
		if (pfd[6].revents)
			relay_in_write(s);
		if (pfd[0].revents)
			drain(sb, &s->out_rd, LB_STREAM_STDOUT);
		if (pfd[1].revents)
			drain(sb, &s->errout_rd, LB_STREAM_STDERR);
		if (pfd[2].revents) {
			ssize_t r = read(s->chan_rd, (char *)&s->chan + s->chan_got,
					 sizeof s->chan - s->chan_got);
			if (r > 0)
				s->chan_got += (size_t)r;
			else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(s->chan_rd);
				s->chan_rd = -1;
			}
		}
		if (pfd[3].revents) {
			ssize_t r = read(s->status_rd, (char *)&s->status + s->status_got,
					 sizeof s->status - s->status_got);
			if (r > 0 && (s->status_got += (size_t)r) == sizeof s->status) {
				s->have_status = true;
				s->payload_status = s->status.payload_status;
			}
			if ((r < 0 && errno != EINTR && errno != EAGAIN) || r == 0 ||
			    s->have_status) {
				close(s->status_rd);
				s->status_rd = -1;
			}
		}
		if (pfd[4].revents) {
			struct signalfd_siginfo si;
			if (read(s->sfd, &si, sizeof si) != sizeof si)
				continue;
			if (si.ssi_signo == SIGCHLD) {
				int st;
				pid_t p = wait4(init, &st, WNOHANG, &s->ru);
				if (p == init) {
					s->init_done = true;
					s->init_status = st;
				}
			} else if (!s->init_done) {
				/* Read here, it reaches no handler: the rest of labbox learns of it. */
				lb_interrupt_note((int)si.ssi_signo);
				if (s->interrupted && s->interrupt_signal == (int)si.ssi_signo) {
					/* Asked twice: no more grace. */
					kill(init, SIGKILL);
				}
				if (!s->interrupted && !s->timed_out) {
					s->interrupted = true;
					s->interrupt_signal = (int)si.ssi_signo;
				}
				terminate(sb, s, init, lb_time_monotonic(),
					  s->interrupted && s->interrupt_signal == SIGINT ? SIGINT
											 : SIGTERM);
			}
		}
	}
}

static void fill_isolation(const lb_sandbox *sb, lb_isolation *iso)
{
	iso->user_ns = iso->pid_ns = iso->mount_ns = iso->ipc_ns = iso->uts_ns = true;
	iso->net_ns = sb->net != LB_NET_HOST;
	iso->gpus = sb->gpus[0] ? sb->gpus : NULL;
	iso->network = sb->net == LB_NET_NONE	    ? "none"
		       : sb->net == LB_NET_LOOPBACK ? "loopback"
						    : "host";
	iso->seccomp = true;
	iso->no_new_privs = true;
	iso->landlock = lb_landlock_abi() >= 2 ? "no writes under /proc or /sys" : NULL;
	iso->exec_guard = sb->exec_guard == LB_EXEC_GATED_PYTHON
				  ? "only the run's interpreter, started with its runtime gate"
			  : sb->exec_guard == LB_EXEC_LISTED
				  ? "only the run's interpreter and the system programs it runs itself "
				    "(its start-up, sh -c); no memfd_create, no memory made executable "
				    "once writable"
				  : NULL;
	iso->caps_dropped = true;
	iso->uid = sb->sb_uid;
	iso->gid = sb->sb_gid;
	iso->cgroup = NULL;
	iso->memory_enforced_by = NULL;
	iso->pids_enforced_by = NULL;
	iso->pids_limit = 0;
	iso->cpus_enforced_by = NULL;
}

/* Without --pids-limit, RLIMIT_NPROC is counted per uid in the run's own user namespace
 * (ucounts), so it bounds this run alone. */
#define PIDS_BY_DEFAULT_RLIMIT "rlimit_nproc (default; counted in the run's user namespace)"

/* A cgroup of this process's: labbox-PID-RANDOM, which lb_cgroup_reap_stale knows. */
static void run_cgroup_name(char name[64])
{
	char rnd[9];
	if (lb_random_hex(rnd, 4) < 0)
		snprintf(rnd, sizeof rnd, "0");
	snprintf(name, 64, "labbox-%d-%s", (int)getpid(), rnd);
}

const char *lb_sandbox_cpuset_enforcer(void)
{
	lb_cgroup_support cs;
	lb_cgroup_probe(&cs);
	if (!cs.cpuset)
		return NULL;
	/* Offered is not usable: a v2 cgroup with processes of its own cannot enable the
	 * controller for its children (EBUSY). One cpuset is made and removed here, on a CPU
	 * this process may use, so that cells are not each refused for it later. */
	cpu_set_t mine;
	int cpu = -1;
	if (sched_getaffinity(0, sizeof mine, &mine) == 0)
		for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
			if (CPU_ISSET(i, &mine))
				cpu = i;
	if (cpu < 0)
		return NULL;
	char list[16], name[64], err[400];
	snprintf(list, sizeof list, "%d", cpu);
	run_cgroup_name(name);
	lb_cgroup_limits lim = {.cpuset = list};
	lb_cgroup cg;
	int r = lb_cgroup_create(&cg, &cs, &lim, name, err, sizeof err);
	lb_cgroup_destroy(&cg);
	if (r < 0)
		return NULL;
	return cs.version == 2 ? "cgroup v2 cpuset.cpus" : "cgroup v1 cpuset";
}

long lb_sandbox_default_pids(void)
{
	long pid_max = 0;
	LB_AUTOCLOSE int fd = open("/proc/sys/kernel/pid_max", O_RDONLY | O_CLOEXEC);
	char buf[32];
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (n > 0) {
		buf[n] = '\0';
		pid_max = strtol(buf, NULL, 10);
	}
	/* A process pool of one worker a CPU, each with a BLAS pool of one thread a CPU, starts
	 * about ncpu * ncpu threads (4096 at 64 CPUs, 16,384 at 128): twice that, and never below
	 * 4096 (DataLoader workers on a small machine). A quarter of the host's pids at most: four
	 * runs at their limit still leave the host room. */
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	long cap = LB_SANDBOX_DEFAULT_PIDS;
	if (ncpu > 0 && ncpu < 1024 && 2 * ncpu * ncpu > cap)
		cap = 2 * ncpu * ncpu;
	if (pid_max > 0 && pid_max / 4 < cap)
		cap = pid_max / 4;
	return cap > 64 ? cap : 64;
}

/* The default bound as RLIMIT_NPROC: never above the limit labbox itself has. Raising a hard
 * limit needs a capability the run's user namespace lacks (every run of a user with a lower
 * hard limit failed to start), and a lower soft limit is the user's own, stricter choice. */
static long default_nproc_rlimit(long dflt)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)dflt)
		return rl.rlim_cur > 0 ? (long)rl.rlim_cur : 1;
	return dflt;
}

/* Decide how each requested limit is enforced: a cgroup, an accepted fallback, or a refusal.
 * Returns false (with res filled as a setup failure) when a limit cannot be enforced and the
 * user did not accept less. */
static bool plan_limits(const lb_sandbox *sb, const lb_cgroup_support *cs, lb_sandbox_result *res,
			lb_cgroup_limits *lim, uint64_t *rlimit_data, long *rlimit_nproc)
{
	lb_isolation *iso = &res->isolation;
	char msg[512];
	const char *why = cs->version == 0 ? "this host has no cgroup controllers labbox can use"
			  : getuid() != 0 ? "the controller is not delegated to this user"
					   : "the controller is not available here";
	memset(lim, 0, sizeof *lim);
	if (sb->memory) {
		if (cs->memory) {
			lim->memory = sb->memory;
		} else if (sb->degraded & LB_DEGRADED_MEMORY) {
			*rlimit_data = sb->memory;
			iso->memory_enforced_by = "rlimit_data (per process, accepted)";
		} else {
			snprintf(msg, sizeof msg, "--memory needs a writable memory cgroup (%s); "
				 "accept a per-process limit with --allow-degraded memory", why);
			set_setup_failure(res, "setup_cgroup", ENOTSUP, msg);
			return false;
		}
	}
	if (!sb->pids) {
		/* Every run shares the host's pid space: without a bound of its own, a thread
		 * started per batch and never joined takes every pid of the machine. */
		long dflt = lb_sandbox_default_pids();
		iso->pids_limit = dflt;
		if (cs->pids) {
			lim->pids = dflt + 1;
		} else {
			*rlimit_nproc = default_nproc_rlimit(dflt);
			iso->pids_limit = *rlimit_nproc;
			iso->pids_enforced_by = PIDS_BY_DEFAULT_RLIMIT;
		}
	} else {
		iso->pids_limit = sb->pids;
		if (cs->pids) {
			lim->pids = sb->pids + 1; /* init counts too */
		} else if (sb->degraded & LB_DEGRADED_PIDS) {
			*rlimit_nproc = sb->pids;
			iso->pids_enforced_by = "rlimit_nproc (per uid, accepted)";
		} else {
			snprintf(msg, sizeof msg, "--pids-limit needs a writable pids cgroup (%s); "
				 "accept RLIMIT_NPROC with --allow-degraded pids", why);
			set_setup_failure(res, "setup_cgroup", ENOTSUP, msg);
			return false;
		}
	}
	if (sb->cpuset[0] && cs->cpuset)
		lim->cpuset = sb->cpuset;
	if (sb->cpus > 0) {
		if (cs->cpu) {
			lim->cpus = sb->cpus;
		} else if (sb->degraded & LB_DEGRADED_CPUS) {
			iso->cpus_enforced_by = "not enforced (accepted)";
		} else {
			snprintf(msg, sizeof msg, "--cpus needs a writable cpu cgroup (%s); "
				 "run without a CPU limit with --allow-degraded cpus", why);
			set_setup_failure(res, "setup_cgroup", ENOTSUP, msg);
			return false;
		}
	}
	return true;
}

/* A cgroup per run when one can be had: limits need it, accounting profits from it. */
static bool make_run_cgroup(const lb_sandbox *sb, const lb_cgroup_support *cs,
			    lb_cgroup_limits *lim, lb_cgroup *cg, lb_sandbox_result *res,
			    long *rlimit_nproc)
{
	bool needed = lim->memory || (lim->pids && sb->pids) || lim->cpus > 0 || lim->cpuset;
	if (!needed && !lim->pids && (!cs->memory || !sb->cgroup_accounting))
		return true;
	lb_cgroup_reap_stale(cs);
	char name[64];
	run_cgroup_name(name);
	char err[400];
	if (lb_cgroup_create(cg, cs, lim, name, err, sizeof err) < 0) {
		lb_cgroup_destroy(cg);
		if (!needed) {
			/* accounting falls back to rusage, and says so; the default process bound
			 * to RLIMIT_NPROC, and says so */
			if (lim->pids) {
				*rlimit_nproc = default_nproc_rlimit(lim->pids - 1);
				res->isolation.pids_limit = *rlimit_nproc;
				lim->pids = 0;
				res->isolation.pids_enforced_by = PIDS_BY_DEFAULT_RLIMIT;
			}
			return true;
		}
		set_setup_failure(res, "setup_cgroup", 0, err);
		return false;
	}
	lb_isolation *iso = &res->isolation;
	iso->cgroup = lb_cgroup_name(cg);
	if (lim->memory) {
		iso->memory_enforced_by = cg->version == 2 ? "cgroup v2 memory.max" : "cgroup v1 memory";
		iso->swap_limited = !cg->swap_unlimited;
	}
	if (lim->pids && sb->pids)
		iso->pids_enforced_by = cg->version == 2 ? "cgroup v2 pids.max" : "cgroup v1 pids";
	else if (lim->pids)
		iso->pids_enforced_by = cg->version == 2 ? "cgroup v2 pids.max (default)"
							 : "cgroup v1 pids (default)";
	if (lim->cpus > 0)
		iso->cpus_enforced_by = cg->version == 2 ? "cgroup v2 cpu.max" : "cgroup v1 cpu";
	return true;
}

static int run_tree(lb_sandbox *sb, const lb_diskfs *fs, lb_sandbox_result *res)
{
	memset(res, 0, sizeof *res);
	res->exit_code = -1;
	if (!sb->argv && !sb->fn)
		return -EINVAL;
	int e = lb_sandbox_settle_masks(sb, false);
	if (e < 0)
		return e;
	fill_isolation(sb, &res->isolation);
	lb_cgroup_support cs;
	memset(&cs, 0, sizeof cs);
	/* Every run has a process limit, the default one included: a cgroup may always be used. */
	lb_cgroup_probe(&cs);
	lb_cgroup_limits lim;
	uint64_t rlimit_data = 0;
	long rlimit_nproc = 0;
	if (!plan_limits(sb, &cs, res, &lim, &rlimit_data, &rlimit_nproc))
		return 0;
	lb_cgroup cg;
	memset(&cg, 0, sizeof cg);
	if (!make_run_cgroup(sb, &cs, &lim, &cg, res, &rlimit_nproc))
		return 0;
	char ferr[256] = "";
	int fr = 0;
	LB_AUTOCLOSE int bpf_fd = memfd_create("labbox-seccomp", MFD_CLOEXEC);
	int bpf_ready[2] = {-1, -1};

	int out[2] = {-1, -1}, errout[2] = {-1, -1}, chan[2] = {-1, -1};
	int status[2] = {-1, -1}, sync[2] = {-1, -1}, in[2] = {-1, -1};
	int r = 0;
	if (bpf_fd < 0 || pipe2(bpf_ready, O_CLOEXEC) < 0 ||
	    (sb->stdin_fd >= 0 && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
	    (!sb->merged && pipe2(errout, O_CLOEXEC) < 0) ||
	    pipe2(chan, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 ||
	    pipe2(sync, O_CLOEXEC) < 0) {
		r = -errno;
		goto out_pipes;
	}
	int *bind_fds = calloc(sb->nbinds + 1 + dev_count(sb), sizeof *bind_fds);
	if (!bind_fds) {
		r = -ENOMEM;
		goto out_pipes;
	}

	sigset_t mask, oldmask;
	lb_block_stop_signals(&mask, &oldmask);
	supervise_state s = {.fs = fs, .out_rd = -1, .errout_rd = -1, .chan_rd = -1,
			     .status_rd = -1, .in_src = sb->stdin_fd, .in_wr = -1};
	s.sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (s.sfd < 0) {
		r = -errno;
		goto out_mask;
	}
	/* Checked with the signals blocked, so that one cannot come between the check and the
	 * clone: labbox was asked to stop (during an earlier step, or a helper sandbox of its
	 * own took the signal), and nothing is started after that. */
	int early = lb_interrupt_pending();
	if (early) {
		res->outcome = LB_SB_INTERRUPTED;
		res->interrupted = true;
		res->interrupt_signal = early;
		lb_interrupt_note(early);
		goto out_sfd;
	}

	long ucount_caps[4];
	plan_ucounts(ucount_caps);
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
			      CLONE_NEWUTS | SIGCHLD;
	if (sb->net != LB_NET_HOST)
		flags |= CLONE_NEWNET;
	/* The new root's entries, planned from the host's / and mount table; init clones them. */
	lb_rootfs rootfs;
	char **points = NULL;
	size_t npoints = 0;
	int rr = lb_mountinfo_points(&points, &npoints);
	if (rr == 0)
		rr = lb_rootfs_plan(sb, "/", points, npoints, &rootfs);
	lb_mountinfo_points_free(points, npoints);
	if (rr < 0) {
		char msg[160];
		snprintf(msg, sizeof msg, "list the host's root and mount table: %s", strerror(-rr));
		set_setup_failure(res, "setup_root", -rr, msg);
		goto out_sfd;
	}
	int cgroup_fds[LB_CGROUP_SELF_FDS];
	bool self_move = cg.version == 1 && lb_cgroup_open_self(&cg, cgroup_fds) == 0;
	double t0 = lb_time_monotonic();
	fflush(NULL);
	pid_t init = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
	if (init != 0)
		lb_rootfs_free(&rootfs);
	if (init != 0 && self_move)
		lb_cgroup_close_self(cgroup_fds);
	if (init < 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "create namespaces: %s", strerror(errno));
		set_setup_failure(res, "clone", errno, msg);
		goto out_sfd;
	}
	if (init == 0) {
		/* The image's lock is the supervisor's alone: held by init too (a fork shares the
		 * open file), it outlived a labbox killed with SIGKILL while init was dying, and
		 * the next run took the image for one still in use and left it mounted. */
		if (fs && fs->lock_fd >= 0)
			close(fs->lock_fd);
		init_ctx c = {.sb = sb,
			      .sync_rd = sync[0],
			      .chan_wr = chan[1],
			      .status_wr = status[1],
			      .out_wr = out[1],
			      .errout_wr = errout[1],
			      .in_rd = in[0],
			      .bind_fds = bind_fds,
			      .dev_fds = bind_fds + sb->nbinds + 1,
			      .cgroup_fds = self_move ? cgroup_fds : NULL,
			      .bpf_fd = bpf_fd,
			      .bpf_ready = bpf_ready[0],
			      .rlimit_data = rlimit_data,
			      .rlimit_nproc = rlimit_nproc,
			      .disk_fs = fs != NULL,
			      .landlock = res->isolation.landlock != NULL,
			      .trace_go = -1,
			      .rootfs = &rootfs};
		memcpy(c.ucount_cap, ucount_caps, sizeof c.ucount_cap);
		close(sync[1]);
		close(chan[0]);
		close(status[0]);
		close(out[0]);
		if (errout[0] >= 0)
			close(errout[0]);
		if (in[1] >= 0)
			close(in[1]);
		close(bpf_ready[1]);
		close(s.sfd);
		init_main(&c);
	}
	close(sync[0]);
	sync[0] = -1;
	close(chan[1]);
	chan[1] = -1;
	close(status[1]);
	status[1] = -1;
	close(out[1]);
	out[1] = -1;
	if (errout[1] >= 0) {
		close(errout[1]);
		errout[1] = -1;
	}

	char maperr[256];
	if (write_id_maps(sb, init, maperr, sizeof maperr) < 0) {
		kill(init, SIGKILL);
		waitpid(init, NULL, 0);
		set_setup_failure(res, "setup_user_ns", 0, maperr);
		goto out_sfd;
	}
	if (write(sync[1], "1", 1) != 1) {
		kill(init, SIGKILL);
	}
	close(bpf_ready[0]);
	bpf_ready[0] = -1;

	/* Compile the filter now, while init builds the root: off the critical path. */
	scmp_filter_ctx filter = NULL;
	/* fallocate is refused only where the limit is polled: a file system of the limit's
	 * size refuses a reservation past it by itself. */
	fr = lb_seccomp_build(&filter, sb->net != LB_NET_NONE, sb->disk_limit > 0 && !fs,
			      sb->exec_guard == LB_EXEC_LISTED, ferr, sizeof ferr);
	if (fr == 0) {
		fr = lb_seccomp_export(filter, bpf_fd);
		if (fr < 0)
			snprintf(ferr, sizeof ferr, "export the seccomp filter: %s", strerror(-fr));
	}
	lb_seccomp_free(filter);
	if (write(bpf_ready[1], fr == 0 ? "y" : "n", 1) != 1)
		kill(init, SIGKILL);
	close(bpf_ready[1]);
	bpf_ready[1] = -1;

	/* While init builds the root (v2: v1's init moved itself). */
	if (cg.version && !self_move && lb_cgroup_attach(&cg, init) < 0) {
		char msg[128];
		snprintf(msg, sizeof msg, "cannot move the sandbox into its cgroup: %s",
			 strerror(errno));
		kill(init, SIGKILL);
		waitpid(init, NULL, 0);
		set_setup_failure(res, "setup_cgroup", errno, msg);
		goto out_sfd;
	}
	if (write(sync[1], "2", 1) != 1)
		kill(init, SIGKILL);
	close(sync[1]);
	sync[1] = -1;

	s.out_rd = lb_steal_fd(&out[0]);
	s.errout_rd = lb_steal_fd(&errout[0]);
	s.chan_rd = lb_steal_fd(&chan[0]);
	s.status_rd = lb_steal_fd(&status[0]);
	if (in[0] >= 0) {
		close(in[0]);
		in[0] = -1;
		s.in_wr = lb_steal_fd(&in[1]);
		fcntl(s.in_wr, F_SETFL, O_NONBLOCK);
	}
	if (sb->budget > 0)
		s.deadline = t0 + sb->budget;
	if (sb->disk_limit && sb->disk_path) {
		s.free_at_start = fs_available(sb->disk_path, &s.inodes_at_start);
		s.inode_limit = lb_sandbox_inode_limit(sb->disk_limit, s.inodes_at_start);
		/* A disk already near the floor keeps half of what it had: a run may still write. */
		if (!fs)
			s.floor = fs_floor(sb->disk_path);
		if (s.floor > s.free_at_start / 2)
			s.floor = s.free_at_start / 2;
		lb_disk_measure_t m0;
		if (s.floor && lb_disk_measure(sb->disk_path, &m0) == 0)
			s.bytes_at_start = m0.bytes;
		else
			s.floor = 0; /* what the run wrote cannot be told from what it was given */
		s.init_pid = init;
		s.next_disk_check = t0 + (fs ? DISK_FS_CHECK_INTERVAL : DISK_CHECK_INTERVAL);
	}
	/* Peak GPU memory, when GPUs are in and the host has nvidia-smi. */
	if (sb->gpus[0] && lb_gpumem_start(&s.gpu, init) == 0)
		s.next_gpu_sample = lb_time_monotonic() + 0.2;
	r = supervise(sb, init, &s);
	if (r < 0) {
		kill(init, SIGKILL);
		waitpid(init, NULL, 0);
		goto out_sfd;
	}

	res->wall_s = lb_time_monotonic() - t0;
	res->cpu_user_s = (double)s.ru.ru_utime.tv_sec + (double)s.ru.ru_utime.tv_usec / 1e6;
	res->cpu_sys_s = (double)s.ru.ru_stime.tv_sec + (double)s.ru.ru_stime.tv_usec / 1e6;
	res->peak_rss_bytes = (uint64_t)s.ru.ru_maxrss * 1024;
	res->peak_source = "rusage";
	res->max_rss_bytes = res->peak_rss_bytes;
	res->peak_memory_source = "rusage maxrss of the largest process";
	if (cg.version) {
		uint64_t peak = 0;
		lb_cgroup_read(&cg, &peak, &res->oom_killed, &res->oom_counted);
		if (peak) {
			res->peak_rss_bytes = peak;
			res->peak_source = "cgroup";
			/* lb_cgroup_read takes v2's file when there is a v2 cgroup, else v1's. */
			res->peak_memory_source = cg.v2[0] ? "cgroup memory.peak" : "cgroup v1 max_usage";
		}
	}
	res->peak_memory_bytes = res->peak_rss_bytes;
	/* The checks run four times a second, so a tree that passes the limit and ends (the file
	 * size rlimit makes its next write fail) can finish between two of them: one last
	 * measurement makes the verdict the same whichever came first. */
	if (fs && !s.timed_out && !s.interrupted) {
		/* exp/'s own file system refused what passed the limit: a tree that failed while
		 * it was full failed of the limit (ENOSPC); one that coped and exited 0 did not. */
		bool failed = s.have_status && !(WIFEXITED(s.payload_status) &&
						 WEXITSTATUS(s.payload_status) == 0);
		/* Only a failure asks (the high-water mark costs a sync of what the run wrote). */
		if (failed)
			disk_limit_exceeded(sb, &s, true);
		s.disk_limited = s.fs_full_seen && failed;
	} else if (s.next_disk_check && !s.disk_limited && !s.timed_out && !s.interrupted &&
		   disk_limit_exceeded(sb, &s, true)) {
		s.disk_limited = true;
	}
	snprintf(res->disk_detail, sizeof res->disk_detail, "%s", s.disk_limited ? s.disk_detail : "");
	res->timed_out = s.timed_out;
	res->disk_limited = s.disk_limited;
	res->gpu_sampled = s.gpu.active && s.gpu.samples > 0;
	res->peak_gpu_bytes = s.gpu.peak_bytes;
	res->interrupted = s.interrupted;
	res->interrupt_signal = s.interrupt_signal;
	if (s.chan_got == sizeof s.chan) {
		s.chan.step[sizeof s.chan.step - 1] = '\0';
		s.chan.msg[sizeof s.chan.msg - 1] = '\0';
		if (fr < 0) /* the payload only knows that it got no filter; this says why */
			set_setup_failure(res, "setup_seccomp", -fr, ferr);
		else
			set_setup_failure(res, s.chan.step, s.chan.err, s.chan.msg);
	} else if (s.have_status || s.timed_out || s.interrupted || s.disk_limited) {
		int st = s.payload_status;
		if (s.have_status) {
			res->exec_refused = s.status.exec_refused;
			memcpy(res->exec_refusals, s.status.refusals, sizeof res->exec_refusals);
			res->nfull_tmpfs = s.status.nfull < LB_SB_MAX_FULL ? s.status.nfull
									   : LB_SB_MAX_FULL;
			memcpy(res->full_tmpfs, s.status.full, sizeof res->full_tmpfs);
			if (!s.status.guarded)
				res->isolation.exec_guard = NULL;
		}
		if (s.have_status && WIFEXITED(st)) {
			res->exit_code = WEXITSTATUS(st);
		} else if (s.have_status && WIFSIGNALED(st)) {
			res->term_signal = WTERMSIG(st);
		} else {
			res->term_signal = SIGKILL; /* the grace ran out */
		}
		if (s.timed_out)
			res->outcome = LB_SB_TIMEOUT;
		else if (s.disk_limited)
			res->outcome = LB_SB_DISK_LIMIT;
		else if (s.interrupted)
			res->outcome = LB_SB_INTERRUPTED;
		else
			res->outcome = res->term_signal ? LB_SB_SIGNALED : LB_SB_EXITED;
	} else {
		char msg[128];
		snprintf(msg, sizeof msg, "the sandbox's init process ended unexpectedly (status %d)",
			 s.init_status);
		set_setup_failure(res, "init", 0, msg);
	}

out_sfd:;
	int *fds[] = {&s.out_rd, &s.errout_rd, &s.chan_rd, &s.status_rd, &s.sfd, &s.in_wr};
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
out_mask:
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	free(bind_fds);
out_pipes:
	lb_cgroup_destroy(&cg);
	close_pair(bpf_ready);
	close_pair(out);
	close_pair(errout);
	close_pair(chan);
	close_pair(status);
	close_pair(sync);
	close_pair(in);
	return r;
}

/* exp/ gets a file system of the limit's size when that was asked for and can be had; a
 * polled limit when it was accepted instead; else the run is refused. */
static bool plan_disk(lb_sandbox *sb, lb_diskfs *fs, bool *use_fs, lb_sandbox_result *res)
{
	*use_fs = false;
	if (!sb->disk_limit || !sb->disk_path)
		return true;
	const char *polled = "polling (exp/ measured up to four times a second; RLIMIT_FSIZE)";
	res->isolation.disk_enforced_by = polled;
	if (!sb->disk_fs)
		return true;
	char why[256], msg[600];
	if (!lb_diskfs_available(why, sizeof why)) {
		if (sb->degraded & LB_DEGRADED_DISK) {
			res->isolation.disk_enforced_by =
				"polling (accepted: no file system of exp/'s own here)";
			return true;
		}
		snprintf(msg, sizeof msg, "--disk-limit needs a file system of exp/'s own to hold "
			 "(%s); accept a polled limit, which a fast writer can pass between two "
			 "checks, with --allow-degraded disk", why);
		set_setup_failure(res, "setup_disk", ENOTSUP, msg);
		res->isolation.disk_enforced_by = NULL; /* refused: nothing held a run */
		return false;
	}
	/* Runs beside this one whose labbox was killed left their exp/ mounted: merged back. */
	char runs[PATH_MAX];
	snprintf(runs, sizeof runs, "%s", sb->disk_path);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(runs, '/');
		if (slash && slash != runs)
			*slash = '\0';
	}
	lb_diskfs_reap(runs);
	uint64_t inodes_free = 0;
	fs_available(sb->disk_path, &inodes_free);
	int r = lb_diskfs_setup(fs, sb->disk_path, sb->disk_limit,
				lb_sandbox_inode_limit(sb->disk_limit, inodes_free), sb->sb_uid,
				sb->sb_gid, msg, sizeof msg);
	if (r < 0) {
		set_setup_failure(res, "setup_disk", -r, msg);
		return false;
	}
	*use_fs = true;
	return true;
}

int lb_sandbox_run(lb_sandbox *sb, lb_sandbox_result *res)
{
	memset(res, 0, sizeof *res);
	res->exit_code = -1;
	if (!sb->argv && !sb->fn)
		return -EINVAL;
	fill_isolation(sb, &res->isolation);
	lb_diskfs fs = {.host_fd = -1};
	bool use_fs;
	if (!plan_disk(sb, &fs, &use_fs, res))
		return 0;
	const char *enforced = res->isolation.disk_enforced_by;
	int r = run_tree(sb, use_fs ? &fs : NULL, res);
	res->isolation.disk_enforced_by = use_fs ? "file system (exp/ on an ext4 image of the "
						   "limit's size, through a loop device)"
						 : enforced;
	if (use_fs) {
		char err[PATH_MAX + 300];
		/* The tree has ended: nothing writes to exp/ any more. Bringing its files back is
		 * labbox's work, but how long it takes is the run's choice (how many files): it
		 * ends where the budget and grace end, with at least the grace (5 s at least) for
		 * a run that used its whole budget. */
		double ended = lb_time_monotonic(), until = 0;
		if (sb->budget > 0) {
			double least = sb->grace > MERGE_LEAST_S ? sb->grace : MERGE_LEAST_S;
			until = ended - res->wall_s + sb->budget + sb->grace;
			if (until < ended + least)
				until = ended + least;
		}
		int fr = lb_diskfs_finish(&fs, until, err, sizeof err);
		res->post_run_s = lb_time_monotonic() - ended;
		if (fr < 0 && res->outcome != LB_SB_SETUP_FAILED)
			set_setup_failure(res, "disk_merge", fr == -ETIME ? ETIME : EIO, err);
		if (fs.signal && res->outcome != LB_SB_SETUP_FAILED && !res->interrupted) {
			/* asked to stop while the run's files were brought back: recorded, then
			 * labbox ends as interrupted */
			res->interrupted = true;
			res->interrupt_signal = fs.signal;
			res->outcome = LB_SB_INTERRUPTED;
		}
	}
	return r;
}

typedef struct capture_ctx {
	lb_buf *out;
	size_t max;
	int err;
} capture_ctx;

static void capture_output(void *ctx, lb_stream stream, const char *data, size_t len)
{
	capture_ctx *c = ctx;
	if (stream != LB_STREAM_STDOUT || c->err)
		return;
	size_t room = c->max > c->out->len ? c->max - c->out->len : 0;
	if (len > room)
		len = room;
	if (len)
		c->err = lb_buf_append(c->out, data, len);
}

int lb_sandbox_capture(lb_sandbox *sb, size_t max, lb_buf *out, lb_sandbox_result *res)
{
	capture_ctx c = {.out = out, .max = max};
	int r = lb_sandbox_set_output(sb, false, capture_output, &c);
	if (r == 0)
		r = lb_sandbox_run(sb, res);
	return r < 0 ? r : c.err;
}
