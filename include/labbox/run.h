/* run: the pipeline of `labbox run`.
 *
 *   config (labbox.yaml + request) -> interpreter probe -> run directory -> stage EXPDIR
 *   -> sandbox runs the entry point (output teed to the terminal, run.log and the metric
 *   parser) -> collect results files -> validate metrics -> diagnose -> result.json,
 *   manifest.json, environment.txt -> exit code.
 *
 * The caller configures the sandbox's limits, environment and volumes; lb_run adds the
 * experiment: its work directory, its interpreter and its command. */
#ifndef LABBOX_RUN_H
#define LABBOX_RUN_H

#include "labbox/config.h"
#include "labbox/lang.h"
#include "labbox/sandbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* Exit codes of `labbox run` (DESIGN.md). */
enum {
	LB_EXIT_OK = 0,
	LB_EXIT_FAILED = 1,
	LB_EXIT_USAGE = 2,
	LB_EXIT_REJECTED = 3,
	LB_EXIT_INVALID_METRICS = 4,
	LB_EXIT_TIMEOUT = 124,
	LB_EXIT_INFRA = 125,
	LB_EXIT_OOM = 137,
};

typedef struct lb_run_request {
	const char *expdir;
	const char *python;   /* NULL: labbox.yaml's python, else python3 on PATH */
	const char *env;      /* --env auto|NAME|PATH (lb_env_select); NULL: labbox.yaml's env:
			       * (as auto), else python */
	const char *entry;    /* NULL: labbox.yaml's entry, else main.py (main.R, main.m...) */
	const char *interpreter; /* an R, Octave or Julia experiment's (--interpreter) */
	const char *mode;     /* the backend asked for (--mode); NULL: labbox.yaml's, else local.
			       * It must be the backend lb_run_on is given. */
	const char *image;    /* mode docker: the image (--image); NULL: labbox.yaml's image: */
	const char *engine;   /* mode docker: docker or podman; NULL: the first that answers */
	const char *host;     /* mode ssh: the host (--host); NULL: labbox.yaml's host: */
	const char *remote_labbox; /* mode ssh: the labbox there; NULL: labbox on its PATH */
	bool install_remote;  /* mode ssh: copy this labbox there */
	const char *partition; /* mode slurm: --partition; NULL: labbox.yaml's slurm: partition: */
	const char *account;   /* mode slurm: --account; NULL: labbox.yaml's, else the default */
	const char *qos;       /* mode slurm: --qos; NULL: labbox.yaml's, else the default */
	const char *drive;    /* mode colab: the synced Drive folder (--drive); NULL: drive: */
	double colab_poll;    /* mode colab: seconds between looks at the folder; 0: 5 */
	double colab_timeout; /* mode colab: labbox's own overall limit; 0: the budget + 600 s */
	double colab_stale;   /* mode colab: seconds without a heartbeat = a dead worker; 0: 120 */
	const char *base_image; /* mode docker without an image: the base labbox builds from
				 * (--base-image); NULL: labbox.yaml's base_image:, else the default */
	const char *runs_dir; /* NULL: .labbox/runs */
	char *const *args;    /* after `--`; replace labbox.yaml's args when nargs > 0 */
	size_t nargs;
	double budget; /* 0: labbox.yaml's budget, else none */
	double grace;  /* as set on the sandbox; recorded only */
	const char *const *metrics; /* declared on the command line, added to labbox.yaml's */
	size_t nmetrics;
	uint64_t log_limit; /* 0: 16 MiB */
	uint64_t disk_limit; /* bytes the experiment may write into exp/; 0: none */
	lb_output_fn echo;  /* live copy of the experiment's output; may be NULL */
	void *echo_ctx;
	int policy;          /* lb_check_policy: the static check before anything runs */
	bool trust_project;  /* let the project's own allows lift hard-gate findings */
	int runtime_gate;    /* lb_gate_mode (--runtime-gate); 0: the policy's default */
	struct json_object *sandbox_config; /* the caller's sandbox flags, kept in the manifest so
					     * `labbox rerun` can apply them again; may be NULL */
	const char *rerun_of;      /* id of the run this one repeats */
	const char *origin_expdir; /* the experiment's original directory when expdir is a copy */
	/* The experiment directory (origin_expdir, else expdir) was named by a record this user's
	 * labbox did not seal (labbox rerun of a record that came with an experiment): the git
	 * record follows no repository above it (lb_record_git_view.origin_untrusted). */
	bool origin_untrusted;
	/* The files to stage (the repeated run's manifest "files"; NULL: the whole directory):
	 * what else the experiment directory holds now is left out and listed in the manifest's
	 * left_out_files. */
	struct json_object *stage_only;
	/* The PYTHONHASHSEED the user set (-e, a sweep's env:), which the run gets and its
	 * manifest's seeds record; NULL: labbox's "0". lb_run_mode fills it from the sandbox. */
	const char *hashseed;
	void (*warn)(void *ctx, const char *message); /* problems that do not stop the run */
	void *warn_ctx;
	/* Where a remote run stands (a Slurm job PENDING, RUNNING on a node), for a person;
	 * may be NULL. */
	void (*progress)(void *ctx, const char *line);
	void *progress_ctx;
	char *const *command_line; /* labbox's own argv, for the manifest */
	int command_argc;
	/* The cell of a sweep this run is (lb_sweep_cell_tag: id, cell, condition, params,
	 * seed, and where it ran): result.json's and the manifest's `sweep`, and the run
	 * index's tag; NULL for a run of its own. */
	struct json_object *sweep;
} lb_run_request;

