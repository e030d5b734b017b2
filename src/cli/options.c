/* Flags shared by `run` and `exec`, and resolution of the program to run. */
#include "cli.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/gate.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

/* text on f with control characters, DEL, C1 controls and bytes that are not UTF-8 shown as
 * \xNN, and format characters (format_char) as \uXXXX; newlines and tabs pass. */
static void show_controls(FILE *f, const char *text, size_t n)
{
	const unsigned char *u = (const unsigned char *)text;
	for (size_t i = 0; i < n;) {
		size_t k = u[i] < 0x80 ? 1 : lb_utf8_seq_len(u + i, n - i);
		bool c1 = k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0; /* U+0080..U+009F */
		bool ctl = k == 1 && ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') || u[i] == 0x7f);
		if (k >= 2 && lb_unicode_format_char(lb_utf8_code_point(u + i, k))) {
			fprintf(f, "\\u%04x", lb_utf8_code_point(u + i, k));
			i += k;
			continue;
		}
		if (k == 0 || ctl || c1) {
			size_t m = k ? k : 1;
			for (size_t j = 0; j < m; j++)
				fprintf(f, "\\x%02x", u[i + j]);
			i += m;
			continue;
		}
		fwrite(u + i, 1, k, f);
		i += k;
	}
}

/* One line on stderr, whatever the message carries. Messages quote what the experiment
 * wrote (labbox.yaml values, file names): its control bytes are shown, never sent to the
 * terminal as they are. */
static void say_line(const char *cmd, const char *kind, char *msg)
{
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	fprintf(stderr, "labbox%s%s: %s", *cmd ? " " : "", cmd, kind);
	show_controls(stderr, msg, strlen(msg));
	fputc('\n', stderr);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	say_line(cmd, "", msg);
	cli_json_note(msg);
}

void cli_warn(const char *cmd, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	say_line(cmd, "warning: ", msg);
}

void cli_bad_option(const char *cmd, char *const argv[], int optopt_val)
{
	extern int optind;
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	if (optopt_val && optopt_val < 256 && arg[0] == '-' && arg[1] != '-')
		cli_error(cmd, "unknown option '-%c' or missing value (see labbox %s --help)",
			  optopt_val, cmd);
	else
		cli_error(cmd, "unknown option '%s' or missing value (see labbox %s --help)", arg,
			  cmd);
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof **v);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

