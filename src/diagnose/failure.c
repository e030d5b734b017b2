/* Root cause of a failed run, read from how it ended and the tail of its output. */
#include "labbox/diagnose.h"
#include "../collect/text.h"
#include "failure_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char SUGGEST_GPU_NONE_HERE[] =
	"run it on a machine with an NVIDIA GPU (--mode ssh --host HOST to a lab server, "
	"--mode slurm with --gpus 0, or --mode colab), or make the code fall back to the "
	"CPU when torch.cuda.is_available() is False";

static const char SUGGEST_OOM_HUNG[] =
	"raise the memory limit (--memory), or hold less in memory in each process (fewer pool "
	"workers, smaller chunks); a larger --budget would not help a run that waits on a "
	"process that was killed";
static const char SUGGEST_OOM_HUNG_HOST[] =
	"labbox set no memory limit: the machine ran out of memory. Hold less in memory in "
	"each process (fewer pool workers, smaller chunks) or use a machine with more; a larger "
	"--budget would not help a run that waits on a process that was killed";
static const char SUGGEST_OOM_HOST[] =
	"labbox set no memory limit on this run, so the machine itself could not give what the "
	"code asked for: hold less in memory (smaller batches, float32 instead of float64, "
	"streaming the data instead of loading it whole), or run it where there is more memory";

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

static bool via_subprocess(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header; i < e->line; i++)
		if (dg_is_frame(log->lines[i]) && strstr(log->lines[i], "subprocess.py\""))
			return true;
	return false;
}

static void add_frame_evidence(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	if (e->frame != NONE) {
		size_t src = e->frame + 1;

		dg_add_evidence(v, e->frame);
		if (src < e->line && !dg_is_frame(log->lines[src]) && log->lines[src][0])
			dg_add_evidence(v, src);
	}
	dg_add_evidence(v, e->line);
}

/* Whether an exception earlier in a chain explains a later one of class `later` that the
 * code raised while handling it: a fetch that failed (network, a denied write, no GPU) is
 * why data is then missing, and a generic error says nothing of its own. */
static bool context_explains(const char *earlier, const char *later)
{
	if (strcmp(later, "code_error") == 0)
		return true;
	return strcmp(later, "missing_data") == 0 &&
	       (strcmp(earlier, "network") == 0 || strcmp(earlier, "sandbox_restriction") == 0 ||
		strcmp(earlier, "gate_refused") == 0 ||
		strcmp(earlier, "gpu_unavailable") == 0);
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

/* A loss logged above the traceback that was already NaN or infinite: the training diverged
 * before the error. */
static bool loss_went_nonfinite(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header; i-- > 0;)
		if (dg_has(log->lines[i], "loss") && has_nonfinite_word(log->lines[i]))
			return true;
	return false;
}

/* A NaN message is a divergence when it is about training (a loss, a gradient, backward, an
 * optimizer), or a loss went NaN before it. Otherwise a NaN met code that cannot take one
 * (int(), a library's input check): missing values in the data, which no learning rate
 * changes. */

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
	snprintf(v->suggestion, sizeof v->suggestion,
		 "put '%.200s' inside the experiment directory (it is staged as exp/; run the step "
		 "that prepares or downloads it beforehand: the sandbox has no network) and read it "
		 "by a relative path, or mount it with -v SRC:DST:ro; if the path is not the one "
		 "meant, fix it in the code", path);
	dg_set_confidence(v, CONF_MEDIUM, "the error's message says a file was not found and names a "
				       "path the sandbox does not have; the code's own path may be "
				       "the wrong one");
}

static void refine_nan(lb_verdict *v, const lb_log *log, const lb_exc *e)
{
	static const char *const training[] = { "loss", "grad", "diverg", "backward",
						"returned nan values", "optimizer", "optimiser",
						"learning rate", "logits", "weights", NULL };
	static const char *const data[] = { "convert", "Input", "contains NaN", "missing value",
					    "NA ", "NA)", "NaN values", "non-finite values",
					    "cast", NULL };
	const char *line = log->lines[e->line];

	if (strcmp(v->cls, "nan_divergence") != 0 || dg_has(line, "FloatingPointError") ||
	    dg_has_any(line, training))
		return;
	if (loss_went_nonfinite(log, e)) {
		dg_set_confidence(v, CONF_MEDIUM, "a NaN error that names no training step, after a "
					       "logged loss had become NaN or infinite");
		return;
	}
	bool conversion = dg_has_any(line, data);
	dg_verdict_set(v, "code_error",
		       "a NaN reached code that cannot take one (a conversion or an input check), and "
		       "no loss had become NaN before: most likely a missing value in the data (an "
		       "empty field read as NaN), not a divergence", line,
		       "find where the NaN comes from: check the input for missing values "
		       "(np.isnan(x).sum(), df.isna().sum()) and drop, fill or impute them (dropna, "
		       "fillna, SimpleImputer) before converting or fitting, or guard the arithmetic "
		       "that makes it; a lower learning rate changes nothing here");
	dg_set_confidence(v, conversion ? CONF_HIGH : CONF_MEDIUM,
			  conversion ? "the message is a conversion or an input check that met a NaN, "
				    "and nothing above it logged a NaN loss"
				  : "a NaN in the message, with no training step named and no NaN "
				    "loss logged before it");
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

static void classify_at(lb_verdict *v, const lb_log *log, const lb_exc *e)
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
	if (e->bare)
		dg_set_confidence(v, CONF_MEDIUM, "an exception line without the traceback above it");
	else if (strcmp(v->cls, "code_error") != 0)
		dg_set_confidence(v, CONF_HIGH, "the exception's name or message names the cause");
	else if (v->frame != NONE && v->frame == v->code_frame)
		dg_set_confidence(v, CONF_HIGH, "the experiment's own line raised the exception");
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
	refine_missing_path(v, log, e);
}

/* A worker process that died (a DataLoader's, a multiprocessing pool's) is reported by its
 * parent as a generic error; the worker's own last words above it say why. */
static bool worker_died(const char *line)
{
	return (dg_has(line, "worker") || dg_has(line, "process")) &&
	       (dg_has(line, "exited unexpectedly") || dg_has(line, "killed by signal") ||
		dg_has(line, "terminated abruptly"));
}

/* The experiment's own frame and the source line under it. */
static void add_code_evidence(lb_verdict *v, const lb_log *log)
{
	dg_add_evidence(v, v->code_frame);
	if (v->code_frame + 1 < log->n && !dg_is_frame(log->lines[v->code_frame + 1]))
		dg_add_evidence(v, v->code_frame + 1);
}

/* A parent's word that a child process or a worker ended: how it noticed that the child's
 * uncaught error above ended it (torch's ProcessExitedException, a pool's BrokenProcessPool,
 * a DataLoader's "exited unexpectedly", the code's own "worker ... exit code 1"). */
static bool child_ended(const char *line)
{
	static const char *const who[] = {"process", "worker", "child", NULL};
	static const char *const how[] = {"exit code", "exitcode", "exit status", "exited",
					  "terminated", "died", "abruptly", "killed", NULL};
	return worker_died(line) || (dg_has_any(line, who) && dg_has_any(line, how));
}

/* multiprocessing's "Process SpawnProcess-1:" above a child's traceback, or the frames only a
 * child runs (its bootstrap, a pool's or DataLoader's worker loop, spawn's unpickling). */
static bool child_line(const char *s)
{
	static const char *const child_frames[] = {
		"/multiprocessing/", "/concurrent/futures/process.py\"", "/torch/multiprocessing/",
		"/torch/utils/data/_utils/worker.py\"", NULL};
	size_t n = strlen(s);

	if (dg_starts_with(s, "Process ") && n > 9 && s[n - 1] == ':' && !strchr(s + 8, ' '))
		return true;
	return dg_is_frame(s) && dg_has_any(s, child_frames);
}

static bool child_lines(const lb_log *log, size_t from, size_t to)
{
	for (size_t i = from; i < to && i < log->n; i++)
		if (child_line(log->lines[i] + dg_indent_of(log->lines[i])))
			return true;
	return false;
}

/* The child's refusal as the verdict, with the parent's error and line beside it. */
static void refused_in_child(lb_verdict *v, const lb_verdict *why, const lb_log *log,
			     const lb_exc *last, const char *reason)
{
	*v = *why;
	if (v->code_frame == NONE)
		v->code_frame = dg_code_frame_of(log, last);
	dg_set_confidence(v, CONF_MEDIUM, reason);
	if (v->code_frame != NONE)
		add_code_evidence(v, log);
	dg_add_evidence(v, last->line);
}

/* A refusal of the runtime gate that nothing caught, in a child process's traceback above the
 * last chain: a worker's or a spawned child's, which multiprocessing prints before the child
 * exits 1. The parent's error that ended the run (a pool's or a DataLoader's "exited
 * unexpectedly", torch's ProcessExitedException) is how it noticed, not why: the verdict
 * names the refusal. Only then: a refusal the run's own process caught and printed
 * (traceback.print_exc()) before an unrelated error is not why that error happened, and a
 * refusal the gate did not record is no refusal (classify_at). */
