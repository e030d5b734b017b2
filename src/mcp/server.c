/* mcp: the server loop. One thread polls stdin and the pipes of the children doing the tool
 * calls, so a long run never stops the server from answering pings, listing tools or taking
 * a cancellation. Each call is this binary run as a child in a process group of its own;
 * cancelling sends that group SIGINT, which labbox handles as Ctrl-C (the sandbox tree is
 * killed, the run recorded as interrupted), and SIGKILL if it is still there a minute later. */
#include "labbox/mcp.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a child may print as its one document; larger is an error, not a truncated doc. */
#define MCP_MAX_CHILD_OUTPUT ((size_t)64 << 20)
/* How long a cancelled call's labbox has to record the run before it is killed outright. */
#define MCP_CANCEL_KILL_S 60.0
/* Progress notifications: at most one a second, and one every five while nothing is said. */
#define MCP_PROGRESS_MIN_S 1.0
#define MCP_PROGRESS_IDLE_S 5.0
/* Bytes of a progress notification's message (the experiment's line shown within it). */
#define MCP_PROGRESS_MAX 320

static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
						"2024-11-05"};

typedef struct mcp_job {
	bool used;
	pid_t pid;
	int out_fd, err_fd; /* -1 once at end of file */
	lb_buf out;
	bool out_overflow;
	json_object *id;    /* the request's id (a reference of our own) */
	json_object *token; /* its progressToken, or NULL */
	lb_mcp_call call;
	bool cancelled;
	bool exited;
	int status;
	double started, last_progress, kill_at;
	double progress_value;
	bool new_output;
	char line[201];   /* the last complete line the child wrote on stderr */
	char partial[201]; /* the line being written */
	size_t partial_len;
	bool partial_cut; /* the line being written was longer than partial holds */
} mcp_job;

typedef struct mcp_server {
	int in_fd, out_fd, log_fd;
	const lb_mcp_limits *lim;
	bool initialized;
	bool out_broken;
	mcp_job jobs[LB_MCP_MAX_JOBS];
} mcp_server;

static void log_line(mcp_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(mcp_server *s, const char *fmt, ...)
{
	if (s->log_fd < 0)
		return;
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof text - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t len = strlen(text);
	text[len++] = '\n';
	lb_write_all(s->log_fd, text, len);
}

/* One message, one line: json-c escapes newlines inside strings, and bytes that are not
 * UTF-8 become U+FFFD so the line is JSON that any client, strict parsers included, reads.
 * Not the records' \udcXX (lb_json_escape_invalid_utf8): that is no character, and strict
 * parsers (serde_json, Python's str.encode) refuse it. Text from the experiment is shown
 * with its bytes as \xNN before it gets here (send_progress). */
static void send_msg(mcp_server *s, json_object *msg)
{
	if (!s->out_broken) {
		size_t len;
		const char *text = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
		lb_buf esc = {0};
		int r = text ? lb_utf8_replace_invalid(text, len, &esc) : -ENOMEM;
		if (r == 1) {
			text = esc.data;
			len = esc.len;
		}
		if (r < 0 || lb_write_all(s->out_fd, text, len) < 0 || lb_write_all(s->out_fd, "\n", 1) < 0)
			s->out_broken = true;
		lb_buf_free(&esc);
	}
	json_object_put(msg);
}

static json_object *envelope(json_object *id)
{
	json_object *m = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", id ? json_object_get(id) : NULL);
	return m;
}

static void send_result(mcp_server *s, json_object *id, json_object *result)
{
	json_object *m = envelope(id);
	json_object_object_add(m, "result", result);
	send_msg(s, m);
}

static void send_error(mcp_server *s, json_object *id, int code, const char *message)
{
	json_object *m = envelope(id);
	json_object *e = json_object_new_object();
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	json_object_object_add(m, "error", e);
	send_msg(s, m);
}

static const char *str_of(json_object *o, const char *key, const char *dflt)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return dflt;
}