int cli_sandbox_opt(const char *cmd, int opt, const char *arg, cli_sandbox_opts *o)
{
	int m = cli_mount_opt(cmd, opt, arg, o); /* -v, --tmpfs, --shm-size: mounts.c */
	if (m)
		return m;
	switch (opt) {
	case OPT_BUDGET:
		if (lb_parse_seconds(arg, &o->budget) < 0) {
			cli_error(cmd, "--budget '%s' is not a positive number of seconds", arg);
			return -1;
		}
		return 1;
	case OPT_GRACE: {
		char *end;
		errno = 0;
		double g = strtod(arg, &end);
		if (errno || end == arg || *end || !(g >= 0) || g > 1e6) {
			cli_error(cmd, "--grace '%s' is not a number of seconds >= 0", arg);
			return -1;
		}
		o->grace = g;
		o->grace_set = true;
		return 1;
	}
	case OPT_MEMORY:
		if (lb_parse_size(arg, &o->memory) < 0 || o->memory == 0) {
			cli_error(cmd, "--memory '%s' is not a size such as 512m or 4g", arg);
			return -1;
		}
		/* Below this the sandbox's own processes are killed while they set it up, which
		 * would read as a crash; no interpreter starts in it anyway. */
		if (o->memory < CLI_MEMORY_MIN) {
			cli_error(cmd, "--memory '%s' is too small: the sandbox needs at least 32m "
				  "(a Python interpreter alone takes about 10m)", arg);
			return -1;
		}
		return 1;
	case OPT_CPUS: {
		char *end;
		errno = 0;
		o->cpus = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->cpus > 0) || o->cpus > 4096) {
			cli_error(cmd, "--cpus '%s' is not a positive number of CPUs", arg);
			return -1;
		}
		/* The CPU controller's smallest quota is 1 ms in each 100 ms period (docker's
		 * --cpus has the same floor): less was an infra_error after the run started. */
		if (o->cpus < 0.01) {
			cli_error(cmd, "--cpus '%s' is below 0.01, the smallest CPU share the kernel's "
				  "CPU controller gives (1 ms in each 100 ms)", arg);
			return -1;
		}
		return 1;
	}
	case OPT_PIDS:
		if (lb_parse_long(arg, &o->pids) < 0 || o->pids <= 0) {
			cli_error(cmd, "--pids-limit '%s' is not a positive integer", arg);
			return -1;
		}
		return 1;
	case OPT_NETWORK:
		if (strcmp(arg, "none") == 0)
			o->network = LB_NET_NONE;
		else if (strcmp(arg, "loopback") == 0)
			o->network = LB_NET_LOOPBACK;
		else if (strcmp(arg, "host") == 0)
			o->network = LB_NET_HOST;
		else {
			cli_error(cmd, "--network '%s' is not one of none, loopback, host", arg);
			return -1;
		}
		return 1;
	case OPT_JSON:
		o->json = true;
		return 1;
	case OPT_DISK:
		if (strcmp(arg, "0") == 0) {
			o->disk_limit = 0;
		} else if (lb_parse_size(arg, &o->disk_limit) < 0 || o->disk_limit == 0) {
			cli_error(cmd, "--disk-limit '%s' is not a size such as 2g, or 0 for none", arg);
			return -1;
		}
		o->disk_limit_set = true;
		return 1;
	case OPT_GPUS: {
		/* Parsed here, as every other flag is: a typo is a usage error on any host, not a
		 * GPU the host lacks (125), and never a count Slurm or docker reads on its own. */
		lb_gpu_spec g;
		char err[256];
		if (lb_sandbox_gpus_parse(arg, &g, err, sizeof err) < 0) {
			cli_error(cmd, "--gpus %s", err);
			return -1;
		}
		free(o->gpus);
		o->gpus = strdup(arg);
		return o->gpus ? 1 : -1;
	}
	case OPT_DEGRADED:
		/* isolation: mode ssh without a labbox on the host; gate: a runtime gate the
		 * experiment's own files could keep out (neither is part of all). */
		if (strcmp(arg, "memory") && strcmp(arg, "pids") && strcmp(arg, "cpus") &&
		    strcmp(arg, "disk") && strcmp(arg, "all") && strcmp(arg, "isolation") &&
		    strcmp(arg, "gate")) {
			cli_error(cmd, "--allow-degraded '%s' is not one of memory, pids, cpus, disk, all, "
				  "isolation, gate", arg);
			return -1;
		}
		if (strv_add(&o->degraded, &o->ndegraded, arg) < 0)
			return -1;
		return 1;
	case 'e':
		if (!strchr(arg, '=') || arg[0] == '=') {
			cli_error(cmd, "-e '%s' is not of the form NAME=VALUE", arg);
			return -1;
		}
		if (strv_add(&o->env, &o->nenv, arg) < 0)
			return -1;
		return 1;
	case OPT_HIDE:
		if (arg[0] != '/') {
			cli_error(cmd, "--hide '%s' is not an absolute path", arg);
			return -1;
		}
		if (strv_add(&o->hide, &o->nhide, arg) < 0)
			return -1;
		return 1;
	case OPT_SECRET_ENV:
		if (!lb_env_name_valid(arg)) {
			cli_error(cmd, "--secret-env '%s' is not a variable name", arg);
			return -1;
		}
		if (strv_add(&o->secret_env, &o->nsecret_env, arg) < 0)
			return -1;
		return 1;
	}
	return 0;
}

