/* Fingerprints of mounted data (-v SRC:DST): what the run read is recorded as well as the
 * code, so that `labbox rerun` can say when the data changed. Computed by a child process
 * while the run goes on, so it costs the run no time. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Past this many entries the walk stops: the digest is then of the first ones only. */
#define WALK_MAX_ENTRIES 200000

typedef struct fp_entry {
	char *rel;
	char type; /* 'f' file, 'd' directory, 'l' link, 'o' other */
	uint64_t size;
	int64_t mtime_ns;
	char *target; /* links */
} fp_entry;

typedef struct fp_walk {
	fp_entry *v;
	size_t n, cap;
	bool truncated;
} fp_walk;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push(fp_walk *w, const char *rel, const struct stat *sb, const char *target)
{
	if (w->n >= WALK_MAX_ENTRIES) {
		w->truncated = true;
		return 0;
	}
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 256;
		fp_entry *nv = realloc(w->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		w->v = nv;
		w->cap = nc;
	}
	fp_entry *e = &w->v[w->n];
	e->rel = strdup(rel);
	e->target = target ? strdup(target) : NULL;
	if (!e->rel || (target && !e->target)) {
		free(e->rel);
		free(e->target);
		return -ENOMEM;
	}
	e->type = S_ISREG(sb->st_mode) ? 'f' : S_ISDIR(sb->st_mode) ? 'd' : S_ISLNK(sb->st_mode) ? 'l' : 'o';
	e->size = S_ISREG(sb->st_mode) ? (uint64_t)sb->st_size : 0;
	e->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
	w->n++;
	return 0;
}

/* Sorted, depth first, links never followed, so the order (and the digest) depends on the
 * tree alone. */
static int walk(fp_walk *w, int dfd, const char *prefix, int depth)
{
	if (depth > 64 || w->truncated)
		return 0;
	int dup_fd = dup(dfd);
	if (dup_fd < 0)
		return -errno;
	DIR *d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return -errno;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof *nn);
			if (!nn) {
				r = -ENOMEM;
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, cmp_name);
	for (size_t i = 0; i < n && r == 0 && !w->truncated; i++) {
		char rel[PATH_MAX];
		struct stat sb;
		int len = snprintf(rel, sizeof rel, "%s%s%s", prefix, *prefix ? "/" : "", names[i]);
		if (len < 0 || (size_t)len >= sizeof rel ||
		    fstatat(dfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char target[PATH_MAX];
		const char *t = NULL;
		if (S_ISLNK(sb.st_mode)) {
			ssize_t tl = readlinkat(dfd, names[i], target, sizeof target - 1);
			target[tl > 0 ? tl : 0] = '\0';
			t = target;
		}
		r = push(w, rel, &sb, t);
		if (r == 0 && S_ISDIR(sb.st_mode)) {
			int sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = walk(w, sub, rel, depth + 1);
				close(sub);
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

/* The content of one regular file into h; false when it could not be read as one. */
static bool hash_content(lb_sha256 *h, int dfd, const char *rel)
{
	int fd = openat(dfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat sb;
	bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
	char buf[1 << 16];
	ssize_t n;
	while (ok && (n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0) {
			ok = errno == EINTR;
			continue;
		}
		lb_sha256_update(h, buf, (size_t)n);
	}
	close(fd);
	return ok;
}

static void digest_hex(lb_sha256 *h, char out[72])
{
	uint8_t d[32];
	char hex[65];
	lb_sha256_final(h, d);
	lb_sha256_hex(d, hex);
	snprintf(out, 72, "sha256:%.64s", hex);
}

struct json_object *lb_record_tree_fingerprint(const char *path, uint64_t max_bytes,
					       size_t max_files)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	struct stat sb;
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		json_object_object_add(o, "error", json_object_new_string(strerror(errno)));
		return o;
	}
	fp_walk w = {0};
	int r = 0;
	if (S_ISDIR(sb.st_mode))
		r = walk(&w, fd, "", 0);
	else
		r = push(&w, "", &sb, NULL);
	uint64_t files = 0, bytes = 0;
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].type == 'f') {
			files++;
			bytes += w.v[i].size;
		}
	bool content = !w.truncated && files <= max_files && bytes <= max_bytes;
	/* Every entry as "type path NUL size NUL" then its content digest (or its mtime), so no
	 * two trees hash alike by moving bytes between names. */
	lb_sha256 h;
	lb_sha256_init(&h);
	bool unreadable = false;
	for (size_t i = 0; r == 0 && i < w.n; i++) {
		fp_entry *e = &w.v[i];
		char head[64];
		lb_sha256_update(&h, &e->type, 1);
		lb_sha256_update(&h, e->rel, strlen(e->rel) + 1);
		int hl = snprintf(head, sizeof head, "%llu", (unsigned long long)e->size);
		lb_sha256_update(&h, head, (size_t)hl + 1);
		if (e->type == 'l') {
			lb_sha256_update(&h, e->target, strlen(e->target) + 1);
		} else if (e->type == 'f' && content) {
			lb_sha256 fh;
			char fd_hex[72];
			lb_sha256_init(&fh);
			if (!hash_content(&fh, S_ISDIR(sb.st_mode) ? fd : AT_FDCWD,
					  S_ISDIR(sb.st_mode) ? e->rel : path))
				unreadable = true;
			digest_hex(&fh, fd_hex);
			lb_sha256_update(&h, fd_hex, strlen(fd_hex) + 1);
		} else if (e->type == 'f') {
			hl = snprintf(head, sizeof head, "%lld", (long long)e->mtime_ns);
			lb_sha256_update(&h, head, (size_t)hl + 1);
		}
	}
	char dg[72];
	digest_hex(&h, dg);
	if (r < 0) {
		json_object_object_add(o, "error", json_object_new_string(strerror(-r)));
	} else {
		json_object_object_add(o, "kind", json_object_new_string(S_ISDIR(sb.st_mode) ? "tree" : "file"));
		json_object_object_add(o, "files", json_object_new_int64((int64_t)files));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)bytes));
		json_object_object_add(o, "method", json_object_new_string(content ? "content" : "metadata"));
		json_object_object_add(o, "digest", json_object_new_string(dg));
		if (!content) {
			char note[256];
			snprintf(note, sizeof note,
				 "%s: the digest covers paths, sizes and mtimes, not contents",
				 w.truncated ? "more than 200000 entries (the first ones only)"
					     : "larger than the content bound");
			json_object_object_add(o, "note", json_object_new_string(note));
		}
		if (unreadable)
			json_object_object_add(o, "note",
					       json_object_new_string("some files could not be read; "
								      "their content is not in the digest"));
	}
	for (size_t i = 0; i < w.n; i++) {
		free(w.v[i].rel);
		free(w.v[i].target);
	}
	free(w.v);
	return o;
}

