/* check: capability summaries of the target interpreter's standard library.
 *
 * Every module of the library is parsed with the check's own parser (stdlib_scan.c says what
 * it records); here the records are joined: module-level aliases (tempfile._os is os, star
 * imports), classes and their bases, and a fixpoint over the call graph gives each function,
 * method and class the capabilities (process, socket, code, import, native, write) it reaches.
 * Methods called on self dispatch through the class they are seen from, so a class that
 * inherits Handler.handle reaches its own emit and not every handler's.
 *
 * The result is a short text (the names with a capability, the aliases that lead to one and
 * the public method names every defining class gives a capability), kept per interpreter in
 * the user's cache and read back into a hash table for the check. */
#include "check_internal.h"
#include "labbox/env.h"
#include "labbox/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "labbox.stdlib/7\tMODULES\tSHA256\n", the sha256 (hex) of every byte after that line, then
 * the records. The first line alone says which summary it is (ck_stdlib_header). */
#define SUMMARY_MAGIC "labbox.stdlib/7"
#define SUMMARY_HEAD_MAX 128
#define MAX_MODULES 6000
#define MAX_FILE (4u << 20)
#define MAX_SUMMARY (64u << 20)
#define QMAX 512
#define CTX_DEPTH 12

/* ---- the lookup table (what the check uses) ------------------------------------------------- */

typedef struct sentry {
	const char *name;
	const char *via;    /* sink reached, or NULL */
	const char *target; /* alias target, or NULL */
	unsigned caps;
	bool method; /* a public method name (M line) */
	bool table;  /* a list of module names the library imports (T line) */
} sentry;

struct ck_stdlib {
	char *text; /* the summary; names point into it */
	sentry *tab;
	size_t cap, n;
	size_t modules, capable;
	uint8_t digest[32]; /* the header's sha256 of the records */
	char id[65]; /* which summary: the library's key, its module count and digest */
	/* A summary read back from the cache is read whole only when a lookup needs it (a check
	 * whose files are all answered by the cache needs none): until then only its header is
	 * known. ready is set, once, under mu, when the table is filled in. */
	atomic_bool ready;
	pthread_mutex_t mu;
	bool mu_init;
	bool drifted; /* the table filled in is not the summary id names (ck_stdlib_drifted) */
	int fd;       /* the kept summary, open since its header was read; -1 */
	char *dir, *key, *cache_dir;
};

/* A summary line's space-separated fields, at most four (the last keeps any spaces); the
 * line is cut in place. Returns how many. */
static int split_fields(char *line, char *f[4])
{
	int nf = 0;
	for (char *q = line; nf < 4;) {
		f[nf++] = q;
		char *sp = strchr(q, ' ');
		if (!sp)
			break;
		*sp = '\0';
		q = sp + 1;
	}
	return nf;
}

static unsigned long hash_str(const char *s, size_t n)
{
	unsigned long h = 5381;
	for (size_t i = 0; i < n; i++)
		h = h * 33 + (unsigned char)s[i];
	return h;
}

static sentry *tab_find(const ck_stdlib *s, const char *name, size_t n, bool method)
{
	if (!s->cap)
		return NULL;
	size_t i = hash_str(name, n) & (s->cap - 1);
	for (; s->tab[i].name; i = (i + 1) & (s->cap - 1))
		if (s->tab[i].method == method && strncmp(s->tab[i].name, name, n) == 0 &&
		    s->tab[i].name[n] == '\0')
			return &s->tab[i];
	return NULL;
}

void ck_stdlib_free(ck_stdlib *s)
{
	if (!s)
		return;
	if (s->mu_init)
		pthread_mutex_destroy(&s->mu);
	if (s->fd >= 0)
		close(s->fd);
	free(s->dir);
	free(s->key);
	free(s->cache_dir);
	free(s->text);
	free(s->tab);
	free(s);
}

static void digest_of(const char *data, size_t len, uint8_t out[32])
{
	lb_sha256 c;
	lb_sha256_init(&c);
	lb_sha256_update(&c, data, len);
	lb_sha256_final(&c, out);
}

static ck_stdlib *stdlib_new(void)
{
	ck_stdlib *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->fd = -1;
	atomic_init(&s->ready, true);
	return s;
}

int ck_stdlib_header(const char *data, size_t len, size_t *modules, uint8_t digest[32],
		     size_t *head_len)
{
	static const char magic[] = SUMMARY_MAGIC "\t";
	size_t k = sizeof magic - 1, i = k, v = 0, digits = 0;
	if (len < k || memcmp(data, magic, k) != 0)
		return -EINVAL;
	while (i < len && data[i] >= '0' && data[i] <= '9' && digits < 7)
		v = v * 10 + (size_t)(data[i++] - '0'), digits++;
	if (!digits || v > MAX_MODULES || i + 66 > len || data[i] != '\t' || data[i + 65] != '\n')
		return -EINVAL;
	i++;
	for (size_t b = 0; b < 32; b++) {
		int hv[2];
		for (int h = 0; h < 2; h++) {
			char c = data[i + 2 * b + (size_t)h];
			hv[h] = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (hv[h] < 0)
				return -EINVAL;
		}
		digest[b] = (uint8_t)(hv[0] << 4 | hv[1]);
	}
	*modules = v;
	*head_len = i + 65;
	return 0;
}

/* Takes text. Lines: "N name caps via", "A name target", "M meth caps via", after the header,
 * whose digest they must have. */
int ck_stdlib_parse(char *text, ck_stdlib **out)
{
	ck_stdlib *s = stdlib_new();
	if (!s) {
		free(text);
		return -ENOMEM;
	}
	s->text = text;
	size_t len = strlen(text), head = 0;
	uint8_t d[32];
	if (ck_stdlib_header(text, len, &s->modules, s->digest, &head) < 0 ||
	    (digest_of(text + head, len - head, d), memcmp(d, s->digest, sizeof d) != 0)) {
		ck_stdlib_free(s);
		return -EINVAL;
	}
	size_t lines = 0;
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	s->cap = 64;
	while (s->cap < lines * 2 + 2)
		s->cap *= 2;
	s->tab = calloc(s->cap, sizeof *s->tab);
	if (!s->tab) {
		ck_stdlib_free(s);
		return -ENOMEM;
	}
	char *save = NULL, *line;
	for (char *p = text + head; (line = strtok_r(p, "\n", &save)); p = NULL) {
		char *f[4] = {0};
		int nf = split_fields(line, f);
		if (nf < 3 || (line[0] != 'A' && nf < 4) || f[0][1])
			continue;
		bool method = f[0][0] == 'M';
		size_t nl = strlen(f[1]);
		if (tab_find(s, f[1], nl, method))
			continue;
		size_t i = hash_str(f[1], nl) & (s->cap - 1);
		while (s->tab[i].name)
			i = (i + 1) & (s->cap - 1);
		sentry *e = &s->tab[i];
		e->name = f[1];
		e->method = method;
		if (f[0][0] == 'A') {
			e->target = f[2];
		} else if (f[0][0] == 'T') {
			e->table = true;
			e->caps = (unsigned)strtoul(f[2], NULL, 10);
			e->via = f[3];
		} else {
			e->caps = (unsigned)strtoul(f[2], NULL, 10);
			e->via = f[3];
			if (!method && (e->caps & CK_CAP_FINDING))
				s->capable++;
		}
		s->n++;
	}
	*out = s;
	return 0;
}

