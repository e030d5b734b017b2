/* check: policy, suppressions and the report in its three forms (JSON, text, llm_text). */
#include "check_internal.h"
#include "labbox/record.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Replace every byte that is not part of valid UTF-8 with '?', in place: findings quote
 * source text and names, and the JSON labbox prints must be valid UTF-8 whatever the input. */
static void utf8_sanitize(char *s)
{
	if (!s)
		return;
	unsigned char *p = (unsigned char *)s, *end = p + strlen(s);
	while (p < end) {
		if (*p < 0x20 && *p != '\t') {
			*p++ = ' '; /* one line per finding */
			continue;
		}
		size_t n = lb_utf8_seq_len(p, (size_t)(end - p));
		if (!n) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

/* ---- report storage ------------------------------------------------------------------------- */

int ck_report_add(lb_check_report *rep, const char *file, unsigned line, unsigned col,
		  ck_rule rule, lb_check_severity sev, const char *message, const char *name)
{
	if (rep->n == rep->cap) {
		size_t nc = rep->cap ? rep->cap * 2 : 32;
		lb_check_finding *nv = realloc(rep->items, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		rep->items = nv;
		rep->cap = nc;
	}
	lb_check_finding *f = &rep->items[rep->n];
	memset(f, 0, sizeof *f);
	f->file = strdup(file ? file : "");
	f->message = strdup(message ? message : "");
	f->name = name ? strdup(name) : NULL;
	if (!f->file || !f->message || (name && !f->name)) {
		free(f->file);
		free(f->message);
		free(f->name);
		return -ENOMEM;
	}
	utf8_sanitize(f->file);
	utf8_sanitize(f->message);
	utf8_sanitize(f->name);
	f->line = line;
	f->col = col;
	/* R_COUNT: a copy of an existing finding; the caller fills in id and category */
	if (rule < R_COUNT) {
		/* snprintf(f->id, sizeof f->id, "%s", id) without a format per finding */
		const char *id = ck_rules[rule].info.id;
		size_t k = strnlen(id, sizeof f->id - 1);
		memcpy(f->id, id, k);
		f->id[k] = '\0';
		f->category = ck_rules[rule].info.category;
	}
	f->severity = sev;
	f->rejects = sev == LB_CHECK_ERROR && rep->policy != LB_CHECK_PERMISSIVE;
	rep->n++;
	return 0;
}

/* s as valid UTF-8 (see utf8_sanitize), at most max bytes, cut on a character boundary. */
static json_object *clean_string(const char *s, size_t max)
{
	LB_AUTOFREE char *t = strndup(s, max + 4);
	if (!t)
		return NULL;
	utf8_sanitize(t);
	size_t n = strlen(t);
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)t[n] & 0xc0) == 0x80)
			n--;
	}
	return json_object_new_string_len(t, (int)n);
}

/* The seed calls of seeds appended to rep->seeds (with "file" added when file is given);
 * seeds is released. Their strings quote the source: made valid UTF-8 here, as findings are. */
/* The names of imports added to rep->imports; imports is released. */
static int take_imports(lb_check_report *rep, json_object *imports)
{
	if (!imports)
		return 0;
	if (!rep->imports && !(rep->imports = json_object_new_object())) {
		json_object_put(imports);
		return -ENOMEM;
	}
	json_object_object_foreach(imports, k, v) {
		(void)v;
		if (!json_object_object_get_ex(rep->imports, k, NULL))
			json_object_object_add(rep->imports, k, NULL);
	}
	json_object_put(imports);
	return 0;
}

static int take_seeds(lb_check_report *rep, json_object *seeds, const char *file)
{
	if (!seeds)
		return 0;
	if (!rep->seeds && !(rep->seeds = json_object_new_array())) {
		json_object_put(seeds);
		return -ENOMEM;
	}
	for (size_t i = 0; i < json_object_array_length(seeds); i++) {
		json_object *s = json_object_get(json_object_array_get_idx(seeds, i));
		json_object *v;
		if (file)
			json_object_object_add(s, "file", clean_string(file, PATH_MAX));
		if (json_object_object_get_ex(s, "value", &v) && json_object_is_type(v, json_type_string))
			json_object_object_add(s, "value", clean_string(json_object_get_string(v), 120));
		json_object_array_add(rep->seeds, s);
	}
	json_object_put(seeds);
	return 0;
}