/* labbox.error/1 as the CLI makes it, for what the server itself refuses. */
static json_object *error_doc(const char *tool, const char *status, int rc, const char *message,
			      const char *limit)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.error/1"));
	json_object_object_add(doc, "command", json_object_new_string(tool));
	json_object_object_add(doc, "status", json_object_new_string(status));
	json_object_object_add(doc, "exit_code", json_object_new_int(rc));
	json_object *err = json_object_new_object();
	json_object_object_add(err, "message", json_object_new_string(message));
	json_object *msgs = json_object_new_array();
	json_object_array_add(msgs, json_object_new_string(message));
	json_object_object_add(err, "messages", msgs);
	if (limit && *limit)
		json_object_object_add(err, "limit", json_object_new_string(limit));
	json_object_object_add(doc, "error", err);
	json_object_object_add(doc, "warnings", json_object_new_array());
	return doc;
}

/* The lines the CLI's summary gives below its metrics (results files, partial results, metric
 * issues, warnings), from the same code, one per line of the text. */
static void summarize_details(json_object *doc, lb_buf *b)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		return;
	lb_summary_details(m, doc, "");
	fclose(m);
	/* each line ends with a newline; in the text one comes before each line instead */
	if (text && len > 0 && text[len - 1] == '\n')
		text[len - 1] = '\0';
	/* its experiment strings were shown as they were written (lb_show_fprintf) */
	if (text && *text && lb_buf_puts(b, "\n") == 0)
		lb_buf_puts(b, text);
	free(text);
}

