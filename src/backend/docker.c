/* The docker backend: the experiment runs in a container, through the engine's own client
 * (docker, or podman, which takes the same flags), so the user's DOCKER_HOST and contexts
 * keep working. labbox supervises the container as it supervises its own sandbox: it
 * enforces the budget (docker stop with the grace, then docker kill), streams the output
 * (docker start --attach) into the pipeline, and reads the outcome from docker inspect.
 * The container is always removed: by cleanup, by a guardian process when labbox dies, and
 * at the next start for a container whose labbox is gone (labels labbox.run and labbox.owner). */
#include "labbox/backend.h"
#include "labbox/util.h"

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
#include <sys/wait.h>
#include <unistd.h>

/* What a container start, docker stop and docker kill may take beyond the grace before labbox
 * stops waiting for the engine. */
#define ENGINE_MARGIN_S 15.0
#define DEFAULT_TMPFS "1g"

typedef struct strv {
	char **v;
	size_t n, cap;
} strv;

static int strv_push(strv *s, const char *x)
{
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		char **nv = realloc(s->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(x)))
		return -ENOMEM;
	s->v[++s->n] = NULL;
	return 0;
}

static int strv_pushf(strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int strv_pushf(strv *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	LB_AUTOFREE char *x = NULL;
	int n = vasprintf(&x, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : strv_push(s, x);
}

static void strv_free(strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}

typedef struct docker_state {
	char engine[16];      /* "docker" or "podman", as asked or as found */
	bool engine_asked;
	char *client;         /* the client's path */
	char *image;
	char *python;
	json_object *sandbox; /* a reference to the caller's flags */
	double grace;
	uid_t uid;
	gid_t gid;
	char server_version[128];
	char client_version[128];
	char image_id[160];
	char py_version[64];
	char cgroup[8];  /* "v1", "v2" as docker info says */
	bool seccomp;    /* the engine applies its default seccomp profile */
	bool userns;     /* the engine remaps users (userns-remap, rootless) */
	char network[16];
	char gpus[64];
	bool has_memory;
	char name[96];        /* the container's name, from the run id */
	char container[128];  /* its id once created */
	strv create;          /* the docker create command line */
	int guard_wr;         /* the guardian's pipe; -1 when there is none */
	pid_t guard_pid;
} docker_state;

static docker_state *state_of(lb_backend *b)
{
	return b->state;
}

/* Runs the client with args; out gets stdout (and stderr when merge), trimmed. Returns the
 * exit status, or a negative errno when it could not run. */
static int client_run(docker_state *d, const char *const *args, bool merge, size_t max, lb_buf *out)
{
	strv a = {0};
	int r = strv_push(&a, d->client);
	for (size_t i = 0; r == 0 && args[i]; i++)
		r = strv_push(&a, args[i]);
	int st = 0;
	if (r == 0)
		r = lb_capture(a.v, max, merge, out, &st);
	strv_free(&a);
	if (r < 0)
		return r;
	while (out->data && out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
		out->data[--out->len] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* One line of what the engine said, for an error message. */
static void one_line(const lb_buf *b, char *out, size_t n)
{
	snprintf(out, n, "%s", b->data && b->len ? b->data : "no output");
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

static const char *docker_host(void)
{
	const char *h = getenv("DOCKER_HOST");
	return h && *h ? h : NULL;
}

/* The engine's server version, or -EHOSTUNREACH with err saying what failed. */
static int engine_version(docker_state *d, const char *engine, char *err, size_t errlen)
{
	free(d->client);
	d->client = NULL;
	if (lb_find_executable(engine, &d->client) < 0) {
		snprintf(err, errlen, "the %s client is not installed (no '%s' on PATH)", engine, engine);
		return -ENOENT;
	}
	lb_buf b = {0};
	const char *args[] = {"version", "--format", "{{.Server.Version}}", NULL};
	int st = client_run(d, args, true, 4096, &b);
	if (st != 0) {
		char said[400];
		one_line(&b, said, sizeof said);
		snprintf(err, errlen,
			 "the %s engine does not answer (%s%s%s): %s; `%s info` shows what is wrong",
			 engine, docker_host() ? "DOCKER_HOST=" : "",
			 docker_host() ? docker_host() : "its default socket",
			 "", said, engine);
		lb_buf_free(&b);
		return -EHOSTUNREACH;
	}
	snprintf(d->engine, sizeof d->engine, "%s", engine);
	snprintf(d->server_version, sizeof d->server_version, "%s", b.data ? b.data : "");
	lb_buf_free(&b);
	const char *cargs[] = {"version", "--format", "{{.Client.Version}}", NULL};
	if (client_run(d, cargs, false, 4096, &b) == 0 && b.data)
		snprintf(d->client_version, sizeof d->client_version, "%s", b.data);
	lb_buf_free(&b);
	/* What the engine applies beyond our flags: its seccomp profile, user remapping, the
	 * cgroup version its limits go through. */
	const char *iargs[] = {"info", "--format", "{{.SecurityOptions}} cgroup={{.CgroupVersion}}", NULL};
	if (client_run(d, iargs, false, 4096, &b) == 0 && b.data) {
		d->seccomp = strstr(b.data, "seccomp") != NULL;
		d->userns = strstr(b.data, "userns") || strstr(b.data, "rootless");
		const char *cg = strstr(b.data, "cgroup=");
		snprintf(d->cgroup, sizeof d->cgroup, "v%s", cg && cg[7] && cg[7] != '<' ? cg + 7 : "1");
	}
	lb_buf_free(&b);
	return 0;
}

static int pick_engine(docker_state *d, char *err, size_t errlen)
{
	if (d->engine_asked)
		return engine_version(d, d->engine, err, errlen);
	/* The first that answers; when none does, docker's reason is the one named. */
	char first[512] = "";
	if (engine_version(d, "docker", first, sizeof first) == 0)
		return 0;
	char second[512];
	if (engine_version(d, "podman", second, sizeof second) == 0)
		return 0;
	snprintf(err, errlen, "%s", first);
	return -EHOSTUNREACH;
}

/* /proc/PID/stat's start time: with the pid it names one process for good, so a reused pid
 * does not pass for the labbox that started a container. */
static unsigned long long start_time_of(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long t = 0;
	/* after ")": state, then fields 4..21; starttime is field 22 */
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			"%*d %*d %llu", &t) != 1)
		t = 0;
	return t;
}

/* Containers of earlier runs whose labbox is gone (killed before its cleanup and its
 * guardian could act, or on a machine that rebooted) are removed. */
static void remove_leftovers(docker_state *d)
{
	lb_buf b = {0};
	const char *args[] = {"ps", "-a", "--filter", "label=labbox.owner", "--format",
			      "{{.ID}} {{.Label \"labbox.owner\"}}", NULL};
	if (client_run(d, args, false, 1 << 20, &b) != 0 || !b.data) {
		lb_buf_free(&b);
		return;
	}
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	char *save = NULL;
	for (char *line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char id[128], owner_host[256];
		int pid = 0;
		unsigned long long st = 0;
		if (sscanf(line, "%127s %255[^:]:%d:%llu", id, owner_host, &pid, &st) != 4)
			continue;
		/* Another machine's labbox on a shared engine is not ours to judge. */
		if (strcmp(owner_host, host) != 0)
			continue;
		if (pid > 0 && kill(pid, 0) == 0 && start_time_of(pid) == st)
			continue;
		lb_buf o = {0};
		const char *rm[] = {"rm", "-f", "-v", id, NULL};
		client_run(d, rm, true, 4096, &o);
		lb_buf_free(&o);
	}
	lb_buf_free(&b);
}

/* The interpreter inside the image: its version, and the environment snapshot (python
 * --version and the installed distributions, read with importlib.metadata as for the local
 * backend, since pip is often absent from images), written to environment.txt. */
static const char env_head[] =
	"import sys, platform\n"
	"print('Python ' + platform.python_version())\n"
	"print('# pip freeze (installed distributions of %s in the image %s)' % (sys.executable, sys.argv[1]))\n";

static int snapshot_environment(docker_state *d, const lb_backend_job *job, char *err, size_t errlen)
{
	char user[64];
	snprintf(user, sizeof user, "%u:%u", (unsigned)d->uid, (unsigned)d->gid);
	/* The same listing as the local backend's environment.txt. */
	LB_AUTOFREE char *env_src = NULL;
	if (asprintf(&env_src, "%s%s", env_head, lb_python_freeze_source()) < 0)
		return -ENOMEM;
	const char *args[] = {"run", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
			      "--security-opt", "no-new-privileges", "--user", user, "--label",
			      "labbox.probe=1", "--entrypoint", d->python, d->image, "-I", "-c",
			      env_src, d->image, NULL};
	lb_buf b = {0};
	int st = client_run(d, args, true, 4 << 20, &b);
	if (st != 0 || !b.data || strncmp(b.data, "Python ", 7) != 0) {
		char said[300];
		one_line(&b, said, sizeof said);
		snprintf(err, errlen,
			 "the image '%s' has no working interpreter '%s' (--python names the "
			 "interpreter inside the image): %s",
			 d->image, d->python, said);
		lb_buf_free(&b);
		return -ENOEXEC;
	}
	sscanf(b.data + 7, "%63s", d->py_version);
	lb_buf_puts(&b, "\n");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/environment.txt", job->run_dir);
	int r = lb_write_file_atomic_mode(path, b.data, b.len, 0600);
	lb_buf_free(&b);
	if (r < 0)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-r));
	return r;
}

static void docker_owner(lb_backend *b, uid_t *uid, gid_t *gid)
{
	*uid = state_of(b)->uid;
	*gid = state_of(b)->gid;
}

static const char *json_str(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

static int64_t json_i64(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : 0;
}

static json_object *json_arr(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array)
		       ? v
		       : NULL;
}

/* -v SRC:DST[:ro|rw] as --mount, which refuses a missing source instead of creating it on
 * the host as -v does; read-only unless :rw. */
static int add_volume(strv *c, const char *spec, char *err, size_t errlen)
{
	LB_AUTOFREE char *s = strdup(spec);
	if (!s)
		return -ENOMEM;
	char *dst = strchr(s, ':');
	if (!dst) {
		snprintf(err, errlen, "-v '%s' is not SRC:DST[:ro|rw]", spec);
		return -EINVAL;
	}
	*dst++ = '\0';
	char *mode = strchr(dst, ':');
	if (mode)
		*mode++ = '\0';
	char src[PATH_MAX];
	if (!realpath(s, src)) {
		snprintf(err, errlen, "-v '%s': %s: %s", spec, s, strerror(errno));
		return -errno;
	}
	if (strchr(src, ',') || strchr(dst, ',')) {
		snprintf(err, errlen, "-v '%s': docker's --mount cannot name a path with a comma", spec);
		return -EINVAL;
	}
	bool rw = mode && strcmp(mode, "rw") == 0;
	return strv_push(c, "--mount") ||
			       strv_pushf(c, "type=bind,source=%s,target=%s%s", src, dst, rw ? "" : ",readonly")
		       ? -ENOMEM
		       : 0;
}

/* labbox's --tmpfs PATH[:size=S[,mode=M]] is docker's spelling already; exec is added since
 * docker's tmpfs default is noexec and the local sandbox's is not. */
static int add_tmpfs(strv *c, const char *spec)
{
	const char *colon = strchr(spec, ':');
	if (strv_push(c, "--tmpfs") < 0)
		return -ENOMEM;
	if (colon)
		return strv_pushf(c, "%s,exec", spec);
	return strv_pushf(c, "%s:size=%s,exec", spec, DEFAULT_TMPFS);
}

static bool tmpfs_given(json_object *list, const char *path)
{
	size_t n = strlen(path);
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(list, i));
		if (strncmp(s, path, n) == 0 && (s[n] == '\0' || s[n] == ':'))
			return true;
	}
	return false;
}

