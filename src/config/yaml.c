/* labbox.yaml reader. */
#include "labbox/config.h"
#include "labbox/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define CONFIG_MAX_BYTES (1 << 20)
#define CONFIG_MAX_ITEMS 4096

__attribute__((format(printf, 4, 5))) static int bad(char *err, size_t errlen,
						     const yaml_node_t *n, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n)
		snprintf(err, errlen, "labbox.yaml line %zu: %s", n->start_mark.line + 1, msg);
	else
		snprintf(err, errlen, "labbox.yaml: %s", msg);
	return -EINVAL;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int scalar_list(yaml_document_t *doc, yaml_node_t *n, const char *key, char ***out,
		       size_t *count, char *err, size_t errlen)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return bad(err, errlen, n, "'%s' must be a list", key);
	size_t len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (len > CONFIG_MAX_ITEMS)
		return bad(err, errlen, n, "'%s' has too many items", key);
	char **v = calloc(len + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	size_t i = 0;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		yaml_node_t *item = yaml_document_get_node(doc, *it);
		const char *s = scalar(item);
		if (!s) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return bad(err, errlen, item, "every item of '%s' must be a plain value", key);
		}
		v[i] = strdup(s);
		if (!v[i]) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return -ENOMEM;
		}
		i++;
	}
	*out = v;
	*count = len;
	return 0;
}

/* slurm: {partition, account, qos, memory, cpus, gpus}: the job's settings in mode slurm. */
static int apply_slurm(yaml_document_t *doc, yaml_node_t *val, lb_exp_config *c, char *err,
		       size_t errlen)
{
	if (val->type != YAML_MAPPING_NODE)
		return bad(err, errlen, val, "%s", "'slurm' must be a mapping (partition:, account:, "
						 "qos:, memory:, cpus:, gpus:)");
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *kn = yaml_document_get_node(doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(doc, p->value);
		const char *k = scalar(kn), *v = scalar(vn);
		if (!k)
			return bad(err, errlen, kn, "%s", "keys of 'slurm' must be plain strings");
		if (!v || !*v)
			return bad(err, errlen, vn, "'slurm: %s' must be a plain, non-empty value", k);
		char **dst = strcmp(k, "partition") == 0 ? &c->slurm_partition
			     : strcmp(k, "account") == 0 ? &c->slurm_account
			     : strcmp(k, "qos") == 0	 ? &c->slurm_qos
							 : NULL;
		if (dst) {
			if (!(*dst = strdup(v)))
				return -ENOMEM;
		} else if (strcmp(k, "memory") == 0) {
			if (lb_parse_size(v, &c->slurm_memory) < 0 || c->slurm_memory < ((uint64_t)32 << 20))
				return bad(err, errlen, vn, "'slurm: memory' must be a size of at least "
					   "32m such as 4g, not '%s'", v);
		} else if (strcmp(k, "cpus") == 0) {
			char *end;
			errno = 0;
			c->slurm_cpus = strtod(v, &end);
			if (errno || end == v || *end || !(c->slurm_cpus > 0) || c->slurm_cpus > 4096)
				return bad(err, errlen, vn, "'slurm: cpus' must be a positive number, "
					   "not '%s'", v);
		} else if (strcmp(k, "gpus") == 0) {
			long n;
			if (lb_parse_long(v, &n) < 0 || n < 0 || n > 1024)
				return bad(err, errlen, vn, "'slurm: gpus' must be a number of GPUs, "
					   "not '%s'", v);
			c->slurm_gpus = (unsigned)n;
		} else {
			return bad(err, errlen, kn, "unknown key 'slurm: %s' (known: partition, account, "
				   "qos, memory, cpus, gpus)", k);
		}
	}
	return 0;
}

