/* record: run.log cap, staging with fingerprints, run directories. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmpdir(void)
{
	char *d = strdup("/tmp/lbrec-XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_rf(const char *d)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

static char *slurp(const char *path, size_t *len)
{
	char *data = NULL;
	assert_int_equal(lb_read_file_at(AT_FDCWD, path, 1 << 24, &data, len), 0);
	return data;
}

static void test_runlog_under_cap_is_verbatim(void **state)
{
	(void)state;
	char *d = tmpdir();
	char path[256];
	snprintf(path, sizeof path, "%s/run.log", d);
	lb_runlog *l;
	assert_int_equal(lb_runlog_open(path, 1024, &l), 0);
	lb_runlog_write(l, "hello\n", 6);
	lb_runlog_write(l, "world\n", 6);
	char *tail = lb_runlog_tail(l, 8);
	assert_string_equal(tail, "o\nworld\n");
	free(tail);
	uint64_t seen, written;
	bool cut;
	assert_int_equal(lb_runlog_close(l, &seen, &written, &cut), 0);
	assert_int_equal(seen, 12);
	assert_int_equal(written, 12);
	assert_false(cut);
	size_t len;
	char *data = slurp(path, &len);
	assert_string_equal(data, "hello\nworld\n");
	free(data);
	rm_rf(d);
	free(d);
}

/* Two streams meet in run.log at line boundaries: stderr's unfinished line is held while a
 * stdout line is written, an over-long one goes out with a break before the other stream's
 * next line, and the unfinished ends are written on lines of their own. */
static void test_runlog_streams_meet_at_line_boundaries(void **state)
{
	(void)state;
	char *d = tmpdir();
	char path[256];
	snprintf(path, sizeof path, "%s/run.log", d);
	lb_runlog *l;
	assert_int_equal(lb_runlog_open(path, 1 << 20, &l), 0);
	lb_runlog_write_stream(l, 1, "err 1: x = ", 11);
	lb_runlog_write_stream(l, 0, "acc: 0.1\n", 9);
	lb_runlog_write_stream(l, 1, "1\nerr 2", 7);
	lb_runlog_write_stream(l, 0, "acc: 0.2\nout end", 16);
	assert_int_equal(lb_runlog_close(l, NULL, NULL, NULL), 0);
	size_t len;
	char *got = slurp(path, &len);
	assert_string_equal(got, "acc: 0.1\nerr 1: x = 1\nacc: 0.2\nout end\nerr 2");
	free(got);

	static char bar[LB_RUNLOG_HOLD + 100];
	memset(bar, '#', sizeof bar);
	assert_int_equal(lb_runlog_open(path, 1 << 20, &l), 0);
	lb_runlog_write_stream(l, 1, bar, sizeof bar);
	lb_runlog_write_stream(l, 0, "acc: 0.3\n", 9);
	lb_runlog_write_stream(l, 1, "#\n", 2);
	assert_int_equal(lb_runlog_close(l, NULL, NULL, NULL), 0);
	got = slurp(path, &len);
	assert_int_equal(len, sizeof bar + strlen(LB_RUNLOG_BREAK) + 9 + 2);
	assert_memory_equal(got + sizeof bar, LB_RUNLOG_BREAK "acc: 0.3\n#\n",
			    strlen(LB_RUNLOG_BREAK) + 11);
	free(got);
	rm_rf(d);
	free(d);
}

static void test_runlog_cap_keeps_head_and_tail(void **state)
{
	(void)state;
	char *d = tmpdir();
	char path[256];
	snprintf(path, sizeof path, "%s/run.log", d);
	lb_runlog *l;
	assert_int_equal(lb_runlog_open(path, 2000, &l), 0);
	char line[32];
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(line, sizeof line, "line %04d\n", i);
		lb_runlog_write(l, line, (size_t)n);
	}
	uint64_t seen, written;
	bool cut;
	assert_int_equal(lb_runlog_close(l, &seen, &written, &cut), 0);
	assert_int_equal(seen, 10000);
	assert_true(cut);
	size_t len;
	char *data = slurp(path, &len);
	assert_int_equal(len, written);
	assert_true(len < 2200);
	assert_memory_equal(data, "line 0000\n", 10);
	assert_non_null(strstr(data, "[labbox: output cut: 8000 bytes omitted"));
	assert_string_equal(data + len - 10, "line 0999\n");
	free(data);
	rm_rf(d);
	free(d);
}

