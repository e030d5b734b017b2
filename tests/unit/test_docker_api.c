/* The docker engine's API client (src/backend/docker_api.c): which socket the docker client
 * would speak to, the HTTP/1.1 response parser, and requests against a real unix socket whose
 * peer answers well, garbage, half an answer or nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../src/backend/docker_api.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int parse(const char *text, bool eof, lb_docker_http *r)
{
	return lb_docker_http_parse(text, strlen(text), eof, r);
}

static void test_content_length_body(void **state)
{
	(void)state;
	lb_docker_http r = {0};
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 11\r\n\r\n"
			 "{\"Id\":\"x\"}\n";
	assert_int_equal(parse(ok, false, &r), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body.data, "{\"Id\":\"x\"}\n");
	/* Every shorter prefix asks for more; at the peer's close it is a broken answer. */
	for (size_t n = 0; n < strlen(ok); n++) {
		assert_int_equal(lb_docker_http_parse(ok, n, false, &r), -EAGAIN);
		assert_int_equal(lb_docker_http_parse(ok, n, true, &r), -EBADMSG);
	}
	lb_docker_http_free(&r);
}

static void test_chunked_body_split_anywhere(void **state)
{
	(void)state;
	lb_docker_http r = {0};
	const char *ok = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "5\r\n{\"mes\r\n19;ext=1\r\nsage\":\"No such image: x\"}\r\n0\r\nX-T: 1\r\n\r\n";
	assert_int_equal(parse(ok, false, &r), 0);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body.data, "{\"message\":\"No such image: x\"}");
	for (size_t n = 0; n < strlen(ok); n++)
		assert_int_equal(lb_docker_http_parse(ok, n, false, &r), -EAGAIN);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n",
			       false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, &r),
			 -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, &r), -EBADMSG);
	lb_docker_http_free(&r);
}

static void test_no_length_reads_to_close_and_204_has_none(void **state)
{
	(void)state;
	lb_docker_http r = {0};
	const char *close = "HTTP/1.0 200 OK\r\n\r\n[1,2]";
	assert_int_equal(parse(close, false, &r), -EAGAIN);
	assert_int_equal(parse(close, true, &r), 0);
	assert_string_equal(r.body.data, "[1,2]");
	assert_int_equal(parse("HTTP/1.1 204 No Content\r\nServer: Docker\r\n\r\n", false, &r), 0);
	assert_int_equal(r.status, 204);
	assert_int_equal(r.body.len, 0);
	lb_docker_http_free(&r);
}

static void test_garbage_and_oversize_are_refused(void **state)
{
	(void)state;
	lb_docker_http r = {0};
	/* Not HTTP: refused at its first bytes, not after waiting for a head. */
	assert_int_equal(parse("SSH-2.0-OpenSSH", false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/2 200\r\n\r\n", false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 2x0 OK\r\n\r\n", false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 100 Continue\r\n\r\n", false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", false, &r),
			 -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, &r), -EBADMSG);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", false, &r),
			 -EMSGSIZE);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n", false, &r),
			 -EMSGSIZE);
	/* A head that never ends is over the limit, not waited for forever. */
	size_t n = LB_DOCKER_API_MAX_HEAD + 100;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 'a', n);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	big[n] = '\0';
	assert_int_equal(parse(big, false, &r), -EMSGSIZE);
	free(big);
	assert_int_equal(r.status, 0);
	assert_null(r.body.data);
}

static void test_socket_as_the_client_resolves_it(void **state)
{
	(void)state;
	char cfg[] = "/tmp/lb-unit-docker-api-XXXXXX", path[108];
	assert_non_null(mkdtemp(cfg));
	setenv("DOCKER_CONFIG", cfg, 1);
	unsetenv("DOCKER_CONTEXT");
	unsetenv("DOCKER_HOST");
	assert_int_equal(lb_docker_api_socket(path, sizeof path), 0);
	assert_string_equal(path, "/var/run/docker.sock");
	setenv("DOCKER_HOST", "unix:///srv/d.sock", 1);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), 0);
	assert_string_equal(path, "/srv/d.sock");
	/* Another transport, or a context: only the client knows what it means. */
	setenv("DOCKER_HOST", "tcp://10.0.0.1:2375", 1);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), -ENOTSUP);
	setenv("DOCKER_HOST", "ssh://me@host", 1);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), -ENOTSUP);
	unsetenv("DOCKER_HOST");
	setenv("DOCKER_CONTEXT", "remote", 1);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), -ENOTSUP);
	setenv("DOCKER_CONTEXT", "default", 1);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), 0);
	unsetenv("DOCKER_CONTEXT");
	char file[160];
	snprintf(file, sizeof file, "%s/config.json", cfg);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs("{\"currentContext\": \"colima\"}", f);
	fclose(f);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), -ENOTSUP);
	f = fopen(file, "w");
	fputs("{not json", f);
	fclose(f);
	assert_int_equal(lb_docker_api_socket(path, sizeof path), -ENOTSUP);
	unlink(file);
	rmdir(cfg);
	unsetenv("DOCKER_CONFIG");
}

