/* The machine a run ran on and the uncommitted changes of its experiment, for manifest.json. */
#include "labbox/record.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define LINE_MAX_READ 4096
#define GPU_QUERY_MAX (64 * 1024)

/* Host text (os-release, cpuinfo, git output) may be in any encoding; the documents labbox
 * writes must stay valid UTF-8. Copies src into a new string of at most max bytes, invalid
 * sequences and NUL replaced by U+FFFD, cut on a character boundary; *cut says whether it was.
 * Newlines and tabs stay, unlike the collect module's helper, which makes one line. */
static char *utf8_copy(const char *src, size_t len, size_t max, bool *cut)
{
	static const char repl[] = "\xef\xbf\xbd";
	char *out = malloc(max + 1);
	size_t o = 0, i = 0;
	const unsigned char *s = (const unsigned char *)src;

	if (cut)
		*cut = false;
	if (!out)
		return NULL;
	while (i < len) {
		/* NUL is replaced like an invalid byte: the result is a C string. */
		size_t n = s[i] ? lb_utf8_seq_len(s + i, len - i) : 0;
		const char *piece = (const char *)s + i;

		if (n == 0) {
			if (o + 3 > max)
				break;
			memcpy(out + o, repl, 3);
			o += 3;
			i++;
			continue;
		}
		if (o + n > max)
			break;
		memcpy(out + o, piece, n);
		o += n;
		i += n;
	}
	if (cut && i < len)
		*cut = true;
	out[o] = '\0';
	return out;
}

static struct json_object *string_or_null(const char *s, size_t len)
{
	LB_AUTOFREE char *clean = NULL;

	if (!s)
		return NULL;
	clean = utf8_copy(s, len, 1024, NULL);
	return clean ? json_object_new_string(clean) : NULL;
}

static FILE *open_at_root(const char *root, const char *path)
{
	char full[4096];

	snprintf(full, sizeof(full), "%s%s", root, path);
	return fopen(full, "re");
}

static void chomp(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* os-release values are shell-quoted: PRETTY_NAME="Debian GNU/Linux 12 (bookworm)". */
static void unquote(char *v)
{
	char q = v[0], *o = v;
	size_t n = strlen(v);

	if ((q != '"' && q != '\'') || n < 2 || v[n - 1] != q)
		return;
	v[n - 1] = '\0';
	for (char *p = v + 1; *p; p++) {
		if (q == '"' && *p == '\\' && p[1] && strchr("\"\\$`", p[1]))
			p++;
		*o++ = *p;
	}
	*o = '\0';
}

static struct json_object *os_name(const char *root)
{
	static const char *const files[] = { "/etc/os-release", "/usr/lib/os-release" };
	char line[LINE_MAX_READ];
	char name[LINE_MAX_READ] = "";

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		LB_AUTOFCLOSE FILE *fp = open_at_root(root, files[f]);

		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp)) {
			chomp(line);
			if (strncmp(line, "PRETTY_NAME=", 12) == 0) {
				unquote(line + 12);
				return string_or_null(line + 12, strlen(line + 12));
			}
			if (strncmp(line, "NAME=", 5) == 0 && !name[0]) {
				unquote(line + 5);
				snprintf(name, sizeof(name), "%s", line + 5);
			}
		}
		if (name[0])
			return string_or_null(name, strlen(name));
	}
	return NULL;
}

/* "model name : Intel(R) Xeon(R)" -> key "model name", value "Intel(R) Xeon(R)". */
static bool split_field(char *line, char **key, char **value)
{
	char *colon = strchr(line, ':');
	char *k_end;

	if (!colon)
		return false;
	k_end = colon;
	while (k_end > line && (k_end[-1] == ' ' || k_end[-1] == '\t'))
		k_end--;
	*k_end = '\0';
	*value = colon + 1;
	while (**value == ' ' || **value == '\t')
		(*value)++;
	chomp(*value);
	*key = line;
	return true;
}

