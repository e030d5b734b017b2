/* check: R and Octave experiments, read with the language's own parser inside the sandbox.
 *
 * R's parse() and its parse data give every function call, argument name and string of a
 * file; Octave's parser (__parse_file__) says whether a file parses, and a tokenizer here
 * (comments and strings told apart, transpose from quote) finds the names. The gate is the
 * seed's in each language's terms, under the same rule ids as Python's: process creation
 * (LB101), code from strings (LB103), the network (LB105), native code (LB106), writes
 * outside the outputs (LB110), a banned function named by a string (LB111); seeding (LB302)
 * and the metric lines (LB404) as warnings. */
#include "check_internal.h"
#include "labbox/lang.h"
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LANG_MAX_FILES 2000
#define RETURN_IF_ERR(x)             \
	do {                         \
		int rr_ = (x);       \
		if (rr_ < 0)         \
			return rr_;  \
	} while (0)
#define LANG_MAX_FILE (8u << 20)

typedef struct lang_file {
	char *rel;  /* as findings name it */
	char *copy; /* the copy the sandboxed parser reads, inside the sandbox */
	char *src;  /* the content (Octave's tokenizer reads it here) */
	size_t len;
	bool parsed;
} lang_file;

typedef struct lang_files {
	lang_file *v;
	size_t n;
} lang_files;

static void lang_files_free(lang_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].copy);
		free(f->v[i].rel);
		free(f->v[i].src);
	}
	free(f->v);
}

static bool is_lang_file(lb_lang lang, const char *name)
{
	size_t n = strlen(name);
	if (lang == LB_LANG_R)
		return (n > 2 && (strcmp(name + n - 2, ".R") == 0 || strcmp(name + n - 2, ".r") == 0)) ||
		       strcmp(name, ".Rprofile") == 0;
	return n > 2 && strcmp(name + n - 2, ".m") == 0;
}

static int collect(lang_files *f, lb_lang lang, const char *root, const char *prefix, int depth)
{
	if (depth > 32)
		return 0;
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s%s%s", root, prefix[0] ? "/" : "", prefix);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		const char *name = e->d_name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, ".git") ||
		    !strcmp(name, ".labbox") || !strcmp(name, "renv") || !strcmp(name, "packrat"))
			continue;
		char rel[PATH_MAX];
		if (snprintf(rel, sizeof rel, "%s%s%s", prefix, prefix[0] ? "/" : "", name) >=
		    (int)sizeof rel)
			continue;
		struct stat st;
		char full[PATH_MAX + 1];
		snprintf(full, sizeof full, "%s/%s", root, rel);
		if (lstat(full, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			r = collect(f, lang, root, rel, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !is_lang_file(lang, name))
			continue;
		if (f->n >= LANG_MAX_FILES)
			break;
		lang_file *nv = realloc(f->v, (f->n + 1) * sizeof *nv);
		if (!nv) {
			r = -ENOMEM;
			break;
		}
		f->v = nv;
		lang_file *lf = &f->v[f->n];
		memset(lf, 0, sizeof *lf);
		if (!(lf->rel = strdup(rel))) {
			r = -ENOMEM;
			break;
		}
		f->n++;
		r = lb_read_file_at(AT_FDCWD, full, LANG_MAX_FILE, &lf->src, &lf->len);
	}
	closedir(d);
	return r;
}

/* The sandboxed interpreter runs as another user and sees neither home directories nor the
 * host's /tmp. It parses copies handed to it in memory (a read-only tmpfs of the sandbox's own
 * at LANG_COPY_DIR), never written on the host: a copy in a host directory would be readable by
 * whatever user the sandbox's uid can be read by (all of them, as root: uid 65534), and stay
 * for good when labbox is killed. */
#define LANG_COPY_DIR "/run/labbox-check"
/* One sandbox's worth of copies: they count towards its memory limit. */
#define LANG_BATCH_BYTES (32u << 20)
#define LANG_BATCH_FILES 512u

