/* cgroups: memory (swap included), pids and CPU limits for the whole tree, plus accounting.
 *
 * cgroup v2 when this process's cgroup has the controllers delegated (enabled in its
 * subtree_control, or enableable); the v1 memory, pids and cpu hierarchies where that is what
 * the host has (a v2 tree without controllers beside them is common). labbox makes one child
 * cgroup per run under its own, moves the sandbox's init into it before anything runs, reads
 * peak memory and OOM kills from it, and removes it after the run. */
#include "cgroup.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* a + b into out; false when it does not fit (paths this long are not ours to use). */
static bool path_join(char *out, size_t n, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la + lb + 1 > n)
		return false;
	memcpy(out, a, la);
	memcpy(out + la, b, lb + 1);
	return true;
}

static int write_str(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	LB_AUTOCLOSE int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, val, strlen(val));
	if (n < 0)
		return -errno;
	return 0;
}

static int read_small(const char *dir, const char *file, char *out, size_t n)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = read(fd, out, n - 1);
	if (r < 0)
		return -errno;
	out[r] = '\0';
	return 0;
}

static bool read_u64(const char *dir, const char *file, uint64_t *v)
{
	char buf[64];
	if (read_small(dir, file, buf, sizeof buf) < 0)
		return false;
	char *end;
	*v = strtoull(buf, &end, 10);
	return end != buf;
}

/* "key N" lines (memory.events, memory.oom_control). */
static bool read_key(const char *dir, const char *file, const char *key, uint64_t *v)
{
	char buf[4096];
	if (read_small(dir, file, buf, sizeof buf) < 0)
		return false;
	size_t klen = strlen(key);
	for (char *line = buf; line && *line;) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			*v = strtoull(line + klen + 1, NULL, 10);
			return true;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

/* word is an item of list, items separated by any of seps ("memory" in "cpu,memory"). */
static bool has_item(const char *list, const char *word, const char *seps)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n) {
		bool starts = p == list || strchr(seps, p[-1]);
		bool ends = p[n] == '\0' || strchr(seps, p[n]);
		if (starts && ends)
			return true;
	}
	return false;
}

/* This process's cgroup path for a v1 controller ("memory") or v2 (controller NULL). */
static bool own_path(const char *controller, char *out, size_t n)
{
	LB_AUTOFCLOSE FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1;
		bool match = controller ? has_item(ctrls, controller, ",")
					: strcmp(line, "0") == 0 && *ctrls == '\0';
		if (match) {
			snprintf(out, n, "%s", c2 + 1);
			return true;
		}
	}
	return false;
}

/* Where the v1 hierarchy holding controller is mounted. */
static bool v1_mount(const char *controller, char *out, size_t n)
{
	LB_AUTOFCLOSE FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		/* ... mountpoint ... - fstype source superopts */
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup ", 7) != 0)
			continue;
		char *opts = strrchr(sep, ' ');
		if (!opts)
			continue;
		opts++;
		opts[strcspn(opts, "\n")] = '\0';
		if (!has_item(opts, controller, ","))
			continue;
		/* Field 5 is the mount point. */
		char *p = line;
		for (int i = 0; i < 4 && p; i++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (!p)
			continue;
		size_t len = strcspn(p, " ");
		if (len >= n)
			continue;
		memcpy(out, p, len);
		out[len] = '\0';
		return true;
	}
	return false;
}

static bool v2_root(char *out, size_t n)
{
	struct statfs st;
	if (statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC) {
		snprintf(out, n, "/sys/fs/cgroup");
		return true;
	}
	return false;
}

