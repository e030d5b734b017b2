/* diagnose: explain a failed run by its root cause, from the evidence the run left. */
#ifndef LABBOX_DIAGNOSE_H
#define LABBOX_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

typedef struct lb_failure_input {
	const char *log_tail; /* last lines of the combined output (may be NULL) */
	size_t log_tail_len;
	/* The last line that is not blank each stream wrote (result.json's last_lines), NULL
	 * when it wrote none or it is not known. stdout and stderr are two pipes read in turn:
	 * the combined output has their lines in the order labbox read them, which need not be
	 * the order they were written. */
	const char *stdout_last, *stderr_last;
	int exit_code;   /* -1 when killed by a signal */
	int signal;      /* 0 when it exited */
	bool timed_out;  /* the time budget ended it */
	bool oom_killed; /* the memory limit ended it */
	/* A memory cgroup counted the tree's OOM kills (any OOM killer's): with oom_killed false,
	 * a SIGKILL was not the out-of-memory killer's. */
	bool oom_counted;
	bool infra_error;
	const char *infra_message; /* why the sandbox or backend could not run it */
	const char *language; /* "r" or "octave": their error lines are read too; NULL: Python */
	bool after_run;       /* infra_error: the experiment ran, what it left was not brought back */
	/* The staged experiment (RUN_DIR/exp): frames under it are the experiment's own code.
	 * NULL: relative paths and paths through an exp/ directory are. */
	const char *exp_dir;
	/* What the run was granted, so an escalation already in effect is not suggested again. */
	bool network_host;     /* --network host */
	bool network_loopback; /* --network loopback */
	/* --network none: labbox's seccomp filter answers every socket but AF_UNIX with EPERM,
	 * so an EPERM about a socket is the sandbox's network restriction. */
	bool network_none;
	/* A tmpfs of the sandbox's own (its private /tmp, /var/tmp, /dev/shm, a --tmpfs) that the
	 * sandbox found full when the run ended, and its size in bytes; NULL: none was. A failure
	 * the error's words call a bug is then the full tmpfs's: numpy's and torch's savers
	 * report a short write without ENOSPC. */
	const char *full_tmpfs;
	unsigned long long full_tmpfs_bytes;
	/* The run's -v volumes as config.sandbox.volumes records them ("SRC:DST[:ro|rw]"),
	 * NULL: none or not known. A write refused under a writable one was the run's to make:
	 * what refused it is the file permissions there, which another volume does not change. */
	struct json_object *volumes;
	/* The experiment ran as another uid than labbox's (labbox as root: 65534), payload_uid
	 * and payload_gid: a writable volume's SRC must be writable by that uid, which the
	 * diagnosis then checks and names. False: the same uid, or not known. */
	bool payload_other_uid;
	unsigned payload_uid, payload_gid;
	/* The sandbox's root showed this host's own files (a local run on this machine): a
	 * refused path that is a file here is a file the run saw, and a volume over it must be
	 * a file too. */
	bool host_root;
	bool gpus;	       /* --gpus gave it GPUs */
	unsigned long long memory_limit; /* bytes; 0: none or not known */
	long pids_limit; /* --pids-limit; 0: labbox's default (at most 4096) or not known */
	/* The configuration is known and set no memory limit: an out-of-memory failure is the
	 * machine's, which no flag of labbox's lifts. */
	bool memory_unlimited;
	/* The memory of the machine the run ran on, in bytes (manifest machine.memory_total_bytes);
	 * 0: not known. An allocation the output says was refused for asking more than this is
	 * the code's (a shape that grew with the data), which no --memory lifts. */
	unsigned long long machine_memory;
	/* The machine the run ran on has no NVIDIA GPU (no /dev/nvidiaN; the manifest's
	 * machine.gpu_device_nodes 0): a CUDA error there is no flag's to lift, since --gpus
	 * has nothing to give. False: it has some, or it is not known. */
	bool machine_without_gpus;
	/* result.json's runtime_gate: a gate_refused verdict needs the refusal among its events
	 * (refused, the same event and rule), not only the gate's words in the output. NULL: no
	 * record, so no gate_refused. */
	struct json_object *runtime_gate;
	/* The gate's record that the main program ended with an uncaught exception
	 * (runtime_gate.uncaught: {exception, message, file, line, ...}), or NULL. With it a run that exited 0 failed all the same,
	 * and any run that exited of itself is diagnosed from the last traceback of that
	 * exception's class in the output (not one an atexit handler printed after it), else
	 * from the record (code_error: a sys.excepthook of the experiment's printed nothing). */
	struct json_object *uncaught;
	/* The run's wall-clock seconds and the CPU seconds (user + system) its processes used
	 * (result.json's resources); cpu_known false: not recorded. A run the budget ended that
	 * used almost no CPU was waiting, not computing. */
	double wall_s, cpu_s;
	bool cpu_known;
	/* Octave: the exec guard killed its own help formatter (lb_octave_help_formatter), which
	 * its missing-function hook starts to format "The 'f' function belongs to the P package",
	 * so that sentence is not in the output. octave_unimplemented: the path of the
	 * interpreter's m/help/__unimplemented__.m, whose lists name the package of a function
	 * instead; NULL: not known. */
	bool octave_help_killed;
	const char *octave_unimplemented;
} lb_failure_input;

