/* gate: staging the runtime gate into a run and reading back what it recorded. */
#include "labbox/gate.h"
#include "labbox/check.h"
#include "labbox/util.h"
#include "gate_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lb_gate_mode_parse(const char *s, lb_gate_mode *out)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "off") == 0)
		*out = LB_GATE_OFF;
	else if (strcmp(s, "record") == 0)
		*out = LB_GATE_RECORD;
	else if (strcmp(s, "on") == 0)
		*out = LB_GATE_ON;
	else
		return -EINVAL;
	return 0;
}

/* Variables a native library reads when it starts (or when a module the experiment may
 * import starts it) to load a shared object, or code of another language, from a path they
 * name. The gate refuses setting them during the run by this same list (its loader_env, which
 * tests/unit/test_gate.c compares with this one). */
static const char *const loader_vars[] = {
	"GCONV_PATH",			/* glibc's iconv converters */
	"OPENSSL_CONF", "OPENSSL_CONF_INCLUDE", "OPENSSL_MODULES", "OPENSSL_ENGINES",
	"OMP_TOOL_LIBRARIES",		/* an OpenMP runtime's tools (numpy's, torch's) */
	"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH",
	"NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN",
	"HDF5_PLUGIN_PATH",		/* h5py's filters */
	"TCL_LIBRARY", "TK_LIBRARY", "TCLLIBPATH", /* tkinter runs init.tcl from there */
	"QT_PLUGIN_PATH", "QT_QPA_PLATFORM_PLUGIN_PATH", "GTK_PATH", "GTK_MODULES",
	"GIO_MODULE_DIR", "GI_TYPELIB_PATH", "GST_PLUGIN_PATH", "GST_PLUGIN_PATH_1_0",
	"GDK_PIXBUF_MODULE_FILE", "LIBGL_DRIVERS_PATH", "__EGL_VENDOR_LIBRARY_FILENAMES",
	"VK_ICD_FILENAMES", "VK_LAYER_PATH", "OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH",
	"SASL_PATH", "GIO_EXTRA_MODULES", "GST_PLUGIN_SYSTEM_PATH", "GST_PLUGIN_SYSTEM_PATH_1_0",
	"OCL_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_ADD_LAYER_PATH",
	"PJRT_NAMES_AND_LIBRARY_PATHS", "OMPI_MCA_mca_base_component_path", "NCCL_CONF_FILE",
};

const char *const *lb_gate_loader_vars(size_t *n)
{
	*n = sizeof loader_vars / sizeof *loader_vars;
	return loader_vars;
}

bool lb_gate_startup_var(const char *name)
{
	/* Every PYTHON variable is the interpreter's, and a list of the dangerous ones stays
	 * behind the interpreter's releases (PYTHONPYCACHEPREFIX loads the gate's own .pyc from
	 * where it says, PYTHONWARNINGS imports a module before site): all are refused but these,
	 * which change no code that runs. PYTHONPATH is the gate's to place (LABBOX_GATE_PYTHONPATH). */
	static const char *const harmless[] = {"PYTHONPATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
					       "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONFAULTHANDLER"};
	if (!name)
		return false;
	/* Every LD_ variable is the loader's (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT...), and
	 * the libraries' own are listed. */
	if (strncmp(name, "LD_", 3) == 0)
		return true;
	for (size_t i = 0; i < sizeof loader_vars / sizeof *loader_vars; i++)
		if (strcmp(name, loader_vars[i]) == 0)
			return true;
	/* R's and Octave's own: each names a file or a package that runs before the
	 * experiment's first line, unread by the check (R_PROFILE, R_ENVIRON, R_LIBS with
	 * R_DEFAULT_PACKAGES, R_TESTS; OCTAVE_SITE_INITFILE, OCTAVE_HOME...). */
	static const char *const other_lang[] = {"R_PROFILE", "R_ENVIRON", "R_LIBS",
						 "R_DEFAULT_PACKAGES", "R_TESTS", "R_HOME",
						 "R_SHARE_DIR", "R_INCLUDE_DIR", "R_DOC_DIR",
						 "R_ARCH", "R_SCRIPT_", "OCTAVE_", "BASH_FUNC_"};
	for (size_t i = 0; i < sizeof other_lang / sizeof *other_lang; i++)
		if (strncmp(name, other_lang[i], strlen(other_lang[i])) == 0)
			return true;
	/* The shells' own, for what starts through a shell script (R's bin/R, wrappers): the
	 * file bash runs first in a script (BASH_ENV; sh's ENV is for interactive shells only,
	 * and an RL experiment's ENV names its environment), exported functions that replace
	 * commands, and options that run code (SHELLOPTS with xtrace). RHOME picks the R that
	 * Rscript starts. */
	static const char *const shell[] = {"BASH_ENV", "SHELLOPTS", "BASHOPTS", "RHOME"};
	for (size_t i = 0; i < sizeof shell / sizeof *shell; i++)
		if (strcmp(name, shell[i]) == 0)
			return true;
	if (strncmp(name, "PYTHON", 6) != 0)
		return false;
	for (size_t i = 0; i < sizeof harmless / sizeof *harmless; i++)
		if (strcmp(name, harmless[i]) == 0)
			return false;
	return true;
}