void lb_cgroup_probe(lb_cgroup_support *s)
{
	memset(s, 0, sizeof *s);
	char root[PATH_MAX], own[PATH_MAX];
	if (v2_root(root, sizeof root) && own_path(NULL, own, sizeof own)) {
		char dir[PATH_MAX], ctl[512] = "", sub[512] = "";
		if (!path_join(dir, sizeof dir, root, own))
			return;
		read_small(dir, "cgroup.controllers", ctl, sizeof ctl);
		read_small(dir, "cgroup.subtree_control", sub, sizeof sub);
		s->version = 2;
		memcpy(s->v2_dir, dir, sizeof dir);
		/* Usable when enabled for children already, or enableable by us. */
		s->v2_writable = access(dir, W_OK) == 0;
		s->memory = s->v2_writable && has_item(ctl, "memory", " \n");
		s->pids = s->v2_writable && has_item(ctl, "pids", " \n");
		s->cpu = s->v2_writable && has_item(ctl, "cpu", " \n");
		s->cpuset = s->v2_writable && has_item(ctl, "cpuset", " \n");
		s->v2_subtree_ready = has_item(sub, "memory", " \n") || has_item(sub, "pids", " \n");
		return;
	}
	static const char *const ctrls[4] = {"memory", "pids", "cpu", "cpuset"};
	for (int i = 0; i < 4; i++) {
		char mnt[PATH_MAX], path[PATH_MAX];
		if (!v1_mount(ctrls[i], mnt, sizeof mnt) || !own_path(ctrls[i], path, sizeof path))
			continue;
		char *dst = i == 0 ? s->v1_memory : i == 1 ? s->v1_pids : i == 2 ? s->v1_cpu
										 : s->v1_cpuset;
		if (!path_join(dst, PATH_MAX, mnt, strcmp(path, "/") == 0 ? "" : path))
			continue;
		bool ok = access(dst, W_OK) == 0;
		if (i == 0)
			s->memory = ok;
		else if (i == 1)
			s->pids = ok;
		else if (i == 2)
			s->cpu = ok;
		else
			s->cpuset = ok;
		s->version = 1;
	}
}

static int make_child(const char *parent, const char *name, char *out, size_t n)
{
	char sub[128];
	snprintf(sub, sizeof sub, "/%s", name);
	if (!path_join(out, n, parent, sub))
		return -ENAMETOOLONG;
	if (mkdir(out, 0755) < 0) {
		int e = -errno;
		out[0] = '\0';
		return e;
	}
	return 0;
}

/* Cgroups of runs whose labbox was killed before it could remove them: empty (their tree died
 * with the namespace), named after a pid that no longer exists. */
static void reap_stale_in(const char *parent)
{
	if (!parent[0])
		return;
	DIR *d = opendir(parent);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, "labbox-", 7) != 0)
			continue;
		long pid = strtol(e->d_name + 7, &end, 10);
		if (pid <= 0 || *end != '-' || (kill((pid_t)pid, 0) == 0 || errno == EPERM))
			continue;
		char path[PATH_MAX];
		char sub[300];
		snprintf(sub, sizeof sub, "/%s", e->d_name);
		if (path_join(path, sizeof path, parent, sub))
			rmdir(path); /* fails harmlessly if something still lives there */
	}
	closedir(d);
}

void lb_cgroup_reap_stale(const lb_cgroup_support *s)
{
	if (s->version == 2) {
		reap_stale_in(s->v2_dir);
		return;
	}
	reap_stale_in(s->memory ? s->v1_memory : "");
	reap_stale_in(s->pids ? s->v1_pids : "");
	reap_stale_in(s->cpu ? s->v1_cpu : "");
	reap_stale_in(s->cpuset ? s->v1_cpuset : "");
}

/* A v1 cpuset starts with no CPUs and no memory nodes: both are set before any task may
 * enter, the nodes as the parent has them. */
static int create_v1_cpuset(lb_cgroup *cg, const lb_cgroup_support *s, const char *cpus,
			    const char *name, char *err, size_t errlen)
{
	char mems[256] = "";
	int r = make_child(s->v1_cpuset, name, cg->cpuset, sizeof cg->cpuset);
	if (r == 0)
		r = read_small(s->v1_cpuset, "cpuset.mems", mems, sizeof mems);
	if (r == 0) {
		mems[strcspn(mems, "\n")] = '\0';
		r = write_str(cg->cpuset, "cpuset.mems", mems);
	}
	if (r == 0)
		r = write_str(cg->cpuset, "cpuset.cpus", cpus);
	if (r < 0)
		snprintf(err, errlen, "cannot set the run's CPUs (%s) under %s: %s", cpus,
			 s->v1_cpuset, strerror(-r));
	return r;
}

