/* A container run over the engine's API (docker_api.h): what `docker run` does, without the
 * client's start-up: POST /containers/create from the same argv the client would get (so the
 * record's command line and the container agree by construction), attach (upgraded to the
 * multiplexed raw stream), start; then wait, stop, kill. The argv is read, not trusted to be
 * whatever: a flag this file does not know sends the run back to the client. */
#include "docker_api.h"
#include "docker_info.h"
#include "docker_live.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A whole decimal number (an optional sign, digits only). */
static int read_ll(const char *s, long long *out)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || errno || !end || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static json_object *obj_of(json_object *o, const char *key)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		v = json_object_new_object();
		json_object_object_add(o, key, v);
	}
	return v;
}

static json_object *arr_of(json_object *o, const char *key)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		v = json_object_new_array();
		json_object_object_add(o, key, v);
	}
	return v;
}

/* type=bind,source=S,target=T[,readonly]: the only --mount form the backend writes. */
static int add_mount(json_object *hc, const char *spec)
{
	char *s = strdup(spec);
	if (!s)
		return -ENOMEM;
	const char *type = NULL, *src = NULL, *dst = NULL;
	bool ro = false;
	int r = 0;
	char *save = NULL;
	for (char *f = strtok_r(s, ",", &save); f && r == 0; f = strtok_r(NULL, ",", &save)) {
		if (strncmp(f, "type=", 5) == 0)
			type = f + 5;
		else if (strncmp(f, "source=", 7) == 0)
			src = f + 7;
		else if (strncmp(f, "target=", 7) == 0)
			dst = f + 7;
		else if (strcmp(f, "readonly") == 0)
			ro = true;
		else
			r = -ENOTSUP;
	}
	if (r == 0 && (!type || strcmp(type, "bind") != 0 || !src || !*src || !dst || !*dst))
		r = -ENOTSUP;
	if (r == 0) {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "Type", json_object_new_string("bind"));
		json_object_object_add(m, "Source", json_object_new_string(src));
		json_object_object_add(m, "Target", json_object_new_string(dst));
		json_object_object_add(m, "ReadOnly", json_object_new_boolean(ro));
		json_object_array_add(arr_of(hc, "Mounts"), m);
	}
	free(s);
	return r;
}

/* --gpus all | "device=A,B" as the client's DeviceRequests. */
static int add_gpus(json_object *hc, const char *v)
{
	json_object *dr = json_object_new_object();
	json_object *caps = json_object_new_array(), *cap = json_object_new_array();
	json_object_array_add(cap, json_object_new_string("gpu"));
	json_object_array_add(caps, cap);
	json_object_object_add(dr, "Driver", json_object_new_string(""));
	size_t n = strlen(v);
	if (strcmp(v, "all") == 0) {
		json_object_object_add(dr, "Count", json_object_new_int(-1));
	} else if (n > 9 && v[0] == '"' && v[n - 1] == '"' && strncmp(v + 1, "device=", 7) == 0) {
		json_object *ids = json_object_new_array();
		const char *p = v + 8, *end = v + n - 1;
		while (p < end) {
			const char *c = memchr(p, ',', (size_t)(end - p));
			const char *e = c ? c : end;
			if (e > p)
				json_object_array_add(ids, json_object_new_string_len(p, (int)(e - p)));
			p = e + 1;
		}
		json_object_object_add(dr, "Count", json_object_new_int(0));
		json_object_object_add(dr, "DeviceIDs", ids);
	} else {
		json_object_put(dr);
		json_object_put(caps);
		return -ENOTSUP;
	}
	json_object_object_add(dr, "Capabilities", caps);
	json_object_array_add(arr_of(hc, "DeviceRequests"), dr);
	return 0;
}