/* One file's needs into rep->needs in their public shape: {kind, evidence: {file, line, text},
 * via, flag, optional, path (write_outside), finding (the id of a rejecting finding on the
 * same line: the flag alone does not let that line run), granted}. needs is released. */
static int take_needs(lb_check_report *rep, json_object *needs, const char *file)
{
	if (!needs)
		return 0;
	if (!rep->needs && !(rep->needs = json_object_new_array())) {
		json_object_put(needs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < json_object_array_length(needs); i++) {
		json_object *raw = json_object_array_get_idx(needs, i), *v;
		if (!file) { /* already in shape (ck_report_take) */
			json_object_array_add(rep->needs, json_object_get(raw));
			continue;
		}
		json_object *o = json_object_new_object(), *ev = json_object_new_object();
		unsigned line = json_object_object_get_ex(raw, "line", &v) ? (unsigned)json_object_get_int64(v) : 0;
		json_object_object_get_ex(raw, "kind", &v);
		json_object_object_add(o, "kind", json_object_get(v));
		json_object_object_add(ev, "file", clean_string(file, PATH_MAX));
		json_object_object_add(ev, "line", json_object_new_int64(line));
		json_object_object_get_ex(raw, "text", &v);
		json_object_object_add(ev, "text", clean_string(json_object_get_string(v), 240));
		json_object_object_add(o, "evidence", ev);
		static const char *const keys[] = {"via", "flag", "optional", "path"};
		for (size_t k = 0; k < 4; k++)
			if (json_object_object_get_ex(raw, keys[k], &v))
				json_object_object_add(o, keys[k],
						       json_object_is_type(v, json_type_string)
							       ? clean_string(json_object_get_string(v), PATH_MAX)
							       : json_object_get(v));
		const char *finding = NULL;
		for (size_t k = 0; k < rep->n && !finding; k++) {
			const lb_check_finding *f = &rep->items[k];
			if (f->line == line && f->rejects && !f->suppressed && strcmp(f->file, file) == 0)
				finding = f->id;
		}
		json_object_object_add(o, "finding", finding ? json_object_new_string(finding) : NULL);
		json_object_object_add(o, "granted", json_object_new_boolean(false));
		json_object_array_add(rep->needs, o);
	}
	json_object_put(needs);
	return 0;
}

int ck_report_take_seeds(lb_check_report *rep, json_object *seeds, const char *file)
{
	return take_seeds(rep, seeds, file);
}

int ck_report_take(lb_check_report *rep, lb_check_report *from)
{
	if (from->n > rep->cap - rep->n) {
		size_t nc = rep->cap ? rep->cap : 8;
		while (nc - rep->n < from->n)
			nc *= 2;
		lb_check_finding *nv = realloc(rep->items, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		rep->items = nv;
		rep->cap = nc;
	}
	if (from->n)
		memcpy(rep->items + rep->n, from->items, from->n * sizeof *from->items);
	rep->n += from->n;
	from->n = 0;
	json_object *seeds = from->seeds, *imports = from->imports, *needs = from->needs;
	from->seeds = NULL;
	from->imports = NULL;
	from->needs = NULL;
	int r = take_imports(rep, imports);
	int r2 = take_seeds(rep, seeds, NULL);
	int r3 = take_needs(rep, needs, NULL);
	return r ? r : r2 ? r2 : r3;
}

static void finding_free(lb_check_finding *f)
{
	free(f->file);
	free(f->message);
	free(f->name);
	free(f->suppression);
}

void lb_check_report_free(lb_check_report *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n; i++)
		finding_free(&rep->items[i]);
	free(rep->items);
	rep->items = NULL;
	rep->n = rep->cap = 0;
	json_object_put(rep->seeds);
	rep->seeds = NULL;
	json_object_put(rep->unread_dirs);
	rep->unread_dirs = NULL;
	json_object_put(rep->needs);
	rep->needs = NULL;
	json_object_put(rep->imports);
	rep->imports = NULL;
}

static int cmp_finding(const void *a, const void *b)
{
	const lb_check_finding *x = a, *y = b;
	int r = strcmp(x->file, y->file);
	if (r)
		return r;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* Whether some file of the report seeds lib (a seed call of that library's, or one that seeds
 * every library). */
static bool seeded_anywhere(const lb_check_report *rep, const char *lib, size_t len)
{
	size_t n = rep->seeds ? json_object_array_length(rep->seeds) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(rep->seeds, i), *v;
		const char *l = json_object_object_get_ex(s, "lib", &v) ? json_object_get_string(v) : NULL;
		if (l && (strcmp(l, "*") == 0 || (strlen(l) == len && memcmp(l, lib, len) == 0)))
			return true;
	}
	return false;
}

/* "never seeded" (LB302) is said of one file, which cannot see the others: a model module's
 * torch.randn is seeded by the main.py that seeds torch before it builds the model. Said only
 * when no file of the check seeds that library. */
static void drop_seeded_elsewhere(lb_check_report *rep)
{
	size_t k = 0;
	for (size_t i = 0; i < rep->n; i++) {
		lb_check_finding *f = &rep->items[i];
		size_t len = f->name ? strcspn(f->name, ".") : 0;
		if (strcmp(f->id, "LB302") == 0 && len && seeded_anywhere(rep, f->name, len)) {
			finding_free(f);
			continue;
		}
		rep->items[k++] = *f;
	}
	rep->n = k;
}

void lb_check_finish(lb_check_report *rep)
{
	drop_seeded_elsewhere(rep);
	if (rep->n)
		qsort(rep->items, rep->n, sizeof *rep->items, cmp_finding);
	rep->rejected = false;
	for (size_t i = 0; i < rep->n; i++)
		if (rep->items[i].rejects && !rep->items[i].suppressed)
			rep->rejected = true;
}

/* ---- suppressions ----------------------------------------------------------------------------- */

typedef struct allow {
	unsigned line, col;
	char ids[8][8];
	unsigned nids;
	char reason[256];
	bool used[8];
	bool malformed;
} allow;

typedef struct allows {
	allow *v;
	size_t n, cap;
} allows;

/* `# labbox: allow[LB101,LB110] reason`. */
static void parse_allow(const char *s, size_t len, unsigned line, unsigned col, allows *out)
{
	const char *end = s + len;
	const char *p = s;
	if (p < end && *p == '#')
		p++;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(end - p) < 7 || strncmp(p, "labbox:", 7) != 0)
		return;
	p += 7;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (out->n == out->cap) {
		size_t nc = out->cap ? out->cap * 2 : 8;
		allow *nv = realloc(out->v, nc * sizeof *nv);
		if (!nv)
			return;
		out->v = nv;
		out->cap = nc;
	}
	allow *a = &out->v[out->n++];
	memset(a, 0, sizeof *a);
	a->line = line;
	a->col = col;
	if ((size_t)(end - p) < 6 || strncmp(p, "allow[", 6) != 0) {
		a->malformed = true;
		return;
	}
	p += 6;
	while (p < end && *p != ']') {
		while (p < end && (*p == ' ' || *p == ','))
			p++;
		const char *b = p;
		while (p < end && *p != ',' && *p != ']' && *p != ' ')
			p++;
		size_t k = (size_t)(p - b);
		if (k == 0)
			continue;
		if (k >= sizeof a->ids[0] || a->nids >= 8) {
			a->malformed = true;
			continue;
		}
		memcpy(a->ids[a->nids], b, k);
		a->ids[a->nids][k] = '\0';
		a->nids++;
	}
	if (p >= end || a->nids == 0) {
		a->malformed = true;
		return;
	}
	p++;
	while (p < end && (*p == ' ' || *p == '\t' || *p == ':' || *p == '-'))
		p++;
	size_t k = (size_t)(end - p);
	while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t' || p[k - 1] == '\r'))
		k--;
	if (k >= sizeof a->reason)
		k = sizeof a->reason - 1;
	memcpy(a->reason, p, k);
	a->reason[k] = '\0';
}

