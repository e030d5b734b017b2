/* JSON documents of a run: shared pieces and serialisation. */
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
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
