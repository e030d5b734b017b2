/* Unit tests for the manifest's machine record, the experiment's git diff, and the cached
 * pip freeze of an interpreter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *mktmp(void)
{
	char *d = strdup("/tmp/lb-test-sysinfo-XXXXXX");

	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_rf(const char *d)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

static void put_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(lb_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static struct json_object *get(struct json_object *obj, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, "/", &save); k; k = strtok_r(NULL, "/", &save)) {
		struct json_object *next = NULL;

		if (!json_object_object_get_ex(obj, k, &next))
			fail_msg("no key %s in %s", k, path);
		obj = next;
	}
	return obj;
}

static bool is_null(struct json_object *o)
{
	return json_object_get_type(o) == json_type_null;
}

static void assert_strict_json(struct json_object *doc)
{
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	struct json_tokener *tok = json_tokener_new();
	struct json_object *back;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	assert_non_null(back);
	json_object_put(back);
	json_tokener_free(tok);
}

/* Machine -------------------------------------------------------------------------------- */

static void test_machine_fake_root(void **state)
{
	char *root = mktmp();
	char smi[600];
	struct json_object *m, *gpus;

	(void)state;
	sh("mkdir -p %s/etc %s/proc %s/bin", root, root, root);
	put_file(root, "etc/os-release",
		 "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian \\\"GNU\\\"/Linux 12 (bookworm)\"\n"
		 "ID=debian\n",
		 0644);
	put_file(root, "proc/cpuinfo",
		 "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ "
		 "2.20GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n",
		 0644);
	put_file(root, "proc/meminfo", "MemTotal:       16384 kB\nMemFree: 1 kB\n", 0644);
	put_file(root, "bin/nvidia-smi",
		 "#!/bin/sh\n"
		 "[ \"$1\" = --query-gpu=name,memory.total,driver_version ] || exit 3\n"
		 "[ \"$2\" = --format=csv,noheader ] || exit 4\n"
		 "echo 'NVIDIA H200, 143771 MiB, 550.54.15'\n"
		 "echo 'Tesla T4, with comma, [N/A], 535.1'\n",
		 0755);
	snprintf(smi, sizeof(smi), "%s/bin/nvidia-smi", root);

	m = lb_record_machine_json_at(root, smi);
	assert_non_null(m);
	assert_string_equal(json_object_get_string(get(m, "os")),
			    "Debian \"GNU\"/Linux 12 (bookworm)");
	assert_string_equal(json_object_get_string(get(m, "cpu/model")),
			    "Intel(R) Xeon(R) CPU @ 2.20GHz");
	assert_int_equal(json_object_get_int(get(m, "cpu/count")), 2);
	assert_true(json_object_get_int(get(m, "cpu/available")) >= 1);
	assert_int_equal(json_object_get_int64(get(m, "memory_total_bytes")), 16384 * 1024);
	assert_true(json_object_get_string_len(get(m, "kernel")) > 0);
	assert_true(json_object_get_string_len(get(m, "arch")) > 0);
	gpus = get(m, "gpus");
	assert_int_equal(json_object_array_length(gpus), 2);
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(gpus, 0), "name")),
			    "NVIDIA H200");
	assert_int_equal(json_object_get_int64(get(json_object_array_get_idx(gpus, 0),
						   "memory_total_bytes")),
			 (int64_t)143771 << 20);
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(gpus, 0),
						       "driver_version")),
			    "550.54.15");
	/* A comma in the name, memory not available. */
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(gpus, 1), "name")),
			    "Tesla T4, with comma");
	assert_true(is_null(get(json_object_array_get_idx(gpus, 1), "memory_total_bytes")));
	assert_false(json_object_object_get_ex(m, "gpus_error", NULL));
	assert_strict_json(m);
	json_object_put(m);
	rm_rf(root);
	free(root);
}

