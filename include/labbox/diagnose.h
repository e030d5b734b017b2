/* diagnose: explain a failed run by its root cause, from the evidence the run left. */
#ifndef LABBOX_DIAGNOSE_H
#define LABBOX_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

typedef struct lb_failure_input {
	const char *log_tail; /* last lines of the combined output (may be NULL) */
	size_t log_tail_len;
	int exit_code;   /* -1 when killed by a signal */
	int signal;      /* 0 when it exited */
	bool timed_out;  /* the time budget ended it */
	bool oom_killed; /* the memory limit ended it */
	bool infra_error;
	const char *infra_message; /* why the sandbox or backend could not run it */
	const char *language; /* "r" or "octave": their error lines are read too; NULL: Python */
	bool after_run;       /* infra_error: the experiment ran, what it left was not brought back */
	/* The staged experiment (RUN_DIR/exp): frames under it are the experiment's own code.
	 * NULL: relative paths and paths through an exp/ directory are. */
	const char *exp_dir;
	/* What the run was granted, so an escalation already in effect is not suggested again. */
	bool network_host;     /* --network host */
	bool gpus;	       /* --gpus gave it GPUs */
	unsigned long long memory_limit; /* bytes; 0: none or not known */
} lb_failure_input;

/* Classify. Returns a new JSON object or NULL when nothing failed (exit 0, no signal, no
 * timeout, no oom, no infra error):
 *   {"class": one of sandbox_restriction, gate_refused (the runtime gate
 *             refused it: also "rule" and "gate_event"), network, missing_package, wrong_env, missing_data,
 *             code_error, timeout, oom, gpu_oom, gpu_unavailable, nan_divergence, infra_error,
 *    "summary": "one line",
 *    "evidence": ["the log lines that show it", ...]   (at most 8, e.g. the exception line),
 *    "suggestion": "what to change"}
 * Python tracebacks are read from the tail: the last "XxxError: msg" line decides the class
 * (ModuleNotFoundError/ImportError -> missing_package, FileNotFoundError on a data path ->
 * missing_data, socket/DNS/ConnectionError/urllib errors -> network, PermissionError or
 * "Read-only file system" or "Operation not permitted" -> sandbox_restriction,
 * CUDA out of memory -> gpu_oom, "CUDA"/"no CUDA GPUs"/"nvidia" driver errors -> gpu_unavailable,
 * MemoryError -> oom, anything else -> code_error). */
struct json_object *lb_diagnose_failure(const lb_failure_input *in);
/* Besides those: "confidence" (high, medium, low) and "confidence_reason"; "location", the
 * frame that raised, and "code_location" {file (relative to the experiment), line, function,
 * text}, the innermost frame in the experiment's own code (null when none); "escalation"
 * (lb_diagnose_escalation). docs/result-json.md has the meaning of each. */

/* Adds "escalation" to a failure object from its class, summary and evidence: null when the
 * class is not one a flag or an environment can lift (code_error, timeout...), else
 * {grants: network|gpu|write|memory|shm|disk|processes|environment, flag (the exact flag, or
 * null when it is an environment to build), environment (what to install, or null), granted
 * (the run had it already), note}. When the suggestion does not name the flag yet, it is
 * appended to it. Used by lb_diagnose_failure and for failures labbox itself made (and
 * `labbox explain` on runs recorded before this existed). 0 or -ENOMEM / -EINVAL. */
int lb_diagnose_escalation(struct json_object *failure, const lb_failure_input *in);
/* network_host, gpus and memory_limit of in from a sandbox configuration as the manifest
 * records it (config.sandbox: network, gpus, memory_bytes). */
void lb_diagnose_grants(lb_failure_input *in, struct json_object *sandbox);

/* The diagnosis of a recorded run (labbox.explain/1, docs/explain.md): id, status, exit_code,
 * signal, timed_out, oom_killed, run_dir, failure, needs, findings, check, metric_issues,
 * metric_warnings, diagnosis_warnings, metrics, runtime_gate as result.json has them, and
 * diagnosis_source. A failure recorded without confidence (a run recorded before labbox
 * diagnosed so) is made again from run_dir/run.log with the manifest's interpreter and
 * sandbox: its confidence, location, code_location and escalation are added when the class
 * is the same, and the new reading replaces it (recorded_class, recorded_summary beside)
 * when not. manifest may be NULL. 0, -EINVAL or -ENOMEM. */
int lb_diagnose_explain(const char *run_dir, struct json_object *result,
			struct json_object *manifest, struct json_object **out);

/* What a run left that a researcher wants to know even when it completed: result.json's
 * diagnosis_warnings (docs/result-json.md lists the kinds). */
typedef struct lb_diagnosis_input {
	const char *log; /* the run's output, NULs allowed; NULL: read log_path */
	size_t log_len;
	const char *log_path;	      /* run.log (its last 8 MiB are read), or NULL */
	struct json_object *metrics;  /* result.json's "metrics" object, or NULL */
	const char *exp_dir;	      /* the staged experiment, or NULL */
	const char *entry;	      /* the entry point, relative to exp_dir */
	char *const *args;	      /* the entry point's arguments */
	size_t nargs;
} lb_diagnosis_input;