static void collect_allows(const char *src, TSNode root, allows *out)
{
	TSTreeCursor cur = ts_tree_cursor_new(root);
	bool down = true;
	for (;;) {
		TSNode n = ts_tree_cursor_current_node(&cur);
		if (down && strcmp(ts_node_type(n), "comment") == 0) {
			uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
			TSPoint pt = ts_node_start_point(n);
			parse_allow(src + a, b - a, pt.row + 1, pt.column + 1, out);
		}
		if (down && ts_tree_cursor_goto_first_child(&cur))
			continue;
		if (ts_tree_cursor_goto_next_sibling(&cur)) {
			down = true;
			continue;
		}
		if (!ts_tree_cursor_goto_parent(&cur))
			break;
		down = false;
	}
	ts_tree_cursor_delete(&cur);
}

static int severity_of(const lb_check_config *cfg, ck_rule r)
{
	return cfg->policy == LB_CHECK_STRICT ? ck_rules[r].strict : ck_rules[r].standard;
}

static bool ignored(const lb_check_config *cfg, ck_rule r)
{
	for (size_t i = 0; i < cfg->ignore.n; i++)
		if (strcmp(cfg->ignore.v[i].s, ck_rules[r].info.id) == 0 ||
		    strcmp(cfg->ignore.v[i].s, ck_rules[r].info.category) == 0)
			return true;
	return false;
}

