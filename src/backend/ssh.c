/* The ssh backend: the experiment runs on another machine, reached through the system's own
 * ssh and rsync, so the user's ssh config, agent, ProxyJump and keys keep working.
 *
 * One connection serves the whole run: a ControlMaster of labbox's own (its socket in a
 * private 0700 directory, the master a child of labbox that dies with it), and every step
 * (setup, rsync up, the run, rsync down, removal) goes through it. BatchMode=yes: nothing
 * ever prompts. On the remote host the staged experiment goes into a per-run directory
 * (mktemp -d); `labbox run --json` there runs it in that machine's own sandbox, and its
 * verdict, isolation block, run directory and environment come back. Without a remote
 * labbox the run is refused (125) unless --allow-degraded isolation accepts the seed's plain
 * `timeout BUDGET python3 main.py`, which the isolation block then says plainly.
 *
 * The remote command runs under a small supervisor (a Python script given on the command
 * line: python3 is there for the experiment anyway) that ends it when local labbox says so,
 * when labbox's heartbeats stop (a lost connection) or when the channel closes (labbox or its
 * ssh died): SIGTERM to its process group, the grace, SIGKILL. A second one, the guardian,
 * removes the per-run directory when labbox closes its channel at cleanup, dies at any step,
 * or its heartbeats stop: nothing of a run stays on the host. */
#include "labbox/backend.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/gate.h"
#include "labbox/check.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the master may take to connect and authenticate. */
#define CONNECT_WAIT_S 30.0
/* Seconds between heartbeats, and the silence after which the remote supervisor ends the
 * run (a lost connection that no TCP error announces). */
#define HEARTBEAT_S 1.0
#define SILENCE_S 15
/* What the remote labbox may take beyond its grace to end its sandbox and print its verdict,
 * and what ssh may take after that before labbox stops waiting for it. */
#define REMOTE_MARGIN_S 10.0
#define SSH_MARGIN_S 20.0
#define STDERR_MAX (256 * 1024)
#define END_MARK "LABBOX-SSH-END "

/* s in single quotes for a POSIX shell: the remote login shell parses what ssh sends. */
static int sh_quote(lb_buf *b, const char *s)
{
	int r = lb_buf_puts(b, "'");
	for (const char *p = s; r == 0 && *p; p++)
		r = *p == '\'' ? lb_buf_puts(b, "'\\''") : lb_buf_append(b, p, 1);
	return r ? r : lb_buf_puts(b, "'");
}

/* argv as one command line for the remote shell, every word quoted. */
static int sh_join(lb_buf *b, char *const *argv)
{
	int r = 0;
	for (size_t i = 0; r == 0 && argv[i]; i++) {
		if (i)
			r = lb_buf_puts(b, " ");
		if (r == 0)
			r = sh_quote(b, argv[i]);
	}
	return r;
}

/* The remote supervisor (see the top of this file). argv: MODE DIR KILL_AFTER SILENCE CMD...;
 * stdin: one JSON line {"env": {...}} (secrets travel here, never on a command line), then
 * heartbeat bytes, 'x' to stop. MODE labbox: CMD's stdout (the --json verdict) is kept and
 * its stderr (the experiment's output) streamed; MODE plain: both streamed. At the end one
 * line END_MARK {json} on stderr; the exit status is CMD's (128+N for signal N). */
static const char supervisor_src[] =
	"import json,os,select,shutil,signal,subprocess,sys,threading,time\n"
	"mode,rdir,kill_after,silence=sys.argv[1],sys.argv[2],float(sys.argv[3]),float(sys.argv[4])\n"
	"cmd=sys.argv[5:]\n"
	"buf=b''\n"
	"while b'\\n' not in buf:\n"
	"    c=os.read(0,65536)\n"
	"    if not c: sys.exit(3)\n"
	"    buf+=c\n"
	"line,rest=buf.split(b'\\n',1)\n"
	"env=dict(os.environ)\n"
	"env.update(json.loads(line)['env'])\n"
	"out=[]\n"
	"if mode=='labbox':\n"
	"    p=subprocess.Popen(cmd,stdin=subprocess.DEVNULL,stdout=subprocess.PIPE,stderr=1,env=env,cwd=rdir,start_new_session=True)\n"
	"    t=threading.Thread(target=lambda:out.append(p.stdout.read()))\n"
	"    t.start()\n"
	"else:\n"
	"    p=subprocess.Popen(cmd,stdin=subprocess.DEVNULL,stdout=1,stderr=subprocess.STDOUT,env=env,cwd=os.path.join(rdir,'exp'),start_new_session=True)\n"
	"    t=None\n"
	"rd,wr=os.pipe()\n"
	"def waiter():\n"
	"    p.wait()\n"
	"    os.write(wr,b'.')\n"
	"threading.Thread(target=waiter,daemon=True).start()\n"
	"def stop():\n"
	"    try: os.killpg(p.pid,signal.SIGTERM)\n"
	"    except OSError: pass\n"
	"    try: p.wait(kill_after)\n"
	"    except subprocess.TimeoutExpired:\n"
	"        try: os.killpg(p.pid,signal.SIGKILL)\n"
	"        except OSError: pass\n"
	"        p.wait()\n"
	"why=None\n"
	"last=time.monotonic()\n"
	"if b'x' in rest: why='asked'\n"
	"while why is None and p.poll() is None:\n"
	"    r,_,_=select.select([0,rd],[],[],1.0)\n"
	"    if 0 in r:\n"
	"        c=os.read(0,4096)\n"
	"        if not c: why='connection closed'\n"
	"        elif b'x' in c: why='asked'\n"
	"        last=time.monotonic()\n"
	"    if why is None and time.monotonic()-last>silence: why='heartbeats stopped'\n"
	"if why: stop()\n"
	"p.wait()\n"
	"try:\n"
	"    os.killpg(p.pid,signal.SIGKILL)\n"
	"except OSError: pass\n"
	"if t: t.join()\n"
	"lost=why in ('connection closed','heartbeats stopped')\n"
	"if lost: shutil.rmtree(rdir,ignore_errors=True)\n"
	"res={'stopped':why}\n"
	"rc=p.returncode\n"
	"if rc<0: res['signal']=-rc; code=128-rc\n"
	"else: res['exit']=rc; code=rc\n"
	"if mode=='labbox':\n"
	"    o=out[0] if out else b''\n"
	"    try: res['doc']=json.loads(o)\n"
	"    except ValueError: res['doc']=None; res['stdout']=o[-2000:].decode('utf-8','replace')\n"
	/* The remote records, linked into RDIR/fetch/remote/: one rsync brings them back with
	 * exp/ (see ssh_fetch). */
	"    rd=res['doc'].get('run_dir') if isinstance(res['doc'],dict) else None\n"
	"    if isinstance(rd,str) and not lost:\n"
	"        f=os.path.join(rdir,'fetch','remote')\n"
	"        try: os.makedirs(f,0o700)\n"
	"        except OSError: pass\n"
	"        for n in ('result.json','manifest.json','run.log','environment.txt'):\n"
	"            try: os.link(os.path.join(rd,n),os.path.join(f,n))\n"
	"            except OSError:\n"
	"                try: shutil.copyfile(os.path.join(rd,n),os.path.join(f,n))\n"
	"                except OSError: pass\n"
	"try: os.write(2,b'\\n" END_MARK "'+json.dumps(res).encode()+b'\\n')\n"
	"except OSError: pass\n"
	"sys.exit(code if 0<=code<256 else 255)\n";

/* The per-run directory's guardian there: it removes the directory when labbox closes its
 * channel (cleanup), when labbox dies at any step (its ssh dies with it), or when labbox's
 * heartbeats stop (a lost connection that no TCP error announces). argv: DIR SILENCE. */
static const char guardian_src[] =
	"import os,select,shutil,sys,time\n"
	"d,silence=sys.argv[1],float(sys.argv[2])\n"
	"last=time.monotonic()\n"
	"while time.monotonic()-last<=silence:\n"
	"    r,_,_=select.select([0],[],[],1.0)\n"
	"    if r:\n"
	"        if not os.read(0,4096): break\n"
	"        last=time.monotonic()\n"
	"shutil.rmtree(d,ignore_errors=True)\n";

/* Facts of the remote host, one KEY=VALUE a line; $1 the labbox asked for (empty: PATH),
 * $2 the run id (empty: no directory is made). */
