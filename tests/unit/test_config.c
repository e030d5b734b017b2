/* config: labbox.yaml parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/config.h"

#include <errno.h>
#include <string.h>

static int parse(const char *text, lb_exp_config *c, char *err)
{
	return lb_config_parse(text, strlen(text), c, err, 256);
}

static void test_full_config(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("entry: train.py\n"
			       "args: [--epochs, \"3\", --out_dir, run_0]\n"
			       "python: /usr/bin/python3\n"
			       "budget: 120.5\n"
			       "metrics:\n  - accuracy\n  - loss\n",
			       &c, err),
			 0);
	assert_string_equal(c.entry, "train.py");
	assert_int_equal(c.nargs, 4);
	assert_string_equal(c.args[1], "3");
	assert_string_equal(c.args[3], "run_0");
	assert_null(c.args[4]);
	assert_string_equal(c.python, "/usr/bin/python3");
	assert_true(c.budget == 120.5);
	assert_int_equal(c.nmetrics, 2);
	assert_string_equal(c.metrics[1], "loss");
	lb_config_free(&c);
}

static void test_backend_keys(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("mode: ssh\nhost: gpu-server\n", &c, err), 0);
	assert_string_equal(c.mode, "ssh");
	assert_string_equal(c.host, "gpu-server");
	assert_null(c.image);
	lb_config_free(&c);
	assert_int_equal(parse("host: a\nhost: b\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "'host' is given twice"));
	assert_int_equal(parse("host: \"\"\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "'host' must be a non-empty string"));
}

static void test_empty_is_defaults(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("", &c, err), 0);
	assert_null(c.entry);
	assert_int_equal(c.nargs, 0);
	assert_true(c.budget == 0);
	lb_config_free(&c);
	assert_int_equal(parse("# only a comment\n", &c, err), 0);
	lb_config_free(&c);
}

static void test_errors_name_the_problem(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("entyr: main.py\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'entyr'"));
	assert_non_null(strstr(err, "line 1"));
	assert_int_equal(parse("entry: main.py\nbudget: lots\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "budget"));
	assert_non_null(strstr(err, "line 2"));
	assert_int_equal(parse("budget: -1\n", &c, err), -EINVAL);
	assert_int_equal(parse("args: --epochs 3\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "'args' must be a list"));
	assert_int_equal(parse("metrics: [a, [b]]\n", &c, err), -EINVAL);
	assert_int_equal(parse("- just\n- a list\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "mapping"));
	assert_int_equal(parse("entry: [unclosed\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "labbox.yaml line"));
	assert_int_equal(parse("entry: a.py\nentry: b.py\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "twice"));
	assert_int_equal(parse("entry: \"\"\n", &c, err), -EINVAL);
}

static void test_metrics_none(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("metrics: none\n", &c, err), 0);
	assert_true(c.metrics_none);
	assert_int_equal(c.nmetrics, 0);
	lb_config_free(&c);
	assert_false(c.metrics_none);
	assert_int_equal(parse("metrics: [acc]\n", &c, err), 0);
	assert_false(c.metrics_none);
	lb_config_free(&c);
	/* Any other scalar is a mistake, not a metric name. */
	assert_int_equal(parse("metrics: accuracy\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "none"));
	assert_int_equal(parse("metrics: none\nmetrics: [a]\n", &c, err), -EINVAL);
}

static void test_slurm_block(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("mode: slurm\nslurm:\n  partition: gpu\n  account: lab\n"
			       "  memory: 4g\n  cpus: 2.5\n  gpus: 2\n", &c, err), 0);
	assert_string_equal(c.slurm_partition, "gpu");
	assert_string_equal(c.slurm_account, "lab");
	assert_true(c.slurm_memory == (uint64_t)4 << 30);
	assert_true(c.slurm_cpus == 2.5);
	assert_int_equal((int)c.slurm_gpus, 2);
	lb_config_free(&c);
	assert_int_equal(parse("slurm: gpu\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "mapping"));
	assert_int_equal(parse("slurm:\n  partiton: gpu\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'slurm: partiton'"));
	assert_int_equal(parse("slurm:\n  gpus: two\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "gpus"));
}

static void test_docker_keys(void **state)
{
	(void)state;
	lb_exp_config c;
	char err[256] = "";
	assert_int_equal(parse("mode: docker\nbase_image: python:3.12-slim\n", &c, err), 0);
	assert_string_equal(c.mode, "docker");
	assert_string_equal(c.base_image, "python:3.12-slim");
	assert_null(c.image);
	lb_config_free(&c);
	assert_null(c.base_image);
	assert_int_equal(parse("base_image: a\nbase_image: b\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "twice"));
	assert_int_equal(parse("base_image: [a]\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "'base_image' must be a non-empty string"));
	assert_int_equal(parse("base-image: a\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "base_image"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_metrics_none),
		cmocka_unit_test(test_backend_keys),
		cmocka_unit_test(test_docker_keys),
		cmocka_unit_test(test_empty_is_defaults),
		cmocka_unit_test(test_errors_name_the_problem),
		cmocka_unit_test(test_slurm_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