static int set_suppressed(lb_check_finding *f, const char *why)
{
	f->suppressed = true;
	f->rejects = false;
	f->suppression = strdup(why);
	utf8_sanitize(f->suppression);
	return f->suppression ? 0 : -ENOMEM;
}

int ck_settle(const lb_check_config *cfg, const char *path, const char *src, TSNode root,
	      ck_raws *raws, lb_check_report *rep)
{
	allows al = {0};
	int r = 0;
	/* walking every node for comments is only worth it when one can be an allow */
	if (!ts_node_is_null(root) && memmem(src, ts_node_end_byte(root), "labbox:", 7))
		collect_allows(src, root, &al);
	for (size_t i = 0; i < raws->n && r == 0; i++) {
		ck_raw *x = &raws->v[i];
		int sev = severity_of(cfg, x->rule);
		if (sev == CK_OFF || ignored(cfg, x->rule))
			continue;
		bool hard = ck_rules[x->rule].hard_gate;
		/* Whoever may lift this finding: the operator always, the project when trusted or
		 * when the rule is not part of the hard gate. */
		const char *why = NULL;
		char buf[320];
		if (x->name) {
			const ck_item *it = ck_list_match(&cfg->allow_calls, x->name);
			if (!it && x->rule != R_DENIED)
				it = ck_list_match(&cfg->allow_modules, x->name);
			if (it && (!it->project || cfg->trust_project || !hard)) {
				snprintf(buf, sizeof buf, "allowed by %s: %s",
					 it->project ? "labbox.yaml" : "configuration", it->s);
				why = buf;
			}
		}
		const char *id = ck_rules[x->rule].info.id;
		for (size_t k = 0; k < al.n && !why; k++) {
			allow *a = &al.v[k];
			if (a->line != x->line || a->malformed || !a->reason[0])
				continue;
			for (unsigned j = 0; j < a->nids; j++) {
				if (strcmp(a->ids[j], id) != 0)
					continue;
				a->used[j] = true;
				if (hard && !cfg->trust_project)
					continue;
				snprintf(buf, sizeof buf, "inline allow: %s", a->reason);
				why = buf;
			}
		}
		/* What the runtime gate (and the exec guard behind it) holds where it happens,
		 * under standard with a gate that refuses: said, not rejected (platform.platform()
		 * may start a process, and copes when the gate refuses it). strict rejects it. */
		char *msg = x->message, lowered[700];
		if (x->gate_judges && cfg->gate_refuses && cfg->policy == LB_CHECK_STANDARD &&
		    sev == LB_CHECK_ERROR) {
			sev = LB_CHECK_WARNING;
			snprintf(lowered, sizeof lowered,
				 "%s; a warning under standard: the runtime gate refuses it if the call "
				 "does it",
				 x->message);
			msg = lowered;
		}
		size_t before = rep->n;
		r = ck_report_add(rep, path, x->line, x->col, x->rule, (lb_check_severity)sev, msg,
				  x->name);
		if (r == 0 && why)
			r = set_suppressed(&rep->items[before], why);
	}
	if (r == 0) {
		r = take_seeds(rep, raws->seeds, path);
		raws->seeds = NULL;
	}
	if (r == 0) {
		r = take_imports(rep, raws->imports);
		raws->imports = NULL;
	}
	if (r == 0) {
		r = take_needs(rep, raws->needs, path);
		raws->needs = NULL;
	}
	/* Inline allows that did nothing are reported, so a typo or a refused allow is seen. */
	for (size_t k = 0; k < al.n && r == 0; k++) {
		allow *a = &al.v[k];
		char msg[400];
		if (a->malformed || !a->reason[0]) {
			snprintf(msg, sizeof msg, "%s", a->malformed
				 ? "malformed `# labbox:` comment; the form is `# labbox: allow[LB101] reason`"
				 : "an inline allow needs a reason after the rule IDs");
			if (!ignored(cfg, R_SUPPRESS))
				r = ck_report_add(rep, path, a->line, a->col, R_SUPPRESS, LB_CHECK_WARNING,
						  msg, NULL);
			continue;
		}
		for (unsigned j = 0; j < a->nids && r == 0; j++) {
			ck_rule rule = R_COUNT;
			for (size_t q = 0; q < R_COUNT; q++)
				if (strcmp(ck_rules[q].info.id, a->ids[j]) == 0)
					rule = (ck_rule)q;
			if (rule == R_COUNT)
				snprintf(msg, sizeof msg, "allow[%s]: no such rule", a->ids[j]);
			else if (ck_rules[rule].hard_gate && !cfg->trust_project && a->used[j])
				snprintf(msg, sizeof msg,
					 "allow[%s] not honored: %s is part of the hard gate; only the "
					 "operator can lift it (--trust-project)",
					 a->ids[j], a->ids[j]);
			else if (!a->used[j])
				snprintf(msg, sizeof msg, "allow[%s]: no %s finding on this line",
					 a->ids[j], a->ids[j]);
			else
				continue;
			if (!ignored(cfg, R_SUPPRESS))
				r = ck_report_add(rep, path, a->line, a->col, R_SUPPRESS,
						  a->used[j] ? LB_CHECK_WARNING : LB_CHECK_INFO, msg,
						  NULL);
		}
	}
	free(al.v);
	return r;
}

