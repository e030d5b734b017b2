/* Unit tests for escalation advice (diagnose/escalate.c) and the repair loop's host side
 * (run/repair.c): the --escalate list, which permission a real diagnosis calls for, the diff
 * between copies, --apply and the repair command's time limit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/run/attempts_internal.h"
#include "labbox/diagnose.h"
#include "labbox/util.h"

static void test_parse(void **state)
{
	(void)state;
	unsigned m = 0;
	char err[256];
	assert_int_equal(lb_escalate_parse("network,memory", &m, err, sizeof err), 0);
	assert_int_equal(m, LB_ESCALATE_NETWORK | LB_ESCALATE_MEMORY);
	assert_int_equal(lb_escalate_parse("gpus", &m, err, sizeof err), 0);
	assert_int_equal(m, LB_ESCALATE_GPUS);
	assert_int_equal(lb_escalate_parse("network,gpus,env,memory", &m, err, sizeof err), 0);
	assert_int_equal(m, 0xf);
	assert_int_equal(lb_escalate_parse("network,root", &m, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "'root'"));
	assert_int_equal(m, 0); /* a refused list grants nothing, not its first words */
	assert_int_equal(lb_escalate_parse("", &m, err, sizeof err), -EINVAL);
	assert_int_equal(lb_escalate_parse("net", &m, err, sizeof err), -EINVAL);
	assert_string_equal(lb_escalate_name(LB_ESCALATE_MEMORY), "memory");
	assert_null(lb_escalate_name(0x40));
}

static unsigned advice_for(const char *log, bool oom)
{
	lb_failure_input in = {.log_tail = log, .log_tail_len = strlen(log), .exit_code = oom ? -1 : 1,
			       .signal = oom ? 9 : 0, .oom_killed = oom};
	json_object *f = lb_diagnose_failure(&in);
	unsigned a = lb_diagnose_escalation(f);
	json_object_put(f);
	return a;
}

/* Real diagnoses of real endings: the advice follows failure.c's own words. */
static void test_advice(void **state)
{
	(void)state;
	assert_int_equal(advice_for("Traceback (most recent call last):\n"
				    "  File \"/usr/lib/python3.11/socket.py\", line 232, in __init__\n"
				    "    _socket.socket.__init__(self, family, type, proto, fileno)\n"
				    "PermissionError: [Errno 1] Operation not permitted\n", false),
			 LB_ESCALATE_NETWORK);
	assert_int_equal(advice_for("Traceback (most recent call last):\n"
				    "  File \"main.py\", line 3, in <module>\n"
				    "ConnectionRefusedError: [Errno 111] Connection refused\n", false),
			 LB_ESCALATE_NETWORK);
	assert_int_equal(advice_for("", true), LB_ESCALATE_MEMORY);
	assert_int_equal(advice_for("Traceback (most recent call last):\n"
				    "  File \"main.py\", line 3, in <module>\n"
				    "RuntimeError: No CUDA GPUs are available\n", false),
			 LB_ESCALATE_GPUS);
	/* A write the sandbox refused is not the network's, and a bug is nobody's. */
	assert_int_equal(advice_for("Traceback (most recent call last):\n"
				    "  File \"main.py\", line 3, in <module>\n"
				    "PermissionError: [Errno 13] Permission denied: '/etc/x'\n", false), 0);
	assert_int_equal(advice_for("Traceback (most recent call last):\n"
				    "  File \"main.py\", line 3, in <module>\n"
				    "ZeroDivisionError: division by zero\n", false), 0);
	assert_int_equal(lb_diagnose_escalation(NULL), 0);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	assert_int_equal(lb_write_file_atomic(p, text, strlen(text)), 0);
}

static char *get(const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	char *data = NULL;
	size_t len = 0;
	if (lb_read_file_at(-100 /* AT_FDCWD */, p, 1 << 20, &data, &len) < 0)
		return NULL;
	return data;
}