static int build_create(docker_state *d, const lb_backend_job *job, char *err, size_t errlen)
{
	strv *c = &d->create;
	json_object *sb = d->sandbox;
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	int r = 0;
	r |= strv_push(c, d->client);
	r |= strv_push(c, "create");
	r |= strv_push(c, "--name");
	r |= strv_push(c, d->name);
	r |= strv_pushf(c, "--label=labbox.run=%s", job->id);
	r |= strv_pushf(c, "--label=labbox.owner=%s:%d:%llu", host, (int)getpid(),
			start_time_of(getpid()));
	/* tini as pid 1: signals reach python (pid 1 ignores SIGTERM) and orphans are reaped. */
	r |= strv_push(c, "--init");
	r |= strv_push(c, "--read-only");
	r |= strv_push(c, "--cap-drop");
	r |= strv_push(c, "ALL");
	r |= strv_push(c, "--security-opt");
	r |= strv_push(c, "no-new-privileges");
	r |= strv_pushf(c, "--user=%u:%u", (unsigned)d->uid, (unsigned)d->gid);
	const char *net = json_str(sb, "network");
	net = net ? net : "none";
	/* docker's none network is a namespace of its own with a loopback interface: labbox's
	 * none and loopback both come out as that, and the isolation block says loopback. */
	bool host_net = strcmp(net, "host") == 0;
	snprintf(d->network, sizeof d->network, "%s", host_net ? "host" : "loopback");
	r |= strv_pushf(c, "--network=%s", host_net ? "host" : "none");
	int64_t mem = json_i64(sb, "memory_bytes");
	if (mem > 0) {
		d->has_memory = true;
		r |= strv_pushf(c, "--memory=%lld", (long long)mem);
		r |= strv_pushf(c, "--memory-swap=%lld", (long long)mem); /* no swap beyond it */
	}
	json_object *cpus;
	if (sb && json_object_object_get_ex(sb, "cpus", &cpus) && cpus)
		r |= strv_pushf(c, "--cpus=%g", json_object_get_double(cpus));
	int64_t pids = json_i64(sb, "pids_limit");
	if (pids > 0)
		r |= strv_pushf(c, "--pids-limit=%lld", (long long)pids);
	int64_t shm = json_i64(sb, "shm_size_bytes");
	if (shm > 0)
		r |= strv_pushf(c, "--shm-size=%lld", (long long)shm);
	json_object *tmpfs = json_arr(sb, "tmpfs");
	for (size_t i = 0; tmpfs && i < json_object_array_length(tmpfs); i++)
		r |= add_tmpfs(c, json_object_get_string(json_object_array_get_idx(tmpfs, i)));
	if (!tmpfs_given(tmpfs, "/tmp"))
		r |= add_tmpfs(c, "/tmp");
	if (!tmpfs_given(tmpfs, "/var/tmp"))
		r |= add_tmpfs(c, "/var/tmp");
	const char *gpus = json_str(sb, "gpus");
	if (gpus && strcmp(gpus, "none") != 0) {
		snprintf(d->gpus, sizeof d->gpus, "%s", gpus);
		r |= strv_push(c, "--gpus");
		r |= strcmp(gpus, "all") == 0 ? strv_push(c, "all") : strv_pushf(c, "\"device=%s\"", gpus);
	}
	if (r)
		return -ENOMEM;
	json_object *vols = json_arr(sb, "volumes");
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++)
		if ((r = add_volume(c, json_object_get_string(json_object_array_get_idx(vols, i)), err,
				    errlen)) < 0)
			return r;
	if (strchr(job->exp_dir, ',')) {
		snprintf(err, errlen, "the run directory's path has a comma, which docker's --mount "
			 "cannot name: choose another --runs-dir");
		return -EINVAL;
	}
	r |= strv_push(c, "--mount");
	r |= strv_pushf(c, "type=bind,source=%s,target=%s", job->exp_dir, job->exp_dir);
	r |= strv_pushf(c, "--workdir=%s", job->exp_dir);
	r |= strv_push(c, "--env=HOME=/tmp");
	for (size_t i = 0; i < job->nenv; i++)
		r |= strv_pushf(c, "--env=%s", job->env[i]);
	json_object *env = json_arr(sb, "env");
	for (size_t i = 0; env && i < json_object_array_length(env); i++)
		r |= strv_pushf(c, "--env=%s", json_object_get_string(json_object_array_get_idx(env, i)));
	/* A secret by name only: the client reads its value from labbox's environment, so it
	 * is on no command line and in no record. */
	json_object *sec = json_arr(sb, "secret_env");
	for (size_t i = 0; sec && i < json_object_array_length(sec); i++)
		r |= strv_pushf(c, "--env=%s", json_object_get_string(json_object_array_get_idx(sec, i)));
	r |= strv_pushf(c, "--entrypoint=%s", d->python);
	r |= strv_push(c, d->image);
	/* argv[0] is the pipeline's (local) interpreter; in the container it is the image's. */
	for (size_t i = 1; job->argv[i]; i++)
		r |= strv_push(c, job->argv[i]);
	return r ? -ENOMEM : 0;
}

