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

/* git's answer, its last line ends cut. Every command reads the repository as it is, not as
 * its configuration or its index's flags would show it: all untracked files, and no stat
 * information trusted (core.ignoreStat). */
static bool git_run(const char *dir, lb_buf *out, const char *const *args)
{
	char *argv[24] = {"git", "--no-pager", "-c", "safe.directory=*", "-C", (char *)dir, "-c",
			  "core.fsmonitor=false", "-c", "core.ignoreStat=false", "-c",
			  "status.showUntrackedFiles=all"};
	size_t n = 12;
	for (size_t i = 0; args[i] && n < sizeof argv / sizeof *argv - 1; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	int st = 0;
	out->len = 0;
	if (lb_capture(argv, 1 << 20, false, out, &st) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return false;
	while (out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == '\r'))
		out->data[--out->len] = '\0';
	return true;
}

#define git_line(dir, out, ...) git_run(dir, out, (const char *const[]){__VA_ARGS__, NULL})

/* An index's own flags (assume-unchanged, skip-worktree: `git update-index`'s way of keeping
 * a local edit out of sight) make status and diff look away from a file that differs from the
 * commit. A copy of the index without them, in the sandbox's private /tmp, is what git reads
 * here: the repository's index itself is never written. Best effort: without the copy git
 * reads the index as it is. */
#define GIT_INDEX_COPY "/tmp/labbox-git-index"
#define GIT_UNFLAG_BATCH 256

/* update-index takes one of its flag options for the paths that follow (the last one given
 * wins), so each flag is cleared by a call of its own. */
static void unflag(const char *dir, char **paths, size_t n)
{
	static const char *const opts[] = {"--no-assume-unchanged", "--no-skip-worktree"};
	for (size_t o = 0; o < sizeof opts / sizeof *opts; o++) {
		char *argv[GIT_UNFLAG_BATCH + 16] = {"git", "--no-pager", "-c", "safe.directory=*",
						     "-C", (char *)dir, "update-index", "-q",
						     (char *)opts[o], "--"};
		size_t k = 10;
		for (size_t i = 0; i < n; i++)
			argv[k++] = paths[i];
		argv[k] = NULL;
		lb_buf out = {0};
		int st = 0;
		lb_capture(argv, 4096, false, &out, &st);
		lb_buf_free(&out);
	}
}

static void index_without_flags(const char *dir)
{
	lb_buf b = {0};
	LB_AUTOFREE char *data = NULL;
	size_t len = 0;
	struct stat st;
	if (!git_line(dir, &b, "rev-parse", "--path-format=absolute", "--git-path", "index") ||
	    !b.data || stat(b.data, &st) < 0 ||
	    lb_read_file_at(AT_FDCWD, b.data, (size_t)1 << 30, &data, &len) < 0 ||
	    lb_write_file_atomic_nosync(GIT_INDEX_COPY, data, len, 0600) < 0) {
		lb_buf_free(&b);
		return;
	}
	/* The copy keeps the index's time: git compares a file changed in the same clock tick as
	 * the index was written by its content ("racily clean"), and a copy written now would
	 * make such an edit look clean by its unchanged size and time. */
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	if (utimensat(AT_FDCWD, GIT_INDEX_COPY, ts, 0) < 0) {
		unlink(GIT_INDEX_COPY);
		lb_buf_free(&b);
		return;
	}
	setenv("GIT_INDEX_FILE", GIT_INDEX_COPY, 1);
	/* "h path": a lower-case tag is assume-unchanged, "S" skip-worktree. */
	if (git_line(dir, &b, "ls-files", "-z", "-v", "--") && b.data) {
		char *paths[GIT_UNFLAG_BATCH];
		size_t n = 0;
		for (size_t i = 0; i < b.len;) {
			char *rec = b.data + i;
			size_t rl = strnlen(rec, b.len - i);
			if (rl > 2 && rec[1] == ' ' &&
			    ((rec[0] >= 'a' && rec[0] <= 'z') || rec[0] == 'S'))
				paths[n++] = rec + 2;
			if (n == GIT_UNFLAG_BATCH) {
				unflag(dir, paths, n);
				n = 0;
			}
			i += rl + 1;
		}
		if (n)
			unflag(dir, paths, n);
	}
	lb_buf_free(&b);
}

struct json_object *lb_record_git_info(const char *dir)
{
	lb_buf b = {0};
	if (!git_line(dir, &b, "rev-parse", "--verify", "HEAD") || !b.data) {
		lb_buf_free(&b);
		return NULL;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "commit", json_object_new_string(b.data));
	if (git_line(dir, &b, "rev-parse", "--abbrev-ref", "HEAD") && b.data)
		json_object_object_add(o, "branch", json_object_new_string(b.data));
	/* labbox's own records (.labbox beside the runs, not staged either) are no change of
	 * the experiment's. */
	if (git_line(dir, &b, "status", "--porcelain", "--untracked-files=all", "--", ".",
		     ":(exclude,glob)**/.labbox/**")) {
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

/* The first line of a small regular file the experiment may have made (a .git file, a git
 * directory's gitdir, commondir or config): opened without blocking and refused unless it is
 * a regular file, so that a FIFO in its place does not stop labbox. */
static FILE *open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* Whether a git directory outside the experiment names the experiment back: a worktree's
 * (gitdir/gitdir holds the path of the worktree's .git file) or a submodule's (core.worktree
 * in gitdir/config leads to it). An experiment can write a .git file naming any repository;
 * it cannot write into that repository the way back to itself. */
static bool gitdir_names_back(const char *gitdir, const char *top)
{
	char path[2 * PATH_MAX + 32], line[PATH_MAX + 16], real[PATH_MAX], dotgit[PATH_MAX + 8];
	snprintf(dotgit, sizeof dotgit, "%s/.git", top);
	snprintf(path, sizeof path, "%s/gitdir", gitdir);
	LB_AUTOFCLOSE FILE *w = open_regular(path);
	if (w && fgets(line, sizeof line, w)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (realpath(line, real) && strcmp(real, dotgit) == 0)
			return true;
	}
	snprintf(path, sizeof path, "%s/config", gitdir);
	LB_AUTOFCLOSE FILE *c = open_regular(path);
	while (c && fgets(line, sizeof line, c)) {
		line[strcspn(line, "\r\n")] = '\0';
		const char *k = line + strspn(line, " \t");
		if (strncmp(k, "worktree", 8) != 0)
			continue;
		k += 8 + strspn(k + 8, " \t");
		if (*k != '=')
			continue;
		k += 1 + strspn(k + 1, " \t");
		if (k[0] == '/')
			snprintf(path, sizeof path, "%s", k);
		else
			snprintf(path, sizeof path, "%s/%s", gitdir, k);
		if (realpath(path, real) && strcmp(real, top) == 0)
			return true;
	}
	return false;
}

/* A .git file ("gitdir: PATH", a worktree or a submodule) names the git directory elsewhere,
 * and that one may name a common directory: both must be visible to git in the sandbox.
 * When the .git file is the experiment's own (its top is the experiment directory), what it
 * names is bound only inside the experiment or when it names the experiment back
 * (gitdir_names_back); else nothing is bound and *refused says why. A .git file above the
 * experiment is the user's repository's, as the directories holding the experiment are,
 * when the user named the experiment (git_sandboxed follows nothing above one a record not
 * sealed by this user's labbox named). */
static int bind_gitdir_of(lb_sandbox *sb, const char *top, const char *expdir, char *refused,
			  size_t refusedlen)
{
	char path[2 * PATH_MAX + 32], line[PATH_MAX + 16], gitdir[PATH_MAX];
	snprintf(path, sizeof path, "%s/.git", top);
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	LB_AUTOFCLOSE FILE *f = open_regular(path);
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
	bool own = expdir && strcmp(top, expdir) == 0;
	if (own && !lb_path_under(gitdir, expdir) && !gitdir_names_back(gitdir, top)) {
		snprintf(refused, refusedlen,
			 "the experiment's .git file names a git directory outside it (%.300s) that "
			 "does not name the experiment back (not a worktree or submodule of it): not "
			 "followed", gitdir);
		return 0;
	}
	int r = lb_sandbox_add_bind(sb, gitdir, NULL, false);
	snprintf(path, sizeof path, "%s/commondir", gitdir);
	LB_AUTOFCLOSE FILE *c = r == 0 ? open_regular(path) : NULL;
	if (c && fgets(line, sizeof line, c)) {
		line[strcspn(line, "\r\n")] = '\0';
		char common[2 * PATH_MAX + 32], real[PATH_MAX];
		if (line[0] == '/')
			snprintf(common, sizeof common, "%s", line);
		else
			snprintf(common, sizeof common, "%s/%s", gitdir, line);
		/* A git directory inside the experiment naming a common directory elsewhere is the
		 * experiment's choice again: that one is bound only inside it too. One outside,
		 * that named the experiment back, is a real worktree's: its common one is too. */
		bool inside = own && lb_path_under(gitdir, expdir);
		if (realpath(common, real) && (!inside || lb_path_under(real, expdir)))
			r = lb_sandbox_add_bind(sb, real, NULL, false);
	}
	return r;
}

typedef struct git_payload {
	const char *dir;
	const char *top;
	size_t diff_max;
	char refused[PATH_MAX + 256]; /* why the repository is not read: not run at all */
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
	if (g->refused[0]) {
		json_object_object_add(o, "git", git_error("%s", g->refused));
	} else if (access(g->dir, R_OK | X_OK) < 0 || access(dotgit, R_OK) < 0) {
		/* As root the sandbox is uid 65534's, which a private checkout shuts out. */
		json_object_object_add(o, "git",
				       git_error("the repository at %s is not readable by uid %u, "
						 "which labbox runs git as in the sandbox",
						 g->top, (unsigned)getuid()));
	} else {
		index_without_flags(g->dir);
		json_object_object_add(o, "git", lb_record_git_info(g->dir));
		json_object_object_add(o, "git_diff", lb_record_git_diff(g->dir, g->diff_max));
	}
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	return text && lb_write_all(1, text, strlen(text)) == 0 ? 0 : 1;
}

/* What the run's sandbox hides, git's hides too: the repository's filters and hooks are the
 * experiment's code when it ships its own .git, and must see no more than the run. */
static int hide_as_the_run(lb_sandbox *sb, const lb_record_git_view *view)
{
	int r = lb_record_hide_known(sb);
	LB_AUTOFREE char *index = NULL;
	if (r == 0 && view && view->runs_dir && lb_index_path_for(view->runs_dir, &index) == 0)
		r = lb_record_hide_runs_dir(sb, view->runs_dir, index, false);
	for (size_t i = 0; r == 0 && view && i < view->nhide; i++) {
		struct stat st;
		if (lstat(view->hide[i], &st) == 0)
			r = lb_sandbox_mask(sb, view->hide[i]);
	}
	return r;
}

static int git_sandboxed(const char *dir, const char *top, const lb_record_git_view *view,
			 size_t diff_max, lb_buf *out, char *err, size_t errlen)
{
	lb_sandbox *sb = NULL;
	int r = lb_sandbox_new(&sb);
	if (r < 0)
		return r;
	char expdir[PATH_MAX];
	git_payload g = {.dir = dir, .top = top, .diff_max = diff_max};
	lb_sandbox_result res;
	bool have_expdir = realpath(dir, expdir) != NULL;
	if (view && view->origin_untrusted && (!have_expdir || strcmp(top, expdir) != 0)) {
		/* A record not sealed by this user named dir: the repository holding it is one
		 * the record chose (any path on the host), not the user's. Nothing of it is bound. */
		snprintf(g.refused, sizeof g.refused,
			 "the repository at %.300s holds the experiment directory a record not sealed "
			 "by this user's labbox named, from above it: not followed", top);
	} else {
		if (strcmp(top, "/") != 0)
			r = lb_sandbox_add_bind(sb, top, NULL, false);
		if (r == 0)
			r = bind_gitdir_of(sb, top, have_expdir ? expdir : NULL, g.refused,
					   sizeof g.refused);
	}
	if (r == 0)
		r = hide_as_the_run(sb, view);
	if (r == 0)
		r = lb_sandbox_set_function(sb, git_payload_main, &g);
	if (r == 0)
		/* A repository whose filter or fsmonitor hangs costs the run at most this. */
		r = lb_sandbox_set_budget(sb, 10);
	/* And the run's limits, its budget among them: a filter is no way around --memory,
	 * --pids-limit or --budget. */
	if (r == 0 && view)
		r = lb_sandbox_apply_limits(sb, view->limits);
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
	const lb_record_git_view *view;
	size_t diff_max;
} git_child_arg;

static json_object *git_child(void *arg)
{
	const git_child_arg *g = arg;
	lb_buf b = {0};
	char err[512] = "";
	json_object *o = NULL;
	if (git_sandboxed(g->dir, g->top, g->view, g->diff_max, &b, err, sizeof err) == 0 && b.data)
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

int lb_record_git_start(const char *dir, const lb_record_git_view *view, size_t diff_max,
			lb_record_git_job *job)
{
	job->pid = 0;
	job->fd = -1;
	char top[PATH_MAX];
	if (!find_toplevel(dir, top, sizeof top))
		return 0;
	git_child_arg g = {.dir = dir, .top = top, .view = view, .diff_max = diff_max};
	return lb_record_job_start(job, git_child, &g, 0);
}

void lb_record_git_collect(lb_record_git_job *job, json_object **info, json_object **diff)
{
	*info = NULL;
	*diff = NULL;
	/* git's sandbox ends within its budget; a child that does not (stuck before it started)
	 * costs the run no more than this. */
	json_object *o = lb_record_job_collect(job, 60, NULL), *v;
	if (o && json_object_object_get_ex(o, "git", &v) && v)
		*info = json_object_get(v);
	if (o && json_object_object_get_ex(o, "git_diff", &v) && v)
		*diff = json_object_get(v);
	json_object_put(o);
}
