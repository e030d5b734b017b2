/* The attempts of one `labbox run`: the first run, then one more while a failure is one the
 * user's standing permission (--escalate) lifts, or one the repair command (--repair-cmd) may
 * fix. Each attempt is a whole run of its own (run.c); this file decides whether there is a
 * next one, prepares it, and records all of them in the last one's result.json. */
#include "attempts_internal.h"
#include "labbox/diagnose.h"
#include "labbox/record.h"
#include "labbox/run.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


typedef struct loop_state {
	const lb_run_request *req;
	const lb_attempts_config *ac;
	lb_attempt_grant grant;
	unsigned tried;	       /* escalations considered once already */
	unsigned last_want;    /* the escalation the next attempt is for */
	json_object *attempts; /* result.json's attempts */
	json_object *declined; /* escalations permitted but not made, and why */
	json_object *repairs;  /* what each repair command did */
	char source[PATH_MAX]; /* what the next attempt stages: the experiment or a repair's copy */
	char loop_dir[PATH_MAX]; /* RUNS_DIR/.repair-ID: the copies and records while it runs */
	char first_id[64];
	unsigned nrepairs;
	bool gave_up;
	char reason[1024];
	bool applied;
	char apply_note[512];
} loop_state;

static json_object *get(json_object *o, const char *k)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *get_str(json_object *o, const char *k, const char *def)
{
	json_object *v = get(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : def;
}

static json_object *escalation_names(unsigned mask)
{
	json_object *a = json_object_new_array();
	for (unsigned bit = 1; bit <= LB_ESCALATE_MEMORY; bit <<= 1)
		if (mask & bit)
			json_object_array_add(a, json_object_new_string(lb_escalate_name(bit)));
	return a;
}

/* The flags an attempt ran with, from its sandbox record: what escalation changes. */
static json_object *flags_of(json_object *sandbox_config)
{
	json_object *f = json_object_new_object();
	static const char *const keys[] = {"network", "memory_bytes", "gpus"};
	for (size_t i = 0; i < 3; i++)
		json_object_object_add(f, keys[i], json_object_get(get(sandbox_config, keys[i])));
	return f;
}

static void add_attempt(loop_state *s, const lb_run_result *out, json_object *sandbox_config,
			const char *trigger, const char *why)
{
	json_object *a = json_object_new_object();
	json_object *doc = out->doc;
	json_object *fail = get(doc, "failure");
	json_object_object_add(a, "attempt",
			       json_object_new_int((int)json_object_array_length(s->attempts) + 1));
	json_object_object_add(a, "id", json_object_new_string(out->id));
	json_object_object_add(a, "run_dir", json_object_new_string(out->run_dir ? out->run_dir : ""));
	json_object_object_add(a, "status", json_object_new_string(get_str(doc, "status", "?")));
	json_object_object_add(a, "labbox_exit_code", json_object_new_int(out->exit_code));
	json_object_object_add(a, "failure_class",
			       fail ? json_object_get(get(fail, "class")) : NULL);
	json_object_object_add(a, "escalated", escalation_names(s->grant.escalated));
	json_object *flags = flags_of(sandbox_config);
	const char *env = s->grant.escalated & LB_ESCALATE_ENV ? "auto" : s->req->env;
	json_object_object_add(flags, "env", env ? json_object_new_string(env) : NULL);
	json_object_object_add(a, "flags", flags);
	char src[32] = "experiment";
	if (s->nrepairs)
		run_fmt(src, sizeof src, "repair %u", s->nrepairs);
	json_object_object_add(a, "source", json_object_new_string(src));
	json_object_object_add(a, "trigger", trigger ? json_object_new_string(trigger) : NULL);
	json_object_object_add(a, "why", why ? json_object_new_string(why) : NULL);
	json_object_array_add(s->attempts, a);
}

static void decline(loop_state *s, unsigned bit, const char *reason)
{
	json_object *d = json_object_new_object();
	json_object_object_add(d, "escalation", json_object_new_string(lb_escalate_name(bit)));
	json_object_object_add(d, "reason", json_object_new_string(reason));
	json_object_array_add(s->declined, d);
}

/* One attempt: the pipeline on s->source with sb and its record. */
static int run_attempt(loop_state *s, lb_sandbox *sb, json_object *sandbox_config,
		       lb_run_result *out)
{
	lb_run_request req = *s->req;
	req.sandbox_config = sandbox_config;
	if (s->grant.escalated & LB_ESCALATE_ENV) {
		/* The environment --env auto finds in place of the interpreter that lacked it. */
		req.env = "auto";
		req.python = NULL;
	}
	char real[PATH_MAX];
	if (strcmp(s->source, s->req->expdir) != 0) {
		req.expdir = s->source;
		/* The manifest names the experiment, not the repair's copy (which goes). */
		req.origin_expdir = s->req->origin_expdir ? s->req->origin_expdir
				    : realpath(s->req->expdir, real) ? real : s->req->expdir;
	}
	return lb_run_mode(sb, &req, out);
}

/* Whether the permissions lift the failure of the attempt in out: a grant for the next
 * attempt, its sandbox built, and why; false with the reason recorded when not. */
static bool escalate(loop_state *s, json_object *cur_config, const lb_run_result *out,
		     lb_sandbox **sb, json_object **config, char *why, size_t whylen)
{
	json_object *fail = get(out->doc, "failure");
	unsigned want = lb_escalate_for_failure(fail) & s->ac->escalate & ~s->tried;
	if (!want)
		return false;
	const char *net = get_str(cur_config, "network", "none");
	/* A socket on this machine alone is granted a private loopback first; the host's
	 * network stays permitted for a later attempt that needs more (none, loopback, host:
	 * at most two network attempts, as loopback refuses no socket). */
	bool loopback = want == LB_ESCALATE_NETWORK && strcmp(net, "none") == 0 &&
			strcmp(get_str(get(fail, "escalation"), "flag", ""), "--network loopback") == 0;
	if (!loopback)
		s->tried |= want;
	lb_attempt_grant g = s->grant;
	g.escalated |= want;
	g.network_loopback = loopback;
	json_object *mem = get(cur_config, "memory_bytes");
	const char *gpus = get_str(cur_config, "gpus", "none");
	char reason[512];
	if (want == LB_ESCALATE_NETWORK && strcmp(net, "host") == 0) {
		decline(s, want, "the run already had the host network");
		return false;
	}
	/* The class `network` is read from the program's output, which the program writes: a
	 * URLError line printed by code that never opened a socket would otherwise buy it the
	 * host network. A private loopback reaches nothing outside the run: its grant needs no
	 * more. Under one the gate judges no socket, so the host network is not granted after
	 * it on the program's word alone. */
	if (want == LB_ESCALATE_NETWORK && !loopback && strcmp(net, "loopback") == 0) {
		decline(s, want, "the attempt ran with a private loopback network, under which labbox "
				 "sees none of the run's sockets, so nothing it saw shows a need for "
				 "the host network: grant it with --network host if the code needs it");
		return false;
	}
	if (want == LB_ESCALATE_NETWORK && !loopback &&
	    lb_gate_saw_no_socket(get(out->doc, "runtime_gate"))) {
		decline(s, want, "labbox saw no network attempt: the runtime gate, which records "
				 "every socket the run's Python interpreters open or connect, recorded "
				 "none, so the class was read from the program's output alone (a "
				 "library's native client is not seen there: grant the network with "
				 "--network host if the code needs it)");
		return false;
	}
	if (want == LB_ESCALATE_MEMORY) {
		if (!mem) {
			decline(s, want, "the run had no --memory limit of labbox's to raise");
			return false;
		}
		/* The diagnosis sizes it (escalation.flag "--memory SIZE"): twice the limit, the
		 * limit and one allocation that alone asked for more, never past the machine's
		 * memory; no escalation where the limit already was all the machine has. */
		json_object *esc = get(fail, "escalation");
		if (!esc || strcmp(get_str(esc, "grants", ""), "memory") != 0) {
			decline(s, want, "the run's memory limit was already as much as this machine "
					 "has: no --memory gives more");
			return false;
		}
		g.memory_bytes = 2 * (uint64_t)json_object_get_int64(mem);
		const char *flag = get_str(esc, "flag", "");
		uint64_t asked = 0;
		if (strncmp(flag, "--memory ", 9) == 0 && lb_parse_size(flag + 9, &asked) == 0 &&
		    asked > (uint64_t)json_object_get_int64(mem))
			g.memory_bytes = asked;
	}
	if (want == LB_ESCALATE_GPUS && strcmp(gpus, "none") != 0) {
		run_fmt(reason, sizeof reason, "the run already had GPUs (--gpus %s)", gpus);
		decline(s, want, reason);
		return false;
	}
	json_object *envb = get(out->doc, "environment");
	if (want == LB_ESCALATE_ENV && (s->req->env || envb)) {
		run_fmt(reason, sizeof reason, "the run's environment was already chosen (%s %s)",
		    s->req->env ? "--env" : "labbox.yaml's env:",
		    s->req->env ? s->req->env : get_str(envb, "asked", "auto"));
		decline(s, want, reason);
		return false;
	}
	char err[512] = "";
	int r = s->ac->sandbox(s->ac->sandbox_ctx, &g, sb, config, err, sizeof err);
	if (r < 0) {
		run_fmt(reason, sizeof reason, "%s%s", want == LB_ESCALATE_GPUS && r == -ENODEV
			 ? "this host has no GPU to give it: " : "", err[0] ? err : strerror(-r));
		decline(s, want, reason);
		return false;
	}
	uint64_t twice = mem ? 2 * (uint64_t)json_object_get_int64(mem) : 0;
	bool sized = want == LB_ESCALATE_MEMORY && mem && g.memory_bytes != twice;
	static const char *const what[] = {"the host network", "the host's GPUs",
					   "the environment --env auto finds", "twice the memory",
					   "a private loopback network"};
	unsigned idx = loopback ? 4 : want == LB_ESCALATE_NETWORK ? 0 : want == LB_ESCALATE_GPUS ? 1
		       : want == LB_ESCALATE_ENV ? 2 : 3;
	run_fmt(why, whylen, "attempt %zu failed for %s (%s); --escalate %s permits %s",
		 json_object_array_length(s->attempts), get_str(fail, "class", "?"),
		 get_str(fail, "summary", ""), lb_escalate_name(want),
		 !sized ? what[idx] : g.memory_bytes > twice
		 ? "the memory the failed allocation needs beside the limit"
		 : "as much memory as this machine has, less than twice the limit");
	s->grant = g;
	s->last_want = want;
	return true;
}

/* Ends the experiment could fix: failed, rejected, invalid metrics, out of time or memory.
 * Not usage errors, a sandbox that could not be set up, or labbox interrupted. */
static bool repairable(int code)
{
	return code == LB_EXIT_FAILED || code == LB_EXIT_REJECTED ||
	       code == LB_EXIT_INVALID_METRICS || code == LB_EXIT_TIMEOUT || code == LB_EXIT_OOM;
}

static void repair_record(loop_state *s, unsigned n, const repair_cmd_result *cr, bool changed,
			  const char *repaired_id)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "repair", json_object_new_int((int)n));
	json_object_object_add(o, "repaired_run", json_object_new_string(repaired_id));
	json_object_object_add(o, "command_exit_code",
			       cr->exit_code >= 0 ? json_object_new_int(cr->exit_code) : NULL);
	json_object_object_add(o, "command_signal", cr->signal ? json_object_new_int(cr->signal) : NULL);
	json_object_object_add(o, "timed_out", json_object_new_boolean(cr->timed_out));
	json_object_object_add(o, "duration_s", lb_record_fixed(cr->duration_s, 3));
	json_object_object_add(o, "output_bytes", json_object_new_int64((int64_t)cr->log_bytes));
	json_object_object_add(o, "output_truncated", json_object_new_boolean(cr->log_truncated));
	json_object_object_add(o, "changed", json_object_new_boolean(changed));
	json_object_object_add(o, "run", NULL); /* the attempt it led to, once there is one */
	json_object_array_add(s->repairs, o);
}

