/* labbox run: the whole pipeline on one experiment directory. */
#include "cli.h"
#include "labbox/backend.h"
#include "labbox/check.h"
#include "labbox/collect.h"
#include "labbox/config.h"
#include "labbox/diagnose.h"
#include "labbox/gate.h"
#include "labbox/record.h"
#include "labbox/run.h"
#include "labbox/util.h"

#include "labbox/config.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char run_help[] =
	"usage: labbox run [OPTIONS] EXPDIR [-- ARGS...]\n"
	"\n"
	"Stage EXPDIR into .labbox/runs/RUN_ID/exp/, run its entry point (main.py, or entry: and\n"
	"args: in EXPDIR/labbox.yaml) in the sandbox with exp/ as the only writable place, stream\n"
	"its output to the terminal and to run.log, collect its metrics (`name: value` lines\n"
	"grouped by `condition: X` lines, and results.json), check them, and record result.json,\n"
	"manifest.json and environment.txt in the run directory.\n"
	"\n"
	"Options:\n"
	"  --python PATH        interpreter (default: python: in labbox.yaml, else python3 on PATH)\n"
	"  --env auto|NAME|PATH (a value without '='; with one it is -e NAME=VALUE) the Python\n"
	"                       environment: auto is the project's own (labbox.yaml\n"
	"                       env:, its .venv, environment.yml's name), else the first found\n"
	"                       that imports everything the code imports (exit 2 naming what is\n"
	"                       missing where when none does); NAME or PATH as `labbox probe`\n"
	"                       lists them. result.json's environment says what and why\n"
	"  --interpreter PATH   an R, Octave or Julia experiment's interpreter (default:\n"
	"                       interpreter: in labbox.yaml, else Rscript, octave-cli or julia\n"
	"                       on PATH); the entry point's extension (.py .R .m .jl), or\n"
	"                       language: in labbox.yaml, says the language\n"
	"  --mode local|docker|ssh|slurm|colab\n"
	"                       where it runs (default: mode: in labbox.yaml, else local): the\n"
	"                       local sandbox, a container, another machine through ssh, a\n"
	"                       Slurm job, or Colab (never a fallback to another)\n"
	"  --image NAME         mode docker: the image (default: image: in labbox.yaml); in\n"
	"                       docker mode --python names the interpreter inside the image\n"
	"                       (default python3). Without an image labbox builds one: FROM\n"
	"                       the base, the experiment's requirements.txt installed, a\n"
	"                       non-root user; tagged by the hash of those and reused\n"
	"  --base-image NAME    mode docker: the base of that build (default: base_image: in\n"
	"                       labbox.yaml, else " LB_DOCKER_DEFAULT_BASE ")\n"
	"  --engine NAME        mode docker: docker or podman (default: the first that answers;\n"
	"                       DOCKER_HOST and docker contexts are honoured and name docker)\n"
	"  --host NAME          mode ssh: the host, as `ssh NAME` takes it (default: host: in\n"
	"                       labbox.yaml); the run goes through labbox there, in its sandbox\n"
	"  --remote-labbox PATH mode ssh: the labbox on the host (default: labbox on its PATH);\n"
	"                       in mode ssh --python names the interpreter on the host\n"
	"  --install-remote     mode ssh: copy this labbox binary to the host for the run\n"
	"                       (checked to run there first); without any labbox there the run\n"
	"                       is refused unless --allow-degraded isolation accepts a plain\n"
	"                       `timeout BUDGET python3 main.py` there, not isolated by labbox\n"
	"  --mode slurm         a batch job of the cluster's own sbatch (SLURM_CONF honoured)\n"
	"                       running this labbox on the staged experiment on its node; the\n"
	"                       run directory must be on a file system the nodes share; the\n"
	"                       budget is the job's time limit, --memory/--cpus/--gpus its\n"
	"                       resources (--gpus 0,1: two GPUs of the job's)\n"
	"  --partition NAME, --account NAME, --qos NAME\n"
	"                       mode slurm: where the job goes (default: slurm: in labbox.yaml,\n"
	"                       else the cluster's defaults)\n"
	"  --mode colab --drive DIR\n"
	"                       run it on Google Colab through the synced Drive folder DIR: the\n"
	"                       job waits in DIR/labbox/pending/ for the worker labbox writes\n"
	"                       there (DIR/labbox/labbox_worker.ipynb); not isolated by labbox\n"
	"  --colab-poll SECONDS mode colab: how often the folder is looked at (default 5)\n"
	"  --colab-timeout SECONDS\n"
	"                       mode colab: labbox's own limit on the whole wait (default: the\n"
	"                       budget plus 600; none without a budget); then the job is\n"
	"                       cancelled (124), or withdrawn when no worker took it (125)\n"
	"  --colab-stale SECONDS\n"
	"                       mode colab: a claimed job whose heartbeat does not change for\n"
	"                       this long has a dead worker (125; default 120)\n"
	"  --entry FILE         entry point, relative to EXPDIR (default: entry: in labbox.yaml,\n"
	"                       else main.py); recorded in the manifest, repeated by rerun\n"
	"  --runs-dir DIR       where run directories go (default: .labbox/runs)\n"
	"  --metrics A,B        metrics the run must report (added to metrics: in labbox.yaml)\n"
	"  --log-limit SIZE     cap of run.log; the head and the tail are kept (default 16m)\n"
	"  -q, --quiet          do not stream the experiment's output to the terminal\n"
	"  --policy NAME        static check before running: standard (default: the seed's hard\n"
	"                       gate), strict (the seed's rules word for word), permissive\n"
	"                       (report only); rejected code never runs (exit 3)\n"
	"  --trust-project      let the experiment's own labbox.yaml allows and inline\n"
	"                       `# labbox: allow[ID]` comments lift hard-gate findings\n"
	"  --runtime-gate off|record|on\n"
	"                       the audit hook in the interpreter that refuses the hard gate's\n"
	"                       capabilities as they happen (default: on for standard and\n"
	"                       strict, record for permissive; on under permissive enforces the\n"
	"                       standard rules); recorded in the manifest, repeated by rerun\n"
	"  --escalate network,gpus,env,memory\n"
	"                       standing permission: when the run fails for one of these\n"
	"                       reasons it is run once more with just that escalation (the host\n"
	"                       network; all GPUs, when the host has any; twice --memory, after\n"
	"                       an oom; the environment --env auto finds, after a missing\n"
	"                       package or a wrong environment); every attempt is in\n"
	"                       result.json's attempts. Never escalated without it\n"
	"  --repair-cmd CMD     after a rejection or a failure, run `sh -c CMD` on the host as\n"
	"                       you, in a fresh copy of the experiment, with result.json on\n"
	"                       stdin (and LABBOX_RESULT, LABBOX_RUN_DIR, LABBOX_REPAIR_ATTEMPT);\n"
	"                       then check and run the copy again. Each repair's diff.patch,\n"
	"                       cmd.log and result.json are kept in RUN_DIR/repairs/N/; the\n"
	"                       command is ended after --budget seconds (600 without one)\n"
	"  --max-repairs N      repairs before the loop gives up (default 3); the exit status is\n"
	"                       the last attempt's\n"
	"  --apply              copy a repair that fixed the run into EXPDIR (without it EXPDIR\n"
	"                       is never changed)\n"
	CLI_SANDBOX_HELP
	"\n"
	"Exit status: 0 completed with valid metrics, 1 the experiment failed, 2 usage or\n"
	"configuration error, 3 rejected by the static check, 4 metrics invalid (NaN, Inf, a declared metric missing), 124 time\n"
	"budget exceeded (partial results kept), 125 sandbox (or the static check's own sandbox)\n"
	"could not be set up, 128+N when labbox was interrupted by signal N (at any step, the check\n"
	"and staging included; result.json's interrupted_in names it). --json prints result.json's document on stdout and sends the\n"
	"experiment's output to stderr.\n";

