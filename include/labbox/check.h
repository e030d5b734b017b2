/* check: static validation of Python experiment code before it runs.
 *
 * A source file is parsed with tree-sitter (the Python grammar compiled into labbox), names
 * are resolved per scope (aliases, rebinding, star imports, getattr/__import__/import_module
 * with literal names, sys.modules, vars(), __dict__, __builtins__), and every use of a name is
 * matched against the rules (docs/check.md has the table of rule IDs). A policy decides which
 * findings are errors and whether the code is rejected. Whatever cannot be resolved statically
 * near a sensitive module is reported as unresolved, never passed.
 *
 * Use: lb_check_config_new, setters, then lb_check_source (one buffer) or lb_check_dir (an
 * experiment directory), then read the report (or turn it into JSON / text), then free. */
#ifndef LABBOX_CHECK_H
#define LABBOX_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

typedef enum lb_check_policy {
	LB_CHECK_STANDARD = 0, /* the hard gate; ordinary research code passes (default) */
	LB_CHECK_STRICT,       /* the seed's rules word for word */
	LB_CHECK_PERMISSIVE,   /* report everything, reject nothing */
} lb_check_policy;

typedef enum lb_check_severity {
	LB_CHECK_INFO = 0,
	LB_CHECK_WARNING,
	LB_CHECK_ERROR,
} lb_check_severity;

typedef struct lb_check_config lb_check_config;

int lb_check_config_new(lb_check_config **out);
void lb_check_config_free(lb_check_config *cfg);
/* "strict", "standard", "permissive"; -EINVAL for anything else. */
int lb_check_policy_parse(const char *name, lb_check_policy *out);
const char *lb_check_policy_name(lb_check_policy p);
int lb_check_config_set_policy(lb_check_config *cfg, lb_check_policy p);
/* The experiment's own labbox.yaml and inline `# labbox: allow[ID]` comments may lift
 * hard-gate findings only when the operator trusts the project (the code and its config are
 * usually written by the same untrusted author). Default false. */
int lb_check_config_set_trust_project(lb_check_config *cfg, bool trust);
/* Whether the runtime gate will refuse, as it happens, what the code reaches only through a
 * standard library call (platform.platform() may start `uname -p`; logging.config.dictConfig
 * imports the classes it is named). Under standard such a finding is then a warning, not an
 * error: the call is judged where it does the thing, not rejected for what it might do.
 * strict rejects it either way. Default true, as `labbox run` under standard or strict has
 * the gate on; false for a run without a gate that refuses (--runtime-gate off or record, a
 * backend that does not bind it, --allow-degraded gate). */
int lb_check_config_set_runtime_gate(lb_check_config *cfg, bool refuses);
/* The run's `~` is the user's real home (a mode without labbox's sandbox: ssh without a
 * remote labbox, Colab): every write there is outside the outputs. Otherwise it is the
 * sandbox's HOME, its private /tmp (LB_SANDBOX_HOME). */
int lb_check_config_set_real_home(lb_check_config *cfg, bool real);
/* The run's limits (copied; what lim->degraded points to is borrowed while cfg lives): the
 * sandboxes that run the interpreter on the code (compile, R's and Octave's parsers) get
 * them, as the interpreter may be the experiment's own. NULL: none. */
struct lb_sandbox_limits;
int lb_check_config_set_limits(lb_check_config *cfg, const struct lb_sandbox_limits *lim);
/* Module (and everything under it) or call (a resolved dotted name such as shutil.rmtree)
 * allowed or denied. Allowing a module also puts it on the import allowlist. */
