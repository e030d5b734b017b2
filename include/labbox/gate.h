/* gate: the runtime gate, a PEP 578 audit hook in the sandboxed interpreter.
 *
 * The static check (check.h) reads the code before it runs; the runtime gate refuses the same
 * capabilities as they happen (process creation, sockets without --network, dynamic code,
 * native code, pickle's find_class outside an allowlist, banned imports, writes outside the
 * output paths), with PermissionError naming the rule. Its Python source is
 * src/gate/sitecustomize.py, embedded into labbox at build time.
 *
 *   lb_gate_stage      makes the events channel in the run directory; the backend puts
 *                      the gate's module and config at LB_GATE_PY_DIR, read-only (written
 *                      with lb_gate_write_py and bound, or given to the sandbox from memory),
 *                      binds the channel at LB_GATE_EVENTS and puts LB_GATE_PY_DIR first on
 *                      PYTHONPATH
 *   lb_gate_collect    reads the events file back (bounded, defensive: the experiment can
 *                      write to it) into result.json's runtime_gate
 *
 * docs/decisions.md ("The runtime gate") says what holds and what does not. */
#ifndef LABBOX_GATE_H
#define LABBOX_GATE_H

#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

typedef enum lb_gate_mode {
	LB_GATE_DEFAULT = 0, /* on for standard and strict, record for permissive */
	LB_GATE_OFF,         /* no hook at all */
	LB_GATE_RECORD,      /* the hook records what it would refuse and refuses nothing */
	LB_GATE_ON,          /* the hook refuses (under permissive: the standard rules) */
} lb_gate_mode;

/* Where the sandbox sees the gate. /run is hidden, so these exist only inside. */
#define LB_GATE_DIR "/run/labbox-gate"
#define LB_GATE_PY_DIR LB_GATE_DIR "/py"
#define LB_GATE_EVENTS LB_GATE_DIR "/events.jsonl"
/* PYTHONPATH names the gate's directory alone; the PYTHONPATH the run was given travels in
 * this variable and the gate puts it on sys.path once the hook is in, where the interpreter
 * would have: nothing of a directory the experiment writes is importable before the gate. */
#define LB_GATE_PYTHONPATH_VAR "LABBOX_GATE_PYTHONPATH"
/* Set (to 1) in the environment of the interpreter labbox starts, and taken out of it by the
 * gate there before the experiment's first line: the interpreters the run starts itself
 * (subprocess.run([sys.executable, "x.py"])) are not the main program, whose uncaught
 * exception decides the run. An experiment that sets it again for a child of its own can
 * only fail its own run. */
#define LB_GATE_MAIN_VAR "LABBOX_GATE_MAIN"
/* The gate's config in py_dir: "labbox-gate 1", then one "key hexbytes" line a setting. */
#define LB_GATE_CONFIG "labbox_gate.cfg"

/* Bounds of the events channel, on both sides. */
#define LB_GATE_MAX_EVENTS 200       /* written per process; labbox keeps at most this many */
#define LB_GATE_MAX_KINDS 64         /* and past them, events of a kind not kept yet */
#define LB_GATE_MAX_LINE 2048        /* bytes of one event line */
#define LB_GATE_MAX_READ (1u << 20)  /* bytes of the events file labbox reads */

/* "off", "record", "on"; -EINVAL otherwise. */
int lb_gate_mode_parse(const char *s, lb_gate_mode *out);
const char *lb_gate_mode_name(lb_gate_mode m);
/* A variable that changes what the interpreter or the dynamic loader runs before the
 * experiment's first line, and so before the gate (PYTHONHOME, PYTHONUSERBASE's .pth files,
 * PYTHONPYCACHEPREFIX, LD_PRELOAD...): every PYTHON variable but PYTHONPATH and a few that
 * change no code, every LD_ one, each of lb_gate_loader_vars, and R's and Octave's start-up
 * variables (R_PROFILE*, R_LIBS*, OCTAVE_*...). The experiment's own configuration may not
 * set one. */
bool lb_gate_startup_var(const char *name);
/* The variables that make a native library load a shared object (or Tcl code) from where
 * they say (OPENSSL_CONF, GCONV_PATH, CUDA_INJECTION64_PATH...): refused before the run as
 * lb_gate_startup_var, and by the gate when the run sets one. */
const char *const *lb_gate_loader_vars(size_t *n);
/* The mode a run gets: asked, or the policy's default (policy is lb_check_policy). */
lb_gate_mode lb_gate_effective(lb_gate_mode asked, int policy);

/* The Python source, embedded by the Makefile (build/gen/gate_source.c). */
extern const char lb_gate_source[];
extern const size_t lb_gate_source_len;