static int apply_key(yaml_document_t *doc, const char *key, yaml_node_t *val, lb_exp_config *c,
		     char *err, size_t errlen)
{
	if (strcmp(key, "slurm") == 0)
		return apply_slurm(doc, val, c, err, errlen);
	if (strcmp(key, "env") == 0) {
		const char *s = scalar(val);
		if (!s || !*s)
			return bad(err, errlen, val, "'%s' must be a non-empty string", key);
		c->env = strdup(s);
		return c->env ? 0 : -ENOMEM;
	}
	if (strcmp(key, "language") == 0 || strcmp(key, "interpreter") == 0) {
		const char *s = scalar(val);
		char **dst = key[0] == 'l' ? &c->language : &c->interpreter;
		if (!s || !*s)
			return bad(err, errlen, val, "'%s' must be a non-empty string", key);
		*dst = strdup(s);
		return *dst ? 0 : -ENOMEM;
	}
	/* The Drive folder is a directory of the host that labbox writes into (the worker, the
	 * staged code of every job): the experiment's own file may not choose it. */
	if (strcmp(key, "drive") == 0)
		return bad(err, errlen, val,
			   "'drive' is not read from labbox.yaml: the Drive folder is a directory "
			   "of this host that labbox writes into, so it is named with --drive DIR");
	if (strcmp(key, "entry") == 0 || strcmp(key, "python") == 0 || strcmp(key, "mode") == 0 ||
	    strcmp(key, "image") == 0 || strcmp(key, "host") == 0 ||
	    strcmp(key, "base_image") == 0) {
		const char *s = scalar(val);
		if (!s || !*s)
			return bad(err, errlen, val, "'%s' must be a non-empty string", key);
		char **dst = key[0] == 'e' ? &c->entry : key[0] == 'p' ? &c->python
						: key[0] == 'i'	 ? &c->image
						: key[0] == 'h'	 ? &c->host
						: key[0] == 'b'	 ? &c->base_image : &c->mode;
		*dst = strdup(s);
		return *dst ? 0 : -ENOMEM;
	}
	if (strcmp(key, "args") == 0) {
		return scalar_list(doc, val, key, &c->args, &c->nargs, err, errlen);
	}
	if (strcmp(key, "metrics") == 0) {
		/* A scalar says the experiment reports none, so that a run that reports nothing
		 * can be told from one that lost its metrics (docs/decisions.md). */
		const char *s = scalar(val);
		if (s) {
			if (strcmp(s, "none") != 0)
				return bad(err, errlen, val,
					   "'%s' must be a list of metric names, or none for an "
					   "experiment that reports no metric", key);
			c->metrics_none = true;
			return 0;
		}
		return scalar_list(doc, val, key, &c->metrics, &c->nmetrics, err, errlen);
	}
	if (strcmp(key, "results") == 0) {
		int r = scalar_list(doc, val, key, &c->results, &c->nresults, err, errlen);
		for (size_t i = 0; r == 0 && i < c->nresults; i++)
			if (c->results[i][0] == '/' || strstr(c->results[i], ".."))
				r = bad(err, errlen, val,
					"results file '%s' must be a relative path inside the "
					"experiment directory", c->results[i]);
		return r;
	}
	if (strcmp(key, "budget") == 0) {
		const char *s = scalar(val);
		if (!s || lb_parse_seconds(s, &c->budget) < 0)
			return bad(err, errlen, val, "'%s' must be a positive number of seconds", key);
		return 0;
	}
	/* Read by the check module (lb_check_config_load_yaml) and the sweep module
	 * (lb_sweep_spec_load_yaml), which validate them themselves. */
	if (strcmp(key, "check") == 0 || strcmp(key, "plan") == 0 ||
	    strcmp(key, "sweep") == 0)
		return 0;
	return bad(err, errlen, val,
		   "unknown key '%s' (known: entry, args, python, env, language, interpreter, mode, image, base_image, host, slurm, budget, metrics, results, check, plan, sweep)", key);
}

/* A key given twice in any mapping (the top level, slurm:, check:, sweep:) is refused: YAML
 * parsers keep the last one silently, and a merged or hand-edited file whose first `budget:`
 * was the one meant would run with the other. Keys are compared as written. The one check of
 * it: it runs before any key is applied, so apply_key never sees a field set twice. */
typedef struct dup_key {
	const yaml_node_t *node;
	size_t pos; /* its place in the mapping */
} dup_key;

static int dup_key_cmp(const void *a, const void *b)
{
	const dup_key *x = a, *y = b;
	size_t lx = x->node->data.scalar.length, ly = y->node->data.scalar.length;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	int c = memcmp(x->node->data.scalar.value, y->node->data.scalar.value, lx);
	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Sorted, not compared pair by pair: a 1 MiB mapping of 80,000 keys took minutes that way.
 * The key named is the first (in the file) that repeats an earlier one, as before. */
static int duplicate_key(yaml_document_t *doc, char *err, size_t errlen)
{
	for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
		if (n->type != YAML_MAPPING_NODE)
			continue;
		yaml_node_pair_t *b = n->data.mapping.pairs.start, *e = n->data.mapping.pairs.top;
		size_t len = (size_t)(e - b), nk = 0;
		if (len < 2)
			continue;
		dup_key *keys = malloc(len * sizeof *keys);
		if (!keys)
			return -ENOMEM;
		for (yaml_node_pair_t *p = b; p < e; p++) {
			yaml_node_t *kp = yaml_document_get_node(doc, p->key);
			if (kp && kp->type == YAML_SCALAR_NODE)
				keys[nk++] = (dup_key){kp, (size_t)(p - b)};
		}
		qsort(keys, nk, sizeof *keys, dup_key_cmp);
		const yaml_node_t *first = NULL;
		size_t first_pos = SIZE_MAX;
		for (size_t i = 1; i < nk; i++) {
			const yaml_node_t *kp = keys[i].node, *kq = keys[i - 1].node;
			if (kq->data.scalar.length == kp->data.scalar.length &&
			    memcmp(kq->data.scalar.value, kp->data.scalar.value,
				   kp->data.scalar.length) == 0 &&
			    keys[i].pos < first_pos) {
				first = kp;
				first_pos = keys[i].pos;
			}
		}
		free(keys);
		if (first)
			return bad(err, errlen, first, "'%.*s' is given twice",
				   (int)(first->data.scalar.length < 64 ? first->data.scalar.length
									 : 64),
				   (const char *)first->data.scalar.value);
	}
	return 0;
}