static bool refused_before(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n)
{
	const lb_exc *last = &exc[n - 1];
	size_t start = n - 1;

	if (!child_ended(log->lines[last->line]))
		return false;
	while (start > 0 && exc[start - 1].link != LINK_NONE)
		start--;
	for (size_t k = start; k-- > 0;) {
		lb_verdict why = *v;
		size_t above = exc[k].header > 0 ? exc[k].header - 1 : 0;

		why.n_evidence = 0;
		classify_at(&why, log, &exc[k]);
		if (strcmp(why.cls, "gate_refused") != 0 || !child_lines(log, above, exc[k].line))
			continue;
		add_frame_evidence(&why, log, &exc[k]);
		refused_in_child(v, &why, log, last,
				 "the gate's refusal went uncaught in a child process (a worker's or "
				 "a spawned one's); the error that ended the run came after it");
		return true;
	}
	/* Two workers writing their tracebacks at once interleave them (a "Process
	 * ForkProcess-1:" header inside the other's frames), and neither parses as a chain: the
	 * refusal's own line, anywhere above the last chain, still says what happened. */
	for (size_t l = exc[start].header; l-- > 0;) {
		const char *line = log->lines[l];
		if (strncmp(line, "PermissionError", 15) != 0 || !dg_has(line, GATE_MARK))
			continue;
		lb_verdict why = *v;
		lb_exc one = {.header = l, .line = l, .frame = NONE, .link = LINK_NONE, .bare = true};
		why.n_evidence = 0;
		classify_at(&why, log, &one);
		if (strcmp(why.cls, "gate_refused") != 0 ||
		    !child_lines(log, l > DIAG_SCAN_LINES ? l - DIAG_SCAN_LINES : 0, l))
			continue;
		why.code_frame = NONE;
		dg_add_evidence(&why, l);
		refused_in_child(v, &why, log, last,
				 "the gate's refusal went uncaught in a child process whose traceback "
				 "is mixed with another's; the error that ended the run came after it");
		return true;
	}
	return false;
}

/* Exceptions a process raises when what it waited on stopped coming: a queue left empty, a
 * pipe or connection its peer closed, a pool whose worker died, a wait that ran out. After a
 * thread or child died of its own exception these are how the main process noticed. */
static bool waiting_ended(const char *line)
{
	static const char *const names[] = {
		"Empty", "EOFError", "BrokenPipeError", "ConnectionResetError",
		"ConnectionAbortedError", "BrokenProcessPool", "BrokenThreadPool",
		"BrokenBarrierError", "TimeoutError", NULL};
	size_t n = 0;

	line += dg_indent_of(line);
	return dg_exception_line_of(line, &n, true) && dg_name_is(line, n, names);
}

/* threading's "Exception in thread NAME:" or multiprocessing's "Process NAME:" right above a
 * traceback (a line of the other stream may stand between): a thread's or child's that died. */
static const char *worker_header_above(const lb_log *log, const lb_exc *e)
{
	for (size_t i = e->header, seen = 0; i-- > 0 && seen < 3;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		size_t len = strlen(s);

		if (!s[0])
			continue;
		seen++;
		if (len > 1 && s[len - 1] == ':' && dg_starts_with(s, "Exception in thread "))
			return "a thread";
		if (len > 1 && s[len - 1] == ':' && child_line(s))
			return "a child process";
	}
	return NULL;
}

/* The last thread's or child's uncaught exception above the main process's last chain, when
 * that chain ends in a waiting_ended exception; NONE otherwise. */
static size_t worker_first(const lb_log *log, const lb_exc *exc, size_t n)
{
	size_t start = n - 1;

	if (exc[n - 1].bare || !waiting_ended(log->lines[exc[n - 1].line]))
		return NONE;
	while (start > 0 && exc[start - 1].link != LINK_NONE)
		start--;
	for (size_t k = start; k-- > 0;)
		if (exc[k].link == LINK_NONE && !exc[k].bare && worker_header_above(log, &exc[k]))
			return k;
	return NONE;
}

static void diagnose_exception(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n);

/* The worker's exception is the root cause, read as any chain; the main process's is named as
 * its consequence, in the summary and the evidence. */
static void diagnose_worker_first(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n,
				  size_t w)
{
	const char *main_line = log->lines[exc[n - 1].line];
	size_t name_len = 0;
	char summary[DIAG_TEXT_LEN];

	diagnose_exception(v, log, exc, w + 1);
	main_line += dg_indent_of(main_line);
	dg_exception_line_of(main_line, &name_len, true);
	snprintf(summary, sizeof(summary),
		 "%.400s, in %s that died of it; the main process's %.*s came after, as it "
		 "waited for what that one would have sent",
		 v->summary, worker_header_above(log, &exc[w]),
		 (int)(name_len < 120 ? name_len : 120), main_line);
	snprintf(v->summary, sizeof(v->summary), "%s", summary);
	if (v->confidence == CONF_HIGH)
		dg_set_confidence(v, CONF_MEDIUM,
				  "a thread or child process died of this exception, and the main "
				  "process then failed waiting for what it would have sent");
	/* A worker with no frame of the experiment's (a pool's loop, spawn's unpickling): the
	 * experiment's line is where the main process waited. */
	if (v->code_frame == NONE) {
		v->code_frame = dg_code_frame_of(log, &exc[n - 1]);
		if (v->code_frame != NONE)
			add_code_evidence(v, log);
	}
	dg_add_evidence(v, exc[n - 1].line);
}

/* The whole chain is read, newest first, and its root cause named: each older exception that
 * explains the one after it (always for a cause, see context_explains for a context) takes
 * over the verdict, which then names the root's exception and location. */
static void diagnose_exception(lb_verdict *v, const lb_log *log, const lb_exc *exc, size_t n)
{
	const lb_exc *last = &exc[n - 1];
	size_t root = n - 1;
	size_t w = worker_first(log, exc, n);

	if (w != NONE) {
		diagnose_worker_first(v, log, exc, n, w);
		return;
	}
	classify_at(v, log, last);
	for (size_t k = n - 1; k-- > 0 && exc[k].link != LINK_NONE;) {
		lb_verdict cause = *v;

		classify_at(&cause, log, &exc[k]);
		if (exc[k].link == LINK_WRAPPED) {
			/* the worker's own exception is the root, whatever its class */
			*v = cause;
			root = k;
			continue;
		}
		/* A cause explains what follows it whatever its class (`raise RuntimeError("fit
		 * failed") from e` names the wrapper's line, not where the fit failed); an error
		 * of the code's own met while handling another explains nothing about it. */
		if (strcmp(cause.cls, "code_error") == 0 && exc[k].link != LINK_CAUSE)
			continue;
		if (exc[k].link == LINK_CAUSE || context_explains(cause.cls, v->cls)) {
			if (exc[k].link == LINK_CONTEXT && cause.confidence == CONF_HIGH)
				dg_set_confidence(&cause, CONF_MEDIUM,
						  "read from an exception the code was handling when "
						  "the last one was raised");
			*v = cause;
			root = k;
		}
	}
	if (root != n - 1)
		add_frame_evidence(v, log, &exc[root]);
	if (strcmp(v->cls, "code_error") == 0 && refused_before(v, log, exc, n))
		return;
	if (strcmp(v->cls, "code_error") == 0 && worker_died(log->lines[last->line])) {
		lb_verdict why = *v;

		why.n_evidence = 0;
		if (dg_scan_messages(&why, log, NULL) && strcmp(why.cls, "code_error") != 0) {
			why.exc_line = last->line;
			why.frame = last->frame;
			why.code_frame = dg_code_frame_of(log, last);
			dg_set_confidence(&why, CONF_MEDIUM,
					  "a worker process died; its own last message names the cause");
			*v = why;
		}
	}
	/* The experiment's own line first, when a library raised: what its author changes. */
	if (v->code_frame != NONE && v->code_frame != v->frame)
		add_code_evidence(v, log);
	add_frame_evidence(v, log, last);
}

static void add_tail_evidence(lb_verdict *v, const lb_log *log, size_t max)
{
	size_t idx[DIAG_EVIDENCE_MAX], n = 0;

	for (size_t i = log->n; i-- > 0 && n < max && n < DIAG_EVIDENCE_MAX;)
		if (log->lines[i][0])
			idx[n++] = i;
	while (n > 0)
		dg_add_evidence(v, idx[--n]);
}

/* A status of 129..192 is how a shell reports a child killed by signal N-128; labbox started
 * the interpreter itself and saw it exit, so no signal is named as one. */
static void status_note(char *buf, size_t len, int exit_code)
{
	const char *abbrev = exit_code > 128 && exit_code < 128 + 65 ? sigabbrev_np(exit_code - 128)
								      : NULL;
	if (!abbrev) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len,
		 "; no signal ended it (a shell reports a child killed by signal %d as status %d, so "
		 "the code, or a wrapper around the interpreter, may have passed on such a status)",
		 exit_code - 128, exit_code);
}

/* not_oom: the tree's memory cgroup counted no OOM kill, so a SIGKILL was sent by a process
 * (the experiment's own, or one outside the sandbox), not by the kernel for memory. */
