/* check: parsing, syntax errors, and checking buffers, files and experiment directories. */
#include "check_internal.h"
#include "labbox/lang.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHECK_MAX_FILE (8u << 20)
#define CHECK_MAX_FILES 20000
#define PARSE_TIMEOUT_US (10u * 1000 * 1000)

/* What the interpreter's compile() said about one file. */
typedef struct pysyntax {
	bool checked;
	bool ok;
	unsigned line, col;
	char msg[256];
} pysyntax;

/* ---- syntax from tree-sitter ------------------------------------------------------------------ */

static bool first_error(TSNode root, TSNode *out)
{
	TSTreeCursor cur = ts_tree_cursor_new(root);
	bool found = false, down = true;
	for (;;) {
		TSNode n = ts_tree_cursor_current_node(&cur);
		if (down && (ts_node_is_missing(n) || strcmp(ts_node_type(n), "ERROR") == 0)) {
			*out = n;
			found = true;
			break;
		}
		if (down && ts_node_has_error(n) && ts_tree_cursor_goto_first_child(&cur))
			continue;
		if (ts_tree_cursor_goto_next_sibling(&cur)) {
			down = true;
			continue;
		}
		if (!ts_tree_cursor_goto_parent(&cur))
			break;
		down = false;
	}
	ts_tree_cursor_delete(&cur);
	return found;
}

static void error_text(const char *src, size_t len, TSNode n, char *out, size_t outlen)
{
	if (ts_node_is_missing(n)) {
		snprintf(out, outlen, "invalid syntax: missing '%s'", ts_node_type(n));
		return;
	}
	uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
	if (b > len)
		b = (uint32_t)len;
	if (a > b)
		a = b;
	size_t k = 0;
	char snip[48];
	for (uint32_t i = a; i < b && k + 1 < sizeof snip; i++) {
		char ch = src[i];
		if (ch == '\n')
			break;
		snip[k++] = (ch >= 0x20 && ch < 0x7f) ? ch : '?';
	}
	snip[k] = '\0';
	snprintf(out, outlen, "invalid syntax near '%s'", snip);
}

/* PEP 263: a coding declaration in the first two lines. Only ASCII-compatible encodings keep
 * the bytes labbox parses equal to the characters Python reads (utf-7 would not), and only
 * those the tokenizer decodes in C (UTF-8, Latin-1, ASCII): any other (cp1252) it asks the
 * codec registry for, which the experiment's code can fill before it imports the file, so
 * what runs would not be what was read (the runtime gate refuses such a compile too).
 * *registry: the declaration named an ASCII-compatible encoding of the registry's. */