static void test_machine_fallbacks(void **state)
{
	char *root = mktmp();
	char smi[600];
	struct json_object *m;

	(void)state;
	/* /usr/lib/os-release without PRETTY_NAME; an arm64 cpuinfo with no model; no meminfo;
	 * nvidia-smi installed but failing. */
	sh("mkdir -p %s/usr/lib %s/proc %s/bin", root, root, root);
	put_file(root, "usr/lib/os-release", "NAME='Alpine Linux'\nID=alpine\n", 0644);
	put_file(root, "proc/cpuinfo",
		 "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nprocessor\t: 1\n"
		 "BogoMIPS\t: 50.00\n",
		 0644);
	put_file(root, "bin/nvidia-smi", "#!/bin/sh\necho 'NVIDIA-SMI has failed'\nexit 9\n", 0755);
	snprintf(smi, sizeof(smi), "%s/bin/nvidia-smi", root);
	m = lb_record_machine_json_at(root, smi);
	assert_string_equal(json_object_get_string(get(m, "os")), "Alpine Linux");
	assert_true(is_null(get(m, "cpu/model")));
	assert_int_equal(json_object_get_int(get(m, "cpu/count")), 2);
	assert_true(is_null(get(m, "memory_total_bytes")));
	assert_int_equal(json_object_array_length(get(m, "gpus")), 0);
	assert_string_equal(json_object_get_string(get(m, "gpus_error")),
			    "nvidia-smi exited with status 9");
	json_object_put(m);

	/* No nvidia-smi at all: no GPUs and nothing to explain. Nothing readable: nulls. */
	snprintf(smi, sizeof(smi), "%s/bin/absent-smi", root);
	sh("rm -rf %s/usr %s/proc", root, root);
	m = lb_record_machine_json_at(root, smi);
	assert_true(is_null(get(m, "os")));
	assert_true(json_object_get_int(get(m, "cpu/count")) >= 1); /* sysconf's count */
	assert_int_equal(json_object_array_length(get(m, "gpus")), 0);
	assert_false(json_object_object_get_ex(m, "gpus_error", NULL));
	json_object_put(m);
	rm_rf(root);
	free(root);
}

static void test_machine_real(void **state)
{
	struct json_object *m = lb_record_machine_json();

	(void)state;
	assert_non_null(m);
	assert_true(json_object_is_type(get(m, "os"), json_type_string));
	assert_true(json_object_get_int(get(m, "cpu/count")) >= 1);
	assert_true(json_object_get_int64(get(m, "memory_total_bytes")) > 0);
	assert_true(json_object_is_type(get(m, "gpus"), json_type_array));
	assert_strict_json(m);
	json_object_put(m);
}

/* git diff -------------------------------------------------------------------------------- */

#define GIT "git -c user.name=t -c user.email=t@example.invalid -c init.defaultBranch=main"

static bool have_git(void)
{
	return system("git --version >/dev/null 2>&1") == 0;
}

static void test_git_diff(void **state)
{
	char *repo = mktmp();
	char sub[600];
	struct json_object *d;
	const char *text;

	(void)state;
	if (!have_git()) {
		rm_rf(repo);
		free(repo);
		skip();
	}
	/* Not a repository; a repository without a commit. */
	assert_null(lb_record_git_diff(repo, 1 << 20));
	sh("cd %s && " GIT " init -q .", repo);
	assert_null(lb_record_git_diff(repo, 1 << 20));

	sh("mkdir -p %s/exp %s/other", repo, repo);
	put_file(repo, "exp/main.py", "print('a')\n", 0644);
	put_file(repo, "other/x.txt", "x\n", 0644);
	sh("cd %s && " GIT " add -A && " GIT " commit -qm init", repo);
	snprintf(sub, sizeof(sub), "%s/exp", repo);

	/* Clean. */
	d = lb_record_git_diff(sub, 1 << 20);
	assert_non_null(d);
	assert_string_equal(json_object_get_string(get(d, "diff")), "");
	assert_false(json_object_get_boolean(get(d, "truncated")));
	json_object_put(d);

	/* Changes in the experiment's directory only, with invalid UTF-8 repaired. */
	put_file(repo, "exp/main.py", "print('b')\n# caf\xe9\n", 0644);
	put_file(repo, "other/x.txt", "changed elsewhere\n", 0644);
	d = lb_record_git_diff(sub, 1 << 20);
	text = json_object_get_string(get(d, "diff"));
	assert_non_null(strstr(text, "+print('b')"));
	assert_non_null(strstr(text, "exp/main.py"));
	assert_null(strstr(text, "other/x.txt"));
	assert_non_null(strstr(text, "caf\xef\xbf\xbd"));
	assert_int_equal(json_object_get_int64(get(d, "bytes")), (int64_t)strlen(text));
	assert_false(json_object_get_boolean(get(d, "truncated")));
	assert_strict_json(d);
	json_object_put(d);

	/* Capped. */
	d = lb_record_git_diff(sub, 40);
	assert_true(json_object_get_boolean(get(d, "truncated")));
	assert_true(json_object_get_string_len(get(d, "diff")) <= 40);
	json_object_put(d);
	rm_rf(repo);
	free(repo);
}