const char *lb_gate_mode_name(lb_gate_mode m)
{
	switch (m) {
	case LB_GATE_OFF:
		return "off";
	case LB_GATE_RECORD:
		return "record";
	case LB_GATE_ON:
		return "on";
	case LB_GATE_DEFAULT:
		break;
	}
	return "default";
}

lb_gate_mode lb_gate_effective(lb_gate_mode asked, int policy)
{
	if (asked != LB_GATE_DEFAULT)
		return asked;
	/* permissive reports and rejects nothing statically; at run time it records likewise. */
	return policy == LB_CHECK_PERMISSIVE ? LB_GATE_RECORD : LB_GATE_ON;
}

int gate_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	int r = lb_write_all(fd, data, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlink(path);
	return r;
}

static int join(char *out, size_t outlen, const char *a, const char *b)
{
	int n = snprintf(out, outlen, "%s/%s", a, b);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int make_channel(const char *path, uid_t uid, gid_t gid, int fd[2])
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	if (mkfifo(path, 0600) < 0)
		return -errno;
	/* Opened by labbox before the payload owns it: permissions are checked at open only. */
	fd[0] = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd[0] < 0)
		return -errno;
	fd[1] = open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd[1] < 0 || fstat(fd[0], &st) < 0 || !S_ISFIFO(st.st_mode))
		return fd[1] < 0 ? -errno : -EEXIST;
	if (uid != (uid_t)-1 && fchown(fd[0], uid, gid) < 0)
		return -errno;
	return fchmod(fd[0], 0200) < 0 ? -errno : 0;
}

