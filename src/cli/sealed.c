/* The one way every command says that a run's record is not labbox's word. */
#include "cli.h"
#include "labbox/record.h"

#include <json-c/json.h>
#include <stdio.h>

/* Why a run's record is not labbox's word, as seal says of it (below LB_SEAL_WHOLE). */
static void seal_why(lb_record_seal seal, const char *dir, const char *id, char *why,
		     size_t whylen)
{
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
	else
		snprintf(why, whylen,
			 "run '%s' (%s) was not recorded by this user's labbox as it stands (its "
			 "manifest.json does not match the seal in its result.json: made elsewhere, "
			 "such as a .labbox/ that came with the experiment, changed since, or older "
			 "than seals); its status and metrics are only what those files say",
			 id ? id : "?", dir);
}

bool cli_run_sealed(const char *dir, const char *id, char *why, size_t whylen)
{
	lb_record_seal seal = lb_record_run_seal(dir, id);
	if (why && whylen)
		why[0] = '\0';
	if (seal == LB_SEAL_WHOLE)
		return true;
	if (why && whylen)
		seal_why(seal, dir, id, why, whylen);
	return seal == LB_SEAL_OLD_SCOPE;
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
	if (seal != LB_SEAL_WHOLE)
		seal_why(seal, dir, id, why, whylen);
	/* Not compared (no memory for the rebuilt row) is not called changed. */
	else if (lb_index_row_agrees(row, result, &agrees) == 0 && !agrees) {
		*row_differs = true;
		sealed = false;
		row_why(row, result, why, whylen);
	}
	json_object_put(result);
	return sealed;
}
