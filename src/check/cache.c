/* check: per-file results kept between checks, in the user's cache directory.
 *
 * An entry holds one file's settled findings and seed calls, named by the sha256 of every
 * input that can change them (ck_cache_key; docs/check.md lists them), plus the facts about
 * other files it relied on (ck_deps: whether an imported name is one of the experiment's own
 * modules), which are checked again against this check's experiment before a hit is used.
 * The entries of one check (one experiment directory under one configuration) are kept
 * together in one pack file, written only by labbox from its own analysis into
 * cache_dir/check (0700, the user's own, through lb_open_private_dir), through a temporary
 * file and rename(); a reader trusts nothing it reads: an entry that fails its checksum or
 * its format is a miss, and the pack is written anew after the file is analysed. */
#include "check_internal.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAGIC "labbox.check-cache/1\n"
#define CACHE_MAGIC_LEN (sizeof CACHE_MAGIC - 1)
#define CACHE_FILES_MAGIC "labbox.check-files/1\n"
#define CACHE_FILES_MAGIC_LEN (sizeof CACHE_FILES_MAGIC - 1)
#define NS_PER_S 1000000000ll
/* An entry larger than this is not one labbox wrote for a file of at most 8 MiB of source
 * with a bounded number of findings: a miss. */
#define CACHE_ENTRY_MAX (4u << 20)
/* Bound of the whole cache (with CACHE_MAX_PACKS): past either, the least recently used packs
 * go until it is under three quarters of both. */
#define CACHE_MAX_BYTES (512ull << 20)
/* A read refreshes the pack's mtime (what eviction goes by) when it is older than this. */
#define CACHE_TOUCH_S (6 * 3600)
/* Temporary files of a writer that died are removed by the pruning after this long. */
#define CACHE_STALE_TMP_S 3600
#define CACHE_DEPS_MAX 4096

/* ---- facts about other files ------------------------------------------------------------------ */

void ck_deps_free(ck_deps *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
	d->overflow = false;
}

static void deps_add(ck_deps *d, const char *name, bool local)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].name, name) == 0)
			return;
	if (d->n >= CACHE_DEPS_MAX) {
		d->overflow = true;
		return;
	}
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 8;
		ck_dep *nv = realloc(d->v, nc * sizeof *nv);
		if (!nv) {
			d->overflow = true;
			return;
		}
		d->v = nv;
		d->cap = nc;
	}
	if (!(d->v[d->n].name = strdup(name))) {
		d->overflow = true;
		return;
	}
	d->v[d->n++].local = local;
}

bool ck_local_module(const ck_analysis_in *in, const char *top)
{
	bool local = ck_list_match(&in->cfg->local_modules, top) != NULL;
	if (in->deps)
		deps_add(in->deps, top, local);
	return local;
}

bool ck_deps_hold(const lb_check_config *cfg, const ck_deps *d)
{
	if (d->overflow)
		return false;
	for (size_t i = 0; i < d->n; i++)
		if ((ck_list_match(&cfg->local_modules, d->v[i].name) != NULL) != d->v[i].local)
			return false;
	return true;
}

/* ---- the key ---------------------------------------------------------------------------------- */

/* One named part of a key: name and value, each with its length, so that no two different
 * sequences of parts hash the same bytes. */
void ck_cache_key_part(lb_sha256 *c, const char *name, const void *data, size_t len)
{
	uint64_t n[2] = {strlen(name), len};
	lb_sha256_update(c, n, sizeof n);
	lb_sha256_update(c, name, n[0]);
	lb_sha256_update(c, data ? data : "", len);
}

static void part_str(lb_sha256 *c, const char *name, const char *s)
{
	ck_cache_key_part(c, name, s, s ? strlen(s) : 0);
}

/* The GNU build ID of the running program: any change to the code labbox was built from
 * (the analysis, the rules, the grammar, the helpers they call) changes it, where the
 * version string stays the same from one commit to the next. */
static int build_id_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	lb_sha256 *c = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name_sz = (nh->n_namesz + 3) & ~3u, desc_sz = (nh->n_descsz + 3) & ~3u;
			const char *name = p + sizeof *nh, *desc = name + name_sz;
			if (desc + desc_sz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				ck_cache_key_part(c, "build-id", desc, nh->n_descsz);
				return 1;
			}
			p = desc + desc_sz;
		}
	}
	return 1; /* the first object is the program itself */
}

static void part_list(lb_sha256 *c, const char *name, const ck_list *l)
{
	lb_buf b = {0};
	for (size_t i = 0; i < l->n; i++) {
		lb_buf_puts(&b, l->v[i].project ? "p:" : "o:");
		lb_buf_append(&b, l->v[i].s, strlen(l->v[i].s) + 1);
	}
	ck_cache_key_part(c, name, b.data, b.len);
	lb_buf_free(&b);
}

/* What every file of one check shares: labbox's own identity and the configuration that the
 * analysis and the settling of findings read. local_modules is not here: it is a fact about
 * the other files, checked per entry (ck_deps). */