static const ck_stdlib *ready(const ck_stdlib *s);

void ck_stdlib_counts(const ck_stdlib *s, size_t *modules, size_t *capable)
{
	s = ready(s);
	*modules = s ? s->modules : 0;
	*capable = s ? s->capable : 0;
}

bool ck_stdlib_rename(const ck_stdlib *s, const char *q, char *out, size_t outlen)
{
	s = ready(s);
	if (!s || snprintf(out, outlen, "%s", q) >= (int)outlen)
		return false;
	bool changed = false;
	for (int round = 0; round < 8; round++) {
		bool again = false;
		/* the longest prefix that is an alias: logging.handlers.os -> os */
		for (size_t k = strlen(out); k > 0; k--) {
			if (out[k] != '\0' && out[k] != '.')
				continue;
			const sentry *e = tab_find(s, out, k, false);
			if (!e)
				continue;
			if (!e->target)
				break;
			char tmp[QMAX];
			if (snprintf(tmp, sizeof tmp, "%s%s", e->target, out + k) >= (int)sizeof tmp)
				return false;
			if (strcmp(tmp, out) == 0)
				break;
			snprintf(out, outlen, "%s", tmp);
			again = changed = true;
			break;
		}
		if (!again)
			break;
	}
	return changed;
}

unsigned ck_stdlib_caps(const ck_stdlib *s, const char *q, const char **via)
{
	s = ready(s);
	const sentry *e = s ? tab_find(s, q, strlen(q), false) : NULL;
	if (!e || e->target || e->table)
		return 0;
	*via = e->via;
	return e->caps;
}

bool ck_stdlib_has_table(const ck_stdlib *s, const char *mod)
{
	s = ready(s);
	size_t ml = strlen(mod);
	for (size_t i = 0; s && i < s->cap; i++) {
		const sentry *e = &s->tab[i];
		if (e->name && e->table && strncmp(e->name, mod, ml) == 0 && e->name[ml] == '.')
			return true;
	}
	return false;
}

const char *ck_stdlib_table(const ck_stdlib *s, const char *q, bool within)
{
	s = ready(s);
	if (!s)
		return NULL;
	/* the table itself or, within, anything taken from it: dbm._names.append */
	for (size_t k = strlen(q); k > 0; k--) {
		if (!within && q[k] != '\0')
			break;
		if (q[k] != '\0' && q[k] != '.')
			continue;
		const sentry *e = tab_find(s, q, k, false);
		if (e && e->table)
			return e->via;
	}
	return NULL;
}

unsigned ck_stdlib_method_caps(const ck_stdlib *s, const char *meth, const char **via)
{
	s = ready(s);
	const sentry *e = s ? tab_find(s, meth, strlen(meth), true) : NULL;
	if (!e)
		return 0;
	*via = e->via;
	return e->caps;
}

/* ---- reading the library ---------------------------------------------------------------------- */

typedef struct modfile {
	char *path, *mod;
	bool pkg;
	lb_buf rec;
	int rc;
} modfile;

typedef struct modlist {
	modfile *v;
	size_t n, cap;
} modlist;

/* Not the library an experiment calls: tests, the IDE, GUIs, 2to3, installed packages. */
static bool skip_entry(const char *name)
{
	static const char *const skip[] = {
		"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "site-packages",
		"dist-packages", "__pycache__", "ensurepip", "venv", "config-3", "pydoc_data",
	};
	if (name[0] == '.' || strchr(name, '-'))
		return true;
	for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
		if (strcmp(name, skip[i]) == 0)
			return true;
	return false;
}

static int mods_add(modlist *m, const char *path, const char *mod, bool pkg)
{
	if (m->n >= MAX_MODULES)
		return -E2BIG;
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 256;
		modfile *v = realloc(m->v, nc * sizeof *v);
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = nc;
	}
	modfile *f = &m->v[m->n];
	memset(f, 0, sizeof *f);
	f->path = strdup(path);
	f->mod = strdup(mod);
	f->pkg = pkg;
	if (!f->path || !f->mod) {
		free(f->path);
		free(f->mod);
		return -ENOMEM;
	}
	m->n++;
	return 0;
}

static int walk_lib(modlist *m, const char *dir, const char *prefix, int depth)
{
	if (depth > 6)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return depth == 0 ? -errno : 0;
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (skip_entry(de->d_name))
			continue;
		char path[PATH_MAX], mod[QMAX];
		if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path)
			continue;
		struct stat st;
		if (lstat(path, &st) < 0)
			continue;
		size_t nl = strlen(de->d_name);
		if (S_ISDIR(st.st_mode)) {
			char init[PATH_MAX + 16];
			snprintf(init, sizeof init, "%s/__init__.py", path);
			if (access(init, R_OK) != 0 ||
			    snprintf(mod, sizeof mod, "%s%s", prefix, de->d_name) >= (int)sizeof mod)
				continue;
			r = mods_add(m, init, mod, true);
			char sub[QMAX + 1];
			snprintf(sub, sizeof sub, "%s.", mod);
			if (r == 0)
				r = walk_lib(m, path, sub, depth + 1);
		} else if (S_ISREG(st.st_mode) && nl > 3 && strcmp(de->d_name + nl - 3, ".py") == 0 &&
			   strcmp(de->d_name, "__init__.py") != 0) {
			if (snprintf(mod, sizeof mod, "%s%.*s", prefix, (int)(nl - 3), de->d_name) <
			    (int)sizeof mod)
				r = mods_add(m, path, mod, false);
		}
	}
	closedir(d);
	return r;
}

typedef struct scanjob {
	modlist *m;
	const ck_syntax *syn;
	atomic_size_t next;
} scanjob;

static void *scan_worker(void *arg)
{
	scanjob *j = arg;
	TSParser *p = ts_parser_new();
	if (!p)
		return NULL;
	ts_parser_set_language(p, j->syn->lang);
	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);
		if (i >= j->m->n)
			break;
		modfile *f = &j->m->v[i];
		char *data = NULL;
		size_t len = 0;
		if (lb_read_file_at(AT_FDCWD, f->path, MAX_FILE, &data, &len) < 0)
			continue; /* an unreadable module is one the experiment cannot import either */
		ts_parser_set_language(p, j->syn->lang);
		TSTree *t = ts_parser_parse_string(p, NULL, data, (uint32_t)len);
		if (t) {
			f->rc = ck_stdlib_scan(j->syn, ts_tree_root_node(t), data, len, f->mod, f->pkg,
					       &f->rec);
			ts_tree_delete(t);
		}
		free(data);
	}
	ts_parser_delete(p);
	return NULL;
}

/* ---- joining the records ---------------------------------------------------------------------- */

enum { N_NONE, N_FUNC, N_CLASS, N_ALIAS, N_MODULE };
enum { E_PLAIN, E_SELF, E_SUPER, E_REF };

typedef struct edge {
	int kind;
	const char *to; /* plain: name; self/super: method name */
	int tnode;      /* plain: resolved node, -1 */
	const char *args; /* plain: "NPOS[,kw...]" the call passes (K records), NULL: unknown */
} edge;

