/* backend: where a run executes.
 *
 * A backend is one table of operations, called by the run pipeline in a fixed order:
 *
 *   prepare   place the staged experiment where it runs and configure its command
 *   run       start it and supervise it to the end (output streamed to job->output, the
 *             budget enforced, SIGINT/SIGTERM to labbox forwarded), filling an
 *             lb_sandbox_result as the local sandbox does
 *   fetch     bring results, logs and the environment snapshot into the local run directory
 *   cleanup   always, after an interrupt too
 *
 * and describe() for result.json's "backend" block. Everything else of the pipeline (check,
 * stage, collect, validate, record, diagnose, rerun) sees only the run directory the backend
 * filled, so it never knows which backend ran the code. The local backend is the sandbox of
 * this host (src/sandbox); a backend that cannot run here says so and the run stops (exit
 * 125): no backend falls back to another. */
#ifndef LABBOX_BACKEND_H
#define LABBOX_BACKEND_H

#include "labbox/env.h"
#include "labbox/sandbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

/* What the pipeline asks a backend to run. Pointers stay valid for the whole run. */
typedef struct lb_backend_job {
	const char *id;         /* the run's id */
	const char *run_dir;    /* the local run directory */
	const char *runs_dir;   /* the directory of all runs (hidden from the experiment) */
	const char *index_path; /* the run index beside it (hidden too) */
	const char *exp_dir;    /* the staged experiment: the work directory, writable */
	const lb_python_info *python;
	char *const *argv;      /* interpreter, entry point, arguments */
	char *const *env;       /* K=V the pipeline adds to the backend's clean environment */
	size_t nenv;
	double budget;          /* seconds; 0: none */
	uint64_t disk_limit;    /* bytes exp/ may hold; 0: none */
	lb_output_fn output;    /* stdout and stderr, merged, as they arrive */
	void *output_ctx;
	/* A new attempt of the run starts (a requeued Slurm job): what output fed the metrics so
	 * far is dropped (run.log keeps it), so the run is counted once. May be NULL. */
	void (*restart)(void *output_ctx);
	/* The runtime gate (gate.h), NULL when it is off: the backend puts the gate's module
	 * and config read-only at LB_GATE_PY_DIR (written into gate_py_dir, which does not
	 * exist yet, and bound; or given to the sandbox from memory), binds gate_events
	 * writable at LB_GATE_EVENTS and names LB_GATE_PY_DIR first on PYTHONPATH. */
	const char *gate_py_dir;
	const char *gate_events;
	int gate_mode;          /* lb_gate_mode, effective */
	/* the sandbox's exec guard behind a gate that refuses (lb_sandbox_set_exec_guard):
	 * 0 none, 1 required, 2 where the kernel allows it (--allow-degraded gate) */
	int exec_guard;
	/* With exec_guard, for an interpreter without a runtime gate (R, Octave): the programs
	 * the tree may exec beside the interpreter, NULL-terminated, and the shell that passes
	 * only as `sh -c` (LB_EXEC_LISTED). NULL: the gated Python's guard. */
	const char *const *exec_listed;
	const char *exec_shell;
	/* What the run can write maps no code (noexec), without an exec guard: R and Octave,
	 * which have no runtime gate, under a policy that refuses (lb_sandbox_set_noexec). */
	bool noexec_writable;
	const char *gate_policy;
	/* lb_gate_config.unread_dirs: what the check did not read, for the gate; NULL: none */
	const char *gate_unread_dirs;
	bool trust_project;     /* --trust-project, for a remote labbox's own check */
} lb_backend_job;

typedef struct lb_backend lb_backend;

