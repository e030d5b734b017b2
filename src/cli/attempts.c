/* The flags of labbox run's attempts (--escalate, --repair-cmd, --max-repairs, --apply) and
 * the lines the summary gives them; the loop itself is the library's (src/run/attempts.c). */
#include "cli.h"
#include "labbox/diagnose.h"
#include "labbox/run.h"
#include "labbox/util.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* --escalate, --repair-cmd, --max-repairs, --apply: 0, or -1 after printing the error. */
int cli_attempts_opt(int opt, const char *arg, lb_attempts_config *ac, bool *max_set)
{
	char err[256];
	long n;
	switch (opt) {
	case OPT_ESCALATE:
		if (lb_escalate_parse(arg, &ac->escalate, err, sizeof err) < 0) {
			cli_error("run", "%s", err);
			return -1;
		}
		return 0;
	case OPT_REPAIR_CMD:
		if (!arg[0] || strspn(arg, " \t") == strlen(arg)) {
			cli_error("run", "--repair-cmd needs a command");
			return -1;
		}
		ac->repair_cmd = arg;
		return 0;
	case OPT_MAX_REPAIRS:
		if (lb_parse_long(arg, &n) < 0 || n < 1 || n > 100) {
			cli_error("run", "--max-repairs '%s' is not a number of repairs from 1 to 100", arg);
			return -1;
		}
		ac->max_repairs = (unsigned)n;
		*max_set = true;
		return 0;
	case OPT_APPLY:
		ac->apply = true;
		return 0;
	}
	return 0;
}

/* The attempts of --escalate and --repair-cmd, one line each, and how the loop ended. */
void cli_print_attempts(FILE *f, json_object *doc)
{
	json_object *atts, *v;
	if (!json_object_object_get_ex(doc, "attempts", &atts) || json_object_array_length(atts) < 2)
		goto repair;
	for (size_t i = 0; i < json_object_array_length(atts); i++) {
		json_object *a = json_object_array_get_idx(atts, i);
		lb_show_fprintf(f, "  attempt %zu: %s %s (exit %d)", i + 1,
			json_object_get_string(json_object_object_get(a, "id")),
			json_object_get_string(json_object_object_get(a, "status")),
			json_object_get_int(json_object_object_get(a, "labbox_exit_code")));
		if (json_object_object_get_ex(a, "why", &v) && v)
			lb_show_fprintf(f, ": %s", json_object_get_string(v));
		fputc('\n', f);
	}
repair:;
	json_object *esc, *dec;
	if (json_object_object_get_ex(doc, "escalation", &esc) &&
	    json_object_object_get_ex(esc, "declined", &dec))
		for (size_t i = 0; i < json_object_array_length(dec); i++) {
			json_object *d = json_object_array_get_idx(dec, i);
			lb_show_fprintf(f, "  not escalated (%s): %s\n",
				json_object_get_string(json_object_object_get(d, "escalation")),
				json_object_get_string(json_object_object_get(d, "reason")));
		}
	json_object *rp;
	if (!json_object_object_get_ex(doc, "repair", &rp))
		return;
	int n = json_object_get_int(json_object_object_get(rp, "attempts"));
	bool fixed = json_object_get_boolean(json_object_object_get(rp, "fixed"));
	json_object *reason = json_object_object_get(rp, "reason");
	json_object *note = json_object_object_get(rp, "apply_note");
	json_object *dir = json_object_object_get(rp, "dir");
	lb_show_fprintf(f, "  repair: %d repair%s, %s%s%s\n", n, n == 1 ? "" : "s",
		fixed ? "fixed" : n == 0 && !reason ? "none needed" : "gave up",
		reason ? ": " : "", reason ? json_object_get_string(reason) : "");
	if (note)
		lb_show_fprintf(f, "  repair: %s\n", json_object_get_string(note));
	if (dir && n > 0)
		lb_show_fprintf(f, "  repairs: %s\n", json_object_get_string(dir));
}

