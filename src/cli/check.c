/* labbox check: static validation of experiment code. */
#include "cli.h"
#include "labbox/backend.h"
#include "labbox/check.h"
#include "labbox/lang.h"
#include "labbox/run.h"
#include "labbox/config.h"
#include "labbox/gate.h"
#include "labbox/env.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK_EXIT_REJECTED 3

static const char check_help[] =
	"usage: labbox check [OPTIONS] PATH...\n"
	"\n"
	"Check Python experiment code before it runs. Each PATH is an experiment directory (every\n"
	"*.py under it, its labbox.yaml read, the harness rules applied to its entry point) or a\n"
	"single .py file (its own entry point). Names are resolved per scope, so `import os as o;\n"
	"o.system(...)`, getattr(os, \"system\") and __import__(\"subprocess\") are found, while\n"
	"model.eval() and re.compile() are not. Rule IDs and policies: docs/check.md.\n"
	"\n"
	"Options:\n"
	"  --policy NAME        strict (the seed's rules word for word), standard (default: the\n"
	"                       hard gate; ordinary research code passes) or permissive (report\n"
	"                       only, never reject)\n"
	"  --python PATH        interpreter whose compile(), run in the sandbox, decides syntax\n"
	"                       errors (default: the tree-sitter parser's error nodes)\n"
	"  --config FILE        read `check:`, `plan:` and `budget:` from this labbox.yaml (for\n"
	"                       files; a directory's own labbox.yaml is always read)\n"
	"  --entry FILE         entry point of a directory, relative to it (default main.py)\n"
	"  --allow-module M     lift findings for module M and put it on the import allowlist\n"
	"  --allow-call NAME    lift findings for a resolved name such as shutil.rmtree\n"
	"  --deny-module M      reject any import or use of module M\n"
	"  --deny-call NAME     reject any use of NAME\n"
	"  --output-path DIR    an absolute path the code may write to (besides the experiment)\n"
	"  --ignore ID|CATEGORY do not report a rule (LB201) or a category (harness); repeatable\n"
	"  --trust-project      let the project's labbox.yaml allows and inline\n"
	"                       `# labbox: allow[ID] reason` comments lift hard-gate rules too\n"
	"  --runtime-gate on|record|off\n"
	"                       the gate the run will have (default on, as `labbox run` under\n"
	"                       standard). Under standard, what code reaches only through a\n"
	"                       standard library call (platform.platform() may start `uname`)\n"
	"                       is a warning when the gate is on, which refuses it where it\n"
	"                       happens, and an error without it\n"
	"  --no-cache           neither read nor write labbox's caches (each file's findings,\n"
	"                       kept by content and configuration; the whole answer, printed\n"
	"                       again when no file changed; compile() verdicts; the\n"
	"                       interpreter probe) in $XDG_CACHE_HOME/labbox or ~/.cache/labbox\n"
	"  --list-rules         print the rule table and exit\n"
	"  --json               print one JSON document (schema labbox.check/1, with llm_text)\n"
	"  -h, --help           this help\n"
	"\n"
	"Output: `file:line:col: severity[ID]: message` per finding, `file:line: need[KIND]: FLAG`\n"
	"for what the code needs from the sandbox (network, gpu, write_outside: the flag that\n"
	"grants it; never a rejection), then a summary line.\n"
	"Exit status: 0 accepted, 3 rejected under the policy, 2 usage or read errors (a\n"
	"directory without Python files among them).\n";

enum {
	OPT_POLICY = OPT_FIRST_PRIVATE,
	OPT_PYTHON,
	OPT_CONFIG,
	OPT_ENTRY,
	OPT_ALLOW_MODULE,
	OPT_ALLOW_CALL,
	OPT_DENY_MODULE,
	OPT_DENY_CALL,
	OPT_OUTPUT_PATH,
	OPT_IGNORE,
	OPT_TRUST,
	OPT_LIST_RULES,
	OPT_CHECK_JSON,
	OPT_NO_CACHE,
	OPT_RUNTIME_GATE,
};

