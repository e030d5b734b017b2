/* The grid of a sweep: parameters, seeds and templates, from labbox.yaml and the command line,
 * expanded into cells; the sweep's identity. */
#include "labbox/config.h"
#include "labbox/gate.h"
#include "labbox/sweep.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define SWEEP_YAML_MAX (1 << 20)

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof **v);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

static void param_free(lb_sweep_param *p)
{
	free(p->name);
	strv_free(p->values, p->nvalues);
	memset(p, 0, sizeof *p);
}

void lb_sweep_spec_free(lb_sweep_spec *s)
{
	for (size_t i = 0; i < s->nparams; i++)
		param_free(&s->params[i]);
	free(s->params);
	free(s->seeds);
	strv_free(s->args, s->nargs);
	strv_free(s->env, s->nenv);
	memset(s, 0, sizeof *s);
}

/* Names reach the experiment as --NAME and appear in {NAME}: what argparse and the template
 * syntax can both carry. */
static bool name_valid(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* Text that goes into sweep.json and condition names must be UTF-8, as JSON is. */
static bool utf8_valid(const char *v)
{
	const unsigned char *u = (const unsigned char *)v;
	size_t n = strlen(v);
	for (size_t i = 0; i < n;) {
		size_t k = u[i] < 0x80 ? 1 : lb_utf8_seq_len(u + i, n - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* A value is one argument: no control characters (a newline would split records and
 * progress lines), valid UTF-8, at most 256 bytes. */
static const char *value_problem(const char *v)
{
	if (!*v)
		return "is empty";
	if (strlen(v) > 256)
		return "is longer than 256 bytes";
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "holds a control character";
	if (!utf8_valid(v))
		return "is not valid UTF-8";
	return NULL;
}

/* A value in a condition name (NAME=VALUE,NAME=VALUE): as it is, unless it holds a ',' or
 * starts with '"'; then in double quotes, with '"' and '\\' backslash-escaped. Names hold
 * neither ',' nor '=', so each condition's name is its own: a: ["1,b=2", "1"] and
 * b: ["3", "2,b=3"] give a="1,b=2",b=3 and a=1,b="2,b=3", not a=1,b=2,b=3 twice (which the
 * report would refuse as one sweep, or pool as runs). Ordinary values read as before. */
static int name_value(lb_buf *b, const char *v)
{
	if (!strchr(v, ',') && v[0] != '"')
		return lb_buf_puts(b, v);
	int r = lb_buf_puts(b, "\"");
	for (const char *q = v; r == 0 && *q; q++) {
		char esc[2] = {'\\', *q};
		r = *q == '"' || *q == '\\' ? lb_buf_append(b, esc, 2) : lb_buf_append(b, q, 1);
	}
	return r == 0 ? lb_buf_puts(b, "\"") : r;
}

/* Set (or replace) a parameter's values; takes ownership of values. */
static int spec_set_param(lb_sweep_spec *s, const char *name, char **values, size_t n, char *err,
			  size_t errlen)
{
	int r = 0;
	if (!name_valid(name))
		r = fail(err, errlen,
			 "parameter name '%s' is not a name (letters, digits, _ . -, starting with a "
			 "letter or _)", name);
	else if (strcmp(name, "seed") == 0)
		r = fail(err, errlen, "'seed' cannot be a parameter: seeds are given with --seeds "
			 "or seeds: under sweep:");
	else if (n == 0)
		r = fail(err, errlen, "parameter '%s' has no values", name);
	else if (n > LB_SWEEP_MAX_VALUES)
		r = fail(err, errlen, "parameter '%s' has %zu values (at most %d)", name, n,
			 LB_SWEEP_MAX_VALUES);
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *why = value_problem(values[i]);
		if (why)
			r = fail(err, errlen, "value %zu of parameter '%s' %s", i + 1, name, why);
		for (size_t j = 0; r == 0 && j < i; j++)
			if (strcmp(values[i], values[j]) == 0)
				r = fail(err, errlen,
					 "parameter '%s' lists the value '%s' twice (the same "
					 "condition would run twice)", name, values[i]);
	}
	if (r < 0) {
		strv_free(values, n);
		return r;
	}
	for (size_t i = 0; i < s->nparams; i++)
		if (strcmp(s->params[i].name, name) == 0) {
			strv_free(s->params[i].values, s->params[i].nvalues);
			s->params[i].values = values;
			s->params[i].nvalues = n;
			return 0;
		}
	if (s->nparams >= LB_SWEEP_MAX_PARAMS) {
		strv_free(values, n);
		return fail(err, errlen, "more than %d parameters", LB_SWEEP_MAX_PARAMS);
	}
	lb_sweep_param *np = realloc(s->params, (s->nparams + 1) * sizeof *np);
	if (!np) {
		strv_free(values, n);
		return -ENOMEM;
	}
	s->params = np;
	np[s->nparams].name = strdup(name);
	np[s->nparams].values = values;
	np[s->nparams].nvalues = n;
	if (!np[s->nparams].name) {
		strv_free(values, n);
		return -ENOMEM;
	}
	s->nparams++;
	return 0;
}

int lb_sweep_spec_set_param(lb_sweep_spec *s, const char *name, const char *const *values,
			    size_t n, char *err, size_t errlen)
{
	char **copy = NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strv_push(&copy, &k, values[i]) < 0) {
			strv_free(copy, k);
			return -ENOMEM;
		}
	return spec_set_param(s, name, copy, k, err, errlen);
}

int lb_sweep_spec_param_arg(lb_sweep_spec *s, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return fail(err, errlen, "--param '%s' is not NAME=V1,V2,...", arg);
	LB_AUTOFREE char *name = strndup(arg, (size_t)(eq - arg));
	if (!name)
		return -ENOMEM;
	char **values = NULL;
	size_t n = 0;
	const char *p = eq + 1;
	if (!*p)
		return fail(err, errlen, "--param %s= has no values (give NAME=V1,V2,...)", name);
	for (;;) {
		const char *comma = strchrnul(p, ',');
		LB_AUTOFREE char *v = strndup(p, (size_t)(comma - p));
		if (!v || strv_push(&values, &n, v) < 0) {
			strv_free(values, n);
			return -ENOMEM;
		}
		if (!*v) {
			strv_free(values, n);
			return fail(err, errlen, "--param '%s' has an empty value (value %zu)", arg, n);
		}
		if (!*comma)
			break;
		p = comma + 1;
	}
	return spec_set_param(s, name, values, n, err, errlen);
}

static int parse_seed_number(const char *p, const char **end, long *out)
{
	if (*p < '0' || *p > '9')
		return -EINVAL;
	long v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (LONG_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (*p - '0');
	}
	*end = p;
	*out = v;
	return 0;
}

int lb_sweep_parse_seeds(const char *text, long **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	long *v = NULL;
	size_t count = 0, cap = 0;
	const char *p = text;
	if (!*p)
		return fail(err, errlen, "--seeds is empty (give 0-4 or 0,3,7)");
	while (*p) {
		long a, b;
		const char *e;
		if (parse_seed_number(p, &e, &a) < 0) {
			free(v);
			return fail(err, errlen,
				    "seeds '%s': '%s' is not a non-negative integer or range A-B "
				    "(give 0-4 or 0,3,7)", text, p);
		}
		b = a;
		p = e;
		if (*p == '-') {
			if (parse_seed_number(p + 1, &e, &b) < 0) {
				free(v);
				return fail(err, errlen, "seeds '%s': a range needs an end (0-4)", text);
			}
			p = e;
			if (b < a) {
				free(v);
				return fail(err, errlen, "seeds '%s': the range %ld-%ld runs backwards",
					    text, a, b);
			}
		}
		if (*p == ',') {
			p++;
			if (!*p) {
				free(v);
				return fail(err, errlen, "seeds '%s' ends with a comma", text);
			}
		} else if (*p) {
			free(v);
			return fail(err, errlen, "seeds '%s': unexpected '%c' (give 0-4 or 0,3,7)",
				    text, *p);
		}
		if (b - a >= LB_SWEEP_MAX_SEEDS || count + (size_t)(b - a) >= LB_SWEEP_MAX_SEEDS) {
			free(v);
			return fail(err, errlen, "seeds '%s': more than %d seeds", text,
				    LB_SWEEP_MAX_SEEDS);
		}
		for (long s = a; s <= b; s++) {
			for (size_t i = 0; i < count; i++)
				if (v[i] == s) {
					free(v);
					return fail(err, errlen, "seeds '%s' lists seed %ld twice", text, s);
				}
			if (count == cap) {
				cap = cap ? cap * 2 : 16;
				long *nv = realloc(v, cap * sizeof *nv);
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[count++] = s;
		}
	}
	*out = v;
	*n = count;
	return 0;
}

int lb_sweep_split_template(const char *text, char ***out, size_t *n)
{
	char **v = NULL;
	size_t count = 0;
	const char *p = text;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		const char *e = p;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		LB_AUTOFREE char *tok = strndup(p, (size_t)(e - p));
		if (!tok || strv_push(&v, &count, tok) < 0) {
			strv_free(v, count);
			return -ENOMEM;
		}
		p = e;
	}
	*out = v;
	*n = count;
	return 0;
}

/* ---- labbox.yaml's sweep: block ------------------------------------------------------------ */

typedef struct yctx {
	yaml_document_t *doc;
	char *err;
	size_t errlen;
} yctx;

__attribute__((format(printf, 3, 4))) static int ybad(yctx *y, const yaml_node_t *n,
						      const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n)
		snprintf(y->err, y->errlen, "labbox.yaml line %zu: sweep: %s", n->start_mark.line + 1,
			 msg);
	else
		snprintf(y->err, y->errlen, "labbox.yaml: sweep: %s", msg);
	return -EINVAL;
}

static const char *yscalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int ylist(yctx *y, yaml_node_t *n, const char *what, char ***out, size_t *count)
{
	*out = NULL;
	*count = 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return ybad(y, n, "%s must be a list", what);
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		yaml_node_t *item = yaml_document_get_node(y->doc, *it);
		const char *s = yscalar(item);
		if (!s) {
			strv_free(*out, *count);
			*out = NULL;
			*count = 0;
			return ybad(y, item, "every item of %s must be a plain value", what);
		}
		if (*count >= LB_SWEEP_MAX_VALUES * 4 || strv_push(out, count, s) < 0) {
			strv_free(*out, *count);
			*out = NULL;
			*count = 0;
			return *count >= LB_SWEEP_MAX_VALUES * 4 ? ybad(y, item, "%s is too long", what)
								 : -ENOMEM;
		}
	}
	return 0;
}

