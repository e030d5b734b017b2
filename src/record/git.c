/* Which commit an experiment came from, when its directory is in a git repository. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <json-c/json.h>
#include <string.h>
#include <sys/wait.h>

static bool git_line(const char *dir, const char *a1, const char *a2, const char *a3, lb_buf *out)
{
	char *argv[] = {"git", "-C", (char *)dir, (char *)a1, (char *)a2, (char *)a3, NULL};
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
	if (git_line(dir, "status", "--porcelain", ".", &b))
		json_object_object_add(o, "dirty", json_object_new_boolean(b.len > 0));
	lb_buf_free(&b);
	return o;
}
