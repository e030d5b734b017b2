/* Interpreter probing: where a Python lives and what it has installed (the freeze, cached). */
#include "labbox/record.h"
#include "labbox/env.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"
#include "env_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char probe_src[] =
	"import sys, platform\n"
	"print(sys.executable)\n"
	"print(sys.prefix)\n"
	"print(sys.base_prefix)\n"
	"print(platform.python_version())\n"
	"print(sys.implementation.name)\n"
	"try:\n"
	"    f = repr((sys.base_prefix, sys.base_exec_prefix, getattr(sys, 'platlibdir', ''),\n"
	"              tuple(sys.version_info[:2]), sys.implementation.name))\n"
	"    import sysconfig\n"
	"    s = set()\n"
	"    for k in ('stdlib', 'platstdlib'):\n"
	"        for v in (None, {'base': sys.base_prefix, 'platbase': sys.base_prefix}):\n"
	"            s.add(sysconfig.get_path(k, vars=v))\n"
	"    s = sorted(s)\n"
	"    if len(s) > 2 or not all(isinstance(p, str) and p and '\\n' not in p for p in s):\n"
	"        s = []\n"
	"except Exception:\n"
	"    s = []\n"
	"if not s or '\\n' in f:\n"
	"    s, f = [], '-'\n"
	"print(f)\n"
	"print(len(s))\n"
	"for p in s:\n"
	"    print(p)\n";

static const char freeze_src[] =
	"import importlib.metadata as m\n"
	"seen = {}\n"
	"for d in m.distributions():\n"
	"    n = d.metadata['Name']\n"
	"    if n and n.lower() not in seen:\n"
	"        seen[n.lower()] = '%s==%s' % (n, d.version)\n"
	"print('\\n'.join(sorted(seen.values(), key=str.lower)))\n";

const char *lb_python_freeze_source(void)
{
	return freeze_src;
}

static int next_line(char **cursor, char *out, size_t n)
{
	char *s = *cursor;
	if (!s || !*s)
		return -EINVAL;
	char *nl = strchr(s, '\n');
	size_t len = nl ? (size_t)(nl - s) : strlen(s);
	if (len == 0 || len >= n)
		return -EINVAL;
	memcpy(out, s, len);
	out[len] = '\0';
	*cursor = nl ? nl + 1 : s + len;
	return 0;
}

/* The probe's lines, as probe_src prints them: five, then the standard library's paths
 * (their count, then each), which only the gate's start-up uses: any doubt leaves them
 * unknown, never the probe failed. */
static int parse_probe(char *data, lb_python_info *out)
{
	memset(out, 0, sizeof *out);
	char *cur = data;
	if (next_line(&cur, out->executable, sizeof out->executable) < 0 ||
	    next_line(&cur, out->prefix, sizeof out->prefix) < 0 ||
	    next_line(&cur, out->base_prefix, sizeof out->base_prefix) < 0 ||
	    next_line(&cur, out->version, sizeof out->version) < 0 ||
	    next_line(&cur, out->implementation, sizeof out->implementation) < 0 ||
	    out->executable[0] != '/')
		return -ENOEXEC;
	char count[16];
	if (next_line(&cur, out->stdlib_for, sizeof out->stdlib_for) < 0 ||
	    next_line(&cur, count, sizeof count) < 0 || (strcmp(count, "1") && strcmp(count, "2"))) {
		out->stdlib_for[0] = '\0';
		return 0;
	}
	unsigned n = (unsigned)(count[0] - '0');
	for (unsigned i = 0; i < n; i++)
		if (next_line(&cur, out->stdlib[i], sizeof out->stdlib[i]) < 0 ||
		    out->stdlib[i][0] != '/') {
			out->stdlib_for[0] = '\0';
			return 0;
		}
	out->n_stdlib = n;
	return 0;
}

int lb_python_probe(const char *path, lb_python_info *out, char *err, size_t errlen)
{
	LB_AUTOFREE char *exe = NULL;
	int r = lb_find_executable(path, &exe);
	if (r < 0) {
		snprintf(err, errlen, "interpreter '%s' %s", path,
			 r == -ENOENT ? "not found" : "is not executable");
		return r;
	}
	char *argv[] = {exe, "-I", "-c", (char *)probe_src, NULL};
	lb_buf b = {0};
	int st = 0;
	r = lb_capture_bounded(argv, 64 * 1024, false, LB_PYTHON_PROBE_SECONDS, &b, &st);
	if (r == -ETIMEDOUT) {
		lb_buf_free(&b);
		snprintf(err, errlen, "interpreter '%s' did not answer its probe in %d s (killed)",
			 exe, LB_PYTHON_PROBE_SECONDS);
		return r;
	}
	if (r < 0) {
		lb_buf_free(&b);
		snprintf(err, errlen, "could not run interpreter '%s': %s", exe, strerror(-r));
		return r;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !b.data || parse_probe(b.data, out) < 0) {
		lb_buf_free(&b);
		snprintf(err, errlen, "'%s' is not a working Python interpreter", exe);
		return -ENOEXEC;
	}
	lb_buf_free(&b);
	return 0;
}