int lb_yaml_depth_check(const char *text, size_t len, const char *file, char *err,
			size_t errlen)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	int r = 0;
	size_t depth = 0;
	/* Events, not yaml_parser_load: the walk stops at the first level too deep, so the
	 * scanner's cost per token stays bounded by the limit. */
	for (bool done = false; !done && r == 0;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev))
			break;
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > LB_YAML_MAX_DEPTH) {
				snprintf(err, errlen,
					 "%s line %zu: nested too deeply (more than %d levels of lists "
					 "and mappings; a labbox file needs a few)",
					 file, ev.start_mark.line + 1, LB_YAML_MAX_DEPTH);
				r = -E2BIG;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return r;
}

int lb_config_parse(const char *text, size_t len, lb_exp_config *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
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
	int r = 0;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	/* A NUL ("\0" in a quoted string) would silently cut the value it is in where C reads
	 * it: an argument, a path. */
	for (yaml_node_t *n = doc.nodes.start; root && r == 0 && n < doc.nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE &&
		    memchr(n->data.scalar.value, '\0', n->data.scalar.length))
			r = bad(err, errlen, n, "%s", "a value holds a NUL byte, which no argument "
							 "or path can carry");
	/* A second document would be ignored: say so instead. */
	yaml_document_t next;
	if (r == 0 && root) {
		if (!yaml_parser_load(&parser, &next)) {
			snprintf(err, errlen, "labbox.yaml line %zu: %s", parser.problem_mark.line + 1,
				 parser.problem ? parser.problem : "not valid YAML");
			r = -EINVAL;
		} else {
			yaml_node_t *nroot = yaml_document_get_root_node(&next);
			bool empty = nroot && nroot->type == YAML_SCALAR_NODE &&
				     nroot->data.scalar.length == 0; /* a trailing "---" */
			if (nroot && !empty)
				r = bad(err, errlen, nroot, "%s",
					"a second YAML document (after ---): labbox.yaml holds one");
			yaml_document_delete(&next);
		}
	}
	if (r < 0) {
		/* said above */
	} else if (!root) {
		/* An empty file is an empty configuration. */
	} else if (root->type != YAML_MAPPING_NODE) {
		r = bad(err, errlen, root, "%s", "the top level must be a mapping of keys to values");
	} else if ((r = duplicate_key(&doc, err, errlen)) < 0) {
		/* said */
	} else {
		for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
		     r == 0 && p < root->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(&doc, p->key);
			yaml_node_t *v = yaml_document_get_node(&doc, p->value);
			const char *key = scalar(k);
			if (!key || !v)
				r = bad(err, errlen, k, "%s", "keys must be plain strings");
			else
				r = apply_key(&doc, key, v, out, err, errlen);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (r < 0)
		lb_config_free(out);
	return r;
}

int lb_config_load(const char *expdir, lb_exp_config *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	LB_AUTOCLOSE int dfd = open(expdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", expdir, strerror(errno));
		return -errno;
	}
	static const char *const names[] = {"labbox.yaml", "labbox.yml"};
	for (size_t i = 0; i < 2; i++) {
		LB_AUTOFREE char *text = NULL;
		size_t len = 0;
		int r = lb_read_file_at(dfd, names[i], CONFIG_MAX_BYTES, &text, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			/* opened without following links: ELOOP is a link, not a loop */
			snprintf(err, errlen, "cannot read %s/%s: %s", expdir, names[i],
				 r == -EINVAL  ? "not a regular file"
				 : r == -ELOOP ? "it is a symbolic link, which labbox does not follow "
						 "(put the file itself in the experiment directory)"
					       : strerror(-r));
			return r;
		}
		return lb_config_parse(text, len, out, err, errlen);
	}
	return 0;
}

void lb_config_free(lb_exp_config *c)
{
	free(c->entry);
	free(c->python);
	free(c->env);
	free(c->language);
	free(c->interpreter);
	free(c->mode);
	free(c->image);
	free(c->host);
	free(c->slurm_partition);
	free(c->slurm_account);
	free(c->slurm_qos);
	free(c->base_image);
	for (size_t i = 0; i < c->nargs; i++)
		free(c->args[i]);
	free(c->args);
	for (size_t i = 0; i < c->nmetrics; i++)
		free(c->metrics[i]);
	free(c->metrics);
	for (size_t i = 0; i < c->nresults; i++)
		free(c->results[i]);
	free(c->results);
	memset(c, 0, sizeof *c);
}