/* --ulimit=NAME=SOFT:HARD */
static int add_ulimit(json_object *hc, const char *v)
{
	const char *eq = strchr(v, '='), *colon = eq ? strchr(eq, ':') : NULL;
	if (!eq || !colon || eq == v)
		return -ENOTSUP;
	char soft[32], hard[32];
	long long s, h;
	if ((size_t)(colon - eq - 1) >= sizeof soft || strlen(colon + 1) >= sizeof hard)
		return -EINVAL;
	snprintf(soft, sizeof soft, "%.*s", (int)(colon - eq - 1), eq + 1);
	snprintf(hard, sizeof hard, "%s", colon + 1);
	if (read_ll(soft, &s) < 0 || read_ll(hard, &h) < 0)
		return -EINVAL;
	json_object *u = json_object_new_object();
	json_object_object_add(u, "Name", json_object_new_string_len(v, (int)(eq - v)));
	json_object_object_add(u, "Soft", json_object_new_int64(s));
	json_object_object_add(u, "Hard", json_object_new_int64(h));
	json_object_array_add(arr_of(hc, "Ulimits"), u);
	return 0;
}

/* --NAME=VALUE's value when a is that flag, else NULL. */
static const char *eq_flag(const char *a, const char *name)
{
	size_t n = strlen(name);
	return strncmp(a, name, n) == 0 && a[n] == '=' ? a + n + 1 : NULL;
}

static int int_field(json_object *hc, const char *key, const char *v)
{
	long long x;
	if (read_ll(v, &x) < 0)
		return -EINVAL;
	json_object_object_add(hc, key, json_object_new_int64(x));
	return 0;
}

static int one_flag(json_object *cfg, json_object *hc, char *const *argv, size_t *i, char *name,
		    size_t nn)
{
	const char *a = argv[*i], *v;
	/* Two-word flags first: their value is the next word. */
	static const char *const two[] = {"--name", "--cap-drop", "--security-opt", "--tmpfs",
					  "--gpus", "--mount", NULL};
	for (size_t k = 0; two[k]; k++) {
		if (strcmp(a, two[k]) != 0)
			continue;
		v = argv[*i + 1];
		if (!v)
			return -EINVAL;
		(*i)++;
		if (k == 0) {
			if ((size_t)snprintf(name, nn, "%s", v) >= nn)
				return -ENAMETOOLONG;
		} else if (k == 1) {
			json_object_array_add(arr_of(hc, "CapDrop"), json_object_new_string(v));
		} else if (k == 2) {
			json_object_array_add(arr_of(hc, "SecurityOpt"), json_object_new_string(v));
		} else if (k == 3) {
			const char *c = strchr(v, ':');
			json_object *t = obj_of(hc, "Tmpfs");
			char path[4096];
			if ((size_t)snprintf(path, sizeof path, "%.*s", (int)(c ? (size_t)(c - v) : strlen(v)), v) >= sizeof path)
				return -ENAMETOOLONG;
			json_object_object_add(t, path, json_object_new_string(c ? c + 1 : ""));
		} else if (k == 4) {
			return add_gpus(hc, v);
		} else {
			return add_mount(hc, v);
		}
		return 0;
	}
	if (strcmp(a, "--pull=never") == 0)
		return 0; /* create never pulls: a missing image is the engine's 404 */
	if (strcmp(a, "--init") == 0) {
		json_object_object_add(hc, "Init", json_object_new_boolean(true));
		return 0;
	}
	if (strcmp(a, "--read-only") == 0) {
		json_object_object_add(hc, "ReadonlyRootfs", json_object_new_boolean(true));
		return 0;
	}
	if ((v = eq_flag(a, "--label"))) {
		const char *eq = strchr(v, '=');
		char key[256];
		if (!eq || eq == v || (size_t)(eq - v) >= sizeof key)
			return -ENOTSUP;
		snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
		json_object_object_add(obj_of(cfg, "Labels"), key, json_object_new_string(eq + 1));
		return 0;
	}
	if ((v = eq_flag(a, "--user"))) {
		json_object_object_add(cfg, "User", json_object_new_string(v));
		return 0;
	}
	if ((v = eq_flag(a, "--workdir"))) {
		json_object_object_add(cfg, "WorkingDir", json_object_new_string(v));
		return 0;
	}
	if ((v = eq_flag(a, "--network"))) {
		if (strcmp(v, "none") != 0 && strcmp(v, "host") != 0)
			return -ENOTSUP;
		json_object_object_add(hc, "NetworkMode", json_object_new_string(v));
		return 0;
	}
	if ((v = eq_flag(a, "--memory")))
		return int_field(hc, "Memory", v);
	if ((v = eq_flag(a, "--memory-swap")))
		return int_field(hc, "MemorySwap", v);
	if ((v = eq_flag(a, "--pids-limit")))
		return int_field(hc, "PidsLimit", v);
	if ((v = eq_flag(a, "--shm-size")))
		return int_field(hc, "ShmSize", v);
	if ((v = eq_flag(a, "--cpus"))) {
		char *end = NULL;
		double c = strtod(v, &end);
		if (!*v || !end || *end || !(c > 0) || c > 1e6)
			return -EINVAL;
		json_object_object_add(hc, "NanoCpus", json_object_new_int64((int64_t)(c * 1e9 + 0.5)));
		return 0;
	}
	if ((v = eq_flag(a, "--ulimit")))
		return add_ulimit(hc, v);
	if ((v = eq_flag(a, "--env"))) {
		if (!*v || *v == '=')
			return -EINVAL;
		json_object *env = arr_of(cfg, "Env");
		const char *val = strchr(v, '=') ? NULL : getenv(v);
		if (val) {
			/* A secret by name, its value from this environment as the client takes it;
			 * unset, the bare name, which the engine reads as no such variable. */
			size_t n = strlen(v) + strlen(val) + 2;
			char *kv = malloc(n);
			if (!kv)
				return -ENOMEM;
			snprintf(kv, n, "%s=%s", v, val);
			json_object_array_add(env, json_object_new_string(kv));
			free(kv);
		} else {
			json_object_array_add(env, json_object_new_string(v));
		}
		return 0;
	}
	if ((v = eq_flag(a, "--entrypoint"))) {
		json_object *ep = json_object_new_array();
		json_object_array_add(ep, json_object_new_string(v));
		json_object_object_add(cfg, "Entrypoint", ep);
		return 0;
	}
	return -ENOTSUP; /* --interactive and anything else: the client's */
}