/* Interpreters the experiment chose ----------------------------------------------------- */

int lb_python_expose(lb_sandbox *sb, const lb_python_info *py, bool origin_visible)
{
	if (!py->confined)
		return lb_sandbox_expose_python(sb, py->executable, py->prefix, py->base_prefix);
	/* What the interpreter said of itself is the experiment's word: it could name /root as
	 * its prefix. Only what labbox derives from the path it was named by is exposed. */
	if (lb_path_under(py->named, py->origin) || lb_path_under(py->executable, py->origin)) {
		if (!origin_visible) {
			/* an origin that is a home, or above one, is not shown: the program alone */
			if (!lb_sandbox_dir_exposable(sb, py->origin) &&
			    lb_sandbox_path_hidden(sb, py->origin))
				return lb_sandbox_add_bind(sb, py->named, py->named, false);
			int r = lb_sandbox_add_bind(sb, py->origin, NULL, false);
			if (r < 0)
				return r;
		}
	}
	if (!lb_path_under(py->named, py->origin))
		return lb_sandbox_expose_program(sb, py->named);
	return 0;
}

/* Run an interpreter the experiment chose, with script, in a sandbox of its own: no network,
 * the host read-only with the homes hidden, a private /tmp. res says how it ended when 0. */
int lb_python_sandbox_script(const lb_python_info *py, const char *script,
			     const char *const *args, size_t max, double budget, lb_buf *out,
			     lb_sandbox_result *res)
{
	char *argv[4 + 32 + 1] = {(char *)py->executable, "-I", "-c", (char *)script};
	size_t n = 4;
	for (size_t i = 0; args && args[i]; i++) {
		/* The exec would fail inside the sandbox, as a setup failure nobody reads */
		if (n == 4 + 32 || strlen(args[i]) >= 128 * 1024)
			return -E2BIG;
		argv[n++] = (char *)args[i];
	}
	argv[n] = NULL;
	lb_sandbox *sb = NULL;
	int r = lb_sandbox_new(&sb);
	if (r < 0)
		return r;
	r = lb_python_expose(sb, py, false);
	/* An experiment's interpreter runs its venv's .pth files here: labbox's records are out
	 * of their sight as of the run's own code (what they print reaches the run's records). */
	if (r == 0)
		r = lb_record_hide_known(sb);
	if (r == 0)
		r = lb_sandbox_set_argv(sb, argv);
	if (r == 0)
		r = lb_sandbox_set_budget(sb, budget);
	if (r == 0 && py->confined && py->have_limits)
		r = lb_sandbox_apply_limits(sb, &py->limits);
	if (r == 0)
		r = lb_sandbox_set_cgroup_accounting(sb, false);
	if (r == 0)
		r = lb_sandbox_capture(sb, max, out, res);
	lb_sandbox_free(sb);
	return r;
}

/* The probe and the freeze: an interpreter that does not answer is not a working one. */
static int run_confined(const lb_python_info *py, const char *script, size_t max, lb_buf *out,
			char *err, size_t errlen)
{
	lb_sandbox_result res;
	int r = lb_python_sandbox_script(py, script, NULL, max, LB_PYTHON_PROBE_SECONDS, out, &res);
	if (r < 0)
		snprintf(err, errlen, "could not run interpreter '%s' in the sandbox: %s",
			 py->executable, strerror(-r));
	else if (res.outcome == LB_SB_SETUP_FAILED)
		snprintf(err, errlen, "could not run interpreter '%s' in the sandbox: %s",
			 py->executable, res.setup_error);
	else if (res.outcome != LB_SB_EXITED || res.exit_code != 0)
		snprintf(err, errlen, "'%s' is not a working Python interpreter (run in the sandbox)",
			 py->executable);
	if (r == 0 && (res.outcome != LB_SB_EXITED || res.exit_code != 0))
		r = -ENOEXEC;
	return r;
}

