/* sandbox internals shared by its files; not part of the public face. */
#ifndef LABBOX_SANDBOX_INTERNAL_H
#define LABBOX_SANDBOX_INTERNAL_H

#include "labbox/sandbox.h"

#include <sys/resource.h>

enum {
	LB_DEGRADED_MEMORY = 1,
	LB_DEGRADED_PIDS = 2,
	LB_DEGRADED_CPUS = 4,
	LB_DEGRADED_DISK = 8,
};

/* Landlock (landlock.c): the kernel's ABI version, or a negative errno when it has none; and,
 * inside the sandbox once no_new_privs is set, the rule that no file under /proc or /sys is
 * opened for writing (ABI 2 or later: files still move between directories). */
int lb_landlock_abi(void);
int sb_landlock_confine_writes(void);

/* The exec guard (execguard.c). The run's own interpreter as its first exec found it. */
#define SB_EXEC_LIMITS 5
typedef struct sb_exec_ref {
	bool set;
	dev_t dev;
	ino_t ino;
	char *env; /* its environment, NUL-separated */
	size_t envlen;
	char *cmd;   /* its whole command line, NUL-separated (and NUL-ended): argv[0] first */
	size_t cmdlen;
	struct rlimit limits[SB_EXEC_LIMITS]; /* NOFILE, AS, DATA, STACK, FSIZE */
} sb_exec_ref;
/* A variable that decides what runs before the gate (the gate's own list): pure. */
bool sb_exec_env_sensitive(const char *name, size_t n);
/* 0 when env holds every sensitive variable of ref with the same value and no other; else
 * -EPERM and why names the first that differs. NUL-separated lists. Pure. */
int sb_exec_env_same(const char *env, size_t len, const char *ref, size_t rlen, char *why,
		     size_t whylen);
/* 0 when a NUL-separated Python command line starts the gate again: -s (or the user site
 * off by the environment); no -I, -E, -S, -X presite/pycache_prefix/frozen_modules; and no
 * option but -s, -P, -B and those of ref, the run's own command line. Else -EPERM and why.
 * Pure. */
int sb_exec_python_args(const char *cmd, size_t len, const char *ref, size_t reflen,
			bool nousersite_env, char *why, size_t whylen);
/* Judges the exec pid has just made (stopped at PTRACE_EVENT_EXEC): 0 passes (the first,
 * the payload's own, becomes ref), 1 refuses with out filled, a negative errno when /proc
 * could not be read. */
int sb_exec_judge(pid_t pid, pid_t payload, sb_exec_ref *ref, lb_exec_refusal *out);

/* LB_EXEC_LISTED's programs as init found them in the sandbox: what the kernel loads for each
 * (a script's interpreter, for a script) and, for a script, the path it must be run by. */
typedef struct sb_exec_prog {
	dev_t dev;
	ino_t ino;
	char script[4096]; /* "" for a program the kernel loads itself */
	int script_at;    /* the script's place in the command line the kernel builds: 1, or 2
			   * after the "#!" line's argument */
	bool dash_c;
} sb_exec_prog;
typedef struct sb_exec_list {
	sb_exec_prog prog[LB_SB_MAX_EXEC_ALLOWED];
	size_t n;
} sb_exec_list;
/* Resolves each listed path (stat through its links; a "#!" line's interpreter): those not
 * there are left out. */
void sb_exec_list_resolve(const lb_sandbox *sb, sb_exec_list *out);
/* 0 when the exec of a program the kernel loaded as dev/ino, with this NUL-separated command
 * line, is one the list holds; else -EPERM and why. Pure. */
int sb_exec_listed(dev_t dev, ino_t ino, const char *cmd, size_t len, const sb_exec_list *l,
		   char *why, size_t whylen);
/* sb_exec_judge for LB_EXEC_LISTED: the payload's first exec becomes ref; its program again
 * passes; any other must be listed. */
int sb_exec_judge_listed(pid_t pid, pid_t payload, sb_exec_ref *ref, const sb_exec_list *l,
			 lb_exec_refusal *out);

/* A tmpfs of its own at path (--tmpfs PATH[:size=SIZE]). */
typedef struct lb_tmpfs {
	char *path;
	uint64_t size;
	unsigned mode;
} lb_tmpfs;

/* A file of labbox's at dir/name in a read-only tmpfs of its own (lb_sandbox_add_file). */
typedef struct lb_memfile {
	char *dir;
	char *name;
	char *data;
	size_t len;
} lb_memfile;

typedef struct lb_later_mask {
	char *path;
	lb_sandbox_hide_fn hide;
	void *ctx;
} lb_later_mask;

typedef struct lb_bind {
	char *src;
	char *dst;
	bool writable;
} lb_bind;

