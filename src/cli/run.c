/* labbox run: the whole pipeline on one experiment directory. */
#include "cli.h"
#include "labbox/check.h"
#include "labbox/collect.h"
#include "labbox/gate.h"
#include "labbox/record.h"
#include "labbox/run.h"
#include "labbox/util.h"

#include <getopt.h>
#include <json-c/json.h>
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
	"  --mode local|docker  where it runs (default: mode: in labbox.yaml, else local): the\n"
	"                       local sandbox, or a container (never a fallback to another)\n"
	"  --image NAME         mode docker: the image (default: image: in labbox.yaml); in\n"
	"                       docker mode --python names the interpreter inside the image\n"
	"                       (default python3)\n"
	"  --engine NAME        mode docker: docker or podman (default: the first that answers;\n"
	"                       DOCKER_HOST and docker contexts are honoured)\n"
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
	CLI_SANDBOX_HELP
	"\n"
	"Exit status: 0 completed with valid metrics, 1 the experiment failed, 2 usage or\n"
	"configuration error, 3 rejected by the static check, 4 metrics invalid (NaN, Inf, a declared metric missing), 124 time\n"
	"budget exceeded (partial results kept), 125 sandbox could not be set up, 128+N when labbox\n"
	"was interrupted by signal N. --json prints result.json's document on stdout and sends the\n"
	"experiment's output to stderr.\n";

enum { OPT_PYTHON = OPT_FIRST_PRIVATE, OPT_RUNS_DIR, OPT_METRICS, OPT_LOG_LIMIT, OPT_POLICY,
       OPT_TRUST, OPT_ENTRY, OPT_MODE, OPT_IMAGE, OPT_ENGINE, OPT_RUNTIME_GATE };

typedef struct echo_ctx {
	int fd;
	bool broken; /* the terminal or pipe went away: the run goes on, unechoed */
} echo_ctx;

static void echo(void *ctx, lb_stream stream, const char *data, size_t len)
{
	(void)stream;
	echo_ctx *e = ctx;
	if (!e->broken && lb_write_all(e->fd, data, len) < 0)
		e->broken = true;
}

static void warn(void *ctx, const char *message)
{
	(void)ctx;
	cli_error("run", "warning: %s", message);
}