/* ---- output ----------------------------------------------------------------------------------- */

static const char *sev_name(lb_check_severity s)
{
	switch (s) {
	case LB_CHECK_ERROR: return "error";
	case LB_CHECK_WARNING: return "warning";
	case LB_CHECK_INFO: break;
	}
	return "info";
}

/* Pieces of a finding's line appended without a format: these run once per finding, and
 * lb_buf_printf formats every line twice. put_s writes NULL as printf's %s does. */
static void put_s(lb_buf *b, const char *s)
{
	lb_buf_puts(b, s ? s : "(null)");
}

static void put_u(lb_buf *b, unsigned long long v)
{
	char t[24];
	size_t n = 0;
	do {
		t[sizeof t - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	lb_buf_append(b, t + sizeof t - n, n);
}

/* file:line:col */
static void put_at(lb_buf *b, const lb_check_finding *f)
{
	put_s(b, f->file);
	lb_buf_append(b, ":", 1);
	put_u(b, f->line);
	lb_buf_append(b, ":", 1);
	put_u(b, f->col);
}

static const char *hint_of(const char *id)
{
	for (size_t i = 0; i < R_COUNT; i++)
		if (strcmp(ck_rules[i].info.id, id) == 0)
			return ck_rules[i].hint;
	return "";
}

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/* A key of a new object: the keys are literals and each is added once, so json-c need neither
 * copy them nor look for an earlier value (a report holds thousands of findings). */
static void jadd(json_object *o, const char *key, json_object *v)
{
	json_object_object_add_ex(o, key, v,
				  JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_ADD_CONSTANT_KEY);
}

struct json_object *lb_check_findings_json(const lb_check_report *rep)
{
	json_object *arr = json_object_new_array_ext(rep->n > 0 && rep->n < INT_MAX ? (int)rep->n : 1);
	for (size_t i = 0; i < rep->n; i++) {
		const lb_check_finding *f = &rep->items[i];
		json_object *o = json_object_new_object();
		jadd(o, "file", jstr(f->file));
		jadd(o, "line", json_object_new_int((int)f->line));
		jadd(o, "col", json_object_new_int((int)f->col));
		jadd(o, "id", jstr(f->id));
		jadd(o, "severity", jstr(sev_name(f->severity)));
		jadd(o, "category", jstr(f->category));
		jadd(o, "message", jstr(f->message));
		jadd(o, "name", jstr(f->name));
		jadd(o, "rejects", json_object_new_boolean(f->rejects));
		jadd(o, "suppressed", json_object_new_boolean(f->suppressed));
		if (f->suppressed)
			jadd(o, "suppression", jstr(f->suppression));
		json_object_array_add(arr, o);
	}
	return arr;
}

typedef struct counts {
	size_t errors, warnings, infos, suppressed, rejecting;
} counts;

static counts count(const lb_check_report *rep)
{
	counts c = {0};
	for (size_t i = 0; i < rep->n; i++) {
		const lb_check_finding *f = &rep->items[i];
		if (f->suppressed) {
			c.suppressed++;
			continue;
		}
		if (f->rejects)
			c.rejecting++;
		if (f->severity == LB_CHECK_ERROR)
			c.errors++;
		else if (f->severity == LB_CHECK_WARNING)
			c.warnings++;
		else
			c.infos++;
	}
	return c;
}

/* "file:line:col [ID] message. Fix: hint.\n" */
/* The rules whose fix hint a section of the repair text has given: the hint follows a rule's
 * first finding there, and its later ones point back to it (a tree with thousands of findings
 * of a few rules would otherwise repeat the same sentences thousands of times). */
typedef struct hinted {
	const char *ids[64];
	size_t n;
} hinted;

static bool hint_given(hinted *h, const char *id)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->ids[i], id) == 0)
			return true;
	if (h->n < sizeof h->ids / sizeof *h->ids)
		h->ids[h->n++] = id;
	return false;
}