int lb_docker_create_body(char *const *argv, struct json_object **body, char *name, size_t nn)
{
	*body = NULL;
	name[0] = '\0';
	if (!argv || !argv[0] || !argv[1] || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "create") != 0))
		return -ENOTSUP;
	json_object *cfg = json_object_new_object(), *hc = json_object_new_object();
	if (!cfg || !hc) {
		json_object_put(cfg);
		json_object_put(hc);
		return -ENOMEM;
	}
	size_t i = 2;
	int r = 0;
	for (; r == 0 && argv[i] && argv[i][0] == '-'; i++)
		r = one_flag(cfg, hc, argv, &i, name, nn);
	if (r == 0 && (!argv[i] || !*argv[i] || !name[0]))
		r = -ENOTSUP; /* no image, or no name: not what the backend writes */
	if (r < 0) {
		json_object_put(cfg);
		json_object_put(hc);
		return r;
	}
	json_object_object_add(cfg, "Image", json_object_new_string(argv[i++]));
	json_object *cmd = json_object_new_array();
	for (; argv[i]; i++)
		json_object_array_add(cmd, json_object_new_string(argv[i]));
	json_object_object_add(cfg, "Cmd", cmd);
	/* docker run without -i or -t: both output streams attached, no stdin, no terminal. */
	json_object_object_add(cfg, "AttachStdin", json_object_new_boolean(false));
	json_object_object_add(cfg, "AttachStdout", json_object_new_boolean(true));
	json_object_object_add(cfg, "AttachStderr", json_object_new_boolean(true));
	json_object_object_add(cfg, "OpenStdin", json_object_new_boolean(false));
	json_object_object_add(cfg, "Tty", json_object_new_boolean(false));
	json_object_object_add(cfg, "HostConfig", hc);
	*body = cfg;
	return 0;
}

