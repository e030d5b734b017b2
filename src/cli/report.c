/* labbox report: a sweep's or some runs' results as one HTML page, a Markdown table or CSV,
 * from the records alone (sweep.json, run directories, the run index); nothing is run. */
#include "cli.h"
#include "labbox/record.h"
#include "labbox/report.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char report_help[] =
	"usage: labbox report [-o FILE] [--format html|md|csv] [--runs-dir DIR] [--json]\n"
	"                     SWEEP_ID|RUN_ID...\n"
	"\n"
	"Write a report of a sweep or of runs from their records; nothing is run. HTML (the\n"
	"default) is one self-contained page, no network needed: per-condition table of means,\n"
	"95% intervals, standard deviations and counts, a plot per metric across conditions with\n"
	"error bars, metrics over steps where runs printed them, the failures with their class\n"
	"and evidence, and the reproducibility facts (interpreter, packages, git commit,\n"
	"isolation, backend). One SWEEP_ID uses its sweep.json; run ids (or prefixes), or a mix\n"
	"with sweep ids, are grouped by condition: a sweep cell's condition, else the\n"
	"experiment's directory name with its arguments, the seed's left out; runs whose\n"
	"recorded -e values, entry point, code, interpreter or packages differ are separate\n"
	"conditions, named by what differs (exp LR=0.1, exp (code 3f2a91)).\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE    write the report to FILE (default: stdout); without --format,\n"
	"                       a FILE ending in .md or .csv picks that format\n"
	"  --format html|md|csv html: the page; md: a Markdown table, mean +- half-width of the\n"
	"                       95% interval; csv: one row per condition and metric (condition,\n"
	"                       metric, n, mean, std, ci_low, ci_high, min, max, nonfinite)\n"
	"  --runs-dir DIR       the runs directory whose index and sweeps to read (default\n"
	"                       .labbox/runs)\n"
	"  --json               print a labbox.report/1 document (where the report went, its\n"
	"                       counts) on stdout; needs -o\n"
	"  -h, --help           this help\n"
	"\n"
	"Exit status: 0 written, 2 a usage error, an unknown id, an unreadable or corrupt record,\n"
	"a run or sweep this user's labbox did not record (its seal does not match: made\n"
	"elsewhere, such as a .labbox/ that came with the experiment, or changed since; the\n"
	"message names it), or an output file that cannot be written.\n";

enum { O_FORMAT = OPT_FIRST_PRIVATE, O_RUNS_DIR, O_JSON };

static json_object *load_json_file(const char *path, char *err, size_t errlen)
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	int rc = lb_read_file_at(AT_FDCWD, path, 256u << 20, &text, &len);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
		return NULL;
	}
	json_object *doc = len <= INT32_MAX ? lb_report_parse_json(text, len) : NULL;
	if (!doc) {
		/* Again, for json-c's words on what is wrong. */
		json_tokener *tok = json_tokener_new();
		json_object *again = tok ? json_tokener_parse_ex(tok, text, (int)(len & INT32_MAX)) : NULL;
		enum json_tokener_error e = tok ? json_tokener_get_error(tok) : json_tokener_success;
		snprintf(err, errlen, "%s is not JSON (%s)", path,
			 !tok				? "out of memory"
			 : e == json_tokener_continue ? "it ends in the middle of the document"
						      : json_tokener_error_desc(e));
		json_object_put(again);
		json_tokener_free(tok);
	}
	return doc;
}

/* The sweep.json an argument names: a sweep id beside the runs directory, or the path of a
 * sweep.json. NULL path when it names none. */