static int load_config_file(lb_check_config *cfg, const char *path)
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	char err[512];
	int r = lb_read_file_at(AT_FDCWD, path, 1u << 20, &text, &len);
	if (r < 0) {
		cli_error("check", "--config '%s': %s", path, strerror(-r));
		return -1;
	}
	if (lb_check_config_load_yaml(cfg, text, len, err, sizeof err) < 0) {
		cli_error("check", "--config '%s': %s", path, err);
		return -1;
	}
	return 0;
}

static void list_rules(void)
{
	const lb_check_rule_info *r;
	for (size_t i = 0; (r = lb_check_rule(i)); i++)
		printf("%s  %-12s %s\n", r->id, r->category, r->title);
}

static const char *python_named; /* --python as given */

/* --python is probed on the host, as the user's interpreter; one that lives in a checked
 * directory (a shipped .venv's bin/python, whose pyvenv.cfg brings the venv's .pth files) is
 * the experiment's code and is probed in the sandbox instead. 0, or -1 said. */
static int confine_python(lb_check_config *cfg, int first, int argc, char **argv)
{
	for (int i = first; python_named && i < argc; i++) {
		char dir[PATH_MAX];
		struct stat st;
		snprintf(dir, sizeof dir, "%s", argv[i]);
		if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
			char *slash = strrchr(dir, '/');
			snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - argv[i]) : 1,
				 slash ? argv[i] : ".");
		}
		char real[PATH_MAX];
		LB_AUTOFREE char *state = lb_record_state_dir();
		if (!realpath(dir[0] ? dir : "/", real) ||
		    !(lb_program_inside(python_named, real) ||
		      lb_record_holds_program(state, NULL, python_named)))
			continue;
		/* The confined probe reads a relative path from the experiment; this one was
		 * given relative to here. */
		char abs[PATH_MAX * 2], cwd[PATH_MAX];
		if (strchr(python_named, '/') && python_named[0] != '/' && getcwd(cwd, sizeof cwd))
			snprintf(abs, sizeof abs, "%s/%s", cwd, python_named);
		else
			snprintf(abs, sizeof abs, "%s", python_named);
		lb_python_info py;
		char err[512] = "";
		if (lb_python_probe_confined(abs, real, NULL, &py, err, sizeof err) < 0 ||
		    lb_check_config_set_python_info(cfg, &py) < 0) {
			cli_error("check", "--python '%s': %s", python_named, err);
			return -1;
		}
		return 0;
	}
	return 0;
}

static int option(lb_check_config *cfg, int opt, const char *arg)
{
	int r = 0;
	const char *what = NULL;
	switch (opt) {
	case OPT_POLICY: {
		lb_check_policy p;
		if (lb_check_policy_parse(arg, &p) < 0) {
			cli_error("check", "--policy '%s' is not one of strict, standard, permissive", arg);
			return -1;
		}
		lb_check_config_set_policy(cfg, p);
		return 0;
	}
	case OPT_PYTHON:
		python_named = arg;
		r = lb_check_config_set_python(cfg, arg);
		what = "--python";
		break;
	case OPT_ENTRY:
		r = lb_check_config_set_entry(cfg, arg);
		what = "--entry (a relative path inside the experiment)";
		break;
	case OPT_ALLOW_MODULE:
		r = lb_check_config_allow_module(cfg, arg);
		what = "--allow-module (a dotted module name)";
		break;
	case OPT_ALLOW_CALL:
		r = lb_check_config_allow_call(cfg, arg);
		what = "--allow-call (a dotted name)";
		break;
	case OPT_DENY_MODULE:
		r = lb_check_config_deny_module(cfg, arg);
		what = "--deny-module (a dotted module name)";
		break;
	case OPT_DENY_CALL:
		r = lb_check_config_deny_call(cfg, arg);
		what = "--deny-call (a dotted name)";
		break;
	case OPT_OUTPUT_PATH:
		r = lb_check_config_add_output_path(cfg, arg);
		what = "--output-path (an absolute path)";
		break;
	case OPT_IGNORE:
		r = lb_check_config_ignore(cfg, arg);
		what = "--ignore (a rule ID such as LB201 or a category such as harness)";
		break;
	case OPT_TRUST:
		return lb_check_config_set_trust_project(cfg, true);
	case OPT_CONFIG:
		return load_config_file(cfg, arg);
	default:
		return 1;
	}
	if (r < 0) {
		cli_error("check", "%s: '%s' is not valid", what, arg);
		return -1;
	}
	return 0;
}