static int name_copies(lang_files *f, lb_lang lang)
{
	for (size_t i = 0; i < f->n; i++)
		/* Octave wants a file name that is an identifier: f0.m, f1.m ... */
		if (asprintf(&f->v[i].copy, "%s/f%zu.%s", LANG_COPY_DIR, i,
			     lang == LB_LANG_R ? "R" : "m") < 0) {
			f->v[i].copy = NULL;
			return -ENOMEM;
		}
	return 0;
}

static const char r_parse_script[] =
	"for (f in commandArgs(TRUE)) {"
	"  res <- tryCatch(list(ok = TRUE, p = parse(f, keep.source = TRUE)),"
	"    error = function(e) list(ok = FALSE, msg = conditionMessage(e)));"
	"  if (!res$ok) { cat('E\\t', f, '\\t', gsub('[\\t\\r\\n]+', ' ', res$msg), '\\n', sep = ''); next };"
	"  cat('O\\t', f, '\\n', sep = '');"
	"  d <- getParseData(res$p);"
	"  if (is.null(d)) next;"
	"  d <- d[d$terminal & d$token %in% c('SYMBOL_FUNCTION_CALL', 'SYMBOL_SUB', 'STR_CONST',"
	"    'SYMBOL', 'SYMBOL_PACKAGE'), ];"
	"  for (i in seq_len(nrow(d))) cat('T\\t', f, '\\t', d$line1[i], '\\t', d$col1[i], '\\t',"
	"    d$token[i], '\\t', gsub('[\\t\\r\\n]', ' ', d$text[i]), '\\n', sep = '')"
	"}";

/* Octave takes no arguments beside --eval: the files (labbox's own copies, plain names in a
 * directory of its own) are written into the code. */
static const char octave_parse_loop[] =
	"for i = 1:numel(lb_files); f = lb_files{i};"
	"  try; __parse_file__(f); printf('O\\t%s\\n', f);"
	"  catch e; printf('E\\t%s\\t%s\\n', f, regexprep(e.message, '\\s+', ' ')); end;"
	"end";

/* The parser on f->v[from..to), its output appended to out. */
static int parse_batch(lb_lang lang, const lb_python_info *interp, const lb_sandbox_limits *lim,
		       lang_files *f, size_t from, size_t to, lb_buf *out, char *err, size_t errlen)
{
	const char **argv = calloc(to - from + 10, sizeof *argv);
	lb_buf code = {0};
	if (!argv)
		return -ENOMEM;
	size_t n = 0;
	argv[n++] = interp->executable;
	if (lang == LB_LANG_R) {
		argv[n++] = "--vanilla";
		argv[n++] = "-e";
		argv[n++] = r_parse_script;
		argv[n++] = "--args";
	} else {
		argv[n++] = "--no-init-file";
		argv[n++] = "--no-history";
		argv[n++] = "--quiet";
		int cr = lb_buf_puts(&code, "lb_files = {");
		for (size_t i = from; cr == 0 && i < to; i++)
			cr = lb_buf_printf(&code, "%s'%s'", i > from ? ", " : "", f->v[i].copy);
		if (cr == 0)
			cr = lb_buf_printf(&code, "}; %s", octave_parse_loop);
		if (cr < 0) {
			free(argv);
			lb_buf_free(&code);
			return cr;
		}
		argv[n++] = "--eval";
		argv[n++] = code.data;
	}
	for (size_t i = from; lang == LB_LANG_R && i < to; i++)
		argv[n++] = f->v[i].copy;
	lb_sandbox *sb = NULL;
	int r = lb_sandbox_new(&sb);
	lb_sandbox_result res;
	/* The interpreter may be the experiment's own: it sees no other run's records. */
	if (r == 0)
		r = lb_record_hide_known(sb);
	for (size_t i = from; r == 0 && i < to; i++)
		r = lb_sandbox_add_file(sb, LANG_COPY_DIR, strrchr(f->v[i].copy, '/') + 1,
					f->v[i].src, f->v[i].len);
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
		r = lb_sandbox_capture(sb, 64u << 20, out, &res);
	if (r < 0)
		snprintf(err, errlen, "running %s's parser in the sandbox: %s", interp->executable,
			 strerror(-r));
	else if (res.outcome != LB_SB_EXITED) {
		snprintf(err, errlen, "%s's parser in the sandbox did not finish: %s",
			 interp->executable,
			 res.outcome == LB_SB_SETUP_FAILED ? res.setup_error : "killed or out of time");
		r = -EIO;
	}
	lb_sandbox_free(sb);
	free(argv);
	lb_buf_free(&code);
	return r;
}

