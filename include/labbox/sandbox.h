/* sandbox: isolation of one process tree on this host.
 *
 * A configuration is filled by setters, then lb_sandbox_run() applies it in one fixed order:
 * the supervisor (this process) clones an init process into fresh user, pid, mount, network,
 * ipc and uts namespaces; init builds the root (setup_root, setup_dev, setup_proc), brings up
 * loopback (setup_net), then forks the payload, which applies setup_fds, setup_session,
 * setup_rlimits, setup_credentials and setup_environment, then execs. Any failure inside is
 * carried back over an error channel and reported as a setup failure, never ignored.
 * Init reaps the whole tree so the accounting covers it, and dies with the supervisor
 * (PR_SET_PDEATHSIG), which kills every process of the pid namespace with it. */
#ifndef LABBOX_SANDBOX_H
#define LABBOX_SANDBOX_H

/* The experiment's HOME in every sandbox (local and docker): the private, writable /tmp, so
 * that `~` and the caches under it work and never reach the host's home. The check models
 * `~`, Path.home() and $HOME as this same place (docs/decisions.md). */
#define LB_SANDBOX_HOME "/tmp"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct lb_sandbox lb_sandbox;

typedef enum lb_network {
	LB_NET_NONE,     /* a fresh network namespace, and only AF_UNIX sockets (seccomp) */
	LB_NET_LOOPBACK, /* a fresh network namespace with a private loopback, any socket */
	LB_NET_HOST,     /* the host's network; asked for explicitly */
} lb_network;

typedef enum lb_stream { LB_STREAM_STDOUT = 1, LB_STREAM_STDERR = 2 } lb_stream;

/* Called from the supervision loop with output as it arrives. With merged output every chunk
 * is reported as LB_STREAM_STDOUT, in the order the tree wrote it. */
typedef void (*lb_output_fn)(void *ctx, lb_stream stream, const char *data, size_t len);

int lb_sandbox_new(lb_sandbox **out);
void lb_sandbox_free(lb_sandbox *sb);

/* argv[0] must be an absolute path as seen inside the sandbox. Copied. */
int lb_sandbox_set_argv(lb_sandbox *sb, char *const argv[]);
/* Instead of exec'ing argv, the payload calls fn(arg) in labbox's own image, with every
 * protection applied (credentials, no_new_privs, seccomp, the clean environment, stdout and
 * stderr to the sandbox's pipes, every other descriptor closed), and exits with its return
 * value. For labbox's own work on what the experiment controls (git on its repository):
 * whatever that work starts inherits the sandbox. */
int lb_sandbox_set_function(lb_sandbox *sb, int (*fn)(void *arg), void *arg);
/* Host directory made visible at the same path, writable, and the payload's cwd. Without one
 * the payload starts in the private /tmp. */
int lb_sandbox_set_workdir(lb_sandbox *sb, const char *dir);
/* Host path bound at dst (same path when dst is NULL); read-only unless writable. Binds are
 * applied after the hidden directories are covered, so they may re-expose a path under them.
 * A dst the host lacks gets its mount point inside the sandbox only: the nearest existing
 * directory above it is replaced by a tmpfs that re-binds all of its entries, and the mount
 * point is made there, so the host is never written to (as docker creates mount points). */
int lb_sandbox_add_bind(lb_sandbox *sb, const char *src, const char *dst, bool writable);
/* Make an executable that lives under a hidden directory visible read-only: its directory,
 * the install prefix above a bin/ directory, and the same for its resolved target. */
int lb_sandbox_expose_program(lb_sandbox *sb, const char *path);
/* A Python interpreter as its own probe describes it (sys.executable, sys.prefix,
 * sys.base_prefix): the prefixes that lie under a hidden directory are bound read-only and the
 * executable is exposed, so a venv, conda env or pyenv version works inside. */
int lb_sandbox_expose_python(lb_sandbox *sb, const char *executable, const char *prefix,
			     const char *base_prefix);
/* Hide a host path from the payload: a directory is covered by an empty read-only tmpfs (a
 * bind or the work directory may still re-expose a path under it), a file by /dev/null.
 * Nothing to do for a path that does not exist or is hidden already. For labbox's own
 * records: the other runs of a runs directory, the run index. */
