/* What R and Octave say when they stop, where Python would raise: their missing packages
 * and installers, Octave's frames and its missing-function hook, and the experiment's .m
 * files those frames name. */
#include "labbox/util.h"
#include "failure_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How an R package is installed for the interpreter beforehand: Debian's r-cran-NAME or
 * r-bioc-NAME (lower case, as Debian names them), or the installer the code used. */
static void r_package_suggestion(lb_verdict *v, const char *pkg, const char *repo)
{
	char deb[128];
	size_t k = 0;
	for (; pkg[k] && k < sizeof deb - 1; k++)
		deb[k] = (char)tolower((unsigned char)pkg[k]);
	deb[k] = '\0';
	if (strcmp(repo, "github") == 0)
		snprintf(v->suggestion, sizeof(v->suggestion),
			 "install it beforehand, outside the sandbox, into a library the interpreter "
			 "reads (R_LIBS_USER, or the site library), from the repository the code "
			 "names: at run time the sandbox has no network and R's libraries are "
			 "read-only; or name an interpreter that has it with --interpreter");
	else
		snprintf(v->suggestion, sizeof(v->suggestion),
			 "install it for the interpreter (Debian: apt install r-%s-%s; or "
			 "install.packages(\"%s\") into a library the interpreter reads, beforehand: "
			 "the sandbox has no network and R's libraries are read-only in it), or name "
			 "an interpreter that has it with --interpreter",
			 repo, deb[0] ? deb : "NAME", pkg[0] ? pkg : "NAME");
}

/* R code that installs what it lacks at run time ("if (!requireNamespace(\"x\"))
 * install.packages(\"x\")"): in the sandbox the library is read-only and there is no
 * network, so the installer's error is the missing package, named by its call. */
bool dg_r_install_error(lb_verdict *v, const char *line)
{
	static const struct {
		const char *call, *repo;
	} installers[] = {
		{"install.packages(", "cran"},	    {"BiocManager::install(", "bioc"},
		{"biocLite(", "bioc"},		    {"pak::pkg_install(", "cran"},
		{"pak::pak(", "cran"},		    {"remotes::install_github(", "github"},
		{"devtools::install_github(", "github"}, {"remotes::install_cran(", "cran"},
	};
	const char *at = NULL, *repo = NULL, *call = line + dg_indent_of(line) + 9;
	if (!dg_starts_with(line + dg_indent_of(line), "Error in "))
		return false;
	/* the call R names as the one that stopped */
	for (size_t i = 0; i < sizeof installers / sizeof installers[0] && !at; i++)
		if (dg_starts_with(call, installers[i].call)) {
			at = call;
			repo = installers[i].repo;
		}
	if (!at)
		return false;
	/* the first quoted name in the call: install.packages("x"), install.packages(c("x",
	 * "y")); a repository's last part for install_github("user/x") */
	char pkg[128] = "";
	const char *paren = strchr(at, '(');
	const char *close = paren ? strstr(paren, ") :") : NULL;
	if (paren && close && dg_quoted_after(paren, NULL, pkg, sizeof pkg) &&
	    strstr(paren, pkg) < close) {
		char *slash = strrchr(pkg, '/');
		if (slash)
			memmove(pkg, slash + 1, strlen(slash));
		pkg[strcspn(pkg, "@#")] = '\0';
		for (char *c = pkg; *c; c++)
			if (!(isalnum((unsigned char)*c) || *c == '.'))
				pkg[0] = '\0';
	} else {
		pkg[0] = '\0';
	}
	v->cls = "missing_package";
	snprintf(v->summary, sizeof(v->summary),
		 "R package '%s' is not installed, and the code's attempt to install it at run "
		 "time failed (the sandbox has no network and R's libraries are read-only in it): %s",
		 pkg[0] ? pkg : "?", line + dg_indent_of(line));
	r_package_suggestion(v, pkg, repo);
	return true;
}

