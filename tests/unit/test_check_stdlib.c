/* check: capability summaries of a standard library, built from a small library written here,
 * and the check of an experiment against the summaries of this machine's /usr/bin/python3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../src/check/check_internal.h"
#include "labbox/env.h"
#include "labbox/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	assert_int_equal(lb_write_file_atomic(p, text, strlen(text)), 0);
}

static char *fake_lib(void)
{
	char *d = strdup("/tmp/labbox-stdlib-unit-XXXXXX");
	assert_non_null(mkdtemp(d));
	put(d, "os.py", "def makedirs(p):\n    mkdir(p)\n");
	put(d, "helper.py",
	    "import os as _os\n"
	    "import subprocess\n"
	    "def _run(cmd):\n    return subprocess.Popen(cmd, shell=True)\n"
	    "def pager(text, cmd):\n    _run(cmd)\n"
	    "def quiet(x):\n    return x + 1\n"
	    "def evaluator(src):\n    return eval(src)\n"
	    "def gen(names):\n    code = 'lambda: ' + names\n    return eval(code)\n"
	    "def wrap1(s):\n    return evaluator(s)\n"
	    "def wrap2(s):\n    return wrap1(s)\n"
	    "def wrap3(s):\n    return wrap2(s)\n"
	    "try:\n    from _fast import loads\nexcept ImportError:\n    from _slow import loads\n");
	put(d, "net.py",
	    "import socket\n"
	    "class Handler:\n"
	    "    def handle(self, r):\n        self.emit(r)\n"
	    "    def emit(self, r):\n        raise NotImplementedError\n"
	    "class Stream(Handler):\n    def emit(self, r):\n        print(r)\n"
	    "class Http(Handler):\n    def emit(self, r):\n        socket.create_connection(('h', 1))\n"
	    "class Base:\n"
	    "    def spawn_shell(self, cmd):\n        return self._make(cmd)\n"
	    "    def _make(self, cmd):\n        raise NotImplementedError\n"
	    "class Unix(Base):\n"
	    "    def _make(self, cmd):\n        import subprocess\n        return subprocess.Popen(cmd)\n");
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/pkg", d);
	assert_int_equal(mkdir(p, 0755), 0);
	put(d, "pkg/__init__.py", "from .inner import *\n");
	put(d, "pkg/inner.py", "import helper\ndef go(c):\n    helper.pager('', c)\n");
	return d;
}

static void rm_lib(char *d)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
	free(d);
}

/* As the check asks: the library's own name for q first. */
static unsigned caps(const ck_stdlib *s, const char *q)
{
	const char *via = NULL;
	char real[256];
	return ck_stdlib_caps(s, ck_stdlib_rename(s, q, real, sizeof real) ? real : q, &via);
}

static void test_summaries(void **state)
{
	(void)state;
	char *d = fake_lib();
	ck_stdlib *s = NULL;
	char err[256] = "";
	assert_int_equal(ck_stdlib_build(d, 2, &s, err, sizeof err), 0);
	const char *via = NULL;
	/* through a private helper of the same module */
	assert_true(ck_stdlib_caps(s, "helper.pager", &via) & CK_CAP_PROCESS);
	assert_string_equal(via, "subprocess.Popen");
	assert_int_equal(caps(s, "helper.quiet"), 0);
	/* a module's private re-export of another module */
	char real[256];
	assert_true(ck_stdlib_rename(s, "helper._os.system", real, sizeof real));
	assert_string_equal(real, "os.system");
	assert_false(ck_stdlib_rename(s, "helper.quiet", real, sizeof real));
	/* code the caller hands in, two calls deep at most; generated code is not the caller's */
	assert_true(caps(s, "helper.evaluator") & CK_CAP_EXEC);
	assert_true(caps(s, "helper.wrap2") & CK_CAP_EXEC);
	assert_false(caps(s, "helper.wrap3") & CK_CAP_EXEC);
	assert_false(caps(s, "helper.gen") & CK_CAP_EXEC);
	/* a class is what its instances can do, self dispatching through that class */
	assert_true(caps(s, "net.Http") & CK_CAP_SOCKET);
	assert_int_equal(caps(s, "net.Stream"), 0);
	assert_int_equal(caps(s, "net.Handler"), 0);
	/* a public method every leaf class gives a process */
	assert_true(ck_stdlib_method_caps(s, "spawn_shell", &via) & CK_CAP_PROCESS);
	assert_int_equal(ck_stdlib_method_caps(s, "handle", &via), 0);
	/* star import from a relative module */
	assert_true(caps(s, "pkg.go") & CK_CAP_PROCESS);
	assert_true(caps(s, "pkg.inner.go") & CK_CAP_PROCESS);
	size_t mods = 0, capable = 0;
	ck_stdlib_counts(s, &mods, &capable);
	assert_int_equal(mods, 5);
	assert_true(capable >= 6);
	ck_stdlib_free(s);
	rm_lib(d);
}