static const char setup_src[] =
	"lb=$1; id=$2\n"
	"if [ -z \"$lb\" ]; then lb=$(command -v labbox 2>/dev/null) || lb=; fi\n"
	"echo \"labbox=$lb\"\n"
	"if [ -n \"$lb\" ]; then\n"
	"  if v=$(\"$lb\" --version 2>&1); then echo \"labbox_version=$(echo \"$v\" | head -n1)\";\n"
	"  else echo \"labbox_error=$(echo \"$v\" | head -n1)\"; fi\n"
	"fi\n"
	"py=$(command -v python3 2>/dev/null) || py=\n"
	"echo \"python=$py\"\n"
	"if [ -n \"$py\" ]; then echo \"python_version=$(\"$py\" -c 'import platform; "
	"print(platform.python_version())' 2>&1 | head -n1)\"; fi\n"
	"echo \"user=$(id -un 2>/dev/null)\"\n"
	"echo \"hostname=$(uname -n)\"\n"
	"if [ -n \"$id\" ]; then\n"
	"  if d=$(mktemp -d \"${TMPDIR:-/tmp}/labbox-ssh-$id.XXXXXX\" 2>&1); then echo \"dir=$d\";\n"
	"  else echo \"dir_error=$d\"; fi\n"
	"fi\n";

typedef struct ssh_state {
	char *host;
	char *labbox_asked;
	char *python_asked; /* --python: the interpreter there */
	bool install;
	bool degraded_ok;
	json_object *sandbox;
	double grace;
	char *ssh;        /* the ssh client on PATH */
	char *rsync;
	char ctl_dir[64]; /* private directory of the ControlMaster socket */
	char ctl[96];
	pid_t master;
	/* What the remote host said. */
	char *labbox;     /* the labbox run there; NULL: none (degraded) */
	char labbox_version[128];
	bool installed;
	char python[PATH_MAX];
	char python_version[64];
	char user[64];
	char hostname[256];
	char dir[PATH_MAX]; /* the per-run directory there */
	bool degraded;      /* no remote labbox: the seed's plain timeout python3 */
	char gate_policy[16]; /* the policy and gate mode the remote labbox was given */
	int gate_mode;
	lb_strv cmd;           /* what the supervisor runs there */
	json_object *end;   /* the supervisor's END line */
	json_object *doc;   /* the remote labbox's verdict (inside end) */
	json_object *iso;   /* the isolation block of a degraded run */
	char remote_run_dir[PATH_MAX];
	pid_t guard;     /* ssh running the guardian there */
	int guard_wr;    /* its stdin; -1 when there is none */
	pid_t beat;      /* labbox's child that feeds it heartbeats */
} ssh_state;

static ssh_state *state_of(lb_backend *b)
{
	return b->state;
}

/* The ssh options of every step: never prompt, no forwarding of the agent, X11 or ports to a
 * machine running untrusted code, the master's socket. */
static int ssh_opts(ssh_state *d, lb_strv *a)
{
	static const char *const opts[] = {"-o", "BatchMode=yes", "-o", "ForwardAgent=no",
					   "-o", "ForwardX11=no", "-o", "ClearAllForwardings=yes",
					   "-o", "ControlMaster=no", "-T", NULL};
	int r = lb_strv_push(a, d->ssh);
	for (size_t i = 0; r == 0 && opts[i]; i++)
		r = lb_strv_push(a, opts[i]);
	if (r == 0)
		r = lb_strv_push(a, "-S");
	if (r == 0)
		r = lb_strv_push(a, d->ctl);
	return r;
}

/* ssh HOST COMMAND through the master; COMMAND one line for the remote shell. */
static int remote_argv(ssh_state *d, const char *command, lb_strv *a)
{
	int r = ssh_opts(d, a);
	if (r == 0)
		r = lb_strv_push(a, d->host);
	if (r == 0)
		r = lb_strv_push(a, command);
	return r;
}

/* Runs command there; out gets stdout (and stderr when merge), trimmed. The exit status, or a
 * negative errno. */
static int remote_capture(ssh_state *d, const char *command, bool merge, size_t max, lb_buf *out)
{
	lb_strv a = {0};
	int st = 0;
	int r = remote_argv(d, command, &a);
	if (r == 0)
		r = lb_capture(a.v, max, merge, out, &st);
	lb_strv_free(&a);
	if (r < 0)
		return r;
	while (out->data && out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
		out->data[--out->len] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void one_line(const char *s, char *out, size_t n)
{
	/* The last non-empty line: ssh's reason comes after its warnings. */
	const char *best = NULL;
	size_t blen = 0;
	for (const char *p = s ? s : ""; *p;) {
		const char *e = strchrnul(p, '\n');
		size_t len = (size_t)(e - p);
		while (len && (p[len - 1] == '\r' || p[len - 1] == ' '))
			len--;
		if (len) {
			best = p;
			blen = len;
		}
		p = *e ? e + 1 : e;
	}
	if (!best)
		snprintf(out, n, "no output");
	else
		snprintf(out, n, "%.*s", (int)blen, best);
}

static void unreachable(ssh_state *d, const char *said, char *err, size_t errlen)
{
	char line[400];
	one_line(said, line, sizeof line);
	snprintf(err, errlen, "cannot reach the ssh host '%s': %s; `ssh -v %s true` shows why", d->host,
		 line, d->host);
}

static void child_dies_with_labbox(void)
{
	/* The connection must not outlive labbox: its end is what tells the remote side. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The socket directories of earlier labboxes that died without cleaning up (SIGKILL: their
 * master died with them, their directory stayed): named by their pid, removed once that pid
 * is gone. Only labbox's own two names are unlinked, so rmdir leaves anything else alone. */
static void remove_ctl_dir(int dfd, const char *name, const char *path, void *ctx)
{
	(void)ctx;
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/c", name);
	unlinkat(dfd, p, 0);
	snprintf(p, sizeof p, "%s/master.err", name);
	unlinkat(dfd, p, 0);
	(void)path;
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void remove_stale_ctl_dirs(void)
{
	lb_stale_pid_dirs("/tmp", "labbox-sshctl", remove_ctl_dir, NULL);
}

/* The ControlMaster, as labbox's child: up once its socket exists (ssh creates it after
 * authentication), or failed with what ssh said. */
static int start_master(ssh_state *d, char *err, size_t errlen)
{
	remove_stale_ctl_dirs();
	snprintf(d->ctl_dir, sizeof d->ctl_dir, "/tmp/labbox-sshctl-%d-XXXXXX", (int)getpid());
	if (!mkdtemp(d->ctl_dir)) {
		d->ctl_dir[0] = '\0';
		snprintf(err, errlen, "cannot create a private directory for the ssh connection: %s",
			 strerror(errno));
		return -errno;
	}
	snprintf(d->ctl, sizeof d->ctl, "%s/c", d->ctl_dir);
	char errpath[128];
	snprintf(errpath, sizeof errpath, "%s/master.err", d->ctl_dir);
	LB_AUTOCLOSE int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (efd < 0)
		return -errno;
	lb_strv a = {0};
	static const char *const opts[] = {"-M", "-N", "-o", "BatchMode=yes", "-o", "ControlPersist=no",
					   "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
					   "-o", "ConnectTimeout=20", "-o", "ForwardAgent=no", "-o",
					   "ForwardX11=no", "-o", "ClearAllForwardings=yes", "-S", NULL};
	int r = lb_strv_push(&a, d->ssh);
	for (size_t i = 0; r == 0 && opts[i]; i++)
		r = lb_strv_push(&a, opts[i]);
	if (r == 0)
		r = lb_strv_push(&a, d->ctl);
	if (r == 0)
		r = lb_strv_push(&a, d->host);
	if (r < 0) {
		lb_strv_free(&a);
		return r;
	}
	pid_t pid = fork();
	if (pid == 0) {
		child_dies_with_labbox();
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		dup2(efd, 2);
		execv(a.v[0], a.v);
		_exit(127);
	}
	lb_strv_free(&a);
	if (pid < 0)
		return -errno;
	d->master = pid;
	double t0 = lb_time_monotonic();
	struct stat sb;
	while (stat(d->ctl, &sb) < 0) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid || lb_time_monotonic() - t0 > CONNECT_WAIT_S) {
			if (d->master > 0 && kill(pid, 0) == 0) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
			}
			d->master = 0;
			LB_AUTOFREE char *said = NULL;
			size_t len = 0;
			if (lb_read_file_at(AT_FDCWD, errpath, 65536, &said, &len) < 0 || !len) {
				free(said);
				said = strdup("the connection was not established in time");
			}
			unreachable(d, said, err, errlen);
			return -EHOSTUNREACH;
		}
		usleep(5000);
	}
	return 0;
}

static void parse_facts(ssh_state *d, char *text, char *dir_error, size_t delen, char *lb_error,
			size_t lelen)
{
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		if (strcmp(k, "labbox") == 0 && *v) {
			free(d->labbox);
			d->labbox = strdup(v);
		} else if (strcmp(k, "labbox_version") == 0) {
			snprintf(d->labbox_version, sizeof d->labbox_version, "%s",
				 strncmp(v, "labbox ", 7) == 0 ? v + 7 : v);
		} else if (strcmp(k, "labbox_error") == 0) {
			snprintf(lb_error, lelen, "%s", v);
		} else if (strcmp(k, "python") == 0) {
			snprintf(d->python, sizeof d->python, "%s", v);
		} else if (strcmp(k, "python_version") == 0) {
			snprintf(d->python_version, sizeof d->python_version, "%s", v);
		} else if (strcmp(k, "user") == 0) {
			snprintf(d->user, sizeof d->user, "%s", v);
		} else if (strcmp(k, "hostname") == 0) {
			snprintf(d->hostname, sizeof d->hostname, "%s", v);
		} else if (strcmp(k, "dir") == 0) {
			snprintf(d->dir, sizeof d->dir, "%s", v);
		} else if (strcmp(k, "dir_error") == 0) {
			snprintf(dir_error, delen, "%s", v);
		}
	}
}

