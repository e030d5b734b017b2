/* An exception's verdict (dg_classify_at): its class from its line (classify.c), then refined
 * by what the traceback and the staged experiment show, which the line alone cannot say: a
 * socket the seccomp filter refused, numpy's own floating point errors, what the sandbox
 * takes away, the experiment's own modules and files, an unpickled object's module. */
#include "failure_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static bool via_subprocess(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header; i < e->line; i++)
		if (dg_is_frame(log->lines[i]) && strstr(log->lines[i], "subprocess.py\""))
			return true;
	return false;
}

/* "[::]:29511", "127.0.0.1:29500", "localhost:6379": an address with a port. */
static bool has_host_port(const char *s)
{
	for (const char *c = strchr(s, ':'); c; c = strchr(c + 1, ':')) {
		if (!isdigit((unsigned char)c[1]) || c == s)
			continue;
		if (c[-1] == ']' || (c - s >= 9 && strncasecmp(c - 9, "localhost", 9) == 0))
			return true;
		size_t dots = 0;
		const char *b = c;
		while (b > s && (isdigit((unsigned char)b[-1]) || b[-1] == '.'))
			dots += *--b == '.';
		if (dots == 3)
			return true;
	}
	return false;
}

/* An EPERM that is about a socket, in the words of the native libraries that open their own
 * (torch.distributed's c10d TCPStore, gloo, NCCL's bootstrap, zmq, grpc): no frame of
 * Python's socket module is above them. A file's EPERM names its path, a socket's never. */
static bool socket_words(const char *line)
{
	static const char *const words[] = { "socket", "listen", "bind", "connect",
					     "network address", "c10d", "TCPStore", "gloo",
					     "zmq", "grpc", "nccl", NULL };
	char path[1024];

	if (dg_quoted_after(line, "Operation not permitted", path, sizeof(path)) && path[0] == '/')
		return false;
	return dg_has_any(line, words) || has_host_port(line);
}

/* A socket on this machine alone: a server's listen or bind, or a loopback or wildcard
 * address. What a single-node process group needs is a private loopback, not the host's
 * network. */
static bool socket_local(const char *line)
{
	static const char *const words[] = { "listen", "bind", "server socket",
					     "local network address", "127.0.0.1", "localhost",
					     "[::]", "[::1]", "0.0.0.0", NULL };
	return dg_has_any(line, words);
}

static bool via_socket(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header; i < e->line; i++)
		if (dg_is_frame(log->lines[i]) && (strstr(log->lines[i], "/socket.py\"") ||
						 strstr(log->lines[i], "/urllib3/connection.py\"")))
			return true;
	return false;
}

/* What writes a file at the path it is given: open() with a mode that writes, and the
 * savers research code calls. */
static const char *const write_calls[] = {
	"\"w\"", "'w'", "\"wb\"", "'wb'", "\"w+\"", "'w+'", "\"a\"", "'a'", "\"ab\"", "'ab'",
	"\"x\"", "'x'", "\"wt\"", "'wt'", ".write_text(", ".write_bytes(", ".to_csv(",
	".to_json(", ".to_parquet(", "savefig(", "np.save(", "numpy.save(", "np.savez",
	"np.savetxt(", "torch.save(", "pickle.dump(", NULL,
};

/* A FileNotFoundError that is no missing data: the code writing into a directory it never
 * made (the experiment starts in a copy holding only its own files), or multiprocessing
 * reaching a process of its own that has gone (its socket's path). */
static void refine_missing_file(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	if (strcmp(v->cls, "missing_data") != 0 || e->frame == NONE)
		return;
	const char *frame = log->lines[e->frame];
	const char *line = log->lines[e->line];
	if (strstr(frame, "/multiprocessing/")) {
		dg_verdict_set(v, "code_error",
			       "multiprocessing could not reach a process of its own (a queue's, a "
			       "manager's or a pool's), which had exited",
			       line,
			       "keep the processes a queue, pipe or manager belongs to alive while it "
			       "is used: read the workers' results before they exit, join them after");
		return;
	}
	/* the line that raised, or the experiment's own line that called the saver */
	bool writes = false;
	size_t frames[2] = {e->frame, dg_code_frame_of(log, e)};
	for (int i = 0; i < 2 && !writes; i++) {
		size_t src = frames[i] == NONE ? NONE : frames[i] + 1;
		writes = src != NONE && src < e->line && !dg_is_frame(log->lines[src]) &&
			 dg_has_any(log->lines[src], write_calls);
	}
	if (!writes)
		return;
	char path[256];
	if (!dg_quoted_after(line, "No such file or directory", path, sizeof(path)))
		return;
	/* Only a path inside the experiment's own tree: one elsewhere (a host file the sandbox
	 * hides, /home) is not the code's directory to make. */
	size_t n = log->exp_dir ? strlen(log->exp_dir) : 0;
	while (n > 1 && log->exp_dir[n - 1] == '/')
		n--;
	if (path[0] == '/' && !(n > 0 && strncmp(path, log->exp_dir, n) == 0 && path[n] == '/'))
		return;
	v->cls = "code_error";
	snprintf(v->summary, sizeof(v->summary),
		 "the code writes '%s' into a directory that does not exist: %s", path, line);
	snprintf(v->suggestion, sizeof(v->suggestion),
		 "make the directory before writing into it (os.makedirs(os.path.dirname(path), "
		 "exist_ok=True)): the experiment runs in a fresh copy of its directory, holding "
		 "only its own files");
}

static const char SUGGEST_SOCKET[] =
	"the sandbox has no network by default (--network none refuses every socket but AF_UNIX): "
	"use --network loopback for code that talks to itself over TCP, --network host to reach "
	"other machines, or download what the code fetches into the experiment directory "
	"beforehand";
static const char SUGGEST_SOCKET_LOCAL[] =
	"the sandbox has no network by default (--network none refuses every socket but AF_UNIX): "
	"a server or process group on this machine alone (torch.distributed's TCPStore with "
	"MASTER_ADDR=127.0.0.1, gloo, zmq or grpc on localhost) needs only --network loopback, a "
	"private loopback; --network host reaches other machines";

/* The seccomp filter of --network none refuses sockets with EPERM: still the sandbox's
 * restriction (docs/decisions.md), but the flag that lifts it is the network's. Under
 * loopback or the host's network the filter refuses no socket, so an EPERM there is not
 * labbox's. */
static void refine_socket(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];

	if (strcmp(v->cls, "sandbox_restriction") != 0 || !dg_has(line, "Operation not permitted") ||
	    log->net_open || !(via_socket(log, e) || socket_words(line)))
		return;
	bool local = socket_local(line);
	char what[200];
	snprintf(what, sizeof(what), "the sandbox refused a %snetwork socket%s",
		 local ? "local " : "",
		 log->net_none ? " (the run had --network none, whose seccomp filter refuses "
				 "every socket but AF_UNIX with EPERM)"
			       : "");
	dg_verdict_set(v, "sandbox_restriction", what, line,
		       local ? SUGGEST_SOCKET_LOCAL : SUGGEST_SOCKET);
	if (log->net_none)
		dg_set_confidence(v, CONF_HIGH, "the run had --network none, whose seccomp filter "
					     "answers a socket with this error, and the message is "
					     "about a socket");
}

/* The source line printed under a frame, or NULL. */
static const char *source_of(const lb_log *log, size_t frame, size_t end)
{
	if (frame == NONE || frame + 1 >= end || dg_is_frame(log->lines[frame + 1]))
		return NULL;
	return log->lines[frame + 1];
}

/* Training state above the traceback, or in the line that raised: a loss being logged, which
 * is when a bad value is the model's divergence and not the code's own arithmetic. */
static bool training_context(const lb_log *log, const lb_exc *e, size_t code_frame)
{
	const char *src = source_of(log, code_frame, e->line);
	if (src && (dg_has(src, "loss") || dg_has(src, "grad")))
		return true;
	for (size_t i = e->header; i-- > 0;)
		if (dg_has(log->lines[i], "loss"))
			return true;
	return false;
}