int lb_check_config_allow_module(lb_check_config *cfg, const char *module);
int lb_check_config_allow_call(lb_check_config *cfg, const char *name);
int lb_check_config_deny_module(lb_check_config *cfg, const char *module);
int lb_check_config_deny_call(lb_check_config *cfg, const char *name);
/* An absolute directory (or file) the code may write to besides the experiment directory. */
int lb_check_config_add_output_path(lb_check_config *cfg, const char *path);
/* Rule ID ("LB201") or category ("harness") not to report at all. Operator-level. */
int lb_check_config_ignore(lb_check_config *cfg, const char *id_or_category);
/* Compute budget and plan for the budget rules; 0 means not set. */
int lb_check_config_set_budget(lb_check_config *cfg, double seconds);
int lb_check_config_set_plan(lb_check_config *cfg, long conditions, long seeds, long iterations);
/* A row of the seed's compute-budget table: budgets below `below` seconds allow at most these
 * conditions, seeds and iterations per condition (0: no limit); text is the row as the seed
 * writes it. */
typedef struct lb_check_budget_row {
	double below;
	long conditions, seeds, iterations;
	const char *band;
	const char *text;
} lb_check_budget_row;
/* The row a budget of budget_s seconds falls in. */
const lb_check_budget_row *lb_check_budget_row_for(double budget_s);
/* Interpreter whose compile() decides syntax errors, run in the sandbox (lb_check_dir and
 * lb_check_files only). NULL: tree-sitter's error nodes decide. */
int lb_check_config_set_python(lb_check_config *cfg, const char *path);
/* The same, for an interpreter the caller has probed already (labbox run has): no second
 * probe. */
struct lb_python_info;
int lb_check_config_set_python_info(lb_check_config *cfg, const struct lb_python_info *py);
/* A directory of the user's (0700, owned by them) where verdicts of compile() are kept: a
 * file whose exact bytes this interpreter (path, version, implementation) compiled without
 * error is not compiled again, so checking unchanged code costs no interpreter start. Only
 * clean verdicts are kept; the probe of a set_python interpreter is cached there too.
 * NULL (the default): no cache. */
int lb_check_config_set_cache_dir(lb_check_config *cfg, const char *dir);
/* The same directory keeps each file's findings (cache_dir/check), named by the sha256 of the
 * file's bytes and of everything else that decides them (docs/check.md): a file checked
 * before under the same labbox, rules and configuration is not parsed again. The entries of
 * one experiment are kept together, under the experiment directory's path, or under name
 * when one is set: labbox run checks a staged copy in a new directory each time and names
 * the original. Such a check neither trusts nor records the files' metadata (a fresh copy's
 * never matches): its pack is rewritten only when an entry changed. */
int lb_check_config_set_cache_name(lb_check_config *cfg, const char *name);
/* Probe: lb_check_dir and lb_check_files only stat the files (and the result cache's pack),
 * reading none of them, and fold the report's answer (no findings are filled in; `files`,
 * `cached` and `unread` are). When the answer is complete, what the check printed
 * for it before can be printed again (lb_check_answer_load); otherwise the check is done
 * again without the probe. No probe with set_python (compile() verdicts are not stat-ed). */
int lb_check_config_set_answer_probe(lb_check_config *cfg, bool probe);
/* Entry point of an experiment directory (default main.py): the harness rules apply to it. */
int lb_check_config_set_entry(lb_check_config *cfg, const char *entry);
/* The entry point set (--entry), or NULL. */
const char *lb_check_config_entry(const lb_check_config *cfg);
/* Read the `budget`, `entry`, `plan` and `check` keys of labbox.yaml text (other keys are the
 * config module's and are ignored here). Settings from it count as the project's own (see
 * set_trust_project). -EINVAL with one line in err on a malformed document. */
int lb_check_config_load_yaml(lb_check_config *cfg, const char *text, size_t len, char *err,
			      size_t errlen);

typedef struct lb_check_finding {
	char *file;
	unsigned line, col; /* 1-based; col counts bytes */
	char id[8];         /* "LB101" */
	lb_check_severity severity;
	const char *category; /* static: syntax, security, imports, determinism, harness, budget, ... */
	char *message;
	char *name;        /* the resolved dotted name (os.system), NULL when none */
	bool rejects;      /* counts toward rejection under the policy */
	bool suppressed;   /* an honored inline allow or configuration allow */
	char *suppression; /* why: the inline reason or "labbox.yaml allow" */
} lb_check_finding;

