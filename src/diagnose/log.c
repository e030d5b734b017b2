/* The log a diagnosis reads: the output's last lines as a terminal showed them, the Python
 * tracebacks among them (which may be chained, wrapped or cut off), and the readers of a
 * line's words and frames that every part of the diagnosis uses. */
#include "../collect/text.h"
#include "failure_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void dg_log_free(lb_log *log)
{
	free(log->text);
	free(log->lines);
}

/* What a terminal would show of a line: the text after the last carriage return (progress
 * bars redraw that way), without ANSI escapes (coloured loggers), without the "| " margin of
 * exception groups, without trailing blanks. */
size_t dg_clean_line(const char *s, size_t len, char *out)
{
	size_t o = 0, start = 0;

	while (len > 0 && (s[len - 1] == '\r' || lb_text_blank(s[len - 1])))
		len--;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\r')
			start = i + 1;
	for (size_t i = start; i < len; i++) {
		if (s[i] == '\x1b' && i + 1 < len && s[i + 1] == '[') {
			i += 2;
			while (i < len && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
				i++;
			continue;
		}
		if (s[i] == '\x1b' && i + 1 < len && s[i + 1] == ']') {
			i += 2;
			while (i < len && s[i] != '\a' && !(s[i] == '\x1b' && i + 1 < len))
				i++;
			if (i < len && s[i] == '\x1b')
				i++;
			continue;
		}
		/* NUL and other control bytes are not text: torch writes a NUL before its
		 * traceback, and a line must still read "Traceback ..." from its first letter. */
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			continue;
		out[o++] = s[i];
	}
	/* "  | ValueError: x" inside an exception group reads like a top-level line. */
	for (;;) {
		size_t sp = 0;

		while (sp < o && out[sp] == ' ')
			sp++;
		if (sp + 1 < o && out[sp] == '|' && out[sp + 1] == ' ') {
			memmove(out, out + sp + 2, o - sp - 2);
			o -= sp + 2;
		} else {
			break;
		}
	}
	while (o > 0 && lb_text_blank(out[o - 1]))
		o--;
	out[o] = '\0';
	return o;
}

static bool is_header(const char *s);

/* The spans of dg_in_ignored, at most 8, the latest kept. */
static void find_ignored(lb_log *log)
{
	for (size_t i = 0; i < log->n; i++) {
		const char *s = log->lines[i];
		if (dg_indent_of(s) != 0 || !dg_starts_with(s, "Exception ignored in"))
			continue;
		size_t j = i + 1;
		if (j < log->n && is_header(log->lines[j]))
			j++;
		while (j < log->n && (log->lines[j][0] == '\0' || dg_indent_of(log->lines[j]) > 0))
			j++;
		size_t end = j < log->n && dg_exception_line_of(log->lines[j], NULL, true) ? j : j - 1;
		if (log->n_ign == 8) {
			memmove(log->ign_from, log->ign_from + 1, 7 * sizeof *log->ign_from);
			memmove(log->ign_to, log->ign_to + 1, 7 * sizeof *log->ign_to);
			log->n_ign--;
		}
		log->ign_from[log->n_ign] = i;
		log->ign_to[log->n_ign++] = end;
		i = end;
	}
}

bool dg_in_ignored(const lb_log *log, size_t i)
{
	for (size_t k = 0; k < log->n_ign; k++)
		if (i >= log->ign_from[k] && i <= log->ign_to[k])
			return true;
	return false;
}

int dg_log_split(lb_log *log, const char *tail, size_t len)
{
	size_t start = len, count = 0, n_lines = 0, o = 0;

	memset(log, 0, sizeof(*log));
	if (!tail || len == 0)
		return 0;
	/* Find where the last DIAG_MAX_LINES lines begin. */
	while (start > 0) {
		if (tail[start - 1] == '\n' && start != len && ++count >= DIAG_MAX_LINES)
			break;
		start--;
	}
	for (size_t i = start; i < len; i++)
		if (tail[i] == '\n')
			n_lines++;
	n_lines++;
	log->text = malloc(len - start + n_lines);
	log->lines = calloc(n_lines, sizeof(*log->lines));
	if (!log->text || !log->lines) {
		dg_log_free(log);
		return -ENOMEM;
	}
	for (size_t i = start; i <= len;) {
		const char *nl = memchr(tail + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (tail + i)) : len - i;

		if (!nl && l == 0)
			break;
		log->lines[log->n++] = log->text + o;
		o += dg_clean_line(tail + i, l, log->text + o) + 1;
		i += l + 1;
	}
	find_ignored(log);
	return 0;
}

size_t dg_indent_of(const char *s)
{
	size_t n = 0;

	while (lb_text_blank(s[n]))
		n++;
	return n;
}

bool dg_starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_header(const char *s)
{
	s += dg_indent_of(s);
	return dg_starts_with(s, "Traceback (most recent call last):") ||
	       dg_starts_with(s, "Exception Group Traceback (most recent call last):") ||
	       dg_starts_with(s, "Original Traceback (most recent call last):");
}

static bool is_original_header(const char *s)
{
	return dg_starts_with(s + dg_indent_of(s), "Original Traceback (most recent call last):");
}

bool dg_is_frame(const char *s)
{
	s += dg_indent_of(s);
	return dg_starts_with(s, "File \"");
}

/* A class name as a traceback ends with it: dotted identifiers, the last capitalised
 * (subprocess.TimeoutExpired, concurrent.futures.process.BrokenProcessPool, queue.Empty,
 * zipfile.BadZipFile), whatever its suffix. */
static bool class_name(const char *s, size_t n)
{
	size_t part = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '.') {
			if (i == part || i + 1 == n)
				return false;
			part = i + 1;
		} else if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9' && i > part))) {
			return false;
		}
	}
	while (part < n && s[part] == '_')
		part++;
	return part < n && s[part] >= 'A' && s[part] <= 'Z';
}