/* cgroup v2: one cgroup for every controller, the run's limits written into it. */
static int create_v2(lb_cgroup *cg, const lb_cgroup_support *s, const lb_cgroup_limits *lim,
		     const char *name, char *err, size_t errlen)
{
	char val[64];
	int r;
	if (!s->v2_subtree_ready) {
		/* Fails with EBUSY when this cgroup holds processes (no internal processes
		 * in v2): then the controllers were not delegated to us. */
		r = write_str(s->v2_dir, "cgroup.subtree_control", "+memory +pids +cpu");
		if (r < 0) {
			snprintf(err, errlen, "cannot enable cgroup v2 controllers in %s: %s",
				 s->v2_dir, strerror(-r));
			return r;
		}
	}
	/* cpuset is enabled apart: a tree that delegates the others may not delegate it,
	 * and only a run that asks for its CPUs needs it. */
	if (lim->cpuset && (r = write_str(s->v2_dir, "cgroup.subtree_control", "+cpuset")) < 0) {
		snprintf(err, errlen, "cannot enable the cpuset controller in %s: %s",
			 s->v2_dir, strerror(-r));
		return r;
	}
	r = make_child(s->v2_dir, name, cg->v2, sizeof cg->v2);
	if (r < 0) {
		snprintf(err, errlen, "cannot create a cgroup under %s: %s", s->v2_dir,
			 strerror(-r));
		return r;
	}
	if (lim->memory) {
		snprintf(val, sizeof val, "%" PRIu64, lim->memory);
		if ((r = write_str(cg->v2, "memory.max", val)) < 0 ||
		    (r = write_str(cg->v2, "memory.swap.max", "0")) < 0) {
			snprintf(err, errlen, "cannot set the memory limit: %s", strerror(-r));
			return r;
		}
		cg->memory_limited = true;
	}
	if (lim->pids) {
		snprintf(val, sizeof val, "%ld", lim->pids);
		if ((r = write_str(cg->v2, "pids.max", val)) < 0) {
			snprintf(err, errlen, "cannot set the pids limit: %s", strerror(-r));
			return r;
		}
	}
	if (lim->cpus > 0) {
		snprintf(val, sizeof val, "%ld 100000", (long)(lim->cpus * 100000));
		if ((r = write_str(cg->v2, "cpu.max", val)) < 0) {
			snprintf(err, errlen, "cannot set the CPU limit: %s", strerror(-r));
			return r;
		}
	}
	if (lim->cpuset && (r = write_str(cg->v2, "cpuset.cpus", lim->cpuset)) < 0) {
		snprintf(err, errlen, "cannot set the run's CPUs (%s): %s", lim->cpuset,
			 strerror(-r));
		return r;
	}
	return 0;
}

int lb_cgroup_create(lb_cgroup *cg, const lb_cgroup_support *s, const lb_cgroup_limits *lim,
		     const char *name, char *err, size_t errlen)
{
	memset(cg, 0, sizeof *cg);
	cg->version = s->version;
	char val[64];
	int r;
	if (s->version == 2)
		return create_v2(cg, s, lim, name, err, errlen);
	if (s->memory) {
		r = make_child(s->v1_memory, name, cg->memory, sizeof cg->memory);
		if (r < 0) {
			snprintf(err, errlen, "cannot create a memory cgroup under %s: %s",
				 s->v1_memory, strerror(-r));
			return r;
		}
		if (lim->memory) {
			snprintf(val, sizeof val, "%" PRIu64, lim->memory);
			if ((r = write_str(cg->memory, "memory.limit_in_bytes", val)) < 0) {
				snprintf(err, errlen, "cannot set the memory limit: %s", strerror(-r));
				return r;
			}
			/* With swap accounting the same number bounds memory plus swap. */
			r = write_str(cg->memory, "memory.memsw.limit_in_bytes", val);
			if (r < 0 && r != -ENOENT) {
				snprintf(err, errlen, "cannot limit swap: %s", strerror(-r));
				return r;
			}
			cg->swap_unlimited = r == -ENOENT;
			cg->memory_limited = true;
		}
	}
	if (s->pids && lim->pids) {
		r = make_child(s->v1_pids, name, cg->pids, sizeof cg->pids);
		if (r == 0) {
			snprintf(val, sizeof val, "%ld", lim->pids);
			r = write_str(cg->pids, "pids.max", val);
		}
		if (r < 0) {
			snprintf(err, errlen, "cannot set the pids limit under %s: %s", s->v1_pids,
				 strerror(-r));
			return r;
		}
	}
	if (s->cpu && lim->cpus > 0) {
		r = make_child(s->v1_cpu, name, cg->cpu, sizeof cg->cpu);
		if (r == 0)
			r = write_str(cg->cpu, "cpu.cfs_period_us", "100000");
		if (r == 0) {
			snprintf(val, sizeof val, "%ld", (long)(lim->cpus * 100000));
			r = write_str(cg->cpu, "cpu.cfs_quota_us", val);
		}
		if (r < 0) {
			snprintf(err, errlen, "cannot set the CPU limit under %s: %s", s->v1_cpu,
				 strerror(-r));
			return r;
		}
	}
	if (s->cpuset && lim->cpuset)
		return create_v1_cpuset(cg, s, lim->cpuset, name, err, errlen);
	return 0;
}