int lb_gate_stage(const char *run_dir, uid_t uid, gid_t gid, lb_gate_paths *out)
{
	out->fd[0] = out->fd[1] = -1;
	int r = join(out->dir, sizeof out->dir, run_dir, "gate");
	if (r == 0)
		r = join(out->py_dir, sizeof out->py_dir, out->dir, "py");
	if (r == 0)
		r = join(out->events, sizeof out->events, out->dir, "events.jsonl");
	if (r < 0)
		return r;
	/* The payload writes the events channel, nothing else: the directory owned by labbox's
	 * user, the channel by the payload's. py/ is the backend's to write (lb_gate_write_py),
	 * or to give the sandbox from memory. */
	if (mkdir(out->dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	r = make_channel(out->events, uid, gid, out->fd);
	if (r < 0) {
		for (int i = 0; i < 2; i++)
			if (out->fd[i] >= 0)
				close(out->fd[i]);
		out->fd[0] = out->fd[1] = -1;
	}
	return r;
}

int lb_gate_write_py(const char *py_dir)
{
	/* Read by the payload: 0755 and 0644, owned by labbox's user. */
	if (mkdir(py_dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	char path[PATH_MAX];
	int r = join(path, sizeof path, py_dir, "sitecustomize.py");
	return r < 0 ? r : gate_write_file(path, lb_gate_source, lb_gate_source_len, 0644);
}

/* One "key hex" line: the gate parses it with str methods, and hex carries any path. */
static int cfg_line(lb_buf *b, const char *key, const char *val)
{
	static const char hex[] = "0123456789abcdef";
	int r = lb_buf_append(b, key, strlen(key));
	if (r == 0)
		r = lb_buf_append(b, " ", 1);
	for (const unsigned char *p = (const unsigned char *)val; r == 0 && *p; p++) {
		char h[2] = {hex[*p >> 4], hex[*p & 15]};
		r = lb_buf_append(b, h, 2);
	}
	return r == 0 ? lb_buf_append(b, "\n", 1) : r;
}

int lb_gate_config_text(const lb_gate_config *cfg, lb_buf *out)
{
	lb_buf b = {0};
	char num[3][24];
	snprintf(num[0], sizeof num[0], "%d", LB_GATE_MAX_EVENTS);
	snprintf(num[1], sizeof num[1], "%d", LB_GATE_MAX_LINE);
	int r = lb_buf_append(&b, "labbox-gate 1\n", 14);
	if (r == 0)
		r = cfg_line(&b, "policy", cfg->policy ? cfg->policy : "standard");
	if (r == 0)
		r = cfg_line(&b, "enforce", cfg->mode == LB_GATE_ON ? "1" : "0");
	if (r == 0)
		r = cfg_line(&b, "network", cfg->network ? "1" : "0");
	if (r == 0)
		r = cfg_line(&b, "exp_dir", cfg->exp_dir ? cfg->exp_dir : "");
	if (r == 0 && cfg->staged_ns > 0) {
		snprintf(num[2], sizeof num[2], "%lld", (long long)cfg->staged_ns);
		r = cfg_line(&b, "staged_ns", num[2]);
	}
	if (r == 0 && cfg->unread_dirs && cfg->unread_dirs[0])
		r = cfg_line(&b, "unread_dirs", cfg->unread_dirs);
	for (size_t i = 0; r == 0 && i < cfg->noutputs; i++)
		r = cfg_line(&b, "output", cfg->outputs[i]);
	for (size_t i = 0; r == 0 && i < cfg->nstdlib; i++)
		r = cfg_line(&b, "stdlib", cfg->stdlib[i]);
	if (r == 0 && cfg->nstdlib && cfg->stdlib_for && *cfg->stdlib_for)
		r = cfg_line(&b, "stdlib_for", cfg->stdlib_for);
	if (r == 0)
		r = cfg_line(&b, "events", LB_GATE_EVENTS);
	if (r == 0)
		r = cfg_line(&b, "max_events", num[0]);
	if (r == 0)
		r = cfg_line(&b, "max_line", num[1]);
	if (r < 0) {
		lb_buf_free(&b);
		return r;
	}
	*out = b;
	return 0;
}

int lb_gate_write_config(const char *py_dir, const lb_gate_config *cfg)
{
	lb_buf b = {0};
	char path[PATH_MAX];
	int r = lb_gate_config_text(cfg, &b);
	if (r == 0)
		r = join(path, sizeof path, py_dir, LB_GATE_CONFIG);
	if (r == 0)
		r = gate_write_file(path, b.data, b.len, 0644);
	lb_buf_free(&b);
	return r;
}

/* ---- the events channel ---------------------------------------------------------------- */

/* A string from the channel, made valid UTF-8 (bytes that are not are '?') and cut at max
 * bytes: the experiment can write anything there. NULL for a non-string. */
static json_object *clean_string(json_object *v, size_t max)
{
	if (!v || !json_object_is_type(v, json_type_string))
		return NULL;
	const unsigned char *s = (const unsigned char *)json_object_get_string(v);
	size_t len = (size_t)json_object_get_string_len(v);
	if (len > max)
		len = max;
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t n = lb_utf8_seq_len(s + i, len - i);
		if (n == 0 || s[i] == 0) {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	json_object *r = json_object_new_string_len(out, (int)o);
	free(out);
	return r;
}

/* An argument summary as the gate writes them: strings, numbers, booleans, null, and lists
 * of those two deep at most, at most 8 elements each. */
static json_object *clean_arg(json_object *v, int depth)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return NULL;
	case json_type_boolean:
		return json_object_new_boolean(json_object_get_boolean(v));
	case json_type_int:
		return json_object_new_int64(json_object_get_int64(v));
	case json_type_double: {
		double d = json_object_get_double(v);
		return d == d && d - d == 0 ? json_object_new_double(d) : json_object_new_string("NaN");
	}
	case json_type_string:
		return clean_string(v, 400);
	case json_type_array: {
		json_object *a = json_object_new_array();
		if (depth >= 2) {
			json_object_array_add(a, json_object_new_string("..."));
			return a;
		}
		size_t n = json_object_array_length(v);
		for (size_t i = 0; i < n && i < 9; i++)
			json_object_array_add(a, clean_arg(json_object_array_get_idx(v, i), depth + 1));
		return a;
	}
	case json_type_object:
		break;
	}
	return json_object_new_string("<object>");
}

static bool rule_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 5 && strncmp(s, "LB", 2) == 0)
		return s[2] >= '0' && s[2] <= '9' && s[3] >= '0' && s[3] <= '9' && s[4] >= '0' &&
		       s[4] <= '9';
	if (strncmp(s, "gate.", 5) != 0 || n > 24 || n < 6)
		return false;
	for (size_t i = 5; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z'))
			return false;
	return true;
}

/* One line of the channel into an event, or NULL when it is not one. */
static json_object *parse_line(const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(8);
	if (!tok)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	json_object *doc = json_tokener_parse_ex(tok, line, (int)len);
	bool whole = doc && json_tokener_get_error(tok) == json_tokener_success &&
		     (size_t)json_tokener_get_parse_end(tok) == len;
	json_tokener_free(tok);
	json_object *ev = NULL, *v;
	if (!whole || !json_object_is_type(doc, json_type_object))
		goto out;
	if (!json_object_object_get_ex(doc, "v", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int(v) != 1)
		goto out;
	json_object *event = NULL, *rule = NULL;
	if (!json_object_object_get_ex(doc, "event", &event) ||
	    !json_object_is_type(event, json_type_string) || json_object_get_string_len(event) == 0 ||
	    json_object_get_string_len(event) > 64)
		goto out;
	if (!json_object_object_get_ex(doc, "rule", &rule) ||
	    !json_object_is_type(rule, json_type_string) || !rule_id_ok(json_object_get_string(rule)))
		goto out;
	ev = json_object_new_object();
	json_object_object_add(ev, "event", clean_string(event, 64));
	json_object *args = json_object_new_array();
	if (json_object_object_get_ex(doc, "args", &v) && json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);
		for (size_t i = 0; i < n && i < 6; i++)
			json_object_array_add(args, clean_arg(json_object_array_get_idx(v, i), 0));
	}
	json_object_object_add(ev, "args", args);
	json_object_object_add(ev, "refused",
			       json_object_new_boolean(json_object_object_get_ex(doc, "refused", &v) &&
						       json_object_is_type(v, json_type_boolean) &&
						       json_object_get_boolean(v)));
	const char *rid = json_object_get_string(rule);
	json_object_object_add(ev, "rule", json_object_new_string(rid));
	json_object_object_add(ev, "static_rule", strncmp(rid, "LB", 2) == 0
							  ? json_object_new_string(rid) : NULL);
	json_object_object_add(ev, "title", json_object_object_get_ex(doc, "title", &v)
						    ? clean_string(v, 120) : NULL);
	json_object_object_add(ev, "file", json_object_object_get_ex(doc, "file", &v)
						   ? clean_string(v, 1024) : NULL);
	json_object *line_v = NULL;
	if (json_object_object_get_ex(doc, "line", &v) && json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 0 && json_object_get_int64(v) < 100000000)
		line_v = json_object_new_int64(json_object_get_int64(v));
	json_object_object_add(ev, "line", line_v);
	json_object *pid_v = NULL;
	if (json_object_object_get_ex(doc, "pid", &v) && json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 0 && json_object_get_int64(v) < (1 << 30))
		pid_v = json_object_new_int64(json_object_get_int64(v));
	json_object_object_add(ev, "pid", pid_v);
	json_object_object_add(ev, "detail", json_object_object_get_ex(doc, "detail", &v)
						     ? clean_string(v, 400) : NULL);
out:
	json_object_put(doc);
	return ev;
}

/* The line the gate writes once it is fully in (src/gate/sitecustomize.py). */
static const char gate_hello[] = "{\"v\": 1, \"gate\": \"installed\"}";

/* The gate found its channel replaced (dup2 over its descriptor) and wrote on, through the
 * file opened again; and, once, that it dropped events past its cap. */
static const char gate_tampered[] = "{\"v\": 1, \"gate\": \"channel tampered\"}";
static const char gate_dropped[] = "{\"v\": 1, \"gate\": \"dropped\"}";

static bool is_line(const char *line, size_t n, const char *want, size_t wn)
{
	return n == wn && memcmp(line, want, n) == 0;
}

static bool is_hello(const char *line, size_t n)
{
	return is_line(line, n, gate_hello, sizeof gate_hello - 1);
}

static bool has_line(const char *data, size_t len, const char *want, size_t wn)
{
	for (size_t i = 0; data && i < len;) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;
		if (nl && is_line(data + i, end - i, want, wn))
			return true;
		i = end + 1;
	}
	return false;
}

bool lb_gate_heard(const char *data, size_t len)
{
	return has_line(data, len, gate_hello, sizeof gate_hello - 1);
}

bool lb_gate_tampered(const char *data, size_t len)
{
	return has_line(data, len, gate_tampered, sizeof gate_tampered - 1);
}

static bool same_field(json_object *a, json_object *b, const char *key)
{
	json_object *x = NULL, *y = NULL;
	json_object_object_get_ex(a, key, &x);
	json_object_object_get_ex(b, key, &y);
	if (!x || !y)
		return x == y;
	if (json_object_is_type(x, json_type_boolean) || json_object_is_type(y, json_type_boolean))
		return json_object_get_boolean(x) == json_object_get_boolean(y);
	return strcmp(json_object_get_string(x), json_object_get_string(y)) == 0;
}

/* Whether an event of ev's kind (event, rule, refused) is among those kept. */
static bool kind_kept(json_object *events, json_object *ev)
{
	size_t n = json_object_array_length(events);
	for (size_t i = 0; i < n; i++) {
		json_object *k = json_object_array_get_idx(events, i);
		if (same_field(k, ev, "event") && same_field(k, ev, "rule") &&
		    same_field(k, ev, "refused"))
			return true;
	}
	return false;
}

static bool is_uncaught(json_object *ev)
{
	json_object *v;
	return json_object_object_get_ex(ev, "event", &v) &&
	       strcmp(json_object_get_string(v), LB_GATE_UNCAUGHT) == 0 &&
	       json_object_object_get_ex(ev, "rule", &v) &&
	       strcmp(json_object_get_string(v), "gate.uncaught") == 0 &&
	       json_object_object_get_ex(ev, "refused", &v) && !json_object_get_boolean(v);
}

/* Whether ev is past the caps, given the events kept so far: past LB_GATE_MAX_EVENTS only an
 * event of a kind not kept yet is kept, so a flood of one (sys.audit raises any) does not hide
 * another. The first uncaught exception of the main program is kept past every cap: it
 * decides the verdict, and lines the experiment wrote into the channel (as many kinds as it
 * likes) must not push it out. One is enough, and more would let a flood of them in. */
static bool past_caps(json_object *events, json_object *ev)
{
	size_t have = json_object_array_length(events);
	if (have >= LB_GATE_MAX_EVENTS && is_uncaught(ev) && !lb_gate_uncaught(events))
		return false;
	return have >= LB_GATE_MAX_EVENTS &&
	       (have >= LB_GATE_MAX_EVENTS + LB_GATE_MAX_KINDS || kind_kept(events, ev));
}

json_object *lb_gate_uncaught_record(json_object *ev)
{
	if (!ev)
		return NULL;
	json_object *r = json_object_new_object(), *args, *v;
	if (!r)
		return NULL;
	bool has_args = json_object_object_get_ex(ev, "args", &args) &&
			json_object_is_type(args, json_type_array);
	for (size_t i = 0; i < 2; i++) {
		v = has_args ? json_object_array_get_idx(args, i) : NULL;
		json_object_object_add(r, i ? "message" : "exception",
				       v && json_object_is_type(v, json_type_string)
					       ? json_object_get(v) : NULL);
	}
	static const char *const keys[] = {"file", "line", "pid", "detail"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		json_object_object_add(r, keys[i], json_object_object_get_ex(ev, keys[i], &v)
							   ? json_object_get(v) : NULL);
	return r;
}

json_object *lb_gate_uncaught(json_object *events)
{
	if (!events || !json_object_is_type(events, json_type_array))
		return NULL;
	size_t n = json_object_array_length(events);
	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(events, i);
		if (is_uncaught(ev))
			return ev;
	}
	return NULL;
}

int lb_gate_parse_events(const char *data, size_t len, json_object *events, size_t *dropped,
			 size_t *bad)
{
	*dropped = 0;
	*bad = 0;
	if (!events || !json_object_is_type(events, json_type_array))
		return -EINVAL;
	size_t i = 0;
	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;
		size_t n = end - i;
		if (is_line(data + i, n, gate_dropped, sizeof gate_dropped - 1))
			(*dropped)++;
		else if (n > 0 && !is_hello(data + i, n) &&
			 !is_line(data + i, n, gate_tampered, sizeof gate_tampered - 1)) {
			json_object *ev = n < LB_GATE_MAX_LINE ? parse_line(data + i, n) : NULL;
			if (!ev)
				(*bad)++;
			else if (past_caps(events, ev)) {
				(*dropped)++;
				json_object_put(ev);
			} else if (json_object_array_add(events, ev) < 0) {
				json_object_put(ev);
				return -ENOMEM;
			}
		}
		i = end + 1;
	}
	return 0;
}

