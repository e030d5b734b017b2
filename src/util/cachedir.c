/* The user's cache keeps one entry per interpreter and kind (a probe, a freeze, a compiled gate,
 * an import table), named PREFIX-KEY[.EXT] with KEY the first 32 hex digits of a sha256 of the
 * interpreter's path. Interpreters come and go (a venv per project, per tox environment, per
 * CI job): without a bound, the entries of the gone ones stayed for ever (a compiled gate is
 * about 220 KiB). So each kind keeps the keys used most recently: an entry is touched when it
 * is used (at most every few hours, so a warm run writes nothing), and a store past the bound
 * removes the oldest keys, all of a key's files together. */
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_KEY_LEN 32
/* A used entry's mtime is renewed only when older than this: a warm run writes nothing. */
#define CACHE_TOUCH_S (6 * 3600)

typedef struct cache_file {
	char name[NAME_MAX + 1];
	char key[CACHE_KEY_LEN + 1];
	struct timespec mtime;
} cache_file;

/* name's prefix length (up to its '-') when name is PREFIX-KEY[.EXT], else 0. */
static size_t entry_prefix(const char *name)
{
	const char *dash = strchr(name, '-');
	if (!dash || dash == name)
		return 0;
	const char *key = dash + 1;
	if (strspn(key, "0123456789abcdef") != CACHE_KEY_LEN)
		return 0;
	char after = key[CACHE_KEY_LEN];
	if (after != '\0' && after != '.')
		return 0;
	return (size_t)(dash - name);
}

void lb_cache_entry_used(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    time(NULL) - st.st_mtim.tv_sec > CACHE_TOUCH_S)
		utimensat(dfd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const cache_file *)a)->key, ((const cache_file *)b)->key);
}

static bool newer(struct timespec a, struct timespec b)
{
	return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

typedef struct cache_key {
	size_t first, n; /* its files: v[first .. first + n) after sorting by key */
	struct timespec used; /* its newest file's mtime */
} cache_key;

static int by_use(const void *a, const void *b)
{
	const cache_key *x = a, *y = b;
	if (newer(x->used, y->used))
		return 1;
	return newer(y->used, x->used) ? -1 : 0;
}

int lb_cache_bound_like(int dfd, const char *name, size_t keep)
{
	size_t plen = entry_prefix(name);
	if (!plen || keep == 0)
		return -EINVAL;
	DIR *d = lb_dir_stream_own(dfd); /* a second listing through dfd must see it all */
	if (!d)
		return -errno;
	cache_file *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (entry_prefix(e->d_name) != plen || strncmp(e->d_name, name, plen) != 0)
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cache_file *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof *v);
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
		memcpy(v[n].key, e->d_name + plen + 1, CACHE_KEY_LEN);
		v[n].key[CACHE_KEY_LEN] = '\0';
		v[n].mtime = st.st_mtim;
		n++;
	}
	closedir(d);
	if (r < 0 || n <= keep) {
		free(v);
		return r;
	}
	qsort(v, n, sizeof *v, by_key);
	cache_key *k = calloc(n, sizeof *k);
	if (!k) {
		free(v);
		return -ENOMEM;
	}
	size_t nk = 0;
	for (size_t i = 0; i < n; i++) {
		if (nk == 0 || strcmp(v[k[nk - 1].first].key, v[i].key) != 0)
			k[nk++] = (cache_key){.first = i, .n = 0, .used = v[i].mtime};
		k[nk - 1].n++;
		if (newer(v[i].mtime, k[nk - 1].used))
			k[nk - 1].used = v[i].mtime;
	}
	/* Down to three quarters of the bound, so that the next stores do not each list the
	 * directory again. */
	if (nk > keep) {
		qsort(k, nk, sizeof *k, by_use);
		size_t drop = nk - keep * 3 / 4;
		for (size_t i = 0; i < drop; i++)
			for (size_t j = k[i].first; j < k[i].first + k[i].n; j++)
				if (unlinkat(dfd, v[j].name, 0) < 0 && errno != ENOENT && r == 0)
					r = -errno;
	}
	free(k);
	free(v);
	return r;
}
