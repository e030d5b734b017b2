/* Which exception of the output is the root cause: a chain read newest first, a wrapper's
 * original, a worker's or child's exception that the main process only noticed, a gate's
 * refusal in a child. */
#include "failure_internal.h"

#include <stdio.h>
#include <string.h>

static void add_frame_evidence(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	if (e->frame != NONE) {
		size_t src = e->frame + 1;

		dg_add_evidence(v, e->frame);
		if (src < e->line && !dg_is_frame(log->lines[src]) && log->lines[src][0])
			dg_add_evidence(v, src);
	}
	dg_add_evidence(v, e->line);
}

/* The outermost frame of an exception's traceback: for one the code caught, the function
 * whose `except` was handling it. */
static size_t outermost_frame(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header + 1; e->frame != NONE && i <= e->frame; i++)
		if (dg_is_frame(log->lines[i]))
			return i;
	return NONE;
}

/* Whether a source line is a `raise` statement: `raise X(...)`, or the body of a one-line
 * `if strict: raise X(...)`. */
static bool raise_statement(const char *t)
{
	const char *p = t;

	if (dg_starts_with(t, "raise") && (t[5] == ' ' || t[5] == '(' || t[5] == '\0'))
		return true;
	while ((p = strstr(p, "raise")) != NULL) {
		const char *q = p;
		while (q > t && q[-1] == ' ')
			q--;
		if (q > t && q[-1] == ':' && (p[5] == ' ' || p[5] == '(' || p[5] == '\0'))
			return true;
		p += 5;
	}
	return false;
}

/* Whether the later exception was raised by a `raise` statement in place of the earlier one
 * (or by a `with` block's exit while the earlier one left it):
 * in the function that was handling it (`except OSError: raise RuntimeError("could not load
 * ...")`, a translation, as a library's wrapper or the code's own), or in a helper of the
 * experiment's own that the handler called (`except OSError: fail("no data")`). An error of
 * another kind met in the handler's fallback (a shape error in the features computed when the
 * cached ones are missing, an attribute typo after an optional import failed, a library's
 * check of what the fallback passed it) is raised by an operation or by a library's code, and
 * is the handler's own bug. */
static bool raised_by_handler(const lb_log *log, const lb_exc *earlier, const lb_exc *later)
{
	char f1[512], f2[512], fn1[128], fn2[128];
	long l1, l2;
	size_t outer = outermost_frame(log, earlier), src = later->frame + 1;

	/* Without both tracebacks' frames there is nothing to tell them apart by. */
	if (outer == NONE || later->frame == NONE || later->bare || earlier->bare)
		return true;
	if (!dg_parse_frame(log->lines[outer], f1, sizeof f1, &l1, fn1, sizeof fn1) ||
	    !dg_parse_frame(log->lines[later->frame], f2, sizeof f2, &l2, fn2, sizeof fn2))
		return true;
	bool in_handler = strcmp(f1, f2) == 0 && strcmp(fn1, fn2) == 0, called = false;
	/* The handler's function among the later traceback's outer frames: it called what
	 * raised, or, standing on a `with` line, nothing handled the earlier one: it was leaving
	 * that block, whose context manager's exit raised in turn (a Pool's terminate, a file's
	 * close), and what was leaving is the cause. */
	for (size_t i = later->header + 1; i < later->frame; i++) {
		char f3[512], fn3[128];
		long l3;
		size_t t = i + 1;

		if (!dg_parse_frame(log->lines[i], f3, sizeof f3, &l3, fn3, sizeof fn3) ||
		    strcmp(f1, f3) != 0 || strcmp(fn1, fn3) != 0)
			continue;
		called = true;
		if (t >= later->line || dg_is_frame(log->lines[t]))
			continue;
		const char *w = log->lines[t] + dg_indent_of(log->lines[t]);
		if (dg_starts_with(w, "with ") || dg_starts_with(w, "async with "))
			return true;
	}
	/* else only a helper of the experiment's own, called from the handler's function */
	if (!in_handler && (!called || !dg_in_experiment(f2, log->exp_dir)))
		return false;
	/* The source line under the frame; a log that did not print it says nothing against. */
	if (src >= later->line || dg_is_frame(log->lines[src]))
		return true;
	return raise_statement(log->lines[src] + dg_indent_of(log->lines[src]));
}

/* Whether an exception earlier in a chain explains a later one of class `later` that the
 * code raised while handling it: a fetch that failed (network, a denied write, no GPU) is
 * why data is then missing, and a generic error the handler raised in its place says nothing
 * of its own. */
