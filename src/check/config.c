/* check: configuration (setters and the `check:`/`plan:` keys of labbox.yaml). */
#include "check_internal.h"
#include "labbox/config.h"
#include "labbox/diagnose.h"
#include "labbox/env.h"
#include "labbox/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define CK_LIST_MAX 4096

int ck_list_add(ck_list *l, const char *s, bool project)
{
	if (!s || !*s || strlen(s) > 4096)
		return -EINVAL;
	if (l->n >= CK_LIST_MAX)
		return -E2BIG;
	ck_item *nv = realloc(l->v, (l->n + 1) * sizeof *nv);
	if (!nv)
		return -ENOMEM;
	l->v = nv;
	nv[l->n].s = strdup(s);
	if (!nv[l->n].s)
		return -ENOMEM;
	nv[l->n].project = project;
	l->n++;
	return 0;
}

void ck_list_free(ck_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].s);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

const ck_item *ck_list_match(const ck_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++) {
		size_t k = strlen(l->v[i].s);
		if (strncmp(name, l->v[i].s, k) == 0 && (name[k] == '\0' || name[k] == '.'))
			return &l->v[i];
	}
	return NULL;
}

static int list_copy(ck_list *dst, const ck_list *src)
{
	for (size_t i = 0; i < src->n; i++) {
		int r = ck_list_add(dst, src->v[i].s, src->v[i].project);
		if (r < 0)
			return r;
	}
	return 0;
}

int lb_check_config_new(lb_check_config **out)
{
	lb_check_config *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->policy = LB_CHECK_STANDARD;
	c->gate_refuses = true;
	*out = c;
	return 0;
}

void lb_check_config_free(lb_check_config *c)
{
	if (!c)
		return;
	ck_list_free(&c->allow_modules);
	ck_list_free(&c->allow_calls);
	ck_list_free(&c->deny_modules);
	ck_list_free(&c->deny_calls);
	ck_list_free(&c->output_paths);
	ck_list_free(&c->ignore);
	ck_list_free(&c->local_modules);
	free(c->python);
	free(c->python_info);
	free(c->cache_dir);
	free(c->cache_name);
	free(c->entry);
	free(c);
}