/* "pkg.mod.SomeError: message" or "SomeError" at the start of s. A line that ends a
 * traceback's frames (traced) is the exception's by where it stands, so any class name
 * does; elsewhere the name must look like an exception's (Error, Exception, ...). */
bool dg_exception_line_of(const char *s, size_t *name_len, bool traced)
{
	size_t n = 0;

	while (s[n] && s[n] != ':' && !lb_text_blank(s[n]))
		n++;
	if (!(s[n] == '\0' || (s[n] == ':' && (s[n + 1] == '\0' || s[n + 1] == ' '))))
		return false;
	if (!lb_text_is_exception_name(s, n) && !(traced && class_name(s, n)))
		return false;
	if (name_len)
		*name_len = n;
	return true;
}

bool dg_exception_line(const char *s, size_t *name_len)
{
	return dg_exception_line_of(s, name_len, false);
}

/* A pool's worker's exception, as the pool hands it to the parent: its traceback as text
 * between triple quotes under "multiprocessing.pool.RemoteTraceback:" (or concurrent.futures'
 * _RemoteTraceback), the cause of the same exception raised again in the parent. */
static bool remote_traceback(const lb_log *log, const lb_exc *e)
{
	size_t h = e->header;
	if (h < 2 || strcmp(log->lines[h - 1] + dg_indent_of(log->lines[h - 1]), "\"\"\"") != 0)
		return false;
	const char *name = log->lines[h - 2] + dg_indent_of(log->lines[h - 2]);
	const char *colon = strstr(name, "RemoteTraceback:");
	return colon && (colon == name || colon[-1] == '.' || colon[-1] == '_');
}

/* torch.multiprocessing.spawn's ProcessRaisedException: its message is the child's own
 * traceback as text, printed right below the parent's exception line after "-- Process N
 * terminated with the following error:". The child's exception is the root, as a DataLoader
 * worker's "Original Traceback" is. */
