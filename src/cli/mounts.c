/* Mount flags shared by run and exec: -v (checked here, so a bad spec is a usage error before
 * anything starts), --tmpfs and --shm-size as docker spells them; and the thread counts
 * --cpus implies. Kept in the manifest's sandbox config so `labbox rerun` repeats them. */
#include "cli.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_TMPFS_SIZE ((uint64_t)1 << 30) /* as the private /tmp */

static int push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof **v);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* -v SRC:DST[:ro|rw]. Paths cannot hold ':', since docker's syntax splits at each one:
 * say so instead of reading part of a path as a mode. */
static int check_volume(const char *cmd, const char *spec)
{
	size_t colons = 0;
	for (const char *p = spec; *p; p++)
		colons += *p == ':';
	const char *last = strrchr(spec, ':');
	bool mode_ok = colons == 2 && (strcmp(last + 1, "ro") == 0 || strcmp(last + 1, "rw") == 0);
	if (colons > 2 || (colons == 2 && !mode_ok && strchr(last + 1, '/'))) {
		cli_error(cmd, "-v '%s': a path with ':' in it cannot be mounted: -v splits "
			  "SRC:DST[:ro|rw] at each ':' (link or rename the path)", spec);
		return -1;
	}
	if (colons == 2 && !mode_ok) {
		cli_error(cmd, "-v '%s': mode '%s' is not ro or rw (and a path with ':' in it "
			  "cannot be mounted: -v splits at each ':')", spec, last + 1);
		return -1;
	}
	if (spec[0] != '/' || colons == 0) {
		cli_error(cmd, "-v '%s' is not of the form /SRC:/DST[:ro|rw] (absolute paths)", spec);
		return -1;
	}
	const char *dst = strchr(spec, ':') + 1;
	if (dst[0] != '/') {
		cli_error(cmd, "-v '%s': destination must be an absolute path", spec);
		return -1;
	}
	if (dst[strspn(dst, "/")] == '\0' || dst[strspn(dst, "/")] == ':') {
		cli_error(cmd, "-v '%s': the sandbox's root cannot be replaced", spec);
		return -1;
	}
	char d[PATH_MAX];
	snprintf(d, sizeof d, "%.*s", (int)strcspn(dst, ":"), dst);
	/* A ".." would climb out of the sandbox's new root: its mount point would be made on the
	 * host, and the volume would be missing inside. */
	if (!lb_path_plain(d)) {
		cli_error(cmd, "-v '%s': the destination %s has a '.' or '..' part: give the path "
			  "inside the sandbox as it is meant (e.g. /data)", spec, d);
		return -1;
	}
	if (lb_path_sandbox_own(d)) {
		cli_error(cmd, "-v '%s': %s is built by the sandbox itself (its own /proc, /sys and "
			  "/dev) and cannot be a volume", spec, d);
		return -1;
	}
	return 0;
}

/* --tmpfs PATH[:size=SIZE[,mode=OCTAL]] */
static int parse_tmpfs(const char *cmd, const char *spec, char *path, size_t pathlen,
		       uint64_t *size, unsigned *mode)
{
	*size = DEFAULT_TMPFS_SIZE;
	*mode = 01777;
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	if (n == 0 || n >= pathlen || spec[0] != '/') {
		cli_error(cmd, "--tmpfs '%s' is not of the form /PATH[:size=SIZE]", spec);
		return -1;
	}
	memcpy(path, spec, n);
	path[n] = '\0';
	if (!lb_path_plain(path)) {
		cli_error(cmd, "--tmpfs '%s': %s has a '.' or '..' part: give the path inside the "
			  "sandbox as it is meant (e.g. /scratch)", spec, path);
		return -1;
	}
	if (lb_path_sandbox_own(path)) {
		cli_error(cmd, "--tmpfs '%s': %s is built by the sandbox itself and cannot be a "
			  "tmpfs%s", spec, path,
			  lb_path_under(path, "/dev") ? " (--shm-size sets the size of /dev/shm)" : "");
		return -1;
	}
	if (!colon)
		return 0;
	LB_AUTOFREE char *opts = strdup(colon + 1);
	if (!opts)
		return -1;
	char *save = NULL;
	for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (strncmp(o, "size=", 5) == 0) {
			if (lb_parse_size(o + 5, size) < 0 || *size == 0) {
				cli_error(cmd, "--tmpfs '%s': size '%s' is not a size such as 512m or 4g",
					  spec, o + 5);
				return -1;
			}
		} else if (strncmp(o, "mode=", 5) == 0) {
			char *end;
			errno = 0;
			unsigned long m = strtoul(o + 5, &end, 8);
			if (errno || end == o + 5 || *end || m > 07777) {
				cli_error(cmd, "--tmpfs '%s': mode '%s' is not an octal mode such as 1777",
					  spec, o + 5);
				return -1;
			}
			*mode = (unsigned)m;
		} else {
			cli_error(cmd, "--tmpfs '%s': option '%s' is not supported (size=SIZE, "
				  "mode=OCTAL)", spec, o);
			return -1;
		}
	}
	return 0;
}