/* Pure: whether a command line the exec guard refused (as it records it, argv joined by
 * blanks) is Octave's own help formatter: makeinfo on one of the octave-help-XXXXXX files
 * Octave's __makeinfo__ writes into its temporary directory. */
bool lb_octave_help_formatter(const char *argv);
/* Pure: the Octave Forge package __unimplemented__.m's text (len bytes) assigns function fn
 * to (`case {..., "fn", ...}` then `txt = check_package (fcn, "P")`), copied into pkg. 0,
 * -ENOENT when it names none (not listed, or a Matlab function Octave lacks). */
int lb_octave_function_package(const char *text, size_t len, const char *fn, char *pkg,
			       size_t pkglen);

/* Classify. Returns a new JSON object or NULL when nothing failed (exit 0, no signal, no
 * timeout, no oom, no infra error, no uncaught exception of the main program):
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
/* network_host, gpus, memory_limit, memory_unlimited, pids_limit and volumes of in from a
 * sandbox configuration as the manifest records it (config.sandbox: network, gpus,
 * memory_bytes, pids_limit, volumes; volumes is borrowed from sandbox). */
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
	bool oom_kill_completed;      /* the run exited 0 and its cgroup counted an OOM kill */
	struct json_object *runtime_gate; /* result.json's "runtime_gate", or NULL */
	const char *failure_class;	  /* the failure's class, or NULL when it completed */
	/* result.json's last_lines: each stream's last line that is not blank, or NULL (none,
	 * or not known). Their order in run.log is as labbox read them (decisions.md). */
	const char *stdout_last;
	const char *stderr_last;
} lb_diagnosis_input;

/* Appends {"kind", "message", "evidence": [...], ...} objects to out (an array): kinds
 * loss_divergence, near_chance_accuracy, runtime_warning, time_guard_skipped, stdlib_shadow,
 * worker_exception, oom_kill, gate_refusals_caught, exception_caught_at_end.
 * Returns 0, -EINVAL for a bad argument or -ENOMEM. */
int lb_diagnose_warnings(const lb_diagnosis_input *in, struct json_object *out);


/* Standing permission to escalate (`run --escalate network,gpus,env,memory`): which one a
 * failure calls for. */
enum {
	LB_ESCALATE_NETWORK = 1 << 0, /* the host network */
	LB_ESCALATE_GPUS = 1 << 1,    /* the host's GPUs */
	LB_ESCALATE_ENV = 1 << 2,     /* the environment `--env auto` finds */
	LB_ESCALATE_MEMORY = 1 << 3,  /* twice the memory limit */
};
/* Parse "network,gpus,env,memory" (any subset, any order) into LB_ESCALATE_* bits: 0, or
 * -EINVAL with err naming the word that is not one. */
int lb_escalate_parse(const char *list, unsigned *mask, char *err, size_t errlen);
/* "network", "gpus", "env", "memory" for one bit; NULL for anything else. */
const char *lb_escalate_name(unsigned bit);
/* The standing permission that lifts what a failure (lb_diagnose_failure's object) says
 * stopped the run: network for class network and for a socket the sandbox refused (its
 * escalation block grants the network), gpus for gpu_unavailable, memory for oom (not
 * gpu_oom: more host memory does not help), env for wrong_env and missing_package; 0 when
 * none would. */
unsigned lb_escalate_for_failure(const struct json_object *failure);
/* Whether the runtime gate's record (result.json's runtime_gate) is complete and shows no
 * socket event: the gate was fully in without the network granted (it judges sockets only
 * then), its channel read whole, nothing dropped, and none of the run's Python interpreters
 * looked a host up, opened or connected a socket (refused, or allowed under permissive). False when labbox could not have seen one (no gate, an R or Octave run, a
 * channel tampered or cut short) or saw one. Native code's own sockets are not seen. */
bool lb_gate_saw_no_socket(const struct json_object *runtime_gate);
/* Whether the runtime gate's record is whole: the gate said it was fully in, its channel was
 * read whole and it dropped no event. */
bool lb_gate_record_complete(const struct json_object *runtime_gate);

#endif
