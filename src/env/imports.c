/* What each environment can import: real imports, inside the sandbox, several environments at
 * once, with answers cached per interpreter the way the freeze is. */
#include "labbox/env.h"
#include "labbox/util.h"
#include "env_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMPORTS_SCHEMA "labbox.imports-cache/1"
#define IMPORTS_OUTPUT_MAX ((size_t)1 << 20)
#define IMPORT_LINE "\x1elabbox-import\t"

bool lb_env_module_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 200)
		return false;
	bool start = true;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
		if (!alpha && !(c >= '0' && c <= '9' && !start))
			return false;
		start = false;
	}
	return !start;
}

/* The answers go to a copy of the original stdout; what a module prints while it is imported
 * goes to stderr, so it cannot be read as an answer. */
static const char import_src[] =
	"import importlib, os, sys\n"
	"_lb_out = os.fdopen(os.dup(1), 'w')\n"
	"os.dup2(2, 1)\n"
	"for _lb_m in _LB_MODS:\n"
	"    try:\n"
	"        importlib.import_module(_lb_m)\n"
	"        _lb_r = 'ok\\t'\n"
	"    except BaseException as e:\n"
	"        _lb_r = 'no\\t%s: %s' % (type(e).__name__, ' '.join(str(e).split())[:200])\n"
	"    _lb_out.write('\\x1elabbox-import\\t%s\\t%s\\n' % (_lb_m, _lb_r))\n"
	"    _lb_out.flush()\n";

/* The stat lines, then the imports of mods (valid module names: safe inside a literal). */
static char *import_script(char *const *mods, size_t n)
{
	lb_buf b = {0};
	lb_buf_puts(&b, env_stat_src);
	lb_buf_puts(&b, "_LB_MODS = [");
	for (size_t i = 0; i < n; i++) {
		lb_buf_puts(&b, i ? ", '" : "'");
		lb_buf_puts(&b, mods[i]);
		lb_buf_puts(&b, "'");
	}
	lb_buf_puts(&b, "]\n");
	lb_buf_puts(&b, import_src);
	return b.data;
}

static void json_putp_(json_object **o)
{
	json_object_put(*o);
}

/* One environment's answers: module -> "" (imports) or why not. */
typedef struct answers {
	json_object *mods; /* object */
	json_object *paths; /* the stat records of this run, NULL when it printed none */
	env_stat exe;
} answers;

/* The cache entry's answers when it is whole, for this executable, and nothing on its search
 * path changed; NULL otherwise. */
static json_object *cache_lookup(int dfd, const char *name, const char *exe)
{
	__attribute__((cleanup(json_putp_))) json_object *doc = NULL;
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	json_object *v, *paths, *mods;
	if (lb_read_file_at(dfd, name, 4 << 20, &data, &len) < 0 || len == 0)
		return NULL;
	doc = json_tokener_parse(data);
	if (!json_object_is_type(doc, json_type_object) ||
	    !env_json_str_is(doc, "schema", IMPORTS_SCHEMA) || !env_json_str_is(doc, "executable", exe) ||
	    !json_object_object_get_ex(doc, "exe", &v) || !v || !env_stat_matches(exe, v) ||
	    !json_object_object_get_ex(doc, "paths", &paths) ||
	    !json_object_is_type(paths, json_type_array) ||
	    !json_object_object_get_ex(doc, "imports", &mods) ||
	    !json_object_is_type(mods, json_type_object))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(paths); i++) {
		json_object *p = json_object_array_get_idx(paths, i), *path, *st;
		if (!json_object_object_get_ex(p, "path", &path) ||
		    !json_object_is_type(path, json_type_string) ||
		    !json_object_object_get_ex(p, "stat", &st) ||
		    !env_stat_matches(json_object_get_string(path), st))
			return NULL;
	}
	return json_object_get(mods);
}

/* Reads the script's output: the stat records (into a->paths) and the answers. */
static void parse_output(char *data, answers *a)
{
	char *mark = data ? strstr(data, ENV_STAT_MARK) : NULL;
	char *rest = data;
	if (mark && (mark == data || mark[-1] == '\n')) {
		*mark = '\0';
		a->paths = json_object_new_array();
		for (char *line = data, *next; a->paths && line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			json_object *p = env_path_line(line);
			if (!p) {
				/* A record that does not read back would make an entry never hit. */
				json_object_put(a->paths);
				a->paths = NULL;
				break;
			}
			json_object_array_add(a->paths, p);
		}
		rest = mark + strlen(ENV_STAT_MARK);
	}
	for (char *line = rest, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, IMPORT_LINE, strlen(IMPORT_LINE)) != 0)
			continue;
		char *m = line + strlen(IMPORT_LINE), *tab = strchr(m, '\t');
		if (!tab)
			continue;
		*tab = '\0';
		char *verdict = tab + 1;
		if (!lb_env_module_valid(m))
			continue;
		if (strncmp(verdict, "ok\t", 3) == 0)
			json_object_object_add(a->mods, m, json_object_new_string(""));
		else if (strncmp(verdict, "no\t", 3) == 0 && verdict[3])
			json_object_object_add(a->mods, m, json_object_new_string(verdict + 3));
	}
}

