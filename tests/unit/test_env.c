/* Unit tests for the env module's parts that read outside input (module names, environment.yml)
 * and for the choice by name and path over a list discovered from a real venv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/env.h"
#include "../../src/env/env_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_module_names(void **state)
{
	(void)state;
	assert_true(lb_env_module_valid("torch"));
	assert_true(lb_env_module_valid("torch.nn"));
	assert_true(lb_env_module_valid("_private2"));
	assert_false(lb_env_module_valid(""));
	assert_false(lb_env_module_valid("2fast"));
	assert_false(lb_env_module_valid("a..b"));
	assert_false(lb_env_module_valid(".rel"));
	assert_false(lb_env_module_valid("trailing."));
	assert_false(lb_env_module_valid("os;rm"));
	assert_false(lb_env_module_valid("a'b"));
	assert_false(lb_env_module_valid("a b"));
}

static void test_environment_yml(void **state)
{
	(void)state;
	char name[256], prefix[4096], err[256];
	const char *y = "name: research\nchannels: [conda-forge]\ndependencies:\n  - numpy\n"
			"prefix: /opt/conda/envs/research\n";
	assert_int_equal(lb_env_parse_environment_yml(y, strlen(y), name, prefix, err, sizeof err), 0);
	assert_string_equal(name, "research");
	assert_string_equal(prefix, "/opt/conda/envs/research");
	const char *only = "dependencies:\n  - python=3.11\n";
	assert_int_equal(lb_env_parse_environment_yml(only, strlen(only), name, prefix, err,
						      sizeof err), 0);
	assert_string_equal(name, "");
	assert_string_equal(prefix, "");
	const char *list = "- a\n- b\n";
	assert_int_equal(lb_env_parse_environment_yml(list, strlen(list), name, prefix, err,
						      sizeof err), -EINVAL);
	assert_non_null(strstr(err, "not a mapping"));
	const char *bad = "name: [unclosed\n";
	assert_int_equal(lb_env_parse_environment_yml(bad, strlen(bad), name, prefix, err,
						      sizeof err), -EINVAL);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(lb_env_kind_name(LB_ENV_PATH), "path");
	assert_string_equal(lb_env_kind_name(LB_ENV_SYSTEM), "system");
	assert_string_equal(lb_env_kind_name(LB_ENV_PYENV), "pyenv");
	assert_string_equal(lb_env_kind_name(LB_ENV_VENV), "venv");
	assert_string_equal(lb_env_kind_name(LB_ENV_CONDA), "conda");
}

/* A real venv in an experiment's parent: discovered, chosen by its path and by its name, and a
 * name that is not there refused with what was found. */
static void test_select_by_name_and_path(void **state)
{
	(void)state;
	if (access("/usr/bin/python3", X_OK) != 0)
		skip();
	char root[] = "/var/tmp/lb-test-env-XXXXXX";
	assert_non_null(mkdtemp(root));
	char cmd[512], exp[300];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 -m venv --without-pip %s/venv 2>/dev/null", root);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof cmd, "rm -rf %s", root);
		assert_int_equal(system(cmd), 0);
		skip();
	}
	snprintf(exp, sizeof exp, "%s/exp", root);
	snprintf(cmd, sizeof cmd, "mkdir %s", exp);
	assert_int_equal(system(cmd), 0);
	lb_env_list l;
	lb_env_discover_opts o = {.expdir = exp};
	assert_int_equal(lb_env_discover(&o, &l), 0);
	char venv[300];
	snprintf(venv, sizeof venv, "%s/venv", root);
	long at = -1;
	for (size_t i = 0; i < l.n; i++)
		if (strcmp(l.v[i].path, venv) == 0)
			at = (long)i;
	assert_true(at >= 0);
	assert_int_equal(l.v[at].kind, LB_ENV_VENV);
	/* beside the experiment: it came with the checkout, so it is probed in the sandbox */
	assert_true(l.v[at].usable);
	assert_true(l.v[at].confined);
	lb_env_choice c;
	assert_int_equal(lb_env_select(&l, venv, NULL, 0, NULL, &c), 0);
	assert_int_equal(c.index, at);
	assert_int_equal(lb_env_select(&l, "venv", NULL, 0, NULL, &c), 0);
	assert_int_equal(c.index, at);
	assert_int_equal(lb_env_select(&l, "no-such-env", NULL, 0, NULL, &c), -ENOENT);
	assert_non_null(strstr(c.reason, "no-such-env"));
	assert_non_null(strstr(c.reason, venv));
	lb_env_list_free(&l);
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

#define SHIM_TEXT(root, tail)                                                             \
	"#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\n"                 \
	"program=\"${0##*/}\"\n\nexport PYENV_ROOT=\"" root "\"\nexec \"" root                 \
	"/libexec/pyenv\" exec \"$program\" \"$@\"\n" tail

