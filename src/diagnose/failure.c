/* Root cause of a failed run, read from how it ended and the tail of its output. */
#include "labbox/diagnose.h"
#include "../collect/text.h"
#include "failure_internal.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SUGGEST_GPU_NONE_HERE[] =
	"run it on a machine with an NVIDIA GPU (--mode ssh --host HOST to a lab server, "
	"--mode slurm with --gpus 0, or --mode colab), or make the code fall back to the "
	"CPU when torch.cuda.is_available() is False";

static const char SUGGEST_OOM_HUNG[] =
	"raise the memory limit (--memory), or hold less in memory in each process (fewer pool "
	"workers, smaller chunks); a larger --budget would not help a run that waits on a "
	"process that was killed";
static const char SUGGEST_OOM_HUNG_HOST[] =
	"labbox set no memory limit: the machine ran out of memory. Hold less in memory in "
	"each process (fewer pool workers, smaller chunks) or use a machine with more; a larger "
	"--budget would not help a run that waits on a process that was killed";
static const char SUGGEST_OOM_HOST[] =
	"labbox set no memory limit on this run, so the machine itself could not give what the "
	"code asked for: hold less in memory (smaller batches, float32 instead of float64, "
	"streaming the data instead of loading it whole), or run it where there is more memory";

static const char SUGGEST_GPU_OOM_NONE_HERE[] =
	"look at what raised it (code_location: the code's own check worded like torch's, or a "
	"message kept from an earlier run and raised again) and fix that; no --gpus or --memory "
	"changes it on this machine. Code meant for a GPU needs a machine with one (--mode ssh "
	"--host HOST, --mode slurm with --gpus 0, or --mode colab)";
static const char SUGGEST_OOM_MACHINE[] =
	"the run's memory limit was already as much as this machine has, so no --memory gives "
	"more: hold less in memory (smaller batches or chunks, float32 instead of float64, "
	"streaming the data instead of loading it whole), or run it where there is more memory";

static void add_tail_evidence(lb_verdict *v, const lb_log *log, size_t max)
{
	size_t idx[DIAG_EVIDENCE_MAX], n = 0;

	for (size_t i = log->n; i-- > 0 && n < max && n < DIAG_EVIDENCE_MAX;)
		if (log->lines[i][0])
			idx[n++] = i;
	while (n > 0)
		dg_add_evidence(v, idx[--n]);
}

/* A status of 129..192 is how a shell reports a child killed by signal N-128; labbox started
 * the interpreter itself and saw it exit, so no signal is named as one. */
static void status_note(char *buf, size_t len, int exit_code)
{
	const char *abbrev = exit_code > 128 && exit_code < 128 + 65 ? sigabbrev_np(exit_code - 128)
								      : NULL;
	if (!abbrev) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len,
		 "; no signal ended it (a shell reports a child killed by signal %d as status %d, so "
		 "the code, or a wrapper around the interpreter, may have passed on such a status)",
		 exit_code - 128, exit_code);
}

/* Signals the kernel sends for a fault of the process itself. */
static bool sig_is_crash(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS;
}

/* Signals of a timer a process set (alarm, setitimer). */
static bool sig_is_timer(int sig)
{
	return sig == SIGALRM || sig == SIGVTALRM || sig == SIGPROF;
}

/* not_oom: the tree's memory cgroup counted no OOM kill, so a SIGKILL was sent by a process
 * (the experiment's own, or one outside the sandbox), not by the kernel for memory. */
