/* pyenv's shims: what decides the interpreter a shim starts, so its probe can be kept.
 *
 * A shim is a bash script that runs all of pyenv (here 250 processes, 0.3 s) to choose an
 * interpreter at every start, from the working directory and the environment. labbox runs
 * the interpreter the shim names (sys.executable), so a shim is started only for the probe;
 * keeping that answer needs everything pyenv's choice reads, which is what this file
 * gathers: the shim itself, pyenv's variables, the first .python-version above the working
 * directory (or the global version file), the installed versions and plugins, and PATH (the
 * "system" version is PATH's). A key that cannot be made means the probe is asked. */
#include "labbox/util.h"
#include "env_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The root a pyenv shim's text names (export PYENV_ROOT="..." and an exec of its
 * libexec/pyenv), or -ENOENT when the text is not a pyenv shim's. */
int env_pyenv_shim_root(const char *text, char *root, size_t n)
{
	static const char export_[] = "\nexport PYENV_ROOT=\"";
	if (strncmp(text, "#!", 2) != 0)
		return -ENOENT;
	const char *p = strstr(text, export_);
	if (!p)
		return -ENOENT;
	p += sizeof export_ - 1;
	const char *end = strchr(p, '"');
	if (!end || end == p || (size_t)(end - p) >= n || p[0] != '/' ||
	    memchr(p, '\n', (size_t)(end - p)) || memchr(p, '$', (size_t)(end - p)) ||
	    memchr(p, '`', (size_t)(end - p)) || memchr(p, '\\', (size_t)(end - p)))
		return -ENOENT;
	memcpy(root, p, (size_t)(end - p));
	root[end - p] = 0;
	/* pyenv's exec of the program named by the shim's own file name, and nothing after it
	 * that could choose otherwise. */
	char want[PATH_MAX + 64];
	snprintf(want, sizeof want, "\nexec \"%s/libexec/pyenv\" exec \"$program\" \"$@\"\n", root);
	const char *e = strstr(text, want);
	if (!e || e[strlen(want)] != 0)
		return -ENOENT;
	return 0;
}

static int add_stat(lb_buf *k, const char *what, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return lb_buf_printf(k, "%s\t-\t%s\n", what, path);
	env_stat fs;
	env_stat_of(&st, &fs);
	return lb_buf_printf(k, "%s\t%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\t%s\n",
		      what, fs.v[0], fs.v[1], fs.v[2], fs.v[3], fs.v[4], path);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The directory pyenv starts its search for .python-version from: PYENV_DIR, else $PWD as
 * bash keeps it (when it names the working directory), else the working directory. */
static int search_start(char *dir, size_t n)
{
	const char *d = getenv("PYENV_DIR");
	if (d && *d) {
		if (strlen(d) >= n)
			return -ENAMETOOLONG;
		strcpy(dir, d);
		return 0;
	}
	const char *pwd = getenv("PWD");
	struct stat a, b;
	if (pwd && pwd[0] == '/' && strlen(pwd) < n && stat(pwd, &a) == 0 && stat(".", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		strcpy(dir, pwd);
		return 0;
	}
	return getcwd(dir, n) ? 0 : -errno;
}

int env_pyenv_shim_key(const char *shim, const char *text, char *const *envp, char hex[65],
		       char slot[65])
{
	char root[PATH_MAX], dir[PATH_MAX], p[PATH_MAX + 32];
	int r = env_pyenv_shim_root(text, root, sizeof root);
	if (r < 0)
		return r;
	if ((r = search_start(dir, sizeof dir)) < 0)
		return r;
	lb_buf k = {0};
	if (lb_buf_printf(&k, "%s\n%s", shim, dir) < 0) {
		lb_buf_free(&k);
		return -ENOMEM;
	}
	lb_sha256_buf_hex(k.data, k.len, slot);
	k.len = 0;
	k.data[0] = 0;
	/* A key left short by a failed append could equal another's: any failure, no key. */
	int bad = add_stat(&k, "shim", shim) < 0;
	bad |= lb_buf_printf(&k, "text\t%s\n", text) < 0;
	/* pyenv's variables (PYENV_VERSION from `pyenv shell`, PYENV_DIR, hooks' paths) and
	 * PATH, sorted: the environment's order is no part of the choice. */
	size_t nv = 0;
	for (char *const *e = envp; *e; e++)
		nv++;
	const char **vars = calloc(nv + 1, sizeof *vars);
	if (!vars) {
		lb_buf_free(&k);
		return -ENOMEM;
	}
	size_t m = 0;
	for (char *const *e = envp; *e; e++)
		if (strncmp(*e, "PYENV_", 6) == 0 || strncmp(*e, "PATH=", 5) == 0)
			vars[m++] = *e;
	qsort(vars, m, sizeof *vars, cmp_str);
	for (size_t i = 0; i < m; i++)
		bad |= lb_buf_printf(&k, "env\t%s\n", vars[i]) < 0;
	free(vars);
	/* The first .python-version (a regular file) from the start upward, as pyenv's
	 * version-file walks: by the path's text, cutting one component at a time. */
	bool found = false;
	for (;;) {
		struct stat st;
		snprintf(p, sizeof p, "%s/.python-version", dir);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			bad |= add_stat(&k, "local", p) < 0;
			found = true;
			break;
		}
		char *slash = strrchr(dir, '/');
		if (!slash || !dir[0])
			break;
		*slash = 0;
	}
	if (!found) {
		static const char *const globals[] = {"version", "global", "default"};
		for (size_t i = 0; i < sizeof globals / sizeof *globals; i++) {
			snprintf(p, sizeof p, "%s/%s", root, globals[i]);
			bad |= add_stat(&k, "global", p) < 0;
		}
	}
	/* A version named by its prefix (3.12) is the newest installed; a plugin's hooks can
	 * choose too. */
	static const char *const dirs[] = {"versions", "plugins", "pyenv.d", "libexec/pyenv"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
		bad |= add_stat(&k, "root", p) < 0;
	}
	if (bad || !k.data) {
		lb_buf_free(&k);
		return -ENOMEM;
	}
	lb_sha256_buf_hex(k.data, k.len, hex);
	lb_buf_free(&k);
	return 0;
}
