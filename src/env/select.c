/* Choosing the environment of a run (--env auto|NAME|PATH), and saying why. */
#include "labbox/env.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>

/* snprintf whose cut is intended: reasons and names are kept to their buffers. */
static void say(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

/* how as a path: an environment directory (its bin/python3) or an interpreter, made absolute
 * against the working directory (it was typed on the command line). */
static int resolve_path(const char *how, char dir[PATH_MAX], char py[PATH_MAX])
{
	char abs[PATH_MAX];
	if (!realpath(how, abs))
		return -ENOENT;
	struct stat st;
	if (stat(abs, &st) < 0)
		return -ENOENT;
	/* Keep the name as given (a venv's bin/python is a symlink that makes it the venv):
	 * only its directory part is resolved. */
	if (S_ISDIR(st.st_mode)) {
		say(dir, PATH_MAX, "%s", abs);
		for (int i = 0; i < 2; i++) {
			if (snprintf(py, PATH_MAX, "%s/%s", abs, i ? "bin/python" : "bin/python3") <
				    PATH_MAX && access(py, X_OK) == 0)
				return 0;
		}
		return -ENOEXEC;
	}
	char tmp[PATH_MAX];
	say(tmp, sizeof tmp, "%s", how);
	char *slash = strrchr(tmp, '/');
	const char *base = slash ? slash + 1 : tmp;
	if (slash)
		*slash = '\0';
	char d[PATH_MAX];
	if (!realpath(slash ? (tmp[0] ? tmp : "/") : ".", d))
		return -ENOENT;
	if (snprintf(py, PATH_MAX, "%s/%s", strcmp(d, "/") ? d : "", base) >= PATH_MAX)
		return -ENAMETOOLONG;
	say(dir, PATH_MAX, "%s", py);
	/* bin/python of an environment: the environment is the directory above bin/. */
	char *s = strrchr(dir, '/');
	if (s && s - dir >= 4 && strncmp(s - 4, "/bin", 4) == 0)
		s[-4] = '\0';
	return access(py, X_OK) == 0 ? 0 : -EACCES;
}

static int add_user_env(lb_env_list *l, const char *dir, const char *py, long *index)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].python, py) == 0 || strcmp(l->v[i].path, dir) == 0) {
			*index = (long)i;
			return 0;
		}
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 8;
		lb_env *nv = realloc(l->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	lb_env *e = &l->v[l->n];
	memset(e, 0, sizeof *e);
	char cfg[PATH_MAX + 16], meta[PATH_MAX + 16];
	say(cfg, sizeof cfg, "%s/pyvenv.cfg", dir);
	say(meta, sizeof meta, "%s/conda-meta", dir);
	e->kind = access(cfg, F_OK) == 0 ? LB_ENV_VENV : access(meta, F_OK) == 0 ? LB_ENV_CONDA
										 : LB_ENV_PATH;
	const char *b = strrchr(dir, '/');
	say(e->name, sizeof e->name, "%s", b && b[1] ? b + 1 : dir);
	say(e->path, sizeof e->path, "%s", dir);
	say(e->python, sizeof e->python, "%s", py);
	e->found_by = "--env";
	/* One inside the experiment (its bin/ there, whatever bin/python links to) is the
	 * experiment's: its pyvenv.cfg and .pth files would run at a probe on the host. */
	e->confined = l->expdir[0] && lb_program_inside(py, l->expdir);
	e->usable = (e->confined ? lb_python_probe_confined(py, l->expdir, NULL, &e->info, e->error,
							    sizeof e->error)
				 : lb_python_probe(py, &e->info, e->error, sizeof e->error)) == 0;
	*index = (long)l->n++;
	return 0;
}

/* "a, b, c" of the environments asked (those probed usable). */
static void names_checked(const lb_env_list *l, char *out, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < l->n && len < n; i++) {
		const lb_env *e = &l->v[i];
		int w = snprintf(out + len, n - len, "%s%s (%s)", len ? ", " : "", e->name, e->path);
		if (w > 0)
			len += (size_t)w;
	}
}

static void lacks_text(const lb_env *e, char *out, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	if (!e->usable) {
		say(out, n, "not usable: %s", e->error);
		return;
	}
	for (size_t i = 0; i < e->nmissing && len < n; i++) {
		int w = snprintf(out + len, n - len, "%s%s", i ? ", " : "", e->missing[i]);
		if (w > 0)
			len += (size_t)w;
	}
}