static double repair_timeout(const loop_state *s)
{
	if (s->ac->repair_timeout > 0)
		return s->ac->repair_timeout;
	return s->req->budget > 0 ? s->req->budget : LB_REPAIR_DEFAULT_TIMEOUT;
}

/* Repair n: a fresh copy of the last attempt's source, the command in it with the verdict on
 * stdin, the diff. true when there is a changed copy to run; false with gave_up and reason. */
static bool repair(loop_state *s, unsigned n, const lb_run_result *out)
{
	char dir[PATH_MAX + 32], work[PATH_MAX + 32], prev[PATH_MAX + 32], path[PATH_MAX + 64];
	char err[1024] = "";
	int r = 0;
	if (n == 1) {
		/* RUNS_DIR/.repair-ID: beside the runs, so the records move into the last run's
		 * directory by rename at the end. work/0 is the experiment as it was. */
		char runs[PATH_MAX];
		run_fmt(runs, sizeof runs, "%s", out->run_dir);
		char *slash = strrchr(runs, '/');
		if (slash)
			*slash = '\0';
		run_fmt(s->loop_dir, sizeof s->loop_dir, "%s/.repair-%s", runs, s->first_id);
		run_fmt(dir, sizeof dir, "%s/repairs", s->loop_dir);
		run_fmt(work, sizeof work, "%s/work", s->loop_dir);
		if ((r = lb_mkdir_p(dir, 0700)) < 0 || (r = lb_mkdir_p(work, 0700)) < 0) {
			run_fmt(err, sizeof err, "cannot create %s: %s", dir, strerror(-r));
		} else {
			run_fmt(work, sizeof work, "%s/work/0", s->loop_dir);
			r = repair_copy(s->source, work, err, sizeof err);
			if (r == 0)
				run_fmt(s->source, sizeof s->source, "%s", work);
		}
	}
	run_fmt(prev, sizeof prev, "%s", s->source);
	run_fmt(work, sizeof work, "%s/work/%u", s->loop_dir, n);
	run_fmt(dir, sizeof dir, "%s/repairs/%u", s->loop_dir, n);
	if (r == 0 && (r = lb_mkdir_p(dir, 0700)) < 0)
		run_fmt(err, sizeof err, "cannot create %s: %s", dir, strerror(-r));
	if (r == 0)
		r = repair_copy(prev, work, err, sizeof err);
	if (r < 0) {
		s->gave_up = true;
		run_fmt(s->reason, sizeof s->reason, "labbox could not prepare repair %u: %s", n, err);
		return false;
	}
	char verdict[PATH_MAX + 16];
	run_fmt(verdict, sizeof verdict, "%s/result.json", out->run_dir);
	char e_attempt[32], e_max[32], e_result[PATH_MAX + 32], e_run[PATH_MAX + 32],
		e_exp[PATH_MAX + 32];
	run_fmt(e_attempt, sizeof e_attempt, "LABBOX_REPAIR_ATTEMPT=%u", n);
	run_fmt(e_max, sizeof e_max, "LABBOX_REPAIR_MAX=%u", s->ac->max_repairs);
	run_fmt(e_result, sizeof e_result, "LABBOX_RESULT=%s", verdict);
	run_fmt(e_run, sizeof e_run, "LABBOX_RUN_DIR=%s", out->run_dir);
	char real[PATH_MAX];
	run_fmt(e_exp, sizeof e_exp, "LABBOX_EXPDIR=%s",
	    realpath(s->req->expdir, real) ? real : s->req->expdir);
	char *env[] = {e_attempt, e_max, e_result, e_run, e_exp, NULL};
	repair_cmd_result cr;
	run_fmt(path, sizeof path, "%s/cmd.log", dir);
	double limit = repair_timeout(s);
	r = repair_run_cmd(s->ac->repair_cmd, work, verdict, env, limit, path, &cr, err, sizeof err);
	if (r < 0) {
		s->gave_up = true;
		run_fmt(s->reason, sizeof s->reason, "the repair command could not be started: %s", err);
		return false;
	}
	bool changed = false;
	run_fmt(path, sizeof path, "%s/diff.patch", dir);
	int dr = repair_diff(prev, work, path, &changed, err, sizeof err);
	repair_record(s, n, &cr, changed, out->id);
	s->nrepairs = n;
	if (cr.timed_out) {
		s->gave_up = true;
		run_fmt(s->reason, sizeof s->reason,
			 "repair %u: the repair command did not finish within %.0f s and was ended "
			 "(its output: repairs/%u/cmd.log)", n, limit, n);
	} else if (cr.exit_code != 0) {
		s->gave_up = true;
		if (cr.exit_code < 0)
			run_fmt(s->reason, sizeof s->reason, "repair %u: the repair command was killed "
				 "by signal %d (its output: repairs/%u/cmd.log)", n, cr.signal, n);
		else
			run_fmt(s->reason, sizeof s->reason, "repair %u: the repair command exited with "
				 "status %d (its output: repairs/%u/cmd.log)", n, cr.exit_code, n);
	} else if (dr < 0) {
		s->gave_up = true;
		run_fmt(s->reason, sizeof s->reason, "repair %u: %s", n, err);
	} else if (!changed) {
		s->gave_up = true;
		run_fmt(s->reason, sizeof s->reason, "repair %u: the repair command changed nothing, "
			 "so running it again would end the same way", n);
	}
	if (s->gave_up)
		return false;
	run_fmt(s->source, sizeof s->source, "%s", work);
	return true;
}