static bool encoding_ok(const char *src, size_t len, char *enc, size_t enclen, bool *registry)
{
	*registry = false;
	size_t off = 0;
	enc[0] = '\0';
	for (int line = 0; line < 2 && off < len; line++) {
		size_t e = off;
		while (e < len && src[e] != '\n')
			e++;
		const char *p = src + off;
		size_t n = e - off;
		const char *hash = memchr(p, '#', n);
		if (hash) {
			for (const char *q = hash; q + 6 < p + n; q++) {
				if (strncmp(q, "coding", 6) != 0 || (q[6] != ':' && q[6] != '='))
					continue;
				q += 7;
				while (q < p + n && (*q == ' ' || *q == '\t'))
					q++;
				size_t k = 0;
				while (q < p + n && k + 1 < enclen &&
				       (*q == '-' || *q == '_' || *q == '.' || (*q >= '0' && *q <= '9') ||
					(*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
					enc[k++] = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q), q++;
				enc[k] = '\0';
				static const char *const ok[] = {
					"utf-8",      "utf8",      "utf_8",   "utf-8-sig", "ascii",
					"us-ascii",   "latin-1",   "latin1",  "iso-8859-1", "iso8859-1",
					"iso-latin-1",
				};
				static const char *const registry_ok[] = {"l1", "cp1252", "iso-8859-15",
									  "utf8-sig"};
				for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
					if (strcmp(enc, ok[i]) == 0)
						return true;
				for (size_t i = 0; i < sizeof registry_ok / sizeof registry_ok[0]; i++)
					if (strcmp(enc, registry_ok[i]) == 0)
						*registry = true;
				return false;
			}
		}
		/* the second line counts only when the first is a comment or blank */
		bool blank_or_comment = true;
		for (size_t i = 0; i < n; i++)
			if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\f') {
				blank_or_comment = p[i] == '#';
				break;
			}
		if (!blank_or_comment)
			break;
		off = e + 1;
	}
	return true;
}

/* What a thread keeps from one file to the next: its parser (a new one per file cost as much
 * as the analysis of a small file) and the syntax tables. */
typedef struct ck_worker {
	TSParser *parser;
	ck_syntax syn;
	ck_keep keep;
	ck_deps deps; /* the current file's facts about the others, for its cache entry */
} ck_worker;

static void worker_free(ck_worker *w)
{
	if (w->parser)
		ts_parser_delete(w->parser);
	w->parser = NULL;
	ck_syntax_free(&w->syn);
	ck_keep_free(&w->keep);
	ck_deps_free(&w->deps);
}

static int worker_init(ck_worker *w)
{
	memset(w, 0, sizeof *w);
	int r = ck_syntax_init(&w->syn);
	if (r == 0 && !(w->parser = ts_parser_new()))
		r = -ENOMEM;
	if (r < 0) {
		worker_free(w);
		return r;
	}
	ts_parser_set_timeout_micros(w->parser, PARSE_TIMEOUT_US);
	return 0;
}

static int check_buffer(ck_worker *w, const lb_check_config *cfg, const ck_stdlib *std,
			const char *path, const char *src, size_t len, bool harness,
			const pysyntax *py, lb_check_report *rep)
{
	ck_raws raws = {0};
	int r = 0;
	TSParser *parser = w->parser;
	TSTree *tree = NULL;
	TSNode root = {0};
	char enc[64];
	rep->policy = cfg->policy;
	if (len > UINT32_MAX / 2) {
		r = ck_raw_add(&raws, R_UNPARSED, 1, 1, NULL, "file too large to analyse");
		goto settle;
	}
	bool registry;
	if (!encoding_ok(src, len, enc, sizeof enc, &registry)) {
		r = registry ? ck_raw_add(&raws, R_UNPARSED, 1, 1, NULL,
					  "source encoding '%s' is decoded through Python's codec "
					  "registry, which the experiment's code can replace before "
					  "the file is imported, so what runs may not be what labbox "
					  "read. Save the file as UTF-8",
					  enc)
			     : ck_raw_add(&raws, R_UNPARSED, 1, 1, NULL,
					  "source encoding '%s' is not ASCII-compatible; labbox cannot "
					  "see what Python will read. Save the file as UTF-8",
					  enc);
		goto settle;
	}
	if (memchr(src, '\0', len) && !(py && py->checked)) {
		r = ck_raw_add(&raws, R_SYNTAX, 1, 1, NULL, "source code cannot contain NUL bytes");
		goto settle;
	}
	/* Setting the language again gives the file a fresh external scanner: resetting the
	 * parser alone keeps scanner state (inside_f_string) from the previous file. */
	ts_parser_set_language(parser, w->syn.lang);
	tree = ts_parser_parse_string(parser, NULL, src, (uint32_t)len);
	if (!tree) {
		r = ck_raw_add(&raws, R_UNPARSED, 1, 1, NULL, "the parser gave up on this file");
		goto settle;
	}
	root = ts_tree_root_node(tree);
	TSNode bad;
	bool ts_error = ts_node_has_error(root) && first_error(root, &bad);
	if (py && py->checked) {
		if (!py->ok)
			r = ck_raw_add(&raws, R_SYNTAX, py->line ? py->line : 1, py->col ? py->col : 1,
				       NULL, "%s", py->msg);
		else if (ts_error)
			r = ck_raw_add(&raws, R_UNPARSED, ts_node_start_point(bad).row + 1,
				       ts_node_start_point(bad).column + 1, NULL,
				       "Python compiles this but labbox's parser does not; the code "
				       "here is not analysed");
	} else if (ts_error) {
		char msg[160];
		error_text(src, len, bad, msg, sizeof msg);
		r = ck_raw_add(&raws, R_SYNTAX, ts_node_start_point(bad).row + 1,
			       ts_node_start_point(bad).column + 1, NULL, "%s", msg);
	}
	if (r == 0) {
		ck_analysis_in in = {.cfg = cfg, .syn = &w->syn, .keep = &w->keep, .src = src,
				     .len = len, .root = root, .harness = harness, .std = std,
				     .deps = &w->deps};
		r = ck_analyze(&in, &raws);
	}
settle:
	if (r == 0)
		r = ck_settle(cfg, path, src, root, &raws, rep);
	ck_raws_free(&raws);
	if (tree)
		ts_tree_delete(tree);
	return r;
}

int lb_check_source(const lb_check_config *cfg, const char *path, const char *src, size_t len,
		    bool harness, lb_check_report *rep)
{
	ck_worker w;
	int r = worker_init(&w);
	if (r < 0)
		return r;
	r = check_buffer(&w, cfg, NULL, path ? path : "<input>", src, len, harness, NULL, rep);
	worker_free(&w);
	ck_answer_fail(rep);
	if (r == 0)
		rep->files++;
	return r;
}

/* ---- syntax from the target interpreter, in the sandbox --------------------------------------- */

/* Prints one JSON line per file: compile() never executes the code, and it runs isolated
 * anyway, so a hostile file cannot do anything while its syntax is checked. */
static const char py_compile_script[] =
	"import sys, json\n"
	"for p in sys.argv[1:]:\n"
	"    r = {'file': p, 'ok': True}\n"
	"    try:\n"
	"        with open(p, 'rb') as f:\n"
	"            compile(f.read(), p, 'exec', dont_inherit=True)\n"
	"    except SyntaxError as e:\n"
	"        r = {'file': p, 'ok': False, 'line': e.lineno or 1, 'col': e.offset or 1,\n"
	"             'msg': type(e).__name__ + ': ' + str(e.msg)}\n"
	"    except (ValueError, TypeError) as e:\n"
	"        r = {'file': p, 'ok': False, 'line': 1, 'col': 1, 'msg': type(e).__name__ + ': ' + str(e)}\n"
	"    print(json.dumps(r), flush=True)\n"
	"print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3]}), flush=True)\n";

static void collect_out(void *ctx, lb_stream stream, const char *data, size_t len)
{
	lb_buf *b = ctx;
	if (stream == LB_STREAM_STDOUT && b->len < (16u << 20))
		lb_buf_append(b, data, len);
}

/* The interpreter whose compile() decides: the caller's probe, else one of our own. */
static int syntax_interpreter(const lb_check_config *cfg, lb_python_info *info, char *err,
			      size_t errlen)
{
	char perr[512];
	bool hit = false;
	if (cfg->python_info) {
		*info = *cfg->python_info;
		return 0;
	}
	if ((cfg->cache_dir ? lb_python_probe_cached(cfg->python, cfg->cache_dir, info, &hit, perr,
						     sizeof perr)
			    : lb_python_probe(cfg->python, info, perr, sizeof perr)) < 0) {
		snprintf(err, errlen, "--python '%s': %s", cfg->python, perr);
		return -ENOEXEC;
	}
	return 0;
}

/* One sandbox's worth: the copies live in the sandbox's own read-only tmpfs, in memory, and
 * count towards its memory limit. */
#define SYNTAX_BATCH_BYTES (32u << 20)
#define SYNTAX_BATCH_FILES 1024u
/* Where the sandboxed interpreter finds the copies. */
#define SYNTAX_COPY_DIR "/run/labbox-check"

/* compile() on a leading part of abs[0..n): as many files as fit a batch, at least one; *took
 * says how many. */
static int syntax_batch(const lb_python_info *pinfo, const lb_sandbox_limits *lim,
			char *const abs[], size_t n, pysyntax *out, size_t *took,
			char *version, size_t vlen, bool *machinery, char *err, size_t errlen)
{
	lb_python_info info = *pinfo;
	lb_sandbox *sb = NULL;
	int r = lb_sandbox_new(&sb);
	if (r < 0)
		return r;
	lb_buf outbuf = {0};
	char **argv = calloc(n + 6, sizeof *argv);
	if (!argv) {
		lb_sandbox_free(sb);
		return -ENOMEM;
	}
	/* The sandboxed interpreter runs as another user and sees neither home directories nor
	 * the host's /tmp. Its copies are handed to it in memory, never written on the host: a
	 * copy in a host directory would be readable by whatever user the sandbox's uid can be
	 * read by (all of them, as root: uid 65534), and stay for good when labbox is killed. */
	char **copies = calloc(n ? n : 1, sizeof *copies);
	if (!copies)
		r = -ENOMEM;
	size_t bytes = 0;
	*took = 0;
	for (size_t i = 0; i < n && r >= 0 && i < SYNTAX_BATCH_FILES; i++) {
		char *data = NULL;
		size_t len = 0;
		int rr = lb_read_file_at(AT_FDCWD, abs[i], CHECK_MAX_FILE, &data, &len);
		if (rr == 0 && i > 0 && bytes + len > SYNTAX_BATCH_BYTES) {
			free(data);
			break;
		}
		char name[32];
		snprintf(name, sizeof name, "%zu.py", i);
		if (rr == 0 && asprintf(&copies[i], "%s/%s", SYNTAX_COPY_DIR, name) < 0) {
			copies[i] = NULL;
			rr = -ENOMEM;
		}
		if (rr == 0)
			rr = lb_sandbox_add_file(sb, SYNTAX_COPY_DIR, name, data, len);
		free(data);
		if (rr < 0) {
			snprintf(err, errlen, "%s: %s", abs[i],
				 rr == -EFBIG ? "larger than the check's limit of 8 MiB"
					      : strerror(-rr));
			r = rr;
			break;
		}
		bytes += len;
		*took = i + 1;
	}
	n = *took;
	argv[0] = info.executable;
	argv[1] = "-I";
	argv[2] = "-S";
	argv[3] = "-c";
	argv[4] = (char *)py_compile_script;
	for (size_t i = 0; i < n && copies; i++)
		argv[5 + i] = copies[i];
	/* The interpreter may be the experiment's own (a venv it ships): it sees no other run's
	 * records. */
	if (r >= 0)
		r = lb_record_hide_known(sb);
	if (r >= 0)
		r = lb_python_expose(sb, &info, false);
	if (r >= 0)
		r = lb_sandbox_set_argv(sb, argv);
	if (r >= 0)
		r = lb_sandbox_set_budget(sb, 60);
	if (r >= 0)
		r = lb_sandbox_apply_limits(sb, lim);
	if (r >= 0)
		r = lb_sandbox_set_output(sb, false, collect_out, &outbuf);
	lb_sandbox_result res;
	if (r >= 0)
		r = lb_sandbox_run(sb, &res);
	if (r < 0) {
		/* err set: a file of the code's; else the sandbox could not be made ready */
		if (!err[0]) {
			snprintf(err, errlen, "running %s in the sandbox: %s", info.executable,
				 strerror(-r));
			*machinery = true;
		}
	} else if (res.outcome != LB_SB_EXITED || res.exit_code != 0) {
		char how[160];
		if (res.outcome == LB_SB_EXITED)
			snprintf(how, sizeof how, "the interpreter exited with status %d",
				 res.exit_code);
		else
			snprintf(how, sizeof how, "the interpreter did not finish (%s)",
				 res.outcome == LB_SB_TIMEOUT	  ? "out of time"
				 : res.outcome == LB_SB_INTERRUPTED ? "labbox was interrupted"
				 : res.oom_killed		  ? "out of memory"
								  : "killed by a signal");
		snprintf(err, errlen, "compile() in the sandbox failed: %s",
			 res.outcome == LB_SB_SETUP_FAILED ? res.setup_error : how);
		*machinery = true;
		r = -EIO;
	}
	bool got_version = false;
	for (const char *p = outbuf.data; r >= 0 && p && *p;) {
		const char *e = strchr(p, '\n');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		json_object *o = NULL;
		struct json_tokener *tok = json_tokener_new();
		if (tok) {
			o = json_tokener_parse_ex(tok, p, (int)k);
			json_tokener_free(tok);
		}
		json_object *v;
		if (o && json_object_object_get_ex(o, "version", &v)) {
			snprintf(version, vlen, "python %s", json_object_get_string(v));
			got_version = true;
		} else if (o && json_object_object_get_ex(o, "file", &v)) {
			const char *f = json_object_get_string(v);
			for (size_t i = 0; i < n; i++) {
				if (!copies[i] || strcmp(copies[i], f) != 0 || out[i].checked)
					continue;
				json_object *x;
				out[i].checked = true;
				out[i].ok = json_object_object_get_ex(o, "ok", &x) && json_object_get_boolean(x);
				if (json_object_object_get_ex(o, "line", &x))
					out[i].line = (unsigned)json_object_get_int(x);
				if (json_object_object_get_ex(o, "col", &x))
					out[i].col = (unsigned)json_object_get_int(x);
				if (json_object_object_get_ex(o, "msg", &x))
					snprintf(out[i].msg, sizeof out[i].msg, "%s", json_object_get_string(x));
				break;
			}
		}
		json_object_put(o);
		p = e ? e + 1 : p + k;
	}
	if (r >= 0 && !got_version) {
		snprintf(err, errlen, "compile() in the sandbox printed no result");
		r = -EIO;
	}
	for (size_t i = 0; i < n && copies; i++)
		free(copies[i]);
	free(copies);
	free(argv);
	lb_buf_free(&outbuf);
	lb_sandbox_free(sb);
	return r < 0 ? r : 0;
}

static int python_syntax(const lb_python_info *pinfo, const lb_sandbox_limits *lim,
			 char *const abs[], size_t n, pysyntax *out,
			 char *version, size_t vlen, bool *machinery, char *err, size_t errlen)
{
	/* Once at least: with no file, the run still says the interpreter's version. */
	size_t done = 0;
	do {
		size_t took = 0;
		int r = syntax_batch(pinfo, lim, abs + done, n - done, out + done, &took, version,
				     vlen, machinery, err, errlen);
		if (r < 0)
			return r;
		if (took == 0 && n > 0)
			return -EIO;
		done += took;
	} while (done < n);
	return 0;
}

/* ---- compile() verdicts kept between runs ------------------------------------------------------ */

/* Entries kept; past it, the least recently used quarter goes. */
#define COMPILE_CACHE_MAX 4096

/* cache_dir/compile, trusted only when it is the user's own and nobody else can write it. */
static int compile_cache_open(const char *cache_dir)
{
	char path[PATH_MAX];
	if (!cache_dir || snprintf(path, sizeof path, "%s/compile", cache_dir) >= (int)sizeof path)
		return -1;
	int fd = lb_open_private_dir(path);
	return fd < 0 ? -1 : fd;
}

/* The verdict's name: the interpreter and the file's exact bytes. */
static int compile_key(const lb_python_info *info, const char *path, char hex[65])
{
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	int r = lb_read_file_at(AT_FDCWD, path, CHECK_MAX_FILE, &data, &len);
	if (r < 0)
		return r;
	const char *parts[] = {"labbox.compile/1", info->executable, info->version,
			       info->implementation};
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		lb_sha256_update(&c, parts[i], strlen(parts[i]) + 1);
	lb_sha256_update(&c, data ? data : "", len);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
	return 0;
}

/* A kept clean verdict: the file holds the version line compile() ran under. */
static bool compile_cache_hit(int dfd, const char *key, char *version, size_t vlen)
{
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	if (lb_read_file_at(dfd, key, 128, &data, &len) < 0 || len < 8 || len >= vlen ||
	    strncmp(data, "python ", 7) != 0 || memchr(data, '\n', len) || memchr(data, '\0', len))
		return false;
	memcpy(version, data, len);
	version[len] = '\0';
	/* Used now: the pruning below goes by modification time. */
	utimensat(dfd, key, NULL, AT_SYMLINK_NOFOLLOW);
	return true;
}

typedef struct cache_entry {
	struct timespec mtime;
	char name[72];
} cache_entry;

static int cache_entry_cmp(const void *a, const void *b)
{
	const cache_entry *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void compile_cache_prune(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	cache_entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (strlen(e->d_name) != 64 || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (n == cap) {
			cache_entry *nv = realloc(v, (cap ? cap * 2 : 1024) * sizeof *v);
			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 1024;
		}
		v[n].mtime = st.st_mtim;
		snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
		n++;
	}
	closedir(d);
	if (n > COMPILE_CACHE_MAX) {
		qsort(v, n, sizeof *v, cache_entry_cmp);
		for (size_t i = 0; i < n - COMPILE_CACHE_MAX * 3 / 4; i++)
			unlinkat(dfd, v[i].name, 0);
	}
	free(v);
}

static void compile_cache_store(int dfd, const char *key, const char *version)
{
	lb_replace_file_at(dfd, key, version, strlen(version));
}

/* python_syntax for the files without a kept clean verdict; none at all when every one has. */
static int python_syntax_cached(const lb_check_config *cfg, char *const abs[], size_t n,
				pysyntax *out, char *version, size_t vlen, size_t *cached,
				bool *machinery, char *err, size_t errlen)
{
	lb_python_info info;
	int r = syntax_interpreter(cfg, &info, err, errlen);
	if (r < 0) {
		*machinery = true;
		return r;
	}
	LB_AUTOCLOSE int dfd = compile_cache_open(cfg->cache_dir);
	if (dfd < 0)
		return python_syntax(&info, cfg->have_limits ? &cfg->limits : NULL, abs, n, out,
				     version, vlen, machinery, err, errlen);
	char (*keys)[65] = calloc(n, sizeof *keys);
	char **miss = calloc(n, sizeof *miss);
	size_t *at = calloc(n, sizeof *at);
	pysyntax *sub = calloc(n, sizeof *sub);
	size_t nmiss = 0;
	bool hit_version = false;
	if (!keys || !miss || !at || !sub) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char v[128];
		if (compile_key(&info, abs[i], keys[i]) < 0)
			keys[i][0] = '\0';
		if (keys[i][0] && compile_cache_hit(dfd, keys[i], v, sizeof v)) {
			out[i].checked = out[i].ok = true;
			(*cached)++;
			if (!hit_version)
				snprintf(version, vlen, "%.*s", (int)(vlen - 1), v);
			hit_version = true;
			continue;
		}
		at[nmiss] = i;
		miss[nmiss++] = abs[i];
	}
	if (nmiss == 0)
		goto out;
	r = python_syntax(&info, cfg->have_limits ? &cfg->limits : NULL, miss, nmiss, sub,
			  version, vlen, machinery, err, errlen);
	if (r < 0)
		goto out;
	bool prune = false;
	for (size_t j = 0; j < nmiss; j++) {
		size_t i = at[j];
		out[i] = sub[j];
		char again[65];
		/* Kept only when the bytes compiled are the bytes hashed before. */
		if (sub[j].checked && sub[j].ok && keys[i][0] &&
		    compile_key(&info, abs[i], again) == 0 && strcmp(again, keys[i]) == 0) {
			compile_cache_store(dfd, keys[i], version);
			prune = prune || strncmp(keys[i], "00", 2) == 0;
		}
	}
	/* Counting the entries costs a scan: done after about one store in 256, those of
	 * keys that start with 00. */
	if (prune)
		compile_cache_prune(dfd);
out:
	free(keys);
	free(miss);
	free(at);
	free(sub);
	return r;
}

/* ---- files and directories ------------------------------------------------------------------- */

static void read_error(const char *path, int r, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", path,
		 r == -EFBIG ? "larger than 8 MiB" : r == -ELOOP ? "is a symlink" : strerror(-r));
}

