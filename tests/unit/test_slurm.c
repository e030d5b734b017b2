/* backend/slurm: the submission helper for N cells (what `labbox sweep --mode slurm` calls),
 * squeue's output read defensively, and the node-side command. The clients are small stand-in
 * scripts on PATH that record their arguments and print what a cluster might: the real cluster
 * is driven by tests/e2e/test_slurm.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/backend.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
	char dir[64];
	char *old_path;
} fixture;

/* DIR/bin/NAME: a script printing OUTPUT and recording its arguments in DIR/NAME.args. */
static void stub(const fixture *f, const char *name, const char *output, int rc)
{
	char path[256], text[2048];
	snprintf(path, sizeof path, "%s/bin/%s", f->dir, name);
	snprintf(text, sizeof text,
		 "#!/bin/sh\nfor a in \"$@\"; do printf '%%s\\n' \"$a\"; done > '%s/%s.args'\n"
		 "printf '%%s' '%s'\nexit %d\n", f->dir, name, output, rc);
	assert_int_equal(lb_write_file_atomic_mode(path, text, strlen(text), 0755), 0);
}

static char *read_text(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(lb_read_file_at(-100 /* AT_FDCWD */, path, 1 << 20, &text, &len), 0);
	return text;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "/tmp/slurm-unit-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	char bin[128];
	snprintf(bin, sizeof bin, "%s/bin", f->dir);
	assert_int_equal(mkdir(bin, 0755), 0);
	const char *p = getenv("PATH");
	f->old_path = strdup(p ? p : "/usr/bin:/bin");
	char np[4096];
	snprintf(np, sizeof np, "%s:%s", bin, f->old_path);
	setenv("PATH", np, 1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	setenv("PATH", f->old_path, 1);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f->old_path);
	free(f);
	return 0;
}

static void test_array_of_three_cells_is_one_sbatch(void **state)
{
	fixture *f = *state;
	/* A warning line first, then "JOBID;CLUSTER", as --parsable prints on federations. */
	stub(f, "sbatch", "sbatch: warning: something\n4242;labboxtest\n", 0);
	char *a0[] = {"/opt/labbox", "run", "--json", "it's quoted", NULL};
	char *a1[] = {"/opt/labbox", "run", "$HOME", NULL};
	char *a2[] = {"/opt/labbox", "run", "`id`", NULL};
	char d0[128], d1[128], d2[128];
	snprintf(d0, sizeof d0, "%s/c0", f->dir);
	snprintf(d1, sizeof d1, "%s/c1", f->dir);
	snprintf(d2, sizeof d2, "%s/c2", f->dir);
	lb_slurm_cell cells[] = {{a0, d0}, {a1, d1}, {a2, d2}};
	lb_slurm_submit s = {.dir = f->dir, .name = "sweep-x", .partition = "gpu",
			     .account = "lab", .cpus = 2, .mem_bytes = (uint64_t)1 << 30,
			     .gpus = 1, .time_limit_s = 61, .signal_lead_s = 60,
			     .max_parallel = 2, .cells = cells, .ncells = 3};
	json_object *cmd = json_object_new_array();
	char id[32], err[512] = "";
	assert_int_equal(lb_slurm_submit_array(&s, cmd, id, err, sizeof err), 0);
	assert_string_equal(id, "4242");
	char path[256];
	snprintf(path, sizeof path, "%s/sbatch.args", f->dir);
	char *args = read_text(path);
	assert_non_null(strstr(args, "--array=0-2%2\n"));
	assert_non_null(strstr(args, "--partition=gpu\n"));
	assert_non_null(strstr(args, "--account=lab\n"));
	assert_non_null(strstr(args, "--cpus-per-task=2\n"));
	assert_non_null(strstr(args, "--mem=1024M\n"));
	assert_non_null(strstr(args, "--gres=gpu:1\n"));
	assert_non_null(strstr(args, "--time=2\n")); /* 61 s: whole minutes, rounded up */
	assert_non_null(strstr(args, "--signal=B:TERM@60\n"));
	assert_non_null(strstr(args, "slurm-%A_%a.out"));
	free(args);
	/* The command line is recorded as run: sbatch first, the script last. */
	size_t ncmd = json_object_array_length(cmd);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 0)), "sbatch");
	assert_non_null(strstr(json_object_get_string(json_object_array_get_idx(cmd, ncmd - 1)),
			       "/job.sh"));
	json_object_put(cmd);
	snprintf(path, sizeof path, "%s/job.sh", f->dir);
	char *sh = read_text(path);
	/* One case per cell, every word single-quoted: nothing expands on the node. */
	assert_non_null(strstr(sh, "0)\n\texec '/opt/labbox' 'run' '--json' 'it'\\''s quoted' >"));
	assert_non_null(strstr(sh, "1)\n\texec '/opt/labbox' 'run' '$HOME' >"));
	assert_non_null(strstr(sh, "2)\n\texec '/opt/labbox' 'run' '`id`' >"));
	assert_non_null(strstr(sh, "/c2/node.json' 2>"));
	free(sh);

	/* The same helper with one cell is a plain job, as `labbox run` submits it. */
	s.ncells = 1;
	assert_int_equal(lb_slurm_submit_array(&s, NULL, id, err, sizeof err), 0);
	snprintf(path, sizeof path, "%s/sbatch.args", f->dir);
	args = read_text(path);
	assert_null(strstr(args, "--array"));
	assert_non_null(strstr(args, "slurm-%j.out"));
	free(args);
}