static void key_base(const lb_check_config *cfg, const char *stdlib_id, uint8_t out[32])
{
	lb_sha256 c;
	lb_sha256_init(&c);
	part_str(&c, "schema", CACHE_MAGIC);
	part_str(&c, "labbox", LABBOX_VERSION);
	dl_iterate_phdr(build_id_cb, &c);
	/* the rule table (ids, severities per policy, hard gate) and the grammar */
	lb_sha256 rules;
	uint8_t rd[32];
	lb_sha256_init(&rules);
	for (size_t i = 0; i < R_COUNT; i++) {
		const ck_rule_def *d = &ck_rules[i];
		int v[3] = {d->standard, d->strict, d->hard_gate};
		part_str(&rules, "id", d->info.id);
		part_str(&rules, "category", d->info.category);
		ck_cache_key_part(&rules, "levels", v, sizeof v);
	}
	lb_sha256_final(&rules, rd);
	ck_cache_key_part(&c, "rules", rd, sizeof rd);
	const TSLanguage *lang = tree_sitter_python();
	uint32_t g[3] = {ts_language_abi_version(lang), ts_language_symbol_count(lang),
			 ts_language_field_count(lang)};
	ck_cache_key_part(&c, "grammar", g, sizeof g);
	int pol[4] = {(int)cfg->policy, cfg->trust_project, cfg->gate_refuses, cfg->real_home};
	ck_cache_key_part(&c, "policy", pol, sizeof pol);
	part_list(&c, "allow_modules", &cfg->allow_modules);
	part_list(&c, "allow_calls", &cfg->allow_calls);
	part_list(&c, "deny_modules", &cfg->deny_modules);
	part_list(&c, "deny_calls", &cfg->deny_calls);
	part_list(&c, "output_paths", &cfg->output_paths);
	part_list(&c, "ignore", &cfg->ignore);
	/* the standard library whose summaries the analysis used ("" : none, the floor) */
	part_str(&c, "stdlib", stdlib_id ? stdlib_id : "");
	lb_sha256_final(&c, out);
}

void ck_content_digest(const char *src, size_t len, uint8_t out[32])
{
	lb_sha256 c;
	lb_sha256_init(&c);
	lb_sha256_update(&c, src, len);
	lb_sha256_final(&c, out);
}

void ck_cache_key_digest(const ck_cache *cc, const uint8_t content[32], bool harness,
			 const char *syntax, char hex[65])
{
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "base", cc->base, sizeof cc->base);
	ck_cache_key_part(&c, "content", content, 32);
	ck_cache_key_part(&c, "harness", harness ? "1" : "0", 1);
	part_str(&c, "syntax", syntax);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
}

void ck_cache_key(const ck_cache *cc, const char *src, size_t len, bool harness,
		  const char *syntax, char hex[65])
{
	uint8_t content[32];
	ck_content_digest(src, len, content);
	ck_cache_key_digest(cc, content, harness, syntax, hex);
}

/* ---- the entry format ------------------------------------------------------------------------- */

static json_object *jstr_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

int ck_cache_encode(const char *key, const lb_check_report *one, const ck_deps *deps, lb_buf *out)
{
	json_object *body = json_object_new_object(), *fs = json_object_new_array(),
		    *ds = json_object_new_array(), *ss = json_object_new_array();
	int r = body && fs && ds && ss ? 0 : -ENOMEM;
	for (size_t i = 0; deps && r == 0 && i < deps->n; i++) {
		json_object *d = json_object_new_array();
		json_object_array_add(d, json_object_new_string(deps->v[i].name));
		json_object_array_add(d, json_object_new_boolean(deps->v[i].local));
		json_object_array_add(ds, d);
	}
	for (size_t i = 0; r == 0 && i < one->n; i++) {
		const lb_check_finding *f = &one->items[i];
		json_object *o = json_object_new_object();
		json_object_object_add(o, "line", json_object_new_int64(f->line));
		json_object_object_add(o, "col", json_object_new_int64(f->col));
		json_object_object_add(o, "id", json_object_new_string(f->id));
		json_object_object_add(o, "severity", json_object_new_int(f->severity));
		json_object_object_add(o, "message", json_object_new_string(f->message));
		json_object_object_add(o, "name", jstr_or_null(f->name));
		json_object_object_add(o, "rejects", json_object_new_boolean(f->rejects));
		json_object_object_add(o, "suppressed", json_object_new_boolean(f->suppressed));
		json_object_object_add(o, "suppression", jstr_or_null(f->suppression));
		json_object_array_add(fs, o);
	}
	for (size_t i = 0; r == 0 && one->seeds && i < json_object_array_length(one->seeds); i++) {
		json_object *s = NULL;
		/* a copy without "file": the entry is by content, the path is the reader's */
		if (json_object_deep_copy(json_object_array_get_idx(one->seeds, i), &s, NULL) < 0) {
			r = -ENOMEM;
			break;
		}
		json_object_object_del(s, "file");
		json_object_array_add(ss, s);
	}
	if (r < 0) {
		json_object_put(body);
		json_object_put(fs);
		json_object_put(ds);
		json_object_put(ss);
		return r;
	}
	json_object *is = json_object_new_array();
	if (!is) {
		json_object_put(body);
		return -ENOMEM;
	}
	if (one->imports) {
		json_object_object_foreach(one->imports, k, v) {
			(void)v;
			json_object_array_add(is, json_object_new_string(k));
		}
	}
	json_object_object_add(body, "imports", is);
	/* what the file needs of the sandbox, without the path: the reader's is put back */
	json_object *nd = json_object_new_array();
	for (size_t i = 0; nd && one->needs && i < json_object_array_length(one->needs); i++) {
		json_object *x = NULL, *ev;
		if (json_object_deep_copy(json_object_array_get_idx(one->needs, i), &x, NULL) < 0)
			break;
		if (json_object_object_get_ex(x, "evidence", &ev) && ev)
			json_object_object_del(ev, "file");
		json_object_array_add(nd, x);
	}
	json_object_object_add(body, "needs", nd);
	json_object_object_add(body, "deps", ds);
	json_object_object_add(body, "findings", fs);
	json_object_object_add(body, "seeds", ss);
	const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	size_t tlen = strlen(text);
	uint8_t d[32];
	char hex[65];
	lb_sha256 c;
	lb_sha256_init(&c);
	lb_sha256_update(&c, text, tlen);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
	r = lb_buf_append(out, CACHE_MAGIC, CACHE_MAGIC_LEN);
	if (r == 0)
		r = lb_buf_printf(out, "%s\n%s\n", key, hex);
	if (r == 0)
		r = lb_buf_append(out, text, tlen);
	json_object_put(body);
	return r;
}