/* Why lb_check_dir or lb_check_files failed (returned an error): the code (a file the check
 * cannot read or take), labbox.yaml (a configuration error), or the check's own machinery
 * (its sandbox did not start or did not finish, the interpreter could not be asked). Only
 * the first is the code's fault; a caller that runs code tells the others apart. */
typedef enum {
	LB_CHECK_ERR_CODE = 0,
	LB_CHECK_ERR_CONFIG,
	LB_CHECK_ERR_MACHINERY,
} lb_check_error_kind;

typedef struct lb_check_report {
	lb_check_policy policy;
	lb_check_error_kind error_kind; /* meaningful only after a call that failed */
	lb_check_finding *items;
	size_t n, cap;
	size_t files;
	bool rejected;        /* some finding rejects under the policy */
	char syntax_by[96];   /* "python 3.11.2" or "tree-sitter" */
	size_t syntax_cached; /* files whose clean compile() verdict was kept (set_cache_dir) */
	/* The standard library whose capability summaries the check used ("python 3.11
	 * /usr/lib/python3.11 (554 modules, cached)"), or why there were none (stdlib_floor:
	 * only labbox's own lists of names were checked). Empty when no file was checked. */
	char stdlib_by[600];
	bool stdlib_floor;
	size_t cached;        /* files whose findings came from the result cache (set_cache_dir) */
	size_t unread;        /* of those, the files not even read: their metadata matched */
	/* Every seed call found, in file order: [{file, line, col, call (numpy.random.seed),
	 * lib (numpy, or * for all), value (the integer, or the argument's source text such as
	 * "args.seed")}]; NULL when none. For the manifest: what the code seeds with. */
	struct json_object *seeds;
	/* What the code needs from the sandbox (the network, a GPU, a write outside the
	 * experiment), in file order; NULL when nothing. Not findings: they reject nothing.
	 * lb_check_needs_json gives them in their public shape. */
	struct json_object *needs;
	/* The modules the code imports (absolute imports, by their top-level name), less the
	 * experiment's own modules (lb_check_dir): an object whose keys are the names; NULL when
	 * none. What an environment must import for the code to run (labbox run --env auto). */
	struct json_object *imports;
	/* The directories lb_check_dir did not read (caches, records, node_modules,
	 * site-packages, virtual environments), by identity: ["DEV:INO", ...]; NULL when none.
	 * For the runtime gate, which compiles no file under them, whatever they are named
	 * when the run asks (lb_gate_config.unread_dirs). */
	struct json_object *unread_dirs;
	/* The whole answer (lb_check_answer_*): answer is the sha256 of everything that decides
	 * what the report prints, folded by every lb_check_dir / lb_check_files call whose files
	 * were all answered by their metadata from the result cache. answer_state 0: no call
	 * yet, 1: every call so far was, -1: some was not (no answer). answer_probed: the calls
	 * only looked (lb_check_config_set_answer_probe), the findings are not filled in. */
	unsigned char answer[32];
	int answer_state;
	bool answer_probed;
} lb_check_report;

/* Check one buffer (path is only used in findings). No standard library summaries are read
 * for one buffer (lb_check_files and lb_check_dir read them): only the hand lists apply. Findings are appended to rep, so several
 * files can share one report; call lb_check_finish once at the end. Harness rules are applied
 * when harness is true (the buffer is an experiment's entry point). */
int lb_check_source(const lb_check_config *cfg, const char *path, const char *src, size_t len,
		    bool harness, lb_check_report *rep);
/* Whether dir's labbox.yaml (or labbox.yml) holds what lb_check_dir reads of it (check:,
 * plan:, budget, entry) in a form it takes: 0, or a negative errno with err naming the key
 * and line, as lb_check_dir would fail. For a command that must refuse a configuration
 * error before it runs anything. */
int lb_check_dir_config_valid(const char *dir, char *err, size_t errlen);