static void test_stage_copies_and_fingerprints(void **state)
{
	(void)state;
	char *d = tmpdir();
	char src[256], dst[256], p[300];
	snprintf(src, sizeof src, "%s/src", d);
	snprintf(dst, sizeof dst, "%s/dst", d);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(p, sizeof p, "%s/main.py", src);
	assert_int_equal(lb_write_file_atomic(p, "abc", 3), 0);
	snprintf(p, sizeof p, "%s/data", src);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/data/x.csv", src);
	assert_int_equal(lb_write_file_atomic(p, "", 0), 0);
	snprintf(p, sizeof p, "%s/.git", src);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/.git/HEAD", src);
	assert_int_equal(lb_write_file_atomic(p, "ref", 3), 0);
	snprintf(p, sizeof p, "%s/secret", src);
	assert_int_equal(symlink("/etc/shadow", p), 0);
	snprintf(p, sizeof p, "%s/pipe", src);
	assert_int_equal(mkfifo(p, 0644), 0);

	json_object *files = json_object_new_object();
	json_object *skipped = json_object_new_array();
	char err[256] = "";
	assert_int_equal(lb_record_stage(src, dst, (uid_t)-1, (gid_t)-1, files, skipped, err,
					 sizeof err),
			 0);
	json_object *v;
	assert_true(json_object_object_get_ex(files, "main.py", &v));
	assert_string_equal(json_object_get_string(v),
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_true(json_object_object_get_ex(files, "data/x.csv", &v));
	assert_string_equal(json_object_get_string(v),
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_false(json_object_object_get_ex(files, ".git/HEAD", &v));
	assert_true(json_object_object_get_ex(files, "secret", &v));
	assert_string_equal(json_object_get_string(v), "symlink");
	assert_int_equal(json_object_array_length(skipped), 1);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(skipped, 0)), "pipe");
	/* The symlink is copied, never followed. */
	char target[64] = "";
	snprintf(p, sizeof p, "%s/secret", dst);
	assert_true(readlink(p, target, sizeof target - 1) > 0);
	assert_string_equal(target, "/etc/shadow");
	snprintf(p, sizeof p, "%s/.git", dst);
	struct stat st;
	assert_int_equal(stat(p, &st), -1);
	/* Staging into an existing directory is refused, not merged. */
	assert_true(lb_record_stage(src, dst, (uid_t)-1, (gid_t)-1, files, skipped, err,
				    sizeof err) < 0);
	assert_non_null(strstr(err, "staging"));
	json_object_put(files);
	json_object_put(skipped);
	rm_rf(d);
	free(d);
}

static void test_run_dirs_are_unique(void **state)
{
	(void)state;
	char *d = tmpdir();
	char runs[256];
	snprintf(runs, sizeof runs, "%s/a/runs", d);
	char id1[64], id2[64];
	char *r1, *r2;
	assert_int_equal(lb_record_create_run_dir(runs, id1, &r1, NULL, 0), 0);
	assert_int_equal(lb_record_create_run_dir(runs, id2, &r2, NULL, 0), 0);
	assert_string_not_equal(id1, id2);
	assert_string_not_equal(r1, r2);
	assert_true(r1[0] == '/');
	assert_non_null(strstr(r1, id1));
	free(r1);
	free(r2);
	rm_rf(d);
	free(d);
}

static void test_fixed_and_nonfinite_json(void **state)
{
	(void)state;
	json_object *o = lb_record_fixed(1.23456, 3);
	assert_string_equal(json_object_to_json_string(o), "1.235");
	json_object_put(o);
}

/* The list of runs directories: resolved, each once, the most recent last, at most
 * LB_RECORD_KNOWN_MAX; lines that are not absolute paths are ignored. */
