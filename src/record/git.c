/* Which commit an experiment came from, when its directory is in a git repository. */
#include "labbox/record.h"
#include "labbox/util.h"
#include "record_internal.h"

#include <stdio.h>
#include <sys/wait.h>

#include <json-c/json.h>
#include <string.h>
#include <sys/wait.h>

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
