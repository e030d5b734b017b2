/* Finding Python environments: PATH, /usr/bin, pyenv, venvs in and beside the experiment,
 * conda and mamba. Nothing the experiment directory chose runs on the host. */
#include "labbox/config.h"
#include "labbox/env.h"
#include "labbox/util.h"
#include "env_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

const char *lb_env_kind_name(lb_env_kind k)
{
	static const char *const names[] = {"path", "system", "pyenv", "venv", "conda"};
	return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

void lb_env_list_free(lb_env_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		for (size_t j = 0; j < l->v[i].nmissing; j++) {
			free(l->v[i].missing[j]);
			free(l->v[i].why[j]);
		}
		free(l->v[i].missing);
		free(l->v[i].why);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

static bool is_exec_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The interpreter of an environment directory: bin/python3, else bin/python. */
static bool env_python_of(const char *dir, char out[4096])
{
	static const char *const names[] = {"bin/python3", "bin/python"};
	for (size_t i = 0; i < 2; i++) {
		/* A symlink is kept as named: a venv's bin/python3 is what makes it that venv. */
		struct stat st;
		if (snprintf(out, 4096, "%s/%s", dir, names[i]) < 4096 && lstat(out, &st) == 0)
			return true;
	}
	return false;
}

/* Appends an environment unless its interpreter is listed already. Returns the entry, or
 * NULL when it was a duplicate or memory ran out (*r says which). */
static lb_env *add_env(lb_env_list *l, lb_env_kind kind, const char *name, const char *path,
		       const char *python, const char *found_by, int *r)
{
	*r = 0;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].python, python) == 0)
			return NULL;
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 8;
		lb_env *nv = realloc(l->v, nc * sizeof *nv);
		if (!nv) {
			*r = -ENOMEM;
			return NULL;
		}
		l->v = nv;
		l->cap = nc;
	}
	lb_env *e = &l->v[l->n++];
	memset(e, 0, sizeof *e);
	e->kind = kind;
	snprintf(e->name, sizeof e->name, "%s", name);
	snprintf(e->path, sizeof e->path, "%s", path);
	snprintf(e->python, sizeof e->python, "%s", python);
	e->found_by = found_by;
	return e;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

/* An environment directory: of the kind where it was found (pyenv, conda), or for one found as
 * a venv (in the experiment, named by it) a conda env when it holds conda-meta/. */
static lb_env *add_env_dir(lb_env_list *l, const char *dir, const char *name, lb_env_kind dflt,
			   const char *found_by, int *r)
{
	char py[4096];
	*r = 0;
	if (!is_dir(dir) || !env_python_of(dir, py))
		return NULL;
	char meta[PATH_MAX];
	lb_env_kind k = dflt;
	if (dflt == LB_ENV_VENV && snprintf(meta, sizeof meta, "%s/conda-meta", dir) < (int)sizeof meta &&
	    is_dir(meta))
		k = LB_ENV_CONDA;
	return add_env(l, k, name ? name : base_name(dir), dir, py, found_by, r);
}

static int add_interp(lb_env_list *l, const char *name, lb_env_kind kind, const char *found_by)
{
	LB_AUTOFREE char *exe = NULL;
	int r = 0;
	if (lb_find_executable(name, &exe) == 0)
		add_env(l, kind, name, exe, exe, found_by, &r);
	return r;
}