static void put_llm_line(lb_buf *b, const lb_check_finding *f, hinted *h)
{
	put_at(b, f);
	lb_buf_append(b, " [", 2);
	put_s(b, f->id);
	lb_buf_append(b, "] ", 2);
	put_s(b, f->message);
	if (hint_given(h, f->id)) {
		lb_buf_append(b, ". Fix: as for ", 14);
		put_s(b, f->id);
		lb_buf_append(b, " above.\n", 8);
		return;
	}
	lb_buf_append(b, ". Fix: ", 7);
	put_s(b, hint_of(f->id));
	lb_buf_append(b, ".\n", 2);
}

char *lb_check_llm_text(const lb_check_report *rep)
{
	lb_buf b = {0};
	counts c = count(rep);
	const char *pol = lb_check_policy_name(rep->policy);
	if (rep->rejected)
		lb_buf_printf(&b,
			      "labbox check REJECTED this experiment under the `%s` policy: %zu "
			      "blocking finding%s. The code was not run. Fix every blocking finding "
			      "below at its root cause, keep what the experiment computes, and do not "
			      "hide the call behind another name (aliases, getattr, __import__ and "
			      "string tricks are resolved and rejected too).\n",
			      pol, c.rejecting, c.rejecting == 1 ? "" : "s");
	else
		lb_buf_printf(&b, "labbox check accepted this experiment under the `%s` policy.\n", pol);
	if (c.rejecting) {
		lb_buf_puts(&b, "\nBlocking:\n");
		size_t k = 0;
		hinted h = {0};
		for (size_t i = 0; i < rep->n; i++) {
			const lb_check_finding *f = &rep->items[i];
			if (!f->rejects || f->suppressed)
				continue;
			put_u(&b, ++k);
			lb_buf_append(&b, ". ", 2);
			put_llm_line(&b, f, &h);
		}
	}
	bool any = false;
	hinted wh = {0};
	for (size_t i = 0; i < rep->n; i++) {
		const lb_check_finding *f = &rep->items[i];
		if (f->rejects || f->suppressed || f->severity == LB_CHECK_INFO)
			continue;
		if (!any)
			lb_buf_puts(&b, "\nWarnings (not blocking; fix them if the change is safe):\n");
		any = true;
		lb_buf_append(&b, "- ", 2);
		put_llm_line(&b, f, &wh);
	}
	if (!b.data)
		return strdup("");
	return b.data;
}