/* R: "there is no package called ‘x’"; Octave: "package x is not installed". */
void dg_classify_missing_lang_package(lb_verdict *v, const char *line, bool r)
{
	char pkg[128] = "";
	const char *at = strstr(line, r ? "there is no package called " : "package ");
	if (at) {
		at += strlen(r ? "there is no package called " : "package ");
		/* R quotes with ‘ ’ (UTF-8) or ' ': skip to the name's first byte */
		while (*at && !(isalnum((unsigned char)*at) || *at == '.'))
			at++;
		size_t k = 0;
		while (at[k] && (isalnum((unsigned char)at[k]) || at[k] == '.' || at[k] == '_') &&
		       k < sizeof pkg - 1)
			k++;
		memcpy(pkg, at, k);
		pkg[k] = '\0';
	}
	v->cls = "missing_package";
	snprintf(v->summary, sizeof(v->summary), "%s package '%s' is not installed: %s",
		 r ? "R" : "Octave", pkg[0] ? pkg : "?", line);
	if (r)
		r_package_suggestion(v, pkg, "cran");
	else
		snprintf(v->suggestion, sizeof(v->suggestion),
			 "install it for Octave beforehand (Debian: apt install octave-%s, or pkg "
			 "install), and load it with pkg load %s", pkg[0] ? pkg : "NAME",
			 pkg[0] ? pkg : "NAME");
}

/* The line R or Octave stops on when no rule knows its message. */
bool dg_lang_error_line(const char *s)
{
	return dg_starts_with(s, "Error in ") || dg_starts_with(s, "Error: ") || dg_starts_with(s, "error: ");
}

/* Octave prints where it stopped below "error: called from", innermost first:
 * "    NAME at line N column M". */
bool dg_octave_frame_line(const char *s, long *lineno)
{
	const char *at;

	s += dg_indent_of(s);
	at = strstr(s, " at line ");
	if (!at || at == s)
		return false;
	for (const char *p = s; p < at; p++)
		if (!dg_word_char(*p) && *p != '>' && *p != '<' && *p != '.')
			return false;
	*lineno = strtol(at + 9, NULL, 10);
	return *lineno > 0;
}

/* Where NAME.m is in the experiment (root, then a few levels down): out gets its path
 * relative to root. */
