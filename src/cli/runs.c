/* labbox runs list|show|compare|export: the run history. */
#include "cli.h"
#include "labbox/check.h"
#include "labbox/collect.h"
#include "labbox/diagnose.h"
#include "labbox/gate.h"
#include "labbox/record.h"
#include "labbox/run.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char runs_help[] =
	"usage: labbox runs list [--status S] [--metric NAME[OP VALUE]] [--since DATE]\n"
	"                        [--until DATE] [--limit N] [--sweep ID] [--json] [--runs-dir DIR]\n"
	"       labbox runs show ID [--json] [--runs-dir DIR]\n"
	"       labbox runs compare A B [--json] [--runs-dir DIR]\n"
	"       labbox runs export (--mlflow DIR | --sacred DIR)... [filters as list] [--json]\n"
	"\n"
	"The run history kept in the run index (.labbox/labbox.db beside the runs directory).\n"
	"A run whose labbox died before it finished is listed as interrupted. `list` marks NO under\n"
	"SEALED (record_sealed false with --json) each run whose records this user's labbox did not\n"
	"write as they stand: an index or run directory made elsewhere (a .labbox/ that came with\n"
	"the experiment), changed since, or older than seals; their status and metrics are only\n"
	"what those files say. A run sealed whole whose row in the index differs from its\n"
	"result.json (the index is not sealed) is listed, and filtered, as result.json says:\n"
	"index_row_differs true with --json (rows_from_records counts them in the whole index),\n"
	"a closing line without. `show` and `compare` mark such a run NOT SEALED (record_sealed, and\n"
	"record_sealed.a/.b for compare, with --json); `export` leaves such runs out, naming each\n"
	"on stderr (--json: unsealed, a count, and left_out), since MLflow and Sacred would show\n"
	"their numbers as labbox's.\n"
	"\n"
	"Options:\n"
	"  --runs-dir DIR   the runs directory whose index to read (default .labbox/runs)\n"
	"  --status S       only runs with this status (completed, failed, timeout, ...)\n"
	"  --metric SPEC    only runs reporting metric NAME (or COND/NAME), optionally compared:\n"
	"                   'accuracy>0.9', 'lambda_1/test_mse<=0.3' (ops < <= > >= = !=)\n"
	"  --since DATE     runs started at or after DATE (UTC, from 2026 or 2026-11-29 down to\n"
	"                   a started_at such as 2026-11-29T13:45:07.123Z)\n"
	"  --until DATE     runs started before DATE\n"
	"  --limit N        at most N runs, newest first\n"
	"  --sweep ID       only the cells of sweep ID (labbox sweep; a unique prefix will do)\n"
	"  --mlflow DIR     export: write the runs in MLflow's file-store layout under DIR\n"
	"                   (browse with `mlflow ui --backend-store-uri DIR`); one MLflow\n"
	"                   experiment per experiment directory name; updated in place when\n"
	"                   exported again\n"
	"  --sacred DIR     export: write the runs in Sacred's FileStorageObserver layout\n"
	"                   under DIR (DIR/1, DIR/2, ..., DIR/_sources); updated in place when\n"
	"                   exported again\n"
	"  --json           one JSON document on stdout\n"
	"  -h, --help       this help\n"
	"\n"
	"IDs may be abbreviated to a unique prefix. `compare` prints the metrics side by side with\n"
	"their deltas (B - A), then the configuration, interpreter, package and git differences.\n"
	"`export` takes the runs `list` would show (all of them without filters) but those not\n"
	"sealed; docs/export.md describes both layouts.\n"
	"Exit status: 0, 2 for usage errors or unknown runs, 1 when an export could not be written.\n";

enum { O_RUNS_DIR = 2000, O_STATUS, O_METRIC, O_SINCE, O_UNTIL, O_LIMIT, O_JSON, O_MLFLOW, O_SACRED,
       O_SWEEP, O_ACCEPT_GRANTS };

typedef struct runs_opts {
	const char *runs_dir;
	lb_index_filter filter;
	bool json;
	const char *mlflow_dir; /* export targets */
	const char *sacred_dir;
	const char *cmd; /* what errors are said by; NULL: runs */
} runs_opts;

static int open_index(const runs_opts *o, lb_index **ix)
{
	LB_AUTOFREE char *path = NULL;
	const char *runs_dir = o->runs_dir ? o->runs_dir : ".labbox/runs";
	const char *cmd = o->cmd ? o->cmd : "runs";
	if (lb_index_path_for(runs_dir, &path) < 0)
		return -ENOMEM;
	if (access(path, F_OK) != 0) {
		cli_error(cmd, "no run index at %s (no run has been recorded under %s)", path,
			  runs_dir);
		return -ENOENT;
	}
	char err[512];
	if (lb_index_open(path, ix, err, sizeof err) < 0) {
		cli_error(cmd, "%s", err);
		return -EIO;
	}
	return 0;
}

static json_object *load_json(const char *dir, const char *name)
{
	LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	LB_AUTOFREE char *text = NULL;
	if (lb_read_file_at(dfd, name, 256u << 20, &text, NULL) < 0)
		return NULL;
	return json_tokener_parse(text);
}

/* A run by id or prefix: its index row, result.json and manifest.json. */
static int find_run_as(const char *cmd, lb_index *ix, const char *id, json_object **row,
		       json_object **result, json_object **manifest)
{
	int r = lb_index_get(ix, id, row);
	if (r == -ENOENT) {
		cli_error(cmd, "no run '%s' in the run index", id);
		return r;
	}
	if (r == -EEXIST) {
		cli_error(cmd, "'%s' matches more than one run; give more of the id", id);
		return r;
	}
	if (r < 0) {
		cli_error(cmd, "reading the run index failed");
		return r;
	}
	json_object *v;
	const char *dir = json_object_object_get_ex(*row, "run_dir", &v) ? json_object_get_string(v) : "";
	*result = load_json(dir, "result.json");
	*manifest = load_json(dir, "manifest.json");
	/* The index knows a run was interrupted even when its result.json could not say so. */
	json_object *st;
	if (*result && json_object_object_get_ex(*row, "status", &st) &&
	    strcmp(json_object_get_string(st), "interrupted") == 0)
		json_object_object_add(*result, "status", json_object_new_string("interrupted"));
	return 0;
}

static int find_run(lb_index *ix, const char *id, json_object **row, json_object **result,
		    json_object **manifest)
{
	return find_run_as("runs", ix, id, row, result, manifest);
}

static const char *get_str(json_object *o, const char *key, const char *dflt)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : dflt;
}

/* The list, and what its filters see, as the sealed records say: the index is not sealed,
 * and a row changed (or not brought up to date when its run ended) would otherwise be
 * filtered by what it says, not by what the run recorded. Each row of a run sealed whole
 * whose row differs from its result.json is rebuilt from that record in a private copy of
 * the index (lb_index_overlay), which lb_index_list filters; the file is not written.
 * *fixed: an object whose keys are the ids of the rows rebuilt; *seen: each row's id to
 * what cli_row_seal says of it (the seal as shown, ROW_DIFFERS added), each record read
 * once. */
#define ROW_DIFFERS 16
static int list_from_records(lb_index *ix, const lb_index_filter *f, json_object **rows,
			     json_object **fixed, json_object **seen, char *err, size_t errlen)
{
	json_object *all = NULL;
	lb_index_filter every = {0};
	*fixed = json_object_new_object();
	*seen = json_object_new_object();
	int r = lb_index_list(ix, &every, &all, err, errlen);
	if (r < 0 || !*fixed || !*seen)
		return r < 0 ? r : -ENOMEM;
	size_t n = json_object_array_length(all), k = 0;
	json_object **differ = calloc(n + 1, sizeof *differ), **sealed = calloc(n + 1, sizeof *sealed);
	for (size_t i = 0; differ && sealed && i < n; i++) {
		json_object *row = json_object_array_get_idx(all, i), *result = NULL;
		const char *id = get_str(row, "id", "");
		bool agrees = true;
		lb_record_seal seal = lb_record_run_seal_read(get_str(row, "run_dir", ""), id, &result);
		int cr = seal == LB_SEAL_WHOLE ? lb_index_row_agrees(row, result, &agrees) : 0;
		if (cr == 0 && !agrees) {
			differ[k] = row;
			sealed[k++] = result;
			json_object_object_add(*fixed, id, NULL);
		} else {
			json_object_put(result);
		}
		/* As cli_row_seal: not compared is not shown as sealed, nor called changed. */
		int shown = cr < 0 || !agrees ? LB_SEAL_NONE : (int)seal;
		json_object_object_add(*seen, id,
				       json_object_new_int(shown | (cr == 0 && !agrees ? ROW_DIFFERS : 0)));
	}
	bool overlaid = k > 0 && lb_index_overlay(ix, differ, sealed, k) == 0;
	if (k > 0 && !overlaid) { /* not the schema's tables: the index's rows, marked as before */
		json_object_put(*fixed);
		*fixed = json_object_new_object();
	}
	/* A rebuilt row is its record: sealed whole, said to differ. */
	for (size_t i = 0; overlaid && i < k; i++)
		json_object_object_add(*seen, get_str(differ[i], "id", ""),
				       json_object_new_int(LB_SEAL_WHOLE | ROW_DIFFERS));
	r = lb_index_list(ix, f, rows, err, errlen);
	if (overlaid)
		lb_index_overlay_end(ix);
	for (size_t i = 0; sealed && i < k; i++)
		json_object_put(sealed[i]);
	free(differ);
	free(sealed);
	json_object_put(all);
	return r;
}

/* Counted over the whole index: a row its filters would have let through (or kept out) by
 * what the index said is not shown, but it was decided by its record. */
static void say_from_records(const runs_opts *o, size_t nfixed, size_t shown)
{
	if (!nfixed)
		return;
	const lb_index_filter *f = &o->filter;
	cli_printf("%zu run%s row in the run index differs from %s sealed result.json (the index "
		   "is not sealed: changed, or not brought up to date when the run ended): "
		   "listed%s as %s record says, %zu of them here\n",
		   nfixed, nfixed == 1 ? "'s" : "s'", nfixed == 1 ? "its" : "their",
		   f->status || f->metric || f->since || f->until || f->sweep ? " and filtered" : "",
		   nfixed == 1 ? "its" : "their", shown);
}