static void diagnose_signal(lb_verdict *v, int sig, int exit_code, bool killed_line, bool not_oom)
{
	char what[400];

	dg_set_confidence(v, CONF_LOW, "only the exit status was left to go by: no traceback, no "
				    "message that names a cause");
	if (sig == SIGSYS)
		dg_set_confidence(v, CONF_HIGH, "the seccomp filter kills with SIGSYS and nothing else does");
	else if (sig == SIGXFSZ)
		dg_set_confidence(v, CONF_HIGH, "the kernel sends this signal for that limit only");
	else if (sig == SIGXCPU)
		dg_set_confidence(v, CONF_MEDIUM, "the kernel sends SIGXCPU only for a CPU-time limit, "
					       "and labbox sets none; who set it is not recorded");
	else if (sig == SIGKILL && not_oom)
		dg_set_confidence(v, CONF_MEDIUM, "the run's memory cgroup counted no out-of-memory "
					       "kill; who sent the signal is not recorded");
	else if (sig == SIGKILL && killed_line)
		dg_set_confidence(v, CONF_MEDIUM, "SIGKILL with the shell's \"Killed\" line, which the "
					       "out-of-memory killer usually leaves");
	else if (sig > 0 && sig != SIGKILL)
		dg_set_confidence(v, CONF_MEDIUM, "the signal shows a crash, not why it crashed");
	else if (sig == 0 && exit_code == 127)
		dg_set_confidence(v, CONF_MEDIUM, "status 127 is what a shell returns for a missing command");
	if (sig == SIGSYS) {
		dg_verdict_set(v, "sandbox_restriction",
			       "killed by SIGSYS: the sandbox blocked a system call", NULL,
			       "the code (or a native library) made a system call the sandbox forbids "
			       "(ptrace, mount, bpf, new namespaces...); remove it, or run it outside "
			       "labbox if it is really needed");
	} else if (sig == SIGKILL && not_oom) {
		dg_verdict_set(v, "code_error",
			       "killed by SIGKILL, not by the out-of-memory killer (the run's memory "
			       "cgroup counted no OOM kill): a process sent it, the experiment's own or "
			       "one outside the sandbox",
			       NULL,
			       "look for os.kill/signal calls in the code (a watchdog, a worker pool "
			       "ending its workers) and for what on the host may have ended it; more "
			       "memory would not help");
	} else if (sig == SIGKILL) {
		dg_verdict_set(v, "oom",
			       killed_line ? "killed by SIGKILL (\"Killed\"), most likely by the "
					  "kernel's out-of-memory killer"
					: "killed by SIGKILL without a time or memory limit recording "
					  "it; the kernel's out-of-memory killer is the usual cause",
			       NULL, DG_SUGGEST_OOM);
	} else if (sig == SIGXCPU) {
		/* labbox's budget is wall-clock time, and it ends a run with a kill it records
		 * itself (timed_out); it sets no RLIMIT_CPU. So the limit is the experiment's own
		 * (resource.setrlimit, a library's), or one inherited from where labbox started. */
		dg_verdict_set(v, "code_error",
			       "killed by SIGXCPU: a CPU-time limit (RLIMIT_CPU) was reached, which "
			       "labbox does not set (its --budget is wall-clock time): the experiment or "
			       "a library set it, or labbox was started under one (ulimit -t)",
			       NULL,
			       "remove the resource.setrlimit(resource.RLIMIT_CPU, ...) call or raise "
			       "that limit, or start labbox without one (ulimit -t unlimited); a larger "
			       "--budget would not help");
	} else if (sig == SIGXFSZ) {
		dg_verdict_set(v, "sandbox_restriction",
			       "killed by SIGXFSZ: a file grew past the size limit", NULL,
			       DG_SUGGEST_NO_SPACE);
	} else if (sig > 0) {
		const char *abbrev = sigabbrev_np(sig);

		snprintf(what, sizeof(what), "killed by SIG%s (signal %d)%s", abbrev ? abbrev : "?", sig,
			 (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
			  sig == SIGABRT)
				 ? ": a crash, usually in native code (a C extension, CUDA, BLAS)"
				 : "");
		dg_verdict_set(v, "code_error", what, NULL,
			       "run it again with -e PYTHONFAULTHANDLER=1 to get the Python stack of the "
			       "crash, and check native extensions for version mismatches");
	} else if (exit_code == 127) {
		dg_verdict_set(v, "wrong_env", "exited with status 127: a command was not found", NULL,
			       "check that the interpreter and the programs the experiment runs exist "
			       "in its environment (--python)");
	} else {
		char note[200];

		status_note(note, sizeof(note), exit_code);
		snprintf(what, sizeof(what), "exited with status %d without a Python traceback%s",
			 exit_code, note);
		dg_verdict_set(v, "code_error", what, NULL,
			       "read the end of run.log; make the code report errors instead of "
			       "exiting quietly");
	}
}

/* ---- A main program that ended uncaught, and exited 0 ----------------------------------- */

