/* Escalation: the exact flag (or environment) that would lift the sandbox's restriction a
 * failure ran into, read from its class and evidence (lb_diagnose_escalation), and which of
 * the user's standing permissions (--escalate) it calls for (lb_escalate_for_failure). The
 * run module acts on it; this file only reads verdicts. */
#include "labbox/diagnose.h"
#include "internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "labbox/util.h"

typedef struct esc {
	const char *grants;
	char flag[320];	       /* "" for none */
	char environment[200]; /* "" for none */
	bool granted;
	const char *note;
} esc;

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return "";
}

/* Whether the summary or any evidence line contains needle (case-insensitive). */
static bool says(json_object *f, const char *needle)
{
	json_object *ev;
	if (strcasestr(str_of(f, "summary"), needle))
		return true;
	if (!json_object_object_get_ex(f, "evidence", &ev) || !json_object_is_type(ev, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(ev); i++) {
		const char *l = json_object_get_string(json_object_array_get_idx(ev, i));
		if (l && strcasestr(l, needle))
			return true;
	}
	return false;
}

/* The first quoted absolute path in s ("... Read-only file system: '/data/out.csv'"). */
static bool quoted_abs_path(const char *s, char *out, size_t outlen)
{
	for (const char *q = s; (q = strpbrk(q, "'\"")); q++) {
		const char *e = strchr(q + 1, *q);
		if (!e)
			return false;
		size_t n = (size_t)(e - q - 1);
		if (n > 1 && n < outlen && q[1] == '/' && !memchr(q + 1, ' ', n)) {
			memcpy(out, q + 1, n);
			out[n] = '\0';
			return true;
		}
		q = e;
	}
	return false;
}

/* The error's own words of a denial: a traceback's frame names the file that raised, and a
 * source line the code's literals, neither of which is what was denied. */
static bool denial_line(const char *l)
{
	static const char *const words[] = { "Permission denied", "Read-only file system",
					     "Operation not permitted", NULL };
	for (size_t i = 0; words[i]; i++)
		if (strstr(l, words[i]))
			return true;
	return false;
}

/* A directory no volume should be mounted over writable: an installed package's, the
 * interpreter's own library, labbox's files in the sandbox, the kernel's. (A write the code
 * itself aims at /usr/lib still names /usr/lib: docs/decisions.md.) */
static bool never_mounted_over(const char *dir)
{
	static const char *const within[] = { "/site-packages", "/dist-packages", "/lib/python",
					      NULL };
	static const char *const under[] = { "/run/labbox", "/proc", "/sys", NULL };
	for (size_t i = 0; within[i]; i++)
		if (strstr(dir, within[i]))
			return true;
	for (size_t i = 0; under[i]; i++) {
		size_t n = strlen(under[i]);
		if (strncmp(dir, under[i], n) == 0 && (dir[n] == '/' || dir[n] == '\0'))
			return true;
	}
	return false;
}

/* Where a denied write went, from the denial's own words: the path itself. */
static bool denied_path(json_object *f, char *out, size_t outlen)
{
	json_object *ev;
	const char *sum = str_of(f, "summary");
	bool found = denial_line(sum) && quoted_abs_path(sum, out, outlen);
	if (!found && json_object_object_get_ex(f, "evidence", &ev) &&
	    json_object_is_type(ev, json_type_array))
		for (size_t i = json_object_array_length(ev); !found && i-- > 0;) {
			const char *l = json_object_get_string(json_object_array_get_idx(ev, i));
			found = l && denial_line(l) && quoted_abs_path(l, out, outlen);
		}
	return found && !never_mounted_over(out);
}

/* The writable volume whose destination is path or holds it, the deepest: its spec split
 * into src and dst. */
static bool rw_volume_over(const lb_failure_input *in, const char *path, char *src, size_t srclen,
			   char *dst, size_t dstlen)
{
	size_t best = 0;
	if (!in || !in->volumes || !json_object_is_type(in->volumes, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(in->volumes); i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(in->volumes, i));
		const char *d = v ? strchr(v, ':') : NULL;
		if (!d)
			continue;
		d++;
		const char *m = strchr(d, ':');
		size_t n = m ? (size_t)(m - d) : strlen(d);
		while (n > 1 && d[n - 1] == '/')
			n--;
		if (!m || strcmp(m, ":rw") != 0 || n <= best || n >= dstlen ||
		    (size_t)(d - 1 - v) >= srclen || strncmp(path, d, n) != 0 ||
		    (path[n] != '\0' && path[n] != '/'))
			continue;
		best = n;
		snprintf(src, srclen, "%.*s", (int)(d - 1 - v), v);
		snprintf(dst, dstlen, "%.*s", (int)n, d);
	}
	return best > 0;
}

/* Whether the runtime gate saw the experiment open path as a file (its "open" event). */
static bool gate_opened(const lb_failure_input *in, const char *path)
{
	json_object *evs, *args;
	if (!in || !in->runtime_gate || !json_object_object_get_ex(in->runtime_gate, "events", &evs) ||
	    !json_object_is_type(evs, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		json_object *ev = json_object_array_get_idx(evs, i);
		if (strcmp(str_of(ev, "event"), "open") != 0 ||
		    !json_object_object_get_ex(ev, "args", &args) ||
		    !json_object_is_type(args, json_type_array) || json_object_array_length(args) < 1)
			continue;
		const char *a = json_object_get_string(json_object_array_get_idx(args, 0));
		if (a && strcmp(a, path) == 0)
			return true;
	}
	return false;
}

/* Whether the refused path is a file a volume must be a file for: the host's root shows it
 * as one (the sandbox's read-only root is the host's, outside its private and hidden
 * places), or the experiment opened it as a file and its name is no new file's in a
 * directory (one with a dot: a directory of results is what to mount for that). */
static bool file_target(const lb_failure_input *in, const char *path)
{
	static const char *const own[] = { "/tmp", "/var/tmp", "/dev/shm", "/home", "/root",
					   "/run", NULL };
	bool sandbox_own = false;
	for (size_t i = 0; own[i]; i++)
		sandbox_own = sandbox_own || lb_path_under(path, own[i]);
	struct stat st;
	if (in && in->host_root && !sandbox_own && stat(path, &st) == 0)
		return !S_ISDIR(st.st_mode);
	const char *slash = strrchr(path, '/');
	return gate_opened(in, path) && slash && !strchr(slash, '.');
}

/* "owner uid U, group G, mode M": why uid cannot write src, or false when it can (or src
 * cannot be read from here). */
static bool unwritable_src(const lb_failure_input *in, const char *src, char *why, size_t n,
			   bool *dir)
{
	struct stat st;
	if (!in->payload_other_uid || stat(src, &st) < 0 ||
	    lb_mode_lets_write(&st, in->payload_uid, in->payload_gid))
		return false;
	*dir = S_ISDIR(st.st_mode);
	snprintf(why, n, "owner uid %u, group %u, mode %04o", (unsigned)st.st_uid,
		 (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777));
	return true;
}

/* A write refused under a writable volume the run had: the volume was granted, so no other
 * one is advised; what refused it is the permission of SRC (or of a path in it) for the uid
 * the experiment runs as. */
static void granted_volume(esc *e, json_object *f, const lb_failure_input *in, const char *src,
			   const char *dst)
{
	char why[96], text[4096];
	e->granted = true;
	snprintf(e->flag, sizeof e->flag, "-v %.140s:%.140s:rw", src, dst);
	bool dir = false;
	if (unwritable_src(in, src, why, sizeof why, &dir))
		snprintf(text, sizeof text,
			 "the run had -v %s:%s:rw, but the experiment runs as uid %u (labbox runs as "
			 "root) and cannot write %s (%s): chown %u %s, or chmod o+w%s %s, then run it "
			 "again; another volume deeper under %s would be refused the same way",
			 src, dst, in->payload_uid, src, why, in->payload_uid, src, dir ? "x" : "",
			 src, dst);
	else if (in->payload_other_uid)
		snprintf(text, sizeof text,
			 "the run had -v %s:%s:rw: what refused the write is the permission of the "
			 "path under %s for uid %u, the uid the experiment runs as (labbox runs as "
			 "root): make it writable by that uid (chown -R %u %s)",
			 src, dst, src, in->payload_uid, in->payload_uid, src);
	else
		snprintf(text, sizeof text,
			 "the run had -v %s:%s:rw: what refused the write is the permission of the "
			 "path under %s (or its file system), not the sandbox: make it writable by "
			 "you there",
			 src, dst, src);
	json_object_object_add(f, "suggestion", json_object_new_string(text));
	const char *sum = str_of(f, "summary"), *lead = "the sandbox denied an operation: ";
	if (strncmp(sum, lead, strlen(lead)) == 0) {
		char buf[1200];
		snprintf(buf, sizeof buf, "a write under the writable volume %s was refused by its "
			 "file permissions: %s", dst, sum + strlen(lead));
		json_object_object_add(f, "summary", json_object_new_string(buf));
	}
	e->note = "the run had a writable volume over this path already: another volume does not "
		  "change who may write SRC";
}

static void write_escalation(esc *e, json_object *f, const lb_failure_input *in)
{
	char path[256], src[512], dst[256];
	e->grants = "write";
	if (!denied_path(f, path, sizeof path)) {
		snprintf(e->flag, sizeof e->flag, "-v SRC:DST:rw");
		e->note = "SRC is a host directory to write into; without it the rest of the file "
			  "system stays read-only";
		return;
	}
	/* A credential's path named in the output (~/.ssh/authorized_keys) is never made
	 * writable on the program's word: no flag is offered. */
	if (lb_diag_credential_path(path)) {
		e->grants = NULL;
		return;
	}
	if (rw_volume_over(in, path, src, sizeof src, dst, sizeof dst)) {
		granted_volume(e, f, in, src, dst);
		return;
	}
	bool as_root = in && in->payload_other_uid;
	if (file_target(in, path)) {
		snprintf(e->flag, sizeof e->flag, "-v SRC:%s:rw", path);
		e->note = as_root ? "SRC is a host file (not a directory: the path is a file) to "
				    "write into, writable by uid 65534, the uid the experiment runs "
				    "as (chown 65534 SRC)"
				  : "SRC is a host file (not a directory: the path is a file) to write "
				    "into";
		return;
	}
	/* A file's directory is what a mount can make writable (the file may not exist). */
	char *slash = strrchr(path, '/');
	if (slash && slash != path && strchr(slash, '.'))
		*slash = '\0';
	snprintf(e->flag, sizeof e->flag, "-v SRC:%s:rw", path);
	e->note = as_root ? "SRC is a host directory to write into, writable by uid 65534, the uid "
			    "the experiment runs as (chown 65534 SRC, or chmod o+wx SRC); without "
			    "it the rest of the file system stays read-only"
			  : "SRC is a host directory to write into; without it the rest of the file "
			    "system stays read-only";
}

/* Twice the limit, or, when the failed allocation alone asked for more than that, the limit
 * and that allocation together: doubling a 256m limit for a 1 GiB array cannot help. The size
 * is read only from an allocator's error that ended the run: when the kernel killed the run
 * (oom_killed) its evidence is the last lines it printed, and a size there is one the program
 * printed and went on from (it caught numpy's "Unable to allocate 7.28 TiB" and fell back to
 * chunks, and a chunk was killed), so the kill's own measure, twice the limit, is asked for.
 * Never more than the machine has (machine_memory, when known): a limit past it lifts
 * nothing, and where the run's limit was already that much there is no flag (grants NULL). */
static void memory_flag(esc *e, json_object *f, const lb_failure_input *in)
{
	unsigned long long limit = in ? in->memory_limit : 0;
	unsigned long long machine = in ? in->machine_memory : 0;
	if (limit == 0) {
		snprintf(e->flag, sizeof e->flag, "--memory SIZE");
		e->note = "no memory limit was recorded: SIZE is more than the run's peak "
			  "(resources.peak_memory_bytes)";
		return;
	}
	if (machine && limit >= machine) {
		e->grants = NULL;
		return;
	}
	unsigned long long want = limit * 2, mib = 1ULL << 20, asked = 0;
	json_object *ev;
	if (!(in && in->oom_killed)) {
		asked = lb_diag_requested_bytes(str_of(f, "summary"));
		if (!asked && json_object_object_get_ex(f, "evidence", &ev) &&
		    json_object_is_type(ev, json_type_array))
			for (size_t i = 0; !asked && i < json_object_array_length(ev); i++) {
				const char *l = json_object_get_string(json_object_array_get_idx(ev, i));
				asked = l ? lb_diag_requested_bytes(l) : 0;
			}
	}
	e->note = "twice the limit the run had";
	if (asked > limit && asked < (1ULL << 62) && asked + limit > want) {
		want = asked + limit;
		e->note = "the limit the run had and the allocation that failed, together (twice "
			  "the limit would not hold it)";
		/* round up to what reads well: a whole GiB past 1 GiB, else a whole MiB */
		unsigned long long gib = mib << 10;
		if (want > gib)
			want = (want + gib - 1) / gib * gib;
	}
	if (machine && want > machine) {
		want = machine / mib * mib; /* a whole MiB, down: never past the machine */
		e->note = "the machine's memory, all of it: no limit gives more than the machine has";
	}
	if (want % (mib << 10) == 0)
		snprintf(e->flag, sizeof e->flag, "--memory %llug", want / (mib << 10));
	else
		snprintf(e->flag, sizeof e->flag, "--memory %llum", (want + mib - 1) / mib);
}

/* "pip install X" or "apt install r-cran-X" as the suggestion words it. */
static void environment_from(esc *e, const char *suggestion, const char *marker)
{
	const char *p = strstr(suggestion, marker);
	if (!p)
		return;
	size_t m = strlen(marker);
	size_t n = m + strcspn(p + m, " ;,)");
	/* Cut to fit on a character's boundary: the words are the experiment's output, and
	 * half a character would not be UTF-8 (result.json must be). */
	if (n > sizeof e->environment - 1) {
		n = sizeof e->environment - 1;
		while (n > m && ((unsigned char)p[n] & 0xC0) == 0x80)
			n--;
	}
	snprintf(e->environment, sizeof e->environment, "%.*s", (int)n, p);
}

/* Twice the size of the tmpfs the sandbox found full, in the flag that sizes it. */
static bool full_tmpfs_flag(esc *e, json_object *f, const lb_failure_input *in)
{
	if (!in || !in->full_tmpfs || !in->full_tmpfs_bytes ||
	    !strstr(str_of(f, "summary"), "was full when the run failed"))
		return false;
	unsigned long long want = in->full_tmpfs_bytes * 2, mib = 1ULL << 20;
	char size[32];
	if (want % (mib << 10) == 0)
		snprintf(size, sizeof size, "%llug", want / (mib << 10));
	else
		snprintf(size, sizeof size, "%llum", (want + mib - 1) / mib);
	bool shm = strcmp(in->full_tmpfs, "/dev/shm") == 0;
	e->grants = shm ? "shm" : "disk";
	if (shm)
		snprintf(e->flag, sizeof e->flag, "--shm-size %s", size);
	else
		snprintf(e->flag, sizeof e->flag, "--tmpfs %.200s:size=%s", in->full_tmpfs, size);
	e->note = "twice the size the tmpfs had";
	return true;
}

static void sandbox_escalation(esc *e, json_object *f, const lb_failure_input *in)
{
	if (full_tmpfs_flag(e, f, in)) {
		return;
	} else if (says(f, "network socket")) {
		/* A socket on this machine alone needs only a private loopback (decided by the
		 * diagnosis, which read the address). */
		bool local = strstr(str_of(f, "summary"), "a local network socket") &&
			     !(in && in->network_loopback);
		e->grants = "network";
		snprintf(e->flag, sizeof e->flag, "--network %s", local ? "loopback" : "host");
		e->granted = in && in->network_host;
	} else if (says(f, "/dev/shm") || says(f, "shared memory")) {
		e->grants = "shm";
		snprintf(e->flag, sizeof e->flag, "--shm-size 8g");
	} else if (says(f, "disk limit")) {
		e->grants = "disk";
		snprintf(e->flag, sizeof e->flag, "--disk-limit SIZE");
		e->note = "SIZE above what exp/ grew to";
	} else if (says(f, "No space left") || says(f, "File too large") || says(f, "SIGXFSZ") ||
		   says(f, "Disk quota")) {
		e->grants = "disk";
		snprintf(e->flag, sizeof e->flag, "--tmpfs /tmp:size=4g");
	} else if (says(f, "can't start new thread") || says(f, "Resource temporarily unavailable")) {
		e->grants = "processes";
		/* Twice the limit the run had (isolation.pids_limit: its own, or labbox's
		 * default); a record without it had at most 4096, and 16384 is the next step. */
		long now = in && in->pids_limit > 0 ? in->pids_limit : 0;
		snprintf(e->flag, sizeof e->flag, "--pids-limit %ld", now ? 2 * now : 16384L);
	} else if (says(f, "clean environment") || says(f, "controlling terminal")) {
		e->grants = NULL; /* the variable's value is the user's to choose */
	} else if (says(f, "SIGSYS")) {
		e->grants = NULL; /* no flag lifts the seccomp filter */
	} else {
		write_escalation(e, f, in);
	}
}

static bool decide(esc *e, json_object *f, const lb_failure_input *in)
{
	const char *cls = str_of(f, "class"), *sum = str_of(f, "summary");
	const char *sugg = str_of(f, "suggestion");
	memset(e, 0, sizeof *e);
	if (strcmp(cls, "network") == 0) {
		e->grants = "network";
		snprintf(e->flag, sizeof e->flag, "--network host");
		e->granted = in && in->network_host;
	} else if (strcmp(cls, "gpu_unavailable") == 0) {
		if (in && in->machine_without_gpus && !in->gpus)
			return false; /* nothing for --gpus to give on this machine */
		e->grants = "gpu";
		snprintf(e->flag, sizeof e->flag, "--gpus all");
		e->granted = in && in->gpus;
	} else if (strcmp(cls, "oom") == 0) {
		if (in && in->memory_unlimited && !in->memory_limit)
			return false; /* the machine's memory: no flag gives more */
		e->grants = "memory";
		memory_flag(e, f, in);
	} else if (strcmp(cls, "missing_package") == 0 || strcmp(cls, "wrong_env") == 0) {
		e->grants = "environment";
		if (strncmp(sum, "R package", 9) == 0) {
			environment_from(e, sugg, "apt install ");
		} else if (strncmp(sum, "Octave package", 14) == 0) {
			environment_from(e, sugg, "apt install ");
		} else if (strncmp(sum, "program '", 9) == 0) {
			snprintf(e->environment, sizeof e->environment, "%.*s", (int)strcspn(sum + 9, "'"),
				 sum + 9);
			e->note = "a program the experiment runs, installed where it runs";
		} else {
			snprintf(e->flag, sizeof e->flag, "--python VENV/bin/python");
			environment_from(e, sugg, "pip install ");
			e->note = "VENV: a virtual environment that has what the code imports";
		}
	} else if (strcmp(cls, "sandbox_restriction") == 0) {
		sandbox_escalation(e, f, in);
	}
	if (e->granted && strcmp(e->grants, "write") != 0)
		e->note = "the run had this already, so the restriction is not labbox's: look at the "
			  "evidence (a name that does not resolve, a service that refuses, a device "
			  "that is busy)";
	return e->grants != NULL;
}

int lb_diagnose_escalation(struct json_object *f, const lb_failure_input *in)
{
	esc e;
	if (!f || !json_object_is_type(f, json_type_object))
		return -EINVAL;
	if (!decide(&e, f, in))
		return json_object_object_add(f, "escalation", NULL) < 0 ? -ENOMEM : 0;
	json_object *o = json_object_new_object();
	if (!o || json_object_object_add(f, "escalation", o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	json_object_object_add(o, "grants", json_object_new_string(e.grants));
	json_object_object_add(o, "flag", e.flag[0] ? json_object_new_string(e.flag) : NULL);
	json_object_object_add(o, "environment",
			       e.environment[0] ? json_object_new_string(e.environment) : NULL);
	json_object_object_add(o, "granted", json_object_new_boolean(e.granted));
	json_object_object_add(o, "note", e.note ? json_object_new_string(e.note) : NULL);
	const char *sugg = str_of(f, "suggestion");
	if (e.flag[0] && !e.granted && !strstr(sugg, e.flag)) {
		char buf[1400];
		snprintf(buf, sizeof buf, "%s%sflag: %s", sugg, sugg[0] ? "; " : "", e.flag);
		json_object_object_add(f, "suggestion", json_object_new_string(buf));
	}
	return 0;
}

void lb_diagnose_grants(lb_failure_input *in, struct json_object *sandbox)
{
	json_object *v;
	if (!in || !sandbox || !json_object_is_type(sandbox, json_type_object))
		return;
	if (json_object_object_get_ex(sandbox, "network", &v) && v) {
		in->network_host = strcmp(json_object_get_string(v), "host") == 0;
		in->network_loopback = strcmp(json_object_get_string(v), "loopback") == 0;
		in->network_none = strcmp(json_object_get_string(v), "none") == 0;
	}
	if (json_object_object_get_ex(sandbox, "gpus", &v) && v)
		in->gpus = strcmp(json_object_get_string(v), "none") != 0 &&
			   json_object_get_string(v)[0];
	if (json_object_object_get_ex(sandbox, "memory_bytes", &v) && v &&
	    json_object_get_int64(v) > 0)
		in->memory_limit = (unsigned long long)json_object_get_int64(v);
	else
		in->memory_unlimited = true;
	if (json_object_object_get_ex(sandbox, "pids_limit", &v) && v &&
	    json_object_get_int64(v) > 0)
		in->pids_limit = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(sandbox, "volumes", &v) && v &&
	    json_object_is_type(v, json_type_array))
		in->volumes = v;
}

static const struct {
	unsigned bit;
	const char *name;
} kinds[] = {
	{LB_ESCALATE_NETWORK, "network"},
	{LB_ESCALATE_GPUS, "gpus"},
	{LB_ESCALATE_ENV, "env"},
	{LB_ESCALATE_MEMORY, "memory"},
};

const char *lb_escalate_name(unsigned bit)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (kinds[i].bit == bit)
			return kinds[i].name;
	return NULL;
}

int lb_escalate_parse(const char *list, unsigned *mask, char *err, size_t errlen)
{
	*mask = 0; /* nothing granted unless the whole list reads */
	unsigned m = 0;
	if (!list || !*list) {
		snprintf(err, errlen, "--escalate needs a list: network, gpus, env, memory");
		return -EINVAL;
	}
	const char *p = list;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		unsigned bit = 0;
		for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
			if (strlen(kinds[i].name) == n && strncmp(kinds[i].name, p, n) == 0)
				bit = kinds[i].bit;
		if (!bit) {
			snprintf(err, errlen, "--escalate '%.*s' is not one of network, gpus, env, memory",
				 (int)(n > 64 ? 64 : n), p);
			return -EINVAL;
		}
		m |= bit;
		p += n;
		if (*p == ',')
			p++;
	}
	*mask = m;
	return 0;
}

/* The kind of escalation --escalate may grant for a failure: read from the escalation block
 * lb_diagnose_escalation gave it (a refused socket keeps the class sandbox_restriction, but
 * what lifts it is the network's), else from the class. 0 when none would: gpu_oom is not
 * helped by more host memory, and a write outside is granted by a volume, which no standing
 * permission names. */
unsigned lb_escalate_for_failure(const struct json_object *failure)
{
	json_object *f = (json_object *)failure, *e;
	if (!f || !json_object_is_type(f, json_type_object))
		return 0;
	const char *cls = str_of(f, "class");
	const char *grants = json_object_object_get_ex(f, "escalation", &e) && e ? str_of(e, "grants") : "";
	if (strcmp(cls, "network") == 0 ||
	    (strcmp(cls, "sandbox_restriction") == 0 && strcmp(grants, "network") == 0))
		return LB_ESCALATE_NETWORK;
	if (strcmp(cls, "gpu_unavailable") == 0)
		return LB_ESCALATE_GPUS; /* declined, with its reason, where the host has none */
	if (strcmp(cls, "oom") == 0)
		return LB_ESCALATE_MEMORY;
	if (strcmp(cls, "wrong_env") == 0 || strcmp(cls, "missing_package") == 0)
		return LB_ESCALATE_ENV;
	return 0;
}

bool lb_gate_record_complete(const struct json_object *runtime_gate)
{
	struct json_object *g = (struct json_object *)runtime_gate, *v, *ev;

	if (!g || !json_object_is_type(g, json_type_object) ||
	    !json_object_object_get_ex(g, "installed", &v) || !json_object_get_boolean(v) ||
	    !json_object_object_get_ex(g, "channel", &v) ||
	    strcmp(json_object_get_string(v) ? json_object_get_string(v) : "", "read") != 0 ||
	    !json_object_object_get_ex(g, "events", &ev) || !json_object_is_type(ev, json_type_array))
		return false;
	return !json_object_object_get_ex(g, "dropped", &v) || json_object_get_int64(v) == 0;
}

bool lb_gate_saw_no_socket(const struct json_object *runtime_gate)
{
	struct json_object *ev, *net;

	/* With the network granted the gate judges no socket, and records none */
	if (!lb_gate_record_complete(runtime_gate) ||
	    !json_object_object_get_ex((struct json_object *)runtime_gate, "events", &ev) ||
	    !json_object_object_get_ex((struct json_object *)runtime_gate, "network", &net) ||
	    json_object_get_boolean(net))
		return false;
	for (size_t i = 0; i < json_object_array_length(ev); i++) {
		struct json_object *e = json_object_array_get_idx(ev, i), *name;
		const char *s;

		if (!json_object_object_get_ex(e, "event", &name))
			continue;
		s = json_object_get_string(name);
		if (s && strncmp(s, "socket.", 7) == 0)
			return false;
	}
	return true;
}