typedef struct lb_gate_paths {
	char dir[4096];    /* run_dir/gate */
	char py_dir[4096]; /* run_dir/gate/py: sitecustomize.py, labbox_gate.cfg */
	char events[4096]; /* run_dir/gate/events.jsonl: a FIFO the payload (uid:gid) may only write */
	int fd[2];         /* labbox's read end and a write end that keeps it from seeing EOF */
} lb_gate_paths;

/* Makes run_dir/gate and the events channel in it: a FIFO, so nothing
 * the experiment writes into it lands on the host's disk and nothing can truncate it, opened
 * by labbox first and then given to uid:gid ((uid_t)-1: leave the owner) write-only (0200),
 * so the payload cannot open it to read back what the gate wrote. 0 or a negative errno;
 * out->fd is -1, -1 on error. */
int lb_gate_stage(const char *run_dir, uid_t uid, gid_t gid, lb_gate_paths *out);
/* py_dir (lb_gate_paths.py_dir) with the gate's module, for a backend that binds it from
 * the disk (docker). */
int lb_gate_write_py(const char *py_dir);

/* The reading side of the channel: a thread drains the FIFO while the run lasts (a writer
 * would block on a full pipe otherwise) and takes it line by line as it comes
 * (lb_gate_channel_feed): it keeps the lines lb_gate_parse_events would keep, at most
 * LB_GATE_MAX_EVENTS + LB_GATE_MAX_KINDS events and the first of each of the gate's own
 * lines, and counts the rest. So a flood costs labbox one bounded buffer and no disk, and
 * cannot push a refusal out of the record: every line is read, and a refusal past the caps
 * is still counted. */
typedef struct lb_gate_channel {
	int fd[2];       /* taken from lb_gate_paths */
	int stop;        /* eventfd: drain what is left and end */
	bool running;
	pthread_t th;
	char *buf;       /* the lines kept, each with its newline (at most LB_GATE_MAX_READ) */
	size_t len;
	uint64_t total;  /* every byte written into the channel */
	/* The line being read, and what was not kept */
	char *line;
	size_t line_len;
	bool line_long;  /* longer than LB_GATE_MAX_LINE: not the gate's */
	struct json_object *kept; /* the events kept, for the caps' decisions */
	size_t dropped;  /* events past the caps */
	size_t refused_dropped; /* of them, refusals */
	size_t foreign;  /* lines that are not the gate's: not JSON, not an event, too long */
	unsigned seen;   /* which of the gate's own lines are kept already */
} lb_gate_channel;

/* Takes n bytes of the channel as the reading thread does: whole lines are judged, kept in
 * ch->buf or counted; a part line waits for the rest. With n 0 and at_end, a part line left
 * over is counted as foreign (the gate writes whole lines, each in one write). ch->buf must be
 * LB_GATE_MAX_READ bytes and ch->line LB_GATE_MAX_LINE. 0 or -ENOMEM. */
int lb_gate_channel_feed(lb_gate_channel *ch, const char *data, size_t n, bool at_end);

/* Takes p's descriptors (p->fd becomes -1, -1) and starts draining. 0 or a negative errno (the
 * descriptors are closed then; the channel reads as unreadable). */
int lb_gate_channel_start(lb_gate_channel *ch, lb_gate_paths *p);
/* Once the run's processes are gone: reads what is left, ends the thread, closes the FIFO's
 * descriptors; the bytes stay in ch->buf. Idempotent. */
void lb_gate_channel_stop(lb_gate_channel *ch);
void lb_gate_channel_free(lb_gate_channel *ch);

typedef struct lb_gate_config {
	lb_gate_mode mode;   /* effective: RECORD or ON */
	const char *policy;  /* "standard", "strict", "permissive" */
	bool network;        /* sockets were granted (--network loopback or host) */
	const char *exp_dir; /* the experiment's directory, as the sandbox sees it */
	const char *const *outputs; /* where it may write, as the sandbox sees them */
	size_t noutputs;
	/* The interpreter's standard library as its probe found it (lb_python_info.stdlib), at
	 * the same paths inside; none: the gate asks sysconfig itself. */
	const char *const *stdlib;
	size_t nstdlib;
	const char *stdlib_for; /* lb_python_info.stdlib_for: where those paths hold */
	/* The time once the experiment was staged, by the clock of its file system, in ns (0:
	 * not known): a file of the experiment whose ctime is later was written by the run, and
	 * the check never read it */
	int64_t staged_ns;
	/* "DEV:INO,..." of the experiment's directories the static check did not read
	 * (lb_check_report.unread_dirs); NULL: none */
	const char *unread_dirs;
} lb_gate_config;

