/* sandbox: configuration helpers and real runs through the library. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/sandbox.h"
#include "labbox/util.h"
#include "../../src/sandbox/sandbox_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void collect(void *ctx, lb_stream stream, const char *data, size_t len)
{
	(void)stream;
	lb_buf_append(ctx, data, len);
}

static lb_sandbox *shell(const char *script, lb_buf *out)
{
	lb_sandbox *sb;
	assert_int_equal(lb_sandbox_new(&sb), 0);
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	assert_int_equal(lb_sandbox_set_argv(sb, argv), 0);
	lb_sandbox_set_output(sb, true, collect, out);
	return sb;
}

static const lb_rootfs_entry *rootfs_find(const lb_rootfs *rf, const char *path)
{
	for (size_t i = 0; i < rf->n; i++)
		if (strcmp(rf->e[i].path, path) == 0)
			return &rf->e[i];
	return NULL;
}

/* A host's / with unusual entries: each kind is planned, none makes the plan fail. */
static void test_rootfs_plan(void **state)
{
	(void)state;
	char root[] = "/tmp/labbox-unit-rootfs-XXXXXX", p[256];
	assert_non_null(mkdtemp(root));
	static const char *const dirs[] = {"usr", "usr/bin", "var", "var/tmp", "var/lib", "home",
					   "sys", "srv", "srv/a"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(p, 0750), 0);
	}
	snprintf(p, sizeof p, "%s/bin", root);
	assert_int_equal(symlink("usr/bin", p), 0);
	snprintf(p, sizeof p, "%s/dangling", root);
	assert_int_equal(symlink("/nowhere/at/all", p), 0);
	snprintf(p, sizeof p, "%s/fifo", root);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(p, sizeof p, "%s/file", root);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);

	lb_sandbox *sb;
	assert_int_equal(lb_sandbox_new(&sb), 0);
	lb_rootfs rf;
	/* no host's mount under /var/tmp: /var is cloned whole */
	assert_int_equal(lb_rootfs_plan(sb, root, NULL, 0, &rf), 0);
	assert_int_equal(rootfs_find(&rf, "var")->kind, LB_ROOTFS_BIND);
	assert_true(rootfs_find(&rf, "var")->is_dir);
	assert_null(rootfs_find(&rf, "var/tmp"));
	assert_int_equal(rootfs_find(&rf, "usr")->kind, LB_ROOTFS_BIND);
	assert_int_equal(rootfs_find(&rf, "bin")->kind, LB_ROOTFS_LINK);
	assert_string_equal(rootfs_find(&rf, "bin")->target, "usr/bin");
	assert_string_equal(rootfs_find(&rf, "dangling")->target, "/nowhere/at/all");
	assert_int_equal(rootfs_find(&rf, "file")->kind, LB_ROOTFS_BIND);
	assert_false(rootfs_find(&rf, "file")->is_dir);
	assert_null(rootfs_find(&rf, "fifo"));
	/* hidden and fresh places are empty directories, present even where the host lacks them */
	static const char *const empty[] = {"home", "sys", "proc", "dev", "tmp"};
	for (size_t i = 0; i < sizeof empty / sizeof *empty; i++)
		assert_int_equal(rootfs_find(&rf, empty[i])->kind, LB_ROOTFS_DIR);
	lb_rootfs_free(&rf);

	/* a host's mount under /var/tmp: /var is planned entry by entry, /var/tmp left empty */
	char mnt[300], other[300];
	snprintf(mnt, sizeof mnt, "%s/var/tmp/x", root);
	snprintf(other, sizeof other, "%s/srv/a", root);
	char *mounts[] = {other, mnt, "/proc"};
	assert_int_equal(lb_rootfs_plan(sb, root, mounts, 3, &rf), 0);
	const lb_rootfs_entry *var = rootfs_find(&rf, "var");
	assert_int_equal(var->kind, LB_ROOTFS_DIR);
	assert_true(var->owned);
	assert_int_equal(var->mode, 0750);
	assert_int_equal(rootfs_find(&rf, "var/lib")->kind, LB_ROOTFS_BIND);
	assert_int_equal(rootfs_find(&rf, "var/tmp")->kind, LB_ROOTFS_DIR);
	assert_false(rootfs_find(&rf, "var/tmp")->owned);
	/* a mount under no hidden directory changes nothing */
	assert_int_equal(rootfs_find(&rf, "srv")->kind, LB_ROOTFS_BIND);
	assert_null(rootfs_find(&rf, "srv/a"));
	lb_rootfs_free(&rf);
	assert_int_equal(lb_rootfs_plan(sb, "/nonexistent/labbox-unit", NULL, 0, &rf), -ENOENT);
	lb_sandbox_free(sb);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_hidden_paths(void **state)
{
	(void)state;
	lb_sandbox *sb;
	assert_int_equal(lb_sandbox_new(&sb), 0);
	assert_true(lb_sandbox_path_hidden(sb, "/root/.pyenv/shims/python3"));
	assert_true(lb_sandbox_path_hidden(sb, "/home/someone"));
	assert_true(lb_sandbox_path_hidden(sb, "/tmp/x"));
	assert_true(lb_sandbox_path_hidden(sb, "/run/docker.sock"));
	assert_false(lb_sandbox_path_hidden(sb, "/usr/bin/python3"));
	assert_false(lb_sandbox_path_hidden(sb, "/homestead"));
	assert_false(lb_sandbox_path_hidden(sb, "/rootfs/x"));
	/* what a program's directory may be: never a hidden root, a home, or above one */
	assert_false(lb_sandbox_dir_exposable(sb, "/home"));
	assert_false(lb_sandbox_dir_exposable(sb, "/home/someone"));
	assert_true(lb_sandbox_dir_exposable(sb, "/home/someone/.venv"));
	assert_false(lb_sandbox_dir_exposable(sb, "/root"));
	assert_true(lb_sandbox_dir_exposable(sb, "/root/.pyenv/versions/3.11.7"));
	assert_false(lb_sandbox_dir_exposable(sb, "/tmp"));
	assert_false(lb_sandbox_dir_exposable(sb, "/usr/lib")); /* shown anyway */
	char home[PATH_MAX];
	const char *h = getenv("HOME");
	if (h && realpath(h, home) && strcmp(home, "/") != 0) {
		assert_false(lb_sandbox_dir_exposable(sb, home));
		char *slash = strrchr(home, '/');
		if (slash && slash != home) {
			*slash = '\0'; /* what holds it */
			assert_false(lb_sandbox_dir_exposable(sb, home));
		}
	}
	char *rel[] = {"sh", NULL};
	assert_int_equal(lb_sandbox_set_argv(sb, rel), -EINVAL);
	assert_int_equal(lb_sandbox_add_env(sb, "=x"), -EINVAL);
	assert_int_equal(lb_sandbox_add_env(sb, "NOEQUALS"), -EINVAL);
	uid_t uid;
	gid_t gid;
	lb_sandbox_payload_ids(sb, &uid, &gid);
	if (getuid() == 0)
		assert_int_equal(uid, 65534);
	else
		assert_int_equal(uid, getuid());
	lb_sandbox_free(sb);
}