/* A string field of the gate's record (runtime_gate.uncaught), or NULL. */
static const char *uncaught_str(struct json_object *u, const char *key)
{
	struct json_object *v;
	if (!u || !json_object_object_get_ex(u, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The gate says the main program ended with an uncaught exception, and the process exited
 * of itself after it: with status 0 when something made it so (os._exit(0) in an atexit
 * handler), and with a traceback that is not the last one in the output, or none, when an
 * atexit handler raised another or a sys.excepthook of the experiment's swallowed it. */
static bool uncaught_ended(const lb_failure_input *in)
{
	return in->uncaught && in->exit_code >= 0 && in->signal == 0 && !in->timed_out &&
	       !in->oom_killed && !in->infra_error;
}

/* Whether an exception line ("pkg.mod.Name: message") names the class name (its last part). */
static bool line_names_class(const char *l, const char *name)
{
	size_t n = 0, k = name ? strlen(name) : 0;
	l += dg_indent_of(l);
	if (!k || !dg_exception_line_of(l, &n, true) || n < k)
		return false;
	return memcmp(l + n - k, name, k) == 0 && (n == k || l[n - k - 1] == '.');
}

static const char SUGGEST_UNCAUGHT[] =
	"fix the error the main program ended with, and let a failing run exit non-zero: labbox "
	"fails a run whose main program ended with an uncaught exception whatever made its exit "
	"status 0 afterwards (os._exit(0) in an atexit handler, a sys.excepthook that hides it)";

static bool log_has_line(const lb_log *log, const char *text)
{
	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;)
		if (strcmp(log->lines[i] + dg_indent_of(log->lines[i]), text) == 0)
			return true;
	return false;
}

/* ---- A program that exited of itself ------------------------------------------------------ */

/* The gate was in, keeps the record of the main program's uncaught exception (a version that
 * writes runtime_gate.uncaught), its channel was read, and it recorded none: no exception
 * ended the main program, so it called sys.exit or os._exit itself. */
static bool gate_saw_no_uncaught(const lb_failure_input *in)
{
	struct json_object *g = in->runtime_gate, *v;
	const char *channel;

	if (in->uncaught || !g || !json_object_object_get_ex(g, "installed", &v) ||
	    !json_object_is_type(v, json_type_boolean) || !json_object_get_boolean(v))
		return false;
	if (!json_object_object_get_ex(g, "uncaught", &v) || v)
		return false;
	if (!json_object_object_get_ex(g, "channel", &v) || !json_object_is_type(v, json_type_string))
		return false;
	channel = json_object_get_string(v);
	return strcmp(channel, "read") == 0 || strcmp(channel, "tampered") == 0;
}

/* A Python program that exited non-zero with no signal, whose end no exception made: no
 * traceback in its output at all, or (the gate's word that none went uncaught) the last one
 * followed by more of its output, so it was handled and the program went on. Its last words
 * are then why it stopped, not an earlier line. R, Octave and Julia print their own errors
 * last and are read as before. */
static bool exited_of_itself(const lb_failure_input *in, const lb_log *log, const lb_exc *exc,
			     size_t n, bool gate_says)
{
	if (in->language || in->exit_code <= 0 || in->signal || in->uncaught)
		return false;
	if (n == 0)
		return true;
	size_t last = dg_last_output_line(log);
	return gate_says && last != NONE && last > exc[n - 1].line;
}

/* A line that reads as an error's (a logger's ERROR, a C library's "error:", an exception's
 * name), which may stand just above the last one as part of one message. */
static bool error_shaped(const char *s)
{
	static const char *const starts[] = {"ERROR", "Error", "error", "FATAL", "Fatal", "fatal",
					     "CRITICAL", NULL};
	s += dg_indent_of(s);
	for (size_t i = 0; starts[i]; i++)
		if (dg_starts_with(s, starts[i]))
			return true;
	return dg_exception_line(s, NULL);
}

/* The gate's record of the main program's last sys.exit call (lb_failure_input.exit_call)
 * when the status it asked for is the exit status: the call that ended the run. A caught
 * SystemExit followed by another way out (os._exit) asks for another status, mostly; a
 * message the output does not hold is not taken as the last words either. */
static struct json_object *exit_call_of(const lb_failure_input *in)
{
	struct json_object *v;

	if (!in->exit_call || in->exit_code <= 0 || in->signal ||
	    !json_object_object_get_ex(in->exit_call, "code", &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    (json_object_get_int64(v) & 0xff) != in->exit_code)
		return NULL;
	return in->exit_call;
}

/* The line of the output that is sys.exit's message msg (Python prints it to stderr as it
 * is): its last line, the latest place it stands. stdout and stderr are two pipes read in
 * turn, so a line the program printed to stdout before the call can stand below it in the
 * log; this is how the message is found wherever it stands. NONE: not in the output (the
 * program's stderr went elsewhere, or the log lost it). */
static size_t exit_message_line(const lb_log *log, const char *msg)
{
	size_t mlen = strlen(msg), end, start, cut, seen = 0;
	/* a message the gate shortened ends in "...": the start of its last line is known */
	bool shortened = mlen > 200 && strcmp(msg + mlen - 3, "...") == 0;

	end = shortened ? mlen - 3 : mlen;
	while (!shortened && end > 0 && msg[end - 1] == '\n')
		end--;
	for (start = end; start > 0 && msg[start - 1] != '\n';)
		start--;
	cut = end - start;
	if (cut == 0)
		return NONE;
	for (size_t i = log->n; i-- > 0 && seen++ < DIAG_MAX_LINES;)
		if (strncmp(log->lines[i], msg + start, cut) == 0 &&
		    (shortened || log->lines[i][cut] == '\0'))
			return i;
	return NONE;
}

/* The signal a shell in between reported, as 128+N with its own words for it ("Killed",
 * "Segmentation fault (core dumped)", bash's "line 1: 123 Killed  cmd") among the last
 * lines; 0 otherwise. The words are how labbox can tell a shell's report from a status the
 * code chose. */
static int shell_reported_signal(const lb_failure_input *in, const lb_log *log)
{
	int sig = in->exit_code - 128;
	const char *desc;
	size_t seen = 0;

	if (in->signal || in->exit_code <= 128 || in->exit_code >= 128 + 65 || in->uncaught)
		return 0;
	desc = strsignal(sig);
	if (!desc || !desc[0])
		return 0;
	for (size_t i = log->n; i-- > 0 && seen < 3;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		const char *at;

		if (!s[0])
			continue;
		seen++;
		if (!(at = strstr(s, desc)))
			continue;
		if (at == s || strstr(s, ": line "))
			return sig;
	}
	return 0;
}

/* The program's last line (with the error lines just above it, one message) is why it
 * stopped: a known message there names the class; else it is the code's own decision,
 * quoted. A traceback above it that the program went on after is context at most. */
static void diagnose_own_exit(lb_verdict *v, const lb_failure_input *in, const lb_log *log,
			      const lb_exc *exc, size_t n, bool gate_says)
{
	struct json_object *call = exit_call_of(in);
	const char *msg = call ? uncaught_str(call, "message") : NULL;
	size_t said = msg ? exit_message_line(log, msg) : NONE;
	size_t last = said != NONE ? said : dg_last_output_line(log), first = last, hit = NONE;
	char what[DIAG_TEXT_LEN], note[200], where[300] = "";

	status_note(note, sizeof(note), in->exit_code);
	/* A message the interpreter never printed was caught with its SystemExit (or went to
	 * a sys.stderr of the program's): that call is not known to be how it ended. */
	if (msg && said == NONE)
		call = NULL;
	if (call) {
		const char *file = uncaught_str(call, "file");
		struct json_object *lv;
		if (file && json_object_object_get_ex(call, "line", &lv) &&
		    json_object_is_type(lv, json_type_int))
			snprintf(where, sizeof where, " at %.200s line %lld",
				 dg_experiment_relative(file, log->exp_dir),
				 (long long)json_object_get_int64(lv));
		v->by_exit_call = true;
	}
	/* A thread or child that died of its exception, after which the main process stopped
	 * itself: the worker's exception is the cause, as when the main one failed waiting. */
	if (n > 0 && worker_header_above(log, &exc[n - 1])) {
		diagnose_exception(v, log, exc, n);
		snprintf(what, sizeof(what), "%.300s, in %s that died of it; the main process then "
			 "exited of itself with status %d", v->summary,
			 worker_header_above(log, &exc[n - 1]), in->exit_code);
		snprintf(v->summary, sizeof(v->summary), "%s", what);
		if (v->confidence == CONF_HIGH)
			dg_set_confidence(v, CONF_MEDIUM, "a thread or child process died of this "
						       "exception; the main process exited after it");
		dg_add_evidence(v, last);
		return;
	}
	/* Never into the handled traceback: its exception line is error-shaped too, and a line of
	 * the other stream can put the exit message right below it. */
	while (first != NONE && first > 0 && last - first < 4 &&
	       (n == 0 || first - 1 > exc[n - 1].line) && error_shaped(log->lines[first - 1]))
		first--;
	for (size_t i = last; i != NONE && i >= first && hit == NONE; i--) {
		if (dg_classify_text(v, log->lines[i]))
			hit = i;
		if (i == 0)
			break;
	}
	if (hit != NONE) {
		dg_add_evidence(v, hit);
		dg_set_confidence(v, CONF_MEDIUM, "the program's own last message names the cause; it "
					       "exited of itself, no exception ended it");
	} else {
		const char *l = last != NONE ? log->lines[last] + dg_indent_of(log->lines[last]) : "";
		if (call)
			snprintf(what, sizeof(what), "the program exited of itself with status %d, "
				 "calling sys.exit%s%s%.200s%s%s", in->exit_code, where,
				 said != NONE	? " with the message: "
				 : last != NONE ? ", after printing: "
						: " and printing nothing",
				 l, note,
				 n > 0 ? "; the traceback above that was handled: the program went on "
					 "after it"
				       : "");
		else
			snprintf(what, sizeof(what), "%s%d%s%s%.200s%s%s",
				 gate_says ? "the program exited of itself with status "
					   : "exited without a Python traceback, with status ",
				 in->exit_code,
				 gate_says ? " (sys.exit or os._exit: the runtime gate saw no "
					     "exception end it)"
					   : "",
				 last != NONE ? ", after printing: " : " and printed nothing", l, note,
				 n > 0 ? "; the traceback above that was handled: the program went on "
					 "after it"
				       : "");
		dg_verdict_set(v, "code_error", what, NULL,
			       "the program stopped itself: its last message says why; fix what it "
			       "reports (or the check that printed it). Raising an exception instead "
			       "would show where");
		if (last != NONE)
			dg_add_evidence(v, last);
		/* That the code chose to exit is sure with the gate's word; why is only what it
		 * printed last, which may be no reason at all (a metric before sys.exit(2)). */
		dg_set_confidence(v, CONF_LOW,
				  call && said != NONE
				       ? "the runtime gate recorded the program's own sys.exit call, "
					 "so it chose to exit; only its message says why"
				  : call ? "the runtime gate recorded the program's own sys.exit call, "
					"so it chose to exit; only its exit status and its last output "
					"say why"
				  : gate_says ? "the runtime gate saw no uncaught exception, so the "
					   "program chose to exit; only its exit status and its last "
					   "output say why"
					 : "only the exit status and the last line of output were left to "
					   "go by");
	}
	/* The handled traceback, if any, as context */
	if (n > 0 && exc[n - 1].line < first)
		dg_add_evidence(v, exc[n - 1].line);
}

/* The sandbox or backend failed around the experiment: its message is the verdict. */
static bool diagnose_infra(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	if (in->infra_error && in->after_run) {
		dg_verdict_set(v, "infra_error",
			       in->infra_message && in->infra_message[0]
				    ? in->infra_message
				    : "what the run left could not be brought back",
			       NULL,
			       "the experiment ran, but its files were not all brought back into the run "
			       "directory, so its results are not reported: they are kept where the "
			       "message says; free space or make the experiment's output tree plainer "
			       "(less deep, shorter names) and run it again");
		add_tail_evidence(v, log, 3);
		return true;
	}
	if (in->infra_error) {
		dg_verdict_set(v, "infra_error",
			       in->infra_message && in->infra_message[0]
				    ? in->infra_message
				    : "the sandbox or backend could not be set up",
			       NULL,
			       "the experiment did not run: fix the setup problem above (`labbox probe` "
			       "shows what this host supports); labbox never falls back to less "
			       "isolation silently");
		return true;
	}
	return false;
}

/* A line that asks the reader to type something: "Press enter to continue.", "[y/N]",
 * "Enter the learning rate:". */
static bool prompt_line(const char *s)
{
	static const char *const asks[] = {
		"press enter", "press return", "press any key", "press a key", "hit enter",
		"hit any key", "press <enter>", "press [enter]", "[y/n]", "(y/n)", "[yes/no]",
		"(yes/no)", "y/n?", "[y/n/q]", "press ctrl", NULL,
	};
	static const char *const leads[] = { "enter ", "please enter", "please type", "input ",
					     "type ", "choose ", "select ", NULL };
	size_t n;
	s += dg_indent_of(s);
	n = strlen(s);
	if (n == 0 || n > 200)
		return false;
	if (dg_has_any(s, asks))
		return true;
	for (size_t i = 0; leads[i]; i++)
		if (strncasecmp(s, leads[i], strlen(leads[i])) == 0)
			return s[n - 1] == ':' || s[n - 1] == '?' || s[n - 1] == '>';
	return false;
}

/* faulthandler's header of one thread's stack, "Current thread 0x7f... (most recent call
 * first):" or "Thread 0x7f... (most recent call first):". */
static bool dump_header(const char *s)
{
	s += dg_indent_of(s);
	if (dg_starts_with(s, "Current thread 0x"))
		s += 17;
	else if (dg_starts_with(s, "Thread 0x"))
		s += 9;
	else
		return false;
	while (isxdigit((unsigned char)*s))
		s++;
	return strcmp(s, " (most recent call first):") == 0;
}

/* The first line of a dump whose block header is at line h: headers, frames and blank lines
 * above it are the same dump's. */
static size_t dump_start(const lb_log *log, size_t h)
{
	size_t start = h;
	while (start > 0 && (dump_header(log->lines[start - 1]) || dg_is_frame(log->lines[start - 1]) ||
			     !log->lines[start - 1][0]))
		start--;
	return start;
}

/* The stacks the gate's faulthandler printed as the budget's SIGTERM reached the main
 * program (src/gate/sitecustomize.py), read from the end of the output. */
#define DUMP_THREADS_NAMED 3
typedef struct stack_dump {
	size_t start; /* the dump's first line; NONE: the output does not end with one */
	size_t top;   /* the innermost frame of the stack that was waiting, or NONE */
	size_t code;  /* that stack's innermost frame in the experiment's code, or NONE */
	/* The main program had ended and waited, at exit, for threads it started that are not
	 * daemons (threading's _shutdown): then top and code are the one such thread's, and
	 * with several, each one's frame in the experiment's code (the dump does not say which
	 * are daemons, so none is named alone). */
	bool main_done;
	size_t n_threads;
	size_t thread_code[DUMP_THREADS_NAMED];
	size_t n_thread_code;
	/* ... or for a child process it started that is not a daemon (multiprocessing's atexit
	 * _exit_function joins them): the child's stack is not in the dump. */
	bool child_join;
} stack_dump;

/* Whether frame line s is in a file ending in suffix and function func. */
static bool frame_is(const char *s, const char *suffix, const char *func)
{
	char file[DIAG_EVIDENCE_LEN], fn[128];
	long lineno;
	size_t fl, sl = strlen(suffix);

	return dg_parse_frame(s, file, sizeof file, &lineno, fn, sizeof fn) &&
	       strcmp(fn, func) == 0 && (fl = strlen(file)) >= sl &&
	       strcmp(file + fl - sl, suffix) == 0;
}

/* The stacks are the budget's: the run timed out and died of the SIGTERM it sent. A program
 * with a SIGTERM handler of its own ended otherwise, and any stacks in its output are its
 * own. */
static bool stacks_printed(const lb_failure_input *in)
{
	return in->timed_out && in->signal == SIGTERM;
}

/* The output's last words may have had no newline (a prompt, progress dots): the dump's
 * first header is then at the end of that line. It is made a line of its own (the log's
 * lines array grows by one), so that the words stay the run's and the header the dump's. */
static void split_glued_header(lb_log *log)
{
	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		if (dump_header(log->lines[i]))
			return;
		char *h = strstr(log->lines[i], "Current thread 0x");
		if (!h)
			h = strstr(log->lines[i], "Thread 0x");
		if (!h || h == log->lines[i] || !dump_header(h))
			continue;
		char **grown = realloc(log->lines, (log->n + 1) * sizeof *grown);
		if (!grown)
			return;
		log->lines = grown;
		memmove(&log->lines[i + 2], &log->lines[i + 1], (log->n - i - 1) * sizeof *grown);
		snprintf(log->glued, sizeof log->glued, "%s", h); /* 59 bytes at most */
		log->lines[i + 1] = log->glued;
		*h = '\0';
		log->n++;
		return;
	}
}

/* Of the last dump's threads, the main thread's stack is the one whose outermost frame is a
 * module's top level, or, stopped at faulthandler's hundred frames ("..."), the current
 * thread's (the kernel hands a signal sent to the process to its main thread first). A dump
 * followed by more than a few lines is not the one the end of the run caused. */
static void read_dump(const lb_log *log, stack_dump *d)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	long lineno;
	size_t last = NONE, end, after = 0, cut_current = NONE, cut_code = NONE;
	size_t thread_top = NONE, thread_code = NONE;
	bool shutdown = false;

	memset(d, 0, sizeof *d);
	d->start = d->top = d->code = NONE;
	for (size_t i = log->n; i-- > 0 && last == NONE;)
		if (dump_header(log->lines[i]))
			last = i;
	if (last == NONE)
		return;
	for (end = last + 1; end < log->n && dg_is_frame(log->lines[end]); end++)
		;
	for (size_t i = end; i < log->n; i++)
		after += log->lines[i][0] != '\0' && strcmp(log->lines[i] + dg_indent_of(log->lines[i]), "...") != 0;
	if (after > 20)
		return;
	d->start = dump_start(log, last);
	for (size_t i = d->start; i < log->n; i++) {
		if (!dump_header(log->lines[i]))
			continue;
		size_t j = i + 1, own = NONE;
		func[0] = file[0] = '\0';
		while (j < log->n && dg_is_frame(log->lines[j]) &&
		       dg_parse_frame(log->lines[j], file, sizeof file, &lineno, func, sizeof func)) {
			if (own == NONE && dg_in_experiment(file, log->exp_dir))
				own = j;
			j++;
		}
		bool cut = j < log->n && strcmp(log->lines[j] + dg_indent_of(log->lines[j]), "...") == 0;
		if (j > i + 1) {
			if (strcmp(func, "<module>") == 0) {
				d->top = i + 1;
				d->code = own;
			} else if (frame_is(log->lines[j - 1], "/threading.py", "_shutdown")) {
				shutdown = true;
			} else if (frame_is(log->lines[j - 1], "/multiprocessing/util.py",
					    "_exit_function")) {
				d->child_join = true;
			} else if (cut && dg_starts_with(log->lines[i] + dg_indent_of(log->lines[i]),
							 "Current thread")) {
				cut_current = i;
				cut_code = own;
			} else {
				d->n_threads++;
				if (thread_top == NONE) {
					thread_top = i + 1;
					thread_code = own;
				}
				if (own != NONE && d->n_thread_code < DUMP_THREADS_NAMED)
					d->thread_code[d->n_thread_code++] = own;
			}
		}
		i = j > i + 1 ? j - 1 : i;
	}
	if (d->top != NONE || d->child_join)
		return;
	if (cut_current != NONE) {
		/* a recursion deeper than the dump goes: its innermost frames are what it did */
		d->top = cut_current + 1;
		d->code = cut_code;
		return;
	}
	if (shutdown && d->n_threads > 0) {
		d->main_done = true;
		if (d->n_threads == 1) {
			d->top = thread_top;
			d->code = thread_code;
		}
	}
}

static const char SUGGEST_THREAD_AT_EXIT[] =
	"the main program had finished: a thread it started that is not a daemon (or a "
	"ThreadPoolExecutor's worker, which Python also waits for at exit) kept the process "
	"alive until the budget ended it. Make that work end (a flag or an event its loop "
	"checks, then join it; for an executor, tasks that return), or start a plain thread "
	"with daemon=True; only if its work was still needed, raise the budget (--budget "
	"SECONDS)";
static const char SUGGEST_CHILD_AT_EXIT[] =
	"the main program had finished: a child process it started that is not a daemon "
	"(multiprocessing joins those at exit) kept it waiting until the budget ended it. End "
	"the child's work (send it the sentinel or the event it waits for, then join it, or "
	"terminate it), or start it with daemon=True; only if its work was still needed, "
	"raise the budget (--budget SECONDS)";

/* "main.py line 4, in f (inside threading.py line 320, in wait)" for frame at, with the
 * innermost frame top beside it when it is another (NONE: none). */
static int frame_words(char *out, size_t len, const lb_log *log, size_t at, size_t top)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	long lineno;

	if (!dg_parse_frame(log->lines[at], file, sizeof file, &lineno, func, sizeof func))
		return -EINVAL;
	bool own = dg_in_experiment(file, log->exp_dir);
	int n = snprintf(out, len, "%s line %ld%s%s", own ? dg_experiment_relative(file, log->exp_dir) : file,
			 lineno, func[0] ? ", in " : "", func);
	if (top != NONE && at != top && n > 0 && (size_t)n < len &&
	    dg_parse_frame(log->lines[top], file, sizeof file, &lineno, func, sizeof func)) {
		const char *base = strrchr(file, '/');
		snprintf(out + n, len - (size_t)n, " (inside %s line %ld%s%s)", base ? base + 1 : file,
			 lineno, func[0] ? ", in " : "", func);
	}
	return 0;
}