int env_run_in_sandbox(const lb_python_info *py, const char *script, size_t max, double budget,
		       lb_buf *out, bool *timed_out, char *err, size_t errlen)
{
	lb_sandbox_result res;
	*timed_out = false;
	int r = lb_python_sandbox_script(py, script, NULL, max, budget, out, &res);
	if (r < 0)
		snprintf(err, errlen, "could not run '%s' in the sandbox: %s", py->executable,
			 strerror(-r));
	else if (res.outcome == LB_SB_SETUP_FAILED)
		snprintf(err, errlen, "could not run '%s' in the sandbox: %s", py->executable,
			 res.setup_error);
	else if (res.timed_out)
		snprintf(err, errlen, "'%s' did not finish within %.0f s in the sandbox",
			 py->executable, budget);
	else if (res.outcome != LB_SB_EXITED || res.exit_code != 0)
		snprintf(err, errlen, "'%s' failed in the sandbox (status %d)", py->executable,
			 lb_sandbox_exit_status(&res));
	if (r == 0 && res.timed_out)
		*timed_out = true;
	if (r == 0 && (res.outcome != LB_SB_EXITED || res.exit_code != 0))
		r = -ENOEXEC;
	return r;
}

int lb_python_probe_confined(const char *path, const char *expdir,
			     const lb_sandbox_limits *lim, lb_python_info *out, char *err,
			     size_t errlen)
{
	lb_python_info py;
	memset(&py, 0, sizeof py);
	py.confined = true;
	py.have_limits = lim != NULL;
	if (lim)
		py.limits = *lim;
	snprintf(py.origin, sizeof py.origin, "%s", expdir);
	LB_AUTOFREE char *found = NULL;
	int r = 0;
	/* A path with a slash is the experiment's: relative to its directory, not to where
	 * labbox happened to be started. A bare name is looked up on PATH. */
	if (path[0] == '/')
		found = strdup(path);
	else if (strchr(path, '/'))
		r = asprintf(&found, "%s/%s", expdir, path) < 0 ? -ENOMEM : 0;
	else
		r = lb_find_executable(path, &found);
	if (r == 0 && !found)
		r = -ENOMEM;
	char abs[PATH_MAX];
	if (r == 0 && found[0] != '/' && !realpath(found, abs))
		r = -errno;
	if (r == 0 && found[0] != '/')
		snprintf(py.named, sizeof py.named, "%s", abs);
	else if (r == 0)
		snprintf(py.named, sizeof py.named, "%s", found);
	struct stat stt;
	if (r == 0 && (stat(py.named, &stt) < 0 || !S_ISREG(stt.st_mode)))
		r = -ENOENT;
	else if (r == 0 && access(py.named, X_OK) < 0)
		r = -EACCES;
	if (r < 0) {
		snprintf(err, errlen, "interpreter '%s' (python: in labbox.yaml) %s", path,
			 r == -ENOENT ? "not found" : r == -EACCES ? "is not executable"
						    : strerror(-r));
		return r;
	}
	snprintf(py.executable, sizeof py.executable, "%s", py.named);
	lb_buf b = {0};
	r = run_confined(&py, probe_src, 64 * 1024, &b, err, errlen);
	lb_python_info said;
	if (r == 0 && (!b.data || parse_probe(b.data, &said) < 0)) {
		snprintf(err, errlen, "'%s' is not a working Python interpreter", py.named);
		r = -ENOEXEC;
	}
	lb_buf_free(&b);
	if (r < 0)
		return r;
	said.confined = true;
	memcpy(said.named, py.named, sizeof said.named);
	memcpy(said.origin, py.origin, sizeof said.origin);
	said.limits = py.limits;
	said.have_limits = py.have_limits;
	*out = said;
	return 0;
}

static void move_under(char *path, size_t n, const char *from, const char *to)
{
	if (!lb_path_under(path, from))
		return;
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s%s", to, path + strlen(from)) < (int)sizeof tmp)
		snprintf(path, n, "%s", tmp);
}

void lb_python_restage(lb_python_info *py, const char *stage_dir)
{
	if (!py->confined)
		return;
	move_under(py->executable, sizeof py->executable, py->origin, stage_dir);
	move_under(py->named, sizeof py->named, py->origin, stage_dir);
	move_under(py->prefix, sizeof py->prefix, py->origin, stage_dir);
	move_under(py->base_prefix, sizeof py->base_prefix, py->origin, stage_dir);
	snprintf(py->origin, sizeof py->origin, "%s", stage_dir);
}