/* Every subdirectory of dir that is an environment. */
static int add_envs_under(lb_env_list *l, const char *dir, lb_env_kind kind, const char *found_by)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int r = 0;
	struct dirent *de;
	/* Names sorted, so the order (and so what auto picks first) does not depend on the
	 * file system's. */
	char **names = NULL;
	size_t n = 0, cap = 0;
	while ((de = readdir(d)) && r == 0) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nv = realloc(names, nc * sizeof *nv);
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			names = nv;
			cap = nc;
		}
		if (!(names[n] = strdup(de->d_name)))
			r = -ENOMEM;
		else
			n++;
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(names[j], names[i]) < 0) {
				char *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	for (size_t i = 0; i < n && r == 0; i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", dir, names[i]) < (int)sizeof p)
			add_env_dir(l, p, names[i], kind, found_by, &r);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static int add_pyenv(lb_env_list *l)
{
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char dir[PATH_MAX];
	if (root && root[0] == '/')
		snprintf(dir, sizeof dir, "%s/versions", root);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof dir, "%s/.pyenv/versions", home);
	else
		return 0;
	return add_envs_under(l, dir, LB_ENV_PYENV, "pyenv");
}

/* conda (or mamba) env list --json: {"envs": [prefix, ...]}. Run on the host: it is the
 * user's own installed tool, found on PATH (whose relative entries are skipped). */
static int add_conda_listed(lb_env_list *l, const char *tool, bool *answered)
{
	LB_AUTOFREE char *exe = NULL;
	*answered = false;
	if (lb_find_executable(tool, &exe) < 0)
		return 0;
	char *argv[] = {exe, "env", "list", "--json", NULL};
	lb_buf b = {0};
	int st = 0, r = lb_capture(argv, 4 << 20, false, &b, &st);
	json_object *doc = r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && b.data
				   ? json_tokener_parse(b.data) : NULL;
	lb_buf_free(&b);
	json_object *envs = NULL;
	r = 0;
	if (json_object_object_get_ex(doc, "envs", &envs) &&
	    json_object_is_type(envs, json_type_array)) {
		*answered = true;
		for (size_t i = 0; i < json_object_array_length(envs) && r == 0; i++) {
			const char *p = json_object_get_string(json_object_array_get_idx(envs, i));
			if (!p || p[0] != '/')
				continue;
			/* The install's own root is its base environment. */
			char meta[PATH_MAX], envs_dir[PATH_MAX];
			snprintf(meta, sizeof meta, "%s/conda-meta", p);
			snprintf(envs_dir, sizeof envs_dir, "%s/envs", p);
			bool base = is_dir(envs_dir) && is_dir(meta);
			add_env_dir(l, p, base ? "base" : NULL, LB_ENV_CONDA, "conda env list", &r);
		}
	}
	json_object_put(doc);
	return r;
}

/* ~/.conda/environments.txt: one environment prefix a line, written by conda at each create. */
static int add_environments_txt(lb_env_list *l, const char *home)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/.conda/environments.txt", home);
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	if (lb_read_file_at(AT_FDCWD, p, 1 << 20, &data, &len) < 0 || !data)
		return 0;
	int r = 0;
	for (char *line = data, *next; line && *line && r == 0; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t n = strlen(line);
		while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '/'))
			line[--n] = '\0';
		if (line[0] == '/')
			add_env_dir(l, line, NULL, LB_ENV_CONDA, "environments.txt", &r);
	}
	return r;
}

/* An install root: its base environment, then its envs/. */
static int add_conda_root(lb_env_list *l, const char *root, const char *found_by)
{
	char p[PATH_MAX];
	int r = 0;
	snprintf(p, sizeof p, "%s/conda-meta", root);
	if (is_dir(p))
		add_env_dir(l, root, "base", LB_ENV_CONDA, found_by, &r);
	snprintf(p, sizeof p, "%s/envs", root);
	return r ? r : add_envs_under(l, p, LB_ENV_CONDA, found_by);
}

static int add_conda(lb_env_list *l)
{
	bool answered = false;
	int r = add_conda_listed(l, "conda", &answered);
	if (r == 0 && !answered)
		r = add_conda_listed(l, "mamba", &answered);
	if (r < 0 || answered)
		return r;
	const char *home = getenv("HOME");
	if (home && home[0] == '/') {
		static const char *const installs[] = {"miniconda3", "anaconda3", "miniforge3",
						       "mambaforge", "micromamba", ".conda"};
		r = add_environments_txt(l, home);
		for (size_t i = 0; r == 0 && i < sizeof installs / sizeof *installs; i++) {
			char root[PATH_MAX];
			snprintf(root, sizeof root, "%s/%s", home, installs[i]);
			r = add_conda_root(l, root, "conda install");
		}
	}
	static const char *const system_installs[] = {"/opt/conda", "/opt/miniconda3",
						      "/opt/anaconda3", "/opt/miniforge3"};
	for (size_t i = 0; r == 0 && i < sizeof system_installs / sizeof *system_installs; i++)
		r = add_conda_root(l, system_installs[i], "conda install");
	const char *cp = getenv("CONDA_PREFIX"), *mp = getenv("MAMBA_ROOT_PREFIX");
	if (r == 0 && cp && cp[0] == '/') {
		add_env_dir(l, cp, NULL, LB_ENV_CONDA, "CONDA_PREFIX", &r);
		if (r == 0)
			r = add_conda_root(l, cp, "CONDA_PREFIX");
	}
	if (r == 0 && mp && mp[0] == '/')
		r = add_conda_root(l, mp, "MAMBA_ROOT_PREFIX");
	return r;
}

