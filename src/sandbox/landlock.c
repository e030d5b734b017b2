/* Kernel write rules inside the sandbox (Landlock): no file under /proc or /sys is opened for
 * writing by the payload, whatever path or directory descriptor names it.
 *
 * Every other write is already bounded by the mounts (the host read-only, the outputs and the
 * private /tmp writable). /proc is the exception the mounts cannot make: the payload's own
 * /proc/self/mem is writable by it, and writing its own memory undoes anything in the process
 * (the runtime gate's state among it). The runtime gate judges writes by the path an audit
 * event shows, and `os.open(name, dir_fd=...)` shows no directory; the kernel's rule does not
 * depend on the spelling. */
#include "labbox/util.h"
#include "sandbox_internal.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int lb_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v < 0 ? -errno : (int)v;
}

/* Writing, and moving or linking a file between directories (REFER, ABI 2): a ruleset that
 * does not handle REFER refuses every link or rename into another directory (EXDEV), which
 * experiments do (os.link, moving a checkpoint into results/); so ABI 1 is not used. */
#define LL_ACCESS (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REFER)

static int add_beneath(int ruleset, int fd, bool dir)
{
	struct landlock_path_beneath_attr pb = {
		/* REFER is a directory's right: a file's rule may name only a file's */
		.allowed_access = dir ? LL_ACCESS : LANDLOCK_ACCESS_FS_WRITE_FILE,
		.parent_fd = fd,
	};
	return syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0
		       ? -errno
		       : 0;
}

/* Write access is granted beneath each directory and file at the top of the sandbox's root
 * but proc and sys (their mounts' own rules still apply: a read-only mount stays one); links
 * at the top (/lib -> usr/lib) lead to what is granted already. Needs no_new_privs set. */
int sb_landlock_confine_writes(void)
{
	struct landlock_ruleset_attr attr = {.handled_access_fs = LL_ACCESS};
	LB_AUTOCLOSE int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (ruleset < 0)
		return -errno;
	DIR *d = opendir("/");
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "proc") || !strcmp(e->d_name, "sys"))
			continue;
		int fd = openat(dirfd(d), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone, or not ours to open: nothing to grant */
		struct stat st;
		if (fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			r = add_beneath(ruleset, fd, S_ISDIR(st.st_mode));
		close(fd);
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	if (r < 0)
		return r;
	return syscall(SYS_landlock_restrict_self, ruleset, 0) < 0 ? -errno : 0;
}
