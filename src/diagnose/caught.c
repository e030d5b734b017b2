/* A completed run whose output ends in a traceback: the code caught the exception that stopped
 * its work (`try: main() except Exception: traceback.print_exc()`), printed it and exited 0,
 * so what it printed before is what it had when it stopped (docs/decisions.md, "A run whose
 * output ends in a traceback it caught"). */
#include "../collect/text.h"
#include "failure_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* src/run/run.c keeps a stream's last line to 400 bytes, less a UTF-8 character the cut went
 * through: one that long may be the start of the log's line. */
#define CE_LAST_CUT 396
/* The other stream's last line this close above the traceback may have been printed after
 * it (read first from a wake-up that found both waiting), as decisions.md's "both streams'
 * last words" reads it. */
#define CE_NEAR 4
#define CE_EVIDENCE 4
#define CE_TEXT 300

enum { CE_UNKNOWN, CE_STDOUT, CE_STDERR };

/* A stream's last line as the log's lines are cleaned, into out; false when there is none or
 * nothing of it shows (colour escapes alone). */
static bool clean_last(const char *last, char *out, size_t outlen)
{
	size_t n = last ? strlen(last) : 0;

	if (!n || n >= outlen)
		return false;
	return dg_clean_line(last, n, out) > 0;
}

static bool same_line(const char *logline, const char *cleaned, size_t raw_len)
{
	size_t n = strlen(cleaned);

	return strcmp(logline, cleaned) == 0 ||
	       (raw_len >= CE_LAST_CUT && strncmp(logline, cleaned, n) == 0);
}

static bool chain_refused_by_gate(const lb_log *log, const lb_exc *exc, size_t from, size_t n,
				  struct json_object *gate)
{
	for (size_t k = from; k < n; k++)
		if (dg_gate_recorded(gate, log->lines[exc[k].line]))
			return true;
	return false;
}

static int add(struct json_object *o, const char *key, struct json_object *v)
{
	return lb_diag_json_add(o, key, v);
}

static struct json_object *text(const char *s)
{
	return lb_diag_json_text(s, DIAG_TEXT_LEN * 2);
}

static int emit(struct json_object *out, const char *msg, char ev[][DIAG_EVIDENCE_LEN + 64],
		size_t n_ev, const char *exc_name, bool order_certain)
{
	struct json_object *w = json_object_new_object(), *arr = json_object_new_array();

	if (!w || !arr) {
		json_object_put(w);
		json_object_put(arr);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_ev; i++) {
		struct json_object *s = text(ev[i]);

		if (!s || json_object_array_add(arr, s) < 0) {
			json_object_put(s);
			json_object_put(arr);
			json_object_put(w);
			return -ENOMEM;
		}
	}
	if (add(w, "kind", json_object_new_string("exception_caught_at_end")) < 0 ||
	    add(w, "message", text(msg)) < 0 || add(w, "evidence", arr) < 0) {
		json_object_put(w);
		return -ENOMEM;
	}
	if (add(w, "exception", text(exc_name)) < 0 ||
	    add(w, "order_certain", json_object_new_boolean(order_certain)) < 0 ||
	    json_object_array_add(out, w) < 0) {
		json_object_put(w);
		return -ENOMEM;
	}
	return 0;
}

