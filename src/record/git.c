/* Which commit an experiment came from, when its directory is in a git repository. */
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool git_line(const char *dir, const char *a1, const char *a2, const char *a3, lb_buf *out)
{
	char *argv[] = {"git", "--no-pager", "-c", "safe.directory=*", "-C", (char *)dir, "-c",
			"core.fsmonitor=false", (char *)a1, (char *)a2, (char *)a3, NULL};
	int st = 0;
	out->len = 0;
	if (lb_capture(argv, 1 << 20, false, out, &st) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return false;
	while (out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == '\r'))
		out->data[--out->len] = '\0';
	return true;
}

struct json_object *lb_record_git_info(const char *dir)
{
	lb_buf b = {0};
	if (!git_line(dir, "rev-parse", "--verify", "HEAD", &b) || !b.data) {
		lb_buf_free(&b);
		return NULL;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "commit", json_object_new_string(b.data));
	if (git_line(dir, "rev-parse", "--abbrev-ref", "HEAD", &b) && b.data)
		json_object_object_add(o, "branch", json_object_new_string(b.data));
	if (git_line(dir, "status", "--porcelain", ".", &b)) {
		json_object_object_add(o, "dirty", json_object_new_boolean(b.len > 0));
	}
	lb_buf_free(&b);
	return o;
}

/* The directory holding the .git entry git would find for dir (it looks in dir and each
 * directory above it), or false when there is none: asking git would only cost its start. */
