/* record/export: the pure helpers of the MLflow and Sacred exports, and the refusal to follow
 * symlinks out of a run directory. */
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmpdir(void)
{
	char *d = strdup("/tmp/lbexp-XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_rf(const char *d)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(lb_write_file_atomic(path, text, strlen(text)), 0);
}

static bool exists(const char *dir, const char *name)
{
	char path[1024];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static void test_run_uuid_is_sha256_prefix(void **state)
{
	(void)state;
	char a[33], b[33];
	lb_export_run_uuid("abc", a);
	/* sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a3... */
	assert_string_equal(a, "ba7816bf8f01cfea414140de5dae2223");
	lb_export_run_uuid("20261129-225633-c52e58", a);
	lb_export_run_uuid("20261129-225633-c52e58", b);
	assert_string_equal(a, b);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(strspn(a, "0123456789abcdef"), 32);
	lb_export_run_uuid("20261129-225633-c52e59", b);
	assert_string_not_equal(a, b);
}

static void test_status_mapping(void **state)
{
	(void)state;
	assert_int_equal(lb_export_mlflow_status("running"), 1);
	assert_int_equal(lb_export_mlflow_status("completed"), 3);
	assert_int_equal(lb_export_mlflow_status("failed"), 4);
	assert_int_equal(lb_export_mlflow_status("invalid_metrics"), 4);
	assert_int_equal(lb_export_mlflow_status("infra_error"), 4);
	assert_int_equal(lb_export_mlflow_status("rejected"), 4);
	assert_int_equal(lb_export_mlflow_status("oom"), 4);
	assert_int_equal(lb_export_mlflow_status("timeout"), 5);
	assert_int_equal(lb_export_mlflow_status("interrupted"), 5);
	assert_int_equal(lb_export_mlflow_status("something new"), 4);
	assert_int_equal(lb_export_mlflow_status(NULL), 4);
	assert_string_equal(lb_export_sacred_status("running"), "RUNNING");
	assert_string_equal(lb_export_sacred_status("completed"), "COMPLETED");
	assert_string_equal(lb_export_sacred_status("failed"), "FAILED");
	assert_string_equal(lb_export_sacred_status("invalid_metrics"), "FAILED");
	assert_string_equal(lb_export_sacred_status("timeout"), "TIMEOUT");
	assert_string_equal(lb_export_sacred_status("interrupted"), "INTERRUPTED");
	assert_string_equal(lb_export_sacred_status(NULL), "FAILED");
}

static void yaml_is(const char *in, const char *want)
{
	lb_buf b = {0};
	assert_int_equal(lb_export_yaml_string(&b, in), 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, want);
	lb_buf_free(&b);
}

static void test_yaml_plain_only_when_unambiguous(void **state)
{
	(void)state;
	yaml_is("active", "active");
	yaml_is("Default", "Default");
	yaml_is("file:///tmp/x/0", "file:///tmp/x/0");
	yaml_is("a95c4df6179ecb6d7a2659cebfa327f9", "a95c4df6179ecb6d7a2659cebfa327f9");
	yaml_is("/abs/path-1_2.txt", "/abs/path-1_2.txt");
	/* Things a loader would read as something else, or not at all. */
	yaml_is("", "''");
	yaml_is("0", "'0'");
	yaml_is("4245206291017766286", "'4245206291017766286'");
	yaml_is("20261129-225633-c52e58", "'20261129-225633-c52e58'");
	yaml_is("1e5", "'1e5'");
	yaml_is("yes", "'yes'");
	yaml_is("No", "'No'");
	yaml_is("null", "'null'");
	yaml_is("TRUE", "'TRUE'");
	yaml_is("~", "'~'");
	yaml_is("-x", "'-x'");
	yaml_is(".inf", "'.inf'");
	yaml_is("key:", "'key:'");
}

static void test_yaml_quotes_odd_strings(void **state)
{
	(void)state;
	yaml_is("a: b", "'a: b'");
	yaml_is("name #comment", "'name #comment'");
	yaml_is("it's", "'it''s'");
	yaml_is("say \"hi\"", "'say \"hi\"'");
	yaml_is("[list]", "'[list]'");
	yaml_is("{map}", "'{map}'");
	yaml_is("&anchor *alias !tag |block >fold %dir @at `bt", "'&anchor *alias !tag |block >fold %dir @at `bt'");
	yaml_is(" leading space", "' leading space'");
	/* Line breaks and control characters only survive double quotes. */
	yaml_is("two\nlines", "\"two\\nlines\"");
	yaml_is("run: x\nstatus: 3", "\"run: x\\nstatus: 3\"");
	yaml_is("tab\there", "\"tab\\there\"");
	yaml_is("cr\r", "\"cr\\r\"");
	yaml_is("q\"\\\n", "\"q\\\"\\\\\\n\"");
	yaml_is("bell\x07", "\"bell\\x07\"");
	yaml_is("del\x7f", "\"del\\x7F\"");
	/* UTF-8 stays as it is; invalid bytes and unicode line breaks are escaped. */
	yaml_is("caf\xc3\xa9", "\"caf\xc3\xa9\"");
	yaml_is("bad\xff", "\"bad\\xFF\"");
	yaml_is("x\xc3", "\"x\\xC3\"");
	yaml_is("ls\xe2\x80\xa8", "\"ls\\L\"");
	yaml_is("ps\xe2\x80\xa9", "\"ps\\P\"");
	yaml_is("nel\xc2\x85", "\"nel\\N\"");
	yaml_is("bom\xef\xbb\xbf", "\"bom\\uFEFF\"");
	yaml_is("overlong\xc0\xaf", "\"overlong\\xC0\\xAF\"");
}

static void float_is(double v, const char *want)
{
	char out[32];
	lb_export_py_float(v, out);
	assert_string_equal(out, want);
}

static void test_py_float_repr(void **state)
{
	(void)state;
	float_is(0.5, "0.5");
	float_is(0.1, "0.1");
	float_is(3.0, "3.0");
	float_is(-2.5, "-2.5");
	float_is(0.0, "0.0");
	float_is(-0.0, "-0.0");
	float_is(123.456, "123.456");
	float_is(0.13436424411240122, "0.13436424411240122");
	float_is(1.0 / 3.0, "0.3333333333333333");
	float_is(0.0001, "0.0001");
	float_is(0.00001, "1e-05");
	float_is(1.5e-7, "1.5e-07");
	float_is(1e15, "1000000000000000.0");
	float_is(1234567890123456.7, "1234567890123456.8");
	float_is(1e16, "1e+16");
	float_is(9007199254740993.0, "9007199254740992.0");
	float_is(1e22, "1e+22");
	float_is(1.5e300, "1.5e+300");
	float_is(1.7976931348623157e308, "1.7976931348623157e+308");
	float_is(5e-324, "5e-324");
	float_is(NAN, "nan");
	float_is(INFINITY, "inf");
	float_is(-INFINITY, "-inf");
}

static void key_is(const char *in, const char *want, int changed)
{
	char out[256];
	assert_int_equal(lb_export_mlflow_key(in, out, sizeof out), changed);
	assert_string_equal(out, want);
}

static void test_mlflow_key(void **state)
{
	(void)state;
	key_is("acc", "acc", 0);
	key_is("a/acc", "a/acc", 0);
	key_is("my metric-1.5_x", "my metric-1.5_x", 0);
	key_is("lambda=0.1/test_mse", "lambda_0.1/test_mse", 1);
	key_is("caf\xc3\xa9", "caf_", 1);
	key_is("a:b", "a_b", 1);
	key_is("/abs", "_/abs", 1);
	key_is("a//b", "a/_/b", 1);
	key_is("../x", "__/x", 1);
	key_is("x/..", "x/__", 1);
	key_is("./x", "_/x", 1);
	key_is("x/", "x/_", 1);
	key_is("", "_", 1);
	key_is("nl\nx", "nl_x", 1);
	char big[400], out[256];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(lb_export_mlflow_key(big, out, sizeof out), 1);
	assert_int_equal(strlen(out), 250);
	/* A cut that ends in '/' must not leave an empty component behind. */
	memset(big, 'a', 249);
	big[249] = '/';
	strcpy(big + 250, "tail");
	assert_int_equal(lb_export_mlflow_key(big, out, sizeof out), 1);
	assert_true(strlen(out) <= 250);
	assert_true(out[strlen(out) - 1] != '/');
	assert_int_equal(lb_export_mlflow_key("x", out, 10), -ENOSPC);
}

static void test_file_uri(void **state)
{
	(void)state;
	lb_buf b = {0};
	assert_int_equal(lb_export_file_uri("/tmp/a b/caf\xc3\xa9/x%y#z~_-.", &b), 0);
	assert_string_equal(b.data, "file:///tmp/a%20b/caf%C3%A9/x%25y%23z~_-.");
	lb_buf_free(&b);
}

static void test_iso_ms(void **state)
{
	(void)state;
	int64_t ms = 0;
	assert_int_equal(lb_export_iso_ms("1970-01-01T00:00:01.5Z", &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(lb_export_iso_ms("1970-01-02T00:00:00Z", &ms), 0);
	assert_int_equal(ms, 86400000);
	assert_int_equal(lb_export_iso_ms("2026-11-29T22:56:33.944Z", &ms), 0);
	assert_int_equal(ms, INT64_C(1795992993944));
	assert_int_equal(lb_export_iso_ms("2026-11-29T22:56:33.944123+00:00", &ms), 0);
	assert_int_equal(ms, INT64_C(1795992993944));
	assert_int_equal(lb_export_iso_ms("2026-11-29", &ms), -EINVAL);
	assert_int_equal(lb_export_iso_ms("2026-11-29T22:56:33.Z", &ms), -EINVAL);
	assert_int_equal(lb_export_iso_ms("2026-13-29T22:56:33Z", &ms), -EINVAL);
	assert_int_equal(lb_export_iso_ms("2026-11-29T22:56:33+02:00", &ms), -EINVAL);
	assert_int_equal(lb_export_iso_ms(NULL, &ms), -EINVAL);
}

static void md5_is(const char *in, const char *want)
{
	char out[33];
	lb_export_md5_hex(in, strlen(in), out);
	assert_string_equal(out, want);
}

static void test_md5_rfc1321(void **state)
{
	(void)state;
	md5_is("", "d41d8cd98f00b204e9800998ecf8427e");
	md5_is("a", "0cc175b9c0f1b6a831c399e269772661");
	md5_is("abc", "900150983cd24fb0d6963f7d28e17f72");
	md5_is("message digest", "f96b697d7cb7938d525a2f31aaf161d0");
	md5_is("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b");
	md5_is("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	       "d174ab98d277d9f5a5611c2c9f419d9f");
	md5_is("1234567890123456789012345678901234567890123456789012345678901234567890123456"
	       "7890",
	       "57edf4a22be3c955ac49da2e2107b67a");
}

/* A run directory made by hand, with symlinks where labbox's files and a source should be:
 * neither export may follow them. */
static void test_exports_never_follow_symlinks(void **state)
{
	(void)state;
	char *d = tmpdir();
	char run_dir[256], exp[300], out[256], secret[256];
	snprintf(run_dir, sizeof run_dir, "%s/runs/R1", d);
	snprintf(exp, sizeof exp, "%s/exp", run_dir);
	snprintf(secret, sizeof secret, "%s/secret.py", d);
	assert_int_equal(lb_mkdir_p(exp, 0755), 0);
	put(d, "secret.py", "SECRET = 1\n");
	put(run_dir, "result.json",
	    "{\"id\": \"R1\", \"status\": \"completed\", \"started_at\": \"2026-01-02T03:04:05.006Z\","
	    " \"ended_at\": \"2026-01-02T03:04:06Z\", \"metrics\": {\"values\": {\"acc\": 0.5,"
	    " \"bad\": \"NaN\"}, \"conditions\": {}}}");
	/* manifest.json lists main.py with the secret's hash, as if the run had replaced it. */
	char hex[65];
	{
		lb_sha256 c;
		uint8_t dg[32];
		lb_sha256_init(&c);
		lb_sha256_update(&c, "SECRET = 1\n", 11);
		lb_sha256_final(&c, dg);
		lb_sha256_hex(dg, hex);
	}
	char manifest[512];
	snprintf(manifest, sizeof manifest,
		 "{\"config\": {\"entry\": \"main.py\", \"args\": [\"--x\", \"1\"]},"
		 " \"files\": {\"main.py\": \"%s\"}}",
		 hex);
	put(run_dir, "manifest.json", manifest);
	char link[1024];
	snprintf(link, sizeof link, "%s/run.log", run_dir);
	assert_int_equal(symlink(secret, link), 0);
	snprintf(link, sizeof link, "%s/main.py", exp);
	assert_int_equal(symlink(secret, link), 0);

	json_object *rows = json_object_new_array();
	json_object *row = json_object_new_object();
	json_object_object_add(row, "id", json_object_new_string("R1"));
	json_object_object_add(row, "status", json_object_new_string("completed"));
	json_object_object_add(row, "started_at", json_object_new_string("2026-01-02T03:04:05.006Z"));
	json_object_object_add(row, "ended_at", json_object_new_string("2026-01-02T03:04:06Z"));
	json_object_object_add(row, "run_dir", json_object_new_string(run_dir));
	json_object_object_add(row, "expdir", json_object_new_string("/nonexistent/my exp"));
	json_object_array_add(rows, row);

	char err[256] = "";
	json_object *done = json_object_new_array();
	snprintf(out, sizeof out, "%s/mlruns", d);
	assert_int_equal(lb_export_mlflow(out, rows, done, err, sizeof err), 0);
	assert_int_equal(json_object_array_length(done), 1);
	const char *path = json_object_get_string(
		json_object_object_get(json_object_array_get_idx(done, 0), "path"));
	assert_true(exists(path, "artifacts/result.json"));
	assert_true(exists(path, "artifacts/manifest.json"));
	assert_false(exists(path, "artifacts/run.log"));
	assert_true(exists(path, "metrics/acc"));
	assert_true(exists(path, "metrics/bad"));
	assert_true(exists(path, "params/args"));
	char *text = NULL;
	char file[1024];
	snprintf(file, sizeof file, "%s/metrics/bad", path);
	assert_int_equal(lb_read_file_at(AT_FDCWD, file, 1024, &text, NULL), 0);
	assert_string_equal(text, "1767323046000 nan 0\n");
	free(text);
	snprintf(file, sizeof file, "%s/params/args", path);
	assert_int_equal(lb_read_file_at(AT_FDCWD, file, 1024, &text, NULL), 0);
	assert_string_equal(text, "[\"--x\", \"1\"]");
	free(text);
	json_object *warnings = json_object_object_get(json_object_array_get_idx(done, 0), "warnings");
	assert_true(strstr(json_object_to_json_string(warnings), "run.log is not a regular file"));
	json_object_put(done);

	done = json_object_new_array();
	snprintf(out, sizeof out, "%s/sacred", d);
	assert_int_equal(lb_export_sacred(out, rows, done, err, sizeof err), 0);
	assert_true(exists(out, "1/run.json"));
	assert_true(exists(out, "1/cout.txt")); /* empty: run.log was a symlink */
	assert_false(exists(out, "_sources"));  /* main.py was a symlink, not stored */
	warnings = json_object_object_get(json_object_array_get_idx(done, 0), "warnings");
	assert_true(strstr(json_object_to_json_string(warnings), "source main.py"));
	json_object_put(done);

	/* Exported again: the same numbered folder, no second one. */
	done = json_object_new_array();
	assert_int_equal(lb_export_sacred(out, rows, done, err, sizeof err), 0);
	assert_int_equal(json_object_get_int(json_object_object_get(json_object_array_get_idx(done, 0),
								    "sacred_id")),
			 1);
	assert_false(exists(out, "2"));
	json_object_put(done);
	json_object_put(rows);
	rm_rf(d);
	free(d);
}

static void test_export_skips_missing_runs_and_reports_bad_dirs(void **state)
{
	(void)state;
	char *d = tmpdir();
	json_object *rows = json_object_new_array();
	json_object *row = json_object_new_object();
	json_object_object_add(row, "id", json_object_new_string("gone"));
	json_object_object_add(row, "run_dir", json_object_new_string("/nonexistent/run"));
	json_object_object_add(row, "started_at", json_object_new_string("2026-01-02T03:04:05Z"));
	json_object_array_add(rows, row);
	char out[256], err[256] = "";
	snprintf(out, sizeof out, "%s/m", d);
	json_object *done = json_object_new_array();
	assert_int_equal(lb_export_mlflow(out, rows, done, err, sizeof err), 0);
	assert_non_null(json_object_object_get(json_object_array_get_idx(done, 0), "skipped"));
	assert_true(exists(out, "0/meta.yaml"));
	assert_true(exists(out, ".trash"));
	json_object_put(done);
	/* A file where the export directory should be. */
	put(d, "file", "x");
	snprintf(out, sizeof out, "%s/file/sub", d);
	assert_true(lb_export_mlflow(out, rows, NULL, err, sizeof err) < 0);
	assert_true(strlen(err) > 0);
	assert_true(lb_export_sacred(out, rows, NULL, err, sizeof err) < 0);
	assert_int_equal(lb_export_mlflow(out, NULL, NULL, err, sizeof err), -EINVAL);
	json_object_put(rows);
	rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_uuid_is_sha256_prefix),
		cmocka_unit_test(test_status_mapping),
		cmocka_unit_test(test_yaml_plain_only_when_unambiguous),
		cmocka_unit_test(test_yaml_quotes_odd_strings),
		cmocka_unit_test(test_py_float_repr),
		cmocka_unit_test(test_mlflow_key),
		cmocka_unit_test(test_file_uri),
		cmocka_unit_test(test_iso_ms),
		cmocka_unit_test(test_md5_rfc1321),
		cmocka_unit_test(test_exports_never_follow_symlinks),
		cmocka_unit_test(test_export_skips_missing_runs_and_reports_bad_dirs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
