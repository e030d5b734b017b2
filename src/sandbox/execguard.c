/* The exec guard: which programs the tree may exec, decided by the kernel's account of each
 * exec rather than by the runtime gate inside the interpreter.
 *
 * The gate refuses process creation from an audit hook, in the process it judges. Code that
 * reaches ctypes (any module that imported it hands it over) calls native functions and
 * writes memory with no audit event, so the gate cannot see a `system()` made that way. The
 * sandbox's init traces the tree (ptrace, no system call tracing: it is stopped only at
 * forks, clones, signals and execs) and, at each exec, looks at what the kernel loaded before
 * the new program runs its first instruction: only the payload's own interpreter, started
 * so that its gate loads again, passes. Any other is killed there and reported.
 *
 * What the gate itself lets a child start (multiprocessing's spawn, forkserver and resource
 * tracker) passes, as the gate builds it: the same interpreter, `-s` among its options, no
 * `-I`, `-E` or `-S`, and the environment's variables that decide what runs before the gate
 * (PYTHON*, LD_*, OPENSSL_*, HOME and kin) exactly as the payload started with them. */
#include "labbox/util.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The gate's own list (unsafe_env in src/gate/sitecustomize.py): what the interpreter, the
 * dynamic loader and libc read before the gate is in. */
static const char *const sensitive_prefixes[] = {"PYTHON", "LD_", "LABBOX", "OPENSSL_"};
static const char *const sensitive_names[] = {
	"GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
	"NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR", "OMP_TOOL_LIBRARIES",
	"HOME"};
/* ... less what changes no code that runs, which the experiment may hand its workers
 * (LABBOX_GATE_MAIN, which the gate takes out of the main program's environment, says only
 * whose uncaught exception decides the run) */
static const char *const free_names[] = {"PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONIOENCODING",
					 "PYTHONFAULTHANDLER", "PYTHONDONTWRITEBYTECODE",
					 "PYTHONUTF8", "LABBOX_GATE_MAIN"};

static bool name_is(const char *name, size_t n, const char *const *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == n && memcmp(list[i], name, n) == 0)
			return true;
	return false;
}

bool sb_exec_env_sensitive(const char *name, size_t n)
{
	if (name_is(name, n, free_names, sizeof free_names / sizeof *free_names))
		return false;
	for (size_t i = 0; i < sizeof sensitive_prefixes / sizeof *sensitive_prefixes; i++) {
		size_t k = strlen(sensitive_prefixes[i]);
		if (n >= k && memcmp(name, sensitive_prefixes[i], k) == 0)
			return true;
	}
	return name_is(name, n, sensitive_names, sizeof sensitive_names / sizeof *sensitive_names);
}

/* The sensitive "K=V" entries of a NUL-separated environment, each checked against other:
 * the count of those found there, or -1 at the first that is not. */
static long sensitive_in(const char *env, size_t len, const char *other, size_t olen,
			 const char **missing, size_t *missing_name)
{
	long n = 0;
	for (size_t i = 0; i < len;) {
		const char *kv = env + i;
		size_t l = strnlen(kv, len - i);
		const char *eq = memchr(kv, '=', l);
		if (eq && sb_exec_env_sensitive(kv, (size_t)(eq - kv))) {
			bool found = false;
			for (size_t j = 0; j < olen && !found;) {
				size_t m = strnlen(other + j, olen - j);
				found = m == l && memcmp(other + j, kv, l) == 0;
				j += m + 1;
			}
			if (!found) {
				*missing = kv;
				*missing_name = (size_t)(eq - kv);
				return -1;
			}
			n++;
		}
		i += l + 1;
	}
	return n;
}

int sb_exec_env_same(const char *env, size_t len, const char *ref, size_t rlen, char *why,
		     size_t whylen)
{
	const char *kv = NULL;
	size_t n = 0;
	long a = sensitive_in(env, len, ref, rlen, &kv, &n);
	long b = a < 0 ? 0 : sensitive_in(ref, rlen, env, len, &kv, &n);
	if (a < 0 || b < 0) {
		snprintf(why, whylen, "%.*s is not what the run started with",
			 (int)(n < 64 ? n : 64), kv);
		return -EPERM;
	}
	if (a != b) {
		snprintf(why, whylen, "a variable that decides what runs before the gate is set twice");
		return -EPERM;
	}
	return 0;
}

static bool x_option_refused(const char *v)
{
	/* -X presite imports a module before site; a pycache prefix or source-less frozen
	 * modules change whose bytecode runs before the gate is in */
	static const char *const refused[] = {"presite", "pycache_prefix", "frozen_modules"};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		size_t k = strlen(refused[i]);
		if (strncmp(v, refused[i], k) == 0 && (v[k] == '\0' || v[k] == '='))
			return true;
	}
	return false;
}

