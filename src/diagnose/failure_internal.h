/* What the files of a failed run's diagnosis share: the log, its exceptions and the verdict
 * they make (failure.c decides; the files named below read). Not part of labbox's face.
 * dg_ names what one of these files lends the others. */
#ifndef LABBOX_DIAGNOSE_FAILURE_INTERNAL_H
#define LABBOX_DIAGNOSE_FAILURE_INTERNAL_H

#include "labbox/diagnose.h"
#include "internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The root cause of a traceback is within its last few hundred lines; older output is noise. */
#define DIAG_MAX_LINES 2000
#define DIAG_EVIDENCE_MAX 8
#define DIAG_EVIDENCE_LEN 400
#define DIAG_TEXT_LEN 600
/* Lines above the end scanned for a known message when there is no traceback. */
#define DIAG_SCAN_LINES 40
#define DIAG_MAX_EXC 32
#define NONE SIZE_MAX

typedef struct lb_log {
	char *text;   /* cleaned lines, each NUL-terminated */
	char **lines; /* into text */
	size_t n;
	const char *exp_dir; /* lb_failure_input.exp_dir: which frames are the experiment's */
	struct json_object *gate; /* lb_failure_input.runtime_gate: what the gate refused */
	bool net_none;	/* the run had --network none: seccomp refuses sockets with EPERM */
	bool net_open;	/* it had loopback or the host's: an EPERM socket is not labbox's */
	char glued[64]; /* a stack dump's header split off the line it was glued to */
	/* The blocks the interpreter printed for an exception it ignored (dg_in_ignored) */
	size_t ign_from[8], ign_to[8], n_ign;
} lb_log;

typedef struct lb_exc {
	size_t header; /* first line of its traceback */
	size_t line;   /* the "Name: message" line */
	size_t frame; /* the innermost 'File "...", line N, in f' line, or NONE */
	int link;     /* how the next exception relates to this one: LINK_* */
	bool bare;    /* no "Traceback" header was seen: the line alone named it */
	bool cut;     /* bare, but frames fill the log's tail above it: a traceback longer than
		       * the tail (a RecursionError's), its header above the lines kept */
} lb_exc;

/* Python prints a chain oldest first. A cause (`raise X from e`) explains what follows it; a
 * context ("During handling...") is an exception the code was handling when the next one
 * was raised, which explains it only sometimes (a cache miss handled by downloading is not
 * why the download failed). */
/* LINK_WRAPPED: the exception a library caught in a worker and raised again in the parent
 * with the worker's traceback as text below it (torch's DataLoader: "Caught IndexError in
 * DataLoader worker process 0." then "Original Traceback"): the worker's is the root. */
enum { LINK_NONE, LINK_CONTEXT, LINK_CAUSE, LINK_WRAPPED };

/* The advice for a credential's path the output named as missing (a printf format, %s the
 * path): never to copy or mount it in. */
#define DG_SUGGEST_CREDENTIAL                                                                    \
	"'%s' is a credential (labbox hides home directories and such files from every run on " \
	"purpose): do not copy or mount it for the experiment; code that needs a service gets a " \
	"token of its own for it, given knowingly (-e NAME=VALUE)"

typedef struct lb_verdict {
	const char *cls;
	char summary[DIAG_TEXT_LEN];
	char suggestion[DIAG_TEXT_LEN];
	size_t evidence[DIAG_EVIDENCE_MAX];
	size_t n_evidence;
	size_t exc_line; /* NONE when no exception decided the class */
	size_t frame;
	size_t code_frame; /* the innermost frame in the experiment's own code, or NONE */
	int confidence;	   /* CONF_* */
	const char *confidence_reason;
	/* The gate's record of the main program's uncaught exception chose what decided it:
	 * not the output's last traceback, or no traceback at all */
	bool by_uncaught;
	/* Said after the summary's location: the exception the code was handling when it raised
	 * the one that ended it, which did not explain it (src/diagnose/chain.c) */
	char handled[DIAG_TEXT_LEN / 2];
} lb_verdict;

/* How sure the verdict is (docs/result-json.md): high when labbox measured the cause itself
 * or an exception names it; medium when a message or a library's exception points at it;
 * low when only the exit status or the signal is left to go by. */
enum { CONF_LOW, CONF_MEDIUM, CONF_HIGH };

/* What the runtime gate's PermissionError says (src/gate/sitecustomize.py). */
#define GATE_MARK "labbox runtime gate refused "

/* The stacks the gate's faulthandler printed as the budget's SIGTERM reached the main
 * program (src/gate/sitecustomize.py), read from the end of the output. */
