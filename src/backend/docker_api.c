/* The docker engine's HTTP API on its unix socket (docker_api.h): a small HTTP/1.1 client,
 * one request a connection (Connection: close), the response bounded in size and time. The
 * unversioned paths are used, so the engine answers in its own API version, as `docker
 * info` and `docker inspect` show it. */
#include "docker_api.h"
#include "docker_info.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/var/run/docker.sock"

int lb_docker_config_context(void)
{
	const char *cfg = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
	char path[PATH_MAX];
	if (cfg && *cfg)
		snprintf(path, sizeof path, "%s/config.json", cfg);
	else if (home && *home)
		snprintf(path, sizeof path, "%s/.docker/config.json", home);
	else
		return 0;
	if (access(path, F_OK) < 0)
		return errno == ENOENT ? 0 : -1;
	json_object *o = json_object_from_file(path);
	if (!o)
		return -1;
	const char *ctx = lb_docker_jstr(o, "currentContext");
	int named = ctx && *ctx && strcmp(ctx, "default") != 0;
	json_object_put(o);
	return named;
}

int lb_docker_api_socket(char *path, size_t n)
{
	const char *host = getenv("DOCKER_HOST"), *ctx = getenv("DOCKER_CONTEXT");
	if (ctx && *ctx && strcmp(ctx, "default") != 0)
		return -ENOTSUP;
	if (host && *host) {
		/* Only an absolute unix:// path is the socket itself; tcp, ssh, npipe and the rest
		 * (TLS, an ssh helper) are the client's. */
		if (strncmp(host, "unix://", 7) != 0 || host[7] != '/')
			return -ENOTSUP;
		if ((size_t)snprintf(path, n, "%s", host + 7) >= n ||
		    strlen(host + 7) >= sizeof ((struct sockaddr_un *)0)->sun_path)
			return -ENOTSUP;
		return 0;
	}
	/* An unreadable config is a doubt too: the client is asked. */
	if (lb_docker_config_context() != 0)
		return -ENOTSUP;
	snprintf(path, n, "%s", DEFAULT_SOCKET);
	return 0;
}

void lb_docker_http_free(lb_docker_http *r)
{
	lb_buf_free(&r->body);
	r->status = 0;
}

/* The header value's bounds, blanks trimmed. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
		(*e)--;
}

static bool token_is(const char *s, const char *e, const char *word)
{
	size_t n = strlen(word);
	return (size_t)(e - s) == n && strncasecmp(s, word, n) == 0;
}

/* The head's fields that frame the body: Content-Length (-1 when absent) and chunked. */
static int parse_headers(const char *p, const char *end, long long *clen, bool *chunked)
{
	*clen = -1;
	*chunked = false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return -EBADMSG;
		const char *colon = memchr(p, ':', (size_t)(nl - p));
		if (!colon || colon == p)
			return -EBADMSG;
		const char *v = colon + 1, *ve = nl;
		trim(&v, &ve);
		if (token_is(p, colon, "Content-Length")) {
			if (v == ve)
				return -EBADMSG;
			long long x = 0;
			for (const char *c = v; c < ve; c++) {
				if (!isdigit((unsigned char)*c))
					return -EBADMSG;
				x = x * 10 + (*c - '0');
				if (x > (long long)LB_DOCKER_API_MAX_BODY)
					return -EMSGSIZE;
			}
			if (*clen >= 0 && *clen != x)
				return -EBADMSG; /* two lengths: which body is meant is unknown */
			*clen = x;
		} else if (token_is(p, colon, "Transfer-Encoding")) {
			if (!token_is(v, ve, "chunked"))
				return -EBADMSG; /* gzip and the like: not asked for, not read */
			*chunked = true;
		}
		p = nl + 1;
	}
	return 0;
}