static int docker_prepare(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	docker_state *d = state_of(b);
	int r = pick_engine(d, err, errlen);
	if (r < 0)
		return r;
	remove_leftovers(d);
	lb_buf o = {0};
	const char *args[] = {"image", "inspect", "--format", "{{.Id}}", d->image, NULL};
	if (client_run(d, args, true, 4096, &o) != 0) {
		char said[300];
		one_line(&o, said, sizeof said);
		snprintf(err, errlen,
			 "the image '%s' is not in the %s engine (%s): %s; pull or build it, "
			 "`%s images` lists those there",
			 d->image, d->engine, docker_host() ? docker_host() : "its default socket",
			 said, d->engine);
		lb_buf_free(&o);
		return -ENOENT;
	}
	snprintf(d->image_id, sizeof d->image_id, "%s", o.data ? o.data : "");
	lb_buf_free(&o);
	snprintf(d->name, sizeof d->name, "labbox-%s", job->id);
	if ((r = snapshot_environment(d, job, err, errlen)) < 0)
		return r;
	return build_create(d, job, err, errlen);
}

/* A child that outlives labbox: it waits for the end of the pipe labbox holds; a byte means
 * labbox removed the container itself, EOF without one that labbox died, so it removes the
 * container. Signals to the terminal's process group do not stop it. */