static int run_parser(lb_lang lang, const lb_python_info *interp, const lb_sandbox_limits *lim,
		      lang_files *f, lb_buf *out, char *err, size_t errlen)
{
	for (size_t from = 0; from < f->n;) {
		size_t to = from + 1, bytes = f->v[from].len;
		while (to < f->n && to - from < LANG_BATCH_FILES &&
		       bytes + f->v[to].len <= LANG_BATCH_BYTES)
			bytes += f->v[to++].len;
		int r = parse_batch(lang, interp, lim, f, from, to, out, err, errlen);
		if (r < 0)
			return r;
		from = to;
	}
	return 0;
}

/* ---- rules ---------------------------------------------------------------------------------- */

typedef struct lang_rule {
	const char *name;
	ck_rule rule;
	const char *what;
} lang_rule;

static const lang_rule r_calls[] = {
	{"system", R_PROCESS, "runs a shell command"},
	{"system2", R_PROCESS, "runs a program"},
	{"shell", R_PROCESS, "runs a shell command"},
	{"shell.exec", R_PROCESS, "opens a file with another program"},
	{"pipe", R_PROCESS, "runs a command through a pipe"},
	{"processx", R_PROCESS, "runs a program"},
	{"download.file", R_NETWORK, "downloads from the network"},
	{"url", R_NETWORK, "opens a network connection"},
	{"socketConnection", R_NETWORK, "opens a socket"},
	{"make.socket", R_NETWORK, "opens a socket"},
	{"socketAccept", R_NETWORK, "accepts network connections"},
	{"serverSocket", R_NETWORK, "listens on the network"},
	{"curl", R_NETWORK, "opens a network connection"},
	{"curl_download", R_NETWORK, "downloads from the network"},
	{"GET", R_NETWORK, "makes an HTTP request"},
	{"POST", R_NETWORK, "makes an HTTP request"},
	{"str2lang", R_DYNCODE, "turns a string into code"},
	{"str2expression", R_DYNCODE, "turns a string into code"},
	{"dyn.load", R_NATIVE, "loads native code"},
	{"library.dynam", R_NATIVE, "loads native code"},
	{"Rcpp::sourceCpp", R_NATIVE, "compiles native code"},
	{"sourceCpp", R_NATIVE, "compiles native code"},
	{"cppFunction", R_NATIVE, "compiles native code"},
	{NULL, R_COUNT, NULL},
};

static const lang_rule octave_calls[] = {
	{"system", R_PROCESS, "runs a shell command"},
	{"unix", R_PROCESS, "runs a shell command"},
	{"dos", R_PROCESS, "runs a shell command"},
	{"shell_cmd", R_PROCESS, "runs a shell command"},
	{"popen", R_PROCESS, "runs a command through a pipe"},
	{"popen2", R_PROCESS, "runs a command through pipes"},
	{"exec", R_PROCESS, "replaces the interpreter with a program"},
	{"fork", R_PROCESS, "creates a process"},
	{"kill", R_PROCESS, "signals a process"},
	{"eval", R_DYNCODE, "runs a string as code"},
	{"evalin", R_DYNCODE, "runs a string as code"},
	{"evalc", R_DYNCODE, "runs a string as code"},
	{"str2func", R_DYNCODE, "turns a string into code"},
	{"inline", R_DYNCODE, "turns a string into code"},
	{"urlread", R_NETWORK, "reads from the network"},
	{"urlwrite", R_NETWORK, "downloads from the network"},
	{"webread", R_NETWORK, "reads from the network"},
	{"webwrite", R_NETWORK, "writes to the network"},
	{"websave", R_NETWORK, "downloads from the network"},
	{"web", R_NETWORK, "opens a web page"},
	{"ftp", R_NETWORK, "opens an FTP connection"},
	{"socket", R_NETWORK, "opens a socket"},
	{"tcpclient", R_NETWORK, "opens a network connection"},
	{"mex", R_NATIVE, "compiles native code"},
	{"loadlibrary", R_NATIVE, "loads native code"},
	{"calllib", R_NATIVE, "calls native code"},
	{"javaMethod", R_NATIVE, "calls Java"},
	{"javaObject", R_NATIVE, "calls Java"},
	{NULL, R_COUNT, NULL},
};

