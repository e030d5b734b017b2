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
	unsigned a = lb_escalate_for_failure(f);
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
	assert_int_equal(lb_escalate_for_failure(NULL), 0);
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

static void mk(const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void ln(const char *target, const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	unlink(p);
	assert_int_equal(symlink(target, p), 0);
}

/* Without links the patch is, byte for byte, what `diff -ruN` of the two copies wrote. */
static void test_diff_of_files_is_diff_ruN(void **state)
{
	(void)state;
	char root[] = "/tmp/lb-unit-rdiff-XXXXXX";
	assert_non_null(mkdtemp(root));
	char base[PATH_MAX], fin[PATH_MAX], patch[PATH_MAX], want[PATH_MAX], cmd[PATH_MAX * 4];
	snprintf(base, sizeof base, "%s/base", root);
	snprintf(fin, sizeof fin, "%s/final", root);
	snprintf(patch, sizeof patch, "%s/d.patch", root);
	snprintf(want, sizeof want, "%s/want.patch", root);
	mk(root, "base");
	mk(root, "final");
	mk(base, "src");
	mk(fin, "src");
	mk(fin, "new");
	mk(base, "__pycache__");
	put(base, "main.py", "import src.m\nx = 0\ny = 1\n");
	put(fin, "main.py", "import src.m\nx = 2\ny = 1\n");
	put(base, "src/m.py", "a = 1\n");
	put(fin, "src/m.py", "a = 1\n");
	put(base, "gone.txt", "bye\n");
	put(fin, "new/added.txt", "hello\nworld");
	put(base, "__pycache__/m.pyc", "x");
	bool changed = false;
	char err[512] = "";
	assert_int_equal(repair_diff(base, fin, patch, &changed, err, sizeof err), 0);
	assert_true(changed);
	snprintf(cmd, sizeof cmd, "cd %s && ln -s %s a && ln -s %s b && "
		 "diff -ruN -x __pycache__ -x .git -x .labbox a b > %s; test $? = 1",
		 root, base, fin, want);
	assert_int_equal(system(cmd), 0);
	char *got = get(root, "d.patch"), *exp = get(root, "want.patch");
	assert_non_null(got);
	assert_non_null(exp);
	assert_string_equal(got, exp);
	assert_non_null(strstr(got, "-x = 0\n+x = 2\n"));
	free(got);
	free(exp);
	assert_int_equal(repair_remove_tree(root), 0);
}

/* A link is diffed as the link (a line naming its target), never as what it leads to, in
 * every shape a repair can leave it; none of them fails or holds the diff. */
static void test_diff_never_reads_through_links(void **state)
{
	(void)state;
	char root[] = "/tmp/lb-unit-rlink-XXXXXX";
	assert_non_null(mkdtemp(root));
	char out[PATH_MAX], base[PATH_MAX], fin[PATH_MAX], patch[PATH_MAX];
	char secret[PATH_MAX + 16], other[PATH_MAX + 16], sdir[PATH_MAX + 16], fifo[PATH_MAX + 16];
	snprintf(out, sizeof out, "%s/outside", root);
	snprintf(base, sizeof base, "%s/base", root);
	snprintf(fin, sizeof fin, "%s/final", root);
	snprintf(patch, sizeof patch, "%s/d.patch", root);
	snprintf(secret, sizeof secret, "%s/secret.txt", out);
	snprintf(other, sizeof other, "%s/other.txt", out);
	snprintf(sdir, sizeof sdir, "%s/dir", out);
	snprintf(fifo, sizeof fifo, "%s/fifo", out);
	mk(root, "outside");
	mk(out, "dir");
	put(out, "secret.txt", "SECRET-in-file\n");
	put(out, "other.txt", "SECRET-in-other\n");
	put(out, "dir/inner.txt", "SECRET-in-dir\n");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	mk(root, "base");
	mk(root, "final");
	const char *both[] = {base, fin};
	for (int i = 0; i < 2; i++) {
		put(both[i], "main.py", "x = 0\n");
		ln(secret, both[i], "same.lnk");
		ln(secret, both[i], "retarget.lnk");
		ln(secret, both[i], "gone.lnk");
		ln(secret, both[i], "tofile.lnk");
		put(both[i], "fromfile", "plain\n");
		ln(sdir, both[i], "dir.lnk");
		ln(sdir, both[i], "dirgone.lnk");
		ln("/nonexistent/lb-dangling", both[i], "dangling.lnk");
		ln(fifo, both[i], "fifo.lnk");
		ln("/dev/zero", both[i], "dev.lnk");
	}
	bool changed = true;
	char err[512] = "";
	assert_int_equal(repair_diff(base, fin, patch, &changed, err, sizeof err), 0);
	assert_false(changed); /* the same links on both sides: nothing to say */
	ln(other, fin, "retarget.lnk");
	char p[PATH_MAX * 2];
	const char *gone[] = {"gone.lnk", "dirgone.lnk", "dangling.lnk", "fifo.lnk", "tofile.lnk",
			      "fromfile"};
	for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) {
		snprintf(p, sizeof p, "%s/%s", fin, gone[i]);
		assert_int_equal(unlink(p), 0);
	}
	put(fin, "tofile.lnk", "now a file\n");
	ln(secret, fin, "fromfile");
	ln(secret, fin, "added.lnk");
	ln(sdir, fin, "added-dir.lnk");
	ln(fifo, fin, "added-fifo.lnk");
	snprintf(p, sizeof p, "%s/a-fifo", fin);
	assert_int_equal(mkfifo(p, 0600), 0); /* left by the repair: named, never opened */
	put(fin, "main.py", "x = 1\n");
	double t0 = lb_time_monotonic();
	assert_int_equal(repair_diff(base, fin, patch, &changed, err, sizeof err), 0);
	assert_true(lb_time_monotonic() - t0 < 10);
	assert_true(changed);
	char *d = get(root, "d.patch");
	assert_non_null(d);
	assert_null(strstr(d, "SECRET"));
	assert_null(strstr(d, "same.lnk"));
	assert_null(strstr(d, "a/dir.lnk"));
	assert_null(strstr(d, "dev.lnk"));
	assert_non_null(strstr(d, "+++ b/a-fifo\t"));
	assert_non_null(strstr(d, "+a FIFO (not compared)\n"));
	assert_non_null(strstr(d, "-x = 0\n+x = 1\n"));
	char line[PATH_MAX * 4];
	snprintf(line, sizeof line, "-symbolic link to %s\n+symbolic link to %s\n", secret, other);
	assert_non_null(strstr(d, line)); /* retarget.lnk */
	const char *removed[][2] = {{"gone.lnk", secret}, {"dirgone.lnk", sdir},
				    {"dangling.lnk", "/nonexistent/lb-dangling"},
				    {"fifo.lnk", fifo}};
	for (size_t i = 0; i < sizeof removed / sizeof *removed; i++) {
		snprintf(line, sizeof line, "--- a/%s\t", removed[i][0]);
		assert_non_null(strstr(d, line));
		snprintf(line, sizeof line, "@@ -1 +0,0 @@\n-symbolic link to %s\n", removed[i][1]);
		assert_non_null(strstr(d, line));
	}
	const char *added[][2] = {{"added.lnk", secret}, {"added-dir.lnk", sdir},
				  {"added-fifo.lnk", fifo}};
	for (size_t i = 0; i < sizeof added / sizeof *added; i++) {
		snprintf(line, sizeof line, "+++ b/%s\t", added[i][0]);
		assert_non_null(strstr(d, line));
		snprintf(line, sizeof line, "@@ -0,0 +1 @@\n+symbolic link to %s\n", added[i][1]);
		assert_non_null(strstr(d, line));
	}
	snprintf(line, sizeof line, "-symbolic link to %s\n+now a file\n", secret);
	assert_non_null(strstr(d, line)); /* tofile.lnk */
	snprintf(line, sizeof line, "-plain\n+symbolic link to %s\n", secret);
	assert_non_null(strstr(d, line)); /* fromfile */
	free(d);
	/* The views are gone with the diff. */
	snprintf(p, sizeof p, "%s.cmp", patch);
	struct stat st;
	assert_int_equal(lstat(p, &st), -1);
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
		cmocka_unit_test(test_diff_of_files_is_diff_ruN),
		cmocka_unit_test(test_diff_never_reads_through_links),
		cmocka_unit_test(test_cmd_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
