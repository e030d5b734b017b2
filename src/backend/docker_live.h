/* The docker backend's record of the containers this user's labbox made and has not seen
 * removed: one marker file per container, written before the container can exist and
 * removed once docker rm succeeded. No marker of an engine, no container of a dead labbox
 * there: the sweep of leftovers (a client call listing every labbox container) is skipped.
 * Internal to src/backend (docker.c). */
#ifndef LB_BACKEND_DOCKER_LIVE_H
#define LB_BACKEND_DOCKER_LIVE_H

#include <stdbool.h>

typedef struct lb_docker_live {
	int dirfd;         /* the user's cache dir's docker-live/; -1 when there is none */
	char key[17];      /* the engine and what names its storage, hashed */
	char marker[160];  /* this run's marker's name; "" before add */
} lb_docker_live;

/* Opens the record for the engine (docker or podman) as the environment points it; -errno
 * when the directory cannot be had (then the sweep runs every time). */
int lb_docker_live_open(lb_docker_live *l, const char *engine);
/* The marker of container NAME, whose labbox.owner label is OWNER (host:pid:starttime). */
int lb_docker_live_add(lb_docker_live *l, const char *name, const char *owner);
/* docker rm of this run's container succeeded. */
void lb_docker_live_done(lb_docker_live *l);
/* Whether a leftover can exist on this engine: a marker other than this run's, or no
 * record at all. */
bool lb_docker_live_maybe_leftovers(const lb_docker_live *l);
/* After a sweep that listed the engine's containers and removed the dead runs' ones: their
 * markers go (live labboxes' stay). */
void lb_docker_live_forget_dead(lb_docker_live *l);
/* Whether OWNER (host:pid:starttime) names a labbox that is still running on this host. */
bool lb_docker_owner_alive(const char *owner_host, int pid, unsigned long long start);
unsigned long long lb_docker_start_time_of(int pid);
void lb_docker_live_close(lb_docker_live *l);

#endif