/* Functions that write the file their arguments name: an absolute path outside /tmp there is
 * a write outside the outputs (the sandbox refuses it too; the check says so first). */
static const char *const r_writers[] = {"writeLines", "write.csv", "write.table", "write",
					"saveRDS", "save", "sink", "file", "cat", "file.create",
					"file.remove", "unlink", "file.rename", "file.copy",
					"dir.create", "writeBin", "write.csv2", "png", "pdf", NULL};
static const char *const octave_writers[] = {"fopen", "save", "dlmwrite", "csvwrite",
					     "print", "saveas", "imwrite", "mkdir", "delete",
					     "unlink", "rename", "copyfile", "movefile", NULL};
/* Random draws without a seed: R's and Octave's generators. */
static const char *const r_random[] = {"runif", "rnorm", "sample", "rbinom", "rpois",
				       "rexp", "rgamma", "rbeta", "rt", "rchisq", "sample.int",
				       "rmultinom", "rlogis", "rweibull", NULL};
static const char *const octave_random[] = {"rand", "randn", "randi", "randperm", "rande",
					    "randg", "randp", NULL};

static const lang_rule *find_rule(const lang_rule *t, const char *name)
{
	for (size_t i = 0; t[i].name; i++)
		if (t[i].what && strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

static bool in_list(const char *const *l, const char *name)
{
	for (size_t i = 0; l[i]; i++)
		if (strcmp(l[i], name) == 0)
			return true;
	return false;
}

static int add(const lb_check_config *cfg, lb_check_report *rep, const char *file,
	       unsigned line, unsigned col, ck_rule rule, const char *msg, const char *name)
{
	int sev = cfg->policy == LB_CHECK_STRICT ? ck_rules[rule].strict : ck_rules[rule].standard;
	if (sev == CK_OFF)
		return 0;
	return ck_report_add(rep, file, line, col, rule, (lb_check_severity)sev, msg, name);
}

/* A string a script prints as `name: value`, as the collector reads it. */
static bool metric_literal(const char *s, size_t n)
{
	size_t i = 0;
	if (n && (s[0] == '"' || s[0] == '\''))
		i = 1;
	if (i >= n || !(isalpha((unsigned char)s[i]) || s[i] == '_'))
		return false;
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '/'))
		i++;
	return i < n && s[i] == ':' && (i + 1 >= n || s[i + 1] == ' ' || s[i + 1] == '"' ||
					s[i + 1] == '\'' || s[i + 1] == '%');
}

/* A quoted absolute path outside the writable places. */
static bool outside_literal(const char *s, size_t n)
{
	if (n < 3 || (s[0] != '"' && s[0] != '\''))
		return false;
	const char *p = s + 1;
	size_t m = n - 2;
	if (m == 0 || (p[0] != '/' && p[0] != '~'))
		return false;
	static const char *const ok[] = {"/tmp/", "/dev/shm/", "/dev/null", "/var/tmp/"};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
		if (m >= strlen(ok[i]) && strncmp(p, ok[i], strlen(ok[i])) == 0)
			return false;
	return true;
}

static bool network_literal(const char *s, size_t n)
{
	const char *p = n && (s[0] == '"' || s[0] == '\'') ? s + 1 : s;
	return strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0 ||
	       strncmp(p, "ftp://", 6) == 0;
}

