/* sandbox configuration: setters only, no side effects on the system. */
#include "sandbox_internal.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof **v);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool path_is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool strv_contains(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* Cover dir, dropping covers of directories under it: it hides them too, and a cover mounted
 * first would be buried under it (and then could not be sealed). */
static int hide_dir(lb_sandbox *sb, const char *dir)
{
	/* Under /tmp, /var/tmp or /dev/shm it is hidden already by their fresh tmpfs, mounted
	 * after the covers: a cover there would be buried and could not be sealed. */
	for (size_t i = 0; i < sb->nprivate; i++)
		if (path_is_under(dir, sb->private_dirs[i]))
			return 0;
	size_t k = 0;
	for (size_t i = 0; i < sb->nhidden; i++) {
		if (path_is_under(sb->hidden[i], dir))
			free(sb->hidden[i]);
		else
			sb->hidden[k++] = sb->hidden[i];
	}
	sb->nhidden = k;
	if (sb->hidden)
		sb->hidden[k] = NULL;
	return strv_push(&sb->hidden, &sb->nhidden, dir);
}

/* A home directory is hidden unless hiding it would hide the system itself. */
static int add_hidden_home(lb_sandbox *sb, const char *home)
{
	if (!home || home[0] != '/')
		return 0;
	char real[PATH_MAX];
	if (!realpath(home, real))
		return 0;
	static const char *const system_dirs[] = {"/", "/usr", "/bin", "/sbin", "/lib", "/lib64",
						  "/etc", "/var", "/opt", "/dev", "/proc", "/sys"};
	for (size_t i = 0; i < sizeof system_dirs / sizeof *system_dirs; i++)
		if (strcmp(real, system_dirs[i]) == 0)
			return 0;
	/* kept apart from the hidden list, which holds no home a hidden root covers already */
	if (!strv_contains(sb->homes, sb->nhomes, real)) {
		int r = strv_push(&sb->homes, &sb->nhomes, real);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < sb->nhidden; i++)
		if (path_is_under(real, sb->hidden[i]))
			return 0;
	return hide_dir(sb, real);
}

int lb_sandbox_new(lb_sandbox **out)
{
	lb_sandbox *sb = calloc(1, sizeof *sb);
	if (!sb)
		return -ENOMEM;
	sb->grace = 5.0;
	sb->net = LB_NET_NONE;
	sb->merged = true;
	sb->stdin_fd = -1;
	sb->cgroup_accounting = true;
	sb->tmpfs_size = (uint64_t)1 << 30;
	sb->host_uid = getuid();
	sb->host_gid = getgid();
	/* As root, the payload runs as nobody: uid 0 owns the host's secrets (/etc/shadow, ssh
	 * host keys) and file permissions alone would let it read them. */
	if (sb->host_uid == 0) {
		sb->sb_uid = 65534;
		sb->sb_gid = 65534;
	} else {
		sb->sb_uid = sb->host_uid;
		sb->sb_gid = sb->host_gid;
	}
	int r = 0;
	static const char *const hidden[] = {"/home", "/root", "/run", "/var/run"};
	for (size_t i = 0; i < sizeof hidden / sizeof *hidden && r == 0; i++) {
		struct stat st;
		/* /var/run is usually a symlink to /run, which is covered already. */
		if (lstat(hidden[i], &st) == 0 && S_ISDIR(st.st_mode))
			r = strv_push(&sb->hidden, &sb->nhidden, hidden[i]);
	}
	static const char *const priv[] = {"/tmp", "/var/tmp", "/dev/shm"};
	for (size_t i = 0; i < sizeof priv / sizeof *priv && r == 0; i++)
		r = strv_push(&sb->private_dirs, &sb->nprivate, priv[i]);
	if (r == 0) {
		struct passwd *pw = getpwuid(sb->host_uid);
		r = add_hidden_home(sb, pw ? pw->pw_dir : NULL);
	}
	if (r == 0)
		r = add_hidden_home(sb, getenv("HOME"));
	if (r < 0) {
		lb_sandbox_free(sb);
		return r;
	}
	*out = sb;
	return 0;
}