int lb_python_freeze_of(const lb_python_info *py, const char *cache_dir, char **out, bool *hit)
{
	*hit = false;
	if (!py->confined)
		return cache_dir ? lb_python_freeze_cached(py->executable, cache_dir, out, hit)
				 : lb_python_freeze(py->executable, out);
	lb_buf b = {0};
	char err[512];
	int r = run_confined(py, freeze_src, 4 * 1024 * 1024, &b, err, sizeof err);
	if (r < 0) {
		lb_buf_free(&b);
		return r;
	}
	*out = b.data ? b.data : strdup("");
	return *out ? 0 : -ENOMEM;
}

int lb_python_freeze(const char *executable, char **out)
{
	char *argv[] = {(char *)executable, "-I", "-c", (char *)freeze_src, NULL};
	lb_buf b = {0};
	int st = 0;
	int r = lb_capture_bounded(argv, 4 * 1024 * 1024, false, LB_PYTHON_PROBE_SECONDS, &b, &st);
	if (r == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		r = -ENOEXEC;
	if (r < 0) {
		lb_buf_free(&b);
		return r;
	}
	*out = b.data ? b.data : strdup("");
	return *out ? 0 : -ENOMEM;
}

/* pip freeze cache ----------------------------------------------------------------------- */

/* Largest cache entry read back; a list this long is 100 000 distributions. */
#define FREEZE_CACHE_MAX ((size_t)16 << 20)
#define FREEZE_OUTPUT_MAX ((size_t)5 << 20)
#define FREEZE_MARK "--labbox-freeze--\n"
#define FREEZE_SCHEMA "labbox.freeze-cache/1"

/* Printed before the listing, so that an install racing with it leaves stats older than the
 * list: the next run sees a change and lists again. Paths holding a newline or tab cannot be
 * recorded in this format and are left out. A search path that exists is recorded whatever it
 * is (a zip on sys.path holds distributions too). */
const char env_stat_src[] =
	"import os, sys\n"
	"def _lb_stat():\n"
	"    try:\n"
	"        import site\n"
	"        cand = list(site.getsitepackages())\n"
	"    except Exception:\n"
	"        cand = []\n"
	"    seen = set()\n"
	"    w = sys.stdout.buffer.write\n"
	"    for p in cand + list(sys.path):\n"
	"        if not p:\n"
	"            continue\n"
	"        p = os.path.abspath(p)\n"
	"        b = os.fsencode(p)\n"
	"        if p in seen or b'\\n' in b or b'\\t' in b:\n"
	"            continue\n"
	"        seen.add(p)\n"
	"        try:\n"
	"            st = os.stat(p)\n"
	"        except OSError:\n"
	"            w(b'N\\t' + b + b'\\n')\n"
	"            continue\n"
	"        w(b'E\\t%d\\t%d\\t%d\\t%d\\t%d\\t' % (st.st_dev, st.st_ino, st.st_size,\n"
	"          st.st_mtime_ns, st.st_ctime_ns) + b + b'\\n')\n"
	"    w(b'" "--labbox-freeze--" "\\n')\n"
	"    sys.stdout.flush()\n"
	"_lb_stat()\n";


void env_stat_of(const struct stat *st, env_stat *fs)
{
	fs->v[0] = (int64_t)st->st_dev;
	fs->v[1] = (int64_t)st->st_ino;
	fs->v[2] = (int64_t)st->st_size;
	fs->v[3] = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	fs->v[4] = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

struct json_object *env_stat_json(const env_stat *fs)
{
	struct json_object *a = json_object_new_array_ext(5);

	for (int i = 0; a && i < 5; i++)
		json_object_array_add(a, json_object_new_int64(fs->v[i]));
	return a;
}

/* Whether the JSON array a holds exactly the stat of path now (NULL a: path must not exist). */
bool env_stat_matches(const char *path, struct json_object *a)
{
	struct stat st;
	env_stat now;

	if (stat(path, &st) < 0)
		return !a && (errno == ENOENT || errno == ENOTDIR);
	if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) != 5)
		return false;
	env_stat_of(&st, &now);
	for (size_t i = 0; i < 5; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) != now.v[i])
			return false;
	}
	return true;
}

void env_sha(const char *text, char hex[65])
{
	lb_sha256_buf_hex(text, strlen(text), hex);
}

bool env_json_str_is(struct json_object *o, const char *key, const char *want)
{
	struct json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), want) == 0;
}