static bool spawn_wrapper(const lb_log *log, const lb_exc *e)
{
	const char *l = log->lines[e->line] + dg_indent_of(log->lines[e->line]);
	const char *name = strstr(l, "ProcessRaisedException");
	return name && (name == l || name[-1] == '.') && name[22] == ':';
}

static bool spawn_child_line(const char *s)
{
	s += dg_indent_of(s);
	return dg_starts_with(s, "-- Process ") && strstr(s, "terminated with the following error:");
}

/* Whether the traceback goes on at line k: its next line that is not empty is a frame's
 * (more indented than the header) or the exception's. Strictly: a frame's own first line,
 * or an exception line whose name looks like an exception's. */
static bool traceback_goes_on(const lb_log *log, size_t k, size_t ind, bool strict)
{
	for (; k < log->n; k++) {
		const char *l = log->lines[k];
		if (l[0] == '\0')
			continue;
		if (strict)
			return (dg_indent_of(l) > ind && dg_is_frame(l)) ||
			       dg_exception_line_of(l + dg_indent_of(l), NULL, false);
		return dg_indent_of(l) > ind || dg_exception_line_of(l + dg_indent_of(l), NULL, true);
	}
	return false;
}

/* Lines of the other stream that may stand inside one traceback: stdout and stderr are two
 * pipes, and run.log keeps each one's order, not the order between them, so a metric line
 * can come between a traceback's frames, or before its exception line. */
#define FOREIGN_IN_TRACEBACK 3

/* Every line of the tail above line i (the first, cut where the tail began, aside) is a
 * traceback's: a frame, its indented source line or caret marks, or Python's "[Previous line
 * repeated N more times]". The traceback is there, longer than the tail the diagnosis reads. */
static bool frames_fill_tail(const lb_log *log, size_t i)
{
	size_t frames = 0;

	for (size_t k = 1; k < i; k++) {
		const char *l = log->lines[k];
		if (dg_is_frame(l))
			frames++;
		else if (!dg_indent_of(l) && !dg_starts_with(l, "[Previous line repeated"))
			return false;
	}
	return frames >= 3;
}