/* The options of a NUL-separated Python command line, one token each ("-s", "-Wignore",
 * "-Ximporttime", "--check-hash-based-pycs=never"), up to the script, -c or -m. 0, or -EPERM
 * with why. */
#define OPT_MAX 64
#define OPT_LEN 160
typedef struct py_opts {
	size_t n;
	char tok[OPT_MAX][OPT_LEN];
} py_opts;

static int opt_add(py_opts *o, char kind, const char *value, char *why, size_t whylen)
{
	if (o->n == OPT_MAX || strlen(value) + 3 > OPT_LEN) {
		snprintf(why, whylen, "more options, or longer ones, than labbox reads");
		return -EPERM;
	}
	snprintf(o->tok[o->n++], OPT_LEN, "-%c%s", kind, value);
	return 0;
}

static int python_options(const char *cmdline, size_t len, py_opts *o, char *why, size_t whylen)
{
	/* Each argument read as a string: a last one with no NUL of its own gets one. */
	LB_AUTOFREE char *cmd = malloc(len + 1);
	if (!cmd) {
		snprintf(why, whylen, "out of memory");
		return -EPERM;
	}
	memcpy(cmd, cmdline, len);
	cmd[len] = '\0';
	const char *args[256];
	size_t n = 0;
	for (size_t i = 0; i < len && n < sizeof args / sizeof *args;) {
		args[n++] = cmd + i;
		i += strlen(cmd + i) + 1;
	}
	if (n == sizeof args / sizeof *args) {
		snprintf(why, whylen, "more than %zu arguments", n - 1);
		return -EPERM;
	}
	o->n = 0;
	for (size_t i = 1; i < n; i++) {
		const char *a = args[i];
		if (a[0] != '-' || a[1] == '\0' || strcmp(a, "--") == 0)
			return 0; /* the script, or the program on stdin */
		if (a[1] == '-') {
			char v[OPT_LEN];
			snprintf(v, sizeof v, "%.100s=%.40s", a + 2,
				 strcmp(a, "--check-hash-based-pycs") == 0 && i + 1 < n ? args[++i] : "");
			if (opt_add(o, '-', v, why, whylen) < 0)
				return -EPERM;
			continue;
		}
		for (const char *c = a + 1; *c; c++) {
			if (*c == 'c' || *c == 'm')
				return 0; /* what follows is the program or the module */
			if (*c == 'W' || *c == 'X') {
				const char *v = c[1] ? c + 1 : i + 1 < n ? args[++i] : "";
				if (opt_add(o, *c, v, why, whylen) < 0)
					return -EPERM;
				break;
			}
			if (opt_add(o, *c, "", why, whylen) < 0)
				return -EPERM;
		}
	}
	return 0;
}

static bool has_token(const py_opts *o, const char *t)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->tok[i], t) == 0)
			return true;
	return false;
}

int sb_exec_python_args(const char *cmdline, size_t len, const char *refline, size_t reflen,
			bool nousersite_env, char *why, size_t whylen)
{
	LB_AUTOFREE py_opts *o = malloc(sizeof *o), *ref = malloc(sizeof *ref);
	if (!o || !ref) {
		snprintf(why, whylen, "out of memory");
		return -EPERM;
	}
	if (python_options(cmdline, len, o, why, whylen) < 0)
		return -EPERM;
	if (python_options(refline, reflen, ref, why, whylen) < 0)
		return -EPERM;
	for (size_t i = 0; i < o->n; i++) {
		const char *t = o->tok[i];
		if ((t[1] == 'X' && x_option_refused(t + 2)) || (t[1] == 'I' || t[1] == 'E' ||
								   t[1] == 'S')) {
			snprintf(why, whylen, "%.60s: the interpreter would start without the runtime "
				 "gate, or run code before it", t);
			return -EPERM;
		}
		/* What the gate gives the children it starts (-s, -P, -B from the environment),
		 * and what the run's own interpreter was started with; nothing else: an option
		 * that writes or imports while the gate is read (-v, -W with a module, -X
		 * importtime) can make that read fail, which site passes over. */
		if (strcmp(t, "-s") != 0 && strcmp(t, "-P") != 0 && strcmp(t, "-B") != 0 &&
		    !has_token(ref, t)) {
			snprintf(why, whylen, "%.60s: an option the run's interpreter was not started "
				 "with", t);
			return -EPERM;
		}
	}
	if (!nousersite_env && !has_token(o, "-s")) {
		snprintf(why, whylen, "no -s: the user site's .pth lines would run before the gate");
		return -EPERM;
	}
	return 0;
}

/* A /proc file of pid, whole, up to max bytes; *truncated when it was longer. Not
 * lb_read_file_at: /proc's files say they are empty (st_size 0), so they are read to the end. */