static int add_missing(lb_env *e, const char *mod, const char *why)
{
	char **nm = realloc(e->missing, (e->nmissing + 1) * sizeof *nm);
	if (!nm)
		return -ENOMEM;
	e->missing = nm;
	char **nw = realloc(e->why, (e->nmissing + 1) * sizeof *nw);
	if (!nw)
		return -ENOMEM;
	e->why = nw;
	e->missing[e->nmissing] = strdup(mod);
	e->why[e->nmissing] = strdup(why);
	if (!e->missing[e->nmissing] || !e->why[e->nmissing]) {
		free(e->missing[e->nmissing]);
		free(e->why[e->nmissing]);
		return -ENOMEM;
	}
	e->nmissing++;
	return 0;
}

/* A job: one environment whose answers are not all cached. */
typedef struct job {
	size_t env;
	char **ask; /* the modules to ask, pointers into the caller's list */
	size_t nask;
	json_object *cached; /* answers from the cache, NULL when none */
	pid_t pid;
	int fd;
	lb_buf out;
	env_stat exe; /* the executable's stat, taken before the check ran */
	bool have_exe;
} job;

/* In the child: run the check, write "0\n" or "1<why>\n" then the output to fd. */
static void child_check(const lb_env *e, const char *script, double timeout_s, int fd)
{
	lb_buf b = {0};
	char err[512] = "";
	bool timed_out = false;
	int r = env_run_in_sandbox(&e->info, script, IMPORTS_OUTPUT_MAX, timeout_s, &b, &timed_out,
				   err, sizeof err);
	/* An import that failed leaves the interpreter running on; a failure of the whole
	 * script (killed, out of time) is reported, with what it answered before. */
	dprintf(fd, "%s%s\n", r == 0 ? "0" : "1", r == 0 ? "" : err);
	if (b.data && write(fd, b.data, b.len) < 0)
		_exit(1);
	_exit(0);
}

static int start_job(lb_env_list *l, job *j, const char *script, double timeout_s)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[0]);
		child_check(&l->v[j->env], script, timeout_s, p[1]);
	}
	close(p[1]);
	j->pid = pid;
	j->fd = p[0];
	return 0;
}

/* Store answers: the cache entry of one interpreter, with this run's stat records. */
static void cache_store(int dfd, const char *name, const char *exe, const answers *a)
{
	__attribute__((cleanup(json_putp_))) json_object *entry = json_object_new_object();
	if (!entry || !a->paths)
		return;
	json_object_object_add(entry, "schema", json_object_new_string(IMPORTS_SCHEMA));
	json_object_object_add(entry, "executable", json_object_new_string(exe));
	json_object_object_add(entry, "exe", env_stat_json(&a->exe));
	json_object_object_add(entry, "paths", json_object_get(a->paths));
	json_object_object_add(entry, "imports", json_object_get(a->mods));
	const char *s = json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN);
	if (lb_replace_file_at(dfd, name, s, strlen(s)) == 0)
		lb_cache_bound_like(dfd, name, LB_CACHE_PER_INTERPRETER_MAX);
}

static void cache_name(const char *exe, char name[64])
{
	char hex[65];
	env_sha(exe, hex);
	snprintf(name, 64, "imports-%.32s.json", hex);
}

/* The job's answers folded into its environment (and its cache entry written). */
static int finish_job(lb_env_list *l, job *j, char *const *mods, size_t n, int dfd)
{
	lb_env *e = &l->v[j->env];
	answers a = {.mods = j->cached ? json_object_get(j->cached) : json_object_new_object()};
	if (!a.mods)
		return -ENOMEM;
	int r = 0;
	if (j->pid > 0) {
		char *data = j->out.data;
		char *nl = data ? strchr(data, '\n') : NULL;
		if (!nl || data[0] != '0')
			snprintf(e->check_error, sizeof e->check_error, "%.*s",
				 nl && nl > data ? (int)(nl - data - 1) : 0, nl && nl > data ? data + 1 : "");
		if (!nl && !e->check_error[0])
			snprintf(e->check_error, sizeof e->check_error, "the import check did not answer");
		a.exe = j->exe;
		if (nl)
			parse_output(nl + 1, &a);
		if (!e->check_error[0] && dfd >= 0 && !e->confined && j->have_exe) {
			char name[64];
			cache_name(e->info.executable, name);
			cache_store(dfd, name, e->info.executable, &a);
		}
	}
	e->checked = true;
	for (size_t i = 0; i < n && r == 0; i++) {
		json_object *v;
		if (json_object_object_get_ex(a.mods, mods[i], &v)) {
			const char *why = json_object_get_string(v);
			if (why && *why)
				r = add_missing(e, mods[i], why);
		} else {
			e->checked = false;
			r = add_missing(e, mods[i], e->check_error[0] ? e->check_error
								     : "no answer from the import check");
		}
	}
	json_object_put(a.mods);
	json_object_put(a.paths);
	return r;
}

