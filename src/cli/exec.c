/* labbox exec: run any command in the sandbox. */
#include "cli.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char exec_help[] =
	"usage: labbox exec [OPTIONS] -- CMD [ARGS...]\n"
	"\n"
	"Run CMD isolated: fresh user, pid, mount, network, ipc and uts namespaces; the host file\n"
	"system read-only with home directories and /run hidden; private /tmp, /var/tmp and\n"
	"/dev/shm; a fresh /proc; a minimal /dev; loopback-only network; a clean environment; no\n"
	"inherited file descriptors (stdin is relayed through a pipe); a new session without a\n"
	"terminal; no capabilities. When labbox runs as root the command runs as uid 65534. The\n"
	"whole process tree ends with CMD, with the budget, and with labbox itself.\n"
	"\n"
	"Options:\n"
	"  -w, --workdir DIR    bind host DIR writable at the same path and start there\n"
	"                       (default: start in the private /tmp)\n"
	"  --peak-memory        measure the whole tree's peak memory in a cgroup (costs a few\n"
	"                       ms of start-up); otherwise --json reports the largest single\n"
	"                       process (resources.peak_rss_source says which)\n" CLI_SANDBOX_HELP
	"\n"
	"Exit status: CMD's own, 128+N when killed by signal N, 124 when the budget ended it,\n"
	"125 when the sandbox could not be set up, 126/127 when CMD cannot be run or is not found,\n"
	"2 for usage errors. --json prints {schema: labbox.exec/1, status, exit_code, signal,\n"
	"timed_out, resources, isolation} on stdout; CMD's stdout then goes to stderr.\n";

typedef struct exec_out {
	int stdout_fd;
} exec_out;

static void relay(void *ctx, lb_stream stream, const char *data, size_t len)
{
	exec_out *o = ctx;
	lb_write_all(stream == LB_STREAM_STDOUT ? o->stdout_fd : 2, data, len);
}

static const char *outcome_name(lb_sandbox_outcome o)
{
	switch (o) {
	case LB_SB_EXITED: return "exited";
	case LB_SB_SIGNALED: return "signaled";
	case LB_SB_TIMEOUT: return "timeout";
	case LB_SB_INTERRUPTED: return "interrupted";
	case LB_SB_DISK_LIMIT: return "disk_limit";
	case LB_SB_SETUP_FAILED: return "infra_error";
	}
	return "infra_error";
}

int cli_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_SANDBOX_LONGOPTS,
		{"workdir", required_argument, NULL, 'w'},
		{"peak-memory", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_sandbox_opts o = {0};
	const char *workdir = NULL;
	bool tree_peak = false;
	int rc = CLI_EXIT_USAGE;
	lb_sandbox *sb = NULL;
	char *prog = NULL;
	cli_json_begin("exec", argc, argv, "+hw:e:v:", longopts, true);
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "+hw:e:v:", longopts, NULL)) != -1) {
		int r = cli_sandbox_opt("exec", opt, optarg, &o);
		if (r < 0)
			goto out;
		if (r > 0)
			continue;
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(exec_help, stdout);
			rc = 0;
			goto out;
		case 'w':
			workdir = optarg;
			break;
		case 'P':
			tree_peak = true;
			break;
		default:
			cli_bad_option("exec", argv, optopt);
			goto out;
		}
	}
	if (optind >= argc) {
		cli_error("exec", "no command given (usage: labbox exec [OPTIONS] -- CMD [ARGS])");
		goto out;
	}
	if (lb_sandbox_new(&sb) < 0) {
		cli_error("exec", "out of memory");
		rc = 125;
		goto out;
	}
	if ((rc = cli_sandbox_apply("exec", &o, sb)) != 0)
		goto out;
	rc = CLI_EXIT_USAGE;
	if (workdir) {
		int r = lb_sandbox_set_workdir(sb, workdir);
		if (r < 0) {
			cli_error("exec", "--workdir '%s': %s", workdir, strerror(-r));
			goto out;
		}
		lb_sandbox_set_disk_limit(sb, workdir, cli_disk_limit(&o, workdir));
	}
	rc = cli_resolve_program("exec", argv[optind], sb, &prog);
	if (rc != 0)
		goto out;
	char **cmd = &argv[optind];
	char *saved = cmd[0];
	cmd[0] = prog;
	lb_sandbox_set_argv(sb, cmd);
	cmd[0] = saved;
	exec_out eo = {.stdout_fd = o.json ? 2 : 1};
	lb_sandbox_set_output(sb, false, relay, &eo);
	lb_sandbox_set_stdin(sb, 0);
	/* exec is for short commands: peak memory from the cgroup only with --peak-memory or a
	 * limit (which needs the cgroup anyway). */
	lb_sandbox_set_cgroup_accounting(sb, tree_peak);

	lb_sandbox_result res;
	int r = lb_sandbox_run(sb, &res);
	if (r < 0) {
		cli_error("exec", "supervising the sandbox failed: %s", strerror(-r));
		rc = 125;
		goto out;
	}
	rc = lb_sandbox_exit_status(&res);
	if (res.outcome == LB_SB_SETUP_FAILED)
		cli_error("exec", "%s: %s", res.setup_step, res.setup_error);
	else if (res.oom_killed && res.outcome == LB_SB_SIGNALED)
		cli_error("exec", "killed for exceeding the memory limit of %llu bytes",
			  (unsigned long long)o.memory);
	else if (res.outcome == LB_SB_DISK_LIMIT)
		cli_error("exec", "wrote more than the disk limit under %s; the process tree was killed",
			  workdir);
	else if (res.outcome == LB_SB_TIMEOUT)
		cli_error("exec", "time budget of %gs exceeded; the process tree was killed",
			  o.budget);
	if (o.json) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_string("labbox.exec/1"));
		bool oom = res.oom_killed && res.outcome == LB_SB_SIGNALED;
		json_object_object_add(doc, "status",
				       json_object_new_string(oom ? "oom" : outcome_name(res.outcome)));
		json_object_object_add(doc, "oom_killed", json_object_new_boolean(res.oom_killed));
		json_object_object_add(doc, "exit_code", json_object_new_int(rc));
		json_object_object_add(doc, "signal", json_object_new_int(res.term_signal));
		json_object_object_add(doc, "timed_out", json_object_new_boolean(res.timed_out));
		json_object_object_add(doc, "resources", lb_record_resources_json(&res));
		json_object_object_add(doc, "isolation", lb_record_isolation_json(&res.isolation));
		if (res.outcome == LB_SB_SETUP_FAILED) {
			json_object *e = json_object_new_object();
			json_object_object_add(e, "step", json_object_new_string(res.setup_step));
			json_object_object_add(e, "message", json_object_new_string(res.setup_error));
			json_object_object_add(doc, "error", e);
		}
		cli_json_print(doc);
		json_object_put(doc);
	}
out:
	free(prog);
	lb_sandbox_free(sb);
	cli_sandbox_opts_free(&o);
	return rc;
}
