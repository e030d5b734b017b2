/* The report's content from a sweep document or from run directories: statistics per
 * condition and metric, failures with their evidence, per-step series, reproducibility facts. */
#include "labbox/collect.h"
#include "labbox/report.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define RUN_LOG_MAX (16u << 20)
#define RECORD_MAX (256u << 20)

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v)
		       ? v
		       : NULL;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool is_num(json_object *v)
{
	return v && (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Grows *arr (of *n elements of size sz) by one zeroed element; NULL when out of memory. */
static void *push(void *arr, size_t *n, size_t sz)
{
	void **a = arr;
	char *p = realloc(*a, (*n + 1) * sz);
	if (!p)
		return NULL;
	*a = p;
	memset(p + *n * sz, 0, sz);
	return p + (*n)++ * sz;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void lb_report_free(lb_report *r)
{
	if (!r)
		return;
	free(r->title);
	free(r->source);
	free(r->status);
	free_strs(r->conditions, r->nconditions);
	free(r->cells);
	free(r->completed);
	free(r->retried);
	free_strs(r->metrics, r->nmetrics);
	free(r->stats);
	for (size_t i = 0; i < r->nfailures; i++) {
		lb_report_failure *f = &r->failures[i];
		free(f->condition);
		free(f->run_id);
		free(f->status);
		free(f->class_);
		free(f->summary);
		free(f->then);
		free_strs(f->evidence, f->nevidence);
	}
	free(r->failures);
	free_strs(r->identical, r->nidentical);
	free(r->identical_group);
	for (size_t i = 0; i < r->nseries; i++) {
		lb_report_series *s = &r->series[i];
		free(s->metric);
		free(s->x_label);
		for (size_t c = 0; c < r->nconditions; c++) {
			free(s->x ? s->x[c] : NULL);
			free(s->y ? s->y[c] : NULL);
			free(s->count ? s->count[c] : NULL);
		}
		free(s->npoints);
		free(s->x);
		free(s->y);
		free(s->count);
	}
	free(r->series);
	for (size_t i = 0; i < r->nfacts; i++) {
		free(r->facts[i].name);
		free_strs(r->facts[i].values, r->facts[i].nvalues);
		free(r->facts[i].runs);
	}
	free(r->facts);
	free(r->packages);
	free_strs(r->splits, r->nsplits);
	memset(r, 0, sizeof *r);
}

static ssize_t find_str(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return (ssize_t)i;
	return -1;
}

/* The index of metric name, added when new (or -1 past the cap). */
static ssize_t metric_index(lb_report *r, const char *name)
{
	ssize_t i = find_str(r->metrics, r->nmetrics, name);
	if (i >= 0)
		return i;
	if (r->nmetrics >= LB_REPORT_MAX_METRICS) {
		r->metrics_dropped++;
		return -1;
	}
	char *d = strdup(name);
	char **slot = d ? push(&r->metrics, &r->nmetrics, sizeof *r->metrics) : NULL;
	if (!slot) {
		free(d);
		return -1;
	}
	*slot = d;
	return (ssize_t)r->nmetrics - 1;
}

static int add_condition(lb_report *r, const char *name, size_t *idx)
{
	if (r->nconditions >= LB_REPORT_MAX_CONDITIONS)
		return -E2BIG;
	size_t n = r->nconditions;
	char *d = strdup(name);
	size_t *c = realloc(r->cells, (n + 1) * sizeof *c);
	if (c)
		r->cells = c;
	size_t *k = realloc(r->completed, (n + 1) * sizeof *k);
	if (k)
		r->completed = k;
	size_t *rt = realloc(r->retried, (n + 1) * sizeof *rt);
	if (rt)
		r->retried = rt;
	char **slot = d && c && k && rt ? push(&r->conditions, &r->nconditions, sizeof *r->conditions) : NULL;
	if (!slot) {
		free(d);
		return -ENOMEM;
	}
	*slot = d;
	r->cells[n] = r->completed[n] = r->retried[n] = 0;
	*idx = n;
	return 0;
}

/* ---- facts ----------------------------------------------------------------------------------- */

static int add_fact(lb_report *r, const char *name, const char *value)
{
	lb_report_fact *f = NULL;
	for (size_t i = 0; i < r->nfacts; i++)
		if (strcmp(r->facts[i].name, name) == 0)
			f = &r->facts[i];
	if (!f) {
		f = push(&r->facts, &r->nfacts, sizeof *r->facts);
		if (!f || !(f->name = strdup(name)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < f->nvalues; i++)
		if (strcmp(f->values[i], value) == 0) {
			f->runs[i]++;
			return 0;
		}
	size_t *runs = realloc(f->runs, (f->nvalues + 1) * sizeof *runs);
	if (!runs)
		return -ENOMEM;
	f->runs = runs;
	char *d = strdup(value);
	char **slot = d ? push(&f->values, &f->nvalues, sizeof *f->values) : NULL;
	if (!slot) {
		free(d);
		return -ENOMEM;
	}
	*slot = d;
	f->runs[f->nvalues - 1] = 1;
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
					 : c >= 'A' && c <= 'F' ? c - 'A' + 10
								: -1;
}

static long hex4(const char *p)
{
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

json_object *lb_report_parse_json(const char *text, size_t len)
{
	/* Records hold bytes that are not UTF-8 as \udcXX (lb_json_escape_invalid_utf8); json-c
	 * would read each as U+FFFD, so they become their bytes again first. */
	char *copy = malloc(len + 1);
	if (!copy)
		return NULL;
	size_t o = 0;
	bool in_str = false, prev_high = false;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (!in_str) {
			in_str = c == '"';
			copy[o++] = c;
			continue;
		}
		if (c == '"') {
			in_str = false;
			prev_high = false;
			copy[o++] = c;
			continue;
		}
		if (c != '\\' || i + 1 >= len) {
			prev_high = false;
			copy[o++] = c;
			continue;
		}
		long u = text[i + 1] == 'u' && i + 5 < len ? hex4(text + i + 2) : -1;
		if (u >= 0xdc80 && u <= 0xdcff && !prev_high) {
			copy[o++] = (char)(u & 0xff);
			i += 5;
			continue;
		}
		prev_high = u >= 0xd800 && u <= 0xdbff;
		size_t n = u >= 0 ? 6 : 2;
		memcpy(copy + o, text + i, n);
		o += n;
		i += n - 1;
	}
	json_tokener *tok = json_tokener_new();
	json_object *doc = tok ? json_tokener_parse_ex(tok, copy, (int)o) : NULL;
	size_t end = tok ? json_tokener_get_parse_end(tok) : 0;
	while (end < o && (copy[end] == ' ' || copy[end] == '\n' || copy[end] == '\t' ||
			   copy[end] == '\r'))
		end++;
	if (tok && (json_tokener_get_error(tok) != json_tokener_success || end != o)) {
		json_object_put(doc);
		doc = NULL;
	}
	json_tokener_free(tok);
	free(copy);
	return doc;
}

static json_object *load_json_at(int dfd, const char *name)
{
	LB_AUTOFREE char *text = NULL;
	size_t len = 0;
	if (lb_read_file_at(dfd, name, RECORD_MAX, &text, &len) < 0 || len > INT32_MAX)
		return NULL;
	return lb_report_parse_json(text, len);
}

static void isolation_text(json_object *iso, lb_buf *b)
{
	json_object *ns = get(iso, "namespaces");
	if (ns && json_object_is_type(ns, json_type_object)) {
		lb_buf_puts(b, "namespaces");
		bool any = false;
		json_object_object_foreach(ns, k, v)
		{
			if (json_object_get_boolean(v)) {
				lb_buf_printf(b, " %s", k);
				any = true;
			}
		}
		if (!any)
			lb_buf_puts(b, " none");
		lb_buf_puts(b, "; ");
	}
	static const char *const keys[] = {"isolated_by", "summary", "network", "filesystem",
					   "cgroup", "memory_enforced_by", "cpus_enforced_by",
					   "pids_enforced_by"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const char *v = get_str(iso, keys[i]);
		if (v)
			lb_buf_printf(b, "%s %s; ", keys[i], v);
	}
	json_object *sc = get(iso, "seccomp");
	if (sc && json_object_is_type(sc, json_type_boolean))
		lb_buf_printf(b, "seccomp %s; ", json_object_get_boolean(sc) ? "on" : "off");
	if (b->len >= 2)
		b->data[b->len -= 2] = '\0';
}

/* The reproducibility facts of one run directory. */
static int run_facts(lb_report *r, int dfd, json_object *result, json_object *manifest,
		     char pkg_sha[65])
{
	pkg_sha[0] = '\0';
	lb_buf b = {0};
	int rc = 0;
	const char *ver = get_str(manifest, "labbox_version");
	if (ver)
		rc = rc ? rc : add_fact(r, "labbox", ver);
	json_object *interp = get(manifest, "interpreter");
	LB_AUTOFREE char *env = NULL;
	size_t envlen = 0;
	bool have_env = lb_read_file_at(dfd, "environment.txt", 16u << 20, &env, &envlen) == 0;
	if (interp) {
		const char *lang = get_str(interp, "language");
		lb_buf_printf(&b, "%s %s (%s)", lang ? lang : "interpreter",
			      get_str(interp, "version") ? get_str(interp, "version") : "?",
			      get_str(interp, "path") ? get_str(interp, "path") : "?");
		rc = rc ? rc : add_fact(r, "interpreter", b.data);
		b.len = 0;
	} else if (have_env && envlen) {
		size_t l = strcspn(env, "\n");
		char save = env[l];
		env[l] = '\0';
		rc = rc ? rc : add_fact(r, "interpreter", env);
		env[l] = save;
	}
	if (have_env) {
		size_t npk = 0;
		for (const char *p = env; (p = strstr(p, "==")); p += 2)
			npk++;
		lb_sha256_buf_hex(env, envlen, pkg_sha);
		b.len = 0;
		lb_buf_printf(&b, "%zu packages pinned (environment.txt sha256 %.12s...)", npk,
			      pkg_sha);
		rc = rc ? rc : add_fact(r, "packages", b.data);
		if (!r->packages)
			r->packages = strdup(env);
	}
	json_object *git = get(manifest, "git");
	const char *commit = get_str(git, "commit");
	b.len = 0;
	if (commit) {
		json_object *dirty = get(git, "dirty");
		lb_buf_printf(&b, "%s%s", commit,
			      dirty && json_object_get_boolean(dirty) ? " (uncommitted changes)" : "");
	} else if (manifest) {
		lb_buf_puts(&b, "not a git repository");
	}
	if (b.len)
		rc = rc ? rc : add_fact(r, "git commit", b.data);
	b.len = 0;
	json_object *iso = get(result, "isolation");
	if (iso) {
		isolation_text(iso, &b);
		if (b.len)
			rc = rc ? rc : add_fact(r, "isolation", b.data);
	}
	json_object *be = get(result, "backend");
	b.len = 0;
	if (be) {
		static const char *const keys[] = {"name", "engine", "version", "host", "isolated_by"};
		for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
			const char *v = get_str(be, keys[i]);
			if (v)
				lb_buf_printf(&b, "%s%s %s", b.len ? "; " : "", keys[i], v);
		}
		if (b.len)
			rc = rc ? rc : add_fact(r, "backend", b.data);
	}
	lb_buf_free(&b);
	return rc;
}

/* ---- settings: what tells conditions apart --------------------------------------------------- */

static bool seed_flag(const char *a)
{
	return strcmp(a, "--seed") == 0 || strcmp(a, "--random_seed") == 0 ||
	       strcmp(a, "--random-seed") == 0;
}

/* A variable named like a seed (SEED, TORCH_SEED, PYTHONHASHSEED) is what varies between
 * seeds of one setting, as --seed is among the arguments. */
static bool seed_var(const char *name, size_t len)
{
	return len >= 4 && strncasecmp(name + len - 4, "seed", 4) == 0;
}

/* One word of a name: quoted when it could read as several words or as another quoted one, so
 * `a "b c"` and `a b c` stay two names. */
static void put_word(lb_buf *b, const char *s)
{
	bool quote = !*s;
	for (const char *p = s; *p && !quote; p++)
		quote = isspace((unsigned char)*p) || *p == '"' || *p == '\\' || *p == '\'';
	if (!quote) {
		lb_buf_puts(b, s);
		return;
	}
	lb_buf_puts(b, "\"");
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			lb_buf_puts(b, "\\");
		lb_buf_append(b, p, 1);
	}
	lb_buf_puts(b, "\"");
}

char *lb_report_run_condition(json_object *result, json_object *manifest)
{
	json_object *sweep = get(result, "sweep");
	if (!sweep)
		sweep = get(manifest, "sweep");
	const char *cond = get_str(sweep, "condition");
	if (cond)
		return strdup(cond);
	json_object *config = get(manifest, "config");
	const char *expdir = get_str(config, "expdir");
	const char *base = expdir ? strrchr(expdir, '/') : NULL;
	base = base && base[1] ? base + 1 : (expdir ? expdir : "run");
	lb_buf b = {0};
	lb_buf_puts(&b, base);
	json_object *args = get(config, "args");
	size_t n = args && json_object_is_type(args, json_type_array) ? json_object_array_length(args) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(args, i));
		if (!a)
			continue;
		if (seed_flag(a)) {
			i++;
			continue;
		}
		if (strncmp(a, "--seed=", 7) == 0)
			continue;
		lb_buf_puts(&b, " ");
		put_word(&b, a);
	}
	if (!b.data)
		return strdup("run");
	return b.data;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The digest h holds as a malloc'd hex string, or NULL. */
static char *digest_hex(lb_sha256 *h)
{
	uint8_t d[32];
	char *hex = malloc(65);
	lb_sha256_final(h, d);
	if (hex)
		lb_sha256_hex(d, hex);
	return hex;
}

/* sha256 hex over the mounted data's fingerprints (manifest.data) by destination; a volume
 * whose fingerprint was not taken, or a writable one, counts as its source path. NULL: no
 * volume. */
static char *data_digest(json_object *manifest)
{
	json_object *data = get(manifest, "data");
	if (!data)
		return NULL;
	size_t n = json_object_is_type(data, json_type_array) ? json_object_array_length(data) : 0;
	char **parts = calloc(n + 1, sizeof *parts);
	if (!parts)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(data, i);
		const char *dst = get_str(v, "destination"), *dg = get_str(v, "digest");
		const char *src = get_str(v, "source"), *mode = get_str(v, "mode");
		/* A writable volume's digest moves with what each run writes into it (an output
		 * directory): its source path is the setting. */
		bool rw = mode && strcmp(mode, "rw") == 0;
		dg = rw ? NULL : dg;
		const char *kind = rw ? "rw source" : dg ? "digest" : "source";
		const char *val = dg ? dg : src ? src : "";
		dst = dst ? dst : "";
		/* Lengths first: the text is injective whatever the names hold. */
		lb_buf t = {0};
		lb_buf_printf(&t, "%zu:%s%zu:%s%zu:%s", strlen(dst), dst, strlen(kind), kind,
			      strlen(val), val);
		if (t.data)
			parts[k++] = t.data;
	}
	/* Fingerprinting that failed for the whole run: an error object. */
	lb_sha256 h;
	lb_sha256_init(&h);
	if (!json_object_is_type(data, json_type_array))
		lb_sha256_update(&h, "unfingerprinted", 15);
	qsort(parts, k, sizeof *parts, cmp_strp);
	for (size_t i = 0; i < k; i++) {
		lb_sha256_update(&h, parts[i], strlen(parts[i]) + 1);
		free(parts[i]);
	}
	free(parts);
	return digest_hex(&h);
}

/* The staged files by name with their digests, and the symlinks with their targets: the code
 * that ran, whichever file the entry imports. NULL when the manifest lists no files. */
static char *code_digest(json_object *manifest)
{
	json_object *files = get(manifest, "files"), *links = get(manifest, "symlinks");
	if (!files || !json_object_is_type(files, json_type_object))
		return NULL;
	json_object *parts[2] = {files, links};
	lb_sha256 h;
	lb_sha256_init(&h);
	for (int k = 0; k < 2; k++) {
		json_object *o = parts[k];
		if (!o || !json_object_is_type(o, json_type_object))
			continue;
		size_t n = (size_t)json_object_object_length(o), i = 0;
		char **keys = calloc(n + 1, sizeof *keys);
		if (!keys)
			return NULL;
		json_object_object_foreach(o, key, val)
		{
			(void)val;
			if (i < n)
				keys[i++] = key;
		}
		qsort(keys, i, sizeof *keys, cmp_strp);
		for (size_t j = 0; j < i; j++) {
			const char *v = get_str(o, keys[j]);
			lb_sha256_update(&h, k ? "l" : "f", 1);
			lb_sha256_update(&h, keys[j], strlen(keys[j]) + 1);
			lb_sha256_update(&h, v ? v : "", strlen(v ? v : "") + 1);
		}
		free(keys);
	}
	return digest_hex(&h);
}

void lb_report_setting_free(lb_report_setting *s)
{
	if (!s)
		return;
	free(s->base);
	free(s->entry);
	free_strs(s->env, s->nenv);
	free(s->code);
	free(s->interpreter);
	free(s->packages);
	free(s->data);
	memset(s, 0, sizeof *s);
}

int lb_report_run_setting(json_object *result, json_object *manifest, const char *packages_sha,
			  lb_report_setting *out)
{
	memset(out, 0, sizeof *out);
	json_object *sweep = get(result, "sweep");
	if (!sweep)
		sweep = get(manifest, "sweep");
	out->sweep_cell = get_str(sweep, "condition") != NULL;
	out->base = lb_report_run_condition(result, manifest);
	json_object *config = get(manifest, "config");
	const char *entry = get_str(config, "entry");
	int rc = out->base && (!entry || (out->entry = strdup(entry))) ? 0 : -ENOMEM;
	json_object *env = get(get(config, "sandbox"), "env");
	size_t n = env && json_object_is_type(env, json_type_array)
			   ? json_object_array_length(env)
			   : 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(env, i));
		if (!e || seed_var(e, strcspn(e, "=")))
			continue;
		char *d = strdup(e);
		char **slot = d ? push(&out->env, &out->nenv, sizeof *out->env) : NULL;
		if (!slot) {
			free(d);
			rc = -ENOMEM;
		} else {
			*slot = d;
		}
	}
	if (out->nenv)
		qsort(out->env, out->nenv, sizeof *out->env, cmp_strp);
	if (rc == 0 && get(manifest, "files") && !(out->code = code_digest(manifest)))
		rc = -ENOMEM;
	json_object *interp = get(manifest, "interpreter");
	const char *impl = get_str(interp, "implementation"), *ver = get_str(interp, "version");
	if (!impl)
		impl = get_str(interp, "language");
	if (rc == 0 && (impl || ver)) {
		lb_buf b = {0};
		lb_buf_printf(&b, "%s %s", impl ? impl : "interpreter", ver ? ver : "?");
		if (!(out->interpreter = b.data))
			rc = -ENOMEM;
	}
	if (rc == 0 && packages_sha && !(out->packages = strdup(packages_sha)))
		rc = -ENOMEM;
	if (rc == 0 && get(manifest, "data") && !(out->data = data_digest(manifest)))
		rc = -ENOMEM;
	if (rc < 0)
		lb_report_setting_free(out);
	return rc;
}