static struct json_object *cpu_json(const char *root)
{
	/* x86 says "model name"; arm64 kernels often print no model at all, older arm
	 * "Processor", Raspberry Pi "Model", PowerPC "cpu", MIPS "cpu model". Earlier is
	 * better. */
	static const char *const model_keys[] = { "model name", "Processor", "cpu model", "Model",
						  "cpu" };
	size_t best = sizeof(model_keys) / sizeof(model_keys[0]);
	char model[LINE_MAX_READ] = "";
	char line[LINE_MAX_READ];
	long count = 0;
	struct json_object *cpu = json_object_new_object();
	LB_AUTOFCLOSE FILE *fp = NULL;
	cpu_set_t set;

	if (!cpu)
		return NULL;
	fp = open_at_root(root, "/proc/cpuinfo");
	while (fp && fgets(line, sizeof(line), fp)) {
		char *key, *value;

		if (!split_field(line, &key, &value))
			continue;
		if (strcmp(key, "processor") == 0) {
			count++;
			continue;
		}
		for (size_t i = 0; i < best; i++) {
			if (strcmp(key, model_keys[i]) == 0 && value[0]) {
				snprintf(model, sizeof(model), "%s", value);
				best = i;
				break;
			}
		}
	}
	if (count == 0)
		count = sysconf(_SC_NPROCESSORS_CONF);
	json_object_object_add(cpu, "model", model[0] ? string_or_null(model, strlen(model)) : NULL);
	json_object_object_add(cpu, "count", count > 0 ? json_object_new_int64(count) : NULL);
	/* What this process may use (taskset, cpusets), which is what the run had. */
	CPU_ZERO(&set);
	json_object_object_add(cpu, "available",
			       sched_getaffinity(0, sizeof(set), &set) == 0
				       ? json_object_new_int(CPU_COUNT(&set))
				       : NULL);
	return cpu;
}

static struct json_object *memory_total(const char *root)
{
	LB_AUTOFCLOSE FILE *fp = open_at_root(root, "/proc/meminfo");
	char line[LINE_MAX_READ];

	while (fp && fgets(line, sizeof(line), fp)) {
		unsigned long long kb;

		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			return json_object_new_int64((int64_t)(kb * 1024));
	}
	return NULL;
}

static char *trim_field(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	chomp(s);
	return s;
}

/* One line of `--format=csv,noheader`: "NVIDIA H200, 143771 MiB, 550.54.15". A name could
 * hold a comma, the other two never do, so split at the last two. */
static struct json_object *gpu_line(char *line)
{
	char *c2 = strrchr(line, ',');
	char *c1, *name, *mem, *driver;
	struct json_object *g;
	unsigned long long mib;
	char unit[8] = "";

	if (!c2)
		return NULL;
	*c2 = '\0';
	c1 = strrchr(line, ',');
	if (!c1)
		return NULL;
	*c1 = '\0';
	name = trim_field(line);
	mem = trim_field(c1 + 1);
	driver = trim_field(c2 + 1);
	g = json_object_new_object();
	if (!g)
		return NULL;
	json_object_object_add(g, "name", string_or_null(name, strlen(name)));
	if (sscanf(mem, "%llu %7s", &mib, unit) == 2 && strcmp(unit, "MiB") == 0)
		json_object_object_add(g, "memory_total_bytes",
				       json_object_new_int64((int64_t)(mib << 20)));
	else
		json_object_object_add(g, "memory_total_bytes", NULL); /* "[N/A]" */
	json_object_object_add(g, "driver_version", string_or_null(driver, strlen(driver)));
	return g;
}