static int runs_list(const runs_opts *o)
{
	lb_index *ix;
	if (open_index(o, &ix) < 0)
		return CLI_EXIT_USAGE;
	json_object *rows = NULL, *fixed = NULL, *seen = NULL;
	char err[512];
	int r = list_from_records(ix, &o->filter, &rows, &fixed, &seen, err, sizeof err);
	lb_index_close(ix);
	if (r < 0) {
		cli_error("runs", "%s", err);
		json_object_put(fixed);
		json_object_put(seen);
		return CLI_EXIT_USAGE;
	}
	/* A row is shown as labbox's own only when its run directory holds the sealed record
	 * of that run (mac.c): an index that came with the experiment lists whatever it likes.
	 * Marked, not hidden: runs older than seals, or recorded before the key was lost, stay
	 * listed. A row rebuilt from its sealed record is sealed, and said to differ. */
	size_t nrows = json_object_array_length(rows), unsealed = 0, index_differs = 0;
	size_t from_records = 0, running = 0, unfinished = 0, unreadable = 0;
	for (size_t i = 0; i < nrows; i++) {
		json_object *row = json_object_array_get_idx(rows, i);
		bool differs = false;
		lb_record_seal seal;
		json_object *s;
		/* A row that came since the records were read (a run ending now) is read here. */
		if (json_object_object_get_ex(seen, get_str(row, "id", ""), &s)) {
			seal = (lb_record_seal)(json_object_get_int(s) & ~ROW_DIFFERS);
			differs = json_object_get_int(s) & ROW_DIFFERS;
		} else {
			seal = cli_row_seal(row, &differs);
		}
		from_records += json_object_object_get_ex(fixed, get_str(row, "id", ""), NULL);
		bool sealed = seal >= LB_SEAL_OLD_SCOPE;
		unsealed += !sealed;
		index_differs += differs && !sealed;
		/* A run still running, one whose labbox died before sealing it, and a damaged
		 * result.json are no record made elsewhere: each is said as what it is. */
		const char *reason = sealed			   ? NULL
				     : differs			   ? "index_differs"
				     : seal == LB_SEAL_RESULT_CHANGED ? "changed"
				     : cli_unsealed_reason(get_str(row, "run_dir", ""),
							   get_str(row, "status", NULL), NULL, 0);
		if (reason && strcmp(reason, "running") == 0)
			running++;
		else if (reason && strcmp(reason, "unfinished") == 0)
			unfinished++;
		else if (reason && strcmp(reason, "unreadable") == 0)
			unreadable++;
		json_object_object_add(row, "record_sealed", json_object_new_boolean(sealed));
		json_object_object_add(row, "unsealed_reason",
				       reason ? json_object_new_string(reason) : NULL);
		json_object_object_add(row, "index_row_differs", json_object_new_boolean(differs));
		const char *scope = cli_seal_scope(seal);
		json_object_object_add(row, "seal_scope", scope ? json_object_new_string(scope) : NULL);
	}
	if (o->json) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_string("labbox.runs/1"));
		json_object_object_add(doc, "runs", rows);
		json_object_object_add(doc, "unsealed", json_object_new_int64((int64_t)unsealed));
		json_object_object_add(doc, "unsealed_running", json_object_new_int64((int64_t)running));
		json_object_object_add(doc, "unsealed_unfinished",
				       json_object_new_int64((int64_t)unfinished));
		json_object_object_add(doc, "unsealed_unreadable",
				       json_object_new_int64((int64_t)unreadable));
		json_object_object_add(doc, "rows_from_records",
				       json_object_new_int64((int64_t)json_object_object_length(fixed)));
		json_object_put(fixed);
		json_object_put(seen);
		cli_json_print(doc);
		json_object_put(doc);
		return 0;
	}
	cli_printf("%-24s %-16s %-20s %8s  %-6s  %s\n", "ID", "STATUS", "STARTED (UTC)", "WALL_S",
		   "SEALED", "METRICS");
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *row = json_object_array_get_idx(rows, i), *m, *w;
		char started[21];
		snprintf(started, sizeof started, "%.19s", get_str(row, "started_at", "-"));
		char wall[32] = "-";
		if (json_object_object_get_ex(row, "wall_s", &w) && w)
			snprintf(wall, sizeof wall, "%.2f", json_object_get_double(w));
		bool sealed = json_object_get_boolean(json_object_object_get(row, "record_sealed"));
		/* "old": an older labbox's seal, of manifest.json only (its metrics not covered). */
		bool whole = strcmp(get_str(row, "seal_scope", ""), "manifest.json+result.json") == 0;
		cli_printf("%-24s %-16s %-20s %8s  %-6s  ", get_str(row, "id", "?"),
		       get_str(row, "status", "?"), started, wall,
		       !sealed ? "NO" : whole ? "yes" : "old");
		int shown = 0, total = 0;
		if (json_object_object_get_ex(row, "metrics", &m)) {
			json_object_object_foreach(m, k, v)
			{
				if (shown < 3) {
					cli_printf("%s%s=%s", shown ? " " : "", k,
					       v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)
						 : "null");
					shown++;
				}
				total++;
			}
		}
		if (total > shown)
			cli_printf(" (+%d)", total - shown);
		putchar('\n');
	}
	if (running)
		cli_printf("%zu run%s still running, marked NO under SEALED until %s: labbox "
			   "seals a record when its run ends\n",
			   running, running == 1 ? " is" : "s are", running == 1 ? "it ends" : "they end");
	if (unfinished)
		cli_printf("%zu run%s never finished %s record, marked NO under SEALED: %s "
			   "result.json still says \"running\" and %s labbox ended before sealing it "
			   "(killed, or the machine went down); its status is what the index made of "
			   "it\n",
			   unfinished, unfinished == 1 ? "" : "s", unfinished == 1 ? "its" : "their",
			   unfinished == 1 ? "its" : "their", unfinished == 1 ? "its" : "their");
	if (unreadable)
		cli_printf("%zu run%s marked NO under SEALED: %s result.json cannot be read "
			   "(missing, or not JSON: damaged); the status and metrics shown are only "
			   "what the run index says (`labbox runs show ID` says what is wrong)\n",
			   unreadable, unreadable == 1 ? " is" : "s are",
			   unreadable == 1 ? "its" : "their");
	unsealed -= running + unfinished + unreadable;
	if (unsealed)
		cli_printf("%zu %srun%s marked NO under SEALED: not recorded by this user's labbox as "
			   "they stand (an index or run directory made elsewhere, such as a .labbox/ "
			   "that came with the experiment, changed since, or older than seals); their "
			   "status and metrics are only what those files say%s\n",
			   unsealed, running + unfinished + unreadable ? "other " : "",
			   unsealed == 1 ? " is" : "s are",
			   index_differs ? "; for some, their row in the index differs from their "
					   "sealed result.json (index_row_differs with --json): the "
					   "index is not sealed, `labbox runs show ID --json` gives "
					   "result.json's"
					 : "");
	say_from_records(o, (size_t)json_object_object_length(fixed), from_records);
	json_object_put(fixed);
	json_object_put(seen);
	json_object_put(rows);
	return 0;
}

static int runs_show(const runs_opts *o, const char *id)
{
	lb_index *ix;
	if (open_index(o, &ix) < 0)
		return CLI_EXIT_USAGE;
	json_object *row = NULL, *result = NULL, *manifest = NULL;
	int r = find_run(ix, id, &row, &result, &manifest);
	lb_index_close(ix);
	if (r < 0)
		return CLI_EXIT_USAGE;
	/* Whether this user's labbox wrote the record as it stands (mac.c): an index and runs
	 * that came with an experiment show up here like the user's own. */
	bool differs = false;
	lb_record_seal seal = cli_row_seal(row, &differs);
	bool sealed = seal >= LB_SEAL_OLD_SCOPE;
	char detail[512] = "";
	const char *reason = sealed || differs || seal != LB_SEAL_NONE
				     ? NULL
				     : cli_unsealed_reason(get_str(row, "run_dir", ""),
							   get_str(row, "status", NULL), detail,
							   sizeof detail);
	if (o->json) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_string("labbox.show/1"));
		json_object_object_add(doc, "index", json_object_get(row));
		json_object_object_add(doc, "result", result ? json_object_get(result) : NULL);
		json_object_object_add(doc, "manifest", manifest ? json_object_get(manifest) : NULL);
		json_object_object_add(doc, "record_sealed", json_object_new_boolean(sealed));
		json_object_object_add(doc, "index_row_differs", json_object_new_boolean(differs));
		json_object_object_add(doc, "unsealed_reason",
				       reason ? json_object_new_string(reason)
				       : sealed ? NULL
				       : json_object_new_string(differs ? "index_differs" : "changed"));
		/* why "result" is null, when it is */
		json_object_object_add(doc, "result_error",
				       reason && strcmp(reason, "unreadable") == 0
					       ? json_object_new_string(detail) : NULL);
		const char *scope = cli_seal_scope(seal);
		json_object_object_add(doc, "seal_scope", scope ? json_object_new_string(scope) : NULL);
		cli_json_print(doc);
		json_object_put(doc);
	} else {
		cli_printf("run %s: %s\n", get_str(row, "id", "?"), get_str(row, "status", "?"));
		cli_printf("  started  %s\n  ended    %s\n", get_str(row, "started_at", "-"),
		       get_str(row, "ended_at", "-"));
		cli_printf("  expdir   %s\n  run dir  %s\n", get_str(row, "expdir", "-"),
		       get_str(row, "run_dir", "-"));
		if (seal == LB_SEAL_RESULT_CHANGED)
			cli_printf("  record   NOT SEALED: its result.json was changed since labbox "
				   "wrote it (it does not match its seal); what it says differs from "
				   "what labbox recorded, and the index's status and metrics shown here "
				   "are not checked against either\n");
		else if (differs) {
			char why[PATH_MAX + 1024];
			cli_row_seal_why(row, why, sizeof why);
			cli_printf("  record   NOT SEALED: %s\n", why);
		}
		else if (!sealed && strcmp(reason, "foreign") != 0) {
			char why[PATH_MAX + 1024];
			cli_run_sealed_as(get_str(row, "run_dir", ""), get_str(row, "id", NULL),
					  get_str(row, "status", NULL), why, sizeof why);
			cli_printf("  record   NOT SEALED: %s\n", why);
		}
		else if (!sealed)
			cli_printf("  record   NOT SEALED: not recorded by this user's labbox as it stands "
				   "(made elsewhere, changed since, or older than seals); its status and "
				   "metrics are only what its files say, and rerun asks before it repeats "
				   "its grants\n");
		else if (seal == LB_SEAL_OLD_SCOPE)
			cli_printf("  record   sealed by an older labbox: its seal covers manifest.json "
				   "only, not result.json (status, metrics)\n");
		json_object *interp, *git, *m;
		/* Named by its language: an Rscript is no python. Records from before the manifest
		 * named it ran Python. */
		if (manifest && json_object_object_get_ex(manifest, "interpreter", &interp)) {
			const char *lang = get_str(interp, "language", "python");
			cli_printf("  %-8s %s (%s)\n",
				   strcmp(lang, "python") == 0 ? "python" : get_str(interp, "implementation", lang),
				   get_str(interp, "version", "?"), get_str(interp, "path", "?"));
		}
		if (manifest && json_object_object_get_ex(manifest, "git", &git) && git)
			cli_printf("  git      %s%s\n", get_str(git, "commit", "?"),
			       json_object_get_boolean(json_object_object_get(git, "dirty")) ? " (dirty)" : "");
		if (json_object_object_get_ex(row, "metrics", &m)) {
			json_object_object_foreach(m, k, v)
			{
				cli_printf("  %-40s %s\n", k,
				       v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "null");
			}
		}
		json_object *fail;
		if (result && json_object_object_get_ex(result, "failure", &fail) && fail)
			cli_printf("  failure  %s: %s\n", get_str(fail, "class", "?"),
			       get_str(fail, "summary", ""));
	}
	json_object_put(row);
	if (result)
		json_object_put(result);
	if (manifest)
		json_object_put(manifest);
	return 0;
}

/* "name==version" lines of environment.txt as an object. */
static json_object *packages_of(const char *run_dir)
{
	json_object *pk = json_object_new_object();
	LB_AUTOCLOSE int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	LB_AUTOFREE char *text = NULL;
	if (dfd < 0 || lb_read_file_at(dfd, "environment.txt", 16u << 20, &text, NULL) < 0)
		return pk;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strstr(line, "==");
		if (line[0] == '#' || !eq)
			continue;
		*eq = '\0';
		json_object_object_add(pk, line, json_object_new_string(eq + 2));
	}
	return pk;
}

static void diff_objects(const char *prefix, json_object *a, json_object *b, json_object *out)
{
	/* Keys of both, recursing into objects, reporting leaves that differ. */
	json_object *keys = json_object_new_object();
	if (a && json_object_is_type(a, json_type_object)) {
		json_object_object_foreach(a, k, v)
		{
			(void)v;
			json_object_object_add(keys, k, NULL);
		}
	}
	if (b && json_object_is_type(b, json_type_object)) {
		json_object_object_foreach(b, k, v)
		{
			(void)v;
			json_object_object_add(keys, k, NULL);
		}
	}
	json_object_object_foreach(keys, k, unused)
	{
		(void)unused;
		json_object *va = NULL, *vb = NULL;
		if (a)
			json_object_object_get_ex(a, k, &va);
		if (b)
			json_object_object_get_ex(b, k, &vb);
		char path[512];
		snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k);
		if ((va && json_object_is_type(va, json_type_object)) ||
		    (vb && json_object_is_type(vb, json_type_object))) {
			diff_objects(path, va, vb, out);
			continue;
		}
		if (json_object_equal(va, vb))
			continue;
		json_object *d = json_object_new_object();
		json_object_object_add(d, "key", json_object_new_string(path));
		json_object_object_add(d, "a", va ? json_object_get(va) : NULL);
		json_object_object_add(d, "b", vb ? json_object_get(vb) : NULL);
		json_object_array_add(out, d);
	}
	json_object_put(keys);
}

/* The parts of a manifest's sweep block that say what the cell computed with. */
static json_object *sweep_identity(json_object *sw)
{
	json_object *cp = NULL, *slot;
	if (!sw || !json_object_is_type(sw, json_type_object) ||
	    json_object_deep_copy(sw, &cp, NULL) < 0 || !cp)
		return NULL;
	json_object_object_del(cp, "cell");
	if (json_object_object_get_ex(cp, "slot", &slot) && json_object_is_type(slot, json_type_object)) {
		json_object_object_del(slot, "index");
		json_object_object_del(slot, "affinity");
	}
	return cp;
}


static void print_val(json_object *v)
{
	cli_printf("%-22s", v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "-");
}


/* A run's own names, which a value it reports may hold (an output path under the staged copy
 * the code saw as its working directory, RUNS/ID/exp, or the id itself): what two runs of the
 * same code differ by without any result differing. */
typedef struct own_names {
	const char *run_dir;
	const char *id;
} own_names;

/* s with the run's directory and id replaced by "{run_dir}" and "{run_id}" (malloc'd). */
static char *without_own(const char *s, const own_names *own)
{
	lb_buf b = {0};
	const char *pats[2] = {own->run_dir, own->id}, *subs[2] = {"{run_dir}", "{run_id}"};
	while (*s) {
		size_t i;
		for (i = 0; i < 2; i++) {
			size_t n = pats[i] ? strlen(pats[i]) : 0;
			if (n >= 6 && strncmp(s, pats[i], n) == 0) {
				lb_buf_append(&b, subs[i], strlen(subs[i]));
				s += n;
				break;
			}
		}
		if (i == 2)
			lb_buf_append(&b, s++, 1);
	}
	lb_buf_append(&b, "", 1);
	return b.data;
}

