/* mcp: the tools, their input schemas, and the making of a tool call into the labbox command
 * line a child runs. Arguments come from the client: each is type-checked against the
 * schema, names it does not declare are refused, and every value reaches the child as
 * `--flag=VALUE` or after an absolute path, so no value can be read as another option. */
#include "labbox/gate.h"
#include "labbox/mcp.h"
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXP_PROPS                                                                              \
	"\"expdir\":{\"type\":\"string\",\"description\":\"experiment directory (relative to "   \
	"the server's root, or absolute under it)\"},"                                         \
	"\"files\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"       \
	"\"description\":\"the experiment given inline: relative path -> file content "        \
	"(instead of expdir), staged into a private directory\"},"                             \
	"\"entry\":{\"type\":\"string\",\"description\":\"entry point relative to the "       \
	"experiment (default main.py or entry: in labbox.yaml)\"},"                            \
	"\"python\":{\"type\":\"string\",\"description\":\"interpreter path\"},"                \
	"\"policy\":{\"type\":\"string\",\"enum\":[\"standard\",\"strict\",\"permissive\"]}"

/* What every tool that hands back a recorded run's numbers says of record_sealed. */
#define SEALED_NOTE                                                                             \
	"record_sealed false marks a run whose records this user's labbox did not write as they " \
	"stand (made elsewhere, such as a .labbox/ that came with the experiment, or changed "    \
	"since): its status and metrics are only what its files say, not labbox's; "            \
	"unsealed_reason says why: running (sealed when it ends), unfinished (its labbox ended " \
	"before sealing it), unreadable (result.json damaged), foreign, changed, index_differs."

static const struct mcp_tool {
	const char *name;
	const char *description;
	const char *schema;
	bool progress;
} tools[] = {
	{"check",
	 "Static validation of experiment code without running it: findings (rule id, line, "
	 "message) and whether the hard gate rejects it. Returns labbox.check/1.",
	 "{\"type\":\"object\",\"properties\":{" EXP_PROPS "},\"additionalProperties\":false}",
	 false},
	{"run",
	 "Stage, check and run an experiment in labbox's sandbox under a time budget; collect and "
	 "validate its metrics and record the run. Returns result.json (labbox.run/1): status, "
	 "exit_code, metrics, failure with a suggestion. Long runs report progress and can be "
	 "cancelled (the run is then recorded as interrupted).",
	 "{\"type\":\"object\",\"properties\":{" EXP_PROPS ","
	 "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
	 "\"arguments of the entry point\"},"
	 "\"budget\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"wall-clock "
	 "budget in seconds (default and cap: the server's --max-budget)\"},"
	 "\"memory\":{\"type\":\"string\",\"description\":\"memory limit, e.g. 512m, 4g "
	 "(default and cap: the server's --max-memory)\"},"
	 "\"cpus\":{\"type\":\"number\",\"minimum\":0.01,\"description\":\"CPUs, at least "
	 "0.01 (the kernel's smallest share)\"},"
	 "\"network\":{\"type\":\"string\",\"enum\":[\"none\",\"loopback\",\"host\"]},"
	 "\"gpus\":{\"type\":\"string\",\"description\":\"all, 0,1 or none\"},"
	 "\"metrics\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
	 "\"metrics the run must report\"},"
	 "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	 "\"environment\":{\"type\":\"string\",\"description\":\"the Python environment: "
	 "auto (the one that has what the code imports), a conda or venv name, or a path under "
	 "the server's root (labbox run --env)\"},"
	 "\"escalate\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":"
	 "[\"network\",\"gpus\",\"env\",\"memory\"]},\"description\":\"standing "
	 "permission to run once more with just the escalation the failure names, within the "
	 "server's limits (labbox run --escalate)\"}"
	 "},\"additionalProperties\":false}",
	 true},
	{"explain",
	 "Why a recorded run ended as it did: status, failure class and confidence, evidence "
	 "lines, the frame that raised and the experiment's own frame, suggestion, the flag that "
	 "would escalate, what the code needs (network, GPU, writes), findings and metric "
	 "issues. Returns labbox.explain/1 (`labbox explain --json`); " SEALED_NOTE,
	 "{\"type\":\"object\",\"properties\":{\"run_id\":{\"type\":\"string\"}},"
	 "\"required\":[\"run_id\"],\"additionalProperties\":false}",
	 false},
	{"probe", "What isolation this host offers: namespaces, seccomp, cgroups, interpreters, GPUs. "
		  "Returns labbox.probe/1.",
	 "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", false},
	{"runs_list", "The run history, newest first, optionally filtered. Returns labbox.runs/1; "
		      "each row's " SEALED_NOTE,
	 "{\"type\":\"object\",\"properties\":{"
	 "\"status\":{\"type\":\"string\"},"
	 "\"metric\":{\"type\":\"string\",\"description\":\"NAME or NAME>VALUE (ops < <= > >= = "
	 "!=)\"},"
	 "\"since\":{\"type\":\"string\"},\"until\":{\"type\":\"string\"},"
	 "\"limit\":{\"type\":\"integer\",\"minimum\":1}"
	 "},\"additionalProperties\":false}",
	 false},
	{"runs_show", "One recorded run: its result.json, manifest and index row; " SEALED_NOTE,
	 "{\"type\":\"object\",\"properties\":{\"run_id\":{\"type\":\"string\"}},"
	 "\"required\":[\"run_id\"],\"additionalProperties\":false}",
	 false},
	{"runs_compare", "Two recorded runs side by side: metric deltas (b - a), config, "
			 "interpreter, package and git differences. record_sealed.a and .b: "
			 SEALED_NOTE,
	 "{\"type\":\"object\",\"properties\":{\"run_a\":{\"type\":\"string\"},"
	 "\"run_b\":{\"type\":\"string\"}},\"required\":[\"run_a\",\"run_b\"],"
	 "\"additionalProperties\":false}",
	 false},
	{"rerun", "Run a recorded run again with the same code and configuration; say whether its "
		  "metrics match.",
	 "{\"type\":\"object\",\"properties\":{\"run_id\":{\"type\":\"string\"}},"
	 "\"required\":[\"run_id\"],\"additionalProperties\":false}",
	 true},
};

