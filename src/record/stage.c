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
	/* labbox's records and cache wherever they sit in the experiment (a custom --runs-dir
	 * inside it, a run from the home directory): never staged, or the run would read other
	 * runs' manifests, the index and the record key (records_skip). */
	struct skip_id {
		dev_t dev;
		ino_t ino;
	} records[2 * LB_RECORD_KNOWN_MAX + 8], parents[LB_RECORD_KNOWN_MAX];
	size_t nrecords, nparents; /* parents: where an index and sweeps sit beside a runs dir */
	int droot;        /* the staged exp/ */
	const char *const *hide; /* resolved paths --hide keeps out of sight: never staged */
	size_t nhide;
	char src_root[PATH_MAX]; /* the experiment, resolved */
	uint64_t limit;   /* most bytes staging may allocate in exp/; 0: no limit */
	uint64_t staged;  /* bytes of data written so far */
	struct linked {   /* files with more than one link, staged once and linked after */
		dev_t dev;
		ino_t ino;
		char *rel;
	} *links;
	size_t nlinks;
	/* A rerun stages the files the run it repeats had, nothing added since: only (a json
	 * object keyed by relative path, or NULL for all), the others named in left_out. */
	json_object *only;
	json_object *left_out;
	size_t nleft;
	/* Staging content reached through a link out of the experiment (a linked library):
	 * only what any user may read is copied (link_out, walk_up). */
	int outside;
	/* The experiment's root and the directories above it, by identity: where a link leads
	 * is judged by walking up from the object it opened, never by its path (see link_out). */
	struct skip_id root, above[256];
	size_t nabove;
} stage_ctx;

static bool skip_dir(const char *name)
{
	return strcmp(name, ".git") == 0 || strcmp(name, ".labbox") == 0 ||
	       strcmp(name, "__pycache__") == 0;
}

static void records_add(stage_ctx *c, const char *path)
{
	struct stat st;
	if (c->nrecords < sizeof c->records / sizeof *c->records && lstat(path, &st) == 0)
		c->records[c->nrecords++] = (struct skip_id){st.st_dev, st.st_ino};
}

/* The user's cache, labbox's state, every runs directory this user's labbox knows, and
 * beside each the index and the sweeps. */
static void records_skip(stage_ctx *c)
{
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	LB_AUTOFREE char *state = lb_record_state_dir();
	if (cache)
		records_add(c, cache);
	if (state)
		records_add(c, state);
	char **v = NULL;
	size_t n = 0;
	if (lb_record_known_dirs(state, &v, &n) < 0)
		return;
	for (size_t i = n; i-- > 0;) { /* the most recent first */
		char parent[PATH_MAX];
		struct stat st;
		records_add(c, v[i]);
		snprintf(parent, sizeof parent, "%s", v[i]);
		char *slash = strrchr(parent, '/');
		if (!slash)
			continue;
		*slash = '\0';
		/* The index and the sweeps by name there: they may be made while staging runs. */
		if (c->nparents < sizeof c->parents / sizeof *c->parents &&
		    stat(parent[0] ? parent : "/", &st) == 0)
			c->parents[c->nparents++] = (struct skip_id){st.st_dev, st.st_ino};
	}
	lb_record_known_free(v, n);
}

static bool beside_records(const stage_ctx *c, const struct stat *dir, const char *name)
{
	if (strncmp(name, "labbox.db", 9) != 0 && strcmp(name, "sweeps") != 0)
		return false;
	for (size_t i = 0; i < c->nparents; i++)
		if (c->parents[i].dev == dir->st_dev && c->parents[i].ino == dir->st_ino)
			return true;
	return false;
}

static bool is_record(const stage_ctx *c, const struct stat *st)
{
	for (size_t i = 0; i < c->nrecords; i++)
		if (c->records[i].dev == st->st_dev && c->records[i].ino == st->st_ino)
			return true;
	return false;
}

static int fail(stage_ctx *c, int err, const char *what, const char *rel)
{
	snprintf(c->err, c->errlen, "staging %s '%s': %s", what, rel, strerror(-err));
	return err;
}