/* Only what mktemp makes: the directory's name goes into rsync's remote paths. */
static bool plain_path(const char *p)
{
	if (p[0] != '/')
		return false;
	for (; *p; p++)
		if (!(*p == '/' || *p == '.' || *p == '_' || *p == '-' || *p == '+' ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

/* Facts of the remote host and, with id, its per-run directory. */
static int remote_setup(ssh_state *d, const char *id, char *lb_error, size_t lelen, char *err,
			size_t errlen)
{
	lb_buf cmd = {0}, out = {0};
	int r = lb_buf_puts(&cmd, "exec /bin/sh -c ");
	if (r == 0)
		r = sh_quote(&cmd, setup_src);
	if (r == 0)
		r = lb_buf_puts(&cmd, " labbox-setup ");
	if (r == 0)
		r = sh_quote(&cmd, d->labbox_asked ? d->labbox_asked : "");
	if (r == 0)
		r = lb_buf_puts(&cmd, " ");
	if (r == 0)
		r = sh_quote(&cmd, id ? id : "");
	int st = r == 0 ? remote_capture(d, cmd.data, true, 65536, &out) : r;
	lb_buf_free(&cmd);
	if (st < 0) {
		lb_buf_free(&out);
		snprintf(err, errlen, "cannot run ssh: %s", strerror(-st));
		return st;
	}
	if (st != 0) {
		unreachable(d, out.data, err, errlen);
		lb_buf_free(&out);
		return -EHOSTUNREACH;
	}
	char dir_error[300] = "";
	parse_facts(d, out.data ? out.data : (char *)"", dir_error, sizeof dir_error, lb_error, lelen);
	lb_buf_free(&out);
	if (id && (!d->dir[0] || !plain_path(d->dir))) {
		snprintf(err, errlen, "cannot create a run directory on the ssh host '%s': %s", d->host,
			 dir_error[0] ? dir_error : d->dir[0] ? d->dir : "mktemp -d said nothing");
		d->dir[0] = '\0';
		return -EIO;
	}
	return 0;
}

/* The guardian of the per-run directory (guardian_src), fed one byte a second by a child of
 * labbox that dies with it, since labbox itself blocks in rsync for as long as a copy takes. */
static int start_guardian(ssh_state *d)
{
	lb_buf cmd = {0};
	lb_strv a = {0};
	char silence[16];
	snprintf(silence, sizeof silence, "%d", SILENCE_S);
	char *const words[] = {d->python, "-I", "-c", (char *)guardian_src, d->dir, silence, NULL};
	int r = lb_buf_puts(&cmd, "exec ");
	if (r == 0)
		r = sh_join(&cmd, words);
	if (r == 0)
		r = remote_argv(d, cmd.data, &a);
	lb_buf_free(&cmd);
	int p[2];
	if (r < 0 || pipe2(p, O_CLOEXEC) < 0) {
		lb_strv_free(&a);
		return r < 0 ? r : -errno;
	}
	pid_t pid = fork();
	if (pid == 0) {
		child_dies_with_labbox();
		int nul = open("/dev/null", O_RDWR);
		dup2(p[0], 0);
		if (nul >= 0) {
			dup2(nul, 1);
			dup2(nul, 2);
		}
		execv(a.v[0], a.v);
		_exit(127);
	}
	lb_strv_free(&a);
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -errno;
	}
	d->guard = pid;
	d->guard_wr = p[1];
	pid_t beat = fork();
	if (beat == 0) {
		child_dies_with_labbox();
		signal(SIGPIPE, SIG_IGN);
		for (;;) {
			if (write(d->guard_wr, ".", 1) < 0 && errno != EINTR && errno != EAGAIN)
				_exit(0);
			sleep(1);
		}
	}
	d->beat = beat > 0 ? beat : 0;
	return 0;
}

/* Closing the guardian's channel removes the directory there; its ssh ends once it has. */
static void stop_guardian(ssh_state *d)
{
	if (d->beat > 0) {
		kill(d->beat, SIGKILL);
		waitpid(d->beat, NULL, 0);
		d->beat = 0;
	}
	if (d->guard_wr >= 0) {
		close(d->guard_wr);
		d->guard_wr = -1;
	}
	if (d->guard > 0) {
		double t0 = lb_time_monotonic();
		while (waitpid(d->guard, NULL, WNOHANG) == 0) {
			if (lb_time_monotonic() - t0 > SSH_MARGIN_S) {
				kill(d->guard, SIGKILL);
				waitpid(d->guard, NULL, 0);
				break;
			}
			usleep(2000);
		}
		d->guard = 0;
	}
}

/* rsync through the master, as `rsync -e 'ssh -S CTL ...'`. */
static int rsync_run(ssh_state *d, const char *const *args, char *said, size_t saidlen)
{
	lb_buf e = {0};
	lb_strv o = {0};
	int r = ssh_opts(d, &o);
	for (size_t i = 0; r == 0 && i < o.n; i++) {
		/* rsync splits -e on white space itself; a path with some is quoted for it. */
		bool q = strpbrk(o.v[i], " \t'\"") != NULL;
		r = lb_buf_printf(&e, "%s%s%s%s", i ? " " : "", q ? "'" : "", o.v[i], q ? "'" : "");
	}
	lb_strv_free(&o);
	lb_strv a = {0};
	if (r == 0)
		r = lb_strv_push(&a, d->rsync);
	if (r == 0)
		r = lb_strv_push(&a, "-e");
	if (r == 0)
		r = lb_strv_push(&a, e.data);
	for (size_t i = 0; r == 0 && args[i]; i++)
		r = lb_strv_push(&a, args[i]);
	lb_buf_free(&e);
	lb_buf out = {0};
	int st = 0;
	if (r == 0)
		r = lb_capture(a.v, 65536, true, &out, &st);
	lb_strv_free(&a);
	if (r == 0) {
		one_line(out.data, said, saidlen);
		r = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	lb_buf_free(&out);
	return r;
}

/* --install-remote: this very binary into the run directory there, checked to run there. */
static int install_labbox(ssh_state *d, char *err, size_t errlen)
{
	char self[PATH_MAX];
	if (!realpath("/proc/self/exe", self)) {
		snprintf(err, errlen, "--install-remote: cannot find this labbox binary: %s",
			 strerror(errno));
		return -errno;
	}
	char dst[PATH_MAX + 300], said[400];
	snprintf(dst, sizeof dst, "%s:%s/labbox", d->host, d->dir);
	const char *args[] = {"-p", "--", self, dst, NULL};
	int st = rsync_run(d, args, said, sizeof said);
	if (st != 0) {
		snprintf(err, errlen, "--install-remote: cannot copy %s to the ssh host '%s': %s", self,
			 d->host, st < 0 ? strerror(-st) : said);
		return -EIO;
	}
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/labbox", d->dir);
	lb_buf cmd = {0}, out = {0};
	int r = sh_quote(&cmd, path);
	if (r == 0)
		r = lb_buf_puts(&cmd, " --version");
	st = r == 0 ? remote_capture(d, cmd.data, true, 4096, &out) : r;
	lb_buf_free(&cmd);
	if (st != 0 || !out.data || strncmp(out.data, "labbox ", 7) != 0) {
		char line[300];
		one_line(out.data, line, sizeof line);
		snprintf(err, errlen,
			 "--install-remote: this labbox binary does not run on the ssh host '%s' "
			 "(`%s --version` said: %s); install a labbox built for it there",
			 d->host, path, line);
		lb_buf_free(&out);
		return -ENOEXEC;
	}
	free(d->labbox);
	d->labbox = strdup(path);
	snprintf(d->labbox_version, sizeof d->labbox_version, "%s", out.data + 7);
	d->installed = true;
	lb_buf_free(&out);
	return d->labbox ? 0 : -ENOMEM;
}

static const char *json_str(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

static json_object *json_arr(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array)
		       ? v
		       : NULL;
}

static int64_t json_i64(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : 0;
}

/* The remote labbox's command: the local flags that shape the sandbox, as given, so the run
 * there gets what the user asked for here. That includes the policy and the runtime gate's
 * mode: the remote gate refuses at run time what this one would have (under --policy
 * permissive it would only record), and the remote check, a second one over the same files,
 * is never weaker than the one here. labbox.yaml's mode: and host: name this backend; the
 * remote labbox runs locally there. */
static int build_labbox_cmd(ssh_state *d, const lb_backend_job *job)
{
	lb_strv *c = &d->cmd;
	json_object *sb = d->sandbox, *v;
	int r = 0;
	r |= lb_strv_push(c, d->labbox);
	r |= lb_strv_push(c, "run");
	r |= lb_strv_push(c, "--json");
	r |= lb_strv_push(c, "--mode");
	r |= lb_strv_push(c, "local");
	r |= lb_strv_pushf(c, "--policy=%s", job->gate_policy ? job->gate_policy : "standard");
	if (job->trust_project)
		r |= lb_strv_push(c, "--trust-project");
	if (job->gate_mode != LB_GATE_DEFAULT)
		r |= lb_strv_pushf(c, "--runtime-gate=%s",
				   lb_gate_mode_name((lb_gate_mode)job->gate_mode));
	r |= lb_strv_push(c, "--runs-dir");
	r |= lb_strv_pushf(c, "%s/runs", d->dir);
	r |= lb_strv_push(c, "--entry");
	r |= lb_strv_push(c, job->argv[1]);
	r |= lb_strv_pushf(c, "--grace=%g", d->grace);
	if (d->python_asked) {
		r |= lb_strv_push(c, "--python");
		r |= lb_strv_push(c, d->python_asked);
	}
	if (job->budget > 0)
		r |= lb_strv_pushf(c, "--budget=%g", job->budget);
	/* A disk limit the user set; the default (half the free space) is the remote disk's. */
	if (sb && json_object_object_get_ex(sb, "disk_limit_bytes", &v) && v)
		r |= lb_strv_pushf(c, "--disk-limit=%lld", (long long)json_object_get_int64(v));
	const char *net = json_str(sb, "network");
	if (net)
		r |= lb_strv_pushf(c, "--network=%s", net);
	if (json_i64(sb, "memory_bytes") > 0)
		r |= lb_strv_pushf(c, "--memory=%lld", (long long)json_i64(sb, "memory_bytes"));
	if (sb && json_object_object_get_ex(sb, "cpus", &v) && v)
		r |= lb_strv_pushf(c, "--cpus=%g", json_object_get_double(v));
	if (json_i64(sb, "pids_limit") > 0)
		r |= lb_strv_pushf(c, "--pids-limit=%lld", (long long)json_i64(sb, "pids_limit"));
	if (json_i64(sb, "shm_size_bytes") > 0)
		r |= lb_strv_pushf(c, "--shm-size=%lld", (long long)json_i64(sb, "shm_size_bytes"));
	const char *gpus = json_str(sb, "gpus");
	if (gpus)
		r |= lb_strv_pushf(c, "--gpus=%s", gpus);
	static const char *const lists[][2] = {{"env", "-e"},
					       {"secret_env", "--secret-env"},
					       {"volumes", "-v"},
					       {"tmpfs", "--tmpfs"},
					       {"hide", "--hide"},
					       {"allow_degraded", "--allow-degraded"}};
	for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
		json_object *a = json_arr(sb, lists[k][0]);
		for (size_t i = 0; a && i < json_object_array_length(a); i++) {
			const char *s = json_object_get_string(json_object_array_get_idx(a, i));
			/* isolation is this backend's own: the remote sandbox is never weakened by it. */
			if (strcmp(lists[k][0], "allow_degraded") == 0 && strcmp(s, "isolation") == 0)
				continue;
			r |= lb_strv_push(c, lists[k][1]);
			r |= lb_strv_push(c, s);
		}
	}
	r |= lb_strv_pushf(c, "%s/exp", d->dir);
	r |= lb_strv_push(c, "--");
	for (size_t i = 2; job->argv[i]; i++)
		r |= lb_strv_push(c, job->argv[i]);
	return r ? -ENOMEM : 0;
}

/* What cannot hold without a sandbox there is refused rather than silently dropped. */
static int degraded_refusals(ssh_state *d, char *err, size_t errlen)
{
	json_object *sb = d->sandbox, *v;
	const char *what = NULL;
	if (json_i64(sb, "memory_bytes") > 0)
		what = "--memory";
	else if (sb && json_object_object_get_ex(sb, "cpus", &v) && v)
		what = "--cpus";
	else if (json_i64(sb, "pids_limit") > 0)
		what = "--pids-limit";
	else if (json_arr(sb, "volumes") && json_object_array_length(json_arr(sb, "volumes")))
		what = "-v";
	else if (json_arr(sb, "tmpfs") && json_object_array_length(json_arr(sb, "tmpfs")))
		what = "--tmpfs";
	else if (json_arr(sb, "hide") && json_object_array_length(json_arr(sb, "hide")))
		what = "--hide";
	else if (json_i64(sb, "shm_size_bytes") > 0)
		what = "--shm-size";
	if (!what)
		return 0;
	snprintf(err, errlen,
		 "%s cannot be enforced on the ssh host '%s' without a labbox there (the degraded "
		 "run is a plain `timeout python3`): drop it, or install labbox there "
		 "(--install-remote)", what, d->host);
	return -EINVAL;
}

static int build_plain_cmd(ssh_state *d, const lb_backend_job *job)
{
	lb_strv *c = &d->cmd;
	int r = 0;
	if (job->budget > 0) {
		/* The seed's recipe, with the grace before SIGKILL that labbox gives everywhere. */
		r |= lb_strv_push(c, "timeout");
		r |= lb_strv_pushf(c, "--kill-after=%g", d->grace > 0 ? d->grace : 1);
		r |= lb_strv_pushf(c, "%g", job->budget);
	}
	r |= lb_strv_push(c, d->python_asked ? d->python_asked : d->python[0] ? d->python : "python3");
	for (size_t i = 1; job->argv[i]; i++)
		r |= lb_strv_push(c, job->argv[i]);
	return r ? -ENOMEM : 0;
}

/* environment.txt of a degraded run: the remote python3's version and distributions, listed
 * as the local backend lists them. */
static int remote_environment(ssh_state *d, const lb_backend_job *job, char *err, size_t errlen)
{
	lb_buf cmd = {0}, out = {0};
	int r = sh_quote(&cmd, d->python);
	if (r == 0)
		r = lb_buf_puts(&cmd, " -I -c ");
	if (r == 0)
		r = sh_quote(&cmd, lb_python_freeze_source());
	int st = r == 0 ? remote_capture(d, cmd.data, false, 4 << 20, &out) : r;
	lb_buf_free(&cmd);
	lb_buf env = {0};
	r = lb_buf_printf(&env, "Python %s\n", d->python_version);
	if (r == 0 && st == 0)
		r = lb_buf_printf(&env, "# pip freeze (installed distributions of %s on %s)\n%s\n",
				  d->python, d->host, out.data ? out.data : "");
	else if (r == 0)
		r = lb_buf_printf(&env, "# pip freeze: could not list the distributions of %s on %s\n",
				  d->python, d->host);
	lb_buf_free(&out);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/environment.txt", job->run_dir);
	if (r == 0)
		r = lb_write_file_atomic_mode(path, env.data, env.len, 0600);
	lb_buf_free(&env);
	if (r < 0)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-r));
	return r;
}