static void json_putp_(struct json_object **o)
{
	json_object_put(*o);
}

/* The cached list when the entry is whole, for this executable, and nothing it depends on
 * changed; NULL otherwise (missing, corrupt, stale). */
static char *freeze_cache_lookup(int dfd, const char *name, const char *executable)
{
	__attribute__((cleanup(json_putp_))) struct json_object *doc = NULL;
	LB_AUTOFREE char *data = NULL;
	struct json_object *v, *paths, *freeze;
	struct json_tokener *tok;
	char hex[65];
	size_t len = 0;

	if (lb_read_file_at(dfd, name, FREEZE_CACHE_MAX, &data, &len) < 0 || len == 0 ||
	    len >= INT32_MAX)
		return NULL;
	tok = json_tokener_new();
	if (!tok)
		return NULL;
	doc = json_tokener_parse_ex(tok, data, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success)
		json_object_put(lb_steal_ptr(&doc));
	json_tokener_free(tok);
	if (!json_object_is_type(doc, json_type_object) ||
	    !env_json_str_is(doc, "schema", FREEZE_SCHEMA) ||
	    !env_json_str_is(doc, "executable", executable) ||
	    !json_object_object_get_ex(doc, "freeze", &freeze) ||
	    !json_object_is_type(freeze, json_type_string) ||
	    !json_object_object_get_ex(doc, "sha256", &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	env_sha(json_object_get_string(freeze), hex);
	if (strcmp(hex, json_object_get_string(v)) != 0)
		return NULL;
	if (!json_object_object_get_ex(doc, "exe", &v) || !env_stat_matches(executable, v) || !v)
		return NULL;
	if (!json_object_object_get_ex(doc, "paths", &paths) ||
	    !json_object_is_type(paths, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(paths); i++) {
		struct json_object *p = json_object_array_get_idx(paths, i), *path, *st;

		if (!json_object_is_type(p, json_type_object) ||
		    !json_object_object_get_ex(p, "path", &path) ||
		    !json_object_is_type(path, json_type_string) ||
		    !json_object_object_get_ex(p, "stat", &st) ||
		    !env_stat_matches(json_object_get_string(path), st))
			return NULL;
	}
	return strdup(json_object_get_string(freeze));
}

/* "E\t<5 numbers>\t<path>" or "N\t<path>" -> {"path", "stat": [..]|null}; NULL when the line
 * is not one. */
struct json_object *env_path_line(const char *line)
{
	struct json_object *o;
	env_stat fs;
	const char *path;

	if (line[0] == 'N' && line[1] == '\t') {
		path = line + 2;
		o = json_object_new_object();
		if (o) {
			json_object_object_add(o, "path", json_object_new_string(path));
			json_object_object_add(o, "stat", NULL);
		}
		return o;
	}
	if (line[0] != 'E' || line[1] != '\t')
		return NULL;
	path = line + 2;
	for (int i = 0; i < 5; i++) {
		char *end;

		errno = 0;
		fs.v[i] = (int64_t)strtoll(path, &end, 10);
		if (errno || end == path || *end != '\t')
			return NULL;
		path = end + 1;
	}
	o = json_object_new_object();
	if (o) {
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "stat", env_stat_json(&fs));
	}
	return o;
}

/* No fsync: an entry a crash leaves empty or cut fails validation and is rebuilt. */
static void freeze_cache_store(int dfd, const char *name, const char *text)
{
	if (lb_replace_file_at(dfd, name, text, strlen(text)) == 0)
		lb_cache_bound_like(dfd, name, LB_CACHE_PER_INTERPRETER_MAX);
}

/* The cache directory, or -1 when there is none labbox may trust. */
int env_cache_dir(const char *cache_dir)
{
	int fd = lb_open_private_dir(cache_dir);
	return fd < 0 ? -1 : fd;
}

int lb_python_freeze_cached(const char *executable, const char *cache_dir, char **out, bool *hit)
{
	LB_AUTOCLOSE int dfd = -1;
	LB_AUTOFREE char *script = NULL;
	__attribute__((cleanup(json_putp_))) struct json_object *entry = NULL;
	struct json_object *paths;
	char name[64], hex[65];
	struct stat exe_st;
	env_stat exe_fs;
	lb_buf b = { 0 };
	char *mark, *list;
	int st = 0, r;

	*hit = false;
	*out = NULL;
	dfd = env_cache_dir(cache_dir);
	if (dfd < 0 || stat(executable, &exe_st) < 0)
		return lb_python_freeze(executable, out);
	env_sha(executable, hex);
	snprintf(name, sizeof(name), "freeze-%.32s.json", hex);
	*out = freeze_cache_lookup(dfd, name, executable);
	if (*out) {
		lb_cache_entry_used(dfd, name);
		*hit = true;
		return 0;
	}
	/* Stat the executable before the listing, as the script does the directories. */
	env_stat_of(&exe_st, &exe_fs);
	if (asprintf(&script, "%s%s", env_stat_src, freeze_src) < 0)
		return -ENOMEM;
	{
		char *argv[] = { (char *)executable, "-I", "-c", script, NULL };

		r = lb_capture_bounded(argv, FREEZE_OUTPUT_MAX, false, LB_PYTHON_PROBE_SECONDS, &b,
				       &st);
	}
	mark = r == 0 && b.data ? strstr(b.data, FREEZE_MARK) : NULL;
	if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || !mark ||
	    (mark != b.data && mark[-1] != '\n')) {
		/* An interpreter whose site module cannot say where it looks: list without
		 * caching, as lb_python_freeze always did. */
		lb_buf_free(&b);
		if (r == -ETIMEDOUT || r == -EINTR)
			return r; /* a hung interpreter is not asked twice */
		return lb_python_freeze(executable, out);
	}
	list = mark + strlen(FREEZE_MARK);
	*out = strdup(list);
	if (!*out) {
		lb_buf_free(&b);
		return -ENOMEM;
	}
	*mark = '\0';
	entry = json_object_new_object();
	paths = json_object_new_array();
	if (entry && paths) {
		bool ok = true;

		json_object_object_add(entry, "schema", json_object_new_string(FREEZE_SCHEMA));
		json_object_object_add(entry, "executable", json_object_new_string(executable));
		json_object_object_add(entry, "exe", env_stat_json(&exe_fs));
		json_object_object_add(entry, "paths", paths);
		for (char *line = b.data, *next; ok && line && *line; line = next) {
			struct json_object *p;

			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			p = env_path_line(line);
			ok = p && json_object_array_add(paths, p) == 0;
			if (!ok)
				json_object_put(p);
		}
		env_sha(*out, hex);
		json_object_object_add(entry, "freeze", json_object_new_string(*out));
		json_object_object_add(entry, "sha256", json_object_new_string(hex));
		/* A line that does not read back would make an entry that never hits. */
		if (ok)
			freeze_cache_store(dfd, name,
					   json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN));
	} else {
		json_object_put(paths);
	}
	lb_buf_free(&b);
	return 0;
}