static int yparams(yctx *y, yaml_node_t *n, lb_sweep_spec *s)
{
	if (n->type != YAML_MAPPING_NODE)
		return ybad(y, n, "parameters must be a mapping of names to lists of values "
			    "(lr: [0.1, 0.01])");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *name = yscalar(k);
		if (!name || !v)
			return ybad(y, k, "parameter names must be plain strings");
		for (size_t i = 0; i < s->nparams; i++)
			if (strcmp(s->params[i].name, name) == 0)
				return ybad(y, k, "parameter '%s' is given twice", name);
		char what[160];
		snprintf(what, sizeof what, "parameter '%.100s'", name);
		char **values = NULL;
		size_t nv = 0;
		int r = ylist(y, v, what, &values, &nv);
		if (r < 0)
			return r;
		char msg[400];
		r = spec_set_param(s, name, values, nv, msg, sizeof msg);
		if (r == -EINVAL)
			return ybad(y, v, "%s", msg);
		if (r < 0)
			return r;
	}
	return 0;
}

static int yenv(yctx *y, yaml_node_t *n, lb_sweep_spec *s)
{
	if (n->type != YAML_MAPPING_NODE)
		return ybad(y, n, "env must be a mapping of variable names to templates "
			    "(LR: \"{lr}\")");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *name = yscalar(k), *val = yscalar(v);
		if (!name || !lb_env_name_valid(name))
			return ybad(y, k, "env: '%s' is not a variable name", name ? name : "?");
		if (lb_gate_startup_var(name))
			return ybad(y, k, "env: %s changes what the interpreter runs before the "
				    "experiment's code (and its runtime gate); labbox.yaml may not set "
				    "it: give it with -e if you mean it", name);
		if (!val)
			return ybad(y, v, "env: %s must be a plain value (a template)", name);
		LB_AUTOFREE char *kv = NULL;
		if (asprintf(&kv, "%s=%s", name, val) < 0 || strv_push(&s->env, &s->nenv, kv) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int ysweep(yctx *y, yaml_node_t *n, lb_sweep_spec *s)
{
	if (n->type != YAML_MAPPING_NODE)
		return ybad(y, n, "must be a mapping (parameters, seeds, args, env, iterations, "
			    "budget)");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, p->value);
		const char *key = yscalar(k);
		int r = 0;
		if (!key || !v)
			return ybad(y, k, "keys must be plain strings");
		if (strcmp(key, "parameters") == 0) {
			r = yparams(y, v, s);
		} else if (strcmp(key, "seeds") == 0) {
			char msg[400];
			LB_AUTOFREE char *text = NULL;
			if (yscalar(v)) {
				text = strdup(yscalar(v));
			} else if (v->type == YAML_SEQUENCE_NODE) {
				char **items = NULL;
				size_t ni = 0;
				lb_buf b = {0};
				r = ylist(y, v, "seeds", &items, &ni);
				for (size_t i = 0; r == 0 && i < ni; i++)
					r = lb_buf_printf(&b, "%s%s", i ? "," : "", items[i]);
				strv_free(items, ni);
				if (r == 0 && ni == 0)
					r = ybad(y, v, "seeds is an empty list");
				if (r < 0) {
					lb_buf_free(&b);
					return r;
				}
				text = b.data;
			} else {
				return ybad(y, v, "seeds must be a range (0-4), a list or 0,3,7");
			}
			if (!text)
				return -ENOMEM;
			free(s->seeds);
			s->seeds = NULL;
			r = lb_sweep_parse_seeds(text, &s->seeds, &s->nseeds, msg, sizeof msg);
			if (r == -EINVAL)
				return ybad(y, v, "%s", msg);
			s->seeds_set = r == 0;
		} else if (strcmp(key, "args") == 0) {
			strv_free(s->args, s->nargs);
			s->args = NULL;
			s->nargs = 0;
			if (yscalar(v))
				r = lb_sweep_split_template(yscalar(v), &s->args, &s->nargs);
			else
				r = ylist(y, v, "args", &s->args, &s->nargs);
			s->args_set = r == 0;
		} else if (strcmp(key, "env") == 0) {
			r = yenv(y, v, s);
		} else if (strcmp(key, "iterations") == 0) {
			const char *t = yscalar(v);
			if (!t || lb_parse_long(t, &s->iterations) < 0)
				return ybad(y, v, "iterations must be a non-negative integer");
		} else if (strcmp(key, "budget") == 0) {
			const char *t = yscalar(v);
			if (!t || lb_parse_seconds(t, &s->sweep_budget) < 0)
				return ybad(y, v, "budget must be a positive number of seconds (the "
					    "whole sweep's)");
		} else {
			return ybad(y, k, "unknown key '%s' (known: parameters, seeds, args, env, "
				    "iterations, budget)", key);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int lb_sweep_spec_load_yaml(lb_sweep_spec *s, const char *text, size_t len, char *err,
			    size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int dr = lb_yaml_depth_check(text, len, "labbox.yaml", err, errlen);
	if (dr < 0)
		return dr == -E2BIG ? -EINVAL : dr;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "labbox.yaml line %zu: %s", parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "not valid YAML");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	yctx y = {.doc = &doc, .err = err, .errlen = errlen};
	int r = 0;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	/* A NUL would cut a value where C reads it (lb_config_parse says the same). */
	for (yaml_node_t *n = doc.nodes.start; root && n < doc.nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE &&
		    memchr(n->data.scalar.value, '\0', n->data.scalar.length)) {
			r = ybad(&y, n, "a value holds a NUL byte");
			break;
		}
	if (r == 0 && root && root->type == YAML_MAPPING_NODE)
		for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
		     r == 0 && p < root->data.mapping.pairs.top; p++) {
			const char *key = yscalar(yaml_document_get_node(&doc, p->key));
			yaml_node_t *v = yaml_document_get_node(&doc, p->value);
			if (key && v && strcmp(key, "sweep") == 0)
				r = ysweep(&y, v, s);
		}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}

int lb_sweep_spec_load(lb_sweep_spec *s, const char *expdir, char *err, size_t errlen)
{
	LB_AUTOCLOSE int dfd = open(expdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(err, errlen, "cannot open '%s': %s", expdir, strerror(errno));
	static const char *const names[] = {"labbox.yaml", "labbox.yml"};
	for (size_t i = 0; i < 2; i++) {
		LB_AUTOFREE char *text = NULL;
		size_t len = 0;
		int r = lb_read_file_at(dfd, names[i], SWEEP_YAML_MAX, &text, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return fail(err, errlen, "cannot read %s/%s: %s", expdir, names[i],
				    strerror(-r));
		return lb_sweep_spec_load_yaml(s, text, len, err, errlen);
	}
	return 0;
}

/* ---- the plan ------------------------------------------------------------------------------ */

/* Expands one template token. used[i] is set for each parameter named, used[nparams] for
 * {seed}. values NULL: only checks the names. */
static int expand(const char *tok, const lb_sweep_plan *p, char *const *values, const long *seed,
		  bool *used, lb_buf *out, char *err, size_t errlen)
{
	for (const char *c = tok; *c; c++) {
		if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
			if (out && lb_buf_append(out, c, 1) < 0)
				return -ENOMEM;
			c++;
			continue;
		}
		if (*c == '}')
			return fail(err, errlen, "template '%s' has a '}' without its '{' (write }} "
				    "for a brace)", tok);
		if (*c != '{') {
			if (out && lb_buf_append(out, c, 1) < 0)
				return -ENOMEM;
			continue;
		}
		const char *end = strchr(c, '}');
		if (!end)
			return fail(err, errlen, "template '%s' has a '{' without its '}' (write {{ "
				    "for a brace)", tok);
		size_t n = (size_t)(end - c - 1);
		size_t i;
		for (i = 0; i < p->nparams; i++)
			if (strlen(p->param_names[i]) == n && strncmp(p->param_names[i], c + 1, n) == 0)
				break;
		bool is_seed = i == p->nparams && n == 4 && strncmp(c + 1, "seed", 4) == 0;
		if (i == p->nparams && !is_seed) {
			lb_buf names = {0};
			for (size_t j = 0; j < p->nparams; j++)
				lb_buf_printf(&names, "%s%s", j ? ", " : "", p->param_names[j]);
			int r = fail(err, errlen,
				     "template '%s' names {%.*s}, which is not a parameter (%s) or "
				     "{seed}", tok, (int)n, c + 1, names.data ? names.data : "none");
			lb_buf_free(&names);
			return r;
		}
		if (is_seed && p->nseeds == 0)
			return fail(err, errlen, "template '%s' passes {seed}, but no seeds are given "
				    "(--seeds 0-4 or seeds: under sweep:)", tok);
		used[i] = true;
		if (out) {
			int r = is_seed ? lb_buf_printf(out, "%ld", seed ? *seed : 0)
					: lb_buf_puts(out, values[i]);
			if (r < 0)
				return -ENOMEM;
		}
		c = end;
	}
	return 0;
}

void lb_sweep_plan_free(lb_sweep_plan *p)
{
	for (size_t c = 0; p->condition_values && c < p->nconditions; c++)
		free(p->condition_values[c]); /* the strings belong to param_values */
	free(p->condition_values);
	for (size_t i = 0; p->param_values && i < p->nparams; i++)
		strv_free(p->param_values[i], p->param_nvalues[i]);
	free(p->param_values);
	free(p->param_nvalues);
	strv_free(p->condition_names, p->nconditions);
	strv_free(p->param_names, p->nparams);
	for (size_t i = 0; p->cells && i < p->ncells; i++) {
		strv_free(p->cells[i].args, p->cells[i].nargs);
		strv_free(p->cells[i].env, p->cells[i].nenv);
	}
	free(p->cells);
	free(p->seeds);
	strv_free(p->args_template, p->nargs_template);
	strv_free(p->env_template, p->nenv_template);
	memset(p, 0, sizeof *p);
}

static int expand_token(const char *tok, const lb_sweep_plan *p, char *const *vals,
			const long *seed, bool *used, char **out, char *err, size_t errlen)
{
	lb_buf b = {0};
	int r = expand(tok, p, vals, seed, used, &b, err, errlen);
	if (r == 0 && !b.data)
		r = lb_buf_puts(&b, "");
	if (r < 0) {
		lb_buf_free(&b);
		return r;
	}
	*out = b.data;
	return 0;
}

int lb_sweep_plan_make(const lb_sweep_spec *s, lb_sweep_plan *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	lb_sweep_plan *p = out;
	size_t nconds = 1;
	if (s->nparams == 0 && s->nseeds == 0)
		return fail(err, errlen, "the grid is empty: give parameters (--param NAME=V1,V2 or "
			    "parameters: under sweep: in labbox.yaml) or seeds (--seeds 0-4)");
	for (size_t i = 0; i < s->nparams; i++) {
		if (s->params[i].nvalues == 0)
			return fail(err, errlen, "parameter '%s' has no values", s->params[i].name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(s->params[i].name, s->params[j].name) == 0)
				return fail(err, errlen, "parameter '%s' is given twice",
					    s->params[i].name);
		if (nconds > LB_SWEEP_MAX_CELLS / s->params[i].nvalues)
			return fail(err, errlen, "the grid has more than %d conditions",
				    LB_SWEEP_MAX_CELLS);
		nconds *= s->params[i].nvalues;
	}
	size_t nseeds = s->nseeds ? s->nseeds : 1;
	if (nconds * nseeds > LB_SWEEP_MAX_CELLS)
		return fail(err, errlen, "the grid has %zu conditions x %zu seeds = %zu cells (at "
			    "most %d)", nconds, nseeds, nconds * nseeds, LB_SWEEP_MAX_CELLS);
	int r = -ENOMEM;
	p->nparams = s->nparams;
	p->param_names = calloc(s->nparams + 1, sizeof *p->param_names);
	if (!p->param_names)
		goto fail;
	p->param_values = calloc(s->nparams + 1, sizeof *p->param_values);
	p->param_nvalues = calloc(s->nparams + 1, sizeof *p->param_nvalues);
	if (!p->param_values || !p->param_nvalues)
		goto fail;
	for (size_t i = 0; i < s->nparams; i++) {
		if (!(p->param_names[i] = strdup(s->params[i].name)))
			goto fail;
		for (size_t j = 0; j < s->params[i].nvalues; j++)
			if (strv_push(&p->param_values[i], &p->param_nvalues[i],
				      s->params[i].values[j]) < 0)
				goto fail;
	}
	if (s->nseeds) {
		p->seeds = malloc(s->nseeds * sizeof *p->seeds);
		if (!p->seeds)
			goto fail;
		memcpy(p->seeds, s->seeds, s->nseeds * sizeof *p->seeds);
		p->nseeds = s->nseeds;
	}
	/* The templates: the spec's, else each parameter as --NAME VALUE and --seed S. */
	if (s->args_set) {
		for (size_t i = 0; i < s->nargs; i++)
			if (strv_push(&p->args_template, &p->nargs_template, s->args[i]) < 0)
				goto fail;
	} else {
		char tok[300];
		for (size_t i = 0; i < s->nparams; i++) {
			snprintf(tok, sizeof tok, "--%s", s->params[i].name);
			if (strv_push(&p->args_template, &p->nargs_template, tok) < 0)
				goto fail;
			snprintf(tok, sizeof tok, "{%s}", s->params[i].name);
			if (strv_push(&p->args_template, &p->nargs_template, tok) < 0)
				goto fail;
		}
		if (s->nseeds && (strv_push(&p->args_template, &p->nargs_template, "--seed") < 0 ||
				  strv_push(&p->args_template, &p->nargs_template, "{seed}") < 0))
			goto fail;
	}
	for (size_t i = 0; i < s->nenv; i++)
		if (strv_push(&p->env_template, &p->nenv_template, s->env[i]) < 0)
			goto fail;
	for (size_t i = 0; i < p->nargs_template + p->nenv_template; i++) {
		const char *t = i < p->nargs_template ? p->args_template[i]
						      : p->env_template[i - p->nargs_template];
		if (!utf8_valid(t)) {
			r = fail(err, errlen, "template element %zu is not valid UTF-8", i + 1);
			goto fail;
		}
	}
	/* Every name a template uses must exist, and every parameter must reach the experiment:
	 * one that does not would make all its conditions the same run. */
	bool used[LB_SWEEP_MAX_PARAMS + 1] = {false};
	for (size_t i = 0; i < p->nargs_template; i++)
		if ((r = expand(p->args_template[i], p, NULL, NULL, used, NULL, err, errlen)) < 0)
			goto fail;
	for (size_t i = 0; i < p->nenv_template; i++) {
		const char *eq = strchr(p->env_template[i], '=');
		if ((r = expand(eq ? eq + 1 : "", p, NULL, NULL, used, NULL, err, errlen)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < p->nparams; i++)
		if (!used[i]) {
			r = fail(err, errlen, "parameter '%s' never reaches the experiment: the "
				 "template (args: or env: under sweep:) does not name {%s}",
				 p->param_names[i], p->param_names[i]);
			goto fail;
		}
	if (p->nseeds && !used[p->nparams]) {
		r = fail(err, errlen, "seeds are given but the template (args: or env: under "
			 "sweep:) does not pass {seed}");
		goto fail;
	}
	r = -ENOMEM;
	p->nconditions = nconds;
	p->condition_names = calloc(nconds + 1, sizeof *p->condition_names);
	p->condition_values = calloc(nconds, sizeof *p->condition_values);
	p->ncells = nconds * nseeds;
	p->cells = calloc(p->ncells, sizeof *p->cells);
	if (!p->condition_names || !p->condition_values || !p->cells)
		goto fail;
	for (size_t c = 0; c < nconds; c++) {
		/* The first parameter varies slowest, as itertools.product. */
		p->condition_values[c] = calloc(s->nparams + 1, sizeof **p->condition_values);
		if (!p->condition_values[c])
			goto fail;
		size_t rest = c;
		for (size_t i = s->nparams; i-- > 0;) {
			p->condition_values[c][i] = p->param_values[i][rest % p->param_nvalues[i]];
			rest /= s->params[i].nvalues;
		}
		lb_buf name = {0};
		for (size_t i = 0; i < s->nparams; i++)
			if (lb_buf_printf(&name, "%s%s=", i ? "," : "", p->param_names[i]) < 0 ||
			    name_value(&name, p->condition_values[c][i]) < 0) {
				lb_buf_free(&name);
				goto fail;
			}
		if (!name.data && lb_buf_puts(&name, "all") < 0)
			goto fail;
		p->condition_names[c] = name.data;
	}
	for (size_t c = 0; c < nconds; c++)
		for (size_t k = 0; k < nseeds; k++) {
			lb_sweep_cell *cell = &p->cells[c * nseeds + k];
			cell->index = c * nseeds + k;
			cell->condition = c;
			cell->has_seed = p->nseeds > 0;
			cell->seed = p->nseeds ? p->seeds[k] : 0;
			bool u[LB_SWEEP_MAX_PARAMS + 1];
			cell->args = calloc(p->nargs_template + 1, sizeof *cell->args);
			cell->env = calloc(p->nenv_template + 1, sizeof *cell->env);
			if (!cell->args || !cell->env)
				goto fail;
			for (size_t i = 0; i < p->nargs_template; i++) {
				if ((r = expand_token(p->args_template[i], p, p->condition_values[c],
						      &cell->seed, u, &cell->args[i], err, errlen)) < 0)
					goto fail;
				cell->nargs++;
			}
			for (size_t i = 0; i < p->nenv_template; i++) {
				const char *eq = strchr(p->env_template[i], '=');
				LB_AUTOFREE char *val = NULL;
				if ((r = expand_token(eq + 1, p, p->condition_values[c], &cell->seed, u,
						      &val, err, errlen)) < 0)
					goto fail;
				if (asprintf(&cell->env[i], "%.*s=%s", (int)(eq - p->env_template[i]),
					     p->env_template[i], val) < 0) {
					r = -ENOMEM;
					goto fail;
				}
				cell->nenv++;
			}
			r = -ENOMEM;
		}
	return 0;
fail:
	lb_sweep_plan_free(p);
	return r;
}

static json_object *strv_json(char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

json_object *lb_sweep_plan_json(const lb_sweep_plan *p)
{
	json_object *o = json_object_new_object();
	json_object *params = json_object_new_array();
	for (size_t i = 0; i < p->nparams; i++) {
		json_object *pj = json_object_new_object();
		json_object_object_add(pj, "name", json_object_new_string(p->param_names[i]));
		json_object_object_add(pj, "values", strv_json(p->param_values[i], p->param_nvalues[i]));
		json_object_array_add(params, pj);
	}
	json_object_object_add(o, "parameters", params);
	json_object *seeds = json_object_new_array();
	for (size_t i = 0; i < p->nseeds; i++)
		json_object_array_add(seeds, json_object_new_int64(p->seeds[i]));
	json_object_object_add(o, "seeds", seeds);
	json_object_object_add(o, "args_template", strv_json(p->args_template, p->nargs_template));
	json_object_object_add(o, "env_template", strv_json(p->env_template, p->nenv_template));
	json_object_object_add(o, "conditions", json_object_new_int64((int64_t)p->nconditions));
	json_object_object_add(o, "cells", json_object_new_int64((int64_t)p->ncells));
	return o;
}

json_object *lb_sweep_cell_tag(const lb_sweep_plan *p, size_t cell, const char *sweep_id)
{
	const lb_sweep_cell *c = &p->cells[cell];
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(sweep_id));
	json_object_object_add(o, "cell", json_object_new_int64((int64_t)cell));
	json_object_object_add(o, "condition",
			       json_object_new_string(p->condition_names[c->condition]));
	json_object *params = json_object_new_object();
	for (size_t i = 0; i < p->nparams; i++)
		json_object_object_add(params, p->param_names[i],
				       json_object_new_string(p->condition_values[c->condition][i]));
	json_object_object_add(o, "params", params);
	json_object_object_add(o, "seed", c->has_seed ? json_object_new_int64(c->seed) : NULL);
	return o;
}

/* ---- identity ------------------------------------------------------------------------------ */

static void hash_str(lb_sha256 *h, const char *s)
{
	/* Length-prefixed, so that ("ab", "c") and ("a", "bc") differ. */
	size_t n = strlen(s);
	lb_sha256_update(h, &n, sizeof n);
	lb_sha256_update(h, s, n);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file and link under dir (relative to root) in sorted order: type, path, and the
 * content's sha256 (a link's target). Bounded depth: a sweep's experiment is code, not a data set. */
typedef struct skip_list {
	char (*v)[PATH_MAX];
	size_t n;
} skip_list;

static bool skipped(const skip_list *sk, const char *full)
{
	for (size_t i = 0; i < sk->n; i++)
		if (strcmp(sk->v[i], full) == 0)
			return true;
	return false;
}

static int hash_tree(lb_sha256 *h, const char *root, const char *rel, const skip_list *skip,
		     int depth)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel) >= (int)sizeof path)
		return -ENAMETOOLONG;
	if (depth > 64)
		return -ELOOP;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		const char *nm = e->d_name;
		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 || strcmp(nm, ".git") == 0 ||
		    strcmp(nm, ".labbox") == 0 || strcmp(nm, "__pycache__") == 0)
			continue;
		if ((r = strv_push(&names, &n, nm)) < 0)
			break;
	}
	closedir(d);
	if (r == 0 && n)
		qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char sub[PATH_MAX], full[PATH_MAX];
		snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
		if (snprintf(full, sizeof full, "%s/%s", root, sub) >= (int)sizeof full) {
			r = -ENAMETOOLONG;
			break;
		}
		if (skipped(skip, full))
			continue;
		struct stat st;
		if (lstat(full, &st) < 0)
			continue; /* gone meanwhile */
		if (S_ISDIR(st.st_mode)) {
			/* Directories count by what they hold: one that holds only labbox's own
			 * records (made by the first sweep) must not change the id. */
			r = hash_tree(h, root, sub, skip, depth + 1);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t len = readlink(full, target, sizeof target - 1);
			target[len > 0 ? len : 0] = '\0';
			hash_str(h, "l");
			hash_str(h, sub);
			hash_str(h, target);
		} else if (S_ISREG(st.st_mode)) {
			LB_AUTOCLOSE int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
			char hex[65] = "";
			if (fd < 0 || lb_sha256_fd(fd, hex) < 0)
				snprintf(hex, sizeof hex, "unreadable");
			hash_str(h, "f");
			hash_str(h, sub);
			hash_str(h, hex);
		}
	}
	strv_free(names, n);
	return r;
}

