/* JSON documents of a run: shared pieces and serialisation. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

struct json_object *lb_record_fixed(double v, int decimals)
{
	char text[64];
	snprintf(text, sizeof text, "%.*f", decimals, v);
	return json_object_new_double_s(v, text);
}

struct json_object *lb_record_isolation_json(const lb_isolation *iso)
{
	json_object *o = json_object_new_object();
	json_object *ns = json_object_new_object();
	json_object_object_add(ns, "user", json_object_new_boolean(iso->user_ns));
	json_object_object_add(ns, "pid", json_object_new_boolean(iso->pid_ns));
	json_object_object_add(ns, "mount", json_object_new_boolean(iso->mount_ns));
	json_object_object_add(ns, "network", json_object_new_boolean(iso->net_ns));
	json_object_object_add(ns, "ipc", json_object_new_boolean(iso->ipc_ns));
	json_object_object_add(ns, "uts", json_object_new_boolean(iso->uts_ns));
	json_object_object_add(o, "namespaces", ns);
	json_object_object_add(o, "network", json_object_new_string(iso->network ? iso->network : "none"));
	json_object_object_add(o, "sockets",
			       json_object_new_string(iso->network && strcmp(iso->network, "none")
							      ? "all families"
							      : "AF_UNIX only"));
	json_object_object_add(o, "filesystem",
			       json_object_new_string(iso->filesystem ? iso->filesystem
								      : "host read-only; homes and /run hidden; "
									"private /tmp, /var/tmp, /dev/shm"));
	json_object_object_add(o, "seccomp", json_object_new_boolean(iso->seccomp));
	json_object_object_add(o, "no_new_privs", json_object_new_boolean(iso->no_new_privs));
	json_object_object_add(o, "landlock",
			       iso->landlock ? json_object_new_string(iso->landlock) : NULL);
	json_object_object_add(o, "exec_guard",
			       iso->exec_guard ? json_object_new_string(iso->exec_guard) : NULL);
	json_object_object_add(o, "capabilities",
			       json_object_new_string(iso->caps_dropped ? "none" : "inherited"));
	json_object_object_add(o, "gpus", iso->gpus ? json_object_new_string(iso->gpus) : NULL);
	json_object_object_add(o, "uid", json_object_new_int((int)iso->uid));
	json_object_object_add(o, "gid", json_object_new_int((int)iso->gid));
	json_object_object_add(o, "cgroup",
			       iso->cgroup ? json_object_new_string(iso->cgroup) : NULL);
	json_object_object_add(o, "memory_enforced_by",
			       iso->memory_enforced_by ? json_object_new_string(iso->memory_enforced_by)
						       : NULL);
	json_object_object_add(o, "swap_limited",
			       iso->memory_enforced_by ? json_object_new_boolean(iso->swap_limited) : NULL);
	json_object_object_add(o, "pids_enforced_by",
			       iso->pids_enforced_by ? json_object_new_string(iso->pids_enforced_by) : NULL);
	json_object_object_add(o, "pids_limit",
			       iso->pids_limit ? json_object_new_int64(iso->pids_limit) : NULL);
	json_object_object_add(o, "cpus_enforced_by",
			       iso->cpus_enforced_by ? json_object_new_string(iso->cpus_enforced_by) : NULL);
	json_object_object_add(o, "disk_enforced_by",
			       iso->disk_enforced_by ? json_object_new_string(iso->disk_enforced_by) : NULL);
	return o;
}

struct json_object *lb_record_resources_json(const lb_sandbox_result *res)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "wall_s", lb_record_fixed(res->wall_s, 3));
	json_object_object_add(o, "cpu_user_s", lb_record_fixed(res->cpu_user_s, 3));
	json_object_object_add(o, "cpu_sys_s", lb_record_fixed(res->cpu_sys_s, 3));
	json_object_object_add(o, "post_run_s", lb_record_fixed(res->post_run_s, 3));
	json_object_object_add(o, "peak_rss_bytes", json_object_new_int64((int64_t)res->peak_rss_bytes));
	json_object_object_add(o, "peak_rss_source",
			       json_object_new_string(res->peak_source ? res->peak_source : "rusage"));
	/* peak_rss_bytes is the cgroup's charged memory when a cgroup was used, which is not a
	 * resident set: the same number under its true name, with where it came from, and the
	 * largest process's resident set apart (peak_rss_* stay for compatibility). */
	json_object_object_add(o, "peak_memory_bytes",
			       json_object_new_int64((int64_t)(res->peak_memory_source
								       ? res->peak_memory_bytes
								       : res->peak_rss_bytes)));
	json_object_object_add(o, "peak_memory_source",
			       json_object_new_string(res->peak_memory_source
							      ? res->peak_memory_source
							      : "rusage maxrss of the largest process"));
	json_object_object_add(o, "max_rss_bytes",
			       json_object_new_int64((int64_t)(res->peak_memory_source
								       ? res->max_rss_bytes
								       : res->peak_rss_bytes)));
	/* null: no GPU was in, or no nvidia-smi to ask; sampled once a second */
	json_object_object_add(o, "peak_gpu_bytes",
			       res->gpu_sampled ? json_object_new_int64((int64_t)res->peak_gpu_bytes)
						: NULL);
	return o;
}