static bool utf8_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = lb_utf8_seq_len((const unsigned char *)s + i, n - i);
		if (!k || (unsigned char)s[i] < 0x20)
			return false;
		i += k;
	}
	return true;
}

/* A string member: absent or null gives NULL when nullable, else the entry is bad. */
static int get_str(json_object *o, const char *k, bool nullable, const char **out)
{
	json_object *v;
	*out = NULL;
	if (!json_object_object_get_ex(o, k, &v) || !v)
		return nullable ? 0 : -EBADMSG;
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	if (strlen(s) != n || !utf8_ok(s, n))
		return -EBADMSG;
	*out = s;
	return 0;
}

static int get_uint(json_object *o, const char *k, int64_t max, int64_t *out)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return -EBADMSG;
	*out = json_object_get_int64(v);
	return *out < 0 || *out > max ? -EBADMSG : 0;
}

static int get_bool(json_object *o, const char *k, bool *out)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_boolean))
		return -EBADMSG;
	*out = json_object_get_boolean(v);
	return 0;
}

static int decode_finding(json_object *o, const char *file, lb_check_report *out)
{
	int64_t line, col, sev;
	const char *id, *msg, *name, *supp;
	bool rejects, suppressed;
	if (!json_object_is_type(o, json_type_object) || get_uint(o, "line", UINT_MAX, &line) < 0 ||
	    get_uint(o, "col", UINT_MAX, &col) < 0 || get_uint(o, "severity", LB_CHECK_ERROR, &sev) < 0 ||
	    get_str(o, "id", false, &id) < 0 || get_str(o, "message", false, &msg) < 0 ||
	    get_str(o, "name", true, &name) < 0 || get_str(o, "suppression", true, &supp) < 0 ||
	    get_bool(o, "rejects", &rejects) < 0 || get_bool(o, "suppressed", &suppressed) < 0)
		return -EBADMSG;
	ck_rule rule = R_COUNT;
	for (size_t i = 0; i < R_COUNT && rule == R_COUNT; i++)
		if (strcmp(ck_rules[i].info.id, id) == 0)
			rule = (ck_rule)i;
	if (rule == R_COUNT || suppressed != (supp != NULL))
		return -EBADMSG;
	int r = ck_report_add(out, file, (unsigned)line, (unsigned)col, rule, (lb_check_severity)sev,
			      msg, name);
	if (r < 0)
		return r;
	lb_check_finding *f = &out->items[out->n - 1];
	f->rejects = rejects;
	f->suppressed = suppressed;
	if (supp && !(f->suppression = strdup(supp)))
		return -ENOMEM;
	return 0;
}

/* A seed call, rebuilt from its checked members (nothing of the entry passes through as is):
 * {line, col, call, lib, value: integer, source text or null}. */
static int decode_seed(json_object *o, json_object *seeds)
{
	int64_t line, col;
	const char *call, *lib, *text = NULL;
	json_object *v;
	if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 5 ||
	    get_uint(o, "line", INT32_MAX, &line) < 0 || get_uint(o, "col", INT32_MAX, &col) < 0 ||
	    get_str(o, "call", false, &call) < 0 || get_str(o, "lib", false, &lib) < 0 ||
	    !json_object_object_get_ex(o, "value", &v) ||
	    (v && !json_object_is_type(v, json_type_int) && get_str(o, "value", false, &text) < 0))
		return -EBADMSG;
	json_object *s = json_object_new_object();
	if (!s)
		return -ENOMEM;
	json_object_object_add(s, "line", json_object_new_int((int)line));
	json_object_object_add(s, "col", json_object_new_int((int)col));
	json_object_object_add(s, "call", json_object_new_string(call));
	json_object_object_add(s, "lib", json_object_new_string(lib));
	json_object_object_add(s, "value", text ? json_object_new_string(text)
					   : v	  ? json_object_new_int64(json_object_get_int64(v))
						  : NULL);
	json_object_array_add(seeds, s);
	return 0;
}

