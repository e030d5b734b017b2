/* The docker backend: the experiment runs in a container, through the engine's own client
 * (docker, or podman, which takes the same flags), so the user's DOCKER_HOST and contexts
 * keep working. labbox supervises the container as it supervises its own sandbox: it
 * enforces the budget (docker stop with the grace, then docker kill), streams the output
 * (docker start --attach) into the pipeline, and reads the outcome from docker inspect.
 * The container is always removed: by cleanup, by a guardian process when labbox dies, and
 * at the next start for a container whose labbox is gone (labels labbox.run and labbox.owner).
 * On a local unix socket docker's engine is asked directly over its HTTP API (docker_api.c)
 * for info, inspect, wait and rm, and a run's container is created, attached, started,
 * stopped and killed there too (docker_api_run.c): no client starts for such a run. */
#include "docker_api.h"
#include "docker_info.h"
#include "docker_live.h"
#include "labbox/backend.h"
#include "labbox/gate.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <errno.h>
#include <ctype.h>
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
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a container start, docker stop and docker kill may take beyond the grace before labbox
 * stops waiting for the engine. */
#define ENGINE_MARGIN_S 15.0
#define DEFAULT_TMPFS "1g"
/* What an API call (info, inspect, rm) may take: the client has no limit, a hung engine
 * must not hang labbox. */
#define API_TIMEOUT_MS 30000

typedef struct docker_state {
	char engine[16];      /* "docker" or "podman", as asked or as found */
	bool engine_asked;
	char *client;         /* the client's path */
	/* The engine's socket when docker's client would speak to a local unix socket: info,
	 * inspect, wait and rm go there over the engine's HTTP API ("" for the client). */
	char api[108];
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
	bool exec;            /* labbox exec (lb_docker_config.exec) */
	/* The image labbox builds when none was named (build_image). */
	char *base_image;
	char image_origin[8]; /* "given", "built" (this run) or "reused" (the tag was there) */
	char base_id[160];
	char recipe[65];      /* sha256 of the Dockerfile, requirements.txt and base image id */
	bool requirements;    /* the experiment's requirements.txt went into the image */
	double build_s;       /* seconds docker build took; 0 when reused */
	char build_dir[PATH_MAX]; /* RUN_DIR/docker-build: the Dockerfile and its context */
	char build_log[PATH_MAX]; /* RUN_DIR/docker-build.log, when labbox built */
	bool env_cached;      /* environment.txt came from the cache (same image id) */
	const char *oom_by;   /* what said the run was OOM-killed */
	char name[96];        /* the container's name, from the run id */
	char container[128];  /* its id once created */
	lb_strv create;          /* the docker create command line */
	lb_guard guard;       /* removes the container if labbox dies; wr -1 when none */
	/* Client calls left running beside the pipeline (each costs the client's start-up, some
	 * 35 ms here, and the engine's work): the removal of dead runs' containers, and this
	 * run's docker rm, which overlaps the records and is waited for by free. */
	pid_t leftovers_pid;
	pid_t rm_pid;
	/* docker create, when it ran in prepare beside the engine's info (a named image): its
	 * failure is reported by run as a create failure is. */
	bool created_early;
	char create_failed[400];
	/* This run's marker among the containers labbox made and has not seen removed, and the
	 * engine it is kept for: without others, no leftover sweep. */
	lb_docker_live live;
	char live_engine[16];
	/* docker run, launched by prepare beside the engine's info in place of docker create
	 * then docker start --attach (a client start-up less): its client, its output, when it
	 * started (the budget's start). */
	bool early_run;
	pid_t run_pid;
	int run_out;
	double run_t0;
	/* The early run made over the API in place of the client's docker run: run_out is its
	 * attach stream (multiplexed; api_early what came with the attach's head), the
	 * container's id in container. */
	bool api_run;
	lb_buf api_early;
	/* Where the clients that start a container run: podman's conmon writes an empty file
	 * "oom" into its working directory when the container is OOM-killed, which was the
	 * directory labbox was started from (the user's). The run directory instead, where
	 * cleanup removes it. */
	char cwd[PATH_MAX];
} docker_state;

static docker_state *state_of(lb_backend *b)
{
	return b->state;
}

/* Runs the client with args; out gets stdout (and stderr when merge), trimmed. Returns the
 * exit status, or a negative errno when it could not run. */
static int client_run(docker_state *d, const char *const *args, bool merge, size_t max, lb_buf *out)
{
	lb_strv a = {0};
	int r = lb_strv_push(&a, d->client);
	for (size_t i = 0; r == 0 && args[i]; i++)
		r = lb_strv_push(&a, args[i]);
	int st = 0;
	if (r == 0)
		r = lb_capture(a.v, max, merge, out, &st);
	lb_strv_free(&a);
	if (r < 0)
		return r;
	while (out->data && out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
		out->data[--out->len] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* A client call started in the background: its stdout (and stderr when merge) on a pipe,
 * read by client_collect. For small outputs (an image id), which fit in the pipe, so the child
 * never waits for the reader. */
typedef struct client_call {
	pid_t pid;
	int fd;
} client_call;

static int client_start_argv(char *const *argv, bool merge, const char *cwd, client_call *c)
{
	c->pid = -1;
	c->fd = -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 2);
		}
		dup2(p[1], 1);
		if (merge)
			dup2(p[1], 2);
		if (cwd && cwd[0])
			(void)!chdir(cwd); /* a place for conmon's file, not a condition of the run */
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -errno;
	}
	c->pid = pid;
	c->fd = p[0];
	return 0;
}

static int client_start(docker_state *d, const char *const *args, bool merge, client_call *c)
{
	c->pid = -1;
	c->fd = -1;
	lb_strv a = {0};
	int r = lb_strv_push(&a, d->client);
	for (size_t i = 0; r == 0 && args[i]; i++)
		r = lb_strv_push(&a, args[i]);
	if (r == 0)
		r = client_start_argv(a.v, merge, NULL, c);
	lb_strv_free(&a);
	return r;
}