static void start_guardian(docker_state *d)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[1]);
		setsid();
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		char c;
		ssize_t n;
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		execl(d->client, d->client, "rm", "-f", "-v", d->name, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	d->guard_wr = p[1];
	d->guard_pid = pid;
}

/* docker stop/kill in the background, so output keeps streaming while the engine works. */
static pid_t spawn_client(docker_state *d, const char *a1, const char *a2, const char *a3)
{
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		if (a3)
			execl(d->client, d->client, a1, a2, a3, d->container, (char *)NULL);
		else
			execl(d->client, d->client, a1, a2, d->container, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void setup_failed(lb_sandbox_result *res, const char *step, const char *what,
			 const char *detail)
{
	res->outcome = LB_SB_SETUP_FAILED;
	res->exit_code = -1;
	snprintf(res->setup_step, sizeof res->setup_step, "%s", step);
	snprintf(res->setup_error, sizeof res->setup_error, "%s%s", what, detail);
}

static void fill_isolation(docker_state *d, lb_sandbox_result *res)
{
	lb_isolation *iso = &res->isolation;
	iso->user_ns = d->userns;
	iso->pid_ns = iso->mount_ns = iso->net_ns = iso->ipc_ns = iso->uts_ns = true;
	iso->net_ns = strcmp(d->network, "host") != 0;
	iso->network = strcmp(d->network, "host") == 0 ? "host" : "loopback";
	iso->seccomp = d->seccomp;
	iso->no_new_privs = true;
	iso->caps_dropped = true;
	iso->uid = d->uid;
	iso->gid = d->gid;
	iso->cgroup = strcmp(d->cgroup, "v2") == 0 ? "v2" : "v1";
	json_object *sb = d->sandbox, *v;
	iso->memory_enforced_by = d->has_memory ? "docker --memory (cgroup)" : NULL;
	iso->swap_limited = d->has_memory;
	iso->pids_enforced_by = json_i64(sb, "pids_limit") > 0 ? "docker --pids-limit (cgroup)" : NULL;
	iso->cpus_enforced_by = sb && json_object_object_get_ex(sb, "cpus", &v) && v
					? "docker --cpus (cgroup CFS quota)"
					: NULL;
	iso->gpus = d->gpus[0] ? d->gpus : NULL;
	iso->filesystem = "container image root read-only; exp/ read-write at its host path; -v "
			  "volumes read-only unless :rw; private tmpfs /tmp, /var/tmp, /dev/shm; no "
			  "other host path";
}

/* The container's end as docker inspect reports it. */
static int inspect_end(docker_state *d, int *exit_code, bool *oom)
{
	lb_buf o = {0};
	const char *args[] = {"inspect", "--format", "{{.State.ExitCode}} {{.State.OOMKilled}}",
			      d->container, NULL};
	int st = client_run(d, args, false, 4096, &o);
	char oomw[16] = "";
	int r = st == 0 && o.data && sscanf(o.data, "%d %15s", exit_code, oomw) == 2 ? 0 : -EIO;
	*oom = strcmp(oomw, "true") == 0;
	lb_buf_free(&o);
	return r;
}

static int docker_run(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res)
{
	docker_state *d = state_of(b);
	res->exit_code = -1;
	res->peak_source = "unknown";
	res->peak_memory_source = "not measured (docker backend)";
	fill_isolation(d, res);
	start_guardian(d);

	lb_buf o = {0};
	int st = 0;
	int r = lb_capture(d->create.v, 4096, true, &o, &st);
	if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || !o.data) {
		char said[400];
		one_line(&o, said, sizeof said);
		lb_buf_free(&o);
		setup_failed(res, "docker create", "docker create failed: ", said);
		return 0;
	}
	char *nl = strchr(o.data, '\n');
	if (nl)
		*nl = '\0';
	snprintf(d->container, sizeof d->container, "%s", o.data);
	lb_buf_free(&o);

	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	LB_AUTOCLOSE int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	int p[2];
	if (sfd < 0 || pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	double t0 = lb_time_monotonic();
	pid_t att = fork();
	if (att == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execl(d->client, d->client, "start", "--attach", d->container, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (att < 0) {
		r = -errno;
		close(p[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	bool stopping = false, killed = false, open_out = true;
	double stop_at = 0, last_disk = t0;
	pid_t helper = -1;
	char buf[65536];
	while (open_out) {
		double now = lb_time_monotonic();
		if (!stopping && job->budget > 0 && now - t0 >= job->budget) {
			res->timed_out = true;
			stopping = true;
		}
		if (!stopping && job->disk_limit && now - last_disk >= 1.0) {
			last_disk = now;
			uint64_t used = lb_disk_usage(job->exp_dir);
			if (used > job->disk_limit) {
				res->disk_limited = true;
				snprintf(res->disk_detail, sizeof res->disk_detail, "%llu bytes in exp/",
					 (unsigned long long)used);
				stopping = true;
			}
		}
		if (stopping && stop_at == 0) {
			stop_at = now;
			char g[32];
			snprintf(g, sizeof g, "%d", (int)(d->grace + 0.999));
			helper = spawn_client(d, "stop", "--time", g);
		}
		if (stopping && !killed && now - stop_at > d->grace + 2.0) {
			/* The engine's own stop is late: SIGKILL, as the sandbox does after the grace. */
			killed = true;
			pid_t k = spawn_client(d, "kill", NULL, NULL);
			if (k > 0)
				waitpid(k, NULL, 0);
		}
		if (stopping && now - stop_at > d->grace + ENGINE_MARGIN_S) {
			kill(att, SIGKILL); /* the engine is gone: stop waiting for it */
			break;
		}
		double wait = 0.25;
		if (!stopping && job->budget > 0 && t0 + job->budget - now < wait)
			wait = t0 + job->budget - now;
		struct pollfd pf[2] = {{.fd = p[0], .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		int n = poll(pf, 2, (int)(wait * 1000) + 1);
		if (n < 0 && errno != EINTR)
			break;
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && !stopping) {
				res->interrupted = true;
				res->interrupt_signal = (int)si.ssi_signo;
				stopping = true;
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(p[0], buf, sizeof buf);
			if (k > 0 && job->output)
				job->output(job->output_ctx, LB_STREAM_STDOUT, buf, (size_t)k);
			else if (k == 0)
				open_out = false;
		}
	}
	close(p[0]);
	int ast = 0;
	waitpid(att, &ast, 0);
	if (helper > 0)
		waitpid(helper, NULL, 0);
	/* A stop still on its way (the engine answered attach first) ends before inspect. */
	lb_buf w = {0};
	const char *wargs[] = {"wait", d->container, NULL};
	client_run(d, wargs, false, 4096, &w);
	lb_buf_free(&w);
	res->wall_s = lb_time_monotonic() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);

	int code = -1;
	bool oom = false;
	if (inspect_end(d, &code, &oom) < 0) {
		setup_failed(res, "docker inspect", "docker inspect failed for container ", d->container);
		return 0;
	}
	/* cgroup v1 engines may not set OOMKilled when the OOM killer picked a child of the
	 * init: SIGKILL (137) under a memory limit, not sent by labbox, is the OOM killer. */
	if (!oom && d->has_memory && code == 137 && !res->timed_out && !res->interrupted &&
	    !res->disk_limited)
		oom = true;
	res->oom_killed = oom;
	if (res->timed_out)
		res->outcome = LB_SB_TIMEOUT;
	else if (res->interrupted)
		res->outcome = LB_SB_INTERRUPTED;
	else if (res->disk_limited)
		res->outcome = LB_SB_DISK_LIMIT;
	else if (code > 128 && code < 128 + 65) {
		/* docker's 128+N: the init reports its child killed by signal N. */
		res->outcome = LB_SB_SIGNALED;
		res->term_signal = code - 128;
	} else {
		res->outcome = LB_SB_EXITED;
		res->exit_code = code;
	}
	return 0;
}

static int docker_fetch(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	/* exp/ was bound into the container: what the run wrote is in the run directory. */
	(void)b;
	(void)job;
	(void)err;
	(void)errlen;
	return 0;
}

static void docker_cleanup(lb_backend *b)
{
	docker_state *d = state_of(b);
	if (d->container[0] || d->name[0]) {
		lb_buf o = {0};
		const char *args[] = {"rm", "-f", "-v", d->container[0] ? d->container : d->name, NULL};
		if (d->client)
			client_run(d, args, true, 4096, &o);
		lb_buf_free(&o);
	}
	if (d->guard_wr >= 0) {
		(void)!write(d->guard_wr, "x", 1);
		close(d->guard_wr);
		d->guard_wr = -1;
		waitpid(d->guard_pid, NULL, 0);
	}
}

static struct json_object *docker_describe(lb_backend *b)
{
	docker_state *d = state_of(b);
	json_object *o = json_object_new_object();
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	json_object_object_add(o, "name", json_object_new_string("docker"));
	json_object_object_add(o, "engine", json_object_new_string(d->engine));
	json_object_object_add(o, "version",
			       d->server_version[0] ? json_object_new_string(d->server_version) : NULL);
	json_object_object_add(o, "client_version",
			       d->client_version[0] ? json_object_new_string(d->client_version) : NULL);
	json_object_object_add(o, "host", json_object_new_string(docker_host() ? docker_host() : host));
	json_object_object_add(o, "isolated_by", json_object_new_string("docker"));
	json_object_object_add(o, "image", json_object_new_string(d->image));
	json_object_object_add(o, "image_id", d->image_id[0] ? json_object_new_string(d->image_id) : NULL);
	json_object *py = json_object_new_object();
	json_object_object_add(py, "path", json_object_new_string(d->python));
	json_object_object_add(py, "version", d->py_version[0] ? json_object_new_string(d->py_version) : NULL);
	json_object_object_add(o, "interpreter", py);
	json_object_object_add(o, "container", d->container[0] ? json_object_new_string(d->container) : NULL);
	json_object *cmd = json_object_new_array();
	for (size_t i = 0; i < d->create.n; i++)
		json_object_array_add(cmd, json_object_new_string(d->create.v[i]));
	json_object_object_add(o, "command", cmd);
	return o;
}

static void docker_free(lb_backend *b)
{
	docker_state *d = state_of(b);
	if (!d)
		return;
	if (d->guard_wr >= 0)
		close(d->guard_wr);
	free(d->client);
	free(d->image);
	free(d->python);
	json_object_put(d->sandbox);
	strv_free(&d->create);
	free(d);
}

static const lb_backend_ops docker_ops = {
	.name = "docker",
	.owner = docker_owner,
	.prepare = docker_prepare,
	.run = docker_run,
	.fetch = docker_fetch,
	.cleanup = docker_cleanup,
	.describe = docker_describe,
	.free = docker_free,
};

int lb_backend_docker(const lb_docker_config *cfg, lb_backend **out)
{
	if (!cfg->image || !*cfg->image)
		return -EINVAL;
	if (cfg->engine && strcmp(cfg->engine, "docker") != 0 && strcmp(cfg->engine, "podman") != 0)
		return -EINVAL;
	lb_backend *b = calloc(1, sizeof *b);
	docker_state *d = calloc(1, sizeof *d);
	if (!b || !d) {
		free(b);
		free(d);
		return -ENOMEM;
	}
	d->guard_wr = -1;
	d->image = strdup(cfg->image);
	d->python = strdup(cfg->python ? cfg->python : "python3");
	d->sandbox = cfg->sandbox ? json_object_get(cfg->sandbox) : NULL;
	d->grace = cfg->grace > 0 ? cfg->grace : 0;
	d->uid = cfg->uid;
	d->gid = cfg->gid;
	snprintf(d->engine, sizeof d->engine, "%s", cfg->engine ? cfg->engine : "docker");
	d->engine_asked = cfg->engine != NULL;
	b->ops = &docker_ops;
	b->state = d;
	if (!d->image || !d->python) {
		lb_backend_free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}
