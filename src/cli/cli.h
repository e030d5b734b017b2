/* cli: argument parsing, subcommands and output; the logic lives in the library. */
#ifndef LABBOX_CLI_H
#define LABBOX_CLI_H

#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_USAGE 2
#define CLI_MEMORY_MIN ((uint64_t)32 << 20) /* the smallest --memory accepted */

/* Flags shared by run and exec (docker's names where docker has one). */
typedef struct cli_sandbox_opts {
	double budget; /* 0: none */
	double grace;
	bool grace_set;
	uint64_t memory;
	double cpus;
	long pids;
	lb_network network;
	char **env; /* K=V */
	size_t nenv;
	char **secret_env; /* NAME: passed from labbox's environment, never recorded */
	size_t nsecret_env;
	char **volumes; /* SRC:DST[:ro|rw] */
	size_t nvolumes;
	bool json;
	char *gpus;      /* --gpus all|0,1|none */
	uint64_t disk_limit; /* --disk-limit; 0: the default */
	bool disk_limit_set;
	char **degraded; /* --allow-degraded WHAT */
	size_t ndegraded;
	char **tmpfs; /* --tmpfs PATH[:size=SIZE], as given (mounts.c) */
	size_t ntmpfs;
	uint64_t shm_size; /* --shm-size; 0: the default */
	char **hide; /* --hide PATH: absolute host paths kept out of sight */
	size_t nhide;
} cli_sandbox_opts;

/* Long option ids of the shared flags, above the range of single characters. */
enum {
	OPT_BUDGET = 1000,
	OPT_GRACE,
	OPT_MEMORY,
	OPT_CPUS,
	OPT_PIDS,
	OPT_NETWORK,
	OPT_JSON,
	OPT_DEGRADED,
	OPT_GPUS,
	OPT_DISK,
	OPT_SECRET_ENV,
	OPT_HIDE,
	OPT_FIRST_PRIVATE, /* subcommands number their own options from here */
};

#define CLI_SANDBOX_LONGOPTS                                                                   \
	{"budget", required_argument, NULL, OPT_BUDGET},                                       \
		{"grace", required_argument, NULL, OPT_GRACE},                                 \
		{"memory", required_argument, NULL, OPT_MEMORY},                               \
		{"cpus", required_argument, NULL, OPT_CPUS},                                   \
		{"pids-limit", required_argument, NULL, OPT_PIDS},                             \
		{"network", required_argument, NULL, OPT_NETWORK},                             \
		{"json", no_argument, NULL, OPT_JSON}, {"env", required_argument, NULL, 'e'},  \
		{"allow-degraded", required_argument, NULL, OPT_DEGRADED},                     \
		{"gpus", required_argument, NULL, OPT_GPUS},                                   \
		{"disk-limit", required_argument, NULL, OPT_DISK},                             \
		{"secret-env", required_argument, NULL, OPT_SECRET_ENV},                       \
		{"volume", required_argument, NULL, 'v'},                                       \
		{"hide", required_argument, NULL, OPT_HIDE}, CLI_MOUNT_LONGOPTS