int cli_sandbox_apply(const char *cmd, const cli_sandbox_opts *o, lb_sandbox *sb)
{
	lb_sandbox_set_budget(sb, o->budget);
	if (o->grace_set)
		lb_sandbox_set_grace(sb, o->grace);
	lb_sandbox_set_network(sb, o->network);
	lb_sandbox_set_memory(sb, o->memory);
	lb_sandbox_set_cpus(sb, o->cpus);
	lb_sandbox_set_pids(sb, o->pids);
	for (size_t i = 0; i < o->nenv; i++)
		if (lb_sandbox_add_env(sb, o->env[i]) < 0) {
			cli_error(cmd, "-e '%s' is not of the form NAME=VALUE", o->env[i]);
			return CLI_EXIT_USAGE;
		}
	for (size_t i = 0; i < o->nsecret_env; i++) {
		const char *v = getenv(o->secret_env[i]);
		LB_AUTOFREE char *kv = NULL;
		if (!v) {
			cli_error(cmd, "--secret-env %s: %s is not set in labbox's environment",
				  o->secret_env[i], o->secret_env[i]);
			return CLI_EXIT_USAGE;
		}
		if (asprintf(&kv, "%s=%s", o->secret_env[i], v) < 0 || lb_sandbox_add_env(sb, kv) < 0)
			return CLI_EXIT_USAGE;
	}
	int mr = cli_mounts_apply(cmd, o, sb); /* -v, --tmpfs, --shm-size, thread counts */
	if (mr)
		return mr;
	for (size_t i = 0; i < o->ndegraded; i++)
		lb_sandbox_allow_degraded(sb, o->degraded[i]);
	/* After the volumes: a volume showing a hidden path hides it inside too. A path that is
	 * not there hides nothing: a typo, or a file moved since a recorded run (rerun,
	 * --resume), which would then be in sight where it is now. */
	for (size_t i = 0; i < o->nhide; i++) {
		struct stat hst;
		if (lstat(o->hide[i], &hst) < 0) {
			cli_error(cmd, "--hide '%s': %s, so nothing would be hidden (give the path as it "
				  "is now)", o->hide[i], strerror(errno));
			return CLI_EXIT_USAGE;
		}
		/* The root would hide everything, and /proc, /sys and /dev are the sandbox's own
		 * (the host's are never shown): hiding them would do nothing, or break the
		 * sandbox's set-up, while the record said it was done. */
		char hreal[PATH_MAX];
		if (realpath(o->hide[i], hreal) && lb_path_sandbox_own(hreal)) {
			cli_error(cmd, "--hide '%s': %s %s", o->hide[i], hreal,
				  strcmp(hreal, "/") == 0
					  ? "is the root: hiding it would hide everything"
					  : "is built by the sandbox itself (its own /proc, /sys and "
					    "/dev; the host's are never shown), so there is nothing to "
					    "hide");
			return CLI_EXIT_USAGE;
		}
		int r = lb_sandbox_mask(sb, o->hide[i]);
		if (r < 0) {
			cli_error(cmd, "--hide '%s': cannot hide it: %s", o->hide[i], strerror(-r));
			return 125;
		}
	}
	/* A limit the user gave is held by a file system of exp/'s own; the default one (half
	 * the free space) is a safety net and stays polled, which costs nothing at start-up.
	 * exec's writable directory is the user's own, not a staged copy: never remounted. */
	lb_sandbox_require_disk_fs(sb, strcmp(cmd, "exec") != 0 && o->disk_limit_set &&
					       o->disk_limit > 0);
	if (o->gpus && strcmp(o->gpus, "none") != 0) {
		char err[256];
		int r = lb_sandbox_use_gpus(sb, o->gpus, err, sizeof err);
		if (r < 0) {
			cli_error(cmd, "--gpus %s: %s", o->gpus, err);
			/* Asked for a GPU the host lacks: refused, never run on the CPU instead. */
			return r == -ENODEV ? 125 : CLI_EXIT_USAGE;
		}
	}
	return 0;
}