typedef struct node {
	const char *name;
	int kind;
	bool stub, leaf;
	int cls;            /* a method's class, -1 */
	const char *target; /* alias */
	const char *bases;  /* class: comma-separated, raw */
	int *base;
	size_t nbase;
	int *stars; /* module: star-imported module names as nodes */
	size_t nstars;
	int *meth; /* class: its methods */
	size_t nmeth;
	edge *e;
	size_t ne, cape;
	unsigned caps, dcaps; /* reached; direct (its own sink calls) */
	/* sinks reached only through these parameters ("pos:name,..."; P records): a call that
	 * passes none of them does not reach pdcaps. capsnp: caps without them. */
	unsigned pdcaps, capsnp;
	const char *pparams, *pvia;
	bool table; /* a module-level list of module names the library imports (T records) */
	int xd; /* calls from here to the nearest code or import sink */
	const char *via, *dvia;
} node;

typedef struct graph {
	node *v;
	size_t n, cap;
	size_t *tab; /* index+1 by hash */
	size_t tcap;
	int err;
} graph;

static int g_find(const graph *g, const char *name, size_t n)
{
	size_t i = hash_str(name, n) & (g->tcap - 1);
	for (; g->tab[i]; i = (i + 1) & (g->tcap - 1)) {
		const node *x = &g->v[g->tab[i] - 1];
		if (strncmp(x->name, name, n) == 0 && x->name[n] == '\0')
			return (int)(g->tab[i] - 1);
	}
	return -1;
}

static int g_add(graph *g, const char *name)
{
	int k = g_find(g, name, strlen(name));
	if (k >= 0)
		return k;
	if (g->n * 2 >= g->tcap)
		return g->err = -E2BIG, -1;
	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 4096;
		node *v = realloc(g->v, nc * sizeof *v);
		if (!v)
			return g->err = -ENOMEM, -1;
		g->v = v;
		g->cap = nc;
	}
	node *x = &g->v[g->n];
	memset(x, 0, sizeof *x);
	x->name = name;
	x->cls = -1;
	size_t i = hash_str(name, strlen(name)) & (g->tcap - 1);
	while (g->tab[i])
		i = (i + 1) & (g->tcap - 1);
	g->tab[i] = ++g->n;
	return (int)(g->n - 1);
}

static void add_edge(graph *g, int from, int kind, const char *to, const char *args)
{
	node *x = &g->v[from];
	if (x->ne == x->cape) {
		size_t nc = x->cape ? x->cape * 2 : 8;
		edge *v = realloc(x->e, nc * sizeof *v);
		if (!v) {
			g->err = -ENOMEM;
			return;
		}
		x->e = v;
		x->cape = nc;
	}
	x->e[x->ne++] = (edge){.kind = kind, .to = to, .tnode = -1, .args = args};
}

static int push_int(int **v, size_t *n, int x)
{
	int *nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = x;
	*v = nv;
	return 0;
}

static int mro_lookup(const graph *g, int cls, const char *m, int depth);

/* The node a dotted name stands for, through aliases, star imports and class members. */
static int g_resolve(const graph *g, const char *name, int depth)
{
	if (depth > 12)
		return -1;
	size_t len = strlen(name);
	int k = g_find(g, name, len);
	if (k >= 0) {
		const node *x = &g->v[k];
		if (x->kind == N_ALIAS)
			return strcmp(x->target, name) == 0 ? -1 : g_resolve(g, x->target, depth + 1);
		return x->kind == N_FUNC || x->kind == N_CLASS ? k : -1;
	}
	for (size_t p = len; p-- > 0;) {
		if (name[p] != '.')
			continue;
		int pre = g_find(g, name, p);
		if (pre < 0)
			continue;
		const node *x = &g->v[pre];
		char buf[QMAX];
		if (x->kind == N_ALIAS) {
			if (snprintf(buf, sizeof buf, "%s%s", x->target, name + p) >= (int)sizeof buf)
				return -1;
			return g_resolve(g, buf, depth + 1);
		}
		if (x->kind == N_CLASS && !strchr(name + p + 1, '.'))
			return mro_lookup(g, pre, name + p + 1, 0);
		if (x->kind == N_MODULE) {
			for (size_t s = 0; s < x->nstars; s++) {
				const node *st = &g->v[x->stars[s]];
				if (snprintf(buf, sizeof buf, "%s%s", st->name, name + p) >=
				    (int)sizeof buf)
					continue;
				int r = g_resolve(g, buf, depth + 1);
				if (r >= 0)
					return r;
			}
		}
		return -1;
	}
	return -1;
}

/* The method m as an instance of class cls finds it (its bases in order, depth first). */
static int mro_lookup(const graph *g, int cls, const char *m, int depth)
{
	if (cls < 0 || depth > 10)
		return -1;
	char buf[QMAX];
	if (snprintf(buf, sizeof buf, "%s.%s", g->v[cls].name, m) >= (int)sizeof buf)
		return -1;
	int k = g_find(g, buf, strlen(buf));
	if (k >= 0 && g->v[k].kind == N_FUNC)
		return k;
	for (size_t i = 0; i < g->v[cls].nbase; i++) {
		int r = mro_lookup(g, g->v[cls].base[i], m, depth + 1);
		if (r >= 0)
			return r;
	}
	return -1;
}

static void read_records(graph *g, char *text, bool edges)
{
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && !g->err;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = {0};
		int nf = split_fields(line, f);
		char t = f[0][0];
		if (!edges) {
			if (t == 'F' && nf >= 4) {
				int k = g_add(g, f[1]);
				if (k < 0)
					break;
				g->v[k].kind = N_FUNC;
				g->v[k].stub = f[2][0] == '1';
				if (strcmp(f[3], "-") != 0) {
					int c = g_add(g, f[3]);
					if (c < 0)
						break;
					g->v[k].cls = c;
				}
			} else if (t == 'C' && nf >= 3) {
				int k = g_add(g, f[1]);
				if (k < 0)
					break;
				g->v[k].kind = N_CLASS;
				g->v[k].bases = strcmp(f[2], "-") ? f[2] : NULL;
			} else if (t == 'A' && nf >= 3) {
				int k = g_add(g, f[1]);
				if (k >= 0 && g->v[k].kind == N_NONE) {
					g->v[k].kind = N_ALIAS;
					g->v[k].target = f[2];
				} else if (k >= 0 && g->v[k].kind == N_ALIAS) {
					g->v[k].target = f[2]; /* the later binding, as Python sees it */
				}
			} else if (t == 'T' && nf >= 2) {
				int k = g_add(g, f[1]);
				if (k >= 0)
					g->v[k].table = true;
			} else if (t == 'X' && nf >= 3) {
				int k = g_add(g, f[1]), s = g_add(g, f[2]);
				if (k < 0 || s < 0)
					break;
				if (g->v[s].kind == N_NONE)
					g->v[s].kind = N_MODULE;
				if (push_int(&g->v[k].stars, &g->v[k].nstars, s) < 0)
					g->err = -ENOMEM;
			}
			continue;
		}
		int from = nf >= 3 ? g_find(g, f[1], strlen(f[1])) : -1;
		if (from < 0)
			continue;
		if (t == 'S' && nf >= 4) {
			unsigned caps = (unsigned)strtoul(f[2], NULL, 10);
			if (caps & ~g->v[from].dcaps & CK_CAP_FINDING || !g->v[from].dvia)
				g->v[from].dvia = f[3];
			g->v[from].dcaps |= caps;
		} else if (t == 'P' && nf >= 4) {
			char *at = strchr(f[3], '@');
			if (!at)
				continue;
			*at = '\0';
			g->v[from].pdcaps |= (unsigned)strtoul(f[2], NULL, 10);
			if (!g->v[from].pvia)
				g->v[from].pvia = f[3];
			/* two such sinks on other parameters: either passed reaches one */
			if (!g->v[from].pparams)
				g->v[from].pparams = at + 1;
			else if (strcmp(g->v[from].pparams, at + 1) != 0)
				g->v[from].dcaps |= (unsigned)strtoul(f[2], NULL, 10);
		} else if (t == 'E' || t == 'R' || (t == 'K' && nf >= 4)) {
			add_edge(g, from, t == 'R' ? E_REF : E_PLAIN, f[2], t == 'K' ? f[3] : NULL);
		} else if ((t == 'V' || t == 'U') && nf >= 4) {
			add_edge(g, from, t == 'V' ? E_SELF : E_SUPER, f[3], NULL);
		}
	}
}