/* A pyenv shim's text is recognised only in pyenv's own shape; anything after the exec, a
 * root that expands, or another program exec'd is another script (always asked). */
static void test_pyenv_shim_text(void **state)
{
	(void)state;
	char root[256];
	assert_int_equal(env_pyenv_shim_root(SHIM_TEXT("/home/u/.pyenv", ""), root, sizeof root), 0);
	assert_string_equal(root, "/home/u/.pyenv");
	assert_int_equal(env_pyenv_shim_root(SHIM_TEXT("/home/u/.pyenv", "echo more\n"), root,
					     sizeof root), -ENOENT);
	assert_int_equal(env_pyenv_shim_root(SHIM_TEXT("$HOME/.pyenv", ""), root, sizeof root),
			 -ENOENT);
	assert_int_equal(env_pyenv_shim_root(SHIM_TEXT("relative", ""), root, sizeof root), -ENOENT);
	assert_int_equal(env_pyenv_shim_root("#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", root,
					     sizeof root), -ENOENT);
	assert_int_equal(env_pyenv_shim_root(SHIM_TEXT("/home/u/.pyenv", ""), root, 8), -ENOENT);
	/* The root the exec names must be the one exported. */
	assert_int_equal(env_pyenv_shim_root("#!/usr/bin/env bash\nexport PYENV_ROOT=\"/a\"\n"
					     "exec \"/b/libexec/pyenv\" exec \"$program\" \"$@\"\n",
					     root, sizeof root), -ENOENT);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The key follows what pyenv chooses by: the nearest .python-version above the working
 * directory (else the global version file), PYENV_* and PATH; not the order of the
 * environment, nor a variable pyenv does not read. */
static void test_pyenv_shim_key(void **state)
{
	(void)state;
	char tmp[] = "/tmp/lb-pyenv-XXXXXX", p[512], cwd[4096], text[2048];
	assert_non_null(mkdtemp(tmp));
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(p, sizeof p, "%s/root", tmp);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/proj", tmp);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/proj/sub", tmp);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(text, sizeof text,
		 "#!/usr/bin/env bash\nexport PYENV_ROOT=\"%s/root\"\n"
		 "exec \"%s/root/libexec/pyenv\" exec \"$program\" \"$@\"\n", tmp, tmp);
	char shim[512];
	snprintf(shim, sizeof shim, "%s/python3", tmp);
	write_text(shim, text);
	assert_int_equal(chdir(p), 0);
	unsetenv("PWD");
	unsetenv("PYENV_DIR");

	char *env1[] = {"PATH=/usr/bin", "HOME=/h", "PYENV_VERSION=3.12", NULL};
	char *env2[] = {"PYENV_VERSION=3.12", "LANG=C", "PATH=/usr/bin", NULL};
	char *env3[] = {"PATH=/usr/bin", "PYENV_VERSION=3.11", NULL};
	char k1[65], k2[65], k3[65], s1[65], s2[65];
	assert_int_equal(env_pyenv_shim_key(shim, text, env1, k1, s1), 0);
	assert_int_equal(env_pyenv_shim_key(shim, text, env2, k2, s2), 0);
	assert_string_equal(k1, k2);
	assert_string_equal(s1, s2);
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, k3, s2), 0);
	assert_string_not_equal(k1, k3);

	/* A .python-version above the directory is found; a nearer one is found instead. */
	char global[65], above[65], near[65], edited[65], slot_sub[65], slot_proj[65];
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, global, slot_sub), 0);
	snprintf(p, sizeof p, "%s/proj/.python-version", tmp);
	write_text(p, "3.9\n");
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, above, s1), 0);
	assert_string_not_equal(global, above);
	snprintf(p, sizeof p, "%s/proj/sub/.python-version", tmp);
	write_text(p, "3.10\n");
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, near, s1), 0);
	assert_string_not_equal(above, near);
	write_text(p, "3.10.13\n");
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, edited, s1), 0);
	assert_string_not_equal(near, edited);
	/* Another working directory is another slot. */
	snprintf(p, sizeof p, "%s/proj", tmp);
	assert_int_equal(chdir(p), 0);
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, k1, slot_proj), 0);
	assert_string_not_equal(slot_sub, slot_proj);
	/* Installing a version can change what a prefix names. */
	snprintf(p, sizeof p, "%s/root/versions", tmp);
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, k1, s1), 0);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(env_pyenv_shim_key(shim, text, env3, k2, s1), 0);
	assert_string_not_equal(k1, k2);

	assert_int_equal(chdir(cwd), 0);
	snprintf(p, sizeof p, "rm -rf %s", tmp);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_names),
		cmocka_unit_test(test_environment_yml),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_select_by_name_and_path),
		cmocka_unit_test(test_pyenv_shim_text),
		cmocka_unit_test(test_pyenv_shim_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