/* interpreter probe cache ------------------------------------------------------------------ */

#define PROBE_SCHEMA "labbox.probe-cache/3"

/* What the probe prints depends on the binary and on a pyvenv.cfg beside it or one level up
 * (a venv); -I makes it independent of the environment. */
static int probe_key_paths(const char *exe, char paths[3][PATH_MAX])
{
	size_t n = strlen(exe);
	if (n + sizeof "/pyvenv.cfg" > PATH_MAX || exe[0] != '/')
		return -ENAMETOOLONG;
	memcpy(paths[0], exe, n + 1);
	char *slash = strrchr(paths[0], '/');
	size_t d1 = (size_t)(slash - paths[0]);
	memcpy(paths[1], exe, d1);
	memcpy(paths[1] + d1, "/pyvenv.cfg", sizeof "/pyvenv.cfg");
	size_t d2 = d1;
	while (d2 > 0 && exe[d2 - 1] != '/')
		d2--;
	d2 = d2 ? d2 - 1 : 0;
	memcpy(paths[2], exe, d2);
	memcpy(paths[2] + d2, "/pyvenv.cfg", sizeof "/pyvenv.cfg");
	return 0;
}

/* A script (a pyenv shim, a wrapper) decides at every start which interpreter runs, from the
 * working directory and the environment: its probe is never cached. */
static bool is_script(const char *exe)
{
	char head[2] = {0};
	LB_AUTOCLOSE int fd = open(exe, O_RDONLY | O_CLOEXEC);
	return fd < 0 || read(fd, head, 2) != 2 || (head[0] == '#' && head[1] == '!');
}

static bool probe_field(struct json_object *info, const char *key, char *out, size_t n)
{
	struct json_object *v;
	if (!json_object_object_get_ex(info, key, &v) || !json_object_is_type(v, json_type_string))
		return false;
	const char *s = json_object_get_string(v);
	if (!*s || strlen(s) >= n)
		return false;
	memcpy(out, s, strlen(s) + 1);
	return true;
}