/* Module nodes (for star imports) and class bases, once every record is in. */
static void link_graph(graph *g)
{
	for (size_t i = 0; i < g->n && !g->err; i++) {
		node *x = &g->v[i];
		if (x->kind != N_CLASS || !x->bases)
			continue;
		char buf[QMAX];
		const char *p = x->bases;
		while (*p) {
			const char *c = strchr(p, ',');
			size_t l = c ? (size_t)(c - p) : strlen(p);
			if (l < sizeof buf) {
				memcpy(buf, p, l);
				buf[l] = '\0';
				int b = g_resolve(g, buf, 0);
				if (b >= 0 && g->v[b].kind == N_CLASS && b != (int)i &&
				    push_int(&x->base, &x->nbase, b) < 0)
					g->err = -ENOMEM;
			}
			p += l + (c ? 1 : 0);
		}
	}
	for (size_t i = 0; i < g->n; i++) {
		if (g->v[i].kind == N_CLASS)
			g->v[i].leaf = true;
		if (g->v[i].kind == N_FUNC && g->v[i].cls >= 0 &&
		    push_int(&g->v[g->v[i].cls].meth, &g->v[g->v[i].cls].nmeth, (int)i) < 0)
			g->err = -ENOMEM;
	}
	for (size_t i = 0; i < g->n; i++)
		for (size_t b = 0; b < g->v[i].nbase; b++)
			g->v[g->v[i].base[b]].leaf = false;
}

/* The sink a name is when it is no function of the library (a C function, a module). */
static unsigned name_caps(const char *q)
{
	switch (ck_classify(q, false, LB_CHECK_STANDARD)) {
	case R_PROCESS:
	case R_SUBPROCESS:
	case R_PTY:
		return strncmp(q, "os.kill", 7) == 0 ? 0 : CK_CAP_PROCESS;
	case R_NETWORK:
		return CK_CAP_SOCKET;
	case R_NATIVE:
		return CK_CAP_NATIVE;
	default:
		return 0;
	}
}

/* Calls that never run here, and what they would bring in. platform.uname() asks
 * os.uname(), and only where that is missing or empty (not on Linux, where labbox runs)
 * does it run `ver` (_syscmd_ver), look up the host name through a socket (_node) or ask
 * Windows and Java. What it returns has a processor field that runs `uname -p` when it is
 * read: platform.system(), node(), release(), version() and machine() read one other field
 * of it, and never that one. Followed, both made `platform.system() == "Darwin"` read as
 * starting a process. platform.uname() itself (its result's processor can be read),
 * processor() and platform() (which read it) stay as they are. */
static const char *const not_here[][2] = {
	{"platform.system", "platform.uname"},
	{"platform.node", "platform.uname"},
	{"platform.release", "platform.uname"},
	{"platform.version", "platform.uname"},
	{"platform.machine", "platform.uname"},
	{"platform.uname", "platform._syscmd_ver"},
	{"platform.uname", "platform._node"},
	{"platform.uname", "platform.win32_ver"},
	{"platform.uname", "platform._get_machine_win32"},
	{"platform.uname", "platform.java_ver"},
};

static bool call_not_here(const graph *g, const node *x, int target)
{
	if (target < 0 || !x->name)
		return false;
	for (size_t i = 0; i < sizeof not_here / sizeof *not_here; i++)
		if (strcmp(x->name, not_here[i][0]) == 0 &&
		    strcmp(g->v[target].name, not_here[i][1]) == 0)
			return true;
	return false;
}

static void resolve_edges(graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		node *x = &g->v[i];
		for (size_t k = 0; k < x->ne; k++) {
			edge *e = &x->e[k];
			if (e->kind == E_PLAIN || e->kind == E_REF) {
				int t = g_resolve(g, e->to, 0);
				if (call_not_here(g, x, t)) {
					e->tnode = -1;
					continue;
				}
			}
			if (e->kind == E_REF) {
				/* a function handed on is called later; a class named is not made */
				e->tnode = g_resolve(g, e->to, 0);
				if (e->tnode >= 0 && g->v[e->tnode].kind != N_FUNC)
					e->tnode = -1;
			} else if (e->kind == E_PLAIN) {
				e->tnode = g_resolve(g, e->to, 0);
				if (e->tnode >= 0 && g->v[e->tnode].kind == N_CLASS)
					continue;
				if (e->tnode < 0) {
					unsigned c = name_caps(e->to);
					if (c && !(x->dcaps & c)) {
						x->dcaps |= c;
						if (!x->dvia)
							x->dvia = e->to;
					}
				}
			} else if (x->cls >= 0) {
				int c = x->cls;
				if (e->kind == E_SUPER) {
					e->tnode = -1;
					for (size_t b = 0; b < g->v[c].nbase && e->tnode < 0; b++)
						e->tnode = mro_lookup(g, g->v[c].base[b], e->to, 0);
				} else {
					e->tnode = mro_lookup(g, c, e->to, 0);
				}
			}
		}
	}
}

/* Code and import sinks count two calls deep: a helper that runs or imports what it is
 * handed (bdb.run, timeit.Timer, pkgutil.resolve_name) and its wrappers. Further away they are
 * the library's own machinery (inspect.signature evaluating a builtin's text signature, which
 * every @dataclass reaches) and no longer the caller's code. */
#define XD_MAX 2
#define XCAPS (CK_CAP_EXEC | CK_CAP_IMPORT)

/* Whether a call passes any of the parameters y's parameter-bound sinks are made from:
 * `iter_importers()` leaves fullname at its literal default "", and imports nothing. A call
 * whose arguments are not known (*args, **kw, a callback, self.m()) passes them all. */