/* After the attempt a repair led to: its verdict beside the repair's other records. */
static void repair_done(loop_state *s, unsigned n, const lb_run_result *out)
{
	char path[PATH_MAX + 64];
	run_fmt(path, sizeof path, "%s/repairs/%u/result.json", s->loop_dir, n);
	lb_record_write_json(path, out->doc);
	json_object *rec = json_object_array_get_idx(s->repairs, n - 1);
	if (rec)
		json_object_object_add(rec, "run", json_object_new_string(out->id));
	run_fmt(path, sizeof path, "%s/repairs/%u/repair.json", s->loop_dir, n);
	lb_record_write_json(path, rec);
}

/* The end of the loop: --apply, the records into the last run's directory, the copies gone. */
static void finish_repairs(loop_state *s, const lb_run_result *out, json_object *doc)
{
	bool fixed = s->nrepairs > 0 && out->exit_code == 0;
	char dst[PATH_MAX + 16] = "";
	if (s->loop_dir[0]) {
		char src[PATH_MAX + 16], base[PATH_MAX + 16], all[PATH_MAX + 32], err[512] = "";
		run_fmt(base, sizeof base, "%s/work/0", s->loop_dir);
		run_fmt(all, sizeof all, "%s/repairs/all.patch", s->loop_dir);
		bool changed = false;
		if (s->nrepairs > 0)
			repair_diff(base, s->source, all, &changed, err, sizeof err);
		if (fixed && s->ac->apply) {
			size_t n = 0;
			int r = repair_apply(base, s->source, s->req->expdir, &n, err, sizeof err);
			s->applied = r == 0;
			run_fmt(s->apply_note, sizeof s->apply_note, "%s",
				 r == 0 ? "the fixed copy was applied to the experiment directory" : err);
		}
		run_fmt(src, sizeof src, "%s/repairs", s->loop_dir);
		run_fmt(dst, sizeof dst, "%s/repairs", out->run_dir);
		if (rename(src, dst) < 0)
			run_fmt(dst, sizeof dst, "%s", src); /* left where it is, and said so */
		else
			repair_remove_tree(s->loop_dir);
	}
	json_object *rp = json_object_new_object();
	json_object_object_add(rp, "command", json_object_new_string(s->ac->repair_cmd));
	json_object_object_add(rp, "max_repairs", json_object_new_int((int)s->ac->max_repairs));
	json_object_object_add(rp, "timeout_s", lb_record_fixed(repair_timeout(s), 3));
	json_object_object_add(rp, "attempts", json_object_new_int((int)s->nrepairs));
	json_object_object_add(rp, "fixed", json_object_new_boolean(fixed));
	json_object_object_add(rp, "gave_up", json_object_new_boolean(s->gave_up));
	json_object_object_add(rp, "reason", s->reason[0] ? json_object_new_string(s->reason) : NULL);
	json_object_object_add(rp, "applied", json_object_new_boolean(s->applied));
	json_object_object_add(rp, "apply_note",
			       s->apply_note[0] ? json_object_new_string(s->apply_note)
			       : fixed && !s->ac->apply
				       ? json_object_new_string("the experiment directory was left as it "
								"was (--apply copies the fix into it; "
								"repairs/all.patch is the whole change)")
				       : NULL);
	json_object_object_add(rp, "dir", dst[0] ? json_object_new_string(dst) : NULL);
	json_object_object_add(rp, "repairs", json_object_get(s->repairs));
	json_object_object_add(doc, "repair", rp);
}