int cli_hide_outside(const char *cmd, const cli_sandbox_opts *o, const char *expdir)
{
	char exp[PATH_MAX], real[PATH_MAX];
	if (!o->nhide || !expdir || !realpath(expdir, exp))
		return 0;
	for (size_t i = 0; i < o->nhide; i++) {
		/* Absent: nothing there to show (a link into the experiment is a path in it). */
		if (!realpath(o->hide[i], real))
			continue;
		/* A directory that holds the experiment may be hidden (a Slurm node hides the
		 * runs directory its staged copy lives in): the run's exp/ is bound back. */
		if (lb_path_under(real, exp)) {
			cli_error(cmd, "--hide '%s' is in the experiment directory %s, which is copied "
				  "into the run (exp/) where the experiment sees it: move it out of "
				  "the experiment, or give it with -v from outside", o->hide[i], exp);
			return CLI_EXIT_USAGE;
		}
	}
	return 0;
}

int cli_runtime_gate_opt(const char *cmd, const char *arg, int *mode)
{
	lb_gate_mode m;
	if (lb_gate_mode_parse(arg, &m) < 0) {
		cli_error(cmd, "--runtime-gate '%s' is not one of off, record, on", arg);
		return -1;
	}
	*mode = (int)m;
	return 0;
}

uint64_t cli_disk_limit(const cli_sandbox_opts *o, const char *dir)
{
	return cli_disk_limit_shared(o, dir, 1);
}

uint64_t cli_disk_limit_shared(const cli_sandbox_opts *o, const char *dir, size_t share)
{
	if (o->disk_limit_set)
		return o->disk_limit;
	if (share == 0)
		share = 1;
	/* The directory may not exist yet: its nearest existing ancestor is on the same disk. */
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", dir);
	struct statvfs v;
	while (statvfs(path, &v) < 0) {
		char *slash = strrchr(path, '/');
		if (!slash || slash == path) {
			snprintf(path, sizeof path, "%s", slash == path ? "/" : ".");
			if (statvfs(path, &v) < 0)
				return ((uint64_t)10 << 30) / share;
			break;
		}
		*slash = '\0';
	}
	/* The free space is what runs at once share; the 10 GiB cap is each run's own. */
	uint64_t half = (uint64_t)v.f_bavail * v.f_frsize / 2 / share;
	if (half == 0)
		half = 1;
	return half < ((uint64_t)10 << 30) ? half : (uint64_t)10 << 30;
}

void cli_sandbox_opts_free(cli_sandbox_opts *o)
{
	for (size_t i = 0; i < o->nenv; i++)
		free(o->env[i]);
	free(o->env);
	for (size_t i = 0; i < o->nsecret_env; i++)
		free(o->secret_env[i]);
	free(o->secret_env);
	for (size_t i = 0; i < o->nvolumes; i++)
		free(o->volumes[i]);
	free(o->volumes);
	for (size_t i = 0; i < o->ndegraded; i++)
		free(o->degraded[i]);
	free(o->degraded);
	for (size_t i = 0; i < o->nhide; i++)
		free(o->hide[i]);
	free(o->hide);
	free(o->gpus);
	cli_mounts_free(o);
}

static bool looks_like_python(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "python", 6) == 0;
}

/* What a program under a hidden home needs visible, from its path as named: the venv that
 * holds it (a pyvenv.cfg beside it or one level up, where Python looks), else the
 * installation above a bin/ directory, else its own directory. */
static bool program_origin(const char *abs, char origin[PATH_MAX])
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", abs);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return false;
	*slash = '\0';
	char cfg[PATH_MAX + 16];
	struct stat st;
	snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", dir);
	bool beside = lstat(cfg, &st) == 0;
	char *up = strrchr(dir, '/');
	bool in_bin = up && up != dir && strcmp(up, "/bin") == 0;
	if (!beside && in_bin)
		*up = '\0'; /* the venv or the installation above bin/ */
	snprintf(origin, PATH_MAX, "%s", dir);
	return true;
}