struct lb_sandbox {
	char **argv;
	size_t argc;
	int (*fn)(void *arg); /* a function payload instead of argv (lb_sandbox_set_function) */
	void *fn_arg;
	char *workdir;
	lb_bind *binds;
	size_t nbinds;
	char **hidden; /* covered by an empty read-only tmpfs */
	size_t nhidden;
	char **homes; /* the caller's home directories, resolved (never exposed whole) */
	size_t nhomes;
	char **masked; /* files covered by /dev/null */
	size_t nmasked;
	char **masked_dirs; /* directories lb_sandbox_mask hid: hidden in binds of a parent too */
	size_t nmasked_dirs;
	lb_later_mask *later; /* lb_sandbox_mask_where_seen, not settled yet */
	size_t nlater;
	char **protect; /* directories under the work directory made read-only, their way pinned */
	size_t nprotect;
	char **private_dirs; /* covered by an empty writable tmpfs */
	size_t nprivate;
	char **env;
	size_t nenv;
	char **devices; /* extra device nodes, names under /dev */
	size_t ndevices;
	char gpus[256]; /* the GPUs made visible, as indices "0,1" */
	double budget;
	char *disk_path;     /* host directory whose growth is limited */
	uint64_t disk_limit; /* bytes; 0: none */
	bool disk_fs;        /* the limit must be a file system's (diskfs.c), not a poll */
	double grace;
	lb_network net;
	uint64_t memory;
	double cpus;
	char cpuset[4096]; /* the CPUs the tree may run on (a cpulist, whole); "": any */
	long pids;
	int stdin_fd; /* relayed to the payload's stdin; -1: /dev/null */
	bool merged;
	lb_output_fn out_fn;
	void *out_ctx;
	uint64_t tmpfs_size;
	uint64_t shm_size; /* /dev/shm; 0: tmpfs_size */
	lb_tmpfs *tmpfs;   /* extra tmpfs mounts, in the order given (mounts.c) */
	size_t ntmpfs;
	lb_memfile *files; /* placed by init (mounts.c), grouped by dir in run.c */
	size_t nfiles;
	uid_t host_uid;
	gid_t host_gid;
	bool cgroup_accounting; /* a cgroup for peak memory even without limits */
	unsigned degraded; /* LB_DEGRADED_* the user accepted */
	lb_exec_guard exec_guard;
	bool exec_guard_optional; /* without ptrace the run goes on, unguarded, and says so */
	bool noexec; /* writable places noexec without a guard (lb_sandbox_set_noexec) */
	struct {
		char path[4096];
		bool dash_c;
	} exec_allowed[LB_SB_MAX_EXEC_ALLOWED]; /* LB_EXEC_LISTED's programs */
	size_t nexec_allowed;
	uid_t sb_uid; /* host uid the payload runs as */
	gid_t sb_gid;
};

/* Frees what mounts.c added (the tmpfs list, the files). */
void lb_sandbox_free_mounts(lb_sandbox *sb);

/* One line of /proc/self/mountinfo (mountinfo.c). */
typedef struct lb_mountinfo_entry {
	unsigned major, minor;
	char mountpoint[4096]; /* unescaped */
	char fstype[64];
} lb_mountinfo_entry;
void lb_mountinfo_unescape(char *s);
int lb_mountinfo_parse(const char *line, lb_mountinfo_entry *e);
int lb_mountinfo_points(char ***out, size_t *nout);
void lb_mountinfo_points_free(char **points, size_t n);

/* The new root, built mount by mount from the host's top-level entries (rootfs.c). */
typedef enum lb_rootfs_kind {
	LB_ROOTFS_BIND, /* a read-only clone of the host's directory or file, with its submounts */
	LB_ROOTFS_LINK, /* the same symlink */
	LB_ROOTFS_DIR,  /* a directory: labbox mounts a file system of its own there, or puts
			 * the host directory's entries in it, planned one by one */
	LB_ROOTFS_GONE, /* listed, then removed from the host before it was cloned */
} lb_rootfs_kind;

typedef struct lb_rootfs_entry {
	char *path; /* relative to the root: "usr", "var/lib" */
	lb_rootfs_kind kind;
	bool is_dir; /* LB_ROOTFS_BIND: a directory, else a file */
	unsigned mode; /* LB_ROOTFS_DIR */
	bool owned;    /* LB_ROOTFS_DIR standing for a host's directory: its owner */
	uid_t uid;
	gid_t gid;
	char *target; /* LB_ROOTFS_LINK */
	int tree;       /* LB_ROOTFS_BIND: the clone (lb_rootfs_clone); -1 before */
} lb_rootfs_entry;

typedef struct lb_rootfs {
	lb_rootfs_entry *e;
	size_t n;
} lb_rootfs;

/* What becomes of each entry of host_root ("/"; a test's own directory); no mount made.
 * mounts: the host's mount points (lb_mountinfo_points), absolute. */
int lb_rootfs_plan(const lb_sandbox *sb, const char *host_root, char *const *mounts,
		   size_t nmounts, lb_rootfs *rf);
/* Clones each bound entry, read-only, nosuid, nodev; err says which failed. */
int lb_rootfs_clone(lb_rootfs *rf, const char *host_root, char *err, size_t errlen);
/* Mounts a tmpfs on newroot and puts the entries in it. */
int lb_rootfs_build(const lb_rootfs *rf, const char *newroot, char *err, size_t errlen);
void lb_rootfs_free(lb_rootfs *rf);

#endif