int ck_config_copy(const lb_check_config *src, lb_check_config **out)
{
	lb_check_config *c;
	int r = lb_check_config_new(&c);
	if (r < 0)
		return r;
	c->policy = src->policy;
	c->trust_project = src->trust_project;
	c->budget = src->budget;
	c->plan_conditions = src->plan_conditions;
	c->plan_seeds = src->plan_seeds;
	c->plan_iterations = src->plan_iterations;
	c->plan_line = src->plan_line;
	c->answer_probe = src->answer_probe;
	c->imports_only = src->imports_only;
	c->gate_refuses = src->gate_refuses;
	if ((r = list_copy(&c->allow_modules, &src->allow_modules)) < 0 ||
	    (r = list_copy(&c->allow_calls, &src->allow_calls)) < 0 ||
	    (r = list_copy(&c->deny_modules, &src->deny_modules)) < 0 ||
	    (r = list_copy(&c->deny_calls, &src->deny_calls)) < 0 ||
	    (r = list_copy(&c->output_paths, &src->output_paths)) < 0 ||
	    (r = list_copy(&c->ignore, &src->ignore)) < 0 ||
	    (r = list_copy(&c->local_modules, &src->local_modules)) < 0)
		goto fail;
	if (src->python_info) {
		c->python_info = malloc(sizeof *c->python_info);
		if (!c->python_info) {
			r = -ENOMEM;
			goto fail;
		}
		*c->python_info = *src->python_info;
	}
	if ((src->python && !(c->python = strdup(src->python))) ||
	    (src->cache_dir && !(c->cache_dir = strdup(src->cache_dir))) ||
	    (src->cache_name && !(c->cache_name = strdup(src->cache_name))) ||
	    (src->entry && !(c->entry = strdup(src->entry)))) {
		r = -ENOMEM;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	lb_check_config_free(c);
	return r;
}

int lb_check_policy_parse(const char *name, lb_check_policy *out)
{
	if (strcmp(name, "standard") == 0)
		*out = LB_CHECK_STANDARD;
	else if (strcmp(name, "strict") == 0)
		*out = LB_CHECK_STRICT;
	else if (strcmp(name, "permissive") == 0)
		*out = LB_CHECK_PERMISSIVE;
	else
		return -EINVAL;
	return 0;
}

const char *lb_check_policy_name(lb_check_policy p)
{
	switch (p) {
	case LB_CHECK_STRICT: return "strict";
	case LB_CHECK_PERMISSIVE: return "permissive";
	case LB_CHECK_STANDARD: break;
	}
	return "standard";
}

int lb_check_config_set_policy(lb_check_config *c, lb_check_policy p)
{
	if (p != LB_CHECK_STANDARD && p != LB_CHECK_STRICT && p != LB_CHECK_PERMISSIVE)
		return -EINVAL;
	c->policy = p;
	return 0;
}

int lb_check_config_set_trust_project(lb_check_config *c, bool trust)
{
	c->trust_project = trust;
	return 0;
}

int lb_check_config_set_real_home(lb_check_config *c, bool real)
{
	c->real_home = real;
	return 0;
}

int lb_check_config_set_limits(lb_check_config *c, const lb_sandbox_limits *lim)
{
	c->have_limits = lim != NULL;
	if (lim)
		c->limits = *lim;
	return 0;
}

int lb_check_config_set_runtime_gate(lb_check_config *c, bool refuses)
{
	c->gate_refuses = refuses;
	return 0;
}

/* A dotted Python name: identifiers separated by single dots. */
bool ck_dotted_name(const char *s)
{
	bool start = true;
	for (const char *p = s; *p; p++) {
		if (*p == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (!start && *p >= '0' && *p <= '9')))
			return false;
		start = false;
	}
	return !start;
}

static int add_name(ck_list *l, const char *name, bool project)
{
	if (!name || !ck_dotted_name(name))
		return -EINVAL;
	return ck_list_add(l, name, project);
}

int lb_check_config_allow_module(lb_check_config *c, const char *m)
{
	return add_name(&c->allow_modules, m, false);
}
int lb_check_config_allow_call(lb_check_config *c, const char *n)
{
	return add_name(&c->allow_calls, n, false);
}
int lb_check_config_deny_module(lb_check_config *c, const char *m)
{
	return add_name(&c->deny_modules, m, false);
}
int lb_check_config_deny_call(lb_check_config *c, const char *n)
{
	return add_name(&c->deny_calls, n, false);
}

static int add_output_path(lb_check_config *c, const char *p, bool project)
{
	if (!p || p[0] != '/')
		return -EINVAL;
	return ck_list_add(&c->output_paths, p, project);
}

int lb_check_config_add_output_path(lb_check_config *c, const char *p)
{
	return add_output_path(c, p, false);
}

int lb_check_config_ignore(lb_check_config *c, const char *what)
{
	if (!what || !*what)
		return -EINVAL;
	for (size_t i = 0; i < R_COUNT; i++)
		if (strcmp(ck_rules[i].info.id, what) == 0 || strcmp(ck_rules[i].info.category, what) == 0)
			return ck_list_add(&c->ignore, what, false);
	return -EINVAL;
}

int lb_check_config_set_budget(lb_check_config *c, double s)
{
	if (!(s >= 0) || !isfinite(s))
		return -EINVAL;
	c->budget = s;
	return 0;
}

int lb_check_config_set_plan(lb_check_config *c, long conditions, long seeds, long iterations)
{
	if (conditions < 0 || seeds < 0 || iterations < 0)
		return -EINVAL;
	c->plan_conditions = conditions;
	c->plan_seeds = seeds;
	c->plan_iterations = iterations;
	return 0;
}