/* A short text for an agent: what happened, in a line or three. */
static void summarize(const char *tool, json_object *doc, lb_buf *b)
{
	const char *schema = str_of(doc, "schema", "");
	json_object *v;
	if (strcmp(schema, "labbox.error/1") == 0) {
		json_object *e = NULL;
		json_object_object_get_ex(doc, "error", &e);
		lb_show_printf(b, "%s: error: %s", tool, str_of(e, "message", "unknown error"));
		return;
	}
	if (strcmp(schema, "labbox.run/1") == 0 || strcmp(schema, "labbox.explain/1") == 0) {
		char ending[160];
		lb_summary_ending(doc, ending, sizeof(ending));
		lb_show_printf(b, "run %s %s (%s)", str_of(doc, "id", "?"), str_of(doc, "status", "?"),
			      ending);
		/* Said first: an agent must not take a record that came with an experiment for
		 * labbox's own (explain's record_sealed; run's own records are sealed). */
		if (json_object_object_get_ex(doc, "record_sealed", &v) && !json_object_get_boolean(v))
			lb_show_printf(b, "; NOT SEALED: not recorded by this user's labbox as it stands, "
				      "so its status and metrics are only what its files say");
		json_object *m, *vals;
		if (json_object_object_get_ex(doc, "metrics", &m) &&
		    json_object_object_get_ex(m, "values", &vals) && json_object_is_type(vals, json_type_object) &&
		    json_object_object_length(vals) > 0) {
			const char *sep = "; metrics: ";
			int shown = 0;
			json_object_object_foreach(vals, k, mv)
			{
				if (shown++ == 20)
					break;
				lb_show_printf(b, "%s%s=%s", sep, k,
					      json_object_to_json_string_ext(mv, JSON_C_TO_STRING_PLAIN));
				sep = ", ";
			}
		}
		json_object *conds;
		if (json_object_object_get_ex(doc, "metrics", &m) &&
		    json_object_object_get_ex(m, "conditions", &conds) &&
		    json_object_is_type(conds, json_type_object)) {
			int shown = 0;
			json_object_object_foreach(conds, cname, cvals)
			{
				if (shown++ == 10 || !json_object_is_type(cvals, json_type_object))
					break;
				lb_show_printf(b, "\ncondition %s:", cname);
				const char *sep = " ";
				json_object_object_foreach(cvals, k, mv)
				{
					lb_show_printf(b, "%s%s=%s", sep, k,
						      json_object_to_json_string_ext(mv, JSON_C_TO_STRING_PLAIN));
					sep = ", ";
				}
			}
		}
		summarize_details(doc, b);
		json_object *f;
		if (json_object_object_get_ex(doc, "failure", &f) && json_object_is_type(f, json_type_object)) {
			lb_show_printf(b, "\nfailure: %s: %s", str_of(f, "class", "?"), str_of(f, "summary", ""));
			const char *sug = str_of(f, "suggestion", NULL);
			if (sug)
				lb_show_printf(b, "\nsuggestion: %s", sug);
		}
		json_object *rep;
		if (json_object_object_get_ex(doc, "rerun", &rep) && json_object_is_type(rep, json_type_object))
			lb_show_printf(b, "\nrerun of %s: %s", str_of(rep, "of", "?"),
				      str_of(rep, "verdict", "?"));
		return;
	}
	if (strcmp(schema, "labbox.check/1") == 0) {
		json_object *c = NULL, *rej = NULL;
		json_object_object_get_ex(doc, "counts", &c);
		json_object_object_get_ex(doc, "rejected", &rej);
		int err = c && json_object_object_get_ex(c, "error", &v) ? json_object_get_int(v) : 0;
		int warn = c && json_object_object_get_ex(c, "warning", &v) ? json_object_get_int(v) : 0;
		lb_show_printf(b, "check: %s under policy %s: %d errors, %d warnings",
			      json_object_get_boolean(rej) ? "rejected" : "accepted",
			      str_of(doc, "policy", "?"), err, warn);
		json_object *fs;
		if (json_object_object_get_ex(doc, "findings", &fs) && json_object_is_type(fs, json_type_array))
			for (size_t i = 0; i < json_object_array_length(fs) && i < 10; i++) {
				json_object *fi = json_object_array_get_idx(fs, i), *ln;
				int line = json_object_object_get_ex(fi, "line", &ln) ? json_object_get_int(ln) : 0;
				lb_show_printf(b, "\n%s:%d: %s[%s]: %s", str_of(fi, "file", "?"), line,
					      str_of(fi, "severity", "?"), str_of(fi, "id", "?"),
					      str_of(fi, "message", ""));
			}
		return;
	}
	if (strcmp(schema, "labbox.runs/1") == 0) {
		json_object *runs = NULL;
		json_object_object_get_ex(doc, "runs", &runs);
		size_t n = json_object_is_type(runs, json_type_array) ? json_object_array_length(runs) : 0;
		lb_show_printf(b, "%zu runs", n);
		int64_t unsealed = json_object_object_get_ex(doc, "unsealed", &v) ? json_object_get_int64(v) : 0;
		/* A run still running (the agent's own, in flight) is not sealed yet, which is no
		 * record made elsewhere: said apart, as the others are. */
		int64_t running = json_object_object_get_ex(doc, "unsealed_running", &v) ? json_object_get_int64(v) : 0;
		int64_t unfinished = json_object_object_get_ex(doc, "unsealed_unfinished", &v) ? json_object_get_int64(v) : 0;
		int64_t unreadable = json_object_object_get_ex(doc, "unsealed_unreadable", &v) ? json_object_get_int64(v) : 0;
		if (running > 0)
			lb_show_printf(b, " (%lld still running: sealed when they end)", (long long)running);
		if (unfinished > 0)
			lb_show_printf(b, " (%lld never finished: their labbox ended before sealing the "
				      "record)", (long long)unfinished);
		if (unreadable > 0)
			lb_show_printf(b, " (%lld with a result.json that cannot be read: damaged)",
				      (long long)unreadable);
		unsealed -= running + unfinished + unreadable;
		if (unsealed > 0)
			lb_show_printf(b, " (%lld NOT SEALED: not recorded by this user's labbox as they "
				      "stand, so their status and metrics are only what their files say)",
				      (long long)unsealed);
		for (size_t i = 0; i < n && i < 10; i++) {
			json_object *r = json_object_array_get_idx(runs, i);
			bool sealed = !json_object_object_get_ex(r, "record_sealed", &v) ||
				      json_object_get_boolean(v);
			const char *why = str_of(r, "unsealed_reason", "");
			lb_show_printf(b, "\n%s %s %s%s", str_of(r, "id", "?"), str_of(r, "status", "?"),
				      str_of(r, "expdir", ""),
				      sealed				    ? ""
				      : strcmp(why, "running") == 0    ? " (running: not sealed yet)"
				      : strcmp(why, "unfinished") == 0 ? " NOT SEALED (never finished)"
				      : strcmp(why, "unreadable") == 0 ? " NOT SEALED (result.json damaged)"
								       : " NOT SEALED");
		}
		return;
	}
	if (strcmp(schema, "labbox.compare/1") == 0) {
		json_object *sealed = NULL;
		json_object_object_get_ex(doc, "record_sealed", &sealed);
		int64_t n = json_object_object_get_ex(doc, "compared", &v) ? json_object_get_int64(v) : 0;
		int64_t d = json_object_object_get_ex(doc, "differ", &v) ? json_object_get_int64(v) : 0;
		lb_show_printf(b, "a %s, b %s: %lld metrics compared, %lld differ", str_of(doc, "a", "?"),
			      str_of(doc, "b", "?"), (long long)n, (long long)d);
		const char *side[2] = {"a", "b"};
		for (int i = 0; i < 2; i++)
			if (json_object_object_get_ex(sealed, side[i], &v) && !json_object_get_boolean(v))
				lb_show_printf(b, "\n%s (%s) NOT SEALED: not recorded by this user's labbox "
					      "as it stands, so its metrics are only what its files say",
					      side[i], str_of(doc, side[i], "?"));
		return;
	}
	json_object *res;
	if (json_object_object_get_ex(doc, "result", &res) && json_object_is_type(res, json_type_object)) {
		lb_show_printf(b, "run %s %s", str_of(res, "id", "?"), str_of(res, "status", "?"));
		if (json_object_object_get_ex(doc, "record_sealed", &v) && !json_object_get_boolean(v))
			lb_show_printf(b, "; NOT SEALED: not recorded by this user's labbox as it stands, "
				      "so its status and metrics are only what its files say");
		return;
	}
	lb_show_printf(b, "%s: %s document", tool, *schema ? schema : "a");
}

