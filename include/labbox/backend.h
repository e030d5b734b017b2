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

#endif