#define CLI_SANDBOX_HELP                                                                       \
	"  --budget SECONDS     wall-clock time budget; then SIGTERM, grace, SIGKILL (exit 124)\n" \
	"  --grace SECONDS      time between SIGTERM and SIGKILL when the budget ends (default 5);\n" \
	"                       Ctrl-C (this host's sandbox): SIGINT first, SIGTERM a grace later\n" \
	"  --network none|loopback|host\n"                                                     \
	"                       none (default): no network, only AF_UNIX sockets; loopback: a\n" \
	"                       private loopback, any socket; host: the host's network\n"      \
	"  -e, --env K=V        set a variable in the sandbox's clean environment (repeatable);\n" \
	"                       the value is recorded in the manifest\n"                     \
	"  --secret-env NAME    pass NAME with its value from labbox's own environment; the\n" \
	"                       manifest records only the name (repeatable)\n"               \
	"  -v, --volume SRC:DST[:ro|rw]\n"                                                      \
	"                       make host path SRC visible at DST, read-only unless :rw; a DST\n" \
	"                       the host lacks is created inside the sandbox only; /proc,\n"  \
	"                       /sys and /dev cannot be SRC\n"                                \
	"  --hide PATH          keep host path PATH out of the experiment's sight, as the runs\n" \
	"                       directory is, also where a -v shows it (repeatable; recorded,\n" \
	"                       and repeated by rerun; mode ssh: a path of the host)\n" CLI_MOUNT_HELP \
	"  --memory SIZE        memory limit of the whole tree, swap included, e.g. 512m, 4g\n" \
	"  --cpus N             CPU limit, e.g. 1.5; also sets OMP_NUM_THREADS, MKL_NUM_THREADS,\n" \
	"                       OPENBLAS_NUM_THREADS, NUMEXPR_NUM_THREADS and\n"               \
	"                       VECLIB_MAXIMUM_THREADS to N rounded up (-e wins)\n"            \
	"  --disk-limit SIZE    most the command may write into its writable directory\n"      \
	"                       (default: half the free space there, at most 10g, divided\n"  \
	"                       among a sweep's --jobs, polled; 0: none); a polled run that\n" \
	"                       writes while its file system has under 1/20 (at most 1g)\n" \
	"                       free ends as disk_limit; a limit given here is exp/'s own\n"  \
	"                       file system (root, loop devices; what the run left is\n"     \
	"                       brought back within the budget and grace, 5 s at least),\n"  \
	"                       else refused without --allow-degraded disk\n"                \
	"  --pids-limit N       limit on the number of processes and threads\n"                \
	"  --allow-degraded WHAT  run even when a limit cannot be enforced by a cgroup:\n"      \
	"                       memory (per-process RLIMIT_DATA), pids (RLIMIT_NPROC), cpus\n" \
	"                       (no CPU limit), disk (a polled --disk-limit), or all;\n"      \
	"                       without it labbox refuses (exit 125); run --mode ssh:\n"     \
	"                       isolation (a host without labbox); gate: run although the\n"  \
	"                       experiment's own .pth files or interpreter start before the\n" \
	"                       runtime gate (recorded as not enforced)\n"                    \
	"  --gpus all|0,1|none  NVIDIA GPUs usable inside (device nodes, CUDA_VISIBLE_DEVICES);\n" \
	"                       none (default): no GPU is visible; a missing GPU is refused\n" \
	"  --json               print one JSON document on stdout; human text goes to stderr\n" \
	"  -h, --help           this help\n"

/* The mount flags of mounts.c, numbered apart from the enum above. */
enum { OPT_TMPFS = 900, OPT_SHM_SIZE };

#define CLI_MOUNT_LONGOPTS                                                                     \
	{"tmpfs", required_argument, NULL, OPT_TMPFS},                                         \
		{"shm-size", required_argument, NULL, OPT_SHM_SIZE}

#define CLI_MOUNT_HELP                                                                         \
	"  --tmpfs PATH[:size=SIZE[,mode=OCTAL]]\n"                                             \
	"                       a private, writable tmpfs at PATH (default size 1g, mode 1777);\n" \
	"                       created inside the sandbox when the host lacks PATH\n"          \
	"  --shm-size SIZE      size of the private /dev/shm (default 1g)\n"

/* mounts.c: -v checked up front, --tmpfs, --shm-size; 1 when opt was one, 0 when not, -1
 * after printing an error. */
int cli_mount_opt(const char *cmd, int opt, const char *arg, cli_sandbox_opts *o);
/* Apply -v, --tmpfs, --shm-size, and the thread counts --cpus implies: 0 or an exit code. */
int cli_mounts_apply(const char *cmd, const cli_sandbox_opts *o, lb_sandbox *sb);
/* The thread counts (OMP_NUM_THREADS and the BLAS ones) for cpus CPUs, rounded up and at most
 * the CPUs this process may run on; a variable -e sets wins. 0 or an exit code. */
int cli_thread_env(const cli_sandbox_opts *o, double cpus, lb_sandbox *sb);
/* The same settings as "NAME=N" strings appended to the array out. */
void cli_thread_env_json(const cli_sandbox_opts *o, double cpus, struct json_object *out);
struct json_object;
void cli_mounts_json(const cli_sandbox_opts *o, struct json_object *j);
int cli_mounts_from_json(struct json_object *j, cli_sandbox_opts *o);
void cli_mounts_free(cli_sandbox_opts *o);

/* Handle one shared flag; returns 1 when it was one, 0 when not, -1 after printing an error. */
int cli_sandbox_opt(const char *cmd, int opt, const char *arg, cli_sandbox_opts *o);
/* Apply the shared flags to a sandbox: 0, or the exit code after printing an error (2 for a
 * bad flag, 125 for a GPU the host does not have). */
int cli_sandbox_apply(const char *cmd, const cli_sandbox_opts *o, lb_sandbox *sb);
/* --hide of a path in the experiment directory is refused: the experiment runs on a copy of
 * that directory (its run's exp/), where the path would be in sight all the same. 0, or the
 * usage error's exit code after printing it. */
int cli_hide_outside(const char *cmd, const cli_sandbox_opts *o, const char *expdir);
/* --runtime-gate off|record|on into *mode (an lb_gate_mode): 0, or -1 after the error. */
int cli_runtime_gate_opt(const char *cmd, const char *arg, int *mode);
void cli_sandbox_opts_free(cli_sandbox_opts *o);
/* The disk limit for a writable directory: --disk-limit, else half the free space of its file
 * system capped at 10 GiB. */