/* The state read by a child while the run goes on: the same documents, a diff larger than a
 * pipe's buffer included, and no child at all outside a repository. */
static void test_git_job(void **state)
{
	char *repo = mktmp();
	char sub[600];
	lb_record_git_job job;
	struct json_object *info, *diff;

	(void)state;
	if (!have_git()) {
		rm_rf(repo);
		free(repo);
		skip();
	}
	assert_int_equal(lb_record_git_start(repo, NULL, 1 << 20, &job), 0);
	assert_int_equal(job.pid, 0);
	lb_record_git_collect(&job, &info, &diff);
	assert_null(info);
	assert_null(diff);

	sh("chmod 755 %s && cd %s && " GIT " init -q . && mkdir exp && echo 'print(1)' > exp/main.py && " GIT
	   " add -A && " GIT " commit -qm init",
	   repo, repo);
	snprintf(sub, sizeof(sub), "%s/exp", repo);
	/* 300 KB of changed lines: the child blocks on the pipe until collect reads. */
	sh("cd %s && for i in $(seq 1 20000); do echo \"x = $i  # padding padding\"; done > main.py",
	   sub);
	assert_int_equal(lb_record_git_start(sub, NULL, 1 << 20, &job), 0);
	assert_true(job.pid > 0);
	lb_record_git_collect(&job, &info, &diff);
	assert_non_null(info);
	assert_int_equal(json_object_get_string_len(get(info, "commit")), 40);
	assert_true(json_object_get_boolean(get(info, "dirty")));
	assert_non_null(diff);
	assert_true(json_object_get_int64(get(diff, "bytes")) > 300000);
	assert_non_null(strstr(json_object_get_string(get(diff, "diff")), "+x = 19999  # padding"));
	assert_false(json_object_get_boolean(get(diff, "truncated")));
	assert_int_equal(job.pid, 0);
	json_object_put(info);
	json_object_put(diff);
	rm_rf(repo);
	free(repo);
}

/* git runs in a sandbox: a filter, fsmonitor or hook the repository configures cannot touch
 * the host (its marker is never made), and git still answers. A repository the sandbox's
 * user cannot read is said, not passed over. */
static void test_git_job_confines_repository_commands(void **state)
{
	char *repo = mktmp();
	char marker[600];
	lb_record_git_job job;
	struct json_object *info, *diff;

	(void)state;
	if (!have_git()) {
		rm_rf(repo);
		free(repo);
		skip();
	}
	snprintf(marker, sizeof(marker), "%s.ran", repo);
	sh("chmod 755 %s && cd %s && " GIT " init -q . && echo a > f.txt && " GIT " add -A && " GIT
	   " commit -qm init",
	   repo, repo);
	sh("cd %s && git config filter.evil.clean 'touch %s; cat' && echo '* filter=evil' > "
	   ".gitattributes && git config core.fsmonitor 'touch %s; false' && "
	   "printf '#!/bin/sh\\ntouch %s\\n' > .git/hooks/post-index-change && "
	   "chmod +x .git/hooks/post-index-change && echo b > f.txt",
	   repo, marker, marker, marker);
	assert_int_equal(lb_record_git_start(repo, NULL, 1 << 20, &job), 0);
	lb_record_git_collect(&job, &info, &diff);
	assert_int_equal(access(marker, F_OK), -1);
	assert_non_null(info);
	assert_int_equal(json_object_get_string_len(get(info, "commit")), 40);
	assert_true(json_object_get_boolean(get(info, "dirty")));
	assert_non_null(strstr(json_object_get_string(get(diff, "diff")), "+b"));
	json_object_put(info);
	json_object_put(diff);

	if (getuid() == 0) {
		/* As root git runs as uid 65534, which a 0700 checkout shuts out. */
		sh("chmod 700 %s", repo);
		assert_int_equal(lb_record_git_start(repo, NULL, 1 << 20, &job), 0);
		lb_record_git_collect(&job, &info, &diff);
		assert_non_null(info);
		assert_true(is_null(get(info, "commit")));
		assert_non_null(strstr(json_object_get_string(get(info, "error")), "not readable"));
		json_object_put(info);
		json_object_put(diff);
	}
	rm_rf(repo);
	free(repo);
}