static void test_exit_code_and_output(void **state)
{
	(void)state;
	lb_buf out = {0};
	lb_sandbox *sb = shell("echo out; echo err >&2; exit 3", &out);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_int_equal(res.outcome, LB_SB_EXITED);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(lb_sandbox_exit_status(&res), 3);
	assert_string_equal(out.data, "out\nerr\n");
	assert_true(res.isolation.pid_ns && res.isolation.user_ns && res.isolation.net_ns);
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

static void test_clean_environment_with_additions(void **state)
{
	(void)state;
	lb_buf out = {0};
	setenv("LABBOX_UNIT_CANARY", "leaked", 1);
	lb_sandbox *sb = shell("echo \"[$LABBOX_UNIT_CANARY][$FOO][$HOME]\"", &out);
	assert_int_equal(lb_sandbox_add_env(sb, "FOO=bar"), 0);
	assert_int_equal(lb_sandbox_add_env(sb, "FOO=baz"), 0);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_string_equal(out.data, "[][baz][/tmp]\n");
	unsetenv("LABBOX_UNIT_CANARY");
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

static void test_signal_and_budget(void **state)
{
	(void)state;
	lb_buf out = {0};
	lb_sandbox *sb = shell("kill -KILL $$", &out);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_int_equal(res.outcome, LB_SB_SIGNALED);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_int_equal(lb_sandbox_exit_status(&res), 137);
	lb_sandbox_free(sb);

	sb = shell("echo started; sleep 30", &out);
	lb_sandbox_set_budget(sb, 0.5);
	lb_sandbox_set_grace(sb, 0.5);
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_int_equal(res.outcome, LB_SB_TIMEOUT);
	assert_true(res.timed_out);
	assert_int_equal(lb_sandbox_exit_status(&res), 124);
	assert_true(res.wall_s < 25);
	assert_non_null(strstr(out.data, "started"));
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

static void test_exec_failure_comes_back(void **state)
{
	(void)state;
	lb_sandbox *sb;
	assert_int_equal(lb_sandbox_new(&sb), 0);
	char *argv[] = {"/no/such/program", NULL};
	assert_int_equal(lb_sandbox_set_argv(sb, argv), 0);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_int_equal(res.outcome, LB_SB_SETUP_FAILED);
	assert_string_equal(res.setup_step, "exec");
	assert_int_equal(res.setup_errno, ENOENT);
	assert_non_null(strstr(res.setup_error, "/no/such/program"));
	assert_int_equal(lb_sandbox_exit_status(&res), 127);
	lb_sandbox_free(sb);
}

/* A limit is either enforced (and says by what) or refused before anything runs. */
static void test_limits_enforced_or_refused(void **state)
{
	(void)state;
	lb_buf out = {0};
	lb_sandbox *sb = shell("echo ran", &out);
	lb_sandbox_set_memory(sb, 1 << 30);
	lb_sandbox_set_pids(sb, 64);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	if (res.outcome == LB_SB_SETUP_FAILED) {
		assert_int_equal(lb_sandbox_exit_status(&res), 125);
		assert_non_null(strstr(res.setup_error, "--allow-degraded"));
		assert_null(out.data); /* nothing ran */
	} else {
		assert_int_equal(res.outcome, LB_SB_EXITED);
		assert_non_null(res.isolation.memory_enforced_by);
		assert_non_null(res.isolation.pids_enforced_by);
		assert_non_null(res.isolation.cgroup);
		assert_string_equal(out.data, "ran\n");
	}
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

static void test_degraded_needs_a_known_name(void **state)
{
	(void)state;
	lb_sandbox *sb;
	assert_int_equal(lb_sandbox_new(&sb), 0);
	assert_int_equal(lb_sandbox_allow_degraded(sb, "memory"), 0);
	assert_int_equal(lb_sandbox_allow_degraded(sb, "all"), 0);
	assert_int_equal(lb_sandbox_allow_degraded(sb, "seccomp"), -EINVAL);
	lb_sandbox_free(sb);
}


static void test_inode_limit(void **state)
{
	(void)state;
	/* one inode per 4 KiB of the disk limit, at least 10,000, at most a million and at most
	 * a quarter of the free */
	assert_int_equal(lb_sandbox_inode_limit((uint64_t)10 << 30, 0), 1000000);
	assert_int_equal(lb_sandbox_inode_limit((uint64_t)2 << 30, 0), 524288);
	assert_int_equal(lb_sandbox_inode_limit((uint64_t)10 << 30, 1000000), 250000);
	assert_int_equal(lb_sandbox_inode_limit((uint64_t)10 << 30, 4000000), 1000000);
	assert_int_equal(lb_sandbox_inode_limit(16u << 20, 0), 10000);
	assert_int_equal(lb_sandbox_inode_limit(16u << 20, 100), 25);
	assert_int_equal(lb_sandbox_inode_limit(16u << 20, 3), 1);
}

/* The kernel's own lines, with optional fields and escaped names. */
static void test_mountinfo_lines(void **state)
{
	(void)state;
	lb_mountinfo_entry e;
	assert_int_equal(lb_mountinfo_parse("36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime "
					    "master:1 shared:7 - ext4 /dev/root rw,errors=continue\n",
					    &e), 0);
	assert_string_equal(e.mountpoint, "/mnt/my disk");
	assert_int_equal(lb_mountinfo_parse("36 35 98:0 / /a\\134b\\011c rw - tmpfs none rw", &e), 0);
	assert_string_equal(e.mountpoint, "/a\\b\tc");
	assert_int_equal(e.major, 98);
	assert_string_equal(e.fstype, "tmpfs");
	assert_int_equal(lb_mountinfo_parse("36 35 7:3 / /runs/x/exp rw - ext4 /dev/loop3 rw", &e), 0);
	assert_int_equal(e.minor, 3);
	assert_string_equal(e.mountpoint, "/runs/x/exp");
	/* no separator, too few fields, an empty type */
	assert_int_equal(lb_mountinfo_parse("36 35 98:0 / /x rw ext4 none rw", &e), -EINVAL);
	assert_int_equal(lb_mountinfo_parse("36 35 - ext4 none rw", &e), -EINVAL);
	assert_true(lb_mountinfo_parse("36 35 98:0 / /x rw - ", &e) < 0);
}

/* labbox's own files, from memory: there inside, read-only, and the names it refuses. */
static void test_files_from_memory(void **state)
{
	(void)state;
	lb_buf out = {0};
	lb_sandbox *sb = shell("cat /run/lbt/a.txt /run/lbt/sub/b.txt; stat -c '%a %F' "
			       "/run/lbt/sub /run/lbt/a.txt; (echo x > /run/lbt/c) 2>/dev/null || "
			       "echo refused; rm /run/lbt/a.txt 2>/dev/null || echo kept",
			       &out);
	umask(077); /* the modes are set outright: the payload is another user inside */
	assert_int_equal(lb_sandbox_add_file(sb, "/run/lbt/", "a.txt", "one\n", 4), 0);
	assert_int_equal(lb_sandbox_add_file(sb, "/run/lbt", "sub/b.txt", "two\n", 4), 0);
	assert_int_equal(lb_sandbox_add_file(sb, "/run/lbt", "a.txt", "x", 1), -EEXIST);
	const char *bad[] = {"", "/abs", "a/../b", "./a", "a//b", "a/", ".."};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(lb_sandbox_add_file(sb, "/run/lbt", bad[i], "x", 1), -EINVAL);
	assert_int_equal(lb_sandbox_add_file(sb, "/proc/lbt", "a", "x", 1), -EINVAL);
	assert_int_equal(lb_sandbox_add_file(sb, "relative", "a", "x", 1), -EINVAL);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	umask(022);
	assert_int_equal(res.outcome, LB_SB_EXITED);
	assert_string_equal(out.data, "one\ntwo\n755 directory\n644 regular file\nrefused\nkept\n");
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

static int py_args(const char *cmd, size_t len, const char *ref, size_t reflen, bool nousersite)
{
	char why[200];
	return sb_exec_python_args(cmd, len, ref, reflen, nousersite, why, sizeof why);
}

/* the run's interpreter as labbox starts it */
#define RUN_CMD "/usr/bin/python3\0main.py\0"
#define PY_ARGS(lit, nous) py_args(lit, sizeof lit - 1, RUN_CMD, sizeof RUN_CMD - 1, nous)
#define PY_ARGS_REF(lit, ref) py_args(lit, sizeof lit - 1, ref, sizeof ref - 1, false)

static void test_exec_guard_python_args(void **state)
{
	(void)state;
	/* what the gate builds for a spawned child */
	assert_int_equal(PY_ARGS("python3\0-s\0-P\0-c\0from multiprocessing.spawn import spawn_main; "
				 "spawn_main(tracker_fd=5, pipe_handle=7)\0--multiprocessing-fork\0", false), 0);
	assert_int_equal(PY_ARGS("python3\0-B\0-s\0-P\0-c\0x\0", false), 0);
	assert_int_equal(PY_ARGS("python3\0-sc\0x\0", false), 0);
	assert_int_equal(PY_ARGS("python3\0-c\0x\0", false), -EPERM); /* the user site's .pth */
	assert_int_equal(PY_ARGS("python3\0-c\0x\0", true), 0);       /* PYTHONNOUSERSITE */
	assert_int_equal(PY_ARGS("python3\0-sI\0-c\0x\0", false), -EPERM);
	assert_int_equal(PY_ARGS("python3\0-s\0-E\0x.py\0", false), -EPERM);
	assert_int_equal(PY_ARGS("python3\0-S\0-s\0x.py\0", false), -EPERM);
	/* after the script or the program, the arguments are theirs */
	assert_int_equal(PY_ARGS("python3\0-s\0main.py\0-I\0", false), 0);
	assert_int_equal(PY_ARGS("python3\0-s\0-c\0-I\0", false), 0);
	assert_int_equal(PY_ARGS("python3\0-s\0-m\0mod\0-E\0", false), 0);
	/* options that write or import while the gate is read: only as the run had them */
	assert_int_equal(PY_ARGS("python3\0-s\0-v\0-c\0x\0", false), -EPERM);
	assert_int_equal(PY_ARGS("python3\0-s\0-W\0ignore::site.X\0-c\0x\0", false), -EPERM);
	assert_int_equal(PY_ARGS("python3\0-s\0-X\0importtime\0x.py\0", false), -EPERM);
	assert_int_equal(PY_ARGS_REF("python3\0-s\0-X\0importtime\0x.py\0",
				     "/usr/bin/python3\0-Ximporttime\0main.py\0"), 0);
	assert_int_equal(PY_ARGS_REF("python3\0-s\0-Wignore\0-c\0x\0",
				     "/usr/bin/python3\0-W\0ignore\0main.py\0"), 0);
	assert_int_equal(PY_ARGS_REF("python3\0-s\0-Walways\0-c\0x\0",
				     "/usr/bin/python3\0-W\0ignore\0main.py\0"), -EPERM);
	/* an option's value is not an option */
	assert_int_equal(PY_ARGS_REF("python3\0-s\0-W\0-I\0x.py\0",
				     "/usr/bin/python3\0-W-I\0main.py\0"), 0);
	assert_int_equal(PY_ARGS("python3\0-s\0-X\0presite=m\0x.py\0", false), -EPERM);
	assert_int_equal(PY_ARGS("python3\0-s\0-Xpycache_prefix=/tmp/p\0x.py\0", false), -EPERM);
	assert_int_equal(PY_ARGS_REF("python3\0-s\0-Xfrozen_modules=off\0x.py\0",
				     "/usr/bin/python3\0-Xfrozen_modules=off\0main.py\0"), -EPERM);
	assert_int_equal(PY_ARGS("python3\0-s\0--check-hash-based-pycs\0never\0x.py\0", false),
			 -EPERM);
	assert_int_equal(PY_ARGS("python3\0", false), -EPERM);
}

static int env_same(const char *env, size_t len, const char *ref, size_t rlen)
{
	char why[200];
	return sb_exec_env_same(env, len, ref, rlen, why, sizeof why);
}

#define ENV_SAME(a, b) env_same(a, sizeof a - 1, b, sizeof b - 1)

static void test_exec_guard_environment(void **state)
{
	(void)state;
	assert_int_equal(ENV_SAME("PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0",
				  "PATH=/bin\0PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0"), 0);
	assert_int_equal(ENV_SAME("HOME=/tmp\0PATH=/x\0PYTHONPATH=/run/labbox-gate/py\0FOO=1\0"
				  "PYTHONHASHSEED=0\0", "PATH=/bin\0PYTHONPATH=/run/labbox-gate/py\0"
				  "HOME=/tmp\0"), 0);
	assert_int_equal(ENV_SAME("PYTHONPATH=/tmp\0HOME=/tmp\0", "PYTHONPATH=/run/labbox-gate/py\0"
				  "HOME=/tmp\0"), -EPERM);
	assert_int_equal(ENV_SAME("PYTHONPATH=/run/labbox-gate/py\0", "PYTHONPATH=/run/labbox-gate/py\0"
				  "HOME=/tmp\0"), -EPERM); /* HOME dropped */
	assert_int_equal(ENV_SAME("PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0LD_PRELOAD=/tmp/x.so\0",
				  "PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0"), -EPERM);
	assert_int_equal(ENV_SAME("PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0PYTHONHOME=/tmp\0",
				  "PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0"), -EPERM);
	assert_int_equal(ENV_SAME("PYTHONPATH=/run/labbox-gate/py\0PYTHONPATH=/tmp\0HOME=/tmp\0",
				  "PYTHONPATH=/run/labbox-gate/py\0HOME=/tmp\0"), -EPERM);
	assert_true(sb_exec_env_sensitive("OPENSSL_CONF", 12));
	assert_true(sb_exec_env_sensitive("GCONV_PATH", 10));
	assert_false(sb_exec_env_sensitive("PYTHONUNBUFFERED", 16));
	assert_false(sb_exec_env_sensitive("OMP_NUM_THREADS", 15));
}

/* In a real sandbox: the payload's own exec passes, a later exec of another program is killed
 * before it runs and reported. */
static void test_exec_guard_kills_another_program(void **state)
{
	(void)state;
	lb_buf out = {0};
	lb_sandbox *sb = shell("/bin/echo ran; echo \"status $?\"", &out);
	assert_int_equal(lb_sandbox_set_exec_guard(sb, LB_EXEC_GATED_PYTHON, false), 0);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_int_equal(res.outcome, LB_SB_EXITED);
	assert_non_null(strstr(out.data, "status 137\n")); /* dash says "Killed" too */
	assert_null(strstr(out.data, "ran"));
	assert_int_equal(res.exec_refused, 1);
	assert_non_null(strstr(res.exec_refusals[0].exe, "echo"));
	assert_string_equal(res.exec_refusals[0].argv, "/bin/echo ran");
	assert_string_equal(res.exec_refusals[0].why, "not the run's interpreter");
	assert_non_null(res.isolation.exec_guard);
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

static int listed(const sb_exec_list *l, dev_t dev, ino_t ino, const char *cmd, size_t len)
{
	char why[200];
	return sb_exec_listed(dev, ino, cmd, len, l, why, sizeof why);
}

#define LISTED(l, d, i, lit) listed(l, d, i, lit, sizeof lit - 1)

/* R's start-up script through bash, `which` through dash, dash itself only as sh -c, sed
 * with any arguments; nothing else, whatever its name. */
static void test_exec_guard_listed_programs(void **state)
{
	(void)state;
	sb_exec_list l = {.n = 4};
	l.prog[0] = (sb_exec_prog){.dev = 1, .ino = 10, .script_at = 1};
	snprintf(l.prog[0].script, sizeof l.prog[0].script, "/usr/lib/R/bin/R");
	l.prog[1] = (sb_exec_prog){.dev = 1, .ino = 20, .script_at = 1};
	snprintf(l.prog[1].script, sizeof l.prog[1].script, "/usr/bin/which");
	l.prog[2] = (sb_exec_prog){.dev = 1, .ino = 20, .dash_c = true};
	l.prog[3] = (sb_exec_prog){.dev = 1, .ino = 30};
	assert_int_equal(LISTED(&l, 1, 10, "/bin/bash\0/usr/lib/R/bin/R\0--vanilla\0"), 0);
	assert_int_equal(LISTED(&l, 1, 10, "/bin/bash\0-c\0id\0"), -EPERM);
	assert_int_equal(LISTED(&l, 1, 10, "/bin/bash\0/tmp/R\0"), -EPERM);
	assert_int_equal(LISTED(&l, 1, 20, "/bin/sh\0/usr/bin/which\0uname\0"), 0);
	assert_int_equal(LISTED(&l, 1, 20, "sh\0-c\0rm -Rf /tmp/Rtmp1\0"), 0);
	assert_int_equal(LISTED(&l, 1, 20, "sh\0exp.sh\0"), -EPERM);
	assert_int_equal(LISTED(&l, 1, 20, "sh\0"), -EPERM);
	assert_int_equal(LISTED(&l, 1, 20, "sh\0-c"), -EPERM); /* no NUL: cut short */
	assert_int_equal(LISTED(&l, 1, 30, "/bin/sed\0-e\0s/a/b/\0"), 0);
	assert_int_equal(LISTED(&l, 1, 40, "/usr/bin/sed\0-e\0s/a/b/\0"), -EPERM);
	assert_int_equal(LISTED(&l, 2, 30, "/proc/self/fd/3\0"), -EPERM);
}

/* In a real sandbox: a listed program runs, another is killed before it runs, and a memfd
 * cannot be made. */
static void test_exec_guard_listed_in_a_sandbox(void **state)
{
	(void)state;
	lb_buf out = {0};
	lb_sandbox *sb = shell("/usr/bin/uname >/dev/null && echo listed; /bin/echo ran; "
			       "echo \"status $?\"", &out);
	assert_int_equal(lb_sandbox_set_exec_guard(sb, LB_EXEC_LISTED, false), 0);
	assert_int_equal(lb_sandbox_allow_exec(sb, "/usr/bin/uname", false), 0);
	assert_int_equal(lb_sandbox_allow_exec(sb, "usr/bin/uname", false), -EINVAL);
	lb_sandbox_result res;
	assert_int_equal(lb_sandbox_run(sb, &res), 0);
	assert_int_equal(res.outcome, LB_SB_EXITED);
	assert_non_null(strstr(out.data, "listed\n"));
	assert_non_null(strstr(out.data, "status 137\n"));
	assert_null(strstr(out.data, "ran"));
	assert_int_equal(res.exec_refused, 1);
	assert_string_equal(res.exec_refusals[0].argv, "/bin/echo ran");
	assert_non_null(res.isolation.exec_guard);
	lb_buf_free(&out);
	lb_sandbox_free(sb);
}

/* Each later mask's hide function is called where the payload could see its path, once. */
static int note_hide(lb_sandbox *sb, const char *path, void *ctx)
{
	(void)sb;
	char *seen = ctx;
	strcat(seen, path);
	strcat(seen, ";");
	return 0;
}

static void test_masks_where_seen(void **state)
{
	(void)state;
	lb_sandbox *sb;
	char seen[2048] = "", want[2048], base[] = "/tmp/lb-masks-XXXXXX", p[5][256], cmd[600];
	assert_non_null(mkdtemp(base));
	snprintf(cmd, sizeof cmd, "mkdir -p %s/q/runs %s/v/runs/r1/exp %s/w/x/runs %s/u/runs",
		 base, base, base, base);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(lb_sandbox_new(&sb), 0);
	assert_int_equal(lb_sandbox_mask_where_seen(sb, "rel/runs", note_hide, seen), -EINVAL);
	snprintf(p[0], sizeof p[0], "/srv/lb-masks-test/runs");
	snprintf(p[1], sizeof p[1], "%s/u/runs", base);
	snprintf(p[2], sizeof p[2], "%s/q/runs", base);
	snprintf(p[3], sizeof p[3], "%s/w/x/runs", base);
	snprintf(p[4], sizeof p[4], "%s/v/runs", base);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(lb_sandbox_mask_where_seen(sb, p[i], note_hide, seen), 0);
	/* /tmp is the sandbox's own: only what a volume (a project, a run's exp/ inside a runs
	 * directory) or the work directory shows is looked at */
	snprintf(cmd, sizeof cmd, "%s/q", base);
	assert_int_equal(lb_sandbox_add_bind(sb, cmd, "/data", false), 0);
	snprintf(cmd, sizeof cmd, "%s/v/runs/r1/exp", base);
	assert_int_equal(lb_sandbox_add_bind(sb, cmd, "/r1", false), 0);
	snprintf(cmd, sizeof cmd, "%s/w", base);
	assert_int_equal(lb_sandbox_set_workdir(sb, cmd), 0);
	assert_int_equal(lb_sandbox_settle_masks(sb, false), 0);
	snprintf(want, sizeof want, "%s;%s;%s;%s;", p[0], p[2], p[3], p[4]);
	assert_string_equal(seen, want);
	/* settled once: a second settle calls nothing */
	seen[0] = '\0';
	assert_int_equal(lb_sandbox_settle_masks(sb, true), 0);
	assert_string_equal(seen, "");
	/* all: a backend with volumes of its own looks at every one */
	assert_int_equal(lb_sandbox_mask_where_seen(sb, p[1], note_hide, seen), 0);
	assert_int_equal(lb_sandbox_settle_masks(sb, true), 0);
	snprintf(want, sizeof want, "%s;", p[1]);
	assert_string_equal(seen, want);
	lb_sandbox_free(sb);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	assert_int_equal(system(cmd), 0);
}

/* --gpus values: the forms the help names are read, anything else is refused with the value
 * named, whatever GPUs this host has. */
static void test_gpus_spec_parse(void **state)
{
	(void)state;
	lb_gpu_spec g;
	char err[256];
	assert_int_equal(lb_sandbox_gpus_parse("all", &g, err, sizeof err), 0);
	assert_true(g.all);
	assert_int_equal(lb_sandbox_gpus_parse("none", &g, err, sizeof err), 0);
	assert_false(g.all);
	assert_int_equal(g.n, 0);
	assert_int_equal(lb_sandbox_gpus_parse("0,2,10", &g, err, sizeof err), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.index[2], 10);
	static const char *const bad[] = {"", "bogus", "0,,1", ",0", "0,", "all,0", "1;2", "-1",
					  " 1", "+1", "0x1", "99999999", "0,0"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		assert_int_equal(lb_sandbox_gpus_parse(bad[i], &g, err, sizeof err), -EINVAL);
		char quoted[64];
		snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
		assert_non_null(strstr(err, quoted));
	}
	/* a malformed value is refused as such on a host without GPUs too, not as -ENODEV */
	lb_sandbox *sb = NULL;
	assert_int_equal(lb_sandbox_new(&sb), 0);
	assert_int_equal(lb_sandbox_use_gpus(sb, "bogus", err, sizeof err), -EINVAL);
	lb_sandbox_free(sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inode_limit),
		cmocka_unit_test(test_mountinfo_lines),
		cmocka_unit_test(test_hidden_paths),
		cmocka_unit_test(test_masks_where_seen),
		cmocka_unit_test(test_rootfs_plan),
		cmocka_unit_test(test_exit_code_and_output),
		cmocka_unit_test(test_clean_environment_with_additions),
		cmocka_unit_test(test_signal_and_budget),
		cmocka_unit_test(test_exec_failure_comes_back),
		cmocka_unit_test(test_limits_enforced_or_refused),
		cmocka_unit_test(test_degraded_needs_a_known_name),
		cmocka_unit_test(test_files_from_memory),
		cmocka_unit_test(test_exec_guard_python_args),
		cmocka_unit_test(test_exec_guard_environment),
		cmocka_unit_test(test_exec_guard_kills_another_program),
		cmocka_unit_test(test_exec_guard_listed_programs),
		cmocka_unit_test(test_exec_guard_listed_in_a_sandbox),
		cmocka_unit_test(test_gpus_spec_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
