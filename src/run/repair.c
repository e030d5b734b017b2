/* The repair loop's host side: the repair command (run as the user, outside the sandbox, with
 * a time limit), the copies of the experiment it works on, the diffs between them, and --apply.
 * The loop itself is attempts.c. */
#include "attempts_internal.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int run_fmt(char *out, size_t n, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int r = vsnprintf(out, n, f, ap);
	va_end(ap);
	return r;
}

extern char **environ;

/* labbox's environment with env_extra added (a name given there replaces labbox's own). */
static int build_env(char *const *env_extra, lb_strv *out)
{
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
		bool replaced = false;
		for (char *const *x = env_extra; x && *x; x++)
			replaced |= strncmp(*x, *e, n) == 0 && (*x)[n] == '=';
		if (!replaced && lb_strv_push(out, *e) < 0)
			return -ENOMEM;
	}
	for (char *const *x = env_extra; x && *x; x++)
		if (lb_strv_push(out, *x) < 0)
			return -ENOMEM;
	/* CMD runs in a copy of the experiment: `python3 -m tool` or `python3 -c` there would put
	 * the working directory first on sys.path, and import the experiment's json.py (or any
	 * module it ships by a library's name) on the host. A user who sets PYTHONSAFEPATH
	 * (even empty) keeps their own. */
	if (!getenv("PYTHONSAFEPATH") && lb_strv_push(out, "PYTHONSAFEPATH=1") < 0)
		return -ENOMEM;
	return 0;
}

static void drain(int fd, lb_runlog *log, uint64_t *seen)
{
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		lb_runlog_write(log, buf, (size_t)n);
		*seen += (uint64_t)n;
	}
}

/* ---- the keeper: the repair command's whole tree, not only its process group ------------------
 *
 * A process group does not hold what the command starts in a session of its own (setsid, a
 * daemon, an agent's tool server): it leaves the group, and when its parent dies it is
 * reparented to init, out of every kill. So labbox forks a keeper, a child subreaper
 * (PR_SET_CHILD_SUBREAPER) that runs `sh -c CMD` beneath it: every orphan of the command's
 * tree is reparented to the keeper, which ends them all, by walking /proc for its descendants,
 * when sh exits, on SIGTERM (labbox's time limit or interrupt, or labbox's own death: its
 * PDEATHSIG) after REPAIR_GRACE_S, and exits with sh's status. Processes started through
 * another service (systemd-run, at, a container engine) are that service's, out of reach.
 * labbox may have threads: the keeper calls only async-signal-safe functions after fork. */

#define KEEPER_MAX_PIDS 8192

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static long parse_num(const char *p, const char **end)
{
	long v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	*end = p;
	return v;
}