static void test_sbatch_refusal_and_garbage(void **state)
{
	fixture *f = *state;
	char *a0[] = {"/opt/labbox", NULL};
	lb_slurm_cell cell = {a0, f->dir};
	lb_slurm_submit s = {.dir = f->dir, .cells = &cell, .ncells = 1};
	char id[32], err[512] = "";
	stub(f, "sbatch", "sbatch: error: Invalid account or account/partition combination", 1);
	assert_int_equal(lb_slurm_submit_array(&s, NULL, id, err, sizeof err), -EHOSTUNREACH);
	assert_non_null(strstr(err, "Invalid account"));
	assert_non_null(strstr(err, "sinfo"));
	stub(f, "sbatch", "Submitted nothing at all", 0);
	assert_int_equal(lb_slurm_submit_array(&s, NULL, id, err, sizeof err), -EHOSTUNREACH);
	assert_string_equal(id, "");
	/* Relative commands or directories are refused before anything runs. */
	char *rel[] = {"labbox", NULL};
	lb_slurm_cell bad = {rel, f->dir};
	s.cells = &bad;
	assert_int_equal(lb_slurm_submit_array(&s, NULL, id, err, sizeof err), -EINVAL);
}

static void test_poll_reads_squeue_defensively(void **state)
{
	fixture *f = *state;
	stub(f, "squeue",
	     "0|COMPLETED|node1\n1|RUNNING|node2\n[2-3%2]|PENDING|\n"
	     "garbage line\n4|lower|x\n9|RUNNING|far\n",
	     0);
	char st[5][32], nd[5][128];
	assert_int_equal(lb_slurm_poll("77", 5, st, nd), 0);
	assert_string_equal(st[0], "COMPLETED");
	assert_string_equal(nd[0], "node1");
	assert_string_equal(st[1], "RUNNING");
	assert_string_equal(st[2], "PENDING");
	assert_string_equal(st[3], "PENDING");
	assert_string_equal(st[4], ""); /* "lower" is not a state */
	char path[256];
	snprintf(path, sizeof path, "%s/squeue.args", f->dir);
	char *args = read_text(path);
	assert_non_null(strstr(args, "-r\n-t\nall\n-j\n77\n"));
	free(args);
	/* A plain job's %K is N/A: task 0. */
	stub(f, "squeue", "N/A|CANCELLED|n\n", 0);
	assert_int_equal(lb_slurm_poll("78", 1, st, NULL), 0);
	assert_string_equal(st[0], "CANCELLED");
	assert_int_equal(lb_slurm_poll("78; rm", 1, st, NULL), -EINVAL);
	/* A job squeue has forgotten is an answer: no task shown. */
	stub(f, "squeue", "slurm_load_jobs error: Invalid job id specified", 1);
	assert_int_equal(lb_slurm_poll("80", 1, st, NULL), 0);
	assert_string_equal(st[0], "");
	stub(f, "squeue", "slurm_load_jobs error: Unable to contact slurm controller", 1);
	assert_int_equal(lb_slurm_poll("79", 1, st, NULL), -EHOSTUNREACH);
}

static void test_poll_tasks_reads_restarts(void **state)
{
	fixture *f = *state;
	stub(f, "squeue",
	     "0|COMPLETED|0|node1|\n1         |RUNNING|2|node2|\n[2-3%2]|PENDING|0||\n"
	     "garbage line\n4|RUNNING|-1|x|\n4|RUNNING|1x|x|\n4|lower|0|x|\n9|RUNNING|0|far|\n",
	     0);
	lb_slurm_task t[5];
	assert_int_equal(lb_slurm_poll_tasks("77", 5, t), 0);
	assert_string_equal(t[0].state, "COMPLETED");
	assert_string_equal(t[0].node, "node1");
	assert_int_equal(t[0].restarts, 0);
	assert_string_equal(t[1].state, "RUNNING"); /* squeue pads the task id */
	assert_int_equal(t[1].restarts, 2);
	assert_string_equal(t[2].state, "PENDING");
	assert_string_equal(t[3].state, "PENDING");
	assert_string_equal(t[3].node, "");
	assert_string_equal(t[4].state, ""); /* a negative count, junk, a lower-case state */
	char path[256];
	snprintf(path, sizeof path, "%s/squeue.args", f->dir);
	char *args = read_text(path);
	assert_non_null(strstr(args, "-j\n77\n-O\nArrayTaskID:|,State:|,RestartCnt:|,NodeList:|\n"));
	free(args);
	assert_int_equal(lb_slurm_poll_tasks("7 7", 1, t), -EINVAL);
	stub(f, "squeue", "slurm_load_jobs error: Unable to contact slurm controller", 1);
	assert_int_equal(lb_slurm_poll_tasks("79", 1, t), -EHOSTUNREACH);
	assert_true(lb_slurm_state_final("CANCELLED") && !lb_slurm_state_final("PENDING"));
}