/* Files are independent, so they are checked by a few threads, each into its own report;
 * the reports are merged in file order afterwards so the output does not depend on timing. */
typedef struct job {
	const lb_check_config *cfg;
	const ck_stdlib *std;
	const ck_cache *cache;
	atomic_size_t cached;
	const char **entry; /* each file's cache entry, for the pack written at the end */
	size_t *entry_len;
	lb_buf *own; /* the entries made by this check (misses) */
	ck_filestat *fst; /* each file as hashed, for the pack's file table */
	atomic_size_t rehashed; /* files recorded from a read (not trusted by their metadata) */
	atomic_size_t unread;   /* files answered by their metadata, never read */
	char *const *shown, *const *abs;
	size_t n;
	const char *entry_abs;
	const pysyntax *py;
	lb_check_report *reps;
	int *rcs;
	bool *read_failed;
	atomic_size_t next;
} job;

/* The interpreter's verdict on a file, as the cache key has it. */
static void syntax_words(const pysyntax *py, char *out, size_t outlen)
{
	if (!py || !py->checked)
		out[0] = '\0';
	else if (py->ok)
		snprintf(out, outlen, "ok");
	else
		snprintf(out, outlen, "error %u:%u %s", py->line, py->col, py->msg);
}

/* File i (whose content has the sha256 content) from the result cache, else checked (when
 * data is not NULL) and its entry written; -ENOENT: not in the cache and no data. */