/* A need (lb_check_report.needs' shape), rebuilt from its checked members with the reader's
 * file name: {kind, evidence: {file, line, text}, via, flag, optional, path?, finding,
 * granted}. */
static int decode_need(json_object *o, const char *file, json_object *needs)
{
	int64_t line;
	const char *kind, *text, *via, *flag, *path = NULL, *finding;
	bool optional, granted, has_path = json_object_object_get_ex(o, "path", NULL);
	json_object *ev;
	if (!json_object_is_type(o, json_type_object) || get_str(o, "kind", false, &kind) < 0 ||
	    !json_object_object_get_ex(o, "evidence", &ev) ||
	    !json_object_is_type(ev, json_type_object) ||
	    get_uint(ev, "line", INT32_MAX, &line) < 0 || get_str(ev, "text", false, &text) < 0 ||
	    get_str(o, "via", true, &via) < 0 || get_str(o, "flag", true, &flag) < 0 ||
	    get_bool(o, "optional", &optional) < 0 || get_bool(o, "granted", &granted) < 0 ||
	    get_str(o, "finding", true, &finding) < 0 ||
	    (has_path && get_str(o, "path", true, &path) < 0))
		return -EBADMSG;
	json_object *n = json_object_new_object(), *e = json_object_new_object();
	if (!n || !e) {
		json_object_put(n);
		json_object_put(e);
		return -ENOMEM;
	}
	json_object_object_add(n, "kind", json_object_new_string(kind));
	json_object_object_add(e, "file", json_object_new_string(file));
	json_object_object_add(e, "line", json_object_new_int64(line));
	json_object_object_add(e, "text", json_object_new_string(text));
	json_object_object_add(n, "evidence", e);
	json_object_object_add(n, "via", jstr_or_null(via));
	json_object_object_add(n, "flag", jstr_or_null(flag));
	json_object_object_add(n, "optional", json_object_new_boolean(optional));
	if (has_path)
		json_object_object_add(n, "path", jstr_or_null(path));
	json_object_object_add(n, "finding", jstr_or_null(finding));
	json_object_object_add(n, "granted", json_object_new_boolean(granted));
	json_object_array_add(needs, n);
	return 0;
}

/* The file's imports (top-level names, lb_check_report.imports) merged into out->imports. */
static int decode_imports(json_object *is, lb_check_report *out)
{
	size_t n = json_object_array_length(is);
	if (n > CACHE_DEPS_MAX)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(is, i);
		if (!json_object_is_type(x, json_type_string))
			return -EBADMSG;
		const char *s = json_object_get_string(x);
		size_t k = (size_t)json_object_get_string_len(x);
		if (k == 0 || k > 255 || strlen(s) != k || !utf8_ok(s, k))
			return -EBADMSG;
		if (!out->imports && !(out->imports = json_object_new_object()))
			return -ENOMEM;
		if (!json_object_object_get_ex(out->imports, s, NULL))
			json_object_object_add(out->imports, s, NULL);
	}
	return 0;
}

static int decode_deps(json_object *ds, ck_deps *deps)
{
	size_t n = json_object_array_length(ds);
	if (n > CACHE_DEPS_MAX)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		json_object *d = json_object_array_get_idx(ds, i), *nm, *lc;
		if (!json_object_is_type(d, json_type_array) || json_object_array_length(d) != 2 ||
		    !json_object_is_type(nm = json_object_array_get_idx(d, 0), json_type_string) ||
		    !json_object_is_type(lc = json_object_array_get_idx(d, 1), json_type_boolean))
			return -EBADMSG;
		const char *s = json_object_get_string(nm);
		size_t k = (size_t)json_object_get_string_len(nm);
		if (k == 0 || k > 255 || strlen(s) != k || !utf8_ok(s, k))
			return -EBADMSG;
		deps_add(deps, s, json_object_get_boolean(lc));
		if (deps->overflow)
			return -ENOMEM;
	}
	return 0;
}