static void append_summary(lb_verdict *v, const char *s)
{
	size_t len = strlen(v->summary);
	snprintf(v->summary + len, sizeof v->summary - len, "%s", s);
}

/* Where the run was as the budget ended it, from the stack dump: beside the timeout's own
 * words, so a wait that never ends is found in the code, not guessed. */
static void add_stack_at_end(lb_verdict *v, const lb_log *log, const stack_dump *d)
{
	char where[2 * DIAG_EVIDENCE_LEN + 300], buf[3 * DIAG_EVIDENCE_LEN + 400];
	size_t top = d->top, code = d->code;

	if (strcmp(v->cls, "timeout") != 0 || d->start == NONE)
		return;
	if (d->child_join) {
		append_summary(v, "; the main program had finished and was waiting, at exit, for a "
				  "child process it started (multiprocessing joins those that are not "
				  "daemons), which had not ended");
		snprintf(v->suggestion, sizeof v->suggestion, "%s", SUGGEST_CHILD_AT_EXIT);
		return;
	}
	if (d->main_done && top == NONE) {
		/* several threads: the dump does not say which of them are daemons */
		int n = snprintf(buf, sizeof buf, "; the main program had finished and was "
				 "waiting for a thread it started that is not a daemon (%zu threads "
				 "were running", d->n_threads);
		for (size_t k = 0; k < d->n_thread_code && n > 0 && (size_t)n < sizeof buf; k++) {
			if (frame_words(where, sizeof where, log, d->thread_code[k], NONE) == 0)
				n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s",
					      k ? "; " : ", in the experiment's code at ", where);
		}
		if (n > 0 && (size_t)n < sizeof buf)
			snprintf(buf + n, sizeof buf - (size_t)n, ")");
		append_summary(v, buf);
		snprintf(v->suggestion, sizeof v->suggestion, "%s", SUGGEST_THREAD_AT_EXIT);
		return;
	}
	if (top == NONE)
		return;
	v->frame = top;
	v->code_frame = code;
	size_t at = code != NONE ? code : top;
	if (frame_words(where, sizeof where, log, at, top) < 0)
		return;
	snprintf(buf, sizeof buf,
		 d->main_done ? "; the main program had finished and was waiting for a thread it "
				"started, which was at %s"
			      : "; when it ended, the main program was at %s",
		 where);
	append_summary(v, buf);
	if (d->main_done)
		snprintf(v->suggestion, sizeof v->suggestion, "%s", SUGGEST_THREAD_AT_EXIT);
	/* The run's last words before the dump (none when the dump fills the log's tail), the
	 * innermost frames as printed, and the experiment's own frame. */
	v->n_evidence = 0;
	if (d->start > 0 && log->lines[d->start - 1][0])
		dg_add_evidence(v, d->start - 1);
	dg_add_evidence(v, top);
	if (top + 1 < at)
		dg_add_evidence(v, top + 1);
	dg_add_evidence(v, at);
}