char *lb_check_text(const lb_check_report *rep)
{
	lb_buf b = {0};
	for (size_t i = 0; i < rep->n; i++) {
		const lb_check_finding *f = &rep->items[i];
		put_at(&b, f);
		if (f->suppressed) {
			lb_buf_append(&b, ": note[", 7);
			put_s(&b, f->id);
			lb_buf_append(&b, "]: ", 3);
			put_s(&b, f->message);
			lb_buf_append(&b, " (suppressed: ", 14);
			put_s(&b, f->suppression);
			lb_buf_append(&b, ")\n", 2);
		} else {
			lb_buf_append(&b, ": ", 2);
			put_s(&b, sev_name(f->severity));
			lb_buf_append(&b, "[", 1);
			put_s(&b, f->id);
			lb_buf_append(&b, "]: ", 3);
			put_s(&b, f->message);
			lb_buf_append(&b, "\n", 1);
		}
	}
	counts c = count(rep);
	if (rep->stdlib_floor)
		lb_buf_printf(&b,
			      "labbox check: note: no standard library summaries (%s); helpers of the "
			      "standard library are checked against labbox's own lists only\n",
			      rep->stdlib_by);
	lb_buf_printf(&b,
		      "labbox check: %zu file%s, %zu error%s, %zu warning%s, %zu suppressed: %s under "
		      "policy %s\n",
		      rep->files, rep->files == 1 ? "" : "s", c.errors, c.errors == 1 ? "" : "s",
		      c.warnings, c.warnings == 1 ? "" : "s", c.suppressed,
		      rep->rejected ? "rejected" : "accepted", lb_check_policy_name(rep->policy));
	return b.data ? b.data : strdup("");
}