/* pip freeze cache -------------------------------------------------------------------------- */

typedef struct venv {
	char *dir;
	char python[1600];
	char site[1600];
	char cache[1600];
} venv;

static int venv_setup(void **state)
{
	venv *v = calloc(1, sizeof(*v));
	char cmd[1024];
	DIR *lib;
	struct dirent *de;

	v->dir = mktmp();
	/* A venv gives a search directory that the test controls; --without-pip needs no
	 * network and no ensurepip. */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -m venv --without-pip %s/venv 2>/dev/null",
		 v->dir);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "python3 -m venv --without-pip %s/venv", v->dir);
		if (system(cmd) != 0)
			return -1;
	}
	snprintf(v->python, sizeof(v->python), "%s/venv/bin/python", v->dir);
	snprintf(cmd, sizeof(cmd), "%s/venv/lib", v->dir);
	lib = opendir(cmd);
	if (!lib)
		return -1;
	while ((de = readdir(lib)))
		if (strncmp(de->d_name, "python3", 7) == 0)
			snprintf(v->site, sizeof(v->site), "%s/%s/site-packages", cmd, de->d_name);
	closedir(lib);
	snprintf(v->cache, sizeof(v->cache), "%s/cache/labbox", v->dir);
	*state = v;
	return v->site[0] ? 0 : -1;
}

static int venv_teardown(void **state)
{
	venv *v = *state;

	rm_rf(v->dir);
	free(v->dir);
	free(v);
	return 0;
}

static void fake_dist(const venv *v, const char *name, const char *version)
{
	char dir[2000], meta[900];

	snprintf(dir, sizeof(dir), "%s/%s-%s.dist-info", v->site, name, version);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(meta, sizeof(meta), "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name,
		 version);
	put_file(dir, "METADATA", meta, 0644);
}

static char *cache_file(const venv *v)
{
	DIR *d = opendir(v->cache);
	struct dirent *de;
	char *path = NULL;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		assert_int_equal(asprintf(&path, "%s/%s", v->cache, de->d_name), (int)strlen(v->cache) +
										  1 + (int)strlen(de->d_name));
	}
	closedir(d);
	/* One entry per interpreter, and no temporary file left behind. */
	assert_int_equal(n, 1);
	return path;
}