uint64_t cli_disk_limit(const cli_sandbox_opts *o, const char *dir);
/* The same for one of share runs that write beside each other at once (a sweep's cells): the
 * free space's half is divided among them; the 10 GiB cap stays each run's own. */
uint64_t cli_disk_limit_shared(const cli_sandbox_opts *o, const char *dir, size_t share);
struct json_object;
/* The shared flags as JSON (kept in the manifest) and back (for rerun). */
struct json_object *cli_sandbox_json(const cli_sandbox_opts *o);
int cli_sandbox_opts_from_json(struct json_object *j, cli_sandbox_opts *o);
/* printf for human output on stdout that shows what records hold (names of directories and
 * files, metric names, messages an experiment wrote): each %s argument through lb_text_show
 * (line breaks as \n \r, control characters, DEL, C1 controls and bytes that are not UTF-8
 * as \xNN, bidirectional and other invisible characters as \uXXXX), so no record can begin
 * a line that reads as labbox's, move the cursor, retitle the terminal or hide text from the
 * person reading it. Only the format's own newlines end lines. */
int cli_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Text labbox composed itself, whose experiment strings were shown already (lb_show_fprintf,
 * lb_text_show), on stdout: its newlines pass, any control byte left is shown as \xNN. */
void cli_print_block(const char *text);
/* The experiment's output echoed on fd, filtered by lb_term_filter (an experiment must not be
 * able to drive the user's terminal, and a pipe often ends at one); with exact, only when fd
 * is a terminal, as it is otherwise (exec: its command's output is the product). tty: the
 * filter is on. broken: a
 * write failed (the terminal or pipe went away), so the run goes on unechoed; err is that
 * write's errno (exec: its command's output is the answer, and losing it is not a success).
 * final flushes a sequence held back across writes. */
typedef struct cli_echo {
	int fd, err;
	bool tty, broken;
	/* held (cli_echo_hold): a full ring waits for the reader until hold_until (monotonic;
	 * 0: no end) rather than dropping */
	bool hold;
	double hold_until;
	lb_term_filter_state state;
	/* the writer thread and its ring (echo.c): the supervisor only ever appends */
	bool started, closing;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *ring;
	size_t head, len;
	unsigned long long dropped;
} cli_echo;
void cli_echo_init(cli_echo *e, int fd, bool exact);
void cli_echo_write(cli_echo *e, const char *data, size_t len, bool final);
/* exec's stdout, its command's product: what the reader has not taken yet is waited for, as
 * a pipe makes its writer wait, for up to seconds (the budget; 0: no end) or until labbox is
 * interrupted; only then is the rest dropped (counted in dropped, said at the end). */
void cli_echo_hold(cli_echo *e, double seconds);
/* Before labbox writes a line of its own while the echo may go on after it (an attempt's
 * progress, a warning): what the echo holds is written out and its region ended, as at the
 * end (attributes reset, the cursor below the lowest line it reached), and the output after
 * it starts a region of its own, which cannot climb over that line. */
void cli_echo_break(cli_echo *e);
/* 0, or CLI_EXIT_USAGE said naming opt and path, when a user-named output (report -o, runs
 * export's directories) would be written in labbox's records, state or cache
 * (lb_record_output_refused): a reading command must never replace a run's record. */
int cli_output_not_records(const char *cmd, const char *runs_dir, const char *opt,
			   const char *path);
/* Print "labbox CMD: message" as one line on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "labbox CMD: warning: message" as one line on stderr, control bytes shown; not an error,
 * so not in the --json error document. */