struct json_object *lb_check_report_json(const lb_check_report *rep)
{
	json_object *doc = json_object_new_object();
	counts c = count(rep);
	json_object_object_add(doc, "schema", json_object_new_string("labbox.check/1"));
	json_object_object_add(doc, "policy", jstr(lb_check_policy_name(rep->policy)));
	json_object_object_add(doc, "rejected", json_object_new_boolean(rep->rejected));
	json_object_object_add(doc, "files", json_object_new_int64((int64_t)rep->files));
	json_object_object_add(doc, "syntax_checked_by",
			       jstr(rep->syntax_by[0] ? rep->syntax_by : "tree-sitter"));
	if (rep->syntax_by[0] && strcmp(rep->syntax_by, "tree-sitter") != 0)
		json_object_object_add(doc, "syntax_cached_files",
				       json_object_new_int64((int64_t)rep->syntax_cached));
	if (rep->stdlib_by[0]) {
		json_object *sl = json_object_new_object();
		json_object_object_add(sl, rep->stdlib_floor ? "none" : "summaries", jstr(rep->stdlib_by));
		json_object_object_add(doc, "stdlib", sl);
	}
	json_object_object_add(doc, "cached_files", json_object_new_int64((int64_t)rep->cached));
	json_object_object_add(doc, "unread_files", json_object_new_int64((int64_t)rep->unread));
	json_object *cnt = json_object_new_object();
	json_object_object_add(cnt, "error", json_object_new_int64((int64_t)c.errors));
	json_object_object_add(cnt, "warning", json_object_new_int64((int64_t)c.warnings));
	json_object_object_add(cnt, "info", json_object_new_int64((int64_t)c.infos));
	json_object_object_add(cnt, "suppressed", json_object_new_int64((int64_t)c.suppressed));
	json_object_object_add(doc, "counts", cnt);
	json_object_object_add(doc, "findings", lb_check_findings_json(rep));
	json_object_object_add(doc, "seeds", rep->seeds ? json_object_get(rep->seeds)
							: json_object_new_array());
	json_object_object_add(doc, "needs", lb_check_needs_json(rep, NULL));
	char *llm = lb_check_llm_text(rep);
	json_object_object_add(doc, "llm_text", jstr(llm ? llm : ""));
	free(llm);
	return doc;
}

/* Whether a -v SRC:DST[:MODE] mount makes dir writable: DST is dir or above it, not :ro. */
static bool mount_grants(const char *spec, const char *dir)
{
	const char *dst = strchr(spec, ':');
	if (!dst)
		return false;
	dst++;
	const char *mode = strchr(dst, ':');
	size_t n = mode ? (size_t)(mode - dst) : strlen(dst);
	if (mode && strncmp(mode + 1, "ro", 2) == 0)
		return false;
	while (n > 1 && dst[n - 1] == '/')
		n--;
	return strncmp(dir, dst, n) == 0 && (dir[n] == '\0' || dir[n] == '/' || n == 1);
}

struct json_object *lb_check_needs_json(const lb_check_report *rep, struct json_object *sandbox)
{
	json_object *out = json_object_new_array(), *v;
	bool net = false, gpus = false;
	json_object *volumes = NULL;
	if (sandbox && json_object_object_get_ex(sandbox, "network", &v) && v)
		net = strcmp(json_object_get_string(v), "host") == 0;
	if (sandbox && json_object_object_get_ex(sandbox, "gpus", &v) && v)
		gpus = json_object_get_string(v)[0] && strcmp(json_object_get_string(v), "none") != 0;
	if (sandbox && json_object_object_get_ex(sandbox, "volumes", &v) &&
	    json_object_is_type(v, json_type_array))
		volumes = v;
	for (size_t i = 0; rep->needs && i < json_object_array_length(rep->needs); i++) {
		json_object *n = NULL;
		if (json_object_deep_copy(json_object_array_get_idx(rep->needs, i), &n, NULL) < 0)
			continue;
		const char *kind = json_object_object_get_ex(n, "kind", &v) ? json_object_get_string(v) : "";
		bool granted = (strcmp(kind, "network") == 0 && net) || (strcmp(kind, "gpu") == 0 && gpus);
		if (strcmp(kind, "write_outside") == 0 && volumes && json_object_object_get_ex(n, "path", &v))
			for (size_t k = 0; k < json_object_array_length(volumes) && !granted; k++)
				granted = mount_grants(json_object_get_string(json_object_array_get_idx(volumes, k)),
						       json_object_get_string(v));
		json_object_object_add(n, "granted", json_object_new_boolean(granted));
		json_object_array_add(out, n);
	}
	return out;
}