/* Whether two strings that differ are the same once each run's own directory and id are taken
 * out of its own. */
static bool same_but_own(json_object *a, json_object *b, const own_names *oa, const own_names *ob)
{
	if (!oa || !ob || !json_object_is_type(a, json_type_string) ||
	    !json_object_is_type(b, json_type_string))
		return false;
	char *na = without_own(json_object_get_string(a), oa);
	char *nb = without_own(json_object_get_string(b), ob);
	bool same = na && nb && strcmp(na, nb) == 0 && strcmp(na, json_object_get_string(a)) != 0;
	free(na);
	free(nb);
	return same;
}

/* The keys of a and b (either may be NULL), each once, with null values. */
static json_object *key_union(json_object *a, json_object *b)
{
	json_object *keys = json_object_new_object();
	json_object *both[] = {a, b};
	for (size_t i = 0; i < 2; i++) {
		if (!json_object_is_type(both[i], json_type_object))
			continue;
		json_object_object_foreach(both[i], k, v)
		{
			(void)v;
			json_object_object_add(keys, k, NULL);
		}
	}
	return keys;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "{k=v,k2=v2}" of a tagged value's tags, in key order (the order they were printed in
 * does not make another value). */
static void tags_key(json_object *tags, char *buf, size_t len)
{
	const char *keys[64];
	size_t n = 0;
	if (json_object_is_type(tags, json_type_object)) {
		json_object_object_foreach(tags, k, v)
		{
			(void)v;
			if (n < sizeof keys / sizeof *keys)
				keys[n++] = k;
		}
	}
	qsort(keys, n, sizeof *keys, cmp_str);
	size_t at = (size_t)snprintf(buf, len, "{");
	for (size_t i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", i ? "," : "", keys[i],
				       json_object_get_string(json_object_object_get(tags, keys[i])));
	if (at < len)
		snprintf(buf + at, len - at, "}");
}

/* The other forms a run reports its results in (docs/result-json.md), flat beside the plain
 * values: a tagged value as "cond/name{tag=v,...}", each field of a SUMMARY line as
 * "SUMMARY:cond/metric.field", each field of a PAIRED line as
 * "PAIRED:method vs baseline[regime].field". */
static void flatten_structured(json_object *metrics, json_object *out)
{
	json_object *arr;
	char key[2400], tags[1600];
	if (json_object_object_get_ex(metrics, "tagged", &arr) && json_object_is_type(arr, json_type_array))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *t = json_object_array_get_idx(arr, i), *v = NULL;
			const char *c = get_str(t, "condition", NULL);
			tags_key(json_object_object_get(t, "tags"), tags, sizeof tags);
			snprintf(key, sizeof key, "%s%s%s%s", c ? c : "", c ? "/" : "",
				 get_str(t, "metric", "?"), tags);
			json_object_object_get_ex(t, "value", &v);
			json_object_object_add(out, key, v ? json_object_get(v) : NULL);
		}
	if (json_object_object_get_ex(metrics, "summaries", &arr) &&
	    json_object_is_type(arr, json_type_array))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *s = json_object_array_get_idx(arr, i);
			const char *c = get_str(s, "condition", NULL);
			json_object_object_foreach(s, f, v)
			{
				if (strcmp(f, "condition") == 0 || strcmp(f, "metric") == 0)
					continue;
				snprintf(key, sizeof key, "SUMMARY:%s%s%s.%s", c ? c : "", c ? "/" : "",
					 get_str(s, "metric", "?"), f);
				json_object_object_add(out, key, v ? json_object_get(v) : NULL);
			}
		}
	if (json_object_object_get_ex(metrics, "paired", &arr) && json_object_is_type(arr, json_type_array))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *pr = json_object_array_get_idx(arr, i);
			const char *reg = get_str(pr, "regime", NULL);
			json_object_object_foreach(pr, f, v)
			{
				if (strcmp(f, "method") == 0 || strcmp(f, "baseline") == 0 ||
				    strcmp(f, "regime") == 0)
					continue;
				snprintf(key, sizeof key, "PAIRED:%s vs %s%s%s%s.%s",
					 get_str(pr, "method", "?"), get_str(pr, "baseline", "?"),
					 reg ? "[" : "", reg ? reg : "", reg ? "]" : "", f);
				json_object_object_add(out, key, v ? json_object_get(v) : NULL);
			}
		}
}

/* b - a of two numbers; of two integers, the integer (2^53+2 - 2^53+1 is 1, not the 2 or 0
 * of their doubles). NULL when either is not a number. */
static json_object *metric_delta(json_object *a, json_object *b)
{
	if (!a || !b)
		return NULL;
	if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int)) {
		int64_t ia = json_object_get_int64(a), ib = json_object_get_int64(b);
		__int128 xa = ia == INT64_MAX ? (__int128)json_object_get_uint64(a) : ia;
		__int128 xb = ib == INT64_MAX ? (__int128)json_object_get_uint64(b) : ib;
		__int128 d = xb - xa;
		if (d >= INT64_MIN && d <= INT64_MAX)
			return json_object_new_int64((int64_t)d);
		return json_object_new_double((double)d);
	}
	bool na = json_object_is_type(a, json_type_double) || json_object_is_type(a, json_type_int);
	bool nb = json_object_is_type(b, json_type_double) || json_object_is_type(b, json_type_int);
	return na && nb ? json_object_new_double(json_object_get_double(b) - json_object_get_double(a))
			: NULL;
}

/* A run's mounted data (manifest.data) keyed by where it was mounted, with what says which
 * data it was: its source, mode and fingerprint (a note on how it was hashed is not). */
static json_object *data_by_destination(json_object *data)
{
	static const char *const keep[] = {"source", "mode", "kind", "files", "bytes", "digest", "error"};
	json_object *o = json_object_new_object();
	for (size_t i = 0; json_object_is_type(data, json_type_array) && i < json_object_array_length(data);
	     i++) {
		json_object *v = json_object_array_get_idx(data, i), *e = json_object_new_object(), *f;
		for (size_t k = 0; k < sizeof keep / sizeof *keep; k++)
			if (json_object_object_get_ex(v, keep[k], &f))
				json_object_object_add(e, keep[k], json_object_get(f));
		json_object_object_add(o, get_str(v, "destination", "?"), e);
	}
	return o;
}

static int runs_compare(const runs_opts *o, const char *ida, const char *idb)
{
	lb_index *ix;
	if (open_index(o, &ix) < 0)
		return CLI_EXIT_USAGE;
	json_object *ra = NULL, *rb = NULL, *resa = NULL, *resb = NULL, *ma = NULL, *mb = NULL;
	int r = find_run(ix, ida, &ra, &resa, &ma);
	if (r == 0)
		r = find_run(ix, idb, &rb, &resb, &mb);
	lb_index_close(ix);
	if (r < 0) {
		json_object *objs[6] = {ra, rb, resa, resb, ma, mb};
		for (int i = 0; i < 6; i++)
			json_object_put(objs[i]);
		return CLI_EXIT_USAGE;
	}
	/* Compared, not refused: comparing is looking at what two records say, as `runs show`
	 * does, and one of the user's own runs from before seals is worth comparing. Each side
	 * not sealed by this user's labbox is marked beside its numbers. */
	char why_a[PATH_MAX + 512] = "", why_b[PATH_MAX + 512] = "";
	/* The numbers compared are the index's: a sealed record whose row says otherwise is
	 * not labbox's word for them. */
	bool differs_a = false, differs_b = false;
	bool sealed_a = cli_row_sealed(ra, &differs_a, why_a, sizeof why_a);
	bool sealed_b = cli_row_sealed(rb, &differs_b, why_b, sizeof why_b);
	json_object *metrics = json_object_new_array();
	json_object *mA = json_object_object_get(ra, "metrics");
	json_object *mB = json_object_object_get(rb, "metrics");
	/* The index holds the plain, condition and file values; the tagged, SUMMARY and PAIRED
	 * results are in result.json, compared under the keys rerun uses. */
	if (mA)
		flatten_structured(json_object_object_get(resa, "metrics"), mA);
	if (mB)
		flatten_structured(json_object_object_get(resb, "metrics"), mB);
	json_object *names = key_union(mA, mB);
	own_names own_a = {get_str(ra, "run_dir", NULL), get_str(ra, "id", NULL)};
	own_names own_b = {get_str(rb, "run_dir", NULL), get_str(rb, "id", NULL)};
	size_t in_both = 0, differ = 0; /* metrics both runs report, and how many of them differ */
	json_object_object_foreach(names, name, unused)
	{
		(void)unused;
		json_object *a = json_object_object_get(mA, name);
		json_object *b = json_object_object_get(mB, name);
		json_object *e = json_object_new_object();
		json_object_object_add(e, "metric", json_object_new_string(name));
		json_object_object_add(e, "a", a ? json_object_get(a) : NULL);
		json_object_object_add(e, "b", b ? json_object_get(b) : NULL);
		json_object_object_add(e, "delta", metric_delta(a, b));
		bool same = a && b && lb_metric_values_equal(a, b);
		bool own = !same && a && b && same_but_own(a, b, &own_a, &own_b);
		same = same || own;
		json_object_object_add(e, "equal", json_object_new_boolean(same));
		if (own)
			json_object_object_add(e, "differs_by", json_object_new_string("run directory"));
		json_object_array_add(metrics, e);
		if (a && b) {
			in_both++;
			differ += !same;
		}
	}
	json_object_put(names);

	json_object *config = json_object_new_array();
	diff_objects("", json_object_object_get(ma, "config"), json_object_object_get(mb, "config"),
		     config);
	/* A sweep cell's condition, its env: and its slot's CPUs are configuration kept beside
	 * config (cells of two conditions can share all of config): which cell and which CPUs
	 * it happened to get are not. */
	json_object *swa = sweep_identity(json_object_object_get(ma, "sweep"));
	json_object *swb = sweep_identity(json_object_object_get(mb, "sweep"));
	diff_objects("sweep", swa, swb, config);
	json_object_put(swa);
	json_object_put(swb);
	json_object *env = json_object_new_array();
	diff_objects("interpreter", json_object_object_get(ma, "interpreter"),
		     json_object_object_get(mb, "interpreter"), env);
	diff_objects("git", json_object_object_get(ma, "git"), json_object_object_get(mb, "git"), env);
	json_object *pa = packages_of(get_str(ra, "run_dir", ""));
	json_object *pb = packages_of(get_str(rb, "run_dir", ""));
	json_object *pkgs = json_object_new_array();
	diff_objects("packages", pa, pb, pkgs);
	json_object *files = json_object_new_array();
	diff_objects("files", json_object_object_get(ma, "files"), json_object_object_get(mb, "files"),
		     files);
	/* The mounted data is an input as much as the code: the same -v path whose files changed
	 * between two runs explains a difference that nothing else here would. */
	json_object *da = data_by_destination(json_object_object_get(ma, "data"));
	json_object *db = data_by_destination(json_object_object_get(mb, "data"));
	json_object *data = json_object_new_array();
	diff_objects("data", da, db, data);
	json_object_put(da);
	json_object_put(db);

	if (o->json) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_string("labbox.compare/1"));
		json_object_object_add(doc, "a", json_object_new_string(get_str(ra, "id", "")));
		json_object_object_add(doc, "b", json_object_new_string(get_str(rb, "id", "")));
		json_object *sealed = json_object_new_object();
		json_object_object_add(sealed, "a", json_object_new_boolean(sealed_a));
		json_object_object_add(sealed, "b", json_object_new_boolean(sealed_b));
		json_object_object_add(doc, "record_sealed", sealed);
		json_object_object_add(doc, "metrics", metrics);
		json_object_object_add(doc, "compared", json_object_new_int64((int64_t)in_both));
		json_object_object_add(doc, "differ", json_object_new_int64((int64_t)differ));
		json_object_object_add(doc, "config", config);
		json_object_object_add(doc, "environment", env);
		json_object_object_add(doc, "packages", pkgs);
		json_object_object_add(doc, "files", files);
		json_object_object_add(doc, "data", data);
		cli_json_print(doc);
		json_object_put(doc);
	} else {
		cli_printf("A = %s (%s)%s\nB = %s (%s)%s\n", get_str(ra, "id", ""),
			   get_str(ra, "status", ""), sealed_a ? "" : "  NOT SEALED",
			   get_str(rb, "id", ""), get_str(rb, "status", ""),
			   sealed_b ? "" : "  NOT SEALED");
		if (!sealed_a)
			cli_printf("A: %s\n", why_a);
		if (!sealed_b)
			cli_printf("B: %s\n", why_b);
		putchar('\n');
		cli_printf("%-36s %-22s %-22s %s\n", "METRIC", "A", "B", "B - A");
		for (size_t i = 0; i < json_object_array_length(metrics); i++) {
			json_object *e = json_object_array_get_idx(metrics, i);
			cli_printf("%-36s ", get_str(e, "metric", ""));
			print_val(json_object_object_get(e, "a"));
			putchar(' ');
			print_val(json_object_object_get(e, "b"));
			json_object *d = json_object_object_get(e, "delta");
			if (d && json_object_is_type(d, json_type_int))
				cli_printf(" %+lld", (long long)json_object_get_int64(d));
			else if (d)
				cli_printf(" %+.6g", json_object_get_double(d));
			putchar('\n');
		}
		if (in_both == 0)
			cli_printf("compared: nothing to compare (no metric is reported by both runs)\n");
		else
			cli_printf("compared: %zu metric%s reported by both runs, %zu differ\n", in_both,
				   in_both == 1 ? "" : "s", differ);
		if (!sealed_a || !sealed_b)
			cli_printf("not sealed: %s; %s numbers are only what %s files say, not "
				   "labbox's\n",
				   !sealed_a && !sealed_b ? "A and B" : !sealed_a ? "A" : "B",
				   !sealed_a && !sealed_b ? "their" : "its",
				   !sealed_a && !sealed_b ? "their" : "its");
		json_object *sections[5] = {config, env, pkgs, files, data};
		const char *titles[5] = {"configuration", "environment", "packages", "staged files",
					 "mounted data"};
		for (int s = 0; s < 5; s++) {
			size_t n = json_object_array_length(sections[s]);
			cli_printf("\n%s: %s\n", titles[s], n ? "differs" : "same");
			for (size_t i = 0; i < n && i < 50; i++) {
				json_object *d = json_object_array_get_idx(sections[s], i);
				cli_printf("  %-40s ", get_str(d, "key", ""));
				print_val(json_object_object_get(d, "a"));
				cli_printf(" -> ");
				print_val(json_object_object_get(d, "b"));
				putchar('\n');
			}
			if (n > 50)
				cli_printf("  ... %zu more\n", n - 50);
		}
		json_object_put(metrics);
		json_object_put(config);
		json_object_put(env);
		json_object_put(pkgs);
		json_object_put(files);
		json_object_put(data);
	}
	json_object_put(pa);
	json_object_put(pb);
	json_object *objs[6] = {ra, rb, resa, resb, ma, mb};
	for (int i = 0; i < 6; i++)
		json_object_put(objs[i]);
	return 0;
}