static void test_plan_only_writes_the_script_and_submits_nothing(void **state)
{
	fixture *f = *state;
	/* An sbatch that would fail loudly if it ran. */
	stub(f, "sbatch", "should not run", 1);
	char *argv0[] = {"/bin/true", "a b", NULL};
	lb_slurm_cell cells[2] = {{argv0, f->dir}, {argv0, f->dir}};
	lb_slurm_submit s = {.dir = f->dir, .name = "n", .cells = cells, .ncells = 2,
			     .max_parallel = 1, .plan_only = true};
	json_object *cmd = json_object_new_array();
	char id[32], err[256];
	assert_int_equal(lb_slurm_submit_array(&s, cmd, id, err, sizeof err), 0);
	assert_string_equal(id, "");
	char path[256];
	snprintf(path, sizeof path, "%s/sbatch.args", f->dir);
	assert_int_equal(access(path, F_OK), -1);
	const char *text = json_object_to_json_string_ext(cmd, JSON_C_TO_STRING_PLAIN);
	assert_non_null(strstr(text, "--array=0-1%1"));
	snprintf(path, sizeof path, "%s/job.sh", f->dir);
	char *sh = read_text(path);
	assert_non_null(strstr(sh, "exec '/bin/true' 'a b'"));
	free(sh);
	json_object_put(cmd);
}

static void test_node_argv(void **state)
{
	(void)state;
	json_object *sb = json_tokener_parse(
		"{\"network\":\"none\",\"memory_bytes\":268435456,\"cpus\":1.5,\"env\":[\"A=1\"],"
		"\"secret_env\":[\"TOKEN\"],\"volumes\":[\"/data:/data:ro\"],\"gpus\":\"0,1\","
		"\"hide\":[\"/data/private\"]}");
	const char *hide[] = {"/runs", "/labbox.db"};
	char *args[] = {"--lr", "0.1"};
	lb_slurm_node_run n = {.labbox = "/bin/lb", .runs_dir = "/r/slurm/runs", .expdir = "/r/exp",
			       .entry = "train.py", .args = args, .nargs = 2, .budget = 30,
			       .grace = 2, .sandbox = sb, .hide = hide, .nhide = 2,
			       .gpus_from_job = true};
	char **v = NULL;
	assert_int_equal(lb_slurm_node_argv(&n, &v), 0);
	lb_buf b = {0};
	for (size_t i = 0; v[i]; i++)
		lb_buf_printf(&b, "%s\n", v[i]);
	/* On the node the run is local whatever the staged labbox.yaml says. */
	assert_non_null(strstr(b.data, "/bin/lb\nrun\n--json\n--mode\nlocal\n"));
	assert_non_null(strstr(b.data, "--budget\n30.000\n"));
	assert_non_null(strstr(b.data, "--memory\n268435456\n"));
	assert_non_null(strstr(b.data, "--cpus\n1.5\n"));
	assert_non_null(strstr(b.data, "-e\nA=1\n"));
	assert_non_null(strstr(b.data, "--secret-env\nTOKEN\n"));
	assert_non_null(strstr(b.data, "-v\n/data:/data:ro\n"));
	/* the user's --hide, then the node's own records */
	assert_non_null(strstr(b.data, "--hide\n/data/private\n--hide\n/runs\n--hide\n/labbox.db\n"));
	assert_non_null(strstr(b.data, "--gpus\n@LABBOX_SLURM_JOB_GPUS@\n"));
	assert_non_null(strstr(b.data, "--entry\ntrain.py\n/r/exp\n--\n--lr\n0.1\n"));
	lb_buf_free(&b);
	lb_slurm_argv_free(v);
	json_object_put(sb);
	lb_slurm_node_run bad = {.labbox = "/bin/lb"};
	assert_int_equal(lb_slurm_node_argv(&bad, &v), -EINVAL);
}

static void test_bad_names_are_refused(void **state)
{
	(void)state;
	lb_backend *b = NULL;
	lb_slurm_config c = {.partition = "a b"};
	assert_int_equal(lb_backend_slurm(&c, &b), -EINVAL);
	c.partition = "--wrap=x";
	assert_int_equal(lb_backend_slurm(&c, &b), -EINVAL);
	c.partition = "gpu";
	c.account = "lab%j";
	assert_int_equal(lb_backend_slurm(&c, &b), -EINVAL);
	c.account = "lab";
	assert_int_equal(lb_backend_slurm(&c, &b), 0);
	assert_string_equal(b->ops->name, "slurm");
	lb_backend_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_array_of_three_cells_is_one_sbatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sbatch_refusal_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_reads_squeue_defensively, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_tasks_reads_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plan_only_writes_the_script_and_submits_nothing, setup, teardown),
		cmocka_unit_test(test_node_argv),
		cmocka_unit_test(test_bad_names_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
