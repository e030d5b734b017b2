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
	/* The runtime gate (gate.h), NULL when it is off: the backend binds gate_py_dir
	 * read-only at LB_GATE_PY_DIR and gate_events writable at LB_GATE_EVENTS, names
	 * LB_GATE_PY_DIR first on PYTHONPATH, and writes the gate's config there. */
	const char *gate_py_dir;
	const char *gate_events;
	int gate_mode;          /* lb_gate_mode, effective */
	const char *gate_policy;
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

#endif