/* labbox runs export: the library writes the layouts; this prints what it did. */
static int runs_export(const runs_opts *o)
{
	if (!o->mlflow_dir && !o->sacred_dir) {
		cli_error("runs", "export needs --mlflow DIR or --sacred DIR (see labbox runs --help)");
		return CLI_EXIT_USAGE;
	}
	const char *runs_dir = o->runs_dir ? o->runs_dir : ".labbox/runs";
	if ((o->mlflow_dir && cli_output_not_records("runs", runs_dir, "--mlflow", o->mlflow_dir)) ||
	    (o->sacred_dir && cli_output_not_records("runs", runs_dir, "--sacred", o->sacred_dir)))
		return CLI_EXIT_USAGE;
	lb_index *ix;
	if (open_index(o, &ix) < 0)
		return CLI_EXIT_USAGE;
	json_object *rows = NULL;
	char err[1024];
	int r = lb_index_list(ix, &o->filter, &rows, err, sizeof err);
	lb_index_close(ix);
	if (r < 0) {
		cli_error("runs", "%s", err);
		return CLI_EXIT_USAGE;
	}
	/* An export carries its runs out as labbox's: MLflow and Sacred have no place for a mark
	 * that their readers would keep, so a run whose record this user's labbox did not seal
	 * is left out, named here, rather than written beside the user's own. Not a refusal:
	 * export takes no ids, and no filter could leave such rows out of an index that came
	 * with an experiment. */
	json_object *sealed_rows = json_object_new_array(), *left_out = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *row = json_object_array_get_idx(rows, i);
		char why[PATH_MAX + 512];
		bool differs = false;
		/* What export writes (status, times, metrics) is the index row's: a row that is
		 * not its sealed record's is not exported as labbox's. */
		if (cli_row_sealed(row, &differs, why, sizeof why)) {
			if (why[0])
				cli_warn("runs", "exported, but %s", why);
			json_object_array_add(sealed_rows, json_object_get(row));
			continue;
		}
		cli_warn("runs", "left out of the export: %s", why);
		json_object *e = json_object_new_object();
		json_object_object_add(e, "id", json_object_new_string(get_str(row, "id", "")));
		json_object_object_add(e, "run_dir", json_object_new_string(get_str(row, "run_dir", "")));
		json_object_object_add(e, "record_sealed", json_object_new_boolean(false));
		json_object_array_add(left_out, e);
	}
	json_object_put(rows);
	rows = sealed_rows;
	size_t nleft = json_object_array_length(left_out);
	int rc = 0;
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.export/1"));
	json_object_object_add(doc, "unsealed", json_object_new_int64((int64_t)nleft));
	json_object_object_add(doc, "left_out", left_out);
	const char *dirs[2] = {o->mlflow_dir, o->sacred_dir};
	const char *kinds[2] = {"mlflow", "sacred"};
	for (int t = 0; t < 2; t++) {
		if (!dirs[t])
			continue;
		json_object *done = json_object_new_array();
		err[0] = '\0';
		r = t == 0 ? lb_export_mlflow(dirs[t], rows, done, err, sizeof err)
			   : lb_export_sacred(dirs[t], rows, done, err, sizeof err);
		if (r < 0) {
			cli_error("runs", "export to %s failed: %s", dirs[t], err[0] ? err : strerror(-r));
			rc = 1;
		}
		size_t n = 0;
		for (size_t i = 0; i < json_object_array_length(done); i++) {
			json_object *e = json_object_array_get_idx(done, i), *w;
			if (json_object_object_get_ex(e, "skipped", &w)) {
				fprintf(stderr, "labbox runs: %s: run %s skipped: %s\n", kinds[t],
					get_str(e, "id", "?"), json_object_get_string(w));
				continue;
			}
			n++;
			for (size_t k = 0; json_object_object_get_ex(e, "warnings", &w) &&
					   k < json_object_array_length(w); k++)
				fprintf(stderr, "labbox runs: %s: run %s: %s\n", kinds[t], get_str(e, "id", "?"),
					json_object_get_string(json_object_array_get_idx(w, k)));
		}
		json_object *target = json_object_new_object();
		json_object_object_add(target, "dir", json_object_new_string(dirs[t]));
		json_object_object_add(target, "exported", json_object_new_int64((int64_t)n));
		json_object_object_add(target, "runs", done);
		json_object_object_add(doc, kinds[t], target);
		if (!o->json && r == 0)
			cli_printf("exported %zu run%s to %s (%s)%s%s\n", n, n == 1 ? "" : "s", dirs[t],
			       t == 0 ? "MLflow file store" : "Sacred FileStorageObserver",
			       t == 0 ? "; browse with: mlflow ui --backend-store-uri " : "",
			       t == 0 ? dirs[t] : "");
	}
	if (!o->json && nleft)
		cli_printf("%zu run%s left out of the export: not recorded by this user's labbox as "
			   "%s (see the warnings above; `labbox runs list` marks %s NO under "
			   "SEALED)\n",
			   nleft, nleft == 1 ? " was" : "s were", nleft == 1 ? "it stands" : "they stand",
			   nleft == 1 ? "it" : "them");
	if (o->json)
		cli_json_print(doc);
	json_object_put(doc);
	json_object_put(rows);
	return rc;
}

/* The statuses a run can have (result.json's status, and "running" in the index). */
static bool known_status(const char *s)
{
	static const char *const v[] = {"running",	"completed",   "failed",     "rejected",
					 "timeout",	"oom",	       "disk_limit", "invalid_metrics",
					 "infra_error", "interrupted"};
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		if (strcmp(s, v[i]) == 0)
			return true;
	return false;
}

/* A prefix of 2026-11-29T13:45:07 ending at a field boundary (year, month, day, hour, minute
 * or second), which is what the index's UTC start times are compared with; a whole time may
 * go on as result.json's started_at does (.642Z). */
static bool iso_prefix(const char *s)
{
	static const char tmpl[] = "0000-00-00T00:00:00";
	size_t n = strlen(s);
	if (n > 19) {
		const char *t = s + 19;
		if (*t == '.' && t[1] >= '0' && t[1] <= '9')
			for (t++; *t >= '0' && *t <= '9'; t++)
				;
		if (*t == 'Z')
			t++;
		if (*t)
			return false;
		n = 19;
	}
	if (n != 4 && n != 7 && n != 10 && n != 13 && n != 16 && n != 19)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tmpl[i] == '0' ? (s[i] < '0' || s[i] > '9') : s[i] != tmpl[i])
			return false;
	int month = n >= 7 ? (s[5] - '0') * 10 + (s[6] - '0') : 1;
	int day = n >= 10 ? (s[8] - '0') * 10 + (s[9] - '0') : 1;
	int hour = n >= 13 ? (s[11] - '0') * 10 + (s[12] - '0') : 0;
	int min = n >= 16 ? (s[14] - '0') * 10 + (s[15] - '0') : 0;
	int sec = n >= 19 ? (s[17] - '0') * 10 + (s[18] - '0') : 0;
	return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && min <= 59 &&
	       sec <= 60;
}