#define DUMP_THREADS_NAMED 3
typedef struct stack_dump {
	size_t start; /* the dump's first line; NONE: the output does not end with one */
	size_t top;   /* the innermost frame of the stack that was waiting, or NONE */
	size_t code;  /* that stack's innermost frame in the experiment's code, or NONE */
	/* The main program had ended and waited, at exit, for threads it started that are not
	 * daemons (threading's _shutdown): then top and code are the one such thread's, and
	 * with several, each one's frame in the experiment's code (the dump does not say which
	 * are daemons, so none is named alone). */
	bool main_done;
	size_t n_threads;
	size_t thread_code[DUMP_THREADS_NAMED];
	size_t n_thread_code;
	/* ... or for a child process it started that is not a daemon (multiprocessing's atexit
	 * _exit_function joins them): the child's stack is not in the dump. */
	bool child_join;
} stack_dump;

/* ---- log.c: the log's lines, its tracebacks, and the words and frames of a line ---------- */

void dg_log_free(lb_log *log);
int dg_log_split(lb_log *log, const char *tail, size_t len);
size_t dg_indent_of(const char *s);
bool dg_starts_with(const char *s, const char *prefix);
/* What a terminal would show of a line, into out (at least len + 1 bytes): its length. */
size_t dg_clean_line(const char *s, size_t len, char *out);
bool dg_is_frame(const char *s);
bool dg_exception_line_of(const char *s, size_t *name_len, bool traced);
bool dg_exception_line(const char *s, size_t *name_len);
size_t dg_find_exceptions(const lb_log *log, lb_exc *exc, size_t max);
bool dg_has(const char *s, const char *needle);
bool dg_has_any(const char *s, const char *const *needles);
bool dg_word_char(char c);
bool dg_has_nan_word(const char *s);
bool dg_name_is(const char *line, size_t name_len, const char *const *names);
bool dg_quoted_after(const char *s, const char *prefix, char *out, size_t outlen);
bool dg_parse_frame(const char *s, char *file, size_t filelen, long *lineno, char *func,
		    size_t funclen);
bool dg_in_experiment(const char *file, const char *exp_dir);
size_t dg_code_frame_of(const lb_log *log, const lb_exc *e);
const char *dg_experiment_relative(const char *file, const char *exp_dir);
size_t dg_last_output_line(const lb_log *log);
/* Whether line i is in a block the interpreter printed for an exception it ignored
 * ("Exception ignored in: <obj>", "Exception ignored in atexit callback: <fn>", then the
 * traceback and its exception's line): an error in a finalizer, an atexit handler or a
 * callback, which is not why the program ended (its exit status does not follow it). */
bool dg_in_ignored(const lb_log *log, size_t i);

/* ---- classify.c: the class a message or an exception line names; the verdict's setters --- */

const char *dg_pip_name(const char *module);
void dg_verdict_set(lb_verdict *v, const char *cls, const char *what, const char *line,
		    const char *suggestion);
bool dg_gate_refusal_of(const char *line, char *ev, size_t evlen, char *rule, size_t rulelen);
bool dg_gate_recorded(struct json_object *gate, const char *line);
bool dg_misspelt_name(const char *line);
bool dg_classify_text(lb_verdict *v, const char *line);
void dg_classify_exception(lb_verdict *v, const char *line, size_t name_len, bool subprocess,
			   bool gate_said);
void dg_add_evidence(lb_verdict *v, size_t line);
void dg_set_confidence(lb_verdict *v, int level, const char *reason);
bool dg_scan_messages(lb_verdict *v, const lb_log *log, const char *language);
extern const char DG_SUGGEST_OOM[];
extern const char DG_SUGGEST_NO_SPACE[];

/* ---- r_octave.c: R's and Octave's errors, packages and frames ---------------------------- */

bool dg_r_install_error(lb_verdict *v, const char *line);
void dg_classify_missing_lang_package(lb_verdict *v, const char *line, bool r);
bool dg_lang_error_line(const char *s);
bool dg_octave_frame_line(const char *s, long *lineno);
bool dg_octave_own_file(const char *exp_dir, const char *frame, char *out, size_t outlen);
size_t dg_octave_frame(const lb_log *log, size_t from);
bool dg_octave_missing_function(lb_verdict *v, const lb_failure_input *in, const lb_log *log);

/* ---- refine.c: an exception's verdict, refined by its traceback and the staged experiment --- */

bool dg_foreign_dir(const char *name);
void dg_classify_at(lb_verdict *v, const lb_log *log, const lb_exc *e);

/* ---- chain.c: the root cause among the exceptions of a chain, or of a worker ------------- */

const char *dg_worker_header_above(const lb_log *log, const lb_exc *e);
void dg_diagnose_exception(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n);

/* ---- timeout.c: the stacks printed as the budget ended a run, and a run that waited ------ */

bool dg_stacks_printed(const lb_failure_input *in);
void dg_split_glued_header(lb_log *log);
void dg_read_dump(const lb_log *log, stack_dump *d);
void dg_add_stack_at_end(lb_verdict *v, const lb_log *log, const stack_dump *d);
void dg_diagnose_idle_timeout(lb_verdict *v, const lb_failure_input *in, const lb_log *log);

#endif