typedef struct file_state {
	unsigned writer_line;   /* last line a writer was called on */
	unsigned parse_line;    /* last line parse( was called on */
	unsigned string_call_line; /* do.call / match.fun / get / feval with a name */
} file_state;

typedef struct lang_summary {
	bool seeded, random, metric_line, time_estimate, results_json;
	const char *random_file;
	unsigned random_line, random_col;
	char random_name[64];
} lang_summary;

/* The harness's words in a string: TIME_ESTIMATE printed, results.json written. */
static void harness_literal(lang_summary *sum, const char *s, size_t n)
{
	if (memmem(s, n, "TIME_ESTIMATE", 13))
		sum->time_estimate = true;
	if (memmem(s, n, "results.json", 12))
		sum->results_json = true;
}

static int r_token(const lb_check_config *cfg, lb_check_report *rep, const char *file,
		   unsigned line, unsigned col, const char *tok, const char *text, file_state *fs,
		   lang_summary *sum)
{
	size_t tl = strlen(text);
	char msg[320];
	if (strcmp(tok, "SYMBOL_FUNCTION_CALL") == 0 || strcmp(tok, "SYMBOL") == 0) {
		bool call = tok[7] == 'F';
		const lang_rule *lr = find_rule(r_calls, text);
		if (lr && (call || lr->rule != R_NETWORK || strcmp(text, "url") != 0)) {
			snprintf(msg, sizeof msg, "%s `%s`: %s", call ? "call of" : "reference to", text,
				 lr->what);
			return add(cfg, rep, file, line, col, lr->rule, msg, text);
		}
		if (!call)
			return 0;
		if (strcmp(text, "set.seed") == 0 || strcmp(text, "RNGkind") == 0)
			sum->seeded = true;
		if (in_list(r_random, text) && !sum->random) {
			sum->random = true;
			sum->random_file = file;
			sum->random_line = line;
			sum->random_col = col;
			snprintf(sum->random_name, sizeof sum->random_name, "%s", text);
		}
		if (in_list(r_writers, text))
			fs->writer_line = line;
		if (strcmp(text, "parse") == 0)
			fs->parse_line = line;
		if (strcmp(text, "do.call") == 0 || strcmp(text, "match.fun") == 0 ||
		    strcmp(text, "get") == 0 || strcmp(text, "get0") == 0 ||
		    strcmp(text, "getFunction") == 0 || strcmp(text, "mget") == 0)
			fs->string_call_line = line;
		return 0;
	}
	if (strcmp(tok, "SYMBOL_SUB") == 0) {
		if (strcmp(text, "text") == 0 && fs->parse_line == line)
			return add(cfg, rep, file, line, col, R_DYNCODE,
				   "call of `parse(text = ...)`: runs a string as code", "parse");
		return 0;
	}
	if (strcmp(tok, "STR_CONST") == 0) {
		harness_literal(sum, text, tl);
		if (metric_literal(text, tl))
			sum->metric_line = true;
		if (network_literal(text, tl))
			return add(cfg, rep, file, line, col, R_NETWORK,
				   "a URL: the experiment reaches the network", NULL);
		if (fs->writer_line == line && outside_literal(text, tl)) {
			snprintf(msg, sizeof msg, "write to %.200s, outside the outputs (exp/, /tmp)", text);
			return add(cfg, rep, file, line, col, R_WRITE, msg, NULL);
		}
		if (tl > 2) {
			char name[128];
			snprintf(name, sizeof name, "%.*s", (int)(tl - 2 < 127 ? tl - 2 : 127), text + 1);
			const lang_rule *lr = find_rule(r_calls, name);
			if (lr && fs->string_call_line == line) {
				snprintf(msg, sizeof msg, "`%s` named by a string: %s", name, lr->what);
				return add(cfg, rep, file, line, col, R_UNRESOLVED, msg, name);
			}
		}
	}
	return 0;
}

