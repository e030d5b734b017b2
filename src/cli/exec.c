/* labbox exec: run any command in the sandbox. */
#include "cli.h"
#include "labbox/backend.h"
#include "labbox/record.h"
#include "labbox/run.h"
#include "labbox/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
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
	"                       process (resources.peak_rss_source says which)\n"
	"  --mode local|docker  local (default): this host's sandbox; docker: a container of\n"
	"                       --image, made as `labbox run --mode docker` makes one (read-only\n"
	"                       root, no capabilities, no-new-privileges, the same user and\n"
	"                       limits, --network none), CMD looked up on the image's PATH;\n"
	"                       never a fallback to another mode\n"
	"  --image NAME         mode docker: the image to run CMD in (required: exec builds none)\n"
	"  --engine NAME        mode docker: docker or podman (default: the first that answers)\n"
	CLI_SANDBOX_HELP
	"\n"
	"Exit status: CMD's own, 128+N when killed by signal N, 124 when the budget ended it,\n"
	"125 when the sandbox could not be set up, 126/127 when CMD cannot be run or is not found,\n"
	"2 for usage errors. --json prints {schema: labbox.exec/1, status, exit_code, signal,\n"
	"timed_out, resources, isolation} on stdout; CMD's stdout then goes to stderr.\n";

enum { OPT_EXEC_MODE = OPT_FIRST_PRIVATE, OPT_EXEC_IMAGE, OPT_EXEC_ENGINE };

typedef struct exec_out {
	cli_echo out, err;
	bool one; /* --json: both streams go to stderr, through one echo to keep their order */
} exec_out;

static void exec_out_init(exec_out *o, bool json, double budget)
{
	cli_echo_init(&o->out, json ? 2 : 1, true);
	cli_echo_init(&o->err, 2, true);
	o->one = json;
	/* CMD's stdout is the answer: a slow reader is waited for (within the budget), never
	 * dropped on, as CMD's own write into a pipe would wait */
	if (!json)
		cli_echo_hold(&o->out, budget);
}

/* CMD's stdout is a pipe to labbox, so CMD never sees a full disk or a closed stdout: the
 * relay does. What it could not write is the lost answer, said at the end and exit 74 in place
 * of a 0 (cli_out_finish), as for any command's answer. Under --json CMD's stdout is a copy
 * on stderr, the document is the answer. */
static void exec_out_flush(exec_out *o)
{
	cli_echo_write(&o->out, NULL, 0, true);
	cli_echo_write(&o->err, NULL, 0, true);
	if (!o->one && o->out.err)
		cli_out_failed(o->out.err);
	else if (!o->one && o->out.dropped)
		cli_out_failed(EIO);
}

static void relay(void *ctx, lb_stream stream, const char *data, size_t len)
{
	exec_out *o = ctx;
	cli_echo_write(stream == LB_STREAM_STDOUT || o->one ? &o->out : &o->err, data, len, false);
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

/* The verdict of a command, as both modes report it: a message on stderr for what labbox
 * ended or could not set up, and with --json the labbox.exec/1 document (with the docker
 * backend's block when there is one; it is consumed). Returns the exit status. */
static int exec_report(const cli_sandbox_opts *o, const char *workdir, const lb_sandbox_result *res,
		       json_object *backend)
{
	int rc = lb_sandbox_exit_status(res);
	if (res->outcome == LB_SB_SETUP_FAILED)
		cli_error("exec", "%s: %s", res->setup_step, res->setup_error);
	else if (res->oom_killed && res->outcome == LB_SB_SIGNALED)
		cli_error("exec", "killed for exceeding the memory limit of %llu bytes",
			  (unsigned long long)o->memory);
	else if (res->outcome == LB_SB_DISK_LIMIT)
		cli_error("exec", "wrote more than the disk limit under %s; the process tree was killed",
			  workdir);
	else if (res->outcome == LB_SB_TIMEOUT)
		cli_error("exec", "time budget of %gs exceeded; the process tree was killed",
			  o->budget);
	if (o->json) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_string("labbox.exec/1"));
		bool oom = res->oom_killed && res->outcome == LB_SB_SIGNALED;
		json_object_object_add(doc, "status",
				       json_object_new_string(oom ? "oom" : outcome_name(res->outcome)));
		json_object_object_add(doc, "oom_killed", json_object_new_boolean(res->oom_killed));
		json_object_object_add(doc, "exit_code", json_object_new_int(rc));
		json_object_object_add(doc, "signal", json_object_new_int(res->term_signal));
		json_object_object_add(doc, "timed_out", json_object_new_boolean(res->timed_out));
		json_object_object_add(doc, "resources", lb_record_resources_json(res));
		json_object_object_add(doc, "isolation", lb_record_isolation_json(&res->isolation));
		if (res->outcome == LB_SB_SETUP_FAILED) {
			json_object *e = json_object_new_object();
			json_object_object_add(e, "step", json_object_new_string(res->setup_step));
			json_object_object_add(e, "message", json_object_new_string(res->setup_error));
			json_object_object_add(doc, "error", e);
		}
		if (backend)
			json_object_object_add(doc, "backend", backend);
		backend = NULL;
		cli_json_print(doc);
		json_object_put(doc);
	}
	json_object_put(backend);
	return rc;
}

