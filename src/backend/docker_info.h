/* The engine's info as the docker backend records it (docker_info.c): pure functions of the
 * document `ENGINE info` or the API's /info returned. Internal to src/backend. */
#ifndef LB_BACKEND_DOCKER_INFO_H
#define LB_BACKEND_DOCKER_INFO_H

#include <stdbool.h>

struct json_object;

/* A member of object o: NULL when o is NULL, the key is missing or the value is of another
 * type; jbool reads it as json-c does (a non-zero number or a non-empty string is true). */
bool lb_docker_jbool(struct json_object *o, const char *key);
struct json_object *lb_docker_jobj(struct json_object *o, const char *key);
const char *lb_docker_jstr(struct json_object *o, const char *key);

/* docker's or podman's info (engine "docker" or "podman") as one normalised object, the same
 * keys for both: version, client_version, os, kernel, rootless, userns_remap, cgroup {version
 * "v1"|"v2", driver}, limits {memory, memory_swap, pids_limit, cpus}, seccomp, apparmor,
 * selinux, security_options, init, runtimes, default_runtime. */
struct json_object *lb_docker_normalise_info(const char *engine, struct json_object *raw);
/* What --gpus needs of the engine and what the client can see of it, from the normalised
 * info; host: what points the client elsewhere (DOCKER_HOST, CONTAINER_HOST), NULL if nothing. */
struct json_object *lb_docker_gpus_facts(const char *engine, const char *host, struct json_object *info);

#endif