static void test_freeze_cache_hits_and_invalidates(void **state)
{
	venv *v = *state;
	char *plain = NULL, *out = NULL;
	bool hit = true;
	struct stat st;

	fake_dist(v, "alpha", "1.0");
	assert_int_equal(lb_python_freeze(v->python, &plain), 0);
	assert_non_null(strstr(plain, "alpha==1.0"));

	/* First call lists and writes the entry (creating the directory 0700). */
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	assert_false(hit);
	assert_string_equal(out, plain);
	free(out);
	assert_int_equal(stat(v->cache, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	/* Second: from the cache, same text. */
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	assert_true(hit);
	assert_string_equal(out, plain);
	free(out);

	/* An install into the environment invalidates it. */
	fake_dist(v, "beta", "2.0");
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	assert_false(hit);
	assert_non_null(strstr(out, "beta==2.0"));
	free(out);
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	assert_true(hit);
	assert_non_null(strstr(out, "beta==2.0"));
	free(out);

	/* So does an uninstall. */
	{
		char cmd[2000];

		snprintf(cmd, sizeof(cmd), "rm -rf %s/alpha-1.0.dist-info", v->site);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	assert_false(hit);
	assert_null(strstr(out, "alpha=="));
	free(out);
	free(plain);
}

static void test_freeze_cache_search_dir_appears(void **state)
{
	venv *v = *state;
	char *out = NULL, *path = NULL, *data = NULL;
	size_t len = 0;
	bool hit;

	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	free(out);
	path = cache_file(v);
	assert_int_equal(lb_read_file_at(AT_FDCWD, path, 1 << 24, &data, &len), 0);
	/* A search path that does not exist yet is recorded as such (Debian's venvs list
	 * dist-packages directories that pip creates on first use). */
	if (strstr(data, "\"stat\":null")) {
		const char *p = strstr(data, "\"stat\":null");
		const char *q;
		char missing[700];

		/* The path just before: {"path":"...","stat":null} */
		while (p > data && strncmp(p, "{\"path\":\"", 9) != 0)
			p--;
		p += 9;
		q = strchr(p, '"');
		snprintf(missing, sizeof(missing), "%.*s", (int)(q - p), p);
		/* json-c escapes '/' as "\/". */
		for (char *s = missing, *o = missing;; s++) {
			if (s[0] == '\\' && s[1] == '/')
				s++;
			*o++ = *s;
			if (!*s)
				break;
		}
		assert_int_equal(lb_mkdir_p(missing, 0755), 0);
		assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
		assert_false(hit);
		free(out);
	}
	free(data);
	free(path);
}

static void test_freeze_cache_corruption(void **state)
{
	venv *v = *state;
	char *want = NULL, *out = NULL, *path, *data = NULL;
	size_t len = 0;
	bool hit;
	static const char *const bad[] = { "", "{", "not json at all", "{\"schema\": 1}", "[]" };

	fake_dist(v, "gamma", "3.1");
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &want, &hit), 0);
	path = cache_file(v);
	assert_int_equal(lb_read_file_at(AT_FDCWD, path, 1 << 24, &data, &len), 0);

	/* Garbage and a cut entry: a miss, the right list, and a good entry again. */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 1; i++) {
		int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

		assert_true(fd >= 0);
		if (i < sizeof(bad) / sizeof(bad[0]))
			assert_int_equal(lb_write_all(fd, bad[i], strlen(bad[i])), 0);
		else
			assert_int_equal(lb_write_all(fd, data, len / 2), 0);
		close(fd);
		assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
		assert_false(hit);
		assert_string_equal(out, want);
		free(out);
		assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
		assert_true(hit);
		free(out);
	}

	/* A list edited behind labbox's back no longer matches its sha256. */
	{
		char *p = strstr(data, "gamma==3.1");
		int fd;

		assert_non_null(p);
		p[6] = '9';
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		assert_int_equal(lb_write_all(fd, data, len), 0);
		close(fd);
		assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
		assert_false(hit);
		assert_non_null(strstr(out, "gamma==3.1"));
		free(out);
	}
	/* An entry of another interpreter (same file name, forged) is not used. */
	{
		char *forged = NULL;
		int fd;

		assert_int_equal(lb_read_file_at(AT_FDCWD, path, 1 << 24, &forged, &len), 0);
		char *e = strstr(forged, "\"executable\":\"");
		assert_non_null(e);
		e[14] = 'X';
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		assert_int_equal(lb_write_all(fd, forged, len), 0);
		close(fd);
		assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
		assert_false(hit);
		free(out);
		free(forged);
	}
	free(data);
	free(path);
	free(want);
}

static void test_freeze_cache_untrusted_dir(void **state)
{
	venv *v = *state;
	char *out = NULL, *want = NULL;
	bool hit = true;
	DIR *d;
	struct dirent *de;
	int entries = 0;

	assert_int_equal(lb_python_freeze(v->python, &want), 0);
	/* No cache directory: the plain listing. */
	assert_int_equal(lb_python_freeze_cached(v->python, NULL, &out, &hit), 0);
	assert_false(hit);
	assert_string_equal(out, want);
	free(out);

	/* A directory others may write to is not trusted, and nothing is written there. */
	assert_int_equal(lb_mkdir_p(v->cache, 0700), 0);
	assert_int_equal(chmod(v->cache, 0777), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
		assert_false(hit);
		assert_string_equal(out, want);
		free(out);
	}
	d = opendir(v->cache);
	while ((de = readdir(d)))
		entries += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(entries, 0);

	/* An interpreter that is not there fails as lb_python_freeze does. */
	assert_int_equal(chmod(v->cache, 0700), 0);
	assert_true(lb_python_freeze_cached("/nonexistent/python", v->cache, &out, &hit) < 0);
	free(want);
}

static void test_freeze_cache_concurrent(void **state)
{
	venv *v = *state;
	char *want = NULL, *out = NULL, *path;
	pid_t pids[8];
	bool hit;

	assert_int_equal(lb_python_freeze(v->python, &want), 0);
	/* Eight writers at once, each checking what it got; the survivor is one whole entry. */
	for (int i = 0; i < 8; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char *o = NULL;
			bool h;
			int ok = lb_python_freeze_cached(v->python, v->cache, &o, &h) == 0 &&
				 strcmp(o, want) == 0;

			_exit(ok ? 0 : 1);
		}
	}
	for (int i = 0; i < 8; i++) {
		int st = 0;

		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	path = cache_file(v);
	assert_int_equal(lb_python_freeze_cached(v->python, v->cache, &out, &hit), 0);
	assert_true(hit);
	assert_string_equal(out, want);
	free(out);
	free(path);
	free(want);
}