static void key_str(lb_buf *b, const char *s)
{
	if (s)
		lb_buf_printf(b, "%zu:%s;", strlen(s), s);
	else
		lb_buf_puts(b, "-;");
}

int lb_report_setting_key(const lb_report_setting *s, lb_buf *out)
{
	out->len = 0;
	lb_buf_puts(out, s->sweep_cell ? "sweep;" : "run;");
	key_str(out, s->base);
	key_str(out, s->entry);
	lb_buf_printf(out, "%zu;", s->nenv);
	for (size_t i = 0; i < s->nenv; i++)
		key_str(out, s->env[i]);
	key_str(out, s->code);
	key_str(out, s->interpreter);
	key_str(out, s->packages);
	key_str(out, s->data);
	return out->data ? 0 : -ENOMEM;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The value of variable name (len bytes) in s's -e list; NULL when absent. */
static const char *env_value(const lb_report_setting *s, const char *name, size_t len)
{
	for (size_t i = 0; i < s->nenv; i++)
		if (strncmp(s->env[i], name, len) == 0 &&
		    (s->env[i][len] == '=' || s->env[i][len] == '\0'))
			return s->env[i][len] ? s->env[i] + len + 1 : "";
	return NULL;
}

/* Hex digests shown as short as keeps the group's distinct ones apart, 6 digits at least. */
static int digest_len(const lb_report_setting *s, const size_t *grp, size_t g, size_t off)
{
	size_t len = 6;
	for (size_t i = 0; i < g; i++)
		for (size_t j = i + 1; j < g; j++) {
			const char *a = *(char *const *)((const char *)&s[grp[i]] + off);
			const char *b = *(char *const *)((const char *)&s[grp[j]] + off);
			if (!a || !b || strcmp(a, b) == 0)
				continue;
			while (len < 64 && strncmp(a, b, len) == 0)
				len++;
		}
	return (int)len;
}

typedef struct name_ix {
	const char *name;
	size_t i;
} name_ix;

static int cmp_name_ix(const void *pa, const void *pb)
{
	const name_ix *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);
	return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Names that still coincide (an argument that reads like another condition's suffix, a plain
 * run's directory named like a sweep's condition) get more: the setting's digest, then the
 * condition's number. A sweep cell keeps its plan's name where only plain runs collide with it. */
static int disambiguate(const lb_report_setting *s, size_t n, char **names, int round)
{
	name_ix *v = malloc((n + 1) * sizeof *v);
	bool *mark = calloc(n + 1, sizeof *mark);
	int rc = v && mark ? 0 : -ENOMEM;
	bool any = false;
	for (size_t i = 0; rc == 0 && i < n; i++)
		v[i] = (name_ix){names[i], i};
	if (rc == 0)
		qsort(v, n, sizeof *v, cmp_name_ix);
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t j = i + 1;
		while (j < n && strcmp(v[j].name, v[i].name) == 0)
			j++;
		bool plain = false, cell = false;
		for (size_t k = i; k < j; k++) {
			cell |= s[v[k].i].sweep_cell;
			plain |= !s[v[k].i].sweep_cell;
		}
		for (size_t k = i; j - i > 1 && k < j; k++)
			if (!(cell && plain && s[v[k].i].sweep_cell))
				mark[v[k].i] = any = true;
		i = j;
	}
	lb_buf key = {0};
	for (size_t i = 0; rc == 0 && any && i < n; i++) {
		if (!mark[i])
			continue;
		lb_buf b = {0};
		lb_buf_puts(&b, names[i]);
		if (round == 0) {
			char hex[65];
			rc = lb_report_setting_key(&s[i], &key);
			if (rc == 0)
				lb_sha256_buf_hex(key.data, key.len, hex);
			lb_buf_printf(&b, " [setting %.12s]", rc == 0 ? hex : "?");
		} else {
			lb_buf_printf(&b, " #%zu", i + 1);
		}
		if (!b.data) {
			rc = -ENOMEM;
			break;
		}
		free(names[i]);
		names[i] = b.data;
	}
	lb_buf_free(&key);
	free(v);
	free(mark);
	return rc < 0 ? rc : any;
}