static int check_r(const lb_check_config *cfg, lang_files *f, const char *out,
		   lb_check_report *rep, lang_summary *sum)
{
	file_state fs[LANG_MAX_FILES];
	memset(fs, 0, sizeof fs[0] * f->n);
	int r = 0;
	for (const char *p = out; r == 0 && p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t k = nl ? (size_t)(nl - p) : strlen(p);
		LB_AUTOFREE char *line = strndup(p, k);
		p = nl ? nl + 1 : p + k;
		if (!line)
			return -ENOMEM;
		char *fields[6] = {0};
		size_t nf = 0;
		for (char *s = line, *tab; nf < 6; s = tab + 1) {
			fields[nf++] = s;
			if (!(tab = strchr(s, '\t')))
				break;
			if (nf < 6)
				*tab = '\0';
		}
		if (nf < 2)
			continue;
		size_t idx = f->n;
		for (size_t i = 0; i < f->n; i++)
			if (strcmp(f->v[i].copy, fields[1]) == 0)
				idx = i;
		if (idx == f->n)
			continue;
		const char *file = f->v[idx].rel;
		if (fields[0][0] == 'O' && nf == 2) {
			f->v[idx].parsed = true;
		} else if (fields[0][0] == 'E' && nf >= 3) {
			/* "<copy>:LINE:COL: message" */
			f->v[idx].parsed = true;
			const char *m = fields[2];
			unsigned ln = 0, cn = 0;
			size_t cl = strlen(fields[1]);
			if (strncmp(m, fields[1], cl) == 0 && m[cl] == ':' &&
			    sscanf(m + cl, ":%u:%u:", &ln, &cn) == 2) {
				const char *rest = strchr(strchr(m + cl + 1, ':') + 1, ':');
				m = rest ? rest + 1 : m;
				while (*m == ' ')
					m++;
			}
			char msg[400];
			snprintf(msg, sizeof msg, "syntax error (R's parser): %.300s", m);
			r = add(cfg, rep, file, ln ? ln : 1, cn + 1, R_SYNTAX, msg, NULL);
		} else if (fields[0][0] == 'T' && nf == 6) {
			r = r_token(cfg, rep, file, (unsigned)atoi(fields[2]), (unsigned)atoi(fields[3]),
				    fields[4], fields[5], &fs[idx], sum);
		}
	}
	return r;
}

/* Octave: names and strings, with comments dropped. A quote after a name, a closing bracket,
 * a number or another transpose is the transpose operator, not a string. */