typedef struct lb_backend_ops {
	const char *name; /* "local", ... as --mode names it */
	/* The uid and gid the experiment's files must belong to so it can write them. */
	void (*owner)(lb_backend *b, uid_t *uid, gid_t *gid);
	int (*prepare)(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen);
	/* 0 when the outcome is known (a setup failure included, in res); a negative errno when
	 * supervision itself failed. */
	int (*run)(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res);
	int (*fetch)(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen);
	void (*cleanup)(lb_backend *b);
	/* {"name", "engine", "version", "host", "isolated_by"}: what ran the code, truthfully. */
	struct json_object *(*describe)(lb_backend *b);
	void (*free)(lb_backend *b);
	/* Optional: result.json's "isolation" block as the backend knows it, when the struct of
	 * lb_sandbox_result cannot say it (a remote labbox's own block, kept as it reported it;
	 * a run nothing isolated). NULL, or returning NULL: built from res->isolation. */
	struct json_object *(*isolation)(lb_backend *b);
	/* Binds the runtime gate (job->gate_py_dir) into what runs the code; a backend without
	 * it says why in result.json's runtime_gate.note. The local sandbox always does. */
	bool binds_gate;
	/* Optional, for a backend that does not bind it: why the gate is not installed by this
	 * labbox, truthfully for this run (asked after the run: a backend may learn it in
	 * prepare), into note. NULL: a plain "mode X runs without it". */
	void (*gate_note)(lb_backend *b, char *note, size_t n);
	/* Optional, with gate_note: the runtime gate's record as the labbox that ran the code
	 * kept it (a remote labbox's runtime_gate), a new reference, or NULL when there is none.
	 * The diagnosis takes a refusal for the verdict only when the gate recorded it. */
	struct json_object *(*gate_record)(lb_backend *b);
} lb_backend_ops;

struct lb_backend {
	const lb_backend_ops *ops;
	void *state;
};

/* The modes --mode and labbox.yaml's mode: accept, and whether this build has each. */
bool lb_backend_known(const char *mode);

/* The local backend around a sandbox the caller configured (limits, volumes, environment);
 * the sandbox stays the caller's. */
int lb_backend_local(lb_sandbox *sb, lb_backend **out);
void lb_backend_free(lb_backend *b);

/* The docker backend (src/backend/docker.c): the run in a container of the engine's own
 * client (docker, or podman), under docker's own limits and options. */
/* The base of the image labbox builds when no image is named (--base-image, base_image:). */
#define LB_DOCKER_DEFAULT_BASE "python:3.11-slim"

typedef struct lb_docker_config {
	const char *engine; /* "docker" or "podman"; NULL: the first of them that answers */
	/* The image to run. NULL: labbox builds one in prepare from a generated Dockerfile
	 * (base_image, the staged experiment's requirements.txt, a non-root user), tagged by the
	 * hash of what it was built from, and reuses it when that tag is there already. */
	const char *image;
	const char *base_image; /* the FROM of that build; NULL: LB_DOCKER_DEFAULT_BASE */
	const char *python; /* the interpreter inside the image; NULL: python3 */
	/* labbox exec: argv[0] is the program to run in the image (not the interpreter), stdin
	 * is relayed, stderr kept apart, no environment snapshot; job->exp_dir may be NULL (no
	 * directory bound; the command starts in the private /tmp). */
	bool exec;
	struct json_object *sandbox; /* the shared sandbox flags (cli_sandbox_json's document) */
	double grace;                /* seconds between docker stop's SIGTERM and its SIGKILL */
	uid_t uid;                   /* who the experiment runs as (--user), owner of exp/ */
	gid_t gid;
} lb_docker_config;
int lb_backend_docker(const lb_docker_config *cfg, lb_backend **out);
/* Whether name can be an image reference in a generated Dockerfile's FROM line (no space,
 * quote or control character; docker itself judges the rest). */
bool lb_docker_image_name_ok(const char *name);

/* What the docker backend offers here (labbox probe --mode docker): the engine (engine, or
 * the first of docker and podman that answers), its version, rootless or not, the cgroup
 * version, whether --memory, --memory-swap, --pids-limit, --cpus and --gpus are honoured,
 * its security options. 0 with *out a labbox.probe/1 "backend" object; a negative errno with
 * err naming what failed (and `docker info`) when no engine answers. */
int lb_docker_probe(const char *engine, struct json_object **out, char *err, size_t errlen);

/* The ssh backend (src/backend/ssh.c): the run on another machine through the system's ssh
 * and rsync (so ssh config, agents, ProxyJump keep working), over one ControlMaster
 * connection of labbox's own. The staged experiment goes to a per-run directory there, and
 * `labbox run --json` there runs it in the remote machine's own sandbox; without a remote
 * labbox the run is refused unless allow_degraded accepts the seed's plain
 * `timeout BUDGET python3 main.py`. */