static json_object *tool_result(const char *tool, json_object *doc, bool is_error)
{
	json_object *r = json_object_new_object();
	lb_buf sum = {0};
	summarize(tool, doc, &sum);
	json_object *content = json_object_new_array();
	json_object *t = json_object_new_object();
	json_object_object_add(t, "type", json_object_new_string("text"));
	json_object_object_add(t, "text", json_object_new_string(sum.data ? sum.data : tool));
	json_object_array_add(content, t);
	/* The document as text too: clients older than structured content (2025-06-18) read
	 * only content, as the specification recommends. */
	t = json_object_new_object();
	json_object_object_add(t, "type", json_object_new_string("text"));
	json_object_object_add(t, "text", json_object_new_string(
						  json_object_to_json_string_ext(
						  doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
	json_object_array_add(content, t);
	lb_buf_free(&sum);
	json_object_object_add(r, "content", content);
	json_object_object_add(r, "structuredContent", doc);
	json_object_object_add(r, "isError", json_object_new_boolean(is_error));
	return r;
}

static void send_tool_error(mcp_server *s, json_object *id, const char *tool, const char *message,
			    const char *limit)
{
	send_result(s, id, tool_result(tool, error_doc(tool, "usage_error", 2, message, limit), true));
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int spawn(mcp_job *j)
{
	int outp[2], errp[2];
	if (pipe2(outp, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(errp, O_CLOEXEC) < 0) {
		int e = -errno;
		close(outp[0]);
		close(outp[1]);
		return e;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		return e;
	}
	if (pid == 0) {
		setpgid(0, 0);
		/* The server gone is Ctrl-C for its runs: recorded as interrupted, tree killed. */
		prctl(PR_SET_PDEATHSIG, SIGINT);
		if (getppid() != parent)
			_exit(125);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0)
			_exit(125);
		execv(j->call.argv[0], j->call.argv);
		_exit(127);
	}
	/* Both sides set the group, so a cancel that comes at once still finds it. */
	setpgid(pid, pid);
	close(outp[1]);
	close(errp[1]);
	set_nonblock(outp[0]);
	set_nonblock(errp[0]);
	j->pid = pid;
	j->out_fd = outp[0];
	j->err_fd = errp[0];
	return 0;
}

static void job_free(mcp_job *j)
{
	if (j->out_fd >= 0)
		close(j->out_fd);
	if (j->err_fd >= 0)
		close(j->err_fd);
	lb_buf_free(&j->out);
	json_object_put(j->id);
	json_object_put(j->token);
	lb_mcp_call_free(&j->call);
	memset(j, 0, sizeof *j);
	j->out_fd = j->err_fd = -1;
}

static void send_progress(mcp_server *s, mcp_job *j, double now, const char *what)
{
	double elapsed = now - j->started;
	/* Progress must increase with every notification. */
	j->progress_value = elapsed > j->progress_value ? elapsed : j->progress_value + 0.001;
	/* At most MCP_PROGRESS_MAX bytes of message, cut between characters: the experiment's
	 * line is its own bytes, valid UTF-8 or not, and a progress bar of multi-byte
	 * characters is longer than the cut. */
	lb_buf msg = {0};
	if (what)
		lb_buf_puts(&msg, what);
	else
		lb_buf_printf(&msg, "%s: %.0fs elapsed", j->call.tool, elapsed);
	if (!what && j->line[0] && msg.len + 16 < MCP_PROGRESS_MAX) {
		lb_buf_puts(&msg, "; last output: ");
		lb_text_show(&msg, j->line, strlen(j->line), MCP_PROGRESS_MAX - msg.len);
	}
	json_object *m = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "method", json_object_new_string("notifications/progress"));
	json_object *p = json_object_new_object();
	json_object_object_add(p, "progressToken", json_object_get(j->token));
	json_object_object_add(p, "progress", json_object_new_double(j->progress_value));
	json_object_object_add(p, "message", json_object_new_string(msg.data ? msg.data : ""));
	json_object_object_add(m, "params", p);
	lb_buf_free(&msg);
	send_msg(s, m);
	j->last_progress = now;
	j->new_output = false;
}

/* Keep the last whole line of the child's stderr (the experiment's output) for progress. */
static void note_output(mcp_job *j, const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char ch = data[i];
		if (ch == '\n' || ch == '\r') {
			if (j->partial_len) {
				/* A line cut at the byte count keeps only whole characters. */
				size_t n = j->partial_cut ? lb_utf8_whole_len(j->partial, j->partial_len)
							  : j->partial_len;
				memcpy(j->line, j->partial, n);
				j->line[n] = '\0';
				j->partial_len = 0;
				j->new_output = true;
			}
			j->partial_cut = false;
		} else if (j->partial_len < sizeof j->partial - 1) {
			j->partial[j->partial_len++] = ch;
		} else {
			j->partial_cut = true;
		}
	}
}

static void tools_call(mcp_server *s, lb_mcp_msg *m)
{
	json_object *name = NULL, *args = NULL, *meta = NULL, *token = NULL;
	if (!m->params || !json_object_object_get_ex(m->params, "name", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		send_error(s, m->id, LB_MCP_INVALID_PARAMS, "tools/call needs a tool name");
		return;
	}
	if (json_object_object_get_ex(m->params, "arguments", &args) &&
	    !json_object_is_type(args, json_type_object) && !json_object_is_type(args, json_type_null)) {
		send_error(s, m->id, LB_MCP_INVALID_PARAMS, "tools/call arguments must be an object");
		return;
	}
	if (json_object_object_get_ex(m->params, "_meta", &meta) &&
	    json_object_is_type(meta, json_type_object) &&
	    json_object_object_get_ex(meta, "progressToken", &token) &&
	    !json_object_is_type(token, json_type_string) && !json_object_is_type(token, json_type_int))
		token = NULL;
	const char *tool = json_object_get_string(name);
	for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++)
		if (s->jobs[i].used && !s->jobs[i].cancelled &&
		    json_object_equal(s->jobs[i].id, m->id)) {
			send_error(s, m->id, LB_MCP_INVALID_REQUEST,
				   "a request with this id is still running");
			return;
		}
	mcp_job *j = NULL;
	for (size_t i = 0; i < LB_MCP_MAX_JOBS && !j; i++)
		if (!s->jobs[i].used)
			j = &s->jobs[i];
	char err[1024], limit[64];
	lb_mcp_call call;
	int r = lb_mcp_call_build(tool, args, s->lim, true, &call, err, sizeof err, limit, sizeof limit);
	if (r == LB_MCP_INVALID_PARAMS) {
		send_error(s, m->id, LB_MCP_INVALID_PARAMS, err);
		return;
	}
	if (r != 0) {
		send_tool_error(s, m->id, tool, err, limit);
		return;
	}
	if (strcmp(call.tool, "rerun") == 0) {
		/* rerun repeats the recorded configuration: it must be one this server allows. */
		char *show[] = {call.argv[0], "runs", "show", "--json", "--",
				call.argv[call.argc - 1], NULL};
		lb_buf out = {0};
		int status = 0;
		json_object *doc = NULL, *man = NULL, *cfg = NULL;
		if (lb_capture(show, MCP_MAX_CHILD_OUTPUT, false, &out, &status) == 0 && out.data)
			doc = json_tokener_parse(out.data);
		lb_buf_free(&out);
		if (doc && json_object_object_get_ex(doc, "manifest", &man) &&
		    json_object_object_get_ex(man, "config", &cfg)) {
			r = lb_mcp_config_within(cfg, s->lim, err, sizeof err, limit, sizeof limit);
		} else if (doc && strcmp(str_of(doc, "schema", ""), "labbox.error/1") == 0) {
			lb_mcp_call_free(&call);
			send_result(s, m->id, tool_result(tool, doc, true));
			return;
		} else {
			snprintf(err, sizeof err, "run has no readable manifest");
			limit[0] = '\0';
			r = 1;
		}
		json_object_put(doc);
		if (r != 0) {
			lb_mcp_call_free(&call);
			send_tool_error(s, m->id, tool, err, limit);
			return;
		}
	}
	if (!j) {
		lb_mcp_call_free(&call);
		send_tool_error(s, m->id, tool, "too many tool calls running at once; try again when one ends",
				"");
		return;
	}
	memset(j, 0, sizeof *j);
	j->call = call;
	j->out_fd = j->err_fd = -1;
	if ((r = spawn(j)) < 0) {
		snprintf(err, sizeof err, "cannot start labbox: %s", strerror(-r));
		lb_mcp_call_free(&j->call);
		send_tool_error(s, m->id, tool, err, "");
		return;
	}
	j->used = true;
	j->id = json_object_get(m->id);
	j->token = token && call.progress ? json_object_get(token) : NULL;
	j->started = j->last_progress = lb_time_monotonic();
	if (j->token)
		send_progress(s, j, j->started, "started");
}

static void cancel(mcp_server *s, lb_mcp_msg *m)
{
	json_object *rid;
	if (!m->params || !json_object_object_get_ex(m->params, "requestId", &rid))
		return;
	for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++) {
		mcp_job *j = &s->jobs[i];
		if (j->used && !j->cancelled && json_object_equal(j->id, rid)) {
			j->cancelled = true;
			j->kill_at = lb_time_monotonic() + MCP_CANCEL_KILL_S;
			if (!j->exited)
				kill(-j->pid, SIGINT);
			log_line(s, "labbox mcp: cancelled %s (pid %d)", j->call.tool, (int)j->pid);
		}
	}
}

static void initialize(mcp_server *s, lb_mcp_msg *m)
{
	json_object *pv = NULL;
	const char *want = m->params && json_object_object_get_ex(m->params, "protocolVersion", &pv) &&
					   json_object_is_type(pv, json_type_string)
				   ? json_object_get_string(pv)
				   : NULL;
	if (!want) {
		send_error(s, m->id, LB_MCP_INVALID_PARAMS, "initialize needs a protocolVersion");
		return;
	}
	/* The client's version when this server speaks it, else the newest this one knows: the
	 * client then decides whether it can go on. */
	const char *version = protocol_versions[0];
	for (size_t i = 0; i < sizeof protocol_versions / sizeof protocol_versions[0]; i++)
		if (strcmp(want, protocol_versions[i]) == 0)
			version = protocol_versions[i];
	json_object *r = json_object_new_object();
	json_object_object_add(r, "protocolVersion", json_object_new_string(version));
	json_object *caps = json_object_new_object(), *tools_cap = json_object_new_object();
	json_object_object_add(tools_cap, "listChanged", json_object_new_boolean(false));
	json_object_object_add(caps, "tools", tools_cap);
	json_object_object_add(r, "capabilities", caps);
	json_object *info = json_object_new_object();
	json_object_object_add(info, "name", json_object_new_string("labbox"));
	json_object_object_add(info, "version", json_object_new_string(LABBOX_VERSION));
	json_object_object_add(r, "serverInfo", info);
	json_object_object_add(r, "instructions",
			       json_object_new_string(
				       "labbox runs research experiments (a directory with main.py) in a "
				       "sandbox under a time budget and returns verified metrics. Use "
				       "check before run, run to execute (expdir or inline files), explain "
				       "on a failed run for its cause and a suggestion, runs_list / "
				       "runs_show / runs_compare for history, rerun to test "
				       "reproducibility. Limits are fixed by whoever started the server."));
	send_result(s, m->id, r);
	s->initialized = true;
}

static void handle_line(mcp_server *s, const char *line, size_t len)
{
	/* Blank lines between messages are not messages. */
	size_t i = 0;
	while (i < len && strchr(" \t\r", line[i]))
		i++;
	if (i == len)
		return;
	lb_mcp_msg m;
	lb_mcp_parse(line, len, &m);
	switch (m.kind) {
	case LB_MCP_MSG_INVALID:
		send_error(s, m.id, m.code, m.message);
		break;
	case LB_MCP_MSG_RESPONSE:
		break; /* the server sends no requests; a stray reply is not an error */
	case LB_MCP_MSG_NOTIFICATION:
		if (strcmp(m.method, "notifications/cancelled") == 0)
			cancel(s, &m);
		/* notifications/initialized and any other notification need no answer. */
		break;
	case LB_MCP_MSG_REQUEST:
		if (strcmp(m.method, "initialize") == 0)
			initialize(s, &m);
		else if (strcmp(m.method, "ping") == 0)
			send_result(s, m.id, json_object_new_object());
		else if (strcmp(m.method, "tools/list") == 0 || strcmp(m.method, "tools/call") == 0) {
			if (!s->initialized) {
				send_error(s, m.id, LB_MCP_INVALID_REQUEST,
					   "the server is not initialized: send initialize first");
			} else if (m.method[6] == 'l') {
				json_object *r = json_object_new_object();
				json_object_object_add(r, "tools", lb_mcp_tools_list());
				send_result(s, m.id, r);
			} else {
				tools_call(s, &m);
			}
		} else {
			char text[160];
			snprintf(text, sizeof text, "method not found: %.100s", m.method);
			send_error(s, m.id, LB_MCP_METHOD_NOT_FOUND, text);
		}
		break;
	}
	lb_mcp_msg_free(&m);
}

static void finish_job(mcp_server *s, mcp_job *j)
{
	if (j->cancelled) {
		/* The client has given up on this request: the specification says no reply. */
		log_line(s, "labbox mcp: cancelled %s ended", j->call.tool);
		job_free(j);
		return;
	}
	json_object *doc = NULL;
	if (!j->out_overflow && j->out.data) {
		json_tokener *tok = json_tokener_new();
		if (tok) {
			doc = json_tokener_parse_ex(tok, j->out.data, (int)j->out.len);
			if (json_tokener_get_error(tok) != json_tokener_success) {
				json_object_put(doc);
				doc = NULL;
			}
			json_tokener_free(tok);
		}
	}
	if (!json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		char text[200];
		if (j->out_overflow)
			snprintf(text, sizeof text, "labbox printed more than %zu bytes",
				 MCP_MAX_CHILD_OUTPUT);
		else if (WIFSIGNALED(j->status))
			snprintf(text, sizeof text, "labbox was killed by signal %d without a document",
				 WTERMSIG(j->status));
		else
			snprintf(text, sizeof text, "labbox exited with %d without a document%s%s",
				 WEXITSTATUS(j->status), j->line[0] ? ": " : "", j->line);
		doc = error_doc(j->call.tool, "infra_error", 125, text, "");
	}
	bool is_error = strcmp(str_of(doc, "schema", ""), "labbox.error/1") == 0;
	send_result(s, j->id, tool_result(j->call.tool, doc, is_error));
	job_free(j);
}

static void read_child(mcp_job *j, bool err)
{
	char chunk[65536];
	int *fd = err ? &j->err_fd : &j->out_fd;
	for (;;) {
		ssize_t n = read(*fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return;
		}
		if (err)
			note_output(j, chunk, (size_t)n);
		else if (j->out.len + (size_t)n > MCP_MAX_CHILD_OUTPUT || lb_buf_append(&j->out, chunk, (size_t)n) < 0)
			j->out_overflow = true;
	}
}

/* Pull whole lines out of the input buffer; *skipping while inside an overlong one. */
static void take_lines(mcp_server *s, lb_buf *in, bool *skipping)
{
	size_t start = 0;
	for (;;) {
		char *nl = in->len > start ? memchr(in->data + start, '\n', in->len - start) : NULL;
		if (!nl)
			break;
		size_t len = (size_t)(nl - (in->data + start));
		if (*skipping) {
			*skipping = false;
		} else {
			handle_line(s, in->data + start, len);
		}
		start += len + 1;
	}
	if (start) {
		memmove(in->data, in->data + start, in->len - start);
		in->len -= start;
		in->data[in->len] = '\0';
	}
	if (in->len > LB_MCP_MAX_LINE) {
		if (!*skipping) {
			char text[120];
			snprintf(text, sizeof text, "message longer than %zu bytes; skipped up to its end",
				 LB_MCP_MAX_LINE);
			send_error(s, NULL, LB_MCP_INVALID_REQUEST, text);
		}
		*skipping = true;
		in->len = 0;
		in->data[0] = '\0';
	}
}

static bool any_jobs(mcp_server *s)
{
	for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++)
		if (s->jobs[i].used)
			return true;
	return false;
}