int ck_cache_decode(const char *data, size_t len, const char *key, const char *file,
		    lb_check_report *out, ck_deps *deps)
{
	/* magic, the key, the body's sha256, each on a line of its own */
	size_t head = CACHE_MAGIC_LEN + 65 + 65;
	if (len < head || memcmp(data, CACHE_MAGIC, CACHE_MAGIC_LEN) != 0)
		return -EBADMSG;
	const char *k = data + CACHE_MAGIC_LEN, *sum = k + 65, *body = data + head;
	if (memcmp(k, key, 64) != 0 || k[64] != '\n' || sum[64] != '\n')
		return -EBADMSG;
	uint8_t d[32];
	char hex[65];
	lb_sha256 c;
	lb_sha256_init(&c);
	lb_sha256_update(&c, body, len - head);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
	if (memcmp(hex, sum, 64) != 0)
		return -EBADMSG;
	struct json_tokener *tok = json_tokener_new_ex(16);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *o = json_tokener_parse_ex(tok, body, (int)(len - head));
	bool whole = o && json_tokener_get_error(tok) == json_tokener_success &&
		     json_tokener_get_parse_end(tok) == len - head;
	json_tokener_free(tok);
	json_object *fs, *ds, *ss, *is, *nd;
	int r = whole && json_object_is_type(o, json_type_object) &&
			json_object_object_get_ex(o, "needs", &nd) &&
			json_object_is_type(nd, json_type_array) &&
			json_object_object_get_ex(o, "findings", &fs) &&
			json_object_is_type(fs, json_type_array) &&
			json_object_object_get_ex(o, "deps", &ds) &&
			json_object_is_type(ds, json_type_array) &&
			json_object_object_get_ex(o, "seeds", &ss) &&
			json_object_is_type(ss, json_type_array) &&
			json_object_object_get_ex(o, "imports", &is) &&
			json_object_is_type(is, json_type_array)
		? 0
		: -EBADMSG;
	if (r == 0)
		r = decode_deps(ds, deps);
	if (r == 0)
		r = decode_imports(is, out);
	for (size_t i = 0; r == 0 && i < json_object_array_length(fs); i++)
		r = decode_finding(json_object_array_get_idx(fs, i), file, out);
	json_object *seeds = NULL;
	size_t ns = r == 0 ? json_object_array_length(ss) : 0;
	if (ns && !(seeds = json_object_new_array()))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < ns; i++)
		r = decode_seed(json_object_array_get_idx(ss, i), seeds);
	if (r == 0 && seeds) {
		r = ck_report_take_seeds(out, seeds, file);
		seeds = NULL;
	}
	json_object_put(seeds);
	size_t nn = r == 0 ? json_object_array_length(nd) : 0;
	json_object *needs = nn ? json_object_new_array() : NULL;
	if (nn && !needs)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < nn; i++)
		r = decode_need(json_object_array_get_idx(nd, i), file, needs);
	if (r == 0 && needs) {
		json_object_put(out->needs);
		out->needs = needs; /* in shape: ck_report_take carries it over */
		needs = NULL;
	}
	json_object_put(needs);
	json_object_put(o);
	return r;
}

/* ---- packs: the entries of one check, read and written as one file ---------------------------- */

/* A pack is CACHE_PACK_MAGIC, then blocks, each its length in decimal, a newline and its
 * bytes: first the file table (CACHE_FILES_MAGIC, see files_index), then one per entry (each
 * carrying its own key and checksum). One file per experiment and
 * configuration: a check opens, reads and writes one file instead of one per source file,
 * which on a busy ext4 cost more than the analysis it saved. */
#define CACHE_PACK_MAGIC "labbox.check-pack/2\n"
#define CACHE_PACK_MAGIC_LEN (sizeof CACHE_PACK_MAGIC - 1)
#define CACHE_PACK_MAX (256ull << 20)
#define CACHE_MAX_PACKS 512

static int slot_cmp(const void *a, const void *b)
{
	return memcmp(((const ck_slot *)a)->key, ((const ck_slot *)b)->key, 64);
}

int ck_cache_index(ck_cache *cc)
{
	char *p = cc->pack, *end = cc->pack + cc->pack_len;
	free(cc->slots);
	cc->slots = NULL;
	cc->nslots = 0;
	free(cc->recs);
	cc->recs = NULL;
	cc->nrecs = 0;
	cc->trust_before_ns = INT64_MIN;
	if (cc->pack_len < CACHE_PACK_MAGIC_LEN ||
	    memcmp(p, CACHE_PACK_MAGIC, CACHE_PACK_MAGIC_LEN) != 0)
		return cc->pack_len ? -EBADMSG : 0;
	p += CACHE_PACK_MAGIC_LEN;
	size_t cap = 0;
	int r = 0;
	bool first = true;
	while (p < end) {
		/* a damaged length ends the pack: what follows is a miss */
		size_t len = 0, digits = 0;
		while (p < end && *p >= '0' && *p <= '9' && digits < 8)
			len = len * 10 + (size_t)(*p++ - '0'), digits++;
		if (!digits || p >= end || *p != '\n' || len > (size_t)(end - p - 1) ||
		    len < CACHE_MAGIC_LEN + 65) {
			r = -EBADMSG;
			break;
		}
		p++;
		if (first) {
			/* the file table; damaged, it trusts nothing and the pack is written anew */
			first = false;
			if (len >= CACHE_FILES_MAGIC_LEN &&
			    memcmp(p, CACHE_FILES_MAGIC, CACHE_FILES_MAGIC_LEN) == 0) {
				int fr = ck_cache_files_index(cc, p, len);
				if (fr == -ENOMEM)
					return fr;
				if (fr < 0)
					r = fr;
				p += len;
				continue;
			}
			r = -EBADMSG; /* no table: still a pack of entries, but not as written */
		}
		if (cc->nslots == cap) {
			size_t nc = cap ? cap * 2 : 64;
			ck_slot *nv = realloc(cc->slots, nc * sizeof *nv);
			if (!nv)
				return -ENOMEM;
			cc->slots = nv;
			cap = nc;
		}
		ck_slot *s = &cc->slots[cc->nslots++];
		s->key = p + CACHE_MAGIC_LEN; /* checked again, with all the rest, by the decoder */
		s->data = p;
		s->len = len;
		p += len;
	}
	if (cc->nslots)
		qsort(cc->slots, cc->nslots, sizeof *cc->slots, slot_cmp);
	return r;
}

