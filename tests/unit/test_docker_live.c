/* The docker backend's record of containers not yet seen removed (src/backend/docker_live.c):
 * what decides whether a run sweeps the engine for leftovers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../src/backend/docker_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char cache[64];

static int setup(void **state)
{
	(void)state;
	snprintf(cache, sizeof cache, "/tmp/lb-unit-docker-live-XXXXXX");
	if (!mkdtemp(cache))
		return -1;
	setenv("XDG_CACHE_HOME", cache, 1);
	unsetenv("DOCKER_HOST");
	unsetenv("CONTAINERS_STORAGE_CONF");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
	return system(cmd) == 0 ? 0 : -1;
}

static void owner_of(int pid, char *out, size_t n)
{
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	snprintf(out, n, "%s:%d:%llu", host, pid, lb_docker_start_time_of(pid));
}

static void test_own_marker_alone_means_no_sweep(void **state)
{
	(void)state;
	lb_docker_live a;
	assert_int_equal(lb_docker_live_open(&a, "docker"), 0);
	assert_false(lb_docker_live_maybe_leftovers(&a)); /* nothing made yet */
	char owner[320];
	owner_of(getpid(), owner, sizeof owner);
	assert_int_equal(lb_docker_live_add(&a, "labbox-run-a", owner), 0);
	assert_false(lb_docker_live_maybe_leftovers(&a)); /* its own marker is no leftover */
	/* A second run meanwhile sees the first one's container as one that may be left. */
	lb_docker_live b;
	assert_int_equal(lb_docker_live_open(&b, "docker"), 0);
	assert_true(lb_docker_live_maybe_leftovers(&b));
	/* Forgetting the dead keeps the living: a's labbox (this process) is alive. */
	lb_docker_live_forget_dead(&b);
	assert_true(lb_docker_live_maybe_leftovers(&b));
	lb_docker_live_done(&a);
	assert_false(lb_docker_live_maybe_leftovers(&b));
	lb_docker_live_close(&a);
	lb_docker_live_close(&b);
}

static void test_a_dead_labbox_marker_is_swept_then_forgotten(void **state)
{
	(void)state;
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	assert_true(child > 0);
	char owner[320];
	owner_of(child, owner, sizeof owner); /* read while it is a zombie: its start time */
	waitpid(child, NULL, 0);
	lb_docker_live dead;
	assert_int_equal(lb_docker_live_open(&dead, "docker"), 0);
	assert_int_equal(lb_docker_live_add(&dead, "labbox-run-dead", owner), 0);
	lb_docker_live_close(&dead); /* killed before its docker rm: the marker stays */
	lb_docker_live next;
	assert_int_equal(lb_docker_live_open(&next, "docker"), 0);
	assert_true(lb_docker_live_maybe_leftovers(&next));
	lb_docker_live_forget_dead(&next); /* after a sweep that removed its container */
	assert_false(lb_docker_live_maybe_leftovers(&next));
	lb_docker_live_close(&next);
}

static void test_markers_are_kept_per_engine_and_storage(void **state)
{
	(void)state;
	char owner[320];
	owner_of(getpid(), owner, sizeof owner);
	lb_docker_live p;
	setenv("CONTAINERS_STORAGE_CONF", "/tmp/lb-unit-storage-a.conf", 1);
	assert_int_equal(lb_docker_live_open(&p, "podman"), 0);
	assert_int_equal(lb_docker_live_add(&p, "labbox-run-p", owner), 0);
	lb_docker_live d, q;
	assert_int_equal(lb_docker_live_open(&d, "docker"), 0);
	assert_false(lb_docker_live_maybe_leftovers(&d)); /* podman's container is not docker's */
	setenv("CONTAINERS_STORAGE_CONF", "/tmp/lb-unit-storage-b.conf", 1);
	assert_int_equal(lb_docker_live_open(&q, "podman"), 0);
	assert_false(lb_docker_live_maybe_leftovers(&q)); /* nor another storage's */
	setenv("CONTAINERS_STORAGE_CONF", "/tmp/lb-unit-storage-a.conf", 1);
	lb_docker_live same;
	assert_int_equal(lb_docker_live_open(&same, "podman"), 0);
	assert_true(lb_docker_live_maybe_leftovers(&same));
	lb_docker_live_done(&p);
	unsetenv("CONTAINERS_STORAGE_CONF");
	lb_docker_live_close(&p);
	lb_docker_live_close(&d);
	lb_docker_live_close(&q);
	lb_docker_live_close(&same);
}

static void test_no_cache_directory_means_sweep(void **state)
{
	(void)state;
	char *xdg = strdup(getenv("XDG_CACHE_HOME"));
	const char *home = getenv("HOME");
	char *h = home ? strdup(home) : NULL;
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	lb_docker_live l;
	assert_true(lb_docker_live_open(&l, "docker") < 0);
	assert_true(lb_docker_live_maybe_leftovers(&l));
	assert_true(lb_docker_live_add(&l, "labbox-x", "h:1:1") < 0);
	lb_docker_live_close(&l);
	setenv("XDG_CACHE_HOME", xdg, 1);
	if (h)
		setenv("HOME", h, 1);
	free(xdg);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_own_marker_alone_means_no_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_dead_labbox_marker_is_swept_then_forgotten, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_markers_are_kept_per_engine_and_storage, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_cache_directory_means_sweep, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
