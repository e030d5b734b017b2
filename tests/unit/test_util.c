/* util: hashing, parsing of sizes and durations, buffers, files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_path_under(void **state)
{
	(void)state;
	assert_true(lb_path_under("/proc", "/proc"));
	assert_true(lb_path_under("/proc/self", "/proc"));
	assert_false(lb_path_under("/procfs", "/proc"));
	assert_false(lb_path_under("/pro", "/proc"));
	assert_false(lb_path_under("/proc", ""));
	assert_false(lb_path_under("/proc", NULL));
}

/* A place inside the sandbox is joined to its new root by spelling: no part may climb. */
static void test_path_plain_and_sandbox_own(void **state)
{
	(void)state;
	assert_true(lb_path_plain("/data"));
	assert_true(lb_path_plain("/data//sub/"));
	assert_true(lb_path_plain("/a/..b/.c/b.."));
	assert_false(lb_path_plain("/a/../../var/tmp"));
	assert_false(lb_path_plain("/data/.."));
	assert_false(lb_path_plain("/./data"));
	assert_false(lb_path_plain("data"));
	assert_false(lb_path_plain(NULL));
	assert_true(lb_path_sandbox_own("/"));
	assert_true(lb_path_sandbox_own("//"));
	assert_true(lb_path_sandbox_own("/proc/self"));
	assert_true(lb_path_sandbox_own("/sys"));
	assert_true(lb_path_sandbox_own("/dev/shm"));
	assert_false(lb_path_sandbox_own("/device"));
	assert_false(lb_path_sandbox_own("/data"));
}

static void collect_gone(int dfd, const char *name, const char *path, void *ctx)
{
	(void)dfd;
	(void)path;
	char *seen = ctx;
	strncat(seen, name, 255 - strlen(seen));
	strncat(seen, ";", 255 - strlen(seen));
}

/* Only this user's directories of a process that is gone, named as mkdtemp names them. */
static void test_stale_pid_dirs(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-unit-stale-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[256];
	const char *names[4];
	char alive[64];
	snprintf(alive, sizeof alive, "labbox-x-%d-abcdef", (int)getpid());
	names[0] = "labbox-x-999999999-abcdef"; /* no such process */
	names[1] = alive;                       /* this one */
	names[2] = "labbox-x-999999999-abc";    /* not mkdtemp's name */
	names[3] = "labbox-y-999999999-abcdef"; /* another prefix */
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		assert_int_equal(mkdir(p, 0700), 0);
	}
	snprintf(p, sizeof p, "%s/labbox-x-999999998-abcdef", dir); /* a file, not a directory */
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	char seen[256] = "";
	lb_stale_pid_dirs(dir, "labbox-x", collect_gone, seen);
	assert_string_equal(seen, "labbox-x-999999999-abcdef;");
	char *rm[] = {"rm", "-rf", "--", dir, NULL};
	lb_buf ignored = {0};
	lb_capture(rm, 0, true, &ignored, NULL);
	lb_buf_free(&ignored);
}

/* A record's file names are taken only as staging makes them; the walk beneath a directory
 * makes what is missing and never follows a link on the way. */
static void test_rel_path_plain_and_parent_beneath(void **state)
{
	(void)state;
	assert_true(lb_rel_path_plain("main.py"));
	assert_true(lb_rel_path_plain("a/b/c.py"));
	assert_true(lb_rel_path_plain("..a/b..")); /* names, not components */
	static const char *const bad[] = {"", "/etc/passwd", "../x", "a/../../x", "a/..", "./a",
					  "a/./b", "a//b", "a/", ".", ".."};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_false(lb_rel_path_plain(bad[i]));
	assert_false(lb_rel_path_plain(NULL));
	char tmpl[] = "/tmp/lb-beneath-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	int fd = open(tmpl, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	const char *base = NULL;
	int p = lb_open_parent_beneath(fd, "x/y/f", true, &base);
	assert_true(p >= 0);
	assert_string_equal(base, "f");
	close(p);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/x/y", tmpl);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* A link on the way is not followed, made through or walked. */
	snprintf(path, sizeof path, "%s/l", tmpl);
	assert_int_equal(symlink("/tmp", path), 0);
	assert_true(lb_open_parent_beneath(fd, "l/z/f", true, &base) < 0);
	assert_true(lb_open_parent_beneath(fd, "l/f", false, &base) < 0);
	assert_int_equal(lb_open_parent_beneath(fd, "../f", true, &base), -EINVAL);
	assert_int_equal(lb_open_parent_beneath(fd, "/tmp/f", true, &base), -EINVAL);
	p = lb_open_parent_beneath(fd, "top", false, &base);
	assert_true(p >= 0);
	assert_string_equal(base, "top");
	close(p);
	close(fd);
	unlink(path);
	snprintf(path, sizeof path, "%s/x/y", tmpl);
	rmdir(path);
	snprintf(path, sizeof path, "%s/x", tmpl);
	rmdir(path);
	rmdir(tmpl);
}