static bool passes(const edge *e, const node *y)
{
	if (!y->pdcaps || !y->pparams || !e || e->kind != E_PLAIN || !e->args || y->cls >= 0)
		return true;
	char *end;
	long npos = strtol(e->args, &end, 10);
	const char *kws = end; /* ",kw,kw" */
	for (const char *p = y->pparams; *p;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		long pos = strtol(p, NULL, 10);
		const char *colon = memchr(p, ':', l);
		if (pos >= 0 && pos < npos)
			return true;
		if (colon) {
			size_t nl = l - (size_t)(colon + 1 - p);
			for (const char *k = kws; *k == ',';) {
				const char *kc = strchr(k + 1, ',');
				size_t kl = kc ? (size_t)(kc - k - 1) : strlen(k + 1);
				if (kl == nl && strncmp(k + 1, colon + 1, nl) == 0)
					return true;
				if (!kc)
					break;
				k = kc;
			}
		}
		p += l + (c ? 1 : 0);
	}
	return false;
}

/* What y gives a caller through edge e (NULL: an instance's method, a base): its own
 * parameter-bound sinks only when the call passes one of those parameters. */
static unsigned through(const edge *e, const node *y)
{
	return y->caps | (passes(e, y) ? y->pdcaps : 0);
}

static bool merge_step(node *x, const node *y, unsigned yc, int step)
{
	if (yc & XCAPS) {
		if (y->xd + step > XD_MAX)
			yc &= ~(unsigned)XCAPS;
		else if (y->xd + step < x->xd)
			x->xd = y->xd + step;
	}
	unsigned add = yc & ~x->caps;
	if (!add)
		return false;
	const char *yv = y->via ? y->via : y->pvia;
	if (!x->via || ((add & CK_CAP_FINDING) && !(x->caps & CK_CAP_FINDING)))
		x->via = (add & ~y->caps) && y->pvia ? y->pvia : yv;
	x->caps |= add;
	return true;
}

static void fixpoint(graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		g->v[i].caps = g->v[i].dcaps;
		g->v[i].via = g->v[i].dvia;
		g->v[i].xd = (g->v[i].dcaps | g->v[i].pdcaps) & XCAPS ? 0 : 1000;
	}
	/* caps leaves out a node's own parameter-bound sinks (pdcaps) while the fixpoint runs:
	 * each edge adds them or not (through); a class has every method whole */
	for (int round = 0; round < 200; round++) {
		bool changed = false;
		for (size_t i = 0; i < g->n; i++) {
			node *x = &g->v[i];
			for (size_t k = 0; k < x->ne; k++)
				if (x->e[k].tnode >= 0) {
					const node *y = &g->v[x->e[k].tnode];
					changed |= merge_step(x, y, through(&x->e[k], y), 1);
				}
			if (x->kind == N_FUNC && x->cls >= 0)
				changed |= merge_step(&g->v[x->cls], x, through(NULL, x), 0);
			if (x->kind == N_CLASS)
				for (size_t b = 0; b < x->nbase; b++)
					changed |= merge_step(x, &g->v[x->base[b]],
							      through(NULL, &g->v[x->base[b]]), 0);
		}
		if (!changed)
			break;
	}
	/* as the experiment sees it, a function can be called with any argument */
	for (size_t i = 0; i < g->n; i++) {
		node *x = &g->v[i];
		x->capsnp = x->caps;
		if (x->pdcaps & ~x->caps & CK_CAP_FINDING && !(x->caps & CK_CAP_FINDING))
			x->via = x->pvia;
		x->caps |= x->pdcaps;
	}
}

/* What ctx_caps found per method for one class: each method once, and a cycle of self-calls
 * ends where it started. */
typedef struct memo {
	int *key; /* method node + 1; 0 empty */
	unsigned *caps;
	const char **via;
	uint8_t *state; /* 1 in progress, 2 done (bit 4: ended in a stub) */
	size_t cap, used;
} memo;

static size_t memo_slot(memo *mm, int m)
{
	size_t i = ((size_t)m * 2654435761u) & (mm->cap - 1);
	while (mm->key[i] && mm->key[i] != m + 1)
		i = (i + 1) & (mm->cap - 1);
	return i;
}

static void memo_reset(memo *mm)
{
	memset(mm->key, 0, mm->cap * sizeof *mm->key);
	mm->used = 0;
}

/* Method m (a node) run on an instance of class cls: its own calls as the fixpoint has them,
 * and its self.calls dispatched through cls (which may override them). stub: the dispatch
 * ended in an abstract method (raise NotImplementedError), so cls cannot do this at all. */
static unsigned ctx_caps(const graph *g, memo *mm, int cls, int m, int depth, bool *stub,
			 const char **via)
{
	if (m < 0 || depth > CTX_DEPTH)
		return 0;
	const node *x = &g->v[m];
	if (x->stub) {
		*stub = true;
		return 0;
	}
	size_t slot = memo_slot(mm, m);
	if (!mm->key[slot] && mm->used * 4 >= mm->cap * 3)
		return 0; /* a class with that many methods in play: as deep as labbox looks */
	if (mm->key[slot]) {
		if (mm->state[slot] & 16)
			*stub = true;
		if (!*via)
			*via = mm->via[slot];
		return mm->state[slot] & 2 ? mm->caps[slot] : 0;
	}
	mm->key[slot] = m + 1;
	mm->state[slot] = 1;
	mm->used++;
	unsigned caps = x->dcaps | x->pdcaps;
	const char *v0 = caps & CK_CAP_FINDING ? (x->dvia ? x->dvia : x->pvia) : NULL;
	bool any_stub = false;
	for (size_t k = 0; k < x->ne; k++) {
		const edge *e = &x->e[k];
		unsigned c = 0;
		const char *v = NULL;
		if ((e->kind == E_PLAIN || e->kind == E_REF || e->kind == E_SUPER) &&
		    e->tnode >= 0) {
			c = passes(e, &g->v[e->tnode]) ? g->v[e->tnode].caps
							 : g->v[e->tnode].capsnp;
			v = g->v[e->tnode].via;
			if (g->v[e->tnode].xd + 1 + depth > XD_MAX)
				c &= ~(unsigned)XCAPS;
		} else if (e->kind == E_SELF) {
			bool st = false;
			c = ctx_caps(g, mm, cls, mro_lookup(g, cls, e->to, 0), depth + 1, &st, &v);
			any_stub |= st && !c;
			if (depth + 1 > XD_MAX)
				c &= ~(unsigned)XCAPS;
		}
		if (c & ~caps & CK_CAP_FINDING && !v0)
			v0 = v;
		caps |= c;
	}
	slot = memo_slot(mm, m);
	mm->caps[slot] = caps;
	mm->via[slot] = v0;
	mm->state[slot] = 2 | (any_stub ? 16 : 0);
	if (any_stub)
		*stub = true;
	if (!*via)
		*via = v0;
	return caps;
}

static const char *last_part(const char *q)
{
	const char *d = strrchr(q, '.');
	return d ? d + 1 : q;
}

/* ---- the summary ------------------------------------------------------------------------------ */

typedef struct mname {
	const char *name; /* into a node's name */
	unsigned caps;
	const char *via;
	bool seen;
} mname;

typedef struct mtab {
	mname *v;
	size_t cap;
} mtab;

static mname *mtab_get(mtab *t, const char *name)
{
	size_t n = strlen(name);
	size_t i = hash_str(name, n) & (t->cap - 1);
	for (; t->v[i].name; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->v[i].name, name) == 0)
			return &t->v[i];
	t->v[i].name = name;
	return &t->v[i];
}