size_t dg_find_exceptions(const lb_log *log, lb_exc *exc, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < log->n; i++) {
		size_t ind, j, frame = NONE, foreign = 0;

		if (!is_header(log->lines[i]) || dg_in_ignored(log, i))
			continue;
		ind = dg_indent_of(log->lines[i]);
		for (j = i + 1; j < log->n; j++) {
			const char *l = log->lines[j];

			if (l[0] == '\0')
				continue;
			if (dg_indent_of(l) <= ind) {
				/* Not the exception's line, and the traceback goes on after it: a line
				 * of the other stream, passed over. A capitalised name ("Accuracy:
				 * 0.5") could be a class of the code's own, so it is passed over only
				 * when a frame or an exception's line follows it. */
				const char *t = l + dg_indent_of(l);
				bool named = dg_exception_line_of(t, NULL, false);
				bool classy = !named && dg_exception_line_of(t, NULL, true);
				if (!named && !is_header(l) && foreign < FOREIGN_IN_TRACEBACK &&
				    traceback_goes_on(log, j + 1, ind, classy)) {
					foreign++;
					continue;
				}
				break;
			}
			if (dg_is_frame(l))
				frame = j;
		}
		if (j >= log->n ||
		    !dg_exception_line_of(log->lines[j] + dg_indent_of(log->lines[j]), NULL, true))
			continue;
		if (n == max) {
			/* Keep the most recent ones: the last exception decides. */
			memmove(exc, exc + 1, (max - 1) * sizeof(*exc));
			n--;
		}
		exc[n++] = (lb_exc){ .header = i, .line = j, .frame = frame };
		i = j;
	}
	/* Chains print "During handling of the above exception..." between two tracebacks. */
	for (size_t k = 0; k + 1 < n; k++) {
		for (size_t j = exc[k].line + 1; j < exc[k + 1].line; j++) {
			if (strstr(log->lines[j], "During handling of the above exception")) {
				exc[k].link = LINK_CONTEXT;
				break;
			}
			if (strstr(log->lines[j], "The above exception was the direct cause")) {
				exc[k].link = remote_traceback(log, &exc[k]) ? LINK_WRAPPED : LINK_CAUSE;
				break;
			}
		}
	}
	/* A wrapper's exception line, then the original traceback right below it: printed
	 * effect first, so put in a chain's order, the original first and wrapped. */
	for (size_t k = 0; k + 1 < n; k++) {
		bool spawned = spawn_wrapper(log, &exc[k]);
		if (!spawned && !is_original_header(log->lines[exc[k + 1].header]))
			continue;
		bool adjacent = true;
		for (size_t j = exc[k].line + 1; j < exc[k + 1].header; j++)
			if (log->lines[j][0] != '\0' && !(spawned && spawn_child_line(log->lines[j])))
				adjacent = false;
		if (!adjacent)
			continue;
		lb_exc orig = exc[k + 1];
		exc[k + 1] = exc[k];
		exc[k] = orig;
		exc[k + 1].link = orig.link;
		exc[k].link = LINK_WRAPPED;
		k++;
	}
	if (n > 0)
		return n;
	/* No header in the tail (cut off, or a SyntaxError, which has none): the last line that
	 * names an exception at the start of a line, with the frame printed above it. */
	for (size_t i = log->n; i-- > 0;) {
		if (dg_indent_of(log->lines[i]) == 0 && dg_exception_line(log->lines[i], NULL) &&
		    !dg_in_ignored(log, i)) {
			size_t frame = NONE;

			for (size_t j = i; j-- > 0 && i - j <= 6;) {
				if (dg_is_frame(log->lines[j])) {
					frame = j;
					break;
				}
			}
			exc[0] = (lb_exc){ .header = frame != NONE ? frame : i, .line = i, .frame = frame,
					   .bare = true, .cut = frame != NONE && frames_fill_tail(log, i) };
			return 1;
		}
	}
	return 0;
}

bool dg_has(const char *s, const char *needle)
{
	return strcasestr(s, needle) != NULL;
}

bool dg_has_any(const char *s, const char *const *needles)
{
	for (size_t i = 0; needles[i]; i++)
		if (dg_has(s, needles[i]))
			return true;
	return false;
}

bool dg_word_char(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* "nan" as a word of its own: not inside "nanmean" or "finance", and not inside quotes, where
 * it is a file name or a dictionary key ("data/nan.csv", KeyError: 'nan'). */
bool dg_has_nan_word(const char *s)
{
	char quote = 0;

	for (const char *p = s; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
		} else if (strncasecmp(p, "nan", 3) == 0 && (p == s || !dg_word_char(p[-1])) &&
			   !dg_word_char(p[3])) {
			return true;
		}
	}
	return false;
}

/* The last component of a dotted exception name, compared exactly. */
bool dg_name_is(const char *line, size_t name_len, const char *const *names)
{
	const char *last = line;

	for (size_t i = 0; i < name_len; i++)
		if (line[i] == '.')
			last = line + i + 1;
	for (size_t i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);

		if ((size_t)(line + name_len - last) == n && memcmp(last, names[i], n) == 0)
			return true;
	}
	return false;
}

/* Text between the first pair of quotes after "prefix", e.g. the module in
 * "No module named 'sklearn'". */
bool dg_quoted_after(const char *s, const char *prefix, char *out, size_t outlen)
{
	const char *p = prefix ? strcasestr(s, prefix) : s;
	const char *q, *e;
	size_t n;

	if (!p)
		return false;
	p += prefix ? strlen(prefix) : 0;
	q = strpbrk(p, "'\"");
	if (!q)
		return false;
	e = strchr(q + 1, *q);
	if (!e)
		return false;
	n = (size_t)(e - q - 1);
	if (n == 0 || n >= outlen)
		return false;
	memcpy(out, q + 1, n);
	out[n] = '\0';
	return true;
}