/* lb_realpath_stat answers as realpath(3) and stat(2) would, for every spelling: canonical
 * (the openat2 walk), with a symlink on the way, with `.`, `..` and `//`, and absent. */
static void test_realpath_stat(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/lb-realpath-XXXXXX", base[PATH_MAX];
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, base));
	char d[PATH_MAX + 32], f[PATH_MAX + 32], l[PATH_MAX + 32];
	snprintf(d, sizeof d, "%s/d", base);
	snprintf(f, sizeof f, "%s/d/f", base);
	snprintf(l, sizeof l, "%s/l", base);
	assert_int_equal(mkdir(d, 0700), 0);
	int fd = open(f, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink("d", l), 0);
	const char *spellings[] = {"/d/f", "/l/f", "/./d/f", "//d/f", "/d/../d/f",
				   "/d/", "/l", "/d/missing", "/l/missing", "/d/f/x"};
	for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
		char p[PATH_MAX + 64], want[PATH_MAX], got[PATH_MAX];
		snprintf(p, sizeof p, "%s%s", base, spellings[i]);
		struct stat st, wst;
		errno = 0;
		int wr = realpath(p, want) ? (stat(want, &wst) < 0 ? -errno : 0) : -errno;
		int r = lb_realpath_stat(p, got, &st);
		assert_int_equal(r, wr);
		if (r == 0) {
			assert_string_equal(got, want);
			assert_int_equal(st.st_ino, wst.st_ino);
			assert_int_equal(st.st_mode, wst.st_mode);
		}
	}
	char root[PATH_MAX];
	struct stat st;
	assert_int_equal(lb_realpath_stat("/", root, &st), 0);
	assert_string_equal(root, "/");
	unlink(f);
	unlink(l);
	rmdir(d);
	rmdir(base);
}

/* lb_realpath_stat_in answers as lb_realpath_stat for every path, from a directory opened
 * once: a name in it (a file, a directory, a symlink to either, a dangling one, absent), a
 * deeper path, `.` and `..`, a path outside it; and from a directory that is not canonical
 * or is reached through a symlink (no descriptor: the plain answer). */