typedef struct visit {
	int *v;
	size_t n;
} visit;

/* Class cls as its instances are: every method they have, each with self as cls. */
static unsigned class_caps(const graph *g, memo *mm, int cls, int at, int depth, mtab *mt,
			   visit *seen, const char **via)
{
	if (at < 0 || depth > 10)
		return 0;
	for (size_t i = 0; i < seen->n; i++)
		if (seen->v[i] == at)
			return 0;
	if (push_int(&seen->v, &seen->n, at) < 0)
		return 0;
	unsigned caps = 0;
	const node *c = &g->v[at];
	for (size_t i = 0; i < c->nmeth; i++) {
		int m = c->meth[i];
		const char *name = last_part(g->v[m].name);
		if (mro_lookup(g, cls, name, 0) != m)
			continue; /* overridden in a class nearer to cls */
		bool stub = false;
		const char *v = NULL;
		unsigned mc = ctx_caps(g, mm, cls, m, 0, &stub, &v);
		if (mc & ~caps & CK_CAP_FINDING && !*via)
			*via = v;
		caps |= mc;
		/* distutils (gone in 3.12) spawns compilers from methods named like anything else:
		 * preprocess, link, spawn */
		if (mt && g->v[cls].leaf && name[0] != '_' && !(stub && !mc) &&
		    strncmp(g->v[cls].name, "distutils.", 10) != 0) {
			mname *e = mtab_get(mt, name);
			if (!e->seen) {
				e->caps = mc;
				e->via = v;
				e->seen = true;
			} else {
				e->caps &= mc;
			}
		}
	}
	for (size_t b = 0; b < c->nbase; b++) {
		unsigned bc = class_caps(g, mm, cls, c->base[b], depth + 1, mt, seen, via);
		caps |= bc;
	}
	return caps;
}

static bool g_rename(const graph *g, const char *q, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", q);
	for (int round = 0; round < 8; round++) {
		bool again = false;
		for (size_t k = strlen(out); k > 0; k--) {
			if (out[k] != '\0' && out[k] != '.')
				continue;
			int e = g_find(g, out, k);
			if (e < 0)
				continue;
			if (g->v[e].kind != N_ALIAS)
				break;
			char tmp[QMAX];
			if (snprintf(tmp, sizeof tmp, "%s%s", g->v[e].target, out + k) >= (int)sizeof tmp)
				return false;
			if (strcmp(tmp, out) == 0)
				break;
			snprintf(out, outlen, "%s", tmp);
			again = true;
			break;
		}
		if (!again)
			break;
	}
	return true;
}

/* subprocess_shell, connectToProcess: a name no research object has by accident, unlike
 * processor or spawn. */
static bool compound(const char *name)
{
	for (const char *p = name + 1; *p; p++)
		if (*p == '_' || (*p >= 'A' && *p <= 'Z'))
			return true;
	return false;
}

static int summary_text(graph *g, size_t modules, lb_buf *out)
{
	(void)modules;
	int r = 0;
	mtab mt = {0};
	mt.cap = 1;
	while (mt.cap < g->n * 2 + 2)
		mt.cap *= 2;
	mt.v = calloc(mt.cap, sizeof *mt.v);
	memo mm = {.cap = 4096};
	mm.key = calloc(mm.cap, sizeof *mm.key);
	mm.caps = calloc(mm.cap, sizeof *mm.caps);
	mm.via = calloc(mm.cap, sizeof *mm.via);
	mm.state = calloc(mm.cap, sizeof *mm.state);
	if (!mt.v || !mm.key || !mm.caps || !mm.via || !mm.state)
		r = -ENOMEM;
	for (size_t i = 0; i < g->n && r == 0; i++) {
		node *x = &g->v[i];
		if (x->kind == N_CLASS) {
			visit seen = {0};
			const char *via = NULL;
			memo_reset(&mm);
			unsigned c = class_caps(g, &mm, (int)i, (int)i, 0, &mt, &seen, &via);
			free(seen.v);
			if (c & (CK_CAP_FINDING | CK_CAP_WRITE))
				r = lb_buf_printf(out, "N %s %u %s\n", x->name, c,
						  via ? via : x->via ? x->via : "-");
		} else if (x->kind == N_FUNC && x->caps & (CK_CAP_FINDING | CK_CAP_WRITE)) {
			r = lb_buf_printf(out, "N %s %u %s\n", x->name, x->caps, x->via ? x->via : "-");
		}
	}
	/* lists of module names a library function imports from: changed, they are any import */
	for (size_t i = 0; i < g->n && r == 0; i++)
		if (g->v[i].table)
			r = lb_buf_printf(out, "T %s %u builtins.__import__\n", g->v[i].name,
					  (unsigned)CK_CAP_IMPORT);
	/* Only process creation: the method names that reach a socket are protocol verbs that
	 * research objects have too (a DataFrame's head(), a retriever's retrieve(), a context's
	 * Queue()), and a name alone cannot tell them apart. */
	for (size_t i = 0; i < mt.cap && r == 0; i++)
		if (mt.v[i].name && mt.v[i].seen && (mt.v[i].caps & CK_CAP_PROCESS) &&
		    compound(mt.v[i].name))
			r = lb_buf_printf(out, "M %s %u %s\n", mt.v[i].name,
					  (unsigned)CK_CAP_PROCESS, mt.v[i].via ? mt.v[i].via : "-");
	free(mt.v);
	free(mm.key);
	free(mm.caps);
	free(mm.via);
	free(mm.state);
	/* names a star import brings in (asyncio gets base_events' through `from .x import *`) */
	for (size_t m = 0; m < g->n && r == 0; m++) {
		const node *mod = &g->v[m];
		for (size_t k = 0; k < mod->nstars && r == 0; k++) {
			const char *star = g->v[mod->stars[k]].name;
			size_t sl = strlen(star);
			for (size_t i = 0; i < g->n && r == 0; i++) {
				const node *x = &g->v[i];
				if ((x->kind != N_FUNC && x->kind != N_CLASS) || x->cls >= 0 ||
				    !(x->caps & CK_CAP_FINDING) || strncmp(x->name, star, sl) != 0 ||
				    x->name[sl] != '.' || strchr(x->name + sl + 1, '.') ||
				    x->name[sl + 1] == '_')
					continue;
				r = lb_buf_printf(out, "A %s.%s %s\n", mod->name, x->name + sl + 1,
						  x->name);
			}
		}
	}
	/* aliases that lead somewhere the check cares about */
	for (size_t i = 0; i < g->n && r == 0; i++) {
		node *x = &g->v[i];
		if (x->kind != N_ALIAS)
			continue;
		char fin[QMAX];
		if (!g_rename(g, x->target, fin, sizeof fin))
			continue;
		int t = g_resolve(g, fin, 0);
		bool keep = (t >= 0 && g->v[t].caps & CK_CAP_FINDING) ||
			    ck_classify(fin, false, LB_CHECK_STANDARD) != R_COUNT ||
			    ck_sensitive_module(fin);
		if (keep && strcmp(fin, x->name) != 0)
			r = lb_buf_printf(out, "A %s %s\n", x->name, fin);
	}
	return r;
}