int cli_resolve_program(const char *cmd, const char *name, lb_sandbox *sb, char **out)
{
	LB_AUTOFREE char *exe = NULL;
	int r = lb_find_executable(name, &exe);
	if (r < 0) {
		cli_error(cmd, "'%s': %s", name,
			  r == -ENOENT ? "command not found" : "not executable");
		return r == -ENOENT ? 127 : 126;
	}
	char abs[PATH_MAX];
	if (exe[0] != '/') {
		if (!realpath(exe, abs)) {
			cli_error(cmd, "'%s': %s", name, strerror(errno));
			return 127;
		}
	} else {
		snprintf(abs, sizeof abs, "%s", exe);
	}
	lb_python_info py;
	char err[512], origin[PATH_MAX];
	if (looks_like_python(abs) && lb_sandbox_path_hidden(sb, abs) &&
	    program_origin(abs, origin) &&
	    lb_python_probe_confined(abs, origin, NULL, &py, err, sizeof err) == 0) {
		/* A venv or an installation under a hidden home: asked what it is in a sandbox of
		 * its own, as the command itself will run (a venv's .pth files, a script named
		 * python-something, are no more trusted than the command), and only what its path
		 * shows is exposed, read-only. */
		r = lb_python_expose(sb, &py, false);
	} else {
		r = lb_sandbox_expose_program(sb, abs);
	}
	if (r < 0) {
		cli_error(cmd, "cannot expose '%s' in the sandbox: %s", abs, strerror(-r));
		return 125;
	}
	*out = strdup(abs);
	return *out ? 0 : 125;
}

static json_object *strv_to_json(char **v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

json_object *cli_sandbox_json(const cli_sandbox_opts *o)
{
	json_object *j = json_object_new_object();
	json_object_object_add(j, "network",
			       json_object_new_string(o->network == LB_NET_HOST	      ? "host"
						      : o->network == LB_NET_LOOPBACK ? "loopback"
										      : "none"));
	json_object_object_add(j, "memory_bytes", o->memory ? json_object_new_int64((int64_t)o->memory) : NULL);
	json_object_object_add(j, "cpus", o->cpus > 0 ? json_object_new_double(o->cpus) : NULL);
	json_object_object_add(j, "pids_limit", o->pids ? json_object_new_int64(o->pids) : NULL);
	json_object_object_add(j, "grace_s", json_object_new_double(o->grace_set ? o->grace : 5.0));
	json_object_object_add(j, "env", strv_to_json(o->env, o->nenv));
	/* Names only: a rerun takes the values from its own environment again. */
	json_object_object_add(j, "secret_env", strv_to_json(o->secret_env, o->nsecret_env));
	json_object_object_add(j, "volumes", strv_to_json(o->volumes, o->nvolumes));
	json_object_object_add(j, "allow_degraded", strv_to_json(o->degraded, o->ndegraded));
	json_object_object_add(j, "hide", strv_to_json(o->hide, o->nhide));
	json_object_object_add(j, "gpus", o->gpus ? json_object_new_string(o->gpus) : NULL);
	json_object_object_add(j, "disk_limit_bytes",
			       o->disk_limit_set ? json_object_new_int64((int64_t)o->disk_limit) : NULL);
	cli_mounts_json(o, j);
	return j;
}

static int strv_from_json(json_object *j, const char *key, char ***v, size_t *n)
{
	json_object *a;
	if (!json_object_object_get_ex(j, key, &a) || !json_object_is_type(a, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(a); i++)
		if (strv_add(v, n, json_object_get_string(json_object_array_get_idx(a, i))) < 0)
			return -ENOMEM;
	return 0;
}

int cli_sandbox_opts_from_json(json_object *j, cli_sandbox_opts *o)
{
	json_object *v;
	if (!j)
		return 0;
	if (json_object_object_get_ex(j, "network", &v) && v) {
		const char *n = json_object_get_string(v);
		o->network = strcmp(n, "host") == 0	  ? LB_NET_HOST
			     : strcmp(n, "loopback") == 0 ? LB_NET_LOOPBACK
							  : LB_NET_NONE;
	}
	if (json_object_object_get_ex(j, "memory_bytes", &v) && v)
		o->memory = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "cpus", &v) && v)
		o->cpus = json_object_get_double(v);
	if (json_object_object_get_ex(j, "pids_limit", &v) && v)
		o->pids = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "grace_s", &v) && v) {
		o->grace = json_object_get_double(v);
		o->grace_set = true;
	}
	if (json_object_object_get_ex(j, "disk_limit_bytes", &v) && v) {
		o->disk_limit = (uint64_t)json_object_get_int64(v);
		o->disk_limit_set = true;
	}
	if (json_object_object_get_ex(j, "gpus", &v) && v && !(o->gpus = strdup(json_object_get_string(v))))
		return -ENOMEM;
	if (strv_from_json(j, "env", &o->env, &o->nenv) < 0 ||
	    strv_from_json(j, "secret_env", &o->secret_env, &o->nsecret_env) < 0 ||
	    strv_from_json(j, "volumes", &o->volumes, &o->nvolumes) < 0 ||
	    strv_from_json(j, "allow_degraded", &o->degraded, &o->ndegraded) < 0 ||
	    strv_from_json(j, "hide", &o->hide, &o->nhide) < 0)
		return -ENOMEM;
	return cli_mounts_from_json(j, o);
}