static void ssh_owner(lb_backend *b, uid_t *uid, gid_t *gid)
{
	/* Nothing runs here: the staged files stay the user's own. */
	(void)b;
	*uid = getuid();
	*gid = getgid();
}

static int ssh_prepare(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	ssh_state *d = state_of(b);
	if (lb_find_executable("ssh", &d->ssh) < 0) {
		snprintf(err, errlen, "the ssh client is not installed (no 'ssh' on PATH; Debian's "
			 "openssh-client has it)");
		return -ENOENT;
	}
	if (lb_find_executable("rsync", &d->rsync) < 0) {
		snprintf(err, errlen, "rsync is not installed (no 'rsync' on PATH); mode ssh copies "
			 "the experiment with it, here and on the host");
		return -ENOENT;
	}
	int r = start_master(d, err, errlen);
	if (r < 0)
		return r;
	char lb_error[300] = "";
	if ((r = remote_setup(d, job->id, lb_error, sizeof lb_error, err, errlen)) < 0)
		return r;
	if (!d->python[0]) {
		/* The experiment is Python, and so is the remote supervisor. */
		snprintf(err, errlen, "the ssh host '%s' has no python3 on its PATH (`ssh %s command "
			 "-v python3` shows it)", d->host, d->host);
		return -ENOENT;
	}
	if ((r = start_guardian(d)) < 0) {
		snprintf(err, errlen, "cannot watch the run directory on the ssh host '%s': %s",
			 d->host, strerror(-r));
		return r;
	}
	char src[PATH_MAX + 2], dst[PATH_MAX + 300], said[400];
	snprintf(src, sizeof src, "%s/", job->exp_dir);
	snprintf(dst, sizeof dst, "%s:%s/exp/", d->host, d->dir);
	/* No times: the copy coming back is compared by content, so what the run did not
	 * change keeps its local identity (results files left by earlier runs stay stale). */
	const char *up[] = {"-rl", "--chmod=u+rwX", "--", src, dst, NULL};
	int st = rsync_run(d, up, said, sizeof said);
	if (st != 0) {
		snprintf(err, errlen, "cannot copy the experiment to the ssh host '%s': %s", d->host,
			 st < 0 ? strerror(-st) : said);
		return -EIO;
	}
	if (d->install) {
		if ((r = install_labbox(d, err, errlen)) < 0)
			return r;
		lb_error[0] = '\0'; /* whatever the PATH had, this one runs */
	}
	if (!d->labbox || lb_error[0]) {
		if (!d->degraded_ok) {
			if (lb_error[0])
				snprintf(err, errlen,
					 "the labbox on the ssh host '%s' (%s) does not run: %s; check "
					 "it with `ssh %s %s --version`, or copy this one there with "
					 "--install-remote",
					 d->host, d->labbox, lb_error, d->host, d->labbox);
			else
				snprintf(err, errlen,
					 "no labbox on the ssh host '%s' (%s): the experiment would run "
					 "there without a sandbox; install labbox there (on its PATH, or "
					 "name it with --remote-labbox PATH, or copy this one with "
					 "--install-remote; `ssh %s labbox --version` checks it), or accept "
					 "the seed's plain `timeout python3 main.py` with --allow-degraded "
					 "isolation",
					 d->host, d->labbox_asked ? d->labbox_asked : "not on its PATH",
					 d->host);
			return -ENOENT;
		}
		free(d->labbox);
		d->labbox = NULL;
		d->degraded = true;
		if ((r = degraded_refusals(d, err, errlen)) < 0)
			return r;
		if ((r = remote_environment(d, job, err, errlen)) < 0)
			return r;
		return build_plain_cmd(d, job);
	}
	snprintf(d->gate_policy, sizeof d->gate_policy, "%s",
		 job->gate_policy ? job->gate_policy : "standard");
	d->gate_mode = job->gate_mode;
	return build_labbox_cmd(d, job);
}

