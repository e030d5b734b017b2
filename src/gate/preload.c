/* gate: the experiment's own code that runs before the gate: its interpreter, its .pth files. */
#include "labbox/gate.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRELOAD_MAX 32
#define PTH_READ (64u << 10)

/* site.addpackage executes the lines that start with "import" and a blank or a tab. */
static bool runs_code(int dirfd, const char *name)
{
	LB_AUTOCLOSE int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	char buf[PTH_READ + 1];
	ssize_t n = pread(fd, buf, PTH_READ, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, "import ", 7) == 0 || strncmp(l, "import\t", 7) == 0)
			return true;
	return false;
}

static void scan_site_dir(const char *dir, const char *rel, json_object *out)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && json_object_array_length(out) < PRELOAD_MAX) {
		size_t n = strlen(e->d_name);
		if (n > 4 && strcmp(e->d_name + n - 4, ".pth") == 0 && runs_code(dirfd(d), e->d_name)) {
			char p[PATH_MAX];
			if (snprintf(p, sizeof p, "%s/%s", rel, e->d_name) < (int)sizeof p)
				json_object_array_add(out, json_object_new_string(p));
		}
	}
	closedir(d);
}

static const char *root_of(const char *p, const char *const *exp_dirs, size_t ndirs)
{
	for (size_t i = 0; p && *p && i < ndirs; i++)
		if (exp_dirs[i] && *exp_dirs[i] && lb_path_under(p, exp_dirs[i]))
			return exp_dirs[i];
	return NULL;
}

static const char *rel_to(const char *p, const char *root)
{
	size_t skip = strlen(root);
	while (skip > 1 && root[skip - 1] == '/')
		skip--;
	return p[skip] == '/' ? p + skip + 1 : p + skip;
}

json_object *lb_gate_preloaders(const char *executable, const char *prefix,
				const char *const *exp_dirs, size_t ndirs)
{
	json_object *out = json_object_new_array();
	if (!out)
		return NULL;
	/* An interpreter binary of the experiment's own (not a venv's link to the system's)
	 * need not run sitecustomize at all. */
	char real[PATH_MAX];
	const char *eroot = executable && realpath(executable, real)
				    ? root_of(real, exp_dirs, ndirs) : NULL;
	if (eroot)
		json_object_array_add(out, json_object_new_string(rel_to(real, eroot)));
	const char *root = root_of(prefix, exp_dirs, ndirs);
	if (!root)
		return out;
	static const char *const libs[] = {"lib", "lib64"};
	static const char *const sites[] = {"site-packages", "dist-packages"};
	for (size_t i = 0; i < 2; i++) {
		char lib[PATH_MAX], a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
		if (snprintf(lib, sizeof lib, "%s/%s", prefix, libs[i]) >= (int)sizeof lib)
			continue;
		/* A venv's lib64 is a link to its lib: the same files, listed once. */
		if (i == 1 && realpath(lib, a) && snprintf(b, sizeof b, "%s/lib", prefix) < (int)sizeof b &&
		    realpath(b, c) && strcmp(a, c) == 0)
			continue;
		DIR *d = opendir(lib);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (strncmp(e->d_name, "python", 6) != 0)
				continue;
			for (size_t j = 0; j < 2; j++) {
				char site[PATH_MAX];
				if (snprintf(site, sizeof site, "%s/%s/%s", lib, e->d_name, sites[j]) >=
				    (int)sizeof site)
					continue;
				scan_site_dir(site, rel_to(site, root), out);
			}
		}
		closedir(d);
	}
	return out;
}

void lb_gate_note_preload(json_object *gate, json_object *files)
{
	size_t n = files ? json_object_array_length(files) : 0;
	json_object_object_add(gate, "before_gate", files ? json_object_get(files)
							  : json_object_new_array());
	if (n == 0)
		return;
	json_object_object_add(gate, "enforced", json_object_new_boolean(false));
	char note[512];
	snprintf(note, sizeof note,
		 "%zu file%s of the experiment's own (an interpreter, .pth files of its environment) "
		 "ran before the gate was installed (%s%s): it may have kept the gate out, so what "
		 "the gate recorded and refused does not bind the run", n, n == 1 ? "" : "s",
		 json_object_get_string(json_object_array_get_idx(files, 0)), n > 1 ? ", ..." : "");
	json_object_object_add(gate, "note", json_object_new_string(note));
}
