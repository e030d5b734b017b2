/* The runs directories this user's labbox has used, so that every run can hide all of them,
 * not only its own (docs/decisions.md, "Red-team pass: second round"). An ordinary user's
 * experiment runs with the user's own uid: a runs directory of another project outside the
 * home (/srv, /scratch, /work) is plain readable to it, manifests with their -e values and
 * other runs' results included. The list lives in labbox's state directory (not the cache: a
 * cache clean-up must not bring other projects' records into sight), which every run hides,
 * so an experiment can neither read it nor add to it. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Each one is a mask in every run; the most recently used are kept. */
#define KNOWN_READ_MAX ((size_t)LB_RECORD_KNOWN_MAX * (PATH_MAX + 1))

/* A line is an absolute path without control bytes; anything else is not ours. */
static bool known_line_ok(const char *s, size_t n)
{
	if (n == 0 || n >= PATH_MAX || s[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int lb_record_known_dirs(const char *state_dir, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!state_dir)
		return 0;
	LB_AUTOCLOSE int dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	int r = lb_read_file_at(dfd, LB_RECORD_KNOWN_FILE, KNOWN_READ_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	char **v = calloc(LB_RECORD_KNOWN_MAX, sizeof *v);
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (char *p = text; p < text + len && k < LB_RECORD_KNOWN_MAX;) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t ln = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
		if (known_line_ok(p, ln) && !(v[k] = strndup(p, ln))) {
			lb_record_known_free(v, k);
			return -ENOMEM;
		}
		if (v[k])
			k++;
		p += ln + 1;
	}
	*out = v;
	*n = k;
	return 0;
}

void lb_record_known_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

int lb_record_known_note(const char *state_dir, const char *runs_dir)
{
	char real[PATH_MAX];
	if (!state_dir || !runs_dir || !realpath(runs_dir, real))
		return state_dir && runs_dir ? -errno : -EINVAL;
	char **v = NULL;
	size_t n = 0;
	int r = lb_record_known_dirs(state_dir, &v, &n);
	if (r < 0 && r != -EFBIG && r != -EINVAL && r != -ELOOP)
		return r;
	/* Already the most recent: nothing to write, the usual case. */
	if (n > 0 && strcmp(v[n - 1], real) == 0) {
		lb_record_known_free(v, n);
		return 0;
	}
	lb_buf b = {0};
	size_t keep = 0;
	struct stat st;
	/* Directories gone since (a test's, a scratch project's) make room for those that are
	 * there: only the most recent of those are kept, so the dead must not push them out. */
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i], real) == 0 || (stat(v[i], &st) < 0 && errno == ENOENT)) {
			free(v[i]);
			v[i] = NULL;
		} else {
			keep++;
		}
	}
	size_t skip = keep >= LB_RECORD_KNOWN_MAX ? keep - (LB_RECORD_KNOWN_MAX - 1) : 0;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (!v[i])
			continue;
		if (skip) {
			skip--;
			continue;
		}
		r = lb_buf_printf(&b, "%s\n", v[i]);
	}
	if (r >= 0)
		r = lb_buf_printf(&b, "%s\n", real);
	lb_record_known_free(v, n);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/%s", state_dir, LB_RECORD_KNOWN_FILE);
	if (r >= 0)
		r = lb_write_file_atomic_mode(path, b.data, b.len, 0600);
	lb_buf_free(&b);
	return r < 0 ? r : 0;
}

/* path under dir (both resolved): what follows dir, or NULL. */
static const char *below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strncmp(path, dir, n) != 0)
		return NULL;
	if (path[n] == '\0')
		return path + n;
	if (path[n] == '/')
		return path + n + 1;
	return n == 1 && dir[0] == '/' ? path + 1 : NULL;
}

/* One runs directory R: path in R itself, or in R's index (R/../labbox.db and its -wal, -shm)
 * or R/../sweeps. */