int lb_diag_caught_at_end(const lb_diagnosis_input *in, const char *log, size_t len,
			  bool children, struct json_object *out)
{
	__attribute__((cleanup(dg_log_free))) lb_log lg = { 0 };
	lb_exc exc[DIAG_MAX_EXC];
	char out_last[DIAG_EVIDENCE_LEN + 8], err_last[DIAG_EVIDENCE_LEN + 8];
	char ev[CE_EVIDENCE][DIAG_EVIDENCE_LEN + 64], msg[1400], name[128], where[DIAG_TEXT_LEN];
	size_t n, n_ev = 0, total = 0, first, last, end, start, other_at = NONE;
	bool have_out, have_err, order_certain = true;
	int stream = CE_UNKNOWN;

	/* A failed run's verdict is its own; an uncaught exception of the main program that
	 * exited 0 is a failure already (the gate's record). */
	if (!in || in->failure_class || !log || !len)
		return 0;
	if (dg_log_split(&lg, log, len) < 0)
		return -ENOMEM;
	lg.exp_dir = in->exp_dir;
	lg.gate = in->runtime_gate;
	last = dg_last_output_line(&lg);
	n = dg_find_exceptions(&lg, exc, DIAG_MAX_EXC);
	/* Only a whole traceback, header to exception line, at the start of a line and with
	 * nothing of the program's after it: a bare "ValueError: ..." may be any message. */
	if (last == NONE || !n || exc[n - 1].bare || exc[n - 1].line != last ||
	    dg_indent_of(lg.lines[last]) != 0)
		return 0;
	start = n - 1;
	while (start > 0 && exc[start - 1].link != LINK_NONE)
		start--;
	/* A thread's or a child's death is worker_exception's; a refusal the code caught is
	 * gate_refusals_caught's. */
	if (dg_worker_header_above(&lg, &exc[start]) ||
	    chain_refused_by_gate(&lg, exc, start, n, in->runtime_gate))
		return 0;

	/* Which stream printed it: the one whose last line is its exception's (or, on stderr,
	 * an ignored exception's block below it). When neither is, the stream went on past
	 * what run.log's end shows, and nothing is said. */
	have_out = clean_last(in->stdout_last, out_last, sizeof out_last);
	have_err = clean_last(in->stderr_last, err_last, sizeof err_last);
	for (end = lg.n; end > 0 && !lg.lines[end - 1][0];)
		end--;
	if (have_err && (same_line(lg.lines[last], err_last, strlen(in->stderr_last)) ||
			 (end - 1 > last && dg_in_ignored(&lg, end - 1) &&
			  same_line(lg.lines[end - 1], err_last, strlen(in->stderr_last)))))
		stream = CE_STDERR;
	else if (have_out && same_line(lg.lines[last], out_last, strlen(in->stdout_last)))
		stream = CE_STDOUT;
	else if (have_out || have_err)
		return 0;

	/* Where the other stream's last line stands. Each stream's order is exact in run.log,
	 * not their interleaving: labbox drains stdout before stderr when both wait. */
	if (stream != CE_UNKNOWN && (stream == CE_STDERR ? have_out : have_err)) {
		const char *o = stream == CE_STDERR ? out_last : err_last;
		size_t raw = strlen(stream == CE_STDERR ? in->stdout_last : in->stderr_last);

		for (size_t i = last; i-- > 0;)
			if (same_line(lg.lines[i], o, raw)) {
				other_at = i;
				break;
			}
		if (other_at != NONE && other_at > exc[start].header) {
			/* Read after the traceback's first line: stdout, drained first, was
			 * written after it, so the program went on past its traceback. stderr
			 * read there may have waited behind stdout: not known. */
			if (stream == CE_STDERR)
				return 0;
			order_certain = false;
		} else if (other_at != NONE && exc[start].header - other_at <= CE_NEAR) {
			order_certain = false;
		}
	}

	/* The run.log line numbers of the warnings: lg holds the buffer's last lines. */
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(log + i, '\n', len - i);

		total++;
		i = nl ? (size_t)(nl - log) + 1 : len;
	}
	first = total - lg.n + 1;

	size_t name_len = 0;
	const char *eline = lg.lines[last];
	dg_exception_line_of(eline, &name_len, true);
	snprintf(name, sizeof name, "%.*s", (int)(name_len < 120 ? name_len : 120), eline);
	where[0] = '\0';
	size_t code = dg_code_frame_of(&lg, &exc[n - 1]);
	if (code == NONE && exc[n - 1].frame != NONE)
		code = exc[n - 1].frame;
	if (code != NONE) {
		char file[DIAG_EVIDENCE_LEN], func[128];
		long lineno;

		if (dg_parse_frame(lg.lines[code], file, sizeof file, &lineno, func, sizeof func))
			snprintf(where, sizeof where, " (raised at %.200s line %ld%s%.100s)",
				 dg_experiment_relative(file, in->exp_dir), lineno,
				 func[0] ? ", in " : "", func);
	}
	snprintf(ev[n_ev++], sizeof ev[0], "run.log line %zu: %.*s", first + exc[start].header,
		 CE_TEXT, lg.lines[exc[start].header]);
	if (code != NONE)
		snprintf(ev[n_ev++], sizeof ev[0], "run.log line %zu: %.*s", first + code, CE_TEXT,
			 lg.lines[code] + dg_indent_of(lg.lines[code]));
	snprintf(ev[n_ev++], sizeof ev[0], "run.log line %zu: %.*s", first + last, CE_TEXT, eline);
	/* A forked child's uncaught exception prints the same traceback and leaves the main
	 * program's exit 0: the gate records the main program's alone, so which one printed it
	 * is not known when the code starts processes. */
	int m = snprintf(msg, sizeof msg,
			 "the program printed a traceback as its last output and exited 0: the "
			 "code caught %.*s%s and ended there%s, so what it printed before (its "
			 "metrics included) may be the incomplete results of a run that stopped "
			 "partway; let the exception propagate, or exit non-zero after printing "
			 "it, for labbox to report the failure",
			 CE_TEXT, eline, where,
			 children ? " (or a process it started died of it, and the main program "
				    "exited 0 after it)" : "");
	if (!order_certain && m > 0 && (size_t)m < sizeof msg) {
		const char *sname = stream == CE_STDERR ? "stdout" : "stderr";

		snprintf(ev[n_ev++], sizeof ev[0], "run.log line %zu: %.*s", first + other_at,
			 CE_TEXT, lg.lines[other_at]);
		snprintf(msg + m, sizeof msg - (size_t)m,
			 " (%s's last line, run.log line %zu, was read next to it: stdout and "
			 "stderr are read apart, and if that line came after the traceback, the "
			 "program went on past the exception)",
			 sname, first + other_at);
	}
	return emit(out, msg, ev, n_ev, name, order_certain);
}