static void print_value(FILE *f, json_object *v)
{
	if (json_object_is_type(v, json_type_string))
		fprintf(f, "%s", json_object_get_string(v));
	else
		fprintf(f, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static void print_group(FILE *f, const char *title, json_object *group)
{
	if (!group || json_object_object_length(group) == 0)
		return;
	fprintf(f, "  %s", title);
	const char *sep = "";
	json_object_object_foreach(group, k, v)
	{
		fprintf(f, "%s%s=", sep, k);
		print_value(f, v);
		sep = ", ";
	}
	fputc('\n', f);
}

/* Results-file values the summary shows; the rest are counted. */
#define SUMMARY_FILE_VALUES 20

static void print_summary(FILE *f, const lb_run_result *out)
{
	json_object *doc = out->doc, *v;
	const char *status = json_object_object_get_ex(doc, "status", &v) ? json_object_get_string(v) : "?";
	double wall = 0;
	json_object *res;
	if (json_object_object_get_ex(doc, "resources", &res) &&
	    json_object_object_get_ex(res, "wall_s", &v))
		wall = json_object_get_double(v);
	fprintf(f, "\nlabbox: run %s %s in %.2fs (exit %d)\n", out->id, status, wall, out->exit_code);
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
	/* The values of results files (final_info.json's means and stderrs, results.json's
	 * scalars) by dotted path, bounded: the record has all of them. */
	json_object *files;
	if (json_object_object_get_ex(doc, "metrics", &m) &&
	    json_object_object_get_ex(m, "files", &files) && files) {
		size_t shown = 0, total = 0;
		json_object_object_foreach(files, fname, fdoc)
		{
			json_object *flat = json_object_new_object();
			size_t dropped = 0;
			lb_results_flatten(fdoc, LB_FLATTEN_ARRAY_MAX, true, 100000, flat, &dropped);
			total += (size_t)json_object_object_length(flat) + dropped;
			const char *sep = "";
			json_object_object_foreach(flat, fk, fv)
			{
				if (shown >= SUMMARY_FILE_VALUES)
					break;
				if (!*sep)
					fprintf(f, "  %s: ", fname);
				fprintf(f, "%s%s=", sep, fk);
				print_value(f, fv);
				sep = ", ";
				shown++;
			}
			if (*sep)
				fputc('\n', f);
			json_object_put(flat);
		}
		if (total > shown)
			fprintf(f, "  (+%zu more values in results files; all of them in result.json)\n",
				total - shown);
	}
	json_object *warns;
	if (json_object_object_get_ex(doc, "metric_warnings", &warns))
		for (size_t i = 0; i < json_object_array_length(warns); i++) {
			json_object *w = json_object_array_get_idx(warns, i), *kind, *msg;
			if (json_object_object_get_ex(w, "kind", &kind) &&
			    strcmp(json_object_get_string(kind), "stale_file") == 0 &&
			    json_object_object_get_ex(w, "message", &msg))
				fprintf(f, "  stale: %s\n", json_object_get_string(msg));
		}
	json_object *issues;
	if (json_object_object_get_ex(doc, "metric_issues", &issues))
		for (size_t i = 0; i < json_object_array_length(issues); i++) {
			json_object *msg;
			if (json_object_object_get_ex(json_object_array_get_idx(issues, i), "message", &msg))
				fprintf(f, "  metric issue: %s\n", json_object_get_string(msg));
		}
	json_object *findings;
	if (json_object_object_get_ex(doc, "findings", &findings))
		for (size_t i = 0; i < json_object_array_length(findings) && i < 20; i++) {
			json_object *fi = json_object_array_get_idx(findings, i), *v1, *v2, *v3, *v4;
			if (json_object_object_get_ex(fi, "line", &v1) &&
			    json_object_object_get_ex(fi, "id", &v2) &&
			    json_object_object_get_ex(fi, "message", &v3) &&
			    json_object_object_get_ex(fi, "severity", &v4))
				fprintf(f, "  %s:%d: %s[%s]: %s\n",
					json_object_get_string(json_object_object_get(fi, "file")),
					json_object_get_int(v1), json_object_get_string(v4),
					json_object_get_string(v2), json_object_get_string(v3));
		}
	json_object *chk, *cerr;
	if (json_object_object_get_ex(doc, "check", &chk) &&
	    json_object_object_get_ex(chk, "error", &cerr) && cerr)
		fprintf(f, "  check: could not check the code, so it was not run: %s\n",
			json_object_get_string(cerr));
	json_object *fail;
	if (json_object_object_get_ex(doc, "failure", &fail) && fail) {
		json_object *cls, *sum, *sug;
		json_object_object_get_ex(fail, "class", &cls);
		json_object_object_get_ex(fail, "summary", &sum);
		json_object_object_get_ex(fail, "suggestion", &sug);
		fprintf(f, "  failure: %s: %s\n", cls ? json_object_get_string(cls) : "?",
			sum ? json_object_get_string(sum) : "");
		if (sug)
			fprintf(f, "  suggestion: %s\n", json_object_get_string(sug));
	}
	fprintf(f, "  run dir: %s\n", out->run_dir);
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

int cli_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_SANDBOX_LONGOPTS,
		{"python", required_argument, NULL, OPT_PYTHON},
		{"entry", required_argument, NULL, OPT_ENTRY},
		{"mode", required_argument, NULL, OPT_MODE},
		{"image", required_argument, NULL, OPT_IMAGE},
		{"engine", required_argument, NULL, OPT_ENGINE},
		{"runs-dir", required_argument, NULL, OPT_RUNS_DIR},
		{"metrics", required_argument, NULL, OPT_METRICS},
		{"log-limit", required_argument, NULL, OPT_LOG_LIMIT},
		{"policy", required_argument, NULL, OPT_POLICY},
		{"trust-project", no_argument, NULL, OPT_TRUST},
		{"runtime-gate", required_argument, NULL, OPT_RUNTIME_GATE},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_sandbox_opts o = {0};
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
	while ((opt = getopt_long(dashdash, argv, "hqe:v:", longopts, NULL)) != -1) {
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
		case OPT_PYTHON:
			req.python = optarg;
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
		case OPT_ENGINE:
			if (strcmp(optarg, "docker") != 0 && strcmp(optarg, "podman") != 0) {
				cli_error("run", "--engine '%s' is not one of docker, podman", optarg);
				goto done;
			}
			req.engine = optarg;
			break;
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
		case OPT_RUNTIME_GATE: {
			lb_gate_mode m;
			if (lb_gate_mode_parse(optarg, &m) < 0) {
				cli_error("run", "--runtime-gate '%s' is not one of off, record, on", optarg);
				goto done;
			}
			req.runtime_gate = (int)m;
			break;
		}
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
	if (dashdash + 1 < argc) {
		req.args = &argv[dashdash + 1];
		req.nargs = (size_t)(argc - dashdash - 1);
	}
	if (lb_sandbox_new(&sb) < 0) {
		cli_error("run", "out of memory");
		rc = 125;
		goto done;
	}
	if ((rc = cli_sandbox_apply("run", &o, sb)) != 0)
		goto done;
	rc = CLI_EXIT_USAGE;
	req.budget = o.budget;
	/* The default depends on the file system the run directories will live on. */
	req.disk_limit = cli_disk_limit(&o, req.runs_dir ? req.runs_dir : ".labbox/runs");
	req.grace = o.grace_set ? o.grace : 5.0;
	req.metrics = (const char *const *)metrics;
	req.nmetrics = nmetrics;
	echo_ctx ec = {.fd = o.json ? 2 : 1};
	if (!quiet) {
		req.echo = echo;
		req.echo_ctx = &ec;
	}
	req.warn = warn;
	req.sandbox_config = cli_sandbox_json(&o);
	req.command_line = argv - 1;
	req.command_argc = argc + 1;
	int r = lb_run_mode(sb, &req, &out);
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
		print_summary(stdout, &out);
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