static const char SUGGEST_NAN_RAISED[] =
	"lower the learning rate, clip gradients, and check inputs and the loss for log(0) or "
	"division by zero (the code already has numpy raise at the first bad value)";

/* numpy raises FloatingPointError only where np.seterr or np.errstate asked it to, and its
 * message names which of four things happened: only an overflow or a bad value while a loss
 * is being computed is a divergence; an underflow is harmless by numpy's own default, and a
 * 0/0 in an evaluation is the code's division. */
static void refine_float(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	if (strcmp(v->cls, "nan_divergence") != 0 || !dg_has(line, "FloatingPointError"))
		return;
	if (dg_has(line, "underflow encountered")) {
		dg_verdict_set(v, "code_error",
			       "numpy was told to raise on every floating point error (np.seterr or "
			       "np.errstate), so an underflow, which numpy ignores by default (the value "
			       "rounds to 0), became an error", line,
			       "let underflow round to 0 and keep raising on the rest: "
			       "np.seterr(all='raise', under='ignore'), or np.errstate(under='ignore') "
			       "around that line");
		dg_set_confidence(v, CONF_HIGH, "numpy's message says it was an underflow");
		return;
	}
	bool div = dg_has(line, "divide by zero encountered") || dg_has(line, "invalid value encountered");
	bool over = dg_has(line, "overflow encountered");
	if (!div && !over) {
		snprintf(v->suggestion, sizeof(v->suggestion), "%s", SUGGEST_NAN_RAISED);
		return;
	}
	if (training_context(log, e, v->code_frame)) {
		dg_verdict_set(v, "nan_divergence",
			       over ? "an overflow while training (numpy raised, as np.seterr asked)"
				 : "a division by zero or an invalid value (NaN) while training "
				   "(numpy raised, as np.seterr asked)",
			       line, SUGGEST_NAN_RAISED);
		dg_set_confidence(v, over ? CONF_HIGH : CONF_MEDIUM,
				  "numpy's message names the error, and a loss was being computed");
		return;
	}
	dg_verdict_set(v, "code_error",
		       over ? "an overflow in the code's arithmetic, which np.seterr or np.errstate "
			   "made an error"
			 : "a division by zero (or 0/0, an invalid value) in the code's arithmetic, "
			   "which np.seterr or np.errstate made an error",
		       line,
		       over ? "compute it in a stable form (subtract the maximum before exp, log-sum-exp, "
			   "clip the argument), or use a wider dtype"
			 : "guard the denominator where it can be 0 (a class never predicted, an "
			   "empty group), or compute it under np.errstate(divide='ignore', "
			   "invalid='ignore') and handle the result (np.nan_to_num, np.where)");
	dg_set_confidence(v, CONF_MEDIUM, "numpy's message names the error; no loss was being "
				       "computed, so it is read as the code's own arithmetic");
}