int lb_sandbox_mask(lb_sandbox *sb, const char *path);
/* The same, path resolved from dir when it is a name in dir (lb_realpath_stat_in). */
/* What lb_sandbox_mask recorded (resolved paths): the directories, then the files. Owned by
 * sb. For a backend that shows host paths its own way (docker's volumes). */
void lb_sandbox_masked(const lb_sandbox *sb, const char *const **dirs, size_t *ndirs,
		       const char *const **files, size_t *nfiles);
struct lb_realdir;
int lb_sandbox_mask_in(lb_sandbox *sb, struct lb_realdir *dir, const char *path);
/* A directory to hide only where the payload could see it, decided when the sandbox's view
 * is final (lb_sandbox_settle_masks, which lb_sandbox_run calls): unless a private or hidden
 * directory covers path and no bind, exposed program directory or work directory reaches
 * into it or above it, hide(sb, path, ctx) is called then to mask what it holds. path is
 * taken as resolved. For the many runs directories of other projects: most lie in a home or
 * /tmp, and cost nothing there. */
typedef int (*lb_sandbox_hide_fn)(lb_sandbox *sb, const char *path, void *ctx);
int lb_sandbox_mask_where_seen(lb_sandbox *sb, const char *path, lb_sandbox_hide_fn hide,
			       void *ctx);
/* Calls the hide functions of lb_sandbox_mask_where_seen, once each: of every path (all:
 * for a backend that shows host paths its own way, docker's volumes) or of those the
 * payload could see. 0, or the first hide function's negative errno. */
int lb_sandbox_settle_masks(lb_sandbox *sb, bool all);
/* True when path lies under a directory the sandbox hides (home directories, /run...). */
bool lb_sandbox_path_hidden(const lb_sandbox *sb, const char *path);
/* Whether a hidden directory may be shown for a program that needs it (its venv, its
 * installation): never a hidden root (/home, /root, /tmp...), a home (the caller's wherever it
 * lies, anyone's right under /home), or a directory above one. */
bool lb_sandbox_dir_exposable(const lb_sandbox *sb, const char *dir);
/* Host uid and gid the payload runs as (65534 when labbox is root, the caller's otherwise):
 * files the payload must write belong to them. */
void lb_sandbox_payload_ids(const lb_sandbox *sb, uid_t *uid, gid_t *gid);
/* "K=V": added to the clean environment (replacing a default of the same name). */
int lb_sandbox_add_env(lb_sandbox *sb, const char *kv);
/* The value of NAME in the environment set so far (-e, defaults), NULL when unset. */
const char *lb_sandbox_env_value(const lb_sandbox *sb, const char *name);
lb_network lb_sandbox_network(const lb_sandbox *sb);
/* The places the payload can write, as it sees them (the work directory, the private /tmp,
 * /var/tmp and /dev/shm, writable binds, --tmpfs mounts): at most max, pointers into sb.
 * For the runtime gate, which refuses writes elsewhere with a rule of its own. */
size_t lb_sandbox_writable_paths(const lb_sandbox *sb, const char **out, size_t max);
/* A host character device (a path under /dev) made usable inside at the same path. */
int lb_sandbox_add_device(lb_sandbox *sb, const char *path);
/* A --gpus value, parsed once wherever one is read (a flag, a record): every GPU, none, or
 * device indices as /dev/nvidiaN numbers them, each named once. */
#define LB_GPUS_MAX 64
typedef struct lb_gpu_spec {
	bool all;
	size_t n; /* 0 with !all: none */
	int index[LB_GPUS_MAX];
} lb_gpu_spec;
/* "all", "none" or indices "0,2" (decimal digits, no empty item, no index twice, at most
 * LB_GPUS_MAX) into *out: 0, or -EINVAL with err saying what is wrong with spec. Says
 * nothing of this host's GPUs. */
int lb_sandbox_gpus_parse(const char *spec, lb_gpu_spec *out, char *err, size_t errlen);
/* NVIDIA GPUs: "all" or a list of indices "0,2". Binds the GPUs' device nodes and the
 * driver's control nodes, and sets CUDA_VISIBLE_DEVICES; without a call no GPU is visible.
 * -EINVAL for a spec lb_sandbox_gpus_parse refuses (whatever the host has), -ENODEV (with
 * err naming what is missing) when the host lacks an asked-for GPU. */