enum { OPT_INTERPRETER = 870 /* apart from the private numbers */, OPT_ENV = 871, OPT_PYTHON = OPT_FIRST_PRIVATE, OPT_RUNS_DIR, OPT_METRICS, OPT_LOG_LIMIT, OPT_POLICY,
       OPT_TRUST, OPT_ENTRY, OPT_MODE, OPT_IMAGE, OPT_ENGINE, OPT_HOST, OPT_REMOTE_LABBOX,
       OPT_INSTALL_REMOTE, OPT_PARTITION, OPT_ACCOUNT, OPT_QOS,
       OPT_DRIVE, OPT_COLAB_POLL, OPT_COLAB_TIMEOUT, OPT_COLAB_STALE, OPT_BASE_IMAGE, OPT_RUNTIME_GATE };

static void echo(void *ctx, lb_stream stream, const char *data, size_t len)
{
	(void)stream;
	cli_echo_write(ctx, data, len, false);
}

/* labbox's own lines between the experiment's (ctx: the echo, or NULL with --quiet) end the
 * echo's region first: output after them cannot move up over them. */
static void warn(void *ctx, const char *message)
{
	if (ctx)
		cli_echo_break(ctx);
	cli_error("run", "warning: %s", message);
}

/* Progress of a remote run, on stderr: stdout is the summary's (or the JSON document's). */
static void show_progress(void *ctx, const char *line)
{
	if (ctx)
		cli_echo_break(ctx);
	cli_error("run", "%s", line);
}