/* Whether any user may read st (and search it, a directory): labbox stages with its own
 * privileges (root's, or the user's whose home the sandbox hides), so a file reached
 * through a link out of the experiment is copied only when the sandbox could not be
 * denied it anyway; a link named helper.py to /etc/shadow, or lib -> ~ with a .py
 * somewhere inside, would otherwise hand the experiment what it may not read. */
static bool public_mode(const struct stat *st)
{
	return (st->st_mode & S_IROTH) && (!S_ISDIR(st->st_mode) || (st->st_mode & S_IXOTH));
}

static bool same_id(const struct skip_id *id, const struct stat *st)
{
	return id->dev == st->st_dev && id->ino == st->st_ino;
}

/* Walk up from the directory dir (consumed) by "..": whether the walk meets the experiment's
 * root (*inside), and whether anyone may search every directory met before the first that
 * holds the experiment too (a home closed to others that holds both the experiment and the
 * library it links, ~/proj/exp and ~/proj/shared, is no bar: the experiment was staged from
 * there as well). Each step opens the real parent of the directory held, so a directory
 * renamed or swapped for a link meanwhile cannot stand in for the one judged. */
static int walk_up(const stage_ctx *c, int dir, bool *inside, bool *public)
{
	*inside = false;
	for (int steps = 0; steps < 4096; steps++) {
		struct stat st;
		if (fstat(dir, &st) < 0)
			break;
		if (same_id(&c->root, &st)) {
			*inside = true;
			close(dir);
			return 0;
		}
		for (size_t i = 0; i < c->nabove; i++)
			if (same_id(&c->above[i], &st)) {
				close(dir);
				return 0;
			}
		if (!(st.st_mode & S_IXOTH))
			*public = false;
		int up = openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat ust;
		bool top = up < 0 || fstat(up, &ust) < 0 ||
			   (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino);
		close(dir);
		if (top) {
			if (up >= 0)
				close(up);
			return 0;
		}
		dir = up;
	}
	close(dir);
	*public = false; /* deeper than any real tree: judged closed */
	return 0;
}