int lb_env_select(lb_env_list *l, const char *how, char *const *imports, size_t nimports,
		  const char *cache_dir, lb_env_choice *out)
{
	memset(out, 0, sizeof *out);
	out->index = -1;
	if (strcmp(how, "auto") != 0) {
		if (!strchr(how, '/')) {
			for (size_t i = 0; i < l->n; i++)
				if (strcmp(l->v[i].name, how) == 0) {
					out->index = (long)i;
					say(out->reason, sizeof out->reason,
						 "named on the command line (--env %s)", how);
					return 0;
				}
			char names[768];
			names_checked(l, names, sizeof names);
			say(out->reason, sizeof out->reason, "--env '%s' is no environment found "
				 "here (found: %s)", how, names[0] ? names : "none");
			return -ENOENT;
		}
		char dir[PATH_MAX], py[PATH_MAX];
		int r = resolve_path(how, dir, py);
		if (r < 0) {
			say(out->reason, sizeof out->reason, "--env '%s' is %s", how,
				 r == -ENOEXEC ? "a directory without bin/python3 or bin/python"
					       : r == -EACCES ? "not an executable interpreter"
							      : "not found");
			return -ENOENT;
		}
		if ((r = add_user_env(l, dir, py, &out->index)) < 0)
			return r;
		say(out->reason, sizeof out->reason, "named on the command line (--env %s)", how);
		return 0;
	}
	/* labbox.yaml's env: before the experiment's .venv before environment.yml's. */
	long best = -1;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].project && (best < 0 || l->v[i].project_rank > l->v[best].project_rank))
			best = (long)i;
	if (best >= 0) {
		lb_env *e = &l->v[best];
		if (!e->usable) {
			say(out->reason, sizeof out->reason, "the project's own environment %s "
			    "(%s, %s) does not work: %s", e->name, e->path, e->found_by, e->error);
			return -ESRCH;
		}
		out->index = best;
		say(out->reason, sizeof out->reason, "the project's own environment (%s)",
		    e->found_by);
		return 0;
	}
	out->imports_checked = true;
	int r = lb_env_check_imports(l, imports, nimports, cache_dir, 120, 0);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l->n; i++) {
		lb_env *e = &l->v[i];
		if (e->usable && e->checked && e->nmissing == 0) {
			out->index = (long)i;
			if (nimports)
				say(out->reason, sizeof out->reason, "the first environment that "
					 "imports everything the experiment imports (%zu module%s)",
					 nimports, nimports == 1 ? "" : "s");
			else
				say(out->reason, sizeof out->reason, "the first environment that "
					 "works (the experiment imports nothing to check)");
			return 0;
		}
	}
	size_t len = (size_t)snprintf(out->reason, sizeof out->reason,
				      "no environment imports everything the experiment imports;");
	for (size_t i = 0; i < l->n && len < sizeof out->reason; i++) {
		char lacks[512];
		if (!l->v[i].usable)
			continue;
		lacks_text(&l->v[i], lacks, sizeof lacks);
		int w = snprintf(out->reason + len, sizeof out->reason - len, " %s (%s) lacks %s;",
				 l->v[i].name, l->v[i].path, lacks);
		if (w > 0)
			len += (size_t)w;
	}
	/* Those that did not start are named only: why is in each one's own line. */
	for (size_t i = 0, k = 0; i < l->n && len < sizeof out->reason; i++) {
		if (l->v[i].usable)
			continue;
		int w = snprintf(out->reason + len, sizeof out->reason - len, "%s%s", k++ ? ", " :
				 " not usable: ", l->v[i].name);
		if (w > 0)
			len += (size_t)w;
	}
	if (l->n == 0)
		say(out->reason, sizeof out->reason, "no Python environment found here");
	return -ESRCH;
}

void lb_env_each_lack(const lb_env_list *l, void (*fn)(void *ctx, const char *line), void *ctx)
{
	for (size_t i = 0; i < l->n; i++) {
		char lacks[1024], line[2048 + 8192];
		lacks_text(&l->v[i], lacks, sizeof lacks);
		say(line, sizeof line, "environment %s (%s) %s%s", l->v[i].name, l->v[i].path,
		    l->v[i].usable ? "lacks " : "", lacks[0] ? lacks : "nothing");
		fn(ctx, line);
	}
}

static json_object *strings(char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

json_object *lb_env_json(const lb_env *e)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(e->name));
	json_object_object_add(o, "path", json_object_new_string(e->path));
	json_object_object_add(o, "python", json_object_new_string(e->python));
	json_object_object_add(o, "version", e->usable ? json_object_new_string(e->info.version) : NULL);
	json_object_object_add(o, "kind", json_object_new_string(lb_env_kind_name(e->kind)));
	json_object_object_add(o, "found_by", json_object_new_string(e->found_by ? e->found_by : ""));
	json_object_object_add(o, "confined", json_object_new_boolean(e->confined));
	json_object_object_add(o, "project", json_object_new_boolean(e->project));
	json_object_object_add(o, "usable", json_object_new_boolean(e->usable));
	if (!e->usable)
		json_object_object_add(o, "error", json_object_new_string(e->error));
	return o;
}

/* {module: true} or {module: "why not"} of one environment's check. */
static json_object *lacks_json(const lb_env *e)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < e->nmissing; i++) {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "module", json_object_new_string(e->missing[i]));
		json_object_object_add(m, "error", json_object_new_string(e->why[i]));
		json_object_array_add(a, m);
	}
	return a;
}

json_object *lb_env_choice_json(const lb_env_list *l, const lb_env_choice *c, const char *how,
				char *const *imports, size_t nimports)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "asked", json_object_new_string(how));
	json_object_object_add(o, "chosen", c->index >= 0 ? lb_env_json(&l->v[c->index]) : NULL);
	json_object_object_add(o, "why", json_object_new_string(c->reason));
	json_object_object_add(o, "imports", strings(imports, nimports));
	json_object *cands = json_object_new_array();
	for (size_t i = 0; cands && i < l->n; i++) {
		const lb_env *e = &l->v[i];
		json_object *x = json_object_new_object();
		json_object_object_add(x, "name", json_object_new_string(e->name));
		json_object_object_add(x, "path", json_object_new_string(e->path));
		json_object_object_add(x, "kind", json_object_new_string(lb_env_kind_name(e->kind)));
		json_object_object_add(x, "usable", json_object_new_boolean(e->usable));
		bool asked = c->imports_checked && e->usable;
		json_object_object_add(x, "lacks", asked ? strings(e->missing, e->nmissing) : NULL);
		if (asked && e->nmissing)
			json_object_object_add(x, "lacks_why", lacks_json(e));
		if (e->check_error[0])
			json_object_object_add(x, "check_error", json_object_new_string(e->check_error));
		if (!e->usable)
			json_object_object_add(x, "error", json_object_new_string(e->error));
		json_object_array_add(cands, x);
	}
	json_object_object_add(o, "candidates", cands);
	if (l->note[0])
		json_object_object_add(o, "note", json_object_new_string(l->note));
	return o;
}