static int read_proc(pid_t pid, const char *name, size_t max, char **out, size_t *len,
		     bool *truncated)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, max + 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (r == 0 || (got += (size_t)r) > max)
			break;
	}
	*truncated = got > max;
	*len = got > max ? max : got;
	buf[*len] = '\0';
	*out = buf;
	return 0;
}

/* "ARG ARG ..." of a NUL-separated command line, cut to fit. */
static void summarise_argv(const char *cmd, size_t len, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < outlen; i++)
		out[o++] = cmd[i] ? cmd[i] : ' ';
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* Limits an exec inherits under which the interpreter could fail to read or run its gate
 * (site passes over a sitecustomize that raised): none may be lower than the run's own. */
static const int gate_limits[SB_EXEC_LIMITS] = {RLIMIT_NOFILE, RLIMIT_AS, RLIMIT_DATA,
						RLIMIT_STACK, RLIMIT_FSIZE};
static const char *const gate_limit_names[SB_EXEC_LIMITS] = {"RLIMIT_NOFILE", "RLIMIT_AS",
							     "RLIMIT_DATA", "RLIMIT_STACK",
							     "RLIMIT_FSIZE"};

#define ENV_MAX ((size_t)1 << 20)
#define CMD_MAX ((size_t)1 << 16)

int sb_exec_judge(pid_t pid, pid_t payload, sb_exec_ref *ref, lb_exec_refusal *out)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno; /* gone already */
	LB_AUTOFREE char *env = NULL, *cmd = NULL;
	size_t envlen = 0, cmdlen = 0;
	bool env_cut = false, cmd_cut = false;
	int r = read_proc(pid, "environ", ENV_MAX, &env, &envlen, &env_cut);
	if (r == 0)
		r = read_proc(pid, "cmdline", CMD_MAX, &cmd, &cmdlen, &cmd_cut);
	if (r < 0)
		return r == -ENOENT || r == -ESRCH ? 0 : r;
	if (!ref->set) {
		if (pid != payload)
			return -EPROTO; /* the payload's own exec comes first */
		for (int i = 0; i < SB_EXEC_LIMITS; i++)
			if (prlimit(pid, gate_limits[i], NULL, &ref->limits[i]) < 0)
				return -errno;
		ref->dev = st.st_dev;
		ref->ino = st.st_ino;
		ref->env = lb_steal_ptr(&env);
		ref->envlen = envlen;
		ref->cmd = lb_steal_ptr(&cmd);
		ref->cmdlen = cmdlen;
		ref->set = true;
		return 0;
	}
	memset(out, 0, sizeof *out);
	out->pid = (int)pid;
	ssize_t l = readlink(path, out->exe, sizeof out->exe - 1);
	out->exe[l > 0 ? l : 0] = '\0';
	summarise_argv(cmd, cmdlen, out->argv, sizeof out->argv);
	if (st.st_dev != ref->dev || st.st_ino != ref->ino) {
		snprintf(out->why, sizeof out->why, "not the run's interpreter");
		return 1;
	}
	/* The interpreter finds its prefix, and a pyvenv.cfg with the .pth files it names, from
	 * the name it was started by (and PATH, for a name without a slash): under another name
	 * the same binary runs a venv the experiment wrote, whose .pth lines keep the gate out. */
	if (strnlen(cmd, cmdlen) == cmdlen || strcmp(cmd, ref->cmd) != 0) {
		snprintf(out->why, sizeof out->why, "started by another name than the run's "
			 "interpreter (%s)", ref->cmd);
		return 1;
	}
	for (int i = 0; i < SB_EXEC_LIMITS; i++) {
		struct rlimit lim;
		if (prlimit(pid, gate_limits[i], NULL, &lim) < 0) {
			snprintf(out->why, sizeof out->why, "its limits cannot be read: %s",
				 strerror(errno));
			return 1;
		}
		if (lim.rlim_cur < ref->limits[i].rlim_cur) {
			snprintf(out->why, sizeof out->why,
				 "%s lowered below the run's: the gate could fail to load",
				 gate_limit_names[i]);
			return 1;
		}
	}
	if (env_cut || cmd_cut) {
		snprintf(out->why, sizeof out->why, "its %s is larger than labbox reads",
			 env_cut ? "environment" : "command line");
		return 1;
	}
	if (sb_exec_env_same(env, envlen, ref->env, ref->envlen, out->why, sizeof out->why) < 0)
		return 1;
	/* the same PYTHONNOUSERSITE as the run's (just checked): a user site off for all */
	bool nousersite = false;
	for (size_t i = 0; i < envlen;) {
		size_t m = strnlen(env + i, envlen - i);
		if (m > 17 && memcmp(env + i, "PYTHONNOUSERSITE=", 17) == 0)
			nousersite = true;
		i += m + 1;
	}
	if (sb_exec_python_args(cmd, cmdlen, ref->cmd, ref->cmdlen, nousersite, out->why,
				sizeof out->why) < 0)
		return 1;
	return 0;
}