int lb_docker_attach_head(const char *buf, size_t len, size_t *head)
{
	static const char proto[] = "HTTP/1.";
	size_t pl = len < sizeof proto - 1 ? len : sizeof proto - 1;
	if (memcmp(buf, proto, pl) != 0)
		return -EBADMSG;
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	size_t hl = end ? (size_t)(end - buf) + 4 : len;
	if (hl > LB_DOCKER_API_MAX_HEAD)
		return -EMSGSIZE;
	if (!end)
		return -EAGAIN;
	if (hl < 16 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' || buf[9] < '1' || buf[9] > '9' ||
	    buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9' ||
	    (buf[12] != ' ' && buf[12] != '\r'))
		return -EBADMSG;
	*head = hl;
	return (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
}

void lb_docker_mux_feed(lb_docker_mux *m, const char *buf, size_t len, lb_docker_mux_emit emit,
			void *ctx)
{
	size_t at = 0;
	while (at < len) {
		if (m->raw) {
			emit(ctx, 1, buf + at, len - at);
			return;
		}
		if (m->left > 0) {
			size_t k = len - at < m->left ? len - at : m->left;
			/* stdin's frames are never asked for; were one sent, it is not output */
			if (m->stream != 0)
				emit(ctx, m->stream, buf + at, k);
			at += k;
			m->left -= (uint32_t)k;
			continue;
		}
		while (m->hn < 8 && at < len)
			m->hdr[m->hn++] = (unsigned char)buf[at++];
		if (m->hn < 8)
			return;
		m->hn = 0;
		if (m->hdr[0] > 2 || m->hdr[1] || m->hdr[2] || m->hdr[3]) {
			/* Not a frame: what was taken for its header is output too. */
			m->raw = true;
			emit(ctx, 1, (const char *)m->hdr, 8);
			continue;
		}
		m->stream = m->hdr[0];
		m->left = (uint32_t)m->hdr[4] << 24 | (uint32_t)m->hdr[5] << 16 | (uint32_t)m->hdr[6] << 8 |
			  (uint32_t)m->hdr[7];
	}
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* POST /containers/ID/attach, upgraded: the stream's fd (the head read, what came after it
 * in run->early), or negative errno with err. */
static int attach(const char *sock, const char *id, int timeout_ms, lb_docker_api_run *run,
		  char *err, size_t errlen)
{
	char path[256];
	if (lb_docker_api_path(path, sizeof path, "/containers/", id,
			       "/attach?stream=1&stdout=1&stderr=1") < 0)
		return -ENAMETOOLONG;
	int fd = lb_docker_api_connect(sock, timeout_ms, err, errlen);
	if (fd < 0)
		return fd;
	double deadline = mono() + timeout_ms / 1000.0;
	char req[512];
	int rl = snprintf(req, sizeof req,
			  "POST %s HTTP/1.1\r\nHost: docker\r\nUser-Agent: labbox\r\nConnection: Upgrade\r\n"
			  "Upgrade: tcp\r\nContent-Length: 0\r\n\r\n", path);
	int rc = 0;
	size_t sent = 0;
	lb_buf raw = {0};
	while (rc == 0 && sent < (size_t)rl) {
		ssize_t k = send(fd, req + sent, (size_t)rl - sent, MSG_NOSIGNAL);
		if (k > 0)
			sent += (size_t)k;
		else if (k < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = fd, .events = POLLOUT};
			if (poll(&pf, 1, (int)((deadline - mono()) * 1000) + 1) == 0 && mono() >= deadline)
				rc = -ETIMEDOUT;
		} else if (k < 0 && errno != EINTR)
			rc = -errno;
	}
	size_t head = 0;
	int status = -EAGAIN;
	bool eof = false;
	while (rc == 0 && !eof) {
		char buf[16384];
		ssize_t k = recv(fd, buf, sizeof buf, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			if (mono() >= deadline)
				rc = -ETIMEDOUT;
			else
				poll(&pf, 1, (int)((deadline - mono()) * 1000) + 1);
			continue;
		}
		if (k < 0) {
			rc = -errno;
			break;
		}
		eof = k == 0;
		if (k > 0 && lb_buf_append(&raw, buf, (size_t)k) < 0)
			rc = -ENOMEM;
		if (rc == 0 && status == -EAGAIN) {
			status = lb_docker_attach_head(raw.data ? raw.data : "", raw.len, &head);
			if (status < 0 && status != -EAGAIN)
				rc = status;
		}
		if (status == 101 || status == 200)
			break;
		/* A refusal: read to its end for the engine's words. */
		if (raw.len > LB_DOCKER_API_MAX_HEAD + LB_DOCKER_API_MAX_BODY)
			rc = -EMSGSIZE;
	}
	if (rc == 0 && (status == 101 || status == 200)) {
		if (raw.len > head && lb_buf_append(&run->early, raw.data + head, raw.len - head) < 0)
			rc = -ENOMEM;
	} else if (rc == 0) {
		lb_docker_http r = {0};
		if (status > 0 && lb_docker_http_parse(raw.data ? raw.data : "", raw.len, true, &r) == 0)
			lb_docker_api_said(&r, err, errlen);
		else
			snprintf(err, errlen, "the engine at %s answered the attach of %s with %s", sock, id,
				 status > 0 ? "a malformed response" : "something that is not HTTP");
		lb_docker_http_free(&r);
		rc = -EIO;
	} else if (rc == -ETIMEDOUT) {
		snprintf(err, errlen, "the engine at %s did not answer the attach of %s within %d s", sock,
			 id, (timeout_ms + 999) / 1000);
	} else {
		snprintf(err, errlen, "the engine at %s answered the attach of %s with a malformed "
			 "response (%s)", sock, id, strerror(-rc));
	}
	lb_buf_free(&raw);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

void lb_docker_api_run_close(lb_docker_api_run *run)
{
	if (run->fd >= 0)
		close(run->fd);
	run->fd = -1;
	lb_buf_free(&run->early);
}

int lb_docker_api_launch(const char *sock, char *const *argv, int timeout_ms,
			 lb_docker_api_run *run, char *err, size_t errlen)
{
	run->fd = -1;
	run->id[0] = '\0';
	char name[128];
	json_object *body = NULL;
	int r = lb_docker_create_body(argv, &body, name, sizeof name);
	if (r < 0) {
		snprintf(err, errlen, "the container's flags are not all translated to the API");
		return r == -ENOMEM ? r : -ENOTSUP;
	}
	char path[512];
	lb_docker_http h = {0};
	if (lb_docker_api_path(path, sizeof path, "/containers/create?name=", name, "") < 0) {
		json_object_put(body);
		return -ENAMETOOLONG;
	}
	r = lb_docker_api_send(sock, "POST", path, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN),
			       timeout_ms, &h, err, errlen);
	json_object_put(body);
	if (r < 0)
		return r;
	if (h.status != 201 && h.status != 200) {
		lb_docker_api_said(&h, err, errlen);
		r = h.status == 404 ? -ENOENT : -EIO;
		lb_docker_http_free(&h);
		return r;
	}
	json_object *o = json_tokener_parse(h.body.data), *idj = NULL;
	const char *id = o && json_object_object_get_ex(o, "Id", &idj) ? json_object_get_string(idj) : NULL;
	if (id && *id && strlen(id) < sizeof run->id && strspn(id, "0123456789abcdef") == strlen(id))
		snprintf(run->id, sizeof run->id, "%s", id);
	json_object_put(o);
	lb_docker_http_free(&h);
	if (!run->id[0]) {
		snprintf(err, errlen, "the engine at %s answered the create of %s without a container id",
			 sock, name);
		lb_docker_api_rm(sock, name, timeout_ms);
		return -EBADMSG;
	}
	/* Attached before the start, so no byte of output is written before labbox listens. */
	int fd = attach(sock, run->id, timeout_ms, run, err, errlen);
	if (fd < 0) {
		lb_docker_api_rm(sock, run->id, timeout_ms);
		lb_buf_free(&run->early);
		return fd;
	}
	run->fd = fd;
	if (lb_docker_api_path(path, sizeof path, "/containers/", run->id, "/start") == 0)
		r = lb_docker_api_send(sock, "POST", path, NULL, timeout_ms, &h, err, errlen);
	if (r == 0 && h.status != 204 && h.status != 304) {
		lb_docker_api_said(&h, err, errlen);
		r = -EIO;
	}
	lb_docker_http_free(&h);
	if (r < 0) {
		lb_docker_api_run_close(run);
		lb_docker_api_rm(sock, run->id, timeout_ms);
		return r;
	}
	return 0;
}