/* The parent of pid, from /proc/pid/stat (the field after the command's last ')'), or -1. */
static pid_t proc_ppid(pid_t pid)
{
	char path[48], buf[1024];
	char num[24];
	int k = 0;
	for (long v = pid; k == 0 || v; v /= 10)
		num[k++] = (char)('0' + v % 10);
	int n = 0;
	memcpy(path, "/proc/", 6);
	n = 6;
	while (k)
		path[n++] = num[--k];
	memcpy(path + n, "/stat", 6);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	char *rp = NULL;
	for (char *q = buf; *q; q++)
		if (*q == ')')
			rp = q;
	/* ") S PPID ..." */
	if (!rp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
		return -1;
	const char *e;
	long pp = parse_num(rp + 4, &e);
	return e == rp + 4 ? -1 : (pid_t)pp;
}

/* Send sig to every descendant of this process; how many there were. */
static size_t keeper_signal_tree(int sig)
{
	/* on the stack (72 KiB): no malloc after fork */
	pid_t pids[KEEPER_MAX_PIDS], ppids[KEEPER_MAX_PIDS];
	bool mine[KEEPER_MAX_PIDS];
	size_t n = 0;
	int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	char buf[16384];
	long got;
	while (n < KEEPER_MAX_PIDS && (got = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
		for (long off = 0; off < got && n < KEEPER_MAX_PIDS;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			const char *e;
			long v = parse_num(d->d_name, &e);
			if (e == d->d_name || *e)
				continue;
			pid_t pp = proc_ppid((pid_t)v);
			if (pp > 0) {
				pids[n] = (pid_t)v;
				ppids[n] = pp;
				mine[n++] = false;
			}
		}
	close(dfd);
	pid_t self = getpid();
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (mine[i])
				continue;
			bool under = ppids[i] == self;
			for (size_t j = 0; j < n && !under; j++)
				under = mine[j] && pids[j] == ppids[i];
			if (under)
				mine[i] = grew = true;
		}
	}
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		if (mine[i]) {
			kill(pids[i], sig);
			count++;
		}
	return count;
}

/* Kill every descendant, reap them all; sh's status in *status when it is among them. */
static void keeper_end_tree(pid_t sh, int *status, bool *sh_done)
{
	for (int round = 0; round < 1000; round++) {
		size_t left = keeper_signal_tree(SIGKILL);
		int st;
		pid_t w;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == sh) {
				*status = st;
				*sh_done = true;
			}
		if (left == 0 && w < 0 && errno == ECHILD)
			return;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* The keeper's side: its own process group, a subreaper, ended with labbox. */
static void keeper(pid_t labbox, const char *cmd, const char *cwd, int in, int out, char **envp)
{
	setpgid(0, 0);
	sigset_t set, old;
	lb_block_stop_signals(&set, &old);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
	    getppid() != labbox)
		_exit(126);
	pid_t sh = fork();
	if (sh < 0)
		_exit(126);
	if (sh == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 || chdir(cwd) < 0)
			_exit(126);
		execve("/bin/sh", (char *[]){"sh", "-c", (char *)cmd, NULL}, envp);
		_exit(127);
	}
	close(out);
	int status = 0;
	bool sh_done = false, termed = false;
	struct timespec grace_end = {0};
	while (!sh_done) {
		siginfo_t si;
		struct timespec tick = {0, 100 * 1000 * 1000};
		int sig = sigtimedwait(&set, &si, &tick);
		if (sig == SIGTERM && !termed) {
			/* the time limit, an interrupt, or labbox gone: the whole tree gets the grace */
			termed = true;
			keeper_signal_tree(SIGTERM);
			clock_gettime(CLOCK_MONOTONIC, &grace_end);
			grace_end.tv_sec += (time_t)REPAIR_GRACE_S;
		}
		int st;
		pid_t w;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == sh) {
				status = st;
				sh_done = true;
			}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (termed && (now.tv_sec > grace_end.tv_sec ||
			       (now.tv_sec == grace_end.tv_sec && now.tv_nsec >= grace_end.tv_nsec)))
			break;
	}
	/* sh has exited, or the grace is over: whatever is left of the tree is killed. */
	keeper_end_tree(sh, &status, &sh_done);
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	struct rlimit nocore = {0, 0};
	setrlimit(RLIMIT_CORE, &nocore);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), sig);
	_exit(128 + sig);
}

int repair_run_cmd(const char *cmd, const char *cwd, const char *stdin_path,
		   char *const *env_extra, double timeout, const char *log_path,
		   repair_cmd_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	lb_strv env = {0};
	if (build_env(env_extra, &env) < 0) {
		lb_strv_free(&env);
		return -ENOMEM;
	}
	LB_AUTOCLOSE int in = open(stdin_path, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		int e = errno;
		run_fmt(err, errlen, "cannot open %s for the repair command: %s", stdin_path, strerror(e));
		lb_strv_free(&env);
		return -e;
	}
	lb_runlog *log = NULL;
	int r = lb_runlog_open(log_path, REPAIR_LOG_CAP, &log);
	if (r < 0) {
		run_fmt(err, errlen, "cannot create %s: %s", log_path, strerror(-r));
		lb_strv_free(&env);
		return r;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		lb_runlog_close(log, NULL, NULL, NULL);
		lb_strv_free(&env);
		return r;
	}
	double t0 = lb_time_monotonic();
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid == 0)
		keeper(self, cmd, cwd, in, p[1], env.v);
	lb_strv_free(&env);
	close(p[1]);
	if (pid < 0) {
		r = -errno;
		close(p[0]);
		lb_runlog_close(log, NULL, NULL, NULL);
		run_fmt(err, errlen, "cannot start the repair command: %s", strerror(-r));
		return r;
	}
	setpgid(pid, pid); /* also here: the group must exist before a kill reaches for it */
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	int status = 0;
	bool termed = false;
	for (;;) {
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		poll(&pf, 1, 100);
		drain(p[0], log, &res->log_bytes);
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		double t = lb_time_monotonic() - t0;
		/* The keeper ends the tree (SIGTERM, REPAIR_GRACE_S, SIGKILL) and then exits. */
		if (lb_interrupt_caught() && !termed) {
			/* labbox was asked to stop: the command gets the grace a timeout gives it */
			kill(pid, SIGTERM);
			termed = true;
			timeout = t;
		} else if (timeout > 0 && t >= timeout && !termed) {
			kill(pid, SIGTERM);
			res->timed_out = termed = true;
		} else if (termed && t >= timeout + REPAIR_GRACE_S + 5) {
			/* a keeper that cannot end its tree: its group at least */
			kill(-pid, SIGKILL);
		}
	}
	res->duration_s = lb_time_monotonic() - t0;
	/* The keeper has killed what the command left; its group once more, should it have
	 * failed to start its watch (no subreaper). */
	kill(-pid, SIGKILL);
	drain(p[0], log, &res->log_bytes);
	close(p[0]);
	uint64_t written = 0;
	lb_runlog_close(log, &res->log_bytes, &written, &res->log_truncated);
	if (WIFEXITED(status)) {
		res->exit_code = WEXITSTATUS(status);
	} else {
		res->exit_code = -1;
		res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	return 0;
}