/* The interpreter a "#!" line names, and whether it gives an argument too: 0, or -ENOEXEC for
 * a file that is no script. */
static int shebang(const char *path, char *interp, size_t len, bool *has_arg)
{
	char line[300];
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, line, sizeof line - 1);
	if (n < 2 || line[0] != '#' || line[1] != '!')
		return -ENOEXEC;
	line[n] = '\0';
	char *p = line + 2;
	p += strspn(p, " \t");
	size_t k = strcspn(p, " \t\n");
	if (k == 0 || k >= len)
		return -ENOEXEC;
	memcpy(interp, p, k);
	interp[k] = '\0';
	p += k;
	p += strspn(p, " \t");
	*has_arg = *p != '\n' && *p != '\0';
	return 0;
}

void sb_exec_list_resolve(const lb_sandbox *sb, sb_exec_list *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < sb->nexec_allowed; i++) {
		const char *path = sb->exec_allowed[i].path;
		sb_exec_prog *p = &out->prog[out->n];
		char interp[256];
		bool has_arg = false;
		struct stat st;
		if (shebang(path, interp, sizeof interp, &has_arg) == 0) {
			/* the kernel loads the interpreter, and hands it the script by the path it
			 * was exec'd by: a path on the sandbox's read-only system mounts, which the
			 * run cannot point elsewhere */
			if (stat(interp, &st) < 0)
				continue;
			snprintf(p->script, sizeof p->script, "%s", path);
			p->script_at = has_arg ? 2 : 1;
		} else if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			continue;
		}
		p->dev = st.st_dev;
		p->ino = st.st_ino;
		p->dash_c = sb->exec_allowed[i].dash_c;
		out->n++;
	}
}

int sb_exec_listed(dev_t dev, ino_t ino, const char *cmd, size_t len, const sb_exec_list *l,
		   char *why, size_t whylen)
{
	const char *args[3] = {NULL, NULL, NULL};
	for (size_t i = 0, k = 0; i < len && k < 3; k++) {
		size_t m = strnlen(cmd + i, len - i);
		if (i + m == len)
			break; /* an argument without its NUL is none the list names */
		args[k] = cmd + i;
		i += m + 1;
	}
	const char *seen = NULL;
	for (size_t i = 0; i < l->n; i++) {
		const sb_exec_prog *p = &l->prog[i];
		if (p->dev != dev || p->ino != ino)
			continue;
		if (p->script[0]) {
			const char *a = args[p->script_at];
			if (a && strcmp(a, p->script) == 0)
				return 0;
			seen = "the interpreter of a script the run may start, on another script";
		} else if (p->dash_c) {
			if (args[1] && strcmp(args[1], "-c") == 0)
				return 0;
			seen = "a shell, started otherwise than as `sh -c COMMAND`";
		} else {
			return 0;
		}
	}
	snprintf(why, whylen, "%s", seen ? seen : "not among the programs the interpreter itself "
						  "runs (its start-up and system())");
	return -EPERM;
}

int sb_exec_judge_listed(pid_t pid, pid_t payload, sb_exec_ref *ref, const sb_exec_list *l,
			 lb_exec_refusal *out)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno; /* gone already */
	LB_AUTOFREE char *cmd = NULL;
	size_t cmdlen = 0;
	bool cut = false;
	int r = read_proc(pid, "cmdline", CMD_MAX, &cmd, &cmdlen, &cut);
	if (r < 0)
		return r == -ENOENT || r == -ESRCH ? 0 : r;
	if (!ref->set) {
		if (pid != payload)
			return -EPROTO; /* the payload's own exec comes first */
		ref->dev = st.st_dev;
		ref->ino = st.st_ino;
		ref->set = true;
		return 0;
	}
	/* The interpreter again (R's parallel workers are Rscript): code of the same kind,
	 * under the same guard. */
	if (st.st_dev == ref->dev && st.st_ino == ref->ino)
		return 0;
	memset(out, 0, sizeof *out);
	if (sb_exec_listed(st.st_dev, st.st_ino, cmd, cmdlen, l, out->why, sizeof out->why) == 0)
		return 0;
	out->pid = (int)pid;
	ssize_t n = readlink(path, out->exe, sizeof out->exe - 1);
	out->exe[n > 0 ? n : 0] = '\0';
	summarise_argv(cmd, cmdlen, out->argv, sizeof out->argv);
	return 1;
}