static int sweep_path_of(const char *runs_dir, const char *arg, char **path)
{
	*path = NULL;
	if (strchr(arg, '/') || strstr(arg, ".json")) {
		if (access(arg, F_OK) == 0)
			*path = strdup(arg);
		if (*path && strstr(*path, "sweep.json")) {
			/* A dead sweep's document is settled before it is read (lb_sweep_settle). */
			LB_AUTOFREE char *dir = strdup(*path);
			char *slash = dir ? strrchr(dir, '/') : NULL;
			if (slash)
				*slash = '\0';
			if (dir)
				lb_sweep_settle(runs_dir, !slash ? "." : dir[0] ? dir : "/");
		}
		return *path || access(arg, F_OK) != 0 ? 0 : -ENOMEM;
	}
	LB_AUTOFREE char *dir = NULL;
	if (lb_sweep_dir_for(runs_dir, arg, &dir) < 0)
		return -ENOMEM;
	lb_buf b = {0};
	if (lb_buf_printf(&b, "%s/sweep.json", dir) < 0)
		return -ENOMEM;
	if (access(b.data, F_OK) == 0) {
		/* A dead sweep's document is settled before it is read (lb_sweep_settle). */
		lb_sweep_settle(runs_dir, dir);
		*path = b.data;
	}
	else
		lb_buf_free(&b);
	return 0;
}

typedef struct report_ctx {
	const char *runs_dir;
	lb_index *ix;
	bool ix_tried;
	char ix_path[4096];
} report_ctx;

/* A report's numbers are labbox's word: a run whose record this user's labbox did not seal
 * (mac.c) is refused, naming it, rather than reported beside the user's own. */