/* `main.py:7: need[network]: --network host (datasets.load_dataset)`, one line a need. */
static void print_needs(FILE *o, const lb_check_report *rep)
{
	json_object *needs = lb_check_needs_json(rep, NULL);
	for (size_t i = 0; needs && i < json_object_array_length(needs); i++) {
		json_object *n = json_object_array_get_idx(needs, i), *ev, *v;
		json_object_object_get_ex(n, "evidence", &ev);
		fprintf(o, "%s:%d: need[%s]: %s", json_object_get_string(json_object_object_get(ev, "file")),
		       json_object_get_int(json_object_object_get(ev, "line")),
		       json_object_get_string(json_object_object_get(n, "kind")),
		       json_object_get_string(json_object_object_get(n, "flag")));
		if (json_object_object_get_ex(n, "via", &v) && v)
			fprintf(o, " (%s%s)", json_object_get_string(v),
			       json_object_get_boolean(json_object_object_get(n, "optional")) ? ", optional"
											 : "");
		if (json_object_object_get_ex(n, "finding", &v) && v)
			fprintf(o, "; %s rejects the line", json_object_get_string(v));
		fputc('\n', o);
	}
	json_object_put(needs);
}

/* Each PATH into rep: directories walked, files checked together. -1 when an error was
 * printed. */
static int check_all(lb_check_config *cfg, int first, int argc, char **argv, char **files,
		     lb_check_report *rep)
{
	size_t nfiles = 0;
	char err[1024] = "";
	for (int i = first; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			cli_error("check", "'%s': %s", argv[i], strerror(errno));
			return -1;
		}
		if (S_ISDIR(st.st_mode)) {
			size_t before = rep->files;
			/* The whole labbox.yaml, as `run` reads it: a directory whose config run
			 * refuses (an unknown key, a wrong type) is not "accepted" here, so a
			 * check before a run answers what the run will. */
			lb_exp_config ec = {0};
			if (lb_config_load(argv[i], &ec, err, sizeof err) < 0) {
				cli_error("check", "'%s': %s", argv[i], err);
				return -1;
			}
			if (lb_check_dir(cfg, argv[i], rep, err, sizeof err) < 0) {
				lb_config_free(&ec);
				cli_error("check", "%s", err);
				return -1;
			}
			/* A wrong directory must not pass as clean code. */
			if (rep->files == before) {
				lb_config_free(&ec);
				cli_error("check", "'%s': no Python files in it (*.py, outside virtual "
					  "environments, caches and hidden directories)", argv[i]);
				return -1;
			}
			/* And what run checks after reading labbox.yaml (the mode, the entry point
			 * and its language), in run's words: "accepted" means run starts it. */
			char real[PATH_MAX];
			int ok = realpath(argv[i], real) ? 0 : -errno;
			/* A tree of code that names no entry point and has none of the default
			 * names is checked as code (as Bandit checks one): what run would say is
			 * said beside the answer, which stays the code's. An entry point named and
			 * missing, or a mode this labbox lacks, is run's refusal. */
			struct stat dst;
			char dflt[PATH_MAX + 64];
			bool declared = lb_check_config_entry(cfg) || ec.entry;
			if (ok == 0)
				snprintf(dflt, sizeof dflt, "%s/%s", real, lb_lang_default_entry(real));
			if (ok == 0 && !declared && lstat(dflt, &dst) < 0 && errno == ENOENT &&
			    lb_backend_known(ec.mode ? ec.mode : "local"))
				cli_error("check", "warning: '%s' has no entry point (%s): labbox run "
					  "would refuse it; this answer is its code's only (name one with "
					  "--entry FILE or entry: in labbox.yaml)", argv[i],
					  lb_lang_default_entry(real));
			else if (ok == 0)
				ok = lb_run_dir_runnable(real, argv[i], &ec, NULL,
							 lb_check_config_entry(cfg), NULL, NULL, err,
							 sizeof err);
			else
				snprintf(err, sizeof err, "'%s': %s", argv[i], strerror(-ok));
			lb_config_free(&ec);
			if (ok < 0) {
				cli_error("check", "%s", err);
				return -1;
			}
		} else {
			files[nfiles++] = argv[i];
		}
	}
	if (nfiles && lb_check_files(cfg, files, nfiles, rep, err, sizeof err) < 0) {
		cli_error("check", "%s", err);
		return -1;
	}
	return 0;
}

