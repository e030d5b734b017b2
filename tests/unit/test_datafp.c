/* Unit tests for the fingerprint of mounted data. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "labbox/record.h"

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *digest(const char *dir, uint64_t max_bytes, size_t max_files, const char **method)
{
	json_object *o = lb_record_tree_fingerprint(dir, max_bytes, max_files);
	assert_non_null(o);
	static char m[32];
	snprintf(m, sizeof m, "%s", json_object_get_string(json_object_object_get(o, "method")));
	*method = m;
	char *d = strdup(json_object_get_string(json_object_object_get(o, "digest")));
	json_object_put(o);
	return d;
}

static void test_tree_fingerprint(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-datafp-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char sub[600];
	snprintf(sub, sizeof sub, "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	put(dir, "a.txt", "hello");
	put(sub, "b.txt", "world");
	const char *method;
	char *d1 = digest(dir, 1 << 20, 100, &method);
	assert_string_equal(method, "content");
	assert_true(strncmp(d1, "sha256:", 7) == 0 && strlen(d1) == 71);

	/* an mtime alone does not change content-hashed data */
	char p[700];
	snprintf(p, sizeof p, "%s/a.txt", dir);
	struct timeval tv[2] = {{1, 0}, {1, 0}};
	assert_int_equal(utimes(p, tv), 0);
	char *d2 = digest(dir, 1 << 20, 100, &method);
	assert_string_equal(d1, d2);

	/* the same size, other bytes: another digest */
	put(sub, "b.txt", "WORLD");
	char *d3 = digest(dir, 1 << 20, 100, &method);
	assert_string_not_equal(d1, d3);

	/* moving bytes between names is another tree */
	put(dir, "a.txt", "hellow");
	put(sub, "b.txt", "orld");
	char *d4 = digest(dir, 1 << 20, 100, &method);
	assert_string_not_equal(d3, d4);

	/* past the bounds: metadata, where an mtime counts */
	char *m1 = digest(dir, 1 << 20, 1, &method);
	assert_string_equal(method, "metadata");
	assert_int_equal(utimes(p, tv), 0);
	char *m2 = digest(dir, 1 << 20, 1, &method);
	assert_string_not_equal(m1, m2);
	char *m3 = digest(dir, 4, 100, &method); /* too many bytes */
	assert_string_equal(method, "metadata");

	json_object *missing = lb_record_tree_fingerprint("/nonexistent/lb-x", 1, 1);
	assert_non_null(json_object_object_get(missing, "error"));
	json_object_put(missing);

	char *all[] = {d1, d2, d3, d4, m1, m2, m3};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_fingerprint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