int lb_sweep_id(const char *expdir, const char *const *skip, size_t nskip,
		const lb_sweep_plan *p, const char *const *extra, size_t nextra,
		char out[LB_SWEEP_ID_LEN])
{
	lb_sha256 h;
	lb_sha256_init(&h);
	hash_str(&h, LB_SWEEP_SCHEMA);
	/* Compared as the walk spells paths: expdir as given, then the names under it. A path
	 * that does not exist (yet) is compared as its directory's real path and its name. */
	skip_list sk = {.v = calloc(nskip + 1, sizeof *sk.v)};
	if (!sk.v)
		return -ENOMEM;
	char root[PATH_MAX];
	if (!realpath(expdir, root))
		snprintf(root, sizeof root, "%s", expdir);
	for (size_t i = 0; i < nskip; i++) {
		char dir[PATH_MAX], real[PATH_MAX];
		if (!skip[i])
			continue;
		if (realpath(skip[i], real)) {
			snprintf(sk.v[sk.n++], PATH_MAX, "%s", real);
			continue;
		}
		snprintf(dir, sizeof dir, "%s", skip[i]);
		char *slash = strrchr(dir, '/');
		const char *base = slash ? slash + 1 : dir;
		if (slash)
			*slash = '\0';
		if (realpath(slash ? (dir[0] ? dir : "/") : ".", real) &&
		    snprintf(sk.v[sk.n], PATH_MAX, "%s/%s", real, base) < PATH_MAX)
			sk.n++;
	}
	int r = hash_tree(&h, root, "", &sk, 0);
	free(sk.v);
	if (r < 0)
		return r;
	json_object *pj = lb_sweep_plan_json(p);
	hash_str(&h, json_object_to_json_string_ext(pj, JSON_C_TO_STRING_PLAIN));
	json_object_put(pj);
	for (size_t i = 0; i < nextra; i++)
		hash_str(&h, extra[i] ? extra[i] : "(null)");
	uint8_t dg[32];
	char hex[65];
	lb_sha256_final(&h, dg);
	lb_sha256_hex(dg, hex);
	memcpy(out, hex, LB_SWEEP_ID_LEN - 1);
	out[LB_SWEEP_ID_LEN - 1] = '\0';
	return 0;
}