static const char *in_records(const char *real, const char *runs, char area[PATH_MAX])
{
	const char *r = below(real, runs);
	if (r) {
		snprintf(area, PATH_MAX, "%s", runs);
		return r;
	}
	char parent[PATH_MAX];
	snprintf(parent, sizeof parent, "%s", runs);
	char *slash = strrchr(parent, '/');
	if (!slash)
		return NULL;
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	static const char *const beside[] = {"sweeps", "labbox.db", "labbox.db-wal",
					     "labbox.db-shm"};
	for (size_t i = 0; i < sizeof beside / sizeof *beside; i++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof p, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", beside[i]);
		if ((r = below(real, p))) {
			snprintf(area, PATH_MAX, "%.*s", PATH_MAX - 1, p);
			return r;
		}
	}
	return NULL;
}

static const char *area_of_real(const char *state_dir, const char *runs_dir, const char *real,
				char *area, const char **rel);

const char *lb_record_records_area(const char *state_dir, const char *runs_dir, const char *path,
				   char *area, const char **rel)
{
	char real[PATH_MAX];
	if (!path || !realpath(path, real))
		return NULL;
	return area_of_real(state_dir, runs_dir, real, area, rel);
}

/* lb_record_records_area of a path already resolved (it need not exist). */
static const char *area_of_real(const char *state_dir, const char *runs_dir, const char *real,
				char *area, const char **rel)
{
	char runs[PATH_MAX];
	const char *r = NULL;
	if (runs_dir && realpath(runs_dir, runs))
		r = in_records(real, runs, area);
	char **v = NULL;
	size_t n = 0;
	if (!r && lb_record_known_dirs(state_dir, &v, &n) == 0)
		for (size_t i = 0; i < n && !r; i++)
			r = in_records(real, v[i], area);
	lb_record_known_free(v, n);
	if (r && rel)
		*rel = r;
	return r ? area : NULL;
}

/* realpath of path's longest existing head with the rest appended: an output named for a file
 * or directory that is not there yet is judged by where it would be made. */
static bool resolve_to_be(const char *path, char out[PATH_MAX])
{
	char head[PATH_MAX], real[PATH_MAX];
	if (snprintf(head, sizeof head, "%s", path) >= (int)sizeof head)
		return false;
	size_t cut = strlen(head);
	while (!realpath(cut ? head : ".", real)) {
		if ((errno != ENOENT && errno != ENOTDIR) || cut == 0)
			return false;
		char *slash = strrchr(head, '/');
		cut = !slash ? 0 : slash == head ? 1 : (size_t)(slash - head);
		if (slash == head && head[1] == '\0')
			return false; /* "/" itself did not resolve */
		head[cut] = '\0';
	}
	const char *rest = path + cut;
	while (*rest == '/')
		rest++;
	int n = snprintf(out, PATH_MAX, "%s%s%s", real, *rest && strcmp(real, "/") ? "/" : "", rest);
	return n > 0 && n < PATH_MAX;
}

const char *lb_record_output_refused(const char *state_dir, const char *runs_dir, const char *path,
				     char *area)
{
	char real[PATH_MAX], dir[PATH_MAX];
	if (!path || !resolve_to_be(path, real))
		return NULL;
	if (area_of_real(state_dir, runs_dir, real, area, NULL))
		return area;
	/* The directory holding the runs directory, the index and sweeps/ (an export "into"
	 * .labbox/) mixes its files with the records as surely. */
	if (runs_dir && realpath(runs_dir, dir)) {
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir)
			*slash = '\0';
		if (strcmp(real, dir) == 0 && strcmp(dir, "/") != 0) {
			snprintf(area, PATH_MAX, "%s", dir);
			return area;
		}
	}
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	const char *other[2] = {state_dir, cache};
	for (int i = 0; i < 2; i++)
		if (other[i] && realpath(other[i], dir) && lb_path_under(real, dir)) {
			snprintf(area, PATH_MAX, "%s", dir);
			return area;
		}
	return NULL;
}

bool lb_record_holds_program(const char *state_dir, const char *runs_dir, const char *program)
{
	LB_AUTOFREE char *exe = NULL;
	char area[PATH_MAX], dir[PATH_MAX];
	if (lb_find_executable(program, &exe) < 0)
		return false;
	if (lb_record_records_area(state_dir, runs_dir, exe, area, NULL))
		return true;
	/* The directory it is named in counts too (a venv's bin/python linking out: Python
	 * reads the pyvenv.cfg beside the name it was started by). */
	snprintf(dir, sizeof dir, "%s", exe);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	return lb_record_records_area(state_dir, runs_dir, dir, area, NULL) != NULL;
}