static int check_cached(ck_worker *w, job *j, size_t i, const char *data, size_t len,
			const uint8_t content[32], bool harness)
{
	char key[65], syn[300];
	lb_check_report *rep = &j->reps[i];
	bool cache = j->cache && j->cache->dfd >= 0;
	if (cache) {
		syntax_words(&j->py[i], syn, sizeof syn);
		ck_cache_key_digest(j->cache, content, harness, syn, key);
		rep->policy = j->cfg->policy;
		int r = ck_cache_load(j->cache, j->cfg, key, j->shown[i], rep, &j->entry[i],
				      &j->entry_len[i]);
		if (r == 0) {
			atomic_fetch_add(&j->cached, 1);
			return 0;
		}
		if (r != -ENOENT || !data)
			return r;
	}
	if (!data)
		return -ENOENT;
	ck_deps_free(&w->deps);
	int r = check_buffer(w, j->cfg, j->std, j->shown[i], data, len, harness, &j->py[i], rep);
	if (r == 0 && cache && ck_cache_entry(key, rep, &w->deps, &j->own[i]) == 0) {
		j->entry[i] = j->own[i].data;
		j->entry_len[i] = j->own[i].len;
	}
	return r;
}

static void *worker(void *arg)
{
	job *j = arg;
	ck_worker w;
	int wr = worker_init(&w);
	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);
		if (i >= j->n)
			break;
		bool harness = j->entry_abs ? strcmp(j->abs[i], j->entry_abs) == 0 : true;
		/* what the file is before it is read: a change during the read then shows as a
		 * change of these next time */
		struct stat st;
		ck_filestat fs;
		uint8_t content[32];
		/* A named check is of a staged copy, new each time: its metadata never matches
		 * again, and recording it would rewrite the pack (and prune the cache) at every
		 * run. Its entries are still found by content. */
		bool have_st = j->cache && j->cache->dfd >= 0 && !j->cfg->cache_name &&
			       fstatat(AT_FDCWD, j->abs[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			       ck_filestat_from(&st, &fs);
		if (wr == 0 && have_st && ck_filestat_trusted(j->cache, j->abs[i], &fs, content) &&
		    check_cached(&w, j, i, NULL, 0, content, harness) == 0) {
			memcpy(fs.content, content, sizeof content);
			fs.ok = true;
			j->fst[i] = fs;
			j->rcs[i] = 0;
			atomic_fetch_add(&j->unread, 1);
			continue;
		}
		lb_check_report_free(&j->reps[i]);
		memset(&j->reps[i], 0, sizeof j->reps[i]);
		char *data = NULL;
		size_t len = 0;
		int r = lb_read_file_at(AT_FDCWD, j->abs[i], CHECK_MAX_FILE, &data, &len);
		j->read_failed[i] = r < 0;
		if (r == 0 && wr < 0)
			r = wr;
		if (r == 0) {
			ck_content_digest(data, len, content);
			if (have_st && len == fs.size) {
				memcpy(fs.content, content, sizeof content);
				fs.ok = true;
				j->fst[i] = fs;
				atomic_fetch_add(&j->rehashed, 1);
			}
			r = check_cached(&w, j, i, data, len, content, harness);
		}
		j->rcs[i] = r;
		free(data);
	}
	if (wr == 0)
		worker_free(&w);
	return NULL;
}

static int check_parallel(const lb_check_config *cfg, const ck_stdlib *std, char *const shown[],
			  char *const abs[], size_t n, const char *entry_abs, const pysyntax *py,
			  ck_cache *cache, lb_check_report *rep, char *err, size_t errlen)
{
	job j = {.cfg = cfg, .std = std, .cache = cache, .shown = shown, .abs = abs, .n = n,
		 .entry_abs = entry_abs, .py = py};
	j.reps = calloc(n ? n : 1, sizeof *j.reps);
	j.rcs = calloc(n ? n : 1, sizeof *j.rcs);
	j.read_failed = calloc(n ? n : 1, sizeof *j.read_failed);
	j.entry = calloc(n ? n : 1, sizeof *j.entry);
	j.entry_len = calloc(n ? n : 1, sizeof *j.entry_len);
	j.own = calloc(n ? n : 1, sizeof *j.own);
	j.fst = calloc(n ? n : 1, sizeof *j.fst);
	int r = 0;
	if (!j.reps || !j.rcs || !j.read_failed || !j.entry || !j.entry_len || !j.own || !j.fst) {
		r = -ENOMEM;
		goto out;
	}
	atomic_init(&j.next, 0);
	atomic_init(&j.cached, 0);
	atomic_init(&j.rehashed, 0);
	atomic_init(&j.unread, 0);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = cpus > 1 ? (size_t)cpus : 1;
	if (nthreads > 8)
		nthreads = 8;
	if (nthreads > n / 8 + 1)
		nthreads = n / 8 + 1; /* a few files are not worth a thread */
	pthread_t th[8];
	size_t started = 0;
	for (size_t t = 1; t < nthreads; t++)
		if (pthread_create(&th[started], NULL, worker, &j) == 0)
			started++;
	worker(&j);
	for (size_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	for (size_t i = 0; i < n; i++) {
		if (r == 0 && j.rcs[i] < 0) {
			r = j.rcs[i];
			if (j.read_failed[i]) {
				read_error(shown[i], r, err, errlen);
			} else {
				snprintf(err, errlen, "%s: %s", shown[i], strerror(-r));
			}
		}
		/* the findings move: they were made (and sanitised) by ck_report_add already */
		if (r == 0)
			r = ck_report_take(rep, &j.reps[i]);
		if (r == 0)
			rep->files++;
		lb_check_report_free(&j.reps[i]);
	}
	rep->cached += atomic_load(&j.cached);
	rep->unread += atomic_load(&j.unread);
	/* Only a complete check writes the pack: it holds exactly this check's files; and
	 * none whose library summary turned out not to be the one the keys name. */
	bool drifted = ck_stdlib_drifted(std);
	if (r == 0 && !drifted)
		ck_cache_write(cache, j.entry, j.entry_len, n,
			       atomic_load(&j.cached) < n || atomic_load(&j.rehashed) > 0, abs, j.fst);
	/* every file answered by its metadata: the answer can be kept whole (the pack as it is
	 * now, written again or not, is what a next check reads) */
	if (r == 0 && !drifted && atomic_load(&j.unread) == n && atomic_load(&j.cached) == n)
		ck_answer_fold_files(rep, cfg, cache, shown, abs, n, entry_abs, j.fst);
	else
		ck_answer_fail(rep);
out:
	for (size_t i = 0; j.own && i < n; i++)
		lb_buf_free(&j.own[i]);
	free(j.own);
	free(j.fst);
	free(j.entry);
	free(j.entry_len);
	free(j.reps);
	free(j.rcs);
	free(j.read_failed);
	return r;
}

/* The probe (set_answer_probe): each file stat-ed, nothing read or decoded, not even the
 * pack: whether the files are still what the kept answer's check trusted is in the answer's
 * digest (their records and the pack's own). The stats are most of it: a few threads share
 * them, as the check's workers do. */
typedef struct probe_job {
	char *const *abs;
	ck_filestat *fst;
	size_t from, to;
	bool ok;
} probe_job;

/* Files come grouped by directory (the walk's order): each is stat-ed by its name in its
 * directory, opened once (O_PATH, following links as a whole path's lookup does), so the
 * kernel walks each path's leading components once a directory rather than once a file. */
static void *probe_range(void *arg)
{
	probe_job *p = arg;
	int dfd = -1;
	size_t dlen = 0;
	const char *dir = NULL;
	for (size_t i = p->from; p->ok && i < p->to; i++) {
		const char *a = p->abs[i], *slash = strrchr(a, '/');
		struct stat st;
		if (!slash || slash == a) {
			p->ok = fstatat(AT_FDCWD, a, &st, AT_SYMLINK_NOFOLLOW) == 0;
		} else {
			size_t k = (size_t)(slash - a);
			if (!dir || k != dlen || memcmp(dir, a, k) != 0) {
				char path[PATH_MAX];
				if (dfd >= 0)
					close(dfd);
				dfd = -1;
				dir = NULL;
				if (k < sizeof path) {
					memcpy(path, a, k);
					path[k] = '\0';
					dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
				}
				if (dfd >= 0) {
					dir = a;
					dlen = k;
				}
			}
			p->ok = dfd >= 0 && fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0;
		}
		p->ok = p->ok && ck_filestat_from(&st, &p->fst[i]);
		p->fst[i].ok = p->ok;
	}
	if (dfd >= 0)
		close(dfd);
	return NULL;
}

static void probe_paths(const lb_check_config *cfg, char *const shown[], char *const abs[],
			size_t n, const char *entry_abs, const ck_cache *cache, lb_check_report *rep)
{
	ck_filestat *fst = calloc(n ? n : 1, sizeof *fst);
	bool ok = fst && cache->dfd >= 0;
	if (ok) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		size_t nt = cpus > 1 ? (size_t)cpus : 1;
		if (nt > 4)
			nt = 4;
		if (nt > n / 256 + 1)
			nt = n / 256 + 1; /* a thread costs more than a few hundred stats */
		probe_job jobs[4];
		pthread_t th[4];
		bool started[4] = {false};
		for (size_t t = 0; t < nt; t++) {
			jobs[t] = (probe_job){.abs = abs, .fst = fst, .from = n * t / nt,
					      .to = n * (t + 1) / nt, .ok = true};
			if (t > 0)
				started[t] = pthread_create(&th[t], NULL, probe_range, &jobs[t]) == 0;
		}
		probe_range(&jobs[0]);
		for (size_t t = 1; t < nt; t++) {
			if (started[t])
				pthread_join(th[t], NULL);
			else
				probe_range(&jobs[t]);
		}
		for (size_t t = 0; t < nt; t++)
			ok = ok && jobs[t].ok;
	}
	if (ok)
		ck_answer_fold_files(rep, cfg, cache, shown, abs, n, entry_abs, fst);
	else
		ck_answer_fail(rep);
	rep->files += n;
	rep->cached += n;
	rep->unread += n;
	free(fst);
}

