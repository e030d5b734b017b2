/* env: Python interpreters and environments: finding them (PATH, /usr/bin, pyenv, venvs in and
 * beside the experiment, conda and mamba), asking each what it is, what it can import and what
 * it has installed (the freeze), with caches; and choosing one for a run (--env).
 *
 * An interpreter the experiment directory chose (named by its labbox.yaml or environment.yml,
 * or living inside it, such as its .venv) is the experiment's code: it only ever runs inside the
 * sandbox, never on the host. */
#ifndef LABBOX_ENV_H
#define LABBOX_ENV_H

#include "labbox/sandbox.h"

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* Interpreter probing: ask a Python interpreter (outside the sandbox, isolated mode -I so the
 * caller's environment and user site are ignored) where it lives and what it is. */
typedef struct lb_python_info {
	char executable[4096]; /* sys.executable: the path to exec (a venv keeps its bin/python) */
	char prefix[4096];     /* sys.prefix */
	char base_prefix[4096];
	char version[64];      /* "3.11.2" */
	char implementation[32];
	/* Where sysconfig puts the standard library (stdlib and platstdlib, also with the base
	 * prefix's variables), as the runtime gate asks at its start: known when at most two
	 * (n_stdlib), so the gate need not import sysconfig in every run. */
	char stdlib[2][4096];
	unsigned n_stdlib;
	/* What that answer depends on (base prefixes, platlibdir, version, implementation, as
	 * the gate prints them): the gate trusts the paths only where its own is the same, so
	 * an environment that moves the library (PYTHONHOME, PYTHONPLATLIBDIR) or another
	 * interpreter started by the run asks sysconfig itself. */
	char stdlib_for[8448];
	/* Named by the experiment directory (labbox.yaml's python:), so it is the experiment's
	 * code: it only ever runs inside the sandbox, and what it says of itself exposes
	 * nothing of the host. named: the path it was named by, resolved; origin: the
	 * experiment directory it was resolved in. */
	bool confined;
	char named[4096];
	char origin[4096];
	/* The run's limits, which every sandbox running a confined interpreter takes (its
	 * probe, its freeze, the check's compile with it): lb_python_probe_confined's lim,
	 * copied (what degraded points to is the caller's while this lives). */
	lb_sandbox_limits limits;
	bool have_limits;
} lb_python_info;

/* -ENOENT when path is not found, -ENOEXEC when it is not a working Python; err explains. */
/* How long an interpreter's probe (and its package listing) may take, on the host or
 * confined: start-up that hangs (a shim on a lock, a stale network mount) is an error
 * naming the interpreter, not a labbox that never answers. */
#define LB_PYTHON_PROBE_SECONDS 60
int lb_python_probe(const char *path, lb_python_info *out, char *err, size_t errlen);
/* lb_python_probe with a cache under cache_dir (one file per interpreter path), so repeated
 * runs don't start the interpreter to learn what it is. An entry is used only while the
 * executable (followed through symlinks) and a pyvenv.cfg beside it or one level up keep
 * the stat (device, inode, size, mtime and ctime in ns) recorded before the probe: upgrading
 * the interpreter, re-pointing its symlink or editing the venv misses. Scripts (pyenv shims,
 * wrappers) pick their interpreter at every start and are always probed. hit says which. */
int lb_python_probe_cached(const char *path, const char *cache_dir, lb_python_info *out,
			   bool *hit, char *err, size_t errlen);
/* An interpreter the experiment directory named (labbox.yaml's python:): probed inside the
 * sandbox (no network, host read-only, homes hidden) with expdir visible read-only; never run
 * on the host, never cached. A relative path with a slash is relative to expdir. */
int lb_python_probe_confined(const char *path, const char *expdir,
			     const lb_sandbox_limits *lim, lb_python_info *out, char *err,
			     size_t errlen);
/* Make py runnable in sb: for an interpreter the user chose, the prefixes it reported; for a
 * confined one only what its named path shows (its directory, or the install prefix above a
 * bin/), and its experiment directory, read-only, when it lives there and origin_visible is
 * false. */
struct lb_sandbox;
int lb_python_expose(struct lb_sandbox *sb, const lb_python_info *py, bool origin_visible);
/* Runs `py -I -c SCRIPT [ARGS...]` in a sandbox of its own (no network, the host read-only, py
 * exposed as lb_python_expose does with origin hidden) under budget seconds, capturing at most
 * max bytes of its output: 0 with *res filled, or a negative errno. args: NULL-terminated, at
 * most 32, or NULL; each under the kernel's 128 KiB bound on one argument (-E2BIG). */
struct lb_sandbox_result;
struct lb_buf;
int lb_python_sandbox_script(const lb_python_info *py, const char *script,
			     const char *const *args, size_t max, double budget, struct lb_buf *out,
			     struct lb_sandbox_result *res);
/* After staging: a confined interpreter that lives in the experiment directory runs from the
 * staged copy (paths under origin are moved to stage_dir), never from the original. */
void lb_python_restage(lb_python_info *py, const char *stage_dir);
/* The freeze of py: cached for an interpreter the user chose, run in the sandbox (uncached)
 * for a confined one. */
int lb_python_freeze_of(const lb_python_info *py, const char *cache_dir, char **out, bool *hit);
/* The Python source of the freeze below (it prints the list), for a backend that runs it
 * elsewhere (inside a container image). */
const char *lb_python_freeze_source(void);
/* `pip freeze`-style "name==version" lines of every installed distribution, sorted, read with
 * importlib.metadata so it works where pip itself is not installed. */
int lb_python_freeze(const char *executable, char **out);

/* lb_python_freeze with a cache, so repeated runs with the same interpreter don't pay for it.
 * The cache is per interpreter (one file under cache_dir, named by a hash of executable) and
 * keyed by the executable's stat and the stat (device, inode, size, mtime and ctime in ns) of
 * every directory the interpreter searches for distributions: site.getsitepackages() and
 * sys.path, as seen with -I, recorded BEFORE the listing is made. Installing, upgrading or
 * removing a distribution (pip, conda, apt) adds or removes a *.dist-info / *.egg-info entry in
 * one of them, which changes that directory's mtime; a search directory that did not exist
 * (a first `pip install` creates /usr/local/lib/python3.X/dist-packages) is recorded as absent
 * and invalidates the entry when it appears. Not seen: a version edited in place inside an
 * existing metadata directory, which no installer does.
 * A hit costs a few stat() calls and no interpreter start. On a miss one interpreter run
 * prints the stats and the list, and the entry is written through a private temporary file
 * and rename(), so a reader never sees half an entry, and concurrent writers leave one whole
 * entry. An entry is used only when it parses, names this executable and its list matches its
 * sha256, so a corrupted or truncated file is a miss, never wrong output.
 * cache_dir is created (0700) when missing; it is not used when it is not a directory owned by
 * this user and closed to group and others (another user could plant a list), nor when
 * cache_dir is NULL: then this is lb_python_freeze with *hit false. Cache failures are never
 * errors. Returns what lb_python_freeze returns; *out as it gives it; *hit whether the cache
 * answered. */
int lb_python_freeze_cached(const char *executable, const char *cache_dir, char **out, bool *hit);

/* Environments --------------------------------------------------------------------------- */

typedef enum lb_env_kind {
	LB_ENV_PATH = 0, /* python3 on PATH */
	LB_ENV_SYSTEM,   /* /usr/bin/python3 */
	LB_ENV_PYENV,    /* a version under $PYENV_ROOT (default ~/.pyenv)/versions */
	LB_ENV_VENV,     /* a virtual environment (pyvenv.cfg) */
	LB_ENV_CONDA,    /* a conda or mamba environment */
} lb_env_kind;

/* "path", "system", "pyenv", "venv", "conda". */
const char *lb_env_kind_name(lb_env_kind k);

typedef struct lb_env {
	char name[256];
	char path[4096];   /* the environment's directory; the interpreter for path and system */
	char python[4096]; /* the interpreter labbox runs */
	lb_env_kind kind;
	const char *found_by; /* how discovery found it ("PATH", "environments.txt", ...) */
	/* Lives in the experiment directory or was named by it (labbox.yaml env:, environment.yml
	 * prefix:): the experiment's code, probed and checked only inside the sandbox. */
	bool confined;
	bool project;     /* the project's own (labbox.yaml env:, its .venv, environment.yml) */
	int project_rank; /* which comes first: 3 labbox.yaml env:, 2 its .venv, 1 environment.yml */
	bool usable;      /* the probe answered; info is filled in */
	char error[512];  /* why not usable */
	lb_python_info info;
	/* lb_env_check_imports: */
	bool checked;        /* every asked import has an answer */
	bool imports_cached; /* every answer came from the cache */
	char **missing;      /* imports that failed, with why[] beside them */
	char **why;
	size_t nmissing;
	char check_error[512]; /* the check itself failed (timed out, no sandbox) */
} lb_env;

typedef struct lb_env_list {
	lb_env *v;
	size_t n, cap;
	/* What the experiment directory named that is not here (environment.yml's name:). */
	char note[512];
	/* The experiment's real path ("" for none): an environment --env names inside it is
	 * the experiment's, probed in the sandbox. */
	char expdir[4096];
} lb_env_list;

typedef struct lb_env_discover_opts {
	const char *expdir;    /* the experiment, or NULL: its venvs, labbox.yaml and
				* environment.yml are looked at */
	const char *yaml_env;  /* labbox.yaml's env: (a name, or a path relative to expdir) */
	const char *cache_dir; /* the probe cache (lb_python_probe_cached); NULL: none */
} lb_env_discover_opts;

/* Every Python environment found, in this order: python3 on PATH, /usr/bin/python3, pyenv
 * versions, venvs in the experiment (.venv, venv, env) and beside it, the one labbox.yaml's
 * env: names, conda and mamba environments (`conda env list --json` when conda or mamba is on
 * PATH; else ~/.conda/environments.txt and the envs/ folders of the usual installs, of
 * $CONDA_PREFIX and of $MAMBA_ROOT_PREFIX). The same interpreter path is listed once. Each is
 * probed (confined ones in the sandbox). -EINVAL with out->note set when labbox.yaml's env:
 * names nothing found; -ENOMEM. */
int lb_env_discover(const lb_env_discover_opts *o, lb_env_list *out);
void lb_env_list_free(lb_env_list *l);

/* Whether name is a module name an import can be checked for (dotted identifiers). */
bool lb_env_module_valid(const char *name);

/* Ask every usable environment of l whether it can import each of mods (real imports, inside
 * the sandbox, timeout_s at most per environment, up to jobs environments at once; 0: one per
 * CPU). Answers are cached under cache_dir per interpreter, keyed by the executable's stat
 * and the stat of every directory on its search path (as the freeze cache is); confined
 * environments are never cached. Fills each env's checked, missing, why, check_error. */
int lb_env_check_imports(lb_env_list *l, char *const *mods, size_t n, const char *cache_dir,
			 double timeout_s, unsigned jobs);

typedef struct lb_env_choice {
	long index;        /* into the list; -1 when none fits */
	char reason[1024]; /* why this one, or why none */
	bool imports_checked; /* the candidates were asked for the imports */
} lb_env_choice;

/* Choose an environment for a run. how: "auto" (the project's own environment when there is
 * one, else the first usable one that imports every one of imports), a name (of a discovered
 * environment) or a path (an environment directory or an interpreter; one not discovered is
 * added to l, probed as the user's own). Returns 0 with out->index >= 0; -ENOENT when how
 * names nothing here, -ESRCH when auto found none that fits (out->reason names the missing
 * imports and the environments checked); -ENOMEM. */
int lb_env_select(lb_env_list *l, const char *how, char *const *imports, size_t nimports,
		  const char *cache_dir, lb_env_choice *out);

/* One line per environment of l saying what it lacked (or why it is not usable), given to fn:
 * the whole of a refusal's detail, which lb_env_choice.reason may have to cut. */
void lb_env_each_lack(const lb_env_list *l, void (*fn)(void *ctx, const char *line), void *ctx);

/* {name, path, python, version, kind, found_by, confined, project, usable, error?,
 *  lacks?: [..] (after an import check), check_error?} */
struct json_object *lb_env_json(const lb_env *e);
/* result.json's environment block: {asked, chosen: lb_env_json, why, imports: [..],
 * candidates: [{name, path, kind, usable, lacks: [..]|null}]} */
struct json_object *lb_env_choice_json(const lb_env_list *l, const lb_env_choice *c,
				       const char *how, char *const *imports, size_t nimports);

/* environment.yml: its top-level name: and prefix: (either may come back empty). -EINVAL
 * with err set when the text is not a YAML mapping. */
int lb_env_parse_environment_yml(const char *text, size_t len, char name[256],
				 char prefix[4096], char *err, size_t errlen);

#endif