int lb_sweep_dir_for(const char *runs_dir, const char *id, char **out)
{
	LB_AUTOFREE char *sweeps = NULL;
	int r = lb_records_place(runs_dir, "sweeps", &sweeps);
	if (r < 0)
		return r;
	return asprintf(out, "%s/%s", sweeps, id) < 0 ? -ENOMEM : 0;
}

int lb_sweep_resolve(const char *runs_dir, const char *id, char **dir, char *err, size_t errlen)
{
	*dir = NULL;
	LB_AUTOFREE char *top = NULL;
	if (lb_sweep_dir_for(runs_dir, "", &top) < 0)
		return -ENOMEM;
	top[strlen(top) - 1] = '\0'; /* the trailing slash */
	if (!id[0] || strchr(id, '/')) {
		snprintf(err, errlen, "'%s' is not a sweep id", id);
		return -EINVAL;
	}
	DIR *d = opendir(top);
	if (!d) {
		snprintf(err, errlen, "no sweep '%s': there is no sweeps directory %s", id, top);
		return -ENOENT;
	}
	char found[2][256] = {"", ""};
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strncmp(e->d_name, id, strlen(id)) == 0) {
			if (strcmp(e->d_name, id) == 0) { /* a whole id is never ambiguous */
				n = 1;
				snprintf(found[0], sizeof found[0], "%s", e->d_name);
				break;
			}
			if (n < 2)
				snprintf(found[n], sizeof found[n], "%s", e->d_name);
			n++;
		}
	closedir(d);
	if (n == 0) {
		snprintf(err, errlen, "no sweep '%s' in %s", id, top);
		return -ENOENT;
	}
	if (n > 1) {
		snprintf(err, errlen, "'%s' matches more than one sweep in %s (%s, %s%s); give more of "
			 "the id", id, top, found[0], found[1], n > 2 ? ", ..." : "");
		return -EEXIST;
	}
	return asprintf(dir, "%s/%s", top, found[0]) < 0 ? -ENOMEM : 0;
}