/* Check paths (display names) whose absolute paths are abs; entry says which get the harness
 * rules (NULL: every file); root is the experiment directory (NULL for files). */
static int check_paths(const lb_check_config *cfg, char *const shown[], char *const abs[],
		       size_t n, const char *entry_abs, const char *root, lb_check_report *rep,
		       char *err, size_t errlen)
{
	pysyntax *py = calloc(n ? n : 1, sizeof *py);
	int r = 0;
	if (!py)
		return -ENOMEM;
	rep->policy = cfg->policy;
	if (cfg->answer_probe) {
		rep->answer_probed = true;
		/* compile() verdicts are read by content: a probe would change what they count */
		if (cfg->python) {
			ck_answer_fail(rep);
			free(py);
			rep->files += n;
			return 0;
		}
	}
	if (cfg->python && n) {
		bool machinery = false;
		r = python_syntax_cached(cfg, abs, n, py, rep->syntax_by, sizeof rep->syntax_by,
					 &rep->syntax_cached, &machinery, err, errlen);
		if (r < 0) {
			if (machinery)
				rep->error_kind = LB_CHECK_ERR_MACHINERY;
			free(py);
			return r;
		}
	} else if (!rep->syntax_by[0]) {
		snprintf(rep->syntax_by, sizeof rep->syntax_by, "tree-sitter");
	}
	ck_stdlib *std = NULL;
	if (n && !cfg->imports_only) {
		lb_python_info info;
		char perr[512];
		bool have = (cfg->python || cfg->python_info) &&
			    syntax_interpreter(cfg, &info, perr, sizeof perr) == 0;
		rep->stdlib_floor = ck_stdlib_open(have ? &info : NULL, cfg->cache_dir, &std,
						   rep->stdlib_by, sizeof rep->stdlib_by) < 0;
	}
	/* Findings through the standard library depend on which one was read: its identity is
	 * part of every entry's key. */
	ck_cache cache;
	ck_cache_open(cfg, root, abs, n, ck_stdlib_id(std), &cache);
	if (cfg->answer_probe)
		probe_paths(cfg, shown, abs, n, entry_abs, &cache, rep);
	else
		r = check_parallel(cfg, std, shown, abs, n, entry_abs, py, &cache, rep, err, errlen);
	ck_cache_close(&cache);
	ck_stdlib_free(std);
	free(py);
	return r;
}

int lb_check_files(const lb_check_config *cfg, char *const paths[], size_t n,
		   lb_check_report *rep, char *err, size_t errlen)
{
	char **abs = calloc(n ? n : 1, sizeof *abs);
	int r = 0;
	if (!abs)
		return -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		abs[i] = realpath(paths[i], NULL);
		if (!abs[i]) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
		}
	}
	if (r == 0)
		r = check_paths(cfg, paths, abs, n, NULL, NULL, rep, err, errlen);
	for (size_t i = 0; i < n; i++)
		free(abs[i]);
	free(abs);
	return r;
}

typedef struct walk {
	char **rel, **abs;
	size_t n, cap;
	lb_check_report *rep; /* its unread_dirs: what the walk skipped, by identity */
	/* record: the directories read, and those skipped for what is in them, with their
	 * metadata as the walk found them, into listing (ck_walk_format's records) */
	bool record, fresh;
	int64_t trust_before_ns; /* a directory changed at or after this is not kept (fresh) */
	lb_buf listing;
	/* when not NULL, rel and abs point into it (a kept listing's names: one allocation) */
	char *arena;
	size_t arena_used, arena_cap;
	/* an entry whose path is past PATH_MAX, for the error: cut, it would name another file */
	char too_long[400];
} walk;

