/* The --json contract: with --json, stdout carries exactly one JSON document for every
 * outcome. Commands print their own document through cli_json_print; when a command ends
 * without one (a usage error, a refusal, a setup failure, an internal error) cli_json_finish
 * prints a labbox.error/1 document naming the problem and the exit code.
 *
 * --json is found by scanning argv the way the command's getopt will (cli_json_begin), before
 * parsing, because a bad flag or a missing value stops getopt before it reaches a --json
 * written after it. */
#include "cli.h"
#include "labbox/record.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_MAX_MESSAGES 16

static struct {
	const char *cmd;  /* the command whose --json was seen; NULL: not in JSON mode */
	bool printed;     /* a document went to stdout already */
	char messages[CLI_MAX_MESSAGES][1024];
	size_t nmessages;
	int out_err; /* a direct write of the answer to stdout failed: its errno */
} js;

/* The long option argv[i] names: an exact match, else a unique prefix (as getopt_long). */
static const struct option *find_long(const struct option *longopts, const char *name, size_t len)
{
	const struct option *hit = NULL;
	for (const struct option *o = longopts; o && o->name; o++) {
		if (strncmp(o->name, name, len) != 0)
			continue;
		if (strlen(o->name) == len)
			return o;
		if (hit)
			return NULL; /* ambiguous: getopt refuses it, so no option */
		hit = o;
	}
	return hit;
}

static bool short_takes_value(const char *shortopts, char c)
{
	const char *p = shortopts ? strchr(shortopts, c) : NULL;
	return p && c != ':' && c != '+' && p[1] == ':';
}

bool cli_argv_has_json(int argc, char **argv, const char *shortopts,
		       const struct option *longopts, bool stop_at_operand)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			return false;
		if (a[0] != '-' || a[1] == '\0') {
			if (stop_at_operand)
				return false; /* getopt's "+": the rest belongs to the command */
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2;
			const char *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			const struct option *o = find_long(longopts, name, len);
			if (!o)
				continue;
			if (strcmp(o->name, "json") == 0)
				return true;
			if (o->has_arg == required_argument && !eq)
				i++; /* its value, whatever it looks like */
			continue;
		}
		/* A cluster of short options: the first one taking a value ends it. */
		for (const char *c = a + 1; *c; c++)
			if (short_takes_value(shortopts, *c)) {
				if (c[1] == '\0')
					i++;
				break;
			}
	}
	return false;
}

void cli_json_begin(const char *cmd, int argc, char **argv, const char *shortopts,
		    const struct option *longopts, bool stop_at_operand)
{
	if (cli_argv_has_json(argc, argv, shortopts, longopts, stop_at_operand))
		cli_json_set(cmd);
}

void cli_json_set(const char *cmd)
{
	js.cmd = cmd;
}

bool cli_json_active(void)
{
	return js.cmd != NULL;
}

void cli_json_note(const char *msg)
{
	if (js.nmessages < CLI_MAX_MESSAGES)
		snprintf(js.messages[js.nmessages++], sizeof js.messages[0], "%s", msg);
}

bool cli_json_indented(void)
{
	return isatty(STDOUT_FILENO) == 1;
}

void cli_json_print(struct json_object *doc)
{
	if (js.printed) {
		/* One document: a second one would break every reader; it goes to stderr. */
		fprintf(stderr, "%s\n", lb_record_json_text(doc));
		return;
	}
	printf("%s\n", lb_record_json_text_as(doc, cli_json_indented()));
	if (fflush(stdout) != 0)
		cli_out_failed(errno); /* said at the end (cli_out_finish), with why */
	js.printed = true;
}

static const char *status_for(int rc)
{
	switch (rc) {
	case 0: return "ok";
	case CLI_EXIT_USAGE: return "usage_error";
	case 125: return "infra_error";
	case 126: return "cannot_execute";
	case 127: return "not_found";
	case 128 + 1: /* SIGHUP */
	case 128 + 2: /* SIGINT */
	case 128 + 15: return "interrupted"; /* SIGTERM: labbox was asked to stop */
	default: return "error";
	}
}

static bool is_warning(const char *m)
{
	return strncmp(m, "warning: ", 9) == 0;
}

struct json_object *cli_json_error_doc(const char *cmd, int rc)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", json_object_new_string("labbox.error/1"));
	json_object_object_add(doc, "command", json_object_new_string(cmd));
	json_object_object_add(doc, "status", json_object_new_string(status_for(rc)));
	json_object_object_add(doc, "exit_code", json_object_new_int(rc));
	json_object *err = json_object_new_object();
	/* The first error is the cause; what follows is consequence or context. */
	const char *msg = NULL;
	json_object *all = json_object_new_array(), *warnings = json_object_new_array();
	for (size_t i = 0; i < js.nmessages; i++) {
		const char *m = js.messages[i];
		if (is_warning(m)) {
			json_object_array_add(warnings, json_object_new_string(m + 9));
			continue;
		}
		if (!msg)
			msg = m;
		json_object_array_add(all, json_object_new_string(m));
	}
	json_object_object_add(err, "message",
			       json_object_new_string(msg ? msg
							  : rc == 0 ? "no document was produced"
								    : "labbox failed without a message"));
	json_object_object_add(err, "messages", all);
	json_object_object_add(doc, "error", err);
	json_object_object_add(doc, "warnings", warnings);
	return doc;
}

int cli_json_finish(int rc)
{
	if (!js.cmd || js.printed)
		return rc;
	json_object *doc = cli_json_error_doc(js.cmd, rc);
	cli_json_print(doc);
	json_object_put(doc);
	return rc;
}

void cli_out_failed(int err)
{
	if (!js.out_err)
		js.out_err = err ? err : EIO;
}

int cli_out_finish(int rc, bool closed)
{
	/* fclose reports what fflush does and what only the close itself can (NFS, a quota). */
	int err = js.out_err;
	if (ferror(stdout) && !err)
		err = EIO;
	errno = 0;
	if (fclose(stdout) != 0 && !err)
		err = errno ? errno : EIO;
	if (!err)
		return rc;
	/* Written into nothing, the answer is lost: a caller must not take exit 0 for it.
	 * A run is recorded all the same (the answer is printed after its records). */
	if (closed)
		fprintf(stderr, "labbox: standard output is closed: the answer was not written\n");
	else
		fprintf(stderr, "labbox: cannot write the answer to standard output: %s\n",
			strerror(err));
	return rc == 0 ? CLI_EXIT_OUTPUT : rc;
}