static void test_runs_dir_links(void **state)
{
	(void)state;
	char *d = tmpdir();
	char cwd[4096], link[4096], p[600];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(d), 0);
	assert_int_equal(lb_record_runs_dir_link(".labbox/runs", link, sizeof link), 0);
	assert_int_equal(mkdir(".labbox", 0700), 0);
	assert_int_equal(mkdir(".labbox/runs", 0700), 0);
	assert_int_equal(lb_record_runs_dir_link(".labbox/runs", link, sizeof link), 0);
	assert_int_equal(symlink("/nonexistent", ".labbox/labbox.db-wal"), 0);
	assert_int_equal(lb_record_runs_dir_link(".labbox/runs/", link, sizeof link), -ELOOP);
	assert_string_equal(link, ".labbox/labbox.db-wal");
	assert_int_equal(unlink(".labbox/labbox.db-wal"), 0);
	assert_int_equal(symlink("/tmp", "elsewhere"), 0);
	assert_int_equal(lb_record_runs_dir_link("elsewhere/runs", link, sizeof link), -ELOOP);
	assert_string_equal(link, "elsewhere");
	/* an absolute runs directory is the user's own choice */
	snprintf(p, sizeof p, "%s/elsewhere/runs", d);
	assert_int_equal(lb_record_runs_dir_link(p, link, sizeof link), 0);
	assert_int_equal(chdir(cwd), 0);
	rm_rf(d);
	free(d);
}