/* An environment variable name as os.environ's KeyError quotes it. */
static bool env_name(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!(isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

/* What the sandbox takes away from the process (docs/sandbox.md): the host's environment
 * variables and the controlling terminal. Code that reads them works at the user's terminal,
 * so the error is the sandbox's, with the flag or the call that does without. */
static void refine_sandbox_world(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	const char *inner = e->frame != NONE ? log->lines[e->frame] : "";
	const char *src = source_of(log, v->code_frame, e->line);
	char key[64], what[400], sugg[DIAG_TEXT_LEN];

	if (strcmp(v->cls, "code_error") != 0)
		return;
	if (dg_starts_with(line, "KeyError: ") && dg_quoted_after(line, "KeyError:", key, sizeof(key)) &&
	    env_name(key) &&
	    ((strstr(inner, "/os.py\"") && strstr(inner, "__getitem__")) ||
	     (src && strstr(src, "environ[")))) {
		snprintf(what, sizeof(what),
			 "the environment variable %s is not set in the sandbox, which starts from "
			 "a clean environment (PATH, HOME=/tmp, TMPDIR, LANG and what -e passes)",
			 key);
		snprintf(sugg, sizeof(sugg),
			 "pass it with -e %.60s=VALUE (-e %.60s=\"$%.60s\" for the host's value), or read it "
			 "with a default (os.environ.get('%.60s', ...))", key, key, key, key);
		dg_verdict_set(v, "sandbox_restriction", what, line, sugg);
		dg_set_confidence(v, CONF_HIGH, "os.environ raised KeyError for a variable's name");
		return;
	}
	bool no_tty = dg_has(line, "[Errno 6] No such device or address") ||
		      dg_has(line, "[Errno 25] Inappropriate ioctl for device");
	if (dg_starts_with(line, "OSError") && no_tty &&
	    ((src && strstr(src, "getlogin")) || dg_has(line, "/dev/tty"))) {
		dg_verdict_set(v, "sandbox_restriction",
			       "the sandbox runs the experiment without a controlling terminal, so "
			       "what asks the terminal (os.getlogin(), /dev/tty) fails", line,
			       "use getpass.getuser() instead of os.getlogin() (it reads LOGNAME and "
			       "USER, then the password database), or pass -e USER=NAME and read "
			       "os.environ['USER']");
		dg_set_confidence(v, CONF_HIGH, "the error is ENXIO or ENOTTY from a call that needs a "
					     "terminal");
	}
}

/* The experiment's own modules: what was staged (RUN_DIR/exp) is on this machine when the
 * diagnosis is made, so an import of a name the experiment itself holds is looked up there
 * rather than taken for a package to install. */
enum { OWN_NONE, OWN_FILE, OWN_PACKAGE, OWN_DIR };

/* The staged experiment's own path for a path a traceback or message names (relative to the
 * experiment, under it, or through an exp/ directory of a log from elsewhere); false when it
 * is not the experiment's or there is no staged experiment. */
static bool staged_path(const lb_log *log, const char *file, char *out, size_t outlen)
{
	const char *exp = log->exp_dir;
	size_t n = exp ? strlen(exp) : 0;
	int w;

	while (n > 1 && exp[n - 1] == '/')
		n--;
	if (n == 0 || !file[0] || file[0] == '<')
		return false;
	if (strncmp(file, exp, n) == 0 && (file[n] == '/' || file[n] == '\0'))
		w = snprintf(out, outlen, "%s", file);
	else if (file[0] != '/')
		w = snprintf(out, outlen, "%.*s/%s", (int)n, exp, file);
	else if (dg_in_experiment(file, exp) && strstr(file, "/exp/"))
		w = snprintf(out, outlen, "%.*s%s", (int)n, exp, strstr(file, "/exp/") + 4);
	else
		return false;
	return w > 0 && (size_t)w < outlen;
}

/* What `name` is in dir: a module (name.py), a package (name/__init__.py), or a directory
 * of Python files (a namespace package). */
static int own_module_in(const char *dir, const char *name)
{
	char p[PATH_MAX], q[PATH_MAX + 16];
	struct stat st;
	int w = snprintf(p, sizeof(p), "%s/%s.py", dir, name);

	if (w > 0 && (size_t)w < sizeof(p) && stat(p, &st) == 0 && S_ISREG(st.st_mode))
		return OWN_FILE;
	w = snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (w <= 0 || (size_t)w >= sizeof(p) || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
		return OWN_NONE;
	snprintf(q, sizeof(q), "%s/__init__.py", p);
	if (stat(q, &st) == 0)
		return OWN_PACKAGE;
	DIR *d = opendir(p);
	struct dirent *de;
	int kind = OWN_NONE;
	for (size_t k = 0; d && kind == OWN_NONE && k < 2000 && (de = readdir(d)); k++) {
		size_t l = strlen(de->d_name);
		if (l > 3 && strcmp(de->d_name + l - 3, ".py") == 0)
			kind = OWN_DIR;
	}
	if (d)
		closedir(d);
	return kind;
}

/* Directories no experiment keeps its own modules in: a virtual environment's or a cache. */
bool dg_foreign_dir(const char *name)
{
	static const char *const names[] = { "__pycache__", "site-packages", "dist-packages",
					      "node_modules", NULL };
	if (name[0] == '.')
		return true;
	for (size_t i = 0; names[i]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* The first directory under root (itself included, a few levels down, breadth of a small
 * tree) that holds `name` as a module or package: rel gets its path relative to root ("" for
 * root). *budget bounds the entries read. */
static int find_own_module(const char *root, const char *rel, const char *name, int depth,
			   size_t *budget, char *out, size_t outlen)
{
	char dir[PATH_MAX];
	int w = snprintf(dir, sizeof(dir), "%s%s%s", root, rel[0] ? "/" : "", rel);
	int kind;

	if (w <= 0 || (size_t)w >= sizeof(dir))
		return OWN_NONE;
	if ((kind = own_module_in(dir, name)) != OWN_NONE) {
		snprintf(out, outlen, "%s", rel);
		return kind;
	}
	if (depth <= 0)
		return OWN_NONE;
	DIR *d = opendir(dir);
	struct dirent *de;
	char sub[PATH_MAX];
	kind = OWN_NONE;
	while (d && kind == OWN_NONE && *budget > 0 && (de = readdir(d))) {
		(*budget)--;
		if (dg_foreign_dir(de->d_name) || strcmp(de->d_name, name) == 0)
			continue;
		w = snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		struct stat st;
		if (w <= 0 || (size_t)w >= sizeof(sub) || lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		w = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (w > 0 && (size_t)w < sizeof(sub))
			kind = find_own_module(root, sub, name, depth - 1, budget, out, outlen);
	}
	if (d)
		closedir(d);
	return kind;
}

/* The staged directory Python put first on sys.path: the entry point's, the directory of the
 * traceback's outermost frame of the experiment's. Falls back to the experiment's top. */
static void entry_dir(const lb_log *log, const lb_exc *e, char *out, size_t outlen)
{
	char file[DIAG_EVIDENCE_LEN], func[128], host[PATH_MAX];
	long lineno;

	snprintf(out, outlen, "%s", log->exp_dir);
	for (size_t i = e->header; i < e->line; i++)
		if (dg_parse_frame(log->lines[i], file, sizeof(file), &lineno, func, sizeof(func)) &&
		    dg_in_experiment(file, log->exp_dir)) {
			if (staged_path(log, file, host, sizeof(host)) && strrchr(host, '/')) {
				*strrchr(host, '/') = '\0';
				snprintf(out, outlen, "%s", host);
			}
			return;
		}
}

/* One edit apart (an insertion, a deletion, a substitution or two neighbours swapped). */
static bool one_edit(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i = 0;

	if (la + 1 < lb || lb + 1 < la || strcmp(a, b) == 0)
		return false;
	while (a[i] && a[i] == b[i])
		i++;
	if (la == lb)
		return strcmp(a + i + 1, b + i + 1) == 0 ||
		       (a[i + 1] == b[i] && a[i] == b[i + 1] && strcmp(a + i + 2, b + i + 2) == 0);
	return la > lb ? strcmp(a + i + 1, b + i) == 0 : strcmp(a + i, b + i + 1) == 0;
}

/* A module of the experiment's in dir whose name is one edit from `name` ("utilz" and
 * utils.py): its file name in out. */
static bool near_own_module(const char *dir, const char *name, char *out, size_t outlen)
{
	struct dirent *de;
	bool found = false;
	char stem[NAME_MAX + 1];

	if (strlen(name) < 4)
		return false;
	DIR *d = opendir(dir);
	for (size_t k = 0; d && !found && k < 5000 && (de = readdir(d)); k++) {
		size_t l = strlen(de->d_name);
		if (dg_foreign_dir(de->d_name))
			continue;
		snprintf(stem, sizeof(stem), "%s", de->d_name);
		if (l > 3 && strcmp(stem + l - 3, ".py") == 0)
			stem[l - 3] = '\0';
		if (!one_edit(stem, name) || own_module_in(dir, stem) == OWN_NONE)
			continue;
		snprintf(out, outlen, "%s", de->d_name);
		found = true;
	}
	if (d)
		closedir(d);
	return found;
}

static const char SUGGEST_OWN_MODULE[] =
	"the module is the experiment's own code, not a package to install: add the missing file "
	"to the experiment directory (a file labbox did not stage is not in RUN_DIR/exp), or fix "
	"the import's spelling; no environment or flag changes this";

/* "No module named 'mypkg.models'" where mypkg is the experiment's own package, or "'utils'"
 * where the experiment has utils.py out of the import path or a name one edit away: the
 * experiment's code, not a package or an environment. */
static void refine_own_module(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	char module[128], top[128], dir[PATH_MAX], where[PATH_MAX], what[400];
	size_t budget = 20000;
	int kind;

	if ((strcmp(v->cls, "missing_package") != 0 && strcmp(v->cls, "wrong_env") != 0) ||
	    !log->exp_dir || !dg_quoted_after(line, "No module named", module, sizeof(module)))
		return;
	snprintf(top, sizeof(top), "%.*s", (int)strcspn(module, "."), module);
	if (!top[0] || strchr(top, '/'))
		return;
	entry_dir(log, e, dir, sizeof(dir));
	kind = own_module_in(dir, top);
	bool searched = kind != OWN_NONE;
	if (kind != OWN_NONE) {
		snprintf(where, sizeof(where), "%s", dg_experiment_relative(dir, log->exp_dir));
		if (strcmp(where, dir) == 0 || strcmp(dir, log->exp_dir) == 0)
			where[0] = '\0';
	} else {
		kind = find_own_module(log->exp_dir, "", top, 4, &budget, where, sizeof(where));
	}
	if (kind != OWN_NONE) {
		const char *shape = kind == OWN_FILE ? "module" : "package";
		char file[PATH_MAX + 160];
		snprintf(file, sizeof(file), "%.120s%s%s%s", where, where[0] ? "/" : "", top,
			 kind == OWN_FILE ? ".py" : "/");
		if (strchr(module, '.')) {
			/* which part is missing: the first that is neither NAME.py nor NAME/ */
			char path[PATH_MAX], part[128];
			const char *p = module + strlen(top);
			int k = kind;
			snprintf(path, sizeof(path), "%s%s%s/%s", log->exp_dir, where[0] ? "/" : "", where,
				 top);
			while (*p == '.' && k != OWN_FILE) {
				snprintf(part, sizeof(part), "%.*s", (int)strcspn(p + 1, "."), p + 1);
				if ((k = own_module_in(path, part)) == OWN_NONE)
					break;
				size_t l = strlen(path);
				snprintf(path + l, sizeof(path) - l, "/%s", part);
				p += 1 + strlen(part);
			}
			const char *rel = dg_experiment_relative(path, log->exp_dir);
			if (*p != '.')
				snprintf(what, sizeof(what),
					 "'%s' is the experiment's own %s (%.120s), and it was staged, but "
					 "importing it failed", module, shape, file);
			else if (k == OWN_FILE)
				snprintf(what, sizeof(what),
					 "'%s' names a module inside %.120s.py, which is the experiment's own "
					 "module and not a package", module, rel);
			else
				snprintf(what, sizeof(what),
					 "the experiment's own %s '%s' (%.100s) has no module '%s': there is "
					 "no %.60s/%s.py or %.60s/%s/ in the staged experiment", shape, top,
					 file, part, rel, part, rel, part);
			dg_verdict_set(v, "code_error", what, line, SUGGEST_OWN_MODULE);
			dg_set_confidence(v, CONF_HIGH, "labbox looked in the staged experiment: the "
						     "module's package is the experiment's own");
			return;
		}
		if (searched) {
			snprintf(what, sizeof(what),
				 "'%s' is the experiment's own %s (%.120s), in the directory Python "
				 "searches, yet importing it failed (the code changed sys.path, or "
				 "ran from another directory)", top, shape, file);
			dg_verdict_set(v, "code_error", what, line, SUGGEST_OWN_MODULE);
			dg_set_confidence(v, CONF_MEDIUM, "labbox found the module in the staged "
						       "experiment, where Python looks");
			return;
		}
		snprintf(what, sizeof(what),
			 "'%s' is the experiment's own %s (%.120s), but Python did not look there: it "
			 "searches the entry point's directory (%.100s), not the experiment's "
			 "subdirectories", top, shape, file,
			 where[0] && strcmp(dir, log->exp_dir) != 0
				 ? dg_experiment_relative(dir, log->exp_dir) : "the experiment's top");
		dg_verdict_set(v, "code_error", what, line,
			       "import it through the package it is in (from DIR import NAME, with "
			       "DIR/__init__.py), or put its directory on sys.path before importing it; "
			       "no environment or flag changes this");
		dg_set_confidence(v, CONF_MEDIUM, "labbox found a module of that name in the staged "
					       "experiment, outside the directory Python searched");
		return;
	}
	if (strchr(module, '.') || !near_own_module(dir, top, where, sizeof(where)))
		return;
	snprintf(what, sizeof(what),
		 "no module named '%s', and the experiment has its own %.100s, one letter apart: most "
		 "likely a misspelt import of the experiment's own module", top, where);
	char sugg[DIAG_TEXT_LEN];
	snprintf(sugg, sizeof(sugg),
		 "fix the import's spelling (%.100s); if '%s' is a package meant to be installed, "
		 "install it into a virtual environment (pip install %s) and run with --python "
		 "VENV/bin/python", where, top, dg_pip_name(top));
	dg_verdict_set(v, "code_error", what, line, sugg);
	dg_set_confidence(v, CONF_MEDIUM, "the name is one letter from a module of the staged "
				       "experiment; a package of that name would read the same");
}

/* "nan" or "inf" as a word of its own. */
static bool has_nonfinite_word(const char *s)
{
	if (dg_has_nan_word(s))
		return true;
	for (const char *p = strcasestr(s, "inf"); p; p = strcasestr(p + 1, "inf"))
		if ((p == s || !dg_word_char(p[-1])) && !dg_word_char(p[3]))
			return true;
	return false;
}

/* What training code prints as it goes: a loss, or what reinforcement learning prints instead
 * (rewards, returns, an entropy), and the names of the steps it counts. */
static const char *const metric_words[] = { "loss", "reward", "return", "entropy", "objective",
					    "perplexity", "grad_norm", NULL };
static const char *const step_words[] = { "epoch", "episode", "step", "iter", "update",
					  "batch", NULL };

/* The output printed before a traceback: how far up it is read for a training loop. */
#define TRAINING_LINES 400

/* A metric logged above the traceback that was already NaN or infinite: the training
 * diverged before the error. */
static bool metric_went_nonfinite(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header; i-- > 0 && e->header - i <= TRAINING_LINES;)
		if (dg_has_any(log->lines[i], metric_words) && has_nonfinite_word(log->lines[i]))
			return true;
	return false;
}

/* Lines above the traceback that count steps or log a metric with a number: an optimisation
 * loop ran before the error, which a NaN in the data read at the start would not need. */
static bool training_printed(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header; i-- > 0 && e->header - i <= TRAINING_LINES;) {
		const char *l = log->lines[i];
		if (dg_is_frame(l) || !strpbrk(l, "0123456789") || dg_has(l, "Warning"))
			continue;
		if (dg_has_any(l, metric_words) || dg_has_any(l, step_words))
			return true;
	}
	return false;
}

/* Words with which a loader says it found no file (glob finds nothing and raises nothing, so
 * loaders assert or raise their own error instead of FileNotFoundError). */
static const char *const not_found_words[] = {
	"did not find", "didn't find", "not found", "no files", "no file", "does not exist",
	"doesn't exist", "do not exist", "could not find", "couldn't find", "cannot find",
	"can't find", "unable to find", "no such file", "is missing", "are missing",
	"missing file", "no data found", NULL,
};

/* A data file's name: a path (a slash in it) or a name with an extension data has. */
static bool data_path_token(const char *t)
{
	static const char *const exts[] = {
		".bin", ".csv", ".tsv", ".npy", ".npz", ".pt", ".pth", ".ckpt", ".h5", ".hdf5",
		".json", ".jsonl", ".txt", ".parquet", ".pkl", ".pickle", ".arrow", ".tar", ".gz",
		".zip", ".mat", ".xlsx", ".tfrecord", ".safetensors", ".png", ".jpg", ".wav",
		".nc", ".fasta", ".fa", ".vcf", ".bam", ".idx", ".dat", ".feather", NULL,
	};
	size_t n = strlen(t);
	if (n < 3 || strstr(t, "://") || strchr(t, '(') || strchr(t, '='))
		return false;
	if (strchr(t, '/'))
		return true;
	for (size_t i = 0; exts[i]; i++) {
		size_t k = strlen(exts[i]);
		if (n > k && strcasecmp(t + n - k, exts[i]) == 0)
			return true;
	}
	return false;
}

/* Whether a path (or a glob pattern) the message names matches nothing in the sandbox that
 * labbox can see: under the staged experiment for a relative path or one inside it; a path
 * elsewhere on the host is hidden from the sandbox (unless mounted, when the message would
 * not say it is missing). false when it cannot tell (no experiment to look in). */
static bool path_missing(const char *tok, const char *exp_dir)
{
	char pat[PATH_MAX];
	size_t n = exp_dir ? strlen(exp_dir) : 0;
	while (n > 1 && exp_dir[n - 1] == '/')
		n--;
	if (tok[0] == '/' && !(n > 0 && strncmp(tok, exp_dir, n) == 0 && tok[n] == '/'))
		return true;
	struct stat st;
	if (!exp_dir || stat(exp_dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return false; /* no staged experiment left to look in */
	int w = tok[0] == '/' ? snprintf(pat, sizeof pat, "%s", tok)
			      : snprintf(pat, sizeof pat, "%.*s/%s", (int)n, exp_dir,
					 strncmp(tok, "./", 2) == 0 ? tok + 2 : tok);
	if (w <= 0 || (size_t)w >= sizeof pat)
		return false;
	glob_t g;
	int r = glob(pat, GLOB_NOSORT, NULL, &g);
	bool none = r == GLOB_NOMATCH;
	if (r == 0)
		globfree(&g);
	return none;
}

/* A file name one misspelling from another: one edit (an insertion, a deletion, a
 * substitution, two neighbours swapped) inside a word of at least three letters of the name
 * looked for, touching no digit; or the same name in another letter case (a file system that
 * ignores case, where the code was written, opens it). An edit at a digit names another
 * numbered file (a shard, an epoch, a fold), and one of a one- or two-letter word another
 * file of a set (X_train.npy beside y_train.npy): neither is a misspelling. */
static bool misspelt_file_name(const char *want, const char *have)
{
	size_t i = 0, lw = strlen(want);

	if (strcmp(want, have) == 0)
		return false;
	if (strcasecmp(want, have) == 0)
		return true;
	if (lw < 4 || !one_edit(want, have))
		return false;
	while (want[i] && want[i] == have[i])
		i++;
	if (isdigit((unsigned char)want[i]) || isdigit((unsigned char)have[i]))
		return false;
	/* the word of want the edit is in (at its end for an insertion after it) */
	size_t from = i, to = i;
	while (from > 0 && isalpha((unsigned char)want[from - 1]))
		from--;
	while (want[to] && isalpha((unsigned char)want[to]))
		to++;
	return to - from >= 3;
}

/* Where the code looked for a file that does not exist: a name one misspelling from the one
 * it asked for, in the same directory of the staged experiment (RUN_DIR/exp, read when the
 * diagnosis is made, as the experiment's own modules are). *n gets how many such names there
 * are (up to 3 go into out, separated by ", ", each as the code would write it: the path's
 * directory as it gave it, then the name). A path outside the experiment, or a directory it
 * does not have, has none. */
static void near_miss_files(const lb_log *log, const char *path, char *out, size_t outlen,
			    size_t *n)
{
	char host[PATH_MAX], name[NAME_MAX + 1];
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;

	*n = 0;
	out[0] = '\0';
	if (strpbrk(path, "*?[") || strstr(path, "..") || !path[dirlen] ||
	    snprintf(name, sizeof name, "%s", path + dirlen) >= (int)sizeof name ||
	    !staged_path(log, path, host, sizeof host))
		return;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return;
	*strrchr(host, '/') = '\0';
	DIR *d = opendir(host);
	struct dirent *de;
	for (size_t k = 0; d && k < 5000 && (de = readdir(d)); k++) {
		if ((de->d_name[0] == '.' && name[0] != '.') || !misspelt_file_name(name, de->d_name))
			continue;
		if ((*n)++ < 3) {
			size_t l = strlen(out);
			snprintf(out + l, outlen - l, "%s%.*s%s", l ? ", " : "", (int)dirlen, path,
				 de->d_name);
		}
	}
	if (d)
		closedir(d);
}

/* A read of a file that does not exist (missing_data) whose name, in the directory where the
 * code looked, is one misspelling from a file the experiment has: the code's path is wrong,
 * not the data missing ("Did you mean" for files). Several such names leave it missing_data,
 * said in the summary: which one was meant is not for labbox to pick. */
static void refine_misspelt_path(lb_verdict *v, const lb_log *log, const lb_exc *e,
				 const char *path)
{
	char near[600], what[DIAG_TEXT_LEN], sugg[DIAG_TEXT_LEN];
	size_t n;

	if (strcmp(v->cls, "missing_data") != 0 || !path[0])
		return;
	near_miss_files(log, path, near, sizeof near, &n);
	if (n == 0)
		return;
	if (n > 1) {
		size_t l = strlen(v->summary);
		snprintf(v->summary + l, sizeof(v->summary) - l,
			 " (the experiment has %zu names one letter from it where the code looked: "
			 "%.200s%s; if one was meant, the path is misspelt)", n, near,
			 n > 3 ? ", ..." : "");
		dg_set_confidence(v, CONF_MEDIUM, "the file is not where the code looked, but the "
					       "experiment has several names one letter from it there");
		return;
	}
	snprintf(what, sizeof what,
		 "a misspelt path: the code opens '%.120s', which does not exist, and the "
		 "experiment has '%.120s' where it looked, one letter apart (did you mean "
		 "%.120s?)", path, near, near);
	snprintf(sugg, sizeof sugg,
		 "fix the file name in the code (did you mean %.120s?): the file is staged with the "
		 "experiment, so there is nothing to copy in or mount", near);
	dg_verdict_set(v, "code_error", what, log->lines[e->line], sugg);
	dg_set_confidence(v, CONF_MEDIUM, "a file one letter from the one the code opens is staged "
				       "where it looked; a file of that exact name that was never "
				       "staged would read the same");
}

/* A code_error whose message says a file was not found and names a path the sandbox does
 * not have (llm.c's `assert len(files) > 0, "did not find any files that match the pattern
 * dev/data/x.bin"`, `assert os.path.exists(p), f"{p} does not exist"`): missing data. */
static void refine_missing_path(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	static const char *const code_names[] = {
		"KeyError", "AttributeError", "NameError", "TypeError", "SyntaxError",
		"ImportError", "ModuleNotFoundError", "IndentationError", "UnboundLocalError",
		"FileNotFoundError", "IsADirectoryError", "NotADirectoryError", NULL,
	};
	const char *line = log->lines[e->line];
	size_t name_len = 0;
	/* an OS error's own words ([Errno 2]) were read by the file rules already */
	if (strcmp(v->cls, "code_error") != 0 || strstr(line, "[Errno") ||
	    !dg_exception_line_of(line, &name_len, !e->bare) ||
	    dg_name_is(line, name_len, code_names) || !dg_has_any(line + name_len, not_found_words))
		return;
	/* the message's words, split on blanks and quotes, trailing punctuation off */
	char msg[DIAG_TEXT_LEN], path[256] = "";
	snprintf(msg, sizeof msg, "%s", line + name_len);
	for (char *tok = strtok(msg, " \t'\"`,;"); tok && !path[0]; tok = strtok(NULL, " \t'\"`,;")) {
		size_t k = strlen(tok);
		while (k > 0 && strchr(".:)]}!?", tok[k - 1]))
			k--;
		tok[k] = '\0';
		if (tok[0] == '(' || tok[0] == '[')
			tok++;
		if (data_path_token(tok) && path_missing(tok, log->exp_dir))
			snprintf(path, sizeof path, "%s", tok);
	}
	if (!path[0])
		return;
	char what[360];
	snprintf(what, sizeof what,
		 "the data '%.200s' is not in the sandbox (the message says it was not found, and "
		 "the staged experiment has no such file)", path);
	dg_verdict_set(v, "missing_data", what, line, "");
	if (lb_diag_credential_path(path))
		snprintf(v->suggestion, sizeof v->suggestion, DG_SUGGEST_CREDENTIAL, path);
	else
		snprintf(v->suggestion, sizeof v->suggestion,
			 "put '%.200s' inside the experiment directory (it is staged as exp/; run "
			 "the step that prepares or downloads it beforehand: the sandbox has no "
			 "network) and read it by a relative path, or mount it with -v SRC:DST:ro; "
			 "if the path is not the one meant, fix it in the code", path);
	dg_set_confidence(v, CONF_MEDIUM, "the error's message says a file was not found and names a "
				       "path the sandbox does not have; the code's own path may be "
				       "the wrong one");
	refine_misspelt_path(v, log, e, path);
}

/* A FileNotFoundError of a read (missing_data, its path quoted after the OS's words) whose
 * name is misspelt: see refine_misspelt_path. */
static void refine_misspelt_file(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	static const char *const file_names[] = { "FileNotFoundError", NULL };
	const char *line = log->lines[e->line];
	char path[256];
	size_t name_len = 0;

	if (strcmp(v->cls, "missing_data") != 0)
		return;
	if (dg_quoted_after(line, "No such file or directory", path, sizeof path) ||
	    (dg_exception_line_of(line, &name_len, !e->bare) &&
	     dg_name_is(line, name_len, file_names) &&
	     dg_quoted_after(line, "Error:", path, sizeof path)))
		refine_misspelt_path(v, log, e, path);
}

/* A sampler's check of its probabilities: what it samples from is nearly always what a model
 * computed (a softmax, a policy), so training that diverged reaches it, and so does a NaN in
 * the data the model was fed. */
static bool sampling_check(const char *line, const char *src)
{
	static const char *const words[] = { "probability tensor", "probabilities contain",
					     "probabilities are not", "Simplex()",
					     "Expected parameter probs", "Expected parameter logits",
					     "multinomial", "Categorical", NULL };
	static const char *const calls[] = { "multinomial(", "Categorical(", "choice(",
					     "sample(", NULL };
	return dg_has_any(line, words) || (src && dg_has_any(src, calls));
}

static const char SUGGEST_NAN_EITHER[] =
	"find where the first NaN appears: check the inputs for missing values "
	"(np.isnan(x).any(), df.isna().sum()) and drop, fill or impute them; if they have none, "
	"the training diverged: lower the learning rate, clip gradients "
	"(torch.nn.utils.clip_grad_norm_), and log the loss or rewards each step; "
	"torch.autograd.set_detect_anomaly(True) or np.seterr(all='raise') stops at the first NaN";

/* A NaN message is a divergence when it is about training (a loss, a gradient, backward, an
 * optimizer), or a metric the code logged went NaN before it. A conversion or an input check
 * that meets one with no training step printed before it is most likely a missing value in
 * the data. Anything else cannot be told apart from the output: a sampler's NaN probabilities
 * (RL code prints rewards, not losses) come from a policy that diverged as readily as from
 * NaN inputs, so the verdict says both and never rules the learning rate out. */
static void refine_nan(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	static const char *const training[] = { "loss", "grad", "diverg", "backward",
						"returned nan values", "optimizer", "optimiser",
						"learning rate", "logits", "weights", NULL };
	static const char *const data[] = { "convert", "Input", "contains NaN", "missing value",
					    "NA ", "NA)", "NaN values", "non-finite values",
					    "cast", NULL };
	const char *line = log->lines[e->line];
	const char *src = source_of(log, v->code_frame, e->line);
	/* torch.distributions names the NaN on the lines below its message, not in it */
	bool distribution = strcmp(v->cls, "code_error") == 0 &&
			    dg_has(line, "Expected parameter") && dg_has(line, "invalid values") &&
			    e->line + 1 < log->n && has_nonfinite_word(log->lines[e->line + 1]);

	if ((strcmp(v->cls, "nan_divergence") != 0 && !distribution) ||
	    dg_has(line, "FloatingPointError") || (!distribution && dg_has_any(line, training)))
		return;
	if (metric_went_nonfinite(log, e)) {
		v->cls = "nan_divergence";
		dg_set_confidence(v, CONF_MEDIUM, "a NaN error that names no training step, after a "
					       "logged metric (a loss, a reward) had become NaN or "
					       "infinite");
		return;
	}
	bool trained = training_printed(log, e);
	bool sampler = distribution || sampling_check(line, src);
	if (dg_has_any(line, data) && !trained && !sampler) {
		dg_verdict_set(v, "code_error",
			       "a NaN reached code that cannot take one (a conversion or an input "
			       "check) before any training step was printed: most likely a missing "
			       "value in the data (an empty field read as NaN), not a divergence",
			       line,
			       "find where the NaN comes from: check the input for missing values "
			       "(np.isnan(x).sum(), df.isna().sum()) and drop, fill or impute them "
			       "(dropna, fillna, SimpleImputer) before converting or fitting, or guard "
			       "the arithmetic that makes it; a lower learning rate does not fill a "
			       "missing value");
		dg_set_confidence(v, CONF_HIGH, "the message is a conversion or an input check that met "
					     "a NaN, and nothing above it printed a training step or "
					     "a NaN metric");
		return;
	}
	if (trained && sampler) {
		dg_verdict_set(v, "nan_divergence",
			       "NaN probabilities reached a sampler after training steps had run: most "
			       "likely the training diverged (the policy's or model's values grew until "
			       "they became NaN); a NaN in the input data would read the same",
			       line, SUGGEST_NAN_EITHER);
		dg_set_confidence(v, CONF_MEDIUM, "a sampler's NaN probabilities after training steps were "
					       "printed; no metric printed NaN, so a NaN from the data "
					       "is not ruled out");
		return;
	}
	dg_verdict_set(v, trained ? "nan_divergence" : "code_error",
		       trained ? "a NaN reached code that cannot take one after training steps had "
				 "run: either the training diverged or a NaN came in from the data; "
				 "the output does not say which"
			       : sampler ? "NaN probabilities reached a sampler: either the model or "
					   "policy that computed them diverged, or a NaN came in from the "
					   "data; the output does not say which"
					 : "a NaN reached code that cannot take one: a missing value in "
					   "the data, a value the code computed (0/0, log(0)), or "
					   "training that diverged; the output does not say which",
		       line, SUGGEST_NAN_EITHER);
	dg_set_confidence(v, CONF_MEDIUM, "a NaN in the message, with no NaN metric logged before it: "
				       "the output cannot tell a divergence from a NaN in the data");
}


static const char SUGGEST_OVERFLOW_DIVERGED[] =
	"the overflow is the diverged loss's symptom, not the line that raised it: lower the "
	"learning rate, clip gradients, and find the step where the loss first grew (log it each "
	"step); capping the argument (math.exp(min(x, 700))) would only hide the divergence";

/* An OverflowError ("math range error" from math.exp of a loss, "Numerical result out of
 * range" from a float power, "cannot convert float infinity to integer") after a loss printed
 * above it had diverged by the loss_divergence rule: the divergence, as a NaN error after a
 * NaN loss is. Without that evidence it stays the code's arithmetic. */
static void refine_overflow(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	static const char *const names[] = { "OverflowError", NULL };
	const char *line = log->lines[e->line];
	size_t name_len = 0, from, len = 0;
	char diverged[200], what[DIAG_TEXT_LEN];

	if (strcmp(v->cls, "code_error") != 0 || !dg_exception_line_of(line, &name_len, !e->bare) ||
	    !dg_name_is(line, name_len, names))
		return;
	from = e->header > TRAINING_LINES ? e->header - TRAINING_LINES : 0;
	for (size_t i = from; i < e->header; i++)
		len += strlen(log->lines[i]) + 1;
	char *text = malloc(len + 1);
	if (!text)
		return;
	len = 0;
	for (size_t i = from; i < e->header; i++) {
		size_t l = strlen(log->lines[i]);
		memcpy(text + len, log->lines[i], l);
		len += l;
		text[len++] = '\n';
	}
	bool found = lb_diag_loss_diverged(text, len, diverged, sizeof diverged);
	free(text);
	if (!found)
		return;
	snprintf(what, sizeof what,
		 "the training diverged before this overflow, which is its symptom: %s, printed "
		 "above the traceback", diverged);
	dg_verdict_set(v, "nan_divergence", what, line, SUGGEST_OVERFLOW_DIVERGED);
	dg_set_confidence(v, CONF_MEDIUM, "a loss the code printed before the overflow had "
				       "diverged; an overflow of the code's own arithmetic would read "
				       "the same");
}
/* EACCES on a path in the experiment's own copy, which the sandbox lets the run write: when
 * the staged file (or the directory it would be made in) lacks the owner's permission, its
 * own mode refused it (the code's os.chmod, or a file staged read-only), not the sandbox.
 * An exec there is left alone: the sandbox mounts what it lets the run write noexec. */
static void refine_own_permission(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	char path[PATH_MAX], host[PATH_MAX], what[400];
	struct stat st;
	bool dir = false;

	if (strcmp(v->cls, "sandbox_restriction") != 0 || !dg_has(line, "[Errno 13]") ||
	    !dg_quoted_after(line, "Permission denied", path, sizeof(path)) ||
	    !staged_path(log, path, host, sizeof(host)))
		return;
	if (lstat(host, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return;
		dir = S_ISDIR(st.st_mode);
		if ((st.st_mode & S_IRUSR) && (st.st_mode & S_IWUSR) && (!dir || (st.st_mode & S_IXUSR)))
			return;
	} else {
		char *slash = strrchr(host, '/');
		if (!slash || slash == host)
			return;
		*slash = '\0';
		if (stat(host, &st) != 0 || !S_ISDIR(st.st_mode) ||
		    ((st.st_mode & S_IWUSR) && (st.st_mode & S_IXUSR)))
			return;
		dir = true;
	}
	snprintf(what, sizeof(what),
		 "'%.200s' is in the experiment's own directory, which the sandbox lets the run "
		 "write, and %s mode (%04o) refused it: set by the code (os.chmod) or staged so",
		 path, dir ? "the directory's" : "the file's own", (unsigned)(st.st_mode & 07777));
	dg_verdict_set(v, "code_error", what, line,
		       "make it writable before writing it (os.chmod(path, 0o644); 0o755 for a "
		       "directory), or write a new file instead of the protected one; no sandbox flag "
		       "or mount changes a file's own mode");
	dg_set_confidence(v, CONF_HIGH, "the path is in the experiment's own copy, which the sandbox "
				     "lets the run write, and its mode lacks the owner's permission");
}

/* The module "cannot import name 'X' from 'M' (PATH)" names, and its file; false when the
 * message is not that. */
static bool import_source(const char *line, char *mod, size_t modlen, char *path, size_t pathlen)
{
	const char *from = strstr(line, "' from ");
	const char *open, *close;
	size_t n;

	if (!from || !dg_quoted_after(from + 1, "from", mod, modlen))
		return false;
	path[0] = '\0';
	open = strrchr(line, '(');
	close = open ? strchr(open, ')') : NULL;
	if (open && close && (n = (size_t)(close - open - 1)) > 0 && n < pathlen) {
		memcpy(path, open + 1, n);
		path[n] = '\0';
	}
	return true;
}

/* "cannot import name" from the experiment's own module (its path is under exp/, or the
 * module is one the experiment has), or a circular import: the code's, not a version. */
static void refine_own_import(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	char mod[128], path[PATH_MAX], host[PATH_MAX], name[128], top[128], dir[PATH_MAX],
		what[400];

	if ((strcmp(v->cls, "wrong_env") != 0 && strcmp(v->cls, "code_error") != 0) ||
	    !dg_has(line, "cannot import name") || !dg_quoted_after(line, "cannot import name", name, sizeof(name)) ||
	    !import_source(line, mod, sizeof(mod), path, sizeof(path)))
		return;
	bool circular = dg_has(line, "circular import") || dg_has(line, "partially initialized module");
	bool own = path[0] == '/' && staged_path(log, path, host, sizeof(host));
	if (!own && log->exp_dir && (!path[0] || strcmp(path, "unknown location") == 0)) {
		snprintf(top, sizeof(top), "%.*s", (int)strcspn(mod, "."), mod);
		entry_dir(log, e, dir, sizeof(dir));
		own = top[0] && own_module_in(dir, top) != OWN_NONE;
	}
	if (!own && path[0] == '/' && !log->exp_dir)
		own = dg_in_experiment(path, NULL);
	if (circular) {
		snprintf(what, sizeof(what),
			 "a circular import: %s '%.100s' was still being initialised when '%.100s' "
			 "was imported from it (it imports, directly or through another module, a "
			 "module that imports it back)",
			 own ? "the experiment's own module" : "module", mod, name);
		dg_verdict_set(v, "code_error", what, line,
			       "break the cycle: move what both modules need into a third module, import "
			       "inside the function that uses the name, or import the module (import M) "
			       "and use M.name when it is called; a file of the experiment named like a "
			       "library (random.py, torch.py) causes this too");
		dg_set_confidence(v, own ? CONF_HIGH : CONF_MEDIUM,
				  own ? "Python says it is a circular import, in the experiment's own module"
				   : "Python says it is a circular import");
		return;
	}
	if (!own)
		return;
	snprintf(what, sizeof(what),
		 "the experiment's own module '%.100s' has no name '%.100s' (misspelt, or renamed or moved "
		 "there)", mod, name);
	dg_verdict_set(v, "code_error", what, line,
		       "import a name the experiment's module defines (Python suggests one when it is "
		       "close), or define it there; no environment or flag changes this");
	dg_set_confidence(v, CONF_HIGH, "the module the name is imported from is the experiment's own "
				     "file");
}

/* Files of the loaders that unpickle: a frame of theirs innermost means the import that
 * failed was one the file being loaded asked for, not one of the code's. */
static const char *const unpickler_files[] = {
	"/pickle.py\"", "/shelve.py\"", "/torch/serialization.py\"",
	"/torch/_weights_only_unpickler.py\"", "/joblib/numpy_pickle.py\"",
	"/joblib/numpy_pickle_compat.py\"", "/dill/_dill.py\"", "/numpy/lib/npyio.py\"",
	"/numpy/lib/_npyio_impl.py\"", "/numpy/lib/format.py\"", "/pandas/io/pickle.py\"",
	"/pandas/compat/pickle_compat.py\"", NULL
};
/* The calls that unpickle, as the experiment's own line names them when the C unpickler
 * raised and no frame of a loader is printed. */
static const char *const unpickler_calls[] = {
	"pickle.load", "Unpickler(", "find_class(", "torch.load(", "joblib.load(", "dill.load",
	"np.load(", "numpy.load(", "read_pickle(", "shelve.open(", NULL
};

/* Whether e was raised while unpickling: the innermost frame is a loader's, or it is the
 * experiment's own line and that line calls one. */
static bool unpickling(const lb_log *log, const lb_exc *e, size_t code_frame)
{
	if (e->bare || e->frame == NONE)
		return false;
	if (dg_has_any(log->lines[e->frame], unpickler_files))
		return true;
	if (e->frame != code_frame)
		return false;
	/* a statement over several lines is printed whole by newer Pythons */
	for (size_t i = e->frame + 1; i < e->line && i < e->frame + 4 && !dg_is_frame(log->lines[i]); i++)
		if (dg_has_any(log->lines[i], unpickler_calls))
			return true;
	return false;
}

/* Import names of installed packages whose objects are pickled (models, estimators, frames,
 * arrays): a file naming one that is missing needs that package, not the saver's code. */
static bool known_package(const char *top)
{
	static const char *const names[] = {
		"numpy", "scipy", "pandas", "polars", "pyarrow", "torch", "torchvision",
		"torchaudio", "torchtext", "torch_geometric", "dgl", "tensorflow", "keras", "jax",
		"jaxlib", "flax", "optax", "equinox", "transformers", "tokenizers", "datasets",
		"sentence_transformers", "timm", "lightning", "pytorch_lightning", "xgboost",
		"lightgbm", "catboost", "statsmodels", "networkx", "gensim", "spacy", "nltk",
		"sympy", "numba", "h5py", "joblib", "dill", "cloudpickle", "matplotlib", "seaborn",
		"plotly", "imblearn", "hdbscan", "shap", "optuna", "gymnasium", "stable_baselines3",
		"omegaconf", "einops", "category_encoders", "pmdarima", "prophet", "skorch",
		"anndata", "scanpy", "xarray", "sktime", "annoy", "hnswlib", "peft", "accelerate",
		"diffusers", "onnx", "onnxruntime", "tqdm", "attrs", "pydantic", NULL
	};
	if (strcmp(dg_pip_name(top), top) != 0)
		return true; /* sklearn, PIL, cv2...: the map knows their project */
	for (size_t i = 0; names[i]; i++)
		if (strcmp(top, names[i]) == 0)
			return true;
	return false;
}

static const char SUGGEST_UNPICKLED_MODULE[] =
	"copy the module the file names (its .py file, or its package directory, with the "
	"classes the file's objects were made from) from the project that saved the file into "
	"the experiment directory, beside the entry script; or save plain data there instead of "
	"whole objects (a model's state_dict() with torch.save, arrays with np.save, a dict of "
	"numbers) and rebuild the objects in code; no package to install and no flag changes "
	"this";

/* "Can't get attribute 'X' on <module 'm' from 'PATH'>": X, m and PATH ("" for a module
 * without a file); false when the message is not that. Python 3.14 words it "Can't resolve
 * path 'X' on module 'm'". */
static bool missing_attribute(const char *line, char *cls, size_t clslen, char *mod,
			      size_t modlen, char *path, size_t pathlen)
{
	const char *m;

	path[0] = '\0';
	if (dg_quoted_after(line, "Can't get attribute", cls, clslen)) {
		m = strstr(line, "<module ");
		if (!m || !dg_quoted_after(m, "<module", mod, modlen))
			return false;
		m = strstr(m + 8 + strlen(mod), " from ");
		if (m && !dg_quoted_after(m, " from", path, pathlen))
			path[0] = '\0';
		return true;
	}
	return dg_quoted_after(line, "Can't resolve path", cls, clslen) &&
	       (m = strstr(line, " on module ")) && dg_quoted_after(m, "on module", mod, modlen);
}

/* A ModuleNotFoundError or a missing class raised while unpickling: the file being loaded
 * names the module its objects' classes were defined in, as the project that saved it had
 * them. That is no import of the experiment's code, so `pip install NAME` for a module of the
 * saver's own (models.py) installs something unrelated and fixes nothing. */
static void refine_unpickled(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	char module[128], top[128], cls[128], path[PATH_MAX], host[PATH_MAX], where[PATH_MAX],
		what[400], sugg[DIAG_TEXT_LEN];
	size_t budget = 20000;

	if (!unpickling(log, e, v->code_frame))
		return;
	if (missing_attribute(line, cls, sizeof(cls), module, sizeof(module), path, sizeof(path))) {
		snprintf(top, sizeof(top), "%.*s", (int)strcspn(module, "."), module);
		if (strcmp(module, "__main__") == 0) {
			snprintf(what, sizeof(what),
				 "the file being loaded names class '%.60s' of module '__main__': it "
				 "was defined in the script that saved the file, and this run's main "
				 "script does not define it", cls);
			dg_verdict_set(v, "code_error", what, line,
				       "move the class into a module of its own, staged with the experiment, "
				       "and import it in both the saving and the loading script (then save the "
				       "file again), or define or import the class in the loading script "
				       "before the load; or save plain data (a state_dict, arrays) instead of "
				       "whole objects");
			dg_set_confidence(v, CONF_HIGH, "raised while unpickling: the file names a class of "
						     "the saving program's main script");
			return;
		}
		if (path[0] && staged_path(log, path, host, sizeof(host))) {
			snprintf(what, sizeof(what),
				 "the file being loaded names class '%.60s' in module '%.60s', and the "
				 "experiment's own %.100s does not define it (the saving project's "
				 "version of the module had it)",
				 cls, module, dg_experiment_relative(host, log->exp_dir));
			dg_verdict_set(v, "code_error", what, line,
				       "copy the class's definition from the project that saved the file into "
				       "the experiment's module (or stage that project's version of it), or "
				       "save plain data (a state_dict, arrays) instead of whole objects; no "
				       "package to install and no flag changes this");
			dg_set_confidence(v, CONF_HIGH, "raised while unpickling: the module the file names "
						     "is the experiment's own file");
			return;
		}
		if (path[0] && (strstr(path, "site-packages") || strstr(path, "dist-packages")) &&
		    !lb_diag_is_stdlib(top, strlen(top))) {
			snprintf(what, sizeof(what),
				 "the file being loaded names class '%.60s' in module '%.60s', which "
				 "the installed %.60s does not have (the file was saved with another "
				 "version of it)", cls, module, top);
			snprintf(sugg, sizeof(sugg),
				 "load it with the version of %.60s that saved it, installed into a "
				 "virtual environment (pip install %.60s==VERSION; labbox installs "
				 "nothing itself) and run with --python VENV/bin/python; or save plain "
				 "data (arrays, parameters) that any version reads",
				 top, dg_pip_name(top));
			dg_verdict_set(v, "wrong_env", what, line, sugg);
			dg_set_confidence(v, CONF_MEDIUM, "raised while unpickling: the module the file "
						       "names is an installed package's");
			return;
		}
		snprintf(what, sizeof(what),
			 "the file being loaded names class '%.60s' in module '%.60s', which this "
			 "run's module of that name does not define", cls, module);
		dg_verdict_set(v, "code_error", what, line, SUGGEST_UNPICKLED_MODULE);
		dg_set_confidence(v, CONF_MEDIUM, "raised while unpickling: the class the file names "
					       "is not where it says");
		return;
	}
	if (!dg_quoted_after(line, "No module named", module, sizeof(module)))
		return;
	snprintf(top, sizeof(top), "%.*s", (int)strcspn(module, "."), module);
	if (!top[0] || strchr(top, '/'))
		return;
	if (strchr(module, '.') && strcmp(v->cls, "wrong_env") == 0) {
		/* the top imported: the file was saved by another version of it, or of Python */
		bool std = lb_diag_is_stdlib(top, strlen(top));
		snprintf(what, sizeof(what),
			 "the file being loaded names module '%.60s', which %s%.60s does not have "
			 "(the file was saved with another version of %s)",
			 module, std ? "this Python's " : "the installed ", top,
			 std ? "Python" : top);
		snprintf(sugg, sizeof(sugg), "%s", v->suggestion);
		dg_verdict_set(v, "wrong_env", what, line, sugg);
		return;
	}
	if (strcmp(v->cls, "missing_package") != 0)
		return;
	/* the experiment has it: staged but out of Python's path, read as its code */
	if (log->exp_dir && find_own_module(log->exp_dir, "", top, 4, &budget, where,
					    sizeof(where)) != OWN_NONE)
		return;
	if (strchr(module, '.') || known_package(top)) {
		snprintf(what, sizeof(what),
			 "the file being loaded names module '%.60s', of a package this interpreter "
			 "does not have (%.60s)", module, strchr(module, '.') ? module : dg_pip_name(top));
		v->cls = "missing_package";
		snprintf(v->summary, sizeof(v->summary), "%s: %s", what, line);
		/* the suggestion classify_missing_package made names the project */
		dg_set_confidence(v, CONF_HIGH, "raised while unpickling: the module the file names "
					     "is a known package's, and it is not installed");
		return;
	}
	snprintf(what, sizeof(what),
		 "the file being loaded names module '%.60s' (a pickled object names the module "
		 "its class was defined in), which is not staged with the experiment: the class "
		 "was defined in the saving project's own code (its %.60s.py), not in a package",
		 module, top);
	dg_verdict_set(v, "code_error", what, line, SUGGEST_UNPICKLED_MODULE);
	dg_set_confidence(v, CONF_MEDIUM, "raised while unpickling: the module the file names is "
				       "neither the experiment's nor a package labbox knows (an "
				       "unknown package of that name would read the same)");
}

/* A RecursionError raised on the experiment's own line: most often its own function calling
 * itself without end, which sys.setrecursionlimit only postpones unless the input is really
 * that deep. */
static void refine_recursion(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line] + dg_indent_of(log->lines[e->line]);

	if (strcmp(v->cls, "code_error") != 0 || !dg_starts_with(line, "RecursionError") ||
	    v->frame == NONE || v->frame != v->code_frame)
		return;
	snprintf(v->suggestion, sizeof v->suggestion,
		 "the experiment's own code went past Python's recursion limit, most often a "
		 "recursion without end: look for a cycle in the data it walks or a missing base "
		 "case; raise sys.setrecursionlimit only for inputs that are really that deep");
}

void dg_classify_at(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	const char *line = log->lines[e->line];
	size_t name_len = 0;

	dg_exception_line_of(line, &name_len, !e->bare);
	dg_classify_exception(v, line, name_len, via_subprocess(log, e),
			      dg_gate_recorded(log->gate, line));
	refine_missing_file(v, log, e);
	v->exc_line = e->line;
	v->frame = e->frame;
	v->code_frame = dg_code_frame_of(log, e);
	if (e->bare && !e->cut)
		dg_set_confidence(v, CONF_MEDIUM, "an exception line without the traceback above it");
	else if (strcmp(v->cls, "code_error") != 0)
		dg_set_confidence(v, CONF_HIGH, "the exception's name or message names the cause");
	else if (v->frame != NONE && v->frame == v->code_frame)
		dg_set_confidence(v, CONF_HIGH, e->cut ? "the experiment's own line raised the "
						       "exception (the last frames of a traceback longer "
						       "than the log's tail the diagnosis reads)"
						     : "the experiment's own line raised the exception");
	else if (v->code_frame != NONE)
		dg_set_confidence(v, CONF_MEDIUM,
				  "raised inside a library the experiment called: a wrong argument, or "
				  "a library version the code was not written for");
	else
		dg_set_confidence(v, CONF_MEDIUM, "no frame of the experiment's code in the traceback");
	refine_socket(v, log, e);
	refine_float(v, log, e);
	refine_sandbox_world(v, log, e);
	if (strcmp(v->cls, "code_error") == 0 && !e->bare && v->code_frame != NONE &&
	    dg_misspelt_name(line))
		dg_set_confidence(v, CONF_HIGH, "Python suggests a close name that the module has, for "
					     "the one the experiment's code used");
	refine_unpickled(v, log, e);
	refine_own_module(v, log, e);
	refine_own_import(v, log, e);
	refine_own_permission(v, log, e);
	refine_nan(v, log, e);
	refine_overflow(v, log, e);
	refine_missing_path(v, log, e);
	refine_misspelt_file(v, log, e);
	refine_recursion(v, log, e);
}