/* The gate's own lines ch->seen has kept (a bit each) */
enum { SEEN_HELLO = 1, SEEN_TAMPERED = 2, SEEN_DROPPED = 4 };

static int keep_line(lb_gate_channel *ch, const char *line, size_t n)
{
	if (ch->len + n + 1 > LB_GATE_MAX_READ)
		return 0; /* cannot be: the caps bound what is kept below this */
	memcpy(ch->buf + ch->len, line, n);
	ch->buf[ch->len + n] = '\n';
	ch->len += n + 1;
	return 0;
}

/* One whole line of the channel, without its newline. */
static int take_line(lb_gate_channel *ch, const char *line, size_t n)
{
	static const struct {
		const char *text;
		size_t len;
		unsigned bit;
	} own[] = {
		{gate_hello, sizeof gate_hello - 1, SEEN_HELLO},
		{gate_tampered, sizeof gate_tampered - 1, SEEN_TAMPERED},
		{gate_dropped, sizeof gate_dropped - 1, SEEN_DROPPED},
	};
	if (n == 0)
		return 0; /* the gate starts each line with a newline of its own */
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		if (is_line(line, n, own[i].text, own[i].len)) {
			if (ch->seen & own[i].bit) {
				if (own[i].bit == SEEN_DROPPED)
					ch->dropped++; /* another process's cap */
				return 0;
			}
			ch->seen |= own[i].bit;
			return keep_line(ch, line, n);
		}
	json_object *ev = n < LB_GATE_MAX_LINE ? parse_line(line, n) : NULL, *v;
	if (!ev) {
		ch->foreign++;
		return 0;
	}
	if (past_caps(ch->kept, ev)) {
		ch->dropped++;
		if (json_object_object_get_ex(ev, "refused", &v) && json_object_get_boolean(v))
			ch->refused_dropped++;
		json_object_put(ev);
		return 0;
	}
	if (json_object_array_add(ch->kept, ev) < 0) {
		json_object_put(ev);
		return -ENOMEM;
	}
	return keep_line(ch, line, n);
}