int lb_sandbox_use_gpus(lb_sandbox *sb, const char *spec, char *err, size_t errlen);
/* How many NVIDIA GPUs this host has (its /dev/nvidiaN device nodes): what --gpus can give. */
int lb_sandbox_host_gpu_count(void);
int lb_sandbox_set_budget(lb_sandbox *sb, double seconds); /* 0: no budget */
/* At most bytes written under the host directory path (the writable work directory) during
 * the run: checked four times a second, plus RLIMIT_FSIZE for single files; past it the tree
 * is ended as for the budget and the outcome is LB_SB_DISK_LIMIT. 0: no limit. */
int lb_sandbox_set_disk_limit(lb_sandbox *sb, const char *path, uint64_t bytes);
int lb_sandbox_set_grace(lb_sandbox *sb, double seconds);
/* Files and directories a run may create under a disk limit, as a file system's inodes are a
 * limit of their own (200,000 empty files take no bytes): one per 4 KiB of the limit, at
 * least 10,000, at most a quarter of the inodes free (inodes_free 0: not known). Pure. */
/* The disk limit as a property of exp/'s file system (an ext4 image of exp/ on a loop
 * device, root only): writes past it fail with ENOSPC however fast they come. Without it the
 * limit is polled. When required and this host cannot do it, the run is refused (setup step
 * setup_disk) unless lb_sandbox_allow_degraded(sb, "disk") accepted a polled limit. */
void lb_sandbox_require_disk_fs(lb_sandbox *sb, bool required);

/* The files and directories a run may make under a disk limit: one per 4 KiB of it, at
 * least 10,000, at most a million, and at most a quarter of inodes_free (0: unknown). */
uint64_t lb_sandbox_inode_limit(uint64_t disk_limit, uint64_t inodes_free);
int lb_sandbox_set_network(lb_sandbox *sb, lb_network net);
/* Limits enforced through cgroups; 0 means unset. */
int lb_sandbox_set_memory(lb_sandbox *sb, uint64_t bytes);
int lb_sandbox_set_cpus(lb_sandbox *sb, double cpus);
int lb_sandbox_set_pids(lb_sandbox *sb, long pids);
/* Hold the tree to these CPUs (a cpulist, "0-1,4") with a cpuset cgroup, which the code
 * cannot widen as it can its affinity; applied only where lb_sandbox_cpuset_enforcer names a
 * controller, and a run refused (setup failure) when that one cannot be made. "" clears it. */
int lb_sandbox_set_cpuset(lb_sandbox *sb, const char *cpulist);
/* "cgroup v1 cpuset" or "cgroup v2 cpuset.cpus" when this process may make cpuset cgroups,
 * else NULL (then only the affinity holds, which the code may change). */
const char *lb_sandbox_cpuset_enforcer(void);
/* The process limit of a run without one of its own (0 above): max(4096, 2 * ncpu * ncpu) but
 * at most a quarter of the host's pid_max. Through the pids cgroup where there is one, else
 * RLIMIT_NPROC, and then never above the limit labbox itself runs with. */
#define LB_SANDBOX_DEFAULT_PIDS 4096L
long lb_sandbox_default_pids(void);
/* What a sandbox labbox starts around code the experiment chose (a probe of its own
 * interpreter, that interpreter's package listing, the check's compile or parse with it, a
 * filter of the repository it ships) takes from the run: its limits (0: unset), what it
 * accepted less of (lb_sandbox_allow_degraded's words), and at most budget_s seconds (0: no
 * cap). lb_sandbox_apply_limits: NULL applies nothing; the sandbox's own budget is lowered to
 * budget_s when that is shorter. 0 or a negative errno. */
typedef struct lb_sandbox_limits {
	uint64_t memory;
	long pids;
	double cpus;
	double budget_s;
	const char *const *degraded;
	size_t ndegraded;
} lb_sandbox_limits;
int lb_sandbox_apply_limits(lb_sandbox *sb, const lb_sandbox_limits *lim);
/* Accept less than asked for one protection instead of refusing to run (exit 125):
 * "memory" (a per-process RLIMIT_DATA instead of a cgroup limit for the tree), "pids"
 * (RLIMIT_NPROC, counted per uid), "cpus" (no CPU limit), or "all". -EINVAL otherwise.
 * What was really in effect is always reported in the result's isolation. */