static int check_octave_file(const lb_check_config *cfg, lb_check_report *rep, const char *file,
			     const char *s, size_t n, lang_summary *sum)
{
	unsigned line = 1;
	size_t bol = 0;
	bool value_before = false; /* the previous token ends a value: ' is a transpose */
	unsigned writer_line = 0, feval_line = 0;
	char msg[320];
	for (size_t i = 0; i < n;) {
		char c = s[i];
		if (c == '\n') {
			line++;
			bol = ++i;
			value_before = false;
			continue;
		}
		if (c == '%' || c == '#') {
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		if (c == '"' || (c == '\'' && !value_before)) {
			size_t st = i++;
			while (i < n && s[i] != '\n') {
				if (c == '"' && s[i] == '\\' && i + 1 < n) {
					i += 2;
					continue;
				}
				if (s[i] == c) {
					if (i + 1 < n && s[i + 1] == c) {
						i += 2;
						continue;
					}
					i++;
					break;
				}
				i++;
			}
			size_t len = i - st;
			const char *lit = s + st;
			harness_literal(sum, lit, len);
			if (metric_literal(lit, len))
				sum->metric_line = true;
			if (network_literal(lit, len))
				RETURN_IF_ERR(add(cfg, rep, file, line, (unsigned)(st - bol + 1), R_NETWORK,
						  "a URL: the experiment reaches the network", NULL));
			if (writer_line == line && outside_literal(lit, len)) {
				snprintf(msg, sizeof msg, "write to %.*s, outside the outputs (exp/, /tmp)",
					 (int)(len < 200 ? len : 200), lit);
				RETURN_IF_ERR(add(cfg, rep, file, line, (unsigned)(st - bol + 1), R_WRITE,
						  msg, NULL));
			}
			if (feval_line == line && len > 2) {
				char name[128];
				snprintf(name, sizeof name, "%.*s", (int)(len - 2 < 127 ? len - 2 : 127), lit + 1);
				const lang_rule *lr = find_rule(octave_calls, name);
				if (lr) {
					snprintf(msg, sizeof msg, "`%s` named by a string: %s", name, lr->what);
					RETURN_IF_ERR(add(cfg, rep, file, line, (unsigned)(st - bol + 1),
							  R_UNRESOLVED, msg, name));
				}
			}
			value_before = true;
			continue;
		}
		if (isalpha((unsigned char)c) || c == '_') {
			size_t st = i;
			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_'))
				i++;
			char name[64];
			snprintf(name, sizeof name, "%.*s", (int)(i - st < 63 ? i - st : 63), s + st);
			unsigned col = (unsigned)(st - bol + 1);
			/* a field (s.system) is not the function */
			bool field = st > 0 && s[st - 1] == '.';
			const lang_rule *lr = field ? NULL : find_rule(octave_calls, name);
			if (lr) {
				snprintf(msg, sizeof msg, "`%s`: %s", name, lr->what);
				RETURN_IF_ERR(add(cfg, rep, file, line, col, lr->rule, msg, name));
			} else if (!field) {
				if (in_list(octave_writers, name))
					writer_line = line;
				if (!strcmp(name, "feval") || !strcmp(name, "cellfun") ||
				    !strcmp(name, "arrayfun") || !strcmp(name, "func2str") ||
				    !strcmp(name, "str2func"))
					feval_line = line;
				if (in_list(octave_random, name)) {
					/* rand("seed", x), rand("state", x), rand("twister", x) seed it */
					size_t j = i;
					while (j < n && (s[j] == ' ' || s[j] == '('))
						j++;
					if (j < n && (s[j] == '"' || s[j] == '\'') &&
					    (!strncmp(s + j + 1, "seed", 4) || !strncmp(s + j + 1, "state", 5) ||
					     !strncmp(s + j + 1, "twister", 7)))
						sum->seeded = true;
					else if (!sum->random) {
						sum->random = true;
						sum->random_file = file;
						sum->random_line = line;
						sum->random_col = col;
						snprintf(sum->random_name, sizeof sum->random_name, "%s", name);
					}
				}
			}
			value_before = true;
			continue;
		}
		if (isdigit((unsigned char)c)) {
			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '.'))
				i++;
			value_before = true;
			continue;
		}
		value_before = c == ')' || c == ']' || c == '}' || (c == '\'' && value_before) ||
			       (c == '.' && i + 1 < n && s[i + 1] == '\'');
		i++;
	}
	return 0;
}

static int check_octave(const lb_check_config *cfg, lang_files *f, const char *out,
			lb_check_report *rep, lang_summary *sum)
{
	int r = 0;
	for (const char *p = out; r == 0 && p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t k = nl ? (size_t)(nl - p) : strlen(p);
		LB_AUTOFREE char *line = strndup(p, k);
		p = nl ? nl + 1 : p + k;
		if (!line)
			return -ENOMEM;
		char *tab = strchr(line, '\t');
		if (!tab || (line[0] != 'O' && line[0] != 'E'))
			continue;
		char *file = tab + 1, *msgp = NULL;
		char *tab2 = strchr(file, '\t');
		if (tab2) {
			*tab2 = '\0';
			msgp = tab2 + 1;
		}
		for (size_t i = 0; i < f->n; i++) {
			if (strcmp(f->v[i].copy, file) != 0)
				continue;
			f->v[i].parsed = true;
			if (line[0] == 'E') {
				unsigned ln = 1;
				const char *at = msgp ? strstr(msgp, "near line ") : NULL;
				if (at)
					ln = (unsigned)atoi(at + 10);
				/* the copy's name is not the user's: cut "of file /tmp/..." */
				char m[400];
				snprintf(m, sizeof m, "%s", msgp ? msgp : "");
				char *of = strstr(m, " of file ");
				if (of) {
					char *rest = strchr(of + 9, ' ');
					memmove(of, rest ? rest : "", strlen(rest ? rest : "") + 1);
				}
				char msg[480];
				snprintf(msg, sizeof msg, "syntax error (Octave's parser): %s", m);
				r = add(cfg, rep, f->v[i].rel, ln ? ln : 1, 1, R_SYNTAX, msg, NULL);
			}
		}
	}
	for (size_t i = 0; r == 0 && i < f->n; i++)
		r = check_octave_file(cfg, rep, f->v[i].rel, f->v[i].src, f->v[i].len, sum);
	return r;
}