static int run_sealed_or_say(const char *dir, const char *id)
{
	char why[PATH_MAX + 512];
	if (cli_run_sealed(dir, id, why, sizeof why)) {
		/* An older labbox's record: reported, as before, and said. */
		if (why[0])
			cli_warn("report", "%s", why);
		return 0;
	}
	/* No result.json: nothing of it is read as a number; the reader says what is missing. */
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || faccessat(dfd, "result.json", F_OK, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	cli_error("report",
		  "%s, and a report would show them as labbox's. `labbox runs show %s` shows them; "
		  "leave it out of the report",
		  why, id ? id : "ID");
	return -EPERM;
}

/* A sweep document's numbers likewise: sweep.json sealed by this user's labbox. */
static int sweep_sealed_or_say(const char *path, json_object *doc)
{
	lb_record_seal seal = lb_record_sweep_seal_of(doc);
	json_object *v = json_object_object_get(doc, "id");
	if (seal == LB_SEAL_WHOLE)
		return 0;
	if (seal == LB_SEAL_OLD_SCOPE) {
		cli_warn("report",
			 "sweep %s (%s) was sealed by an older labbox, whose seal covers its "
			 "invocation and plan only: its cells and statistics are not covered, so they "
			 "are only what the file says",
			 json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "?",
			 path);
		return 0;
	}
	cli_error("report",
		  "sweep %s (%s) was not written by this user's labbox, or was changed since (its "
		  "seal does not match): its statistics are only what the file says, and a report "
		  "would show them as labbox's",
		  json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "?", path);
	return -EPERM;
}

/* A run id (or unique prefix) to its run directory; an error naming the id otherwise. */
static int run_dir_of(report_ctx *c, const char *id, char **dir)
{
	if (!c->ix_tried) {
		c->ix_tried = true;
		LB_AUTOFREE char *path = NULL;
		if (lb_index_path_for(c->runs_dir, &path) < 0)
			return -ENOMEM;
		snprintf(c->ix_path, sizeof c->ix_path, "%s", path);
		char err[512];
		if (access(path, F_OK) == 0 && lb_index_open(path, &c->ix, err, sizeof err) < 0) {
			cli_error("report", "%s", err);
			return -EIO;
		}
	}
	if (!c->ix) {
		cli_error("report", "no sweep or run '%s': no sweep of that id under %s's sweeps and "
			  "no run index at %s", id, c->runs_dir, c->ix_path);
		return -ENOENT;
	}
	json_object *row = NULL;
	int r = lb_index_get(c->ix, id, &row);
	if (r == -ENOENT) {
		cli_error("report", "no sweep or run '%s' (not a sweep id and not in the run index "
			  "at %s)", id, c->ix_path);
		return r;
	}
	if (r == -EEXIST) {
		cli_error("report", "'%s' matches more than one run; give more of the id", id);
		return r;
	}
	if (r < 0) {
		cli_error("report", "reading the run index %s failed", c->ix_path);
		return r;
	}
	json_object *v = NULL;
	const char *d = json_object_object_get_ex(row, "run_dir", &v) ? json_object_get_string(v) : NULL;
	const char *rid = json_object_object_get_ex(row, "id", &v) ? json_object_get_string(v) : id;
	*dir = d ? strdup(d) : NULL;
	if (!*dir) {
		json_object_put(row);
		cli_error("report", "the run index has no run directory for '%s'", id);
		return -ENOENT;
	}
	r = run_sealed_or_say(*dir, rid);
	json_object_put(row);
	if (r < 0) {
		free(*dir);
		*dir = NULL;
	}
	return r;
}

/* A sweep document read and checked; an error naming the file otherwise. */
static json_object *sweep_doc(const char *path, lb_report *out)
{
	char err[512] = "";
	json_object *doc = load_json_file(path, err, sizeof err);
	if (doc && lb_report_from_sweep(doc, out, err, sizeof err) < 0) {
		json_object_put(doc);
		doc = NULL;
	}
	if (!doc) {
		cli_error("report", "%s%s%s", strstr(err, path) ? "" : path, strstr(err, path) ? "" : ": ",
			  err);
		return NULL;
	}
	/* Checked after the document is read, so a damaged one is named for what is wrong. */
	if (sweep_sealed_or_say(path, doc) < 0) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

/* Every argument resolved and read into r. 0 or an exit code. */
static int gather(report_ctx *c, char **ids, int n, lb_report *r)
{
	char **sweeps = calloc((size_t)n, sizeof *sweeps);
	int nsweeps = 0, rc = 0;
	if (!sweeps)
		return 1;
	for (int i = 0; i < n && rc == 0; i++) {
		if (!ids[i][0]) {
			cli_error("report", "an empty id");
			rc = CLI_EXIT_USAGE;
		} else if (sweep_path_of(c->runs_dir, ids[i], &sweeps[i]) < 0) {
			rc = 1;
		} else if (sweeps[i]) {
			nsweeps++;
		}
	}
	if (rc == 0 && n == 1 && nsweeps == 1) {
		json_object *doc = sweep_doc(sweeps[0], r);
		if (!doc)
			rc = CLI_EXIT_USAGE;
		else if (lb_report_read_sweep_runs(r, doc) < 0)
			rc = 1;
		json_object_put(doc);
	} else if (rc == 0) {
		lb_report_builder *b = NULL;
		if (lb_report_builder_new(&b) < 0)
			rc = 1;
		for (int i = 0; i < n && rc == 0; i++) {
			char err[512] = "";
			if (sweeps[i]) {
				lb_report tmp = {0};
				json_object *doc = sweep_doc(sweeps[i], &tmp);
				lb_report_free(&tmp);
				if (!doc) {
					rc = CLI_EXIT_USAGE;
					break;
				}
				json_object *cells = json_object_object_get(doc, "cells");
				size_t nc = json_object_is_type(cells, json_type_array)
						    ? json_object_array_length(cells) : 0;
				for (size_t k = 0; k < nc && rc == 0; k++) {
					json_object *cell = json_object_array_get_idx(cells, k);
					json_object *dir = json_object_object_get(cell, "run_dir");
					json_object *cid = json_object_object_get(cell, "run_id");
					/* A cell whose run is gone has nothing to add; sweep.json alone
					 * is what `labbox report SWEEP_ID` reads for it. Its run's own
					 * numbers are read here, so its record must be sealed too. */
					if (!json_object_is_type(dir, json_type_string))
						continue;
					if (run_sealed_or_say(json_object_get_string(dir),
							      json_object_is_type(cid, json_type_string)
								      ? json_object_get_string(cid)
								      : NULL) < 0)
						rc = CLI_EXIT_USAGE;
					else if (lb_report_builder_add_run(b, json_object_get_string(dir),
									   err, sizeof err) == -ENOMEM)
						rc = 1;
				}
				json_object_put(doc);
				continue;
			}
			LB_AUTOFREE char *dir = NULL;
			int r2 = run_dir_of(c, ids[i], &dir);
			if (r2 < 0) {
				rc = r2 == -ENOMEM ? 1 : CLI_EXIT_USAGE;
				break;
			}
			if (lb_report_builder_add_run(b, dir, err, sizeof err) < 0) {
				cli_error("report", "run '%s': %s", ids[i], err);
				rc = CLI_EXIT_USAGE;
			}
		}
		if (rc == 0 && lb_report_builder_finish(b, r) < 0)
			rc = 1;
		lb_report_builder_free(b);
	}
	for (int i = 0; i < n; i++)
		free(sweeps[i]);
	free(sweeps);
	if (rc == 1)
		cli_error("report", "out of memory");
	return rc;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && strcmp(s + a - b, tail) == 0;
}

static const char *const format_names[] = {"html", "md", "csv"};

int cli_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, O_FORMAT},
		{"runs-dir", required_argument, NULL, O_RUNS_DIR},
		{"json", no_argument, NULL, O_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cli_json_begin("report", argc, argv, "ho:", longopts, false);
	opterr = 0;
	const char *output = NULL;
	int format = -1;
	bool json = false;
	report_ctx c = {.runs_dir = ".labbox/runs"};
	int opt;
	while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(report_help, stdout);
			return 0;
		case 'o':
			if (!optarg[0]) {
				cli_error("report", "-o needs a file name");
				return CLI_EXIT_USAGE;
			}
			output = optarg;
			break;
		case O_FORMAT:
			format = strcmp(optarg, "html") == 0 ? LB_REPORT_HTML
				 : strcmp(optarg, "md") == 0 ? LB_REPORT_MD
				 : strcmp(optarg, "csv") == 0 ? LB_REPORT_CSV
							      : -2;
			if (format == -2) {
				cli_error("report", "--format '%s' is not html, md or csv", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case O_RUNS_DIR:
			c.runs_dir = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		default:
			cli_bad_option("report", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error("report", "no sweep or run id given (labbox report SWEEP_ID|RUN_ID...)");
		return CLI_EXIT_USAGE;
	}
	if (json && !output) {
		cli_error("report", "--json needs -o FILE: stdout carries the JSON document");
		return CLI_EXIT_USAGE;
	}
	if (format < 0)
		format = output && ends_with(output, ".md")	 ? LB_REPORT_MD
			 : output && ends_with(output, ".csv") ? LB_REPORT_CSV
							       : LB_REPORT_HTML;
	if (output && cli_output_not_records("report", c.runs_dir, "-o", output))
		return CLI_EXIT_USAGE;
	lb_report r = {0};
	int rc = gather(&c, argv + optind, argc - optind, &r);
	if (c.ix)
		lb_index_close(c.ix);
	if (rc) {
		lb_report_free(&r);
		return rc;
	}
	lb_buf out = {0};
	if (lb_report_render(&r, (lb_report_format)format, &out) < 0) {
		cli_error("report", "out of memory writing the report");
		lb_report_free(&r);
		lb_buf_free(&out);
		return 1;
	}
	if (output) {
		int w = lb_write_output_file(output, out.data, out.len);
		if (w < 0) {
			cli_error("report", "cannot write %s: %s", output, strerror(-w));
			rc = CLI_EXIT_USAGE;
		}
	} else if (lb_write_all(STDOUT_FILENO, out.data, out.len) < 0) {
		/* The answer lost to stdout is exit 74 as for every command, said once at the end. */
		cli_out_failed(errno);
	}
	if (rc == 0 && json) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_string("labbox.report/1"));
		json_object_object_add(doc, "output", json_object_new_string(output));
		json_object_object_add(doc, "format", json_object_new_string(format_names[format]));
		json_object_object_add(doc, "title", json_object_new_string(r.title));
		json_object_object_add(doc, "conditions", json_object_new_int64((int64_t)r.nconditions));
		json_object_object_add(doc, "metrics", json_object_new_int64((int64_t)r.nmetrics));
		json_object_object_add(doc, "series", json_object_new_int64((int64_t)r.nseries));
		json_object_object_add(doc, "failures", json_object_new_int64((int64_t)r.nfailures));
		json_object_object_add(doc, "runs_read", json_object_new_int64((int64_t)r.runs_read));
		json_object_object_add(doc, "bytes", json_object_new_int64((int64_t)out.len));
		cli_json_print(doc);
		json_object_put(doc);
	} else if (rc == 0 && output) {
		fprintf(stderr, "labbox report: wrote %s (conditions %zu, metrics %zu, failures %zu)\n",
			output, r.nconditions, r.nmetrics, r.nfailures);
	}
	lb_report_free(&r);
	lb_buf_free(&out);
	return rc;
}