/* The header, then the records it names by their sha256. */
static int summary_sealed(graph *g, size_t modules, lb_buf *out)
{
	lb_buf body = {0};
	uint8_t d[32];
	char hex[65];
	int r = summary_text(g, modules, &body);
	if (r == 0) {
		digest_of(body.data ? body.data : "", body.len, d);
		lb_sha256_hex(d, hex);
		r = lb_buf_printf(out, "%s\t%zu\t%s\n", SUMMARY_MAGIC, modules, hex);
	}
	if (r == 0)
		r = lb_buf_append(out, body.data ? body.data : "", body.len);
	lb_buf_free(&body);
	return r;
}

static void graph_free(graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].e);
		free(g->v[i].base);
		free(g->v[i].stars);
		free(g->v[i].meth);
	}
	free(g->v);
	free(g->tab);
}

static int build_text(const char *dir, unsigned threads, lb_buf *sum, char *err, size_t errlen)
{
	modlist m = {0};
	int r = walk_lib(&m, dir, "", 0);
	if (r == 0 && m.n == 0)
		r = -ENOENT;
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", dir,
			 r == -ENOENT ? "no Python modules there" : strerror(-r));
		goto out;
	}
	ck_syntax syn;
	if ((r = ck_syntax_init(&syn)) < 0)
		goto out;
	scanjob j = {.m = &m, .syn = &syn};
	atomic_init(&j.next, 0);
	if (threads < 1)
		threads = 1;
	if (threads > 8)
		threads = 8;
	pthread_t th[8];
	unsigned started = 0;
	for (unsigned t = 1; t < threads; t++)
		if (pthread_create(&th[started], NULL, scan_worker, &j) == 0)
			started++;
	scan_worker(&j);
	for (unsigned t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	ck_syntax_free(&syn);
	size_t total = 0;
	for (size_t i = 0; i < m.n; i++) {
		if (m.v[i].rc < 0 && r == 0)
			r = m.v[i].rc;
		for (size_t k = 0; k < m.v[i].rec.len; k++)
			total += m.v[i].rec.data[k] == '\n';
	}
	if (r < 0) {
		snprintf(err, errlen, "reading the standard library: %s", strerror(-r));
		goto out;
	}
	graph g = {0};
	g.tcap = 1;
	while (g.tcap < 2 * (total + m.n) + 1024) /* a node per record at most, and per module */
		g.tcap *= 2;
	g.tab = calloc(g.tcap, sizeof *g.tab);
	if (!g.tab) {
		r = -ENOMEM;
		goto out;
	}
	/* records are read in place: the two passes see copies, as strtok_r cuts them */
	lb_buf copy = {0};
	for (size_t i = 0; i < m.n && r == 0; i++)
		if (m.v[i].rec.len)
			r = lb_buf_append(&copy, m.v[i].rec.data, m.v[i].rec.len);
	if (r == 0)
		r = lb_buf_append(&copy, "", 1);
	if (r == 0) {
		for (size_t i = 0; i < m.n && r == 0; i++) {
			int k = g_add(&g, m.v[i].mod);
			if (k >= 0 && g.v[k].kind == N_NONE)
				g.v[k].kind = N_MODULE;
		}
		read_records(&g, copy.data, false);
	}
	lb_buf edges = {0};
	for (size_t i = 0; i < m.n && r == 0 && !g.err; i++)
		if (m.v[i].rec.len)
			r = lb_buf_append(&edges, m.v[i].rec.data, m.v[i].rec.len);
	if (r == 0 && !g.err)
		r = lb_buf_append(&edges, "", 1);
	if (r == 0 && !g.err) {
		/* module nodes come back as N_MODULE although A/F records named them first */
		link_graph(&g);
		read_records(&g, edges.data, true);
		resolve_edges(&g);
		fixpoint(&g);
		if (!g.err)
			r = summary_sealed(&g, m.n, sum);
	}
	if (r == 0 && g.err)
		r = g.err;
	if (r < 0)
		snprintf(err, errlen, "summarising the standard library: %s", strerror(-r));
	/* names in the summary point into copy: summary_text printed them, so both can go */
	graph_free(&g);
	lb_buf_free(&copy);
	lb_buf_free(&edges);
out:
	for (size_t i = 0; i < m.n; i++) {
		free(m.v[i].path);
		free(m.v[i].mod);
		lb_buf_free(&m.v[i].rec);
	}
	free(m.v);
	return r;
}

int ck_stdlib_build(const char *dir, unsigned threads, ck_stdlib **out, char *err, size_t errlen)
{
	lb_buf sum = {0};
	int r = build_text(dir, threads, &sum, err, errlen);
	if (r == 0 && lb_buf_append(&sum, "", 1) < 0)
		r = -ENOMEM;
	if (r < 0) {
		lb_buf_free(&sum);
		return r;
	}
	return ck_stdlib_parse(sum.data, out);
}

/* cache_dir/stdlib, the user's own directory like the compile() verdicts beside it. */
static int cache_name(const char *key, char hex[65])
{
	lb_sha256 c;
	uint8_t d[32];
	lb_sha256_init(&c);
	lb_sha256_update(&c, SUMMARY_MAGIC, sizeof SUMMARY_MAGIC);
	lb_sha256_update(&c, key, strlen(key));
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, hex);
	return 0;
}

/* Builds the summary of dir, keeps it in dfd (when >= 0) under hex, and parses it. */
static int build_keep(const char *dir, int dfd, const char *hex, ck_stdlib **out, char *err,
		      size_t errlen)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	lb_buf sum = {0};
	int r = build_text(dir, cpus > 0 ? (unsigned)cpus : 1, &sum, err, errlen);
	if (r == 0 && dfd >= 0)
		(void)lb_replace_file_at(dfd, hex, sum.data, sum.len); /* a cache: best effort */
	if (r == 0 && lb_buf_append(&sum, "", 1) < 0)
		r = -ENOMEM;
	if (r < 0) {
		lb_buf_free(&sum);
		return r;
	}
	return ck_stdlib_parse(sum.data, out);
}

/* The kept summary's header, from fd (a regular file of this user's that nobody else can
 * write): 0 and what it says, else -EINVAL. */
static int read_header(int fd, size_t *modules, uint8_t digest[32])
{
	struct stat st;
	char head[SUMMARY_HEAD_MAX];
	size_t hl;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || (uint64_t)st.st_size > MAX_SUMMARY)
		return -EINVAL;
	ssize_t k;
	do
		k = pread(fd, head, sizeof head, 0);
	while (k < 0 && errno == EINTR);
	if (k <= 0 || ck_stdlib_header(head, (size_t)k, modules, digest, &hl) < 0)
		return -EINVAL;
	return 0;
}

