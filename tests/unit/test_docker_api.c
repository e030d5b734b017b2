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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