/* The chunked body from b[0..n): 0 whole, -EAGAIN for more. */
static int parse_chunked(const char *b, size_t n, bool eof, lb_buf *out)
{
	size_t at = 0;
	for (;;) {
		const char *nl = memchr(b + at, '\n', n - at);
		if (!nl)
			return n - at > 64 ? -EBADMSG : eof ? -EBADMSG : -EAGAIN;
		const char *c = b + at;
		uint64_t size = 0;
		int digits = 0;
		for (; c < nl && isxdigit((unsigned char)*c); c++, digits++) {
			if (digits == 8)
				return -EMSGSIZE;
			size = size * 16 + (uint64_t)(isdigit((unsigned char)*c) ? *c - '0' : (tolower((unsigned char)*c) - 'a' + 10));
		}
		if (!digits || (c < nl && *c != ';' && *c != '\r' && *c != ' '))
			return -EBADMSG;
		at = (size_t)(nl - b) + 1;
		if (size == 0) {
			/* The trailer section ends at an empty line. */
			for (;;) {
				const char *tl = memchr(b + at, '\n', n - at);
				if (!tl)
					return n - at > LB_DOCKER_API_MAX_HEAD ? -EMSGSIZE : eof ? -EBADMSG : -EAGAIN;
				bool empty = tl == b + at || (tl == b + at + 1 && b[at] == '\r');
				at = (size_t)(tl - b) + 1;
				if (empty)
					return 0;
			}
		}
		if (out->len + size > LB_DOCKER_API_MAX_BODY)
			return -EMSGSIZE;
		if (n - at < size + 2)
			return eof ? -EBADMSG : -EAGAIN;
		if (b[at + size] != '\r' || b[at + size + 1] != '\n')
			return -EBADMSG;
		if (lb_buf_append(out, b + at, (size_t)size) < 0)
			return -ENOMEM;
		at += (size_t)size + 2;
	}
}