/* The experiment's root and every directory above it, walked up from its descriptor. */
static void note_above(stage_ctx *c, int sdir)
{
	struct stat st;
	if (fstat(sdir, &st) < 0)
		return;
	c->root = (struct skip_id){st.st_dev, st.st_ino};
	int dir = openat(sdir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	while (dir >= 0 && c->nabove < sizeof c->above / sizeof *c->above &&
	       fstat(dir, &st) == 0) {
		if (c->nabove && same_id(&c->above[c->nabove - 1], &st))
			break; /* "/" is its own parent */
		c->above[c->nabove++] = (struct skip_id){st.st_dev, st.st_ino};
		int up = openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(dir);
		dir = up;
	}
	if (dir >= 0)
		close(dir);
}

/* The path the kernel has for what fd holds. */
static int fd_path(int fd, char out[PATH_MAX])
{
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	ssize_t len = readlink(self, out, PATH_MAX - 1);
	if (len < 0)
		return -errno;
	out[len] = '\0';
	return out[0] == '/' ? 0 : -ENOENT;
}

/* The --hide path that real is, lies under, or (a directory staged whole) holds. */
static const char *hidden_by(const stage_ctx *c, const char *real)
{
	for (size_t i = 0; i < c->nhide; i++)
		if (lb_path_under(real, c->hide[i]) || lb_path_under(c->hide[i], real))
			return c->hide[i];
	return NULL;
}

static int hidden_out(stage_ctx *c, const char *rel, const char *real, const char *hide)
{
	snprintf(c->err, c->errlen,
		 "staging '%s': it is a link to %s, and --hide %s keeps that out of the "
		 "experiment's sight; labbox would copy it into the run: remove the link, or do "
		 "not hide it", rel, real, hide);
	return -EACCES;
}

static int not_public(stage_ctx *c, const char *rel)
{
	snprintf(c->err, c->errlen,
		 "staging '%s': it is reached through a link out of the experiment and not every "
		 "user may read it; labbox copies into the sandbox only what anyone could read "
		 "there (copy it into the experiment directory if it belongs to it)", rel);
	return -EACCES;
}

/* Interrupted (Ctrl-C, SIGTERM): staging stops where it is, and the run records the step. */
static int stop_asked(stage_ctx *c, const char *rel)
{
	if (!lb_interrupt_pending())
		return 0;
	snprintf(c->err, c->errlen, "staging stopped at '%s': labbox was interrupted", rel);
	return -EINTR;
}

static const char zeros[1 << 16];

/* A hole reads as zeros: the digest is the file's as any reader sees it. */
static int hash_zeros(stage_ctx *c, lb_sha256 *h, uint64_t n, const char *rel)
{
	for (unsigned k = 1; h && n; k++) {
		size_t m = n < sizeof zeros ? (size_t)n : sizeof zeros;
		lb_sha256_update(h, zeros, m);
		n -= m;
		int r = k % 16 ? 0 : stop_asked(c, rel); /* each MiB */
		if (r < 0)
			return r;
	}
	return 0;
}

static int over_limit(stage_ctx *c, const char *rel, uint64_t more)
{
	snprintf(c->err, c->errlen,
		 "staging '%s' would put more than the disk limit of %llu bytes into exp/ (%llu "
		 "bytes staged before it, %llu for it); raise --disk-limit or make the "
		 "experiment directory smaller",
		 rel, (unsigned long long)c->limit, (unsigned long long)c->staged,
		 (unsigned long long)more);
	return -EFBIG;
}

/* Copy [off, end) of in to out at the same offsets, hashing it. */
static int copy_range(stage_ctx *c, int in, int out, uint64_t off, uint64_t end, lb_sha256 *h,
		      const char *rel)
{
	char buf[1 << 16];
	unsigned chunks = 0;
	while (off < end) {
		size_t want = end - off < sizeof buf ? (size_t)(end - off) : sizeof buf;
		ssize_t n = pread(in, buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(c, -errno, "file", rel);
		if (n == 0)
			break; /* the file shrank while staged: stage what there was */
		if (c->limit && c->staged + (uint64_t)n > c->limit)
			return over_limit(c, rel, (uint64_t)n);
		int r = ++chunks % 16 ? 0 : stop_asked(c, rel); /* each MiB */
		if (r < 0)
			return r;
		if (h)
			lb_sha256_update(h, buf, (size_t)n);
		for (size_t done = 0; done < (size_t)n;) {
			ssize_t w = pwrite(out, buf + done, (size_t)n - done, (off_t)(off + done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return fail(c, -errno, "file", rel);
			done += (size_t)w;
		}
		c->staged += (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Only the data is copied, so a sparse file stays sparse (a 3 GiB file of holes does not
 * become 3 GiB on disk); where the file system cannot say, all of it is data. h (if any)
 * hashes the file as any reader sees it, holes as zeros. */
static int sparse_copy(stage_ctx *c, int in, int out, uint64_t size, lb_sha256 *h,
		       const char *rel)
{
	uint64_t off = 0;
	while (off < size) {
		off_t data = lseek(in, (off_t)off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			data = (off_t)size; /* only a hole is left */
		else if (data < 0)
			data = (off_t)off;
		off_t hole = data < (off_t)size ? lseek(in, data, SEEK_HOLE) : (off_t)size;
		if (hole < 0 || (uint64_t)hole > size)
			hole = (off_t)size;
		int r = hash_zeros(c, h, (uint64_t)data - off, rel);
		if (r < 0 || (r = copy_range(c, in, out, (uint64_t)data, (uint64_t)hole, h, rel)) < 0)
			return r;
		off = (uint64_t)hole;
	}
	if (ftruncate(out, (off_t)size) < 0)
		return fail(c, -errno, "file", rel);
	return 0;
}

static int too_long(stage_ctx *c, const char *rel, uint64_t size)
{
	snprintf(c->err, c->errlen,
		 "staging '%s': it is %llu bytes long (holes counted), past the disk limit of %llu "
		 "bytes the run may write into exp/; raise --disk-limit or move the file out of "
		 "the experiment directory",
		 rel, (unsigned long long)size, (unsigned long long)c->limit);
	return -EFBIG;
}

static int changed(stage_ctx *c, const char *rel)
{
	snprintf(c->err, c->errlen,
		 "staging '%s': it changed while it was staged (replaced, or not a regular file "
		 "any more); run again once the experiment directory is left alone", rel);
	return -EAGAIN;
}

/* Copy the regular file open as in to name in ddir, judging it by what in is (want: the
 * entry the caller judged, which in must still be). */
static int copy_open(stage_ctx *c, int in, int ddir, const char *name, const char *rel,
		     mode_t mode, const struct stat *want)
{
	struct stat st;
	if (fstat(in, &st) < 0)
		return fail(c, -errno, "file", rel);
	if (!S_ISREG(st.st_mode) ||
	    (want && (st.st_dev != want->st_dev || st.st_ino != want->st_ino)))
		return changed(c, rel);
	if (c->outside && !public_mode(&st))
		return not_public(c, rel);
	/* Holes cost no disk but are hashed as zeros: a file whose length is past what the run
	 * may write into exp/ is refused before any of it is read, or `truncate -s 8T` would
	 * keep staging busy for hours. */
	if (c->limit && (uint64_t)st.st_size > c->limit)
		return too_long(c, rel, (uint64_t)st.st_size);
	LB_AUTOCLOSE int out =
		openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0)
		return fail(c, -errno, "file", rel);
	lb_sha256 h;
	lb_sha256_init(&h);
	int r = sparse_copy(c, in, out, (uint64_t)st.st_size, &h, rel);
	if (r < 0)
		return r;
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

/* The entry name of sdir judged as want, opened without following a link (O_NONBLOCK: a FIFO
 * put in its place is opened, seen and refused, not waited on). */
static int copy_file(stage_ctx *c, int sdir, int ddir, const char *name, const char *rel,
		     const struct stat *want)
{
	LB_AUTOCLOSE int in =
		openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return fail(c, -errno, "file", rel);
	return copy_open(c, in, ddir, name, rel, want->st_mode, want);
}

static bool is_python_code(const char *name)
{
	static const char *const sfx[] = {".py", ".pyc", ".pyw", ".pth"};
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
		size_t k = strlen(sfx[i]);
		if (n > k && strcmp(name + n - k, sfx[i]) == 0)
			return true;
	}
	return false;
}

/* What a link in sdir leads to, opened once (O_PATH) when it is Python code (by its name) or a
 * directory outside the experiment. Every judgement of it - its type and mode, where it lies,
 * who else may reach it, whether --hide covers it - and the copy are made from this
 * descriptor, never by resolving the name again: a link or a directory on its path swapped in
 * between would otherwise have one file judged and another copied. Returns the descriptor,
 * or -1: dangling, inside the experiment, or neither code nor a directory (staged as the
 * link it is). */
static int link_out(stage_ctx *c, int sdir, const char *name, struct stat *st,
		    char real[PATH_MAX], bool *public)
{
	if (!c->src_root[0])
		return -1;
	int fd = openat(sdir, name, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -1;
	bool code = is_python_code(name);
	if (fstat(fd, st) < 0 || !((code && S_ISREG(st->st_mode)) || S_ISDIR(st->st_mode)) ||
	    fd_path(fd, real) < 0) {
		close(fd);
		return -1;
	}
	*public = public_mode(st);
	int dir = -1;
	if (S_ISDIR(st->st_mode)) {
		dir = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		/* A file's directory: the one its path names, if the file is in it still. */
		char parent[PATH_MAX];
		snprintf(parent, sizeof parent, "%s", real);
		char *slash = strrchr(parent, '/');
		struct stat in;
		*slash = '\0';
		dir = open(parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir >= 0 && (fstatat(dir, slash + 1, &in, AT_SYMLINK_NOFOLLOW) < 0 ||
				 in.st_dev != st->st_dev || in.st_ino != st->st_ino)) {
			close(dir);
			dir = -1;
		}
	}
	bool inside = false;
	if (dir < 0)
		*public = false; /* moved while judged: not shown to be reachable */
	else
		walk_up(c, dir, &inside, public);
	if (inside) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether a directory holds Python code within the first `budget` entries of a walk (at
 * most 16 levels): a package or a library of the pipeline's beside the experiment. */
static bool holds_python_code(int dfd, int depth, long *budget)
{
	if (depth > 16)
		return false;
	DIR *d = lb_dir_stream(dfd);
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (*budget)-- > 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode) && is_python_code(e->d_name)) {
			found = true;
		} else if (S_ISDIR(st.st_mode) && !skip_dir(e->d_name)) {
			LB_AUTOCLOSE int sub = openat(dirfd(d), e->d_name,
						      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			found = sub >= 0 && holds_python_code(sub, depth + 1, budget);
		}
	}
	closedir(d);
	return found;
}

/* A symbolic link to a directory outside the experiment that holds Python code (a library
 * the pipeline wrote beside it, `lib -> ../shared`): imported through the link, that code
 * would run unread by the check and unhashed in the manifest. Such a directory is staged as
 * its content; a directory of data stays a link. Returns a readable descriptor of the
 * directory link_out opened (target), or -1. */
static int python_dir_out(int target)
{
	int fd = openat(target, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long budget = 20000;
	if (fd >= 0 && !holds_python_code(fd, 0, &budget)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		lseek(fd, 0, SEEK_SET); /* the walk shared its offset: staging reads from the start */
	return fd;
}

/* A file with several links inside the experiment is staged once and linked again, so 40
 * links to 26 MiB stay 26 MiB (a link to a file outside is staged as its content). */
static int copy_linked(stage_ctx *c, int sdir, int ddir, const char *name, const char *rel,
		       const struct stat *st)
{
	for (size_t i = 0; i < c->nlinks; i++) {
		if (c->links[i].dev != st->st_dev || c->links[i].ino != st->st_ino)
			continue;
		if (linkat(c->droot, c->links[i].rel, ddir, name, 0) < 0)
			return fail(c, -errno, "hard link", rel);
		json_object *first = json_object_object_get(c->files, c->links[i].rel);
		json_object_object_add(c->files, rel, json_object_get(first));
		c->nfiles++;
		return 0;
	}
	int r = copy_file(c, sdir, ddir, name, rel, st);
	if (r < 0)
		return r;
	struct linked *nl = realloc(c->links, (c->nlinks + 1) * sizeof *nl);
	if (!nl)
		return -ENOMEM;
	c->links = nl;
	nl[c->nlinks].dev = st->st_dev;
	nl[c->nlinks].ino = st->st_ino;
	nl[c->nlinks].rel = strdup(rel);
	if (!nl[c->nlinks].rel)
		return -ENOMEM;
	c->nlinks++;
	return 0;
}

/* Whether rel is one of the files to stage (c->only): a link may also stand for a directory
 * of code outside the experiment, staged as the files beneath it. */
static bool listed(const stage_ctx *c, const char *rel, bool link)
{
	if (json_object_object_get_ex(c->only, rel, NULL))
		return true;
	if (!link)
		return false;
	size_t n = strlen(rel);
	json_object_object_foreach(c->only, k, v)
	{
		(void)v;
		if (strncmp(k, rel, n) == 0 && k[n] == '/')
			return true;
	}
	return false;
}

static int copy_dir(stage_ctx *c, int sdir, int ddir, const char *prefix, int depth)
{
	if (depth > 64)
		return fail(c, -ELOOP, "directory", prefix);
	struct stat here;
	if (fstat(sdir, &here) < 0)
		return fail(c, -errno, "directory", prefix);
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
		int rl = snprintf(rel, sizeof rel, "%s%s%s", prefix, *prefix ? "/" : "", name);
		if (rl < 0 || (size_t)rl >= sizeof rel) {
			/* Cut, the name would be another file's (the manifest's key, the hard-link
			 * table's): a tree labbox cannot stage as it is is refused. */
			snprintf(c->err, c->errlen,
				 "staging '%.60s.../%s': its path within the experiment is longer "
				 "than %d bytes, which labbox cannot stage faithfully; shorten the "
				 "names or the nesting",
				 prefix, name, PATH_MAX - 1);
			r = -ENAMETOOLONG;
			break;
		}
		if ((r = stop_asked(c, rel)) < 0)
			break;
		struct stat st;
		if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = fail(c, -errno, "entry", rel);
			break;
		}
		if (is_record(c, &st) || beside_records(c, &here, name)) {
			if (c->skipped)
				json_object_array_add(c->skipped, json_object_new_string(rel));
			continue;
		}
		if (c->only && !S_ISDIR(st.st_mode) && !listed(c, rel, S_ISLNK(st.st_mode))) {
			if (c->left_out)
				json_object_array_add(c->left_out, json_object_new_string(rel));
			c->nleft++;
			continue;
		}
		if (c->outside && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) && !public_mode(&st)) {
			r = not_public(c, rel);
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
			struct stat now;
			if (fstat(s2, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
				r = changed(c, rel);
				break;
			}
			if (c->uid != (uid_t)-1 && fchown(d2, c->uid, c->gid) < 0) {
				r = fail(c, -errno, "directory", rel);
				break;
			}
			size_t left0 = c->nleft;
			r = copy_dir(c, s2, d2, rel, depth + 1);
			/* A directory that held only files left out is left out with them (rmdir
			 * refuses one that holds anything). */
			if (r == 0 && c->nleft > left0)
				unlinkat(ddir, name, AT_REMOVEDIR);
		} else if (S_ISREG(st.st_mode)) {
			r = st.st_nlink > 1 ? copy_linked(c, sdir, ddir, name, rel, &st)
					    : copy_file(c, sdir, ddir, name, rel, &st);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t len = readlinkat(sdir, name, target, sizeof target - 1);
			if (len < 0) {
				r = fail(c, -errno, "symlink", rel);
				break;
			}
			target[len] = '\0';
			bool public = false;
			char real[PATH_MAX];
			struct stat tst;
			const char *hid;
			LB_AUTOCLOSE int to = link_out(c, sdir, name, &tst, real, &public);
			if (to >= 0 && S_ISREG(tst.st_mode)) {
				/* Code the interpreter would import from outside the experiment: staged
				 * as its content, so the check reads it and the manifest hashes it - the
				 * very file link_out judged, reopened from its descriptor. */
				char self[64];
				snprintf(self, sizeof self, "/proc/self/fd/%d", to);
				LB_AUTOCLOSE int in = -1;
				r = (hid = hidden_by(c, real)) ? hidden_out(c, rel, real, hid)
				    : !public		      ? not_public(c, rel)
				    : (in = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0
					? fail(c, -errno, "file", rel)
					: copy_open(c, in, ddir, name, rel, 0644, &tst);
				continue;
			}
			LB_AUTOCLOSE int codedir = to >= 0 ? python_dir_out(to) : -1;
			if (codedir >= 0 && (hid = hidden_by(c, real))) {
				r = hidden_out(c, rel, real, hid);
				break;
			}
			if (codedir >= 0 && !public) {
				r = not_public(c, rel);
				break;
			}
			if (codedir >= 0) {
				LB_AUTOCLOSE int d2 = -1;
				if (mkdirat(ddir, name, 0755) < 0 ||
				    (d2 = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							      O_CLOEXEC)) < 0 ||
				    (c->uid != (uid_t)-1 && fchown(d2, c->uid, c->gid) < 0)) {
					r = fail(c, -errno, "directory", rel);
					break;
				}
				c->outside++;
				r = copy_dir(c, codedir, d2, rel, depth + 1);
				c->outside--;
				continue;
			}
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

int lb_record_copy_sparse(int in, int out)
{
	char err[PATH_MAX + 256];
	stage_ctx c = {.err = err, .errlen = sizeof err};
	struct stat st;
	if (fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return sparse_copy(&c, in, out, (uint64_t)st.st_size, NULL, "");
}

int lb_record_stage(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
		    struct json_object *files, struct json_object *skipped, char *err,
		    size_t errlen)
{
	return lb_record_stage_within(src, dst, chown_uid, chown_gid, 0, files, skipped, err,
				      errlen);
}

static void stage_ctx_free(stage_ctx *c)
{
	for (size_t i = 0; i < c->nlinks; i++)
		free(c->links[i].rel);
	free(c->links);
}

int lb_record_stage_within(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
			   uint64_t limit, struct json_object *files, struct json_object *skipped,
			   char *err, size_t errlen)
{
	return lb_record_stage_hiding(src, dst, chown_uid, chown_gid, limit, NULL, 0, files,
				      skipped, err, errlen);
}

int lb_record_stage_hiding(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
			   uint64_t limit, const char *const *hide, size_t nhide,
			   struct json_object *files, struct json_object *skipped, char *err,
			   size_t errlen)
{
	return lb_record_stage_listed(src, dst, chown_uid, chown_gid, limit, hide, nhide, NULL,
				      NULL, files, skipped, err, errlen);
}

int lb_record_stage_listed(const char *src, const char *dst, uid_t chown_uid, gid_t chown_gid,
			   uint64_t limit, const char *const *hide, size_t nhide,
			   struct json_object *only, struct json_object *left_out,
			   struct json_object *files, struct json_object *skipped, char *err,
			   size_t errlen)
{
	__attribute__((cleanup(stage_ctx_free))) stage_ctx c = {
		.uid = chown_uid, .gid = chown_gid, .files = files, .skipped = skipped,
		.err = err, .errlen = errlen, .limit = limit, .hide = hide, .nhide = nhide,
		.only = json_object_is_type(only, json_type_object) ? only : NULL,
		.left_out = left_out};
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
	c.droot = ddir;
	records_skip(&c);
	note_above(&c, sdir);
	if (!realpath(src, c.src_root))
		c.src_root[0] = '\0';
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

int lb_record_create_run_dir(const char *runs_dir, char id[64], char **run_dir, char *why,
			     size_t whylen)
{
	/* Every record of the run is written by path below the runs directory: whoever may move
	 * a directory on that path (its owner, or anyone where it is open to others) could put a
	 * link in its place and send root's writes, and the staged code, wherever they chose.
	 * Looked at before anything is made there, and again once the runs directory exists. */
	int r = lb_dir_chain_trusted(runs_dir, why, whylen);
	if (r < 0)
		return r;
	/* The runs are the user's own: closed to others (a directory that exists keeps its mode,
	 * a shared one included; each run's own directory is closed all the same). */
	r = lb_mkdir_p(runs_dir, 0700);
	if (r < 0)
		return r;
	r = lb_dir_chain_trusted(runs_dir, why, whylen);
	if (r < 0)
		return r;
	char abs[PATH_MAX];
	if (!realpath(runs_dir, abs))
		return -errno;
	/* Room for RUN_ID/exp/ and the longest record name: a path cut by PATH_MAX would name
	 * another file, or none. */
	if (strlen(abs) + 64 + 32 >= PATH_MAX)
		return -ENAMETOOLONG;
	/* The run's directory is made in the directory just judged, not in whatever its path
	 * names a moment later. */
	int rfd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	r = -EEXIST;
	for (int attempt = 0; attempt < 8 && r == -EEXIST; attempt++) {
		char rnd[9];
		r = lb_random_hex(rnd, 3);
		if (r < 0)
			break;
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		char ts[32];
		strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
		snprintf(id, 64, "%s-%s", ts, rnd);
		r = mkdirat(rfd, id, 0700) == 0 ? 0 : -errno;
	}
	close(rfd);
	if (r < 0)
		return r;
	if (asprintf(run_dir, "%s/%s", abs, id) < 0)
		return -ENOMEM;
	return 0;
}