typedef struct lb_ssh_config {
	const char *host;          /* required: what `ssh HOST` accepts (an alias, user@host) */
	const char *remote_labbox; /* the labbox to run there; NULL: `labbox` on the remote PATH */
	bool install_remote;       /* copy this labbox binary there (checked with --version) */
	const char *python;        /* the interpreter there (--python); NULL: the remote labbox's
				    * choice (labbox.yaml's python:, else python3) */
	bool allow_degraded;       /* --allow-degraded isolation: no remote labbox is accepted */
	struct json_object *sandbox; /* the shared sandbox flags (cli_sandbox_json's document) */
	double grace;                /* seconds between SIGTERM and SIGKILL there */
} lb_ssh_config;
int lb_backend_ssh(const lb_ssh_config *cfg, lb_backend **out);
/* What HOST offers (labbox probe --mode ssh): reachable, the remote labbox, its version and
 * its own probe's isolation, python3. 0 with *out a labbox.probe/1-style document (reachable
 * or not, as it says), or a negative errno. */
int lb_backend_ssh_probe(const lb_ssh_config *cfg, struct json_object **out);
/* The Slurm backend (src/backend/slurm.c): the run becomes a batch job submitted with the
 * cluster's own sbatch; the job runs this labbox (`labbox run --json`) on the staged
 * experiment on its compute node, so the experiment is sandboxed there as locally, and the
 * node's run is brought back into the local run directory. The run directory must be on a
 * file system the compute nodes share (as home and project directories are on clusters). */
typedef struct lb_slurm_config {
	const char *partition; /* NULL: the cluster's default partition */
	const char *account;   /* NULL: the user's default account */
	const char *qos;       /* NULL: the default */
	const char *python;    /* the interpreter on the node; NULL: python3 on the job's PATH */
	const char *labbox;    /* labbox as the nodes see it; NULL: this binary, copied beside
				* the runs directory (content-addressed, shared by runs) */
	struct json_object *sandbox; /* the shared sandbox flags, passed on to the node's labbox */
	double grace;    /* seconds between SIGTERM and SIGKILL, on the node as locally */
	int policy;      /* lb_check_policy of the node's own static check */
	bool trust_project;
	uint64_t log_limit; /* the node's run.log cap; 0: labbox's default */
	double poll_s;   /* squeue interval; 0: 0.5 s */
	/* Progress lines (PENDING, RUNNING on NODE, requeued...), for a person: may be NULL. */
	void (*progress)(void *ctx, const char *line);
	void *progress_ctx;
} lb_slurm_config;
int lb_backend_slurm(const lb_slurm_config *cfg, lb_backend **out);

/* One sbatch call for N cells (lb_slurm_submit): the building block of the backend, and of
 * `labbox sweep --mode slurm`, which submits all its cells at once as one job array. Each
 * cell is a command (labbox run --json ..., see lb_slurm_node_argv) and a directory on the
 * shared file system where its task's stdout (node.json: the node's result document) and
 * stderr (node.err) go. With ncells == 1 there is no --array (a plain job, as `labbox run`
 * submits it); with more it is --array=0-(N-1)[%max_parallel], task i running cell i. */
typedef struct lb_slurm_cell {
	char *const *argv; /* NULL-terminated, argv[0] an absolute path the node can run */
	const char *dir;   /* absolute; created by the caller */
} lb_slurm_cell;

typedef struct lb_slurm_submit {
	const char *dir;  /* absolute: job.sh and Slurm's own output (slurm-%A_%a.out) go here */
	const char *name; /* --job-name */
	const char *partition, *account, *qos; /* NULL: the cluster's defaults */
	unsigned cpus;      /* --cpus-per-task; 0: the default (1) */
	uint64_t mem_bytes; /* --mem, rounded up to MiB; 0: the cluster's DefMemPerCPU */
	unsigned gpus;      /* --gres=gpu:N; 0: none */
	double time_limit_s; /* --time, rounded up to minutes; 0: the partition's limit */
	unsigned signal_lead_s; /* --signal=B:TERM@lead: labbox on the node ends the run cleanly
				 * before the time limit kills it; 0: none */
	unsigned max_parallel;  /* the %P of --array; 0: no limit */
	const lb_slurm_cell *cells;
	size_t ncells;
	bool plan_only; /* write job.sh and the command line, submit nothing (job_id stays "") */
} lb_slurm_submit;