/* Gave up after the last repair: why, in the verdict's words. */
static void give_up_after_max(loop_state *s, const lb_run_result *out)
{
	json_object *fail = get(out->doc, "failure");
	s->gave_up = true;
	run_fmt(s->reason, sizeof s->reason,
		 "%u repair%s did not fix the run: the last attempt ended %s (exit %d)%s%s",
		 s->nrepairs, s->nrepairs == 1 ? "" : "s", get_str(out->doc, "status", "?"),
		 out->exit_code, fail ? ": " : "", fail ? get_str(fail, "summary", "") : "");
}

static void record(loop_state *s, lb_run_result *out)
{
	json_object *doc = out->doc;
	json_object_object_add(doc, "attempts", json_object_get(s->attempts));
	if (s->ac->escalate) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "permitted", escalation_names(s->ac->escalate));
		json_object_object_add(e, "granted", escalation_names(s->grant.escalated));
		json_object_object_add(e, "declined", json_object_get(s->declined));
		json_object_object_add(doc, "escalation", e);
	}
	if (s->ac->repair_cmd)
		finish_repairs(s, out, doc);
	char path[PATH_MAX + 16];
	run_fmt(path, sizeof path, "%s/result.json", out->run_dir);
	/* Resealed: the attempts are part of the verdict (mac.c). */
	if (json_object_is_type(json_object_object_get(doc, "manifest_mac"), json_type_string))
		lb_record_result_seal(doc);
	lb_record_write_json(path, doc);
}

