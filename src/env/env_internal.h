/* What the files of the env module share: the stat records that key its caches. */
#ifndef LABBOX_ENV_INTERNAL_H
#define LABBOX_ENV_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct json_object;

typedef struct env_stat {
	int64_t v[5]; /* dev, ino, size, mtime_ns, ctime_ns */
} env_stat;

/* Python source that prints, before anything else, one "E\t<5 numbers>\t<path>" or
 * "N\t<path>" line per directory the interpreter searches for distributions and modules
 * (site.getsitepackages() and sys.path), then ENV_STAT_MARK. */
extern const char env_stat_src[];
#define ENV_STAT_MARK "--labbox-freeze--\n"

void env_stat_of(const struct stat *st, env_stat *fs);
struct json_object *env_stat_json(const env_stat *fs);
/* Whether the JSON array a holds exactly the stat of path now (NULL a: path must not exist). */
bool env_stat_matches(const char *path, struct json_object *a);
/* One line of env_stat_src's output as {"path", "stat": [..]|null}; NULL when it is not one. */
struct json_object *env_path_line(const char *line);
void env_sha(const char *text, char hex[65]);
/* Whether the JSON object o has key, a string equal to want (a cache entry's schema, path). */
bool env_json_str_is(struct json_object *o, const char *key, const char *want);
/* The cache directory opened, or -1 when there is none labbox may trust. */
int env_cache_dir(const char *cache_dir);

/* pyenv's shims (pyenv.c). The root the shim's text names, or -ENOENT when the text is not
 * a pyenv shim's. */
int env_pyenv_shim_root(const char *text, char *root, size_t n);
/* hex: a digest of everything the pyenv shim at shim (whose text is text) chooses its
 * interpreter by, in this process's working directory and environment envp; slot: one of
 * the shim and the directory its search starts from (one kept answer each, so the
 * projects a user runs from do not push out each other's). */
int env_pyenv_shim_key(const char *shim, const char *text, char *const *envp, char hex[65],
		       char slot[65]);

/* script run by py (-I -c) inside a sandbox of its own: no network, the host read-only with
 * the homes hidden, a private /tmp, the interpreter's directories exposed (only what its named
 * path shows for a confined one); budget seconds at most. out gets stdout (up to max) even
 * when it fails; -ENOEXEC when it did not exit 0 (timed_out says whether the budget ended
 * it); err explains. */
struct lb_buf;
struct lb_python_info;
int env_run_in_sandbox(const struct lb_python_info *py, const char *script, size_t max,
		       double budget, struct lb_buf *out, bool *timed_out, char *err,
		       size_t errlen);

#endif