/* Whether this run goes to Slurm (flag, else labbox.yaml), decided before the sandbox flags
 * are applied here: the GPUs it names are the job's, not this host's. */
static bool slurm_mode(const lb_run_request *req)
{
	if (req->mode)
		return strcmp(req->mode, "slurm") == 0;
	lb_exp_config cfg;
	char err[256], dir[PATH_MAX];
	if (!req->expdir || !realpath(req->expdir, dir) ||
	    lb_config_load(dir, &cfg, err, sizeof err) < 0)
		return false;
	bool yes = cfg.mode && strcmp(cfg.mode, "slurm") == 0;
	lb_config_free(&cfg);
	return yes;
}

static bool slurm_name(const char *flag, const char *v)
{
	bool ok = *v && *v != '-';
	for (const char *p = v; ok && *p; p++)
		ok = (unsigned char)*p > 0x20 && *p != 0x7f && *p != '%';
	if (!ok)
		cli_error("run", "%s '%s' is not a Slurm name (one word, no '%%', no leading '-')",
			  flag, v);
	return ok;
}

static void print_group(FILE *f, const char *title, json_object *group)
{
	if (!group || json_object_object_length(group) == 0)
		return;
	lb_show_fprintf(f, "  %s", title);
	const char *sep = "";
	json_object_object_foreach(group, k, v)
	{
		lb_show_fprintf(f, "%s%s=", sep, k);
		lb_summary_value(f, v);
		sep = ", ";
	}
	fputc('\n', f);
}


static void print_summary(FILE *f, const lb_run_result *out)
{
	json_object *doc = out->doc, *v;
	const char *status = json_object_object_get_ex(doc, "status", &v) ? json_object_get_string(v) : "?";
	double wall = 0;
	json_object *res;
	if (json_object_object_get_ex(doc, "resources", &res) &&
	    json_object_object_get_ex(res, "wall_s", &v))
		wall = json_object_get_double(v);
	lb_show_fprintf(f, "\nlabbox: run %s %s in %.2fs (exit %d)\n", out->id, status, wall, out->exit_code);
	json_object *m;
	if (json_object_object_get_ex(doc, "metrics", &m)) {
		json_object *vals, *conds, *order;
		if (json_object_object_get_ex(m, "values", &vals))
			print_group(f, "metrics: ", vals);
		if (json_object_object_get_ex(m, "conditions", &conds) &&
		    json_object_object_get_ex(m, "condition_order", &order)) {
			for (size_t i = 0; i < json_object_array_length(order); i++) {
				const char *c = json_object_get_string(json_object_array_get_idx(order, i));
				json_object *g;
				char title[256];
				snprintf(title, sizeof title, "condition %s: ", c);
				if (json_object_object_get_ex(conds, c, &g))
					print_group(f, title, g);
			}
		}
	}
	lb_summary_details(f, doc, "  ");
	json_object *chk, *cerr;
	if (json_object_object_get_ex(doc, "check", &chk) &&
	    json_object_object_get_ex(chk, "error", &cerr) && cerr)
		lb_show_fprintf(f, "  check: could not check the code, so it was not run: %s\n",
			json_object_get_string(cerr));
	json_object *fail;
	if (json_object_object_get_ex(doc, "failure", &fail) && fail) {
		json_object *cls, *sum, *sug;
		json_object_object_get_ex(fail, "class", &cls);
		json_object_object_get_ex(fail, "summary", &sum);
		json_object_object_get_ex(fail, "suggestion", &sug);
		lb_show_fprintf(f, "  failure: %s: %s\n", cls ? json_object_get_string(cls) : "?",
			sum ? json_object_get_string(sum) : "");
		if (sug)
			lb_show_fprintf(f, "  suggestion: %s\n", json_object_get_string(sug));
	}
	cli_print_attempts(f, doc);
	lb_show_fprintf(f, "  run dir: %s\n", out->run_dir);
}