/* --mode docker: CMD in a container made as `labbox run --mode docker` makes one (the same
 * flags, user and limits), supervised by the docker backend; --workdir is bound read-write at
 * its own path. The local sandbox sb carries the flags' checks and the payload's ids only. */
static int exec_docker(const cli_sandbox_opts *o, lb_sandbox *sb, const char *image,
		       const char *engine, const char *workdir, char **cmd)
{
	char wd[PATH_MAX];
	if (workdir && !realpath(workdir, wd)) {
		cli_error("exec", "--workdir '%s': %s", workdir, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	uid_t uid;
	gid_t gid;
	lb_sandbox_payload_ids(sb, &uid, &gid);
	json_object *sbj = cli_sandbox_json(o);
	lb_docker_config dc = {.engine = engine, .image = image, .sandbox = sbj,
			       .grace = o->grace_set ? o->grace : 5.0, .uid = uid, .gid = gid,
			       .exec = true};
	lb_backend *be = NULL;
	int r = lb_backend_docker(&dc, &be);
	json_object_put(sbj);
	if (r < 0) {
		cli_error("exec", "the docker backend: %s", strerror(-r));
		return 125;
	}
	char id[32] = "exec-";
	if (lb_random_hex(id + 5, 6) < 0)
		snprintf(id, sizeof id, "exec-%d", (int)getpid());
	exec_out eo;
	exec_out_init(&eo, o->json, o->budget);
	lb_backend_job job = {
		.id = id, .exp_dir = workdir ? wd : NULL, .argv = cmd, .budget = o->budget,
		.disk_limit = workdir ? cli_disk_limit(o, wd) : 0, .output = relay, .output_ctx = &eo,
	};
	lb_sandbox_result res;
	memset(&res, 0, sizeof res);
	char err[512] = "";
	if ((r = be->ops->prepare(be, &job, err, sizeof err)) < 0) {
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "prepare");
		snprintf(res.setup_error, sizeof res.setup_error, "%s", err);
	} else if ((r = be->ops->run(be, &job, &res)) < 0) {
		res.outcome = LB_SB_SETUP_FAILED;
		snprintf(res.setup_step, sizeof res.setup_step, "supervise");
		snprintf(res.setup_error, sizeof res.setup_error, "%s", strerror(-r));
	}
	exec_out_flush(&eo);
	be->ops->cleanup(be);
	int rc = exec_report(o, workdir, &res, be->ops->describe(be));
	lb_backend_free(be);
	return rc;
}

int cli_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_SANDBOX_LONGOPTS,
		{"workdir", required_argument, NULL, 'w'},
		{"peak-memory", no_argument, NULL, 'P'},
		{"mode", required_argument, NULL, OPT_EXEC_MODE},
		{"image", required_argument, NULL, OPT_EXEC_IMAGE},
		{"engine", required_argument, NULL, OPT_EXEC_ENGINE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_sandbox_opts o = {0};
	const char *workdir = NULL;
	bool tree_peak = false, docker = false;
	const char *image = NULL, *engine = NULL;
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
		case OPT_EXEC_MODE:
			if (strcmp(optarg, "local") != 0 && strcmp(optarg, "docker") != 0) {
				/* ssh and colab run an experiment directory, not a command line. */
				cli_error("exec", "--mode '%s' is not one exec has (local, docker); run "
					  "an experiment elsewhere with labbox run --mode", optarg);
				goto out;
			}
			docker = strcmp(optarg, "docker") == 0;
			break;
		case OPT_EXEC_IMAGE:
			if (!optarg[0]) {
				cli_error("exec", "--image needs an image name");
				goto out;
			}
			if (!lb_docker_image_name_ok(optarg)) {
				cli_error("exec", "--image '%s' is not an image reference (letters, digits "
					  "and ._-:/@+, not starting with '-')", optarg);
				goto out;
			}
			image = optarg;
			break;
		case OPT_EXEC_ENGINE:
			if (strcmp(optarg, "docker") != 0 && strcmp(optarg, "podman") != 0) {
				cli_error("exec", "--engine '%s' is not one of docker, podman", optarg);
				goto out;
			}
			engine = optarg;
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
	{
		lb_run_request flags = {.image = image, .engine = engine};
		char err[256];
		if (lb_run_mode_flags_check(&flags, docker ? "docker" : "local", "command", err,
					    sizeof err) < 0) {
			cli_error("exec", "%s", err);
			goto out;
		}
	}
	if (docker && !image) {
		cli_error("exec", "exec --mode docker needs --image NAME (exec builds no image; "
			  "labbox run --mode docker builds one from an experiment's requirements.txt)");
		goto out;
	}
	if (docker && tree_peak) {
		cli_error("exec", "--peak-memory: the docker mode does not measure peak memory");
		goto out;
	}
	if (lb_sandbox_new(&sb) < 0) {
		cli_error("exec", "out of memory");
		rc = 125;
		goto out;
	}
	if ((rc = cli_sandbox_apply("exec", &o, sb)) != 0)
		goto out;
	/* The command is no more trusted than an experiment: the records are out of its sight. */
	if (!docker && lb_record_hide_known(sb) < 0) {
		cli_error("exec", "cannot hide labbox's records from the command: out of memory");
		rc = 125;
		goto out;
	}
	rc = CLI_EXIT_USAGE;
	if (workdir) {
		int r = lb_sandbox_set_workdir(sb, workdir);
		if (r < 0) {
			cli_error("exec", "--workdir '%s': %s", workdir, strerror(-r));
			goto out;
		}
		lb_sandbox_set_disk_limit(sb, workdir, cli_disk_limit(&o, workdir));
	}
	if (docker) {
		rc = exec_docker(&o, sb, image, engine, workdir, &argv[optind]);
		goto out;
	}
	rc = cli_resolve_program("exec", argv[optind], sb, &prog);
	if (rc != 0)
		goto out;
	char **cmd = &argv[optind];
	char *saved = cmd[0];
	cmd[0] = prog;
	lb_sandbox_set_argv(sb, cmd);
	cmd[0] = saved;
	exec_out eo;
	exec_out_init(&eo, o.json, o.budget);
	lb_sandbox_set_output(sb, false, relay, &eo);
	lb_sandbox_set_stdin(sb, 0);
	/* exec is for short commands: peak memory from the cgroup only with --peak-memory or a
	 * limit (which needs the cgroup anyway). */
	lb_sandbox_set_cgroup_accounting(sb, tree_peak);

	lb_sandbox_result res;
	int r = lb_sandbox_run(sb, &res);
	exec_out_flush(&eo);
	if (r < 0) {
		cli_error("exec", "supervising the sandbox failed: %s", strerror(-r));
		rc = 125;
		goto out;
	}
	rc = exec_report(&o, workdir, &res, NULL);
out:
	free(prog);
	lb_sandbox_free(sb);
	cli_sandbox_opts_free(&o);
	return rc;
}