static bool find_toplevel(const char *dir, char *top, size_t n)
{
	char p[PATH_MAX];
	if (!realpath(dir, p))
		return false;
	for (;;) {
		char probe[PATH_MAX + 8];
		struct stat st;
		snprintf(probe, sizeof probe, "%s/.git", strcmp(p, "/") == 0 ? "" : p);
		if (lstat(probe, &st) == 0) {
			snprintf(top, n, "%s", p);
			return true;
		}
		char *slash = strrchr(p, '/');
		if (!slash || strcmp(p, "/") == 0)
			return false;
		if (slash == p)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

/* A .git file ("gitdir: PATH", a worktree or a submodule) names the git directory elsewhere,
 * and that one may name a common directory: both must be visible to git in the sandbox. */
static int bind_gitdir_of(lb_sandbox *sb, const char *top)
{
	char path[2 * PATH_MAX + 32], line[PATH_MAX + 16], gitdir[PATH_MAX];
	snprintf(path, sizeof path, "%s/.git", top);
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	LB_AUTOFCLOSE FILE *f = fopen(path, "re");
	if (!f || !fgets(line, sizeof line, f) || strncmp(line, "gitdir: ", 8) != 0)
		return 0;
	line[strcspn(line, "\r\n")] = '\0';
	const char *g = line + 8;
	if (g[0] == '/')
		snprintf(path, sizeof path, "%s", g);
	else
		snprintf(path, sizeof path, "%s/%s", top, g);
	if (!realpath(path, gitdir))
		return 0;
	int r = lb_sandbox_add_bind(sb, gitdir, NULL, false);
	snprintf(path, sizeof path, "%s/commondir", gitdir);
	LB_AUTOFCLOSE FILE *c = r == 0 ? fopen(path, "re") : NULL;
	if (c && fgets(line, sizeof line, c)) {
		line[strcspn(line, "\r\n")] = '\0';
		char common[2 * PATH_MAX + 32], real[PATH_MAX];
		if (line[0] == '/')
			snprintf(common, sizeof common, "%s", line);
		else
			snprintf(common, sizeof common, "%s/%s", gitdir, line);
		if (realpath(common, real))
			r = lb_sandbox_add_bind(sb, real, NULL, false);
	}
	return r;
}

typedef struct git_payload {
	const char *dir;
	const char *top;
	size_t diff_max;
} git_payload;

/* Runs inside the sandbox: whatever the repository makes git run (filters, fsmonitor, hooks,
 * textconv, in any config scope, include or nested repository) runs there too, with the
 * host read-only, the homes hidden and no network. */
static json_object *git_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_object *git_error(const char *fmt, ...)
{
	char msg[PATH_MAX + 256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "commit", NULL);
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static int git_payload_main(void *arg)
{
	const git_payload *g = arg;
	json_object *o = json_object_new_object();
	if (!o)
		return 1;
	char dotgit[PATH_MAX + 8];
	snprintf(dotgit, sizeof dotgit, "%s/.git", g->top);
	if (access(g->dir, R_OK | X_OK) < 0 || access(dotgit, R_OK) < 0) {
		/* As root the sandbox is uid 65534's, which a private checkout shuts out. */
		json_object_object_add(o, "git",
				       git_error("the repository at %s is not readable by uid %u, "
						 "which labbox runs git as in the sandbox",
						 g->top, (unsigned)getuid()));
	} else {
		json_object_object_add(o, "git", lb_record_git_info(g->dir));
		json_object_object_add(o, "git_diff", lb_record_git_diff(g->dir, g->diff_max));
	}
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	return text && lb_write_all(1, text, strlen(text)) == 0 ? 0 : 1;
}

static int git_sandboxed(const char *dir, const char *top, size_t diff_max, lb_buf *out,
			 char *err, size_t errlen)
{
	lb_sandbox *sb = NULL;
	int r = lb_sandbox_new(&sb);
	if (r < 0)
		return r;
	git_payload g = {.dir = dir, .top = top, .diff_max = diff_max};
	lb_sandbox_result res;
	if (strcmp(top, "/") != 0)
		r = lb_sandbox_add_bind(sb, top, NULL, false);
	if (r == 0)
		r = bind_gitdir_of(sb, top);
	if (r == 0)
		r = lb_sandbox_set_function(sb, git_payload_main, &g);
	if (r == 0)
		/* A repository whose filter or fsmonitor hangs costs the run at most this. */
		r = lb_sandbox_set_budget(sb, 10);
	if (r == 0)
		r = lb_sandbox_set_cgroup_accounting(sb, false);
	/* The diff as JSON is at most six bytes a byte, plus the rest of the document. */
	if (r == 0)
		r = lb_sandbox_capture(sb, diff_max * 6 + (64u << 10), out, &res);
	if (r == 0 && res.outcome == LB_SB_SETUP_FAILED)
		snprintf(err, errlen, "%s", res.setup_error);
	else if (r == 0 && (res.outcome != LB_SB_EXITED || res.exit_code != 0))
		snprintf(err, errlen, "git did not finish in the sandbox");
	else if (r < 0)
		snprintf(err, errlen, "%s", strerror(-r));
	if (r == 0 && (res.outcome != LB_SB_EXITED || res.exit_code != 0))
		r = -EIO;
	lb_sandbox_free(sb);
	return r;
}

typedef struct git_child_arg {
	const char *dir;
	const char *top;
	size_t diff_max;
} git_child_arg;

static json_object *git_child(void *arg)
{
	const git_child_arg *g = arg;
	lb_buf b = {0};
	char err[512] = "";
	json_object *o = NULL;
	if (git_sandboxed(g->dir, g->top, g->diff_max, &b, err, sizeof err) == 0 && b.data)
		o = json_tokener_parse(b.data);
	lb_buf_free(&b);
	if (!o) {
		/* Said, not dropped: a repository was there and could not be read. */
		o = json_object_new_object();
		json_object_object_add(o, "git", git_error("could not run git in the sandbox: %s",
							   err[0] ? err : "no output"));
	}
	return o;
}

int lb_record_git_start(const char *dir, size_t diff_max, lb_record_git_job *job)
{
	job->pid = 0;
	job->fd = -1;
	char top[PATH_MAX];
	if (!find_toplevel(dir, top, sizeof top))
		return 0;
	git_child_arg g = {.dir = dir, .top = top, .diff_max = diff_max};
	return lb_record_job_start(job, git_child, &g, 0);
}

void lb_record_git_collect(lb_record_git_job *job, json_object **info, json_object **diff)
{
	*info = NULL;
	*diff = NULL;
	json_object *o = lb_record_job_collect(job, -1, NULL), *v;
	if (o && json_object_object_get_ex(o, "git", &v) && v)
		*info = json_object_get(v);
	if (o && json_object_object_get_ex(o, "git_diff", &v) && v)
		*diff = json_object_get(v);
	json_object_put(o);
}
