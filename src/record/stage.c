/* Staging: the experiment runs on a copy, so the original is never touched and every file it
 * started from is fingerprinted in the manifest. */
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

typedef struct stage_ctx {
	uid_t uid;
	gid_t gid;
	json_object *files;
	json_object *skipped;
	char *err;
	size_t errlen;
	unsigned long nfiles;
	/* The directory below src that holds dst (a runs directory inside the experiment): never
	 * staged, or every run would copy the runs before it, and itself. */
	bool skip_set;
	dev_t skip_dev;
	ino_t skip_ino;
} stage_ctx;

static bool skip_dir(const char *name)
{
	return strcmp(name, ".git") == 0 || strcmp(name, ".labbox") == 0 ||
	       strcmp(name, "__pycache__") == 0;
}

static int fail(stage_ctx *c, int err, const char *what, const char *rel)
{
	snprintf(c->err, c->errlen, "staging %s '%s': %s", what, rel, strerror(-err));
	return err;
}

static int copy_file(stage_ctx *c, int sdir, int ddir, const char *name, const char *rel,
		     mode_t mode)
{
	LB_AUTOCLOSE int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return fail(c, -errno, "file", rel);
	LB_AUTOCLOSE int out =
		openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0)
		return fail(c, -errno, "file", rel);
	lb_sha256 h;
	lb_sha256_init(&h);
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(c, -errno, "file", rel);
		}
		if (n == 0)
			break;
		lb_sha256_update(&h, buf, (size_t)n);
		int r = lb_write_all(out, buf, (size_t)n);
		if (r < 0)
			return fail(c, r, "file", rel);
	}
	if (c->uid != (uid_t)-1 && fchown(out, c->uid, c->gid) < 0)
		return fail(c, -errno, "file", rel);
	uint8_t d[32];
	char hex[65];
	lb_sha256_final(&h, d);
	lb_sha256_hex(d, hex);
	json_object_object_add(c->files, rel, json_object_new_string(hex));
	c->nfiles++;
	return 0;
}

static int copy_dir(stage_ctx *c, int sdir, int ddir, const char *prefix, int depth)
{
	if (depth > 64)
		return fail(c, -ELOOP, "directory", prefix);
	int dupfd = dup(sdir);
	if (dupfd < 0)
		return fail(c, -errno, "directory", prefix);
	DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return fail(c, -errno, "directory", prefix);
	}
	/* Sorted, so staging and the manifest are the same from run to run. */
	struct dirent **names = NULL;
	int n = 0, cap = 0, r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			struct dirent **nn = realloc(names, (size_t)cap * sizeof *nn);
			if (!nn) {
				r = -ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = malloc(sizeof *e);
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		memcpy(names[n++], e, sizeof *e);
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (strcmp(names[i]->d_name, names[j]->d_name) > 0) {
				struct dirent *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	for (int i = 0; i < n && r == 0; i++) {
		const char *name = names[i]->d_name;
		char rel[PATH_MAX];
		snprintf(rel, sizeof rel, "%s%s%s", prefix, *prefix ? "/" : "", name);
		struct stat st;
		if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = fail(c, -errno, "entry", rel);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (skip_dir(name))
				continue;
			if (c->skip_set && st.st_dev == c->skip_dev && st.st_ino == c->skip_ino) {
				if (c->skipped)
					json_object_array_add(c->skipped, json_object_new_string(rel));
				continue;
			}
			if (mkdirat(ddir, name, 0755) < 0) {
				r = fail(c, -errno, "directory", rel);
				break;
			}
			LB_AUTOCLOSE int s2 = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			LB_AUTOCLOSE int d2 = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0) {
				r = fail(c, -errno, "directory", rel);
				break;
			}
			if (c->uid != (uid_t)-1 && fchown(d2, c->uid, c->gid) < 0) {
				r = fail(c, -errno, "directory", rel);
				break;
			}
			r = copy_dir(c, s2, d2, rel, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			r = copy_file(c, sdir, ddir, name, rel, st.st_mode);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t len = readlinkat(sdir, name, target, sizeof target - 1);
			if (len < 0) {
				r = fail(c, -errno, "symlink", rel);
				break;
			}
			target[len] = '\0';
			if (symlinkat(target, ddir, name) < 0) {
				r = fail(c, -errno, "symlink", rel);
				break;
			}
			if (c->uid != (uid_t)-1)
				fchownat(ddir, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW);
			json_object_object_add(c->files, rel, json_object_new_string(
								      "symlink"));
		} else if (c->skipped) {
			json_object_array_add(c->skipped, json_object_new_string(rel));
		}
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

int lb_record_stage(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
		    struct json_object *files, struct json_object *skipped, char *err,
		    size_t errlen)
{
	stage_ctx c = {.uid = chown_uid, .gid = chown_gid, .files = files, .skipped = skipped,
		       .err = err, .errlen = errlen};
	LB_AUTOCLOSE int sdir = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sdir < 0)
		return fail(&c, -errno, "directory", src);
	if (mkdir(dst, 0755) < 0)
		return fail(&c, -errno, "directory", dst);
	LB_AUTOCLOSE int ddir = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ddir < 0)
		return fail(&c, -errno, "directory", dst);
	if (chown_uid != (uid_t)-1 && fchown(ddir, chown_uid, chown_gid) < 0)
		return fail(&c, -errno, "directory", dst);
	char rs[PATH_MAX], rd[PATH_MAX];
	size_t n;
	if (realpath(src, rs) && realpath(dst, rd) && (n = strlen(rs)) > 0 &&
	    strncmp(rd, rs, n) == 0 && (rd[n] == '/' || rs[n - 1] == '/')) {
		char *below = rd + n + (rd[n] == '/');
		char *slash = strchr(below, '/');
		if (slash)
			*slash = '\0';
		struct stat st;
		if (*below && fstatat(sdir, below, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			c.skip_set = true;
			c.skip_dev = st.st_dev;
			c.skip_ino = st.st_ino;
		}
	}
	return copy_dir(&c, sdir, ddir, "", 0);
}

int lb_record_create_run_dir(const char *runs_dir, char id[64], char **run_dir)
{
	/* The runs are the user's own: closed to others (a directory that exists keeps its mode,
	 * a shared one included; each run's own directory is closed all the same). */
	int r = lb_mkdir_p(runs_dir, 0700);
	if (r < 0)
		return r;
	char abs[PATH_MAX];
	if (!realpath(runs_dir, abs))
		return -errno;
	/* Room for RUN_ID/exp/ and the longest record name: a path cut by PATH_MAX would name
	 * another file, or none. */
	if (strlen(abs) + 64 + 32 >= PATH_MAX)
		return -ENAMETOOLONG;
	for (int attempt = 0; attempt < 8; attempt++) {
		char rnd[9];
		r = lb_random_hex(rnd, 3);
		if (r < 0)
			return r;
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		char ts[32];
		strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
		snprintf(id, 64, "%s-%s", ts, rnd);
		char *path = NULL;
		if (asprintf(&path, "%s/%s", abs, id) < 0)
			return -ENOMEM;
		if (mkdir(path, 0700) == 0) {
			*run_dir = path;
			return 0;
		}
		r = -errno;
		free(path);
		if (r != -EEXIST)
			return r;
	}
	return -EEXIST;
}