/* Every *.py under dir (skipping .git, .labbox, __pycache__, virtual environments and hidden
 * directories; never following symlinks), with dir/labbox.yaml read into a copy of cfg and the
 * harness rules applied to the entry point. err gets one line on failure. */
int lb_check_dir(const lb_check_config *cfg, const char *dir, lb_check_report *rep, char *err,
		 size_t errlen);
/* The modules the code of dir imports (lb_check_report.imports of a permissive check with no
 * interpreter: nothing runs), sorted, as a malloc'd array of n malloc'd names. */
int lb_check_dir_imports(const char *dir, const char *entry, char ***out, size_t *n, char *err,
			 size_t errlen);
/* Files given one by one (each is its own entry point). */
int lb_check_files(const lb_check_config *cfg, char *const paths[], size_t n,
		   lb_check_report *rep, char *err, size_t errlen);
/* Sort findings by file, line, column and settle `rejected`. */
void lb_check_finish(lb_check_report *rep);
void lb_check_report_free(lb_check_report *rep);

/* JSON array of findings (suppressed ones included, marked): what `labbox run` stores in
 * result.json under "findings". */
struct json_object *lb_check_findings_json(const lb_check_report *rep);
/* The needs as `check --json` and result.json carry them: [{kind (network, gpu,
 * write_outside), evidence {file, line, text}, via, flag (the exact flag that grants it),
 * optional, path (write_outside), finding (the id of a rejecting finding on that line, or
 * null), granted}]. granted is judged against sandbox (a sandbox configuration as
 * cli_sandbox_json makes it: network "host", gpus, volumes "SRC:DST[:ro|rw]"); NULL: nothing
 * is granted. A new array. */
struct json_object *lb_check_needs_json(const lb_check_report *rep, struct json_object *sandbox);
/* The whole `labbox check --json` document (schema labbox.check/1), llm_text included. */
struct json_object *lb_check_report_json(const lb_check_report *rep);
/* Text ready to paste into a repair prompt; malloc'd. */
char *lb_check_llm_text(const lb_check_report *rep);
/* Compiler-style lines and a summary line; malloc'd. */
char *lb_check_text(const lb_check_report *rep);

/* The whole answer of a check, kept in the result cache when every file was answered by its
 * metadata: the exact bytes the command printed on stdout and stderr and its exit status,
 * for the same answer digest and the same context (the caller's working directory and
 * arguments: whatever else shapes the output). */
typedef struct lb_check_answer {
	int rc;
	size_t out_len, err_len;
	/* A loaded answer stays in its file (fd, the bytes at out_off and err_off); a parsed one
	 * (fd -1) is out and err, inside the bytes it was parsed from. */
	int fd;
	uint64_t out_off, err_off;
	const char *out, *err;
} lb_check_answer;
/* 0 and out filled when cache_dir/check holds an intact answer for rep->answer (which must
 * be complete) and ctx; -ENOENT otherwise. Free with lb_check_answer_free. */
int lb_check_answer_load(const lb_check_config *cfg, const lb_check_report *rep,
			 const char *const ctx[], size_t nctx, lb_check_answer *out);
/* Kept when rep's answer is complete and was not probed (the findings are the real ones);
 * failures only cost the next check its answer. */
void lb_check_answer_store(const lb_check_config *cfg, const lb_check_report *rep,
			   const char *const ctx[], size_t nctx, int rc, const char *out,
			   size_t out_len, const char *err, size_t err_len);
/* Writes the answer's stdout bytes to out_fd, then its stderr bytes to err_fd: 0, or a
 * negative errno (a write failed, or the file was cut since it was loaded). */
int lb_check_answer_print(const lb_check_answer *a, int out_fd, int err_fd);
void lb_check_answer_free(lb_check_answer *a);

/* The rule table, for --help, docs and tests. NULL past the end. */
typedef struct lb_check_rule_info {
	const char *id;
	const char *category;
	const char *title;
} lb_check_rule_info;
const lb_check_rule_info *lb_check_rule(size_t i);

#endif
