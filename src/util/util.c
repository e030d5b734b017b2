/* util: cleanup helpers, buffers, file I/O, time, parsing. */
#include "labbox/util.h"

#include <dirent.h>
#include <linux/openat2.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void lb_freep(void *p)
{
	free(*(void **)p);
}

void lb_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

void lb_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static int buf_reserve(lb_buf *b, size_t extra)
{
	if (extra > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *d = realloc(b->data, cap);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

int lb_buf_append(lb_buf *b, const void *data, size_t len)
{
	int r = buf_reserve(b, len);
	if (r < 0)
		return r;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int lb_buf_puts(lb_buf *b, const char *s)
{
	return lb_buf_append(b, s, strlen(s));
}

int lb_buf_printf(lb_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	int r = buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void lb_buf_free(lb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int lb_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The whole of the regular file open on fd, at most max bytes. */
static int read_regular_fd(int fd, size_t max, char **out, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	LB_AUTOFREE char *data = malloc((size_t)st.st_size + 1);
	if (!data)
		return -ENOMEM;
	size_t got = 0;
	/* What fstat said is what is kept, even when the file grows while it is read; so a read
	 * that brings that much is the whole answer (no second read to see the end). */
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got > (size_t)st.st_size)
		got = (size_t)st.st_size;
	data[got] = '\0';
	*out = lb_steal_ptr(&data);
	if (len)
		*len = got;
	return 0;
}

int lb_read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len)
{
	LB_AUTOCLOSE int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return read_regular_fd(fd, max, out, len);
}

int lb_open_file_beneath(const char *dir, const char *rel)
{
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* No link anywhere on the way, nothing above dir, no open that waits (a FIFO). */
	struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = errno;
		close(fd);
		return S_ISREG(st.st_mode) ? -e : -EINVAL;
	}
	return fd;
}

int lb_read_file_beneath(const char *dir, const char *rel, size_t max, char **out, size_t *len)
{
	LB_AUTOCLOSE int fd = lb_open_file_beneath(dir, rel);
	return fd < 0 ? fd : read_regular_fd(fd, max, out, len);
}

bool lb_rel_path_plain(const char *rel)
{
	size_t len = rel ? strlen(rel) : 0;
	if (len == 0 || len >= PATH_MAX || rel[0] == '/' || rel[len - 1] == '/')
		return false;
	for (const char *p = rel;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

int lb_open_parent_beneath(int dirfd, const char *rel, bool make, const char **base)
{
	if (!lb_rel_path_plain(rel))
		return -EINVAL;
	int cur = dup(dirfd);
	if (cur < 0)
		return -errno;
	for (const char *p = rel;;) {
		const char *slash = strchr(p, '/');
		if (!slash) {
			*base = p;
			return cur;
		}
		char comp[NAME_MAX + 1];
		memcpy(comp, p, (size_t)(slash - p));
		comp[slash - p] = '\0';
		if (make && mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			close(cur);
			return -e;
		}
		int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(cur);
		if (next < 0)
			return -e;
		cur = next;
		p = slash + 1;
	}
}

bool lb_env_name_valid(const char *name)
{
	if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return false;
	for (const char *p = name + 1; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

int lb_write_file_atomic(const char *path, const void *data, size_t len)
{
	return lb_write_file_atomic_mode(path, data, len, 0644);
}

/* data written into what path names, as the shell's `>` would: through a link to what it
 * points at, into a device or a pipe as it is; only a regular file is replaced whole. */
static int write_through(const char *path, bool create)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | (create ? O_CREAT | O_TRUNC : 0),
		      0666);
	return fd < 0 ? -errno : fd;
}

int lb_write_output_file(const char *path, const void *data, size_t len)
{
	struct stat lst, st;
	if (lstat(path, &lst) < 0)
		return errno == ENOENT ? lb_write_file_atomic(path, data, len) : -errno;
	if (S_ISDIR(lst.st_mode))
		return -EISDIR;
	if (S_ISREG(lst.st_mode))
		return lb_write_file_atomic(path, data, len);
	int fd;
	if (S_ISLNK(lst.st_mode)) {
		if (stat(path, &st) < 0) {
			if (errno != ENOENT)
				return -errno;
			fd = write_through(path, true); /* a dangling link: its target is made */
		} else if (S_ISDIR(st.st_mode)) {
			return -EISDIR;
		} else if (S_ISREG(st.st_mode)) {
			/* the file it points at replaced whole; the link stays a link */
			char real[PATH_MAX];
			if (!realpath(path, real))
				return -errno;
			return lb_write_file_atomic(real, data, len);
		} else {
			fd = write_through(path, false); /* /dev/stdout: the pipe or terminal */
		}
	} else {
		fd = write_through(path, false); /* a device, a FIFO: written into, never replaced */
	}
	if (fd < 0)
		return fd;
	int r = lb_write_all(fd, data, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* data under PATH.tmp.PID, synced on its own descriptor when sync; *tmp names it. */
static int write_tmp(const char *path, const void *data, size_t len, mode_t mode, bool sync,
		     char **tmp)
{
	LB_AUTOFREE char *t = NULL;
	if (asprintf(&t, "%s.tmp.%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	int fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	int r = lb_write_all(fd, data, len);
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		unlink(t);
		return r;
	}
	*tmp = lb_steal_ptr(&t);
	return 0;
}

static int write_atomic(const char *path, const void *data, size_t len, mode_t mode, bool sync)
{
	char *tmp = NULL;
	int r = write_tmp(path, data, len, mode, sync, &tmp);
	return r < 0 ? r : lb_commit_file(tmp, path, 0);
}

int lb_write_file_atomic_mode(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(path, data, len, mode, true);
}

int lb_write_file_atomic_nosync(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(path, data, len, mode, false);
}

int lb_write_file_pending(const char *path, const void *data, size_t len, mode_t mode, char **tmp)
{
	return write_tmp(path, data, len, mode, false, tmp);
}

int lb_commit_file(char *tmp, const char *path, int err)
{
	if (!tmp)
		return err < 0 ? err : -EINVAL;
	if (err == 0 && rename(tmp, path) < 0)
		err = -errno;
	if (err < 0)
		unlink(tmp);
	free(tmp);
	return err;
}

typedef struct {
	int fd;
	int err;
} fsync_job;

static void *fsync_one(void *arg)
{
	fsync_job *j = arg;
	j->err = fsync(j->fd) < 0 && errno != EINVAL ? -errno : 0;
	return NULL;
}

#define FSYNC_ALL_MAX 16
int lb_fsync_all(int dirfd, const char *const *names, size_t n, size_t *failed)
{
	if (n > FSYNC_ALL_MAX)
		return -E2BIG;
	fsync_job jobs[FSYNC_ALL_MAX];
	pthread_t th[FSYNC_ALL_MAX];
	bool started[FSYNC_ALL_MAX] = {false};
	int r = 0;
	size_t opened = 0;
	for (; opened < n; opened++) {
		jobs[opened].err = 0;
		jobs[opened].fd = openat(dirfd, names[opened], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (jobs[opened].fd < 0) {
			r = -errno;
			if (failed)
				*failed = opened;
			break;
		}
	}
	/* The last one in this thread; a thread that cannot be made is a sync done here. */
	for (size_t i = 0; r == 0 && i + 1 < n; i++)
		started[i] = pthread_create(&th[i], NULL, fsync_one, &jobs[i]) == 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!started[i])
			fsync_one(&jobs[i]);
	for (size_t i = 0; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		if (i < opened)
			close(jobs[i].fd);
		if (r == 0 && i < opened && jobs[i].err < 0) {
			r = jobs[i].err;
			if (failed)
				*failed = i;
		}
	}
	return r;
}

int lb_mkdir_p(const char *path, mode_t mode)
{
	LB_AUTOFREE char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		/* Like mkdir -p -m: the mode is the last directory's; those above it are made as
		 * mkdir(1) makes them, so a private leaf does not close its parents. */
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0) {
		if (errno != EEXIST)
			return -errno;
		struct stat st;
		if (stat(p, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	return 0;
}

/* Inodes with more than one link, counted once however many names they have. */
typedef struct inode_set {
	struct inode_key {
		dev_t dev;
		ino_t ino;
	} *slots;
	size_t cap, n;
} inode_set;

static size_t inode_hash(ino_t ino, size_t cap)
{
	return (size_t)((uint64_t)ino * 0x9e3779b97f4a7c15ULL) & (cap - 1);
}

/* True when (dev, ino) was not in the set (and is now). */
static bool inode_set_add(inode_set *s, dev_t dev, ino_t ino)
{
	if (s->n * 2 >= s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		struct inode_key *ns = calloc(ncap, sizeof *ns);
		if (!ns)
			return true; /* no memory: count it again, over rather than under */
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slots[i].ino)
				continue;
			size_t h = inode_hash(s->slots[i].ino, ncap);
			while (ns[h].ino)
				h = (h + 1) & (ncap - 1);
			ns[h] = s->slots[i];
		}
		free(s->slots);
		s->slots = ns;
		s->cap = ncap;
	}
	size_t h = inode_hash(ino, s->cap);
	while (s->slots[h].ino) {
		if (s->slots[h].ino == ino && s->slots[h].dev == dev)
			return false;
		h = (h + 1) & (s->cap - 1);
	}
	s->slots[h].dev = dev;
	s->slots[h].ino = ino;
	s->n++;
	return true;
}

/* One directory on the walk's stack: its descriptor (closed for directories deep below the
 * top, reopened through ".." on the way back), and the subdirectories still to visit. */
typedef struct walk_level {
	int fd;
	dev_t dev;
	ino_t ino;
	char **subdirs;
	size_t nsub, next;
} walk_level;

#define WALK_KEEP_FDS 64

static void level_free(walk_level *l)
{
	if (l->fd >= 0)
		close(l->fd);
	for (size_t i = 0; i < l->nsub; i++)
		free(l->subdirs[i]);
	free(l->subdirs);
	memset(l, 0, sizeof *l);
	l->fd = -1;
}

/* Count the entries of the directory open at l->fd and list its subdirectories. */
static int walk_read(walk_level *l, dev_t dev, inode_set *seen, lb_disk_measure_t *m)
{
	int fd = dup(l->fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		return e;
	}
	struct dirent *e;
	size_t cap = 0;
	int r = 0;
	while (r == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(l->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		if (st.st_nlink > 1 && !S_ISDIR(st.st_mode) && !inode_set_add(seen, st.st_dev, st.st_ino))
			continue;
		m->bytes += (uint64_t)st.st_blocks * 512;
		m->inodes++;
		if (!S_ISDIR(st.st_mode))
			continue;
		if (l->nsub == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(l->subdirs, cap * sizeof *nv);
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			l->subdirs = nv;
		}
		if (!(l->subdirs[l->nsub] = strdup(e->d_name)))
			r = -ENOMEM;
		else
			l->nsub++;
	}
	closedir(d);
	return r;
}

static int walk_push(walk_level **stack, size_t *depth, size_t *cap, int fd)
{
	if (*depth == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		walk_level *ns = realloc(*stack, ncap * sizeof *ns);
		if (!ns)
			return -ENOMEM;
		*stack = ns;
		*cap = ncap;
	}
	walk_level *l = &(*stack)[(*depth)++];
	memset(l, 0, sizeof *l);
	l->fd = fd;
	struct stat st;
	if (fstat(fd, &st) == 0) {
		l->dev = st.st_dev;
		l->ino = st.st_ino;
	}
	return 0;
}

/* Depth-first without recursion and with at most WALK_KEEP_FDS descriptors open, so no tree
 * is too deep to be counted (a tree deeper than the old walk's 256 levels hid what was in
 * it). The top of the stack is always open; its parent is reopened through ".." when the
 * walk climbs back, and must be the same directory it left. */
int lb_disk_measure(const char *path, lb_disk_measure_t *m)
{
	memset(m, 0, sizeof *m);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		return e;
	}
	m->bytes = (uint64_t)st.st_blocks * 512;
	m->inodes = 1;
	m->complete = true;
	dev_t dev = st.st_dev;
	inode_set seen = {0};
	walk_level *stack = NULL;
	size_t depth = 0, cap = 0;
	int r = 0;
	while (fd >= 0 || depth > 0) {
		if (fd >= 0) {
			if ((r = walk_push(&stack, &depth, &cap, fd)) < 0) {
				close(fd);
				break;
			}
			fd = -1;
			if (walk_read(&stack[depth - 1], dev, &seen, m) < 0)
				m->complete = false;
			if (depth > WALK_KEEP_FDS && stack[depth - 2].fd >= 0) {
				close(stack[depth - 2].fd);
				stack[depth - 2].fd = -1;
			}
			continue;
		}
		walk_level *l = &stack[depth - 1];
		if (l->next < l->nsub) {
			fd = openat(l->fd, l->subdirs[l->next++],
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0 && errno != ENOENT)
				m->complete = false;
			continue;
		}
		int up = -1;
		if (depth >= 2 && stack[depth - 2].fd < 0) {
			up = openat(l->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (up >= 0 && (fstat(up, &st) < 0 || st.st_dev != stack[depth - 2].dev ||
					st.st_ino != stack[depth - 2].ino)) {
				close(up);
				up = -1;
			}
		}
		level_free(l);
		depth--;
		if (depth && stack[depth - 1].fd < 0) {
			if (up < 0) {
				/* The tree moved under the walk: what is left is not counted. */
				m->complete = false;
				break;
			}
			stack[depth - 1].fd = up;
		}
	}
	while (depth)
		level_free(&stack[--depth]);
	free(stack);
	free(seen.slots);
	return r;
}

uint64_t lb_disk_usage(const char *path)
{
	lb_disk_measure_t m;
	return lb_disk_measure(path, &m) == 0 ? m.bytes : 0;
}

static bool is_executable_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int lb_find_executable(const char *name, char **out)
{
	if (!*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if (!is_executable_file(name))
			return access(name, F_OK) == 0 ? -EACCES : -ENOENT;
		*out = strdup(name);
		return *out ? 0 : -ENOMEM;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;;) {
		const char *end = strchrnul(p, ':');
		LB_AUTOFREE char *cand = NULL;
		int dl = (int)(end - p);
		/* Only absolute entries: an empty one or "." means the current directory, which is
		 * often the experiment's, and would run its own "python3" on the host. */
		if (dl == 0 || p[0] != '/') {
			if (!*end)
				break;
			p = end + 1;
			continue;
		}
		if (asprintf(&cand, "%.*s/%s", dl, p, name) < 0)
			return -ENOMEM;
		if (is_executable_file(cand)) {
			*out = lb_steal_ptr(&cand);
			return 0;
		}
		if (!*end)
			break;
		p = end + 1;
	}
	return -ENOENT;
}

double lb_time_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t lb_fs_now_ns(const char *dir)
{
	LB_AUTOFREE char *path = NULL;
	if (dir && asprintf(&path, "%s/.labbox-clock-XXXXXX", dir) >= 0) {
		int fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;
			int r = fstat(fd, &st);
			unlink(path);
			close(fd);
			if (r == 0)
				return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
		}
	}
	return realtime_ns();
}

double lb_time_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void lb_time_iso8601(double t, char out[40])
{
	time_t s = (time_t)t;
	int ms = (int)((t - (double)s) * 1000.0);
	if (ms < 0)
		ms = 0;
	if (ms > 999)
		ms = 999;
	struct tm tm;
	gmtime_r(&s, &tm);
	char base[32];
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 40, "%s.%03dZ", base, ms);
}

int lb_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0 || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	double mult = 1;
	switch (*end) {
	case '\0':
		break;
	case 'b': case 'B': mult = 1; end++; break;
	case 'k': case 'K': mult = 1024.0; end++; break;
	case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default:
		return -EINVAL;
	}
	/* Accept docker's optional trailing "b"/"ib" ("4gb", "4GiB"). */
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (mult > 1 && (*end == 'b' || *end == 'B'))
		end++;
	if (*end)
		return -EINVAL;
	double bytes = v * mult;
	/* Past 2^63 a size is no size a machine has, and records (JSON, SQLite) keep signed
	 * 64-bit integers: it would come back negative. */
	if (bytes >= 9223372036854775808.0)
		return -ERANGE;
	*out = (uint64_t)bytes;
	return 0;
}

int lb_parse_seconds(const char *s, double *out)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0)
		return -EINVAL;
	*out = v;
	return 0;
}

int lb_parse_long(const char *s, long *out)
{
	if (!s || !*s || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int lb_random_hex(char *out, size_t nbytes)
{
	unsigned char raw[64];
	if (nbytes > sizeof raw)
		return -EINVAL;
	size_t got = 0;
	while (got < nbytes) {
		ssize_t n = getrandom(raw + got, nbytes - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < nbytes; i++)
		sprintf(out + 2 * i, "%02x", raw[i]);
	out[2 * nbytes] = '\0';
	return 0;
}

int lb_capture(char *const argv[], size_t max, bool merge_stderr, lb_buf *out, int *status)
{
	return lb_capture_bounded(argv, max, merge_stderr, 0, out, status);
}

static double capture_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Milliseconds left to deadline (0: none) for poll; -1 waits without end. */
static int capture_left_ms(double deadline)
{
	if (deadline <= 0)
		return -1;
	double left = deadline - capture_now();
	return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

int lb_capture_bounded(char *const argv[], size_t max, bool merge_stderr, double seconds,
		       lb_buf *out, int *status)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	double deadline = seconds > 0 ? capture_now() + seconds : 0;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		/* its own process group, so that what it started ends with it at the bound */
		if (seconds > 0)
			setpgid(0, 0);
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(p[1], 1);
		if (merge_stderr)
			dup2(p[1], 2);
		else if (devnull >= 0)
			dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (seconds > 0)
		setpgid(pid, pid); /* either side may run first */
	close(p[1]);
	char chunk[4096];
	int r = 0, late = 0;
	for (;;) {
		if (seconds > 0) {
			struct pollfd pfd = {.fd = p[0], .events = POLLIN};
			int pr = poll(&pfd, 1, capture_left_ms(deadline));
			if (pr < 0 && errno == EINTR && lb_interrupt_pending()) {
				late = -EINTR;
				break;
			}
			if (pr == 0) {
				late = -ETIMEDOUT;
				break;
			}
			if (pr < 0)
				continue;
		}
		ssize_t n = read(p[0], chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t take = (size_t)n;
		if (out->len + take > max)
			take = max > out->len ? max - out->len : 0;
		if (take && r == 0)
			r = lb_buf_append(out, chunk, take);
	}
	close(p[0]);
	int st = 0;
	for (;;) {
		if (late) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		pid_t w = waitpid(pid, &st, seconds > 0 && !late ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (w == 0) { /* output closed, still running: the same bound */
			if (lb_interrupt_pending())
				late = -EINTR;
			else if (capture_left_ms(deadline) == 0)
				late = -ETIMEDOUT;
			else
				nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
		}
	}
	if (late)
		return late; /* its group was killed with it, before it was reaped */
	if (status)
		*status = st;
	return r;
}

/* $XDG_VAR/labbox, or $HOME/HOME_SUB/labbox; made 0700 when missing. */
static char *user_dir(const char *xdg_var, const char *home_sub)
{
	const char *xdg = getenv(xdg_var);
	const char *home = getenv("HOME");
	char *dir = NULL;
	if (xdg && xdg[0] == '/') {
		if (asprintf(&dir, "%s/labbox", xdg) < 0)
			return NULL;
	} else if (home && home[0] == '/') {
		if (asprintf(&dir, "%s/%s/labbox", home, home_sub) < 0)
			return NULL;
	} else {
		return NULL;
	}
	if (lb_mkdir_p(dir, 0700) < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

char *lb_user_cache_dir(void)
{
	return user_dir("XDG_CACHE_HOME", ".cache");
}

char *lb_user_state_dir(void)
{
	return user_dir("XDG_STATE_HOME", ".local/state");
}

int lb_open_private_dir(const char *path)
{
	if (!path || !*path)
		return -EINVAL;
	lb_mkdir_p(path, 0700);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int lb_path_own(const char *path, bool dir, char *why, size_t whylen)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	const char *what = NULL;
	char owner[48];
	if (S_ISLNK(st.st_mode))
		what = "a symbolic link";
	else if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		what = dir ? "not a directory" : "not a regular file";
	else if (st.st_uid != geteuid()) {
		snprintf(owner, sizeof owner, "owned by uid %u", (unsigned)st.st_uid);
		what = owner;
	} else if (st.st_mode & S_IWOTH)
		what = "writable by others";
	else if (st.st_mode & S_IWGRP)
		what = "writable by its group";
	if (!what)
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s", what);
	return -EPERM;
}

/* One directory of a chain: root's or this user's, and closed to others unless sticky (where
 * only an entry's owner, or the directory's, may rename it, and every entry below is held to
 * the owner rule in turn). */
static int chain_dir_ok(const char *p, uid_t euid, char *why, size_t whylen)
{
	struct stat st;
	if (lstat(p, &st) < 0)
		return -errno;
	const char *what = NULL;
	char owner[64];
	if (S_ISLNK(st.st_mode))
		what = "is a symbolic link";
	else if (!S_ISDIR(st.st_mode))
		what = "is not a directory";
	else if (st.st_uid != 0 && st.st_uid != euid) {
		struct passwd pw, *res = NULL;
		char buf[1024];
		if (getpwuid_r(st.st_uid, &pw, buf, sizeof buf, &res) == 0 && res)
			snprintf(owner, sizeof owner, "is owned by %s (uid %u)", pw.pw_name,
				 (unsigned)st.st_uid);
		else
			snprintf(owner, sizeof owner, "is owned by uid %u", (unsigned)st.st_uid);
		what = owner;
	} else if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
		what = (st.st_mode & S_IWOTH) ? "is writable by others without the sticky bit"
					       : "is writable by its group without the sticky bit";
	if (!what)
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s %s (mode %04o)", p, what, (unsigned)(st.st_mode & 07777));
	return -EPERM;
}

/* The owner of a link followed on the way: root's or the user's, as for a directory, since
 * whoever owns a link could not change it, but its owner chose where it points. */
static int chain_link_ok(const char *p, const struct stat *st, uid_t euid, char *why,
			 size_t whylen)
{
	if (st->st_uid == 0 || st->st_uid == euid)
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s is a symbolic link owned by uid %u", p,
			 (unsigned)st->st_uid);
	return -EPERM;
}

int lb_dir_chain_trusted(const char *dir, char *why, size_t whylen)
{
	/* The path is resolved here one part at a time, as the kernel would, and every directory
	 * looked in and every link followed on the way is judged: a link of another user's, or
	 * one in a directory another user may change, could point elsewhere a moment after a
	 * check of where it points now (realpath's answer alone says nothing of the way there).
	 * Whatever is not made yet is judged by the deepest part that is: labbox would create the
	 * rest there, and must not create it where another user could move it. */
	char todo[PATH_MAX], done[PATH_MAX] = "";
	if (dir[0] == '/') {
		if (snprintf(todo, sizeof todo, "%s", dir) >= (int)sizeof todo)
			return -ENAMETOOLONG;
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd))
			return -errno;
		if (snprintf(todo, sizeof todo, "%s/%s", cwd, dir) >= (int)sizeof todo)
			return -ENAMETOOLONG;
	}
	uid_t euid = geteuid();
	int r = chain_dir_ok("/", euid, why, whylen);
	size_t pos = 0;
	for (int links = 0; r == 0;) {
		while (todo[pos] == '/')
			pos++;
		if (!todo[pos])
			break;
		size_t end = pos;
		while (todo[end] && todo[end] != '/')
			end++;
		size_t clen = end - pos;
		if (clen == 1 && todo[pos] == '.') {
			pos = end;
			continue;
		}
		if (clen == 2 && todo[pos] == '.' && todo[pos + 1] == '.') {
			char *slash = strrchr(done, '/');
			if (slash)
				*slash = '\0';
			pos = end;
			continue;
		}
		size_t dlen = strlen(done);
		if (dlen + 1 + clen >= sizeof done)
			return -ENAMETOOLONG;
		char cand[PATH_MAX];
		memcpy(cand, done, dlen);
		cand[dlen] = '/';
		memcpy(cand + dlen + 1, todo + pos, clen);
		cand[dlen + 1 + clen] = '\0';
		struct stat st;
		if (lstat(cand, &st) < 0)
			return errno == ENOENT ? 0 : -errno;
		if (S_ISLNK(st.st_mode)) {
			if (++links > 40)
				return -ELOOP;
			r = chain_link_ok(cand, &st, euid, why, whylen);
			if (r < 0)
				break;
			char target[PATH_MAX];
			ssize_t n = readlink(cand, target, sizeof target - 1);
			if (n < 0)
				return -errno;
			target[n] = '\0';
			char rest[PATH_MAX];
			if (snprintf(rest, sizeof rest, "%s%s", target, todo + end) >= (int)sizeof rest)
				return -ENAMETOOLONG;
			memcpy(todo, rest, strlen(rest) + 1);
			pos = 0;
			if (target[0] == '/')
				done[0] = '\0';
			continue;
		}
		r = chain_dir_ok(cand, euid, why, whylen);
		memcpy(done, cand, strlen(cand) + 1);
		pos = end;
	}
	return r;
}

bool lb_dir_open_to_others(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && (st.st_mode & 022) && !(st.st_mode & S_ISVTX);
}

DIR *lb_dir_stream_own(int fd)
{
	int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = own >= 0 ? fdopendir(own) : NULL;
	if (!d && own >= 0) {
		int e = errno;
		close(own);
		errno = e;
	}
	return d;
}

DIR *lb_dir_stream(int fd)
{
	int dupfd = dup(fd);
	DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
	if (!d && dupfd >= 0) {
		int e = errno;
		close(dupfd);
		errno = e;
	}
	return d;
}

static int records_at(const char *runs_dir, const char *name, bool beside_only, char **out)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", runs_dir) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	/* ".", "runs/." or "a/..": the directory those name, not its last word, has a parent;
	 * spelt so, the records would land inside the runs, and elsewhere than for the same
	 * directory given by its path. */
	const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		char real[PATH_MAX];
		if (!realpath(buf, real))
			return -errno;
		snprintf(buf, sizeof buf, "%s", real);
	}
	char parent[PATH_MAX];
	char *slash = strrchr(buf, '/');
	if (!slash)
		snprintf(parent, sizeof parent, ".");
	else if (slash == buf)
		snprintf(parent, sizeof parent, "/");
	else
		snprintf(parent, sizeof parent, "%.*s", (int)(slash - buf), buf);
	struct stat st;
	int r;
	if (!beside_only && stat(parent, &st) == 0 && (st.st_mode & 022) && strcmp(buf, "/") != 0)
		r = asprintf(out, "%s/%s", buf, name);
	else if (!slash)
		r = asprintf(out, "%s", name);
	else if (slash == buf)
		r = asprintf(out, "/%s", name);
	else
		r = asprintf(out, "%s/%s", parent, name);
	return r < 0 ? -ENOMEM : 0;
}

int lb_records_place(const char *runs_dir, const char *name, char **out)
{
	return records_at(runs_dir, name, false, out);
}

int lb_records_beside(const char *runs_dir, const char *name, char **out)
{
	return records_at(runs_dir, name, true, out);
}

int lb_replace_file_at(int dfd, const char *name, const void *data, size_t len)
{
	char tmp[NAME_MAX + 1], rnd[17];
	int r = lb_random_hex(rnd, 8);
	if (r < 0)
		return r;
	if (snprintf(tmp, sizeof tmp, ".%.200s.%d.%s.tmp", name, (int)getpid(), rnd) >=
	    (int)sizeof tmp)
		return -ENAMETOOLONG;
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = lb_write_all(fd, data, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	return r;
}

int lb_strv_push(lb_strv *s, const char *x)
{
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		char **nv = realloc(s->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(x)))
		return -ENOMEM;
	s->v[++s->n] = NULL;
	return 0;
}

int lb_strv_pushf(lb_strv *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	LB_AUTOFREE char *x = NULL;
	int n = vasprintf(&x, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : lb_strv_push(s, x);
}

void lb_strv_free(lb_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}

bool lb_path_under(const char *path, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;
	return n && strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void lb_block_stop_signals(sigset_t *mask, sigset_t *oldmask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, mask, oldmask);
}

void lb_stale_pid_dirs(const char *dir, const char *prefix,
		       void (*gone)(int dfd, const char *name, const char *path, void *ctx), void *ctx)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t np = strlen(prefix);
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid = 0;
		char rest[16];
		struct stat sb;
		if (strncmp(e->d_name, prefix, np) != 0 || e->d_name[np] != '-' ||
		    sscanf(e->d_name + np + 1, "%d-%15s", &pid, rest) != 2 || pid <= 0 ||
		    strlen(rest) != 6 ||
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(sb.st_mode) || sb.st_uid != getuid() ||
		    (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
			gone(dirfd(d), e->d_name, p, ctx);
	}
	closedir(d);
}

bool lb_path_plain(const char *path)
{
	if (!path || path[0] != '/')
		return false;
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
	}
	return true;
}

bool lb_path_sandbox_own(const char *path)
{
	return path && (path[strspn(path, "/")] == '\0' || lb_path_under(path, "/proc") ||
			lb_path_under(path, "/sys") || lb_path_under(path, "/dev"));
}

bool lb_mode_lets_write(const struct stat *st, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	unsigned shift = st->st_uid == uid ? 6 : st->st_gid == gid ? 3 : 0;
	unsigned need = S_ISDIR(st->st_mode) ? 03 : 02; /* w, and x to enter a directory */
	return ((st->st_mode >> shift) & need) == need;
}

static bool spelt_canonically(const char *p, size_t n)
{
	if (n == 0 || n >= PATH_MAX || p[0] != '/')
		return false;
	if (n == 1)
		return true;
	if (p[n - 1] == '/')
		return false;
	for (const char *c = p; c; c = strchr(c + 1, '/')) {
		const char *e = strchr(c + 1, '/');
		size_t len = e ? (size_t)(e - c - 1) : strlen(c + 1);
		if (len == 0 || (len == 1 && c[1] == '.') || (len == 2 && c[1] == '.' && c[2] == '.'))
			return false;
	}
	return true;
}

int lb_realpath_stat(const char *path, char real[PATH_MAX], struct stat *st)
{
	size_t n = strlen(path);
	if (spelt_canonically(path, n)) {
		/* No O_NOFOLLOW: with O_PATH it opens a final symlink as itself, where
		 * RESOLVE_NO_SYMLINKS alone refuses it. */
		struct open_how how = {.flags = O_PATH | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
		if (fd >= 0) {
			int r = fstat(fd, st) < 0 ? -errno : 0;
			close(fd);
			if (r == 0)
				memcpy(real, path, n + 1);
			return r;
		}
		/* Absent with no symlink on the way: realpath would say the same. ELOOP (a
		 * symlink), ENOSYS (an older kernel, a filter) and the rest ask realpath. */
		if (errno == ENOENT)
			return -ENOENT;
	}
	if (!realpath(path, real))
		return -errno;
	return stat(real, st) < 0 ? -errno : 0;
}

void lb_realdir_open(lb_realdir *d, const char *dir)
{
	d->fd = -1;
	size_t n = strlen(dir);
	if (!spelt_canonically(dir, n))
		return;
	memcpy(d->path, dir, n + 1);
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	d->fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
}

void lb_realdir_close(lb_realdir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

int lb_realpath_stat_in(lb_realdir *d, const char *path, char real[PATH_MAX], struct stat *st)
{
	if (!d || d->fd < 0)
		return lb_realpath_stat(path, real, st);
	size_t n = strlen(d->path), len = strlen(path);
	/* "/" is the one canonical name that ends in a slash. */
	size_t sep = n == 1 ? 0 : n;
	const char *name = path + sep + 1;
	if (len >= PATH_MAX || len <= sep + 1 || strncmp(path, d->path, sep) != 0 || path[sep] != '/' ||
	    strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return lb_realpath_stat(path, real, st);
	if (fstatat(d->fd, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return lb_realpath_stat(path, real, st);
	}
	/* A symlink is resolved to what it names, as realpath does. */
	if (S_ISLNK(st->st_mode))
		return lb_realpath_stat(path, real, st);
	memcpy(real, path, len + 1);
	return 0;
}

bool lb_program_inside(const char *python, const char *expdir)
{
	LB_AUTOFREE char *exe = NULL;
	char real[PATH_MAX], rexp[PATH_MAX], abs[PATH_MAX], cwd[PATH_MAX];
	if (lb_find_executable(python, &exe) < 0 || !realpath(expdir, rexp))
		return false;
	if (realpath(exe, real) && lb_path_under(real, rexp))
		return true;
	/* Every directory on the way, as it is named, counts too: a program reads its settings
	 * from the name it was started by, not from where links lead. Python finds pyvenv.cfg
	 * beside that name and one level up, so a venv of the experiment's whose bin/ (or
	 * bin/python) is a link out of it still brings the venv's .pth files, which would run
	 * at a probe on the host. */
	if (exe[0] == '/')
		snprintf(abs, sizeof abs, "%s", exe);
	else if (!getcwd(cwd, sizeof cwd) ||
		 snprintf(abs, sizeof abs, "%s/%s", cwd, exe) >= (int)sizeof abs)
		return true; /* cannot tell: taken as the experiment's, the careful side */
	for (char *slash = strchr(abs + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		bool in = realpath(abs, real) && lb_path_under(real, rexp);
		*slash = '/';
		if (in)
			return true;
	}
	return false;
}