/* py_dir/LB_GATE_CONFIG, which the gate reads as it starts. */
int lb_gate_write_config(const char *py_dir, const lb_gate_config *cfg);
/* The same config's text, into *out (freed by the caller with lb_buf_free). */
struct lb_buf;
int lb_gate_config_text(const lb_gate_config *cfg, struct lb_buf *out);

/* The gate compiled by py itself (inside a sandbox of its own) as a checked-hash .pyc, for
 * py_dir/__pycache__/sitecustomize.TAG.pyc (*data, freed by the caller; tag: the
 * interpreter's cache tag), so the run does not compile it from source; kept in cache_dir
 * (the user's, hidden from runs) with its SHA-256 and used from there only while the record
 * matches py's executable (stat), this gate's source and the bytes. hit: it came from the
 * cache. -EOPNOTSUPP for an interpreter the experiment named (py->confined): nothing is kept;
 * any error leaves the run with the source alone, as slow as before and as safe. */
struct lb_python_info;
int lb_gate_pyc_get(const struct lb_python_info *py, const char *cache_dir, char tag[64],
		    char **data, size_t *len, bool *hit);

/* Whether the gate's own "installed" line is among data's lines (the gate writes it once it
 * is fully in; lb_gate_parse_events passes over it). */
bool lb_gate_heard(const char *data, size_t len);
/* Whether the gate said that its channel was replaced while the run went on (the events
 * after it came through the file opened again). */
bool lb_gate_tampered(const char *data, size_t len);

/* Parse the events channel: one JSON object per line. Lines that are too long, not JSON, or
 * not events as the gate writes them are counted in *bad and skipped; at most
 * LB_GATE_MAX_EVENTS events are appended to events (a json array), and past them up to
 * LB_GATE_MAX_KINDS more of kinds (event, rule, refused) not kept yet; the rest are counted in
 * *dropped, as is the gate's own line saying it dropped events past its cap. Each kept event
 * is rebuilt from checked fields only. 0 or -ENOMEM. */
int lb_gate_parse_events(const char *data, size_t len, struct json_object *events,
			 size_t *dropped, size_t *bad);

/* The gate's record that the main program ended with an uncaught exception: the event the
 * interpreter's top level raised sys.excepthook for, in the process and on the thread the
 * gate started in (src/gate/sitecustomize.py, on_uncaught), written as event
 * LB_GATE_UNCAUGHT, rule gate.uncaught, not refused, args [exception class, its message or
 * null], file and line the innermost frame of the experiment's it passed through. The first
 * such event of events (a parsed array), or NULL. The experiment can write such a line
 * itself; that only fails its own run. */
#define LB_GATE_UNCAUGHT "labbox.uncaught"
struct json_object *lb_gate_uncaught(struct json_object *events);
/* result.json's runtime_gate.uncaught for such an event (NULL: NULL): a new object
 * {exception, message, file, line, pid, detail}. */
struct json_object *lb_gate_uncaught_record(struct json_object *ev);

/* The experiment's own files that run before the gate and could keep it out: the interpreter
 * executable when it resolves into one of exp_dirs (the experiment's, staged or not), and the
 * .pth files with `import` lines in the site-packages of the environment at prefix when that
 * lies there (site runs them before it imports the gate). Paths relative to that directory,
 * at most 32 .pth files; an empty array when there are none. Read before the run, which could
 * remove them. */
struct json_object *lb_gate_preloaders(const char *executable, const char *prefix,
				       const char *const *exp_dirs, size_t ndirs);
/* runtime_gate.before_gate = files; when there are any, enforced is false and note says why. */
void lb_gate_note_preload(struct json_object *gate, struct json_object *files);

/* Removes what lb_gate_stage wrote, once lb_gate_collect has read the events: the run
 * directory keeps its documented layout. 0 or the last negative errno. */
int lb_gate_cleanup(const lb_gate_paths *p);

/* result.json's runtime_gate: {mode, policy, enforced, installed, network, events: [{event,
 * args, refused, rule, static_rule, title, file, line, pid, detail, finding}], refused,
 * dropped, malformed, channel, uncaught, note}: uncaught is lb_gate_uncaught_record of the
 * channel's first labbox.uncaught event (null when none), which events leaves out. findings is the static check's array (may be NULL):
 * an event is matched to the finding of the same rule, on the same line when there is one.
 * ch NULL: the gate was off (or not available on the backend; note says why); ch stopped
 * (lb_gate_channel_stop) otherwise. */
struct json_object *lb_gate_collect(const lb_gate_channel *ch, lb_gate_mode mode, const char *policy,
				    bool network, struct json_object *findings, const char *note);

#endif