int lb_sandbox_allow_degraded(lb_sandbox *sb, const char *what);
/* Which programs the tree may exec after the payload's own exec: the runtime gate's backstop,
 * decided by what the kernel loaded rather than by the interpreter's audit hook, which code
 * that reaches ctypes gets past. Init traces the tree (ptrace: stopped at forks, clones,
 * signals and execs, never at system calls) and kills a refused exec before the new program
 * runs; the result lists it. A stop signal does not stop a process of a guarded tree (init
 * resumes it). */
typedef enum lb_exec_guard {
	LB_EXEC_ANY = 0,      /* no rule */
	LB_EXEC_GATED_PYTHON, /* only the payload's own interpreter, started so that its runtime
			       * gate loads again: -s, no -I/-E/-S, and the variables that decide
			       * what runs before the gate as the payload had them */
	LB_EXEC_LISTED,       /* only the payload's own program and those lb_sandbox_allow_exec
			       * lists (an interpreter without a runtime gate: R, Octave), each
			       * known by what the kernel loaded; memfd_create is refused */
} lb_exec_guard;
/* optional: where the kernel refuses the trace, the run goes on unguarded (isolation's
 * exec_guard says so) instead of failing its setup (step setup_exec_guard). */
int lb_sandbox_set_exec_guard(lb_sandbox *sb, lb_exec_guard g, bool optional);
/* A program LB_EXEC_LISTED lets the tree exec, by absolute path, resolved inside the sandbox
 * when it starts (one that is not there is no program). A script ("#!") passes only run by
 * its own interpreter under this path, as the kernel runs it; dash_c: a shell that passes
 * only as `sh -c COMMAND` (what system() runs), each program the command starts judged
 * again. At most LB_SB_MAX_EXEC_ALLOWED; -E2BIG past that, -EINVAL for a relative path. */
#define LB_SB_MAX_EXEC_ALLOWED 16
int lb_sandbox_allow_exec(lb_sandbox *sb, const char *path, bool dash_c);
/* Every place the payload can write (the work directory, /tmp, /var/tmp, /dev/shm, a
 * --tmpfs) mounted noexec: no program it wrote runs, no shared object it wrote loads. Implied
 * by LB_EXEC_GATED_PYTHON; on its own for an interpreter without a runtime gate. */
int lb_sandbox_set_noexec(lb_sandbox *sb, bool on);
/* dir, a directory under the work directory (a venv staged with the experiment), is
 * read-only inside, and each directory between the work directory and it is a mount point
 * of its own, so that none can be renamed or removed to put another in its place: what the
 * interpreter reads there before its runtime gate (pyvenv.cfg, .pth files) stays as it was
 * at the start for every process the run starts. -ELOOP when a symlink is on the way (the
 * experiment could point it elsewhere), -EXDEV when a link inside it leads out of it, by a
 * relative path or to a place the payload can write (through it the protected directory
 * would change all the same), -E2BIG past 500,000 entries, -EINVAL when dir is not under
 * the work directory (set that first; and the volumes and tmpfs before it), -ENOTDIR when
 * it is no directory. */
int lb_sandbox_protect(lb_sandbox *sb, const char *dir);

/* Output: merged (one pipe for stdout and stderr, order preserved) or separate. */
int lb_sandbox_set_output(lb_sandbox *sb, bool merged, lb_output_fn fn, void *ctx);
/* Whether a run without limits still gets a cgroup, to measure the whole tree's peak memory
 * (default on). Moving a process into a cgroup costs milliseconds (the kernel waits for an RCU
 * grace period), which matters to short commands; without one, peak memory is the largest
 * resident set of any single process. */
int lb_sandbox_set_cgroup_accounting(lb_sandbox *sb, bool on);
/* Input for the payload's stdin, relayed through a pipe (the payload never gets the caller's
 * descriptor, which may be a terminal). -1 (the default): /dev/null. */