static void test_realpath_stat_in(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/lb-realdir-XXXXXX", base[PATH_MAX];
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, base));
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/d", base);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/d/sub", base);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/d/f", base);
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof p, "%s/d/lf", base);
	assert_int_equal(symlink("f", p), 0);
	snprintf(p, sizeof p, "%s/d/ld", base);
	assert_int_equal(symlink("sub", p), 0);
	snprintf(p, sizeof p, "%s/d/dangling", base);
	assert_int_equal(symlink("nowhere", p), 0);
	snprintf(p, sizeof p, "%s/ln", base);
	assert_int_equal(symlink("d", p), 0);
	const char *dirs[] = {"/d", "/ln", "/d/", "/./d", ""};
	const char *names[] = {"/d/f",	 "/d/sub",   "/d/lf",	"/d/ld",     "/d/dangling",
			       "/d/missing", "/d/sub/x", "/d/.",	"/d/..",     "/ln/f",
			       "/d//f",	 "/d/f/",    "/other", "",	     "/d/sub/../f"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		char dir[PATH_MAX + 64];
		snprintf(dir, sizeof dir, "%s%s", base, dirs[i]);
		lb_realdir d;
		lb_realdir_open(&d, dir);
		/* Only the canonical spelling without a symlink is opened. */
		assert_int_equal(d.fd >= 0, i == 0 || i == 4);
		for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
			char want[PATH_MAX], got[PATH_MAX];
			struct stat wst, st;
			snprintf(p, sizeof p, "%s%s", base, names[k]);
			int wr = lb_realpath_stat(p, want, &wst);
			int r = lb_realpath_stat_in(&d, p, got, &st);
			assert_int_equal(r, wr);
			if (r == 0) {
				assert_string_equal(got, want);
				assert_int_equal(st.st_ino, wst.st_ino);
				assert_int_equal(st.st_mode, wst.st_mode);
			}
		}
		lb_realdir_close(&d);
		assert_int_equal(d.fd, -1);
	}
	/* "/" is a directory like any other: its names are one component each. */
	lb_realdir root;
	lb_realdir_open(&root, "/");
	assert_true(root.fd >= 0);
	char got[PATH_MAX];
	struct stat st;
	assert_int_equal(lb_realpath_stat_in(&root, "/tmp", got, &st), 0);
	assert_string_equal(got, "/tmp");
	assert_true(S_ISDIR(st.st_mode));
	lb_realdir_close(&root);
	const char *rm[] = {"/d/f", "/d/lf", "/d/ld", "/d/dangling", "/ln"};
	for (size_t i = 0; i < sizeof rm / sizeof *rm; i++) {
		snprintf(p, sizeof p, "%s%s", base, rm[i]);
		unlink(p);
	}
	snprintf(p, sizeof p, "%s/d/sub", base);
	rmdir(p);
	snprintf(p, sizeof p, "%s/d", base);
	rmdir(p);
	rmdir(base);
}