/* A run the budget ended that used almost no CPU was waiting, not computing. With its last
 * output a prompt it waited for a reader: labbox gives none (no terminal), so no budget is
 * enough. Without a prompt it may be a sleep, a lock, a child or a server (an experiment
 * that polls is legitimate): still the timeout, with what the CPU time says beside it. */
static void diagnose_idle_timeout(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	if (!in->cpu_known || in->wall_s < 2.0 || in->cpu_s < 0 || in->cpu_s > 0.1 * in->wall_s)
		return;
	size_t last = dg_last_output_line(log);
	char what[400];
	if (last != NONE && prompt_line(log->lines[last])) {
		snprintf(what, sizeof what,
			 "the run waited for keyboard input until the budget ended it: its last "
			 "output is a prompt, and it used %.1f s of CPU in %.1f s; labbox runs it "
			 "without a terminal, so nothing answers",
			 in->cpu_s, in->wall_s);
		dg_verdict_set(v, "code_error", what, log->lines[last] + dg_indent_of(log->lines[last]),
			       "make the run need no reader: remove the prompt or the pause (Octave: "
			       "pause(0) or no bare pause; Python: no input()), take the answer from an "
			       "argument or labbox.yaml (the program's own yes option, a default when "
			       "sys.stdin.isatty() is False); a larger --budget would not help");
		dg_set_confidence(v, CONF_MEDIUM,
				  "the run's last output asks for input and it used almost no CPU "
				  "until the budget ended it; what it waited on is not recorded");
		return;
	}
	if (in->wall_s < 10.0 || in->cpu_s > 0.05 * in->wall_s)
		return;
	snprintf(what, sizeof what,
		 "the time budget ended the run before it finished; it used %.1f s of CPU in %.1f "
		 "s, so it was mostly waiting (a sleep, a lock, a child process, a server), not "
		 "computing",
		 in->cpu_s, in->wall_s);
	snprintf(v->summary, sizeof v->summary, "%s", what);
	snprintf(v->suggestion, sizeof v->suggestion,
		 "look at what the run waited on before raising the budget (its last output is "
		 "below): a wait that never ends needs a fix, not a larger --budget; if the "
		 "waiting is the work (a download, a remote service, a timed sleep), raise the "
		 "budget (--budget SECONDS)");
}

static void diagnose(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	lb_exc exc[DIAG_MAX_EXC];
	size_t n_exc;

	dg_set_confidence(v, CONF_HIGH, "labbox recorded it itself (its time or memory accounting, or "
				     "the setup step that failed)");
	if (diagnose_infra(v, in, log))
		return;
	/* A timeout's output ends with the stacks the main program printed as it ended (the
	 * gate's faulthandler): what it said before them is its last output. */
	stack_dump dump = { .start = NONE, .top = NONE, .code = NONE };
	lb_log said = *log;
	if (stacks_printed(in))
		read_dump(log, &dump);
	if (dump.start != NONE)
		said.n = dump.start;
	if (in->timed_out && in->oom_killed) {
		/* A pool's map, a queue or a join waits for ever on a worker the OOM killer took:
		 * the budget only ended the wait. */
		dg_verdict_set(v, "oom",
			       "the kernel's out-of-memory killer killed a process of the run (its memory "
			       "cgroup counted the kill), and the run then did not finish before the "
			       "time budget ended it: a parent waiting on a killed worker (a pool's map, "
			       "a queue, a join) waits until the budget",
			       NULL, SUGGEST_OOM_HUNG);
		dg_set_confidence(v, CONF_MEDIUM,
				  "labbox counted an out-of-memory kill in the run before its budget "
				  "ended it; which process it took, and when, is not recorded");
		add_tail_evidence(v, &said, 3);
		return;
	}
	if (in->timed_out) {
		dg_verdict_set(v, "timeout", "the time budget ended the run before it finished", NULL,
			       "raise the budget (--budget SECONDS) or do less work; print "
			       "TIME_ESTIMATE early and stop at 80% of the budget with a TIME_GUARD so "
			       "partial results are saved");
		add_tail_evidence(v, &said, 3);
		diagnose_idle_timeout(v, in, &said);
		add_stack_at_end(v, log, &dump);
		return;
	}
	if (in->oom_killed) {
		dg_verdict_set(v, "oom", "the memory limit ended the run", NULL, DG_SUGGEST_OOM);
		add_tail_evidence(v, log, 3);
		return;
	}
	n_exc = dg_find_exceptions(log, exc, DIAG_MAX_EXC);
	if (uncaught_ended(in)) {
		const char *cls = uncaught_str(in->uncaught, "exception");
		/* Its traceback is read as any failed run's: the last one of its class, with
		 * the chain before it (what an atexit handler raised after it is not why the
		 * main program ended). */
		for (size_t k = n_exc; k-- > 0;)
			if (line_names_class(log->lines[exc[k].line], cls)) {
				diagnose_exception(v, log, exc, k + 1);
				v->by_uncaught = k + 1 != n_exc;
				return;
			}
		/* A run that failed anyway keeps the reading of its output when it has one. */
		if (n_exc > 0 && in->exit_code != 0) {
			diagnose_exception(v, log, exc, n_exc);
			return;
		}
		char what[DIAG_TEXT_LEN];
		snprintf(what, sizeof(what),
			 "the main program ended with an uncaught %.128s that no traceback in the "
			 "output names (a sys.excepthook of the experiment's did not print it), and "
			 "the process exited with status %d",
			 cls ? cls : "exception", in->exit_code);
		dg_verdict_set(v, "code_error", what, NULL, SUGGEST_UNCAUGHT);
		v->by_uncaught = true;
		dg_set_confidence(v, CONF_HIGH, "the runtime gate recorded the exception as the "
					     "interpreter handed it to sys.excepthook at the main "
					     "program's end");
		return;
	}
	int shell_sig = shell_reported_signal(in, log);
	if (shell_sig) {
		diagnose_signal(v, shell_sig, in->exit_code, shell_sig == SIGKILL,
				in->oom_counted && !in->oom_killed);
		add_tail_evidence(v, log, 3);
		return;
	}
	bool gate_says = gate_saw_no_uncaught(in);
	if (exited_of_itself(in, log, exc, n_exc, gate_says)) {
		diagnose_own_exit(v, in, log, exc, n_exc, gate_says);
		return;
	}
	if (n_exc > 0) {
		diagnose_exception(v, log, exc, n_exc);
		return;
	}
	if (in->language && strcmp(in->language, "octave") == 0 &&
	    dg_octave_missing_function(v, in, log))
		return;
	if (dg_scan_messages(v, log, in->language))
		return;
	/* Only a signal labbox saw is one: every backend turns a status it knows to mean a
	 * signal (docker's init's 128+N) into `signal` itself. */
	diagnose_signal(v, in->signal, in->exit_code, log_has_line(log, "Killed"),
			in->oom_counted && !in->oom_killed);
	add_tail_evidence(v, log, 3);
}

static int obj_add(struct json_object *obj, const char *key, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

static int add_null(struct json_object *obj, const char *key)
{
	return json_object_object_add(obj, key, NULL) < 0 ? -ENOMEM : 0;
}

static struct json_object *utf8_string(const char *s)
{
	char buf[DIAG_TEXT_LEN + 8];

	lb_text_utf8(buf, sizeof(buf), s, strlen(s));
	return json_object_new_string(buf);
}

static int add_location(struct json_object *doc, const lb_log *log, size_t frame)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	struct json_object *loc;
	long lineno;

	if (frame == NONE ||
	    !dg_parse_frame(log->lines[frame], file, sizeof(file), &lineno, func, sizeof(func)))
		return 0;
	loc = json_object_new_object();
	if (obj_add(doc, "location", loc) < 0 || obj_add(loc, "file", utf8_string(file)) < 0 ||
	    obj_add(loc, "line", json_object_new_int64(lineno)) < 0)
		return -ENOMEM;
	if (func[0] && obj_add(loc, "function", utf8_string(func)) < 0)
		return -ENOMEM;
	return 0;
}