int cli_printf(const char *fmt, ...)
{
	lb_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int r = lb_show_vprintf(&b, fmt, ap);
	va_end(ap);
	/* the format's own text may be labbox's control bytes no more than the arguments */
	size_t n = b.len;
	if (r == 0)
		show_controls(stdout, b.data ? b.data : "", n);
	lb_buf_free(&b);
	return r < 0 ? r : (int)n;
}

void cli_print_block(const char *text)
{
	show_controls(stdout, text, strlen(text));
}

static const char *grant_str(json_object *o, const char *key, const char *dflt)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : dflt;
}

/* What a manifest grants beyond labbox's defaults, as the flags that grant it: mounts, a
 * network, host variables, GPUs, less isolation, another backend, a weaker gate or check,
 * variables that run code before the gate. What rerun repeats without asking only when the
 * record carries this user's seal. */
/* Each K=V of env that would run code before the gate (lb_gate_startup_var). */
static void grant_env(json_object *env, lb_strv *g)
{
	if (!json_object_is_type(env, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(env); i++) {
		const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
		const char *eq = kv ? strchr(kv, '=') : NULL;
		char name[256];
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - kv) : 0, kv ? kv : "");
		if (eq && lb_gate_startup_var(name))
			lb_strv_pushf(g, "-e %s", kv);
	}
}

/* The interpreter a record names on the host: a path rerun passes as the user's own (the
 * command line's, or the default found then) is probed there, outside the sandbox; one an
 * environment chose is chosen again by name. */
static void grant_interpreter(json_object *interp, lb_strv *g)
{
	if (!interp)
		return;
	const char *by = grant_str(interp, "named_by", "command line");
	json_object *v;
	bool confined = json_object_object_get_ex(interp, "probed_in_sandbox", &v) &&
			json_object_get_boolean(v);
	const char *flag = strcmp(grant_str(interp, "language", "python"), "python") == 0
				   ? "--python" : "--interpreter";
	if (strcmp(by, "env") == 0) {
		const char *env = grant_str(interp, "env_asked", "auto");
		if (strcmp(env, "auto") != 0)
			lb_strv_pushf(g, "--env %s", env);
	} else if (strcmp(by, "labbox.yaml") != 0 && !confined && grant_str(interp, "path", NULL)) {
		lb_strv_pushf(g, "%s %s", flag, grant_str(interp, "path", ""));
	}
}