static void test_sha256_vectors(void **state)
{
	(void)state;
	char hex[65];
	lb_sha256_buf_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	lb_sha256_buf_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	lb_sha256_buf_hex(two, strlen(two), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* a million 'a': many blocks in one update (the SHA-extension path where the CPU has it) */
	char *a = malloc(1000000);
	assert_non_null(a);
	memset(a, 'a', 1000000);
	lb_sha256_buf_hex(a, 1000000, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

static void test_sha256_chunking_matches_one_shot(void **state)
{
	(void)state;
	char data[1000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 7 + 3);
	char one[65];
	lb_sha256_buf_hex(data, sizeof data, one);
	for (size_t step = 1; step < 130; step += 13) {
		lb_sha256 c;
		uint8_t d[32];
		char hex[65];
		lb_sha256_init(&c);
		for (size_t off = 0; off < sizeof data; off += step)
			lb_sha256_update(&c, data + off, off + step > sizeof data ? sizeof data - off : step);
		lb_sha256_final(&c, d);
		lb_sha256_hex(d, hex);
		assert_string_equal(hex, one);
	}
	/* A million 'a's: the standard long vector. */
	lb_sha256 c;
	uint8_t d[32];
	char hex[65];
	char a[1000];
	memset(a, 'a', sizeof a);
	lb_sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		lb_sha256_update(&c, a, sizeof a);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_parse_size(void **state)
{
	(void)state;
	uint64_t v;
	assert_int_equal(lb_parse_size("1024", &v), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(lb_parse_size("4g", &v), 0);
	assert_int_equal(v, 4ULL << 30);
	assert_int_equal(lb_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ULL << 20);
	assert_int_equal(lb_parse_size("1.5k", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(lb_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(lb_parse_size("lots", &v), -EINVAL);
	assert_int_equal(lb_parse_size("", &v), -EINVAL);
	assert_int_equal(lb_parse_size("-1g", &v), -EINVAL);
	assert_int_equal(lb_parse_size("4x", &v), -EINVAL);
	assert_int_equal(lb_parse_size("4gg", &v), -EINVAL);
	assert_int_equal(lb_parse_size("nan", &v), -EINVAL);
	/* 2^63 and above would be recorded as negative numbers */
	assert_int_equal(lb_parse_size("8388607t", &v), 0);
	assert_int_equal(lb_parse_size("9223372036854775808", &v), -ERANGE);
	assert_int_equal(lb_parse_size("8388608t", &v), -ERANGE);
	assert_int_equal(lb_parse_size("1e30", &v), -ERANGE);
}

static void test_parse_seconds_and_long(void **state)
{
	(void)state;
	double s;
	long l;
	assert_int_equal(lb_parse_seconds("3", &s), 0);
	assert_true(s == 3.0);
	assert_int_equal(lb_parse_seconds("2.5", &s), 0);
	assert_true(s == 2.5);
	assert_int_equal(lb_parse_seconds("-1", &s), -EINVAL);
	assert_int_equal(lb_parse_seconds("0", &s), -EINVAL);
	assert_int_equal(lb_parse_seconds("inf", &s), -EINVAL);
	assert_int_equal(lb_parse_seconds("3s", &s), -EINVAL);
	assert_int_equal(lb_parse_long("256", &l), 0);
	assert_int_equal(l, 256);
	assert_int_equal(lb_parse_long("-3", &l), -EINVAL);
	assert_int_equal(lb_parse_long("12a", &l), -EINVAL);
	assert_int_equal(lb_parse_long("99999999999999999999999", &l), -EINVAL);
}

static void test_buf(void **state)
{
	(void)state;
	lb_buf b = {0};
	for (int i = 0; i < 1000; i++)
		assert_int_equal(lb_buf_printf(&b, "%d,", i), 0);
	assert_int_equal(b.len, strlen(b.data));
	assert_memory_equal(b.data, "0,1,2,", 6);
	assert_int_equal(lb_buf_puts(&b, "end"), 0);
	assert_string_equal(b.data + b.len - 4, ",end");
	lb_buf_free(&b);
	assert_null(b.data);
}

static void test_read_file_refuses_symlink_and_fifo(void **state)
{
	(void)state;
	char dir[] = "/tmp/lbtest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	int fd = openat(dfd, "f", O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(symlinkat("/etc/hostname", dfd, "link"), 0);
	assert_int_equal(mkfifoat(dfd, "fifo", 0644), 0);
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(lb_read_file_at(dfd, "f", 100, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(data, "hello");
	free(data);
	assert_int_equal(lb_read_file_at(dfd, "f", 4, &data, &len), -EFBIG);
	assert_int_equal(lb_read_file_at(dfd, "link", 100, &data, &len), -ELOOP);
	assert_int_equal(lb_read_file_at(dfd, "fifo", 100, &data, &len), -EINVAL);
	assert_int_equal(lb_read_file_at(dfd, "absent", 100, &data, &len), -ENOENT);
	unlinkat(dfd, "f", 0);
	unlinkat(dfd, "link", 0);
	unlinkat(dfd, "fifo", 0);
	close(dfd);
	rmdir(dir);
}

static void test_mkdir_p_and_atomic_write(void **state)
{
	(void)state;
	char dir[] = "/tmp/lbtest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/a/b/c", dir);
	assert_int_equal(lb_mkdir_p(path, 0755), 0);
	assert_int_equal(lb_mkdir_p(path, 0755), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	char file[300];
	snprintf(file, sizeof file, "%s/x.json", path);
	assert_int_equal(lb_write_file_atomic(file, "{}\n", 3), 0);
	assert_int_equal(lb_mkdir_p(file, 0755), -ENOTDIR);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* The verdict's way to disk: the pending file is invisible under its name until committed,
 * every named file is synced, and a missing one is reported by its index. */
static void test_pending_write_and_fsync_all(void **state)
{
	(void)state;
	char dir[] = "/tmp/lbtest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char a[300], res[300];
	snprintf(a, sizeof a, "%s/a.txt", dir);
	snprintf(res, sizeof res, "%s/result.json", dir);
	assert_int_equal(lb_write_file_atomic_nosync(a, "a\n", 2, 0600), 0);
	char *tmp = NULL;
	assert_int_equal(lb_write_file_pending(res, "{}\n", 3, 0600, &tmp), 0);
	assert_non_null(tmp);
	struct stat st;
	assert_int_equal(stat(res, &st), -1);
	const char *names[] = {a, tmp};
	size_t failed = 99;
	assert_int_equal(lb_fsync_all(AT_FDCWD, names, 2, &failed), 0);
	assert_int_equal(failed, 99);
	const char *rel[] = {"a.txt", "missing", "a.txt"};
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(lb_fsync_all(dfd, rel, 3, &failed), -ENOENT);
	assert_int_equal(failed, 1);
	assert_int_equal(lb_fsync_all(dfd, rel, 1, NULL), 0);
	close(dfd);
	assert_int_equal(lb_commit_file(tmp, res, 0), 0);
	char *text = NULL;
	assert_int_equal(lb_read_file_at(AT_FDCWD, res, 100, &text, NULL), 0);
	assert_string_equal(text, "{}\n");
	free(text);
	/* A failed sync commits nothing and leaves no temporary file behind. */
	assert_int_equal(lb_write_file_pending(a, "b\n", 2, 0600, &tmp), 0);
	char tmpname[400];
	snprintf(tmpname, sizeof tmpname, "%s", tmp);
	assert_int_equal(lb_commit_file(tmp, a, -EIO), -EIO);
	assert_int_equal(stat(tmpname, &st), -1);
	assert_int_equal(lb_read_file_at(AT_FDCWD, a, 100, &text, NULL), 0);
	assert_string_equal(text, "a\n");
	free(text);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_find_executable(void **state)
{
	(void)state;
	char *p = NULL;
	assert_int_equal(lb_find_executable("sh", &p), 0);
	assert_true(p[0] == '/');
	free(p);
	assert_int_equal(lb_find_executable("/bin/sh", &p), 0);
	assert_string_equal(p, "/bin/sh");
	free(p);
	assert_int_equal(lb_find_executable("no-such-program-labbox", &p), -ENOENT);
	char tmp[] = "/tmp/lbtest-XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	fchmod(fd, 0644);
	close(fd);
	assert_int_equal(lb_find_executable(tmp, &p), -EACCES);
	unlink(tmp);
}

static void test_iso8601(void **state)
{
	(void)state;
	char out[40];
	lb_time_iso8601(0.25, out);
	assert_string_equal(out, "1970-01-01T00:00:00.250Z");
	lb_time_iso8601(1795040000.0, out);
	assert_string_equal(out, "2026-11-18T22:13:20.000Z");
}


/* The disk walk counts a tree of any depth (2,000 levels here, past the descriptors a
 * recursive walk would hold) and a file with several names once. */
static void test_disk_measure_deep_and_linked(void **state)
{
	(void)state;
	char root[] = "/tmp/lb-test-disk-XXXXXX";
	assert_non_null(mkdtemp(root));
	int fd = open(root, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (int i = 0; i < 2000; i++) {
		assert_int_equal(mkdirat(fd, "d", 0755), 0);
		int nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(nfd >= 0);
		close(fd);
		fd = nfd;
	}
	int f = openat(fd, "big", O_WRONLY | O_CREAT, 0644);
	assert_true(f >= 0);
	static char buf[1 << 20];
	memset(buf, 'x', sizeof buf);
	for (int i = 0; i < 4; i++)
		assert_int_equal(write(f, buf, sizeof buf), (ssize_t)sizeof buf);
	close(f);
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof name, "link%d", i);
		assert_int_equal(linkat(fd, "big", fd, name, 0), 0);
	}
	close(fd);
	lb_disk_measure_t m;
	assert_int_equal(lb_disk_measure(root, &m), 0);
	assert_true(m.complete);
	assert_int_equal(m.inodes, 1 + 2000 + 1);
	/* 4 MiB once (not six times), plus 2001 directories of a block or so each */
	assert_true(m.bytes >= (4u << 20) && m.bytes < (4u << 20) + 2001u * 16384);
	assert_int_equal(lb_disk_usage(root), m.bytes);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}


/* The filter applied to data fed in pieces of at most chunk bytes; the result as a string. */
static char *term_filtered(const char *data, size_t len, size_t chunk)
{
	lb_term_filter_state st = {0};
	lb_buf b = {0};
	for (size_t i = 0; i < len; i += chunk) {
		size_t n = len - i < chunk ? len - i : chunk;
		assert_int_equal(lb_term_filter(&st, data + i, n, false, &b), 0);
	}
	assert_int_equal(lb_term_filter(&st, NULL, 0, true, &b), 0);
	lb_buf_append(&b, "", 1);
	return b.data;
}

/* Per-interpreter cache entries: past the bound, the least recently used keys go, all of a
 * key's files together; other kinds and other names stay; a used entry's mark is renewed
 * only when it is old. */
static void test_cache_bound(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/labbox-test-cache-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	int dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	char name[80];
	for (int k = 0; k < 10; k++)
		for (int e = 0; e < 2; e++) {
			snprintf(name, sizeof name, "gate-%032x.%s", k, e ? "pyc" : "rec");
			int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			assert_true(fd >= 0);
			close(fd);
			/* key k last used k hours ago: key 0 is the newest */
			struct timespec t[2] = {{.tv_sec = time(NULL) - 3600 * k}, {.tv_sec = time(NULL) - 3600 * k}};
			assert_int_equal(utimensat(dfd, name, t, 0), 0);
		}
	const char *others[] = {"freeze-00000000000000000000000000000009.json", "runs-dirs",
				"gate-short.pyc", "gate-0000000000000000000000000000000g.rec"};
	for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
		int fd = openat(dfd, others[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(lb_cache_bound_like(dfd, "not-a-key", 4), -EINVAL);
	/* 10 keys, bound 12: nothing goes */
	assert_int_equal(lb_cache_bound_like(dfd, "gate-00000000000000000000000000000000.rec", 12), 0);
	assert_int_equal(faccessat(dfd, "gate-00000000000000000000000000000009.pyc", F_OK, 0), 0);
	/* an old entry used now is marked used: it outlives newer ones that are not */
	lb_cache_entry_used(dfd, "gate-00000000000000000000000000000009.rec");
	/* bound 4: down to three keys (0, 1 and the used 9) */
	assert_int_equal(lb_cache_bound_like(dfd, "gate-00000000000000000000000000000000.rec", 4), 0);
	for (int k = 0; k < 10; k++)
		for (int e = 0; e < 2; e++) {
			snprintf(name, sizeof name, "gate-%032x.%s", k, e ? "pyc" : "rec");
			bool kept = k == 0 || k == 1 || k == 9;
			if ((faccessat(dfd, name, F_OK, 0) == 0) != kept)
				fail_msg("%s: %s", name, kept ? "removed" : "kept");
		}
	for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
		assert_int_equal(faccessat(dfd, others[i], F_OK, 0), 0);
		unlinkat(dfd, others[i], 0);
	}
	for (int k = 0; k < 10; k++)
		for (int e = 0; e < 2; e++) {
			snprintf(name, sizeof name, "gate-%032x.%s", k, e ? "pyc" : "rec");
			unlinkat(dfd, name, 0);
		}
	close(dfd);
	assert_int_equal(rmdir(tmpl), 0);
}

static void test_term_filter(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain\ttext\r\n", "plain\ttext\r\n"},
		{"bar\n\x1b[1;31mred\x1b[0m \x1b[2K\x1b[A", "bar\n\x1b[1;31mred\x1b[0m \x1b[2K\x1b[1A\x1b[1B"},
		/* no move above the echo's first line: cut to the lines it wrote, or dropped; the
		 * end puts the cursor back below the lowest line reached */
		{"\x1b[A\x1b[999Atop", "top"},
		{"a\nb\nc\x1b[999Ax\x1b[Bd\x1b[99999999B", "a\nb\nc\x1b[2Ax\x1b[1Bd\x1b[1B"},
		/* a move down past the lines written earns no move up */
		{"a\n\x1b[9999B\x1b[9999Atop", "a\n\x1b[1Atop\x1b[1B"},
		/* a private marker or an intermediate byte: another sequence, shown */
		{"\x1b[?35A", "\\x1b[?35A"},
		/* an attribute left on (conceal, black on black) is reset at the end; a reset seen
		 * needs none */
		{"\x1b[8mhidden", "\x1b[8mhidden\x1b[0m"},
		{"\x1b[30;40mx\x1b[mok", "\x1b[30;40mx\x1b[mok"},
		{"\x1b[0;8mx", "\x1b[0;8mx\x1b[0m"},
		/* OSC 52 (clipboard), OSC 0 (title), DCS, a cursor jump, a bare ESC, BEL */
		{"\x1b]52;c;ZWNobyBwd25lZA==\x07", "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"},
		{"\x1b]0;title\x1b\\", "\\x1b]0;title\\x1b\\"},
		{"\x1bP$q\"p\x1b\\", "\\x1bP$q\"p\\x1b\\"},
		{"\x1b[10;1H\x1b[6n", "\\x1b[10;1H\\x1b[6n"},
		{"\x1b", "\\x1b"},
		{"\x1b[", "\\x1b["},
		/* C1 CSI as UTF-8 and as a raw byte; a broken sequence; UTF-8 text passes */
		{"\xc2\x9b" "31m", "\\xc2\\x9b" "31m"},
		{"\x9b" "31m", "\\x9b" "31m"},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
		{"\xe2\x82", "\\xe2\\x82"},
		{"\x1b[00000000000000000000000000000000000000m", "\\x1b[00000000000000000000000000000000000000m"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (size_t chunk = 1; chunk <= 8; chunk++) {
			char *got = term_filtered(cases[i].in, strlen(cases[i].in), chunk);
			if (strcmp(got, cases[i].out) != 0)
				fail_msg("case %zu, pieces of %zu: got '%s'", i, chunk, got);
			free(got);
		}
}

/* What is sent as out->len bytes is the text: no NUL counted in it (MCP lines ended in
 * "}}\0\n"), and text for strict JSON readers has no \udcXX, only U+FFFD. */
static void test_utf8_escapes_and_lengths(void **state)
{
	(void)state;
	const char in[] = "{\"k\":\"a\xff" "b\xed\xa0\x80\"}";
	lb_buf b = {0};
	assert_int_equal(lb_json_escape_invalid_utf8(in, strlen(in), &b), 1);
	assert_string_equal(b.data, "{\"k\":\"a\\udcffb\\udced\\udca0\\udc80\"}");
	assert_int_equal(b.len, strlen(b.data));
	lb_buf_free(&b);
	assert_int_equal(lb_json_escape_invalid_utf8("ok \xe2\x96\x88", 6, &b), 0);
	assert_null(b.data);
	/* C1 controls become JSON escapes of the same character; U+00A0 and after stay */
	assert_int_equal(lb_json_escape_invalid_utf8("{\"a\xc2\x9b" "2J\xc2\xb1\xff\"}", 12, &b), 1);
	assert_string_equal(b.data, "{\"a\\u009b2J\xc2\xb1\\udcff\"}");
	lb_buf_free(&b);

	assert_int_equal(lb_utf8_replace_invalid(in, strlen(in), &b), 1);
	assert_string_equal(b.data, "{\"k\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}");
	assert_int_equal(b.len, strlen(b.data));
	lb_buf_free(&b);
	assert_int_equal(lb_utf8_replace_invalid("\xe2\x96\x88", 3, &b), 0);
	assert_null(b.data);

	/* Shown: bytes as \xNN; the limit stops between characters and escapes. */
	const char bar[] = "\xe2\x96\x88\xe2\x96\x88\xff!";
	assert_int_equal(lb_utf8_show(&b, bar, strlen(bar), 100), (long)strlen(bar));
	assert_string_equal(b.data, "\xe2\x96\x88\xe2\x96\x88\\xff!");
	lb_buf_free(&b);
	assert_int_equal(lb_utf8_show(&b, bar, strlen(bar), 5), 3);
	assert_string_equal(b.data, "\xe2\x96\x88");
	lb_buf_free(&b);
	assert_int_equal(lb_utf8_show(&b, bar, strlen(bar), 9), 6);
	assert_string_equal(b.data, "\xe2\x96\x88\xe2\x96\x88");
	lb_buf_free(&b);

	/* A cut character is dropped; a whole one, or bytes that were never one, are kept. */
	assert_int_equal(lb_utf8_whole_len("ab\xe2\x96", 4), 2);
	assert_int_equal(lb_utf8_whole_len("ab\xe2", 3), 2);
	assert_int_equal(lb_utf8_whole_len("ab\xf0\x9f\x98", 5), 2);
	assert_int_equal(lb_utf8_whole_len("ab\xe2\x96\x88", 5), 5);
	assert_int_equal(lb_utf8_whole_len("ab\xff", 3), 3);
	assert_int_equal(lb_utf8_whole_len("abc", 3), 3);
	assert_int_equal(lb_utf8_whole_len("", 0), 0);
}

/* The checksum of labbox's own files: the same in any pieces, and any one bit, any
 * length, changes it. */
static void test_checksum(void **state)
{
	(void)state;
	uint8_t data[300], whole[32], parts[32], other[32];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 131 + 7);
	lb_checksum c;
	for (size_t len = 0; len <= sizeof data; len += 37) {
		lb_checksum_init(&c);
		lb_checksum_update(&c, data, len);
		lb_checksum_final(&c, whole);
		for (size_t cut = 0; cut <= len; cut += 5) {
			lb_checksum_init(&c);
			lb_checksum_update(&c, data, cut);
			lb_checksum_update(&c, data + cut, len - cut);
			lb_checksum_final(&c, parts);
			assert_memory_equal(whole, parts, 32);
		}
		for (size_t bit = 0; bit < len * 8; bit++) {
			data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			lb_checksum_init(&c);
			lb_checksum_update(&c, data, len);
			lb_checksum_final(&c, other);
			data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			assert_memory_not_equal(whole, other, 32);
		}
	}
	/* a zero byte more, or less: the length is in it */
	uint8_t zeros[33] = {0};
	lb_checksum_init(&c);
	lb_checksum_update(&c, zeros, 32);
	lb_checksum_final(&c, whole);
	lb_checksum_init(&c);
	lb_checksum_update(&c, zeros, 33);
	lb_checksum_final(&c, other);
	assert_memory_not_equal(whole, other, 32);
}

/* Owner's class, else group's, else others' decides, as the kernel does; a directory needs
 * search as well to be written in. */
static void test_mode_lets_write(void **state)
{
	(void)state;
	struct stat st = {.st_uid = 0, .st_gid = 0, .st_mode = S_IFDIR | 0755};
	assert_false(lb_mode_lets_write(&st, 65534, 65534));
	st.st_mode = S_IFDIR | 0777;
	assert_true(lb_mode_lets_write(&st, 65534, 65534));
	st.st_mode = S_IFDIR | 0776; /* others may write but not enter */
	assert_false(lb_mode_lets_write(&st, 65534, 65534));
	st.st_mode = S_IFREG | 0666;
	assert_true(lb_mode_lets_write(&st, 65534, 65534));
	st.st_uid = 65534;
	st.st_mode = S_IFDIR | 0077; /* the owner's class is the one that counts */
	assert_false(lb_mode_lets_write(&st, 65534, 65534));
	st.st_uid = 0;
	st.st_gid = 65534;
	st.st_mode = S_IFDIR | 0775;
	assert_true(lb_mode_lets_write(&st, 65534, 65534));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checksum),
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_path_under),
		cmocka_unit_test(test_path_plain_and_sandbox_own),
		cmocka_unit_test(test_stale_pid_dirs),
		cmocka_unit_test(test_realpath_stat_in),
		cmocka_unit_test(test_sha256_chunking_matches_one_shot),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_disk_measure_deep_and_linked),
		cmocka_unit_test(test_parse_seconds_and_long),
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_read_file_refuses_symlink_and_fifo),
		cmocka_unit_test(test_mkdir_p_and_atomic_write),
		cmocka_unit_test(test_realpath_stat),
		cmocka_unit_test(test_find_executable),
		cmocka_unit_test(test_rel_path_plain_and_parent_beneath),
		cmocka_unit_test(test_pending_write_and_fsync_all),
		cmocka_unit_test(test_iso8601),
		cmocka_unit_test(test_term_filter),
		cmocka_unit_test(test_cache_bound),
		cmocka_unit_test(test_utf8_escapes_and_lengths),
		cmocka_unit_test(test_mode_lets_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