void cli_warn(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether run id's record in dir is this user's labbox's own as it stands
 * (lb_record_run_seal: whole, or an older labbox's seal of manifest.json only); when it is
 * not, why gets the words report, export, compare and explain say it with: "run 'ID' (DIR)
 * was not recorded by this user's labbox as it stands (...); its status and metrics are
 * only what those files say", or that its result.json was changed since (sealed.c). Sealed
 * by the older scope: true, and why says so (readers warn with it); whole: why is empty. */
bool cli_run_sealed(const char *dir, const char *id, char *why, size_t whylen);
/* The same, with the index row's status when the caller has it (a row still "running" is a
 * run its labbox is at work on). */
bool cli_run_sealed_as(const char *dir, const char *id, const char *row_status, char *why,
		       size_t whylen);
/* lb_record_run_seal of an index row's run, with the row checked against the sealed
 * result.json (lb_index_row_agrees): the index is outside the seal, so a whole seal whose
 * row differs is LB_SEAL_NONE for what the row shows, with *row_differs set.
 * cli_row_seal_why says so in one line. */
lb_record_seal cli_row_seal(struct json_object *row, bool *row_differs);
void cli_row_seal_why(struct json_object *row, char *why, size_t whylen);
/* Why run directory dir holds no record of this user's labbox (lb_record_run_unsealed), as
 * `runs list --json` says it (unsealed_reason): "running" (its labbox is at work: the index's
 * row_status is "running"), "unfinished" (result.json still says running, its labbox gone or
 * not known), "unreadable" (result.json missing or damaged), "foreign" (made elsewhere,
 * changed since, older than seals). detail (may be NULL) gets the record's own clause. */
const char *cli_unsealed_reason(const char *dir, const char *row_status, char *detail,
				size_t len);
/* What compare and export ask of a row, its record read once: whether what the row shows is
 * labbox's word (sealed, by either scope, and the row agreeing with a whole seal's
 * result.json), with why as cli_run_sealed's (or cli_row_seal_why's when the row differs,
 * *row_differs then set). */
bool cli_row_sealed(struct json_object *row, bool *row_differs, char *why, size_t whylen);
/* The records a seal covers, as `runs list`/`show` --json say (seal_scope): NULL for none. */
const char *cli_seal_scope(lb_record_seal seal);
/* The unknown-option message for getopt's '?' result. */
void cli_bad_option(const char *cmd, char *const argv[], int optopt_val);
/* Resolve the command to run; expose it when it lives under a hidden directory. A Python
 * interpreter is resolved to its real executable so shims (pyenv) and venvs work inside. */
int cli_resolve_program(const char *cmd, const char *name, lb_sandbox *sb, char **out);

/* The --json contract (jsonout.c): one JSON document on stdout for every outcome. */
/* Whether argv asks for --json, read as getopt will read it (values of options skipped,
 * abbreviations resolved), up to `--`, or up to the first operand with stop_at_operand. */
bool cli_argv_has_json(int argc, char **argv, const char *shortopts,
		       const struct option *longopts, bool stop_at_operand);
/* Enter JSON mode for cmd when argv asks for --json; call before parsing. */
void cli_json_begin(const char *cmd, int argc, char **argv, const char *shortopts,
		    const struct option *longopts, bool stop_at_operand);
void cli_json_set(const char *cmd); /* NULL leaves JSON mode (--help prints text) */
bool cli_json_active(void);
/* Record an error line (cli_error does) for the error document. */
void cli_json_note(const char *msg);
/* Print the command's one document on stdout. */
void cli_json_print(struct json_object *doc);
/* Exit status when the command's answer could not be written to stdout (closed, a reader gone,
 * a full disk) and the command itself succeeded: EX_IOERR of sysexits.h. */
#define CLI_EXIT_OUTPUT 74
/* A write of the answer that bypassed stdio (a direct write(2) to stdout) failed with err. */
void cli_out_failed(int err);
/* At the end of every command: flush and close stdout; when the answer (stdio's or a direct
 * write's) could not be written, say so on stderr and return CLI_EXIT_OUTPUT in place of a 0
 * (a failure's own status is kept). closed: stdout was closed when labbox started. */
int cli_out_finish(int rc, bool closed);
/* Whether --json documents on stdout are indented: at a terminal, for a person; into a pipe
 * or a file they are one line, for the program that reads them. */
bool cli_json_indented(void);
/* labbox.error/1 for cmd with exit code rc and the errors recorded so far. */
struct json_object *cli_json_error_doc(const char *cmd, int rc);
/* When in JSON mode and no document was printed, print labbox.error/1. Returns rc. */
int cli_json_finish(int rc);

/* run's attempts (attempts.c): OPT_ESCALATE..OPT_APPLY into ac (0, or -1 after printing the
 * error); the summary's lines for result.json's attempts, escalation and repair. */
enum { OPT_ESCALATE = 880, OPT_REPAIR_CMD, OPT_MAX_REPAIRS, OPT_APPLY };
struct lb_attempts_config;
int cli_attempts_opt(int opt, const char *arg, struct lb_attempts_config *ac, bool *max_set);
void cli_print_attempts(FILE *f, struct json_object *doc);

int cli_exec(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_probe(int argc, char **argv);
int cli_runs(int argc, char **argv);
int cli_rerun(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_report(int argc, char **argv);

/* What a record (a manifest's config and interpreter, a sweep's invocation and env template)
 * grants beyond labbox's defaults, as the flags that grant it, joined with ", " into out
 * (options.c); returns how many. What is repeated without asking only when the record
 * carries this user's seal (lb_record_mac). interp and env_template may be NULL. */
struct json_object;
size_t cli_record_grants(struct json_object *cfg, struct json_object *interp,
			 struct json_object *env_template, lb_buf *out);

#endif