int lb_sandbox_set_stdin(lb_sandbox *sb, int fd);
/* Size of the private /tmp and /dev/shm tmpfs. */
int lb_sandbox_set_tmpfs_size(lb_sandbox *sb, uint64_t bytes);
/* Size of /dev/shm alone (docker's --shm-size); 0 is refused. */
int lb_sandbox_set_shm_size(lb_sandbox *sb, uint64_t bytes);
/* A private, writable tmpfs of bytes (mode as chmod's, e.g. 01777) at the absolute path, as
 * docker's --tmpfs; a later one at the same path replaces it. Its mount point is created
 * inside the sandbox when the host lacks it, as for binds. -EINVAL for "/" and for paths under
 * /proc, /sys or /dev, which the sandbox builds itself. */
int lb_sandbox_add_tmpfs(lb_sandbox *sb, const char *path, uint64_t bytes, unsigned mode);

/* A file of labbox's own (a copy of len bytes of data, mode 0644) at dir/name inside the
 * sandbox: each dir named becomes a small read-only tmpfs holding just these files, written
 * by the sandbox's init before the payload starts, so nothing is written on the host's disk
 * for them (the runtime gate's module, config and compiled form, at every run). name may
 * name subdirectories (made 0755); no "." or ".." parts. dir as for lb_sandbox_add_tmpfs;
 * -EEXIST for a name given twice. */
int lb_sandbox_add_file(lb_sandbox *sb, const char *dir, const char *name, const void *data,
			size_t len);

typedef enum lb_sandbox_outcome {
	LB_SB_EXITED,       /* the payload exited; exit_code set */
	LB_SB_SIGNALED,     /* the payload was killed by a signal; term_signal set */
	LB_SB_TIMEOUT,      /* the budget ended it */
	LB_SB_INTERRUPTED,  /* labbox got SIGINT/SIGTERM/SIGHUP and ended it */
	LB_SB_DISK_LIMIT,   /* it wrote more than the disk limit; labbox ended it */
	LB_SB_SETUP_FAILED, /* the sandbox could not be set up or the command not executed */
} lb_sandbox_outcome;

typedef struct lb_isolation {
	bool user_ns, pid_ns, mount_ns, net_ns, ipc_ns, uts_ns;
	const char *network; /* "none", "loopback" or "host" */
	bool seccomp;
	bool no_new_privs;
	/* the kernel's write rules (Landlock), NULL where the kernel has none: /proc's files
	 * (the payload's own memory) are then writable by their owner as usual */
	const char *landlock;
	bool caps_dropped;
	uid_t uid;  /* uid of the payload as the host sees it */
	gid_t gid;
	const char *cgroup; /* "v1", "v2", or NULL when no cgroup was used */
	const char *memory_enforced_by; /* NULL when no memory limit was asked for */
	const char *pids_enforced_by;
	long pids_limit; /* processes and threads the tree may have (the default too); 0: none */
	const char *cpus_enforced_by;
	const char *disk_enforced_by; /* NULL when no disk limit was asked for */
	bool swap_limited; /* the memory limit covers swap too */
	const char *gpus;  /* indices of the GPUs made visible ("0,1"), NULL for none */
	const char *filesystem; /* what the file system looked like; NULL: the local sandbox's */
	/* the programs the tree may exec (lb_sandbox_set_exec_guard), NULL when any */
	const char *exec_guard;
} lb_isolation;

#define LB_SB_MAX_EXEC_REFUSALS 8
/* An exec the guard refused: the process was killed before the program ran. */
typedef struct lb_exec_refusal {
	int pid;         /* as the sandbox's pid namespace numbers it */
	char exe[256];   /* what the kernel loaded */
	char argv[400];  /* its command line, spaces between the arguments, cut to fit */
	char why[200];
} lb_exec_refusal;

#define LB_SB_MAX_FULL 4
/* A tmpfs of the sandbox's own (its private /tmp, /var/tmp, /dev/shm, a --tmpfs) that was full
 * when the payload ended: measured inside, before the namespace and the tmpfs go. */
typedef struct lb_full_tmpfs {
	char path[128];	     /* as the sandbox sees it */
	uint64_t size_bytes; /* the tmpfs's size */
} lb_full_tmpfs;

