/* A run the time budget ended: the stacks the gate's faulthandler printed as the SIGTERM
 * came (where the main program, or a thread it waited for, was), and a run that waited
 * without computing. */
#include "failure_internal.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A line that asks the reader to type something: "Press enter to continue.", "[y/N]",
 * "Enter the learning rate:". */
static bool prompt_line(const char *s)
{
	static const char *const asks[] = {
		"press enter", "press return", "press any key", "press a key", "hit enter",
		"hit any key", "press <enter>", "press [enter]", "[y/n]", "(y/n)", "[yes/no]",
		"(yes/no)", "y/n?", "[y/n/q]", "press ctrl", NULL,
	};
	static const char *const leads[] = { "enter ", "please enter", "please type", "input ",
					     "type ", "choose ", "select ", NULL };
	size_t n;
	s += dg_indent_of(s);
	n = strlen(s);
	if (n == 0 || n > 200)
		return false;
	if (dg_has_any(s, asks))
		return true;
	for (size_t i = 0; leads[i]; i++)
		if (strncasecmp(s, leads[i], strlen(leads[i])) == 0)
			return s[n - 1] == ':' || s[n - 1] == '?' || s[n - 1] == '>';
	return false;
}

/* faulthandler's header of one thread's stack, "Current thread 0x7f... (most recent call
 * first):" or "Thread 0x7f... (most recent call first):". */
static bool dump_header(const char *s)
{
	s += dg_indent_of(s);
	if (dg_starts_with(s, "Current thread 0x"))
		s += 17;
	else if (dg_starts_with(s, "Thread 0x"))
		s += 9;
	else
		return false;
	while (isxdigit((unsigned char)*s))
		s++;
	return strcmp(s, " (most recent call first):") == 0;
}

/* The first line of a dump whose block header is at line h: headers, frames and blank lines
 * above it are the same dump's. */
static size_t dump_start(const lb_log *log, size_t h)
{
	size_t start = h;
	while (start > 0 && (dump_header(log->lines[start - 1]) || dg_is_frame(log->lines[start - 1]) ||
			     !log->lines[start - 1][0]))
		start--;
	return start;
}

/* Whether frame line s is in a file ending in suffix and function func. */
static bool frame_is(const char *s, const char *suffix, const char *func)
{
	char file[DIAG_EVIDENCE_LEN], fn[128];
	long lineno;
	size_t fl, sl = strlen(suffix);

	return dg_parse_frame(s, file, sizeof file, &lineno, fn, sizeof fn) &&
	       strcmp(fn, func) == 0 && (fl = strlen(file)) >= sl &&
	       strcmp(file + fl - sl, suffix) == 0;
}

/* The stacks are the budget's: the run timed out and died of the SIGTERM it sent. A program
 * with a SIGTERM handler of its own ended otherwise, and any stacks in its output are its
 * own. */
bool dg_stacks_printed(const lb_failure_input *in)
{
	return in->timed_out && in->signal == SIGTERM;
}

/* The output's last words may have had no newline (a prompt, progress dots): the dump's
 * first header is then at the end of that line. It is made a line of its own (the log's
 * lines array grows by one), so that the words stay the run's and the header the dump's. */
void dg_split_glued_header(lb_log *log)
{
	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		if (dump_header(log->lines[i]))
			return;
		char *h = strstr(log->lines[i], "Current thread 0x");
		if (!h)
			h = strstr(log->lines[i], "Thread 0x");
		if (!h || h == log->lines[i] || !dump_header(h))
			continue;
		char **grown = realloc(log->lines, (log->n + 1) * sizeof *grown);
		if (!grown)
			return;
		log->lines = grown;
		memmove(&log->lines[i + 2], &log->lines[i + 1], (log->n - i - 1) * sizeof *grown);
		snprintf(log->glued, sizeof log->glued, "%s", h); /* 59 bytes at most */
		log->lines[i + 1] = log->glued;
		*h = '\0';
		log->n++;
		return;
	}
}

/* Of the last dump's threads, the main thread's stack is the one whose outermost frame is a
 * module's top level, or, stopped at faulthandler's hundred frames ("..."), the current
 * thread's (the kernel hands a signal sent to the process to its main thread first). A dump
 * followed by more than a few lines is not the one the end of the run caused. */