static void note_unread(walk *w, const char *abs)
{
	struct stat st;
	char id[64];
	if (!w->rep || lstat(abs, &st) < 0 || !S_ISDIR(st.st_mode))
		return;
	if (!w->rep->unread_dirs && !(w->rep->unread_dirs = json_object_new_array()))
		return;
	if (json_object_array_length(w->rep->unread_dirs) >= 4096)
		return;
	snprintf(id, sizeof id, "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	json_object_array_add(w->rep->unread_dirs, json_object_new_string(id));
}

/* Caches, version control, labbox's own records and virtual environments are not the
 * experiment. Every other directory is read, hidden or not, and whatever its name (an RL
 * experiment's `env/` package is code): the runtime gate compiles no file of the experiment
 * in a directory this skips (unread_by_check in src/gate/sitecustomize.py, the same list). */
static bool skip_by_name(const char *name)
{
	return strcmp(name, "__pycache__") == 0 || strcmp(name, ".git") == 0 ||
	       strcmp(name, ".labbox") == 0 || strcmp(name, "node_modules") == 0 ||
	       strcmp(name, "site-packages") == 0 || strcmp(name, "venv") == 0 ||
	       strcmp(name, ".venv") == 0;
}

/* name (a directory in the open directory dfd) holds a virtual environment's marker */
static bool is_env_dir(int dfd, const char *name)
{
	char p[NAME_MAX + 16];
	struct stat st;
	return (snprintf(p, sizeof p, "%s/pyvenv.cfg", name) < (int)sizeof p &&
		fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0) ||
	       (snprintf(p, sizeof p, "%s/conda-meta", name) < (int)sizeof p &&
		fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0);
}

/* A directory's record in the listing: "KIND DEV INO SIZE MODE MTIME CTIME LEN:REL\n". */
static void walk_note_dir(walk *w, char kind, const struct stat *st, const char *rel)
{
	if (!w->record)
		return;
	int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
	int64_t c = (int64_t)st->st_ctim.tv_sec * 1000000000ll + st->st_ctim.tv_nsec;
	if (m >= w->trust_before_ns || c >= w->trust_before_ns)
		w->fresh = true;
	if (lb_buf_printf(&w->listing, "%c %llu %llu %llu %llu %lld %lld %zu:%s\n", kind,
			  (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
			  (unsigned long long)st->st_size, (unsigned long long)st->st_mode,
			  (long long)m, (long long)c, strlen(rel), rel) < 0)
		w->record = false;
}

static int walk_add(walk *w, const char *rel, const char *abs)
{
	if (w->n >= CHECK_MAX_FILES)
		return -E2BIG;
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 64;
		char **a = realloc(w->rel, nc * sizeof *a);
		if (!a)
			return -ENOMEM;
		w->rel = a;
		char **b = realloc(w->abs, nc * sizeof *b);
		if (!b)
			return -ENOMEM;
		w->abs = b;
		w->cap = nc;
	}
	if (w->arena) {
		size_t rl = strlen(rel) + 1, al = strlen(abs) + 1;
		if (rl + al > w->arena_cap - w->arena_used)
			return -ENOMEM;
		w->rel[w->n] = memcpy(w->arena + w->arena_used, rel, rl);
		w->abs[w->n] = memcpy(w->arena + w->arena_used + rl, abs, al);
		w->arena_used += rl + al;
		w->n++;
		return 0;
	}
	w->rel[w->n] = strdup(rel);
	w->abs[w->n] = strdup(abs);
	if (!w->rel[w->n] || !w->abs[w->n]) {
		free(w->rel[w->n]);
		free(w->abs[w->n]);
		return -ENOMEM;
	}
	w->n++;
	if (w->record && lb_buf_printf(&w->listing, "f %zu:%s\n", strlen(rel), rel) < 0)
		w->record = false;
	return 0;
}

static int cmp_typed_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

/* snprintf(out, outlen, "%s%s%s", a, b, c), without the cost of a format; false when it
 * was cut to fit */
static bool join3(char *out, size_t outlen, const char *a, const char *b, const char *c)
{
	size_t o = 0;
	bool whole = true;
	const char *parts[3] = {a, b, c};
	for (int i = 0; i < 3; i++) {
		size_t k = strlen(parts[i]);
		if (k > outlen - 1 - o) {
			k = outlen - 1 - o;
			whole = false;
		}
		memcpy(out + o, parts[i], k);
		o += k;
	}
	out[o] = '\0';
	return whole;
}

static int walk_dir(walk *w, const char *abs, const char *rel, int depth)
{
	if (depth > 32)
		return 0;
	/* the directory's metadata before its entries are read: an entry added, removed or
	 * renamed after this changes its mtime and ctime */
	int fd = open(abs, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY);
	struct stat dst;
	if (fd >= 0 && w->record) {
		if (fstat(fd, &dst) == 0)
			walk_note_dir(w, 'd', &dst, rel);
		else
			w->record = false;
	}
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	int dfd = dirfd(d);
	/* names[i][0] is the entry's d_type, the name follows */
	char **names = NULL;
	size_t nn = 0, cap = 0;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (nn == cap) {
			size_t nc = cap ? cap * 2 : 32;
			char **nv = realloc(names, nc * sizeof *nv);
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			names = nv;
			cap = nc;
		}
		size_t k = strlen(e->d_name);
		if (!(names[nn] = malloc(k + 2))) {
			r = -ENOMEM;
			break;
		}
		names[nn][0] = (char)e->d_type;
		memcpy(names[nn] + 1, e->d_name, k + 1);
		nn++;
	}
	if (nn)
		qsort(names, nn, sizeof *names, cmp_typed_name);
	for (size_t i = 0; i < nn && r == 0; i++) {
		const char *name = names[i] + 1;
		unsigned char type = (unsigned char)names[i][0];
		size_t k = strlen(name);
		bool py = k > 3 && strcmp(name + k - 3, ".py") == 0;
		/* d_type says what lstat would for most file systems; a file that is not a .py
		 * needs neither its path nor a stat */
		if ((type == DT_REG && !py) || (type != DT_UNKNOWN && type != DT_REG && type != DT_DIR))
			continue;
		char cabs[PATH_MAX], crel[PATH_MAX];
		if (!join3(cabs, sizeof cabs, abs, "/", name) ||
		    !join3(crel, sizeof crel, rel, rel[0] ? "/" : "", name)) {
			snprintf(w->too_long, sizeof w->too_long, "%.60s.../%s", rel, name);
			r = -ENAMETOOLONG;
			break;
		}
		struct stat st;
		if (type == DT_UNKNOWN) {
			if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		if (type == DT_DIR) {
			if (skip_by_name(name)) {
				note_unread(w, cabs);
			} else if (is_env_dir(dfd, name)) {
				/* kept with its metadata: its marker removed changes them */
				if (w->record) {
					if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
						walk_note_dir(w, 'v', &st, crel);
					else
						w->record = false;
				}
				note_unread(w, cabs);
			} else {
				r = walk_dir(w, cabs, crel, depth + 1);
			}
		} else if (type == DT_REG) {
			if (py)
				r = walk_add(w, crel, cabs);
		}
	}
	closedir(d);
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return r;
}

static void walk_free(walk *w)
{
	for (size_t i = 0; !w->arena && i < w->n; i++) {
		free(w->rel[i]);
		free(w->abs[i]);
	}
	free(w->rel);
	free(w->abs);
	lb_buf_free(&w->listing);
	free(w->arena);
	memset(w, 0, sizeof *w);
}

/* ---- the walk's listing kept (answer probes only) ---------------------------------------------
 *
 * A warm check's walk read every directory again (getdents: for ext4's hashed directories a
 * quarter of a hit) to find the same files. The probe keeps what its walk found, per
 * experiment root, under cache_dir/check/walks/<sha256 of the schema and the root>:
 * "labbox.check-walk/1\n", the checksum of the rest in hex and "\n", "stamp NS\n" (the
 * coarse clock before the walk began), "root LEN:PATH\n", then in the walk's order a record
 * per directory read ("d"), per directory skipped for a virtual environment's marker in it
 * ("v"), with its metadata as the walk found it before reading it ("d|v DEV INO SIZE MODE
 * MTIME_NS CTIME_NS LEN:REL\n"), and per file found ("f LEN:REL\n"). A listing is used only
 * when every directory's metadata is as recorded and older than the stamp by more than a
 * timestamp tick (as the file table's records, ck_filestat_trusted): an entry added, removed
 * or renamed in a directory changes its mtime and ctime, and one made after the walk began
 * gets a time at least the stamp. Directories skipped by name are skipped whatever is in
 * them, and links are never followed by the walk, so nothing else decides what it finds. */
#define WALK_MAGIC "labbox.check-walk/1\n"
#define WALK_MAGIC_LEN (sizeof WALK_MAGIC - 1)
#define WALK_MAX (64u << 20)
#define WALK_TOUCH_S (6 * 3600)

static bool walk_num(const char **pp, const char *end, bool neg_ok, char stop, int64_t *out)
{
	const char *p = *pp;
	bool neg = false;
	if (neg_ok && p < end && *p == '-')
		neg = true, p++;
	uint64_t v = 0;
	size_t digits = 0;
	while (p < end && *p >= '0' && *p <= '9' && digits < 20) {
		uint64_t d = (uint64_t)(*p++ - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		digits++;
	}
	if (!digits || p >= end || *p != stop || (neg_ok && v > (uint64_t)INT64_MAX))
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	*pp = p + 1;
	return true;
}

/* "LEN:BYTES\n": a name without NUL bytes, less than PATH_MAX long */
static bool walk_name(const char **pp, const char *end, const char **name, size_t *len)
{
	int64_t k;
	const char *p = *pp;
	if (!walk_num(&p, end, false, ':', &k) || k >= PATH_MAX || (size_t)(end - p) < (size_t)k + 1 ||
	    p[k] != '\n' || memchr(p, '\0', (size_t)k))
		return false;
	*name = p;
	*len = (size_t)k;
	*pp = p + k + 1;
	return true;
}

int ck_walk_parse(const char *data, size_t len, const char *root, ck_walk_visit visit, void *arg)
{
	size_t head = WALK_MAGIC_LEN + 65;
	if (len < head || memcmp(data, WALK_MAGIC, WALK_MAGIC_LEN) != 0 || data[head - 1] != '\n')
		return -EBADMSG;
	lb_checksum c;
	uint8_t d[32];
	char hex[65];
	lb_checksum_init(&c);
	lb_checksum_update(&c, data + head, len - head);
	lb_checksum_final(&c, d);
	lb_sha256_hex(d, hex);
	if (memcmp(hex, data + WALK_MAGIC_LEN, 64) != 0)
		return -EBADMSG;
	const char *p = data + head, *end = data + len, *name;
	size_t k;
	int64_t stamp;
	if ((size_t)(end - p) < 6 || memcmp(p, "stamp ", 6) != 0)
		return -EBADMSG;
	p += 6;
	if (!walk_num(&p, end, false, '\n', &stamp) || (size_t)(end - p) < 5 ||
	    memcmp(p, "root ", 5) != 0)
		return -EBADMSG;
	p += 5;
	if (!walk_name(&p, end, &name, &k) || (root && (strlen(root) != k || memcmp(name, root, k) != 0)))
		return -EBADMSG;
	int64_t s = stamp / 1000000000ll;
	int64_t trust_before = s > 1 ? (s - 1) * 1000000000ll : INT64_MIN;
	while (p < end) {
		char kind = *p;
		if ((kind != 'd' && kind != 'v' && kind != 'f') || end - p < 2 || p[1] != ' ')
			return -EBADMSG;
		p += 2;
		ck_walk_rec rec = {.kind = kind, .trust_before_ns = trust_before};
		if (kind != 'f') {
			int64_t v[4];
			for (int i = 0; i < 4; i++)
				if (!walk_num(&p, end, false, ' ', &v[i]))
					return -EBADMSG;
			rec.dev = (uint64_t)v[0];
			rec.ino = (uint64_t)v[1];
			rec.size = (uint64_t)v[2];
			rec.mode = (uint64_t)v[3];
			if (!walk_num(&p, end, true, ' ', &rec.mtime_ns) ||
			    !walk_num(&p, end, true, ' ', &rec.ctime_ns))
				return -EBADMSG;
		}
		if (!walk_name(&p, end, &rec.rel, &rec.rel_len))
			return -EBADMSG;
		int r = visit ? visit(&rec, arg) : 0;
		if (r < 0)
			return r;
	}
	return 0;
}

/* cache_dir/check/walks, unless the cache is inside the experiment (then the experiment's
 * to write, as ck_cache_open says), and the listing's name there; -1 when none. */
static int walk_cache_dir(const lb_check_config *cfg, const char *root, char name[65])
{
	char path[PATH_MAX];
	if (!cfg->cache_dir ||
	    snprintf(path, sizeof path, "%s/check/walks", cfg->cache_dir) >= (int)sizeof path)
		return -1;
	char *real = realpath(cfg->cache_dir, NULL);
	size_t k = strlen(root);
	bool inside = real && strncmp(real, root, k) == 0 && (real[k] == '/' || real[k] == '\0');
	free(real);
	if (inside)
		return -1;
	/* check/ first, as the packs have it (a missing parent would be made 0755) */
	path[strlen(path) - 6] = '\0';
	int pfd = lb_open_private_dir(path);
	if (pfd < 0)
		return -1;
	close(pfd);
	path[strlen(path)] = '/';
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "schema", WALK_MAGIC, WALK_MAGIC_LEN);
	ck_cache_key_part(&c, "labbox", LABBOX_VERSION, strlen(LABBOX_VERSION));
	ck_cache_key_part(&c, "root", root, k);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, name);
	int fd = lb_open_private_dir(path);
	return fd < 0 ? -1 : fd;
}