static void diagnose_signal(lb_verdict *v, int sig, int exit_code, bool killed_line, bool not_oom,
			    const char *language)
{
	char what[400];

	dg_set_confidence(v, CONF_LOW, "only the exit status was left to go by: no traceback, no "
				    "message that names a cause");
	if (sig == SIGSYS)
		dg_set_confidence(v, CONF_HIGH, "the seccomp filter kills with SIGSYS and nothing else does");
	else if (sig == SIGXFSZ)
		dg_set_confidence(v, CONF_HIGH, "the kernel sends this signal for that limit only");
	else if (sig == SIGXCPU)
		dg_set_confidence(v, CONF_MEDIUM, "the kernel sends SIGXCPU only for a CPU-time limit, "
					       "and labbox sets none; who set it is not recorded");
	else if (sig == SIGKILL && not_oom)
		dg_set_confidence(v, CONF_MEDIUM, "the run's memory cgroup counted no out-of-memory "
					       "kill; who sent the signal is not recorded");
	else if (sig == SIGKILL && killed_line)
		dg_set_confidence(v, CONF_MEDIUM, "SIGKILL with the shell's \"Killed\" line, which the "
					       "out-of-memory killer usually leaves");
	else if (sig_is_timer(sig))
		dg_set_confidence(v, CONF_MEDIUM, "the kernel sends this signal when a timer a process "
					       "set runs out; labbox sets none");
	else if (sig == SIGPIPE)
		dg_set_confidence(v, CONF_MEDIUM, "the kernel sends SIGPIPE to a process that writes "
					       "into a pipe nobody reads any more");
	else if (sig_is_crash(sig))
		dg_set_confidence(v, CONF_MEDIUM, "the signal shows a crash, not why it crashed");
	else if (sig > 0 && sig != SIGKILL)
		dg_set_confidence(v, CONF_LOW, "a process sent the signal; which one is not recorded");
	else if (sig == 0 && exit_code == 127)
		dg_set_confidence(v, CONF_MEDIUM, "status 127 is what a shell returns for a missing command");
	if (sig == SIGSYS) {
		dg_verdict_set(v, "sandbox_restriction",
			       "killed by SIGSYS: the sandbox blocked a system call", NULL,
			       "the code (or a native library) made a system call the sandbox forbids "
			       "(ptrace, mount, bpf, new namespaces...); remove it, or run it outside "
			       "labbox if it is really needed");
	} else if (sig == SIGKILL && not_oom) {
		dg_verdict_set(v, "code_error",
			       "killed by SIGKILL, not by the out-of-memory killer (the run's memory "
			       "cgroup counted no OOM kill): a process sent it, the experiment's own or "
			       "one outside the sandbox",
			       NULL,
			       "look for os.kill/signal calls in the code (a watchdog, a worker pool "
			       "ending its workers) and for what on the host may have ended it; more "
			       "memory would not help");
	} else if (sig == SIGKILL) {
		dg_verdict_set(v, "oom",
			       killed_line ? "killed by SIGKILL (\"Killed\"), most likely by the "
					  "kernel's out-of-memory killer"
					: "killed by SIGKILL without a time or memory limit recording "
					  "it; the kernel's out-of-memory killer is the usual cause",
			       NULL, DG_SUGGEST_OOM);
	} else if (sig == SIGXCPU) {
		/* labbox's budget is wall-clock time, and it ends a run with a kill it records
		 * itself (timed_out); it sets no RLIMIT_CPU. So the limit is the experiment's own
		 * (resource.setrlimit, a library's), or one inherited from where labbox started. */
		dg_verdict_set(v, "code_error",
			       "killed by SIGXCPU: a CPU-time limit (RLIMIT_CPU) was reached, which "
			       "labbox does not set (its --budget is wall-clock time): the experiment or "
			       "a library set it, or labbox was started under one (ulimit -t)",
			       NULL,
			       "remove the resource.setrlimit(resource.RLIMIT_CPU, ...) call or raise "
			       "that limit, or start labbox without one (ulimit -t unlimited); a larger "
			       "--budget would not help");
	} else if (sig == SIGXFSZ) {
		dg_verdict_set(v, "sandbox_restriction",
			       "killed by SIGXFSZ: a file grew past the size limit", NULL,
			       DG_SUGGEST_NO_SPACE);
	} else if (sig_is_timer(sig)) {
		/* labbox's budget ends a run with SIGTERM and SIGKILL and records it (timed_out):
		 * an alarm is a timer of the run's own, signal.alarm's or setitimer's without a
		 * handler (a per-trial time guard, an evaluation harness's time-out helper). */
		const char *abbrev = sigabbrev_np(sig);

		snprintf(what, sizeof(what),
			 "killed by SIG%s (signal %d): a timer the code or a library set (%s) ran out "
			 "with no handler for its signal; nothing crashed, and labbox's own budget "
			 "was not reached", abbrev ? abbrev : "?", sig,
			 sig == SIGALRM ? "signal.alarm, or signal.setitimer(ITIMER_REAL)"
			 : sig == SIGVTALRM ? "signal.setitimer(ITIMER_VIRTUAL)"
					    : "signal.setitimer(ITIMER_PROF), or a profiler");
		dg_verdict_set(v, "code_error", what, NULL,
			       "look for signal.alarm/signal.setitimer in the code and in the helpers it "
			       "uses (a time guard per trial or per evaluation): give the work more time "
			       "there, or handle the signal (signal.signal) so that the code saves what it "
			       "has and ends cleanly");
	} else if (sig == SIGPIPE) {
		dg_verdict_set(v, "code_error",
			       "killed by SIGPIPE (signal 13): it wrote into a pipe whose reader had "
			       "ended (a subprocess it piped into, or `| head` in a command it ran)",
			       NULL,
			       "look for what the code writes into a pipe or a subprocess's stdin, and "
			       "whether that reader ended early");
	} else if (sig_is_crash(sig)) {
		const char *abbrev = sigabbrev_np(sig);

		snprintf(what, sizeof(what),
			 "killed by SIG%s (signal %d): a crash, usually in native code (a C extension, "
			 "CUDA, BLAS)", abbrev ? abbrev : "?", sig);
		dg_verdict_set(v, "code_error", what, NULL,
			       "run it again with -e PYTHONFAULTHANDLER=1 to get the Python stack of the "
			       "crash, and check native extensions for version mismatches");
	} else if (sig > 0) {
		/* SIGTERM, SIGINT, SIGHUP, SIGUSR1... that labbox did not send (its budget's and an
		 * interruption's are recorded): a process sent it, and nothing says it crashed. */
		const char *abbrev = sigabbrev_np(sig);

		snprintf(what, sizeof(what),
			 "killed by SIG%s (signal %d), which a process sent: the experiment's own "
			 "code (os.kill, a worker pool or watchdog ending processes) or something on "
			 "the host; labbox's budget and an interruption of labbox were not it",
			 abbrev ? abbrev : "?", sig);
		dg_verdict_set(v, "code_error", what, NULL,
			       "look for os.kill/signal calls in the code and the libraries it starts, "
			       "and for what on the host may have signalled the run");
	} else if (exit_code == 127) {
		dg_verdict_set(v, "wrong_env", "exited with status 127: a command was not found", NULL,
			       "check that the interpreter and the programs the experiment runs exist "
			       "in its environment (--python)");
	} else {
		char note[200];

		status_note(note, sizeof(note), exit_code);
		/* what a run of this language leaves when it fails: no word of Python's for R */
		const char *none = !language			  ? "without a Python traceback"
				   : strcmp(language, "r") == 0	  ? "without an R error message"
				   : strcmp(language, "octave") == 0 ? "without an Octave error message"
				   : strcmp(language, "julia") == 0  ? "without a Julia error message"
								     : "without an error message";
		snprintf(what, sizeof(what), "exited with status %d %s%s", exit_code, none, note);
		dg_verdict_set(v, "code_error", what, NULL,
			       "read the end of run.log; make the code report errors instead of "
			       "exiting quietly");
	}
}

/* ---- A main program that ended uncaught, and exited 0 ----------------------------------- */