int lb_report_condition_names(const lb_report_setting *s, size_t n, char **names, char ***notes,
			      size_t *nnotes)
{
	*notes = NULL;
	*nnotes = 0;
	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	bool *done = calloc(n + 1, sizeof *done);
	size_t *grp = malloc((n + 1) * sizeof *grp);
	int rc = done && grp ? 0 : -ENOMEM;
	char **vars = NULL;
	size_t nvars = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (done[i])
			continue;
		size_t g = 0;
		for (size_t j = i; j < n; j++)
			if (!done[j] && s[j].sweep_cell == s[i].sweep_cell &&
			    strcmp(s[j].base, s[i].base) == 0) {
				grp[g++] = j;
				done[j] = true;
			}
		bool v_entry = false, v_code = false, v_interp = false, v_pkg = false, v_data = false;
		for (size_t k = 1; k < g; k++) {
			const lb_report_setting *a = &s[grp[0]], *b = &s[grp[k]];
			v_entry |= !same_str(a->entry, b->entry);
			v_code |= !same_str(a->code, b->code);
			v_interp |= !same_str(a->interpreter, b->interpreter);
			v_pkg |= !same_str(a->packages, b->packages);
			v_data |= !same_str(a->data, b->data);
		}
		/* The -e variables whose value (or presence) is not the same in every member. */
		free_strs(vars, nvars);
		vars = NULL;
		nvars = 0;
		for (size_t k = 0; rc == 0 && g > 1 && k < g; k++)
			for (size_t e = 0; rc == 0 && e < s[grp[k]].nenv; e++) {
				const char *name = s[grp[k]].env[e];
				size_t len = strcspn(name, "=");
				bool seen = false, varies = false;
				for (size_t q = 0; q < nvars && !seen; q++)
					seen = strlen(vars[q]) == len && strncmp(vars[q], name, len) == 0;
				const char *first = env_value(&s[grp[0]], name, len);
				for (size_t q = 1; !seen && q < g && !varies; q++)
					varies = !same_str(first, env_value(&s[grp[q]], name, len));
				if (seen || !varies)
					continue;
				char *d = strndup(name, len);
				char **slot = d ? push(&vars, &nvars, sizeof *vars) : NULL;
				if (!slot) {
					free(d);
					rc = -ENOMEM;
				} else {
					*slot = d;
				}
			}
		if (nvars)
			qsort(vars, nvars, sizeof *vars, cmp_strp);
		int lcode = digest_len(s, grp, g, offsetof(lb_report_setting, code));
		int lpkg = digest_len(s, grp, g, offsetof(lb_report_setting, packages));
		int ldata = digest_len(s, grp, g, offsetof(lb_report_setting, data));
		for (size_t k = 0; rc == 0 && k < g; k++) {
			const lb_report_setting *m = &s[grp[k]];
			lb_buf b = {0};
			lb_buf_puts(&b, m->base);
			if (v_entry) {
				lb_buf_puts(&b, " --entry ");
				put_word(&b, m->entry ? m->entry : "?");
			}
			for (size_t q = 0; q < nvars; q++) {
				const char *val = env_value(m, vars[q], strlen(vars[q]));
				lb_buf_printf(&b, " %s", vars[q]);
				if (val) {
					lb_buf_puts(&b, "=");
					put_word(&b, val);
				} else {
					lb_buf_puts(&b, " unset");
				}
			}
			if (v_code)
				lb_buf_printf(&b, " (code %.*s)", m->code ? lcode : 10,
					      m->code ? m->code : "unrecorded");
			if (v_interp)
				lb_buf_printf(&b, " (%s)", m->interpreter ? m->interpreter
									 : "interpreter unrecorded");
			if (v_pkg)
				lb_buf_printf(&b, " (packages %.*s)", m->packages ? lpkg : 10,
					      m->packages ? m->packages : "unlisted");
			if (v_data)
				lb_buf_printf(&b, " (data %.*s)", m->data ? ldata : 4,
					      m->data ? m->data : "none");
			if (!(names[grp[k]] = b.data))
				rc = -ENOMEM;
		}
		if (rc < 0 || !(v_entry || nvars || v_code || v_interp || v_pkg || v_data))
			continue;
		/* Which recorded settings split this name, for the report to say. */
		lb_buf b = {0};
		lb_buf_printf(&b, "%s: runs differ in ", s[i].base);
		const char *sep = "";
		if (v_entry) {
			lb_buf_printf(&b, "%sentry point", sep);
			sep = ", ";
		}
		for (size_t q = 0; q < nvars; q++) {
			lb_buf_printf(&b, "%s-e %s", sep, vars[q]);
			sep = ", ";
		}
		if (v_code) {
			lb_buf_printf(&b, "%sstaged code", sep);
			sep = ", ";
		}
		if (v_interp) {
			lb_buf_printf(&b, "%sinterpreter", sep);
			sep = ", ";
		}
		if (v_pkg) {
			lb_buf_printf(&b, "%spackages", sep);
			sep = ", ";
		}
		if (v_data)
			lb_buf_printf(&b, "%smounted data", sep);
		lb_buf_printf(&b, ": %zu conditions, not seeds of one", g);
		char **slot = b.data ? push(notes, nnotes, sizeof **notes) : NULL;
		if (!slot) {
			lb_buf_free(&b);
			rc = -ENOMEM;
		} else {
			*slot = b.data;
		}
	}
	free_strs(vars, nvars);
	free(done);
	free(grp);
	for (int round = 0; rc == 0 && round < 2; round++) {
		rc = disambiguate(s, n, names, round);
		rc = rc > 0 ? 0 : rc;
	}
	if (rc < 0) {
		for (size_t i = 0; i < n; i++) {
			free(names[i]);
			names[i] = NULL;
		}
		free_strs(*notes, *nnotes);
		*notes = NULL;
		*nnotes = 0;
	}
	return rc;
}

