/* cgroup handling of the sandbox (internal). */
#ifndef LABBOX_SANDBOX_CGROUP_H
#define LABBOX_SANDBOX_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What this process may use. */
typedef struct lb_cgroup_support {
	int version; /* 0 none, 1, 2 */
	bool memory, pids, cpu; /* controller present and writable for us */
	bool cpuset;
	char v2_dir[PATH_MAX];  /* our own v2 cgroup */
	bool v2_writable;
	bool v2_subtree_ready; /* controllers already enabled for children */
	char v1_memory[PATH_MAX], v1_pids[PATH_MAX], v1_cpu[PATH_MAX]; /* our v1 cgroups */
	char v1_cpuset[PATH_MAX];
} lb_cgroup_support;

typedef struct lb_cgroup_limits {
	uint64_t memory;
	long pids;
	double cpus;
	const char *cpuset; /* the CPUs the tree may run on, a cpulist ("0-1"); NULL: any */
} lb_cgroup_limits;

/* One run's cgroup(s); empty strings for what is not used. */
typedef struct lb_cgroup {
	int version;
	char v2[PATH_MAX];
	char memory[PATH_MAX], pids[PATH_MAX], cpu[PATH_MAX], cpuset[PATH_MAX];
	bool memory_limited;
	bool swap_unlimited; /* v1 without swap accounting */
} lb_cgroup;

void lb_cgroup_probe(lb_cgroup_support *s);
void lb_cgroup_reap_stale(const lb_cgroup_support *s);
int lb_cgroup_create(lb_cgroup *cg, const lb_cgroup_support *s, const lb_cgroup_limits *lim,
		     const char *name, char *err, size_t errlen);
int lb_cgroup_attach(const lb_cgroup *cg, pid_t pid);
/* cgroup v1: the run's `tasks` files, opened for writing before the sandbox's init exists, so
 * that init moves itself (lb_cgroup_enter_self) as its first step. A thread that moves itself
 * skips the kernel's global lock that a move by pid takes, and with it an RCU grace period
 * (about 10 ms, on every run). fds[] gets one descriptor per hierarchy in use, -1 for the
 * rest. -ENOTSUP for v2 (a process moves there only as a whole, by cgroup.procs): use
 * lb_cgroup_attach. */
#define LB_CGROUP_SELF_FDS 4
int lb_cgroup_open_self(const lb_cgroup *cg, int fds[LB_CGROUP_SELF_FDS]);
/* Writes "0" to each: moves the calling thread (init is single-threaded). Closes them. */
int lb_cgroup_enter_self(int fds[LB_CGROUP_SELF_FDS]);
void lb_cgroup_close_self(int fds[LB_CGROUP_SELF_FDS]);
/* *counted: an OOM kill counter of the tree's memory cgroup was read, so *oom_killed false
 * means no OOM killer (the cgroup's or the host's) killed a process of it. */
void lb_cgroup_read(const lb_cgroup *cg, uint64_t *peak, bool *oom_killed, bool *counted);
void lb_cgroup_destroy(lb_cgroup *cg);
const char *lb_cgroup_name(const lb_cgroup *cg);

#endif
