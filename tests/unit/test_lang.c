/* Unit tests for the languages' pure parts: the language of an entry point and of a name,
 * and the interpreter's command line (Octave's sourced script quoted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/lang.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void test_language_of_entry(void **state)
{
	(void)state;
	assert_int_equal(lb_lang_of_entry("main.py"), LB_LANG_PYTHON);
	assert_int_equal(lb_lang_of_entry("main.R"), LB_LANG_R);
	assert_int_equal(lb_lang_of_entry("src/fit.r"), LB_LANG_R);
	assert_int_equal(lb_lang_of_entry("main.m"), LB_LANG_OCTAVE);
	assert_int_equal(lb_lang_of_entry("run.jl"), LB_LANG_JULIA);
	/* no extension, or a dot in a directory name only */
	assert_int_equal(lb_lang_of_entry("train"), LB_LANG_PYTHON);
	assert_int_equal(lb_lang_of_entry("v1.m/train"), LB_LANG_PYTHON);
	assert_int_equal(lb_lang_of_entry(NULL), LB_LANG_PYTHON);
}

static void test_language_names(void **state)
{
	(void)state;
	lb_lang l;
	assert_int_equal(lb_lang_parse("R", &l), 0);
	assert_int_equal(l, LB_LANG_R);
	assert_int_equal(lb_lang_parse("MATLAB", &l), 0);
	assert_int_equal(l, LB_LANG_OCTAVE);
	assert_int_equal(lb_lang_parse("cobol", &l), -EINVAL);
	assert_int_equal(lb_lang_parse(NULL, &l), -EINVAL);
	assert_string_equal(lb_lang_name(LB_LANG_OCTAVE), "octave");
	assert_string_equal(lb_lang_default_interpreter(LB_LANG_R), "Rscript");
	assert_non_null(strstr(lb_lang_package(LB_LANG_R), "r-base-core"));
}

static void test_command_lines(void **state)
{
	(void)state;
	lb_python_info in;
	memset(&in, 0, sizeof in);
	strcpy(in.executable, "/usr/bin/Rscript");
	char *args[] = {"--lr", "0.1"};
	char *store = NULL;
	char **argv = lb_lang_argv(LB_LANG_R, &in, "main.R", args, 2, &store);
	assert_non_null(argv);
	assert_null(store);
	assert_string_equal(argv[0], "/usr/bin/Rscript");
	assert_string_equal(argv[1], "--vanilla");
	assert_string_equal(argv[2], "main.R");
	assert_string_equal(argv[3], "--lr");
	assert_string_equal(argv[4], "0.1");
	assert_null(argv[5]);
	free(argv);

	strcpy(in.executable, "/usr/bin/octave-cli");
	argv = lb_lang_argv(LB_LANG_OCTAVE, &in, "it's.m", NULL, 0, &store);
	assert_non_null(argv);
	assert_non_null(store);
	size_t n = 0;
	while (argv[n])
		n++;
	assert_string_equal(argv[n - 2], "--eval");
	/* the quote doubled, so the name stays one string of Octave's */
	assert_non_null(strstr(argv[n - 1], "source('it''s.m');"));
	assert_non_null(strstr(argv[n - 1], "sigterm_dumps_octave_core(false)"));
	free(argv);
	free(store);

	/* with arguments Octave runs the file: --eval takes none */
	argv = lb_lang_argv(LB_LANG_OCTAVE, &in, "main.m", args, 2, &store);
	assert_null(store);
	n = 0;
	while (argv[n])
		n++;
	assert_string_equal(argv[n - 3], "main.m");
	assert_string_equal(argv[n - 1], "0.1");
	free(argv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_language_of_entry),
		cmocka_unit_test(test_language_names),
		cmocka_unit_test(test_command_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