/* The summary on stdout through cli_printf: its names and values are the experiment's (metric
 * names, results files' strings, the failure's summary of its stderr), so no control byte of
 * theirs reaches the terminal as such. */
static void print_summary_shown(const lb_run_result *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m) {
		cli_printf("\nlabbox: run %s (exit %d); no memory for the summary\n", out->id,
			   out->exit_code);
		return;
	}
	print_summary(m, out);
	fclose(m);
	cli_print_block(text ? text : "");
	free(text);
}

/* Whether the run goes over ssh: --mode, else labbox.yaml's mode: (a file that does not load
 * is reported by the pipeline). */
static bool mode_is_ssh(const lb_run_request *req)
{
	if (req->mode)
		return strcmp(req->mode, "ssh") == 0;
	char dir[PATH_MAX], err[256];
	lb_exp_config cfg;
	memset(&cfg, 0, sizeof cfg);
	if (!realpath(req->expdir, dir) || lb_config_load(dir, &cfg, err, sizeof err) < 0)
		return false;
	bool ssh = cfg.mode && strcmp(cfg.mode, "ssh") == 0;
	lb_config_free(&cfg);
	return ssh;
}

static int split_metrics(const char *arg, char ***v, size_t *n)
{
	LB_AUTOFREE char *s = strdup(arg);
	if (!s)
		return -1;
	char *save = NULL;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		char **nv = realloc(*v, (*n + 1) * sizeof **v);
		if (!nv)
			return -1;
		*v = nv;
		nv[(*n)++] = strdup(tok);
	}
	return 0;
}

/* The sandbox of the flags o for req: 0, or the exit code after printing the error. */
static int make_sandbox(const cli_sandbox_opts *o, const lb_run_request *req, lb_sandbox **out)
{
	lb_sandbox *sb = NULL;
	if (lb_sandbox_new(&sb) < 0) {
		cli_error("run", "out of memory");
		return 125;
	}
	/* In mode ssh the GPUs and -v sources are the remote host's: the local sandbox runs
	 * nothing, so they are not looked for here (the remote labbox checks them). In mode
	 * slurm the GPUs are the job's: this host need not have them. */
	cli_sandbox_opts here = *o;
	if (mode_is_ssh(req)) {
		here.gpus = NULL;
		here.nvolumes = 0;
		here.nhide = 0; /* the remote host's paths, hidden by the labbox there */
	} else if (slurm_mode(req)) {
		here.gpus = NULL;
	}
	int rc = cli_sandbox_apply("run", &here, sb);
	if (rc != 0)
		lb_sandbox_free(sb);
	else
		*out = sb;
	return rc;
}

typedef struct attempt_ctx {
	const cli_sandbox_opts *o;
	const lb_run_request *req;
} attempt_ctx;

/* A later attempt's sandbox: the user's flags with what the escalations grant. The GPUs are
 * looked for quietly, so a host without any declines the escalation instead of failing. */