static void gpus_json(struct json_object *machine, const char *program)
{
	LB_AUTOFREE char *exe = NULL;
	struct json_object *gpus = json_object_new_array();
	lb_buf out = { 0 };
	int st = 0, r;

	json_object_object_add(machine, "gpus", gpus);
	/* No nvidia-smi: no NVIDIA driver, so no NVIDIA GPU to record. */
	if (!gpus || lb_find_executable(program, &exe) < 0)
		return;
	{
		char *argv[] = { exe, "--query-gpu=name,memory.total,driver_version",
				 "--format=csv,noheader", NULL };

		r = lb_capture(argv, GPU_QUERY_MAX, false, &out, &st);
	}
	if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char msg[128];

		/* Installed but failing (driver not loaded, no device): worth saying, since the
		 * machine may well have GPUs. */
		if (r < 0)
			snprintf(msg, sizeof(msg), "nvidia-smi could not run: %s", strerror(-r));
		else if (WIFEXITED(st))
			snprintf(msg, sizeof(msg), "nvidia-smi exited with status %d", WEXITSTATUS(st));
		else
			snprintf(msg, sizeof(msg), "nvidia-smi was killed by signal %d", WTERMSIG(st));
		json_object_object_add(machine, "gpus_error", json_object_new_string(msg));
		lb_buf_free(&out);
		return;
	}
	for (char *line = out.data, *next; line && *line; line = next) {
		struct json_object *g;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		g = gpu_line(line);
		if (g && json_object_array_add(gpus, g) < 0)
			json_object_put(g);
		if (!next)
			break;
	}
	lb_buf_free(&out);
}

struct json_object *lb_record_machine_json_at(const char *root, const char *nvidia_smi)
{
	struct json_object *m = json_object_new_object();
	struct utsname u;

	if (!m)
		return NULL;
	if (!root)
		root = "";
	json_object_object_add(m, "os", os_name(root));
	if (uname(&u) == 0) {
		json_object_object_add(m, "kernel", string_or_null(u.release, strlen(u.release)));
		json_object_object_add(m, "kernel_version", string_or_null(u.version, strlen(u.version)));
		json_object_object_add(m, "arch", string_or_null(u.machine, strlen(u.machine)));
	} else {
		json_object_object_add(m, "kernel", NULL);
		json_object_object_add(m, "kernel_version", NULL);
		json_object_object_add(m, "arch", NULL);
	}
	json_object_object_add(m, "cpu", cpu_json(root));
	json_object_object_add(m, "memory_total_bytes", memory_total(root));
	gpus_json(m, nvidia_smi ? nvidia_smi : "nvidia-smi");
	/* what --gpus can give here, whatever nvidia-smi says (a driver without it); of another
	 * root's machine it is not known, and not said */
	if (!root[0])
		json_object_object_add(m, "gpu_device_nodes",
				       json_object_new_int(lb_sandbox_host_gpu_count()));
	return m;
}

struct json_object *lb_record_machine_json(void)
{
	return lb_record_machine_json_at("", NULL);
}

/* git diff ------------------------------------------------------------------------------- */

static bool in_work_tree(const char *dir)
{
	char *argv[] = { "git", "--no-pager", "-c", "safe.directory=*", "-C", (char *)dir,
			 "rev-parse", "--verify", "-q", "HEAD", NULL };
	lb_buf out = { 0 };
	int st = 0;
	int r = lb_capture(argv, 256, false, &out, &st);

	lb_buf_free(&out);
	return r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

struct json_object *lb_record_git_diff(const char *dir, size_t max)
{
	char *argv[] = { "git", "--no-pager", "-c", "safe.directory=*", "-C", (char *)dir, "-c",
			 "core.fsmonitor=false", "diff", "--no-ext-diff", "--no-textconv",
			 "--no-color", "HEAD", "--", ".", NULL };
	struct json_object *o;
	LB_AUTOFREE char *text = NULL;
	lb_buf out = { 0 };
	bool cut = false;
	int st = 0;

	if (!dir || !in_work_tree(dir))
		return NULL;
	o = json_object_new_object();
	if (!o)
		return NULL;
	/* One byte more than kept tells a cut from an exact fit. */
	if (lb_capture(argv, max < SIZE_MAX ? max + 1 : max, false, &out, &st) < 0 ||
	    !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		lb_buf_free(&out);
		json_object_put(o);
		return NULL;
	}
	text = utf8_copy(out.data ? out.data : "", out.len, max, &cut);
	lb_buf_free(&out);
	if (!text) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "diff", json_object_new_string(text));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)strlen(text)));
	json_object_object_add(o, "truncated", json_object_new_boolean(cut));
	return o;
}