int lb_run_attempts(lb_sandbox *sb, const lb_run_request *req, const lb_attempts_config *acfg,
		    lb_run_result *out)
{
	if (!acfg->sandbox && (acfg->escalate || acfg->repair_cmd))
		return -EINVAL; /* a later attempt would have no sandbox */
	lb_attempts_config defaults = *acfg;
	if (!defaults.max_repairs)
		defaults.max_repairs = LB_REPAIR_DEFAULT_MAX;
	const lb_attempts_config *ac = &defaults;
	loop_state s = {.req = req, .ac = ac, .attempts = json_object_new_array(),
			.declined = json_object_new_array(), .repairs = json_object_new_array()};
	run_fmt(s.source, sizeof s.source, "%s", req->expdir ? req->expdir : "");
	int r = lb_run_mode(sb, req, out);
	json_object *cfg = req->sandbox_config ? json_object_get(req->sandbox_config) : NULL;
	if (r < 0 || !out->doc || !out->run_dir)
		goto done;
	run_fmt(s.first_id, sizeof s.first_id, "%s", out->id);
	add_attempt(&s, out, cfg, NULL, NULL);
	const char *trigger = NULL;
	char why[1536];
	while (out->exit_code != 0) {
		/* Asked to stop: no repair or attempt is started after it; the verdict stays the
		 * last run's, and says why the loop ended. */
		int isig = lb_interrupt_pending();
		if (isig) {
			s.gave_up = true;
			run_fmt(s.reason, sizeof s.reason, "labbox was interrupted by %s before the next "
				 "attempt", strsignal(isig));
			break;
		}
		lb_sandbox *next = NULL;
		json_object *next_cfg = NULL;
		bool repaired = false;
		if (escalate(&s, cfg, out, &next, &next_cfg, why, sizeof why)) {
			trigger = "escalation";
		} else if (!ac->repair_cmd || !repairable(out->exit_code) || s.gave_up) {
			break;
		} else if (s.nrepairs >= ac->max_repairs) {
			give_up_after_max(&s, out);
			break;
		} else if (!repair(&s, s.nrepairs + 1, out)) {
			break;
		} else {
			char err[512] = "";
			int br = ac->sandbox(ac->sandbox_ctx, &s.grant, &next, &next_cfg, err, sizeof err);
			if (br < 0) {
				s.gave_up = true;
				run_fmt(s.reason, sizeof s.reason, "the sandbox for the repaired copy "
					 "could not be set up: %s", err[0] ? err : strerror(-br));
				break;
			}
			trigger = "repair";
			repaired = true;
			run_fmt(why, sizeof why, "attempt %zu ended %s (exit %d); repair %u changed the "
				 "copy (repairs/%u/diff.patch)", json_object_array_length(s.attempts),
				 get_str(out->doc, "status", "?"), out->exit_code, s.nrepairs, s.nrepairs);
		}
		if (req->progress) {
			char line[1700];
			run_fmt(line, sizeof line, "attempt %zu: %s", json_object_array_length(s.attempts) + 1,
			    why);
			req->progress(req->progress_ctx, line);
		}
		lb_run_result next_out = {0};
		r = run_attempt(&s, next, next_cfg, &next_out);
		lb_sandbox_free(next);
		if (r < 0 || !next_out.doc || !next_out.run_dir) {
			/* The attempt never became a run (--env auto found no environment that
			 * fits, a usage error in a repaired copy's labbox.yaml): the verdict stays
			 * the last run's, and says why. */
			if (!repaired) {
				char reason[1200];
				run_fmt(reason, sizeof reason, "the escalated attempt could not start: %s",
				    r < 0 ? strerror(-r) : next_out.error);
				s.grant.escalated &= ~s.last_want;
				decline(&s, s.last_want, reason);
			} else {
				s.gave_up = true;
				run_fmt(s.reason, sizeof s.reason, "the next attempt could not start: %s",
				    r < 0 ? strerror(-r) : next_out.error);
			}
			json_object_put(next_cfg);
			lb_run_result_free(&next_out);
			r = 0;
			break;
		}
		lb_run_result_free(out);
		*out = next_out;
		json_object_put(cfg);
		cfg = next_cfg;
		add_attempt(&s, out, cfg, trigger, why);
		if (repaired)
			repair_done(&s, s.nrepairs, out);
	}
	record(&s, out);
done:
	json_object_put(cfg);
	json_object_put(s.attempts);
	json_object_put(s.declined);
	json_object_put(s.repairs);
	return r;
}