json_object *lb_mcp_tools_list(void)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		json_object *t = json_object_new_object();
		json_object_object_add(t, "name", json_object_new_string(tools[i].name));
		json_object_object_add(t, "description", json_object_new_string(tools[i].description));
		json_object *schema = json_tokener_parse(tools[i].schema);
		json_object_object_add(t, "inputSchema", schema ? schema : json_object_new_object());
		json_object_array_add(arr, t);
	}
	return arr;
}

/* An argv under construction. */
typedef struct argv_b {
	char **v;
	size_t n;
	bool oom;
} argv_b;

static void push(argv_b *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void push(argv_b *a, const char *fmt, ...)
{
	if (a->oom)
		return;
	char **nv = realloc(a->v, (a->n + 2) * sizeof *nv);
	if (!nv) {
		a->oom = true;
		return;
	}
	a->v = nv;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&nv[a->n], fmt, ap) < 0) {
		a->oom = true;
		va_end(ap);
		return;
	}
	va_end(ap);
	a->n++;
	nv[a->n] = NULL;
}

typedef struct ctx {
	char *err;
	size_t errlen;
	char *limit;
	size_t limitlen;
} ctx;

static int bad(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return LB_MCP_INVALID_PARAMS;
}

static int refuse(ctx *c, const char *limit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(ctx *c, const char *limit, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	snprintf(c->limit, c->limitlen, "%s", limit);
	return 1;
}

/* A string argument: 1 when present, 0 when absent, or an error. Strings with NUL or an
 * empty value are refused: neither survives argv. */
static int arg_str(ctx *c, json_object *args, const char *key, const char **out)
{
	json_object *v;
	*out = NULL;
	if (!args || !json_object_object_get_ex(args, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return bad(c, "argument '%s' must be a string", key);
	const char *s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s))
		return bad(c, "argument '%s' contains a NUL byte", key);
	if (!*s)
		return bad(c, "argument '%s' must not be empty", key);
	if (strlen(s) > 4096)
		return bad(c, "argument '%s' is longer than 4096 bytes", key);
	*out = s;
	return 1;
}

static int arg_num(ctx *c, json_object *args, const char *key, double *out, bool *present)
{
	json_object *v;
	*present = false;
	if (!args || !json_object_object_get_ex(args, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return bad(c, "argument '%s' must be a number", key);
	double d = json_object_get_double(v);
	if (!isfinite(d) || d <= 0)
		return bad(c, "argument '%s' must be a positive number", key);
	*out = d;
	*present = true;
	return 0;
}

/* An array of strings: each checked as arg_str checks one. */
static int arg_strings(ctx *c, json_object *args, const char *key, json_object **out)
{
	json_object *v;
	*out = NULL;
	if (!args || !json_object_object_get_ex(args, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return bad(c, "argument '%s' must be an array of strings", key);
	size_t n = json_object_array_length(v);
	if (n > 1024)
		return bad(c, "argument '%s' has more than 1024 items", key);
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(v, i);
		if (!json_object_is_type(s, json_type_string) ||
		    (size_t)json_object_get_string_len(s) != strlen(json_object_get_string(s)))
			return bad(c, "argument '%s' must be an array of strings without NUL", key);
	}
	*out = v;
	return 0;
}

/* Refuse argument names the tool's schema does not declare, and ask for those it requires. */
static int check_names_in(ctx *c, const struct mcp_tool *t, json_object *args)
{
	if (!args)
		return bad(c, "out of memory");
	json_object *schema = json_tokener_parse(t->schema), *props = NULL;
	if (!schema || !json_object_object_get_ex(schema, "properties", &props)) {
		json_object_put(schema);
		return bad(c, "internal error: schema of %s", t->name);
	}
	int r = 0;
	json_object_object_foreach(args, k, v)
	{
		(void)v;
		if (!json_object_object_get_ex(props, k, NULL)) {
			r = bad(c, "tool %s has no argument '%s'", t->name, k);
			break;
		}
	}
	if (r == 0) {
		json_object *req;
		if (json_object_object_get_ex(schema, "required", &req))
			for (size_t i = 0; i < json_object_array_length(req); i++) {
				const char *rk = json_object_get_string(json_object_array_get_idx(req, i));
				if (!json_object_object_get_ex(args, rk, NULL)) {
					r = bad(c, "tool %s needs argument '%s'", t->name, rk);
					break;
				}
			}
	}
	json_object_put(schema);
	return r;
}

static int check_names(ctx *c, const struct mcp_tool *t, json_object *args)
{
	json_object *empty = NULL;
	if (!args)
		args = empty = json_object_new_object(); /* so that required names are still asked for */
	int r = check_names_in(c, t, args);
	json_object_put(empty);
	return r;
}

/* A run id as the index spells them (a prefix is fine): letters, digits, '-', '_', '.',
 * not starting with '-', so it can never be read as an option. */
static int arg_run_id(ctx *c, json_object *args, const char *key, const char **out)
{
	int r = arg_str(c, args, key, out);
	if (r < 0)
		return r;
	if (r == 0) /* the schema requires it; never trust that it was checked */
		return bad(c, "argument '%s' is required", key);
	const char *s = *out;
	if (s[0] == '-' || strlen(s) > 128)
		return bad(c, "argument '%s' is not a run id", key);
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return bad(c, "argument '%s' is not a run id (letters, digits, - _ .)", key);
	return 0;
}

/* A relative path of an inline file: no absolute path, no empty, "." or ".." component,
 * at most 16 levels and 1024 bytes. */
static bool rel_path_ok(const char *p)
{
	size_t len = strlen(p);
	if (len == 0 || len > 1024 || p[0] == '/')
		return false;
	int depth = 0;
	for (const char *s = p; *s;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 || n > 255 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (++depth > 16)
			return false;
		s += n;
		if (*s == '/')
			s++;
		if (e && !*s)
			return false; /* trailing slash: a directory, not a file */
	}
	return true;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Write one inline file under dirfd, making its directories; nothing followed. */
static int write_rel(int dirfd, const char *rel, const char *data, size_t len)
{
	LB_AUTOFREE char *copy = strdup(rel);
	if (!copy)
		return -ENOMEM;
	int fd = dup(dirfd);
	if (fd < 0)
		return -errno;
	char *s = copy;
	for (char *slash; (slash = strchr(s, '/')); s = slash + 1) {
		*slash = '\0';
		if (mkdirat(fd, s, 0700) < 0 && errno != EEXIST) {
			int e = -errno;
			close(fd);
			return e;
		}
		int sub = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = -errno;
		close(fd);
		if (sub < 0)
			return e;
		fd = sub;
	}
	int f = openat(fd, s, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int e = -errno;
	close(fd);
	if (f < 0)
		return e;
	int r = lb_write_all(f, data, len);
	if (close(f) < 0 && r == 0)
		r = -errno;
	return r;
}

/* A call's inline files live as long as the call: DIR/labbox-mcp-PID-XXXXXX. A server that was
 * killed mid-call cannot remove its own, so each staging removes this user's directories in
 * dir whose server is gone (as ssh's control directories and rerun's copies are). */
static void remove_inline_dir(int dfd, const char *name, const char *path, void *unused)
{
	(void)dfd;
	(void)name;
	(void)unused;
	remove_tree(path);
}

static void remove_stale_inline_dirs(const char *dir)
{
	lb_stale_pid_dirs(dir, "labbox-mcp", remove_inline_dir, NULL);
}

/* Validate (and with stage, write) the inline files: the private directory in *staged. */
static int stage_files(ctx *c, json_object *files, bool stage, char **staged)
{
	if (!json_object_is_type(files, json_type_object))
		return bad(c, "argument 'files' must be an object of relative path -> content");
	size_t n = 0, total = 0;
	json_object_object_foreach(files, k0, v0)
	{
		if (++n > LB_MCP_MAX_FILES)
			return refuse(c, "files", "more than %d inline files", LB_MCP_MAX_FILES);
		if (!json_object_is_type(v0, json_type_string))
			return bad(c, "inline file '%s' must have a string as its content", k0);
		if (!rel_path_ok(k0))
			return refuse(c, "files",
				      "inline file name '%s' is not a relative path inside the "
				      "experiment (no absolute path, no . or .. component)",
				      k0);
		size_t len = (size_t)json_object_get_string_len(v0);
		if (len > LB_MCP_MAX_FILE_BYTES)
			return refuse(c, "files", "inline file '%s' is larger than %zu bytes", k0,
				      LB_MCP_MAX_FILE_BYTES);
		total += len;
		if (total > LB_MCP_MAX_FILES_BYTES)
			return refuse(c, "files", "inline files are larger than %zu bytes together",
				      LB_MCP_MAX_FILES_BYTES);
	}
	if (n == 0)
		return bad(c, "argument 'files' is empty");
	if (!stage) {
		*staged = strdup("/nonexistent/inline");
		return *staged ? 0 : bad(c, "out of memory");
	}
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/' || strlen(tmp) >= PATH_MAX - 64)
		tmp = "/tmp";
	remove_stale_inline_dirs(tmp);
	char tmpl[PATH_MAX];
	snprintf(tmpl, sizeof tmpl, "%s/labbox-mcp-%d-XXXXXX", tmp, (int)getpid());
	/* mkdtemp makes it 0700: the files are the client's, no one else's to read. */
	if (!mkdtemp(tmpl))
		return refuse(c, "", "cannot make a private directory for inline files: %s",
			      strerror(errno));
	char exp[PATH_MAX + 8];
	snprintf(exp, sizeof exp, "%s/exp", tmpl);
	int dfd = -1;
	if (mkdir(exp, 0700) < 0 ||
	    (dfd = open(exp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		remove_tree(tmpl);
		return refuse(c, "", "cannot make a private directory for inline files: %s",
			      strerror(errno));
	}
	json_object_object_foreach(files, k, v)
	{
		int r = write_rel(dfd, k, json_object_get_string(v),
				  (size_t)json_object_get_string_len(v));
		if (r < 0) {
			close(dfd);
			remove_tree(tmpl);
			/* EEXIST: "a" and "a/b" both given, or a name given twice in spelling. */
			return refuse(c, "files", "cannot write inline file '%s': %s", k, strerror(-r));
		}
	}
	close(dfd);
	*staged = strdup(tmpl);
	if (!*staged) {
		remove_tree(tmpl);
		return bad(c, "out of memory");
	}
	return 0;
}

/* A path argument (expdir, environment) resolved and checked to lie under the root: the
 * resolved path in out. expdir must be a directory; an environment may be an interpreter. */
static int resolve_under_root(ctx *c, const char *what, const char *path,
			      const lb_mcp_limits *lim, char out[PATH_MAX])
{
	char joined[PATH_MAX * 2];
	bool want_dir = strcmp(what, "expdir") == 0;
	if (path[0] == '/')
		snprintf(joined, sizeof joined, "%s", path);
	else
		snprintf(joined, sizeof joined, "%s/%s", lim->root, path);
	if (strlen(joined) >= PATH_MAX)
		return refuse(c, "root", "%s is too long", what);
	if (!realpath(joined, out))
		return refuse(c, "", "%s '%s': %s", what, path, strerror(errno));
	struct stat st;
	if (want_dir && (stat(out, &st) < 0 || !S_ISDIR(st.st_mode)))
		return refuse(c, "", "%s '%s' is not a directory", what, path);
	size_t rl = strlen(lim->root);
	bool under = strcmp(lim->root, "/") == 0 ||
		     (strncmp(out, lim->root, rl) == 0 && (out[rl] == '\0' || out[rl] == '/'));
	if (!under)
		return refuse(c, "root", "%s '%s' is outside the server's --root %s", what, path,
			      lim->root);
	return 0;
}

/* --python PATH is probed on this host (the user's interpreter, on the command line), so
 * one among the client's files under the root, named or reached through a link, would run
 * here unsandboxed: refused. A bare name is looked up on the server's PATH. */
static int python_not_clients(ctx *c, const char *python, const lb_mcp_limits *lim)
{
	if (!strchr(python, '/'))
		return 0;
	char joined[PATH_MAX * 2], real[PATH_MAX];
	if (python[0] == '/')
		snprintf(joined, sizeof joined, "%s", python);
	else
		snprintf(joined, sizeof joined, "%s/%s", lim->root, python);
	const char *paths[2] = {joined, realpath(joined, real) ? real : NULL};
	for (size_t i = 0; i < 2; i++)
		if (paths[i] && lb_path_under(paths[i], lim->root))
			return refuse(c, "root",
				      "python '%s' lies among the client's files under the server's "
				      "--root %s, and labbox would run it on this host to probe it; "
				      "name an interpreter of this host, or use environment auto",
				      python, lim->root);
	/* Nor among labbox's records, wherever they are: a run's exp/ is what the client's
	 * earlier runs wrote (labbox itself would probe it in the sandbox; said plainly here). */
	LB_AUTOFREE char *state = lb_record_state_dir();
	if (lb_record_holds_program(state, ".labbox/runs", joined))
		return refuse(c, "root",
			      "python '%s' lies among labbox's run records, which runs write: "
			      "name an interpreter of this host, or use environment auto", python);
	return 0;
}

/* The experiment (expdir or files) and the options run and check share. */
static int exp_args(ctx *c, json_object *args, const lb_mcp_limits *lim, bool stage, argv_b *a,
		    char **staged, char *path, bool is_run)
{
	const char *expdir, *entry, *python, *policy;
	int r;
	if ((r = arg_str(c, args, "expdir", &expdir)) < 0 || (r = arg_str(c, args, "entry", &entry)) < 0 ||
	    (r = arg_str(c, args, "python", &python)) < 0 || (r = arg_str(c, args, "policy", &policy)) < 0)
		return r;
	json_object *files = NULL;
	if (args)
		json_object_object_get_ex(args, "files", &files);
	if (!!expdir == !!files)
		return bad(c, "give the experiment as exactly one of 'expdir' and 'files'");
	if (policy && strcmp(policy, "standard") != 0 && strcmp(policy, "strict") != 0 &&
	    strcmp(policy, "permissive") != 0)
		return bad(c, "argument 'policy' must be one of standard, strict, permissive");
	if (entry && !rel_path_ok(entry))
		return refuse(c, "root", "entry '%s' is not a relative path inside the experiment",
			      entry);
	if (python && (r = python_not_clients(c, python, lim)) != 0)
		return r;
	if (python)
		push(a, "--python=%s", python);
	if (policy)
		push(a, "--policy=%s", policy);
	if (entry)
		push(a, "--entry=%s", entry);
	if (files) {
		if ((r = stage_files(c, files, stage, staged)) != 0)
			return r;
		if ((size_t)snprintf(path, PATH_MAX, "%.*s/exp", PATH_MAX - 8, *staged) >= PATH_MAX)
			return refuse(c, "", "the private directory's name is too long");
	} else if ((r = resolve_under_root(c, "expdir", expdir, lim, path)) != 0) {
		return r;
	}
	(void)is_run;
	return 0;
}

static int run_limits(ctx *c, json_object *args, const lb_mcp_limits *lim, argv_b *a)
{
	double budget = 0, cpus = 0;
	bool has_budget, has_cpus;
	int r;
	if ((r = arg_num(c, args, "budget", &budget, &has_budget)) < 0 ||
	    (r = arg_num(c, args, "cpus", &cpus, &has_cpus)) < 0)
		return r;
	if (has_budget && lim->max_budget > 0 && budget > lim->max_budget)
		return refuse(c, "max-budget",
			      "budget %gs is above the server's limit --max-budget %g", budget,
			      lim->max_budget);
	if (!has_budget && lim->max_budget > 0) {
		/* A budget is always given when the server caps it: labbox.yaml's own would
		 * otherwise win over no flag. */
		budget = lim->max_budget;
		has_budget = true;
	}
	if (has_budget)
		push(a, "--budget=%.17g", budget);
	for (size_t i = 0; i < lim->ndegraded && i < 5; i++)
		push(a, "--allow-degraded=%s", lim->degraded[i]);
	if (has_cpus)
		push(a, "--cpus=%.17g", cpus);
	const char *memory, *network, *gpus;
	if ((r = arg_str(c, args, "memory", &memory)) < 0 || (r = arg_str(c, args, "network", &network)) < 0 ||
	    (r = arg_str(c, args, "gpus", &gpus)) < 0)
		return r;
	if (memory) {
		uint64_t bytes;
		if (lb_parse_size(memory, &bytes) < 0 || bytes == 0)
			return bad(c, "argument 'memory' '%s' is not a size (512m, 4g)", memory);
		if (lim->max_memory && bytes > lim->max_memory)
			return refuse(c, "max-memory",
				      "memory %s is above the server's limit --max-memory %llu bytes",
				      memory, (unsigned long long)lim->max_memory);
		/* as the caller wrote it: labbox's own error about it (too small) quotes it so */
		push(a, "--memory=%s", memory);
	} else if (lim->max_memory) {
		push(a, "--memory=%llu", (unsigned long long)lim->max_memory);
	}
	if (network) {
		if (strcmp(network, "none") != 0 && strcmp(network, "loopback") != 0 &&
		    strcmp(network, "host") != 0)
			return bad(c, "argument 'network' must be one of none, loopback, host");
		if (strcmp(network, "none") != 0 && !lim->allow_network)
			return refuse(c, "allow-network",
				      "network '%s' needs the server to be started with "
				      "--allow-network",
				      network);
		push(a, "--network=%s", network);
	}
	if (gpus) {
		lb_gpu_spec spec;
		char why[160];
		if (lb_sandbox_gpus_parse(gpus, &spec, why, sizeof why) < 0)
			return bad(c, "argument 'gpus': %s", why);
		if (strcmp(gpus, "none") != 0 && !lim->allow_gpus)
			return refuse(c, "allow-gpus",
				      "gpus '%s' needs the server to be started with --allow-gpus", gpus);
		push(a, "--gpus=%s", gpus);
	}
	json_object *metrics, *env = NULL;
	if ((r = arg_strings(c, args, "metrics", &metrics)) < 0)
		return r;
	for (size_t i = 0; metrics && i < json_object_array_length(metrics); i++) {
		const char *m = json_object_get_string(json_object_array_get_idx(metrics, i));
		if (!*m || strchr(m, ','))
			return bad(c, "metric names must be non-empty and without ','");
		push(a, "--metrics=%s", m);
	}
	if (args)
		json_object_object_get_ex(args, "env", &env);
	if (env) {
		if (!json_object_is_type(env, json_type_object))
			return bad(c, "argument 'env' must be an object of NAME -> value");
		json_object_object_foreach(env, k, v)
		{
			if (!lb_env_name_valid(k) || !json_object_is_type(v, json_type_string) ||
			    (size_t)json_object_get_string_len(v) != strlen(json_object_get_string(v)))
				return bad(c, "env: '%s' must be a variable name with a string value "
					      "without NUL",
					   k);
			/* The agent's variables are its configuration, as labbox.yaml's sweep env
			 * is: none that runs its code before the runtime gate (lb_gate_startup_var). */
			if (lb_gate_startup_var(k))
				return refuse(c, "env",
					      "env: %s changes what the interpreter or the loader runs "
					      "before the experiment's code and its runtime gate; an MCP "
					      "client may not set it",
					      k);
			push(a, "--env=%s=%s", k, json_object_get_string(v));
		}
	}
	return 0;
}

/* --env and --escalate, within what the server allows: an escalation may not reach what a
 * direct argument could not (the network, GPUs, memory above --max-memory), and an
 * environment given as a path must lie under the root, as expdir must. */
static int run_env_escalate(ctx *c, json_object *args, const lb_mcp_limits *lim, argv_b *a)
{
	const char *environment;
	json_object *esc;
	int r;
	if ((r = arg_str(c, args, "environment", &environment)) < 0 ||
	    (r = arg_strings(c, args, "escalate", &esc)) < 0)
		return r;
	if (environment) {
		if (strchr(environment, '='))
			return bad(c, "argument 'environment' must be auto, a name or a path, "
				      "without '='");
		if (strchr(environment, '/')) {
			char resolved[PATH_MAX];
			if ((r = resolve_under_root(c, "environment", environment, lim, resolved)) != 0)
				return r;
			/* Under the root it is the client's own files, and labbox probes an
			 * environment named by path on this host (it is the user's, on the
			 * command line): its interpreter or a .pth would run here, unsandboxed.
			 * auto finds the experiment's .venv and probes it in the sandbox. */
			return refuse(c, "root",
				      "environment '%s' is a path among the client's files, and "
				      "labbox would run its interpreter on this host to probe it; "
				      "use environment auto (the experiment's .venv, probed in the "
				      "sandbox) or the name of an environment of this host",
				      environment);
		} else {
			push(a, "--env=%s", environment);
		}
	}
	char list[64] = "";
	for (size_t i = 0; esc && i < json_object_array_length(esc); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(esc, i));
		if (strcmp(e, "network") == 0 && !lim->allow_network)
			return refuse(c, "allow-network", "escalate network needs the server to be "
							  "started with --allow-network");
		if (strcmp(e, "gpus") == 0 && !lim->allow_gpus)
			return refuse(c, "allow-gpus", "escalate gpus needs the server to be started "
						       "with --allow-gpus");
		/* The memory escalation doubles --memory (which the server sets to its cap when
		 * the call names none): the doubled limit must stay within the cap. */
		if (strcmp(e, "memory") == 0 && lim->max_memory) {
			const char *memory;
			uint64_t bytes = lim->max_memory;
			if (arg_str(c, args, "memory", &memory) > 0 && lb_parse_size(memory, &bytes) < 0)
				return bad(c, "argument 'memory' '%s' is not a size (512m, 4g)", memory);
			if (bytes > lim->max_memory / 2)
				return refuse(c, "max-memory",
					      "escalate memory would double the memory limit to %llu "
					      "bytes, above the server's --max-memory %llu",
					      (unsigned long long)bytes * 2,
					      (unsigned long long)lim->max_memory);
		}
		if (strcmp(e, "network") != 0 && strcmp(e, "gpus") != 0 && strcmp(e, "env") != 0 &&
		    strcmp(e, "memory") != 0)
			return bad(c, "argument 'escalate': '%s' is not one of network, gpus, env, "
				      "memory", e);
		if (!strstr(list, e))
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				 *list ? "," : "", e);
	}
	if (*list)
		push(a, "--escalate=%s", list);
	return 0;
}

static const struct mcp_tool *find_tool(const char *name)
{
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (strcmp(tools[i].name, name) == 0)
			return &tools[i];
	return NULL;
}

int lb_mcp_call_build(const char *name, json_object *args, const lb_mcp_limits *lim, bool stage,
		      lb_mcp_call *call, char *err, size_t errlen, char *limit, size_t limitlen)
{
	ctx c = {err, errlen, limit, limitlen};
	memset(call, 0, sizeof *call);
	err[0] = '\0';
	limit[0] = '\0';
	const struct mcp_tool *t = find_tool(name);
	if (!t)
		return bad(&c, "unknown tool '%s' (see tools/list)", name);
	if (args && !json_object_is_type(args, json_type_object))
		return bad(&c, "arguments must be an object");
	int r = check_names(&c, t, args);
	if (r != 0)
		return r;
	argv_b a = {0};
	char path[PATH_MAX] = "";
	push(&a, "%s", lim->self ? lim->self : "/proc/self/exe");
	const char *id, *id2;
	if (strcmp(name, "check") == 0) {
		push(&a, "check");
		push(&a, "--json");
		r = exp_args(&c, args, lim, stage, &a, &call->staged, path, false);
		if (r == 0)
			push(&a, "%s", path);
	} else if (strcmp(name, "run") == 0) {
		/* Not -q: with --json the experiment's output goes to stderr, where the server
		 * reads it for progress notifications. */
		push(&a, "run");
		push(&a, "--json");
		/* This host's sandbox, under the limits above: labbox.yaml's mode: would otherwise
		 * send the client's code over ssh, to Slurm, to a container engine or to Colab
		 * (unisolated), none of which the server's starter allowed. */
		push(&a, "--mode=local");
		r = exp_args(&c, args, lim, stage, &a, &call->staged, path, true);
		if (r == 0)
			r = run_limits(&c, args, lim, &a);
		if (r == 0)
			r = run_env_escalate(&c, args, lim, &a);
		json_object *xargs = NULL;
		if (r == 0)
			r = arg_strings(&c, args, "args", &xargs);
		if (r == 0) {
			push(&a, "%s", path);
			if (xargs && json_object_array_length(xargs)) {
				push(&a, "--");
				for (size_t i = 0; i < json_object_array_length(xargs); i++)
					push(&a, "%s", json_object_get_string(
							       json_object_array_get_idx(xargs, i)));
			}
		}
	} else if (strcmp(name, "probe") == 0) {
		push(&a, "probe");
		push(&a, "--json");
	} else if (strcmp(name, "runs_list") == 0) {
		push(&a, "runs");
		push(&a, "list");
		push(&a, "--json");
		static const char *const keys[] = {"status", "metric", "since", "until"};
		for (size_t i = 0; i < 4 && r == 0; i++) {
			const char *v;
			if ((r = arg_str(&c, args, keys[i], &v)) > 0)
				r = 0, push(&a, "--%s=%s", keys[i], v);
		}
		json_object *lv;
		if (r == 0 && args && json_object_object_get_ex(args, "limit", &lv)) {
			if (!json_object_is_type(lv, json_type_int) || json_object_get_int64(lv) < 1)
				r = bad(&c, "argument 'limit' must be a positive integer");
			else
				push(&a, "--limit=%lld", (long long)json_object_get_int64(lv));
		}
	} else if (strcmp(name, "runs_compare") == 0) {
		if ((r = arg_run_id(&c, args, "run_a", &id)) == 0 &&
		    (r = arg_run_id(&c, args, "run_b", &id2)) == 0) {
			push(&a, "runs");
			push(&a, "compare");
			push(&a, "--json");
			push(&a, "--");
			push(&a, "%s", id);
			push(&a, "%s", id2);
		}
	} else { /* explain, runs_show, rerun: one run id */
		if ((r = arg_run_id(&c, args, "run_id", &id)) == 0) {
			if (strcmp(name, "rerun") == 0) {
				push(&a, "rerun");
				push(&a, "--json");
			} else if (strcmp(name, "explain") == 0) {
				push(&a, "explain");
				push(&a, "--json");
			} else {
				push(&a, "runs");
				push(&a, "show");
				push(&a, "--json");
			}
			push(&a, "--");
			push(&a, "%s", id);
		}
	}
	call->argv = a.v;
	call->argc = a.n;
	call->tool = t->name;
	call->progress = t->progress;
	if (r == 0 && a.oom)
		r = bad(&c, "out of memory");
	if (r != 0)
		lb_mcp_call_free(call);
	return r;
}

void lb_mcp_call_free(lb_mcp_call *call)
{
	for (size_t i = 0; i < call->argc; i++)
		free(call->argv[i]);
	free(call->argv);
	if (call->staged && strncmp(call->staged, "/nonexistent/", 13) != 0)
		remove_tree(call->staged);
	free(call->staged);
	memset(call, 0, sizeof *call);
}

int lb_mcp_config_within(json_object *config, const lb_mcp_limits *lim, char *err, size_t errlen,
			 char *limit, size_t limitlen)
{
	ctx c = {err, errlen, limit, limitlen};
	json_object *sb = NULL, *v;
	if (!json_object_is_type(config, json_type_object) ||
	    !json_object_object_get_ex(config, "sandbox", &sb) || !json_object_is_type(sb, json_type_object))
		return refuse(&c, "", "the run has no recorded sandbox configuration");
	const char *net = json_object_object_get_ex(sb, "network", &v) ? json_object_get_string(v) : NULL;
	if (net && strcmp(net, "none") != 0 && !lim->allow_network)
		return refuse(&c, "allow-network",
			      "the run used network '%s', which needs the server to be started with "
			      "--allow-network",
			      net);
	if (json_object_object_get_ex(sb, "gpus", &v) && json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), "none") != 0 && !lim->allow_gpus)
		return refuse(&c, "allow-gpus",
			      "the run used GPUs, which needs the server to be started with "
			      "--allow-gpus");
	if (lim->max_budget > 0) {
		double b = json_object_object_get_ex(config, "budget_s", &v) && v ? json_object_get_double(v) : 0;
		if (b <= 0 || b > lim->max_budget)
			return refuse(&c, "max-budget",
				      "the run's budget (%s) is above the server's limit --max-budget %g",
				      b > 0 ? "recorded" : "none", lim->max_budget);
	}
	if (lim->max_memory) {
		uint64_t m = json_object_object_get_ex(sb, "memory_bytes", &v) && v
				     ? (uint64_t)json_object_get_int64(v) : 0;
		if (m == 0 || m > lim->max_memory)
			return refuse(&c, "max-memory",
				      "the run's memory limit (%s) is above the server's limit "
				      "--max-memory %llu bytes",
				      m ? "recorded" : "none", (unsigned long long)lim->max_memory);
	}
	/* The run tool gives every run a plain run's grace, disk limit, log cap and /dev/shm; a
	 * record asking more (an edited manifest in the directory the agent writes) would let a
	 * rerun outlive --max-budget or fill the disk. */
	lb_strv loose = {0};
	int n = lb_record_loose_limits(config, &loose);
	if (n != 0) {
		char first[160];
		snprintf(first, sizeof first, "%s", n > 0 ? loose.v[0] : "(out of memory)");
		lb_strv_free(&loose);
		return refuse(&c, "limits",
			      "the run's limits are looser than a run this server starts (%s): "
			      "only `labbox rerun --accept-grants` in a terminal repeats them",
			      first);
	}
	lb_strv_free(&loose);
	return 0;
}
