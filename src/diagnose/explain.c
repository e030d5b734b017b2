/* The diagnosis of a recorded run, as `labbox explain` prints it: what result.json says, and
 * for a run recorded before the diagnosis had confidence, frames and escalation, the same
 * diagnosis made again from its run.log. */
#include "labbox/diagnose.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What labbox run reads of the log's end (src/run/run.c TAIL_FOR_DIAGNOSIS, and
 * TAIL_FOR_TIMEOUT for a timeout), so the diagnosis made again reads the same bytes. */
#define EXPLAIN_TAIL 6144
#define EXPLAIN_TAIL_TIMEOUT LB_RUNLOG_RECENT

static json_object *get(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v)
		       ? v
		       : NULL;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* The last want bytes of run_dir/run.log; NULL (and *len 0) when there is none. */
static char *log_tail(const char *run_dir, size_t want, size_t *len)
{
	char path[PATH_MAX];
	*len = 0;
	if (snprintf(path, sizeof path, "%s/run.log", run_dir) >= (int)sizeof path)
		return NULL;
	LB_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	off_t from = st.st_size > (off_t)want ? st.st_size - (off_t)want : 0;
	char *buf = malloc(want + 1);
	if (!buf)
		return NULL;
	ssize_t n = pread(fd, buf, want, from);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* Failures labbox itself decided (an interrupted run, the disk limit, a record it could not
 * write): the log says nothing about them, so they are not made again from it. */
static bool decided_by_labbox(json_object *result, json_object *failure)
{
	const char *status = get_str(result, "status"), *cls = get_str(failure, "class");
	json_object *ie = get(result, "infra_error");
	return strcmp(status, "interrupted") == 0 || strcmp(cls, "interrupted") == 0 ||
	       strcmp(status, "disk_limit") == 0 || strcmp(status, "rejected") == 0 ||
	       (ie && strcmp(get_str(ie, "step"), "record") == 0);
}

static int int_or(json_object *o, const char *key, int dflt)
{
	json_object *v = get(o, key);
	return v ? json_object_get_int(v) : dflt;
}

static json_object *rediagnose(const char *run_dir, json_object *result, json_object *manifest)
{
	size_t len;
	bool timed_out = json_object_get_boolean(get(result, "timed_out"));
	LB_AUTOFREE char *tail =
		log_tail(run_dir, timed_out ? EXPLAIN_TAIL_TIMEOUT : EXPLAIN_TAIL, &len);
	char exp_dir[PATH_MAX];
	json_object *ie = get(result, "infra_error");
	const char *lang = get_str(get(manifest, "interpreter"), "language");
	snprintf(exp_dir, sizeof exp_dir, "%s/exp", run_dir);
	lb_failure_input in = {
		.log_tail = tail,
		.log_tail_len = len,
		.exit_code = int_or(result, "exit_code", -1),
		.signal = int_or(result, "signal", 0),
		.timed_out = timed_out,
		.oom_killed = json_object_get_boolean(get(result, "oom_killed")),
		.oom_counted = json_object_get_boolean(get(result, "oom_counted")),
		.infra_error = strcmp(get_str(result, "status"), "infra_error") == 0,
		.infra_message = ie ? get_str(ie, "message") : NULL,
		.language = lang[0] && strcmp(lang, "python") != 0 ? lang : NULL,
		.after_run = ie && (strcmp(get_str(ie, "step"), "disk_merge") == 0 ||
				    strcmp(get_str(ie, "step"), "fetch") == 0),
		.exp_dir = exp_dir,
		.runtime_gate = get(result, "runtime_gate"),
	};
	/* As the run read it: an uncaught exception of the main program, or the gate's word that
	 * none ended it (which makes a non-zero exit the program's own). */
	json_object *lasts = get(result, "last_lines"), *lo = get(lasts, "stdout"),
		    *le = get(lasts, "stderr");
	if (lo && json_object_is_type(lo, json_type_string))
		in.stdout_last = json_object_get_string(lo);
	if (le && json_object_is_type(le, json_type_string))
		in.stderr_last = json_object_get_string(le);
	json_object *unc = get(in.runtime_gate, "uncaught");
	if (unc && json_object_is_type(unc, json_type_object))
		in.uncaught = unc;
	lb_diagnose_grants(&in, get(get(manifest, "config"), "sandbox"));
	json_object *res = get(result, "resources"), *wall = get(res, "wall_s"),
		    *user = get(res, "cpu_user_s"), *sys = get(res, "cpu_sys_s");
	if (wall && user && json_object_get_double(wall) > 0) {
		in.wall_s = json_object_get_double(wall);
		in.cpu_s = json_object_get_double(user) + (sys ? json_object_get_double(sys) : 0);
		in.cpu_known = in.cpu_s > 0; /* 0: a backend that did not measure it */
	}
	/* The manifest's machine is the one that ran the code for a local run only; its device
	 * nodes are what --gpus could have given (older manifests do not say: not known). */
	json_object *machine = get(manifest, "machine"), *nodes = get(machine, "gpu_device_nodes");
	const char *backend = get_str(get(result, "backend"), "name");
	in.machine_without_gpus = (!backend[0] || strcmp(backend, "local") == 0) && nodes &&
				  json_object_is_type(nodes, json_type_int) &&
				  json_object_get_int(nodes) == 0;
	/* A local run's volumes and root were this host's: the uid it ran as (isolation.uid)
	 * against the owner of its run directory (labbox's own uid then) says whether it ran as
	 * another uid, whose right to write a volume's SRC is then read as SRC is now. */
	json_object *iso_uid = get(get(result, "isolation"), "uid"),
		    *iso_gid = get(get(result, "isolation"), "gid");
	struct stat rst;
	if ((!backend[0] || strcmp(backend, "local") == 0) && iso_uid &&
	    json_object_is_type(iso_uid, json_type_int) && stat(run_dir, &rst) == 0) {
		in.host_root = true;
		in.payload_uid = (unsigned)json_object_get_int(iso_uid);
		in.payload_gid = iso_gid ? (unsigned)json_object_get_int(iso_gid) : in.payload_uid;
		in.payload_other_uid = in.payload_uid != (unsigned)rst.st_uid;
	}
	json_object *mem = get(machine, "memory_total_bytes");
	if (mem && json_object_get_int64(mem) > 0)
		in.machine_memory = (unsigned long long)json_object_get_int64(mem);
	/* An exit status of 0 with a failure recorded (metrics invalid, a gate refusal the code
	 * caught) still asks for the diagnosis of what the log shows. */
	if (in.exit_code == 0 && !in.signal && !in.timed_out && !in.oom_killed && !in.infra_error)
		in.exit_code = 1;
	return lb_diagnose_failure(&in);
}

/* The recorded failure with what this labbox adds: confidence, frames, escalation. source
 * says where the diagnosis came from. */
static json_object *explain_failure(const char *run_dir, json_object *result,
				    json_object *manifest, const char **source)
{
	json_object *rec = get(result, "failure"), *out = NULL;
	static const char *const added[] = {"confidence", "confidence_reason", "location",
					    "code_location", "escalation", "exception"};
	if (!rec || !json_object_is_type(rec, json_type_object)) {
		*source = "result.json";
		return NULL;
	}
	if (json_object_deep_copy(rec, &out, NULL) < 0)
		return NULL;
	if (get(rec, "confidence")) {
		*source = "result.json";
		return out;
	}
	if (decided_by_labbox(result, rec)) {
		*source = "result.json (labbox decided it; confidence added)";
		json_object_object_add(out, "confidence", json_object_new_string("high"));
		json_object_object_add(out, "confidence_reason",
				       json_object_new_string("labbox decided it itself"));
		if (!get(out, "code_location"))
			json_object_object_add(out, "code_location", NULL);
		lb_diagnose_escalation(out, NULL);
		return out;
	}
	json_object *again = rediagnose(run_dir, result, manifest);
	if (again && strcmp(get_str(again, "class"), get_str(rec, "class")) == 0) {
		*source = "result.json, with confidence, frames and escalation made again from run.log";
		for (size_t i = 0; i < sizeof added / sizeof *added; i++) {
			json_object *v;
			if (!json_object_object_get_ex(out, added[i], NULL) &&
			    json_object_object_get_ex(again, added[i], &v))
				json_object_object_add(out, added[i], v ? json_object_get(v) : NULL);
		}
		/* The escalation may have named its flag in the suggestion. */
		json_object_object_add(out, "suggestion",
				       json_object_get(get(again, "suggestion")));
		json_object_put(again);
		return out;
	}
	if (again) {
		/* This labbox reads the log differently than the one that recorded the run: its
		 * reading is shown, the recorded class kept beside it. */
		*source = "made again from run.log (the recorded class differs)";
		json_object_object_add(again, "recorded_class",
				       json_object_new_string(get_str(rec, "class")));
		json_object_object_add(again, "recorded_summary",
				       json_object_new_string(get_str(rec, "summary")));
		json_object_put(out);
		return again;
	}
	*source = "result.json";
	return out;
}

int lb_diagnose_explain(const char *run_dir, struct json_object *result,
			struct json_object *manifest, struct json_object **out)
{
	static const char *const keys[] = {"id",	     "status",	      "exit_code",
					   "signal",	     "timed_out",     "oom_killed",
					   "run_dir",	     "findings",      "metric_issues",
					   "metric_warnings", "check",	      "diagnosis_warnings",
					   "metrics",	     "needs",	      "runtime_gate"};
	if (!run_dir || !result || !out || !json_object_is_type(result, json_type_object))
		return -EINVAL;
	json_object *doc = json_object_new_object();
	if (!doc)
		return -ENOMEM;
	json_object_object_add(doc, "schema", json_object_new_string("labbox.explain/1"));
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_object *v;
		if (json_object_object_get_ex(result, keys[i], &v))
			json_object_object_add(doc, keys[i], v ? json_object_get(v) : NULL);
	}
	/* A run recorded before needs existed has none recorded: [] would say it needs nothing. */
	if (!json_object_object_get_ex(result, "needs", NULL))
		json_object_object_add(doc, "needs", NULL);
	const char *source = "result.json";
	json_object *failure = explain_failure(run_dir, result, manifest, &source);
	json_object_object_add(doc, "failure", failure);
	json_object_object_add(doc, "diagnosis_source",
			       failure ? json_object_new_string(source) : NULL);
	*out = doc;
	return 0;
}