static void test_path_encoding(void **state)
{
	(void)state;
	char p[64];
	assert_int_equal(lb_docker_api_path(p, sizeof p, "/images/", "reg:5000/a/b:v1", "/json"), 0);
	assert_string_equal(p, "/images/reg:5000/a/b:v1/json");
	assert_int_equal(lb_docker_api_path(p, sizeof p, "/containers/", "a b?&#", "/json"), 0);
	assert_string_equal(p, "/containers/a%20b%3F%26%23/json");
	assert_true(lb_docker_api_path(p, 16, "/containers/", "labbox-long-name", "/json") < 0);
}

/* A peer on a real unix socket that reads the request and answers with what (in pieces of
 * step bytes), then closes, or stays silent when what is NULL. */
static pid_t serve(const char *sock, const char *what, size_t step)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	unlink(sock);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(s, 4), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int c = accept(s, NULL, NULL);
		char req[2048];
		ssize_t k = read(c, req, sizeof req);
		if (k <= 0 || strncmp(req, "GET /info HTTP/1.1\r\nHost: docker\r\n", 34) != 0)
			_exit(3);
		if (!what) {
			sleep(30);
			_exit(0);
		}
		for (size_t at = 0; at < strlen(what); at += step) {
			size_t n = strlen(what) - at < step ? strlen(what) - at : step;
			if (write(c, what + at, n) != (ssize_t)n)
				_exit(4);
			usleep(2000);
		}
		_exit(0);
	}
	close(s);
	return pid;
}