/* The call's output (trimmed) and exit status; -EIO when it did not run. */
static int client_collect(client_call *c, size_t max, lb_buf *out)
{
	if (c->pid < 0)
		return -EIO;
	char buf[4096];
	ssize_t k;
	while ((k = read(c->fd, buf, sizeof buf)) != 0) {
		if (k < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (out->len + (size_t)k <= max)
			lb_buf_append(out, buf, (size_t)k);
	}
	close(c->fd);
	int st = 0;
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	c->pid = -1;
	while (out->data && out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
		out->data[--out->len] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* One line of what the engine said, for an error message. */
static void one_line(const lb_buf *b, char *out, size_t n)
{
	const char *s = b->data ? b->data : "";
	while (*s == '\n' || *s == ' ' || *s == '\r')
		s++;
	snprintf(out, n, "%s", *s ? s : "no output");
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* The variable that points the engine's client elsewhere: docker's DOCKER_HOST, podman's
 * CONTAINER_HOST (which makes podman a remote client); podman ignores DOCKER_HOST. */
static const char *host_var(const char *engine)
{
	return strcmp(engine, "podman") == 0 ? "CONTAINER_HOST" : "DOCKER_HOST";
}

static const char *engine_host(const char *engine)
{
	const char *h = getenv(host_var(engine));
	return h && *h ? h : NULL;
}

/* Whether engine is asked through its API: docker on a local unix socket, as its client
 * would reach it (d->api is that socket then). */
static bool api_for(docker_state *d, const char *engine)
{
	d->api[0] = '\0';
	if (strcmp(engine, "docker") != 0 || lb_docker_api_socket(d->api, sizeof d->api) < 0) {
		d->api[0] = '\0';
		return false;
	}
	return true;
}

/* Whether the engine answers, and what it is (normalise_info's object into *info when info
 * is not NULL); -ENOENT or -EHOSTUNREACH with err saying what failed and naming `ENGINE info`.
 * One client call when the engine answers: it costs a Go program's start-up each time. */
static int engine_version(docker_state *d, const char *engine, json_object **info, char *err,
			  size_t errlen)
{
	free(d->client);
	d->client = NULL;
	if (lb_find_executable(engine, &d->client) < 0) {
		snprintf(err, errlen,
			 "the %s client is not installed (no '%s' on PATH): install it, or choose "
			 "another engine with --engine", engine, engine);
		return -ENOENT;
	}
	lb_buf b = {0};
	json_object *raw = NULL;
	char api_err[400] = "";
	if (api_for(d, engine)) {
		if (lb_docker_api_json(d->api, "GET", "/info", API_TIMEOUT_MS, &raw, api_err, sizeof api_err) < 0)
			raw = NULL;
	} else {
		const char *args[] = {"info", "--format", "{{json .}}", NULL};
		int st = client_run(d, args, false, 1 << 20, &b);
		raw = st == 0 && b.data ? json_tokener_parse(b.data) : NULL;
		lb_buf_free(&b);
	}
	json_object *norm = raw ? lb_docker_normalise_info(engine, raw) : NULL;
	json_object_put(raw);
	const char *ver = lb_docker_jstr(norm, "version");
	if ((!ver || !*ver) && d->api[0]) {
		/* What the socket did: the client would say the same in more words, at a start-up's
		 * cost. */
		snprintf(err, errlen,
			 "the %s engine does not answer (%s%s%s): %s; `%s info` shows what is wrong",
			 engine, engine_host(engine) ? host_var(engine) : "",
			 engine_host(engine) ? "=" : "",
			 engine_host(engine) ? engine_host(engine) : "its default socket",
			 api_err[0] ? api_err : "its info has no server version", engine);
		json_object_put(norm);
		return -EHOSTUNREACH;
	}
	if (!ver || !*ver) {
		/* What the client says about it: version asks the server and names the socket. */
		const char *vargs[] = {"version", "--format", "{{.Server.Version}}", NULL};
		client_run(d, vargs, true, 4096, &b);
		char said[400];
		one_line(&b, said, sizeof said);
		snprintf(err, errlen,
			 "the %s engine does not answer (%s%s%s): %s; `%s info` shows what is wrong",
			 engine, engine_host(engine) ? host_var(engine) : "",
			 engine_host(engine) ? "=" : "",
			 engine_host(engine) ? engine_host(engine) : "its default socket", said, engine);
		lb_buf_free(&b);
		json_object_put(norm);
		return -EHOSTUNREACH;
	}
	snprintf(d->engine, sizeof d->engine, "%s", engine);
	snprintf(d->server_version, sizeof d->server_version, "%s", ver);
	const char *cv = lb_docker_jstr(norm, "client_version");
	snprintf(d->client_version, sizeof d->client_version, "%s", cv ? cv : "");
	if (d->api[0]) /* the engine's info does not know its client: asked once per binary */
		(void)lb_docker_client_version(d->client, d->client_version, sizeof d->client_version);
	/* What the engine applies beyond our flags: its seccomp profile, user remapping, the
	 * cgroup version its limits go through. */
	d->seccomp = lb_docker_jbool(norm, "seccomp");
	d->userns = lb_docker_jbool(norm, "userns_remap");
	const char *cg = lb_docker_jstr(lb_docker_jobj(norm, "cgroup"), "version");
	snprintf(d->cgroup, sizeof d->cgroup, "%s", cg ? cg : "v1");
	if (info)
		*info = norm;
	else
		json_object_put(norm);
	return 0;
}

/* Whether the user named a docker engine: DOCKER_HOST, DOCKER_CONTEXT, or a current context
 * in the docker client's config (DOCKER_CONFIG or ~/.docker). */
static bool docker_named(void)
{
	if (engine_host("docker") || (getenv("DOCKER_CONTEXT") && *getenv("DOCKER_CONTEXT")))
		return true;
	/* A config that cannot be read names no engine. */
	return lb_docker_config_context() == 1;
}

static int pick_engine(docker_state *d, json_object **info, char *err, size_t errlen)
{
	if (d->engine_asked) {
		/* A copy: engine_version writes d->engine, which must not be its own source. */
		char asked[sizeof d->engine];
		snprintf(asked, sizeof asked, "%s", d->engine);
		return engine_version(d, asked, info, err, errlen);
	}
	/* The first that answers; when none does, docker's reason is the one named. */
	char first[512] = "";
	if (engine_version(d, "docker", info, first, sizeof first) == 0)
		return 0;
	if (docker_named()) {
		/* The user pointed docker somewhere: podman would be another engine, silently. */
		snprintf(err, errlen, "%s (no podman instead: DOCKER_HOST or a docker context names "
			 "the docker engine; --engine podman chooses podman)", first);
		return -EHOSTUNREACH;
	}
	char second[512];
	if (engine_version(d, "podman", info, second, sizeof second) == 0)
		return 0;
	snprintf(err, errlen, "%s", first);
	return -EHOSTUNREACH;
}

/* Containers of earlier runs whose labbox is gone (killed before its cleanup and its
 * guardian could act, or on a machine that rebooted) are removed. */
static int remove_leftovers(docker_state *d)
{
	if (d->api[0])
		return lb_docker_api_remove_dead(d->api, API_TIMEOUT_MS);
	lb_buf b = {0};
	/* docker's ps has .Label KEY; podman's has none, its .Labels is a map (docker's a string). */
	const char *args[] = {"ps", "-a", "--filter", "label=labbox.owner", "--format",
			      strcmp(d->engine, "podman") == 0 ? "{{.ID}} {{index .Labels \"labbox.owner\"}}"
							       : "{{.ID}} {{.Label \"labbox.owner\"}}",
			      NULL};
	if (client_run(d, args, false, 1 << 20, &b) != 0) {
		lb_buf_free(&b);
		return -EIO;
	}
	int r = 0;
	char *save = NULL;
	for (char *line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char id[128], owner_host[256];
		int pid = 0;
		unsigned long long st = 0;
		if (sscanf(line, "%127s %255[^:]:%d:%llu", id, owner_host, &pid, &st) != 4)
			continue;
		if (lb_docker_owner_alive(owner_host, pid, st))
			continue;
		lb_buf o = {0};
		const char *rm[] = {"rm", "-f", "-v", id, NULL};
		if (client_run(d, rm, true, 4096, &o) != 0)
			r = -EIO;
		lb_buf_free(&o);
	}
	lb_buf_free(&b);
	return r;
}

/* The marker of this run's container (before it can exist), kept for the engine that will
 * make it. */
static void live_add(docker_state *d, const char *engine)
{
	if (strcmp(d->live_engine, engine) != 0) {
		/* Another engine's record; a marker left there (its docker rm failed) stays. */
		lb_docker_live_close(&d->live);
		snprintf(d->live_engine, sizeof d->live_engine, "%s", engine);
		lb_docker_live_open(&d->live, engine);
	}
	if (d->live.marker[0])
		return;
	char host[256] = "", owner[320];
	gethostname(host, sizeof host - 1);
	snprintf(owner, sizeof owner, "%s:%d:%llu", host, (int)getpid(), lb_docker_start_time_of(getpid()));
	lb_docker_live_add(&d->live, d->name, owner);
}

/* The interpreter inside the image: its version, and the environment snapshot (python
 * --version and the installed distributions, read with importlib.metadata as for the local
 * backend, since pip is often absent from images), written to environment.txt. */
static const char env_head[] =
	"import sys, platform\n"
	"print('Python ' + platform.python_version())\n"
	"print('# pip freeze (installed distributions of %s in the image %s)' % (sys.executable, sys.argv[1]))\n";

/* An image id names its content for good, so the snapshot of one (with the same interpreter,
 * user and listing script) never changes: it is cached in the user's cache directory, which
 * spares each run a whole container start (half a second here). The cache directory is the
 * user's own (lb_open_private_dir refuses one others can write), and an entry that does not
 * start as a snapshot does is not believed. */
static int env_cache_open(docker_state *d, const char *env_src, char name[80])
{
	if (!d->image_id[0])
		return -ENOENT;
	LB_AUTOFREE char *base = lb_user_cache_dir();
	LB_AUTOFREE char *dir = NULL;
	if (!base || asprintf(&dir, "%s/docker-env", base) < 0)
		return -ENOENT;
	lb_sha256 c;
	lb_sha256_init(&c);
	char key[512];
	int n = snprintf(key, sizeof key, "labbox.docker-env/1\n%s\n%s\n%s\n%u:%u\n", d->image_id,
			 d->image, d->python, (unsigned)d->uid, (unsigned)d->gid);
	lb_sha256_update(&c, key, (size_t)n < sizeof key ? (size_t)n : sizeof key - 1);
	lb_sha256_update(&c, env_src, strlen(env_src));
	uint8_t dg[32];
	char hex[65];
	lb_sha256_final(&c, dg);
	lb_sha256_hex(dg, hex);
	snprintf(name, 80, "%.40s.txt", hex);
	return lb_open_private_dir(dir);
}

/* Rootful podman gives a container RLIMIT_NOFILE 1048576 and RLIMIT_NPROC 4194304 whatever
 * it may itself hold, so where it lacks CAP_SYS_RESOURCE (a machine that is itself a
 * container) every start fails in runc ("error setting rlimit type 7"). The container gets
 * labbox's own limits instead, as the local sandbox's child does (and as docker's containers
 * get the daemon's); nproc at most 32768, what podman lowers its own to when it cannot raise
 * it, since a child cannot get more than its runtime has. --pids-limit is the real bound. */
static int podman_ulimits(lb_strv *c)
{
	struct rlimit nofile, nproc;
	if (getrlimit(RLIMIT_NOFILE, &nofile) < 0 || getrlimit(RLIMIT_NPROC, &nproc) < 0)
		return 0; /* podman's defaults then, which hold where it may raise them */
	const rlim_t nproc_max = 32768;
	if (nproc.rlim_max == RLIM_INFINITY || nproc.rlim_max > nproc_max)
		nproc.rlim_max = nproc_max;
	if (nproc.rlim_cur == RLIM_INFINITY || nproc.rlim_cur > nproc.rlim_max)
		nproc.rlim_cur = nproc.rlim_max;
	if (nofile.rlim_max == RLIM_INFINITY)
		nofile.rlim_max = 1048576;
	if (nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur > nofile.rlim_max)
		nofile.rlim_cur = nofile.rlim_max;
	return lb_strv_pushf(c, "--ulimit=nofile=%llu:%llu", (unsigned long long)nofile.rlim_cur,
			     (unsigned long long)nofile.rlim_max) ||
			       lb_strv_pushf(c, "--ulimit=nproc=%llu:%llu", (unsigned long long)nproc.rlim_cur,
					     (unsigned long long)nproc.rlim_max)
		       ? -ENOMEM
		       : 0;
}

/* argv for the client: first (a subcommand such as "run" or "build"), podman's limits, the
 * rest; a.v is NULL-terminated, as client_run wants. */
static int engine_args(const docker_state *d, lb_strv *a, const char *first, const char *const *rest)
{
	int r = lb_strv_push(a, first);
	if (r == 0 && strcmp(d->engine, "podman") == 0)
		r = podman_ulimits(a);
	for (size_t i = 0; r == 0 && rest[i]; i++)
		r = lb_strv_push(a, rest[i]);
	return r;
}

static int snapshot_environment(docker_state *d, const lb_backend_job *job, char *err, size_t errlen)
{
	char user[64];
	snprintf(user, sizeof user, "%u:%u", (unsigned)d->uid, (unsigned)d->gid);
	/* The same listing as the local backend's environment.txt. */
	LB_AUTOFREE char *env_src = NULL;
	if (asprintf(&env_src, "%s%s", env_head, lb_python_freeze_source()) < 0)
		return -ENOMEM;
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/environment.txt", job->run_dir);
	char cname[80];
	LB_AUTOCLOSE int cfd = env_cache_open(d, env_src, cname);
	LB_AUTOFREE char *cached = NULL;
	size_t clen = 0;
	if (cfd >= 0 && lb_read_file_at(cfd, cname, 16 << 20, &cached, &clen) == 0 && clen > 7 &&
	    strncmp(cached, "Python ", 7) == 0) {
		sscanf(cached + 7, "%63s", d->py_version);
		d->env_cached = true;
		int r = lb_write_file_atomic_mode(path, cached, clen, 0600);
		if (r < 0)
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	const char *args[] = {"--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
			      "--security-opt", "no-new-privileges", "--user", user, "--label",
			      "labbox.probe=1", "--entrypoint", d->python, d->image, "-I", "-c",
			      env_src, d->image, NULL};
	lb_strv a = {0};
	if (engine_args(d, &a, "run", args) < 0) {
		lb_strv_free(&a);
		return -ENOMEM;
	}
	lb_buf b = {0};
	int st = client_run(d, (const char *const *)a.v, true, 4 << 20, &b);
	lb_strv_free(&a);
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
	if (cfd >= 0)
		lb_replace_file_at(cfd, cname, b.data, b.len); /* a cache: a failure costs time only */
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

/* labbox's cache (the record key that seals the user's records, the gate's compiled form,
 * the probes) where a volume shows it: covered by an empty tmpfs, as the local sandbox
 * masks it inside its binds. A container runs as the user, so it could read the key and seal
 * records of its own making, or rewrite what later runs load. */
static int hide_cache_in(lb_strv *c, const char *src, const char *dst, char *err, size_t errlen)
{
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	char real[PATH_MAX];
	bool root = strcmp(src, "/") == 0;
	if (!cache || !realpath(cache, real) || !(root || lb_path_under(real, src)))
		return 0;
	/* A volume into /proc, /sys or /dev is the engine's to refuse, in its own words: a mount
	 * added under it would turn that refusal into a container that fails to start. */
	if (lb_path_under(dst, "/proc") || lb_path_under(dst, "/sys") || lb_path_under(dst, "/dev"))
		return 0;
	const char *rest = root ? real : real + strlen(src);
	char at[PATH_MAX];
	if (snprintf(at, sizeof at, "%s%s%s", dst, *rest == '/' || !*rest ? "" : "/", rest) >=
		    (int)sizeof at || strchr(at, ',')) {
		snprintf(err, errlen, "-v %s:%s shows labbox's cache %s, which cannot be hidden in "
			 "the container (a comma or a long path): mount a directory that does not "
			 "hold it", src, dst, real);
		return -EINVAL;
	}
	return lb_strv_push(c, "--mount") ||
			       lb_strv_pushf(c, "type=tmpfs,destination=%s,tmpfs-size=4096,tmpfs-mode=0555", at)
		       ? -ENOMEM
		       : 0;
}

/* What the local sandbox masks (other runs' records, the index and sweeps beside them, and
 * each --hide path), resolved: each one a volume shows is covered where the volume puts it,
 * a directory by an empty read-only tmpfs, anything else by /dev/null. What no volume shows
 * is not in the container at all. labbox's cache is hide_cache_in's. */
typedef struct {
	lb_sandbox *sb; /* a scratch sandbox that only records the masks */
	char cache[PATH_MAX];
} docker_masks;

static bool masked_above(const docker_masks *m, const char *path)
{
	const char *const *dirs, *const *files;
	size_t nd, nf;
	lb_sandbox_masked(m->sb, &dirs, &nd, &files, &nf);
	for (size_t i = 0; i < nd; i++)
		if (strcmp(dirs[i], path) != 0 && lb_path_under(path, dirs[i]))
			return true;
	return false;
}

static int hide_masks_in(lb_strv *c, const docker_masks *m, const char *src, const char *dst,
			 char *err, size_t errlen)
{
	if (!m || !m->sb)
		return 0;
	if (lb_path_under(dst, "/proc") || lb_path_under(dst, "/sys") || lb_path_under(dst, "/dev"))
		return 0;
	bool root = strcmp(src, "/") == 0;
	const char *const *dirs, *const *files;
	size_t nd, nf;
	lb_sandbox_masked(m->sb, &dirs, &nd, &files, &nf);
	for (size_t i = 0; i < nd + nf; i++) {
		bool dir = i < nd;
		const char *h = dir ? dirs[i] : files[i - nd];
		char at[PATH_MAX];
		if (!(root || lb_path_under(h, src)) || strcmp(h, m->cache) == 0 || masked_above(m, h))
			continue;
		const char *rest = root ? h : h + strlen(src);
		if (snprintf(at, sizeof at, "%s%s%s", dst, *rest == '/' || !*rest ? "" : "/", rest) >=
			    (int)sizeof at || strchr(at, ',')) {
			snprintf(err, errlen, "%s must be hidden where -v shows it (%s), and docker's "
				 "--mount cannot name that path (a comma or a long path): mount a "
				 "directory that does not hold it", h, at);
			return -EINVAL;
		}
		if (lb_strv_push(c, "--mount") ||
		    (dir ? lb_strv_pushf(c, "type=tmpfs,destination=%s,tmpfs-size=4096,tmpfs-mode=0555", at)
			 : lb_strv_pushf(c, "type=bind,source=/dev/null,target=%s,readonly", at)))
			return -ENOMEM;
	}
	return 0;
}

/* The masks of job: its runs directory's records, those of every runs directory this user's
 * labbox has used, and the paths given with --hide. */
static int docker_masks_make(docker_masks *m, json_object *sandbox, const lb_backend_job *job,
			     char *err, size_t errlen)
{
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	m->cache[0] = '\0';
	if (cache && !realpath(cache, m->cache))
		m->cache[0] = '\0';
	if (lb_sandbox_new(&m->sb) < 0)
		return -ENOMEM;
	int r = lb_local_hide_job_records(m->sb, job);
	/* every one: the volumes are not this sandbox's binds, and may show any of them */
	if (r == 0)
		r = lb_sandbox_settle_masks(m->sb, true);
	if (r < 0) {
		snprintf(err, errlen, "the records of other runs cannot be hidden: %s", strerror(-r));
		return r;
	}
	json_object *hide = json_arr(sandbox, "hide");
	for (size_t i = 0; hide && i < json_object_array_length(hide); i++) {
		const char *h = json_object_get_string(json_object_array_get_idx(hide, i));
		if ((r = lb_sandbox_mask(m->sb, h)) < 0) {
			snprintf(err, errlen, "--hide '%s': cannot hide it: %s", h, strerror(-r));
			return r;
		}
	}
	return 0;
}

static void docker_masks_free(docker_masks *m)
{
	lb_sandbox_free(m->sb);
	m->sb = NULL;
}

/* -v SRC:DST[:ro|rw] as --mount, which refuses a missing source instead of creating it on
 * the host as -v does; read-only unless :rw. */
static int add_volume(lb_strv *c, const char *spec, const docker_masks *m, char *err,
		      size_t errlen)
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
	if (lb_strv_push(c, "--mount") ||
	    lb_strv_pushf(c, "type=bind,source=%s,target=%s%s", src, dst, rw ? "" : ",readonly"))
		return -ENOMEM;
	int r = hide_cache_in(c, src, dst, err, errlen);
	return r < 0 ? r : hide_masks_in(c, m, src, dst, err, errlen);
}

/* labbox's --tmpfs PATH[:size=S[,mode=M]] is docker's spelling already; exec is added since
 * docker's tmpfs default is noexec and the local sandbox's is not. */
static int add_tmpfs(lb_strv *c, const char *spec)
{
	const char *colon = strchr(spec, ':');
	if (lb_strv_push(c, "--tmpfs") < 0)
		return -ENOMEM;
	if (colon)
		return lb_strv_pushf(c, "%s,exec", spec);
	return lb_strv_pushf(c, "%s:size=%s,exec", spec, DEFAULT_TMPFS);
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

/* The last PYTHONPATH=... of the environment given (-e, then labbox's own), or NULL. */
static const char *given_pythonpath(const docker_state *d, const lb_backend_job *job)
{
	const char *v = NULL;
	for (size_t i = 0; i < job->nenv; i++)
		if (strncmp(job->env[i], "PYTHONPATH=", 11) == 0)
			v = job->env[i] + 11;
	json_object *env = json_arr(d->sandbox, "env");
	for (size_t i = 0; env && i < json_object_array_length(env); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(env, i));
		if (e && strncmp(e, "PYTHONPATH=", 11) == 0)
			v = e + 11;
	}
	return v;
}

/* The runtime gate, as the local sandbox installs it: its directory read-only and its events
 * file writable at the same fixed paths under /run, its directory first on PYTHONPATH (after
 * every other --env, since the engine keeps the last of a name), and its config naming the
 * places this container can write: exp/, its tmpfs mounts and the volumes given :rw. */
static int add_gate(lb_strv *c, const docker_state *d, const lb_backend_job *job)
{
	const char *outs[72];
	size_t n = 0;
	json_object *tmpfs = json_arr(d->sandbox, "tmpfs"), *vols = json_arr(d->sandbox, "volumes");
	char paths[64][PATH_MAX];
	size_t np = 0;
	if (job->exp_dir)
		outs[n++] = job->exp_dir;
	outs[n++] = "/tmp";
	outs[n++] = "/var/tmp";
	for (size_t i = 0; tmpfs && i < json_object_array_length(tmpfs) && np < 64; i++) {
		const char *t = json_object_get_string(json_object_array_get_idx(tmpfs, i));
		snprintf(paths[np], sizeof paths[np], "%.*s", (int)strcspn(t, ":"), t);
		outs[n++] = paths[np++];
	}
	for (size_t i = 0; vols && i < json_object_array_length(vols) && np < 64; i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(vols, i));
		const char *dst = strchr(v, ':'), *mode = dst ? strchr(dst + 1, ':') : NULL;
		if (mode && strcmp(mode, ":rw") == 0) {
			snprintf(paths[np], sizeof paths[np], "%.*s", (int)(mode - dst - 1), dst + 1);
			outs[n++] = paths[np++];
		}
	}
	/* Sockets as the local sandbox grants them: --network loopback or host. */
	const char *asked_net = json_str(d->sandbox, "network");
	lb_gate_config gc = {.mode = (lb_gate_mode)job->gate_mode, .policy = job->gate_policy,
			     .network = asked_net && strcmp(asked_net, "none") != 0, .exp_dir = job->exp_dir,
			     .outputs = outs, .noutputs = n, .staged_ns = lb_fs_now_ns(job->exp_dir),
			     .unread_dirs = job->gate_unread_dirs};
	int r = lb_gate_write_py(job->gate_py_dir);
	if (r == 0)
		r = lb_gate_write_config(job->gate_py_dir, &gc);
	if (r < 0)
		return r;
	const char *user = given_pythonpath(d, job);
	if (strchr(job->gate_py_dir, ',') || strchr(job->gate_events, ','))
		return -EINVAL; /* --mount cannot name it; the run directory's path was checked */
	r |= lb_strv_push(c, "--mount");
	r |= lb_strv_pushf(c, "type=bind,source=%s,target=%s,readonly", job->gate_py_dir, LB_GATE_PY_DIR);
	r |= lb_strv_push(c, "--mount");
	r |= lb_strv_pushf(c, "type=bind,source=%s,target=%s", job->gate_events, LB_GATE_EVENTS);
	if (user && *user)
		r |= lb_strv_pushf(c, "--env=" LB_GATE_PYTHONPATH_VAR "=%s", user);
	r |= lb_strv_pushf(c, "--env=PYTHONPATH=%s", LB_GATE_PY_DIR);
	r |= lb_strv_push(c, "--env=" LB_GATE_MAIN_VAR "=1");
	return r ? -ENOMEM : 0;
}

static int build_create(docker_state *d, const lb_backend_job *job, char *err, size_t errlen)
{
	lb_strv *c = &d->create;
	json_object *sb = d->sandbox;
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	int r = 0;
	r |= lb_strv_push(c, d->client);
	r |= lb_strv_push(c, d->early_run ? "run" : "create");
	if (d->early_run)
		r |= lb_strv_push(c, "--pull=never"); /* what is not there is reported, never pulled */
	r |= lb_strv_push(c, "--name");
	r |= lb_strv_push(c, d->name);
	r |= lb_strv_pushf(c, "--label=labbox.run=%s", job->id);
	r |= lb_strv_pushf(c, "--label=labbox.owner=%s:%d:%llu", host, (int)getpid(),
			lb_docker_start_time_of(getpid()));
	/* tini as pid 1: signals reach python (pid 1 ignores SIGTERM) and orphans are reaped. */
	r |= lb_strv_push(c, "--init");
	r |= lb_strv_push(c, "--read-only");
	r |= lb_strv_push(c, "--cap-drop");
	r |= lb_strv_push(c, "ALL");
	r |= lb_strv_push(c, "--security-opt");
	r |= lb_strv_push(c, "no-new-privileges");
	r |= lb_strv_pushf(c, "--user=%u:%u", (unsigned)d->uid, (unsigned)d->gid);
	const char *net = json_str(sb, "network");
	net = net ? net : "none";
	/* docker's none network is a namespace of its own with a loopback interface: labbox's
	 * none and loopback both come out as that, and the isolation block says loopback. */
	bool host_net = strcmp(net, "host") == 0;
	snprintf(d->network, sizeof d->network, "%s", host_net ? "host" : "loopback");
	r |= lb_strv_pushf(c, "--network=%s", host_net ? "host" : "none");
	int64_t mem = json_i64(sb, "memory_bytes");
	if (mem > 0) {
		d->has_memory = true;
		r |= lb_strv_pushf(c, "--memory=%lld", (long long)mem);
		r |= lb_strv_pushf(c, "--memory-swap=%lld", (long long)mem); /* no swap beyond it */
	}
	json_object *cpus;
	if (sb && json_object_object_get_ex(sb, "cpus", &cpus) && cpus)
		r |= lb_strv_pushf(c, "--cpus=%g", json_object_get_double(cpus));
	int64_t pids = json_i64(sb, "pids_limit");
	if (pids > 0)
		r |= lb_strv_pushf(c, "--pids-limit=%lld", (long long)pids);
	if (strcmp(d->engine, "podman") == 0)
		r |= podman_ulimits(c);
	/* The local sandbox's /dev/shm without --shm-size (1 GiB, as /tmp's DEFAULT_TMPFS),
	 * not the engine's 64m: DataLoader workers that pass locally must not run out of it. */
	int64_t shm = json_i64(sb, "shm_size_bytes");
	/* In bytes: the API's ShmSize is a number (docker_api_run.c), and a flag it cannot
	 * put there would make every run start the client. */
	r |= lb_strv_pushf(c, "--shm-size=%lld", shm > 0 ? (long long)shm : 1LL << 30);
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
		r |= lb_strv_push(c, "--gpus");
		r |= strcmp(gpus, "all") == 0 ? lb_strv_push(c, "all") : lb_strv_pushf(c, "\"device=%s\"", gpus);
	}
	if (r)
		return -ENOMEM;
	__attribute__((cleanup(docker_masks_free))) docker_masks masks = {0};
	if ((r = docker_masks_make(&masks, sb, job, err, errlen)) < 0)
		return r;
	json_object *vols = json_arr(sb, "volumes");
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++)
		if ((r = add_volume(c, json_object_get_string(json_object_array_get_idx(vols, i)),
				    &masks, err, errlen)) < 0)
			return r;
	if (job->exp_dir && strchr(job->exp_dir, ',')) {
		snprintf(err, errlen, "the %s path has a comma, which docker's --mount cannot name: "
			 "choose another %s", d->exec ? "--workdir" : "run directory's",
			 d->exec ? "directory" : "--runs-dir");
		return -EINVAL;
	}
	if (job->exp_dir) {
		r |= lb_strv_push(c, "--mount");
		r |= lb_strv_pushf(c, "type=bind,source=%s,target=%s", job->exp_dir, job->exp_dir);
		/* exec's --workdir is the user's own directory, bound as it is. */
		if (r == 0 && (r = hide_masks_in(c, &masks, job->exp_dir, job->exp_dir, err,
						 errlen)) < 0)
			return r;
	}
	/* exec without --workdir starts in the private /tmp, as the local sandbox's exec does. */
	r |= lb_strv_pushf(c, "--workdir=%s", job->exp_dir ? job->exp_dir : "/tmp");
	/* exec relays labbox's stdin, as the local exec does: the container keeps it open. */
	if (d->exec)
		r |= lb_strv_push(c, "--interactive");
	r |= lb_strv_push(c, "--env=HOME=" LB_SANDBOX_HOME);
	for (size_t i = 0; i < job->nenv; i++)
		r |= lb_strv_pushf(c, "--env=%s", job->env[i]);
	json_object *env = json_arr(sb, "env");
	for (size_t i = 0; env && i < json_object_array_length(env); i++)
		r |= lb_strv_pushf(c, "--env=%s", json_object_get_string(json_object_array_get_idx(env, i)));
	/* A secret by name only: the client reads its value from labbox's environment, so it
	 * is on no command line and in no record. */
	json_object *sec = json_arr(sb, "secret_env");
	for (size_t i = 0; sec && i < json_object_array_length(sec); i++)
		r |= lb_strv_pushf(c, "--env=%s", json_object_get_string(json_object_array_get_idx(sec, i)));
	if (job->gate_py_dir && (r = add_gate(c, d, job)) < 0) {
		snprintf(err, errlen, "cannot install the runtime gate: %s", strerror(-r));
		return r;
	}
	/* run: argv[0] is the pipeline's (local) interpreter; in the container it is the
	 * image's. exec: argv[0] is the command, looked up on the image's PATH. */
	r |= lb_strv_pushf(c, "--entrypoint=%s", d->exec ? job->argv[0] : d->python);
	r |= lb_strv_push(c, d->image);
	for (size_t i = 1; job->argv[i]; i++)
		r |= lb_strv_push(c, job->argv[i]);
	return r ? -ENOMEM : 0;
}

/* Transports podman (containers/image) reads before a ':' in place of a registry: each names
 * a file, a directory or another store on this host, never an image to pull. */
static bool names_a_transport(const char *name)
{
	static const char *const transports[] = {"docker-archive", "oci-archive", "oci", "dir",
						  "docker-daemon", "containers-storage", "docker",
						  "ostree", "sif", "tarball"};
	const char *colon = strchr(name, ':');
	if (!colon)
		return false;
	size_t n = (size_t)(colon - name);
	for (size_t i = 0; i < sizeof transports / sizeof *transports; i++)
		if (strlen(transports[i]) == n && strncmp(name, transports[i], n) == 0)
			return true;
	return false;
}

bool lb_docker_image_name_ok(const char *name)
{
	if (!name || !*name || strlen(name) > 255 || name[0] == '-' || names_a_transport(name))
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (!(isalnum(*p) || strchr("._-:/@+", *p)))
			return false;
	return true;
}

/* The interpreter's name goes into a shell line of the Dockerfile: a plain path only. */
static bool python_name_ok(const char *name)
{
	if (!name || !*name || strlen(name) > 255 || name[0] == '-')
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (!(isalnum(*p) || strchr("._-/+", *p)))
			return false;
	return true;
}

/* The Dockerfile labbox builds when no image is named: the seed's recipe (a Python base, the
 * experiment's requirements.txt, a non-root user) without the experiment's code, which is
 * bound at run time, so one image serves every change of the code with the same
 * requirements. pip runs as root into the image's own Python (an image is its own
 * environment, so Debian's externally-managed marker is overridden); a base without pip is
 * named plainly rather than left to the shell's "No module named pip". The names in it were
 * checked (lb_docker_image_name_ok, python_name_ok), so nothing in it needs quoting beyond
 * the single quotes. */
static int dockerfile_text(const docker_state *d, bool requirements, lb_buf *out)
{
	int r = lb_buf_printf(out,
			      "# Generated by labbox (docs/decisions.md: docker images built by labbox).\n"
			      "# The experiment's code is not in the image: labbox binds the staged exp/\n"
			      "# at run time and runs it as the owner of exp/ (--user).\n"
			      "FROM %s\n", d->base_image);
	if (r == 0 && requirements)
		r = lb_buf_printf(
			out,
			"COPY requirements.txt /tmp/labbox-requirements.txt\n"
			"RUN if ! '%s' -m pip --version >/dev/null 2>&1; then \\\n"
			"      echo 'labbox: the base image %s has no pip (%s -m pip does not run), so "
			"the experiment'\"'\"'s requirements.txt cannot be installed: use a --base-image with "
			"pip (" LB_DOCKER_DEFAULT_BASE " has it) or an --image holding the packages'; "
			"exit 3; fi; \\\n"
			"    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore '%s' -m pip install "
			"--no-cache-dir --disable-pip-version-check -r /tmp/labbox-requirements.txt "
			"&& rm -f /tmp/labbox-requirements.txt\n",
			d->python, d->base_image, d->python, d->python);
	if (r == 0)
		r = lb_buf_printf(
			out,
			"RUN useradd --create-home --shell /bin/sh researcher 2>/dev/null || "
			"adduser -D -s /bin/sh researcher 2>/dev/null || { echo 'labbox: the base image "
			"%s has neither useradd nor adduser to create the non-root user'; exit 3; }\n"
			"USER researcher\n"
			"WORKDIR /home/researcher\n",
			d->base_image);
	return r;
}

/* Runs the client with args, its output (both streams) appended to the file at log_path.
 * Returns its exit status, or a negative errno when it could not run. */
static int client_to_log(docker_state *d, const char *const *args, const char *log_path)
{
	LB_AUTOCLOSE int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	lb_strv a = {0};
	int r = lb_strv_push(&a, d->client);
	for (size_t i = 0; r == 0 && args[i]; i++)
		r = lb_strv_push(&a, args[i]);
	if (r < 0) {
		lb_strv_free(&a);
		return r;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(a.v[0], a.v);
		_exit(127);
	}
	lb_strv_free(&a);
	if (pid < 0)
		return -errno;
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Why a build failed, from the end of its log: a line the Dockerfile's own checks wrote
 * ("labbox: ..."), else the last few lines (terminal colour codes removed), joined. */
static void build_reason(const char *log_path, char *out, size_t n)
{
	snprintf(out, n, "no output");
	LB_AUTOCLOSE int fd = open(log_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > 8192 ? end - 8192 : 0;
	char buf[8193];
	ssize_t k = pread(fd, buf, sizeof buf - 1, from);
	if (k <= 0)
		return;
	buf[k] = '\0';
	/* Colour codes (ESC [ ... letter) and carriage returns out. */
	char *w = buf;
	for (char *p = buf; *p; p++) {
		if (*p == '\033' && p[1] == '[') {
			p += 2;
			while (*p && !isalpha((unsigned char)*p))
				p++;
			if (!*p)
				break;
			continue;
		}
		if (*p != '\r')
			*w++ = *p;
	}
	*w = '\0';
	const char *lines[64];
	size_t nl = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ')
			line++;
		if (!*line)
			continue;
		/* BuildKit prefixes a step's output ("#6 0.21 labbox: ..."); the step's own
		 * command line, which holds the echo, is not the message. */
		const char *m = strstr(line, "labbox: ");
		if (m && !strstr(line, "echo ")) {
			snprintf(out, n, "%s", m + 8);
			return;
		}
		if (nl == 64) {
			memmove(lines, lines + 1, sizeof lines - sizeof *lines);
			nl--;
		}
		lines[nl++] = line;
	}
	out[0] = '\0';
	size_t first = nl > 4 ? nl - 4 : 0;
	for (size_t i = first; i < nl; i++) {
		size_t used = strlen(out);
		snprintf(out + used, n - used, "%s%s", i > first ? " | " : "", lines[i]);
	}
	if (!out[0])
		snprintf(out, n, "no output");
}

/* The image id of ref, or -ENOENT when the engine has no such image. */
static int image_id_of(docker_state *d, const char *ref, char *id, size_t idlen, char *said,
		       size_t saidlen)
{
	if (d->api[0]) {
		char path[1024], why[256];
		json_object *img = NULL;
		int r = lb_docker_api_path(path, sizeof path, "/images/", ref, "/json");
		if (r == 0)
			r = lb_docker_api_json(d->api, "GET", path, API_TIMEOUT_MS, &img, why, sizeof why);
		const char *v = r == 0 ? lb_docker_jstr(img, "Id") : NULL;
		bool found = v && *v;
		if (found)
			snprintf(id, idlen, "%s", v);
		else if (said)
			snprintf(said, saidlen, "%s", r < 0 ? why : "its inspect has no Id");
		json_object_put(img);
		return found ? 0 : -ENOENT;
	}
	lb_buf o = {0};
	const char *args[] = {"image", "inspect", "--format", "{{.Id}}", ref, NULL};
	int st = client_run(d, args, true, 4096, &o);
	if (st != 0 || !o.data || !o.len) {
		if (said)
			one_line(&o, said, saidlen);
		lb_buf_free(&o);
		return -ENOENT;
	}
	snprintf(id, idlen, "%s", o.data);
	lb_buf_free(&o);
	return 0;
}

/* No image named: build one from the generated Dockerfile, or reuse the one built from the
 * same Dockerfile, requirements.txt and base image (its tag is their hash). The Dockerfile
 * and its context are kept in RUN_DIR/docker-build, the build's output in
 * RUN_DIR/docker-build.log. */
static int build_image(docker_state *d, const lb_backend_job *job, char *err, size_t errlen)
{
	if (!lb_docker_image_name_ok(d->base_image)) {
		snprintf(err, errlen, "the base image name '%s' is not an image reference", d->base_image);
		return -EINVAL;
	}
	if (!python_name_ok(d->python)) {
		snprintf(err, errlen,
			 "--python '%s' cannot be named in the generated Dockerfile (letters, digits "
			 "and ._-/+ only)", d->python);
		return -EINVAL;
	}
	snprintf(d->build_dir, sizeof d->build_dir, "%s/docker-build", job->run_dir);
	snprintf(d->build_log, sizeof d->build_log, "%s/docker-build.log", job->run_dir);
	/* The base: what the engine has, else what docker pull brings. */
	char said[300] = "";
	if (image_id_of(d, d->base_image, d->base_id, sizeof d->base_id, NULL, 0) < 0) {
		const char *pull[] = {"pull", d->base_image, NULL};
		int st = client_to_log(d, pull, d->build_log);
		if (st != 0 ||
		    image_id_of(d, d->base_image, d->base_id, sizeof d->base_id, NULL, 0) < 0) {
			build_reason(d->build_log, said, sizeof said);
			snprintf(err, errlen,
				 "the base image '%s' is not in the %s engine and `%s pull %s` failed "
				 "(full log: %s): %s; load it (docker load, docker import) or choose "
				 "another with --base-image",
				 d->base_image, d->engine, d->engine, d->base_image, d->build_log, said);
			return -ENOENT;
		}
	}
	/* The staged copy's requirements.txt: the file that goes with the code that runs. */
	LB_AUTOFREE char *req = NULL;
	size_t reqlen = 0;
	LB_AUTOCLOSE int efd = open(job->exp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = efd < 0 ? -errno : lb_read_file_at(efd, "requirements.txt", 1 << 20, &req, &reqlen);
	if (r < 0 && r != -ENOENT) {
		snprintf(err, errlen, "the experiment's requirements.txt cannot be used for the image: %s",
			 r == -ELOOP	  ? "it is a symbolic link (labbox builds from a regular file only)"
			 : r == -EFBIG ? "it is larger than 1 MiB"
				       : strerror(-r));
		return r;
	}
	d->requirements = r == 0;
	lb_buf df = {0};
	if ((r = dockerfile_text(d, d->requirements, &df)) < 0)
		return r;
	/* The tag: the hash of everything the image is made of. */
	lb_sha256 c;
	lb_sha256_init(&c);
	static const char v[] = "labbox.dockerfile/1\n";
	lb_sha256_update(&c, v, sizeof v - 1);
	lb_sha256_update(&c, df.data, df.len + 1); /* with its NUL: a separator */
	lb_sha256_update(&c, d->requirements ? "R" : "-", 1);
	if (d->requirements)
		lb_sha256_update(&c, req, reqlen);
	lb_sha256_update(&c, "\n", 1);
	lb_sha256_update(&c, d->base_id, strlen(d->base_id));
	uint8_t dg[32];
	lb_sha256_final(&c, dg);
	lb_sha256_hex(dg, d->recipe);
	char tag[64];
	snprintf(tag, sizeof tag, "labbox-experiment:%.20s", d->recipe);
	free(d->image);
	if (!(d->image = strdup(tag))) {
		lb_buf_free(&df);
		return -ENOMEM;
	}
	char path[PATH_MAX + 32];
	if (mkdir(d->build_dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", d->build_dir, strerror(errno));
		lb_buf_free(&df);
		return r;
	}
	snprintf(path, sizeof path, "%s/Dockerfile", d->build_dir);
	r = lb_write_file_atomic_mode(path, df.data, df.len, 0644);
	lb_buf_free(&df);
	if (r == 0 && d->requirements) {
		snprintf(path, sizeof path, "%s/requirements.txt", d->build_dir);
		r = lb_write_file_atomic_mode(path, req, reqlen, 0644);
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	if (image_id_of(d, d->image, d->image_id, sizeof d->image_id, NULL, 0) == 0) {
		snprintf(d->image_origin, sizeof d->image_origin, "reused");
		d->build_log[0] = '\0'; /* nothing was built, so no log */
		return 0;
	}
	char label[128], base_label[300], file[PATH_MAX + 16];
	snprintf(label, sizeof label, "labbox.recipe=%s", d->recipe);
	snprintf(base_label, sizeof base_label, "labbox.base=%s", d->base_image);
	snprintf(file, sizeof file, "%s/Dockerfile", d->build_dir);
	/* --force-rm: a failed step leaves no intermediate container behind. */
	const char *build[] = {"--force-rm", "--label", label, "--label", base_label,
			       "--tag", d->image, "--file", file, d->build_dir, NULL};
	lb_strv a = {0};
	if (engine_args(d, &a, "build", build) < 0) {
		lb_strv_free(&a);
		return -ENOMEM;
	}
	double t0 = lb_time_monotonic();
	int st = client_to_log(d, (const char *const *)a.v, d->build_log);
	lb_strv_free(&a);
	d->build_s = lb_time_monotonic() - t0;
	if (st != 0 || image_id_of(d, d->image, d->image_id, sizeof d->image_id, NULL, 0) < 0) {
		build_reason(d->build_log, said, sizeof said);
		/* The log's path first: a long reason is what a short buffer cuts. */
		snprintf(err, errlen, "%s build of the experiment's image exited %d (full log: "
			 "%s): %s", d->engine, st, d->build_log, said);
		return -EIO;
	}
	snprintf(d->image_origin, sizeof d->image_origin, "built");
	return 0;
}

static void start_guardian(docker_state *d);
static bool disk_poll_accepted(const docker_state *d);

/* The client whose output is the run's (run, or start --attach): stdout and stderr on p (e
 * for exec's stderr), stdin /dev/null unless exec. */
static pid_t start_attached(docker_state *d, char *const *argv, int p[2], int e[2])
{
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (!d->exec) {
			int nul = open("/dev/null", O_RDONLY);
			if (nul >= 0)
				dup2(nul, 0);
		}
		dup2(p[1], 1);
		dup2(d->exec ? e[1] : p[1], 2);
		if (d->cwd[0])
			(void)!chdir(d->cwd); /* a place for conmon's file, not a condition of the run */
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (e[1] >= 0)
		close(e[1]);
	return pid;
}

/* docker rm -f -v NAME: 0 when it is gone. */
static int container_rm(docker_state *d, const char *name)
{
	if (d->api[0])
		return lb_docker_api_rm(d->api, name, API_TIMEOUT_MS);
	lb_buf o = {0};
	const char *rm[] = {"rm", "-f", "-v", name, NULL};
	int st = client_run(d, rm, true, 4096, &o);
	lb_buf_free(&o);
	return st == 0 ? 0 : -EIO;
}

/* The early docker run given up (another engine serves, the image is not there): its
 * container removed, its client reaped. */
static void early_run_undo(docker_state *d)
{
	if (d->run_pid > 0) {
		kill(d->run_pid, SIGKILL);
		while (waitpid(d->run_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (d->run_out >= 0)
		close(d->run_out);
	d->run_pid = -1;
	d->run_out = -1;
	d->early_run = false;
	lb_buf_free(&d->api_early);
}

/* The early run over the API: the container created, attached and started now (a few ms
 * of the engine's), err what the engine said when it refused; -ENOTSUP when the flags are
 * not all the API path's (the client runs it then). */
static int api_launch(docker_state *d, char *err, size_t errlen)
{
	lb_docker_api_run ar = {.fd = -1};
	d->run_t0 = lb_time_monotonic();
	int r = lb_docker_api_launch(d->api, d->create.v, API_TIMEOUT_MS, &ar, err, errlen);
	if (r < 0)
		return r;
	d->api_run = true;
	d->run_out = ar.fd;
	d->api_early = ar.early;
	snprintf(d->container, sizeof d->container, "%s", ar.id);
	return 0;
}

static int docker_prepare(lb_backend *b, const lb_backend_job *job, char *err, size_t errlen)
{
	docker_state *d = state_of(b);
	/* The image's id is asked for while the engine's info is read: two client start-ups in
	 * the time of one. Only when the client asked for is the one that will serve. */
	client_call img = {.pid = -1, .fd = -1}, crt = {.pid = -1, .fd = -1};
	char api_failed[400] = "";
	bool api_tried = false;
	const char *want = d->engine_asked ? d->engine : "docker";
	int r;
	snprintf(d->name, sizeof d->name, "labbox-%s", job->id);
	/* exec has no run directory: its clients stay where labbox was started. */
	snprintf(d->cwd, sizeof d->cwd, "%s", job->run_dir ? job->run_dir : "");
	/* Through the API the image is asked for after the info, a few ms each. */
	api_for(d, want);
	if (d->image && lb_find_executable(want, &d->client) == 0) {
		const char *iargs[] = {"image", "inspect", "--format", "{{.Id}}", d->image, NULL};
		if (!d->api[0])
			client_start(d, iargs, true, &img);
		/* The container is created meanwhile too (its guardian first, so it never outlives
		 * labbox): a missing image or a silent engine fails it, and is reported from the
		 * calls beside it. A run (not exec) that run will not refuse is started
		 * right away with docker run: the experiment's start does not wait for the
		 * engine's info, nor for a second client's start-up (start --attach). */
		d->early_run = !d->exec && !(job->disk_limit && json_i64(d->sandbox, "disk_limit_bytes") > 0 &&
					     !disk_poll_accepted(d));
		if ((r = build_create(d, job, err, errlen)) < 0) {
			lb_buf ign = {0};
			client_collect(&img, 4096, &ign);
			lb_buf_free(&ign);
			return r;
		}
		live_add(d, want);
		start_guardian(d);
		int p[2], e[2] = {-1, -1};
		int ar = d->early_run && d->api[0] ? api_launch(d, api_failed, sizeof api_failed) : -ENOTSUP;
		if (ar == 0 || (ar != -ENOTSUP && d->early_run)) {
			/* Made over the API, or refused by the engine (the refusal is the run's
			 * create failure, or the wrong engine's, undone below). */
			api_tried = true;
			if (ar < 0)
				d->early_run = false;
		} else if (d->early_run && pipe2(p, O_CLOEXEC) == 0) {
			d->run_t0 = lb_time_monotonic();
			d->run_pid = start_attached(d, d->create.v, p, e);
			d->run_out = p[0];
			/* named: stop, kill, inspect and rm need no id */
			snprintf(d->container, sizeof d->container, "%s", d->name);
			if (d->run_pid < 0) { /* no client: no container; run reports it */
				early_run_undo(d);
				d->container[0] = '\0';
			}
		} else {
			d->early_run = false;
			lb_strv_free(&d->create);
			if ((r = build_create(d, job, err, errlen)) < 0)
				return r;
			client_start_argv(d->create.v, true, d->cwd, &crt);
		}
	}
	char api_sock[sizeof d->api];
	snprintf(api_sock, sizeof api_sock, "%s", d->api); /* pick_engine sets d->api anew */
	r = pick_engine(d, NULL, err, errlen);
	lb_buf io = {0}, co = {0};
	int ist = client_collect(&img, 4096, &io);
	if (img.pid < 0 && d->image && d->api[0] && r == 0 && strcmp(d->engine, want) == 0) {
		char id[sizeof d->image_id];
		ist = image_id_of(d, d->image, id, sizeof id, NULL, 0) == 0 ? 0 : 1;
		if (ist == 0)
			lb_buf_puts(&io, id);
	}
	int cst = d->early_run ? 0 : api_tried ? 1 : client_collect(&crt, 4096, &co);
	if (api_tried && !d->early_run)
		lb_buf_puts(&co, api_failed);
	if (cst == 0 && co.data && co.len) {
		char *nl = strchr(co.data, '\n');
		if (nl)
			*nl = '\0';
		snprintf(d->container, sizeof d->container, "%s", co.data); /* cleanup removes it */
	}
	if (d->create.n && (r < 0 || strcmp(d->engine, want) != 0 || ist != 0)) {
		/* Made by an engine that is not the one to serve, or for an image that is not
		 * there: removed now, and made again (by run) when the run goes on. */
		if (d->container[0]) {
			if (d->early_run)
				early_run_undo(d);
			/* Made over the API: removed there, whichever engine now serves. */
			if ((d->api_run ? lb_docker_api_rm(api_sock, d->container, API_TIMEOUT_MS)
					: container_rm(d, d->container)) == 0)
				lb_docker_live_done(&d->live);
			d->container[0] = '\0';
			d->api_run = false;
		}
		lb_guard_stop(&d->guard);
		lb_strv_free(&d->create);
		cst = -EIO;
	} else if (d->create.n) {
		d->created_early = true;
		if (!d->early_run && (cst != 0 || !d->container[0]))
			one_line(&co, d->create_failed, sizeof d->create_failed);
	}
	lb_buf_free(&co);
	if (r < 0) {
		lb_buf_free(&io);
		return r;
	}
	if (strcmp(d->engine, want) != 0)
		ist = -EIO; /* asked of an engine that did not answer: ask the one that did */
	/* Containers of dead runs are removed beside this run, not before it; only when this
	 * user's labbox made one on this engine that it has not seen removed (a marker of
	 * another run): each sweep is a client call listing every labbox container. */
	if (strcmp(d->live_engine, d->engine) != 0) {
		lb_docker_live_close(&d->live);
		snprintf(d->live_engine, sizeof d->live_engine, "%s", d->engine);
		lb_docker_live_open(&d->live, d->engine);
	}
	pid_t lp = lb_docker_live_maybe_leftovers(&d->live) ? fork() : -1;
	if (lp == 0) {
		/* Not a holder of labbox's output: a reader waiting for its end waits for labbox. */
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		if (remove_leftovers(d) == 0)
			lb_docker_live_forget_dead(&d->live);
		_exit(0);
	}
	d->leftovers_pid = lp;
	if (!d->image) {
		lb_buf_free(&io);
		if ((r = build_image(d, job, err, errlen)) < 0)
			return r;
	} else if (ist == 0 && io.data && io.len) {
		snprintf(d->image_id, sizeof d->image_id, "%s", io.data);
		lb_buf_free(&io);
	} else {
		lb_buf_free(&io);
		char said[300];
		if (image_id_of(d, d->image, d->image_id, sizeof d->image_id, said, sizeof said) < 0) {
			snprintf(err, errlen,
				 "the image '%s' is not in the %s engine (%s): %s; pull or build it, "
				 "`%s images` lists those there",
				 d->image, d->engine, engine_host(d->engine) ? engine_host(d->engine) : "its default socket",
				 said, d->engine);
			return -ENOENT;
		}
	}
	if (!d->exec && (r = snapshot_environment(d, job, err, errlen)) < 0)
		return r;
	return d->created_early ? 0 : build_create(d, job, err, errlen);
}

/* What the guard does when labbox died: the container removed (over the API where the run
 * was made there), and the live record closed once it is gone. */
static void rm_orphan(void *arg)
{
	docker_state *d = arg;
	pid_t rm = fork();
	if (rm == 0 && d->api[0])
		_exit(lb_docker_api_rm(d->api, d->name, API_TIMEOUT_MS) == 0 ? 0 : 1);
	if (rm == 0) {
		execl(d->client, d->client, "rm", "-f", "-v", d->name, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (rm > 0 && waitpid(rm, &st, 0) == rm && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		lb_docker_live_done(&d->live);
}

/* Without it (no descriptor or process left) a labbox killed outright leaves the container
 * to the next run's sweep of dead runs' leftovers (their labbox.run label). */
static void start_guardian(docker_state *d)
{
	(void)lb_guard_start(&d->guard, rm_orphan, d);
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
static int inspect_end(docker_state *d, lb_docker_end *end)
{
	*end = (lb_docker_end){.exit_code = -1};
	if (d->api[0])
		return lb_docker_api_end(d->api, d->container, API_TIMEOUT_MS, end);
	lb_buf o = {0};
	const char *args[] = {"inspect", "--format",
			      "{{.State.ExitCode}} {{.State.OOMKilled}} {{.State.Status}} {{.State.Error}}",
			      d->container, NULL};
	int st = client_run(d, args, false, 4096, &o);
	char oomw[16] = "";
	int n = 0;
	int r = st == 0 && o.data &&
			sscanf(o.data, "%d %15s %31s%n", &end->exit_code, oomw, end->status, &n) == 3
		? 0
		: -EIO;
	end->oom = strcmp(oomw, "true") == 0;
	if (r == 0) {
		const char *e = o.data + n + strspn(o.data + n, " ");
		snprintf(end->error, sizeof end->error, "%.*s", (int)strcspn(e, "\n"), e);
	}
	lb_buf_free(&o);
	return r;
}

/* exp/ is a bind mount, which docker cannot size: the disk limit is a look at exp/ once a
 * second, which a fast writer passes in between. The default limit is that safety net; one
 * the user gave is refused unless --allow-degraded disk (or all) accepts the poll, as the
 * local sandbox does where it cannot make exp/ a file system of its own. */
/* --allow-degraded disk (or all) was given. */
static bool disk_poll_accepted(const docker_state *d)
{
	bool accepted = false;
	json_object *ad = json_arr(d->sandbox, "allow_degraded");
	for (size_t i = 0; ad && i < json_object_array_length(ad); i++) {
		const char *w = json_object_get_string(json_object_array_get_idx(ad, i));
		accepted |= w && (strcmp(w, "disk") == 0 || strcmp(w, "all") == 0);
	}
	return accepted;
}

static bool disk_limit_holds(docker_state *d, const lb_backend_job *job, lb_sandbox_result *res)
{
	if (!job->disk_limit)
		return true;
	bool given = json_i64(d->sandbox, "disk_limit_bytes") > 0, accepted = disk_poll_accepted(d);
	res->isolation.disk_enforced_by =
		!given	   ? "polling (exp/ measured once a second; docker cannot size a bind mount)"
		: accepted ? "polling (accepted: exp/ measured once a second; docker cannot size a "
			     "bind mount)"
			   : NULL;
	if (given && !accepted) {
		setup_failed(res, "setup_disk", "--disk-limit cannot be held in mode docker: ",
			     "exp/ is a bind mount docker does not size, so the limit would be a look "
			     "once a second that a fast writer passes; accept that with "
			     "--allow-degraded disk");
		return false;
	}
	return true;
}

/* The attach stream's frames, to the pipeline as the client's output went there. */
static void mux_out(void *ctx, int stream, const char *data, size_t len)
{
	const lb_backend_job *job = ctx;
	if (job->output)
		job->output(job->output_ctx, stream == 2 ? LB_STREAM_STDERR : LB_STREAM_STDOUT, data, len);
}

/* docker stop --time G / docker kill, in the background: over the API for a container made
 * there, else by the client. */
static pid_t stop_async(docker_state *d, bool kill_it)
{
	if (d->api_run) {
		char act[32];
		snprintf(act, sizeof act, "stop?t=%d", (int)(d->grace + 0.999));
		return lb_docker_api_spawn(d->api, d->container, kill_it ? "kill" : act,
					   (int)((d->grace + ENGINE_MARGIN_S) * 1000));
	}
	if (kill_it)
		return spawn_client(d, "kill", NULL, NULL);
	char g[32];
	snprintf(g, sizeof g, "%d", (int)(d->grace + 0.999));
	return spawn_client(d, "stop", "--time", g);
}

static int docker_run(lb_backend *b, const lb_backend_job *job, lb_sandbox_result *res)
{
	docker_state *d = state_of(b);
	res->exit_code = -1;
	res->peak_source = "unknown";
	res->peak_memory_source = "not measured (docker backend)";
	fill_isolation(d, res);
	if (!disk_limit_holds(d, job, res))
		return 0;
	int r;
	if (d->created_early) {
		if (!d->container[0]) {
			setup_failed(res, "docker create", "docker create failed: ", d->create_failed);
			return 0;
		}
	} else {
		live_add(d, d->engine);
		if (d->guard.wr < 0)
			start_guardian(d);
		lb_buf o = {0};
		int st = 0;
		r = lb_capture(d->create.v, 4096, true, &o, &st);
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
	/* p: the output (both streams for run, whose log merges them); e: exec's stderr, which
	 * stays apart as the local exec keeps it. */
	int p[2] = {-1, -1}, e[2] = {-1, -1};
	double t0;
	pid_t att;
	bool api_run = d->early_run && d->api_run;
	lb_docker_mux mux = {0};
	if (api_run) {
		/* Made, attached and started over the API by prepare: no client. */
		att = 0;
		p[0] = d->run_out;
		t0 = d->run_t0;
		d->run_out = -1;
		if (sfd < 0) {
			r = -errno;
			close(p[0]);
			sigprocmask(SIG_SETMASK, &old, NULL);
			return r;
		}
		if (d->api_early.len)
			lb_docker_mux_feed(&mux, d->api_early.data, d->api_early.len, mux_out, (void *)job);
		lb_buf_free(&d->api_early);
	} else if (d->early_run && d->run_pid > 0) {
		/* docker run, started by prepare: the budget counts from its start. */
		att = d->run_pid;
		p[0] = d->run_out;
		t0 = d->run_t0;
		d->run_pid = -1;
		d->run_out = -1;
		if (sfd < 0) {
			r = -errno;
			kill(att, SIGKILL);
			waitpid(att, NULL, 0);
			close(p[0]);
			sigprocmask(SIG_SETMASK, &old, NULL);
			return r;
		}
	} else {
		if (sfd < 0 || pipe2(p, O_CLOEXEC) < 0 || (d->exec && pipe2(e, O_CLOEXEC) < 0)) {
			r = -errno;
			sigprocmask(SIG_SETMASK, &old, NULL);
			return r;
		}
		char *start[] = {d->client, (char *)"start", (char *)"--attach",
				 d->exec ? (char *)"--interactive" : d->container,
				 d->exec ? d->container : NULL, NULL};
		t0 = lb_time_monotonic();
		att = start_attached(d, start, p, e);
	}
	if (att < 0) {
		r = -errno;
		close(p[0]);
		if (e[0] >= 0)
			close(e[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	bool stopping = false, killed = false, open_out = true, open_err = e[0] >= 0;
	double stop_at = 0, last_disk = t0;
	pid_t helper = -1;
	char buf[65536];
	char tail[400] = ""; /* what docker run said last, should it never have made the container */
	size_t tail_n = 0;
	/* Both streams end with the attach. */
	while (open_out || open_err) {
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
			helper = stop_async(d, false);
		}
		if (stopping && !killed && now - stop_at > d->grace + 2.0) {
			/* The engine's own stop is late: SIGKILL, as the sandbox does after the grace. */
			killed = true;
			pid_t k = stop_async(d, true);
			if (k > 0)
				waitpid(k, NULL, 0);
		}
		if (stopping && now - stop_at > d->grace + ENGINE_MARGIN_S) {
			if (att > 0)
				kill(att, SIGKILL); /* the engine is gone: stop waiting for it */
			break;
		}
		double wait = 0.25;
		if (!stopping && job->budget > 0 && t0 + job->budget - now < wait)
			wait = t0 + job->budget - now;
		struct pollfd pf[3] = {{.fd = open_out ? p[0] : -1, .events = POLLIN},
				       {.fd = sfd, .events = POLLIN},
				       {.fd = open_err ? e[0] : -1, .events = POLLIN}};
		int n = poll(pf, 3, (int)(wait * 1000) + 1);
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
		if (api_run && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t k = read(p[0], buf, sizeof buf);
			if (k > 0)
				lb_docker_mux_feed(&mux, buf, (size_t)k, mux_out, (void *)job);
			else if (k == 0 || (errno != EAGAIN && errno != EINTR))
				open_out = false;
		} else if (pf[0].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(p[0], buf, sizeof buf);
			if (k > 0 && job->output)
				job->output(job->output_ctx, LB_STREAM_STDOUT, buf, (size_t)k);
			if (k > 0 && d->early_run) {
				size_t keep = (size_t)k < sizeof tail - 1 ? (size_t)k : sizeof tail - 1;
				if (tail_n + keep > sizeof tail - 1) {
					size_t drop = tail_n + keep - (sizeof tail - 1);
					memmove(tail, tail + drop, tail_n - drop);
					tail_n -= drop;
				}
				memcpy(tail + tail_n, buf + k - keep, keep);
				tail_n += keep;
				tail[tail_n] = '\0';
			} else if (k == 0)
				open_out = false;
		}
		if (pf[2].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(e[0], buf, sizeof buf);
			if (k > 0 && job->output)
				job->output(job->output_ctx, LB_STREAM_STDERR, buf, (size_t)k);
			else if (k == 0)
				open_err = false;
		}
	}
	close(p[0]);
	if (e[0] >= 0)
		close(e[0]);
	int ast = 0, wst = -1;
	if (att > 0)
		waitpid(att, &ast, 0);
	if (helper > 0)
		waitpid(helper, NULL, 0);
	if (api_run) {
		/* The stream's end is the container's: its status, the engine's wait. A wait that
		 * does not end (output closed, the process not) ends in a kill. */
		int wms = (int)((stopping ? d->grace + ENGINE_MARGIN_S : ENGINE_MARGIN_S) * 1000);
		if (lb_docker_api_wait(d->api, d->container, wms, &wst) < 0) {
			pid_t k = stop_async(d, true);
			if (k > 0)
				waitpid(k, NULL, 0);
			if (lb_docker_api_wait(d->api, d->container, (int)(ENGINE_MARGIN_S * 1000), &wst) < 0)
				wst = -1;
		}
		/* As the client's exit status: 0 only for the container's own 0. */
		ast = wst == 0 ? 0 : 1 << 8;
	}
	/* A stop still on its way (the engine answered attach first) ends before inspect. An
	 * attach that ended by itself ended with the container, so a run that was not stopped
	 * spares the call. */
	if (!api_run && (stopping || !WIFEXITED(ast))) {
		int ws;
		if (d->api[0]) {
			lb_docker_api_wait(d->api, d->container, (int)((d->grace + ENGINE_MARGIN_S) * 1000), &ws);
		} else {
			lb_buf w = {0};
			const char *wargs[] = {"wait", d->container, NULL};
			client_run(d, wargs, false, 4096, &w);
			lb_buf_free(&w);
		}
	}
	res->wall_s = lb_time_monotonic() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);

	lb_docker_end end = {.exit_code = -1};
	/* An attach that ended by itself with status 0 reports the container's own exit 0 (the
	 * client's failures are never 0, and an OOM kill is never 0): the common end of a run
	 * spares docker inspect. Anything else is read from the engine. */
	if (!stopping && WIFEXITED(ast) && WEXITSTATUS(ast) == 0)
		end.exit_code = 0;
	else if (inspect_end(d, &end) < 0) {
		if (d->early_run && !api_run) {
			/* No container to inspect: docker run never made one, and said why. */
			lb_buf t = {.data = tail, .len = tail_n};
			char said[400];
			one_line(&t, said, sizeof said);
			setup_failed(res, "docker run", "docker run failed: ", said);
			return 0;
		}
		setup_failed(res, "docker inspect", "docker inspect failed for container ", d->container);
		return 0;
	}
	/* The engine never started the code (its ExitCode, docker's 128 or podman's 0, is not the
	 * code's): its words, State.Error, else the last line its client printed. */
	if ((end.error[0] || strcmp(end.status, "created") == 0) && !res->timed_out && !res->interrupted) {
		lb_buf t = {.data = tail, .len = tail_n};
		char said[400] = "";
		if (!end.error[0])
			one_line(&t, said, sizeof said);
		setup_failed(res, "docker start", "the engine did not start the container: ",
			     end.error[0] ? end.error : said);
		return 0;
	}
	int code = end.exit_code;
	bool oom = end.oom;
	/* cgroup v1 engines may not set OOMKilled when the OOM killer picked a child of the
	 * init: SIGKILL (137) under a memory limit, not sent by labbox, is the OOM killer. */
	if (oom)
		d->oom_by = "engine (State.OOMKilled)";
	if (!oom && d->has_memory && code == 137 && !res->timed_out && !res->interrupted &&
	    !res->disk_limited) {
		oom = true;
		d->oom_by = "exit status 137 under --memory (the engine did not flag an OOM kill)";
	}
	res->oom_killed = oom;
	/* docker's 128+N: the init reports its child killed by signal N; a run stopped at its
	 * budget says which signal ended it, as the local sandbox's does. */
	if (code > 128 && code < 128 + 65)
		res->term_signal = code - 128;
	else
		res->exit_code = code;
	if (res->timed_out)
		res->outcome = LB_SB_TIMEOUT;
	else if (res->interrupted)
		res->outcome = LB_SB_INTERRUPTED;
	else if (res->disk_limited)
		res->outcome = LB_SB_DISK_LIMIT;
	else
		res->outcome = res->term_signal ? LB_SB_SIGNALED : LB_SB_EXITED;
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

/* The end of cleanup: the removal done, then the guardian released (told the container is
 * gone), and the leftovers' removal reaped. */
static void cleanup_wait(docker_state *d)
{
	if (d->run_pid > 0 || d->run_out >= 0) /* started, never supervised (prepare failed after it): rm ends it */
		early_run_undo(d);
	int st = 0;
	if (d->rm_pid > 0) {
		while (waitpid(d->rm_pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			lb_docker_live_done(&d->live);
	}
	d->rm_pid = -1;
	if (d->leftovers_pid > 0)
		while (waitpid(d->leftovers_pid, NULL, 0) < 0 && errno == EINTR)
			;
	d->leftovers_pid = -1;
	lb_guard_stop(&d->guard);
	/* conmon's empty "oom" (see cwd), not one of the run's records. */
	struct stat st_oom;
	char oom[PATH_MAX + 8];
	if (d->cwd[0] && snprintf(oom, sizeof oom, "%s/oom", d->cwd) < (int)sizeof oom &&
	    lstat(oom, &st_oom) == 0 && S_ISREG(st_oom.st_mode) && st_oom.st_size == 0)
		unlink(oom);
}

/* docker rm is started here and waited for by free (cleanup_wait), so that the engine's work
 * of removing the container overlaps the pipeline's records; should labbox die meanwhile,
 * the rm goes on by itself and the guardian, not yet released, removes it too. */
static void docker_cleanup(lb_backend *b)
{
	docker_state *d = state_of(b);
	if (!d->client || d->rm_pid > 0)
		return;
	if (d->container[0] && d->api[0]) {
		/* A child, so the engine's removal overlaps the records as the client's did. */
		pid_t pid = fork();
		if (pid == 0) {
			/* Not a holder of labbox's output, as the client's rm was not. */
			int nul = open("/dev/null", O_RDWR);
			if (nul >= 0) {
				dup2(nul, 0);
				dup2(nul, 1);
				dup2(nul, 2);
			}
			_exit(lb_docker_api_rm(d->api, d->container, API_TIMEOUT_MS) == 0 ? 0 : 1);
		}
		d->rm_pid = pid;
	} else if (d->container[0]) {
		d->rm_pid = spawn_client(d, "rm", "-f", "-v");
	} else if (d->name[0]) {
		/* Never created (as far as labbox knows): by name, in case the engine did. */
		if (container_rm(d, d->name) == 0)
			lb_docker_live_done(&d->live);
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
	json_object_object_add(o, "host", json_object_new_string(engine_host(d->engine) ? engine_host(d->engine) : host));
	json_object_object_add(o, "isolated_by", json_object_new_string("docker"));
	json_object_object_add(o, "image", d->image ? json_object_new_string(d->image) : NULL);
	json_object_object_add(o, "image_id", d->image_id[0] ? json_object_new_string(d->image_id) : NULL);
	/* given (--image), built (this run) or reused (built before from the same recipe); null
	 * when the run stopped before the image was settled. */
	json_object_object_add(o, "image_origin",
			       d->image_origin[0] ? json_object_new_string(d->image_origin) : NULL);
	if (d->base_image) {
		json_object *bj = json_object_new_object();
		json_object_object_add(bj, "base_image", json_object_new_string(d->base_image));
		json_object_object_add(bj, "base_image_id",
				       d->base_id[0] ? json_object_new_string(d->base_id) : NULL);
		json_object_object_add(bj, "recipe_sha256",
				       d->recipe[0] ? json_object_new_string(d->recipe) : NULL);
		json_object_object_add(bj, "requirements_txt", json_object_new_boolean(d->requirements));
		char df[PATH_MAX + 16];
		snprintf(df, sizeof df, "%s/Dockerfile", d->build_dir);
		json_object_object_add(bj, "dockerfile", d->build_dir[0] ? json_object_new_string(df) : NULL);
		json_object_object_add(bj, "log", d->build_log[0] ? json_object_new_string(d->build_log) : NULL);
		json_object_object_add(bj, "seconds", d->build_s > 0 ? json_object_new_double(d->build_s) : NULL);
		json_object_object_add(o, "build", bj);
	}
	json_object_object_add(o, "environment_from_cache", json_object_new_boolean(d->env_cached));
	json_object_object_add(o, "oom_reported_by", d->oom_by ? json_object_new_string(d->oom_by) : NULL);
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
	cleanup_wait(d);
	lb_docker_live_close(&d->live);
	free(d->client);
	free(d->image);
	free(d->base_image);
	free(d->python);
	json_object_put(d->sandbox);
	lb_strv_free(&d->create);
	lb_buf_free(&d->api_early);
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
	.binds_gate = true,
};

int lb_backend_docker(const lb_docker_config *cfg, lb_backend **out)
{
	if (cfg->image && !*cfg->image)
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
	d->guard.wr = -1;
	d->live.dirfd = -1;
	d->rm_pid = d->leftovers_pid = d->run_pid = -1;
	d->run_out = -1;
	d->image = cfg->image ? strdup(cfg->image) : NULL;
	d->base_image = cfg->image ? NULL
				   : strdup(cfg->base_image ? cfg->base_image : LB_DOCKER_DEFAULT_BASE);
	d->exec = cfg->exec;
	if (cfg->image)
		snprintf(d->image_origin, sizeof d->image_origin, "given");
	d->python = strdup(cfg->python ? cfg->python : "python3");
	d->sandbox = cfg->sandbox ? json_object_get(cfg->sandbox) : NULL;
	d->grace = cfg->grace > 0 ? cfg->grace : 0;
	d->uid = cfg->uid;
	d->gid = cfg->gid;
	snprintf(d->engine, sizeof d->engine, "%s", cfg->engine ? cfg->engine : "docker");
	d->engine_asked = cfg->engine != NULL;
	b->ops = &docker_ops;
	b->state = d;
	if ((!d->image && !d->base_image) || !d->python) {
		lb_backend_free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

int lb_docker_probe(const char *engine, struct json_object **out, char *err, size_t errlen)
{
	*out = NULL;
	if (engine && strcmp(engine, "docker") != 0 && strcmp(engine, "podman") != 0) {
		snprintf(err, errlen, "engine '%s' is not one of docker, podman", engine);
		return -EINVAL;
	}
	docker_state d = {.guard.wr = -1, .live.dirfd = -1, .run_pid = -1, .run_out = -1,
			  .engine_asked = engine != NULL};
	snprintf(d.engine, sizeof d.engine, "%s", engine ? engine : "docker");
	json_object *info = NULL;
	int r = pick_engine(&d, &info, err, errlen);
	if (r < 0) {
		free(d.client);
		return r;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string("docker"));
	json_object_object_add(o, "engine", json_object_new_string(d.engine));
	json_object_object_add(o, "client", json_object_new_string(d.client));
	json_object_object_add(o, "client_version", d.client_version[0] ? json_object_new_string(d.client_version) : NULL);
	json_object_object_add(o, "version", json_object_new_string(d.server_version));
	json_object_object_add(o, "host", engine_host(d.engine) ? json_object_new_string(engine_host(d.engine)) : NULL);
	json_object_object_add(o, "host_named_by",
			       json_object_new_string(engine_host(d.engine) ? host_var(d.engine)
								    : "the client's default (its current context)"));
	static const char *const keys[] = {"os", "kernel", "rootless", "userns_remap", "cgroup",
					   "limits", "seccomp", "apparmor", "selinux",
					   "security_options", "init", "runtimes", "default_runtime"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_object *v = NULL;
		json_object_object_get_ex(info, keys[i], &v);
		json_object_object_add(o, keys[i], v ? json_object_get(v) : NULL);
	}
	json_object *lim = NULL;
	json_object_object_get_ex(o, "limits", &lim);
	if (lim) {
		json_object_object_add(lim, "gpus", lb_docker_gpus_facts(d.engine, engine_host(d.engine), info));
		json_object_object_add(lim, "source", json_object_new_string(
			strcmp(d.engine, "podman") == 0 ? "podman info (cgroup controllers)" : "docker info"));
	}
	/* The base labbox builds from when no image is named: there, or to be pulled. */
	json_object *bj = json_object_new_object();
	char id[160] = "";
	json_object_object_add(bj, "name", json_object_new_string(LB_DOCKER_DEFAULT_BASE));
	bool present = image_id_of(&d, LB_DOCKER_DEFAULT_BASE, id, sizeof id, NULL, 0) == 0;
	json_object_object_add(bj, "present", json_object_new_boolean(present));
	json_object_object_add(bj, "id", present ? json_object_new_string(id) : NULL);
	json_object_object_add(o, "default_base_image", bj);
	json_object_put(info);
	free(d.client);
	*out = o;
	return 0;
}