/* ---- the file table: trusting a file's metadata for its bytes ---------------------------------- */

/* The table is CACHE_FILES_MAGIC, the sha256 of the rest in hex and a newline, then
 * "stamp NS\n" (when the check that wrote it began, CLOCK_REALTIME_COARSE) and per file
 * "DEV INO SIZE MODE MTIME_NS CTIME_NS CONTENT_SHA256 PATH\n". */

bool ck_filestat_from(const struct stat *st, ck_filestat *out)
{
	memset(out, 0, sizeof *out);
	if (!S_ISREG(st->st_mode))
		return false;
	out->dev = (uint64_t)st->st_dev;
	out->ino = (uint64_t)st->st_ino;
	out->size = (uint64_t)st->st_size;
	out->mode = (uint64_t)st->st_mode;
	out->mtime_ns = (int64_t)st->st_mtim.tv_sec * NS_PER_S + st->st_mtim.tv_nsec;
	out->ctime_ns = (int64_t)st->st_ctim.tv_sec * NS_PER_S + st->st_ctim.tv_nsec;
	return true;
}

static int rec_cmp(const void *a, const void *b)
{
	return strcmp(((const ck_filerec *)a)->path, ((const ck_filerec *)b)->path);
}

static bool parse_num(const char **pp, const char *end, bool sign, uint64_t *out)
{
	const char *p = *pp;
	bool neg = sign && p < end && *p == '-';
	p += neg;
	uint64_t v = 0;
	size_t digits = 0;
	while (p < end && *p >= '0' && *p <= '9' && digits < 19)
		v = v * 10 + (uint64_t)(*p++ - '0'), digits++;
	if (!digits || p >= end || *p != ' ')
		return false;
	*out = neg ? 0 - v : v; /* two's complement, read back as int64_t */
	*pp = p + 1;
	return true;
}

static bool parse_hex32(const char **pp, const char *end, uint8_t out[32])
{
	const char *p = *pp;
	if (end - p < 65 || p[64] != ' ')
		return false;
	for (int i = 0; i < 64; i++) {
		char c = p[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return false;
		out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
	}
	*pp = p + 65;
	return true;
}

static int files_parse(ck_cache *cc, char *p, char *end)
{
	const char *q = p;
	uint64_t stamp;
	if (end - p < 6 || memcmp(p, "stamp ", 6) != 0)
		return -EBADMSG;
	q += 6;
	/* the stamp ends in a newline: parse_num wants a space, so look for it by hand */
	char *nl = memchr(q, '\n', (size_t)(end - q));
	if (!nl)
		return -EBADMSG;
	*nl = ' ';
	bool ok = parse_num(&q, nl + 1, false, &stamp);
	*nl = '\n';
	if (!ok || stamp > (uint64_t)INT64_MAX)
		return -EBADMSG;
	size_t cap = 0;
	for (p = nl + 1; p < end;) {
		ck_filerec rec = {0};
		q = p;
		uint64_t mt, ct;
		if (!parse_num(&q, end, false, &rec.st.dev) || !parse_num(&q, end, false, &rec.st.ino) ||
		    !parse_num(&q, end, false, &rec.st.size) || !parse_num(&q, end, false, &rec.st.mode) ||
		    !parse_num(&q, end, true, &mt) || !parse_num(&q, end, true, &ct) ||
		    !parse_hex32(&q, end, rec.st.content))
			return -EBADMSG;
		char *e = memchr(q, '\n', (size_t)(end - q));
		if (!e || e == q || memchr(q, '\0', (size_t)(e - q)))
			return -EBADMSG;
		*e = '\0';
		rec.path = q;
		rec.st.ok = true;
		rec.st.mtime_ns = (int64_t)mt;
		rec.st.ctime_ns = (int64_t)ct;
		if (cc->nrecs == cap) {
			size_t nc = cap ? cap * 2 : 256;
			ck_filerec *nv = realloc(cc->recs, nc * sizeof *nv);
			if (!nv)
				return -ENOMEM;
			cc->recs = nv;
			cap = nc;
		}
		cc->recs[cc->nrecs++] = rec;
		p = e + 1;
	}
	/* Trusted only what is older than the stamp by more than a timestamp tick of any file
	 * system (2 s, FAT): a change after the hash, in the tick of the recorded mtime, would
	 * leave every field as recorded. */
	int64_t s = (int64_t)stamp / NS_PER_S;
	cc->trust_before_ns = s > 1 ? (s - 1) * NS_PER_S : INT64_MIN;
	if (cc->nrecs)
		qsort(cc->recs, cc->nrecs, sizeof *cc->recs, rec_cmp);
	return 0;
}

int ck_cache_files_index(ck_cache *cc, char *block, size_t len)
{
	free(cc->recs);
	cc->recs = NULL;
	cc->nrecs = 0;
	cc->trust_before_ns = INT64_MIN;
	size_t head = CACHE_FILES_MAGIC_LEN + 65;
	if (len < head || memcmp(block, CACHE_FILES_MAGIC, CACHE_FILES_MAGIC_LEN) != 0 ||
	    block[head - 1] != '\n')
		return -EBADMSG;
	uint8_t d[32];
	char hex[65];
	ck_content_digest(block + head, len - head, d);
	lb_sha256_hex(d, hex);
	if (memcmp(hex, block + CACHE_FILES_MAGIC_LEN, 64) != 0)
		return -EBADMSG;
	int r = files_parse(cc, block + head, block + len);
	if (r < 0) {
		free(cc->recs);
		cc->recs = NULL;
		cc->nrecs = 0;
		cc->trust_before_ns = INT64_MIN;
	}
	return r;
}

bool ck_filestat_trusted(const ck_cache *cc, const char *path, const ck_filestat *st,
			 uint8_t content[32])
{
	if (!cc->nrecs)
		return false;
	ck_filerec want = {.path = path};
	const ck_filerec *r = bsearch(&want, cc->recs, cc->nrecs, sizeof *cc->recs, rec_cmp);
	if (!r || r->st.dev != st->dev || r->st.ino != st->ino || r->st.size != st->size ||
	    r->st.mode != st->mode || r->st.mtime_ns != st->mtime_ns ||
	    r->st.ctime_ns != st->ctime_ns || st->mtime_ns >= cc->trust_before_ns ||
	    st->ctime_ns >= cc->trust_before_ns)
		return false;
	memcpy(content, r->st.content, 32);
	return true;
}

/* The file table of this check: the files recorded (read whole, or trusted), stamped with
 * the check's start. */
static int files_block(const ck_cache *cc, char *const abs[], const ck_filestat fst[], size_t n,
		       lb_buf *out)
{
	lb_buf body = {0};
	int r = lb_buf_printf(&body, "stamp %lld\n", (long long)cc->now_ns);
	for (size_t i = 0; r == 0 && fst && i < n; i++) {
		const ck_filestat *f = &fst[i];
		if (!f->ok || !abs[i][0] || strchr(abs[i], '\n'))
			continue;
		char hex[65];
		lb_sha256_hex(f->content, hex);
		r = lb_buf_printf(&body, "%llu %llu %llu %llu %lld %lld %s %s\n",
				  (unsigned long long)f->dev, (unsigned long long)f->ino,
				  (unsigned long long)f->size, (unsigned long long)f->mode,
				  (long long)f->mtime_ns, (long long)f->ctime_ns, hex, abs[i]);
	}
	uint8_t d[32];
	char hex[65];
	ck_content_digest(body.data ? body.data : "", body.len, d);
	lb_sha256_hex(d, hex);
	if (r == 0)
		r = lb_buf_printf(out, "%zu\n%s%s\n", CACHE_FILES_MAGIC_LEN + 65 + body.len,
				  CACHE_FILES_MAGIC, hex);
	if (r == 0)
		r = lb_buf_append(out, body.data ? body.data : "", body.len);
	lb_buf_free(&body);
	return r;
}

/* The pack's name: the base (labbox and configuration) and where the files are. */
static void pack_name(const ck_cache *cc, const char *name, const char *root, char *const abs[],
		      size_t n, char hex[65])
{
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "base", cc->base, sizeof cc->base);
	if (name) {
		part_str(&c, "name", name);
	} else if (root) {
		part_str(&c, "root", root);
	} else {
		for (size_t i = 0; i < n; i++)
			part_str(&c, "file", abs[i]);
	}
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
}