static void setup_failed(lb_sandbox_result *res, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void setup_failed(lb_sandbox_result *res, const char *step, const char *fmt, ...)
{
	res->outcome = LB_SB_SETUP_FAILED;
	res->exit_code = -1;
	snprintf(res->setup_step, sizeof res->setup_step, "%s", step);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->setup_error, sizeof res->setup_error, fmt, ap);
	va_end(ap);
}

/* The first line to the supervisor: the environment the run adds, and the values of
 * --secret-env, which so travel inside the encrypted channel and on no command line. */
static char *env_line(ssh_state *d, const lb_backend_job *job)
{
	json_object *o = json_object_new_object(), *env = json_object_new_object();
	for (size_t i = 0; d->degraded && i < job->nenv; i++) {
		const char *eq = strchr(job->env[i], '=');
		if (!eq)
			continue;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(eq - job->env[i]), job->env[i]);
		json_object_object_add(env, name, json_object_new_string(eq + 1));
	}
	json_object *sec = json_arr(d->sandbox, "secret_env");
	for (size_t i = 0; sec && i < json_object_array_length(sec); i++) {
		const char *n = json_object_get_string(json_object_array_get_idx(sec, i));
		const char *v = getenv(n);
		if (v)
			json_object_object_add(env, n, json_object_new_string(v));
	}
	if (d->degraded) {
		json_object *e = json_arr(d->sandbox, "env");
		for (size_t i = 0; e && i < json_object_array_length(e); i++) {
			const char *kv = json_object_get_string(json_object_array_get_idx(e, i));
			const char *eq = strchr(kv, '=');
			char name[256];
			if (!eq)
				continue;
			snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
			json_object_object_add(env, name, json_object_new_string(eq + 1));
		}
		const char *gpus = json_str(d->sandbox, "gpus");
		if (gpus && strcmp(gpus, "all") != 0)
			json_object_object_add(env, "CUDA_VISIBLE_DEVICES",
					       json_object_new_string(strcmp(gpus, "none") == 0 ? "" : gpus));
	}
	json_object_object_add(o, "env", env);
	char *s = NULL;
	if (asprintf(&s, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0)
		s = NULL;
	json_object_put(o);
	return s;
}

static int supervisor_command(ssh_state *d, lb_buf *cmd)
{
	lb_strv a = {0};
	char kill_after[32], silence[16];
	snprintf(kill_after, sizeof kill_after, "%g",
		 d->degraded ? (d->grace > 0 ? d->grace : 1) : d->grace + REMOTE_MARGIN_S);
	snprintf(silence, sizeof silence, "%d", SILENCE_S);
	int r = 0;
	r |= lb_strv_push(&a, d->python);
	r |= lb_strv_push(&a, "-I");
	r |= lb_strv_push(&a, "-c");
	r |= lb_strv_push(&a, supervisor_src);
	r |= lb_strv_push(&a, d->degraded ? "plain" : "labbox");
	r |= lb_strv_push(&a, d->dir);
	r |= lb_strv_push(&a, kill_after);
	r |= lb_strv_push(&a, silence);
	for (size_t i = 0; i < d->cmd.n; i++)
		r |= lb_strv_push(&a, d->cmd.v[i]);
	if (r == 0)
		r = lb_buf_puts(cmd, "exec ");
	if (r == 0)
		r = sh_join(cmd, a.v);
	lb_strv_free(&a);
	return r ? -ENOMEM : 0;
}