int lb_docker_api_wait(const char *sock, const char *id, int timeout_ms, int *status)
{
	char path[256], err[400];
	json_object *o = NULL, *v = NULL;
	if (lb_docker_api_path(path, sizeof path, "/containers/", id, "/wait") < 0)
		return -ENAMETOOLONG;
	int r = lb_docker_api_json(sock, "POST", path, timeout_ms, &o, err, sizeof err);
	if (r == 0 && json_object_object_get_ex(o, "StatusCode", &v) && json_object_is_type(v, json_type_int))
		*status = json_object_get_int(v);
	else if (r == 0)
		r = -EBADMSG;
	json_object_put(o);
	return r;
}

pid_t lb_docker_api_spawn(const char *sock, const char *id, const char *action, int timeout_ms)
{
	char path[256];
	if (lb_docker_api_path(path, sizeof path, "/containers/", id, "/") < 0 ||
	    strlen(path) + strlen(action) >= sizeof path)
		return -1;
	strcat(path, action);
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		lb_docker_http h = {0};
		char err[256];
		int r = lb_docker_api_send(sock, "POST", path, NULL, timeout_ms, &h, err, sizeof err);
		_exit(r == 0 && h.status >= 200 && h.status < 400 ? 0 : 1);
	}
	return pid;
}

