/* Which commit an experiment came from, when its directory is in a git repository. */
#include "labbox/record.h"
#include "labbox/util.h"
#include "record_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Settings of the repository's own configuration that make git run a command: a clean filter
 * runs on every modified file `git diff` or `git status` compares. The repository is the
 * experiment's, and git runs outside the sandbox, so such a repository is neither diffed nor
 * asked for its status. core.fsmonitor is overridden on every command line instead. */
bool lb_record_git_runs_commands(const char *dir, char *which, size_t n)
{
	char *argv[] = { "git", "--no-pager", "-C", (char *)dir, "config", "--local", "--includes",
			 "--get-regexp", "^filter\\..*\\.(clean|smudge|process)$", NULL };
	lb_buf out = { 0 };
	int st = 0;
	bool found;

	if (lb_capture(argv, 4096, false, &out, &st) < 0) {
		lb_buf_free(&out);
		snprintf(which, n, "its configuration could not be read");
		return true;
	}
	/* `git config --get-regexp` exits 1 when nothing matches. */
	found = WIFEXITED(st) && WEXITSTATUS(st) == 0 && out.len > 0;
	if (found) {
		size_t k = strcspn(out.data, " \n");

		snprintf(which, n, "%.*s", (int)(k < 200 ? k : 200), out.data);
	} else if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		snprintf(which, n, "its configuration could not be read");
		found = true;
	}
	lb_buf_free(&out);
	return found;
}

static bool git_line(const char *dir, const char *a1, const char *a2, const char *a3, lb_buf *out)
{
	char *argv[] = {"git",	(char *)"--no-pager", "-C", (char *)dir, "-c", "core.fsmonitor=false",
			(char *)a1, (char *)a2, (char *)a3, NULL};
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
	char which[256];
	if (lb_record_git_runs_commands(dir, which, sizeof which)) {
		char msg[400];
		snprintf(msg, sizeof msg,
			 "not asked: the repository's own configuration runs commands (%s)", which);
		json_object_object_add(o, "dirty", NULL);
		json_object_object_add(o, "dirty_unknown", json_object_new_string(msg));
	} else if (git_line(dir, "status", "--porcelain", ".", &b)) {
		json_object_object_add(o, "dirty", json_object_new_boolean(b.len > 0));
	}
	lb_buf_free(&b);
	return o;
}

/* git looks for .git in dir and each directory above it (GIT_DIR names one elsewhere); when
 * there is none, asking git only costs its start-up. */
static bool maybe_repository(const char *dir)
{
	if (getenv("GIT_DIR"))
		return true;
	char p[PATH_MAX];
	if (!realpath(dir, p))
		return true; /* let git say */
	for (;;) {
		char probe[PATH_MAX + 8];
		struct stat st;
		snprintf(probe, sizeof probe, "%s/.git", strcmp(p, "/") == 0 ? "" : p);
		if (lstat(probe, &st) == 0)
			return true;
		char *slash = strrchr(p, '/');
		if (!slash || slash == p) {
			if (strcmp(p, "/") == 0)
				return false;
			strcpy(p, "/");
			continue;
		}
		*slash = '\0';
	}
}

int lb_record_git_start(const char *dir, size_t diff_max, lb_record_git_job *job)
{
	job->pid = 0;
	job->fd = -1;
	if (!maybe_repository(dir))
		return 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[0]);
		/* Ctrl-C reaches the whole foreground group; labbox records the run as interrupted
		 * and still wants what git says (and the git commands inherit the dispositions).
		 * The child dies with labbox all the same. */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		json_object *o = json_object_new_object();
		if (!o)
			_exit(1);
		json_object_object_add(o, "git", lb_record_git_info(dir));
		json_object_object_add(o, "git_diff", lb_record_git_diff(dir, diff_max));
		const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
		_exit(text && lb_write_all(p[1], text, strlen(text)) == 0 ? 0 : 1);
	}
	close(p[1]);
	job->pid = pid;
	job->fd = p[0];
	return 0;
}

void lb_record_git_collect(lb_record_git_job *job, json_object **info, json_object **diff)
{
	*info = NULL;
	*diff = NULL;
	if (job->pid <= 0)
		return;
	lb_buf b = {0};
	char chunk[65536];
	bool lost = false;
	for (;;) {
		ssize_t n = read(job->fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Read to the end even when memory runs out, so the child can finish. */
		if (!lost && lb_buf_append(&b, chunk, (size_t)n) < 0)
			lost = true;
	}
	close(job->fd);
	int st = 0;
	while (waitpid(job->pid, &st, 0) < 0 && errno == EINTR)
		;
	job->pid = 0;
	job->fd = -1;
	json_object *o = NULL;
	if (!lost && WIFEXITED(st) && WEXITSTATUS(st) == 0 && b.data) {
		struct json_tokener *tok = json_tokener_new_ex(8);
		if (tok) {
			o = json_tokener_parse_ex(tok, b.data, (int)b.len);
			json_tokener_free(tok);
		}
	}
	lb_buf_free(&b);
	json_object *v;
	if (o && json_object_object_get_ex(o, "git", &v) && v)
		*info = json_object_get(v);
	if (o && json_object_object_get_ex(o, "git_diff", &v) && v)
		*diff = json_object_get(v);
	json_object_put(o);
}