/* The settings among the reproducibility facts, so a reader sees their values per run. */
static int setting_facts(lb_report *r, const lb_report_setting *s)
{
	int rc = 0;
	if (s->entry)
		rc = add_fact(r, "entry point", s->entry);
	if (rc == 0 && s->code) {
		char v[96];
		snprintf(v, sizeof v, "sha256 %.12s... of the staged files", s->code);
		rc = add_fact(r, "staged code", v);
	}
	if (rc == 0 && s->data) {
		char v[96];
		snprintf(v, sizeof v, "sha256 %.12s... of the fingerprints", s->data);
		rc = add_fact(r, "mounted data", v);
	}
	if (rc == 0) {
		lb_buf b = {0};
		for (size_t i = 0; i < s->nenv; i++) {
			lb_buf_puts(&b, i ? " " : "");
			put_word(&b, s->env[i]);
		}
		rc = add_fact(r, "-e variables (seeds aside)", b.data ? b.data : "none");
		lb_buf_free(&b);
	}
	return rc;
}

/* ---- series ---------------------------------------------------------------------------------- */

typedef struct series_ctx {
	lb_report *r;
	size_t condition;
	int err;
	/* the series a run touched, to skip re-lookups: none kept, the counts are small */
} series_ctx;

static lb_report_series *series_for(lb_report *r, const char *metric, const char *x_label)
{
	for (size_t i = 0; i < r->nseries; i++)
		if (strcmp(r->series[i].metric, metric) == 0 &&
		    strcmp(r->series[i].x_label, x_label) == 0)
			return &r->series[i];
	if (r->nseries >= LB_REPORT_MAX_SERIES)
		return NULL;
	lb_report_series *s = push(&r->series, &r->nseries, sizeof *r->series);
	if (!s)
		return NULL;
	s->metric = strdup(metric);
	s->x_label = strdup(x_label);
	if (!s->metric || !s->x_label) {
		free(s->metric);
		free(s->x_label);
		r->nseries--;
		return NULL;
	}
	return s;
}