int lb_docker_api_end(const char *sock, const char *id, int timeout_ms, lb_docker_end *end)
{
	char path[512], why[400];
	json_object *c = NULL, *v = NULL;
	int r = lb_docker_api_path(path, sizeof path, "/containers/", id, "/json");
	if (r == 0)
		r = lb_docker_api_json(sock, "GET", path, timeout_ms, &c, why, sizeof why);
	json_object *state = lb_docker_jobj(c, "State");
	if (r == 0 && json_object_object_get_ex(state, "ExitCode", &v) && json_object_is_type(v, json_type_int)) {
		const char *st = lb_docker_jstr(state, "Status"), *e = lb_docker_jstr(state, "Error");
		end->exit_code = json_object_get_int(v);
		end->oom = lb_docker_jbool(state, "OOMKilled");
		snprintf(end->status, sizeof end->status, "%s", st ? st : "");
		snprintf(end->error, sizeof end->error, "%s", e ? e : "");
	} else
		r = -EIO;
	json_object_put(c);
	return r;
}

int lb_docker_api_remove_dead(const char *sock, int timeout_ms)
{
	json_object *list = NULL;
	char err[400];
	/* filters={"label":["labbox.owner"]}, all=1: docker ps -a --filter label=labbox.owner */
	int r = lb_docker_api_json(sock, "GET",
				   "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22labbox.owner%22%5D%7D",
				   timeout_ms, &list, err, sizeof err);
	if (r < 0)
		return r;
	for (size_t i = 0; json_object_is_type(list, json_type_array) && i < json_object_array_length(list); i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *id = lb_docker_jstr(c, "Id"), *owner = lb_docker_jstr(lb_docker_jobj(c, "Labels"), "labbox.owner");
		char owner_host[256];
		int pid = 0;
		unsigned long long st = 0;
		if (!id || !owner || sscanf(owner, "%255[^:]:%d:%llu", owner_host, &pid, &st) != 3)
			continue;
		if (!lb_docker_owner_alive(owner_host, pid, st) && lb_docker_api_rm(sock, id, timeout_ms) < 0)
			r = -EIO;
	}
	json_object_put(list);
	return r;
}
