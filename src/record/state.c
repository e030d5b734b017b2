/* record: where the records' own state lives. The seal key and the list of known runs
 * directories are not a cache: a cache clean-up (which users and tools do freely) that took
 * them left every sealed record unverifiable and other projects' runs directories in sight of
 * every run. They live in $XDG_STATE_HOME/labbox; a copy in the cache, where labbox kept them
 * before, is taken over once, so that no record sealed before stops verifying. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The most either file holds (runs-dirs: LB_RECORD_KNOWN_MAX paths). */
#define ADOPT_MAX ((size_t)LB_RECORD_KNOWN_MAX * 4097)

/* name from the cache into the state directory, when the state has none: only a file this
 * user's labbox wrote (a regular file of the user's, readable by no one else), copied to a
 * private name and linked into place, so that a reader sees all of it or nothing and two
 * first runs at once keep one copy. The cache's copy goes once the state holds it: left
 * there, a key the user deleted from the state would come back from it. */
static void adopt(int sdfd, int cdfd, const char *name)
{
	struct stat st;
	if (fstatat(sdfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return;
	LB_AUTOCLOSE int fd = openat(cdfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || (size_t)st.st_size > ADOPT_MAX)
		return;
	LB_AUTOFREE char *data = malloc((size_t)st.st_size + 1);
	ssize_t len = data ? pread(fd, data, (size_t)st.st_size + 1, 0) : -1;
	/* Changed while read: the next start tries again. */
	if (len != st.st_size)
		return;
	char tmp[96];
	snprintf(tmp, sizeof tmp, ".%s.adopt.%ld", name, (long)getpid());
	LB_AUTOCLOSE int out = openat(sdfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					     O_CLOEXEC, 0600);
	if (out < 0)
		return;
	int r = lb_write_all(out, data, (size_t)len);
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	/* EEXIST: another start took it over first, and removes the cache's. */
	if (r == 0 && linkat(sdfd, tmp, sdfd, name, 0) == 0)
		unlinkat(cdfd, name, 0);
	unlinkat(sdfd, tmp, 0);
}

char *lb_record_state_dir(void)
{
	char *state = lb_user_state_dir();
	if (!state)
		return NULL;
	LB_AUTOCLOSE int sdfd = lb_open_private_dir(state);
	if (sdfd < 0)
		return state; /* refused where it is read (record_key) */
	static const char *const names[] = {LB_RECORD_KEY_FILE, LB_RECORD_KNOWN_FILE};
	struct stat st;
	bool all = true;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (fstatat(sdfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			all = false;
	if (all)
		return state;
	LB_AUTOFREE char *cache = lb_user_cache_dir();
	LB_AUTOCLOSE int cdfd = cache ? open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	for (size_t i = 0; cdfd >= 0 && i < sizeof names / sizeof *names; i++)
		adopt(sdfd, cdfd, names[i]);
	return state;
}