int cli_runs(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"runs-dir", required_argument, NULL, O_RUNS_DIR},
		{"status", required_argument, NULL, O_STATUS},
		{"metric", required_argument, NULL, O_METRIC},
		{"since", required_argument, NULL, O_SINCE},
		{"until", required_argument, NULL, O_UNTIL},
		{"limit", required_argument, NULL, O_LIMIT},
		{"sweep", required_argument, NULL, O_SWEEP},
		{"json", no_argument, NULL, O_JSON},
		{"mlflow", required_argument, NULL, O_MLFLOW},
		{"sacred", required_argument, NULL, O_SACRED},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	runs_opts o = {0};
	cli_json_begin("runs", argc, argv, "h", longopts, false);
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(runs_help, stdout);
			return 0;
		case O_RUNS_DIR:
			o.runs_dir = optarg;
			break;
		case O_STATUS:
			if (!known_status(optarg)) {
				cli_error("runs", "--status '%s' is not a status (running, completed, "
					  "failed, rejected, timeout, oom, disk_limit, invalid_metrics, "
					  "infra_error, interrupted)", optarg);
				return CLI_EXIT_USAGE;
			}
			o.filter.status = optarg;
			break;
		case O_METRIC:
			o.filter.metric = optarg;
			break;
		case O_SINCE:
		case O_UNTIL:
			if (!iso_prefix(optarg)) {
				cli_error("runs", "--%s '%s' is not a UTC date or time such as 2026-11-29 "
					  "or 2026-11-29T13:45", opt == O_SINCE ? "since" : "until", optarg);
				return CLI_EXIT_USAGE;
			}
			*(opt == O_SINCE ? &o.filter.since : &o.filter.until) = optarg;
			break;
		case O_LIMIT:
			if (lb_parse_long(optarg, &o.filter.limit) < 0 || o.filter.limit <= 0) {
				cli_error("runs", "--limit '%s' is not a positive integer", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case O_SWEEP:
			if (!optarg[0]) {
				cli_error("runs", "--sweep needs a sweep id");
				return CLI_EXIT_USAGE;
			}
			o.filter.sweep = optarg;
			break;
		case O_JSON:
			o.json = true;
			break;
		case O_MLFLOW:
		case O_SACRED:
			if (!optarg[0]) {
				cli_error("runs", "--%s needs a directory", opt == O_MLFLOW ? "mlflow" : "sacred");
				return CLI_EXIT_USAGE;
			}
			*(opt == O_MLFLOW ? &o.mlflow_dir : &o.sacred_dir) = optarg;
			break;
		default:
			cli_bad_option("runs", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	const char *sub = optind < argc ? argv[optind] : NULL;
	int nargs = argc - optind - 1;
	if (!sub) {
		cli_error("runs", "no subcommand given (list, show ID, compare A B, export)");
		return CLI_EXIT_USAGE;
	}
	if (strcmp(sub, "export") != 0 && (o.mlflow_dir || o.sacred_dir)) {
		cli_error("runs", "--mlflow and --sacred belong to 'runs export'");
		return CLI_EXIT_USAGE;
	}
	char sweep_id[NAME_MAX + 1];
	if (o.filter.sweep) {
		/* Resolved as report and sweep --resume resolve it: an id that is no sweep, or a
		 * prefix of two, is an error, never an empty or merged list. */
		LB_AUTOFREE char *dir = NULL;
		char err[PATH_MAX + 512];
		int r = lb_sweep_resolve(o.runs_dir ? o.runs_dir : ".labbox/runs", o.filter.sweep,
					 &dir, err, sizeof err);
		if (r < 0) {
			cli_error("runs", "--sweep: %s", r == -ENOMEM ? strerror(ENOMEM) : err);
			return r == -ENOMEM ? 1 : CLI_EXIT_USAGE;
		}
		lb_sweep_settle(o.runs_dir ? o.runs_dir : ".labbox/runs", dir);
		snprintf(sweep_id, sizeof sweep_id, "%s", strrchr(dir, '/') + 1);
		o.filter.sweep = sweep_id;
	}
	if (strcmp(sub, "list") == 0 && nargs == 0)
		return runs_list(&o);
	if (strcmp(sub, "show") == 0 && nargs == 1)
		return runs_show(&o, argv[optind + 1]);
	if (strcmp(sub, "compare") == 0 && nargs == 2)
		return runs_compare(&o, argv[optind + 1], argv[optind + 2]);
	if (strcmp(sub, "export") == 0 && nargs == 0)
		return runs_export(&o);
	if (strcmp(sub, "list") && strcmp(sub, "show") && strcmp(sub, "compare") && strcmp(sub, "export"))
		cli_error("runs", "unknown subcommand '%s' (list, show ID, compare A B, export)", sub);
	else
		cli_error("runs", "'%s' takes %s", sub,
			  strcmp(sub, "list") == 0 || strcmp(sub, "export") == 0 ? "no arguments"
			  : strcmp(sub, "show") == 0				 ? "one run id"
										 : "two run ids");
	return CLI_EXIT_USAGE;
}

/* ---- labbox explain -------------------------------------------------------------------- */

static const char explain_help[] =
	"usage: labbox explain [--json] [--runs-dir DIR] RUN_ID\n"
	"\n"
	"The diagnosis of a recorded run: its status, the failure's class and how sure labbox is\n"
	"of it (confidence), the evidence lines from run.log, the frame that raised and the\n"
	"innermost frame in the experiment's own code, the suggestion and the exact flag that\n"
	"would escalate (--network host, --gpus all, -v SRC:DST:rw, ...), and what the static\n"
	"check saw the code needs. A run recorded before labbox diagnosed so is diagnosed again\n"
	"from its run.log. RUN_ID may be a unique prefix, or the path of a run directory. A run\n"
	"whose records this user's labbox did not write as they stand (made elsewhere, such as a\n"
	"committed .labbox/, changed since, or older than seals) is marked NOT SEALED\n"
	"(record_sealed false with --json): what is shown is only what its files say.\n"
	"\n"
	"Options:\n"
	"  --runs-dir DIR   the runs directory whose index to read (default .labbox/runs)\n"
	"  --json           one JSON document (labbox.explain/1, docs/explain.md) on stdout\n"
	"  -h, --help       this help\n"
	"\n"
	"Exit status: 0 when the run was explained (whatever its status), 2 for usage errors and\n"
	"unknown runs.\n";

static void print_frame(const char *label, json_object *loc)
{
	json_object *v;
	if (!loc)
		return;
	/* An Octave frame has a file only when the experiment's .m file was found. */
	const char *file = get_str(loc, "file", NULL);
	cli_printf("  %-11s %s%s", label, file ? file : "", file ? " " : "");
	if (json_object_object_get_ex(loc, "line", &v) && v)
		cli_printf("line %d", json_object_get_int(v));
	if (json_object_object_get_ex(loc, "function", &v) && v)
		cli_printf(", in %s", json_object_get_string(v));
	if (json_object_object_get_ex(loc, "text", &v) && v)
		cli_printf(": %s", json_object_get_string(v));
	cli_printf("\n");
}

static void print_needs(json_object *needs, bool unfinished)
{
	if (!needs) {
		cli_printf("  needs       not recorded (%s)\n",
			   unfinished ? "the run did not finish its record"
				      : "a run from before labbox reported them");
		return;
	}
	size_t n = json_object_array_length(needs);
	if (n == 0)
		return;
	cli_printf("  needs\n");
	for (size_t i = 0; i < n; i++) {
		json_object *nd = json_object_array_get_idx(needs, i), *ev, *f, *g, *o;
		json_object_object_get_ex(nd, "evidence", &ev);
		json_object_object_get_ex(nd, "finding", &f);
		json_object_object_get_ex(nd, "granted", &g);
		json_object_object_get_ex(nd, "optional", &o);
		cli_printf("    %-13s %s:%s  %s  -> %s%s%s%s%s\n", get_str(nd, "kind", "?"),
			   get_str(ev, "file", "?"),
			   json_object_to_json_string(json_object_object_get(ev, "line")),
			   get_str(ev, "text", ""), get_str(nd, "flag", "?"),
			   g && json_object_get_boolean(g) ? " (granted)" : "",
			   o && json_object_get_boolean(o) ? " (optional)" : "",
			   f ? "; rejected by " : "", f ? json_object_get_string(f) : "");
	}
}

static void print_explain(json_object *doc)
{
	json_object *v, *f = NULL;
	cli_printf("run %s: %s", get_str(doc, "id", "?"), get_str(doc, "status", "?"));
	if (json_object_object_get_ex(doc, "exit_code", &v) && v)
		cli_printf(" (exit %d)", json_object_get_int(v));
	else if (json_object_object_get_ex(doc, "signal", &v) && v)
		cli_printf(" (signal %d)", json_object_get_int(v));
	cli_printf("\n");
	if (json_object_object_get_ex(doc, "record_sealed", &v) && !json_object_get_boolean(v)) {
		if (strcmp(get_str(doc, "unsealed_reason", "foreign"), "foreign") != 0)
			cli_printf("  record   NOT SEALED: %s\n", get_str(doc, "unsealed_why", "?"));
		else
			cli_printf("  record   NOT SEALED: not recorded by this user's labbox as it "
				   "stands (made elsewhere, changed since, or older than seals); what "
				   "follows is only what its files say\n");
	}
	json_object_object_get_ex(doc, "failure", &f);
	if (!f && strcmp(get_str(doc, "status", ""), "rejected") == 0) {
		cli_printf("  rejected by the static check before it ran (the findings below)\n");
	} else if (!f && strcmp(get_str(doc, "status", ""), "completed") == 0) {
		/* A warning can say the run stopped partway although it exited 0 (a traceback it
		 * caught and printed last): "nothing failed" alone would hide it. */
		json_object *w = NULL;
		json_object_object_get_ex(doc, "diagnosis_warnings", &w);
		bool warned = w && json_object_is_type(w, json_type_array) &&
			      json_object_array_length(w) > 0;
		cli_printf("  nothing failed%s\n",
			   warned ? " by its exit status; the warnings below say what may still be "
				    "wrong" : "");
	} else if (!f) {
		cli_printf("  no failure was recorded (labbox may have ended before the run did)\n");
	} else {
		cli_printf("  class       %s (confidence %s: %s)\n", get_str(f, "class", "?"),
			   get_str(f, "confidence", "?"), get_str(f, "confidence_reason", ""));
		cli_printf("  summary     %s\n", get_str(f, "summary", ""));
		json_object_object_get_ex(f, "location", &v);
		print_frame("raised at", v);
		json_object_object_get_ex(f, "code_location", &v);
		print_frame("in the code", v);
		if (json_object_object_get_ex(f, "evidence", &v) && v &&
		    json_object_array_length(v) > 0) {
			cli_printf("  evidence\n");
			for (size_t i = 0; i < json_object_array_length(v); i++)
				cli_printf("    | %s\n",
					   json_object_get_string(json_object_array_get_idx(v, i)));
		}
		cli_printf("  suggestion  %s\n", get_str(f, "suggestion", ""));
		if (json_object_object_get_ex(f, "escalation", &v) && v) {
			json_object *g;
			json_object_object_get_ex(v, "granted", &g);
			const char *flag = get_str(v, "flag", NULL), *env = get_str(v, "environment", NULL);
			cli_printf("  escalation  %s%s%s%s (grants %s)%s\n", flag ? flag : "",
				   flag && env ? "; " : "", env ? "environment: " : "", env ? env : "",
				   get_str(v, "grants", "?"),
				   g && json_object_get_boolean(g) ? ": the run had it already" : "");
		}
		if (json_object_object_get_ex(f, "recorded_class", &v) && v)
			cli_printf("  recorded    %s: %s\n", json_object_get_string(v),
				   get_str(f, "recorded_summary", ""));
		cli_printf("  diagnosis   %s\n", get_str(doc, "diagnosis_source", "result.json"));
	}
	json_object_object_get_ex(doc, "needs", &v);
	print_needs(v, strcmp(get_str(doc, "unsealed_reason", ""), "unfinished") == 0 ||
			       strcmp(get_str(doc, "unsealed_reason", ""), "running") == 0);
	if (json_object_object_get_ex(doc, "findings", &v) && v) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *fd = json_object_array_get_idx(v, i), *r, *sup;
			if (!json_object_object_get_ex(fd, "rejects", &r) || !json_object_get_boolean(r) ||
			    (json_object_object_get_ex(fd, "suppressed", &sup) && json_object_get_boolean(sup)))
				continue;
			cli_printf("  rejected    %s %s:%s %s\n", get_str(fd, "id", "?"),
				   get_str(fd, "file", "?"),
				   json_object_to_json_string(json_object_object_get(fd, "line")),
				   get_str(fd, "message", ""));
		}
	}
	const char *lists[] = {"metric_issues", "diagnosis_warnings"};
	for (size_t k = 0; k < 2; k++)
		if (json_object_object_get_ex(doc, lists[k], &v) && v &&
		    json_object_is_type(v, json_type_array))
			for (size_t i = 0; i < json_object_array_length(v); i++)
				cli_printf("  %-11s %s\n", k ? "warning" : "metrics",
					   get_str(json_object_array_get_idx(v, i), "message", ""));
}

