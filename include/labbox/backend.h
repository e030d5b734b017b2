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

#include "labbox/diagnose.h"
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
typedef struct lb_docker_config {
	const char *engine; /* "docker" or "podman"; NULL: the first of them that answers */
	const char *image;  /* required */
	const char *python; /* the interpreter inside the image; NULL: python3 */
	struct json_object *sandbox; /* the shared sandbox flags (cli_sandbox_json's document) */
	double grace;                /* seconds between docker stop's SIGTERM and its SIGKILL */
	uid_t uid;                   /* who the experiment runs as (--user), owner of exp/ */
	gid_t gid;
} lb_docker_config;
int lb_backend_docker(const lb_docker_config *cfg, lb_backend **out);

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

#endif