static bool probe_cache_lookup(int dfd, const char *name, const char *exe,
			       char paths[3][PATH_MAX], lb_python_info *out)
{
	__attribute__((cleanup(json_putp_))) struct json_object *doc = NULL;
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	struct json_object *stats, *info;
	if (lb_read_file_at(dfd, name, 1 << 20, &data, &len) < 0 || len == 0)
		return false;
	doc = json_tokener_parse(data);
	if (!json_object_is_type(doc, json_type_object) ||
	    !env_json_str_is(doc, "schema", PROBE_SCHEMA) || !env_json_str_is(doc, "path", exe) ||
	    !json_object_object_get_ex(doc, "stats", &stats) ||
	    !json_object_is_type(stats, json_type_array) || json_object_array_length(stats) != 3 ||
	    !json_object_object_get_ex(doc, "info", &info))
		return false;
	for (size_t i = 0; i < 3; i++) {
		struct json_object *a = json_object_array_get_idx(stats, i);
		if (!env_stat_matches(paths[i], a) || (i == 0 && !a))
			return false;
	}
	lb_python_info pi;
	memset(&pi, 0, sizeof pi);
	if (!probe_field(info, "executable", pi.executable, sizeof pi.executable) ||
	    !probe_field(info, "prefix", pi.prefix, sizeof pi.prefix) ||
	    !probe_field(info, "base_prefix", pi.base_prefix, sizeof pi.base_prefix) ||
	    !probe_field(info, "version", pi.version, sizeof pi.version) ||
	    !probe_field(info, "implementation", pi.implementation, sizeof pi.implementation) ||
	    pi.executable[0] != '/')
		return false;
	struct json_object *std;
	if (json_object_object_get_ex(info, "stdlib", &std) && json_object_is_type(std, json_type_array) &&
	    json_object_array_length(std) <= 2) {
		unsigned n = (unsigned)json_object_array_length(std);
		for (unsigned i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(std, i);
			const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
			if (s[0] != '/' || strlen(s) >= sizeof pi.stdlib[i] || strchr(s, '\n'))
				return false;
			memcpy(pi.stdlib[i], s, strlen(s) + 1);
		}
		pi.n_stdlib = n;
		if (n && !probe_field(info, "stdlib_for", pi.stdlib_for, sizeof pi.stdlib_for))
			return false;
	}
	*out = pi;
	return true;
}

/* The probe of exe, a binary: kept while it and a pyvenv.cfg beside it keep their stat. */
static int probe_exe(int dfd, const char *exe, lb_python_info *out, bool *hit, char *err,
		     size_t errlen)
{
	char paths[3][PATH_MAX];
	if (probe_key_paths(exe, paths) < 0)
		return lb_python_probe(exe, out, err, errlen);
	char hex[65], name[64];
	env_sha(exe, hex);
	snprintf(name, sizeof name, "probe-%.32s.json", hex);
	if (probe_cache_lookup(dfd, name, exe, paths, out)) {
		lb_cache_entry_used(dfd, name);
		*hit = true;
		return 0;
	}
	/* Stat before probing: a change racing with the probe leaves an entry that misses. */
	__attribute__((cleanup(json_putp_))) struct json_object *entry = json_object_new_object();
	struct json_object *stats = json_object_new_array();
	bool ok = entry && stats;
	for (int i = 0; ok && i < 3; i++) {
		struct stat st;
		env_stat fs;
		if (stat(paths[i], &st) == 0) {
			env_stat_of(&st, &fs);
			json_object_array_add(stats, env_stat_json(&fs));
		} else {
			ok = i > 0 && (errno == ENOENT || errno == ENOTDIR);
			json_object_array_add(stats, NULL);
		}
	}
	int r = lb_python_probe(exe, out, err, errlen);
	if (r < 0 || !ok) {
		json_object_put(stats);
		return r;
	}
	struct json_object *info = json_object_new_object();
	json_object_object_add(info, "executable", json_object_new_string(out->executable));
	json_object_object_add(info, "prefix", json_object_new_string(out->prefix));
	json_object_object_add(info, "base_prefix", json_object_new_string(out->base_prefix));
	json_object_object_add(info, "version", json_object_new_string(out->version));
	json_object_object_add(info, "implementation", json_object_new_string(out->implementation));
	struct json_object *std = json_object_new_array();
	for (unsigned i = 0; i < out->n_stdlib; i++)
		json_object_array_add(std, json_object_new_string(out->stdlib[i]));
	json_object_object_add(info, "stdlib", std);
	json_object_object_add(info, "stdlib_for", json_object_new_string(out->stdlib_for));
	json_object_object_add(entry, "schema", json_object_new_string(PROBE_SCHEMA));
	json_object_object_add(entry, "path", json_object_new_string(exe));
	json_object_object_add(entry, "stats", stats);
	json_object_object_add(entry, "info", info);
	freeze_cache_store(dfd, name, json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN));
	return 0;
}