static bool context_explains(const char *earlier, const char *later, const lb_log *log,
			     const lb_exc *e_earlier, const lb_exc *e_later)
{
	if (strcmp(later, "code_error") == 0)
		return raised_by_handler(log, e_earlier, e_later);
	return strcmp(later, "missing_data") == 0 &&
	       (strcmp(earlier, "network") == 0 || strcmp(earlier, "sandbox_restriction") == 0 ||
		strcmp(earlier, "gate_refused") == 0 ||
		strcmp(earlier, "gpu_unavailable") == 0);
}

/* A worker process that died (a DataLoader's, a multiprocessing pool's) is reported by its
 * parent as a generic error; the worker's own last words above it say why. */
static bool worker_died(const char *line)
{
	return (dg_has(line, "worker") || dg_has(line, "process")) &&
	       (dg_has(line, "exited unexpectedly") || dg_has(line, "killed by signal") ||
		dg_has(line, "terminated abruptly"));
}

/* The experiment's own frame and the source line under it. */
static void add_code_evidence(lb_verdict *v, const lb_log *log)
{
	dg_add_evidence(v, v->code_frame);
	if (v->code_frame + 1 < log->n && !dg_is_frame(log->lines[v->code_frame + 1]))
		dg_add_evidence(v, v->code_frame + 1);
}

/* A parent's word that a child process or a worker ended: how it noticed that the child's
 * uncaught error above ended it (torch's ProcessExitedException, a pool's BrokenProcessPool,
 * a DataLoader's "exited unexpectedly", the code's own "worker ... exit code 1"). */
static bool child_ended(const char *line)
{
	static const char *const who[] = {"process", "worker", "child", NULL};
	static const char *const how[] = {"exit code", "exitcode", "exit status", "exited",
					  "terminated", "died", "abruptly", "killed", NULL};
	return worker_died(line) || (dg_has_any(line, who) && dg_has_any(line, how));
}

/* multiprocessing's "Process SpawnProcess-1:" above a child's traceback, or the frames only a
 * child runs (its bootstrap, a pool's or DataLoader's worker loop, spawn's unpickling). */
static bool child_line(const char *s)
{
	static const char *const child_frames[] = {
		"/multiprocessing/", "/concurrent/futures/process.py\"", "/torch/multiprocessing/",
		"/torch/utils/data/_utils/worker.py\"", NULL};
	size_t n = strlen(s);

	if (dg_starts_with(s, "Process ") && n > 9 && s[n - 1] == ':' && !strchr(s + 8, ' '))
		return true;
	return dg_is_frame(s) && dg_has_any(s, child_frames);
}

static bool child_lines(const lb_log *log, size_t from, size_t to)
{
	for (size_t i = from; i < to && i < log->n; i++)
		if (child_line(log->lines[i] + dg_indent_of(log->lines[i])))
			return true;
	return false;
}

/* The child's refusal as the verdict, with the parent's error and line beside it. */
static void refused_in_child(lb_verdict *v, const lb_verdict *why, const lb_log *log,
			     const lb_exc *last, const char *reason)
{
	*v = *why;
	if (v->code_frame == NONE)
		v->code_frame = dg_code_frame_of(log, last);
	dg_set_confidence(v, CONF_MEDIUM, reason);
	if (v->code_frame != NONE)
		add_code_evidence(v, log);
	dg_add_evidence(v, last->line);
}

/* A refusal of the runtime gate that nothing caught, in a child process's traceback above the
 * last chain: a worker's or a spawned child's, which multiprocessing prints before the child
 * exits 1. The parent's error that ended the run (a pool's or a DataLoader's "exited
 * unexpectedly", torch's ProcessExitedException) is how it noticed, not why: the verdict
 * names the refusal. Only then: a refusal the run's own process caught and printed
 * (traceback.print_exc()) before an unrelated error is not why that error happened, and a
 * refusal the gate did not record is no refusal (dg_classify_at). */