typedef struct walk_load_ctx {
	walk *w;
	const char *root;
	bool ok;
} walk_load_ctx;

static int walk_visit(const ck_walk_rec *rec, void *arg)
{
	walk_load_ctx *x = arg;
	char rel[PATH_MAX], abs[PATH_MAX];
	memcpy(rel, rec->rel, rec->rel_len);
	rel[rec->rel_len] = '\0';
	if (rec->rel_len)
		join3(abs, sizeof abs, x->root, "/", rel);
	else
		join3(abs, sizeof abs, x->root, "", "");
	if (rec->kind == 'f')
		return rec->rel_len ? walk_add(x->w, rel, abs) : -EBADMSG;
	struct stat st;
	if (fstatat(AT_FDCWD, abs, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return -ESTALE;
	int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	int64_t c = (int64_t)st.st_ctim.tv_sec * 1000000000ll + st.st_ctim.tv_nsec;
	if ((uint64_t)st.st_dev != rec->dev || (uint64_t)st.st_ino != rec->ino ||
	    (uint64_t)st.st_size != rec->size || (uint64_t)st.st_mode != rec->mode ||
	    m != rec->mtime_ns || c != rec->ctime_ns || m >= rec->trust_before_ns ||
	    c >= rec->trust_before_ns)
		return -ESTALE;
	if (rec->kind == 'd' && !rec->rel_len)
		x->ok = true; /* the root itself is among what was read */
	return 0;
}

/* The kept listing of root into w (files in the walk's order), or nonzero and w empty. */
static int walk_load(walk *w, int cdfd, const char *name, const char *root)
{
	int fd = openat(cdfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	struct stat st;
	char *data = NULL;
	int r = -EBADMSG;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 022) && st.st_size > 0 && (uint64_t)st.st_size <= WALK_MAX &&
	    (data = malloc((size_t)st.st_size))) {
		size_t got = 0;
		while (got < (size_t)st.st_size) {
			ssize_t k = pread(fd, data + got, (size_t)st.st_size - got, (off_t)got);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		walk_load_ctx x = {.w = w, .root = root};
		/* every name twice, the second after the root: at most one file a 5 bytes of
		 * listing ("f 1:x\n") */
		size_t files = got / 5 + 1, rl = strlen(root) + 2;
		w->arena_cap = 2 * got + files * (rl + 2);
		w->arena_used = 0;
		w->arena = malloc(w->arena_cap);
		if (got == (size_t)st.st_size && w->arena)
			r = ck_walk_parse(data, got, root, walk_visit, &x);
		if (r == 0 && !x.ok)
			r = -EBADMSG;
		if (r == 0 && time(NULL) - st.st_mtim.tv_sec > WALK_TOUCH_S)
			futimens(fd, NULL); /* used now: pruned by modification time */
	}
	free(data);
	close(fd);
	if (r < 0) {
		lb_check_report *rep = w->rep;
		walk_free(w);
		w->rep = rep;
	}
	return r;
}

int ck_walk_format(int64_t stamp, const char *root, const char *recs, size_t len, lb_buf *out)
{
	lb_buf body = {0};
	uint8_t d[32];
	char hex[65];
	int r = lb_buf_printf(&body, "stamp %lld\nroot %zu:%s\n", (long long)stamp, strlen(root),
			      root);
	if (r == 0)
		r = lb_buf_append(&body, recs ? recs : "", len);
	if (r == 0) {
		lb_checksum c;
		lb_checksum_init(&c);
		lb_checksum_update(&c, body.data, body.len);
		lb_checksum_final(&c, d);
		lb_sha256_hex(d, hex);
		r = lb_buf_printf(out, "%s%s\n", WALK_MAGIC, hex);
	}
	if (r == 0)
		r = lb_buf_append(out, body.data, body.len);
	lb_buf_free(&body);
	return r;
}

static void walk_store(walk *w, int cdfd, const char *name, const char *root, int64_t stamp)
{
	lb_buf b = {0};
	if (ck_walk_format(stamp, root, w->listing.data, w->listing.len, &b) == 0 &&
	    b.len <= WALK_MAX && lb_replace_file_at(cdfd, name, b.data, b.len) == 0)
		ck_cache_prune_all(cdfd);
	lb_buf_free(&b);
}

/* The experiment's files under root: from the kept listing when an answer is only looked
 * for and every directory is as it was, else walked (and the listing kept for the next). */
static int walk_root(const lb_check_config *cfg, walk *w, const char *root)
{
	char name[65];
	int cdfd = cfg->answer_probe ? walk_cache_dir(cfg, root, name) : -1;
	if (cdfd >= 0 && walk_load(w, cdfd, name, root) == 0) {
		close(cdfd);
		return 0;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	int64_t stamp = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	int64_t s = (int64_t)now.tv_sec;
	w->record = cdfd >= 0;
	w->trust_before_ns = s > 1 ? (s - 1) * 1000000000ll : INT64_MIN;
	int r = walk_dir(w, root, "", 0);
	/* a listing with a directory changed since the stamp's tick would never be used */
	if (r == 0 && w->record && !w->fresh)
		walk_store(w, cdfd, name, root, stamp);
	if (cdfd >= 0)
		close(cdfd);
	return r;
}

/* The experiment's labbox.yaml (or .yml) into cfg: its check:, plan:, budget and entry. */
static int load_dir_yaml(lb_check_config *cfg, const char *root, char *err, size_t errlen)
{
	const char *yamls[] = {"labbox.yaml", "labbox.yml"};
	for (size_t i = 0; i < 2; i++) {
		char p[PATH_MAX];
		char *text = NULL;
		size_t len = 0;
		snprintf(p, sizeof p, "%s/%s", root, yamls[i]);
		int r = lb_read_file_at(AT_FDCWD, p, 1u << 20, &text, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", p, strerror(-r));
			return r;
		}
		r = lb_check_config_load_yaml(cfg, text, len, err, errlen);
		free(text);
		return r;
	}
	return 0;
}

int lb_check_dir_config_valid(const char *dir, char *err, size_t errlen)
{
	lb_check_config *cfg = NULL;
	int r = lb_check_config_new(&cfg);
	if (r == 0)
		r = load_dir_yaml(cfg, dir, err, errlen);
	lb_check_config_free(cfg);
	return r;
}

int lb_check_dir(const lb_check_config *base, const char *dir, lb_check_report *rep, char *err,
		 size_t errlen)
{
	lb_check_config *cfg = NULL;
	walk w = {0};
	char *root = realpath(dir, NULL);
	int r;
	if (!root) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return r;
	}
	r = ck_config_copy(base, &cfg);
	if (r < 0)
		goto out;
	if ((r = load_dir_yaml(cfg, root, err, errlen)) < 0) {
		rep->error_kind = LB_CHECK_ERR_CONFIG;
		goto out;
	}
	if (!cfg->entry) {
		/* main.py, or the first entry point of another language the directory has */
		const char *entry = lb_lang_default_entry(root);
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", root, entry);
		if (access(p, F_OK) == 0)
			r = lb_check_config_set_entry(cfg, entry);
		if (r < 0)
			goto out;
	}
	lb_lang lang = lb_lang_of_entry(cfg->entry);
	if (lang != LB_LANG_PYTHON)
		ck_answer_fail(rep);
	if (lang == LB_LANG_R || lang == LB_LANG_OCTAVE) {
		r = ck_check_lang_dir(cfg, (int)lang, root, rep, err, errlen);
		goto out;
	}
	if (lang != LB_LANG_PYTHON) {
		/* No parser of that language here: not checked is not passed. */
		r = ck_report_add(rep, cfg->entry, 1, 1, R_UNPARSED,
				  cfg->policy == LB_CHECK_PERMISSIVE ? LB_CHECK_WARNING : LB_CHECK_ERROR,
				  "labbox has no static check of this language; the gate cannot "
				  "read it (--policy permissive runs it unchecked)", NULL);
		goto out;
	}
	w.rep = rep;
	r = walk_root(cfg, &w, root);
	if (r == -ENAMETOOLONG && w.too_long[0]) {
		/* Nothing was judged: the check cannot open what it cannot name. */
		rep->error_kind = LB_CHECK_ERR_MACHINERY;
		snprintf(err, errlen,
			 "'%s' in %s: its path is longer than %d bytes, which the check cannot read",
			 w.too_long, dir, PATH_MAX - 1);
		goto out;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(-r));
		goto out;
	}
	/* The experiment's own modules are on the import allowlist. */
	char prev[256] = "";
	for (size_t i = 0; i < w.n && r == 0; i++) {
		char mod[256];
		join3(mod, sizeof mod, w.rel[i], "", "");
		char *slash = strchr(mod, '/');
		if (slash)
			*slash = '\0';
		else
			mod[strlen(mod) - 3] = '\0';
		/* files come grouped by directory: the previous one's module is already listed */
		if (i > 0 && strcmp(mod, prev) == 0)
			continue;
		if (!ck_list_match(&cfg->local_modules, mod))
			r = ck_list_add(&cfg->local_modules, mod, false);
		memcpy(prev, mod, sizeof prev);
	}
	char entry[PATH_MAX];
	snprintf(entry, sizeof entry, "%s/%s", root, cfg->entry ? cfg->entry : "main.py");
	if (r == 0)
		r = check_paths(cfg, w.rel, w.abs, w.n, entry, root, rep, err, errlen);
	if (r == 0)
		ck_answer_fold_config(rep, cfg);
	if (r == 0 && !cfg->answer_probe) {
		ck_raws raws = {0};
		r = ck_budget(cfg, &raws);
		if (r == 0)
			r = ck_settle(cfg, "labbox.yaml", "", (TSNode){0}, &raws, rep);
		ck_raws_free(&raws);
	}
out:
	walk_free(&w);
	lb_check_config_free(cfg);
	free(root);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int lb_check_dir_imports(const char *dir, const char *entry, char ***out, size_t *n, char *err,
			 size_t errlen)
{
	lb_check_config *cfg = NULL;
	lb_check_report rep;
	memset(&rep, 0, sizeof rep);
	*out = NULL;
	*n = 0;
	/* Syntax by tree-sitter alone: no interpreter is chosen yet, and none runs here. */
	int r = lb_check_config_new(&cfg);
	if (r == 0)
		r = lb_check_config_set_policy(cfg, LB_CHECK_PERMISSIVE);
	if (r == 0 && entry)
		r = lb_check_config_set_entry(cfg, entry);
	if (r == 0) {
		cfg->imports_only = true;
		r = lb_check_dir(cfg, dir, &rep, err, errlen);
	}
	size_t cnt = rep.imports ? (size_t)json_object_object_length(rep.imports) : 0;
	char **v = r == 0 ? calloc(cnt + 1, sizeof *v) : NULL;
	if (r == 0 && !v)
		r = -ENOMEM;
	if (r == 0 && rep.imports) {
		json_object_object_foreach(rep.imports, k, val) {
			(void)val;
			if (!(v[*n] = strdup(k))) {
				r = -ENOMEM;
				break;
			}
			(*n)++;
		}
	}
	if (r == 0) {
		qsort(v, *n, sizeof *v, cmp_str);
		*out = v;
	} else if (v) {
		for (size_t i = 0; i < *n; i++)
			free(v[i]);
		free(v);
		*n = 0;
	}
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	return r;
}