int repair_copy(const char *src, const char *dst, char *err, size_t errlen)
{
	json_object *files = json_object_new_object();
	int r = lb_record_stage(src, dst, (uid_t)-1, (gid_t)-1, files, NULL, err, errlen);
	json_object_put(files);
	return r;
}

#define DIFF_TIMEOUT_S 60

/* A view of the copy src at dst for diff to read: directories as they are, regular files
 * hard-linked (no bytes copied), and every other entry as a small text file saying what it
 * is. diff then never reads through a link: a repair that removes `notes.txt -> /etc/shadow`
 * shows the link's target path in the patch, never the target's content, and a link to a
 * FIFO or a device cannot hold diff. */
static int diff_view(int sfd, int dfd, int depth)
{
	if (depth > 64)
		return -ELOOP;
	DIR *d = lb_dir_stream(sfd);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		const char *n = e->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "__pycache__") ||
		    !strcmp(n, ".git") || !strcmp(n, ".labbox"))
			continue;
		struct stat st;
		if (fstatat(sfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = errno == ENOENT ? 0 : -errno;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (mkdirat(dfd, n, 0700) < 0) {
				r = -errno;
				break;
			}
			int s2 = openat(sfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int d2 = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = s2 < 0 || d2 < 0 ? -errno : diff_view(s2, d2, depth + 1);
			if (s2 >= 0)
				close(s2);
			if (d2 >= 0)
				close(d2);
			continue;
		}
		if (S_ISREG(st.st_mode) && linkat(sfd, n, dfd, n, 0) == 0)
			continue;
		/* Not a regular file, or one that cannot be linked (another file system): its
		 * description, or for a regular file its bytes, read here without following. */
		char text[PATH_MAX + 64];
		int len;
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t k = readlinkat(sfd, n, target, sizeof target - 1);
			target[k < 0 ? 0 : k] = '\0';
			len = snprintf(text, sizeof text, "symbolic link to %s\n", target);
		} else if (!S_ISREG(st.st_mode)) {
			len = snprintf(text, sizeof text, "%s (not compared)\n",
				       S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket"
				       : "a device");
		} else
			len = -1;
		int out = openat(dfd, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0) {
			r = -errno;
			break;
		}
		if (len >= 0)
			r = lb_write_all(out, text, (size_t)len);
		else {
			int in = openat(sfd, n, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			char buf[65536];
			ssize_t k = 0;
			while (in >= 0 && r == 0 && (k = read(in, buf, sizeof buf)) > 0)
				r = lb_write_all(out, buf, (size_t)k);
			if (in < 0 || k < 0)
				r = -errno;
			if (in >= 0)
				close(in);
		}
		close(out);
	}
	closedir(d);
	return r;
}

static int diff_view_of(const char *src, const char *dst)
{
	if (mkdir(dst, 0700) < 0)
		return -errno;
	LB_AUTOCLOSE int sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	LB_AUTOCLOSE int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0 || dfd < 0)
		return -errno;
	return diff_view(sfd, dfd, 0);
}