static void free_text(struct json_object *o, void *p)
{
	(void)o;
	free(p);
}

const char *lb_record_json_text(struct json_object *doc)
{
	return lb_record_json_text_as(doc, true);
}

const char *lb_record_json_text_as(struct json_object *doc, bool indented)
{
	const char *text = json_object_to_json_string_ext(
		doc, (indented ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
			       : JSON_C_TO_STRING_PLAIN) |
			     JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text)
		return NULL;
	/* Names of files and directories are bytes, not always UTF-8; what labbox writes is
	 * valid UTF-8 all the same, with those bytes escaped losslessly, and with no C1 control a
	 * terminal would obey. The escaped copy lives as long as doc (or until the next call), as
	 * json-c's own text does. */
	lb_buf b = {0};
	int r = lb_json_escape_invalid_utf8(text, strlen(text), &b);
	if (r <= 0) {
		lb_buf_free(&b);
		return text; /* nothing to escape, or no memory to escape it */
	}
	json_object_set_userdata(doc, b.data, free_text);
	return b.data;
}

typedef enum { WRITE_SYNCED, WRITE_UNSYNCED, WRITE_PENDING } write_how;

static int write_json(const char *path, struct json_object *doc, write_how how, char **tmp)
{
	const char *text = lb_record_json_text(doc);
	if (!text)
		return -ENOMEM;
	lb_buf b = {0};
	int r = lb_buf_puts(&b, text);
	if (r == 0)
		r = lb_buf_puts(&b, "\n");
	if (r == 0)
		r = how == WRITE_SYNCED	    ? lb_write_file_atomic_mode(path, b.data, b.len, 0600)
		    : how == WRITE_UNSYNCED ? lb_write_file_atomic_nosync(path, b.data, b.len, 0600)
					    : lb_write_file_pending(path, b.data, b.len, 0600, tmp);
	lb_buf_free(&b);
	return r;
}

int lb_record_write_json(const char *path, struct json_object *doc)
{
	return write_json(path, doc, WRITE_SYNCED, NULL);
}

int lb_record_write_json_nosync(const char *path, struct json_object *doc)
{
	return write_json(path, doc, WRITE_UNSYNCED, NULL);
}

int lb_record_write_json_pending(const char *path, struct json_object *doc, char **tmp)
{
	return write_json(path, doc, WRITE_PENDING, tmp);
}

int lb_record_loose_limits(const struct json_object *cfg, struct lb_strv *out)
{
	json_object *sb = NULL, *v;
	json_object *c = (json_object *)cfg;
	json_object_object_get_ex(c, "sandbox", &sb);
	size_t n0 = out->n;
	int r = 0;
	/* 0 is none; above the cap a plain run has, the disk the record asks for is its own. */
	if (r == 0 && json_object_object_get_ex(sb, "disk_limit_bytes", &v) && v) {
		int64_t d = json_object_get_int64(v);
		if (d <= 0 || (uint64_t)d > LB_RECORD_DISK_LIMIT_MAX)
			r = lb_strv_pushf(out, "--disk-limit %" PRId64, d);
	}
	/* The grace is how long an experiment that ignores SIGTERM outlives its budget. */
	if (r == 0 && json_object_object_get_ex(sb, "grace_s", &v) && v) {
		double g = json_object_get_double(v);
		if (!(g >= 0 && g <= LB_RECORD_GRACE_S))
			r = lb_strv_pushf(out, "--grace %g", g);
	}
	/* 0 is the default's; anything above it is a bigger file on the host. */
	if (r == 0 && json_object_object_get_ex(c, "log_limit_bytes", &v) && v) {
		int64_t l = json_object_get_int64(v);
		if (l < 0 || (uint64_t)l > LB_RECORD_LOG_LIMIT)
			r = lb_strv_pushf(out, "--log-limit %" PRId64, l);
	}
	if (r == 0 && json_object_object_get_ex(sb, "shm_size_bytes", &v) && v) {
		int64_t s = json_object_get_int64(v);
		if (s < 0 || (uint64_t)s > LB_RECORD_SHM_SIZE)
			r = lb_strv_pushf(out, "--shm-size %" PRId64, s);
	}
	/* A plain run mounts no tmpfs of the caller's: each is memory it asked for. */
	if (r == 0 && json_object_object_get_ex(sb, "tmpfs", &v) &&
	    json_object_is_type(v, json_type_array))
		for (size_t i = 0; r == 0 && i < json_object_array_length(v); i++)
			r = lb_strv_pushf(out, "--tmpfs %s",
					  json_object_get_string(json_object_array_get_idx(v, i)));
	return r < 0 ? r : (int)(out->n - n0);
}