static int set_str(char **dst, const char *s)
{
	char *v = NULL;
	if (s && !(v = strdup(s)))
		return -ENOMEM;
	free(*dst);
	*dst = v;
	return 0;
}

int lb_check_config_set_cache_dir(lb_check_config *c, const char *dir)
{
	return set_str(&c->cache_dir, dir);
}

int lb_check_config_set_cache_name(lb_check_config *c, const char *name)
{
	return set_str(&c->cache_name, name);
}

int lb_check_config_set_answer_probe(lb_check_config *c, bool probe)
{
	c->answer_probe = probe;
	return 0;
}

int lb_check_config_set_python_info(lb_check_config *c, const lb_python_info *py)
{
	lb_python_info *copy = malloc(sizeof *copy);
	if (!copy)
		return -ENOMEM;
	*copy = *py;
	int r = set_str(&c->python, py->executable);
	if (r < 0) {
		free(copy);
		return r;
	}
	free(c->python_info);
	c->python_info = copy;
	return 0;
}

int lb_check_config_set_python(lb_check_config *c, const char *path)
{
	free(c->python_info); /* a new interpreter: its probe is still to be done */
	c->python_info = NULL;
	return set_str(&c->python, path);
}

int lb_check_config_set_entry(lb_check_config *c, const char *entry)
{
	if (entry && (!*entry || entry[0] == '/' || strstr(entry, "..")))
		return -EINVAL;
	return set_str(&c->entry, entry);
}

const char *lb_check_config_entry(const lb_check_config *c)
{
	return c->entry;
}

/* ---- labbox.yaml -------------------------------------------------------------------------- */

typedef struct yctx {
	yaml_document_t *doc;
	lb_check_config *cfg;
	char *err;
	size_t errlen;
} yctx;

__attribute__((format(printf, 3, 4))) static int ybad(yctx *y, const yaml_node_t *n,
						      const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n)
		snprintf(y->err, y->errlen, "labbox.yaml line %zu: %s", n->start_mark.line + 1, msg);
	else
		snprintf(y->err, y->errlen, "labbox.yaml: %s", msg);
	return -EINVAL;
}

static const char *yscalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int ylong(yctx *y, yaml_node_t *n, const char *key, long *out)
{
	const char *s = yscalar(n);
	if (!s || lb_parse_long(s, out) < 0)
		return ybad(y, n, "'%s' must be a non-negative integer", key);
	return 0;
}

/* A list of names into l; kind "module"/"call"/"path" decides the validation. */
static int ynames(yctx *y, yaml_node_t *n, const char *key, ck_list *l, bool paths)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return ybad(y, n, "'%s' must be a list", key);
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		yaml_node_t *item = yaml_document_get_node(y->doc, *it);
		const char *s = yscalar(item);
		int r;
		if (!s)
			return ybad(y, item, "every item of '%s' must be a plain value", key);
		if (paths)
			r = add_output_path(y->cfg, s, true);
		else
			r = add_name(l, s, true);
		if (r == -EINVAL)
			return ybad(y, item, paths ? "'%s' is not an absolute path"
						   : "'%s' is not a dotted Python name",
				    s);
		if (r < 0)
			return ybad(y, item, "'%s': %s", s, strerror(-r));
	}
	return 0;
}

static int yallow_deny(yctx *y, yaml_node_t *n, const char *key, ck_list *mods, ck_list *calls)
{
	if (n->type != YAML_MAPPING_NODE)
		return ybad(y, n, "'%s' must be a mapping with 'modules' and/or 'calls'", key);
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *ks = yscalar(k);
		int r;
		if (ks && strcmp(ks, "modules") == 0)
			r = ynames(y, v, "modules", mods, false);
		else if (ks && strcmp(ks, "calls") == 0)
			r = ynames(y, v, "calls", calls, false);
		else
			return ybad(y, k, "unknown key '%s' under '%s' (modules, calls)",
				    ks ? ks : "?", key);
		if (r < 0)
			return r;
	}
	return 0;
}

