/* The short account of a run that both `labbox run`'s terminal summary and the MCP tools'
 * text give: one code, so what an agent reads is what a person at the terminal reads. */
#include "labbox/collect.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* Results-file values the summary shows; the rest are counted. */
#define SUMMARY_FILE_VALUES 20

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static bool flag_of(json_object *doc, const char *key)
{
	json_object *v = member(doc, key);
	return v && json_object_get_boolean(v);
}

void lb_summary_ending(json_object *doc, char *out, size_t len)
{
	json_object *code = member(doc, "exit_code"), *sig = member(doc, "signal");
	json_object *status = member(doc, "status");
	if (code && json_object_is_type(code, json_type_int)) {
		snprintf(out, len, "exit %d", json_object_get_int(code));
		return;
	}
	/* No exit status: the experiment never exited, so no number may stand for one. */
	int s = sig && json_object_is_type(sig, json_type_int) ? json_object_get_int(sig) : 0;
	const char *by = flag_of(doc, "timed_out")    ? "ended by the time budget"
			 : flag_of(doc, "oom_killed") ? "killed by the memory limit"
			 : status && strcmp(json_object_get_string(status), "interrupted") == 0
				 ? "interrupted"
						      : NULL;
	if (by && s > 0)
		snprintf(out, len, "%s (signal %d, SIG%s); no exit status", by, s,
			 sigabbrev_np(s) ? sigabbrev_np(s) : "?");
	else if (by)
		snprintf(out, len, "%s; no exit status", by);
	else if (s > 0)
		snprintf(out, len, "killed by signal %d (SIG%s); no exit status", s,
			 sigabbrev_np(s) ? sigabbrev_np(s) : "?");
	else
		snprintf(out, len, "no exit status");
}

static void print_value(FILE *f, json_object *v)
{
	if (json_object_is_type(v, json_type_string))
		lb_show_fprintf(f, "%s", json_object_get_string(v));
	else
		lb_show_fprintf(f, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

void lb_summary_value(FILE *f, json_object *v)
{
	print_value(f, v);
}

/* The values of results files (final_info.json's means and stderrs, results.json's scalars)
 * by dotted path, bounded: the record has all of them. */
static void print_file_values(FILE *f, json_object *doc, const char *in)
{
	json_object *files = member(member(doc, "metrics"), "files");
	if (!files || !json_object_is_type(files, json_type_object))
		return;
	size_t shown = 0, total = 0;
	json_object_object_foreach(files, fname, fdoc)
	{
		json_object *flat = json_object_new_object();
		size_t dropped = 0;
		if (!flat)
			return;
		lb_results_flatten(fdoc, LB_FLATTEN_ARRAY_MAX, true, 100000, flat, &dropped);
		total += (size_t)json_object_object_length(flat) + dropped;
		const char *sep = "";
		json_object_object_foreach(flat, fk, fv)
		{
			if (shown >= SUMMARY_FILE_VALUES)
				break;
			if (!*sep)
				lb_show_fprintf(f, "%s%s: ", in, fname);
			lb_show_fprintf(f, "%s%s=", sep, fk);
			print_value(f, fv);
			sep = ", ";
			shown++;
		}
		if (*sep)
			fputc('\n', f);
		json_object_put(flat);
	}
	if (total > shown)
		lb_show_fprintf(f, "%s(+%zu more values in results files; all of them in result.json)\n", in,
			total - shown);
}

static void print_progress_source(FILE *f, json_object *doc, const char *in)
{
	json_object *m = member(doc, "metrics"), *src = member(m, "source"), *n;
	if (!src || strcmp(json_object_get_string(src), "progress") != 0)
		return;
	lb_show_fprintf(f, "%sfrom progress: no final metrics were printed; the values above are those of "
		   "its last progress line (of %d)\n", in,
		json_object_object_get_ex(m, "progress_lines", &n) ? json_object_get_int(n) : 0);
}

/* A run whose results are partial says so beside them: a completed run whose time guard
 * fired lists its conditions as a finished one would, and only the record said otherwise. */
static void print_partial(FILE *f, json_object *doc, const char *in)
{
	if (!flag_of(doc, "partial"))
		return;
	json_object *tg = member(member(doc, "metrics"), "time_guard");
	if (tg)
		lb_show_fprintf(f, "%spartial: the experiment's time guard fired (TIME_GUARD: %s): the "
			   "results above are what it had\n", in, json_object_get_string(tg));
	else
		lb_show_fprintf(f, "%spartial: the run did not finish: the results above are what it "
			   "reported before it ended\n", in);
}

/* Each message of an array of {kind, message} objects, prefixed; with_kind adds "(kind)". */
static void print_messages(FILE *f, json_object *arr, const char *in, const char *prefix,
			   const char *only_kind, bool with_kind)
{
	if (!arr || !json_object_is_type(arr, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *w = json_object_array_get_idx(arr, i);
		json_object *kind = member(w, "kind"), *msg = member(w, "message");
		const char *k = kind ? json_object_get_string(kind) : "";
		if (!msg || (only_kind && strcmp(k, only_kind) != 0))
			continue;
		lb_show_fprintf(f, "%s%s%s", in, prefix, json_object_get_string(msg));
		if (with_kind)
			lb_show_fprintf(f, " (%s)", k);
		fputc('\n', f);
	}
}

void lb_summary_details(FILE *f, json_object *doc, const char *in)
{
	print_file_values(f, doc, in);
	print_messages(f, member(doc, "metric_warnings"), in, "stale: ", "stale_file", false);
	print_progress_source(f, doc, in);
	print_partial(f, doc, in);
	print_messages(f, member(doc, "metric_issues"), in, "metric issue: ", NULL, false);
	json_object *findings = member(doc, "findings");
	if (findings && json_object_is_type(findings, json_type_array))
		for (size_t i = 0; i < json_object_array_length(findings) && i < 20; i++) {
			json_object *fi = json_object_array_get_idx(findings, i);
			json_object *file = member(fi, "file"), *line = member(fi, "line"),
				    *id = member(fi, "id"), *msg = member(fi, "message"),
				    *sev = member(fi, "severity");
			if (line && id && msg && sev)
				lb_show_fprintf(f, "%s%s:%d: %s[%s]: %s\n", in,
					file ? json_object_get_string(file) : "?",
					json_object_get_int(line), json_object_get_string(sev),
					json_object_get_string(id), json_object_get_string(msg));
		}
	print_messages(f, member(doc, "diagnosis_warnings"), in, "warning: ", NULL, true);
}
