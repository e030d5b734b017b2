/* The record of the containers labbox made and has not seen removed (docker_live.h). A
 * marker is a file KEY-NAME in the user's cache directory (private, lb_open_private_dir)
 * holding the container's labbox.owner label; KEY names the engine and what points it at
 * its storage (DOCKER_HOST, podman's CONTAINERS_* files...), so a marker of another engine
 * never lets this one skip its sweep nor is forgotten by it. */
#include "docker_live.h"

#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What decides which containers an engine's client sees. */
static const char *const key_vars[] = {"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG",
				       "CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINERS_CONF",
				       "CONTAINERS_STORAGE_CONF", NULL};

int lb_docker_live_open(lb_docker_live *l, const char *engine)
{
	l->dirfd = -1;
	l->marker[0] = '\0';
	lb_sha256 c;
	lb_sha256_init(&c);
	lb_sha256_update(&c, "labbox.docker-live/1\n", 21);
	lb_sha256_update(&c, engine, strlen(engine) + 1);
	for (size_t i = 0; key_vars[i]; i++) {
		const char *v = getenv(key_vars[i]);
		lb_sha256_update(&c, key_vars[i], strlen(key_vars[i]) + 1);
		if (v)
			lb_sha256_update(&c, v, strlen(v));
		lb_sha256_update(&c, "\n", 1);
	}
	uint8_t dg[32];
	char hex[65];
	lb_sha256_final(&c, dg);
	lb_sha256_hex(dg, hex);
	snprintf(l->key, sizeof l->key, "%.16s", hex);
	LB_AUTOFREE char *base = lb_user_cache_dir();
	LB_AUTOFREE char *dir = NULL;
	if (!base || asprintf(&dir, "%s/docker-live", base) < 0)
		return -ENOENT;
	int fd = lb_open_private_dir(dir);
	if (fd < 0)
		return fd;
	l->dirfd = fd;
	return 0;
}

int lb_docker_live_add(lb_docker_live *l, const char *name, const char *owner)
{
	if (l->dirfd < 0)
		return -EBADF;
	char m[sizeof l->marker];
	if (snprintf(m, sizeof m, "%s-%s", l->key, name) >= (int)sizeof m || strchr(name, '/'))
		return -EINVAL;
	/* Written aside and renamed: a marker is never seen empty (and forgotten as unreadable). */
	char tmp[sizeof m + 8];
	snprintf(tmp, sizeof tmp, ".tmp-%s", m);
	int fd = openat(l->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t n = strlen(owner);
	bool ok = write(fd, owner, n) == (ssize_t)n;
	close(fd);
	if (!ok || renameat(l->dirfd, tmp, l->dirfd, m) < 0) {
		unlinkat(l->dirfd, tmp, 0);
		return -EIO;
	}
	snprintf(l->marker, sizeof l->marker, "%s", m);
	return 0;
}

void lb_docker_live_done(lb_docker_live *l)
{
	if (l->dirfd >= 0 && l->marker[0])
		unlinkat(l->dirfd, l->marker, 0);
	l->marker[0] = '\0';
}

/* Calls fn for each marker of this key other than this run's; stops when it returns true. */
static bool each_marker(const lb_docker_live *l, bool (*fn)(const lb_docker_live *, const char *, void *),
			void *ctx)
{
	int fd = openat(l->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return true; /* unreadable: as if leftovers could be there */
	}
	bool stopped = false;
	size_t kl = strlen(l->key);
	struct dirent *e;
	while (!stopped && (e = readdir(dir))) {
		if (strncmp(e->d_name, l->key, kl) != 0 || e->d_name[kl] != '-' ||
		    strcmp(e->d_name, l->marker) == 0)
			continue;
		stopped = fn(l, e->d_name, ctx);
	}
	closedir(dir);
	return stopped;
}

static bool any(const lb_docker_live *l, const char *name, void *ctx)
{
	(void)l;
	(void)name;
	(void)ctx;
	return true;
}

bool lb_docker_live_maybe_leftovers(const lb_docker_live *l)
{
	if (l->dirfd < 0)
		return true;
	return each_marker(l, any, NULL);
}

unsigned long long lb_docker_start_time_of(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
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

bool lb_docker_owner_alive(const char *owner_host, int pid, unsigned long long start)
{
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	/* Another machine's labbox on a shared engine is not ours to judge: alive for us. */
	if (strcmp(owner_host, host) != 0)
		return true;
	return pid > 0 && kill(pid, 0) == 0 && lb_docker_start_time_of(pid) == start;
}

static bool forget_if_dead(const lb_docker_live *l, const char *name, void *ctx)
{
	(void)ctx;
	char owner[400] = "", host[256];
	int pid = 0;
	unsigned long long st = 0;
	LB_AUTOCLOSE int fd = openat(l->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, owner, sizeof owner - 1) : -1;
	if (n > 0)
		owner[n] = '\0';
	if (n <= 0 || sscanf(owner, "%255[^:]:%d:%llu", host, &pid, &st) != 3 ||
	    !lb_docker_owner_alive(host, pid, st))
		unlinkat(l->dirfd, name, 0);
	return false;
}

void lb_docker_live_forget_dead(lb_docker_live *l)
{
	if (l->dirfd >= 0)
		each_marker(l, forget_if_dead, NULL);
}

void lb_docker_live_close(lb_docker_live *l)
{
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->dirfd = -1;
}