/* environment.yml --------------------------------------------------------------------------- */

int lb_env_parse_environment_yml(const char *text, size_t len, char name[256], char prefix[4096],
				 char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_document_t doc;
	name[0] = prefix[0] = '\0';
	int dr = lb_yaml_depth_check(text, len, "environment.yml", err, errlen);
	if (dr < 0)
		return dr == -E2BIG ? -EINVAL : dr;
	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &doc)) {
		snprintf(err, errlen, "environment.yml: %s (line %zu)",
			 p.problem ? p.problem : "not YAML", p.problem_mark.line + 1);
		yaml_parser_delete(&p);
		return -EINVAL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	int r = 0;
	if (root && root->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
		     pr < root->data.mapping.pairs.top; pr++) {
			yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
			yaml_node_t *v = yaml_document_get_node(&doc, pr->value);
			if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE)
				continue;
			const char *ks = (const char *)k->data.scalar.value;
			const char *vs = (const char *)v->data.scalar.value;
			size_t vl = v->data.scalar.length;
			if (strcmp(ks, "name") == 0 && vl < 256 && !memchr(vs, '\0', vl))
				snprintf(name, 256, "%s", vs);
			else if (strcmp(ks, "prefix") == 0 && vl < 4096 && !memchr(vs, '\0', vl))
				snprintf(prefix, 4096, "%s", vs);
		}
	} else if (root) {
		snprintf(err, errlen, "environment.yml is not a mapping (name:, dependencies: ...)");
		r = -EINVAL;
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	return r;
}

/* The experiment's own ---------------------------------------------------------------------- */

static lb_env *find_by_name(lb_env_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	return NULL;
}

/* A path the experiment directory named (relative to it): an environment directory or an
 * interpreter. Confined whatever it is: the experiment chose it. */
static lb_env *add_named_path(lb_env_list *l, const char *expdir, const char *path,
			      const char *found_by, int *r)
{
	char full[PATH_MAX];
	*r = 0;
	if (path[0] == '/')
		snprintf(full, sizeof full, "%s", path);
	else if (snprintf(full, sizeof full, "%s/%s", expdir, path) >= (int)sizeof full)
		return NULL;
	lb_env *e = NULL;
	if (is_dir(full)) {
		char py[4096];
		if (!env_python_of(full, py))
			return NULL;
		/* Listed already (found beside the experiment, say): marked, not added again. */
		for (size_t i = 0; i < l->n; i++)
			if (strcmp(l->v[i].python, py) == 0)
				e = &l->v[i];
		if (!e)
			e = add_env_dir(l, full, NULL, LB_ENV_VENV, found_by, r);
	} else if (is_exec_file(full)) {
		for (size_t i = 0; i < l->n; i++)
			if (strcmp(l->v[i].python, full) == 0)
				e = &l->v[i];
		if (!e)
			e = add_env(l, LB_ENV_PATH, base_name(full), full, full, found_by, r);
	}
	if (e) {
		e->confined = true;
		e->project = true;
		e->found_by = found_by;
	}
	return e;
}

static int add_experiment_envs(lb_env_list *l, const lb_env_discover_opts *o)
{
	static const char *const names[] = {".venv", "venv", "env"};
	int r = 0;
	char parent[PATH_MAX];
	snprintf(parent, sizeof parent, "%s", o->expdir);
	char *slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = '\0';
	for (size_t i = 0; r == 0 && i < 3; i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", o->expdir, names[i]) >= (int)sizeof p)
			continue;
		lb_env *e = add_env_dir(l, p, names[i], LB_ENV_VENV, "in the experiment", &r);
		if (e) {
			e->confined = true;
			e->project = strcmp(names[i], ".venv") == 0;
			e->project_rank = e->project ? 2 : 0;
		}
	}
	/* Beside it is the same checkout as often as not (a repository of experiments, each in
	 * its folder): what came with the experiment is probed only inside the sandbox. */
	for (size_t i = 0; r == 0 && slash && i < 3; i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", parent, names[i]) >= (int)sizeof p)
			continue;
		lb_env *e = add_env_dir(l, p, names[i], LB_ENV_VENV, "beside the experiment", &r);
		if (e)
			e->confined = true;
	}
	return r;
}

