/* Other runs' records out of a sandbox's sight: the runs directories labbox has used, the run
 * index and the sweeps beside each, and the user's cache. Every sandbox that runs code of an
 * experiment's (the run, exec, an interpreter's probe, git's filters) hides them alike. */
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory a runs directory sits in, where its records are (lb_records_beside), opened
 * once: its six names are then one fstatat each. */
static void realdir_close(lb_realdir *d)
{
	lb_realdir_close(d);
}

static void parent_open(lb_realdir *d, const char *runs_dir)
{
	char p[PATH_MAX];
	d->fd = -1;
	if (snprintf(p, sizeof p, "%s", runs_dir) >= (int)sizeof p)
		return;
	char *slash = strrchr(p, '/');
	if (!slash)
		return;
	if (slash == p)
		slash[1] = '\0';
	else
		*slash = '\0';
	lb_realdir_open(d, p);
}

/* path masked when it is there and the user's (another user's file there is not a record
 * of this user's and holds nothing of theirs). */
static int mask_own(lb_sandbox *sb, lb_realdir *d, const char *path)
{
	char real[PATH_MAX];
	struct stat st;
	/* Found as itself in d: its own stat, as lstat's. Absent, even as a dangling link:
	 * nothing to mask. */
	int e = lb_realpath_stat_in(d, path, real, &st);
	if (e == -ENOENT)
		return 0;
	if (e == 0 && strcmp(real, path) == 0)
		return st.st_uid == geteuid() ? lb_sandbox_mask_in(sb, d, path) : 0;
	if (lstat(path, &st) < 0 || st.st_uid != geteuid())
		return 0;
	return lb_sandbox_mask_in(sb, d, path);
}

/* A runs directory, the sweeps beside it and its run index, masked. make_sweeps: this run's
 * own sweeps directory is made when missing, so that a sweep started while this run goes on
 * does not appear inside it; another project's is only masked where it exists. */
int lb_record_hide_runs_dir(lb_sandbox *sb, const char *runs_dir, const char *index_path,
			    bool make_sweeps)
{
	__attribute__((cleanup(realdir_close))) lb_realdir dir;
	parent_open(&dir, runs_dir);
	int r = lb_sandbox_mask_in(sb, &dir, runs_dir);
	/* The sweeps beside the runs: sweep.json holds every cell's results and the -e values of
	 * its command line. */
	LB_AUTOFREE char *sweeps = NULL;
	if (r == 0 && lb_records_place(runs_dir, "sweeps", &sweeps) == 0) {
		size_t n = strlen(sweeps);
		while (n > 1 && sweeps[n - 1] == '/')
			sweeps[--n] = '\0';
		if (make_sweeps)
			lb_mkdir_p(sweeps, 0700);
		r = lb_sandbox_mask_in(sb, &dir, sweeps);
	}
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; r == 0 && index_path && i < sizeof sfx / sizeof *sfx; i++) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s%s", index_path, sfx[i]);
		r = lb_sandbox_mask_in(sb, &dir, p);
	}
	/* Records left beside the runs while the parent was closed to others (or by an earlier
	 * labbox) stay where they were when the parent opened up, and are hidden there too.
	 * Whether they moved is whether the sweeps' place did: no second look at the parent. */
	LB_AUTOFREE char *old_sweeps = NULL;
	LB_AUTOFREE char *old_index = NULL;
	if (lb_records_beside(runs_dir, "sweeps", &old_sweeps) < 0 ||
	    lb_records_beside(runs_dir, "labbox.db", &old_index) < 0)
		return -ENOMEM;
	if (r < 0 || !sweeps || strcmp(old_sweeps, sweeps) == 0)
		return r;
	r = mask_own(sb, &dir, old_sweeps);
	for (size_t i = 0; r == 0 && i < sizeof sfx / sizeof *sfx; i++) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s%s", old_index, sfx[i]);
		r = mask_own(sb, &dir, p);
	}
	return r;
}

static int hide_known_one(lb_sandbox *sb, const char *runs_dir, void *ctx)
{
	(void)ctx;
	LB_AUTOFREE char *index = NULL;
	struct stat st;
	/* Gone since, or no longer a directory: nothing of it to hide. */
	if (stat(runs_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	int r = lb_index_path_for(runs_dir, &index);
	if (r == 0)
		r = lb_record_hide_runs_dir(sb, runs_dir, index, false);
	return r == -ENOMEM ? r : 0;
}

/* Where a directory really is now, in three system calls whatever its depth: a project moved
 * since its runs directory was noted, with a link left at its old place, is hidden at its new
 * place (a volume of the new place, or a root that shows it, would show its records). */
static int resolve_dir(const char *path, char real[PATH_MAX])
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, PATH_MAX - 1);
	int e = n < 0 ? -errno : 0;
	close(fd);
	if (e < 0 || n <= 0 || n >= PATH_MAX - 1 || real[0] != '/')
		return e < 0 ? e : -ENAMETOOLONG;
	real[n] = '\0';
	return 0;
}

/* The user's cache (interpreter probes, freezes, check verdicts: trusted by the next run on
 * the host, and it may lie outside the home, XDG_CACHE_HOME=/scratch/...), labbox's state
 * (the seal's key, the known list: XDG_STATE_HOME may lie outside too), and every runs
 * directory this user's labbox has used, with the index and sweeps beside each.
 * Each known runs directory is looked at only where the experiment could see it, once the
 * sandbox's view is final: most lie in a home or /tmp, which the sandbox replaces, and with
 * 64 of them a start paid 3.5 ms for stats of what nothing could reach. Each is resolved
 * first (resolve_dir), so that where it lies now decides. */
int lb_record_hide_known_in(lb_sandbox *sb, const char *cache, const char *state)
{
	int r = cache ? lb_sandbox_mask(sb, cache) : 0;
	if (r == 0 && state)
		r = lb_sandbox_mask(sb, state);
	if (r < 0)
		return r;
	char **known = NULL;
	size_t nknown = 0;
	r = lb_record_known_dirs(state, &known, &nknown);
	for (size_t i = 0; r == 0 && i < nknown; i++) {
		char real[PATH_MAX];
		/* Gone since: nothing of it to hide. */
		if (resolve_dir(known[i], real) == 0)
			r = lb_sandbox_mask_where_seen(sb, real, hide_known_one, NULL);
	}
	lb_record_known_free(known, nknown);
	/* A damaged list hides nothing more; the cache and this run's own records are hidden
	 * all the same. */
	return r == -ENOMEM ? r : 0;
}

int lb_record_hide_known(lb_sandbox *sb)
{
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	LB_AUTOFREE char *state = lb_record_state_dir();
	return lb_record_hide_known_in(sb, cache, state);
}