void dg_read_dump(const lb_log *log, stack_dump *d)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	long lineno;
	size_t last = NONE, end, after = 0, cut_current = NONE, cut_code = NONE;
	size_t thread_top = NONE, thread_code = NONE;
	bool shutdown = false;

	memset(d, 0, sizeof *d);
	d->start = d->top = d->code = NONE;
	for (size_t i = log->n; i-- > 0 && last == NONE;)
		if (dump_header(log->lines[i]))
			last = i;
	if (last == NONE)
		return;
	for (end = last + 1; end < log->n && dg_is_frame(log->lines[end]); end++)
		;
	for (size_t i = end; i < log->n; i++)
		after += log->lines[i][0] != '\0' && strcmp(log->lines[i] + dg_indent_of(log->lines[i]), "...") != 0;
	if (after > 20)
		return;
	d->start = dump_start(log, last);
	for (size_t i = d->start; i < log->n; i++) {
		if (!dump_header(log->lines[i]))
			continue;
		size_t j = i + 1, own = NONE;
		func[0] = file[0] = '\0';
		while (j < log->n && dg_is_frame(log->lines[j]) &&
		       dg_parse_frame(log->lines[j], file, sizeof file, &lineno, func, sizeof func)) {
			if (own == NONE && dg_in_experiment(file, log->exp_dir))
				own = j;
			j++;
		}
		bool cut = j < log->n && strcmp(log->lines[j] + dg_indent_of(log->lines[j]), "...") == 0;
		if (j > i + 1) {
			if (strcmp(func, "<module>") == 0) {
				d->top = i + 1;
				d->code = own;
			} else if (frame_is(log->lines[j - 1], "/threading.py", "_shutdown")) {
				shutdown = true;
			} else if (frame_is(log->lines[j - 1], "/multiprocessing/util.py",
					    "_exit_function")) {
				d->child_join = true;
			} else if (cut && dg_starts_with(log->lines[i] + dg_indent_of(log->lines[i]),
							 "Current thread")) {
				cut_current = i;
				cut_code = own;
			} else {
				d->n_threads++;
				if (thread_top == NONE) {
					thread_top = i + 1;
					thread_code = own;
				}
				if (own != NONE && d->n_thread_code < DUMP_THREADS_NAMED)
					d->thread_code[d->n_thread_code++] = own;
			}
		}
		i = j > i + 1 ? j - 1 : i;
	}
	if (d->top != NONE || d->child_join)
		return;
	if (cut_current != NONE) {
		/* a recursion deeper than the dump goes: its innermost frames are what it did */
		d->top = cut_current + 1;
		d->code = cut_code;
		return;
	}
	if (shutdown && d->n_threads > 0) {
		d->main_done = true;
		if (d->n_threads == 1) {
			d->top = thread_top;
			d->code = thread_code;
		}
	}
}

static const char SUGGEST_THREAD_AT_EXIT[] =
	"the main program had finished: a thread it started that is not a daemon (or a "
	"ThreadPoolExecutor's worker, which Python also waits for at exit) kept the process "
	"alive until the budget ended it. Make that work end (a flag or an event its loop "
	"checks, then join it; for an executor, tasks that return), or start a plain thread "
	"with daemon=True; only if its work was still needed, raise the budget (--budget "
	"SECONDS)";
static const char SUGGEST_CHILD_AT_EXIT[] =
	"the main program had finished: a child process it started that is not a daemon "
	"(multiprocessing joins those at exit) kept it waiting until the budget ended it. End "
	"the child's work (send it the sentinel or the event it waits for, then join it, or "
	"terminate it), or start it with daemon=True; only if its work was still needed, "
	"raise the budget (--budget SECONDS)";

/* "main.py line 4, in f (inside threading.py line 320, in wait)" for frame at, with the
 * innermost frame top beside it when it is another (NONE: none). */
static int frame_words(char *out, size_t len, const lb_log *log, size_t at, size_t top)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	long lineno;

	if (!dg_parse_frame(log->lines[at], file, sizeof file, &lineno, func, sizeof func))
		return -EINVAL;
	bool own = dg_in_experiment(file, log->exp_dir);
	int n = snprintf(out, len, "%s line %ld%s%s", own ? dg_experiment_relative(file, log->exp_dir) : file,
			 lineno, func[0] ? ", in " : "", func);
	if (top != NONE && at != top && n > 0 && (size_t)n < len &&
	    dg_parse_frame(log->lines[top], file, sizeof file, &lineno, func, sizeof func)) {
		const char *base = strrchr(file, '/');
		snprintf(out + n, len - (size_t)n, " (inside %s line %ld%s%s)", base ? base + 1 : file,
			 lineno, func[0] ? ", in " : "", func);
	}
	return 0;
}

static void append_summary(lb_verdict *v, const char *s)
{
	size_t len = strlen(v->summary);
	snprintf(v->summary + len, sizeof v->summary - len, "%s", s);
}

/* Where the run was as the budget ended it, from the stack dump: beside the timeout's own
 * words, so a wait that never ends is found in the code, not guessed. */