/* RUN_ID as a path: a directory with a result.json, for runs not in this index. */
static bool run_dir_arg(const char *id, json_object **result, json_object **manifest)
{
	struct stat st;
	if (!strchr(id, '/') || stat(id, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	*result = load_json(id, "result.json");
	*manifest = load_json(id, "manifest.json");
	return true;
}

int cli_explain(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"runs-dir", required_argument, NULL, O_RUNS_DIR},
		{"json", no_argument, NULL, O_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	runs_opts o = {.cmd = "explain"};
	cli_json_begin("explain", argc, argv, "h", longopts, false);
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(explain_help, stdout);
			return 0;
		case O_RUNS_DIR:
			o.runs_dir = optarg;
			break;
		case O_JSON:
			o.json = true;
			break;
		default:
			cli_bad_option("explain", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cli_error("explain", argc - optind == 0 ? "no run id given (labbox explain RUN_ID)"
							: "explain takes one run id");
		return CLI_EXIT_USAGE;
	}
	const char *id = argv[optind];
	json_object *row = NULL, *result = NULL, *manifest = NULL;
	char run_dir[PATH_MAX];
	if (run_dir_arg(id, &result, &manifest)) {
		if (!realpath(id, run_dir))
			snprintf(run_dir, sizeof run_dir, "%s", id);
	} else {
		lb_index *ix;
		if (open_index(&o, &ix) < 0)
			return CLI_EXIT_USAGE;
		int r = find_run_as("explain", ix, id, &row, &result, &manifest);
		lb_index_close(ix);
		if (r < 0)
			return CLI_EXIT_USAGE;
		snprintf(run_dir, sizeof run_dir, "%s", get_str(row, "run_dir", ""));
	}
	/* A diagnosis repeats what the record says (status, metrics, failure): said to be labbox's
	 * only when this user's labbox sealed it. A run directory given by path has no index row;
	 * its own files must agree on the id. */
	bool sealed = lb_record_run_sealed(run_dir, row ? get_str(row, "id", NULL) : NULL);
	/* Said as what it is: a run still running or never finished, a damaged record, or one
	 * made elsewhere. */
	char why[PATH_MAX + 1024] = "";
	if (!sealed)
		cli_run_sealed_as(run_dir, row ? get_str(row, "id", NULL) : id,
				  row ? get_str(row, "status", NULL) : NULL, why, sizeof why);
	const char *reason = sealed ? NULL
			     : cli_unsealed_reason(run_dir, row ? get_str(row, "status", NULL) : NULL,
						   NULL, 0);
	json_object_put(row);
	if (!result) {
		cli_error("explain", "run '%s' has no readable result.json in %s", id, run_dir);
		json_object_put(manifest);
		return CLI_EXIT_USAGE;
	}
	json_object *doc = NULL;
	int r = lb_diagnose_explain(run_dir, result, manifest, &doc);
	json_object_put(result);
	json_object_put(manifest);
	if (r < 0) {
		cli_error("explain", "explaining run '%s' failed: %s", id, strerror(-r));
		return 1;
	}
	json_object_object_add(doc, "record_sealed", json_object_new_boolean(sealed));
	json_object_object_add(doc, "unsealed_reason", reason ? json_object_new_string(reason) : NULL);
	json_object_object_add(doc, "unsealed_why", sealed ? NULL : json_object_new_string(why));
	if (o.json)
		cli_json_print(doc);
	else
		print_explain(doc);
	json_object_put(doc);
	return 0;
}

/* ---- labbox rerun ---------------------------------------------------------------------- */

static const char rerun_help[] =
	"usage: labbox rerun [--runs-dir DIR] [--json] [-q] ID\n"
	"\n"
	"Run a recorded run again: the same staged code (from the original experiment directory\n"
	"when every file still has the recorded sha256, else from the run's own staged copy when\n"
	"its files are unchanged; exactly the recorded files either way: files added to the\n"
	"experiment directory since are left out, and named), the same interpreter, arguments, budget, declared metrics and\n"
	"sandbox flags. Then say whether the metrics match the original run's: a determinism\n"
	"check of every value either run reported, its stdout metrics (plain, per condition,\n"
	"tagged per seed as cond/name{seed=0}, SUMMARY and PAIRED lines field by field) and the\n"
	"values of its results files (final_info.json, results.json, results.csv) by dotted path; numbers are\n"
	"compared as numbers, strings exactly, long arrays by a digest. It says how many values\n"
	"were compared, and \"nothing to compare\" (never yes) when there were none. Metrics\n"
	"that measure time (fit_seconds, train_time, samples_per_sec...) differ between runs of\n"
	"the same code and are compared apart. The comparison is written to the new run's\n"
	"rerun.json.\n"
	"\n"
	"Options:\n"
	"  --runs-dir DIR   the runs directory (default .labbox/runs)\n"
	"  --json           print the new run's result.json with a \"rerun\" block added\n"
	"  -q, --quiet      do not stream the experiment's output\n"
	"  --accept-grants  repeat a record this user's labbox did not write (or that changed\n"
	"                   since) although its manifest grants more than the defaults (mounts,\n"
	"                   a network, host variables, GPUs, less isolation, another backend, a\n"
	"                   weaker gate, limits looser than a plain run's: --disk-limit 0, a\n"
	"                   longer --grace, a bigger --log-limit or --shm-size, a --tmpfs);\n"
	"                   without it such a rerun is refused, naming them.\n"
	"                   It also lets such a record's experiment directory be read\n"
	"  -h, --help       this help\n"
	"\n"
	"Records labbox writes carry a seal (result.json's manifest_mac and result_mac, HMACs of\n"
	"manifest.json and result.json with a key in the user's cache): a run directory that came\n"
	"with an experiment or from another user, or whose files changed since, has none that\n"
	"matches. Of such a record the experiment directory it names\n"
	"is not read (nor its git repository) unless --accept-grants is given: the code comes\n"
	"from the record's own staged copy.\n"
	"\n"
	"Exit status: that of the new run (as labbox run), 2 when the run cannot be repeated.\n";

/* Whether rerun may repeat the record: sealed by this user's labbox (lb_record_run_seal:
 * manifest.json, and result.json where its manifest says it was sealed), or granting nothing
 * beyond the defaults, or accepted. */
static bool rerun_allowed(const char *id, const char *run_dir, json_object *result,
			  json_object *cfg, json_object *interp, bool accepted, bool *sealed)
{
	/* Its result.json too: the original's metrics are what the new run is compared with,
	 * and a record changed since is not this user's labbox's, whichever file changed. */
	(void)result;
	*sealed = lb_record_run_seal(run_dir, id) >= LB_SEAL_OLD_SCOPE;
	if (*sealed || accepted)
		return true;
	lb_buf b = {0};
	if (cli_record_grants(cfg, interp, NULL, &b) == 0) {
		lb_buf_free(&b);
		return true;
	}
	cli_error("rerun",
		  "run %s's record was not written by this user's labbox, or was changed since "
		  "(its manifest.json or result.json does not match its seal): it would be "
		  "repeated with %s. Read %s/manifest.json, and if you want that, repeat it with "
		  "labbox rerun --accept-grants %s (which also reads the experiment directory "
		  "it names, %s)",
		  id, b.data ? b.data : "", run_dir, id, get_str(cfg, "expdir", "none"));
	lb_buf_free(&b);
	return false;
}

static void flatten_metrics(json_object *metrics, json_object *out)
{
	json_object *vals, *conds;
	if (json_object_object_get_ex(metrics, "values", &vals)) {
		json_object_object_foreach(vals, k, v)
		{
			json_object_object_add(out, k, v ? json_object_get(v) : NULL);
		}
	}
	if (json_object_object_get_ex(metrics, "conditions", &conds)) {
		json_object_object_foreach(conds, c, group)
		{
			json_object_object_foreach(group, k, v)
			{
				char key[600];
				snprintf(key, sizeof key, "%s/%s", c, k);
				json_object_object_add(out, key, v ? json_object_get(v) : NULL);
			}
		}
	}
}

/* Values of a run's results files, as "FILE:dotted.path" (a series longer than
 * LB_FLATTEN_ARRAY_MAX is one digest), added to out. */
static void flatten_files(json_object *metrics, json_object *out)
{
	json_object *files;
	if (!json_object_object_get_ex(metrics, "files", &files) || !files)
		return;
	json_object_object_foreach(files, fname, fdoc)
	{
		json_object *flat = json_object_new_object();
		lb_results_flatten(fdoc, LB_FLATTEN_ARRAY_MAX, true, 100000, flat, NULL);
		json_object_object_foreach(flat, k, v)
		{
			char key[2400];
			snprintf(key, sizeof key, "%s:%s", fname, k);
			json_object_object_add(out, key, v ? json_object_get(v) : NULL);
		}
		json_object_put(flat);
	}
}

/* Everything a run reported, flat: stdout metrics ("name", "cond/name"), tagged, SUMMARY and
 * PAIRED results, and file values. */
static void collect_values(json_object *metrics, json_object *out)
{
	flatten_metrics(metrics, out);
	flatten_structured(metrics, out);
	flatten_files(metrics, out);
}

/* Whether a compared key is a timing: by its metric name, the path inside a file without
 * trailing element indexes ("ds.step_times.3" is step_times). */
static bool key_is_timing(const char *key)
{
	char name[2400];
	/* A PAIRED line compares methods, whatever they measured; a SUMMARY's fields and a
	 * tagged value's tags are not the metric's name. */
	if (strncmp(key, "PAIRED:", 7) == 0)
		return false;
	if (strncmp(key, "SUMMARY:", 8) == 0) {
		snprintf(name, sizeof name, "%s", key + 8);
		char *dot = strrchr(name, '.');
		if (dot)
			*dot = '\0';
		return lb_metric_is_timing(name);
	}
	const char *brace = strchr(key, '{');
	if (brace && key[strlen(key) - 1] == '}' && !memchr(key, ':', (size_t)(brace - key))) {
		snprintf(name, sizeof name, "%.*s", (int)(brace - key), key);
		return lb_metric_is_timing(name);
	}
	const char *colon = strrchr(key, ':');
	snprintf(name, sizeof name, "%s", colon ? colon + 1 : key);
	for (;;) {
		char *dot = strrchr(name, '.');
		const char *p = dot ? dot + 1 : name;
		if (!*p || strspn(p, "0123456789") != strlen(p) || !dot)
			break;
		*dot = '\0';
	}
	return lb_metric_is_timing(name);
}

/* The union of both runs' keys: a value in one run only, or a value that differs
 * (lb_metric_values_equal: numbers as numbers, strings exactly), is a difference {key, a,
 * b}; timings go to their own list and count. */
static void compare_values(json_object *before, json_object *after, json_object *diffs,
			   json_object *timing, json_object *own, const own_names *oa,
			   const own_names *ob, size_t *compared, size_t *timing_compared)
{
	json_object *keys = key_union(before, after);
	json_object_object_foreach(keys, k, unused)
	{
		(void)unused;
		json_object *a = NULL, *b = NULL;
		bool ha = json_object_object_get_ex(before, k, &a);
		bool hb = json_object_object_get_ex(after, k, &b);
		bool is_timing = key_is_timing(k);
		(*(is_timing ? timing_compared : compared))++;
		if (ha && hb && lb_metric_values_equal(a, b))
			continue;
		bool own_only = ha && hb && same_but_own(a, b, oa, ob);
		json_object *d = json_object_new_object();
		json_object_object_add(d, "key", json_object_new_string(k));
		json_object_object_add(d, "a", a ? json_object_get(a) : NULL);
		json_object_object_add(d, "b", b ? json_object_get(b) : NULL);
		if (!ha || !hb)
			json_object_object_add(d, "only_in", json_object_new_string(ha ? "a" : "b"));
		json_object_array_add(own_only ? own : is_timing ? timing : diffs, d);
	}
	json_object_put(keys);
}

/* {"compared": volumes in either run, "changed": [{destination, source, before, after}]}:
 * the fingerprints (manifest.data) of the mounted data of both runs, by destination; a
 * volume in one run only, or one whose digest could not be taken in either, is changed. */
static json_object *data_comparison(json_object *before, json_object *after)
{
	json_object *o = json_object_new_object(), *changed = json_object_new_array();
	json_object *dests = json_object_new_object();
	json_object *sides[2] = {before, after};
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; json_object_is_type(sides[s], json_type_array) &&
				   i < json_object_array_length(sides[s]); i++) {
			json_object *v = json_object_array_get_idx(sides[s], i);
			json_object *slot;
			const char *dst = get_str(v, "destination", "");
			if (!json_object_object_get_ex(dests, dst, &slot)) {
				slot = json_object_new_array_ext(2);
				json_object_array_put_idx(slot, 0, NULL);
				json_object_array_put_idx(slot, 1, NULL);
				json_object_object_add(dests, dst, slot);
			}
			json_object_array_put_idx(slot, (size_t)s, json_object_get(v));
		}
	json_object_object_foreach(dests, dst, slot)
	{
		json_object *a = json_object_array_get_idx(slot, 0), *b = json_object_array_get_idx(slot, 1);
		const char *da = get_str(a, "digest", NULL), *db = get_str(b, "digest", NULL);
		if (da && db && strcmp(da, db) == 0)
			continue;
		json_object *c = json_object_new_object();
		json_object_object_add(c, "destination", json_object_new_string(dst));
		json_object_object_add(c, "source", json_object_new_string(get_str(b ? b : a, "source", "")));
		json_object_object_add(c, "before", da ? json_object_new_string(da) : NULL);
		json_object_object_add(c, "after", db ? json_object_new_string(db) : NULL);
		json_object_array_add(changed, c);
	}
	json_object_object_add(o, "compared", json_object_new_int(json_object_object_length(dests)));
	json_object_object_add(o, "changed", changed);
	json_object_put(dests);
	return o;
}

/* A file of the experiment or of a run's staged copy, which the run could have changed: a
 * regular file beneath dir, no link on the way (a directory swapped for a link to /dev or
 * the host's files), no FIFO to wait on. */
static int sha256_file(const char *dir, const char *rel, char hex[65])
{
	LB_AUTOCLOSE int fd = lb_open_file_beneath(dir, rel);
	return fd < 0 ? fd : lb_sha256_fd(fd, hex);
}

/* First file of the manifest whose content differs in dir, or NULL when all match. */
static const char *first_changed(const char *dir, json_object *files)
{
	json_object_object_foreach(files, rel, sha)
	{
		const char *want = json_object_get_string(sha);
		if (strcmp(want, "symlink") == 0)
			continue;
		char hex[65];
		if (sha256_file(dir, rel, hex) < 0 || strcmp(hex, want) != 0)
			return rel;
	}
	return NULL;
}

/* Whether every name in the manifest's file list is one staging could have made: a plain
 * relative path (lb_rel_path_plain), with a sha256 or "symlink". The first that is not, or
 * NULL. A record is only text: its names choose nothing outside the run. */
static const char *bad_file_name(json_object *files)
{
	json_object_object_foreach(files, rel, sha)
	{
		const char *v = json_object_is_type(sha, json_type_string) ? json_object_get_string(sha)
									   : "";
		bool hex = strlen(v) == 64 && strspn(v, "0123456789abcdef") == 64;
		if (!lb_rel_path_plain(rel) || !(hex || strcmp(v, "symlink") == 0))
			return rel;
	}
	return NULL;
}

/* The rerun's copy of the staged files lives as long as the rerun: /tmp/labbox-rerun-PID-XXXXXX
 * (0700). A rerun that was killed cannot remove its own, so each rerun removes those of this
 * user's whose labbox is gone, as ssh's control directories are. */
static void remove_rerun_dir(int dfd, const char *name, const char *path, void *ctx)
{
	(void)dfd;
	(void)name;
	(void)ctx;
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s", path);
	char *argv_rm[] = {"rm", "-rf", "--", p, NULL};
	lb_buf ignored = {0};
	lb_capture(argv_rm, 0, true, &ignored, NULL);
	lb_buf_free(&ignored);
}

static void remove_stale_rerun_dirs(void)
{
	lb_stale_pid_dirs("/tmp", "labbox-rerun", remove_rerun_dir, NULL);
}

/* Copy exactly the manifest's files from the old staged copy into a fresh directory. Both
 * sides are walked a component at a time from a descriptor, never through a link: the names
 * are the record's (bad_file_name has refused any that is not plain), and a link in either
 * tree (the staged copy is what the run left, the new one has the links copied so far) leads
 * nowhere. Every entry is made new (O_EXCL, symlinkat, mkdirat) beneath tmp. */
static int rebuild_from_stage(const char *exp, json_object *files, char *tmp)
{
	if (!mkdtemp(tmp))
		return -errno;
	LB_AUTOCLOSE int sfd = open(exp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	LB_AUTOCLOSE int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0 || tfd < 0)
		return -errno;
	/* Staged files with several links, by identity, and the name each was first made as
	 * (the manifest's own key: it lives as long as files). */
	struct rebuilt {
		dev_t dev;
		ino_t ino;
		const char *rel;
	};
	LB_AUTOFREE struct rebuilt *seen = NULL;
	size_t nseen = 0;
	json_object_object_foreach(files, rel, sha)
	{
		if (!lb_rel_path_plain(rel))
			return -EINVAL;
		const char *sbase = NULL, *dbase = NULL;
		LB_AUTOCLOSE int sp = lb_open_parent_beneath(sfd, rel, false, &sbase);
		if (sp < 0)
			return sp;
		LB_AUTOCLOSE int dp = lb_open_parent_beneath(tfd, rel, true, &dbase);
		if (dp < 0)
			return dp;
		struct stat st;
		if (fstatat(sp, sbase, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (strcmp(json_object_get_string(sha), "symlink") == 0) {
			if (!S_ISLNK(st.st_mode))
				return -EINVAL;
			char target[PATH_MAX];
			ssize_t len = readlinkat(sp, sbase, target, sizeof target - 1);
			if (len < 0)
				return -errno;
			target[len] = '\0';
			/* The link is copied, not followed: what it leads to is staging's to judge, as
			 * for any experiment's link. */
			if (symlinkat(target, dp, dbase) < 0)
				return -errno;
			continue;
		}
		/* The staged file's permission bits, as staging kept them (stage.c: rwx only, under
		 * the umask): a helper script or a venv's bin/python of the experiment must stay
		 * executable. Never setuid, setgid or sticky. */
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		/* A file the run staged with several links is made once and linked again, and
		 * each is copied as staging copied it (lb_record_copy_sparse: streamed, holes kept),
		 * so a rerun costs what the first staging cost. */
		const char *first = NULL;
		for (size_t i = 0; st.st_nlink > 1 && i < nseen; i++)
			if (seen[i].dev == st.st_dev && seen[i].ino == st.st_ino)
				first = seen[i].rel;
		if (first) {
			const char *fbase = NULL;
			LB_AUTOCLOSE int fp = lb_open_parent_beneath(tfd, first, false, &fbase);
			if (fp < 0)
				return fp;
			if (linkat(fp, fbase, dp, dbase, 0) < 0)
				return -errno;
			continue;
		}
		LB_AUTOCLOSE int in =
			openat(sp, sbase, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (in < 0)
			return -errno;
		LB_AUTOCLOSE int out = openat(dp, dbase, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					      st.st_mode & 0777);
		if (out < 0)
			return -errno;
		int r = lb_record_copy_sparse(in, out);
		if (r < 0)
			return r;
		if (st.st_nlink > 1) {
			struct rebuilt *ns = realloc(seen, (nseen + 1) * sizeof *ns);
			if (!ns)
				return -ENOMEM;
			seen = ns;
			seen[nseen++] = (struct rebuilt){st.st_dev, st.st_ino, rel};
		}
	}
	return 0;
}

static void rerun_echo(void *ctx, lb_stream stream, const char *data, size_t len)
{
	(void)stream;
	cli_echo_write(ctx, data, len, false);
}

static void rerun_progress(void *ctx, const char *line)
{
	(void)ctx;
	cli_error("rerun", "%s", line);
}

/* A sweep cell ran with more than its config.sandbox: its sweep's env: (template values,
 * PYTHONHASHSEED={seed}) and, without --cpus, thread counts that follow its slot's CPUs
 * (cli/sweep.c cell_run). A copy of the sandbox configuration with those in its env, as the
 * cell had them, so that a rerun repeats them and records them; NULL for any other run. */
static json_object *cell_sandbox(json_object *manifest, json_object *sbj)
{
	json_object *sw = json_object_object_get(manifest, "sweep"), *env, *cp = NULL;
	if (!sw || !json_object_is_type(sw, json_type_object) || !sbj ||
	    json_object_deep_copy(sbj, &cp, NULL) < 0 || !cp)
		return NULL;
	if (!json_object_object_get_ex(cp, "env", &env) || !json_object_is_type(env, json_type_array)) {
		env = json_object_new_array();
		json_object_object_add(cp, "env", env);
	}
	cli_sandbox_opts so = {0};
	json_object *slot = json_object_object_get(sw, "slot"), *v;
	if (cli_sandbox_opts_from_json(sbj, &so) == 0 && so.cpus <= 0 &&
	    json_object_object_get_ex(slot, "cpus", &v) && v) {
		double cpus = floor(json_object_get_double(v));
		cli_thread_env_json(&so, cpus >= 1 ? cpus : 1, env);
	}
	cli_sandbox_opts_free(&so);
	json_object *cell_env = json_object_object_get(sw, "env");
	for (size_t i = 0; cell_env && json_object_is_type(cell_env, json_type_array) &&
			   i < json_object_array_length(cell_env); i++) {
		json_object *e = json_object_array_get_idx(cell_env, i);
		if (e && json_object_is_type(e, json_type_string))
			json_object_array_add(env, json_object_get(e));
	}
	return cp;
}

int cli_rerun(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"runs-dir", required_argument, NULL, O_RUNS_DIR},
		{"json", no_argument, NULL, O_JSON},
		{"quiet", no_argument, NULL, 'q'},
		{"accept-grants", no_argument, NULL, O_ACCEPT_GRANTS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	runs_opts o = {0};
	bool quiet = false, accept_grants = false;
	cli_json_begin("rerun", argc, argv, "hq", longopts, false);
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli_json_set(NULL);
			fputs(rerun_help, stdout);
			return 0;
		case 'q':
			quiet = true;
			break;
		case O_ACCEPT_GRANTS:
			accept_grants = true;
			break;
		case O_RUNS_DIR:
			o.runs_dir = optarg;
			break;
		case O_JSON:
			o.json = true;
			break;
		default:
			cli_bad_option("rerun", argv, optopt);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("rerun", "give exactly one run id (usage: labbox rerun ID)");
		return CLI_EXIT_USAGE;
	}
	lb_index *ix;
	if (open_index(&o, &ix) < 0)
		return CLI_EXIT_USAGE;
	json_object *row = NULL, *old = NULL, *manifest = NULL;
	int r = find_run(ix, argv[optind], &row, &old, &manifest);
	lb_index_close(ix);
	if (r < 0)
		return CLI_EXIT_USAGE;
	int rc = CLI_EXIT_USAGE;
	char tmp[64];
	snprintf(tmp, sizeof tmp, "/tmp/labbox-rerun-%d-XXXXXX", (int)getpid());
	remove_stale_rerun_dirs();
	bool made_tmp = false;
	cli_sandbox_opts so = {0};
	json_object *cell_sbj = NULL;
	lb_sandbox *sb = NULL;
	lb_run_result out = {0};
	char **args = NULL;
	size_t nargs = 0;
	const char **metrics = NULL;
	json_object *cfg, *files, *interp, *v;
	if (!manifest || !json_object_object_get_ex(manifest, "config", &cfg) ||
	    !json_object_object_get_ex(manifest, "files", &files) ||
	    !json_object_object_get_ex(manifest, "interpreter", &interp)) {
		cli_error("rerun", "run %s has no complete manifest.json; it cannot be repeated",
			  get_str(row, "id", "?"));
		goto done;
	}
	const char *id = get_str(row, "id", "");
	/* The file list names what is copied and made: only names staging could have written. */
	const char *bad = bad_file_name(files);
	if (bad) {
		cli_error("rerun",
			  "run %s's manifest.json lists a file '%s' that staging never names (not a "
			  "plain relative path with a sha256); it is not repeated",
			  id, bad);
		goto done;
	}
	bool sealed;
	if (!rerun_allowed(id, get_str(row, "run_dir", ""), old, cfg, interp, accept_grants, &sealed))
		goto done;
	/* The original experiment directory is a host path the record names: read (its files,
	 * its git repository) only when this user's labbox sealed the record or the user
	 * accepted it. Otherwise the code comes from the record's own staged copy, which is
	 * what the record is. */
	const char *recorded = get_str(cfg, "expdir", "");
	bool origin_trusted = sealed || accept_grants;
	const char *origin = origin_trusted && recorded[0] == '/' ? recorded : NULL;
	char exp[PATH_MAX];
	snprintf(exp, sizeof exp, "%s/exp", get_str(row, "run_dir", ""));
	const char *src = NULL;
	const char *changed_origin = origin ? first_changed(origin, files) : NULL;
	if (origin && !changed_origin) {
		src = origin;
	} else {
		const char *changed_stage = first_changed(exp, files);
		if (changed_stage && origin) {
			cli_error("rerun",
				  "cannot repeat run %s exactly: '%s' changed in %s and '%s' was "
				  "overwritten by the run in its staged copy",
				  id, changed_origin, origin, changed_stage);
			goto done;
		}
		if (changed_stage) {
			cli_error("rerun",
				  "cannot repeat run %s exactly: '%s' was overwritten by the run in its "
				  "staged copy, and its record is not sealed by this user's labbox, so its "
				  "experiment directory %s is not read; labbox rerun --accept-grants %s "
				  "reads it",
				  id, changed_stage, recorded, id);
			goto done;
		}
		r = rebuild_from_stage(exp, files, tmp);
		made_tmp = true;
		if (r < 0) {
			cli_error("rerun", "cannot copy the staged files of run %s: %s", id, strerror(-r));
			goto done;
		}
		src = tmp;
	}
	json_object *sbj = json_object_object_get(cfg, "sandbox");
	if ((cell_sbj = cell_sandbox(manifest, sbj)))
		sbj = cell_sbj;
	if (cli_sandbox_opts_from_json(sbj, &so) < 0 || lb_sandbox_new(&sb) < 0) {
		rc = 125;
		goto done;
	}
	/* A run that went over ssh used the remote host's GPUs and volumes (cli/run.c); a
	 * Slurm run's GPUs were the job's: this host need not have them. */
	cli_sandbox_opts here = so;
	const char *rmode = get_str(cfg, "mode", "local");
	if (strcmp(rmode, "ssh") == 0) {
		here.gpus = NULL;
		here.nvolumes = 0;
		here.nhide = 0; /* the remote host's paths, hidden by the labbox there */
	} else if (strcmp(rmode, "slurm") == 0) {
		here.gpus = NULL;
	}
	if ((rc = cli_sandbox_apply("rerun", &here, sb)) != 0)
		goto done;
	lb_run_request req = {0};
	req.expdir = src;
	/* Not trusted: the new record names the copy that ran, never the record's path (which
	 * the new run's seal would make the user's own). */
	req.origin_expdir = origin;
	req.origin_untrusted = !sealed;
	req.rerun_of = id;
	/* What the original ran, nothing added to the experiment since. */
	req.stage_only = files;
	/* An interpreter labbox.yaml named is named again by the staged labbox.yaml, and stays
	 * confined to the sandbox; only one the user chose is passed as theirs. */
	const char *named_by = get_str(interp, "named_by", "command line");
	const char *ipath = strcmp(named_by, "labbox.yaml") == 0 || strcmp(named_by, "env") == 0
				    ? NULL : get_str(interp, "path", NULL);
	if (strcmp(named_by, "env") == 0)
		req.env = get_str(interp, "env_asked", "auto");
	/* One probed in the sandbox lived in the experiment: its recorded path is what it said
	 * of itself, moved into the run's exp/ (which the run could rewrite). As a command-line
	 * path it would be probed on the host, so it is named again at the same place in the
	 * copy this rerun runs (and probed there, in the sandbox); anywhere else is refused. */
	char moved[PATH_MAX];
	if (ipath && (v = json_object_object_get(interp, "probed_in_sandbox")) &&
	    json_object_get_boolean(v)) {
		/* Beneath exp/ by its spelling, and by its components: `..` there would name the
		 * same host program from the copy. */
		if (!lb_path_under(ipath, exp) || ipath[strlen(exp)] != '/' ||
		    !lb_rel_path_plain(ipath + strlen(exp) + 1) ||
		    snprintf(moved, sizeof moved, "%s%s", src, ipath + strlen(exp)) >= (int)sizeof moved) {
			cli_error("rerun", "run %s ran an interpreter of the experiment that named itself "
				  "%s, outside the experiment; it is not run again", id, ipath);
			/* cli_sandbox_apply left rc at 0: a refusal is not a rerun that passed. */
			rc = CLI_EXIT_USAGE;
			goto done;
		}
		ipath = moved;
	}
	/* An R or Octave run's interpreter is --interpreter's, never --python's. */
	if (strcmp(get_str(interp, "language", "python"), "python") == 0)
		req.python = ipath;
	else
		req.interpreter = ipath;
	req.runs_dir = o.runs_dir;
	/* An entry point named by --entry is named again; one from labbox.yaml (or the default)
	 * comes from the staged labbox.yaml again, so the manifest says the same of both runs. */
	if (strcmp(get_str(cfg, "entry_named_by", ""), "command line") == 0)
		req.entry = get_str(cfg, "entry", NULL);
	/* The same backend as the original (runs recorded before modes existed ran locally). */
	req.mode = get_str(cfg, "mode", "local");
	if (strcmp(req.mode, "docker") == 0) {
		/* The same image and the interpreter inside it; the local python3 recorded as the
		 * manifest's interpreter served the static check only. */
		req.image = get_str(cfg, "image", NULL);
		/* A built image is built again from its base (the same recipe reuses it). */
		req.base_image = get_str(cfg, "base_image", NULL);
		req.engine = get_str(cfg, "engine_asked", NULL);
		req.python = get_str(cfg, "python_in_image", NULL);
	} else if (strcmp(req.mode, "ssh") == 0) {
		/* The same host, the same remote labbox, installed again if it was. */
		req.host = get_str(cfg, "host", NULL);
		req.remote_labbox = get_str(cfg, "remote_labbox_asked", NULL);
		req.install_remote = json_object_object_get_ex(cfg, "install_remote", &v) &&
				     json_object_get_boolean(v);
		/* --python named the interpreter there; the manifest's interpreter is the local
		 * python3 of the static check. */
		req.python = get_str(cfg, "python_remote", NULL);
	}
	if (strcmp(req.mode, "slurm") == 0) {
		/* The same partition, account and qos, and the interpreter on the node. */
		json_object *sl = json_object_object_get(cfg, "slurm");
		req.partition = get_str(sl, "partition", NULL);
		req.account = get_str(sl, "account", NULL);
		req.qos = get_str(sl, "qos", NULL);
		req.python = get_str(cfg, "python_in_image", NULL);
		req.progress = rerun_progress;
	}
	if (strcmp(req.mode, "colab") == 0) {
		/* The same Drive folder, waited on alike. */
		req.drive = get_str(cfg, "drive", NULL);
		json_object *cv;
		if (json_object_object_get_ex(cfg, "colab_poll_s", &cv) && cv)
			req.colab_poll = json_object_get_double(cv);
		if (json_object_object_get_ex(cfg, "colab_timeout_s", &cv) && cv)
			req.colab_timeout = json_object_get_double(cv);
		if (json_object_object_get_ex(cfg, "colab_stale_s", &cv) && cv)
			req.colab_stale = json_object_get_double(cv);
	}
	if (json_object_object_get_ex(cfg, "budget_s", &v) && v)
		req.budget = json_object_get_double(v);
	req.grace = so.grace_set ? so.grace : 5.0;
	if (json_object_object_get_ex(cfg, "log_limit_bytes", &v) && v)
		req.log_limit = (uint64_t)json_object_get_int64(v);
	json_object *a;
	if (json_object_object_get_ex(cfg, "args", &a) && (nargs = json_object_array_length(a))) {
		args = calloc(nargs + 1, sizeof *args);
		for (size_t i = 0; args && i < nargs; i++)
			args[i] = (char *)json_object_get_string(json_object_array_get_idx(a, i));
		req.args = args;
		req.nargs = args ? nargs : 0;
	}
	if (json_object_object_get_ex(cfg, "metrics", &a) && json_object_array_length(a)) {
		size_t n = json_object_array_length(a);
		metrics = calloc(n + 1, sizeof *metrics);
		for (size_t i = 0; metrics && i < n; i++)
			metrics[i] = json_object_get_string(json_object_array_get_idx(a, i));
		req.metrics = metrics;
		req.nmetrics = metrics ? n : 0;
	}
	req.sandbox_config = sbj;
	req.disk_limit = cli_disk_limit(&so, o.runs_dir ? o.runs_dir : ".labbox/runs");
	lb_check_policy pol = LB_CHECK_STANDARD;
	if (json_object_object_get_ex(cfg, "policy", &v) && v)
		lb_check_policy_parse(json_object_get_string(v), &pol);
	req.policy = (int)pol;
	req.trust_project = json_object_object_get_ex(cfg, "trust_project", &v) && json_object_get_boolean(v);
	/* The runtime gate as the original asked for it (runs before it existed: the default). */
	lb_gate_mode gm = LB_GATE_DEFAULT;
	if (json_object_object_get_ex(cfg, "runtime_gate", &v) && v)
		lb_gate_mode_parse(json_object_get_string(v), &gm);
	req.runtime_gate = (int)gm;
	cli_echo echo;
	cli_echo_init(&echo, o.json ? 2 : 1, false);
	if (!quiet) {
		req.echo = rerun_echo;
		req.echo_ctx = &echo;
	}
	req.command_line = argv - 1;
	req.command_argc = argc + 1;
	r = lb_run_mode(sb, &req, &out);
	if (!quiet)
		cli_echo_write(&echo, NULL, 0, true);
	if (r < 0 || !out.doc) {
		cli_error("rerun", "%s", r < 0 ? strerror(-r) : out.error);
		rc = r < 0 ? 125 : out.exit_code;
		goto done;
	}
	rc = out.exit_code;

	/* The determinism check: every value either run reported, on stdout and in its results
	 * files, compared. */
	json_object *before = json_object_new_object(), *after = json_object_new_object();
	json_object *mo, *mn;
	if (old && json_object_object_get_ex(old, "metrics", &mo))
		collect_values(mo, before);
	if (json_object_object_get_ex(out.doc, "metrics", &mn))
		collect_values(mn, after);
	json_object *diffs = json_object_new_array(), *timing = json_object_new_array();
	json_object *own = json_object_new_array();
	size_t compared = 0, timing_compared = 0;
	own_names own_old = {get_str(row, "run_dir", NULL), id};
	own_names own_new = {out.run_dir, out.id};
	compare_values(before, after, diffs, timing, own, &own_old, &own_new, &compared,
		       &timing_compared);
	size_t nd = json_object_array_length(diffs), nt = json_object_array_length(timing);
	/* A verdict needs something to judge: no value compared is no evidence of a match. */
	const char *verdict = compared == 0 ? "nothing to compare" : nd == 0 ? "match" : "differ";
	json_object *rerun = json_object_new_object();
	json_object_object_add(rerun, "of", json_object_new_string(id));
	json_object_object_add(rerun, "source", json_object_new_string(src == origin ? "expdir" : "staged copy"));
	/* Whether the record repeated was this user's labbox's own, unchanged (its seal). */
	json_object_object_add(rerun, "record_sealed", json_object_new_boolean(sealed));
	json_object_object_add(rerun, "verdict", json_object_new_string(verdict));
	json_object_object_add(rerun, "compared", json_object_new_int64((int64_t)compared));
	json_object_object_add(rerun, "timing_compared", json_object_new_int64((int64_t)timing_compared));
	json_object_object_add(rerun, "metrics_compared", json_object_new_int64((int64_t)compared));
	json_object_object_add(rerun, "metrics_match",
			       compared ? json_object_new_boolean(nd == 0) : NULL);
	json_object_object_add(rerun, "differences", diffs);
	json_object_object_add(rerun, "timing_differences", timing);
	/* Values equal once each run's own directory and id are taken out: not a result that
	 * differs, shown apart. */
	json_object_object_add(rerun, "own_path_differences", own);
	json_object_object_add(rerun, "metrics_match_exactly",
			       compared ? json_object_new_boolean(nd == 0 && nt == 0) : NULL);
	/* The mounted data, by its fingerprint in both manifests: the same code on other data is
	 * not the same experiment, whatever the metrics say. */
	json_object *newman = load_json(out.run_dir, "manifest.json");
	json_object *data = data_comparison(json_object_object_get(manifest, "data"),
					    newman ? json_object_object_get(newman, "data") : NULL);
	/* The staged files: the original's, whichever copy they came from; what the experiment
	 * directory holds besides them now was left out, and what changed there since is
	 * named. */
	json_object *inputs = json_object_new_object();
	json_object *left = newman ? json_object_object_get(newman, "left_out_files") : NULL;
	json_object_object_add(inputs, "files_staged",
			       json_object_new_int(json_object_object_length(files)));
	json_object_object_add(inputs, "left_out",
			       left ? json_object_get(left) : json_object_new_array());
	json_object_object_add(inputs, "changed_in_expdir",
			       changed_origin ? json_object_new_string(changed_origin) : NULL);
	/* Whether the record's experiment directory was read at all (not for a record this
	 * user's labbox did not seal, unless accepted). */
	json_object_object_add(inputs, "expdir_read", json_object_new_boolean(origin != NULL));
	json_object_put(newman);
	json_object_object_add(rerun, "inputs", inputs);
	json_object_object_add(rerun, "data", data);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/rerun.json", out.run_dir);
	lb_record_write_json(path, rerun);
	json_object_object_add(out.doc, "rerun", rerun);
	json_object_put(before);
	json_object_put(after);
	if (o.json) {
		cli_json_print(out.doc);
	} else {
		cli_printf("\nlabbox: rerun of %s as %s: %s (exit %d)\n", id, out.id,
		       get_str(out.doc, "status", "?"), rc);
		if (compared == 0)
			cli_printf("  metrics match the original run: nothing to compare (no value "
				   "that is not a timing was reported by either run)");
		else if (nd == 0)
			cli_printf("  metrics match the original run: yes");
		else
			cli_printf("  metrics match the original run: NO, %zu differ", nd);
		if (nt)
			cli_printf(" (timings compared apart: %zu differ, as timings do)", nt);
		putchar('\n');
		cli_printf("  compared: %zu value%s (stdout metrics, tagged, SUMMARY and PAIRED results, "
			   "results files)", compared,
			   compared == 1 ? "" : "s");
		if (timing_compared)
			cli_printf(", and %zu timing%s apart", timing_compared,
				   timing_compared == 1 ? "" : "s");
		putchar('\n');
		for (size_t i = 0; i < nd && i < 20; i++) {
			json_object *d = json_object_array_get_idx(diffs, i);
			cli_printf("  %-40s ", get_str(d, "key", ""));
			print_val(json_object_object_get(d, "a"));
			cli_printf(" -> ");
			print_val(json_object_object_get(d, "b"));
			putchar('\n');
		}
		if (nd > 20)
			cli_printf("  ... %zu more differ (rerun.json has them all)\n", nd - 20);
		size_t no = json_object_array_length(own);
		if (no) {
			cli_printf("  equal apart from each run's own directory or id: %zu value%s "
				   "(%s",
				   no, no == 1 ? "" : "s",
				   get_str(json_object_array_get_idx(own, 0), "key", ""));
			cli_printf("%s)\n", no > 1 ? ", ..." : "");
		}
		json_object *changed = json_object_object_get(data, "changed");
		size_t nc = json_object_array_length(changed);
		int64_t nv = json_object_get_int64(json_object_object_get(data, "compared"));
		if (nc)
			cli_printf("  mounted data CHANGED since the original run: %zu of %lld volume%s\n",
				   nc, (long long)nv, nv == 1 ? "" : "s");
		else if (nv)
			cli_printf("  mounted data: the same as the original run's (%lld volume%s)\n",
				   (long long)nv, nv == 1 ? "" : "s");
		for (size_t i = 0; i < nc; i++) {
			json_object *c = json_object_array_get_idx(changed, i);
			cli_printf("    %s (%s): %s -> %s\n", get_str(c, "source", "?"),
				   get_str(c, "destination", "?"), get_str(c, "before", "none"),
				   get_str(c, "after", "none"));
		}
		size_t nl = json_object_array_length(json_object_object_get(inputs, "left_out"));
		if (!origin)
			cli_printf("  staged files: the original run's %d, from its own staged copy "
				   "(the record is not sealed by this user's labbox: %s was not read)\n",
				   json_object_object_length(files), recorded[0] ? recorded : "its experiment directory");
		else if (changed_origin)
			cli_printf("  staged files: the original run's %d, from its own staged copy "
				   "('%s' changed in %s since)\n",
				   json_object_object_length(files), changed_origin, origin);
		else
			cli_printf("  staged files: the original run's %d, from %s\n",
				   json_object_object_length(files), origin);
		if (nl) {
			cli_printf("  left out: %zu file%s added to the experiment directory since "
				   "the original run, which did not have %s:",
				   nl, nl == 1 ? "" : "s", nl == 1 ? "it" : "them");
			json_object *la = json_object_object_get(inputs, "left_out");
			for (size_t i = 0; i < nl && i < 10; i++)
				cli_printf(" %s", json_object_get_string(json_object_array_get_idx(la, i)));
			if (nl > 10)
				cli_printf(" ... (rerun.json has them all)");
			putchar('\n');
		}
		cli_printf("  run dir: %s\n", out.run_dir);
	}
done:
	if (made_tmp) {
		char *argv_rm[] = {"rm", "-rf", "--", tmp, NULL};
		lb_buf ignored = {0};
		lb_capture(argv_rm, 0, true, &ignored, NULL);
		lb_buf_free(&ignored);
	}
	free(args);
	free(metrics);
	lb_run_result_free(&out);
	lb_sandbox_free(sb);
	cli_sandbox_opts_free(&so);
	json_object_put(cell_sbj);
	json_object_put(row);
	json_object_put(old);
	json_object_put(manifest);
	return rc;
}
