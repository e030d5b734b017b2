/* The one way every command says that a run's record is not labbox's word. */
#include "cli.h"
#include "labbox/record.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

const char *cli_unsealed_reason(const char *dir, const char *row_status, char *detail,
				size_t len)
{
	char none[8];
	if (!detail) {
		detail = none;
		len = sizeof none;
	}
	switch (lb_record_run_unsealed(dir, detail, len)) {
	case LB_UNSEALED_UNREADABLE:
		return "unreadable";
	case LB_UNSEALED_UNFINISHED:
		/* The index reads a row whose labbox is gone as interrupted (reap_stale): a row
		 * still "running" has its labbox at work. */
		return row_status && strcmp(row_status, "running") == 0 ? "running" : "unfinished";
	case LB_UNSEALED_FOREIGN:
		break;
	}
	return "foreign";
}

/* Why a run's record is not labbox's word, as seal says of it (below LB_SEAL_WHOLE);
 * row_status is the index's, when the caller has the row. */
static void seal_why(lb_record_seal seal, const char *dir, const char *id, const char *row_status,
		     char *why, size_t whylen)
{
	char detail[512];
	const char *reason = seal == LB_SEAL_NONE
				     ? cli_unsealed_reason(dir, row_status, detail, sizeof detail)
				     : "";
	if (seal == LB_SEAL_OLD_SCOPE)
		snprintf(why, whylen,
			 "run '%s' (%s) was sealed by an older labbox, whose seal covers its "
			 "manifest.json only: its result.json (status, metrics) is not covered, so "
			 "they are only what that file says",
			 id ? id : "?", dir);
	else if (seal == LB_SEAL_RESULT_CHANGED)
		snprintf(why, whylen,
			 "run '%s' (%s) does not stand as this user's labbox recorded it (its "
			 "result.json does not match the seal it was written with: changed since); "
			 "its status and metrics are only what that file says",
			 id ? id : "?", dir);
	else if (strcmp(reason, "unreadable") == 0)
		snprintf(why, whylen,
			 "run '%s' (%s) has no readable record: %s (damaged: a write cut short, or "
			 "changed since); its status and metrics are only what the run index says",
			 id ? id : "?", dir, detail);
	else if (strcmp(reason, "running") == 0)
		snprintf(why, whylen,
			 "run '%s' (%s) is still running: labbox seals its record when it ends; "
			 "until then its status and metrics are only what its files say",
			 id ? id : "?", dir);
	else if (strcmp(reason, "unfinished") == 0)
		snprintf(why, whylen,
			 "run '%s' (%s) never finished its record: %s and it has no seal, %s; its "
			 "status and metrics are only what its files say",
			 id ? id : "?", dir, detail,
			 row_status ? "as its labbox ended before it sealed it (killed, or the "
				      "machine went down)"
				    : "as the run is still running (labbox seals a record when it "
				      "ends) or its labbox ended before it sealed it (killed)");
	else
		snprintf(why, whylen,
			 "run '%s' (%s) was not recorded by this user's labbox as it stands (its "
			 "manifest.json does not match the seal in its result.json: made elsewhere, "
			 "such as a .labbox/ that came with the experiment, changed since, or older "
			 "than seals); its status and metrics are only what those files say",
			 id ? id : "?", dir);
}

bool cli_run_sealed_as(const char *dir, const char *id, const char *row_status, char *why,
		       size_t whylen)
{
	lb_record_seal seal = lb_record_run_seal(dir, id);
	if (why && whylen)
		why[0] = '\0';
	if (seal == LB_SEAL_WHOLE)
		return true;
	if (why && whylen)
		seal_why(seal, dir, id, row_status, why, whylen);
	return seal == LB_SEAL_OLD_SCOPE;
}

bool cli_run_sealed(const char *dir, const char *id, char *why, size_t whylen)
{
	return cli_run_sealed_as(dir, id, NULL, why, whylen);
}

const char *cli_seal_scope(lb_record_seal seal)
{
	return seal == LB_SEAL_WHOLE	   ? "manifest.json+result.json"
	       : seal == LB_SEAL_OLD_SCOPE ? "manifest.json"
					   : NULL;
}