static int ycheck(yctx *y, yaml_node_t *n)
{
	lb_check_config *c = y->cfg;
	if (n->type != YAML_MAPPING_NODE)
		return ybad(y, n, "'check' must be a mapping");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *ks = yscalar(k);
		int r = 0;
		if (!ks)
			return ybad(y, k, "keys under 'check' must be plain strings");
		if (strcmp(ks, "policy") == 0) {
			lb_check_policy pol;
			const char *s = yscalar(v);
			if (!s || lb_check_policy_parse(s, &pol) < 0)
				return ybad(y, v, "'policy' must be strict, standard or permissive");
			/* The project may only tighten the policy unless the operator trusts it. */
			if (c->trust_project || pol == LB_CHECK_STRICT)
				c->policy = pol;
		} else if (strcmp(ks, "allow") == 0) {
			r = yallow_deny(y, v, "allow", &c->allow_modules, &c->allow_calls);
		} else if (strcmp(ks, "deny") == 0) {
			r = yallow_deny(y, v, "deny", &c->deny_modules, &c->deny_calls);
		} else if (strcmp(ks, "output_paths") == 0) {
			r = ynames(y, v, "output_paths", &c->output_paths, true);
		} else {
			return ybad(y, k,
				    "unknown key '%s' under 'check' (policy, allow, deny, output_paths)",
				    ks);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int yplan(yctx *y, yaml_node_t *n)
{
	lb_check_config *c = y->cfg;
	if (n->type != YAML_MAPPING_NODE)
		return ybad(y, n, "'plan' must be a mapping (conditions, seeds, iterations)");
	c->plan_line = (unsigned)n->start_mark.line + 1;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *ks = yscalar(k);
		int r;
		if (ks && strcmp(ks, "conditions") == 0)
			r = ylong(y, v, ks, &c->plan_conditions);
		else if (ks && strcmp(ks, "seeds") == 0)
			r = ylong(y, v, ks, &c->plan_seeds);
		else if (ks && strcmp(ks, "iterations") == 0)
			r = ylong(y, v, ks, &c->plan_iterations);
		else
			return ybad(y, k, "unknown key '%s' under 'plan' (conditions, seeds, iterations)",
				    ks ? ks : "?");
		if (r < 0)
			return r;
	}
	return 0;
}

int lb_check_config_load_yaml(lb_check_config *c, const char *text, size_t len, char *err,
			      size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yctx y = {.doc = &doc, .cfg = c, .err = err, .errlen = errlen};
	int r = 0;
	if (len > (1u << 20))
		return ybad(&y, NULL, "larger than 1 MiB");
	int dr = lb_yaml_depth_check(text, len, "labbox.yaml", err, errlen);
	if (dr < 0)
		return dr == -E2BIG ? -EINVAL : dr;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "labbox.yaml line %zu: %s", parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "malformed YAML");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root)
		goto out; /* empty document */
	if (root->type != YAML_MAPPING_NODE) {
		r = ybad(&y, root, "the document must be a mapping");
		goto out;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);
		const char *ks = yscalar(k);
		if (!ks)
			continue;
		if (strcmp(ks, "check") == 0) {
			r = ycheck(&y, v);
		} else if (strcmp(ks, "plan") == 0) {
			r = yplan(&y, v);
		} else if (strcmp(ks, "budget") == 0) {
			double b;
			const char *s = yscalar(v);
			if (!s || lb_parse_seconds(s, &b) < 0)
				r = ybad(&y, v, "'budget' must be a positive number of seconds");
			else
				c->budget = b;
		} else if (strcmp(ks, "entry") == 0) {
			const char *s = yscalar(v);
			if (!s || lb_check_config_set_entry(c, s) < 0)
				r = ybad(&y, v, "'entry' must be a relative path inside the experiment");
		}
		if (r < 0)
			break;
	}
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}