static void jobs_free(job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(jobs[i].ask);
		json_object_put(jobs[i].cached);
		lb_buf_free(&jobs[i].out);
		if (jobs[i].fd >= 0)
			close(jobs[i].fd);
		if (jobs[i].pid > 0) {
			kill(jobs[i].pid, SIGKILL);
			waitpid(jobs[i].pid, NULL, 0);
		}
	}
	free(jobs);
}

/* What the cache answers for e; the modules it does not answer go into j->ask. */
static int plan_job(lb_env *e, job *j, char *const *mods, size_t n, int dfd)
{
	if (dfd >= 0 && !e->confined) {
		char name[64];
		cache_name(e->info.executable, name);
		j->cached = cache_lookup(dfd, name, e->info.executable);
		if (j->cached)
			lb_cache_entry_used(dfd, name);
	}
	j->ask = calloc(n ? n : 1, sizeof *j->ask);
	if (!j->ask)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!json_object_object_get_ex(j->cached, mods[i], NULL))
			j->ask[j->nask++] = mods[i];
	struct stat st;
	if (stat(e->info.executable, &st) == 0) {
		env_stat_of(&st, &j->exe);
		j->have_exe = true;
	}
	return 0;
}

/* Run the jobs that ask something, at most width at once; their output read as it comes. */
static int run_jobs(lb_env_list *l, job *jobs, size_t nj, double timeout_s, unsigned width)
{
	size_t next = 0, running = 0;
	int r = 0;
	struct pollfd *pf = calloc(nj ? nj : 1, sizeof *pf);
	size_t *who = calloc(nj ? nj : 1, sizeof *who);
	if (!pf || !who) {
		free(pf);
		free(who);
		return -ENOMEM;
	}
	while (r == 0) {
		while (running < width && next < nj) {
			job *j = &jobs[next++];
			if (!j->nask)
				continue;
			LB_AUTOFREE char *script = import_script(j->ask, j->nask);
			if (!script) {
				r = -ENOMEM;
				break;
			}
			if ((r = start_job(l, j, script, timeout_s)) < 0)
				break;
			running++;
		}
		if (r < 0 || running == 0)
			break;
		size_t np = 0;
		for (size_t i = 0; i < nj; i++)
			if (jobs[i].fd >= 0) {
				pf[np] = (struct pollfd){.fd = jobs[i].fd, .events = POLLIN};
				who[np++] = i;
			}
		if (poll(pf, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (size_t k = 0; k < np; k++) {
			if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			job *j = &jobs[who[k]];
			char buf[65536];
			ssize_t got = read(j->fd, buf, sizeof buf);
			if (got > 0 && j->out.len < IMPORTS_OUTPUT_MAX + 4096) {
				if (lb_buf_append(&j->out, buf, (size_t)got) < 0)
					r = -ENOMEM;
				continue;
			}
			if (got < 0 && errno == EINTR)
				continue;
			if (got > 0)
				continue;
			close(j->fd);
			j->fd = -1;
			while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
				;
			j->pid = -j->pid; /* done: finish_job reads it */
			running--;
		}
	}
	free(pf);
	free(who);
	return r;
}

int lb_env_check_imports(lb_env_list *l, char *const *mods, size_t n, const char *cache_dir,
			 double timeout_s, unsigned jobs_max)
{
	for (size_t i = 0; i < n; i++)
		if (!lb_env_module_valid(mods[i]))
			return -EINVAL;
	job *jobs = calloc(l->n ? l->n : 1, sizeof *jobs);
	if (!jobs)
		return -ENOMEM;
	LB_AUTOCLOSE int dfd = cache_dir ? env_cache_dir(cache_dir) : -1;
	int r = 0;
	size_t nj = 0;
	for (size_t i = 0; i < l->n && r == 0; i++) {
		lb_env *e = &l->v[i];
		for (size_t k = 0; k < e->nmissing; k++) {
			free(e->missing[k]);
			free(e->why[k]);
		}
		e->nmissing = 0;
		e->checked = false;
		e->check_error[0] = '\0';
		if (!e->usable)
			continue;
		jobs[nj] = (job){.env = i, .fd = -1};
		r = plan_job(e, &jobs[nj], mods, n, dfd);
		nj++;
	}
	if (jobs_max == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		jobs_max = c > 0 ? (unsigned)c : 1;
	}
	if (r == 0)
		r = run_jobs(l, jobs, nj, timeout_s > 0 ? timeout_s : 120, jobs_max);
	for (size_t i = 0; i < nj && r == 0; i++) {
		jobs[i].pid = jobs[i].pid < 0 ? -jobs[i].pid : 0;
		r = finish_job(l, &jobs[i], mods, n, dfd);
		l->v[jobs[i].env].imports_cached = jobs[i].nask == 0;
		jobs[i].pid = 0;
	}
	jobs_free(jobs, nj);
	return r;
}