lb_record_seal cli_row_seal(json_object *row, bool *row_differs)
{
	json_object *v, *result = NULL;
	const char *dir = json_object_object_get_ex(row, "run_dir", &v) && v
				  ? json_object_get_string(v) : "";
	const char *id = json_object_object_get_ex(row, "id", &v) && v
				 ? json_object_get_string(v) : "";
	lb_record_seal seal = lb_record_run_seal_read(dir, id, &result);
	bool agrees = true;
	*row_differs = false;
	int r = seal == LB_SEAL_WHOLE ? lb_index_row_agrees(row, result, &agrees) : 0;
	if (r < 0 || !agrees) {
		/* Not compared (no memory for the rebuilt row) is not shown as sealed either,
		 * nor called changed. */
		*row_differs = r == 0;
		seal = LB_SEAL_NONE;
	}
	json_object_put(result);
	return seal;
}

/* cli_row_seal_why with the sealed result.json already read (NULL: none). */
static void row_why(json_object *row, json_object *res, char *why, size_t whylen)
{
	json_object *v, *info;
	const char *dir = json_object_object_get_ex(row, "run_dir", &v) && v
				  ? json_object_get_string(v) : "";
	/* A run whose labbox could not write its end into the index said so in its sealed
	 * result.json: quoted, rather than "changed". */
	if (res && json_object_object_get_ex(res, "index", &info) &&
	    json_object_object_get_ex(info, "error", &v) && v) {
		snprintf(why, whylen,
			 "run '%s' (%s): its row in the run index is not its record: its sealed "
			 "result.json says \"%.300s\"; the status and metrics shown are only what "
			 "the index says, `labbox runs show ID --json` gives result.json's",
			 json_object_object_get_ex(row, "id", &v) && v ? json_object_get_string(v) : "?",
			 dir, json_object_get_string(json_object_object_get(info, "error")));
		return;
	}
	snprintf(why, whylen,
		 "run '%s' (%s): its row in the run index differs from its sealed result.json (the "
		 "index is not sealed: it was changed, or not brought up to date when the run "
		 "ended); the status and metrics shown are only what the index says, `labbox runs "
		 "show ID --json` gives result.json's",
		 json_object_object_get_ex(row, "id", &v) && v ? json_object_get_string(v) : "?",
		 json_object_object_get_ex(row, "run_dir", &v) && v ? json_object_get_string(v)
								     : "?");
}

void cli_row_seal_why(json_object *row, char *why, size_t whylen)
{
	json_object *v, *res = NULL;
	const char *dir = json_object_object_get_ex(row, "run_dir", &v) && v
				  ? json_object_get_string(v) : "";
	if (lb_record_run_seal_read(dir, NULL, &res) != LB_SEAL_WHOLE) {
		json_object_put(res);
		res = NULL;
	}
	row_why(row, res, why, whylen);
	json_object_put(res);
}

bool cli_row_sealed(json_object *row, bool *row_differs, char *why, size_t whylen)
{
	json_object *v, *result = NULL;
	const char *dir = json_object_object_get_ex(row, "run_dir", &v) && v
				  ? json_object_get_string(v) : "";
	const char *id = json_object_object_get_ex(row, "id", &v) && v
				 ? json_object_get_string(v) : "";
	lb_record_seal seal = lb_record_run_seal_read(dir, id, &result);
	bool agrees = true, sealed = seal >= LB_SEAL_OLD_SCOPE;
	*row_differs = false;
	why[0] = '\0';
	if (seal != LB_SEAL_WHOLE) {
		json_object *st = json_object_object_get_ex(row, "status", &v) ? v : NULL;
		seal_why(seal, dir, id, st ? json_object_get_string(st) : NULL, why, whylen);
	}
	/* Not compared (no memory for the rebuilt row) is not called changed. */
	else if (lb_index_row_agrees(row, result, &agrees) == 0 && !agrees) {
		*row_differs = true;
		sealed = false;
		row_why(row, result, why, whylen);
	}
	json_object_put(result);
	return sealed;
}