/* A string field of the gate's record (runtime_gate.uncaught), or NULL. */
static const char *uncaught_str(struct json_object *u, const char *key)
{
	struct json_object *v;
	if (!u || !json_object_object_get_ex(u, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The gate says the main program ended with an uncaught exception, and the process exited
 * of itself after it: with status 0 when something made it so (os._exit(0) in an atexit
 * handler), and with a traceback that is not the last one in the output, or none, when an
 * atexit handler raised another or a sys.excepthook of the experiment's swallowed it. */
static bool uncaught_ended(const lb_failure_input *in)
{
	return in->uncaught && in->exit_code >= 0 && in->signal == 0 && !in->timed_out &&
	       !in->oom_killed && !in->infra_error;
}

/* Whether an exception line ("pkg.mod.Name: message") names the class name (its last part). */
static bool line_names_class(const char *l, const char *name)
{
	size_t n = 0, k = name ? strlen(name) : 0;
	l += dg_indent_of(l);
	if (!k || !dg_exception_line_of(l, &n, true) || n < k)
		return false;
	return memcmp(l + n - k, name, k) == 0 && (n == k || l[n - k - 1] == '.');
}

static const char SUGGEST_UNCAUGHT[] =
	"fix the error the main program ended with, and let a failing run exit non-zero: labbox "
	"fails a run whose main program ended with an uncaught exception whatever made its exit "
	"status 0 afterwards (os._exit(0) in an atexit handler, a sys.excepthook that hides it)";

static bool log_has_line(const lb_log *log, const char *text)
{
	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;)
		if (strcmp(log->lines[i] + dg_indent_of(log->lines[i]), text) == 0)
			return true;
	return false;
}

/* ---- A program that exited of itself ------------------------------------------------------ */

/* The gate was in, keeps the record of the main program's uncaught exception (a version that
 * writes runtime_gate.uncaught), its channel was read, and it recorded none: no exception
 * ended the main program, so it called sys.exit or os._exit itself. */
static bool gate_saw_no_uncaught(const lb_failure_input *in)
{
	struct json_object *g = in->runtime_gate, *v;
	const char *channel;

	if (in->uncaught || !g || !json_object_object_get_ex(g, "installed", &v) ||
	    !json_object_is_type(v, json_type_boolean) || !json_object_get_boolean(v))
		return false;
	if (!json_object_object_get_ex(g, "uncaught", &v) || v)
		return false;
	if (!json_object_object_get_ex(g, "channel", &v) || !json_object_is_type(v, json_type_string))
		return false;
	channel = json_object_get_string(v);
	return strcmp(channel, "read") == 0 || strcmp(channel, "tampered") == 0;
}

/* A Python program that exited non-zero with no signal, whose end no exception made: no
 * traceback in its output at all, or (the gate's word that none went uncaught) the last one
 * followed by more of its output, so it was handled and the program went on. Its last words
 * are then why it stopped, not an earlier line. R, Octave and Julia print their own errors
 * last and are read as before. */
static bool exited_of_itself(const lb_failure_input *in, const lb_log *log, const lb_exc *exc,
			     size_t n, bool gate_says)
{
	if (in->language || in->exit_code <= 0 || in->signal || in->uncaught)
		return false;
	if (n == 0)
		return true;
	size_t last = dg_last_output_line(log);
	return gate_says && last != NONE && last > exc[n - 1].line;
}

/* A line that reads as an error's (a logger's ERROR, a C library's "error:", an exception's
 * name), which may stand just above the last one as part of one message. */
static bool error_shaped(const char *s)
{
	static const char *const starts[] = {"ERROR", "Error", "error", "FATAL", "Fatal", "fatal",
					     "CRITICAL", NULL};
	s += dg_indent_of(s);
	for (size_t i = 0; starts[i]; i++)
		if (dg_starts_with(s, starts[i]))
			return true;
	return dg_exception_line(s, NULL);
}

/* The line of the log that is a stream's last one (lb_failure_input.stdout_last or
 * stderr_last, as written), cleaned as the log's lines are: the last line equal to it. NONE:
 * not known, blank once cleaned, or not among the lines the log's tail kept. */
static size_t stream_last_line(const lb_log *log, const char *raw)
{
	char clean[512];
	size_t len = raw ? strlen(raw) : 0, seen = 0;

	if (!len || len >= sizeof clean || !dg_clean_line(raw, len, clean))
		return NONE;
	for (size_t i = log->n; i-- > 0 && seen++ < DIAG_SCAN_LINES;)
		if (strcmp(log->lines[i], clean) == 0)
			return i;
	return NONE;
}

/* The other stream's last line, when it stands just above the log's last one (and after the
 * handled traceback, if any): stdout and stderr are two pipes labbox reads in turn, so the
 * log's last line is the last one read, not surely the last one written; the other
 * stream's last words (a sys.exit message on stderr, a line printed just before it on
 * stdout) are as much the program's last. NONE when there is none or it cannot be told. */
static size_t other_stream_last(const lb_failure_input *in, const lb_log *log, size_t last,
				const lb_exc *exc, size_t n)
{
	size_t o = stream_last_line(log, in->stdout_last), e = stream_last_line(log, in->stderr_last);
	size_t other = last == NONE ? NONE : o == last ? e : e == last ? o : NONE;

	/* Only a line among the last few: the order is in doubt for writes that came close
	 * together, not for a warning on stderr long before the program's last lines. */
	if (other == NONE || other >= last || last - other > 3 || (n > 0 && other <= exc[n - 1].line) ||
	    dg_in_ignored(log, other) ||
	    dg_is_frame(log->lines[other] + dg_indent_of(log->lines[other])))
		return NONE;
	return other;
}

/* The signal a shell in between reported, as 128+N with its own words for it ("Killed",
 * "Segmentation fault (core dumped)", bash's "line 1: 123 Killed  cmd") among the last
 * lines; 0 otherwise. The words are how labbox can tell a shell's report from a status the
 * code chose. */
static int shell_reported_signal(const lb_failure_input *in, const lb_log *log)
{
	int sig = in->exit_code - 128;
	const char *desc;
	size_t seen = 0;

	if (in->signal || in->exit_code <= 128 || in->exit_code >= 128 + 65 || in->uncaught)
		return 0;
	desc = strsignal(sig);
	if (!desc || !desc[0])
		return 0;
	for (size_t i = log->n; i-- > 0 && seen < 3;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		const char *at;

		if (!s[0])
			continue;
		seen++;
		if (!(at = strstr(s, desc)))
			continue;
		if (at == s || strstr(s, ": line "))
			return sig;
	}
	return 0;
}

/* A short message that says the work finished ("done", "Training complete.") and nothing
 * that says it went wrong ("not done", "finished with errors", "below the threshold"). */
static bool says_finished(const char *s)
{
	static const char *const yes[] = {"done", "finished", "complete", "completed", "success",
					  "successfully", "ok", "bye", "goodbye", "exiting", NULL};
	static const char *const no[] = {"not", "no", "fail", "failed", "failure", "error",
					 "errors", "abort", "aborted", "below", "above", "diverged",
					 "nan", "cannot", "unable", "missing", "invalid", "stop",
					 "stopped", "early", NULL};
	bool fin = false;
	char w[32];
	size_t n = 0;

	if (strlen(s) > 80 || error_shaped(s))
		return false;
	for (const char *p = s;; p++) {
		if (isalnum((unsigned char)*p) && n < sizeof w - 1) {
			w[n++] = (char)tolower((unsigned char)*p);
			continue;
		}
		w[n] = '\0';
		for (size_t i = 0; n && no[i]; i++)
			if (strcmp(w, no[i]) == 0)
				return false;
		for (size_t i = 0; n && yes[i]; i++)
			fin = fin || strcmp(w, yes[i]) == 0;
		n = 0;
		if (!*p)
			return fin;
	}
}

/* The line sys.exit("...") printed when its message says the run finished: status 1 (what
 * Python exits with for any string), the gate's word that the program exited of itself, and
 * the last line of stderr among the log's last two. NONE otherwise: a message that reports a
 * problem ("acc below the threshold") keeps the usual advice. */
static size_t exit_message(const lb_failure_input *in, const lb_log *log, size_t last,
			   size_t other, bool gate_says)
{
	size_t e = stream_last_line(log, in->stderr_last);

	if (in->exit_code != 1 || !gate_says || e == NONE || (e != last && e != other))
		return NONE;
	return says_finished(log->lines[e] + dg_indent_of(log->lines[e])) ? e : NONE;
}

/* The program's last line (with the error lines just above it, one message) is why it
 * stopped: a known message there names the class; else it is the code's own decision,
 * quoted. A traceback above it that the program went on after is context at most. */
static void diagnose_own_exit(lb_verdict *v, const lb_failure_input *in, const lb_log *log,
			      const lb_exc *exc, size_t n, bool gate_says)
{
	size_t last = dg_last_output_line(log), first = last, hit = NONE;
	size_t other = other_stream_last(in, log, last, exc, n);
	char what[DIAG_TEXT_LEN], note[200], also[400] = "";

	status_note(note, sizeof(note), in->exit_code);
	/* A thread or child that died of its exception, after which the main process stopped
	 * itself: the worker's exception is the cause, as when the main one failed waiting. */
	if (n > 0 && dg_worker_header_above(log, &exc[n - 1])) {
		dg_diagnose_exception(v, log, exc, n);
		snprintf(what, sizeof(what), "%.300s, in %s that died of it; the main process then "
			 "exited of itself with status %d", v->summary,
			 dg_worker_header_above(log, &exc[n - 1]), in->exit_code);
		snprintf(v->summary, sizeof(v->summary), "%s", what);
		if (v->confidence == CONF_HIGH)
			dg_set_confidence(v, CONF_MEDIUM, "a thread or child process died of this "
						       "exception; the main process exited after it");
		dg_add_evidence(v, last);
		return;
	}
	/* Never into the handled traceback: its exception line is error-shaped too, and a line of
	 * the other stream can put the exit message right below it. */
	while (first != NONE && first > 0 && last - first < 4 &&
	       (n == 0 || first - 1 > exc[n - 1].line) && error_shaped(log->lines[first - 1]))
		first--;
	for (size_t i = last; i != NONE && i >= first && hit == NONE; i--) {
		if (dg_classify_text(v, log->lines[i]))
			hit = i;
		if (i == 0)
			break;
	}
	/* The other stream's last line is quoted, never read for a class: a note on stdout
	 * ("CUDA out of memory at batch 512, retried at 256") is no reason the program gave
	 * for stopping, and would name a class over its own exit message. */
	if (other != NONE)
		snprintf(also, sizeof also, "; and last on its other stream (stdout and stderr are "
			 "read apart, so which came last is not known): %.200s",
			 log->lines[other] + dg_indent_of(log->lines[other]));
	if (hit != NONE) {
		dg_add_evidence(v, hit);
		dg_set_confidence(v, CONF_MEDIUM, "the program's own last message names the cause; it "
					       "exited of itself, no exception ended it");
	} else {
		const char *l = last != NONE ? log->lines[last] + dg_indent_of(log->lines[last]) : "";
		snprintf(what, sizeof(what), "%s%d%s%s%.200s%s%s%s",
			 gate_says ? "the program exited of itself with status "
			 : log->n_ign ? "exited without a Python traceback but those below an "
					"\"Exception ignored in\" line (not why a run ends), with status "
				      : "exited without a Python traceback, with status ",
			 in->exit_code,
			 gate_says ? " (sys.exit or os._exit: the runtime gate saw no exception end "
				     "it)"
				   : "",
			 last != NONE ? ", after printing: " : " and printed nothing", l, also, note,
			 n > 0 ? "; the traceback above that was handled: the program went on after it"
			       : "");
		size_t msg = exit_message(in, log, last, other, gate_says);
		if (msg != NONE) {
			/* sys.exit("done"): the message is the program's word, and status 1 is only
			 * how Python ends every sys.exit given a string, whatever it says. */
			char m[DIAG_TEXT_LEN];
			snprintf(m, sizeof m, "'%.100s' reports nothing to fix: sys.exit given a "
				 "message exits with status 1 whatever the message says; to end a "
				 "finished run, call sys.exit(0), or print the message and return",
				 log->lines[msg] + dg_indent_of(log->lines[msg]));
			size_t wl = strlen(what);
			snprintf(what + wl, sizeof what - wl, "; its message says it finished, and "
				 "status 1 is what sys.exit(\"message\") ends with, whatever the "
				 "message");
			dg_verdict_set(v, "code_error", what, NULL, m);
		} else {
			dg_verdict_set(v, "code_error", what, NULL,
				       "the program stopped itself: its last message says why; fix "
				       "what it reports (or the check that printed it). Raising an "
				       "exception instead would show where");
		}
		if (other != NONE)
			dg_add_evidence(v, other);
		if (last != NONE)
			dg_add_evidence(v, last);
		/* That the code chose to exit is sure with the gate's word; why is only what it
		 * printed last, which may be no reason at all (a metric before sys.exit(2)). */
		dg_set_confidence(v, CONF_LOW,
				  gate_says ? "the runtime gate saw no uncaught exception, so the "
					   "program chose to exit; only its exit status and its last "
					   "output say why"
					 : "only the exit status and the last line of output were left to "
					   "go by");
	}
	/* The handled traceback, if any, as context */
	if (n > 0 && exc[n - 1].line < first)
		dg_add_evidence(v, exc[n - 1].line);
}

/* The sandbox or backend failed around the experiment: its message is the verdict. */
static bool diagnose_infra(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	if (in->infra_error && in->after_run) {
		dg_verdict_set(v, "infra_error",
			       in->infra_message && in->infra_message[0]
				    ? in->infra_message
				    : "what the run left could not be brought back",
			       NULL,
			       "the experiment ran, but its files were not all brought back into the run "
			       "directory, so its results are not reported: they are kept where the "
			       "message says; free space or make the experiment's output tree plainer "
			       "(less deep, shorter names) and run it again, and where the message says "
			       "the budget and grace ended, have it leave fewer files or give a longer "
			       "--grace");
		add_tail_evidence(v, log, 3);
		return true;
	}
	if (in->infra_error) {
		dg_verdict_set(v, "infra_error",
			       in->infra_message && in->infra_message[0]
				    ? in->infra_message
				    : "the sandbox or backend could not be set up",
			       NULL,
			       "the experiment did not run: fix the setup problem above (`labbox probe` "
			       "shows what this host supports); labbox never falls back to less "
			       "isolation silently");
		return true;
	}
	return false;
}

static void diagnose(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	lb_exc exc[DIAG_MAX_EXC];
	size_t n_exc;

	dg_set_confidence(v, CONF_HIGH, "labbox recorded it itself (its time or memory accounting, or "
				     "the setup step that failed)");
	if (diagnose_infra(v, in, log))
		return;
	/* A timeout's output ends with the stacks the main program printed as it ended (the
	 * gate's faulthandler): what it said before them is its last output. */
	stack_dump dump = { .start = NONE, .top = NONE, .code = NONE };
	lb_log said = *log;
	if (dg_stacks_printed(in))
		dg_read_dump(log, &dump);
	if (dump.start != NONE)
		said.n = dump.start;
	if (in->timed_out && in->oom_killed) {
		/* A pool's map, a queue or a join waits for ever on a worker the OOM killer took:
		 * the budget only ended the wait. */
		dg_verdict_set(v, "oom",
			       "the kernel's out-of-memory killer killed a process of the run (its memory "
			       "cgroup counted the kill), and the run then did not finish before the "
			       "time budget ended it: a parent waiting on a killed worker (a pool's map, "
			       "a queue, a join) waits until the budget",
			       NULL, SUGGEST_OOM_HUNG);
		dg_set_confidence(v, CONF_MEDIUM,
				  "labbox counted an out-of-memory kill in the run before its budget "
				  "ended it; which process it took, and when, is not recorded");
		add_tail_evidence(v, &said, 3);
		return;
	}
	if (in->timed_out) {
		dg_verdict_set(v, "timeout", "the time budget ended the run before it finished", NULL,
			       "raise the budget (--budget SECONDS) or do less work; print "
			       "TIME_ESTIMATE early and stop at 80% of the budget with a TIME_GUARD so "
			       "partial results are saved");
		add_tail_evidence(v, &said, 3);
		dg_diagnose_idle_timeout(v, in, &said);
		dg_add_stack_at_end(v, log, &dump);
		return;
	}
	if (in->oom_killed) {
		dg_verdict_set(v, "oom", "the memory limit ended the run", NULL, DG_SUGGEST_OOM);
		add_tail_evidence(v, log, 3);
		return;
	}
	n_exc = dg_find_exceptions(log, exc, DIAG_MAX_EXC);
	if (uncaught_ended(in)) {
		const char *cls = uncaught_str(in->uncaught, "exception");
		/* Its traceback is read as any failed run's: the last one of its class, with
		 * the chain before it (what an atexit handler raised after it is not why the
		 * main program ended). */
		for (size_t k = n_exc; k-- > 0;)
			if (line_names_class(log->lines[exc[k].line], cls)) {
				dg_diagnose_exception(v, log, exc, k + 1);
				v->by_uncaught = k + 1 != n_exc;
				return;
			}
		/* The gate's record is the interpreter's word; an "Exception ignored in" line
		 * above a traceback is anyone's to print: one of the record's class below such a
		 * line is read as well (its line planted to make a crash read as ignored). */
		lb_log all = *log;
		all.n_ign = 0;
		size_t n_all = dg_find_exceptions(&all, exc, DIAG_MAX_EXC);
		for (size_t k = n_all; k-- > 0;)
			if (line_names_class(all.lines[exc[k].line], cls)) {
				dg_diagnose_exception(v, &all, exc, k + 1);
				v->by_uncaught = true;
				return;
			}
		n_exc = dg_find_exceptions(log, exc, DIAG_MAX_EXC);
		/* A run that failed anyway keeps the reading of its output when it has one. */
		if (n_exc > 0 && in->exit_code != 0) {
			dg_diagnose_exception(v, log, exc, n_exc);
			return;
		}
		char what[DIAG_TEXT_LEN];
		snprintf(what, sizeof(what),
			 "the main program ended with an uncaught %.128s that no traceback in the "
			 "output names (a sys.excepthook of the experiment's did not print it), and "
			 "the process exited with status %d",
			 cls ? cls : "exception", in->exit_code);
		dg_verdict_set(v, "code_error", what, NULL, SUGGEST_UNCAUGHT);
		v->by_uncaught = true;
		dg_set_confidence(v, CONF_HIGH, "the runtime gate recorded the exception as the "
					     "interpreter handed it to sys.excepthook at the main "
					     "program's end");
		return;
	}
	int shell_sig = shell_reported_signal(in, log);
	if (shell_sig) {
		diagnose_signal(v, shell_sig, in->exit_code, shell_sig == SIGKILL,
				in->oom_counted && !in->oom_killed, in->language);
		add_tail_evidence(v, log, 3);
		return;
	}
	bool gate_says = gate_saw_no_uncaught(in);
	if (exited_of_itself(in, log, exc, n_exc, gate_says)) {
		diagnose_own_exit(v, in, log, exc, n_exc, gate_says);
		return;
	}
	if (n_exc > 0) {
		dg_diagnose_exception(v, log, exc, n_exc);
		return;
	}
	if (in->language && strcmp(in->language, "octave") == 0 &&
	    dg_octave_missing_function(v, in, log))
		return;
	if (dg_scan_messages(v, log, in->language))
		return;
	/* Only a signal labbox saw is one: every backend turns a status it knows to mean a
	 * signal (docker's init's 128+N) into `signal` itself. */
	diagnose_signal(v, in->signal, in->exit_code, log_has_line(log, "Killed"),
			in->oom_counted && !in->oom_killed, in->language);
	add_tail_evidence(v, log, 3);
}

static int obj_add(struct json_object *obj, const char *key, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

static int add_null(struct json_object *obj, const char *key)
{
	return json_object_object_add(obj, key, NULL) < 0 ? -ENOMEM : 0;
}

static struct json_object *utf8_string(const char *s)
{
	char buf[DIAG_TEXT_LEN + 8];

	lb_text_utf8(buf, sizeof(buf), s, strlen(s));
	return json_object_new_string(buf);
}

static int add_location(struct json_object *doc, const lb_log *log, size_t frame)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	struct json_object *loc;
	long lineno;

	if (frame == NONE ||
	    !dg_parse_frame(log->lines[frame], file, sizeof(file), &lineno, func, sizeof(func)))
		return 0;
	loc = json_object_new_object();
	if (obj_add(doc, "location", loc) < 0 || obj_add(loc, "file", utf8_string(file)) < 0 ||
	    obj_add(loc, "line", json_object_new_int64(lineno)) < 0)
		return -ENOMEM;
	if (func[0] && obj_add(loc, "function", utf8_string(func)) < 0)
		return -ENOMEM;
	return 0;
}

/* code_location: the innermost frame in the experiment's own code, named apart from the frame
 * that raised (which may be numpy's or torch's); null when the traceback has none. */
static int add_code_location(struct json_object *doc, const lb_log *log, size_t frame)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	struct json_object *loc;
	long lineno;
	bool python;

	if (frame == NONE)
		return add_null(doc, "code_location");
	python = dg_parse_frame(log->lines[frame], file, sizeof(file), &lineno, func, sizeof(func));
	if (!python) {
		const char *s = log->lines[frame] + dg_indent_of(log->lines[frame]);
		const char *at = strstr(s, " at line ");

		if (!at || !dg_octave_frame_line(s, &lineno))
			return add_null(doc, "code_location");
		snprintf(func, sizeof(func), "%.*s", (int)(at - s), s);
	}
	loc = json_object_new_object();
	if (obj_add(doc, "code_location", loc) < 0)
		return -ENOMEM;
	/* Octave names the function or script, not its file: the experiment's .m file of
	 * that name, when it is staged. */
	char mfile[PATH_MAX];
	if (python ? obj_add(loc, "file", utf8_string(dg_experiment_relative(file, log->exp_dir))) < 0
	    : dg_octave_own_file(log->exp_dir, log->lines[frame], mfile, sizeof mfile)
		    ? obj_add(loc, "file", utf8_string(mfile)) < 0
		    : add_null(loc, "file") < 0)
		return -ENOMEM;
	if (obj_add(loc, "line", json_object_new_int64(lineno)) < 0 ||
	    (func[0] && obj_add(loc, "function", utf8_string(func)) < 0))
		return -ENOMEM;
	if (python && frame + 1 < log->n && !dg_is_frame(log->lines[frame + 1]) &&
	    log->lines[frame + 1][0] &&
	    !dg_exception_line(log->lines[frame + 1] + dg_indent_of(log->lines[frame + 1]), NULL) &&
	    obj_add(loc, "text", utf8_string(log->lines[frame + 1] + dg_indent_of(log->lines[frame + 1]))) < 0)
		return -ENOMEM;
	return 0;
}

static int to_json(const lb_verdict *v, const lb_log *log, struct json_object *doc)
{
	struct json_object *evidence = json_object_new_array();
	char summary[DIAG_TEXT_LEN + 2 * (256 + 128) + 64];

	if (obj_add(doc, "class", json_object_new_string(v->cls)) < 0)
		return -ENOMEM;
	/* Where the code failed belongs in the one line a person reads first. */
	snprintf(summary, sizeof(summary), "%s", v->summary);
	if (strcmp(v->cls, "code_error") == 0 && v->frame != NONE) {
		char file[256], func[128], cfile[256], cfunc[128];
		long lineno, cline;

		if (dg_parse_frame(log->lines[v->frame], file, sizeof(file), &lineno, func,
				   sizeof(func))) {
			if (v->code_frame != NONE && v->code_frame != v->frame &&
			    dg_parse_frame(log->lines[v->code_frame], cfile, sizeof(cfile), &cline,
					   cfunc, sizeof(cfunc)))
				/* The experiment's line is what its author will change. */
				snprintf(summary, sizeof(summary),
					 "%s (%s line %ld%s%s, raised in %s line %ld%s%s)", v->summary,
					 dg_experiment_relative(cfile, log->exp_dir), cline,
					 cfunc[0] ? ", in " : "", cfunc, file, lineno,
					 func[0] ? ", in " : "", func);
			else
				snprintf(summary, sizeof(summary), "%s (%s line %ld%s%s)", v->summary,
					 file, lineno, func[0] ? ", in " : "", func);
		}
	}
	if (v->handled[0]) {
		size_t have = strlen(summary);
		snprintf(summary + have, sizeof(summary) - have, "%s", v->handled);
	}
	if (obj_add(doc, "summary", utf8_string(summary)) < 0 ||
	    obj_add(doc, "evidence", evidence) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_evidence; i++) {
		const char *l = log->lines[v->evidence[i]];
		char buf[DIAG_EVIDENCE_LEN];
		struct json_object *s;

		l += dg_indent_of(l);
		lb_text_utf8(buf, sizeof(buf), l, strlen(l));
		s = json_object_new_string(buf);
		if (!s || json_object_array_add(evidence, s) < 0) {
			json_object_put(s);
			return -ENOMEM;
		}
	}
	if (obj_add(doc, "suggestion", utf8_string(v->suggestion)) < 0)
		return -ENOMEM;
	if (strcmp(v->cls, "gate_refused") == 0 && v->exc_line != NONE) {
		char ev[80] = "", rule[32] = "";
		if (dg_gate_refusal_of(log->lines[v->exc_line], ev, sizeof(ev), rule, sizeof(rule)) &&
		    (obj_add(doc, "gate_event", utf8_string(ev)) < 0 ||
		     (rule[0] && obj_add(doc, "rule", utf8_string(rule)) < 0)))
			return -ENOMEM;
	}
	if (v->exc_line != NONE) {
		const char *l = log->lines[v->exc_line];
		size_t name_len = 0;
		char name[128];

		/* Found as an exception line already, by place or by name. */
		dg_exception_line_of(l, &name_len, true);
		if (name_len > 0 && name_len < sizeof(name)) {
			memcpy(name, l, name_len);
			name[name_len] = '\0';
			if (obj_add(doc, "exception", json_object_new_string(name)) < 0)
				return -ENOMEM;
		}
	}
	static const char *const levels[] = {"low", "medium", "high"};
	if (obj_add(doc, "confidence", json_object_new_string(levels[v->confidence])) < 0 ||
	    obj_add(doc, "confidence_reason",
		    json_object_new_string(v->confidence_reason ? v->confidence_reason : "")) < 0)
		return -ENOMEM;
	if (add_location(doc, log, v->frame) < 0)
		return -ENOMEM;
	return add_code_location(doc, log, v->code_frame);
}

/* What the gate recorded, in the failure of a run whose main program ended with an uncaught
 * exception and that exited 0, or whose verdict the record chose (v->by_uncaught): an
 * evidence line of its own, the exit status 0 in the summary when its traceback decided the
 * class, and the exception and where the experiment's code was when the output has no
 * traceback of it. A plain crash (exit 1, its traceback last) is left as it was. */
static int add_uncaught(struct json_object *doc, const lb_failure_input *in, const lb_log *log)
{
	struct json_object *ev = in->uncaught, *v, *evidence;
	const char *cls = uncaught_str(ev, "exception"), *msg = uncaught_str(ev, "message");
	const char *file = NULL;
	int64_t line = 0;
	if (json_object_object_get_ex(ev, "file", &v) && json_object_is_type(v, json_type_string))
		file = dg_experiment_relative(json_object_get_string(v), log->exp_dir);
	if (json_object_object_get_ex(ev, "line", &v) && json_object_is_type(v, json_type_int))
		line = json_object_get_int64(v);
	char at[320] = "", text[DIAG_EVIDENCE_LEN + 64], one_line[256] = "";
	/* The message may span lines (torch's spawn puts the child's traceback in it): one
	 * evidence line has spaces where it had line breaks, not replacement characters. */
	if (msg) {
		size_t o = 0;
		for (const char *c = msg; *c && o + 1 < sizeof one_line; c++) {
			bool blank = (unsigned char)*c < 0x20 || *c == ' ';
			if (blank && (o == 0 || one_line[o - 1] == ' '))
				continue;
			one_line[o++] = blank ? ' ' : *c;
		}
		while (o > 0 && one_line[o - 1] == ' ')
			o--;
		one_line[o] = '\0';
		msg = one_line;
	}
	if (file)
		snprintf(at, sizeof(at), " (%.250s line %lld)", file, (long long)line);
	snprintf(text, sizeof(text),
		 "runtime gate: the main program ended with an uncaught %.128s%s%.200s%s; exit "
		 "status %d",
		 cls ? cls : "exception", msg ? ": " : "", msg ? msg : "", at, in->exit_code);
	if (!json_object_object_get_ex(doc, "evidence", &evidence) ||
	    !json_object_is_type(evidence, json_type_array))
		return -ENOMEM;
	size_t n = json_object_array_length(evidence);
	if (n >= DIAG_EVIDENCE_MAX)
		json_object_array_del_idx(evidence, n - 1, 1);
	if (json_object_array_add(evidence, utf8_string(text)) < 0)
		return -ENOMEM;
	bool from_log = json_object_object_get_ex(doc, "exception", &v) && v;
	if (from_log && in->exit_code != 0)
		return 0;
	if (from_log) {
		char summary[DIAG_TEXT_LEN * 2];
		const char *old = json_object_object_get_ex(doc, "summary", &v)
					  ? json_object_get_string(v) : "";
		snprintf(summary, sizeof(summary),
			 "%s; the main program ended with it uncaught, and the process still "
			 "exited with status 0", old);
		if (obj_add(doc, "summary", utf8_string(summary)) < 0)
			return -ENOMEM;
		const char *sug = json_object_object_get_ex(doc, "suggestion", &v)
					  ? json_object_get_string(v) : "";
		char more[DIAG_TEXT_LEN * 2];
		snprintf(more, sizeof(more),
			 "%s; and let a failing run exit non-zero: labbox fails a run whose main "
			 "program ended with an uncaught exception whatever made its exit status 0 "
			 "afterwards", sug);
		return obj_add(doc, "suggestion", utf8_string(more));
	}
	if (cls && obj_add(doc, "exception", utf8_string(cls)) < 0)
		return -ENOMEM;
	if (file && line > 0) {
		struct json_object *loc = json_object_new_object();
		if (obj_add(doc, "code_location", loc) < 0 ||
		    obj_add(loc, "file", utf8_string(file)) < 0 ||
		    obj_add(loc, "line", json_object_new_int64(line)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* 1073741824 -> "1g": the size as the flags take it. */
static void size_words(unsigned long long bytes, char *out, size_t len)
{
	unsigned long long mib = 1ULL << 20;

	if (bytes % (mib << 10) == 0)
		snprintf(out, len, "%llug", bytes / (mib << 10));
	else
		snprintf(out, len, "%llum", (bytes + mib - 1) / mib);
}

/* A run that failed while a tmpfs of the sandbox's was full failed of that, whatever a saver
 * called its short write: the sandbox measured it (lb_failure_input.full_tmpfs). Only a
 * verdict that blames the code, or that already says no space was left, is replaced: a
 * missing package or a network error is its own cause. */
static void refine_full_tmpfs(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	if (!in->full_tmpfs || !v->cls)
		return;
	bool no_space = strcmp(v->cls, "sandbox_restriction") == 0 &&
			strcmp(v->suggestion, DG_SUGGEST_NO_SPACE) == 0;
	if (strcmp(v->cls, "code_error") != 0 && !no_space)
		return;
	char size[32], what[300];
	const char *line = v->exc_line != NONE ? log->lines[v->exc_line] : NULL;
	size_words(in->full_tmpfs_bytes, size, sizeof(size));
	snprintf(what, sizeof(what),
		 "the sandbox's private %.128s (a tmpfs of %s, in memory) was full when the run "
		 "failed%s",
		 in->full_tmpfs, size, line ? " (the error is most likely a write that did not fit)" : "");
	dg_verdict_set(v, "sandbox_restriction", what, line, "");
	snprintf(v->suggestion, sizeof(v->suggestion),
		 "the sandbox's %.128s is a tmpfs of %s, not the host's disk, and the run filled "
		 "it: give it more room (the flag below doubles it%s), or write large files into "
		 "the experiment directory or a host directory mounted with -v SRC:DST:rw",
		 in->full_tmpfs, size,
		 strcmp(in->full_tmpfs, "/dev/shm") == 0 ? "; /dev/shm counts against --memory" : "");
	if (no_space)
		dg_set_confidence(v, CONF_HIGH, "the error says no space was left, and the sandbox "
					     "found this tmpfs full when the run ended");
	else
		dg_set_confidence(v, CONF_MEDIUM, "the sandbox found this tmpfs full when the run "
					       "ended; the error does not say that itself");
}

unsigned long long lb_diag_requested_bytes(const char *s)
{
	static const struct {
		const char *unit;
		int shift;
	} units[] = { { "bytes", 0 }, { "B ", 0 }, { "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 },
		      { "TiB", 40 }, { "PiB", 50 }, { "EiB", 60 }, { "Kb", 10 }, { "Mb", 20 },
		      { "Gb", 30 }, { "Tb", 40 } };
	static const char *const before[] = { "Unable to allocate ", "tried to allocate ",
					      "cannot allocate vector of size ", NULL };
	for (size_t i = 0; before[i]; i++) {
		const char *p = strcasestr(s, before[i]);
		char *end;
		if (!p)
			continue;
		p += strlen(before[i]);
		if (!isdigit((unsigned char)*p))
			continue;
		double n = strtod(p, &end);
		while (*end == ' ')
			end++;
		for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (strncmp(end, units[u].unit, strlen(units[u].unit)) == 0) {
				double b = n * (double)(1ULL << units[u].shift);
				return b >= 1.8e19 ? ~0ULL : (unsigned long long)b;
			}
	}
	return 0;
}

/* An allocation the output says was refused for more than the machine's memory: no memory
 * limit could give it, so the failure is the code's (most often an array whose shape grew
 * with the data: a pairwise matrix over every sample), not an out-of-memory to lift. */
static void refine_allocation(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	char line[300], asked[32], have[32], what[290];
	/* the exception's line, or the message a summary quotes (R's, without a traceback) */
	snprintf(line, sizeof(line), "%s", v->exc_line != NONE ? log->lines[v->exc_line]
				   : strstr(v->summary, ": ") ? strstr(v->summary, ": ") + 2 : "");
	unsigned long long want = lb_diag_requested_bytes(line);

	if (!v->cls || strcmp(v->cls, "oom") != 0 || !in->machine_memory || !want ||
	    want <= in->machine_memory)
		return;
	double w = (double)want, h = (double)in->machine_memory;
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int ku = 0, kh = 0;
	while (w >= 1024 && ku < 6)
		w /= 1024, ku++;
	while (h >= 1024 && kh < 6)
		h /= 1024, kh++;
	snprintf(asked, sizeof(asked), "%.3g %s", w, u[ku]);
	snprintf(have, sizeof(have), "%.3g %s", h, u[kh]);
	bool far = want / 4 > in->machine_memory;
	snprintf(what, sizeof(what),
		 "the code asked for %s in one allocation, more than this machine's memory (%s): "
		 "no memory limit could give it%s", asked, have,
		 far ? "; an amount that size is most likely an array shape that grew with the data"
		     : "");
	dg_verdict_set(v, "code_error", what, line,
		       "check the shape of what is allocated there (a full n x n matrix over every "
		       "sample, a missing batch dimension, a wrong axis or dtype): compute it in chunks "
		       "or keep only what is needed; if the size is meant, it needs a machine with that "
		       "much memory: no memory limit of labbox's gives more than the machine has");
	dg_set_confidence(v, far ? CONF_HIGH : CONF_MEDIUM,
			  far ? "the size the allocator refused is several times this machine's memory"
			   : "the size the allocator refused is more than this machine's memory: a "
			     "shape that grew, or work for a larger machine");
}

struct json_object *lb_diagnose_failure(const lb_failure_input *in)
{
	__attribute__((cleanup(dg_log_free))) lb_log log = { 0 };
	lb_verdict v = { .exc_line = NONE, .frame = NONE, .code_frame = NONE };
	struct json_object *doc;

	if (!in)
		return NULL;
	/* A main process that exited 0 was not ended by the memory limit, even when the OOM
	 * killer took another process of the run (a subprocess, a worker it replaced): the run
	 * completed, and diagnosis_warnings' oom_kill says what was killed. */
	if (in->exit_code == 0 && in->signal == 0 && !in->timed_out && !in->infra_error &&
	    !in->uncaught)
		return NULL;
	/* Without memory for the log the class still follows from how the run ended. */
	if (dg_log_split(&log, in->log_tail, in->log_tail_len) < 0)
		memset(&log, 0, sizeof(log));
	log.exp_dir = in->exp_dir;
	log.gate = in->runtime_gate;
	log.net_none = in->network_none;
	log.net_open = in->network_host || in->network_loopback;
	if (dg_stacks_printed(in))
		dg_split_glued_header(&log);
	diagnose(&v, in, &log);
	refine_full_tmpfs(&v, in, &log);
	refine_allocation(&v, in, &log);
	/* A traceback the interpreter did not end the program with (the gate's whole record has
	 * no uncaught exception, and the program exited of itself) was printed by the program:
	 * an exception it caught and printed, or text made to look like one. What it names is
	 * still the best reading, but not a cause labbox saw. */
	if (v.exc_line != NONE && v.confidence == CONF_HIGH && !in->uncaught && in->signal == 0 &&
	    !in->timed_out && !in->oom_killed && !in->infra_error && in->exit_code > 0 &&
	    lb_gate_record_complete(in->runtime_gate))
		dg_set_confidence(&v, CONF_MEDIUM,
				  "read from a traceback the program printed itself: the runtime "
				  "gate saw no uncaught exception end the program (a caught "
				  "exception it printed before exiting, or text made to look like "
				  "one)");
	/* The network class is read from words the program printed; when the gate's complete
	 * record has no socket in it, nothing labbox saw backs them. */
	if (v.cls && strcmp(v.cls, "network") == 0 && lb_gate_saw_no_socket(in->runtime_gate))
		dg_set_confidence(&v, CONF_LOW,
				  "the runtime gate, which records every socket the run's Python "
				  "interpreters open or connect, recorded none: the message is the "
				  "program's own words, or a native library's that opened its socket "
				  "itself");
	if (v.cls && strcmp(v.cls, "gpu_unavailable") == 0 && in->machine_without_gpus && !in->gpus) {
		snprintf(v.summary, sizeof v.summary,
			 "no usable GPU: the code needs CUDA, and the machine it ran on has no NVIDIA "
			 "GPU (no /dev/nvidiaN), so --gpus has none to give");
		snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_GPU_NONE_HERE);
	}
	/* CUDA's out-of-memory on a machine with no NVIDIA GPU, given none: no device's memory ran
	 * out, so the words are text something in the run raised (the code's own guard worded
	 * like torch's, a message re-raised from elsewhere). Only CUDA's words: HIP, MPS and
	 * TensorFlow's RESOURCE_EXHAUSTED name devices /dev/nvidiaN does not count. */
	if (v.cls && strcmp(v.cls, "gpu_oom") == 0 && in->machine_without_gpus && !in->gpus &&
	    (strstr(v.summary, "CUDA") || strstr(v.summary, "CUBLAS") || strstr(v.summary, "CUDNN"))) {
		char line[DIAG_TEXT_LEN];
		const char *colon = strstr(v.summary, ": ");
		snprintf(line, sizeof line, "%s", v.exc_line != NONE ? log.lines[v.exc_line]
						  : colon ? colon + 2 : v.summary);
		dg_verdict_set(&v, "code_error",
			       "no GPU ran out of memory: the machine has no NVIDIA GPU (no "
			       "/dev/nvidiaN) and the run was given none, so these CUDA words were "
			       "raised by the run itself",
			       line, SUGGEST_GPU_OOM_NONE_HERE);
		dg_set_confidence(&v, CONF_MEDIUM,
				  "the message names a GPU's memory, and the machine has no GPU for "
				  "it to be");
	}
	if (v.cls && strcmp(v.cls, "oom") == 0 && in->memory_unlimited && !in->memory_limit) {
		if (strcmp(v.suggestion, DG_SUGGEST_OOM) == 0)
			snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_OOM_HOST);
		else if (strcmp(v.suggestion, SUGGEST_OOM_HUNG) == 0)
			snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_OOM_HUNG_HOST);
	}
	/* A limit already at the machine's memory: no --memory gives more (the escalation is
	 * null, lb_diagnose_escalation), so the advice does not ask for one. */
	if (v.cls && strcmp(v.cls, "oom") == 0 && in->memory_limit && in->machine_memory &&
	    in->memory_limit >= in->machine_memory &&
	    (strcmp(v.suggestion, DG_SUGGEST_OOM) == 0 || strcmp(v.suggestion, SUGGEST_OOM_HUNG) == 0))
		snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_OOM_MACHINE);
	doc = json_object_new_object();
	if (!doc)
		return NULL;
	if (to_json(&v, &log, doc) < 0 || (uncaught_ended(in) && (in->exit_code == 0 || v.by_uncaught) &&
	     add_uncaught(doc, in, &log) < 0) ||
	    lb_diagnose_escalation(doc, in) < 0) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}