typedef struct lb_sandbox_result {
	lb_sandbox_outcome outcome;
	int exit_code;   /* valid for EXITED; -1 otherwise */
	int term_signal; /* signal that ended the payload, 0 if it exited */
	bool timed_out;
	bool disk_limited;
	char disk_detail[160]; /* what passed the disk limit: bytes, files, hidden data */
	bool interrupted;
	int interrupt_signal; /* the signal labbox received */
	double wall_s, cpu_user_s, cpu_sys_s;
	double post_run_s; /* after the tree ended: exp/ brought back from its own file system */
	uint64_t peak_rss_bytes; /* peak memory of the tree (cgroup), or the largest resident
				  * set of any one process (rusage) when no cgroup was used */
	const char *peak_source; /* "cgroup" or "rusage" */
	/* The same number, named for what it is: the cgroup's charged memory (page cache and
	 * kernel memory included) when a cgroup was used, else the largest process's resident
	 * set; peak_memory_source says which ("cgroup memory.peak", "cgroup v1 max_usage",
	 * "rusage maxrss of the largest process"). */
	uint64_t peak_memory_bytes;
	const char *peak_memory_source;
	uint64_t max_rss_bytes; /* rusage: the largest resident set of any one process */
	bool gpu_sampled;        /* nvidia-smi was sampled (once a second) while GPUs were in */
	uint64_t peak_gpu_bytes; /* largest sum of GPU memory of the tree's processes seen */
	bool oom_killed;         /* the cgroup's OOM killer killed a process of the tree */
	bool oom_counted;        /* a memory cgroup counted OOM kills: !oom_killed means none */
	int setup_errno;         /* for SETUP_FAILED */
	char setup_step[32];     /* e.g. "setup_root", "exec" */
	char setup_error[512];   /* one line naming what failed */
	lb_isolation isolation;
	unsigned exec_refused; /* execs the guard refused; the first LB_SB_MAX_EXEC_REFUSALS: */
	lb_exec_refusal exec_refusals[LB_SB_MAX_EXEC_REFUSALS];
	unsigned nfull_tmpfs; /* how many of full_tmpfs are set */
	lb_full_tmpfs full_tmpfs[LB_SB_MAX_FULL];
} lb_sandbox_result;

/* Run to completion. Returns 0 when the outcome is known (including SETUP_FAILED, timeouts and
 * failures of the payload) and a negative errno when supervision itself failed. */
int lb_sandbox_run(lb_sandbox *sb, lb_sandbox_result *res);

/* lb_sandbox_run with the payload's stdout appended to out (at most max bytes kept, the rest
 * read and dropped) and its stderr dropped; replaces any output set before. For the short
 * commands labbox asks something of when the experiment chose what runs: an interpreter named
 * by labbox.yaml, git on the experiment's repository. */
struct lb_buf;
int lb_sandbox_capture(lb_sandbox *sb, size_t max, struct lb_buf *out, lb_sandbox_result *res);

/* Shell-style exit status for an outcome: the exit code, 128+signal, 124 for the budget,
 * 125 for setup failures, 126/127 when the command could not be executed or found. */
int lb_sandbox_exit_status(const lb_sandbox_result *res);

/* What this host lets this user do, each item tried for real in a short-lived child. */
typedef struct lb_probe {
	uid_t uid;
	bool user_ns, pid_ns, mount_ns, net_ns, ipc_ns, uts_ns, cgroup_ns;
	long max_user_namespaces;  /* /proc/sys/user/max_user_namespaces, -1 unknown */
	int unprivileged_userns;   /* kernel.unprivileged_userns_clone: 1, 0, -1 absent */
	int apparmor_restrict_userns; /* kernel.apparmor_restrict_unprivileged_userns, -1 absent */
	bool seccomp;              /* a filter can be loaded */
	unsigned seccomp_api;      /* libseccomp's API level for this kernel */
	int cgroup_version;        /* 0 none usable, 1, 2 */
	bool cgroup_memory, cgroup_pids, cgroup_cpu; /* controllers this user can limit with */
	char cgroup_where[4096];    /* where labbox would create run cgroups */
	bool sandbox_works;        /* a full sandbox ran /bin/true */
	bool exec_guard;           /* ... and its init could trace it (lb_sandbox_set_exec_guard) */
	char sandbox_error[600];
} lb_probe;

int lb_sandbox_probe(lb_probe *p);

#endif