/* Makes room for condition c in every series (conditions may be added after series). */
static int series_grow(lb_report_series *s, size_t old_n, size_t new_n)
{
	size_t *np = realloc(s->npoints, new_n * sizeof *np);
	if (np)
		s->npoints = np;
	double **x = realloc(s->x, new_n * sizeof *x);
	if (x)
		s->x = x;
	double **y = realloc(s->y, new_n * sizeof *y);
	if (y)
		s->y = y;
	double **k = realloc(s->count, new_n * sizeof *k);
	if (k)
		s->count = k;
	if (!np || !x || !y || !k)
		return -ENOMEM;
	for (size_t c = old_n; c < new_n; c++) {
		s->npoints[c] = 0;
		s->x[c] = s->y[c] = s->count[c] = NULL;
	}
	return 0;
}

static void on_point(void *vctx, const char *metric, const char *x_label, double x, double y)
{
	series_ctx *ctx = vctx;
	lb_report *r = ctx->r;
	if (!isfinite(x) || !isfinite(y) || ctx->err)
		return;
	lb_report_series *s = series_for(r, metric, x_label);
	if (!s)
		return;
	if (!s->npoints && series_grow(s, 0, r->nconditions) < 0) {
		ctx->err = -ENOMEM;
		return;
	}
	size_t c = ctx->condition, n = s->npoints[c];
	/* Points arrive in step order: search from the end. */
	size_t at = n;
	while (at > 0 && s->x[c][at - 1] > x)
		at--;
	if (at > 0 && s->x[c][at - 1] == x) {
		s->y[c][at - 1] += y;
		s->count[c][at - 1] += 1;
		return;
	}
	if (n >= LB_REPORT_MAX_POINTS)
		return;
	double *nx = realloc(s->x[c], (n + 1) * sizeof *nx);
	if (nx)
		s->x[c] = nx;
	double *ny = realloc(s->y[c], (n + 1) * sizeof *ny);
	if (ny)
		s->y[c] = ny;
	double *nk = realloc(s->count[c], (n + 1) * sizeof *nk);
	if (nk)
		s->count[c] = nk;
	if (!nx || !ny || !nk) {
		ctx->err = -ENOMEM;
		return;
	}
	memmove(nx + at + 1, nx + at, (n - at) * sizeof *nx);
	memmove(ny + at + 1, ny + at, (n - at) * sizeof *ny);
	memmove(nk + at + 1, nk + at, (n - at) * sizeof *nk);
	nx[at] = x;
	ny[at] = y;
	nk[at] = 1;
	s->npoints[c] = n + 1;
}

static const char *const counter_words[] = {"epoch",	 "step",	"batch",  "iter",
					    "iteration", "global_step", "episode"};

static bool counter_word(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof counter_words / sizeof *counter_words; i++)
		if (strlen(counter_words[i]) == len && strncasecmp(s, counter_words[i], len) == 0)
			return true;
	return false;
}

/* "3" or "3/10" (the count of a progress line) as 3. */
static bool counter_value(const char *s, size_t len, double *out)
{
	const char *slash = memchr(s, '/', len);
	return lb_parse_number(s, slash ? (size_t)(slash - s) : len, out);
}

typedef struct pair {
	const char *k, *v;
	size_t kl, vl;
} pair;

#define PROGRESS_PAIRS_MAX 16

static bool pair_sep(char c)
{
	return c == ' ' || c == '\t' || c == ',' || c == ';' || c == '|' || c == '\r';
}

/* A progress line as pairs `k=v`, `k: v` or `k:v`; false for a line with anything else. */
static bool progress_pairs(const char *line, size_t len, pair *out, size_t *n)
{
	size_t i = 0, np = 0;
	while (i < len) {
		while (i < len && pair_sep(line[i]))
			i++;
		if (i == len)
			break;
		size_t start = i;
		while (i < len && !pair_sep(line[i]))
			i++;
		const char *tok = line + start;
		size_t tl = i - start;
		const char *eq = memchr(tok, '=', tl), *colon = memchr(tok, ':', tl);
		const char *cut = eq && (!colon || eq < colon) ? eq : colon;
		if (!cut || cut == tok || np == PROGRESS_PAIRS_MAX)
			return false;
		pair p = {tok, cut + 1, (size_t)(cut - tok), tl - (size_t)(cut - tok) - 1};
		if (p.vl == 0) {
			/* "Loss: 0.3": the value is the next token. */
			while (i < len && pair_sep(line[i]))
				i++;
			size_t vs = i;
			while (i < len && !pair_sep(line[i]))
				i++;
			if (i == vs)
				return false;
			p.v = line + vs;
			p.vl = i - vs;
		}
		out[np++] = p;
	}
	*n = np;
	return np >= 2;
}

