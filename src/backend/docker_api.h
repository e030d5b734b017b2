/* The docker engine's HTTP API on its unix socket: what the docker backend asks the engine
 * (info, image and container inspect, wait, rm, the leftovers' list) without starting the
 * Go client, whose start-up costs 30-40 ms of CPU a call. Only for an engine the client
 * would reach on a local unix socket (DOCKER_HOST=unix://..., or no DOCKER_HOST and the
 * default context); anything else goes through the client. Internal to src/backend. */
#ifndef LB_BACKEND_DOCKER_API_H
#define LB_BACKEND_DOCKER_API_H

#include "labbox/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

#define LB_DOCKER_API_MAX_HEAD (16u << 10)
#define LB_DOCKER_API_MAX_BODY (4u << 20)

/* The socket the docker client would speak to, into path: 0; -ENOTSUP when the client names
 * its engine another way (tcp://, ssh://, a context other than the default), so only the
 * client may be asked. */
int lb_docker_api_socket(char *path, size_t n);
/* Whether the docker client's config (DOCKER_CONFIG's or ~/.docker's config.json) names a
 * current context other than "default": 1 it does, 0 it does not or there is no config, -1
 * the config is there but cannot be read. */
int lb_docker_config_context(void);

/* One HTTP/1.1 response as read so far. */
typedef struct lb_docker_http {
	int status;
	lb_buf body; /* the body, chunks joined; NUL-terminated */
} lb_docker_http;

/* Parses the response in buf[0..len) (eof: the peer closed after it): 0 when it is whole
 * (status and body in r), -EAGAIN when more is to come, -EBADMSG when it is not an HTTP
 * response or breaks off at eof, -EMSGSIZE when its head or body is over the limits. */
int lb_docker_http_parse(const char *buf, size_t len, bool eof, lb_docker_http *r);
void lb_docker_http_free(lb_docker_http *r);

/* METHOD PATH on the socket, the response within timeout_ms: 0 with r filled (any status);
 * negative errno with err saying what failed (connect, a timeout, a response that is not
 * HTTP or breaks off). */
int lb_docker_api_request(const char *sock, const char *method, const char *path, int timeout_ms,
			  lb_docker_http *r, char *err, size_t errlen);

/* A request whose answer is a JSON document (status 2xx): 0 with *out; -ENOENT on 404, another
 * negative errno otherwise; err as the client words it ("Error response from daemon: ..."). */
int lb_docker_api_json(const char *sock, const char *method, const char *path, int timeout_ms,
		       struct json_object **out, char *err, size_t errlen);

/* PRE NAME POST into out, NAME percent-encoded where it is not [A-Za-z0-9._-/:@] (an image
 * reference keeps its slashes, as the engine's routes take them). */
int lb_docker_api_path(char *out, size_t n, const char *pre, const char *name, const char *post);

/* DELETE /containers/NAME?force=1&v=1, docker rm -f -v: 0 when it is gone (or never was). */
int lb_docker_api_rm(const char *sock, const char *name, int timeout_ms);

/* The client's own version (`docker --version`'s, as docker info's ClientInfo.Version),
 * cached in the user's cache directory by the client's path, inode, size and mtime, so a
 * run asks the client once per client binary. */
int lb_docker_client_version(const char *client, char *out, size_t n);

/* The container's end as docker inspect shows it. status and error are State.Status and
 * State.Error: a container the engine never started is left "created", or says why there. */
typedef struct lb_docker_end {
	int exit_code;
	bool oom;
	char status[32];
	char error[400];
} lb_docker_end;
int lb_docker_api_end(const char *sock, const char *id, int timeout_ms, lb_docker_end *end);
/* The containers of labboxes that are gone (label labbox.owner names a dead process of this
 * host) removed: 0, or negative errno when the list or a removal failed. */
int lb_docker_api_remove_dead(const char *sock, int timeout_ms);

#endif

/* --- A container run over the API (docker_api_run.c) --- */

/* The engine's words for a refusal (its body's "message"), as the client prints them:
 * "Error response from daemon: ...", on one line. */
void lb_docker_api_said(const lb_docker_http *r, char *err, size_t errlen);

/* A connection to the socket (non-blocking, close-on-exec): its fd, or negative errno with
 * err saying why. */
int lb_docker_api_connect(const char *sock, int timeout_ms, char *err, size_t errlen);

/* METHOD PATH with a JSON body (NULL: none); otherwise as lb_docker_api_request. */
int lb_docker_api_send(const char *sock, const char *method, const char *path, const char *body,
		       int timeout_ms, lb_docker_http *r, char *err, size_t errlen);

/* The client's argv for `docker run` or `docker create` as the docker backend writes it
 * (argv[0] the client, argv[1] "run" or "create", then the flags build_create uses, the
 * image and the command) as the body of POST /containers/create, with the container's name
 * (--name) into name: 0; -ENOTSUP for a flag or a form it does not translate (the client is
 * used then), -EINVAL for a value it cannot read. A name-only --env=K takes K's value from
 * this process's environment, as the client does. */
int lb_docker_create_body(char *const *argv, struct json_object **body, char *name, size_t nn);

/* The response head of POST /containers/ID/attach (an upgrade to a raw stream): its status
 * (101, 200, or an error status whose body says why) and the head's length into *head;
 * -EAGAIN for more, -EBADMSG when it is not an HTTP head, -EMSGSIZE over the head limit. */
int lb_docker_attach_head(const char *buf, size_t len, size_t *head);

/* The attach stream of a container without a terminal: frames of an 8-byte header (stream
 * 0 stdin, 1 stdout, 2 stderr; three zero bytes; a big-endian 32-bit length) then the
 * payload. Fed as the bytes come, in any split. A header that is not one (a stream other
 * than 0-2, or the zero bytes not zero) switches to passing every later byte as stdout, so
 * no output is lost to an engine that framed it otherwise. */
typedef struct lb_docker_mux {
	unsigned char hdr[8];
	unsigned hn;      /* header bytes held */
	int stream;       /* the current frame's stream */
	uint32_t left;    /* its payload bytes still to come */
	bool raw;         /* framing given up */
} lb_docker_mux;
typedef void (*lb_docker_mux_emit)(void *ctx, int stream, const char *data, size_t len);
void lb_docker_mux_feed(lb_docker_mux *m, const char *buf, size_t len, lb_docker_mux_emit emit,
			void *ctx);

/* A container created, attached and started over the API. */
typedef struct lb_docker_api_run {
	char id[80];     /* the engine's id */
	int fd;          /* the attach stream; -1 when none */
	lb_buf early;    /* stream bytes that came with the attach's head */
} lb_docker_api_run;

/* Create (from the client's argv, lb_docker_create_body), attach, start: 0 with run filled;
 * -ENOTSUP when the argv is not one the API path translates (nothing was made, the client
 * is to run it); another negative errno with err saying what the engine said or what failed
 * (a container made before the failure is removed). */
int lb_docker_api_launch(const char *sock, char *const *argv, int timeout_ms,
			 lb_docker_api_run *run, char *err, size_t errlen);
void lb_docker_api_run_close(lb_docker_api_run *run);
/* POST /containers/ID/wait: the exit status into *status. */
int lb_docker_api_wait(const char *sock, const char *id, int timeout_ms, int *status);
/* POST /containers/ID/ACTION (stop?t=N, kill) in a child, so output keeps streaming while
 * the engine works: the child's pid, or -1. */
pid_t lb_docker_api_spawn(const char *sock, const char *id, const char *action, int timeout_ms);