static void record_grants(json_object *cfg, json_object *interp, json_object *env_template, lb_strv *g)
{
	json_object *sbj = json_object_object_get(cfg, "sandbox"), *a;
	grant_interpreter(interp, g);
	/* A sweep's invocation names its interpreter and engine as given. */
	static const char *const named[][2] = {{"python", "--python"},
					       {"env_asked", "--env"},
					       {"engine", "--engine"},
					       {"engine_asked", "--engine"}};
	for (size_t k = 0; k < sizeof named / sizeof *named; k++)
		if (grant_str(cfg, named[k][0], NULL))
			lb_strv_pushf(g, "%s %s", named[k][1], grant_str(cfg, named[k][0], ""));
	grant_env(env_template, g);
	static const char *const lists[][2] = {{"volumes", "-v"},
					       {"secret_env", "--secret-env"},
					       {"allow_degraded", "--allow-degraded"}};
	for (size_t k = 0; k < sizeof lists / sizeof *lists; k++)
		if (json_object_object_get_ex(sbj, lists[k][0], &a) &&
		    json_object_is_type(a, json_type_array))
			for (size_t i = 0; i < json_object_array_length(a); i++)
				lb_strv_pushf(g, "%s %s", lists[k][1],
					      json_object_get_string(json_object_array_get_idx(a, i)));
	grant_env(json_object_object_get(sbj, "env"), g);
	const char *net = grant_str(sbj, "network", "none");
	if (strcmp(net, "none") != 0)
		lb_strv_pushf(g, "--network %s", net);
	const char *gpus = grant_str(sbj, "gpus", "none");
	if (strcmp(gpus, "none") != 0)
		lb_strv_pushf(g, "--gpus %s", gpus);
	const char *mode = grant_str(cfg, "mode", "local");
	if (strcmp(mode, "local") != 0) {
		const char *where = strcmp(mode, "ssh") == 0	   ? grant_str(cfg, "host", "?")
				    : strcmp(mode, "docker") == 0 ? grant_str(cfg, "image", "a built image")
				    : strcmp(mode, "colab") == 0  ? grant_str(cfg, "drive", "?")
								   : "";
		lb_strv_pushf(g, "--mode %s%s%s", mode, *where ? " " : "", where);
	}
	const char *pol = grant_str(cfg, "policy", "standard");
	if (strcmp(pol, "permissive") == 0)
		lb_strv_pushf(g, "--policy %s", pol);
	const char *gate = grant_str(cfg, "runtime_gate", "default");
	if (strcmp(gate, "off") == 0 || strcmp(gate, "record") == 0)
		lb_strv_pushf(g, "--runtime-gate %s", gate);
	json_object *v;
	if (json_object_object_get_ex(cfg, "trust_project", &v) && json_object_get_boolean(v))
		lb_strv_push(g, "--trust-project");
	if (json_object_object_get_ex(cfg, "install_remote", &v) && json_object_get_boolean(v))
		lb_strv_push(g, "--install-remote");
	/* Less containment is granted as more access is: a limit looser than a plain run's. */
	lb_record_loose_limits(cfg, g);
}

size_t cli_record_grants(json_object *cfg, json_object *interp, json_object *env_template,
			 lb_buf *out)
{
	lb_strv g = {0};
	record_grants(cfg, interp, env_template, &g);
	for (size_t i = 0; i < g.n; i++)
		lb_buf_printf(out, "%s%s", i ? ", " : "", g.v[i]);
	size_t n = g.n;
	lb_strv_free(&g);
	return n;
}

int cli_output_not_records(const char *cmd, const char *runs_dir, const char *opt,
			   const char *path)
{
	LB_AUTOFREE char *state = lb_record_state_dir();
	char area[PATH_MAX];
	if (!lb_record_output_refused(state, runs_dir, path, area))
		return 0;
	cli_error(cmd, "%s '%s' lies in labbox's records (%s): it would write over them; "
		  "choose a path outside", opt, path, area);
	return CLI_EXIT_USAGE;
}