/* Writes DIR/job.sh and runs sbatch; job_id gets the job's id (digits only). The sbatch
 * command line is appended to cmd (a json array) when cmd is not NULL. -EINVAL for a bad
 * request, -EHOSTUNREACH when sbatch refused or failed (err says what it said). */
int lb_slurm_submit_array(const lb_slurm_submit *s, struct json_object *cmd, char job_id[32],
			  char *err, size_t errlen);

/* The state of each task of a job as squeue reports it ("PENDING", "RUNNING", "COMPLETED",
 * "CANCELLED", ...; "" for a task squeue no longer shows), and the node each ran on.
 * states and nodes are arrays of ntasks strings of 32 and 128 bytes. 0, or -EHOSTUNREACH
 * when squeue did not answer. */
int lb_slurm_poll(const char *job_id, size_t ntasks, char (*states)[32], char (*nodes)[128]);

/* One task as squeue's long format shows it: state ("" when squeue no longer shows it),
 * node, and how often Slurm started it again (requeued, preempted). */
typedef struct lb_slurm_task {
	char state[32];
	char node[128];
	int restarts;
} lb_slurm_task;
/* As lb_slurm_poll, one squeue call for the whole array, in squeue's long format
 * (ArrayTaskID|State|RestartCnt|NodeList|), which also says how often each task was started
 * again. */
int lb_slurm_poll_tasks(const char *job_id, size_t ntasks, lb_slurm_task *tasks);
/* Its parser, on squeue's output (modified in place): lines that are not four fields with an
 * upper-case state and a count are skipped; task ranges ("[2-3%2]") are expanded. */
int lb_slurm_tasks_parse(char *text, size_t ntasks, lb_slurm_task *tasks);
/* Whether a job state is one a job does not leave (COMPLETED, FAILED, CANCELLED, TIMEOUT...). */
bool lb_slurm_state_final(const char *state);
/* scancel [--signal=SIG] [--batch] [--state=STATE] JOB, bounded; what it says is dropped. */
void lb_slurm_cancel(const char *job_id, const char *signal, bool batch_only, const char *state);
/* labbox killed outright (SIGKILL, a crash) must not leave behind what it started elsewhere
 * (a container, a Slurm job): a child in a session of its own, deaf to the terminal's
 * signals, holds a pipe and runs on_orphan(arg) with /dev/null as its standard streams when
 * the pipe's other end closes without a word (labbox died). lb_guard_stop tells it all is
 * well and reaps it. on_orphan runs in the forked child (async-signal-safe work, exec, or
 * _exit). lb_guard_start returns 0 or -errno (g->wr is then -1, and lb_guard_stop does
 * nothing). */
typedef struct lb_guard {
	int wr;
	pid_t pid;
} lb_guard;
int lb_guard_start(lb_guard *g, void (*on_orphan)(void *arg), void *arg);
void lb_guard_stop(lb_guard *g);
/* The guard that runs `scancel JOB`. */
int lb_slurm_guard_start(const char *job_id, lb_guard *g);
/* The clients are on PATH, the configuration readable and the controller answers (and has
 * partition when not NULL), as mode slurm checks before it submits: 0 with the cluster's
 * name and version, else -EHOSTUNREACH / -ENOENT with err saying why. */
int lb_slurm_reach(const char *partition, char cluster[128], char version[64], char *err,
		   size_t errlen);
/* This binary where the nodes can run it (bin/labbox-SHA16 beside runs_dir, copied once). */
int lb_slurm_place_labbox(const char *runs_dir, char out[4096], char *err, size_t errlen);

/* The node-side command of one cell: LABBOX run --json --mode local -q --runs-dir RUNS --python PY
 * --policy P [--trust-project] [--budget B] --grace G [sandbox flags] --entry ENTRY
 * [--hide H ...] EXPDIR [-- ARGS]. A new NULL-terminated vector (free with
 * lb_slurm_argv_free). hide: paths the node must keep from the experiment besides its own
 * records (the submitting side's runs directory and index). */