static int attempt_sandbox(void *ctx, const lb_attempt_grant *g, lb_sandbox **sb,
			   json_object **config, char *err, size_t errlen)
{
	attempt_ctx *c = ctx;
	cli_sandbox_opts o = *c->o;
	if (g->escalated & LB_ESCALATE_NETWORK)
		o.network = g->network_loopback ? LB_NET_LOOPBACK : LB_NET_HOST;
	if (g->escalated & LB_ESCALATE_MEMORY)
		o.memory = g->memory_bytes;
	bool gpus = g->escalated & LB_ESCALATE_GPUS;
	bool remote_gpus = mode_is_ssh(c->req) || slurm_mode(c->req);
	if (gpus)
		o.gpus = NULL;
	if (make_sandbox(&o, c->req, sb) != 0) {
		snprintf(err, errlen, "the sandbox could not be set up again (see above)");
		return -EINVAL;
	}
	if (gpus && !remote_gpus) {
		int r = lb_sandbox_use_gpus(*sb, "all", err, errlen);
		if (r < 0) {
			lb_sandbox_free(*sb);
			*sb = NULL;
			return r;
		}
	}
	if (gpus)
		o.gpus = (char *)"all";
	*config = cli_sandbox_json(&o);
	return 0;
}

int cli_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_SANDBOX_LONGOPTS,
		{"python", required_argument, NULL, OPT_PYTHON},
		{"interpreter", required_argument, NULL, OPT_INTERPRETER},
		{"entry", required_argument, NULL, OPT_ENTRY},
		{"mode", required_argument, NULL, OPT_MODE},
		{"image", required_argument, NULL, OPT_IMAGE},
		{"base-image", required_argument, NULL, OPT_BASE_IMAGE},
		{"engine", required_argument, NULL, OPT_ENGINE},
		{"host", required_argument, NULL, OPT_HOST},
		{"remote-labbox", required_argument, NULL, OPT_REMOTE_LABBOX},
		{"install-remote", no_argument, NULL, OPT_INSTALL_REMOTE},
		{"partition", required_argument, NULL, OPT_PARTITION},
		{"account", required_argument, NULL, OPT_ACCOUNT},
		{"qos", required_argument, NULL, OPT_QOS},
		{"drive", required_argument, NULL, OPT_DRIVE},
		{"colab-poll", required_argument, NULL, OPT_COLAB_POLL},
		{"colab-timeout", required_argument, NULL, OPT_COLAB_TIMEOUT},
		{"colab-stale", required_argument, NULL, OPT_COLAB_STALE},
		{"runs-dir", required_argument, NULL, OPT_RUNS_DIR},
		{"metrics", required_argument, NULL, OPT_METRICS},
		{"log-limit", required_argument, NULL, OPT_LOG_LIMIT},
		{"policy", required_argument, NULL, OPT_POLICY},
		{"trust-project", no_argument, NULL, OPT_TRUST},
		{"runtime-gate", required_argument, NULL, OPT_RUNTIME_GATE},
		{"escalate", required_argument, NULL, OPT_ESCALATE},
		{"repair-cmd", required_argument, NULL, OPT_REPAIR_CMD},
		{"max-repairs", required_argument, NULL, OPT_MAX_REPAIRS},
		{"apply", no_argument, NULL, OPT_APPLY},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_sandbox_opts o = {0};
	lb_attempts_config ac = {0};
	bool max_set = false;
	lb_run_request req = {0};
	char **metrics = NULL;
	size_t nmetrics = 0;
	bool quiet = false;
	int rc = CLI_EXIT_USAGE;
	lb_sandbox *sb = NULL;
	lb_run_result out = {0};
	/* Options end at `--`; what follows belongs to the experiment. */
	int dashdash = argc;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dashdash = i;
			break;
		}
	cli_json_begin("run", dashdash, argv, "hqe:v:", longopts, false);
	opterr = 0;
	int opt;
	int longindex = -1;
	while ((opt = getopt_long(dashdash, argv, "hqe:v:", longopts, &longindex)) != -1) {
		/* --env is docker's --env NAME=VALUE too: spelled long, a value without '=' names
		 * the Python environment; -e always sets a variable. */
		bool spelled_long = longindex >= 0;
		longindex = -1;
		if (opt == 'e' && spelled_long && optarg && !strchr(optarg, '='))
			opt = OPT_ENV;
		int r = cli_sandbox_opt("run", opt, optarg, &o);
		if (r < 0)
			goto done;
		if (r > 0)
			continue;
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(run_help, stdout);
			rc = 0;
			goto done;
		case 'q':
			quiet = true;
			break;
		case OPT_INTERPRETER:
			req.interpreter = optarg;
			break;
		case OPT_PYTHON:
			req.python = optarg;
			break;
		case OPT_ENV:
			if (!*optarg) {
				cli_error("run", "--env needs auto, a name or a path");
				return CLI_EXIT_USAGE;
			}
			req.env = optarg;
			break;
		case OPT_RUNS_DIR:
			req.runs_dir = optarg;
			break;
		case OPT_MODE:
			req.mode = optarg;
			break;
		case OPT_IMAGE:
			if (!optarg[0]) {
				cli_error("run", "--image needs an image name");
				goto done;
			}
			req.image = optarg;
			break;
		case OPT_BASE_IMAGE:
			if (!optarg[0]) {
				cli_error("run", "--base-image needs an image name");
				goto done;
			}
			req.base_image = optarg;
			break;
		case OPT_ENGINE:
			if (strcmp(optarg, "docker") != 0 && strcmp(optarg, "podman") != 0) {
				cli_error("run", "--engine '%s' is not one of docker, podman", optarg);
				goto done;
			}
			req.engine = optarg;
			break;
		case OPT_HOST:
			if (!optarg[0] || optarg[0] == '-') {
				cli_error("run", "--host '%s' is not a host name (what `ssh NAME` takes)",
					  optarg);
				goto done;
			}
			req.host = optarg;
			break;
		case OPT_REMOTE_LABBOX:
			if (!optarg[0] || strpbrk(optarg, "\n\r")) {
				cli_error("run", "--remote-labbox needs the path of labbox on the host");
				goto done;
			}
			req.remote_labbox = optarg;
			break;
		case OPT_INSTALL_REMOTE:
			req.install_remote = true;
			break;
		case OPT_PARTITION:
		case OPT_ACCOUNT:
		case OPT_QOS:
			if (!slurm_name(opt == OPT_PARTITION ? "--partition"
					: opt == OPT_ACCOUNT ? "--account" : "--qos", optarg))
				goto done;
			*(opt == OPT_PARTITION ? &req.partition : opt == OPT_ACCOUNT ? &req.account
										: &req.qos) = optarg;
			break;
		case OPT_DRIVE:
			if (!optarg[0]) {
				cli_error("run", "--drive needs the synced Google Drive folder");
				goto done;
			}
			req.drive = optarg;
			break;
		case OPT_COLAB_POLL:
		case OPT_COLAB_TIMEOUT:
		case OPT_COLAB_STALE: {
			double s;
			const char *name = opt == OPT_COLAB_POLL      ? "--colab-poll"
					   : opt == OPT_COLAB_TIMEOUT ? "--colab-timeout"
								      : "--colab-stale";
			if (lb_parse_seconds(optarg, &s) < 0 || s <= 0) {
				cli_error("run", "%s '%s' is not a positive number of seconds", name,
					  optarg);
				goto done;
			}
			*(opt == OPT_COLAB_POLL      ? &req.colab_poll
			  : opt == OPT_COLAB_TIMEOUT ? &req.colab_timeout
						     : &req.colab_stale) = s;
			break;
		}
		case OPT_ENTRY:
			if (!optarg[0]) {
				cli_error("run", "--entry needs a file name inside the experiment");
				goto done;
			}
			req.entry = optarg;
			break;
		case OPT_METRICS:
			if (split_metrics(optarg, &metrics, &nmetrics) < 0)
				goto done;
			break;
		case OPT_POLICY: {
			lb_check_policy p;
			if (lb_check_policy_parse(optarg, &p) < 0) {
				cli_error("run", "--policy '%s' is not one of strict, standard, permissive",
					  optarg);
				goto done;
			}
			req.policy = (int)p;
			break;
		}
		case OPT_TRUST:
			req.trust_project = true;
			break;
		case OPT_RUNTIME_GATE:
			if (cli_runtime_gate_opt("run", optarg, &req.runtime_gate) < 0)
				goto done;
			break;
		case OPT_ESCALATE:
		case OPT_REPAIR_CMD:
		case OPT_MAX_REPAIRS:
		case OPT_APPLY:
			if (cli_attempts_opt(opt, optarg, &ac, &max_set) < 0)
				goto done;
			break;
		case OPT_LOG_LIMIT:
			if (lb_parse_size(optarg, &req.log_limit) < 0 || req.log_limit < 1024) {
				cli_error("run", "--log-limit '%s' is not a size of at least 1k", optarg);
				goto done;
			}
			break;
		default:
			cli_bad_option("run", argv, optopt);
			goto done;
		}
	}
	if (optind >= dashdash) {
		cli_error("run", "no experiment directory given (usage: labbox run [OPTIONS] EXPDIR)");
		goto done;
	}
	req.expdir = argv[optind];
	if (optind + 1 < dashdash) {
		cli_error("run", "unexpected argument '%s' (experiment arguments go after --)",
			  argv[optind + 1]);
		goto done;
	}
	if ((max_set || ac.apply) && !ac.repair_cmd) {
		cli_error("run", "%s applies to the repair loop only: give --repair-cmd CMD",
			  max_set ? "--max-repairs" : "--apply");
		goto done;
	}
	if (dashdash + 1 < argc) {
		req.args = &argv[dashdash + 1];
		req.nargs = (size_t)(argc - dashdash - 1);
	}
	{
		/* Before the sandbox is set up: --gpus on a run meant for Slurm is the job's, and
		 * this host's lack of a GPU would hide the missing --mode slurm. */
		char mode[64], err[512];
		if (lb_run_resolve_mode(&req, mode, sizeof mode) == 0 &&
		    lb_run_mode_flags_check(&req, mode, "run", err, sizeof err) < 0) {
			cli_error("run", "%s", err);
			goto done;
		}
	}
	if (!mode_is_ssh(&req) && (rc = cli_hide_outside("run", &o, req.expdir)) != 0)
		goto done;
	if ((rc = make_sandbox(&o, &req, &sb)) != 0)
		goto done;
	rc = CLI_EXIT_USAGE;
	req.budget = o.budget;
	/* The default depends on the file system the run directories will live on. */
	req.disk_limit = cli_disk_limit(&o, req.runs_dir ? req.runs_dir : ".labbox/runs");
	req.grace = o.grace_set ? o.grace : 5.0;
	req.metrics = (const char *const *)metrics;
	req.nmetrics = nmetrics;
	cli_echo ec;
	cli_echo_init(&ec, o.json ? 2 : 1, false);
	if (!quiet) {
		req.echo = echo;
		req.echo_ctx = &ec;
	}
	req.warn = warn;
	req.warn_ctx = quiet ? NULL : &ec;
	req.progress = show_progress;
	req.progress_ctx = quiet ? NULL : &ec;
	req.sandbox_config = cli_sandbox_json(&o);
	req.command_line = argv - 1;
	req.command_argc = argc + 1;
	attempt_ctx actx = {.o = &o, .req = &req};
	ac.sandbox = attempt_sandbox;
	ac.sandbox_ctx = &actx;
	int r = ac.escalate || ac.repair_cmd ? lb_run_attempts(sb, &req, &ac, &out)
					     : lb_run_mode(sb, &req, &out);
	if (!quiet)
		cli_echo_write(&ec, NULL, 0, true);
	if (r < 0) {
		cli_error("run", "%s", strerror(-r));
		rc = 125;
		goto done;
	}
	rc = out.exit_code;
	if (!out.doc) {
		cli_error("run", "%s", out.error);
		goto done;
	}
	if (o.json) {
		cli_json_print(out.doc);
	} else {
		print_summary_shown(&out);
	}
done:
	if (req.sandbox_config)
		json_object_put(req.sandbox_config);
	lb_run_result_free(&out);
	for (size_t i = 0; i < nmetrics; i++)
		free(metrics[i]);
	free(metrics);
	lb_sandbox_free(sb);
	cli_sandbox_opts_free(&o);
	return rc;
}