static void scan_progress(const char *line, size_t len, const char *group,
			  lb_report_point_fn fn, void *ctx)
{
	pair p[PROGRESS_PAIRS_MAX];
	size_t n;
	if (!progress_pairs(line, len, p, &n))
		return;
	ssize_t counter = -1;
	double x = 0;
	for (size_t i = 0; i < n && counter < 0; i++)
		if (counter_word(p[i].k, p[i].kl) && counter_value(p[i].v, p[i].vl, &x))
			counter = (ssize_t)i;
	if (counter < 0)
		return;
	char xl[32];
	snprintf(xl, sizeof xl, "%.*s", (int)(p[counter].kl < 31 ? p[counter].kl : 31), p[counter].k);
	for (char *c = xl; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	for (size_t i = 0; i < n; i++) {
		double y;
		if (counter_word(p[i].k, p[i].kl) || p[i].kl > LB_METRIC_NAME_MAX ||
		    !lb_parse_number(p[i].v, p[i].vl, &y))
			continue;
		char name[2 * LB_METRIC_NAME_MAX + 2];
		snprintf(name, sizeof name, "%s%s%.*s", group ? group : "", group ? "/" : "",
			 (int)p[i].kl, p[i].k);
		fn(ctx, name, xl, x, y);
	}
}

typedef struct occurrence {
	char name[2 * LB_METRIC_NAME_MAX + 2];
	size_t seen;
} occurrence;

#define OCCURRENCE_NAMES_MAX 256

void lb_report_scan_series(const char *text, size_t len, lb_report_point_fn fn, void *ctx)
{
	occurrence *occ = calloc(OCCURRENCE_NAMES_MAX, sizeof *occ);
	lb_metric_line *ml = malloc(sizeof *ml);
	char group[LB_METRIC_NAME_MAX + 1] = "";
	if (!occ || !ml)
		goto out;
	size_t nocc = 0;
	for (size_t pos = 0; pos < len;) {
		const char *line = text + pos;
		/* Lines end where the collector ends them, carriage returns included. */
		size_t ll = lb_metric_line_end(line, len - pos);
		pos += ll + (ll < len - pos ? 1 : 0);
		if (ll > 4096)
			continue;
		if (!lb_metric_line_parse(line, ll, ml)) {
			scan_progress(line, ll, group[0] ? group : NULL, fn, ctx);
			continue;
		}
		if (ml->form == LB_METRIC_FORM_PLAIN && strcmp(ml->values[0].name, "condition") == 0) {
			snprintf(group, sizeof group, "%.*s", (int)ml->values[0].str_len,
				 ml->values[0].str);
			continue;
		}
		/* A table row's metric depends on its table's header, which this line-by-line
		 * scan does not see: the collector's values have it. */
		if ((ml->form != LB_METRIC_FORM_PLAIN && ml->form != LB_METRIC_FORM_TAGGED) ||
		    ml->table_row)
			continue;
		const char *xl = "occurrence";
		char xlbuf[32];
		double x = 0;
		bool tagged_step = false;
		for (size_t t = 0; ml->form == LB_METRIC_FORM_TAGGED && t < ml->n_tags; t++)
			if (counter_word(ml->tags[t].key, ml->tags[t].key_len) &&
			    counter_value(ml->tags[t].value, ml->tags[t].value_len, &x)) {
				snprintf(xlbuf, sizeof xlbuf, "%.*s", (int)ml->tags[t].key_len,
					 ml->tags[t].key);
				for (char *q = xlbuf; *q; q++)
					*q = (char)tolower((unsigned char)*q);
				xl = xlbuf;
				tagged_step = true;
				break;
			}
		if (ml->form == LB_METRIC_FORM_TAGGED && !tagged_step)
			continue;
		for (size_t i = 0; i < ml->n_values; i++) {
			const lb_metric_value *v = &ml->values[i];
			if (v->kind != LB_METRIC_NUMBER || strcmp(v->name, "TIME_ESTIMATE") == 0 ||
			    strcmp(v->name, "TIME_GUARD") == 0)
				continue;
			char name[2 * LB_METRIC_NAME_MAX + 2];
			if (ml->form == LB_METRIC_FORM_TAGGED)
				snprintf(name, sizeof name, "%.*s/%s", (int)ml->condition_len,
					 ml->condition, v->name);
			else
				snprintf(name, sizeof name, "%s%s%s", group, group[0] ? "/" : "",
					 v->name);
			if (!tagged_step) {
				size_t k = 0;
				while (k < nocc && strcmp(occ[k].name, name) != 0)
					k++;
				if (k == nocc) {
					if (nocc == OCCURRENCE_NAMES_MAX)
						continue;
					snprintf(occ[nocc++].name, sizeof occ->name, "%s", name);
				}
				x = (double)++occ[k].seen;
			}
			fn(ctx, name, xl, x, v->number);
		}
	}
out:
	free(occ);
	free(ml);
}

/* Series with at most one point in every condition are final values, not series. */
static void drop_flat_series(lb_report *r)
{
	size_t keep = 0;
	for (size_t i = 0; i < r->nseries; i++) {
		lb_report_series *s = &r->series[i];
		bool multi = false;
		for (size_t c = 0; s->npoints && c < r->nconditions; c++)
			multi |= s->npoints[c] >= 2;
		if (!multi) {
			free(s->metric);
			free(s->x_label);
			for (size_t c = 0; s->npoints && c < r->nconditions; c++) {
				free(s->x[c]);
				free(s->y[c]);
				free(s->count[c]);
			}
			free(s->npoints);
			free(s->x);
			free(s->y);
			free(s->count);
			continue;
		}
		for (size_t c = 0; c < r->nconditions; c++)
			for (size_t p = 0; p < s->npoints[c]; p++)
				s->y[c][p] /= s->count[c][p];
		r->series[keep++] = *s;
	}
	r->nseries = keep;
}

static int scan_run_log(lb_report *r, int dfd, size_t condition)
{
	LB_AUTOFREE char *log = NULL;
	size_t len = 0;
	if (lb_read_file_at(dfd, "run.log", RUN_LOG_MAX, &log, &len) < 0)
		return 0;
	series_ctx ctx = {r, condition, 0};
	lb_report_scan_series(log, len, on_point, &ctx);
	return ctx.err;
}

/* ---- failures -------------------------------------------------------------------------------- */

static int set_evidence(lb_report_failure *f, json_object *failure)
{
	json_object *ev = get(failure, "evidence");
	if (!ev || !json_object_is_type(ev, json_type_array))
		return 0;
	size_t n = json_object_array_length(ev);
	for (size_t i = 0; i < n && f->nevidence < LB_REPORT_MAX_EVIDENCE; i++) {
		json_object *line = json_object_array_get_idx(ev, i);
		if (!json_object_is_type(line, json_type_string))
			continue;
		char *d = strdup(json_object_get_string(line));
		char **slot = d ? push(&f->evidence, &f->nevidence, sizeof *f->evidence) : NULL;
		if (!slot) {
			free(d);
			return -ENOMEM;
		}
		*slot = d;
	}
	return 0;
}

/* ---- from a sweep document ------------------------------------------------------------------- */

/* An error a user must fix, in err. */
#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), -EINVAL)

/* An integer past 2^53 as its digits (json-c keeps 64-bit integers exact). */
static void exact_int_text(json_object *v, char *out, size_t n)
{
	out[0] = 0;
	if (!json_object_is_type(v, json_type_int))
		return;
	int64_t i = json_object_get_int64(v);
	if (i == INT64_MAX)
		snprintf(out, n, "%" PRIu64, json_object_get_uint64(v));
	else if (i > (1LL << 53) || i < -(1LL << 53))
		snprintf(out, n, "%" PRId64, i);
}

static int read_stat(json_object *m, lb_report_stat *st, const char *name, size_t ci,
		     char *err, size_t errlen)
{
	json_object *n = get(m, "n");
	if (!json_object_is_type(m, json_type_object) || !n || !json_object_is_type(n, json_type_int) ||
	    json_object_get_int64(n) < 0)
		return BAD("metric '%s' of condition %zu has no count n", name, ci);
	st->present = true;
	st->n = (size_t)json_object_get_int64(n);
	json_object *nf = get(m, "nonfinite");
	if (nf && json_object_is_type(nf, json_type_int) && json_object_get_int64(nf) > 0)
		st->nonfinite = (size_t)json_object_get_int64(nf);
	if (st->n == 0)
		return 0;
	json_object *mean = get(m, "mean"), *mn = get(m, "min"), *mx = get(m, "max");
	if (!is_num(mean) || !is_num(mn) || !is_num(mx))
		return BAD("metric '%s' of condition %zu lacks mean, min or max", name,
			   ci);
	st->mean = json_object_get_double(mean);
	st->min = json_object_get_double(mn);
	st->max = json_object_get_double(mx);
	exact_int_text(mn, st->min_int, sizeof st->min_int);
	exact_int_text(mx, st->max_int, sizeof st->max_int);
	json_object *sd = get(m, "std"), *c95 = get(m, "ci95");
	if (st->n >= 2 && is_num(sd) && is_num(get(c95, "low")) && is_num(get(c95, "high"))) {
		st->has_spread = true;
		st->std = json_object_get_double(sd);
		st->ci_low = json_object_get_double(get(c95, "low"));
		st->ci_high = json_object_get_double(get(c95, "high"));
	}
	if (!isfinite(st->mean) || !isfinite(st->min) || !isfinite(st->max) ||
	    (st->has_spread && (!isfinite(st->std) || !isfinite(st->ci_low) || !isfinite(st->ci_high))))
		return BAD("metric '%s' of condition %zu has a value that is not finite",
			   name, ci);
	return 0;
}

static size_t get_count(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0
		       ? (size_t)json_object_get_int64(v)
		       : 0;
}

static int sweep_conditions(json_object *conds, lb_report *r, char *err, size_t errlen)
{
	size_t nc = json_object_array_length(conds);
	for (size_t i = 0; i < nc; i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *name = get_str(c, "name");
		if (!name)
			return BAD("condition %zu has no name", i);
		if (find_str(r->conditions, r->nconditions, name) >= 0)
			return BAD("condition '%s' appears twice (at %zu)", name, i);
		size_t ci;
		int rc = add_condition(r, name, &ci);
		if (rc == -E2BIG)
			return BAD("more than %d conditions", LB_REPORT_MAX_CONDITIONS);
		if (rc < 0)
			return rc;
		r->cells[ci] = get_count(c, "cells");
		r->completed[ci] = get_count(c, "completed");
		r->retried[ci] = get_count(c, "completed_after_retry");
		json_object *ms = get(c, "metrics");
		if (ms && !json_object_is_type(ms, json_type_object))
			return BAD("condition '%s' (%zu) has metrics that are not an object",
				   name, i);
		if (!ms)
			continue;
		json_object_object_foreach(ms, k, v)
		{
			(void)v;
			metric_index(r, k);
		}
	}
	r->stats = calloc(r->nconditions * r->nmetrics + 1, sizeof *r->stats);
	if (!r->stats)
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++) {
		json_object *ms = get(json_object_array_get_idx(conds, i), "metrics");
		if (!ms)
			continue;
		json_object_object_foreach(ms, k, v)
		{
			ssize_t m = find_str(r->metrics, r->nmetrics, k);
			if (m < 0)
				continue;
			int rc = read_stat(v, &r->stats[i * r->nmetrics + (size_t)m], k, i, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int sweep_failures(json_object *fails, lb_report *r, char *err, size_t errlen)
{
	size_t n = fails ? json_object_array_length(fails) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *f = json_object_array_get_idx(fails, i);
		if (!json_object_is_type(f, json_type_object))
			return BAD("failure %zu is not an object", i);
		lb_report_failure *rf = push(&r->failures, &r->nfailures, sizeof *r->failures);
		if (!rf)
			return -ENOMEM;
		const char *status = get_str(f, "status");
		rf->condition = strdup(get_str(f, "condition") ? get_str(f, "condition") : "?");
		rf->status = strdup(status ? status : "unknown");
		rf->run_id = dup_or_null(get_str(f, "run_id"));
		rf->class_ = dup_or_null(get_str(f, "class"));
		rf->summary = dup_or_null(get_str(f, "summary"));
		rf->then = dup_or_null(get_str(f, "then"));
		json_object *seed = get(f, "seed");
		if (seed && json_object_is_type(seed, json_type_int)) {
			rf->has_seed = true;
			rf->seed = (long)json_object_get_int64(seed);
		}
		if (!rf->condition || !rf->status)
			return -ENOMEM;
	}
	return 0;
}

int lb_report_from_sweep(json_object *doc, lb_report *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	const char *schema = get_str(doc, "schema");
	if (!json_object_is_type(doc, json_type_object))
		return BAD("not a sweep document: not a JSON object");
	if (!schema || strcmp(schema, LB_SWEEP_SCHEMA) != 0)
		return BAD("not a sweep document: schema is '%s', not " LB_SWEEP_SCHEMA,
			   schema ? schema : "(none)");
	const char *id = get_str(doc, "id");
	json_object *conds = get(doc, "conditions"), *fails = get(doc, "failures"),
		    *ident = get(doc, "identical_conditions");
	if (!id)
		return BAD("sweep document has no id");
	if (!conds || !json_object_is_type(conds, json_type_array))
		return BAD("sweep document has no conditions array");
	if (fails && !json_object_is_type(fails, json_type_array))
		return BAD("sweep document's failures are not an array");
	lb_buf t = {0};
	lb_buf_printf(&t, "sweep %s", id);
	out->title = t.data;
	const char *src = get_str(doc, "expdir");
	out->source = dup_or_null(src);
	out->status = dup_or_null(get_str(doc, "status"));
	int rc = sweep_conditions(conds, out, err, errlen);
	if (rc == 0)
		rc = sweep_failures(fails, out, err, errlen);
	json_object *retried = get(doc, "retried_failures");
	if (rc == 0 && retried && !json_object_is_type(retried, json_type_array))
		rc = BAD("sweep document's retried_failures are not an array");
	if (rc == 0)
		rc = sweep_failures(retried, out, err, errlen);
	size_t ni = ident && json_object_is_type(ident, json_type_array) ? json_object_array_length(ident) : 0;
	if (rc == 0 && ni && !(out->identical_group = calloc(out->nconditions + 1, sizeof(size_t))))
		rc = -ENOMEM;
	for (size_t i = 0; rc == 0 && i < ni; i++) {
		json_object *g = json_object_array_get_idx(ident, i), *members = get(g, "conditions");
		const char *msg = get_str(g, "message");
		if (!msg)
			continue;
		/* The message says what is wrong; which conditions is said here. */
		lb_buf line = {0};
		size_t nm = members && json_object_is_type(members, json_type_array)
				    ? json_object_array_length(members) : 0;
		for (size_t k = 0; k < nm; k++) {
			const char *name = json_object_get_string(json_object_array_get_idx(members, k));
			ssize_t ci = name ? find_str(out->conditions, out->nconditions, name) : -1;
			if (ci < 0)
				continue;
			lb_buf_printf(&line, "%s%s", line.len ? ", " : "", name);
			out->identical_group[ci] = out->nidentical + 1;
		}
		lb_buf_printf(&line, "%s%s", line.len ? ": " : "", msg);
		char **slot = line.data ? push(&out->identical, &out->nidentical, sizeof *out->identical) : NULL;
		if (!slot) {
			lb_buf_free(&line);
			rc = -ENOMEM;
		} else {
			*slot = line.data;
		}
	}
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory reading the sweep document");
		lb_report_free(out);
	}
	return rc;
}

int lb_report_read_sweep_runs(lb_report *r, json_object *doc)
{
	json_object *cells = get(doc, "cells");
	size_t n = cells && json_object_is_type(cells, json_type_array) ? json_object_array_length(cells) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *cell = json_object_array_get_idx(cells, i);
		const char *dir = get_str(cell, "run_dir"), *cond = get_str(cell, "condition");
		ssize_t ci = cond ? find_str(r->conditions, r->nconditions, cond) : -1;
		if (!dir || ci < 0)
			continue;
		LB_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		json_object *result = load_json_at(dfd, "result.json");
		json_object *manifest = load_json_at(dfd, "manifest.json");
		char pkg[65];
		lb_report_setting st;
		int rc = run_facts(r, dfd, result, manifest, pkg);
		if (rc == 0 && (rc = lb_report_run_setting(result, manifest, pkg[0] ? pkg : NULL,
							   &st)) == 0) {
			rc = setting_facts(r, &st);
			lb_report_setting_free(&st);
		}
		const char *run_id = get_str(cell, "run_id");
		json_object *failure = get(result, "failure");
		for (size_t f = 0; rc == 0 && failure && run_id && f < r->nfailures; f++)
			if (r->failures[f].run_id && strcmp(r->failures[f].run_id, run_id) == 0 &&
			    !r->failures[f].nevidence)
				rc = set_evidence(&r->failures[f], failure);
		const char *status = get_str(result, "status");
		if (rc == 0 && status && strcmp(status, "completed") == 0)
			rc = scan_run_log(r, dfd, (size_t)ci);
		json_object_put(result);
		json_object_put(manifest);
		if (rc < 0)
			return rc;
		r->runs_read++;
	}
	drop_flat_series(r);
	return 0;
}

/* ---- from run directories -------------------------------------------------------------------- */

/* While runs are added, r.conditions holds each condition's setting key (runs of one key
 * pool); the names, which depend on what the settings of one base have in common, are made in
 * lb_report_builder_finish. */
struct lb_report_builder {
	lb_report r;
	/* [condition]: the cell records (lb_sweep_cell_record) of its completed runs and of its
	 * invalid_metrics runs, for lb_sweep_condition_stats, as a sweep's cells are */
	json_object **done, **bad;
	lb_report_setting *settings; /* [condition] */
	size_t nsettings;
};

int lb_report_builder_new(lb_report_builder **out)
{
	*out = calloc(1, sizeof **out);
	return *out ? 0 : -ENOMEM;
}

void lb_report_builder_free(lb_report_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nsettings; i++)
		lb_report_setting_free(&b->settings[i]);
	free(b->settings);
	for (size_t i = 0; i < b->nsettings; i++) {
		json_object_put(b->done ? b->done[i] : NULL);
		json_object_put(b->bad ? b->bad[i] : NULL);
	}
	free(b->done);
	free(b->bad);
	lb_report_free(&b->r);
	free(b);
}