/* code_location: the innermost frame in the experiment's own code, named apart from the frame
 * that raised (which may be numpy's or torch's); null when the traceback has none. */
static int add_code_location(struct json_object *doc, const lb_log *log, size_t frame)
{
	char file[DIAG_EVIDENCE_LEN], func[128];
	struct json_object *loc;
	long lineno;
	bool python;

	if (frame == NONE)
		return add_null(doc, "code_location");
	python = dg_parse_frame(log->lines[frame], file, sizeof(file), &lineno, func, sizeof(func));
	if (!python) {
		const char *s = log->lines[frame] + dg_indent_of(log->lines[frame]);
		const char *at = strstr(s, " at line ");

		if (!at || !dg_octave_frame_line(s, &lineno))
			return add_null(doc, "code_location");
		snprintf(func, sizeof(func), "%.*s", (int)(at - s), s);
	}
	loc = json_object_new_object();
	if (obj_add(doc, "code_location", loc) < 0)
		return -ENOMEM;
	/* Octave names the function or script, not its file: the experiment's .m file of
	 * that name, when it is staged. */
	char mfile[PATH_MAX];
	if (python ? obj_add(loc, "file", utf8_string(dg_experiment_relative(file, log->exp_dir))) < 0
	    : dg_octave_own_file(log->exp_dir, log->lines[frame], mfile, sizeof mfile)
		    ? obj_add(loc, "file", utf8_string(mfile)) < 0
		    : add_null(loc, "file") < 0)
		return -ENOMEM;
	if (obj_add(loc, "line", json_object_new_int64(lineno)) < 0 ||
	    (func[0] && obj_add(loc, "function", utf8_string(func)) < 0))
		return -ENOMEM;
	if (python && frame + 1 < log->n && !dg_is_frame(log->lines[frame + 1]) &&
	    log->lines[frame + 1][0] &&
	    !dg_exception_line(log->lines[frame + 1] + dg_indent_of(log->lines[frame + 1]), NULL) &&
	    obj_add(loc, "text", utf8_string(log->lines[frame + 1] + dg_indent_of(log->lines[frame + 1]))) < 0)
		return -ENOMEM;
	return 0;
}

static int to_json(const lb_verdict *v, const lb_log *log, struct json_object *doc)
{
	struct json_object *evidence = json_object_new_array();
	char summary[DIAG_TEXT_LEN + 2 * (256 + 128) + 64];

	if (obj_add(doc, "class", json_object_new_string(v->cls)) < 0)
		return -ENOMEM;
	/* Where the code failed belongs in the one line a person reads first. */
	snprintf(summary, sizeof(summary), "%s", v->summary);
	if (strcmp(v->cls, "code_error") == 0 && v->frame != NONE) {
		char file[256], func[128], cfile[256], cfunc[128];
		long lineno, cline;

		if (dg_parse_frame(log->lines[v->frame], file, sizeof(file), &lineno, func,
				   sizeof(func))) {
			if (v->code_frame != NONE && v->code_frame != v->frame &&
			    dg_parse_frame(log->lines[v->code_frame], cfile, sizeof(cfile), &cline,
					   cfunc, sizeof(cfunc)))
				/* The experiment's line is what its author will change. */
				snprintf(summary, sizeof(summary),
					 "%s (%s line %ld%s%s, raised in %s line %ld%s%s)", v->summary,
					 dg_experiment_relative(cfile, log->exp_dir), cline,
					 cfunc[0] ? ", in " : "", cfunc, file, lineno,
					 func[0] ? ", in " : "", func);
			else
				snprintf(summary, sizeof(summary), "%s (%s line %ld%s%s)", v->summary,
					 file, lineno, func[0] ? ", in " : "", func);
		}
	}
	if (obj_add(doc, "summary", utf8_string(summary)) < 0 ||
	    obj_add(doc, "evidence", evidence) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_evidence; i++) {
		const char *l = log->lines[v->evidence[i]];
		char buf[DIAG_EVIDENCE_LEN];
		struct json_object *s;

		l += dg_indent_of(l);
		lb_text_utf8(buf, sizeof(buf), l, strlen(l));
		s = json_object_new_string(buf);
		if (!s || json_object_array_add(evidence, s) < 0) {
			json_object_put(s);
			return -ENOMEM;
		}
	}
	if (obj_add(doc, "suggestion", utf8_string(v->suggestion)) < 0)
		return -ENOMEM;
	if (strcmp(v->cls, "gate_refused") == 0 && v->exc_line != NONE) {
		char ev[80] = "", rule[32] = "";
		if (dg_gate_refusal_of(log->lines[v->exc_line], ev, sizeof(ev), rule, sizeof(rule)) &&
		    (obj_add(doc, "gate_event", utf8_string(ev)) < 0 ||
		     (rule[0] && obj_add(doc, "rule", utf8_string(rule)) < 0)))
			return -ENOMEM;
	}
	if (v->exc_line != NONE) {
		const char *l = log->lines[v->exc_line];
		size_t name_len = 0;
		char name[128];

		/* Found as an exception line already, by place or by name. */
		dg_exception_line_of(l, &name_len, true);
		if (name_len > 0 && name_len < sizeof(name)) {
			memcpy(name, l, name_len);
			name[name_len] = '\0';
			if (obj_add(doc, "exception", json_object_new_string(name)) < 0)
				return -ENOMEM;
		}
	}
	static const char *const levels[] = {"low", "medium", "high"};
	if (obj_add(doc, "confidence", json_object_new_string(levels[v->confidence])) < 0 ||
	    obj_add(doc, "confidence_reason",
		    json_object_new_string(v->confidence_reason ? v->confidence_reason : "")) < 0)
		return -ENOMEM;
	if (add_location(doc, log, v->frame) < 0)
		return -ENOMEM;
	return add_code_location(doc, log, v->code_frame);
}

/* What the gate recorded, in the failure of a run whose main program ended with an uncaught
 * exception and that exited 0, or whose verdict the record chose (v->by_uncaught): an
 * evidence line of its own, the exit status 0 in the summary when its traceback decided the
 * class, and the exception and where the experiment's code was when the output has no
 * traceback of it. A plain crash (exit 1, its traceback last) is left as it was. */