int lb_gate_channel_feed(lb_gate_channel *ch, const char *data, size_t n, bool at_end)
{
	if (!ch->kept && !(ch->kept = json_object_new_array()))
		return -ENOMEM;
	ch->total += n;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(data + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - data) : n, part = end - i;
		if (!ch->line_long && ch->line_len + part < LB_GATE_MAX_LINE) {
			memcpy(ch->line + ch->line_len, data + i, part);
			ch->line_len += part;
		} else {
			ch->line_long = true;
		}
		if (nl) {
			int r = 0;
			if (ch->line_long)
				ch->foreign++;
			else
				r = take_line(ch, ch->line, ch->line_len);
			ch->line_len = 0;
			ch->line_long = false;
			if (r < 0)
				return r;
		}
		i = end + 1;
	}
	if (at_end && (ch->line_len || ch->line_long)) {
		ch->foreign++;
		ch->line_len = 0;
		ch->line_long = false;
	}
	return 0;
}

/* The static finding an event corresponds to: same rule, the same file and line when the
 * check found one there, else the first finding of that rule. */
static json_object *matching_finding(json_object *findings, const char *rule, const char *file,
				     int64_t line)
{
	if (!findings || !json_object_is_type(findings, json_type_array) || strncmp(rule, "LB", 2))
		return NULL;
	json_object *first = NULL;
	size_t n = json_object_array_length(findings);
	for (size_t i = 0; i < n; i++) {
		json_object *f = json_object_array_get_idx(findings, i), *id, *ff, *fl;
		if (!json_object_object_get_ex(f, "id", &id) ||
		    strcmp(json_object_get_string(id), rule) != 0)
			continue;
		if (!first)
			first = f;
		if (file && line > 0 && json_object_object_get_ex(f, "file", &ff) &&
		    json_object_object_get_ex(f, "line", &fl) && json_object_get_int64(fl) == line) {
			const char *fs = json_object_get_string(ff);
			size_t a = strlen(file), b = strlen(fs);
			/* The check names files relative to the experiment, the gate absolutely. */
			if (a >= b && strcmp(file + a - b, fs) == 0 && (a == b || file[a - b - 1] == '/'))
				return f;
		}
	}
	return first;
}