typedef struct lb_slurm_node_run {
	const char *labbox, *runs_dir, *python, *expdir, *entry;
	char *const *args;
	size_t nargs;
	double budget, grace;
	uint64_t disk_limit, log_limit;
	int policy;
	bool trust_project;
	int gate_mode; /* lb_gate_mode the node's gate runs in, passed as --runtime-gate; 0: the
			* node's default for the policy */
	struct json_object *sandbox;
	const char *const *hide;
	size_t nhide;
	bool gpus_from_job; /* --gpus takes the job's own GPUs ($SLURM_JOB_GPUS) */
} lb_slurm_node_run;
int lb_slurm_node_argv(const lb_slurm_node_run *n, char ***out);

/* What the cluster offers (labbox probe --mode slurm): {cluster, version, slurm_conf,
 * partitions: {NAME: {default, available, time_limit, nodes, nodes_idle, cpus_per_node,
 * memory_mb_per_node, gres}}}. -EHOSTUNREACH / -ENOENT with err as for a run. */
int lb_slurm_probe(struct json_object **out, char *err, size_t errlen);
void lb_slurm_argv_free(char **v);
/* The colab backend (src/backend/colab.c): a Google Drive bridge. labbox leaves the staged
 * experiment and a job file in DRIVE/labbox/pending/ID/, a worker started in Colab
 * (DRIVE/labbox/labbox_worker.py, written by labbox) claims, runs and returns it through the
 * folder; labbox waits, streams the log and collects the results. labbox isolates nothing
 * there, and says so. */
typedef struct lb_colab_config {
	const char *drive;  /* required: the locally synced Drive folder */
	double poll;        /* seconds between looks at the folder; 0: 5 */
	double timeout;     /* labbox's own overall limit; 0: the budget plus 600 s, none
			     * without a budget */
	double stale;       /* seconds without a new heartbeat before a claimed job's worker
			     * counts as dead; 0: 120 (Drive syncs slowly) */
	double grace;       /* the worker's SIGTERM-to-SIGKILL time at the budget */
	struct json_object *sandbox; /* the shared sandbox flags (env, secret_env ...) */
	const char *const *metrics;  /* declared metrics, told to the worker */
	size_t nmetrics;
} lb_colab_config;
int lb_backend_colab(const lb_colab_config *cfg, lb_backend **out);
/* -EINVAL with err naming the flag when the shared flags ask for what a Colab run cannot
 * honour (--memory, --cpus, --pids-limit, --shm-size, -v, --tmpfs). */
int lb_colab_check_flags(struct json_object *sandbox, char *err, size_t errlen);
/* What a Drive folder offers (labbox probe --mode colab): writable, worker present and its
 * version, the newest worker heartbeat, jobs pending/running/done. -ENOENT (with *out set)
 * when the folder is missing. */
int lb_colab_probe(const char *drive, struct json_object **out);

/* A worker's exit record (done/ID/exit.json) and heartbeat (running/ID/heartbeat.json):
 * outside input, parsed bounded (64 KiB, depth 16) with every type checked; strings are
 * truncated to their field and control characters replaced. 0, or -EINVAL with err. */
typedef struct lb_colab_exit {
	char status[16]; /* exited, signaled, timeout, cancelled, error */
	int exit_code;   /* -1: none */
	int signal;      /* 0: none */
	bool timed_out, cancelled;
	double wall_s, cpu_user_s, cpu_sys_s;
	uint64_t max_rss_bytes;
	long uid; /* -1: not said */
	char worker[128], host[128], version[64], python[32];
	char error[400];
} lb_colab_exit;
int lb_colab_exit_parse(const char *text, size_t len, lb_colab_exit *out, char *err, size_t errlen);
typedef struct lb_colab_heartbeat {
	int64_t beat;
	double elapsed_s;
	uint64_t log_bytes;
	char worker[128], host[128], version[64], time[40], state[16];
} lb_colab_heartbeat;
int lb_colab_heartbeat_parse(const char *text, size_t len, lb_colab_heartbeat *out, char *err,
			     size_t errlen);

/* lb_record_hide_known for a job, and its runs directory, index and sweeps too (made when
 * missing, as a local run makes them). For backends that mask in their own way what sb
 * records. */
int lb_local_hide_job_records(lb_sandbox *sb, const lb_backend_job *job);

#endif