static int finish(pid_t pid)
{
	kill(pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

static void test_requests_on_a_real_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-unit-docker-api-XXXXXX", sock[96], err[400];
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof sock, "%s/d.sock", dir);
	lb_docker_http r = {0};
	json_object *o = NULL;

	pid_t p = serve(sock, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "c\r\n{\"ServerVers\r\n14\r\nion\":\"28.0.0\",\"X\":1}\r\n0\r\n\r\n", 7);
	assert_int_equal(lb_docker_api_json(sock, "GET", "/info", 5000, &o, err, sizeof err), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(o, "ServerVersion")), "28.0.0");
	json_object_put(o);
	finish(p);

	p = serve(sock, "HTTP/1.1 404 Not Found\r\nContent-Length: 38\r\n\r\n"
			"{\"message\":\"No such image: nope:img\"}\n", 4096);
	assert_int_equal(lb_docker_api_json(sock, "GET", "/info", 5000, &o, err, sizeof err), -ENOENT);
	assert_string_equal(err, "Error response from daemon: No such image: nope:img");
	finish(p);

	p = serve(sock, "garbage, not an engine\n", 4096);
	assert_int_equal(lb_docker_api_request(sock, "GET", "/info", 5000, &r, err, sizeof err), -EBADMSG);
	assert_non_null(strstr(err, "not HTTP"));
	finish(p);

	p = serve(sock, "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"ServerVersion\":", 4096);
	assert_int_equal(lb_docker_api_request(sock, "GET", "/info", 5000, &r, err, sizeof err), -EBADMSG);
	assert_non_null(strstr(err, "in the middle of its answer"));
	finish(p);

	p = serve(sock, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"a\": [1,", 4096);
	assert_int_equal(lb_docker_api_json(sock, "GET", "/info", 5000, &o, err, sizeof err), -EBADMSG);
	assert_non_null(strstr(err, "not a JSON document"));
	finish(p);

	/* A peer that never answers: the timeout, not a hang. */
	p = serve(sock, NULL, 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(lb_docker_api_request(sock, "GET", "/info", 300, &r, err, sizeof err), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	assert_non_null(strstr(err, "did not answer"));
	finish(p);

	unlink(sock);
	assert_int_equal(lb_docker_api_request(sock, "GET", "/info", 1000, &r, err, sizeof err), -ENOENT);
	assert_non_null(strstr(err, "cannot connect to"));
	assert_non_null(strstr(err, sock));
	rmdir(dir);
}


/* --- the API run (docker_api_run.c) --- */

static json_object *member(json_object *o, const char *path)
{
	char key[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		snprintf(key, sizeof key, "%.*s", (int)n, path);
		o = json_object_object_get(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static void test_create_body_from_the_clients_flags(void **state)
{
	(void)state;
	setenv("LB_UNIT_SECRET", "s3cret", 1);
	unsetenv("LB_UNIT_UNSET");
	char *argv[] = {"/usr/bin/docker", "run", "--pull=never", "--name", "labbox-r1",
			"--label=labbox.run=r1", "--label=labbox.owner=h:1:2", "--init", "--read-only",
			"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user=65534:65534",
			"--network=none", "--memory=536870912", "--memory-swap=536870912", "--cpus=1.5",
			"--pids-limit=256", "--shm-size=67108864", "--ulimit=nofile=1024:2048",
			"--tmpfs", "/tmp:size=1g,exec", "--tmpfs", "/scratch", "--gpus", "\"device=0,2\"",
			"--mount", "type=bind,source=/data,target=/data,readonly",
			"--mount", "type=bind,source=/runs/r1/exp,target=/runs/r1/exp",
			"--workdir=/runs/r1/exp", "--env=HOME=/tmp", "--env=LB_UNIT_SECRET",
			"--env=LB_UNIT_UNSET", "--entrypoint=python3", "img:tag", "main.py", "--seed", "1", NULL};
	json_object *b = NULL;
	char name[64];
	assert_int_equal(lb_docker_create_body(argv, &b, name, sizeof name), 0);
	assert_string_equal(name, "labbox-r1");
	assert_string_equal(json_object_get_string(member(b, "Image")), "img:tag");
	assert_string_equal(json_object_to_json_string_ext(member(b, "Cmd"), JSON_C_TO_STRING_PLAIN),
			    "[\"main.py\",\"--seed\",\"1\"]");
	assert_string_equal(json_object_to_json_string_ext(member(b, "Entrypoint"), JSON_C_TO_STRING_PLAIN),
			    "[\"python3\"]");
	assert_string_equal(json_object_get_string(member(b, "User")), "65534:65534");
	assert_string_equal(json_object_get_string(member(b, "WorkingDir")), "/runs/r1/exp");
	assert_string_equal(json_object_get_string(json_object_object_get(member(b, "Labels"), "labbox.run")), "r1");
	assert_string_equal(json_object_to_json_string_ext(member(b, "Env"), JSON_C_TO_STRING_PLAIN),
			    "[\"HOME=\\/tmp\",\"LB_UNIT_SECRET=s3cret\",\"LB_UNIT_UNSET\"]");
	assert_false(json_object_get_boolean(member(b, "Tty")));
	assert_false(json_object_get_boolean(member(b, "OpenStdin")));
	assert_true(json_object_get_boolean(member(b, "AttachStdout")));
	assert_true(json_object_get_boolean(member(b, "AttachStderr")));
	json_object *hc = member(b, "HostConfig");
	assert_true(json_object_get_boolean(member(hc, "Init")));
	assert_true(json_object_get_boolean(member(hc, "ReadonlyRootfs")));
	assert_string_equal(json_object_get_string(member(hc, "NetworkMode")), "none");
	assert_int_equal(json_object_get_int64(member(hc, "Memory")), 536870912);
	assert_int_equal(json_object_get_int64(member(hc, "MemorySwap")), 536870912);
	assert_int_equal(json_object_get_int64(member(hc, "NanoCpus")), 1500000000);
	assert_int_equal(json_object_get_int64(member(hc, "PidsLimit")), 256);
	assert_int_equal(json_object_get_int64(member(hc, "ShmSize")), 67108864);
	assert_string_equal(json_object_to_json_string_ext(member(hc, "CapDrop"), JSON_C_TO_STRING_PLAIN), "[\"ALL\"]");
	assert_string_equal(json_object_to_json_string_ext(member(hc, "SecurityOpt"), JSON_C_TO_STRING_PLAIN),
			    "[\"no-new-privileges\"]");
	assert_string_equal(json_object_to_json_string_ext(member(hc, "Tmpfs"), JSON_C_TO_STRING_PLAIN),
			    "{\"\\/tmp\":\"size=1g,exec\",\"\\/scratch\":\"\"}");
	assert_string_equal(json_object_to_json_string_ext(member(hc, "Ulimits"), JSON_C_TO_STRING_PLAIN),
			    "[{\"Name\":\"nofile\",\"Soft\":1024,\"Hard\":2048}]");
	assert_string_equal(json_object_to_json_string_ext(member(hc, "Mounts"), JSON_C_TO_STRING_PLAIN),
			    "[{\"Type\":\"bind\",\"Source\":\"\\/data\",\"Target\":\"\\/data\",\"ReadOnly\":true},"
			    "{\"Type\":\"bind\",\"Source\":\"\\/runs\\/r1\\/exp\",\"Target\":\"\\/runs\\/r1\\/exp\",\"ReadOnly\":false}]");
	assert_string_equal(json_object_to_json_string_ext(member(hc, "DeviceRequests"), JSON_C_TO_STRING_PLAIN),
			    "[{\"Driver\":\"\",\"Count\":0,\"DeviceIDs\":[\"0\",\"2\"],\"Capabilities\":[[\"gpu\"]]}]");
	json_object_put(b);

	char *all[] = {"docker", "run", "--name", "n", "--gpus", "all", "i", NULL};
	assert_int_equal(lb_docker_create_body(all, &b, name, sizeof name), 0);
	assert_string_equal(json_object_to_json_string_ext(member(b, "HostConfig.DeviceRequests"), JSON_C_TO_STRING_PLAIN),
			    "[{\"Driver\":\"\",\"Count\":-1,\"Capabilities\":[[\"gpu\"]]}]");
	assert_string_equal(json_object_to_json_string_ext(member(b, "Cmd"), JSON_C_TO_STRING_PLAIN), "[]");
	json_object_put(b);
}

static void test_create_body_leaves_the_unknown_to_the_client(void **state)
{
	(void)state;
	json_object *b = NULL;
	char name[64];
	char *inter[] = {"docker", "create", "--name", "n", "--interactive", "i", NULL};
	char *other[] = {"docker", "run", "--name", "n", "--privileged", "i", NULL};
	char *net[] = {"docker", "run", "--name", "n", "--network=bridge", "i", NULL};
	char *vol[] = {"docker", "run", "--name", "n", "--mount", "type=volume,source=v,target=/v", "i", NULL};
	char *noimg[] = {"docker", "run", "--name", "n", NULL};
	char *noname[] = {"docker", "run", "i", NULL};
	char *build[] = {"docker", "build", "--name", "n", "i", NULL};
	char *bad[] = {"docker", "run", "--name", "n", "--memory=12x", "i", NULL};
	char *cut[] = {"docker", "run", "--name", NULL};
	char *const *no[] = {inter, other, net, vol, noimg, noname, build};
	for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
		assert_int_equal(lb_docker_create_body(no[i], &b, name, sizeof name), -ENOTSUP);
		assert_null(b);
	}
	assert_int_equal(lb_docker_create_body(bad, &b, name, sizeof name), -EINVAL);
	assert_int_equal(lb_docker_create_body(cut, &b, name, sizeof name), -EINVAL);
	assert_null(b);
}

typedef struct got {
	char text[4096];
	size_t n;
} got;

/* Each frame as [stream]payload, so both the streams and their order show. */
static void collect(void *ctx, int stream, const char *data, size_t len)
{
	got *g = ctx;
	int k = snprintf(g->text + g->n, sizeof g->text - g->n, "[%d]%.*s", stream, (int)len, data);
	g->n += (size_t)k;
}

/* Pieces of one stream's consecutive bytes joined: what a reader of that stream sees. */
static void joined(const char *text, char *out, size_t n)
{
	size_t at = 0;
	int last = -1;
	for (const char *p = text; *p && at + 4 < n;) {
		if (p[0] == '[' && p[2] == ']') {
			if (p[1] - '0' != last)
				at += (size_t)snprintf(out + at, n - at, "[%c]", p[1]);
			last = p[1] - '0';
			p += 3;
		} else
			out[at++] = *p++;
	}
	out[at] = '\0';
}

static size_t frame(char *buf, int stream, const char *payload)
{
	size_t n = strlen(payload);
	buf[0] = (char)stream;
	buf[1] = buf[2] = buf[3] = 0;
	buf[4] = (char)(n >> 24);
	buf[5] = (char)(n >> 16);
	buf[6] = (char)(n >> 8);
	buf[7] = (char)n;
	memcpy(buf + 8, payload, n);
	return n + 8;
}

static void test_mux_frames_split_anywhere(void **state)
{
	(void)state;
	char in[512];
	size_t n = 0;
	n += frame(in + n, 1, "accuracy: 0.5\n");
	n += frame(in + n, 2, "warning\n");
	n += frame(in + n, 1, "");
	n += frame(in + n, 0, "stdin is no output");
	n += frame(in + n, 1, "loss: 1\n");
	const char *want = "[1]accuracy: 0.5\n[2]warning\n[1]loss: 1\n";
	for (size_t step = 1; step <= n; step++) {
		lb_docker_mux m = {0};
		got g = {0};
		for (size_t at = 0; at < n; at += step)
			lb_docker_mux_feed(&m, in + at, n - at < step ? n - at : step, collect, &g);
		char j[4096];
		joined(g.text, j, sizeof j);
		assert_string_equal(j, want);
		assert_false(m.raw);
	}
}

static void test_mux_keeps_output_it_cannot_frame(void **state)
{
	(void)state;
	char in[128];
	size_t n = frame(in, 1, "ok\n");
	memcpy(in + n, "plain text, no header\n", 22);
	n += 22;
	lb_docker_mux m = {0};
	got g = {0};
	lb_docker_mux_feed(&m, in, n, collect, &g);
	char j[4096];
	joined(g.text, j, sizeof j);
	assert_string_equal(j, "[1]ok\nplain text, no header\n");
	assert_true(m.raw);
}

static void test_attach_head(void **state)
{
	(void)state;
	size_t head = 0;
	/* the head, then the first bytes of the stream */
	const char *up = "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
			 "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
	char withstream[256];
	snprintf(withstream, sizeof withstream, "%s\x01xyz", up);
	assert_int_equal(lb_docker_attach_head(withstream, strlen(withstream), &head), 101);
	assert_int_equal(head, strlen(up));
	for (size_t n = 0; n < strlen(up); n++)
		assert_int_equal(lb_docker_attach_head(up, n, &head), -EAGAIN);
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n";
	assert_int_equal(lb_docker_attach_head(ok, strlen(ok), &head), 200);
	const char *no = "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}";
	assert_int_equal(lb_docker_attach_head(no, strlen(no), &head), 404);
	assert_int_equal(lb_docker_attach_head("SSH-2.0-x\r\n", 11, &head), -EBADMSG);
	assert_int_equal(lb_docker_attach_head("HTTP/1.1 0x1 ?\r\n\r\n", 18, &head), -EBADMSG);
}

/* An engine on a real socket for the three requests of a run: create's answer, the attach's
 * (the head and the frames, in pieces, then the close), start's. Each request is checked
 * for its method and path. */
static pid_t serve_run(const char *sock, const char *create_answer, const char *attach_answer,
		       size_t attach_len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	unlink(sock);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(s, 4), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid != 0) {
		close(s);
		return pid;
	}
	alarm(20); /* a test that failed before its requests leaves no server behind */
	const char *want[] = {"POST /containers/create?name=labbox-r1 HTTP/1.1\r\n",
			      "POST /containers/abc123/attach?stream=1&stdout=1&stderr=1 HTTP/1.1\r\n",
			      "POST /containers/abc123/start HTTP/1.1\r\n"};
	int attached = -1;
	for (int i = 0; i < 3; i++) {
		int c = accept(s, NULL, NULL);
		char req[4096] = "";
		ssize_t k = read(c, req, sizeof req - 1);
		if (k <= 0 || strncmp(req, want[i], strlen(want[i])) != 0)
			_exit(10 + i);
		if (i == 0) {
			/* the body is the container's config */
			if (!strstr(req, "\"Image\":\"img\"") || !strstr(req, "\"NetworkMode\":\"none\""))
				_exit(20);
			if (write(c, create_answer, strlen(create_answer)) < 0)
				_exit(21);
			close(c);
			if (strncmp(create_answer, "HTTP/1.1 201", 12) != 0)
				_exit(0);
		} else if (i == 1) {
			/* the head and the first frame together, the rest after the start */
			if (write(c, attach_answer, 90) != 90)
				_exit(22);
			attached = c;
		} else {
			const char *ok = "HTTP/1.1 204 No Content\r\n\r\n";
			if (write(c, ok, strlen(ok)) < 0)
				_exit(23);
			close(c);
			for (size_t at = 90; at < attach_len; at += 5) {
				size_t n = attach_len - at < 5 ? attach_len - at : 5;
				if (write(attached, attach_answer + at, n) != (ssize_t)n)
					_exit(24);
				usleep(1000);
			}
			close(attached);
		}
	}
	_exit(0);
}

static void test_a_run_on_a_real_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-unit-docker-run-XXXXXX", sock[96], err[400] = "";
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof sock, "%s/d.sock", dir);
	char *argv[] = {"docker", "run", "--name", "labbox-r1", "--network=none", "img", NULL};
	char attach[512];
	const char *head = "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
	size_t n = (size_t)snprintf(attach, sizeof attach, "%s", head);
	n += frame(attach + n, 1, "accuracy: 0.5\n");
	n += frame(attach + n, 2, "a warning\n");
	n += frame(attach + n, 1, "done\n");
	assert_true(n > 90);
	pid_t p = serve_run(sock, "HTTP/1.1 201 Created\r\nContent-Length: 31\r\n\r\n"
				  "{\"Id\":\"abc123\",\"Warnings\":[]}\n\n", attach, n);
	lb_docker_api_run run = {.fd = -1};
	assert_int_equal(lb_docker_api_launch(sock, argv, 5000, &run, err, sizeof err), 0);
	assert_string_equal(run.id, "abc123");
	lb_docker_mux m = {0};
	got g = {0};
	lb_docker_mux_feed(&m, run.early.data, run.early.len, collect, &g);
	for (;;) {
		char buf[64];
		ssize_t k = read(run.fd, buf, sizeof buf);
		if (k < 0 && errno == EAGAIN) {
			usleep(1000);
			continue;
		}
		if (k <= 0)
			break;
		lb_docker_mux_feed(&m, buf, (size_t)k, collect, &g);
	}
	char j[4096];
	joined(g.text, j, sizeof j);
	assert_string_equal(j, "[1]accuracy: 0.5\n[2]a warning\n[1]done\n");
	lb_docker_api_run_close(&run);
	int st = 0;
	waitpid(p, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* A refusal is the engine's own words, and nothing is attached. */
	p = serve_run(sock, "HTTP/1.1 404 Not Found\r\nContent-Length: 34\r\n\r\n"
			    "{\"message\":\"No such image: img\"}\n\n", attach, n);
	assert_int_equal(lb_docker_api_launch(sock, argv, 5000, &run, err, sizeof err), -ENOENT);
	assert_string_equal(err, "Error response from daemon: No such image: img");
	assert_int_equal(run.fd, -1);
	waitpid(p, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(sock);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_content_length_body),
		cmocka_unit_test(test_chunked_body_split_anywhere),
		cmocka_unit_test(test_no_length_reads_to_close_and_204_has_none),
		cmocka_unit_test(test_garbage_and_oversize_are_refused),
		cmocka_unit_test(test_socket_as_the_client_resolves_it),
		cmocka_unit_test(test_path_encoding),
		cmocka_unit_test(test_requests_on_a_real_socket),
		cmocka_unit_test(test_create_body_from_the_clients_flags),
		cmocka_unit_test(test_create_body_leaves_the_unknown_to_the_client),
		cmocka_unit_test(test_mux_frames_split_anywhere),
		cmocka_unit_test(test_mux_keeps_output_it_cannot_frame),
		cmocka_unit_test(test_attach_head),
		cmocka_unit_test(test_a_run_on_a_real_socket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