/* What the check prints: stdout's bytes into out, stderr's into err. */
static int render(lb_check_report *rep, bool json, lb_buf *out, lb_buf *err)
{
	char *text = lb_check_text(rep);
	int r = 0;
	if (json) {
		json_object *doc = lb_check_report_json(rep);
		r = lb_buf_printf(out, "%s\n", lb_record_json_text_as(doc, cli_json_indented()));
		json_object_put(doc);
		/* the summary line, for a person watching a pipeline */
		const char *last = text ? strrchr(text, '\n') : NULL;
		if (r == 0 && last) {
			const char *start = last;
			while (start > text && start[-1] != '\n')
				start--;
			r = lb_buf_append(err, start, (size_t)(last - start) + 1);
		}
	} else if (text) {
		/* The needs between the findings and the summary line, which stays last. */
		const char *last = strrchr(text, '\n'), *cut = last;
		while (cut && cut > text && cut[-1] != '\n')
			cut--;
		size_t head = last ? (size_t)(cut - text) : 0;
		char *needs = NULL;
		size_t nlen = 0;
		FILE *o = open_memstream(&needs, &nlen);
		if (o) {
			print_needs(o, rep);
			fclose(o);
		}
		r = !o ? -ENOMEM : lb_buf_append(out, text, head);
		if (r == 0)
			r = lb_buf_append(out, needs ? needs : "", nlen);
		if (r == 0)
			r = lb_buf_puts(out, text + head);
		free(needs);
		/* For a person: file names and quoted code with characters that reorder or hide
		 * text show them as \uXXXX (the JSON keeps them as they are). */
		lb_buf shown = {0};
		if (r == 0 && (r = lb_text_show_format_chars(out->data ? out->data : "", out->len,
							     &shown)) == 0) {
			lb_buf_free(out);
			*out = shown;
		} else {
			lb_buf_free(&shown);
		}
	}
	free(text);
	return r;
}