/* "SRC:DST[:ro|rw]" as -v takes it (SRC holds no ':', labbox refuses it). */
static json_object *fingerprint_volume(const char *spec)
{
	LB_AUTOFREE char *s = strdup(spec);
	if (!s)
		return NULL;
	char *dst = strchr(s, ':');
	if (!dst)
		return NULL;
	*dst++ = '\0';
	char *mode = strchr(dst, ':');
	if (mode)
		*mode++ = '\0';
	char real[PATH_MAX];
	json_object *o;
	if (!realpath(s, real)) {
		o = json_object_new_object();
		json_object_object_add(o, "error", json_object_new_string(strerror(errno)));
	} else {
		o = lb_record_tree_fingerprint(real, LB_DATA_CONTENT_MAX_BYTES,
					       LB_DATA_CONTENT_MAX_FILES);
	}
	if (!o)
		return NULL;
	json_object_object_add(o, "source", json_object_new_string(realpath(s, real) ? real : s));
	json_object_object_add(o, "destination", json_object_new_string(dst));
	json_object_object_add(o, "mode", json_object_new_string(mode && strcmp(mode, "rw") == 0 ? "rw" : "ro"));
	return o;
}

static json_object *data_child(void *arg)
{
	json_object *volumes = arg;
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < json_object_array_length(volumes); i++) {
		json_object *fp = fingerprint_volume(
			json_object_get_string(json_object_array_get_idx(volumes, i)));
		if (fp)
			json_object_array_add(a, fp);
	}
	return a;
}

int lb_record_data_start(struct json_object *volumes, lb_record_data_job *job)
{
	job->pid = 0;
	job->fd = -1;
	if (!volumes || !json_object_is_type(volumes, json_type_array) ||
	    json_object_array_length(volumes) == 0)
		return 0;
	/* It reads files only (no program runs), at a lower priority than the run. */
	return lb_record_job_start(job, data_child, volumes, 10);
}

void lb_record_data_collect(lb_record_data_job *job, double wait_s, struct json_object **out)
{
	*out = NULL;
	if (job->pid <= 0)
		return;
	bool late = false;
	json_object *a = lb_record_job_collect(job, wait_s, &late);
	if (!a || !json_object_is_type(a, json_type_array)) {
		json_object_put(a);
		a = json_object_new_object();
		json_object_object_add(a, "error",
				       json_object_new_string(late ? "the fingerprint of the mounted data "
								     "was not finished in time"
								   : "the mounted data could not be "
								     "fingerprinted"));
	}
	*out = a;
}
