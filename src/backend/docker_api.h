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

#endif