int repair_diff(const char *old_dir, const char *new_dir, const char *patch_path, bool *changed,
		char *err, size_t errlen)
{
	/* a/ and b/ in a directory of their own, so the patch reads as git's and applies with
	 * patch -p1 in the experiment directory. */
	char cmp[PATH_MAX], a[PATH_MAX + 4], b[PATH_MAX + 4];
	if (run_fmt(cmp, sizeof cmp, "%s.cmp", patch_path) >= (int)sizeof cmp)
		return -ENAMETOOLONG;
	repair_remove_tree(cmp);
	if (mkdir(cmp, 0700) < 0)
		return -errno;
	run_fmt(a, sizeof a, "%s/a", cmp);
	run_fmt(b, sizeof b, "%s/b", cmp);
	int r = 0;
	if ((r = diff_view_of(old_dir, a)) < 0 || (r = diff_view_of(new_dir, b)) < 0) {
		repair_remove_tree(cmp);
		run_fmt(err, errlen, "cannot prepare %s and %s for diff: %s", old_dir, new_dir,
			strerror(-r));
		return r;
	}
	LB_AUTOCLOSE int out = open(patch_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		r = -errno;
		repair_remove_tree(cmp);
		run_fmt(err, errlen, "cannot create %s: %s", patch_path, strerror(-r));
		return r;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || chdir(cmp) < 0)
			_exit(126);
		/* A link in the copies to a FIFO or a device would hold diff (and labbox) forever:
		 * the alarm outlives the exec. */
		alarm(DIFF_TIMEOUT_S);
		execlp("diff", "diff", "-ruN", "-x", "__pycache__", "-x", ".git", "-x", ".labbox",
		       "a", "b", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		r = -errno;
	repair_remove_tree(cmp);
	if (r < 0)
		return r;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
		run_fmt(err, errlen, "diff -ruN of %s and %s took more than %d s (a link to a FIFO or a "
			 "device in the experiment?)", old_dir, new_dir, DIFF_TIMEOUT_S);
		return -ETIMEDOUT;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
	if (code == 127) {
		run_fmt(err, errlen, "diff is not installed (Debian's diffutils): the repair loop "
			 "records every change as a unified diff");
		return -ENOENT;
	}
	if (code != 0 && code != 1) {
		run_fmt(err, errlen, "diff -ruN of %s and %s failed (exit %d)", old_dir, new_dir, code);
		return -EIO;
	}
	*changed = code == 1;
	return 0;
}

static int chmod_dir(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

int repair_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	/* A repair command may leave a directory read-only: opened up first, then removed. */
	nftw(path, chmod_dir, 16, FTW_PHYS);
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return lstat(path, &st) < 0 ? 0 : -ENOTEMPTY;
}

/* ---- --apply ----------------------------------------------------------------------------- */

typedef struct apply_ctx {
	const char *base, *final, *dst;
	size_t nchanged;
	int error;
	char *err;
	size_t errlen;
} apply_ctx;

static bool skipped_name(const char *name)
{
	/* The copies never had these (staging leaves them out): dst's own are not touched. */
	return strcmp(name, ".git") == 0 || strcmp(name, ".labbox") == 0 ||
	       strcmp(name, "__pycache__") == 0;
}

static bool same_file(const char *a, const char *b)
{
	LB_AUTOFREE char *da = NULL, *db = NULL;
	size_t la = 0, lbn = 0;
	if (lb_read_file_at(AT_FDCWD, a, (size_t)1 << 30, &da, &la) < 0 ||
	    lb_read_file_at(AT_FDCWD, b, (size_t)1 << 30, &db, &lbn) < 0)
		return false;
	return la == lbn && memcmp(da, db, la) == 0;
}

static void apply_fail(apply_ctx *c, const char *what, int r)
{
	if (c->error)
		return;
	c->error = r;
	run_fmt(c->err, c->errlen, "--apply: cannot write %s: %s", what, strerror(-r));
}

static void apply_symlink(apply_ctx *c, const char *from, const char *to)
{
	char target[PATH_MAX], have[PATH_MAX];
	ssize_t n = readlink(from, target, sizeof target - 1);
	if (n < 0)
		return;
	target[n] = '\0';
	ssize_t h = readlink(to, have, sizeof have - 1);
	if (h >= 0) {
		have[h] = '\0';
		if (strcmp(have, target) == 0)
			return;
	}
	unlink(to);
	if (symlink(target, to) < 0)
		apply_fail(c, to, -errno);
	else
		c->nchanged++;
}

static void apply_file(apply_ctx *c, const char *from, const char *to, mode_t mode)
{
	if (same_file(from, to))
		return;
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	int r = lb_read_file_at(AT_FDCWD, from, (size_t)1 << 30, &data, &len);
	if (r == 0)
		r = lb_write_file_atomic_mode(to, data, len, mode & 0777);
	if (r == 0 && chmod(to, mode & 07777) < 0)
		r = -errno;
	if (r < 0)
		apply_fail(c, to, r);
	else
		c->nchanged++;
}

/* Files of final/rel into dst/rel; depth is bounded by PATH_MAX. */
static void apply_dir(apply_ctx *c, const char *rel)
{
	char dir[PATH_MAX];
	if (run_fmt(dir, sizeof dir, "%s%s%s", c->final, *rel ? "/" : "", rel) >= (int)sizeof dir)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while (!c->error && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    skipped_name(e->d_name))
			continue;
		char sub[PATH_MAX], from[PATH_MAX * 2], to[PATH_MAX * 2];
		if (run_fmt(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof sub)
			continue;
		run_fmt(from, sizeof from, "%s/%s", c->final, sub);
		run_fmt(to, sizeof to, "%s/%s", c->dst, sub);
		struct stat st;
		if (lstat(from, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			struct stat dst_st;
			if (lstat(to, &dst_st) == 0 && !S_ISDIR(dst_st.st_mode)) {
				/* a link in the experiment (to code it shares with others, staged by
				 * content): what the repair changed there is not written through it */
				if (!c->error) {
					c->error = -ENOTDIR;
					run_fmt(c->err, c->errlen, "--apply: %s is not a directory in the "
					    "experiment (a symbolic link?): the repair's changes under it "
					    "are in the last attempt's exp/, not applied", to);
				}
				continue;
			}
			if (mkdir(to, st.st_mode & 07777) == 0)
				c->nchanged++;
			apply_dir(c, sub);
		} else if (S_ISLNK(st.st_mode)) {
			apply_symlink(c, from, to);
		} else if (S_ISREG(st.st_mode)) {
			apply_file(c, from, to, st.st_mode);
		}
	}
	closedir(d);
}

/* What base/rel had and final lacks goes from dst, depth first. */
static void remove_gone(apply_ctx *c, const char *rel)
{
	char dir[PATH_MAX];
	if (run_fmt(dir, sizeof dir, "%s%s%s", c->base, *rel ? "/" : "", rel) >= (int)sizeof dir)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    skipped_name(e->d_name))
			continue;
		char sub[PATH_MAX], from[PATH_MAX * 2], in_final[PATH_MAX * 2], to[PATH_MAX * 2];
		if (run_fmt(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof sub)
			continue;
		run_fmt(from, sizeof from, "%s/%s", c->base, sub);
		run_fmt(in_final, sizeof in_final, "%s/%s", c->final, sub);
		run_fmt(to, sizeof to, "%s/%s", c->dst, sub);
		struct stat st, fs;
		if (lstat(from, &st) < 0)
			continue;
		bool kept = lstat(in_final, &fs) == 0;
		struct stat dst_st;
		if (S_ISDIR(st.st_mode) && lstat(to, &dst_st) == 0 && !S_ISDIR(dst_st.st_mode))
			continue; /* never through a link of the experiment's */
		if (S_ISDIR(st.st_mode)) {
			remove_gone(c, sub);
			if (!kept && rmdir(to) == 0)
				c->nchanged++;
		} else if (!kept && unlink(to) == 0) {
			c->nchanged++;
		}
	}
	closedir(d);
}

int repair_apply(const char *base, const char *final, const char *dst, size_t *nchanged,
		 char *err, size_t errlen)
{
	apply_ctx c = {.base = base, .final = final, .dst = dst, .err = err, .errlen = errlen};
	apply_dir(&c, "");
	if (c.error == 0)
		remove_gone(&c, "");
	*nchanged = c.nchanged;
	return c.error;
}