static void test_known_runs_dirs(void **state)
{
	(void)state;
	char *d = tmpdir();
	char cache[512], p[600];
	snprintf(cache, sizeof cache, "%s/cache", d);
	assert_int_equal(mkdir(cache, 0700), 0);
	char **v = NULL;
	size_t n = 9;
	assert_int_equal(lb_record_known_dirs(cache, &v, &n), 0);
	assert_null(v);
	assert_int_equal(n, 0);
	for (int i = 0; i < LB_RECORD_KNOWN_MAX + 6; i++) {
		snprintf(p, sizeof p, "%s/r%d", d, i);
		assert_int_equal(mkdir(p, 0700), 0);
		assert_int_equal(lb_record_known_note(cache, p), 0);
	}
	/* the first again, through a path that resolves to it: moved to the end, not doubled */
	snprintf(p, sizeof p, "%s/r1/../r0/", d);
	assert_int_equal(lb_record_known_note(cache, p), 0);
	assert_int_equal(lb_record_known_note(cache, p), 0);
	assert_int_equal(lb_record_known_dirs(cache, &v, &n), 0);
	assert_int_equal(n, LB_RECORD_KNOWN_MAX);
	snprintf(p, sizeof p, "%s/r0", d);
	assert_string_equal(v[n - 1], p);
	snprintf(p, sizeof p, "%s/r%d", d, LB_RECORD_KNOWN_MAX + 5);
	assert_string_equal(v[n - 2], p);
	snprintf(p, sizeof p, "%s/r7", d);
	assert_string_equal(v[0], p);
	lb_record_known_free(v, n);
	/* a directory gone since leaves the list at the next change, making room */
	snprintf(p, sizeof p, "%s/r8", d);
	assert_int_equal(rmdir(p), 0);
	snprintf(p, sizeof p, "%s/r9", d);
	assert_int_equal(lb_record_known_note(cache, p), 0);
	assert_int_equal(lb_record_known_dirs(cache, &v, &n), 0);
	assert_int_equal(n, LB_RECORD_KNOWN_MAX - 1);
	assert_string_equal(v[n - 1], p);
	snprintf(p, sizeof p, "%s/r8", d);
	for (size_t i = 0; i < n; i++)
		assert_string_not_equal(v[i], p);
	lb_record_known_free(v, n);
	assert_int_equal(lb_record_known_note(cache, "/no/such/runs/dir"), -ENOENT);
	/* a damaged list: what is not an absolute path is skipped */
	snprintf(p, sizeof p, "%s/runs-dirs", cache);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("relative/dir\n\n/abs/one\n/with\tcontrol\n/abs/two", f);
	fclose(f);
	assert_int_equal(lb_record_known_dirs(cache, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "/abs/one");
	assert_string_equal(v[1], "/abs/two");
	lb_record_known_free(v, n);
	rm_rf(d);
	free(d);
}

/* The seal: HMAC-SHA256 of "DOMAIN\n" + data with the user's key (a known answer from
 * Python's hmac), a key an older labbox left in the cache taken over into the state directory
 * (and gone from the cache), a key made on first use (32 bytes, 0600), and one others could
 * read refused. */
static void test_record_mac(void **state)
{
	(void)state;
	char dir[] = "/var/tmp/lbt-mac-XXXXXX", path[256], hex[65];
	assert_non_null(mkdtemp(dir));
	char *old = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
	char *old_state = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
	char state_home[64], cached_key[256];
	snprintf(state_home, sizeof state_home, "%s/state", dir);
	setenv("XDG_CACHE_HOME", dir, 1);
	setenv("XDG_STATE_HOME", state_home, 1);
	snprintf(path, sizeof path, "%s/labbox", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/labbox/record.key", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	unsigned char key[32];
	for (int i = 0; i < 32; i++)
		key[i] = (unsigned char)i;
	assert_int_equal(write(fd, key, 32), 32);
	close(fd);
	assert_int_equal(lb_record_mac("manifest.json", "abc", 3, hex), 0);
	assert_string_equal(hex, "7c72f2f7f793ce814198c471e076b17c2cbcbc709d7d69c836616b5496c60b72");
	/* Taken over: the state holds it, private; the cache no longer does. */
	snprintf(cached_key, sizeof cached_key, "%s", path);
	snprintf(path, sizeof path, "%s/labbox/record.key", state_home);
	struct stat kst;
	assert_int_equal(stat(path, &kst), 0);
	assert_int_equal(kst.st_mode & 0777, 0600);
	assert_int_equal(stat(state_home, &kst), 0);
	assert_int_equal(stat(cached_key, &kst), -1);
	assert_int_equal(lb_record_mac("manifest.json", "abc", 3, hex), 0);
	assert_string_equal(hex, "7c72f2f7f793ce814198c471e076b17c2cbcbc709d7d69c836616b5496c60b72");
	/* Another domain, another seal. */
	char other[65];
	assert_int_equal(lb_record_mac("sweep.json", "abc", 3, other), 0);
	assert_string_not_equal(hex, other);
	/* A file's seal matches; changed by a byte, it does not. */
	char fpath[256];
	snprintf(fpath, sizeof fpath, "%s/manifest.json", dir);
	FILE *f = fopen(fpath, "w");
	fputs("abc", f);
	fclose(f);
	assert_true(lb_record_mac_matches(dir, "manifest.json", hex));
	assert_false(lb_record_mac_matches(dir, "manifest.json", other));
	assert_false(lb_record_mac_matches(dir, "manifest.json", "short"));
	assert_false(lb_record_mac_matches(dir, "missing.json", hex));
	/* A key others may read seals nothing. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(lb_record_mac("manifest.json", "abc", 3, hex), -EPERM);
	/* None yet: made, private, and the same one used after. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(lb_record_mac("manifest.json", "abc", 3, hex), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 32);
	assert_int_equal(lb_record_mac("manifest.json", "abc", 3, other), 0);
	assert_string_equal(hex, other);
	/* A run directory: sealed when result.json carries manifest.json's seal and both name
	 * the run asked for; not when the row asks for another id, or the manifest changed. */
	const char *mtext = "{\"id\": \"run-1\"}";
	f = fopen(fpath, "w");
	fputs(mtext, f);
	fclose(f);
	assert_int_equal(lb_record_mac("manifest.json", mtext, strlen(mtext), hex), 0);
	snprintf(fpath, sizeof fpath, "%s/result.json", dir);
	f = fopen(fpath, "w");
	fprintf(f, "{\"id\": \"run-1\", \"manifest_mac\": \"%s\"}", hex);
	fclose(f);
	assert_true(lb_record_run_sealed(dir, "run-1"));
	assert_int_equal(lb_record_run_seal(dir, "run-1"), LB_SEAL_OLD_SCOPE);
	assert_true(lb_record_run_sealed(dir, NULL));
	assert_false(lb_record_run_sealed(dir, "run-2"));
	f = fopen(fpath, "w");
	fprintf(f, "{\"id\": \"run-2\", \"manifest_mac\": \"%s\"}", hex);
	fclose(f);
	assert_false(lb_record_run_sealed(dir, NULL));
	snprintf(fpath, sizeof fpath, "%s/manifest.json", dir);
	f = fopen(fpath, "w");
	fputs("{\"id\": \"run-2\"}", f);
	fclose(f);
	assert_false(lb_record_run_sealed(dir, "run-2"));
	/* The manifest above has no result_sealed: an older labbox's record, manifest only. */
	snprintf(fpath, sizeof fpath, "%s/result.json", dir);
	f = fopen(fpath, "w");
	fprintf(f, "{\"id\": \"run-2\", \"manifest_mac\": \"x\"}");
	fclose(f);
	assert_int_equal(lb_record_run_seal(dir, NULL), LB_SEAL_NONE);
	/* A manifest that says result.json is sealed: whole, or result changed. */
	const char *mtext2 = "{\"id\": \"run-3\", \"result_sealed\": true}";
	snprintf(fpath, sizeof fpath, "%s/manifest.json", dir);
	f = fopen(fpath, "w");
	fputs(mtext2, f);
	fclose(f);
	assert_int_equal(lb_record_mac("manifest.json", mtext2, strlen(mtext2), hex), 0);
	json_object *res = json_object_new_object();
	json_object_object_add(res, "id", json_object_new_string("run-3"));
	json_object_object_add(res, "metrics", json_tokener_parse("{\"acc\": 0.5, \"p\": \"a/b\"}"));
	json_object_object_add(res, "manifest_mac", json_object_new_string(hex));
	snprintf(fpath, sizeof fpath, "%s/result.json", dir);
	assert_int_equal(lb_record_write_json(fpath, res), 0);
	assert_int_equal(lb_record_run_seal(dir, "run-3"), LB_SEAL_RESULT_CHANGED);
	assert_int_equal(lb_record_result_seal(res), 0);
	assert_int_equal(lb_record_write_json(fpath, res), 0);
	assert_int_equal(lb_record_run_seal(dir, "run-3"), LB_SEAL_WHOLE);
	json_object_object_add(json_object_object_get(res, "metrics"), "acc", json_object_new_double(0.97));
	assert_int_equal(lb_record_write_json(fpath, res), 0);
	assert_int_equal(lb_record_run_seal(dir, "run-3"), LB_SEAL_RESULT_CHANGED);
	assert_false(lb_record_run_sealed(dir, "run-3"));
	json_object_put(res);
	/* A sweep document carries its own seal over all of it. */
	json_object *sw = json_tokener_parse("{\"invocation\": {\"expdir\": \"/e\"}, \"plan\": {\"cells\": 2}}");
	assert_false(lb_record_sweep_sealed(sw));
	assert_int_equal(lb_record_sweep_seal(sw, hex), 0);
	json_object_object_add(sw, "seal", json_object_new_string(hex));
	assert_true(lb_record_sweep_sealed(sw));
	assert_int_equal(lb_record_sweep_seal_of(sw), LB_SEAL_WHOLE);
	json_object_object_add(sw, "conditions", json_object_new_double(0.97));
	assert_false(lb_record_sweep_sealed(sw));
	json_object_object_del(sw, "conditions");
	json_object_object_add(json_object_object_get(sw, "plan"), "cells", json_object_new_int(3));
	assert_false(lb_record_sweep_sealed(sw));
	assert_int_equal(lb_record_sweep_seal_of(sw), LB_SEAL_NONE);
	/* An older labbox's seal, of invocation and plan only: old scope, whatever else. */
	json_object *inv = json_object_object_get(sw, "invocation"), *plan = json_object_object_get(sw, "plan");
	char buf[512];
	snprintf(buf, sizeof buf, "%s\n%s", json_object_to_json_string_ext(inv, JSON_C_TO_STRING_PLAIN),
		 json_object_to_json_string_ext(plan, JSON_C_TO_STRING_PLAIN));
	assert_int_equal(lb_record_mac("sweep.json", buf, strlen(buf), hex), 0);
	json_object_object_add(sw, "seal", json_object_new_string(hex));
	json_object_object_add(sw, "conditions", json_object_new_double(0.97));
	assert_int_equal(lb_record_sweep_seal_of(sw), LB_SEAL_OLD_SCOPE);
	assert_false(lb_record_sweep_sealed(sw));
	json_object_put(sw);
	if (old) {
		setenv("XDG_CACHE_HOME", old, 1);
		free(old);
	} else {
		unsetenv("XDG_CACHE_HOME");
	}
	if (old_state) {
		setenv("XDG_STATE_HOME", old_state, 1);
		free(old_state);
	} else {
		unsetenv("XDG_STATE_HOME");
	}
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* An index row agrees with the result.json it was written from, and not once a field the
 * views show (status, wall time, a metric, the sweep tag) differs. */
static void test_index_row_agrees(void **state)
{
	(void)state;
	char *d = tmpdir();
	char path[300];
	snprintf(path, sizeof path, "%s/labbox.db", d);
	lb_index *ix = NULL;
	char err[256];
	assert_int_equal(lb_index_open(path, &ix, err, sizeof err), 0);
	json_object *res = json_tokener_parse(
		"{\"id\": \"r1\", \"status\": \"completed\", \"ended_at\": \"2026-01-01T00:00:01Z\","
		" \"exit_code\": 0, \"labbox_exit_code\": 0, \"resources\": {\"wall_s\": 1.25},"
		" \"sweep\": {\"id\": \"s1\", \"cell\": 2, \"condition\": \"lr=0.1\","
		" \"params\": {\"lr\": \"0.1\"}, \"seed\": 1},"
		" \"metrics\": {\"values\": {\"acc\": 0.5, \"note\": \"NaN\"},"
		" \"conditions\": {\"a\": {\"acc\": 0.25}},"
		" \"files\": {\"results.json\": {\"x\": {\"y\": 3}}}}}");
	assert_non_null(res);
	assert_int_equal(lb_index_run_started(ix, "r1", d, d, "2026-01-01T00:00:00Z"), 0);
	assert_int_equal(lb_index_tag_sweep(ix, "r1", json_object_object_get(res, "sweep")), 0);
	assert_int_equal(lb_index_run_finished(ix, res), 0);
	json_object *row = NULL;
	assert_int_equal(lb_index_get(ix, "r1", &row), 0);
	bool agrees = false;
	assert_int_equal(lb_index_row_agrees(row, res, &agrees), 0);
	assert_true(agrees);

	json_object *m = json_object_object_get(row, "metrics");
	json_object_object_add(m, "acc", json_object_new_double(0.99));
	assert_int_equal(lb_index_row_agrees(row, res, &agrees), 0);
	assert_false(agrees);
	json_object_object_add(m, "acc", json_object_new_double(0.5));
	assert_int_equal(lb_index_row_agrees(row, res, &agrees), 0);
	assert_true(agrees);
	json_object_object_add(m, "extra", json_object_new_double(1));
	assert_int_equal(lb_index_row_agrees(row, res, &agrees), 0);
	assert_false(agrees);
	json_object_object_del(m, "extra");

	json_object_object_add(row, "status", json_object_new_string("failed"));
	assert_int_equal(lb_index_row_agrees(row, res, &agrees), 0);
	assert_false(agrees);
	json_object_object_add(row, "status", json_object_new_string("completed"));
	json_object_object_add(row, "sweep", NULL);
	assert_int_equal(lb_index_row_agrees(row, res, &agrees), 0);
	assert_false(agrees);
	json_object_put(row);

	/* A run whose labbox died: "running" in result.json, "interrupted" in the index. */
	json_object *run = json_tokener_parse("{\"id\": \"r2\", \"status\": \"running\"}");
	assert_int_equal(lb_index_run_started(ix, "r2", d, d, "2026-01-01T00:00:00Z"), 0);
	assert_int_equal(lb_index_get(ix, "r2", &row), 0);
	json_object_object_add(row, "status", json_object_new_string("interrupted"));
	assert_int_equal(lb_index_row_agrees(row, run, &agrees), 0);
	assert_true(agrees);
	json_object_put(row);
	json_object_put(run);
	json_object_put(res);
	lb_index_close(ix);
	rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_mac),
		cmocka_unit_test(test_runlog_under_cap_is_verbatim),
		cmocka_unit_test(test_runlog_cap_keeps_head_and_tail),
		cmocka_unit_test(test_runlog_streams_meet_at_line_boundaries),
		cmocka_unit_test(test_stage_copies_and_fingerprints),
		cmocka_unit_test(test_run_dirs_are_unique),
		cmocka_unit_test(test_known_runs_dirs),
		cmocka_unit_test(test_runs_dir_links),
		cmocka_unit_test(test_fixed_and_nonfinite_json),
		cmocka_unit_test(test_index_row_agrees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