/* labbox.yaml's env: and environment.yml, once everything else is listed (they may name a
 * conda environment by its name). */
static int mark_named(lb_env_list *l, const lb_env_discover_opts *o)
{
	int r = 0;
	if (o->yaml_env) {
		lb_env *e = strchr(o->yaml_env, '/')
				    ? add_named_path(l, o->expdir, o->yaml_env, "labbox.yaml env:", &r)
				    : find_by_name(l, o->yaml_env);
		if (r < 0)
			return r;
		if (!e) {
			snprintf(l->note, sizeof l->note, "labbox.yaml's env: '%.400s' is not an "
				 "environment found here", o->yaml_env);
			return -EINVAL;
		}
		e->project = true;
		e->project_rank = 3;
		if (e->found_by && strcmp(e->found_by, "labbox.yaml env:") != 0 && !e->confined)
			e->found_by = "labbox.yaml env: (by name)";
		return 0;
	}
	char p[PATH_MAX];
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	for (size_t i = 0; i < 2 && !data; i++) {
		snprintf(p, sizeof p, "%s/%s", o->expdir, i ? "environment.yaml" : "environment.yml");
		if (lb_read_file_at(AT_FDCWD, p, 1 << 20, &data, &len) < 0)
			data = NULL;
	}
	if (!data)
		return 0;
	char name[256], prefix[4096], err[256];
	if (lb_env_parse_environment_yml(data, len, name, prefix, err, sizeof err) < 0) {
		snprintf(l->note, sizeof l->note, "%s", err);
		return 0;
	}
	lb_env *e = prefix[0] ? add_named_path(l, o->expdir, prefix, "environment.yml prefix:", &r)
			      : NULL;
	if (r < 0)
		return r;
	if (!e && name[0])
		e = find_by_name(l, name);
	if (e) {
		e->project = true;
		if (e->project_rank < 1)
			e->project_rank = 1;
		if (!e->confined)
			e->found_by = "environment.yml name:";
	} else if (name[0] || prefix[0]) {
		snprintf(l->note, sizeof l->note, "environment.yml names '%.400s', which is not an "
			 "environment found here", prefix[0] ? prefix : name);
	}
	return 0;
}

static void probe_all(lb_env_list *l, const lb_env_discover_opts *o)
{
	for (size_t i = 0; i < l->n; i++) {
		lb_env *e = &l->v[i];
		bool hit = false;
		int r;
		if (o->expdir && lb_path_under(e->python, o->expdir))
			e->confined = true;
		if (e->confined)
			r = lb_python_probe_confined(e->python, o->expdir ? o->expdir : "/", NULL, &e->info,
						     e->error, sizeof e->error);
		else if (o->cache_dir)
			r = lb_python_probe_cached(e->python, o->cache_dir, &e->info, &hit, e->error,
						   sizeof e->error);
		else
			r = lb_python_probe(e->python, &e->info, e->error, sizeof e->error);
		e->usable = r == 0;
	}
}

int lb_env_discover(const lb_env_discover_opts *o, lb_env_list *out)
{
	memset(out, 0, sizeof *out);
	if (o->expdir && !realpath(o->expdir, out->expdir))
		out->expdir[0] = '\0';
	int r = add_interp(out, "python3", LB_ENV_PATH, "PATH");
	if (r == 0)
		r = add_interp(out, "/usr/bin/python3", LB_ENV_SYSTEM, "/usr/bin/python3");
	if (r == 0)
		r = add_pyenv(out);
	if (r == 0 && o->expdir)
		r = add_experiment_envs(out, o);
	if (r == 0)
		r = add_conda(out);
	if (r == 0 && o->expdir)
		r = mark_named(out, o);
	if (r == -ENOMEM) {
		lb_env_list_free(out);
		return r;
	}
	probe_all(out, o);
	return r;
}