int cli_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"policy", required_argument, NULL, OPT_POLICY},
		{"python", required_argument, NULL, OPT_PYTHON},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"entry", required_argument, NULL, OPT_ENTRY},
		{"allow-module", required_argument, NULL, OPT_ALLOW_MODULE},
		{"allow-call", required_argument, NULL, OPT_ALLOW_CALL},
		{"deny-module", required_argument, NULL, OPT_DENY_MODULE},
		{"deny-call", required_argument, NULL, OPT_DENY_CALL},
		{"output-path", required_argument, NULL, OPT_OUTPUT_PATH},
		{"ignore", required_argument, NULL, OPT_IGNORE},
		{"trust-project", no_argument, NULL, OPT_TRUST},
		{"list-rules", no_argument, NULL, OPT_LIST_RULES},
		{"json", no_argument, NULL, OPT_CHECK_JSON},
		{"no-cache", no_argument, NULL, OPT_NO_CACHE},
		{"runtime-gate", required_argument, NULL, OPT_RUNTIME_GATE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_json_begin("check", argc, argv, "h", longopts, false);
	lb_check_config *cfg = NULL;
	lb_check_report rep = {0};
	bool json = false;
	int rc = CLI_EXIT_USAGE;
	char **files = NULL;
	bool use_cache = true;
	const char **ctx = NULL;
	char *cwd = NULL;
	lb_buf out = {0}, err = {0};
	if (lb_check_config_new(&cfg) < 0) {
		cli_error("check", "out of memory");
		return CLI_EXIT_USAGE;
	}
	{
		char *cache = lb_user_cache_dir();
		lb_check_config_set_cache_dir(cfg, cache);
		use_cache = cache != NULL;
		free(cache);
	}
	/* --trust-project must be known before --config is read, wherever it appears. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--trust-project") == 0)
			lb_check_config_set_trust_project(cfg, true);
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			cli_json_set(NULL);
			fputs(check_help, stdout);
			rc = 0;
			goto out;
		}
		if (opt == OPT_LIST_RULES) {
			cli_json_set(NULL);
			list_rules();
			rc = 0;
			goto out;
		}
		if (opt == OPT_CHECK_JSON) {
			json = true;
			continue;
		}
		if (opt == OPT_NO_CACHE) {
			lb_check_config_set_cache_dir(cfg, NULL);
			use_cache = false;
			continue;
		}
		if (opt == OPT_RUNTIME_GATE) {
			/* what a run with this gate would reject: only a gate that is on refuses
			 * what a library call reaches (the default under standard and strict) */
			lb_gate_mode m;
			if (lb_gate_mode_parse(optarg, &m) < 0) {
				cli_error("check", "--runtime-gate '%s' is not one of on, record, off",
					  optarg);
				goto out;
			}
			lb_check_config_set_runtime_gate(cfg, m == LB_GATE_ON);
			continue;
		}
		int r = option(cfg, opt, optarg);
		if (r < 0)
			goto out;
		if (r > 0) {
			cli_bad_option("check", argv, optopt);
			goto out;
		}
	}
	if (optind >= argc) {
		cli_error("check", "no PATH given (usage: labbox check [OPTIONS] PATH...)");
		goto out;
	}
	if (confine_python(cfg, optind, argc, argv) < 0)
		goto out;
	files = calloc((size_t)(argc - optind), sizeof *files);
	if (!files)
		goto out;
	/* How the check was asked shapes what it prints: the arguments, and the directory that
	 * relative ones are read from. */
	ctx = calloc((size_t)argc + 2, sizeof *ctx);
	cwd = getcwd(NULL, 0);
	if (!ctx)
		goto out_ctx;
	size_t nctx = 0;
	ctx[nctx++] = cwd ? cwd : "";
	/* --json is indented at a terminal only: the kept bytes differ */
	ctx[nctx++] = cli_json_indented() ? "terminal" : "not a terminal";
	for (int i = 1; i < argc; i++)
		ctx[nctx++] = argv[i];
	/* Mostly unchanged code: first only look, and print the kept answer when every file is
	 * as it was (docs/check.md, "The whole answer kept"). */
	if (use_cache) {
		lb_check_config_set_answer_probe(cfg, true);
		if (check_all(cfg, optind, argc, argv, files, &rep) < 0)
			goto out_ctx;
		lb_check_answer ans;
		if (lb_check_answer_load(cfg, &rep, ctx, nctx, &ans) == 0) {
			fflush(stdout);
			fflush(stderr);
			int pr = lb_check_answer_print(&ans, fileno(stdout), fileno(stderr));
			if (pr < 0)
				cli_out_failed(-pr);
			if (json)
				cli_json_set(NULL); /* the document is printed */
			rc = ans.rc;
			lb_check_answer_free(&ans);
			goto out_ctx;
		}
		lb_check_report_free(&rep);
		memset(&rep, 0, sizeof rep);
		lb_check_config_set_answer_probe(cfg, false);
	}
	if (check_all(cfg, optind, argc, argv, files, &rep) < 0)
		goto out_ctx;
	lb_check_finish(&rep);
	if (render(&rep, json, &out, &err) < 0) {
		cli_error("check", "out of memory");
	} else {
		rc = rep.rejected ? CHECK_EXIT_REJECTED : 0;
		fwrite(out.data ? out.data : "", 1, out.len, stdout);
		fflush(stdout);
		fwrite(err.data ? err.data : "", 1, err.len, stderr);
		if (json)
			cli_json_set(NULL);
		if (use_cache)
			lb_check_answer_store(cfg, &rep, ctx, nctx, rc, out.data, out.len, err.data,
					      err.len);
	}
out_ctx:
	lb_buf_free(&out);
	lb_buf_free(&err);
	free(ctx);
	free(cwd);
out:
	free(files);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	return rc;
}