/* The records of runs whose metrics count, kept in the order given. */
static int builder_keep(json_object **slot, json_object *result)
{
	if (!*slot && !(*slot = json_object_new_array()))
		return -ENOMEM;
	json_object *rec = lb_sweep_cell_record(result);
	if (!rec || json_object_array_add(*slot, rec) < 0) {
		json_object_put(rec);
		return -ENOMEM;
	}
	return 0;
}

int lb_report_builder_add_run(lb_report_builder *b, const char *run_dir, char *err, size_t errlen)
{
	LB_AUTOCLOSE int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "cannot open run directory %s: %s", run_dir, strerror(errno));
		return -EINVAL;
	}
	json_object *result = load_json_at(dfd, "result.json");
	if (!result || !json_object_is_type(result, json_type_object)) {
		json_object_put(result);
		snprintf(err, errlen, "%s/result.json is missing or not JSON", run_dir);
		return -EINVAL;
	}
	json_object *manifest = load_json_at(dfd, "manifest.json");
	lb_report *r = &b->r;
	char pkg[65];
	lb_report_setting st = {0};
	lb_buf key = {0};
	int rc = run_facts(r, dfd, result, manifest, pkg);
	if (rc == 0)
		rc = lb_report_run_setting(result, manifest, pkg[0] ? pkg : NULL, &st);
	if (rc == 0)
		rc = setting_facts(r, &st);
	if (rc == 0)
		rc = lb_report_setting_key(&st, &key);
	const char *cond = key.data;
	ssize_t found = rc == 0 ? find_str(r->conditions, r->nconditions, cond) : -1;
	size_t ci = (size_t)found;
	if (rc == 0 && found < 0) {
		size_t old = r->nconditions;
		lb_report_setting *ss = realloc(b->settings, (old + 1) * sizeof *ss);
		if (ss)
			b->settings = ss;
		json_object **dn = ss ? realloc(b->done, (old + 1) * sizeof *dn) : NULL;
		if (dn)
			b->done = dn;
		json_object **bd = dn ? realloc(b->bad, (old + 1) * sizeof *bd) : NULL;
		if (bd)
			b->bad = bd;
		rc = bd ? add_condition(r, cond, &ci) : -ENOMEM;
		if (rc == 0) {
			b->done[ci] = b->bad[ci] = NULL;
			b->settings[ci] = st;
			b->nsettings = ci + 1;
			memset(&st, 0, sizeof st);
		}
		for (size_t s = 0; rc == 0 && s < r->nseries; s++)
			if (r->series[s].npoints)
				rc = series_grow(&r->series[s], old, r->nconditions);
	}
	lb_report_setting_free(&st);
	const char *status = get_str(result, "status");
	bool completed = status && strcmp(status, "completed") == 0;
	if (rc == 0)
		r->cells[ci]++;
	if (rc == 0 && completed) {
		r->completed[ci]++;
		rc = builder_keep(&b->done[ci], result);
		if (rc == 0)
			rc = scan_run_log(r, dfd, ci);
	} else if (rc == 0) {
		/* A seed that diverged still reported its finite metrics: they count, as a
		 * sweep's invalid_metrics cells' do, and the run is a failure too. */
		if (status && strcmp(status, "invalid_metrics") == 0)
			rc = builder_keep(&b->bad[ci], result);
		lb_report_failure *f = rc == 0 ? push(&r->failures, &r->nfailures, sizeof *r->failures) : NULL;
		json_object *failure = get(result, "failure");
		json_object *seed = get(get(result, "sweep"), "seed");
		if (!f && rc == 0)
			rc = -ENOMEM;
		if (f) {
			f->condition = strdup(cond);
			f->status = strdup(status ? status : "unknown");
			f->run_id = dup_or_null(get_str(result, "id"));
			f->class_ = dup_or_null(get_str(failure, "class"));
			f->summary = dup_or_null(get_str(failure, "summary"));
			if (seed && json_object_is_type(seed, json_type_int)) {
				f->has_seed = true;
				f->seed = (long)json_object_get_int64(seed);
			}
			rc = set_evidence(f, failure);
		}
	}
	json_object_put(result);
	json_object_put(manifest);
	lb_buf_free(&key);
	if (rc == -E2BIG)
		snprintf(err, errlen, "more than %d conditions", LB_REPORT_MAX_CONDITIONS);
	else if (rc < 0)
		snprintf(err, errlen, "reading %s: %s", run_dir, strerror(-rc));
	if (rc == 0)
		r->runs_read++;
	return rc;
}

