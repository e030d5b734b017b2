/* Interpreter probing: where a Python lives and what it has installed. */
#include "labbox/diagnose.h"
#include "labbox/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char probe_src[] =
	"import sys, platform\n"
	"print(sys.executable)\n"
	"print(sys.prefix)\n"
	"print(sys.base_prefix)\n"
	"print(platform.python_version())\n"
	"print(sys.implementation.name)\n";

static const char freeze_src[] =
	"import importlib.metadata as m\n"
	"seen = {}\n"
	"for d in m.distributions():\n"
	"    n = d.metadata['Name']\n"
	"    if n and n.lower() not in seen:\n"
	"        seen[n.lower()] = '%s==%s' % (n, d.version)\n"
	"print('\\n'.join(sorted(seen.values(), key=str.lower)))\n";

static int next_line(char **cursor, char *out, size_t n)
{
	char *s = *cursor;
	if (!s || !*s)
		return -EINVAL;
	char *nl = strchr(s, '\n');
	size_t len = nl ? (size_t)(nl - s) : strlen(s);
	if (len == 0 || len >= n)
		return -EINVAL;
	memcpy(out, s, len);
	out[len] = '\0';
	*cursor = nl ? nl + 1 : s + len;
	return 0;
}

int lb_python_probe(const char *path, lb_python_info *out, char *err, size_t errlen)
{
	LB_AUTOFREE char *exe = NULL;
	int r = lb_find_executable(path, &exe);
	if (r < 0) {
		snprintf(err, errlen, "interpreter '%s' %s", path,
			 r == -ENOENT ? "not found" : "is not executable");
		return r;
	}
	char *argv[] = {exe, "-I", "-c", (char *)probe_src, NULL};
	lb_buf b = {0};
	int st = 0;
	r = lb_capture(argv, 64 * 1024, false, &b, &st);
	if (r < 0) {
		lb_buf_free(&b);
		snprintf(err, errlen, "could not run interpreter '%s': %s", exe, strerror(-r));
		return r;
	}
	memset(out, 0, sizeof *out);
	char *cur = b.data;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    next_line(&cur, out->executable, sizeof out->executable) < 0 ||
	    next_line(&cur, out->prefix, sizeof out->prefix) < 0 ||
	    next_line(&cur, out->base_prefix, sizeof out->base_prefix) < 0 ||
	    next_line(&cur, out->version, sizeof out->version) < 0 ||
	    next_line(&cur, out->implementation, sizeof out->implementation) < 0 ||
	    out->executable[0] != '/') {
		lb_buf_free(&b);
		snprintf(err, errlen, "'%s' is not a working Python interpreter", exe);
		return -ENOEXEC;
	}
	lb_buf_free(&b);
	return 0;
}

int lb_python_freeze(const char *executable, char **out)
{
	char *argv[] = {(char *)executable, "-I", "-c", (char *)freeze_src, NULL};
	lb_buf b = {0};
	int st = 0;
	int r = lb_capture(argv, 4 * 1024 * 1024, false, &b, &st);
	if (r == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		r = -ENOEXEC;
	if (r < 0) {
		lb_buf_free(&b);
		return r;
	}
	*out = b.data ? b.data : strdup("");
	return *out ? 0 : -ENOMEM;
}