/* 'File "/exp/train.py", line 42, in main' -> its parts; false when it is not one. */
bool dg_parse_frame(const char *s, char *file, size_t filelen, long *lineno, char *func,
		    size_t funclen)
{
	const char *q, *p;
	size_t n;

	s += dg_indent_of(s);
	if (!dg_starts_with(s, "File \""))
		return false;
	s += 6;
	q = strchr(s, '"');
	if (!q || (size_t)(q - s) >= filelen)
		return false;
	n = (size_t)(q - s);
	memcpy(file, s, n);
	file[n] = '\0';
	p = strstr(q, ", line ");
	if (!p || !isdigit((unsigned char)p[7]))
		return false;
	*lineno = strtol(p + 7, NULL, 10);
	func[0] = '\0';
	p += 7;
	while (isdigit((unsigned char)*p))
		p++;
	/* a traceback's ", in f"; faulthandler's dump has " in f" */
	if (dg_starts_with(p, ", in "))
		snprintf(func, funclen, "%s", p + 5);
	else if (dg_starts_with(p, " in "))
		snprintf(func, funclen, "%s", p + 4);
	return true;
}

/* Whether a traceback's file is the experiment's own code: under the staged experiment, or
 * a relative path (the interpreter runs in exp/), or, for a log from elsewhere (a moved run
 * directory, another backend's staging), a path through an exp/ directory that is not an
 * installed package's. */
bool dg_in_experiment(const char *file, const char *exp_dir)
{
	size_t n = exp_dir ? strlen(exp_dir) : 0;

	while (n > 1 && exp_dir[n - 1] == '/')
		n--;
	if (n > 0 && strncmp(file, exp_dir, n) == 0 && file[n] == '/')
		return true;
	if (file[0] == '<')
		return false; /* <frozen importlib._bootstrap>, <string>, <stdin> */
	if (file[0] != '/') {
		/* Cython's frames name their .pyx as it was built ("_generator.pyx" in numpy's
		 * Generator.choice): a library's, whatever the path looks like. */
		const char *dot = strrchr(file, '.');
		return !dot || (strcmp(dot, ".pyx") != 0 && strcmp(dot, ".pxd") != 0 &&
				strcmp(dot, ".pxi") != 0);
	}
	return strstr(file, "/exp/") && !strstr(file, "site-packages") &&
	       !strstr(file, "dist-packages") && !strstr(file, "/lib/python");
}

/* The innermost frame of e's traceback whose file is the experiment's, or NONE. */
size_t dg_code_frame_of(const lb_log *log, const lb_exc *e)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	long lineno;

	for (size_t i = e->line; i-- > e->header;)
		if (dg_parse_frame(log->lines[i], file, sizeof(file), &lineno, func, sizeof(func)) &&
		    dg_in_experiment(file, log->exp_dir))
			return i;
	return NONE;
}

/* The experiment-relative name of a file under exp_dir (or an exp/ directory), else file. */
const char *dg_experiment_relative(const char *file, const char *exp_dir)
{
	size_t n = exp_dir ? strlen(exp_dir) : 0;
	const char *e;

	while (n > 1 && exp_dir[n - 1] == '/')
		n--;
	if (n > 0 && strncmp(file, exp_dir, n) == 0 && file[n] == '/')
		return file + n + 1;
	e = strstr(file, "/exp/");
	return e && file[0] == '/' ? e + 5 : file;
}

/* Not a block of an exception the interpreter ignored (an atexit handler's, a finalizer's):
 * what the program printed last before it. */
size_t dg_last_output_line(const lb_log *log)
{
	for (size_t i = log->n; i-- > 0;)
		if (log->lines[i][dg_indent_of(log->lines[i])] && !dg_in_ignored(log, i))
			return i;
	return NONE;
}