/* Appends {"kind", "message", "evidence": [...], ...} objects to out (an array): kinds
 * loss_divergence, near_chance_accuracy, runtime_warning, time_guard_skipped, stdlib_shadow.
 * Returns 0, -EINVAL for a bad argument or -ENOMEM. */
int lb_diagnose_warnings(const lb_diagnosis_input *in, struct json_object *out);


/* Interpreter probing: ask a Python interpreter (outside the sandbox, isolated mode -I so the
 * caller's environment and user site are ignored) where it lives and what it is. */
typedef struct lb_python_info {
	char executable[4096]; /* sys.executable: the path to exec (a venv keeps its bin/python) */
	char prefix[4096];     /* sys.prefix */
	char base_prefix[4096];
	char version[64];      /* "3.11.2" */
	char implementation[32];
	/* Named by the experiment directory (labbox.yaml's python:), so it is the experiment's
	 * code: it only ever runs inside the sandbox, and what it says of itself exposes
	 * nothing of the host. named: the path it was named by, resolved; origin: the
	 * experiment directory it was resolved in. */
	bool confined;
	char named[4096];
	char origin[4096];
} lb_python_info;

/* -ENOENT when path is not found, -ENOEXEC when it is not a working Python; err explains. */
int lb_python_probe(const char *path, lb_python_info *out, char *err, size_t errlen);
/* lb_python_probe with a cache under cache_dir (one file per interpreter path), so repeated
 * runs don't start the interpreter to learn what it is. An entry is used only while the
 * executable (followed through symlinks) and a pyvenv.cfg beside it or one level up keep
 * the stat (device, inode, size, mtime and ctime in ns) recorded before the probe: upgrading
 * the interpreter, re-pointing its symlink or editing the venv misses. Scripts (pyenv shims,
 * wrappers) pick their interpreter at every start and are always probed. hit says which. */
int lb_python_probe_cached(const char *path, const char *cache_dir, lb_python_info *out,
			   bool *hit, char *err, size_t errlen);
/* An interpreter the experiment directory named (labbox.yaml's python:): probed inside the
 * sandbox (no network, host read-only, homes hidden) with expdir visible read-only; never run
 * on the host, never cached. A relative path with a slash is relative to expdir. */
int lb_python_probe_confined(const char *path, const char *expdir, lb_python_info *out,
			     char *err, size_t errlen);
/* Make py runnable in sb: for an interpreter the user chose, the prefixes it reported; for a
 * confined one only what its named path shows (its directory, or the install prefix above a
 * bin/), and its experiment directory, read-only, when it lives there and origin_visible is
 * false. */
struct lb_sandbox;
int lb_python_expose(struct lb_sandbox *sb, const lb_python_info *py, bool origin_visible);
/* After staging: a confined interpreter that lives in the experiment directory runs from the
 * staged copy (paths under origin are moved to stage_dir), never from the original. */
void lb_python_restage(lb_python_info *py, const char *stage_dir);
/* The freeze of py: cached for an interpreter the user chose, run in the sandbox (uncached)
 * for a confined one. */
int lb_python_freeze_of(const lb_python_info *py, const char *cache_dir, char **out, bool *hit);
/* The Python source of the freeze below (it prints the list), for a backend that runs it
 * elsewhere (inside a container image). */
const char *lb_python_freeze_source(void);
/* `pip freeze`-style "name==version" lines of every installed distribution, sorted, read with
 * importlib.metadata so it works where pip itself is not installed. */
int lb_python_freeze(const char *executable, char **out);

/* lb_python_freeze with a cache, so repeated runs with the same interpreter don't pay for it.
 * The cache is per interpreter (one file under cache_dir, named by a hash of executable) and
 * keyed by the executable's stat and the stat (device, inode, size, mtime and ctime in ns) of
 * every directory the interpreter searches for distributions: site.getsitepackages() and
 * sys.path, as seen with -I, recorded BEFORE the listing is made. Installing, upgrading or
 * removing a distribution (pip, conda, apt) adds or removes a *.dist-info / *.egg-info entry in
 * one of them, which changes that directory's mtime; a search directory that did not exist
 * (a first `pip install` creates /usr/local/lib/python3.X/dist-packages) is recorded as absent
 * and invalidates the entry when it appears. Not seen: a version edited in place inside an
 * existing metadata directory, which no installer does.
 * A hit costs a few stat() calls and no interpreter start. On a miss one interpreter run
 * prints the stats and the list, and the entry is written through a private temporary file
 * and rename(), so a reader never sees half an entry, and concurrent writers leave one whole
 * entry. An entry is used only when it parses, names this executable and its list matches its
 * sha256, so a corrupted or truncated file is a miss, never wrong output.
 * cache_dir is created (0700) when missing; it is not used when it is not a directory owned by
 * this user and closed to group and others (another user could plant a list), nor when
 * cache_dir is NULL: then this is lb_python_freeze with *hit false. Cache failures are never
 * errors. Returns what lb_python_freeze returns; *out as it gives it; *hit whether the cache
 * answered. */
int lb_python_freeze_cached(const char *executable, const char *cache_dir, char **out, bool *hit);

#endif