int ck_check_lang_dir(const lb_check_config *cfg, int lang_i, const char *root,
		      lb_check_report *rep, char *err, size_t errlen)
{
	lb_lang lang = (lb_lang)lang_i;
	lang_files f;
	memset(&f, 0, sizeof f);
	lb_python_info probed;
	const lb_python_info *interp = cfg->python_info;
	int r = 0;
	if (!interp || !interp->implementation[0] ||
	    strcmp(interp->implementation, lang == LB_LANG_R ? "R" : "Octave") != 0) {
		r = lb_lang_probe(lang, NULL, cfg->have_limits ? &cfg->limits : NULL, &probed, err,
				  errlen);
		interp = &probed;
		if (r < 0)
			rep->error_kind = LB_CHECK_ERR_MACHINERY;
	}
	if (r == 0 && (r = collect(&f, lang, root, "", 0)) < 0)
		snprintf(err, errlen, "%s: %s", root, strerror(-r));
	if (r == 0 && f.n && (r = name_copies(&f, lang)) < 0)
		snprintf(err, errlen, "copying the code for the parser: %s", strerror(-r));
	lb_buf out = {0};
	if (r == 0 && f.n &&
	    (r = run_parser(lang, interp, cfg->have_limits ? &cfg->limits : NULL, &f, &out, err,
			    errlen)) < 0)
		rep->error_kind = LB_CHECK_ERR_MACHINERY;
	lang_summary sum;
	memset(&sum, 0, sizeof sum);
	if (r == 0 && f.n)
		r = lang == LB_LANG_R ? check_r(cfg, &f, out.data ? out.data : "", rep, &sum)
				      : check_octave(cfg, &f, out.data ? out.data : "", rep, &sum);
	for (size_t i = 0; r == 0 && i < f.n; i++)
		if (!f.v[i].parsed)
			r = add(cfg, rep, f.v[i].rel, 1, 1, R_UNPARSED,
				"the language's parser gave no verdict on this file", NULL);
	if (r == 0 && sum.random && !sum.seeded) {
		char msg[200];
		snprintf(msg, sizeof msg, "`%s` draws random numbers and nothing seeds the generator "
			 "(%s)", sum.random_name,
			 lang == LB_LANG_R ? "set.seed(SEED)" : "rand(\"seed\", SEED) or rand(\"twister\", SEED)");
		r = add(cfg, rep, sum.random_file, sum.random_line, sum.random_col, R_SEED_MISSING,
			msg, sum.random_name);
	}
	const char *entry = cfg->entry ? cfg->entry : "main";
	if (r == 0 && f.n && !sum.metric_line)
		r = add(cfg, rep, entry, 1, 1, R_METRIC_LINES,
			"no `name: value` metric lines are printed", NULL);
	if (r == 0 && f.n && !sum.time_estimate)
		r = add(cfg, rep, entry, 1, 1, R_TIME_ESTIMATE,
			"no `TIME_ESTIMATE: Xs` line is printed before the main loop", NULL);
	if (r == 0 && f.n && !sum.results_json)
		r = add(cfg, rep, entry, 1, 1, R_RESULTS_JSON, "results.json is never written", NULL);
	rep->files += f.n;
	snprintf(rep->syntax_by, sizeof rep->syntax_by, "%s %s", interp->implementation,
		 interp->version);
	lb_buf_free(&out);
	lang_files_free(&f);
	return r;
}