int lb_cgroup_attach(const lb_cgroup *cg, pid_t pid)
{
	char val[32];
	snprintf(val, sizeof val, "%d", (int)pid);
	const char *dirs[5] = {cg->v2, cg->memory, cg->pids, cg->cpu, cg->cpuset};
	for (int i = 0; i < 5; i++) {
		if (!dirs[i][0])
			continue;
		int r = write_str(dirs[i], "cgroup.procs", val);
		if (r < 0)
			return r;
	}
	return 0;
}

void lb_cgroup_close_self(int fds[LB_CGROUP_SELF_FDS])
{
	for (int i = 0; i < LB_CGROUP_SELF_FDS; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int lb_cgroup_open_self(const lb_cgroup *cg, int fds[LB_CGROUP_SELF_FDS])
{
	for (int i = 0; i < LB_CGROUP_SELF_FDS; i++)
		fds[i] = -1;
	if (cg->version != 1)
		return -ENOTSUP;
	const char *dirs[LB_CGROUP_SELF_FDS] = {cg->memory, cg->pids, cg->cpu, cg->cpuset};
	for (int i = 0; i < LB_CGROUP_SELF_FDS; i++) {
		if (!dirs[i][0])
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/tasks", dirs[i]);
		fds[i] = open(path, O_WRONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			int e = errno;
			lb_cgroup_close_self(fds);
			return -e;
		}
	}
	return 0;
}

int lb_cgroup_enter_self(int fds[LB_CGROUP_SELF_FDS])
{
	int r = 0;
	for (int i = 0; i < LB_CGROUP_SELF_FDS && r == 0; i++)
		if (fds[i] >= 0 && write(fds[i], "0", 1) != 1)
			r = -errno;
	lb_cgroup_close_self(fds);
	return r;
}

void lb_cgroup_read(const lb_cgroup *cg, uint64_t *peak, bool *oom_killed, bool *counted)
{
	uint64_t v = 0;
	*peak = 0;
	*oom_killed = false;
	*counted = false;
	/* The kernel counts a kill by any OOM killer, the host's included, in the victim's
	 * memory cgroup (mm/oom_kill.c, count_memcg_event_mm), limit or none. */
	if (cg->v2[0]) {
		if (read_u64(cg->v2, "memory.peak", &v))
			*peak = v;
		if ((*counted = read_key(cg->v2, "memory.events", "oom_kill", &v)) && v > 0)
			*oom_killed = true;
	} else if (cg->memory[0]) {
		if (read_u64(cg->memory, "memory.max_usage_in_bytes", &v))
			*peak = v;
		if ((*counted = read_key(cg->memory, "memory.oom_control", "oom_kill", &v)) && v > 0)
			*oom_killed = true;
	}
}

void lb_cgroup_destroy(lb_cgroup *cg)
{
	char *dirs[5] = {cg->v2, cg->memory, cg->pids, cg->cpu, cg->cpuset};
	for (int i = 0; i < 5; i++) {
		if (!dirs[i][0])
			continue;
		/* The tree is reaped before this runs; a few retries cover the kernel finishing
		 * its own bookkeeping of the last exits. */
		for (int tries = 0; tries < 50; tries++) {
			if (rmdir(dirs[i]) == 0 || errno == ENOENT)
				break;
			usleep(2000);
		}
		dirs[i][0] = '\0';
	}
}

const char *lb_cgroup_name(const lb_cgroup *cg)
{
	return cg->version == 2 ? "v2" : cg->version == 1 ? "v1" : NULL;
}
