/* NVIDIA GPUs: device nodes in, and CUDA told which ones it has.
 *
 * Only the chosen /dev/nvidiaN nodes (plus the driver's control nodes) are bound, so the
 * driver inside cannot open the others. CUDA_VISIBLE_DEVICES names the chosen GPUs by UUID
 * when the driver publishes them (/proc/driver/nvidia/gpus/ * /information), which stays
 * right whatever order CUDA enumerates in. */
#include "sandbox_internal.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_GPUS LB_GPUS_MAX

static int host_gpus(int *minors)
{
	int n = 0;
	DIR *d = opendir("/dev");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < MAX_GPUS) {
		if (strncmp(e->d_name, "nvidia", 6) != 0 || !e->d_name[6])
			continue;
		char *end;
		long m = strtol(e->d_name + 6, &end, 10);
		if (*end || m < 0 || m > 1 << 20)
			continue;
		minors[n++] = (int)m;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (minors[j] < minors[i]) {
				int t = minors[i];
				minors[i] = minors[j];
				minors[j] = t;
			}
	return n;
}

int lb_sandbox_host_gpu_count(void)
{
	int minors[MAX_GPUS];
	return host_gpus(minors);
}

/* "GPU-..." of the GPU with this device minor, from the driver's procfs. */
static bool gpu_uuid(int minor, char *out, size_t n)
{
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[512];
		snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		char line[256], uuid[128] = "";
		int m = -1;
		while (fgets(line, sizeof line, f)) {
			if (sscanf(line, "Device Minor: %d", &m) == 1)
				continue;
			if (strncmp(line, "GPU UUID:", 9) == 0)
				sscanf(line + 9, " %127s", uuid);
		}
		fclose(f);
		if (m == minor && uuid[0]) {
			snprintf(out, n, "%s", uuid);
			found = true;
		}
	}
	closedir(d);
	return found;
}

static void add_control_nodes(lb_sandbox *sb)
{
	static const char *const ctl[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
					  "/dev/nvidia-modeset"};
	for (size_t i = 0; i < sizeof ctl / sizeof *ctl; i++)
		lb_sandbox_add_device(sb, ctl[i]); /* absent ones are simply not there */
	DIR *d = opendir("/dev/nvidia-caps");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300];
		snprintf(path, sizeof path, "/dev/nvidia-caps/%s", e->d_name);
		if (e->d_name[0] != '.')
			lb_sandbox_add_device(sb, path);
	}
	closedir(d);
}

int lb_sandbox_gpus_parse(const char *spec, lb_gpu_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (strcmp(spec, "all") == 0) {
		out->all = true;
		return 0;
	}
	if (strcmp(spec, "none") == 0)
		return 0;
	const char *p = spec;
	for (;;) {
		size_t len = strspn(p, "0123456789");
		/* an index as host_gpus reads /dev/nvidiaN: up to 1 << 20 */
		bool index = len > 0 && len <= 7 && (p[len] == ',' || p[len] == '\0');
		long v = index ? strtol(p, NULL, 10) : -1;
		if (!index || v > 1 << 20) {
			snprintf(err, errlen, "'%s' is not all, none or a list of GPU indices like 0,1",
				 spec);
			return -EINVAL;
		}
		for (size_t i = 0; i < out->n; i++)
			if (out->index[i] == v) {
				snprintf(err, errlen, "'%s' names GPU %ld twice", spec, v);
				return -EINVAL;
			}
		if (out->n == LB_GPUS_MAX) {
			snprintf(err, errlen, "'%s' names more than %d GPUs", spec, LB_GPUS_MAX);
			return -EINVAL;
		}
		out->index[out->n++] = (int)v;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int lb_sandbox_use_gpus(lb_sandbox *sb, const char *spec, char *err, size_t errlen)
{
	/* The value first: a typo is the caller's mistake on any host, never "no GPU here". */
	lb_gpu_spec want;
	int pr = lb_sandbox_gpus_parse(spec, &want, err, errlen);
	if (pr < 0)
		return pr;
	if (!want.all && want.n == 0)
		return 0;
	int minors[MAX_GPUS];
	int n = host_gpus(minors);
	char found[256] = "";
	for (int i = 0; i < n; i++) {
		size_t l = strlen(found);
		snprintf(found + l, sizeof found - l, "%s%d", i ? "," : "", minors[i]);
	}
	if (n == 0) {
		snprintf(err, errlen, "no NVIDIA GPU on this host (no /dev/nvidiaN device node)");
		return -ENODEV;
	}
	int chosen[MAX_GPUS], k = 0;
	if (want.all) {
		memcpy(chosen, minors, sizeof(int) * (size_t)n);
		k = n;
	} else {
		for (size_t j = 0; j < want.n; j++) {
			bool present = false;
			for (int i = 0; i < n; i++)
				present |= minors[i] == want.index[j];
			if (!present) {
				snprintf(err, errlen, "no GPU %d on this host (GPUs: %s)", want.index[j],
					 found);
				return -ENODEV;
			}
			chosen[k++] = want.index[j];
		}
	}
	add_control_nodes(sb);
	lb_buf visible = {0};
	bool uuids = true;
	sb->gpus[0] = '\0';
	for (int i = 0; i < k; i++) {
		char path[64], uuid[128];
		snprintf(path, sizeof path, "/dev/nvidia%d", chosen[i]);
		int r = lb_sandbox_add_device(sb, path);
		if (r < 0) {
			snprintf(err, errlen, "cannot use %s: %s", path, strerror(-r));
			lb_buf_free(&visible);
			return r;
		}
		size_t l = strlen(sb->gpus);
		snprintf(sb->gpus + l, sizeof sb->gpus - l, "%s%d", i ? "," : "", chosen[i]);
		if (uuids && gpu_uuid(chosen[i], uuid, sizeof uuid))
			lb_buf_printf(&visible, "%s%s", i ? "," : "", uuid);
		else
			uuids = false;
	}
	if (!uuids) {
		/* Without UUIDs: the chosen GPUs are the only ones CUDA can open, numbered from 0. */
		visible.len = 0;
		for (int i = 0; i < k; i++)
			lb_buf_printf(&visible, "%s%d", i ? "," : "", i);
	}
	lb_buf kv = {0};
	lb_buf_printf(&kv, "CUDA_VISIBLE_DEVICES=%s", visible.data ? visible.data : "");
	int r = kv.data ? lb_sandbox_add_env(sb, kv.data) : -ENOMEM;
	lb_buf_free(&kv);
	lb_buf_free(&visible);
	return r;
}