int lb_mcp_serve(int in_fd, int out_fd, int log_fd, const lb_mcp_limits *lim)
{
	mcp_server *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->in_fd = in_fd;
	s->out_fd = out_fd;
	s->log_fd = log_fd;
	s->lim = lim;
	for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++)
		s->jobs[i].out_fd = s->jobs[i].err_fd = -1;
	lb_buf in = {0};
	bool skipping = false, in_open = true;
	int rc = 0;
	while (in_open || any_jobs(s)) {
		struct pollfd pfd[1 + 2 * LB_MCP_MAX_JOBS];
		mcp_job *owner[1 + 2 * LB_MCP_MAX_JOBS];
		nfds_t n = 0;
		int timeout = -1;
		if (in_open)
			pfd[n] = (struct pollfd){.fd = in_fd, .events = POLLIN}, owner[n++] = NULL;
		double now = lb_time_monotonic();
		for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++) {
			mcp_job *j = &s->jobs[i];
			if (!j->used)
				continue;
			if (j->out_fd >= 0)
				pfd[n] = (struct pollfd){.fd = j->out_fd, .events = POLLIN}, owner[n++] = j;
			if (j->err_fd >= 0)
				pfd[n] = (struct pollfd){.fd = j->err_fd, .events = POLLIN}, owner[n++] = j;
			int t = -1;
			if (j->out_fd < 0 && j->err_fd < 0)
				t = 20; /* pipes closed: the exit is a moment away */
			else if (j->token || j->cancelled)
				t = 1000;
			if (t >= 0 && (timeout < 0 || t < timeout))
				timeout = t;
		}
		(void)now;
		int pr = poll(pfd, n, timeout);
		if (pr < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		for (nfds_t k = 0; pr > 0 && k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if (!owner[k]) {
				char chunk[65536];
				ssize_t got = read(in_fd, chunk, sizeof chunk);
				if (got < 0 && (errno == EINTR || errno == EAGAIN))
					continue;
				if (got <= 0) {
					in_open = false;
					/* A last message without its newline is still a message. */
					if (in.len && !skipping)
						handle_line(s, in.data, in.len);
					in.len = 0;
					continue;
				}
				if (lb_buf_append(&in, chunk, (size_t)got) < 0) {
					rc = -ENOMEM;
					in_open = false;
					break;
				}
				take_lines(s, &in, &skipping);
			} else {
				read_child(owner[k], pfd[k].fd == owner[k]->err_fd);
			}
		}
		now = lb_time_monotonic();
		for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++) {
			mcp_job *j = &s->jobs[i];
			if (!j->used)
				continue;
			if (!in_open && !j->cancelled) {
				/* The client went away: its runs end as Ctrl-C would end them. */
				j->cancelled = true;
				j->kill_at = now + MCP_CANCEL_KILL_S;
				kill(-j->pid, SIGINT);
			}
			if (!j->exited) {
				int st;
				pid_t w = waitpid(j->pid, &st, WNOHANG);
				if (w == j->pid) {
					j->exited = true;
					j->status = st;
				}
			}
			if (j->exited && j->out_fd < 0 && j->err_fd < 0) {
				finish_job(s, j);
				continue;
			}
			if (j->cancelled && !j->exited && now >= j->kill_at)
				kill(-j->pid, SIGKILL);
			if (j->token && !j->cancelled && !j->exited &&
			    ((j->new_output && now - j->last_progress >= MCP_PROGRESS_MIN_S) ||
			     now - j->last_progress >= MCP_PROGRESS_IDLE_S))
				send_progress(s, j, now, NULL);
		}
	}
	for (size_t i = 0; i < LB_MCP_MAX_JOBS; i++)
		if (s->jobs[i].used) {
			kill(-s->jobs[i].pid, SIGKILL);
			waitpid(s->jobs[i].pid, NULL, 0);
			job_free(&s->jobs[i]);
		}
	lb_buf_free(&in);
	free(s);
	return rc;
}
