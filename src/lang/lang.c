/* lang: R, Octave and Julia interpreters, asked inside the sandbox what they are. */
#include "labbox/lang.h"
#include "labbox/record.h"
#include "labbox/sandbox.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *lb_lang_name(lb_lang lang)
{
	switch (lang) {
	case LB_LANG_R:
		return "r";
	case LB_LANG_OCTAVE:
		return "octave";
	case LB_LANG_JULIA:
		return "julia";
	default:
		return "python";
	}
}

int lb_lang_parse(const char *name, lb_lang *out)
{
	static const struct {
		const char *name;
		lb_lang lang;
	} names[] = {{"python", LB_LANG_PYTHON}, {"r", LB_LANG_R},
		     {"octave", LB_LANG_OCTAVE}, {"matlab", LB_LANG_OCTAVE},
		     {"julia", LB_LANG_JULIA}};
	for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
		if (strcasecmp(name, names[i].name) == 0) {
			*out = names[i].lang;
			return 0;
		}
	return -EINVAL;
}

const char *lb_lang_default_entry(const char *dir)
{
	static const char *const names[] = {"main.py", "main.R",	"main.r",
					    "main.m",  "main.jl", "experiment.py"};
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; dfd >= 0 && i < sizeof names / sizeof *names; i++)
		if (faccessat(dfd, names[i], F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			return names[i];
	return "main.py";
}

lb_lang lb_lang_of_entry(const char *entry)
{
	const char *dot = entry ? strrchr(entry, '.') : NULL;
	if (!dot || strchr(dot, '/'))
		return LB_LANG_PYTHON;
	if (strcmp(dot, ".R") == 0 || strcmp(dot, ".r") == 0)
		return LB_LANG_R;
	if (strcmp(dot, ".m") == 0)
		return LB_LANG_OCTAVE;
	if (strcmp(dot, ".jl") == 0)
		return LB_LANG_JULIA;
	return LB_LANG_PYTHON;
}

const char *lb_lang_default_interpreter(lb_lang lang)
{
	switch (lang) {
	case LB_LANG_R:
		return "Rscript";
	case LB_LANG_OCTAVE:
		return "octave-cli";
	case LB_LANG_JULIA:
		return "julia";
	default:
		return "python3";
	}
}

const char *lb_lang_package(lb_lang lang)
{
	switch (lang) {
	case LB_LANG_R:
		return "r-base-core (and r-cran-jsonlite to write results.json)";
	case LB_LANG_OCTAVE:
		return "octave";
	case LB_LANG_JULIA:
		return "julia";
	default:
		return "python3";
	}
}

/* Each interpreter without start-up files: R's --vanilla skips .Rprofile, .Renviron and
 * the site files, Octave's --norc ~/.octaverc, ./.octaverc and the site file (which
 * OCTAVE_SITE_INITFILE may name). The experiment's own start-up files are code the check has
 * not read. */
static size_t base_argv(lb_lang lang, const char *exe, const char *argv[6])
{
	size_t n = 0;
	argv[n++] = exe;
	switch (lang) {
	case LB_LANG_R:
		argv[n++] = "--vanilla";
		break;
	case LB_LANG_OCTAVE:
		argv[n++] = "--norc";
		argv[n++] = "--no-history";
		argv[n++] = "--quiet";
		break;
	case LB_LANG_JULIA:
		argv[n++] = "--startup-file=no";
		argv[n++] = "--history-file=no";
		break;
	default:
		break;
	}
	return n;
}

char **lb_lang_argv(lb_lang lang, const lb_python_info *interp, const char *entry,
		    char *const *args, size_t nargs, char **store)
{
	const char *base[6];
	size_t nb = base_argv(lang, interp->executable, base);
	*store = NULL;
	if (lang == LB_LANG_OCTAVE && nargs == 0) {
		/* Octave saves every variable to ./octave-workspace when the budget's SIGTERM
		 * comes: the script is sourced after that is turned off. A script given arguments
		 * must be run as a file (--eval takes none), and keeps Octave's default. */
		/* A bare `pause` (and pause(Inf)) waits for a key press that never comes: labbox
		 * runs without a terminal, and a course's script ("Press enter to continue.") would
		 * sit out the whole budget. They return at once, as `pause off` makes them; a
		 * timed pause(n) still waits its n seconds (docs/decisions.md). */
		lb_buf code = {0};
		int r = lb_buf_puts(&code, "function varargout = pause(varargin), varargout = {}; "
					   "if nargin > 0 && (ischar(varargin{1}) || "
					   "(isnumeric(varargin{1}) && isscalar(varargin{1}) && "
					   "isfinite(varargin{1}))), [varargout{1:nargout}] = "
					   "builtin('pause', varargin{:}); end, end; "
					   "sigterm_dumps_octave_core(false); "
					   "sighup_dumps_octave_core(false); "
					   "crash_dumps_octave_core(false); source('");
		for (const char *c = entry; r == 0 && *c; c++)
			r = lb_buf_printf(&code, *c == '\'' ? "''" : "%c", *c);
		if (r == 0)
			r = lb_buf_puts(&code, "');");
		char **argv = r == 0 ? calloc(nb + 3, sizeof *argv) : NULL;
		if (!argv) {
			lb_buf_free(&code);
			return NULL;
		}
		for (size_t i = 0; i < nb; i++)
			argv[i] = (char *)base[i];
		argv[nb] = "--eval";
		argv[nb + 1] = *store = code.data;
		return argv;
	}
	char **argv = calloc(nb + 2 + nargs, sizeof *argv);
	if (!argv)
		return NULL;
	for (size_t i = 0; i < nb; i++)
		argv[i] = (char *)base[i];
	argv[nb] = (char *)entry;
	for (size_t i = 0; i < nargs; i++)
		argv[nb + 1 + i] = args[i];
	return argv;
}

/* What each interpreter prints of itself: "V\t<version>", "P\t<dir it needs>", and with
 * freeze, one "K\t<name>==<version>" line a package. */
static const char r_probe[] =
	"cat('V\\t', R.version$major, '.', R.version$minor, '\\n', sep = '');"
	"cat('P\\t', R.home(), '\\n', sep = '');"
	"for (l in .libPaths()) cat('P\\t', l, '\\n', sep = '');"
	"if (length(commandArgs(TRUE))) {"
	"  ip <- installed.packages()[, c('Package', 'Version'), drop = FALSE];"
	"  ip <- ip[order(ip[, 'Package']), , drop = FALSE];"
	"  for (i in seq_len(nrow(ip))) cat('K\\t', ip[i, 1], '==', ip[i, 2], '\\n', sep = '')"
	"}";
static const char octave_probe[] =
	"printf('V\\t%s\\n', version());"
	"printf('P\\t%s\\n', OCTAVE_HOME());";
/* Octave takes no arguments beside --eval: the listing is a script of its own. */
static const char octave_freeze[] =
	"printf('V\\t%s\\n', version());"
	"l = pkg('list');"
	"for i = 1:numel(l); printf('K\\t%s==%s\\n', l{i}.name, l{i}.version); end";
static const char julia_probe[] =
	"println(\"V\\t\", VERSION); println(\"P\\t\", Sys.BINDIR);"
	"if \"--freeze\" in ARGS; import Pkg;"
	"  for (u, p) in Pkg.dependencies(); println(\"K\\t\", p.name, \"==\", p.version); end;"
	"end";

static int ask(lb_lang lang, const lb_python_info *interp, const lb_sandbox_limits *lim,
	       bool freeze, lb_buf *out, char *err,
	       size_t errlen)
{
	const char *argv[12];
	size_t n = base_argv(lang, interp->executable, argv);
	switch (lang) {
	case LB_LANG_R:
		argv[n++] = "-e";
		argv[n++] = r_probe;
		break;
	case LB_LANG_OCTAVE:
		argv[n++] = "--eval";
		argv[n++] = freeze ? octave_freeze : octave_probe;
		break;
	case LB_LANG_JULIA:
		argv[n++] = "-e";
		argv[n++] = julia_probe;
		break;
	default:
		return -EINVAL;
	}
	if (freeze && lang == LB_LANG_R) {
		argv[n++] = "--args";
		argv[n++] = "--freeze";
	} else if (freeze && lang == LB_LANG_JULIA) {
		argv[n++] = "--freeze";
	}
	argv[n] = NULL;
	lb_sandbox *sb = NULL;
	int r = lb_sandbox_new(&sb);
	if (r < 0)
		return r;
	lb_sandbox_result res;
	/* The interpreter may be the experiment's own: it sees no other run's records. */
	r = lb_record_hide_known(sb);
	if (r == 0)
		r = lb_sandbox_expose_python(sb, interp->executable, interp->prefix,
					     interp->base_prefix);
	if (r == 0)
		r = lb_sandbox_set_argv(sb, (char *const *)argv);
	if (r == 0)
		r = lb_sandbox_set_budget(sb, 120);
	if (r == 0)
		r = lb_sandbox_apply_limits(sb, lim);
	if (r == 0)
		r = lb_sandbox_set_cgroup_accounting(sb, false);
	if (r == 0)
		r = lb_sandbox_capture(sb, 4 << 20, out, &res);
	if (r < 0)
		snprintf(err, errlen, "could not run '%s' in the sandbox: %s", interp->executable,
			 strerror(-r));
	else if (res.outcome == LB_SB_SETUP_FAILED)
		snprintf(err, errlen, "could not run '%s' in the sandbox: %s", interp->executable,
			 res.setup_error);
	else if (res.outcome != LB_SB_EXITED || res.exit_code != 0)
		snprintf(err, errlen, "'%s' is not a working %s interpreter (run in the sandbox, it "
				      "exited with status %d)",
			 interp->executable, lang == LB_LANG_R ? "R" : lang == LB_LANG_OCTAVE ? "Octave" : "Julia",
			 lb_sandbox_exit_status(&res));
	if (r == 0 && (res.outcome != LB_SB_EXITED || res.exit_code != 0))
		r = -ENOEXEC;
	lb_sandbox_free(sb);
	return r;
}

int lb_lang_probe(lb_lang lang, const char *interpreter, const lb_sandbox_limits *lim,
		  lb_python_info *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	const char *name = interpreter ? interpreter : lb_lang_default_interpreter(lang);
	LB_AUTOFREE char *path = NULL;
	if (strchr(name, '/')) {
		path = realpath(name, NULL);
		if (!path || access(path, X_OK) < 0) {
			snprintf(err, errlen, "interpreter '%s' not found or not executable", name);
			return -ENOENT;
		}
	} else if (lb_find_executable(name, &path) < 0) {
		snprintf(err, errlen, "%s not found on PATH: install the %s package (apt install %s), "
				      "or name the interpreter with --interpreter PATH",
			 name, lb_lang_name(lang), lb_lang_package(lang));
		return -ENOENT;
	}
	snprintf(out->executable, sizeof out->executable, "%s", path);
	snprintf(out->implementation, sizeof out->implementation, "%s",
		 lang == LB_LANG_R ? "R" : lang == LB_LANG_OCTAVE ? "Octave" : "Julia");
	lb_buf b = {0};
	int r = ask(lang, out, lim, false, &b, err, errlen);
	bool prefix = false;
	for (char *line = b.data; r == 0 && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "V\t", 2) == 0)
			snprintf(out->version, sizeof out->version, "%s", line + 2);
		else if (strncmp(line, "P\t", 2) == 0 && line[2] == '/') {
			/* Where it lives, made visible when it is in a hidden directory. */
			char *dst = prefix ? out->base_prefix : out->prefix;
			if (!prefix || !out->base_prefix[0])
				snprintf(dst, sizeof out->prefix, "%s", line + 2);
			prefix = true;
		}
		line = nl ? nl + 1 : NULL;
	}
	lb_buf_free(&b);
	if (r == 0 && !out->version[0]) {
		snprintf(err, errlen, "'%s' did not say its version", out->executable);
		r = -ENOEXEC;
	}
	return r;
}

int lb_lang_freeze(lb_lang lang, const lb_python_info *interp, const lb_sandbox_limits *lim,
		   lb_buf *out, char *err, size_t errlen)
{
	lb_buf b = {0};
	int r = ask(lang, interp, lim, true, &b, err, errlen);
	for (char *line = b.data; r == 0 && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "K\t", 2) == 0)
			r = lb_buf_printf(out, "%s\n", line + 2);
		line = nl ? nl + 1 : NULL;
	}
	lb_buf_free(&b);
	return r;
}
