/* Unit tests for the env module's parts that read outside input (module names, environment.yml)
 * and for the choice by name and path over a list discovered from a real venv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_names),
		cmocka_unit_test(test_environment_yml),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_select_by_name_and_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
