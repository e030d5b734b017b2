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
} lb_failure_input;

/* Classify. Returns a new JSON object or NULL when nothing failed (exit 0, no signal, no
 * timeout, no oom, no infra error):
 *   {"class": one of sandbox_restriction, network, missing_package, wrong_env, missing_data,
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


/* Interpreter probing: ask a Python interpreter (outside the sandbox, isolated mode -I so the
 * caller's environment and user site are ignored) where it lives and what it is. */
typedef struct lb_python_info {
	char executable[4096]; /* sys.executable: the path to exec (a venv keeps its bin/python) */
	char prefix[4096];     /* sys.prefix */
	char base_prefix[4096];
	char version[64];      /* "3.11.2" */
	char implementation[32];
} lb_python_info;

/* -ENOENT when path is not found, -ENOEXEC when it is not a working Python; err explains. */
int lb_python_probe(const char *path, lb_python_info *out, char *err, size_t errlen);
/* `pip freeze`-style "name==version" lines of every installed distribution, sorted, read with
 * importlib.metadata so it works where pip itself is not installed. */
int lb_python_freeze(const char *executable, char **out);

#endif