static void fill_degraded_isolation(ssh_state *d, lb_sandbox_result *res)
{
	lb_isolation *iso = &res->isolation;
	memset(iso, 0, sizeof *iso);
	iso->network = "host";
	iso->uid = (uid_t)-1;
	iso->gid = (gid_t)-1;
	iso->filesystem = "not isolated by labbox";
	json_object *o = json_object_new_object();
	char summary[600];
	snprintf(summary, sizeof summary,
		 "not isolated by labbox: no labbox on the ssh host '%s', and --allow-degraded "
		 "isolation accepted the seed's plain `timeout BUDGET python3 main.py` there, as the "
		 "ssh user %s with everything that user can read, write and reach", d->host,
		 d->user[0] ? d->user : "?");
	json_object_object_add(o, "isolated_by", json_object_new_string("nothing"));
	json_object_object_add(o, "summary", json_object_new_string(summary));
	json_object *ns = json_object_new_object();
	static const char *const names[] = {"user", "pid", "mount", "network", "ipc", "uts"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		json_object_object_add(ns, names[i], json_object_new_boolean(false));
	json_object_object_add(o, "namespaces", ns);
	json_object_object_add(o, "network", json_object_new_string("host"));
	json_object_object_add(o, "sockets", json_object_new_string("all families"));
	json_object_object_add(o, "filesystem",
			       json_object_new_string("the ssh user's own view of the remote host"));
	json_object_object_add(o, "seccomp", json_object_new_boolean(false));
	json_object_object_add(o, "no_new_privs", json_object_new_boolean(false));
	json_object_object_add(o, "capabilities", json_object_new_string("inherited"));
	json_object_object_add(o, "gpus", NULL);
	json_object_object_add(o, "user", d->user[0] ? json_object_new_string(d->user) : NULL);
	json_object_object_add(o, "cgroup", NULL);
	json_object_object_add(o, "memory_enforced_by", NULL);
	json_object_object_add(o, "pids_enforced_by", NULL);
	json_object_object_add(o, "cpus_enforced_by", NULL);
	json_object_object_add(o, "time_enforced_by",
			       json_object_new_string("timeout(1) there, and labbox here"));
	json_object_put(d->iso);
	d->iso = o;
}

static bool json_true(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v && json_object_get_boolean(v);
}

/* The remote labbox's verdict into the result the pipeline reads. */
static void from_remote_doc(ssh_state *d, json_object *doc, lb_sandbox_result *res)
{
	json_object *v, *rs;
	const char *status = json_str(doc, "status");
	if (json_object_object_get_ex(doc, "resources", &rs) && rs) {
		if (json_object_object_get_ex(rs, "wall_s", &v) && v)
			res->wall_s = json_object_get_double(v);
		if (json_object_object_get_ex(rs, "cpu_user_s", &v) && v)
			res->cpu_user_s = json_object_get_double(v);
		if (json_object_object_get_ex(rs, "cpu_sys_s", &v) && v)
			res->cpu_sys_s = json_object_get_double(v);
		res->peak_rss_bytes = (uint64_t)json_i64(rs, "peak_rss_bytes");
		res->peak_memory_bytes = (uint64_t)json_i64(rs, "peak_memory_bytes");
		res->max_rss_bytes = (uint64_t)json_i64(rs, "max_rss_bytes");
		if (json_str(rs, "peak_rss_source"))
			res->peak_source = json_str(rs, "peak_rss_source");
		if (json_str(rs, "peak_memory_source"))
			res->peak_memory_source = json_str(rs, "peak_memory_source");
	}
	res->oom_killed = json_true(doc, "oom_killed");
	res->oom_counted = json_true(doc, "oom_counted");
	json_object *iso;
	if (json_object_object_get_ex(doc, "isolation", &iso) && iso) {
		res->isolation.network = json_str(iso, "network");
		res->isolation.seccomp = json_true(iso, "seccomp");
		res->isolation.no_new_privs = json_true(iso, "no_new_privs");
		res->isolation.cgroup = json_str(iso, "cgroup");
		res->isolation.memory_enforced_by = json_str(iso, "memory_enforced_by");
		res->isolation.filesystem = json_str(iso, "filesystem");
	}
	snprintf(d->remote_run_dir, sizeof d->remote_run_dir, "%s",
		 json_str(doc, "run_dir") ? json_str(doc, "run_dir") : "");
	if (res->timed_out || res->interrupted)
		return; /* labbox here ended it: its own verdict */
	json_object *sig = NULL, *code = NULL;
	const char *schema = json_str(doc, "schema");
	/* An error document (labbox.error/1: its exit_code is labbox's own) or a run that never
	 * started there is a setup failure, named by what the remote labbox said. */
	bool never_ran = !schema || strcmp(schema, "labbox.run/1") != 0 ||
			 (status && (strcmp(status, "infra_error") == 0 || strcmp(status, "rejected") == 0));
	if (!never_ran) {
		json_object_object_get_ex(doc, "signal", &sig);
		json_object_object_get_ex(doc, "exit_code", &code);
	}
	if (never_ran) {
		/* named below */
	} else if (json_true(doc, "timed_out")) {
		res->timed_out = true;
		res->outcome = LB_SB_TIMEOUT;
	} else if (status && strcmp(status, "interrupted") == 0) {
		res->interrupted = true;
		res->interrupt_signal = SIGTERM;
		res->outcome = LB_SB_INTERRUPTED;
	} else if (status && strcmp(status, "disk_limit") == 0) {
		res->disk_limited = true;
		json_object *f;
		if (json_object_object_get_ex(doc, "failure", &f) && json_str(f, "summary"))
			snprintf(res->disk_detail, sizeof res->disk_detail, "on %s: %s", d->host,
				 json_str(f, "summary"));
		res->outcome = LB_SB_DISK_LIMIT;
	} else if (sig) {
		res->outcome = LB_SB_SIGNALED;
		res->term_signal = json_object_get_int(sig);
	} else if (code) {
		res->outcome = LB_SB_EXITED;
		res->exit_code = json_object_get_int(code);
	} else {
		never_ran = true;
	}
	if (never_ran) {
		json_object *e = NULL;
		if (!json_object_object_get_ex(doc, "infra_error", &e) || !e)
			json_object_object_get_ex(doc, "error", &e);
		const char *msg = json_str(e, "message");
		json_object *errs;
		if (!msg && json_object_object_get_ex(doc, "errors", &errs) &&
		    json_object_is_type(errs, json_type_array) && json_object_array_length(errs))
			msg = json_object_get_string(json_object_array_get_idx(errs, 0));
		setup_failed(res, "remote labbox", "the labbox on the ssh host '%s' did not run the "
			     "experiment (status %s): %s", d->host, status ? status : "none",
			     msg ? msg : json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	}
}

static int ssh_run(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res)
{
	ssh_state *d = state_of(b);
	res->exit_code = -1;
	res->peak_source = "unknown";
	res->peak_memory_source = d->degraded ? "not measured (ssh backend without a remote labbox)"
					      : "not reported by the remote labbox";
	if (d->degraded)
		fill_degraded_isolation(d, res);
	lb_buf cmd = {0};
	lb_strv a = {0};
	LB_AUTOFREE char *first = env_line(d, job);
	int r = supervisor_command(d, &cmd);
	if (r == 0)
		r = remote_argv(d, cmd.data, &a);
	lb_buf_free(&cmd);
	if (r < 0 || !first) {
		lb_strv_free(&a);
		return r < 0 ? r : -ENOMEM;
	}
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	LB_AUTOCLOSE int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* A signal that came before the block was caught by labbox's handler: read here too. */
	lb_interrupt_rearm();
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
	if (sfd < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(er, O_CLOEXEC) < 0) {
		r = -errno;
		for (int i = 0; i < 2; i++) {
			if (in[i] >= 0)
				close(in[i]);
			if (out[i] >= 0)
				close(out[i]);
			if (er[i] >= 0)
				close(er[i]);
		}
		lb_strv_free(&a);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	double t0 = lb_time_monotonic();
	pid_t pid = fork();
	if (pid == 0) {
		child_dies_with_labbox();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(er[1], 2);
		execv(a.v[0], a.v);
		_exit(127);
	}
	lb_strv_free(&a);
	close(in[0]);
	close(out[1]);
	close(er[1]);
	if (pid < 0) {
		r = -errno;
		close(in[1]);
		close(out[0]);
		close(er[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	int wfd = in[1];
	/* The first line whole (the supervisor waits for it), then heartbeats that never block
	 * the loop. */
	(void)!lb_write_all(wfd, first, strlen(first));
	fcntl(wfd, F_SETFL, O_NONBLOCK);
	lb_buf errb = {0};
	bool stopping = false, out_open = true, err_open = true, killed = false;
	double stop_at = 0, last_beat = t0;
	char buf[65536];
	while (out_open || err_open) {
		double now = lb_time_monotonic();
		if (!stopping && job->budget > 0 && now - t0 >= job->budget) {
			res->timed_out = true;
			stopping = true;
		}
		if (stopping && stop_at == 0) {
			stop_at = now;
			if (wfd >= 0)
				(void)!write(wfd, "x", 1);
		}
		if (!stopping && wfd >= 0 && now - last_beat >= HEARTBEAT_S) {
			last_beat = now;
			(void)!write(wfd, ".", 1);
		}
		if (stopping && !killed && now - stop_at > d->grace + REMOTE_MARGIN_S + SSH_MARGIN_S) {
			/* The remote side does not end: closing the channel makes its supervisor
			 * kill what is left there. */
			killed = true;
			kill(pid, SIGKILL);
		}
		double wait = HEARTBEAT_S;
		if (!stopping && job->budget > 0 && t0 + job->budget - now < wait)
			wait = t0 + job->budget - now;
		struct pollfd pf[3] = {{.fd = out_open ? out[0] : -1, .events = POLLIN},
				       {.fd = err_open ? er[0] : -1, .events = POLLIN},
				       {.fd = sfd, .events = POLLIN}};
		int n = poll(pf, 3, (int)(wait * 1000) + 1);
		if (n < 0 && errno != EINTR)
			break;
		if (pf[2].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && !stopping) {
				res->interrupted = true;
				res->interrupt_signal = (int)si.ssi_signo;
				stopping = true;
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(out[0], buf, sizeof buf);
			if (k > 0 && job->output)
				job->output(job->output_ctx, LB_STREAM_STDOUT, buf, (size_t)k);
			else if (k == 0)
				out_open = false;
		}
		if (pf[1].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(er[0], buf, sizeof buf);
			if (k > 0) {
				/* Keep the tail: the END line comes last. */
				if (errb.len + (size_t)k > STDERR_MAX && errb.len > STDERR_MAX / 2) {
					size_t drop = errb.len - STDERR_MAX / 2;
					memmove(errb.data, errb.data + drop, errb.len - drop + 1);
					errb.len -= drop;
				}
				lb_buf_append(&errb, buf, (size_t)k);
			} else if (k == 0) {
				err_open = false;
			}
		}
	}
	close(out[0]);
	close(er[0]);
	if (wfd >= 0)
		close(wfd);
	int st = 0;
	waitpid(pid, &st, 0);
	res->wall_s = lb_time_monotonic() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);

	/* The supervisor's END line. */
	const char *mark = NULL;
	for (const char *p = errb.data; p && (p = strstr(p, END_MARK)); p += strlen(END_MARK))
		mark = p;
	json_object *end = mark ? json_tokener_parse(mark + strlen(END_MARK)) : NULL;
	if (mark)
		errb.data[mark - errb.data] = '\0';
	if (!end) {
		char said[400];
		one_line(errb.data, said, sizeof said);
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		setup_failed(res, "supervise",
			     "the connection to the ssh host '%s' was lost during the run (ssh %s %d: "
			     "%s); the run there was ended and its directory removed; `ssh -v %s "
			     "true` shows the connection",
			     d->host, code >= 0 ? "exited" : "was killed by signal",
			     code >= 0 ? code : WTERMSIG(st), said, d->host);
		lb_buf_free(&errb);
		return 0;
	}
	lb_buf_free(&errb);
	json_object_put(d->end);
	d->end = end;
	json_object *v;
	if (json_object_object_get_ex(end, "doc", &v) && v && json_object_is_type(v, json_type_object))
		d->doc = v;
	if (res->timed_out)
		res->outcome = LB_SB_TIMEOUT;
	else if (res->interrupted)
		res->outcome = LB_SB_INTERRUPTED;
	if (!d->degraded) {
		if (!d->doc) {
			const char *so = json_str(end, "stdout");
			if (!res->timed_out && !res->interrupted)
				setup_failed(res, "remote labbox",
					     "the labbox on the ssh host '%s' gave no verdict (exit "
					     "%lld): %s", d->host, (long long)json_i64(end, "exit"),
					     so && *so ? so : "no output");
			return 0;
		}
		from_remote_doc(d, d->doc, res);
		return 0;
	}
	if (res->timed_out || res->interrupted)
		return 0;
	json_object *sig = NULL;
	if (json_object_object_get_ex(end, "signal", &sig) && sig) {
		res->outcome = LB_SB_SIGNALED;
		res->term_signal = json_object_get_int(sig);
		return 0;
	}
	int code = (int)json_i64(end, "exit");
	if (job->budget > 0 && code == 124) {
		/* timeout(1)'s own verdict: the budget ended it there (its 137 after --kill-after
		 * cannot be told from any SIGKILL; labbox's own budget here has fired by then). */
		res->timed_out = true;
		res->outcome = LB_SB_TIMEOUT;
	} else if (code > 128 && code < 128 + 65) {
		res->outcome = LB_SB_SIGNALED;
		res->term_signal = code - 128;
	} else {
		res->outcome = LB_SB_EXITED;
		res->exit_code = code;
	}
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	int r = lb_read_file_at(AT_FDCWD, from, (size_t)64 << 20, &data, &len);
	return r < 0 ? r : lb_write_file_atomic_mode(to, data ? data : "", len, 0600);
}

static int ssh_fetch(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	ssh_state *d = state_of(b);
	const char *rdir = d->degraded ? d->dir : d->remote_run_dir;
	if (!rdir[0] || !plain_path(rdir))
		return 0; /* nothing ran there, or the verdict named no run directory */
	char rec[PATH_MAX + 16];
	snprintf(rec, sizeof rec, "%s/remote", job->run_dir);
	if (!d->degraded && mkdir(rec, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", rec, strerror(errno));
		return -errno;
	}
	/* One rsync (a round trip and an rsync at each end less than two): exp/ (job->exp_dir
	 * is RUN_DIR/exp) and the remote labbox's own records, which its supervisor linked
	 * into DIR/fetch/remote/, both relative (-R) to the run directory here. By content,
	 * without times: what the run did not change is left alone here. Links that would lead
	 * out of exp/ are not brought back. */
	char src[PATH_MAX + 300], s2[PATH_MAX + 64], dst[PATH_MAX + 2], said[400];
	snprintf(src, sizeof src, "%s:%s/./exp/", d->host, rdir);
	snprintf(s2, sizeof s2, ":%s/fetch/./remote/", d->dir);
	snprintf(dst, sizeof dst, "%s/", job->run_dir);
	const char *down[] = {"-rlR", "--checksum", "--safe-links", "--chmod=u+rwX", "--", src,
			      s2, dst, NULL};
	if (d->degraded) { /* no remote labbox, no records */
		down[6] = dst;
		down[7] = NULL;
	}
	int st = rsync_run(d, down, said, sizeof said);
	if (st != 0 && st != 23 && st != 24) {
		snprintf(err, errlen, "cannot copy the run's files back from the ssh host '%s': %s",
			 d->host, st < 0 ? strerror(-st) : said);
		return -EIO;
	}
	if (d->degraded)
		return 0;
	/* remote/result.json, manifest.json, run.log, environment.txt: labbox's user's only. */
	chmod(rec, 0700);
	static const char *const recs[] = {"result.json", "manifest.json", "run.log", "environment.txt"};
	for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
		char p[PATH_MAX + 40];
		snprintf(p, sizeof p, "%s/%s", rec, recs[i]);
		chmod(p, 0600);
	}
	char from[PATH_MAX + 40], to[PATH_MAX + 32];
	snprintf(from, sizeof from, "%s/environment.txt", rec);
	snprintf(to, sizeof to, "%s/environment.txt", job->run_dir);
	int r = copy_file(from, to);
	if (r < 0) {
		snprintf(err, errlen, "the remote run left no environment.txt to bring back: %s",
			 strerror(-r));
		return r;
	}
	return 0;
}

static void stop_master(ssh_state *d)
{
	if (d->master > 0) {
		/* The master is labbox's own child, its channels all closed by now: a signal ends
		 * it (ssh closes the connection and removes its socket on SIGTERM) without the
		 * start-up of another ssh for `-O exit`. */
		kill(d->master, SIGTERM);
		double t0 = lb_time_monotonic();
		while (waitpid(d->master, NULL, WNOHANG) == 0) {
			if (lb_time_monotonic() - t0 > 5) {
				kill(d->master, SIGKILL);
				waitpid(d->master, NULL, 0);
				break;
			}
			usleep(5000);
		}
		d->master = 0;
	}
	if (d->ctl_dir[0]) {
		char p[128];
		snprintf(p, sizeof p, "%s/master.err", d->ctl_dir);
		unlink(p);
		unlink(d->ctl);
		rmdir(d->ctl_dir);
		d->ctl_dir[0] = '\0';
	}
}

static void ssh_cleanup(lb_backend *b)
{
	ssh_state *d = state_of(b);
	/* Nothing of the run stays there: the copy, the remote labbox's records, an installed
	 * labbox. The guardian removes it; without one, rm does. */
	bool guarded = d->guard > 0;
	stop_guardian(d);
	if (!guarded && d->dir[0] && d->master > 0) {
		lb_buf cmd = {0}, o = {0};
		if (lb_buf_puts(&cmd, "rm -rf -- ") == 0 && sh_quote(&cmd, d->dir) == 0)
			remote_capture(d, cmd.data, true, 4096, &o);
		lb_buf_free(&cmd);
		lb_buf_free(&o);
	}
	stop_master(d);
}

static struct json_object *ssh_describe(lb_backend *b)
{
	ssh_state *d = state_of(b);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string("ssh"));
	json_object_object_add(o, "engine", json_object_new_string(
						    d->degraded ? "timeout(1) and python3 (no sandbox)"
								: "labbox sandbox on the remote host"));
	json_object_object_add(o, "version", d->labbox_version[0] && !d->degraded
						     ? json_object_new_string(d->labbox_version)
						     : NULL);
	json_object_object_add(o, "host", json_object_new_string(d->host));
	json_object_object_add(o, "isolated_by",
			       json_object_new_string(d->degraded ? "nothing (not isolated by labbox)"
								  : "labbox (the remote host's)"));
	json_object_object_add(o, "remote_hostname", d->hostname[0] ? json_object_new_string(d->hostname) : NULL);
	json_object_object_add(o, "remote_user", d->user[0] ? json_object_new_string(d->user) : NULL);
	json_object_object_add(o, "remote_labbox", d->labbox ? json_object_new_string(d->labbox) : NULL);
	json_object_object_add(o, "python_asked",
			       d->python_asked ? json_object_new_string(d->python_asked) : NULL);
	json_object_object_add(o, "remote_labbox_asked",
			       d->labbox_asked ? json_object_new_string(d->labbox_asked) : NULL);
	json_object_object_add(o, "installed_by_labbox", json_object_new_boolean(d->installed));
	json_object_object_add(o, "install_remote", json_object_new_boolean(d->install));
	json_object_object_add(o, "remote_dir", d->dir[0] ? json_object_new_string(d->dir) : NULL);
	json_object_object_add(o, "remote_run_dir",
			       d->remote_run_dir[0] ? json_object_new_string(d->remote_run_dir) : NULL);
	json_object_object_add(o, "remote_run_id", d->doc && json_str(d->doc, "id")
							   ? json_object_new_string(json_str(d->doc, "id"))
							   : NULL);
	json_object_object_add(o, "remote_status", d->doc && json_str(d->doc, "status")
							   ? json_object_new_string(json_str(d->doc, "status"))
							   : NULL);
	json_object *py = json_object_new_object();
	json_object_object_add(py, "path", d->python[0] ? json_object_new_string(d->python) : NULL);
	json_object_object_add(py, "version",
			       d->python_version[0] ? json_object_new_string(d->python_version) : NULL);
	json_object_object_add(o, "interpreter", py);
	json_object *cmd = json_object_new_array();
	for (size_t i = 0; i < d->cmd.n; i++)
		json_object_array_add(cmd, json_object_new_string(d->cmd.v[i]));
	json_object_object_add(o, "command", cmd);
	json_object_object_add(o, "stopped_by",
			       d->end && json_str(d->end, "stopped")
				       ? json_object_new_string(json_str(d->end, "stopped"))
				       : NULL);
	return o;
}

static struct json_object *ssh_isolation(lb_backend *b)
{
	ssh_state *d = state_of(b);
	json_object *iso;
	if (d->degraded && d->iso)
		return json_object_get(d->iso);
	/* The remote sandbox's block, exactly as the remote labbox reported it. */
	if (d->doc && json_object_object_get_ex(d->doc, "isolation", &iso) && iso)
		return json_object_get(iso);
	return NULL;
}

/* The remote labbox's own record, from its result.json (none when degraded: no gate ran). */
static struct json_object *ssh_gate_record(lb_backend *b)
{
	ssh_state *d = state_of(b);
	json_object *g;
	if (!d->degraded && d->doc && json_object_object_get_ex(d->doc, "runtime_gate", &g) && g)
		return json_object_get(g);
	return NULL;
}

static void ssh_free(lb_backend *b)
{
	ssh_state *d = state_of(b);
	if (!d)
		return;
	stop_guardian(d);
	stop_master(d);
	free(d->host);
	free(d->labbox_asked);
	free(d->python_asked);
	free(d->labbox);
	free(d->ssh);
	free(d->rsync);
	json_object_put(d->sandbox);
	json_object_put(d->end);
	json_object_put(d->iso);
	lb_strv_free(&d->cmd);
	free(d);
}

/* The remote labbox runs the code under its own gate, given this run's policy and mode;
 * without one nothing watches the code as it runs. */
static void ssh_gate_note(lb_backend *b, char *note, size_t n)
{
	ssh_state *d = b->state;
	const char *policy = d->gate_policy[0] ? d->gate_policy : "standard";
	lb_check_policy p = LB_CHECK_STANDARD;
	lb_check_policy_parse(policy, &p);
	lb_gate_mode mode = lb_gate_effective((lb_gate_mode)d->gate_mode, (int)p);
	if (d->degraded)
		snprintf(note, n, "not installed: no labbox on the ssh host '%s' (--allow-degraded "
			 "isolation ran plain python3 there), so nothing watches the code as it runs; "
			 "the static check ran here", d->host);
	else
		snprintf(note, n, "not installed by this labbox: the labbox on the ssh host '%s' ran "
			 "the code under its own runtime gate (policy %s, so mode %s%s); its events "
			 "are in remote/result.json's runtime_gate", d->host, policy,
			 lb_gate_mode_name(mode),
			 mode == LB_GATE_RECORD ? ": it records, refuses nothing" : "");
}

static const lb_backend_ops ssh_ops = {
	.name = "ssh",
	.owner = ssh_owner,
	.prepare = ssh_prepare,
	.run = ssh_run,
	.fetch = ssh_fetch,
	.cleanup = ssh_cleanup,
	.describe = ssh_describe,
	.free = ssh_free,
	.isolation = ssh_isolation,
	.gate_note = ssh_gate_note,
	.gate_record = ssh_gate_record,
};

/* What ssh accepts as a destination and labbox passes on safely: no option, no rsync path. */
static bool host_valid(const char *h)
{
	if (!h || !*h || h[0] == '-')
		return false;
	for (const char *p = h; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == ':' || *p == '/' || *p == '\'' || *p == '"' ||
		    *p == '\\' || (unsigned char)*p == 0x7f)
			return false;
	return true;
}

static int new_state(const lb_ssh_config *cfg, ssh_state **out)
{
	if (!host_valid(cfg->host))
		return -EINVAL;
	ssh_state *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->host = strdup(cfg->host);
	d->labbox_asked = cfg->remote_labbox ? strdup(cfg->remote_labbox) : NULL;
	d->python_asked = cfg->python ? strdup(cfg->python) : NULL;
	d->install = cfg->install_remote;
	d->degraded_ok = cfg->allow_degraded;
	d->sandbox = cfg->sandbox ? json_object_get(cfg->sandbox) : NULL;
	d->grace = cfg->grace > 0 ? cfg->grace : 0;
	d->guard_wr = -1;
	if (!d->host || (cfg->remote_labbox && !d->labbox_asked) || (cfg->python && !d->python_asked)) {
		lb_backend b = {.ops = &ssh_ops, .state = d};
		ssh_free(&b);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

int lb_backend_ssh(const lb_ssh_config *cfg, lb_backend **out)
{
	ssh_state *d = NULL;
	int r = new_state(cfg, &d);
	if (r < 0)
		return r;
	lb_backend *b = calloc(1, sizeof *b);
	if (!b) {
		lb_backend tmp = {.ops = &ssh_ops, .state = d};
		ssh_free(&tmp);
		return -ENOMEM;
	}
	b->ops = &ssh_ops;
	b->state = d;
	*out = b;
	return 0;
}

int lb_backend_ssh_probe(const lb_ssh_config *cfg, struct json_object **out)
{
	ssh_state *d = NULL;
	int r = new_state(cfg, &d);
	if (r < 0)
		return r;
	lb_backend tmp = {.ops = &ssh_ops, .state = d};
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.probe/1"));
	json_object_object_add(doc, "mode", json_object_new_string("ssh"));
	json_object_object_add(doc, "host", json_object_new_string(d->host));
	char err[1024] = "", lb_error[300] = "";
	if (lb_find_executable("ssh", &d->ssh) < 0)
		snprintf(err, sizeof err, "the ssh client is not installed (no 'ssh' on PATH)");
	else if (start_master(d, err, sizeof err) == 0)
		remote_setup(d, NULL, lb_error, sizeof lb_error, err, sizeof err);
	bool reachable = !err[0];
	json_object_object_add(doc, "reachable", json_object_new_boolean(reachable));
	json_object_object_add(doc, "error", err[0] ? json_object_new_string(err) : NULL);
	json_object *rl = NULL, *remote_probe = NULL;
	if (reachable) {
		json_object_object_add(doc, "remote_user", json_object_new_string(d->user));
		json_object_object_add(doc, "remote_hostname", json_object_new_string(d->hostname));
		json_object *py = json_object_new_object();
		json_object_object_add(py, "path", d->python[0] ? json_object_new_string(d->python) : NULL);
		json_object_object_add(py, "version", d->python_version[0]
							      ? json_object_new_string(d->python_version)
							      : NULL);
		json_object_object_add(doc, "python", py);
		rl = json_object_new_object();
		json_object_object_add(rl, "path", d->labbox ? json_object_new_string(d->labbox) : NULL);
		json_object_object_add(rl, "version", d->labbox_version[0] && !lb_error[0]
							      ? json_object_new_string(d->labbox_version)
							      : NULL);
		json_object_object_add(rl, "error", lb_error[0] ? json_object_new_string(lb_error) : NULL);
		if (d->labbox && !lb_error[0]) {
			/* The remote labbox's own probe: what isolation that host gives. */
			lb_buf cmd = {0}, o = {0};
			if (sh_quote(&cmd, d->labbox) == 0 && lb_buf_puts(&cmd, " probe --json") == 0)
				remote_capture(d, cmd.data, false, 1 << 20, &o);
			remote_probe = o.data ? json_tokener_parse(o.data) : NULL;
			lb_buf_free(&cmd);
			lb_buf_free(&o);
		}
		json_object *sbj = NULL, *w = NULL;
		bool works = remote_probe && json_object_object_get_ex(remote_probe, "sandbox", &sbj) &&
			     json_object_object_get_ex(sbj, "works", &w) && json_object_get_boolean(w);
		json_object_object_add(rl, "sandbox_works", json_object_new_boolean(works));
		json_object_object_add(rl, "probe", remote_probe);
		json_object_object_add(doc, "remote_labbox", rl);
		json_object_object_add(doc, "isolation",
				       json_object_new_string(works ? "labbox sandbox on the remote host"
							      : "none: runs there need --allow-degraded "
								"isolation, or --install-remote"));
	}
	ssh_free(&tmp);
	*out = doc;
	return 0;
}