/* pyenv shims ---------------------------------------------------------------------------- */

#define SHIM_SCHEMA "labbox.pyenv-shim/1"

/* The key of what the pyenv shim at exe chooses by, or -ENOENT when exe is another script. */
static int shim_key(const char *exe, char hex[65], char slot[65])
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	int r = lb_read_file_at(AT_FDCWD, exe, 16384, &text, &len);
	if (r < 0)
		return r;
	if (len >= 16384 || memchr(text, 0, len))
		return -ENOENT;
	extern char **environ;
	return env_pyenv_shim_key(exe, text, environ, hex, slot);
}

/* The interpreter the shim chose when its key was key, into real (PATH_MAX). */
static bool shim_cache_lookup(int dfd, const char *name, const char *exe, const char *key,
			      char *real)
{
	__attribute__((cleanup(json_putp_))) struct json_object *doc = NULL;
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	if (lb_read_file_at(dfd, name, 1 << 16, &data, &len) < 0 || len == 0)
		return false;
	doc = json_tokener_parse(data);
	return json_object_is_type(doc, json_type_object) &&
	       env_json_str_is(doc, "schema", SHIM_SCHEMA) && env_json_str_is(doc, "path", exe) &&
	       env_json_str_is(doc, "key", key) &&
	       probe_field(doc, "executable", real, PATH_MAX) && real[0] == '/';
}

static void shim_cache_store(int dfd, const char *name, const char *exe, const char *key,
			     const char *real)
{
	__attribute__((cleanup(json_putp_))) struct json_object *e = json_object_new_object();
	if (!e)
		return;
	json_object_object_add(e, "schema", json_object_new_string(SHIM_SCHEMA));
	json_object_object_add(e, "path", json_object_new_string(exe));
	json_object_object_add(e, "key", json_object_new_string(key));
	json_object_object_add(e, "executable", json_object_new_string(real));
	freeze_cache_store(dfd, name, json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
}

/* A script chooses its interpreter at every start. A pyenv shim's choice is kept under a key
 * of everything it reads (pyenv.c), and the interpreter it chose is then probed as any
 * binary is (its own cache); any other script is always asked. */
static int probe_script(int dfd, const char *exe, lb_python_info *out, bool *hit, char *err,
			size_t errlen)
{
	char key[65], slot[65], name[64], real[PATH_MAX];
	if (shim_key(exe, key, slot) < 0)
		return lb_python_probe(exe, out, err, errlen);
	snprintf(name, sizeof name, "shim-%.32s.json", slot);
	if (shim_cache_lookup(dfd, name, exe, key, real) && !is_script(real)) {
		lb_cache_entry_used(dfd, name);
		return probe_exe(dfd, real, out, hit, err, errlen);
	}
	/* The key was made before the probe: a change racing with it leaves an entry that
	 * misses. */
	int r = lb_python_probe(exe, out, err, errlen);
	if (r < 0 || out->executable[0] != '/' || is_script(out->executable))
		return r;
	shim_cache_store(dfd, name, exe, key, out->executable);
	/* The interpreter it chose is asked once more, directly, for its own entry: its stat
	 * taken before that probe, so the next run finds both. */
	memcpy(real, out->executable, strlen(out->executable) + 1);
	bool again = false;
	return probe_exe(dfd, real, out, &again, err, errlen);
}

int lb_python_probe_cached(const char *path, const char *cache_dir, lb_python_info *out,
			   bool *hit, char *err, size_t errlen)
{
	*hit = false;
	LB_AUTOFREE char *exe = NULL;
	LB_AUTOCLOSE int dfd = -1;
	if (lb_find_executable(path, &exe) < 0 || (dfd = env_cache_dir(cache_dir)) < 0)
		return lb_python_probe(path, out, err, errlen);
	if (is_script(exe))
		return probe_script(dfd, exe, out, hit, err, errlen);
	return probe_exe(dfd, exe, out, hit, err, errlen);
}