void lb_sandbox_free(lb_sandbox *sb)
{
	if (!sb)
		return;
	strv_free(sb->argv, sb->argc);
	free(sb->workdir);
	free(sb->disk_path);
	for (size_t i = 0; i < sb->nbinds; i++) {
		free(sb->binds[i].src);
		free(sb->binds[i].dst);
	}
	free(sb->binds);
	strv_free(sb->hidden, sb->nhidden);
	strv_free(sb->homes, sb->nhomes);
	strv_free(sb->masked, sb->nmasked);
	strv_free(sb->masked_dirs, sb->nmasked_dirs);
	for (size_t i = 0; i < sb->nlater; i++)
		free(sb->later[i].path);
	free(sb->later);
	strv_free(sb->protect, sb->nprotect);
	strv_free(sb->private_dirs, sb->nprivate);
	strv_free(sb->env, sb->nenv);
	strv_free(sb->devices, sb->ndevices);
	lb_sandbox_free_mounts(sb);
	free(sb);
}

int lb_sandbox_set_argv(lb_sandbox *sb, char *const argv[])
{
	if (!argv || !argv[0] || argv[0][0] != '/')
		return -EINVAL;
	strv_free(sb->argv, sb->argc);
	sb->argv = NULL;
	sb->argc = 0;
	for (size_t i = 0; argv[i]; i++) {
		int r = strv_push(&sb->argv, &sb->argc, argv[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int lb_sandbox_set_function(lb_sandbox *sb, int (*fn)(void *arg), void *arg)
{
	if (!fn)
		return -EINVAL;
	sb->fn = fn;
	sb->fn_arg = arg;
	return 0;
}

/* The payload must reach a bound path through its ancestors. The first ancestor it may not
 * search (a 0700 directory of root's, when the payload is uid 65534) is covered like a home:
 * an empty tmpfs in which labbox creates the path to the bind, which also hides that
 * directory's other contents. */
static int cover_untraversable(lb_sandbox *sb, const char *path)
{
	char cur[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof cur)
		return -ENAMETOOLONG;
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		memcpy(cur, path, i);
		cur[i] = '\0';
		if (lb_sandbox_path_hidden(sb, cur))
			return 0; /* inside a tmpfs labbox makes: traversable */
		struct stat st;
		if (stat(cur, &st) < 0 || !S_ISDIR(st.st_mode))
			return 0;
		mode_t need = st.st_uid == sb->sb_uid ? S_IXUSR
			      : st.st_gid == sb->sb_gid ? S_IXGRP
							 : S_IXOTH;
		if (!(st.st_mode & need))
			return hide_dir(sb, cur);
	}
	return 0;
}

int lb_sandbox_set_workdir(lb_sandbox *sb, const char *dir)
{
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return -errno;
	struct stat st;
	if (stat(real, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	char *d = strdup(real);
	if (!d)
		return -ENOMEM;
	free(sb->workdir);
	sb->workdir = d;
	return cover_untraversable(sb, real);
}

int lb_sandbox_add_bind(lb_sandbox *sb, const char *src, const char *dst, bool writable)
{
	char real[PATH_MAX];
	if (!realpath(src, real))
		return -errno;
	if (dst && !lb_path_plain(dst))
		return -EINVAL;
	for (size_t i = 0; i < sb->nbinds; i++)
		if (strcmp(sb->binds[i].dst, dst ? dst : real) == 0)
			return 0;
	lb_bind *nb = realloc(sb->binds, (sb->nbinds + 1) * sizeof *nb);
	if (!nb)
		return -ENOMEM;
	sb->binds = nb;
	lb_bind *b = &nb[sb->nbinds];
	b->src = strdup(real);
	b->dst = strdup(dst ? dst : real);
	b->writable = writable;
	if (!b->src || !b->dst) {
		free(b->src);
		free(b->dst);
		return -ENOMEM;
	}
	sb->nbinds++;
	return cover_untraversable(sb, b->dst);
}

int lb_sandbox_mask(lb_sandbox *sb, const char *path)
{
	return lb_sandbox_mask_in(sb, NULL, path);
}

int lb_sandbox_mask_in(lb_sandbox *sb, struct lb_realdir *dir, const char *path)
{
	char real[PATH_MAX];
	struct stat st;
	int e = lb_realpath_stat_in(dir, path, real, &st);
	if (e < 0)
		return e == -ENOENT ? 0 : e;
	if (strcmp(real, "/") == 0)
		return 0;
	/* Recorded even when a hidden or private directory covers it already: a bind of a
	 * directory above it (-v) must hide it all the same. */
	bool covered = lb_sandbox_path_hidden(sb, real);
	if (S_ISDIR(st.st_mode)) {
		int r = strv_contains(sb->masked_dirs, sb->nmasked_dirs, real)
				? 0
				: strv_push(&sb->masked_dirs, &sb->nmasked_dirs, real);
		return r < 0 || covered ? r : hide_dir(sb, real);
	}
	if (strv_contains(sb->masked, sb->nmasked, real))
		return 0;
	return strv_push(&sb->masked, &sb->nmasked, real);
}

int lb_sandbox_mask_where_seen(lb_sandbox *sb, const char *path, lb_sandbox_hide_fn hide,
			       void *ctx)
{
	if (!path || path[0] != '/' || !hide)
		return -EINVAL;
	lb_later_mask *v = realloc(sb->later, (sb->nlater + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	sb->later = v;
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	v[sb->nlater++] = (lb_later_mask){.path = p, .hide = hide, .ctx = ctx};
	return 0;
}

static bool either_under(const char *a, const char *b)
{
	return path_is_under(a, b) || path_is_under(b, a);
}

/* Whether the payload may see path: the root shows it, or a bind (-v, an exposed program's
 * directory, a protected one) or the work directory reaches into it or above it. */
static bool maybe_seen(const lb_sandbox *sb, const char *path)
{
	if (!lb_sandbox_path_hidden(sb, path))
		return true;
	if (sb->workdir && either_under(path, sb->workdir))
		return true;
	for (size_t i = 0; i < sb->nbinds; i++)
		if (either_under(path, sb->binds[i].src))
			return true;
	return false;
}

int lb_sandbox_settle_masks(lb_sandbox *sb, bool all)
{
	int r = 0;
	/* a hide function may add binds or masks, never more of these */
	for (size_t i = 0; r == 0 && i < sb->nlater; i++)
		if (all || maybe_seen(sb, sb->later[i].path))
			r = sb->later[i].hide(sb, sb->later[i].path, sb->later[i].ctx);
	for (size_t i = 0; i < sb->nlater; i++)
		free(sb->later[i].path);
	free(sb->later);
	sb->later = NULL;
	sb->nlater = 0;
	return r;
}

/* Whether the sandbox lets the payload write at path (as the host names it): the work
 * directory, the private /tmp, /var/tmp and /dev/shm, a --tmpfs, a volume given :rw. */
static bool writable_inside(const lb_sandbox *sb, const char *path)
{
	if (sb->workdir && path_is_under(path, sb->workdir))
		return true;
	for (size_t i = 0; i < sb->nprivate; i++)
		if (path_is_under(path, sb->private_dirs[i]))
			return true;
	for (size_t i = 0; i < sb->ntmpfs; i++)
		if (path_is_under(path, sb->tmpfs[i].path))
			return true;
	for (size_t i = 0; i < sb->nbinds; i++)
		if (sb->binds[i].writable && (path_is_under(path, sb->binds[i].dst) ||
					      path_is_under(path, sb->binds[i].src)))
			return true;
	return false;
}

/* path with its `.`, `..` and repeated slashes taken out by their spelling alone. */
static void lexical_clean(char *path)
{
	char out[2 * PATH_MAX + 2];
	size_t n = 0;
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == 0)
			break;
		if (len == 1 && s[0] == '.') {
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (n + 1 + len < sizeof out) {
			out[n++] = '/';
			memcpy(out + n, s, len);
			n += len;
		}
		s += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	memcpy(path, out, n + 1);
}

/* A symbolic link inside a protected directory that leads where the payload can write
 * (site-packages -> ../../../sp, a .pth -> /tmp/x.pth) would let it change, through the
 * link, what the protected directory holds. Allowed: links that stay inside it, and links
 * to places the payload cannot write (bin/python -> /usr/bin/python3.11). */
static int protect_walk(const lb_sandbox *sb, const char *root, int dfd, const char *path,
			int depth, long *budget)
{
	if (depth > 32 || --*budget < 0)
		return -E2BIG;
	DIR *d = lb_dir_stream(dfd);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (--*budget < 0) {
			r = -E2BIG;
			break;
		}
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) {
			r = -ENAMETOOLONG;
			break;
		}
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = protect_walk(sb, root, sub, p, depth + 1, budget);
				close(sub);
			}
		} else if (S_ISLNK(st.st_mode)) {
			char text[PATH_MAX], lex[2 * PATH_MAX + 2], real[PATH_MAX] = "";
			ssize_t n = readlinkat(dirfd(d), e->d_name, text, sizeof text - 1);
			if (n < 0)
				continue;
			text[n] = '\0';
			/* One step of it, by its spelling (the sandbox's /tmp is not the host's): a
			 * step that stays inside is judged by the link it lands on, if any; one that
			 * leaves must land, as written and as the host resolves it, where the
			 * payload cannot write. */
			if (text[0] == '/')
				snprintf(lex, sizeof lex, "%s", text);
			else
				snprintf(lex, sizeof lex, "%s/%s", path, text);
			lexical_clean(lex);
			if (path_is_under(lex, root))
				continue;
			if (writable_inside(sb, lex) ||
			    (realpath(p, real) && writable_inside(sb, real))) {
				r = -EXDEV;
				break;
			}
		}
	}
	closedir(d);
	return r;
}

int lb_sandbox_protect(lb_sandbox *sb, const char *dir)
{
	if (!sb->workdir || dir[0] != '/' || !path_is_under(dir, sb->workdir) ||
	    strcmp(dir, sb->workdir) == 0)
		return -EINVAL;
	/* Each step from the work directory down, looked at as it is (no link followed). */
	char p[PATH_MAX];
	size_t w = strlen(sb->workdir);
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
		return -ENAMETOOLONG;
	for (char *s = p + w + 1;; s++) {
		char *slash = strchr(s, '/');
		if (slash)
			*slash = '\0';
		struct stat st;
		if (lstat(p, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (!slash)
			break;
		*slash = '/';
		s = slash;
	}
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	long budget = 500000;
	int r = protect_walk(sb, dir, dfd, dir, 0, &budget);
	if (r < 0)
		return r;
	return strv_contains(sb->protect, sb->nprotect, dir) ? 0
							      : strv_push(&sb->protect, &sb->nprotect, dir);
}

void lb_sandbox_masked(const lb_sandbox *sb, const char *const **dirs, size_t *ndirs,
		       const char *const **files, size_t *nfiles)
{
	*dirs = (const char *const *)sb->masked_dirs;
	*ndirs = sb->nmasked_dirs;
	*files = (const char *const *)sb->masked;
	*nfiles = sb->nmasked;
}

bool lb_sandbox_path_hidden(const lb_sandbox *sb, const char *path)
{
	for (size_t i = 0; i < sb->nhidden; i++)
		if (path_is_under(path, sb->hidden[i]))
			return true;
	for (size_t i = 0; i < sb->nprivate; i++)
		if (path_is_under(path, sb->private_dirs[i]))
			return true;
	return false;
}

/* The directory a program needs: its own, or the install prefix when it sits in a bin/
 * directory (a venv, a conda env, a pyenv version, ~/.local). */
bool lb_sandbox_dir_exposable(const lb_sandbox *sb, const char *dir)
{
	if (!dir || dir[0] != '/' || !lb_sandbox_path_hidden(sb, dir))
		return false;
	/* a hidden root, or above one: /home, /root, /tmp */
	for (size_t i = 0; i < sb->nhidden; i++)
		if (path_is_under(sb->hidden[i], dir))
			return false;
	for (size_t i = 0; i < sb->nprivate; i++)
		if (path_is_under(sb->private_dirs[i], dir))
			return false;
	/* the caller's home, or above it, wherever it lies (/srv/u, /data/users/u) */
	for (size_t i = 0; i < sb->nhomes; i++)
		if (path_is_under(sb->homes[i], dir))
			return false;
	/* someone's home: a directory right under a hidden root (/home/alice); /root is one */
	const char *slash = strrchr(dir, '/');
	for (size_t i = 0; slash && slash != dir && i < sb->nhidden; i++) {
		size_t n = strlen(sb->hidden[i]);
		if ((size_t)(slash - dir) == n && strncmp(dir, sb->hidden[i], n) == 0 &&
		    strcmp(sb->hidden[i], "/root") != 0)
			return false;
	}
	return true;
}

static int expose_one(lb_sandbox *sb, const char *path)
{
	if (!lb_sandbox_path_hidden(sb, path))
		return 0;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	size_t n = strlen(dir);
	if (n >= 4 && strcmp(dir + n - 4, "/bin") == 0 && n > 4)
		dir[n - 4] = '\0';
	if (!lb_sandbox_path_hidden(sb, dir))
		return 0;
	/* ~/bin/python3 gave the whole home: the program alone is shown then */
	if (!lb_sandbox_dir_exposable(sb, dir))
		return lb_sandbox_add_bind(sb, path, path, false);
	return lb_sandbox_add_bind(sb, dir, NULL, false);
}

int lb_sandbox_expose_program(lb_sandbox *sb, const char *path)
{
	char abs[PATH_MAX];
	if (path[0] != '/')
		return -EINVAL;
	/* The path as named (keeps a venv's bin/python symlink and its pyvenv.cfg reachable). */
	snprintf(abs, sizeof abs, "%s", path);
	int r = expose_one(sb, abs);
	if (r < 0)
		return r;
	char real[PATH_MAX];
	if (!realpath(path, real))
		return -errno;
	return expose_one(sb, real);
}

void lb_sandbox_payload_ids(const lb_sandbox *sb, uid_t *uid, gid_t *gid)
{
	*uid = sb->sb_uid;
	*gid = sb->sb_gid;
}

int lb_sandbox_expose_python(lb_sandbox *sb, const char *executable, const char *prefix,
			     const char *base_prefix)
{
	const char *dirs[] = {prefix, base_prefix};
	for (size_t i = 0; i < 2; i++) {
		if (!dirs[i] || !dirs[i][0] || !lb_sandbox_path_hidden(sb, dirs[i]))
			continue;
		/* an installation that is a home, or holds one, is not shown: the run stops */
		if (!lb_sandbox_dir_exposable(sb, dirs[i]))
			return -EPERM;
		int r = lb_sandbox_add_bind(sb, dirs[i], NULL, false);
		if (r < 0)
			return r;
	}
	return lb_sandbox_expose_program(sb, executable);
}

int lb_sandbox_add_env(lb_sandbox *sb, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return -EINVAL;
	size_t klen = (size_t)(eq - kv);
	for (size_t i = 0; i < sb->nenv; i++) {
		if (strncmp(sb->env[i], kv, klen) == 0 && sb->env[i][klen] == '=') {
			char *d = strdup(kv);
			if (!d)
				return -ENOMEM;
			free(sb->env[i]);
			sb->env[i] = d;
			return 0;
		}
	}
	return strv_push(&sb->env, &sb->nenv, kv);
}

int lb_sandbox_add_device(lb_sandbox *sb, const char *path)
{
	struct stat st;
	if (strncmp(path, "/dev/", 5) != 0 || strstr(path, "..") || !path[5])
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENODEV;
	if (strv_contains(sb->devices, sb->ndevices, path + 5))
		return 0;
	return strv_push(&sb->devices, &sb->ndevices, path + 5);
}

int lb_sandbox_set_budget(lb_sandbox *sb, double seconds)
{
	if (!(seconds >= 0))
		return -EINVAL;
	sb->budget = seconds;
	return 0;
}

int lb_sandbox_set_disk_limit(lb_sandbox *sb, const char *path, uint64_t bytes)
{
	char *p = path ? strdup(path) : NULL;
	if (path && !p)
		return -ENOMEM;
	free(sb->disk_path);
	sb->disk_path = p;
	sb->disk_limit = bytes;
	return 0;
}

void lb_sandbox_require_disk_fs(lb_sandbox *sb, bool required)
{
	sb->disk_fs = required;
}

uint64_t lb_sandbox_inode_limit(uint64_t disk_limit, uint64_t inodes_free)
{
	/* At most a million: every file the run makes is labbox's to measure or bring back
	 * after it, whatever size the limit has. */
	uint64_t n = disk_limit / 4096;
	if (n < 10000)
		n = 10000;
	if (n > 1000000)
		n = 1000000;
	if (inodes_free && n > inodes_free / 4)
		n = inodes_free / 4 ? inodes_free / 4 : 1;
	return n;
}

int lb_sandbox_set_grace(lb_sandbox *sb, double seconds)
{
	if (!(seconds >= 0))
		return -EINVAL;
	sb->grace = seconds;
	return 0;
}

int lb_sandbox_set_network(lb_sandbox *sb, lb_network net)
{
	sb->net = net;
	return 0;
}

int lb_sandbox_set_memory(lb_sandbox *sb, uint64_t bytes)
{
	sb->memory = bytes;
	return 0;
}

int lb_sandbox_set_cpus(lb_sandbox *sb, double cpus)
{
	if (!(cpus >= 0))
		return -EINVAL;
	sb->cpus = cpus;
	return 0;
}

int lb_sandbox_set_cpuset(lb_sandbox *sb, const char *cpulist)
{
	if (!cpulist || strlen(cpulist) >= sizeof sb->cpuset ||
	    strspn(cpulist, "0123456789,-") != strlen(cpulist))
		return -EINVAL;
	snprintf(sb->cpuset, sizeof sb->cpuset, "%s", cpulist);
	return 0;
}

int lb_sandbox_set_pids(lb_sandbox *sb, long pids)
{
	if (pids < 0)
		return -EINVAL;
	sb->pids = pids;
	return 0;
}

int lb_sandbox_allow_degraded(lb_sandbox *sb, const char *what)
{
	if (strcmp(what, "memory") == 0)
		sb->degraded |= LB_DEGRADED_MEMORY;
	else if (strcmp(what, "pids") == 0)
		sb->degraded |= LB_DEGRADED_PIDS;
	else if (strcmp(what, "cpus") == 0)
		sb->degraded |= LB_DEGRADED_CPUS;
	else if (strcmp(what, "all") == 0)
		sb->degraded |= LB_DEGRADED_MEMORY | LB_DEGRADED_PIDS | LB_DEGRADED_CPUS |
				LB_DEGRADED_DISK;
	else if (strcmp(what, "disk") == 0)
		sb->degraded |= LB_DEGRADED_DISK;
	else
		return -EINVAL;
	return 0;
}

int lb_sandbox_set_noexec(lb_sandbox *sb, bool on)
{
	sb->noexec = on;
	return 0;
}

int lb_sandbox_set_exec_guard(lb_sandbox *sb, lb_exec_guard g, bool optional)
{
	if (g != LB_EXEC_ANY && g != LB_EXEC_GATED_PYTHON && g != LB_EXEC_LISTED)
		return -EINVAL;
	sb->exec_guard = g;
	sb->exec_guard_optional = optional;
	return 0;
}

int lb_sandbox_allow_exec(lb_sandbox *sb, const char *path, bool dash_c)
{
	if (path[0] != '/' || strlen(path) >= sizeof sb->exec_allowed[0].path)
		return -EINVAL;
	if (sb->nexec_allowed == LB_SB_MAX_EXEC_ALLOWED)
		return -E2BIG;
	snprintf(sb->exec_allowed[sb->nexec_allowed].path, sizeof sb->exec_allowed[0].path, "%s",
		 path);
	sb->exec_allowed[sb->nexec_allowed++].dash_c = dash_c;
	return 0;
}

int lb_sandbox_set_output(lb_sandbox *sb, bool merged, lb_output_fn fn, void *ctx)
{
	sb->merged = merged;
	sb->out_fn = fn;
	sb->out_ctx = ctx;
	return 0;
}

int lb_sandbox_apply_limits(lb_sandbox *sb, const lb_sandbox_limits *lim)
{
	if (!lim)
		return 0;
	int r = 0;
	if (lim->memory)
		r = lb_sandbox_set_memory(sb, lim->memory);
	if (r == 0 && lim->pids)
		r = lb_sandbox_set_pids(sb, lim->pids);
	if (r == 0 && lim->cpus > 0)
		r = lb_sandbox_set_cpus(sb, lim->cpus);
	/* The run's list names what other layers accept less of too (the gate, isolation on a
	 * remote host): only the sandbox's own words apply here. */
	for (size_t i = 0; r == 0 && i < lim->ndegraded; i++) {
		int e = lb_sandbox_allow_degraded(sb, lim->degraded[i]);
		if (e < 0 && e != -EINVAL)
			r = e;
	}
	if (r == 0 && lim->budget_s > 0 && (sb->budget <= 0 || lim->budget_s < sb->budget))
		r = lb_sandbox_set_budget(sb, lim->budget_s);
	return r;
}

int lb_sandbox_set_cgroup_accounting(lb_sandbox *sb, bool on)
{
	sb->cgroup_accounting = on;
	return 0;
}

int lb_sandbox_set_stdin(lb_sandbox *sb, int fd)
{
	sb->stdin_fd = fd;
	return 0;
}

int lb_sandbox_set_tmpfs_size(lb_sandbox *sb, uint64_t bytes)
{
	if (bytes == 0)
		return -EINVAL;
	sb->tmpfs_size = bytes;
	return 0;
}

int lb_sandbox_exit_status(const lb_sandbox_result *res)
{
	switch (res->outcome) {
	case LB_SB_EXITED:
		return res->exit_code;
	case LB_SB_SIGNALED:
		return 128 + res->term_signal;
	case LB_SB_TIMEOUT:
		return 124;
	case LB_SB_DISK_LIMIT:
		return 1;
	case LB_SB_INTERRUPTED:
		return 128 + (res->interrupt_signal ? res->interrupt_signal : 2);
	case LB_SB_SETUP_FAILED:
		if (strcmp(res->setup_step, "exec") == 0)
			return res->setup_errno == ENOENT ? 127 : 126;
		return 125;
	}
	return 125;
}

const char *lb_sandbox_env_value(const lb_sandbox *sb, const char *name)
{
	size_t klen = strlen(name);
	for (size_t i = 0; i < sb->nenv; i++)
		if (strncmp(sb->env[i], name, klen) == 0 && sb->env[i][klen] == '=')
			return sb->env[i] + klen + 1;
	return NULL;
}

lb_network lb_sandbox_network(const lb_sandbox *sb)
{
	return sb->net;
}

size_t lb_sandbox_writable_paths(const lb_sandbox *sb, const char **out, size_t max)
{
	static const char *const private_ones[] = {"/tmp", "/var/tmp", "/dev/shm"};
	size_t n = 0;
	if (sb->workdir && n < max)
		out[n++] = sb->workdir;
	for (size_t i = 0; i < sizeof private_ones / sizeof *private_ones && n < max; i++)
		out[n++] = private_ones[i];
	for (size_t i = 0; i < sb->nbinds && n < max; i++)
		if (sb->binds[i].writable)
			out[n++] = sb->binds[i].dst;
	for (size_t i = 0; i < sb->ntmpfs && n < max; i++)
		out[n++] = sb->tmpfs[i].path;
	return n;
}