static bool refused_before(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n)
{
	const lb_exc *last = &exc[n - 1];
	size_t start = n - 1;

	if (!child_ended(log->lines[last->line]))
		return false;
	while (start > 0 && exc[start - 1].link != LINK_NONE)
		start--;
	for (size_t k = start; k-- > 0;) {
		lb_verdict why = *v;
		size_t above = exc[k].header > 0 ? exc[k].header - 1 : 0;

		why.n_evidence = 0;
		dg_classify_at(&why, log, &exc[k]);
		if (strcmp(why.cls, "gate_refused") != 0 || !child_lines(log, above, exc[k].line))
			continue;
		add_frame_evidence(&why, log, &exc[k]);
		refused_in_child(v, &why, log, last,
				 "the gate's refusal went uncaught in a child process (a worker's or "
				 "a spawned one's); the error that ended the run came after it");
		return true;
	}
	/* Two workers writing their tracebacks at once interleave them (a "Process
	 * ForkProcess-1:" header inside the other's frames), and neither parses as a chain: the
	 * refusal's own line, anywhere above the last chain, still says what happened. */
	for (size_t l = exc[start].header; l-- > 0;) {
		const char *line = log->lines[l];
		if (strncmp(line, "PermissionError", 15) != 0 || !dg_has(line, GATE_MARK))
			continue;
		lb_verdict why = *v;
		lb_exc one = {.header = l, .line = l, .frame = NONE, .link = LINK_NONE, .bare = true};
		why.n_evidence = 0;
		dg_classify_at(&why, log, &one);
		if (strcmp(why.cls, "gate_refused") != 0 ||
		    !child_lines(log, l > DIAG_SCAN_LINES ? l - DIAG_SCAN_LINES : 0, l))
			continue;
		why.code_frame = NONE;
		dg_add_evidence(&why, l);
		refused_in_child(v, &why, log, last,
				 "the gate's refusal went uncaught in a child process whose traceback "
				 "is mixed with another's; the error that ended the run came after it");
		return true;
	}
	return false;
}

/* Exceptions a process raises when what it waited on stopped coming: a queue left empty, a
 * pipe or connection its peer closed, a pool whose worker died, a wait that ran out. After a
 * thread or child died of its own exception these are how the main process noticed. */
static bool waiting_ended(const char *line)
{
	static const char *const names[] = {
		"Empty", "EOFError", "BrokenPipeError", "ConnectionResetError",
		"ConnectionAbortedError", "BrokenProcessPool", "BrokenThreadPool",
		"BrokenBarrierError", "TimeoutError", NULL};
	size_t n = 0;

	line += dg_indent_of(line);
	return dg_exception_line_of(line, &n, true) && dg_name_is(line, n, names);
}

/* threading's "Exception in thread NAME:" or multiprocessing's "Process NAME:" right above a
 * traceback (a line of the other stream may stand between): a thread's or child's that died. */
const char *dg_worker_header_above(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header, seen = 0; i-- > 0 && seen < 3;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		size_t len = strlen(s);

		if (!s[0])
			continue;
		seen++;
		if (len > 1 && s[len - 1] == ':' && dg_starts_with(s, "Exception in thread "))
			return "a thread";
		if (len > 1 && s[len - 1] == ':' && child_line(s))
			return "a child process";
	}
	return NULL;
}

/* The last thread's or child's uncaught exception above the main process's last chain, when
 * that chain ends in a waiting_ended exception; NONE otherwise. */
static size_t worker_first(const lb_log *log, const lb_exc *exc, size_t n)
{
	size_t start = n - 1;

	if (exc[n - 1].bare || !waiting_ended(log->lines[exc[n - 1].line]))
		return NONE;
	while (start > 0 && exc[start - 1].link != LINK_NONE)
		start--;
	for (size_t k = start; k-- > 0;)
		if (exc[k].link == LINK_NONE && !exc[k].bare && dg_worker_header_above(log, &exc[k]))
			return k;
	return NONE;
}

/* The worker's exception is the root cause, read as any chain; the main process's is named as
 * its consequence, in the summary and the evidence. */
static void diagnose_worker_first(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n,
				  size_t w)
{
	const char *main_line = log->lines[exc[n - 1].line];
	size_t name_len = 0;
	char summary[DIAG_TEXT_LEN];

	dg_diagnose_exception(v, log, exc, w + 1);
	main_line += dg_indent_of(main_line);
	dg_exception_line_of(main_line, &name_len, true);
	snprintf(summary, sizeof(summary),
		 "%.400s, in %s that died of it; the main process's %.*s came after, as it "
		 "waited for what that one would have sent",
		 v->summary, dg_worker_header_above(log, &exc[w]),
		 (int)(name_len < 120 ? name_len : 120), main_line);
	snprintf(v->summary, sizeof(v->summary), "%s", summary);
	if (v->confidence == CONF_HIGH)
		dg_set_confidence(v, CONF_MEDIUM,
				  "a thread or child process died of this exception, and the main "
				  "process then failed waiting for what it would have sent");
	/* A worker with no frame of the experiment's (a pool's loop, spawn's unpickling): the
	 * experiment's line is where the main process waited. */
	if (v->code_frame == NONE) {
		v->code_frame = dg_code_frame_of(log, &exc[n - 1]);
		if (v->code_frame != NONE)
			add_code_evidence(v, log);
	}
	dg_add_evidence(v, exc[n - 1].line);
}