int lb_docker_http_parse(const char *buf, size_t len, bool eof, lb_docker_http *r)
{
	lb_docker_http_free(r);
	static const char proto[] = "HTTP/1.";
	size_t pl = len < sizeof proto - 1 ? len : sizeof proto - 1;
	if (memcmp(buf, proto, pl) != 0)
		return -EBADMSG; /* not HTTP at all: said at once, not after a timeout */
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	size_t hlen = end ? (size_t)(end - buf) + 4 : len;
	if (hlen > LB_DOCKER_API_MAX_HEAD)
		return -EMSGSIZE;
	if (!end)
		return eof ? -EBADMSG : -EAGAIN;
	/* HTTP/1.x NNN[ reason] */
	if (hlen < 16 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' ||
	    !isdigit((unsigned char)buf[9]) || !isdigit((unsigned char)buf[10]) ||
	    !isdigit((unsigned char)buf[11]) || (buf[12] != ' ' && buf[12] != '\r'))
		return -EBADMSG;
	int status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (status < 200)
		return -EBADMSG; /* no 1xx is asked for (no Expect, no Upgrade) */
	const char *first = memchr(buf, '\n', hlen);
	long long clen;
	bool chunked;
	int rc = parse_headers(first + 1, buf + hlen - 2, &clen, &chunked);
	if (rc < 0)
		return rc;
	const char *body = buf + hlen;
	size_t blen = len - hlen;
	if (status == 204 || status == 304)
		rc = 0;
	else if (chunked)
		rc = parse_chunked(body, blen, eof, &r->body);
	else if (clen >= 0)
		rc = blen < (size_t)clen ? (eof ? -EBADMSG : -EAGAIN) : lb_buf_append(&r->body, body, (size_t)clen);
	else
		rc = blen > LB_DOCKER_API_MAX_BODY ? -EMSGSIZE : !eof ? -EAGAIN : lb_buf_append(&r->body, body, blen);
	if (rc == 0 && !r->body.data)
		rc = lb_buf_append(&r->body, "", 0);
	if (rc < 0) {
		lb_docker_http_free(r);
		return rc;
	}
	r->status = status;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for events on fd until the deadline: 0 ready, -ETIMEDOUT. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = {.fd = fd, .events = events};
		int n = poll(&pf, 1, (int)(left * 1000) + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_to(const char *sock, double deadline, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "the socket path %s is too long", sock);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	int r = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : -errno;
	if (r == -EAGAIN || r == -EINPROGRESS) {
		/* The engine's backlog is full: it may yet accept. */
		int e = 0;
		socklen_t el = sizeof e;
		r = wait_fd(fd, POLLOUT, deadline);
		if (r == 0)
			r = getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 ? -errno : -e;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", sock, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

int lb_docker_api_connect(const char *sock, int timeout_ms, char *err, size_t errlen)
{
	return connect_to(sock, now_s() + timeout_ms / 1000.0, err, errlen);
}

int lb_docker_api_request(const char *sock, const char *method, const char *path, int timeout_ms,
			  lb_docker_http *r, char *err, size_t errlen)
{
	return lb_docker_api_send(sock, method, path, NULL, timeout_ms, r, err, errlen);
}

int lb_docker_api_send(const char *sock, const char *method, const char *path, const char *body,
		       int timeout_ms, lb_docker_http *r, char *err, size_t errlen)
{
	double deadline = now_s() + timeout_ms / 1000.0;
	lb_docker_http_free(r);
	int fd = connect_to(sock, deadline, err, errlen);
	if (fd < 0)
		return fd;
	LB_AUTOCLOSE int cfd = fd;
	char head[1024];
	size_t blen = body ? strlen(body) : 0;
	int hl = snprintf(head, sizeof head,
			  "%s %s HTTP/1.1\r\nHost: docker\r\nUser-Agent: labbox\r\nConnection: close\r\n"
			  "%sContent-Length: %zu\r\n\r\n", method, path,
			  body ? "Content-Type: application/json\r\n" : "", blen);
	if (hl < 0 || (size_t)hl >= sizeof head) {
		snprintf(err, errlen, "the request path is too long");
		return -ENAMETOOLONG;
	}
	lb_buf req = {0};
	if (lb_buf_append(&req, head, (size_t)hl) < 0 || (blen && lb_buf_append(&req, body, blen) < 0)) {
		lb_buf_free(&req);
		return -ENOMEM;
	}
	size_t sent = 0, rl = req.len;
	int rc = 0;
	while (sent < rl && rc == 0) {
		ssize_t k = send(cfd, req.data + sent, rl - sent, MSG_NOSIGNAL);
		if (k > 0)
			sent += (size_t)k;
		else if (k < 0 && errno == EAGAIN)
			rc = wait_fd(cfd, POLLOUT, deadline);
		else if (k < 0 && errno != EINTR)
			rc = -errno;
	}
	lb_buf_free(&req);
	lb_buf raw = {0};
	bool eof = false;
	/* Parsed at each read while small; beyond, at each doubling and at the end, so a large
	 * body is not parsed over and over. */
	size_t next_parse = 0;
	while (rc == 0) {
		char buf[65536];
		ssize_t k = recv(cfd, buf, sizeof buf, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			rc = wait_fd(cfd, POLLIN, deadline);
			continue;
		}
		if (k < 0) {
			rc = -errno;
			break;
		}
		eof = k == 0;
		if (k > 0 && raw.len + (size_t)k > LB_DOCKER_API_MAX_HEAD + 2 * (size_t)LB_DOCKER_API_MAX_BODY) {
			rc = -EMSGSIZE;
			break;
		}
		if (k > 0 && lb_buf_append(&raw, buf, (size_t)k) < 0) {
			rc = -ENOMEM;
			break;
		}
		if (!eof && raw.len < next_parse)
			continue;
		rc = lb_docker_http_parse(raw.data ? raw.data : "", raw.len, eof, r);
		if (rc == 0)
			break;
		if (rc != -EAGAIN)
			break;
		rc = 0;
		if (raw.len > (256u << 10))
			next_parse = raw.len * 2;
	}
	if (rc == -ETIMEDOUT)
		snprintf(err, errlen, "the engine at %s did not answer %s %s within %d s", sock, method,
			 path, (timeout_ms + 999) / 1000);
	else if (rc == -EMSGSIZE)
		snprintf(err, errlen, "the engine at %s answered %s %s with more than %u bytes", sock,
			 method, path, LB_DOCKER_API_MAX_BODY);
	else if (rc == -EBADMSG && eof && raw.len == 0)
		snprintf(err, errlen, "the engine at %s closed the connection without answering %s %s",
			 sock, method, path);
	else if (rc == -EBADMSG && (raw.len < 7 || memcmp(raw.data, "HTTP/1.", 7) != 0))
		snprintf(err, errlen, "the engine at %s answered %s %s with something that is not HTTP",
			 sock, method, path);
	else if (rc == -EBADMSG && eof)
		snprintf(err, errlen, "the engine at %s closed the connection in the middle of its "
			 "answer to %s %s", sock, method, path);
	else if (rc == -EBADMSG)
		snprintf(err, errlen, "the engine at %s answered %s %s with a malformed HTTP response",
			 sock, method, path);
	else if (rc < 0)
		snprintf(err, errlen, "talking to the engine at %s: %s", sock, strerror(-rc));
	lb_buf_free(&raw);
	if (rc < 0)
		lb_docker_http_free(r);
	return rc;
}

void lb_docker_api_said(const lb_docker_http *r, char *err, size_t errlen)
{
	json_object *o = json_tokener_parse(r->body.data), *m = NULL;
	const char *msg = o && json_object_object_get_ex(o, "message", &m) ? json_object_get_string(m) : NULL;
	if (msg && *msg)
		snprintf(err, errlen, "Error response from daemon: %s", msg);
	else
		snprintf(err, errlen, "Error response from daemon: status %d", r->status);
	for (char *p = err; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	json_object_put(o);
}

int lb_docker_api_json(const char *sock, const char *method, const char *path, int timeout_ms,
		       struct json_object **out, char *err, size_t errlen)
{
	*out = NULL;
	lb_docker_http r = {0};
	int rc = lb_docker_api_request(sock, method, path, timeout_ms, &r, err, errlen);
	if (rc < 0)
		return rc;
	if (r.status < 200 || r.status >= 300) {
		lb_docker_api_said(&r, err, errlen);
		rc = r.status == 404 ? -ENOENT : -EIO;
		lb_docker_http_free(&r);
		return rc;
	}
	json_tokener *tok = json_tokener_new();
	json_object *o = tok ? json_tokener_parse_ex(tok, r.body.data, (int)r.body.len) : NULL;
	bool whole = tok && json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	lb_docker_http_free(&r);
	if (!o || !whole || (!json_object_is_type(o, json_type_object) && !json_object_is_type(o, json_type_array))) {
		json_object_put(o);
		snprintf(err, errlen, "the engine at %s answered %s %s with a body that is not a JSON "
			 "document", sock, method, path);
		return -EBADMSG;
	}
	*out = o;
	return 0;
}

int lb_docker_api_path(char *out, size_t n, const char *pre, const char *name, const char *post)
{
	size_t at = (size_t)snprintf(out, n, "%s", pre);
	for (const char *c = name; *c && at + 4 < n; c++)
		at += (size_t)(isalnum((unsigned char)*c) || strchr("._-/:@", *c)
				       ? snprintf(out + at, n - at, "%c", *c)
				       : snprintf(out + at, n - at, "%%%02X", (unsigned char)*c));
	if (at >= n || (size_t)snprintf(out + at, n - at, "%s", post) >= n - at)
		return -ENAMETOOLONG;
	return 0;
}

int lb_docker_api_rm(const char *sock, const char *name, int timeout_ms)
{
	char path[512];
	if (lb_docker_api_path(path, sizeof path, "/containers/", name, "?force=1&v=1") < 0)
		return -ENAMETOOLONG;
	lb_docker_http r = {0};
	char err[256];
	int rc = lb_docker_api_request(sock, "DELETE", path, timeout_ms, &r, err, sizeof err);
	if (rc == 0 && !(r.status == 204 || r.status == 200 || r.status == 404))
		rc = -EIO;
	lb_docker_http_free(&r);
	return rc;
}

int lb_docker_client_version(const char *client, char *out, size_t n)
{
	out[0] = '\0';
	struct stat st;
	if (stat(client, &st) < 0)
		return -errno;
	char key[PATH_MAX + 96];
	snprintf(key, sizeof key, "%s\t%llu\t%llu\t%lld\t%lld.%09ld\t", client,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
		 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	LB_AUTOFREE char *base = lb_user_cache_dir();
	LB_AUTOFREE char *file = NULL;
	if (base && asprintf(&file, "%s/docker-client-version", base) < 0)
		file = NULL;
	LB_AUTOFREE char *text = NULL;
	size_t tl = 0;
	if (file && lb_read_file_at(AT_FDCWD, file, sizeof key + 128, &text, &tl) == 0 &&
	    strncmp(text, key, strlen(key)) == 0) {
		const char *v = text + strlen(key);
		snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
		return out[0] ? 0 : -ENOENT;
	}
	/* "Docker version 28.2.2, build e6534b4" */
	char *argv[] = {(char *)client, (char *)"--version", NULL};
	lb_buf b = {0};
	int status = 0;
	int rc = lb_capture(argv, 4096, false, &b, &status);
	const char *pre = "Docker version ";
	if (rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && b.data &&
	    strncmp(b.data, pre, strlen(pre)) == 0) {
		const char *v = b.data + strlen(pre);
		snprintf(out, n, "%.*s", (int)strcspn(v, ", \n"), v);
	}
	lb_buf_free(&b);
	if (!out[0])
		return -ENOENT;
	if (file) {
		lb_buf c = {0};
		if (lb_buf_printf(&c, "%s%s\n", key, out) == 0)
			(void)lb_write_file_atomic(file, c.data, c.len);
		lb_buf_free(&c);
	}
	return 0;
}