static void read_pack(ck_cache *cc)
{
	int fd = openat(cc->dfd, cc->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	/* only a pack of this user's, that nobody else could have written */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size <= 0 || (uint64_t)st.st_size > CACHE_PACK_MAX ||
	    !(cc->pack = malloc((size_t)st.st_size))) {
		close(fd);
		return;
	}
	size_t len = (size_t)st.st_size, got = 0;
	while (got < len) {
		ssize_t k = read(fd, cc->pack + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	cc->pack_len = got;
	/* used now: eviction goes by modification time */
	if (time(NULL) - st.st_mtim.tv_sec > CACHE_TOUCH_S)
		futimens(fd, NULL);
	close(fd);
	cc->damaged = ck_cache_index(cc) < 0 || got != len;
}

int ck_cache_open(const lb_check_config *cfg, const char *root, char *const abs[], size_t n,
		  const char *stdlib_id, ck_cache *cc)
{
	memset(cc, 0, sizeof *cc);
	cc->dfd = -1;
	cc->trust_before_ns = INT64_MIN;
	/* before any file is looked at: a change after this gets a timestamp at least this
	 * (the kernel stamps files from the coarse clock, or finer and later) */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	cc->now_ns = (int64_t)now.tv_sec * NS_PER_S + now.tv_nsec;
	if (!cfg->cache_dir)
		return 0;
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/check", cfg->cache_dir) >= (int)sizeof path)
		return 0;
	/* A cache inside the experiment would be the experiment's to write. */
	char *real = root ? realpath(cfg->cache_dir, NULL) : NULL;
	size_t k = root ? strlen(root) : 0;
	bool inside = real && strncmp(real, root, k) == 0 && (real[k] == '/' || real[k] == '\0');
	free(real);
	if (inside)
		return 0;
	int fd = lb_open_private_dir(path);
	if (fd < 0)
		return 0; /* not the user's own, or others may write it: checked without it */
	cc->dfd = fd;
	key_base(cfg, stdlib_id, cc->base);
	pack_name(cc, cfg->cache_name, root, abs, n, cc->name);
	/* the answer's probe needs only the pack's identity (check/answer.c) */
	if (!cfg->answer_probe)
		read_pack(cc);
	return 0;
}

void ck_cache_close(ck_cache *cc)
{
	if (cc->dfd >= 0)
		close(cc->dfd);
	cc->dfd = -1;
	free(cc->pack);
	free(cc->slots);
	free(cc->recs);
	cc->pack = NULL;
	cc->slots = NULL;
	cc->recs = NULL;
	cc->pack_len = cc->nslots = cc->nrecs = 0;
}

int ck_cache_load(const ck_cache *cc, const lb_check_config *cfg, const char *key,
		  const char *file, lb_check_report *out, const char **entry, size_t *entry_len)
{
	const char *data;
	size_t len;
	if (ck_cache_find(cc, key, &data, &len) < 0)
		return -ENOENT;
	ck_deps deps = {0};
	lb_check_report one = {.policy = cfg->policy};
	int r = ck_cache_decode(data, len, key, file, &one, &deps);
	if (r == 0 && !ck_deps_hold(cfg, &deps))
		r = -ESTALE;
	if (r == 0)
		r = ck_report_take(out, &one);
	if (r == 0) {
		*entry = data;
		*entry_len = len;
	}
	ck_deps_free(&deps);
	lb_check_report_free(&one);
	return r == 0 ? 0 : r == -ENOMEM ? r : -ENOENT;
}

int ck_cache_find(const ck_cache *cc, const char *key, const char **data, size_t *len)
{
	if (cc->dfd < 0 || !cc->nslots)
		return -ENOENT;
	ck_slot want = {.key = key};
	const ck_slot *s = bsearch(&want, cc->slots, cc->nslots, sizeof *cc->slots, slot_cmp);
	if (!s)
		return -ENOENT;
	*data = s->data;
	*len = s->len;
	return 0;
}

void ck_cache_prune_all(int dfd)
{
	ck_cache_prune(dfd, CACHE_MAX_PACKS, CACHE_MAX_BYTES);
}

typedef struct entry_age {
	struct timespec mtime;
	off_t size;
	char name[72];
} entry_age;

static int age_cmp(const void *a, const void *b)
{
	const entry_age *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool is_key_name(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");
	return n == 64 && s[64] == '\0';
}

void ck_cache_prune(int dfd, size_t max_entries, uint64_t max_bytes)
{
	DIR *d = lb_dir_stream_own(dfd); /* a dup() would leave dfd's offset at the end */
	if (!d)
		return;
	entry_age *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t bytes = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] == '.' && strstr(e->d_name, ".tmp") &&
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now - st.st_mtim.tv_sec > CACHE_STALE_TMP_S) {
			unlinkat(dfd, e->d_name, 0);
			continue;
		}
		if (!is_key_name(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (n == cap) {
			entry_age *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof *v);
			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[n].mtime = st.st_mtim;
		v[n].size = st.st_size;
		memcpy(v[n].name, e->d_name, 65); /* a key name: 64 characters */
		bytes += (uint64_t)st.st_size;
		n++;
	}
	closedir(d);
	if (n > max_entries || bytes > max_bytes) {
		qsort(v, n, sizeof *v, age_cmp);
		for (size_t i = 0; i < n && (n - i > max_entries * 3 / 4 || bytes > max_bytes * 3 / 4);
		     i++) {
			if (unlinkat(dfd, v[i].name, 0) == 0 || errno == ENOENT)
				bytes -= (uint64_t)v[i].size;
		}
	}
	free(v);
}

int ck_cache_entry(const char *key, const lb_check_report *one, const ck_deps *deps, lb_buf *out)
{
	if (deps && deps->overflow)
		return -E2BIG;
	int r = ck_cache_encode(key, one, deps, out);
	if (r == 0 && out->len > CACHE_ENTRY_MAX)
		r = -E2BIG;
	if (r < 0)
		lb_buf_free(out);
	return r;
}

void ck_cache_write(ck_cache *cc, const char *const entries[], const size_t lens[], size_t n,
		    bool changed, char *const abs[], const ck_filestat fst[])
{
	if (cc->dfd < 0)
		return;
	/* the pack holds what it held: nothing to write (a removed file leaves a stale entry
	 * that costs only its bytes until the next change) */
	if (!changed && !cc->damaged)
		return;
	lb_buf b = {0};
	int r = lb_buf_append(&b, CACHE_PACK_MAGIC, CACHE_PACK_MAGIC_LEN);
	if (r == 0)
		r = files_block(cc, abs, fst, n, &b);
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!entries[i])
			continue;
		r = lb_buf_printf(&b, "%zu\n", lens[i]);
		if (r == 0)
			r = lb_buf_append(&b, entries[i], lens[i]);
	}
	if (r == 0 && b.len <= CACHE_PACK_MAX && lb_replace_file_at(cc->dfd, cc->name, b.data, b.len) == 0)
		ck_cache_prune(cc->dfd, CACHE_MAX_PACKS, CACHE_MAX_BYTES);
	lb_buf_free(&b);
}