typedef struct lb_run_result {
	int exit_code;
	char id[64];
	char *run_dir;            /* NULL when the run never got a directory */
	struct json_object *doc;  /* result.json; NULL on usage errors */
	char error[1024];         /* one line, for usage and configuration errors */
} lb_run_result;

/* Returns 0 with out filled (including failed, timed out and invalid runs); usage and
 * configuration errors also return 0 with exit_code 2 and error set. Negative errno only when
 * labbox itself could not work (out of memory). */
int lb_run(lb_sandbox *sb, const lb_run_request *req, lb_run_result *out);
/* Like lb_run, on the backend the request's mode (else labbox.yaml's mode:) names: local
 * around sb, docker configured from req->sandbox_config (image, engine, interpreter), or
 * slurm (partition, account, qos, and the limits as the job's resources).;
 * and colab on req->drive (else labbox.yaml's drive:). */
int lb_run_mode(lb_sandbox *sb, const lb_run_request *req, lb_run_result *out);
/* The backend settings of req (--image, --host, --partition, --drive, ...: mode_flags.c's
 * table) against the run's mode: one of another backend would be ignored there, so it is
 * refused. 0, or -EINVAL with err "FLAG applies to --mode M only (this WHAT's mode is MODE)".
 * A mode this labbox lacks is left to its own error (0). */
int lb_run_mode_flags_check(const lb_run_request *req, const char *mode, const char *what,
			    char *err, size_t errlen);
/* The mode req runs in: req->mode, else mode: of its experiment's labbox.yaml, else local.
 * 0, or a negative errno when the directory or its labbox.yaml cannot be read (the run
 * reports that itself). */
int lb_run_resolve_mode(const lb_run_request *req, char *mode, size_t len);
/* Whether v is a PYTHONHASHSEED Python accepts: "random" or an integer 0..4294967295. */
bool lb_run_hashseed_valid(const char *v);
/* The same pipeline on any backend (lb_run is it on the local backend around sb). */
struct lb_backend;
int lb_run_on(struct lb_backend *be, const lb_run_request *req, lb_run_result *out);
void lb_run_result_free(lb_run_result *out);
/* Whether the experiment directory expdir (real path; shown is how the user named it) can be
 * run as configured, after labbox.yaml was read into cfg: the mode is a backend of this labbox,
 * the entry point (entry_arg, else labbox.yaml's, else the default) is a regular file inside it,
 * its language is known. -EINVAL with err the usage error `labbox run` gives (exit 2), which
 * `labbox check DIR` gives too; entry_out (points into entry_arg, cfg or a constant) and
 * lang_out when non-NULL. */
int lb_run_dir_runnable(const char *expdir, const char *shown, const lb_exp_config *cfg,
			const char *mode_arg, const char *entry_arg, const char **entry_out,
			lb_lang *lang_out, char *err, size_t errlen);

/* Attempts of one `labbox run` (attempts.c, repair.c): the user's standing permission to
 * escalate (--escalate) and the repair loop (--repair-cmd). Every attempt is a run of its own
 * (its own id, run directory, manifest and index entry, so `labbox rerun` of any of them
 * repeats its flags); the last one's result.json is the verdict, with `attempts`,
 * `escalation` and `repair` added (docs/result-json.md). */

/* What an attempt's sandbox is given beyond the caller's flags. */
typedef struct lb_attempt_grant {
	unsigned escalated;    /* LB_ESCALATE_* in effect (labbox/diagnose.h) */
	uint64_t memory_bytes; /* with LB_ESCALATE_MEMORY: the limit in effect */
	/* with LB_ESCALATE_NETWORK: a private loopback, not the host's network (a socket on
	 * this machine alone was refused: the failure's escalation flag said so) */
	bool network_loopback;
} lb_attempt_grant;

/* Builds one attempt's sandbox: the caller's flags with the grant applied; *sandbox_config
 * is the manifest's record of those flags (as lb_run_request.sandbox_config). Returns 0,
 * -ENODEV when the GPUs it grants are not on this host, another negative errno otherwise;
 * err says why. */
typedef int (*lb_attempt_sandbox_fn)(void *ctx, const lb_attempt_grant *grant, lb_sandbox **sb,
				     struct json_object **sandbox_config, char *err, size_t errlen);

typedef struct lb_attempts_config {
	unsigned escalate;       /* LB_ESCALATE_* the user permits; 0: never escalated */
	const char *repair_cmd;  /* a shell command line; NULL: no repair loop */
	unsigned max_repairs;    /* 0: 3, the seed's */
	bool apply;              /* a repair that fixed the run is copied into the experiment */
	double repair_timeout;   /* each repair command's limit; 0: the budget, else 600 s */
	lb_attempt_sandbox_fn sandbox;
	void *sandbox_ctx;
} lb_attempts_config;

#define LB_REPAIR_DEFAULT_MAX 3
#define LB_REPAIR_DEFAULT_TIMEOUT 600.0

/* Runs req (lb_run_mode) in sb (the caller's, for the first attempt), then again, each time in
 * a sandbox from ac->sandbox, while a failure is one the permissions lift or the repair command
 * may fix. out is the last attempt's, its doc and result.json with the attempts added. Returns
 * what lb_run_mode returns; -EINVAL without ac->sandbox when a later attempt may be needed. */
int lb_run_attempts(lb_sandbox *sb, const lb_run_request *req, const lb_attempts_config *ac,
		    lb_run_result *out);

#endif