int cli_mount_opt(const char *cmd, int opt, const char *arg, cli_sandbox_opts *o)
{
	switch (opt) {
	case 'v':
		if (check_volume(cmd, arg) < 0)
			return -1;
		return push(&o->volumes, &o->nvolumes, arg) < 0 ? -1 : 1;
	case OPT_TMPFS: {
		char path[PATH_MAX];
		uint64_t size;
		unsigned mode;
		if (parse_tmpfs(cmd, arg, path, sizeof path, &size, &mode) < 0)
			return -1;
		return push(&o->tmpfs, &o->ntmpfs, arg) < 0 ? -1 : 1;
	}
	case OPT_SHM_SIZE:
		if (lb_parse_size(arg, &o->shm_size) < 0 || o->shm_size == 0) {
			cli_error(cmd, "--shm-size '%s' is not a size such as 64m or 2g", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* What DST is in the sandbox before this volume goes over it, as a stat of the place that
 * holds it: inside another volume, that volume's source; inside a place the sandbox makes
 * empty (a private or hidden directory, a --tmpfs), nothing yet (the mount point is made to
 * fit); else the host's own path, which the read-only root shows. 0 with *st filled, or
 * -ENOENT when there is nothing there to mismatch. */
static int dst_in_sandbox(const cli_sandbox_opts *o, size_t self, const char *dst,
			  const lb_sandbox *sb, struct stat *st)
{
	size_t best = 0, bestlen = 0;
	for (size_t i = 0; i < o->nvolumes; i++) {
		const char *odst = strchr(o->volumes[i], ':') + 1;
		size_t n = strcspn(odst, ":");
		if (i == self || n <= bestlen || strlen(dst) <= n || strncmp(dst, odst, n) != 0 ||
		    dst[n] != '/')
			continue;
		best = i + 1;
		bestlen = n;
	}
	char p[PATH_MAX];
	if (best) {
		const char *osrc = o->volumes[best - 1];
		int n = snprintf(p, sizeof p, "%.*s%s", (int)strcspn(osrc, ":"), osrc, dst + bestlen);
		if (n < 0 || (size_t)n >= sizeof p)
			return -ENAMETOOLONG;
		return stat(p, st) < 0 ? -errno : 0;
	}
	if (lb_sandbox_path_hidden(sb, dst))
		return -ENOENT;
	for (size_t i = 0; i < o->ntmpfs; i++) {
		size_t n = strcspn(o->tmpfs[i], ":");
		snprintf(p, sizeof p, "%.*s", (int)n, o->tmpfs[i]);
		if (lb_path_under(dst, p))
			return -ENOENT;
	}
	return stat(dst, st) < 0 ? -errno : 0;
}

static int apply_volume(const char *cmd, const cli_sandbox_opts *o, size_t self, lb_sandbox *sb)
{
	const char *spec = o->volumes[self];
	/* Again here: a recorded run's volumes (rerun, --resume) never passed the flag's parse. */
	if (check_volume(cmd, spec) < 0)
		return -1;
	LB_AUTOFREE char *s = strdup(spec);
	if (!s)
		return -1;
	char *src = s;
	char *dst = strchr(s, ':');
	*dst++ = '\0';
	char *mode = strchr(dst, ':');
	if (mode)
		*mode++ = '\0';
	bool writable = mode && strcmp(mode, "rw") == 0;
	char real[PATH_MAX];
	if (!realpath(src, real)) {
		cli_error(cmd, "-v '%s': %s: %s", spec, src, strerror(errno));
		return -1;
	}
	/* The host's kernel file systems would show the host's processes, devices and kernel
	 * settings inside, which is what the sandbox's fresh /proc and minimal /dev are for;
	 * GPUs come through --gpus. */
	if (lb_path_under(real, "/proc") || lb_path_under(real, "/sys") || lb_path_under(real, "/dev")) {
		cli_error(cmd, "-v '%s': %s is the host's kernel file system (/proc, /sys, /dev): it "
			  "is not mounted into the sandbox, which has its own /proc and /dev (GPUs: "
			  "--gpus)", spec, real);
		return -1;
	}
	/* A directory cannot be bound onto a file nor a file onto a directory: the kernel's
	 * EINVAL would otherwise end the run as labbox's own setup failure. */
	struct stat sst, dst_st;
	if (stat(real, &sst) == 0 && dst_in_sandbox(o, self, dst, sb, &dst_st) == 0 &&
	    S_ISDIR(sst.st_mode) != S_ISDIR(dst_st.st_mode)) {
		bool dir = S_ISDIR(sst.st_mode);
		cli_error(cmd, "-v '%s': %s is a %s and %s is a %s in the sandbox: a volume goes "
			  "over a path of its own kind (give a %s as SRC%s)", spec, real,
			  dir ? "directory" : "file", dst, dir ? "file" : "directory",
			  dir ? "file" : "directory",
			  dir ? ", or mount the directory at a path that is not there" : "");
		return -1;
	}
	/* As root the experiment runs as uid 65534, not as the owner of what root made: a
	 * writable volume it cannot write is most likely a mistake, but not certainly one
	 * (a subdirectory or file inside may be its to write, or the run only reads), so it is
	 * said now, and the diagnosis of a refused write under it says it again. */
	uid_t puid;
	gid_t pgid;
	lb_sandbox_payload_ids(sb, &puid, &pgid);
	if (writable && puid != getuid() && stat(real, &sst) == 0 &&
	    !lb_mode_lets_write(&sst, puid, pgid))
		cli_warn(cmd, "-v '%s': the experiment runs as uid %u (labbox runs as root) and "
			  "cannot write %s (owner uid %u, group %u, mode %04o): chown %u %s, or "
			  "chmod o+w%s %s, to let it write there", spec, (unsigned)puid, real,
			  (unsigned)sst.st_uid, (unsigned)sst.st_gid, (unsigned)(sst.st_mode & 07777),
			  (unsigned)puid, real, S_ISDIR(sst.st_mode) ? "x" : "", real);
	int r = lb_sandbox_add_bind(sb, real, dst, writable);
	if (r < 0) {
		cli_error(cmd, "-v '%s': %s: %s", spec, src, strerror(-r));
		return -1;
	}
	return 0;
}

/* Libraries size their thread pools by the host's cores, not the CPU limit: N cores shared
 * by 64 OpenMP threads run slower than N threads. The user's own -e wins. */
static const char *const thread_vars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
					  "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
					  "VECLIB_MAXIMUM_THREADS"};

static bool env_sets(const cli_sandbox_opts *o, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < o->nenv; i++)
		if (strncmp(o->env[i], name, n) == 0 && o->env[i][n] == '=')
			return true;
	return false;
}

int cli_mounts_apply(const char *cmd, const cli_sandbox_opts *o, lb_sandbox *sb)
{
	for (size_t i = 0; i < o->nvolumes; i++)
		if (apply_volume(cmd, o, i, sb) < 0)
			return CLI_EXIT_USAGE;
	for (size_t i = 0; i < o->ntmpfs; i++) {
		char path[PATH_MAX];
		uint64_t size;
		unsigned mode;
		if (parse_tmpfs(cmd, o->tmpfs[i], path, sizeof path, &size, &mode) < 0)
			return CLI_EXIT_USAGE;
		int r = lb_sandbox_add_tmpfs(sb, path, size, mode);
		if (r < 0) {
			cli_error(cmd, "--tmpfs '%s': %s", o->tmpfs[i], strerror(-r));
			return CLI_EXIT_USAGE;
		}
	}
	if (o->shm_size && lb_sandbox_set_shm_size(sb, o->shm_size) < 0) {
		cli_error(cmd, "--shm-size: not a size");
		return CLI_EXIT_USAGE;
	}
	if (o->cpus > 0)
		return cli_thread_env(o, o->cpus, sb);
	return 0;
}

/* The thread count for a share of cpus: never more threads than the CPUs this process may
 * run on (--cpus 1000 on a two-core host is two cores' worth). */
static double thread_count(double cpus)
{
	double n = ceil(cpus);
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
	    n > CPU_COUNT(&set))
		n = CPU_COUNT(&set);
	return n;
}

void cli_thread_env_json(const cli_sandbox_opts *o, double cpus, json_object *out)
{
	char kv[64];
	double n = thread_count(cpus);
	for (size_t i = 0; i < sizeof thread_vars / sizeof *thread_vars; i++) {
		if (env_sets(o, thread_vars[i]))
			continue;
		snprintf(kv, sizeof kv, "%s=%.0f", thread_vars[i], n);
		json_object_array_add(out, json_object_new_string(kv));
	}
}

int cli_thread_env(const cli_sandbox_opts *o, double cpus, lb_sandbox *sb)
{
	char kv[64];
	double n = thread_count(cpus);
	for (size_t i = 0; i < sizeof thread_vars / sizeof *thread_vars; i++) {
		if (env_sets(o, thread_vars[i]))
			continue;
		snprintf(kv, sizeof kv, "%s=%.0f", thread_vars[i], n);
		if (lb_sandbox_add_env(sb, kv) < 0)
			return 125;
	}
	return 0;
}

void cli_mounts_json(const cli_sandbox_opts *o, struct json_object *j)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < o->ntmpfs; i++)
		json_object_array_add(a, json_object_new_string(o->tmpfs[i]));
	json_object_object_add(j, "tmpfs", a);
	json_object_object_add(j, "shm_size_bytes",
			       o->shm_size ? json_object_new_int64((int64_t)o->shm_size) : NULL);
}

int cli_mounts_from_json(struct json_object *j, cli_sandbox_opts *o)
{
	json_object *v;
	if (!j)
		return 0;
	if (json_object_object_get_ex(j, "shm_size_bytes", &v) && v)
		o->shm_size = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "tmpfs", &v) && json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (push(&o->tmpfs, &o->ntmpfs,
				 json_object_get_string(json_object_array_get_idx(v, i))) < 0)
				return -ENOMEM;
	return 0;
}

void cli_mounts_free(cli_sandbox_opts *o)
{
	for (size_t i = 0; i < o->ntmpfs; i++)
		free(o->tmpfs[i]);
	free(o->tmpfs);
}