static void test_diff_and_apply(void **state)
{
	(void)state;
	char root[] = "/tmp/lb-unit-repair-XXXXXX";
	assert_non_null(mkdtemp(root));
	char orig[PATH_MAX], base[PATH_MAX], fin[PATH_MAX], patch[PATH_MAX];
	snprintf(orig, sizeof orig, "%s/orig", root);
	snprintf(base, sizeof base, "%s/base", root);
	snprintf(fin, sizeof fin, "%s/final", root);
	snprintf(patch, sizeof patch, "%s/d.patch", root);
	assert_int_equal(mkdir(orig, 0755), 0);
	put(orig, "main.py", "x = 0\n");
	put(orig, "gone.txt", "bye\n");
	char gitdir[PATH_MAX + 8];
	snprintf(gitdir, sizeof gitdir, "%s/.git", orig);
	assert_int_equal(mkdir(gitdir, 0755), 0);
	put(orig, ".git/HEAD", "ref\n");
	char err[512] = "";
	assert_int_equal(repair_copy(orig, base, err, sizeof err), 0);
	assert_null(get(base, ".git/HEAD")); /* copies are taken as staging takes them */
	assert_int_equal(repair_copy(base, fin, err, sizeof err), 0);
	bool changed = true;
	assert_int_equal(repair_diff(base, fin, patch, &changed, err, sizeof err), 0);
	assert_false(changed);
	put(fin, "main.py", "x = 2\n");
	put(fin, "new.txt", "hello\n");
	char gone[PATH_MAX + 16];
	snprintf(gone, sizeof gone, "%s/gone.txt", fin);
	assert_int_equal(unlink(gone), 0);
	assert_int_equal(repair_diff(base, fin, patch, &changed, err, sizeof err), 0);
	assert_true(changed);
	char *p = get(root, "d.patch");
	assert_non_null(p);
	assert_non_null(strstr(p, "--- a/main.py"));
	assert_non_null(strstr(p, "+++ b/main.py"));
	assert_non_null(strstr(p, "-x = 0\n+x = 2\n"));
	assert_non_null(strstr(p, "+hello"));
	free(p);
	size_t n = 0;
	assert_int_equal(repair_apply(base, fin, orig, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	char *m = get(orig, "main.py"), *h = get(orig, ".git/HEAD"), *nw = get(orig, "new.txt");
	assert_string_equal(m, "x = 2\n");
	assert_string_equal(nw, "hello\n");
	assert_string_equal(h, "ref\n"); /* the experiment's own .git is left alone */
	assert_null(get(orig, "gone.txt"));
	free(m);
	free(h);
	free(nw);
	assert_int_equal(repair_remove_tree(root), 0);
}

static void test_cmd_limits(void **state)
{
	(void)state;
	char root[] = "/tmp/lb-unit-repaircmd-XXXXXX";
	assert_non_null(mkdtemp(root));
	char in[PATH_MAX], log[PATH_MAX];
	snprintf(in, sizeof in, "%s/in.json", root);
	snprintf(log, sizeof log, "%s/cmd.log", root);
	assert_int_equal(lb_write_file_atomic(in, "{\"status\": \"failed\"}", 20), 0);
	char *env[] = {"LABBOX_REPAIR_ATTEMPT=4", NULL};
	repair_cmd_result r;
	char err[256];
	/* stdin is the verdict, the environment says the attempt, the output is kept. */
	assert_int_equal(repair_run_cmd("cat; echo \" attempt=$LABBOX_REPAIR_ATTEMPT\"; pwd; exit 3",
					root, in, env, 30, log, &r, err, sizeof err), 0);
	assert_int_equal(r.exit_code, 3);
	assert_false(r.timed_out);
	char *text = get(root, "cmd.log");
	assert_non_null(strstr(text, "{\"status\": \"failed\"} attempt=4"));
	assert_non_null(strstr(text, root));
	free(text);
	/* A hang, with a child of its own holding the output open, ends at the limit. */
	double t0 = lb_time_monotonic();
	assert_int_equal(repair_run_cmd("sleep 300 & sleep 300", root, in, NULL, 0.5, log, &r, err,
					sizeof err), 0);
	assert_true(r.timed_out);
	assert_true(lb_time_monotonic() - t0 < 10);
	assert_int_equal(r.exit_code, -1);
	assert_int_equal(r.signal, 15);
	assert_int_equal(repair_remove_tree(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_advice),
		cmocka_unit_test(test_diff_and_apply),
		cmocka_unit_test(test_cmd_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