/* interpreter probe cache ----------------------------------------------------------------- */

static void test_probe_cache_hits_and_invalidates(void **state)
{
	venv *v = *state;
	char cache[1700], cfg[1700], err[512];
	lb_python_info plain, got;
	bool hit = true;

	snprintf(cache, sizeof(cache), "%s/probe-cache", v->dir);
	snprintf(cfg, sizeof(cfg), "%s/venv/pyvenv.cfg", v->dir);
	assert_int_equal(lb_python_probe(v->python, &plain, err, sizeof(err)), 0);
	/* The venv's own prefix, so the probe really depends on pyvenv.cfg. */
	assert_non_null(strstr(plain.prefix, "/venv"));

	assert_int_equal(lb_python_probe_cached(v->python, cache, &got, &hit, err, sizeof(err)), 0);
	assert_false(hit);
	assert_memory_equal(&got, &plain, sizeof(got));
	assert_int_equal(lb_python_probe_cached(v->python, cache, &got, &hit, err, sizeof(err)), 0);
	assert_true(hit);
	assert_memory_equal(&got, &plain, sizeof(got));

	/* Editing the venv's configuration is a change of interpreter. */
	sh("echo '# edited' >> %s", cfg);
	assert_int_equal(lb_python_probe_cached(v->python, cache, &got, &hit, err, sizeof(err)), 0);
	assert_false(hit);
	assert_int_equal(lb_python_probe_cached(v->python, cache, &got, &hit, err, sizeof(err)), 0);
	assert_true(hit);

	/* A damaged entry is a miss, and is written again. */
	sh("for f in %s/probe-*.json; do printf '{\"schema\": 1' > $f; done", cache);
	assert_int_equal(lb_python_probe_cached(v->python, cache, &got, &hit, err, sizeof(err)), 0);
	assert_false(hit);
	assert_memory_equal(&got, &plain, sizeof(got));
	assert_int_equal(lb_python_probe_cached(v->python, cache, &got, &hit, err, sizeof(err)), 0);
	assert_true(hit);

	/* Not an interpreter: the same error as without the cache. */
	assert_int_equal(lb_python_probe_cached("/bin/true", cache, &got, &hit, err, sizeof(err)),
			 -ENOEXEC);
	assert_false(hit);
}

/* A script picks its interpreter at every start (a pyenv shim reads .python-version): its
 * probe is never kept. */
static void test_probe_cache_skips_scripts(void **state)
{
	venv *v = *state;
	char cache[1700], err[512];
	lb_python_info got;
	bool hit = true;

	snprintf(cache, sizeof(cache), "%s/probe-cache", v->dir);
	put_file(v->dir, "shim", "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", 0755);
	char shim[1700];
	snprintf(shim, sizeof(shim), "%s/shim", v->dir);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(lb_python_probe_cached(shim, cache, &got, &hit, err, sizeof(err)), 0);
		assert_false(hit);
		assert_true(got.version[0] == '3');
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_machine_fake_root),
		cmocka_unit_test(test_machine_fallbacks),
		cmocka_unit_test(test_machine_real),
		cmocka_unit_test(test_git_diff),
		cmocka_unit_test(test_git_job_confines_repository_commands),
		cmocka_unit_test(test_git_job),
		cmocka_unit_test_setup_teardown(test_freeze_cache_hits_and_invalidates, venv_setup,
						venv_teardown),
		cmocka_unit_test_setup_teardown(test_freeze_cache_search_dir_appears, venv_setup,
						venv_teardown),
		cmocka_unit_test_setup_teardown(test_freeze_cache_corruption, venv_setup,
						venv_teardown),
		cmocka_unit_test_setup_teardown(test_freeze_cache_untrusted_dir, venv_setup,
						venv_teardown),
		cmocka_unit_test_setup_teardown(test_freeze_cache_concurrent, venv_setup,
						venv_teardown),
		cmocka_unit_test_setup_teardown(test_probe_cache_hits_and_invalidates, venv_setup,
						venv_teardown),
		cmocka_unit_test_setup_teardown(test_probe_cache_skips_scripts, venv_setup,
						venv_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