static void test_cache(void **state)
{
	(void)state;
	char *d = fake_lib();
	char cache[] = "/tmp/labbox-stdlib-cache-XXXXXX";
	assert_non_null(mkdtemp(cache));
	ck_stdlib *s = NULL;
	bool hit = true;
	char err[256] = "";
	assert_int_equal(ck_stdlib_load(d, "k", cache, &s, &hit, err, sizeof err), 0);
	assert_false(hit);
	assert_true(caps(s, "helper.pager") & CK_CAP_PROCESS);
	ck_stdlib_free(s);
	/* the library changes, but under the same key the kept summary is read */
	put(d, "helper.py", "def pager(text, cmd):\n    return text\n");
	assert_int_equal(ck_stdlib_load(d, "k", cache, &s, &hit, err, sizeof err), 0);
	assert_true(hit);
	assert_true(caps(s, "helper.pager") & CK_CAP_PROCESS);
	ck_stdlib_free(s);
	/* another key (a new mtime, another interpreter) builds it again */
	assert_int_equal(ck_stdlib_load(d, "k2", cache, &s, &hit, err, sizeof err), 0);
	assert_false(hit);
	assert_int_equal(caps(s, "helper.pager"), 0);
	ck_stdlib_free(s);
	/* a corrupt cache file is rebuilt, not believed */
	char cmd[PATH_MAX];
	snprintf(cmd, sizeof cmd, "for f in %s/stdlib/*; do echo garbage > $f; done", cache);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(ck_stdlib_load(d, "k2", cache, &s, &hit, err, sizeof err), 0);
	assert_false(hit);
	ck_stdlib_free(s);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
	assert_int_equal(system(cmd), 0);
	rm_lib(d);
}

static void test_no_library(void **state)
{
	(void)state;
	lb_python_info info;
	memset(&info, 0, sizeof info);
	snprintf(info.version, sizeof info.version, "3.11.2");
	snprintf(info.base_prefix, sizeof info.base_prefix, "/nonexistent-labbox");
	snprintf(info.executable, sizeof info.executable, "/nonexistent-labbox/bin/python3");
	ck_stdlib *s = NULL;
	char note[600] = "";
	assert_int_equal(ck_stdlib_open(&info, NULL, &s, note, sizeof note), -ENOENT);
	assert_null(s);
	assert_non_null(strstr(note, "/nonexistent-labbox/lib/python3.11"));
	snprintf(info.version, sizeof info.version, "weird");
	assert_int_equal(ck_stdlib_open(&info, NULL, &s, note, sizeof note), -EINVAL);
	assert_non_null(strstr(note, "weird"));
}

/* The real library of /usr/bin/python3, as `labbox check` uses it. */
static void test_check_with_host_library(void **state)
{
	(void)state;
	char link[64];
	ssize_t k = readlink("/usr/bin/python3", link, sizeof link - 1);
	if (k <= 0) {
		skip();
		return;
	}
	char path[] = "/tmp/labbox-stdlib-exp-XXXXXX.py";
	int fd = mkstemps(path, 3);
	assert_true(fd >= 0);
	const char *src = "import pydoc, tempfile, pkgutil\n"
			  "import multiprocessing.connection as mc\n"
			  "pydoc.pipepager('x', 'touch M')\n"
			  "tempfile._os.system('id')\n"
			  "pkgutil.resolve_name('os:system')\n"
			  "mc.Client(('127.0.0.1', 9))\n"
			  "import logging, json, collections, dataclasses\n"
			  "logging.basicConfig(level=logging.INFO)\n"
			  "P = collections.namedtuple('P', 'x y')\n"
			  "json.dumps({})\n"
			  /* 11-15: research code's own questions, which start nothing on Linux */
			  "import platform, importlib.util, sys\n"
			  "if platform.system() == 'Darwin' or platform.machine() == 'arm64': pass\n"
			  "host = (platform.node(), platform.release(), platform.version())\n"
			  "has_sklearn = importlib.util.find_spec('sklearn') is not None\n"
			  "importlib.util.find_spec('os.path')\n"
			  /* 16-18: those that do, or could */
			  "platform.platform()\n"
			  "platform.uname().processor\n"
			  "importlib.util.find_spec(host[0])\n"
			  /* 19: what it finds is one call from loaded: judged as its import */
			  "importlib.util.find_spec('ctypes').loader.load_module()\n"
			  /* 20: whatever found the loader */
			  "[f.find_spec('code', None) for f in sys.meta_path][0].loader.load_module()\n"
			  /* 21-22: timeit around a callable compiles only its template; a string is code */
			  "import timeit; timeit.timeit(lambda: sum(range(9)), number=3)\n"
			  "timeit.timeit('1+1', number=3)\n"
			  /* 23-24: annotations written as data; a .pth directory added */
			  "f.__annotations__ = {'x': 'open(1) and int'}\n"
			  "import site; site.addsitedir('.')\n";
	assert_int_equal(lb_write_all(fd, src, strlen(src)), 0);
	close(fd);
	lb_check_config *cfg;
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_config_ignore(cfg, "harness"), 0);
	lb_check_report rep = {0};
	char err[256] = "";
	char *paths[] = {path};
	assert_int_equal(lb_check_files(cfg, paths, 1, &rep, err, sizeof err), 0);
	lb_check_finish(&rep);
	assert_false(rep.stdlib_floor);
	assert_non_null(strstr(rep.stdlib_by, "python 3."));
	const char *want[] = {"LB102@3", "LB101@4", "LB104@5", "LB105@6",
			      "LB102@16", "LB102@17", "LB104@18", "LB106@19", "LB104@19", "LB104@20",
			      "LB103@22", "LB103@23", "LB104@24"};
	bool seen[13] = {0};
	for (size_t i = 0; i < rep.n; i++) {
		char at[32];
		snprintf(at, sizeof at, "%s@%u", rep.items[i].id, rep.items[i].line);
		bool expected = false;
		for (size_t w = 0; w < 13; w++)
			if (strcmp(at, want[w]) == 0)
				seen[w] = expected = true;
		/* nothing on the ordinary lines (imports allowlist aside) */
		if (!expected && strcmp(rep.items[i].id, "LB201") != 0)
			fail_msg("unexpected finding %s: %s", at, rep.items[i].message);
	}
	for (size_t w = 0; w < 13; w++)
		if (!seen[w])
			fail_msg("missing %s", want[w]);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summaries),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_no_library),
		cmocka_unit_test(test_check_with_host_library),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