/* The whole of the kept summary from s->fd, when it is still the one its header said. */
static int read_whole(const ck_stdlib *s, ck_stdlib **out)
{
	struct stat st;
	if (fstat(s->fd, &st) < 0 || (uint64_t)st.st_size > MAX_SUMMARY || st.st_size <= 0)
		return -EINVAL;
	size_t len = (size_t)st.st_size, got = 0;
	char *text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	while (got < len) {
		ssize_t k = pread(s->fd, text + got, len - got, (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	if (got != len || memchr(text, '\0', len)) {
		free(text);
		return -EINVAL;
	}
	text[len] = '\0';
	ck_stdlib *t = NULL;
	int r = ck_stdlib_parse(text, &t);
	if (r < 0)
		return r;
	if (t->modules != s->modules || memcmp(t->digest, s->digest, sizeof s->digest) != 0) {
		ck_stdlib_free(t);
		return -EINVAL;
	}
	*out = t;
	return 0;
}

/* Fills in a kept summary's table on its first lookup: read whole and checked against its
 * header, else (changed or damaged since) built again from the library and kept anew; then
 * the table is not the one the identity named (drifted), and if even that fails, empty. */
static void fill(ck_stdlib *s)
{
	ck_stdlib *t = NULL;
	if (read_whole(s, &t) < 0) {
		char path[PATH_MAX], hex[65], err[512];
		int dfd = -1;
		s->drifted = true;
		cache_name(s->key, hex);
		if (s->cache_dir &&
		    snprintf(path, sizeof path, "%s/stdlib", s->cache_dir) < (int)sizeof path)
			dfd = lb_open_private_dir(path);
		if (build_keep(s->dir, dfd, hex, &t, err, sizeof err) < 0)
			t = NULL;
		if (dfd >= 0)
			close(dfd);
	}
	if (t) {
		s->text = t->text;
		s->tab = t->tab;
		s->cap = t->cap;
		s->n = t->n;
		s->capable = t->capable;
		t->text = NULL;
		t->tab = NULL;
		ck_stdlib_free(t);
	}
	close(s->fd);
	s->fd = -1;
}

static const ck_stdlib *ready(const ck_stdlib *cs)
{
	if (!cs || atomic_load_explicit(&cs->ready, memory_order_acquire))
		return cs;
	/* a summary is always on the heap and never const itself: the lookups that take it
	 * as const are the ones that may have to fill its table in, once */
	ck_stdlib *s = (ck_stdlib *)cs;
	pthread_mutex_lock(&s->mu);
	if (!atomic_load_explicit(&s->ready, memory_order_relaxed)) {
		fill(s);
		atomic_store_explicit(&s->ready, true, memory_order_release);
	}
	pthread_mutex_unlock(&s->mu);
	return s;
}

bool ck_stdlib_drifted(const ck_stdlib *s)
{
	/* drifted is written only before ready is released: seeing ready is seeing it */
	return s && atomic_load_explicit(&s->ready, memory_order_acquire) && s->drifted;
}

int ck_stdlib_load(const char *dir, const char *key, const char *cache_dir, ck_stdlib **out,
		   bool *hit, char *err, size_t errlen)
{
	*hit = false;
	*out = NULL;
	char path[PATH_MAX], hex[65];
	int dfd = -1;
	cache_name(key, hex);
	if (cache_dir && snprintf(path, sizeof path, "%s/stdlib", cache_dir) < (int)sizeof path)
		dfd = lb_open_private_dir(path);
	if (dfd >= 0) {
		int fd = openat(dfd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		ck_stdlib *s = NULL;
		if (fd >= 0 && (s = stdlib_new()) && read_header(fd, &s->modules, s->digest) == 0 &&
		    (s->dir = strdup(dir)) && (s->key = strdup(key)) &&
		    (s->cache_dir = strdup(cache_dir)) && pthread_mutex_init(&s->mu, NULL) == 0) {
			s->mu_init = true;
			s->fd = fd;
			atomic_store(&s->ready, false);
			*hit = true;
			*out = s;
			close(dfd);
			return 0;
		}
		ck_stdlib_free(s);
		if (fd >= 0)
			close(fd);
	}
	int r = build_keep(dir, dfd, hex, out, err, errlen);
	if (dfd >= 0)
		close(dfd);
	return r;
}

/* ---- which library -------------------------------------------------------------------------- */

/* The library of info's interpreter (its base prefix and version), else of /usr/bin/python3,
 * read where Debian keeps it without running anything. note: what was used, or why none. */
int ck_stdlib_open(const lb_python_info *info, const char *cache_dir, ck_stdlib **out,
		   char *note, size_t notelen)
{
	char dir[PATH_MAX + 64], exe[PATH_MAX], ver[64];
	*out = NULL;
	if (info) {
		unsigned maj = 0, min = 0;
		if (sscanf(info->version, "%u.%u", &maj, &min) != 2) {
			snprintf(note, notelen, "the interpreter's version '%s' is not X.Y",
				 info->version);
			return -EINVAL;
		}
		if (snprintf(dir, sizeof dir, "%.4000s/lib/python%u.%u", info->base_prefix, maj, min) >=
		    (int)sizeof dir) {
			snprintf(note, notelen, "the interpreter's prefix is too long");
			return -ENAMETOOLONG;
		}
		snprintf(exe, sizeof exe, "%s", info->executable);
		snprintf(ver, sizeof ver, "%s", info->version);
	} else {
		char link[256];
		ssize_t k = readlink("/usr/bin/python3", link, sizeof link - 1);
		unsigned maj = 0, min = 0;
		if (k <= 0 || (link[k] = '\0', sscanf(link, "python%u.%u", &maj, &min) != 2)) {
			snprintf(note, notelen,
				 "/usr/bin/python3 is not a link to a pythonX.Y that labbox can read");
			return -ENOENT;
		}
		snprintf(dir, sizeof dir, "/usr/lib/python%u.%u", maj, min);
		snprintf(exe, sizeof exe, "/usr/bin/python3");
		snprintf(ver, sizeof ver, "%u.%u", maj, min);
	}
	struct stat st;
	char osmod[PATH_MAX + 80];
	snprintf(osmod, sizeof osmod, "%s/os.py", dir);
	if (stat(dir, &st) < 0 || access(osmod, R_OK) != 0) {
		snprintf(note, notelen, "%s: no readable standard library there (os.py)", dir);
		return -ENOENT;
	}
	char key[3 * PATH_MAX];
	snprintf(key, sizeof key, "%s\n%s\n%s\n%lld.%09ld", exe, ver, dir, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	bool hit = false;
	char err[512];
	int r = ck_stdlib_load(dir, key, cache_dir, out, &hit, err, sizeof err);
	if (r < 0) {
		snprintf(note, notelen, "%s", err);
		return r;
	}
	/* which library, and which summary of it: one built again (by another labbox, or after
	 * damage) is another identity, so results kept against the old one are not used */
	lb_sha256 c;
	uint8_t d[32];
	uint64_t mods = (*out)->modules;
	lb_sha256_init(&c);
	ck_cache_key_part(&c, "library", key, strlen(key));
	ck_cache_key_part(&c, "modules", &mods, sizeof mods);
	ck_cache_key_part(&c, "summary", (*out)->digest, sizeof (*out)->digest);
	lb_sha256_final(&c, d);
	lb_sha256_hex(d, (*out)->id);
	/* The same words whether the summary was built now or read back: a check's document does
	 * not depend on what an earlier check left in the cache. */
	(void)hit;
	snprintf(note, notelen, "python %s %s (%zu modules)", ver, dir, (*out)->modules);
	return 0;
}

const char *ck_stdlib_id(const ck_stdlib *s)
{
	return s ? s->id : "";
}