void dg_add_stack_at_end(lb_verdict *v, const lb_log *log, const stack_dump *d)
{
	char where[2 * DIAG_EVIDENCE_LEN + 300], buf[3 * DIAG_EVIDENCE_LEN + 400];
	size_t top = d->top, code = d->code;

	if (strcmp(v->cls, "timeout") != 0 || d->start == NONE)
		return;
	if (d->child_join) {
		append_summary(v, "; the main program had finished and was waiting, at exit, for a "
				  "child process it started (multiprocessing joins those that are not "
				  "daemons), which had not ended");
		snprintf(v->suggestion, sizeof v->suggestion, "%s", SUGGEST_CHILD_AT_EXIT);
		return;
	}
	if (d->main_done && top == NONE) {
		/* several threads: the dump does not say which of them are daemons */
		int n = snprintf(buf, sizeof buf, "; the main program had finished and was "
				 "waiting for a thread it started that is not a daemon (%zu threads "
				 "were running", d->n_threads);
		for (size_t k = 0; k < d->n_thread_code && n > 0 && (size_t)n < sizeof buf; k++) {
			if (frame_words(where, sizeof where, log, d->thread_code[k], NONE) == 0)
				n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s",
					      k ? "; " : ", in the experiment's code at ", where);
		}
		if (n > 0 && (size_t)n < sizeof buf)
			snprintf(buf + n, sizeof buf - (size_t)n, ")");
		append_summary(v, buf);
		snprintf(v->suggestion, sizeof v->suggestion, "%s", SUGGEST_THREAD_AT_EXIT);
		return;
	}
	if (top == NONE)
		return;
	v->frame = top;
	v->code_frame = code;
	size_t at = code != NONE ? code : top;
	if (frame_words(where, sizeof where, log, at, top) < 0)
		return;
	snprintf(buf, sizeof buf,
		 d->main_done ? "; the main program had finished and was waiting for a thread it "
				"started, which was at %s"
			      : "; when it ended, the main program was at %s",
		 where);
	append_summary(v, buf);
	if (d->main_done)
		snprintf(v->suggestion, sizeof v->suggestion, "%s", SUGGEST_THREAD_AT_EXIT);
	/* The run's last words before the dump (none when the dump fills the log's tail), the
	 * innermost frames as printed, and the experiment's own frame. */
	v->n_evidence = 0;
	if (d->start > 0 && log->lines[d->start - 1][0])
		dg_add_evidence(v, d->start - 1);
	dg_add_evidence(v, top);
	if (top + 1 < at)
		dg_add_evidence(v, top + 1);
	dg_add_evidence(v, at);
}

/* A run the budget ended that used almost no CPU was waiting, not computing. With its last
 * output a prompt it waited for a reader: labbox gives none (no terminal), so no budget is
 * enough. Without a prompt it may be a sleep, a lock, a child or a server (an experiment
 * that polls is legitimate): still the timeout, with what the CPU time says beside it. */
void dg_diagnose_idle_timeout(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	if (!in->cpu_known || in->wall_s < 2.0 || in->cpu_s < 0 || in->cpu_s > 0.1 * in->wall_s)
		return;
	size_t last = dg_last_output_line(log);
	char what[400];
	if (last != NONE && prompt_line(log->lines[last])) {
		snprintf(what, sizeof what,
			 "the run waited for keyboard input until the budget ended it: its last "
			 "output is a prompt, and it used %.1f s of CPU in %.1f s; labbox runs it "
			 "without a terminal, so nothing answers",
			 in->cpu_s, in->wall_s);
		dg_verdict_set(v, "code_error", what, log->lines[last] + dg_indent_of(log->lines[last]),
			       "make the run need no reader: remove the prompt or the pause (Octave: "
			       "pause(0) or no bare pause; Python: no input()), take the answer from an "
			       "argument or labbox.yaml (the program's own yes option, a default when "
			       "sys.stdin.isatty() is False); a larger --budget would not help");
		dg_set_confidence(v, CONF_MEDIUM,
				  "the run's last output asks for input and it used almost no CPU "
				  "until the budget ended it; what it waited on is not recorded");
		return;
	}
	if (in->wall_s < 10.0 || in->cpu_s > 0.05 * in->wall_s)
		return;
	snprintf(what, sizeof what,
		 "the time budget ended the run before it finished; it used %.1f s of CPU in %.1f "
		 "s, so it was mostly waiting (a sleep, a lock, a child process, a server), not "
		 "computing",
		 in->cpu_s, in->wall_s);
	snprintf(v->summary, sizeof v->summary, "%s", what);
	snprintf(v->suggestion, sizeof v->suggestion,
		 "look at what the run waited on before raising the budget (its last output is "
		 "below): a wait that never ends needs a fix, not a larger --budget; if the "
		 "waiting is the work (a download, a remote service, a timed sleep), raise the "
		 "budget (--budget SECONDS)");
}