static int add_uncaught(struct json_object *doc, const lb_failure_input *in, const lb_log *log)
{
	struct json_object *ev = in->uncaught, *v, *evidence;
	const char *cls = uncaught_str(ev, "exception"), *msg = uncaught_str(ev, "message");
	const char *file = NULL;
	int64_t line = 0;
	if (json_object_object_get_ex(ev, "file", &v) && json_object_is_type(v, json_type_string))
		file = dg_experiment_relative(json_object_get_string(v), log->exp_dir);
	if (json_object_object_get_ex(ev, "line", &v) && json_object_is_type(v, json_type_int))
		line = json_object_get_int64(v);
	char at[320] = "", text[DIAG_EVIDENCE_LEN + 64], one_line[256] = "";
	/* The message may span lines (torch's spawn puts the child's traceback in it): one
	 * evidence line has spaces where it had line breaks, not replacement characters. */
	if (msg) {
		size_t o = 0;
		for (const char *c = msg; *c && o + 1 < sizeof one_line; c++) {
			bool blank = (unsigned char)*c < 0x20 || *c == ' ';
			if (blank && (o == 0 || one_line[o - 1] == ' '))
				continue;
			one_line[o++] = blank ? ' ' : *c;
		}
		while (o > 0 && one_line[o - 1] == ' ')
			o--;
		one_line[o] = '\0';
		msg = one_line;
	}
	if (file)
		snprintf(at, sizeof(at), " (%.250s line %lld)", file, (long long)line);
	snprintf(text, sizeof(text),
		 "runtime gate: the main program ended with an uncaught %.128s%s%.200s%s; exit "
		 "status %d",
		 cls ? cls : "exception", msg ? ": " : "", msg ? msg : "", at, in->exit_code);
	if (!json_object_object_get_ex(doc, "evidence", &evidence) ||
	    !json_object_is_type(evidence, json_type_array))
		return -ENOMEM;
	size_t n = json_object_array_length(evidence);
	if (n >= DIAG_EVIDENCE_MAX)
		json_object_array_del_idx(evidence, n - 1, 1);
	if (json_object_array_add(evidence, utf8_string(text)) < 0)
		return -ENOMEM;
	bool from_log = json_object_object_get_ex(doc, "exception", &v) && v;
	if (from_log && in->exit_code != 0)
		return 0;
	if (from_log) {
		char summary[DIAG_TEXT_LEN * 2];
		const char *old = json_object_object_get_ex(doc, "summary", &v)
					  ? json_object_get_string(v) : "";
		snprintf(summary, sizeof(summary),
			 "%s; the main program ended with it uncaught, and the process still "
			 "exited with status 0", old);
		if (obj_add(doc, "summary", utf8_string(summary)) < 0)
			return -ENOMEM;
		const char *sug = json_object_object_get_ex(doc, "suggestion", &v)
					  ? json_object_get_string(v) : "";
		char more[DIAG_TEXT_LEN * 2];
		snprintf(more, sizeof(more),
			 "%s; and let a failing run exit non-zero: labbox fails a run whose main "
			 "program ended with an uncaught exception whatever made its exit status 0 "
			 "afterwards", sug);
		return obj_add(doc, "suggestion", utf8_string(more));
	}
	if (cls && obj_add(doc, "exception", utf8_string(cls)) < 0)
		return -ENOMEM;
	if (file && line > 0) {
		struct json_object *loc = json_object_new_object();
		if (obj_add(doc, "code_location", loc) < 0 ||
		    obj_add(loc, "file", utf8_string(file)) < 0 ||
		    obj_add(loc, "line", json_object_new_int64(line)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* code_location of a program that stopped itself: where it called sys.exit, by the gate's
 * record (a frame of the experiment's own code; the call itself may be a library's, as
 * argparse's). Its text is the staged file's line when that can be read. */
static int add_exit_location(struct json_object *doc, const lb_failure_input *in,
			     const lb_log *log)
{
	struct json_object *v, *loc;
	const char *file = uncaught_str(in->exit_call, "file");

	/* a worker's exception that the main process exited after keeps its own */
	if (json_object_object_get_ex(doc, "code_location", &v) && v)
		return 0;
	if (!file || !json_object_object_get_ex(in->exit_call, "line", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0)
		return 0;
	loc = json_object_new_object();
	if (obj_add(doc, "code_location", loc) < 0 ||
	    obj_add(loc, "file", utf8_string(dg_experiment_relative(file, log->exp_dir))) < 0 ||
	    obj_add(loc, "line", json_object_new_int64(json_object_get_int64(v))) < 0)
		return -ENOMEM;
	return 0;
}

/* 1073741824 -> "1g": the size as the flags take it. */
static void size_words(unsigned long long bytes, char *out, size_t len)
{
	unsigned long long mib = 1ULL << 20;

	if (bytes % (mib << 10) == 0)
		snprintf(out, len, "%llug", bytes / (mib << 10));
	else
		snprintf(out, len, "%llum", (bytes + mib - 1) / mib);
}

/* A run that failed while a tmpfs of the sandbox's was full failed of that, whatever a saver
 * called its short write: the sandbox measured it (lb_failure_input.full_tmpfs). Only a
 * verdict that blames the code, or that already says no space was left, is replaced: a
 * missing package or a network error is its own cause. */
static void refine_full_tmpfs(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	if (!in->full_tmpfs || !v->cls)
		return;
	bool no_space = strcmp(v->cls, "sandbox_restriction") == 0 &&
			strcmp(v->suggestion, DG_SUGGEST_NO_SPACE) == 0;
	if (strcmp(v->cls, "code_error") != 0 && !no_space)
		return;
	char size[32], what[300];
	const char *line = v->exc_line != NONE ? log->lines[v->exc_line] : NULL;
	size_words(in->full_tmpfs_bytes, size, sizeof(size));
	snprintf(what, sizeof(what),
		 "the sandbox's private %.128s (a tmpfs of %s, in memory) was full when the run "
		 "failed%s",
		 in->full_tmpfs, size, line ? " (the error is most likely a write that did not fit)" : "");
	dg_verdict_set(v, "sandbox_restriction", what, line, "");
	snprintf(v->suggestion, sizeof(v->suggestion),
		 "the sandbox's %.128s is a tmpfs of %s, not the host's disk, and the run filled "
		 "it: give it more room (the flag below doubles it%s), or write large files into "
		 "the experiment directory or a host directory mounted with -v SRC:DST:rw",
		 in->full_tmpfs, size,
		 strcmp(in->full_tmpfs, "/dev/shm") == 0 ? "; /dev/shm counts against --memory" : "");
	if (no_space)
		dg_set_confidence(v, CONF_HIGH, "the error says no space was left, and the sandbox "
					     "found this tmpfs full when the run ended");
	else
		dg_set_confidence(v, CONF_MEDIUM, "the sandbox found this tmpfs full when the run "
					       "ended; the error does not say that itself");
}

unsigned long long lb_diag_requested_bytes(const char *s)
{
	static const struct {
		const char *unit;
		int shift;
	} units[] = { { "bytes", 0 }, { "B ", 0 }, { "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 },
		      { "TiB", 40 }, { "PiB", 50 }, { "EiB", 60 }, { "Kb", 10 }, { "Mb", 20 },
		      { "Gb", 30 }, { "Tb", 40 } };
	static const char *const before[] = { "Unable to allocate ", "tried to allocate ",
					      "cannot allocate vector of size ", NULL };
	for (size_t i = 0; before[i]; i++) {
		const char *p = strcasestr(s, before[i]);
		char *end;
		if (!p)
			continue;
		p += strlen(before[i]);
		if (!isdigit((unsigned char)*p))
			continue;
		double n = strtod(p, &end);
		while (*end == ' ')
			end++;
		for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (strncmp(end, units[u].unit, strlen(units[u].unit)) == 0) {
				double b = n * (double)(1ULL << units[u].shift);
				return b >= 1.8e19 ? ~0ULL : (unsigned long long)b;
			}
	}
	return 0;
}

/* An allocation the output says was refused for more than the machine's memory: no memory
 * limit could give it, so the failure is the code's (most often an array whose shape grew
 * with the data: a pairwise matrix over every sample), not an out-of-memory to lift. */
static void refine_allocation(lb_verdict *v, const lb_failure_input *in, const lb_log *log)
{
	char line[300], asked[32], have[32], what[290];
	/* the exception's line, or the message a summary quotes (R's, without a traceback) */
	snprintf(line, sizeof(line), "%s", v->exc_line != NONE ? log->lines[v->exc_line]
				   : strstr(v->summary, ": ") ? strstr(v->summary, ": ") + 2 : "");
	unsigned long long want = lb_diag_requested_bytes(line);

	if (!v->cls || strcmp(v->cls, "oom") != 0 || !in->machine_memory || !want ||
	    want <= in->machine_memory)
		return;
	double w = (double)want, h = (double)in->machine_memory;
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int ku = 0, kh = 0;
	while (w >= 1024 && ku < 6)
		w /= 1024, ku++;
	while (h >= 1024 && kh < 6)
		h /= 1024, kh++;
	snprintf(asked, sizeof(asked), "%.3g %s", w, u[ku]);
	snprintf(have, sizeof(have), "%.3g %s", h, u[kh]);
	bool far = want / 4 > in->machine_memory;
	snprintf(what, sizeof(what),
		 "the code asked for %s in one allocation, more than this machine's memory (%s): "
		 "no memory limit could give it%s", asked, have,
		 far ? "; an amount that size is most likely an array shape that grew with the data"
		     : "");
	dg_verdict_set(v, "code_error", what, line,
		       "check the shape of what is allocated there (a full n x n matrix over every "
		       "sample, a missing batch dimension, a wrong axis or dtype): compute it in chunks "
		       "or keep only what is needed; if the size is meant, it needs a machine with that "
		       "much memory: no memory limit of labbox's gives more than the machine has");
	dg_set_confidence(v, far ? CONF_HIGH : CONF_MEDIUM,
			  far ? "the size the allocator refused is several times this machine's memory"
			   : "the size the allocator refused is more than this machine's memory: a "
			     "shape that grew, or work for a larger machine");
}

struct json_object *lb_diagnose_failure(const lb_failure_input *in)
{
	__attribute__((cleanup(dg_log_free))) lb_log log = { 0 };
	lb_verdict v = { .exc_line = NONE, .frame = NONE, .code_frame = NONE };
	struct json_object *doc;

	if (!in)
		return NULL;
	/* A main process that exited 0 was not ended by the memory limit, even when the OOM
	 * killer took another process of the run (a subprocess, a worker it replaced): the run
	 * completed, and diagnosis_warnings' oom_kill says what was killed. */
	if (in->exit_code == 0 && in->signal == 0 && !in->timed_out && !in->infra_error &&
	    !in->uncaught)
		return NULL;
	/* Without memory for the log the class still follows from how the run ended. */
	if (dg_log_split(&log, in->log_tail, in->log_tail_len) < 0)
		memset(&log, 0, sizeof(log));
	log.exp_dir = in->exp_dir;
	log.gate = in->runtime_gate;
	log.net_none = in->network_none;
	log.net_open = in->network_host || in->network_loopback;
	if (stacks_printed(in))
		split_glued_header(&log);
	diagnose(&v, in, &log);
	refine_full_tmpfs(&v, in, &log);
	refine_allocation(&v, in, &log);
	if (v.cls && strcmp(v.cls, "gpu_unavailable") == 0 && in->machine_without_gpus && !in->gpus) {
		snprintf(v.summary, sizeof v.summary,
			 "no usable GPU: the code needs CUDA, and the machine it ran on has no NVIDIA "
			 "GPU (no /dev/nvidiaN), so --gpus has none to give");
		snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_GPU_NONE_HERE);
	}
	if (v.cls && strcmp(v.cls, "oom") == 0 && in->memory_unlimited && !in->memory_limit) {
		if (strcmp(v.suggestion, DG_SUGGEST_OOM) == 0)
			snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_OOM_HOST);
		else if (strcmp(v.suggestion, SUGGEST_OOM_HUNG) == 0)
			snprintf(v.suggestion, sizeof v.suggestion, "%s", SUGGEST_OOM_HUNG_HOST);
	}
	doc = json_object_new_object();
	if (!doc)
		return NULL;
	if (to_json(&v, &log, doc) < 0 || (uncaught_ended(in) && (in->exit_code == 0 || v.by_uncaught) &&
	     add_uncaught(doc, in, &log) < 0) ||
	    (v.by_exit_call && add_exit_location(doc, in, &log) < 0) ||
	    lb_diagnose_escalation(doc, in) < 0) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}