static json_object *finding_ref(json_object *f)
{
	if (!f)
		return NULL;
	json_object *o = json_object_new_object(), *v;
	static const char *const keys[] = {"id", "file", "line", "message"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		json_object_object_add(o, keys[i], json_object_object_get_ex(f, keys[i], &v)
							   ? json_object_get(v) : NULL);
	return o;
}

json_object *lb_gate_collect(const lb_gate_channel *ch, lb_gate_mode mode, const char *policy,
			     bool network, json_object *findings, const char *note)
{
	json_object *g = json_object_new_object();
	if (!g)
		return NULL;
	json_object_object_add(g, "mode", json_object_new_string(lb_gate_mode_name(mode)));
	json_object_object_add(g, "policy", json_object_new_string(policy ? policy : "standard"));
	/* Staged is not installed: only the gate's own line says it got in. A channel that could
	 * not be read tells nothing either way; it is said in `channel`. */
	bool heard = ch && (!ch->buf || lb_gate_heard(ch->buf, ch->len));
	if (ch && !heard && !note)
		note = "the gate never reported that it was in: it did not run in the interpreter "
		       "(one older than Python 3.8 has no audit hooks), or broke before it was "
		       "complete; nothing was refused or recorded by it";
	json_object_object_add(g, "installed", json_object_new_boolean(heard));
	json_object_object_add(g, "enforced",
			       json_object_new_boolean(heard && mode == LB_GATE_ON));
	json_object_object_add(g, "network", json_object_new_boolean(network));
	json_object *events = json_object_new_array();
	size_t dropped = 0, bad = 0, refused = 0;
	const char *channel = "none";
	char foreign_note[400];
	if (ch) {
		channel = "unreadable";
		if (ch->buf) {
			/* What the reader kept, and what it counted */
			lb_gate_parse_events(ch->buf, ch->len, events, &dropped, &bad);
			dropped += ch->dropped;
			bad += ch->foreign;
			refused += ch->refused_dropped;
			channel = "read";
			if (lb_gate_tampered(ch->buf, ch->len)) {
				channel = "tampered";
				if (!note)
					note = "the experiment replaced the gate's channel (its descriptor); "
					       "the gate wrote on through the file opened again, and from then "
					       "refused every event it judged";
			} else if (bad) {
				/* The gate writes whole lines of its own JSON, each in one write: what
				 * is not one was written by the run's code, through the descriptor it
				 * can reach. Each of the gate's lines starts with a newline, so a
				 * part line written before it cannot swallow it. */
				channel = "tampered";
				snprintf(foreign_note, sizeof foreign_note,
					 "the experiment wrote into the gate's channel (%zu line%s that "
					 "are not the gate's); every line the gate wrote was read, and "
					 "the events above are what it recorded", bad, bad == 1 ? "" : "s");
				if (!note)
					note = foreign_note;
			}
		}
	}
	/* The main program's uncaught exception is no refusal, and no event of the experiment's
	 * doing the gate judged: it has a place of its own. */
	json_object *uncaught = lb_gate_uncaught_record(lb_gate_uncaught(events));
	for (size_t i = json_object_array_length(events); i-- > 0;)
		if (is_uncaught(json_object_array_get_idx(events, i)))
			json_object_array_del_idx(events, i, 1);
	size_t n = json_object_array_length(events);
	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(events, i), *v, *fv, *lv;
		if (json_object_object_get_ex(ev, "refused", &v) && json_object_get_boolean(v))
			refused++;
		json_object_object_get_ex(ev, "rule", &v);
		json_object_object_get_ex(ev, "file", &fv);
		json_object_object_get_ex(ev, "line", &lv);
		json_object_object_add(ev, "finding",
				       finding_ref(matching_finding(findings, json_object_get_string(v),
								    fv ? json_object_get_string(fv) : NULL,
								    lv ? json_object_get_int64(lv) : 0)));
	}
	json_object_object_add(g, "events", events);
	json_object_object_add(g, "refused", json_object_new_int64((int64_t)refused));
	json_object_object_add(g, "dropped", json_object_new_int64((int64_t)dropped));
	json_object_object_add(g, "malformed", json_object_new_int64((int64_t)bad));
	json_object_object_add(g, "channel", json_object_new_string(channel));
	json_object_object_add(g, "uncaught", uncaught);
	json_object_object_add(g, "note", note ? json_object_new_string(note) : NULL);
	return g;
}

int lb_gate_cleanup(const lb_gate_paths *p)
{
	/* The run directory keeps its documented layout: what the gate recorded is in
	 * result.json, and its source is in labbox. */
	char path[PATH_MAX];
	int r = 0;
	static const char *const files[] = {"sitecustomize.py", LB_GATE_CONFIG};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (join(path, sizeof path, p->py_dir, files[i]) == 0 && unlink(path) < 0 &&
		    errno != ENOENT)
			r = -errno;
	/* The compiled gate (pyc.c), whatever the interpreter's cache tag was. */
	LB_AUTOFREE char *cache = NULL;
	if (asprintf(&cache, "%s/__pycache__", p->py_dir) >= 0) {
		DIR *d = opendir(cache);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strncmp(e->d_name, "sitecustomize.", 14) == 0 && unlinkat(dirfd(d), e->d_name, 0) < 0)
				r = -errno;
		if (d)
			closedir(d);
		if (rmdir(cache) < 0 && errno != ENOENT)
			r = -errno;
	}
	if (unlink(p->events) < 0 && errno != ENOENT)
		r = -errno;
	if (rmdir(p->py_dir) < 0 && errno != ENOENT)
		r = -errno;
	if (rmdir(p->dir) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}