/* The exception the code was handling when it raised the one that ended it, and that did not
 * explain it (a fallback's own error): named in the summary and shown, since the log prints it
 * first and a reader could take it for the cause. */
static void note_handled(lb_verdict *v, const lb_log *log, const lb_exc *handled)
{
	const char *l = log->lines[handled->line];
	size_t name_len = 0, cf = dg_code_frame_of(log, handled);
	char file[DIAG_EVIDENCE_LEN], func[128], where[DIAG_EVIDENCE_LEN + 32] = "";
	long lineno;

	l += dg_indent_of(l);
	if (!dg_exception_line_of(l, &name_len, true) || name_len == 0 || name_len > 120)
		return;
	if (cf != NONE && dg_parse_frame(log->lines[cf], file, sizeof file, &lineno, func, sizeof func))
		snprintf(where, sizeof where, " at %s line %ld",
			 dg_experiment_relative(file, log->exp_dir), lineno);
	snprintf(v->handled, sizeof v->handled,
		 "; it was raised while the code was handling an earlier %.*s%s, which the code "
		 "had caught: that one is not this error's cause", (int)name_len, l, where);
	dg_add_evidence(v, handled->line);
}

/* The whole chain is read, newest first, and its root cause named: each older exception that
 * explains the one after it (always for a cause, see context_explains for a context) takes
 * over the verdict, which then names the root's exception and location. */
void dg_diagnose_exception(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n)
{
	const lb_exc *last = &exc[n - 1];
	size_t root = n - 1;
	size_t w = worker_first(log, exc, n);

	if (w != NONE) {
		diagnose_worker_first(v, log, exc, n, w);
		return;
	}
	dg_classify_at(v, log, last);
	for (size_t k = n - 1; k-- > 0 && exc[k].link != LINK_NONE;) {
		lb_verdict cause = *v;

		dg_classify_at(&cause, log, &exc[k]);
		if (exc[k].link == LINK_WRAPPED) {
			/* the worker's own exception is the root, whatever its class */
			*v = cause;
			root = k;
			continue;
		}
		/* A cause explains what follows it whatever its class (`raise RuntimeError("fit
		 * failed") from e` names the wrapper's line, not where the fit failed); an error
		 * of the code's own met while handling another explains nothing about it. */
		if (strcmp(cause.cls, "code_error") == 0 && exc[k].link != LINK_CAUSE)
			continue;
		if (exc[k].link == LINK_CAUSE ||
		    context_explains(cause.cls, v->cls, log, &exc[k], &exc[k + 1])) {
			if (exc[k].link == LINK_CONTEXT && cause.confidence == CONF_HIGH)
				dg_set_confidence(&cause, CONF_MEDIUM,
						  "read from an exception the code was handling when "
						  "the last one was raised");
			*v = cause;
			root = k;
		}
	}
	if (root != n - 1)
		add_frame_evidence(v, log, &exc[root]);
	else if (n >= 2 && exc[n - 2].link == LINK_CONTEXT && strcmp(v->cls, "code_error") == 0)
		note_handled(v, log, &exc[n - 2]);
	if (strcmp(v->cls, "code_error") == 0 && refused_before(v, log, exc, n))
		return;
	if (strcmp(v->cls, "code_error") == 0 && worker_died(log->lines[last->line])) {
		lb_verdict why = *v;

		why.n_evidence = 0;
		if (dg_scan_messages(&why, log, NULL) && strcmp(why.cls, "code_error") != 0) {
			why.exc_line = last->line;
			why.frame = last->frame;
			why.code_frame = dg_code_frame_of(log, last);
			dg_set_confidence(&why, CONF_MEDIUM,
					  "a worker process died; its own last message names the cause");
			*v = why;
		}
	}
	/* The experiment's own line first, when a library raised: what its author changes. */
	if (v->code_frame != NONE && v->code_frame != v->frame)
		add_code_evidence(v, log);
	add_frame_evidence(v, log, last);
}