static bool find_m_file(const char *root, const char *rel, const char *name, int depth,
			size_t *budget, char *out, size_t outlen)
{
	char dir[PATH_MAX], p[PATH_MAX];
	struct stat st;
	int w = snprintf(dir, sizeof(dir), "%s%s%s", root, rel[0] ? "/" : "", rel);
	if (w <= 0 || (size_t)w >= sizeof(dir))
		return false;
	w = snprintf(p, sizeof(p), "%s/%s.m", dir, name);
	if (w > 0 && (size_t)w < sizeof(p) && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(out, outlen, "%s%s%s.m", rel, rel[0] ? "/" : "", name);
		return true;
	}
	if (depth <= 0)
		return false;
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;
	while (d && !found && *budget > 0 && (de = readdir(d))) {
		(*budget)--;
		if (dg_foreign_dir(de->d_name))
			continue;
		w = snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (w <= 0 || (size_t)w >= sizeof(p) || lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		char sub[PATH_MAX];
		w = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (w > 0 && (size_t)w < sizeof(sub))
			found = find_m_file(root, sub, name, depth - 1, budget, out, outlen);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether an Octave source line defines function name ("function r = name(x)"). */
static bool defines_function(const char *l, const char *name)
{
	size_t n = strlen(name);
	l += dg_indent_of(l);
	if (strncmp(l, "function", 8) != 0 || !(l[8] == ' ' || l[8] == '\t' || l[8] == '['))
		return false;
	for (const char *p = strstr(l + 8, name); p; p = strstr(p + 1, name)) {
		char before = p[-1], after = p[n];
		if ((before == ' ' || before == '=' || before == '\t') &&
		    (after == '(' || after == ' ' || after == '\0' || after == ';' || after == '\n' ||
		     after == '\r'))
			return true;
	}
	return false;
}

/* The experiment's .m file that defines function name (a script's own functions, a
 * function file's subfunctions), a few levels down: out gets its path relative to root. */
static bool find_m_defining(const char *root, const char *rel, const char *name, int depth,
			    size_t *budget, char *out, size_t outlen)
{
	char dir[PATH_MAX], p[PATH_MAX];
	struct stat st;
	int w = snprintf(dir, sizeof(dir), "%s%s%s", root, rel[0] ? "/" : "", rel);
	if (w <= 0 || (size_t)w >= sizeof(dir))
		return false;
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;
	while (d && !found && *budget > 0 && (de = readdir(d))) {
		(*budget)--;
		if (dg_foreign_dir(de->d_name))
			continue;
		w = snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (w <= 0 || (size_t)w >= sizeof(p) || lstat(p, &st) != 0)
			continue;
		char sub[PATH_MAX];
		w = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (w <= 0 || (size_t)w >= sizeof(sub))
			continue;
		size_t l = strlen(de->d_name);
		if (S_ISDIR(st.st_mode) && depth > 0) {
			found = find_m_defining(root, sub, name, depth - 1, budget, out, outlen);
		} else if (S_ISREG(st.st_mode) && l > 2 && strcmp(de->d_name + l - 2, ".m") == 0 &&
			   st.st_size < (1 << 20)) {
			FILE *f = fopen(p, "r");
			char line[512];
			while (f && !found && fgets(line, sizeof line, f))
				found = defines_function(line, name);
			if (f)
				fclose(f);
			if (found)
				snprintf(out, outlen, "%s", sub);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* The experiment's .m file an Octave frame ("main>helper at line 3 column 1") is in: the
 * function or script before '>' (a subfunction's file is its parent's), or the staged .m
 * file that defines that function. */
bool dg_octave_own_file(const char *exp_dir, const char *frame, char *out, size_t outlen)
{
	char name[128];
	const char *s = frame + dg_indent_of(frame);
	size_t n = strcspn(s, "> ");
	size_t budget = 4000;
	if (!exp_dir || n == 0 || n >= sizeof name)
		return false;
	memcpy(name, s, n);
	name[n] = '\0';
	if (find_m_file(exp_dir, "", name, 3, &budget, out, outlen))
		return true;
	budget = 400;
	return find_m_defining(exp_dir, "", name, 3, &budget, out, outlen);
}

/* The experiment's own frame below "error: called from": Octave lists innermost first, and
 * an error raised inside Octave's own functions (strsplit, figure) names those first. The
 * first frame whose function is a .m file of the staged experiment; without the experiment
 * to look in, the innermost. */
size_t dg_octave_frame(const lb_log *log, size_t from)
{
	long lineno;
	char file[PATH_MAX];

	for (size_t i = from; i < log->n && i < from + 8; i++)
		if (strstr(log->lines[i], "error: called from")) {
			size_t first = NONE;
			for (size_t k = i + 1; k < log->n && dg_octave_frame_line(log->lines[k], &lineno);
			     k++) {
				if (first == NONE)
					first = k;
				if (!log->exp_dir ||
				    dg_octave_own_file(log->exp_dir, log->lines[k], file, sizeof file))
					return k;
			}
			return first;
		}
	return NONE;
}

/* Octave's missing-function hook --------------------------------------------------------- */

bool lb_octave_help_formatter(const char *argv)
{
	const char *last = argv ? strrchr(argv, ' ') : NULL;
	const char *base = last ? strrchr(last, '/') : NULL;
	const char *mi = argv ? strstr(argv, "makeinfo ") : NULL;

	/* __makeinfo__'s command: makeinfo ... --output=- "TMP/octave-help-XXXXXX" (mkstemp's
	 * six characters), nothing after the file. */
	return mi && (mi == argv || mi[-1] == '/' || mi[-1] == ' ') && mi < last &&
	       /* makeinfo's own option (written so that no suggestion seems to name it) */
	       strstr(mi, "-output=- ") && base && strncmp(base + 1, "octave-help-", 12) == 0 &&
	       strlen(base + 1) == 18;
}

int lb_octave_function_package(const char *text, size_t len, const char *fn, char *pkg,
			       size_t pkglen)
{
	static const char call[] = "check_package (fcn, \"";
	char quoted[136];
	int n = snprintf(quoted, sizeof quoted, "\"%s\"", fn ? fn : "");

	if (!fn || !*fn || n < 0 || (size_t)n >= sizeof quoted || !pkglen)
		return -ENOENT;
	for (const char *p = text, *end = text + len;
	     p < end && (p = memmem(p, (size_t)(end - p), quoted, (size_t)n)); p += n) {
		/* The function's case ends at its check_package, or, for the Matlab functions
		 * Octave lacks, at the next case without one. */
		const char *c = memmem(p, (size_t)(end - p), call, sizeof call - 1);
		const char *k = memmem(p, (size_t)(end - p), "\n    case ", 10);
		const char *o = memmem(p, (size_t)(end - p), "otherwise", 9);
		if (!c || (k && k < c) || (o && o < c))
			continue;
		c += sizeof call - 1;
		size_t w = 0;
		while (c + w < end && (isalnum((unsigned char)c[w]) || c[w] == '-' || c[w] == '_'))
			w++;
		if (!w || w >= pkglen || c + w >= end || c[w] != '"')
			return -ENOENT;
		memcpy(pkg, c, w);
		pkg[w] = '\0';
		return 0;
	}
	return -ENOENT;
}

/* The function Octave's "error: 'f' undefined" (7.x; "'f' undefined near line 1, column 5")
 * names, from the last such line; its index, or NONE. */
static size_t octave_undefined(const lb_log *log, char *fn, size_t fnlen)
{
	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		if (strncmp(s, "error: '", 8) == 0 && strstr(s, "' undefined") &&
		    dg_quoted_after(s, "error:", fn, fnlen))
			return i;
	}
	return NONE;
}

static void octave_package_verdict(lb_verdict *v, const char *fn, const char *pkg, int state,
				   const char *line)
{
	/* state: 1 not installed, 2 installed but not loaded, 0 not known (the sentence that
	 * says which was lost with its formatter) */
	v->cls = "missing_package";
	snprintf(v->summary, sizeof v->summary, "Octave package '%s' is %s: '%s' belongs to it: %.400s",
		 pkg,
		 state == 1   ? "not installed"
		 : state == 2 ? "installed but not loaded"
			      : "not loaded (or not installed)",
		 fn, line);
	if (state == 2)
		snprintf(v->suggestion, sizeof v->suggestion,
			 "load it in the script before the call, with pkg load %s (Octave loads no "
			 "Octave Forge package by itself)",
			 pkg);
	else if (state == 1)
		snprintf(v->suggestion, sizeof v->suggestion,
			 "install it for Octave beforehand (Debian: apt install octave-%s, or pkg "
			 "install), and load it with pkg load %s before the call",
			 pkg, pkg);
	else
		snprintf(v->suggestion, sizeof v->suggestion,
			 "load it with pkg load %s before the call, and install it beforehand if "
			 "pkg list does not show it (Debian: apt install octave-%s)",
			 pkg, pkg);
}

/* "The 'normpdf' function belongs to the statistics package from Octave Forge which seems to
 * not be installed in your system." (or "which you have installed but not loaded.  To load
 * the package, run 'pkg load statistics' from the Octave prompt."): Octave's
 * __unimplemented__ names the cause outside the code, on lines makeinfo wrapped. When the
 * exec guard killed makeinfo that sentence is not there, and the interpreter's own
 * __unimplemented__.m says which package the undefined function is of. A package that is
 * loaded and lacks the function is the code's (the generic error line). */
bool dg_octave_missing_function(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	char fn[128] = "", pkg[64] = "";
	size_t err = octave_undefined(log, fn, sizeof fn);

	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		const char *at = strstr(s, "function belongs to the ");
		char para[1024];
		size_t o = 0;

		if (!at)
			continue;
		for (size_t k = i; k < log->n && k < i + 6 && log->lines[k][0]; k++) {
			int w = snprintf(para + o, sizeof para - o, "%s%s", o ? " " : "",
					 log->lines[k] + dg_indent_of(log->lines[k]));
			if (w < 0 || (size_t)w >= sizeof para - o)
				break;
			o += (size_t)w;
		}
		int state = dg_has(para, "not be installed")	       ? 1
			    : dg_has(para, "installed but not loaded") ? 2
								     : -1;
		at = strstr(para, "function belongs to the ") + strlen("function belongs to the ");
		size_t w = strcspn(at, " ");
		if (state < 0 || !w || w >= sizeof pkg || !dg_quoted_after(para, "The", fn, sizeof fn))
			return false;
		memcpy(pkg, at, w);
		pkg[w] = '\0';
		octave_package_verdict(v, fn, pkg, state, para);
		if (err != NONE && err < i)
			dg_add_evidence(v, err);
		dg_add_evidence(v, i);
		dg_set_confidence(v, CONF_HIGH, "Octave's missing-function message names the package "
					     "and says whether it is installed");
		if ((v->code_frame = dg_octave_frame(log, i)) != NONE)
			dg_add_evidence(v, v->code_frame);
		return true;
	}
	if (!in->octave_help_killed || !in->octave_unimplemented || err == NONE)
		return false;
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	if (lb_read_file_at(AT_FDCWD, in->octave_unimplemented, 1 << 20, &text, &len) < 0 ||
	    lb_octave_function_package(text, len, fn, pkg, sizeof pkg) < 0)
		return false;
	octave_package_verdict(v, fn, pkg, 0, log->lines[err] + dg_indent_of(log->lines[err]));
	dg_add_evidence(v, err);
	dg_set_confidence(v, CONF_MEDIUM,
			  "Octave's list of Forge packages' functions (m/help/__unimplemented__.m) "
			  "names the package; its message, which says whether it is installed, was "
			  "lost with the help formatter the exec guard killed");
	if ((v->code_frame = dg_octave_frame(log, err)) != NONE)
		dg_add_evidence(v, v->code_frame);
	return true;
}