/* A condition's records as the array lb_sweep_condition_stats takes. */
static json_object **recs_of(json_object *arr, size_t *n)
{
	*n = arr ? json_object_array_length(arr) : 0;
	json_object **v = calloc(*n + 1, sizeof *v);
	for (size_t i = 0; v && i < *n; i++)
		v[i] = json_object_array_get_idx(arr, i);
	return v;
}

/* Each condition's statistics by the sweep's own function, read as a sweep document's are. */
static int builder_stats(lb_report_builder *b)
{
	lb_report *r = &b->r;
	size_t nc = r->nconditions;
	json_object **stats = calloc(nc + 1, sizeof *stats);
	int rc = stats ? 0 : -ENOMEM;
	for (size_t c = 0; rc == 0 && c < nc; c++) {
		size_t n, nbad;
		json_object **done = recs_of(b->done[c], &n), **bad = recs_of(b->bad[c], &nbad);
		stats[c] = done && bad ? lb_sweep_condition_stats(done, n, bad, nbad) : NULL;
		free(done);
		free(bad);
		if (!stats[c]) {
			rc = -ENOMEM;
			break;
		}
		json_object_object_foreach(stats[c], k, v)
		{
			(void)v;
			metric_index(r, k);
		}
	}
	if (rc == 0 && !(r->stats = calloc(nc * r->nmetrics + 1, sizeof *r->stats)))
		rc = -ENOMEM;
	for (size_t c = 0; rc == 0 && c < nc; c++) {
		json_object_object_foreach(stats[c], k, v)
		{
			ssize_t m = find_str(r->metrics, r->nmetrics, k);
			char err[256];
			if (rc == 0 && m >= 0)
				rc = read_stat(v, &r->stats[c * r->nmetrics + (size_t)m], k, c, err,
					       sizeof err);
		}
	}
	for (size_t c = 0; stats && c < nc; c++)
		json_object_put(stats[c]);
	free(stats);
	return rc;
}

int lb_report_builder_finish(lb_report_builder *b, lb_report *out)
{
	lb_report *r = &b->r;
	int rc = builder_stats(b);
	if (rc < 0)
		return rc;
	char **names = calloc(r->nconditions + 1, sizeof *names);
	rc = names ? lb_report_condition_names(b->settings, r->nconditions, names, &r->splits,
						   &r->nsplits)
		       : -ENOMEM;
	for (size_t f = 0; rc == 0 && f < r->nfailures; f++) {
		ssize_t ci = find_str(r->conditions, r->nconditions, r->failures[f].condition);
		char *d = ci >= 0 ? strdup(names[ci]) : NULL;
		if (ci >= 0 && !d)
			rc = -ENOMEM;
		if (d) {
			free(r->failures[f].condition);
			r->failures[f].condition = d;
		}
	}
	for (size_t c = 0; rc == 0 && c < r->nconditions; c++) {
		free(r->conditions[c]);
		r->conditions[c] = names[c];
		names[c] = NULL;
	}
	if (names)
		free_strs(names, r->nconditions);
	if (rc < 0)
		return rc;
	lb_buf t = {0};
	lb_buf_printf(&t, "%zu run%s", r->runs_read, r->runs_read == 1 ? "" : "s");
	r->title = t.data;
	drop_flat_series(r);
	*out = *r;
	memset(r, 0, sizeof *r);
	return out->title ? 0 : -ENOMEM;
}
