/* check: what one standard library module says about itself, for the capability summaries.
 *
 * One parse of a module, written as plain records (one a line, fields separated by a
 * space) that stdlib.c joins over the whole library:
 *   A qual target        a module-level name bound to another module's name (import, alias)
 *   F qual stub class    a function or method (stub 1: its body only raises or passes)
 *   C qual bases         a class and its bases, comma-separated ("-" when none)
 *   X module star        `from star import *` in module
 *   E from to            from calls to (a resolved dotted name)
 *   R from to            from names to without calling it (a callback: target=self._run)
 *   V from class meth    from calls self.meth() in a method of class (dispatch)
 *   U from class meth    from calls super().meth()
 *   S from caps sink     from calls a sink directly
 *   P from caps sink@params   a sink whose argument is made only from these parameters
 *                        (index:name, comma-separated): a call that passes none of them
 *                        does not reach it (pkgutil.iter_importers() imports nothing)
 *   K from to args       a call of to with args "NPOS[,kw...]" (no * or ** in it)
 * Names are resolved against the module's own imports and definitions; what a module-level
 * name of another module stands for is resolved later, when every module is known. */
#include "check_internal.h"
#include "labbox/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_DEPTH 64
#define NAME_MAX_LEN 400

typedef struct sbind {
	char *name, *target; /* target NULL: a local name that shadows the module's */
	bool param;
} sbind;

typedef struct stab {
	sbind *v;
	size_t n, cap;
} stab;

typedef struct scan {
	const ck_syntax *syn;
	const char *src;
	size_t len;
	const char *mod; /* dotted module name */
	const char *pkg; /* package relative imports start from */
	stab top;        /* module level */
	stab consts;     /* module-level lists of literal module names nothing changes */
	TSNode root;
	lb_buf *out;
	int err;
} scan;

static void stab_free(stab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].name);
		free(t->v[i].target);
	}
	free(t->v);
	memset(t, 0, sizeof *t);
}

static sbind *stab_find(const stab *t, const char *name)
{
	for (size_t i = t->n; i-- > 0;)
		if (strcmp(t->v[i].name, name) == 0)
			return &t->v[i];
	return NULL;
}

/* fallback: an except handler's binding (the pure-Python alternative of a C module) only
 * fills a name the try body did not bind */
static bool stab_set(scan *s, stab *t, const char *name, const char *target, bool fallback)
{
	sbind *b = stab_find(t, name);
	if (b && fallback)
		return false;
	char *tg = target ? strdup(target) : NULL;
	if (target && !tg) {
		s->err = -ENOMEM;
		return false;
	}
	if (b) {
		free(b->target);
		b->target = tg;
		return true;
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		sbind *v = realloc(t->v, nc * sizeof *v);
		if (!v) {
			free(tg);
			s->err = -ENOMEM;
			return false;
		}
		t->v = v;
		t->cap = nc;
	}
	t->v[t->n].name = strdup(name);
	t->v[t->n].target = tg;
	t->v[t->n].param = false;
	if (!t->v[t->n].name)
		s->err = -ENOMEM;
	t->n++;
	return true;
}

static void emit(scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A module-level binding other modules can reach (tempfile._os is os). */
static void top_set(scan *s, stab *t, const char *name, const char *target, bool fallback)
{
	if (stab_set(s, t, name, target, fallback) && t == &s->top && target)
		emit(s, "A %s.%s %s", s->mod, name, target);
}

static ck_kind kind(const scan *s, TSNode n)
{
	return ck_node_kind(s->syn, n);
}

static TSNode field(const scan *s, TSNode n, ck_field f)
{
	return ts_node_child_by_field_id(n, s->syn->field[f]);
}

/* The node's text into buf; false when it does not fit. */
static bool text(const scan *s, TSNode n, char *buf, size_t len)
{
	uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
	if (b > s->len || a > b || b - a >= len)
		return false;
	memcpy(buf, s->src + a, b - a);
	buf[b - a] = '\0';
	return true;
}

static void emit(scan *s, const char *fmt, ...)
{
	char line[2 * NAME_MAX_LEN + 64];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof line)
		return; /* a name that long is no name labbox resolves */
	if (lb_buf_append(s->out, line, (size_t)k) < 0 || lb_buf_append(s->out, "\n", 1) < 0)
		s->err = -ENOMEM;
}

/* ---- names ----------------------------------------------------------------------------------- */

/* An identifier or attribute chain (a.b.c) resolved through the local table, then the
 * module's; unbound heads are builtins. NULL when it is not a plain chain, or its head is a
 * local value (a parameter, an assignment). */
static bool chain(const scan *s, TSNode n, char *buf, size_t len, int depth)
{
	ck_kind k = kind(s, n);
	if (k == K_IDENTIFIER)
		return text(s, n, buf, len);
	if (k != K_ATTRIBUTE || depth > 16)
		return false;
	TSNode obj = field(s, n, F_OBJECT), attr = field(s, n, F_ATTRIBUTE);
	char a[NAME_MAX_LEN];
	if (!chain(s, obj, buf, len, depth + 1) || !text(s, attr, a, sizeof a))
		return false;
	size_t bl = strlen(buf), al = strlen(a);
	if (bl + 1 + al >= len)
		return false;
	buf[bl] = '.';
	memcpy(buf + bl + 1, a, al + 1);
	return true;
}

static bool resolve(const scan *s, const stab *local, TSNode n, char *out, size_t len)
{
	char c[NAME_MAX_LEN];
	if (!chain(s, n, c, sizeof c, 0))
		return false;
	char *dot = strchr(c, '.');
	if (dot)
		*dot = '\0';
	const char *tg = NULL;
	sbind *b = local ? stab_find(local, c) : NULL;
	if (b) {
		if (!b->target)
			return false;
		tg = b->target;
	} else if ((b = stab_find(&s->top, c))) {
		if (!b->target)
			return false;
		tg = b->target;
	}
	int k = tg ? snprintf(out, len, "%s%s%s", tg, dot ? "." : "", dot ? dot + 1 : "")
		   : snprintf(out, len, "builtins.%s%s%s", c, dot ? "." : "", dot ? dot + 1 : "");
	return k > 0 && (size_t)k < len;
}

/* `from .x import y` in a module of package pkg: the absolute module name. */
static bool relative(const scan *s, TSNode rel, char *out, size_t len)
{
	char t[NAME_MAX_LEN];
	if (!text(s, rel, t, sizeof t))
		return false;
	size_t dots = 0;
	while (t[dots] == '.')
		dots++;
	char base[NAME_MAX_LEN];
	snprintf(base, sizeof base, "%s", s->pkg);
	for (size_t i = 1; i < dots; i++) {
		char *d = strrchr(base, '.');
		if (!d)
			return false;
		*d = '\0';
	}
	int k = t[dots] ? snprintf(out, len, "%s%s%s", base, base[0] ? "." : "", t + dots)
			: snprintf(out, len, "%s", base);
	return k > 0 && (size_t)k < len && out[0];
}

static void import_stmt(scan *s, stab *t, TSNode n, bool fallback)
{
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode ch = ts_node_named_child(n, i);
		char full[NAME_MAX_LEN], al[NAME_MAX_LEN];
		if (kind(s, ch) == K_DOTTED_NAME && text(s, ch, full, sizeof full)) {
			char *dot = strchr(full, '.');
			if (dot)
				*dot = '\0';
			top_set(s, t, full, full, fallback);
		} else if (kind(s, ch) == K_ALIASED_IMPORT &&
			   text(s, field(s, ch, F_NAME), full, sizeof full) &&
			   text(s, field(s, ch, F_ALIAS), al, sizeof al)) {
			top_set(s, t, al, full, fallback);
		}
	}
}

static void import_from(scan *s, stab *t, TSNode n, bool fallback, bool at_top)
{
	TSNode m = field(s, n, F_MODULE_NAME);
	char mod[NAME_MAX_LEN];
	if (kind(s, m) == K_RELATIVE_IMPORT) {
		if (!relative(s, m, mod, sizeof mod))
			return;
	} else if (!text(s, m, mod, sizeof mod)) {
		return;
	}
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode ch = ts_node_named_child(n, i);
		if (ts_node_eq(ch, m))
			continue;
		char name[NAME_MAX_LEN], al[NAME_MAX_LEN], q[2 * NAME_MAX_LEN];
		ck_kind k = kind(s, ch);
		if (k == K_WILDCARD_IMPORT) {
			if (at_top)
				emit(s, "X %s %s", s->mod, mod);
			continue;
		}
		const char *bound = name;
		if (k == K_DOTTED_NAME) {
			if (!text(s, ch, name, sizeof name))
				continue;
		} else if (k == K_ALIASED_IMPORT) {
			if (!text(s, field(s, ch, F_NAME), name, sizeof name) ||
			    !text(s, field(s, ch, F_ALIAS), al, sizeof al))
				continue;
			bound = al;
		} else {
			continue;
		}
		snprintf(q, sizeof q, "%s.%s", mod, name);
		top_set(s, t, bound, q, fallback);
	}
}

/* ---- module level ---------------------------------------------------------------------------- */

typedef struct fdef {
	TSNode node; /* function_definition */
	char *qual;
	char *cls; /* enclosing class, NULL for a module-level function */
} fdef;

typedef struct fdefs {
	fdef *v;
	size_t n, cap;
} fdefs;

static void fdefs_add(scan *s, fdefs *f, TSNode n, const char *qual, const char *cls)
{
	if (f->n == f->cap) {
		size_t nc = f->cap ? f->cap * 2 : 64;
		fdef *v = realloc(f->v, nc * sizeof *v);
		if (!v) {
			s->err = -ENOMEM;
			return;
		}
		f->v = v;
		f->cap = nc;
	}
	f->v[f->n].node = n;
	f->v[f->n].qual = strdup(qual);
	f->v[f->n].cls = cls ? strdup(cls) : NULL;
	if (!f->v[f->n].qual || (cls && !f->v[f->n].cls))
		s->err = -ENOMEM;
	f->n++;
}

static void fdefs_free(fdefs *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].qual);
		free(f->v[i].cls);
	}
	free(f->v);
}

/* A body that only has a docstring, pass, `...` or a raise: an abstract method. */
static bool stub_body(const scan *s, TSNode fn)
{
	TSNode body = field(s, fn, F_BODY);
	uint32_t cnt = ts_node_named_child_count(body);
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode st = ts_node_named_child(body, i);
		ck_kind k = kind(s, st);
		if (k == K_PASS_STATEMENT || k == K_RAISE_STATEMENT || k == K_COMMENT)
			continue;
		if (k == K_EXPRESSION_STATEMENT && ts_node_named_child_count(st) == 1) {
			ck_kind e = kind(s, ts_node_named_child(st, 0));
			if (e == K_STRING || e == K_ELLIPSIS)
				continue;
		}
		return false;
	}
	return true;
}

static void top_block(scan *s, TSNode blk, bool fallback, fdefs *defs, const char *cls, int depth);
static void const_candidate(scan *s, TSNode assign, const char *name);

static void def_or_class(scan *s, TSNode n, bool fallback, fdefs *defs, const char *cls,
			 int depth)
{
	ck_kind k = kind(s, n);
	char name[NAME_MAX_LEN], q[2 * NAME_MAX_LEN + 2];
	if (!text(s, field(s, n, F_NAME), name, sizeof name))
		return;
	snprintf(q, sizeof q, "%s.%s", cls ? cls : s->mod, name);
	if (k == K_FUNCTION_DEFINITION) {
		emit(s, "F %s %d %s", q, stub_body(s, n) ? 1 : 0, cls ? cls : "-");
		fdefs_add(s, defs, n, q, cls);
		if (!cls)
			stab_set(s, &s->top, name, q, fallback);
		return;
	}
	if (cls)
		return; /* nested classes: rare, and named through their outer class anyway */
	stab_set(s, &s->top, name, q, fallback);
	char bases[1024] = "";
	TSNode sup = field(s, n, F_SUPERCLASSES);
	uint32_t cnt = ts_node_is_null(sup) ? 0 : ts_node_named_child_count(sup);
	for (uint32_t i = 0; i < cnt; i++) {
		char b[NAME_MAX_LEN];
		if (resolve(s, NULL, ts_node_named_child(sup, i), b, sizeof b) &&
		    strlen(bases) + strlen(b) + 2 < sizeof bases) {
			if (bases[0])
				strcat(bases, ",");
			strcat(bases, b);
		}
	}
	emit(s, "C %s %s", q, bases[0] ? bases : "-");
	top_block(s, field(s, n, F_BODY), fallback, defs, q, depth + 1);
}

static void top_stmt(scan *s, TSNode st, bool fallback, fdefs *defs, const char *cls, int depth)
{
	if (depth > SCAN_DEPTH || s->err)
		return;
	ck_kind k = kind(s, st);
	switch (k) {
	case K_IMPORT_STATEMENT:
		if (!cls)
			import_stmt(s, &s->top, st, fallback);
		break;
	case K_IMPORT_FROM_STATEMENT:
		if (!cls)
			import_from(s, &s->top, st, fallback, true);
		break;
	case K_FUNCTION_DEFINITION:
	case K_CLASS_DEFINITION:
		def_or_class(s, st, fallback, defs, cls, depth);
		break;
	case K_DECORATED_DEFINITION:
		def_or_class(s, field(s, st, F_DEFINITION), fallback, defs, cls, depth);
		break;
	case K_EXPRESSION_STATEMENT: {
		TSNode a = ts_node_named_child(st, 0);
		if (cls || kind(s, a) != K_ASSIGNMENT)
			break;
		TSNode l = field(s, a, F_LEFT), r = field(s, a, F_RIGHT);
		char name[NAME_MAX_LEN], tg[NAME_MAX_LEN];
		if (kind(s, l) != K_IDENTIFIER || !text(s, l, name, sizeof name))
			break;
		const_candidate(s, a, name);
		/* `_os = os`, `popen = subprocess.Popen`: names other modules reach through */
		if (!ts_node_is_null(r) && (kind(s, r) == K_IDENTIFIER || kind(s, r) == K_ATTRIBUTE) &&
		    resolve(s, NULL, r, tg, sizeof tg)) {
			top_set(s, &s->top, name, tg, fallback);
		}
		break;
	}
	case K_IF_STATEMENT:
	case K_TRY_STATEMENT:
	case K_WITH_STATEMENT:
	case K_ELIF_CLAUSE:
	case K_ELSE_CLAUSE: {
		uint32_t cnt = ts_node_named_child_count(st);
		for (uint32_t i = 0; i < cnt; i++) {
			TSNode ch = ts_node_named_child(st, i);
			ck_kind ck = kind(s, ch);
			bool fb = fallback || (k == K_TRY_STATEMENT && ck != K_BLOCK &&
					       ck != K_ELSE_CLAUSE && strcmp(ts_node_type(ch), "finally_clause") != 0);
			if (ck == K_BLOCK)
				top_block(s, ch, fb, defs, cls, depth + 1);
			else if (ck == K_ELIF_CLAUSE || ck == K_ELSE_CLAUSE)
				top_stmt(s, ch, fb, defs, cls, depth + 1);
			else if (strcmp(ts_node_type(ch), "except_clause") == 0 ||
				 strcmp(ts_node_type(ch), "finally_clause") == 0) {
				uint32_t m = ts_node_named_child_count(ch);
				for (uint32_t j = 0; j < m; j++)
					if (kind(s, ts_node_named_child(ch, j)) == K_BLOCK)
						top_block(s, ts_node_named_child(ch, j), fb, defs, cls,
							  depth + 1);
			}
		}
		break;
	}
	default:
		break;
	}
}

static void top_block(scan *s, TSNode blk, bool fallback, fdefs *defs, const char *cls, int depth)
{
	uint32_t cnt = ts_node_named_child_count(blk);
	for (uint32_t i = 0; i < cnt && !s->err; i++)
		top_stmt(s, ts_node_named_child(blk, i), fallback, defs, cls, depth);
}

/* ---- function bodies ------------------------------------------------------------------------- */

#define MAX_PARAMS 32

typedef struct body {
	const fdef *fn;
	stab local;
	char self[NAME_MAX_LEN]; /* first parameter of a method */
	/* parameters by position (-1 keyword-only) and whether a call may leave them out and
	 * get a literal default (a required one is always passed) */
	struct {
		char name[NAME_MAX_LEN];
		int pos;
		bool literal_default, other;
	} par[MAX_PARAMS];
	int npar;
} body;

static void param_names(scan *s, body *b, TSNode params)
{
	uint32_t cnt = ts_node_is_null(params) ? 0 : ts_node_named_child_count(params);
	int pos = 0;
	bool keyword_only = false;
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode p = ts_node_named_child(params, i);
		TSNode id = p;
		if (kind(s, p) != K_IDENTIFIER) {
			id = field(s, p, F_NAME);
			if (ts_node_is_null(id) || kind(s, id) != K_IDENTIFIER)
				id = ts_node_named_child(p, 0);
		}
		char name[NAME_MAX_LEN];
		const char *pt = ts_node_type(p);
		if (kind(s, p) == K_LIST_SPLAT_PATTERN || strcmp(pt, "keyword_separator") == 0)
			keyword_only = true;
		if (!ts_node_is_null(id) && kind(s, id) == K_IDENTIFIER &&
		    text(s, id, name, sizeof name)) {
			if (i == 0 && b->fn->cls && !b->self[0])
				snprintf(b->self, sizeof b->self, "%s", name);
			if (stab_set(s, &b->local, name, NULL, false))
				b->local.v[b->local.n - 1].param = true;
			if (b->npar < MAX_PARAMS) {
				bool plain = kind(s, p) == K_IDENTIFIER ||
					     strcmp(pt, "default_parameter") == 0 ||
					     strcmp(pt, "typed_parameter") == 0 ||
					     strcmp(pt, "typed_default_parameter") == 0;
				TSNode dv = field(s, p, F_VALUE);
				ck_kind dk = ts_node_is_null(dv) ? K_OTHER : kind(s, dv);
				snprintf(b->par[b->npar].name, sizeof b->par[b->npar].name, "%s",
					 name);
				b->par[b->npar].pos = keyword_only ? -1 : pos;
				b->par[b->npar].other = !plain;
				b->par[b->npar].literal_default =
					ts_node_is_null(dv) || dk == K_STRING || dk == K_INTEGER ||
					dk == K_NONE || dk == K_TRUE || dk == K_FALSE;
				b->npar++;
			}
		}
		if (kind(s, p) != K_LIST_SPLAT_PATTERN && strcmp(pt, "keyword_separator") != 0 &&
		    strcmp(pt, "positional_separator") != 0)
			pos++;
	}
}

/* Local bindings: imports inside the function resolve, assignments shadow. */
static void locals_of(scan *s, body *b, TSNode n, int depth)
{
	if (depth > SCAN_DEPTH)
		return;
	ck_kind k = kind(s, n);
	if (k == K_IMPORT_STATEMENT) {
		import_stmt(s, &b->local, n, false);
		return;
	}
	if (k == K_IMPORT_FROM_STATEMENT) {
		import_from(s, &b->local, n, false, false);
		return;
	}
	if (k == K_ASSIGNMENT || k == K_FOR_STATEMENT || k == K_AUGMENTED_ASSIGNMENT) {
		TSNode l = field(s, n, F_LEFT);
		char name[NAME_MAX_LEN];
		if (kind(s, l) == K_IDENTIFIER && text(s, l, name, sizeof name)) {
			sbind *x = stab_find(&b->local, name);
			if (!x)
				stab_set(s, &b->local, name, NULL, false);
		}
	}
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++)
		locals_of(s, b, ts_node_named_child(n, i), depth + 1);
}

static bool is_param(const body *b, const char *name)
{
	sbind *x = stab_find(&b->local, name);
	return x && x->param;
}

/* ---- where a computed import name comes from ------------------------------------------------ */

/* Module-level lists of literal module names (dbm's `_names = ['dbm.gnu', 'dbm.ndbm',
 * 'dbm.dumb']`): a name bound once, at module level, to a list or tuple of plain strings and
 * otherwise only iterated or formatted in its own module. An import of each of its items is
 * that fixed set of imports, as `__import__("dbm.gnu")` written out is. The experiment can
 * change such a list (dbm._names.append(...)); the summary names it (a T line) and the check
 * makes any use of it a finding. */
static bool literal_list(const scan *s, TSNode r)
{
	ck_kind k = kind(s, r);
	if (k != K_LIST && k != K_TUPLE)
		return false;
	uint32_t cnt = ts_node_named_child_count(r);
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode e = ts_node_named_child(r, i);
		if (kind(s, e) == K_COMMENT)
			continue;
		if (kind(s, e) != K_STRING)
			return false;
		uint32_t m = ts_node_named_child_count(e);
		for (uint32_t j = 0; j < m; j++)
			if (kind(s, ts_node_named_child(e, j)) == K_INTERPOLATION)
				return false;
	}
	return cnt > 0;
}

/* Every occurrence of the identifier name under n is a read that cannot change or rebind the
 * list, except the one binding at `bound`. */
static bool only_iterated(const scan *s, TSNode n, const char *name, TSNode bound, int depth)
{
	if (depth > SCAN_DEPTH)
		return false;
	if (kind(s, n) == K_IDENTIFIER) {
		char t[NAME_MAX_LEN];
		if (!text(s, n, t, sizeof t) || strcmp(t, name) != 0)
			return true;
		TSNode p = ts_node_parent(n);
		ck_kind pk = kind(s, p);
		if (ts_node_eq(p, bound))
			return ts_node_eq(field(s, p, F_LEFT), n);
		if ((pk == K_FOR_STATEMENT || pk == K_FOR_IN_CLAUSE) &&
		    ts_node_eq(field(s, p, F_RIGHT), n))
			return true;
		/* "tried %s" % _names */
		if (pk == K_BINARY_OPERATOR && ts_node_eq(field(s, p, F_RIGHT), n))
			return true;
		if (pk == K_ATTRIBUTE && ts_node_eq(field(s, p, F_ATTRIBUTE), n))
			return true; /* x._names is another object's */
		if (pk == K_KEYWORD_ARGUMENT && ts_node_eq(field(s, p, F_NAME), n))
			return true;
		return false;
	}
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++)
		if (!only_iterated(s, ts_node_named_child(n, i), name, bound, depth + 1))
			return false;
	return true;
}

static void const_candidate(scan *s, TSNode assign, const char *name)
{
	sbind *b = stab_find(&s->consts, name);
	if (b) {
		free(b->target); /* bound twice: no longer one list */
		b->target = NULL;
		return;
	}
	if (!literal_list(s, field(s, assign, F_RIGHT)))
		return;
	char pos[32];
	snprintf(pos, sizeof pos, "%u", ts_node_start_byte(assign));
	stab_set(s, &s->consts, name, pos, false);
}

/* After the module level is read: drop the candidates the module binds, changes or hands on. */
static void consts_settle(scan *s)
{
	for (size_t i = 0; i < s->consts.n; i++) {
		sbind *b = &s->consts.v[i];
		if (!b->target)
			continue;
		uint32_t at = (uint32_t)strtoul(b->target, NULL, 10);
		TSNode n = ts_node_descendant_for_byte_range(s->root, at, at);
		while (!ts_node_is_null(n) && (kind(s, n) != K_ASSIGNMENT || ts_node_start_byte(n) != at))
			n = ts_node_parent(n);
		if (ts_node_is_null(n) || !only_iterated(s, s->root, b->name, n, 0)) {
			free(b->target);
			b->target = NULL;
		}
	}
}

static bool is_const_table(const scan *s, const body *b, TSNode n)
{
	char t[NAME_MAX_LEN];
	if (kind(s, n) != K_IDENTIFIER || !text(s, n, t, sizeof t) || stab_find(&b->local, t))
		return false;
	sbind *c = stab_find(&s->consts, t);
	if (!c || !c->target)
		return false;
	c->param = true; /* read as import names: the summary names it (T) */
	return true;
}

/* The identifier name is, in the function, bound only as the target of `for name in TABLE`
 * loops over constant tables, and otherwise only read. */
static bool from_table(const scan *s, const body *b, TSNode n, const char *name, bool *seen,
		       int depth)
{
	if (depth > SCAN_DEPTH)
		return false;
	if (kind(s, n) == K_IDENTIFIER) {
		char t[NAME_MAX_LEN];
		if (!text(s, n, t, sizeof t) || strcmp(t, name) != 0)
			return true;
		TSNode p = ts_node_parent(n);
		ck_kind pk = kind(s, p);
		if (pk == K_FOR_STATEMENT && ts_node_eq(field(s, p, F_LEFT), n)) {
			*seen = true;
			return is_const_table(s, b, field(s, p, F_RIGHT));
		}
		/* reads that bind nothing */
		if (pk == K_ARGUMENT_LIST || pk == K_BINARY_OPERATOR || pk == K_INTERPOLATION ||
		    pk == K_RETURN_STATEMENT || pk == K_PARENTHESIZED_EXPRESSION ||
		    pk == K_EXPRESSION_STATEMENT || pk == K_SUBSCRIPT ||
		    strcmp(ts_node_type(p), "comparison_operator") == 0)
			return true;
		if (pk == K_KEYWORD_ARGUMENT || pk == K_ASSIGNMENT)
			return ts_node_eq(field(s, p, pk == K_ASSIGNMENT ? F_RIGHT : F_VALUE), n);
		if (pk == K_ATTRIBUTE)
			return true; /* name.x reads it; x.name is not it */
		return false;
	}
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++)
		if (!from_table(s, b, ts_node_named_child(n, i), name, seen, depth + 1))
			return false;
	return true;
}

/* The parameters (a bit each, by b->par index) an expression is made from, reading locals
 * through their assignments; -1 when anything else goes into it (a module global, a call of
 * a named function, a loop variable). A parameter with a default other than a literal is
 * anything too: left out, its default is not known here. */
static long long from_params(const scan *s, const body *b, TSNode n, int depth)
{
	if (depth > 6 || ts_node_is_null(n))
		return -1;
	ck_kind k = kind(s, n);
	switch (k) {
	case K_INTEGER:
	case K_NONE:
	case K_TRUE:
	case K_FALSE:
	case K_FLOAT:
		return 0;
	case K_IDENTIFIER: {
		char t[NAME_MAX_LEN];
		if (!text(s, n, t, sizeof t))
			return -1;
		for (int i = 0; i < b->npar; i++)
			if (strcmp(b->par[i].name, t) == 0)
				return b->par[i].other || !b->par[i].literal_default ||
						       strcmp(t, b->self) == 0
					       ? -1
					       : 1LL << i;
		if (!stab_find(&b->local, t))
			return -1;
		/* a local: every assignment of it, each of which must be a plain one */
		bool seen = false;
		long long m = 0;
		TSNode body_n = field(s, b->fn->node, F_BODY);
		uint32_t stack_top = 0;
		TSNode stack[256];
		stack[stack_top++] = body_n;
		while (stack_top) {
			TSNode x = stack[--stack_top];
			if (kind(s, x) == K_IDENTIFIER) {
				char u[NAME_MAX_LEN];
				if (!text(s, x, u, sizeof u) || strcmp(u, t) != 0)
					continue;
				TSNode p = ts_node_parent(x);
				ck_kind pk = kind(s, p);
				if (pk == K_ASSIGNMENT && ts_node_eq(field(s, p, F_LEFT), x)) {
					long long r = from_params(s, b, field(s, p, F_RIGHT), depth + 1);
					if (r < 0)
						return -1;
					m |= r;
					seen = true;
					continue;
				}
				if (pk == K_ARGUMENT_LIST || pk == K_BINARY_OPERATOR ||
				    pk == K_INTERPOLATION || pk == K_RETURN_STATEMENT ||
				    pk == K_PARENTHESIZED_EXPRESSION || pk == K_SUBSCRIPT ||
				    pk == K_EXPRESSION_STATEMENT || pk == K_ATTRIBUTE ||
				    strcmp(ts_node_type(p), "comparison_operator") == 0 ||
				    (pk == K_ASSIGNMENT && ts_node_eq(field(s, p, F_RIGHT), x)) ||
				    (pk == K_KEYWORD_ARGUMENT && ts_node_eq(field(s, p, F_VALUE), x)))
					continue;
				return -1; /* bound some other way */
			}
			uint32_t cnt = ts_node_named_child_count(x);
			if (stack_top + cnt > sizeof stack / sizeof *stack)
				return -1;
			for (uint32_t i = 0; i < cnt; i++)
				stack[stack_top++] = ts_node_named_child(x, i);
		}
		return seen ? m : -1;
	}
	case K_STRING:
	case K_CONCATENATED_STRING:
	case K_BINARY_OPERATOR:
	case K_PARENTHESIZED_EXPRESSION:
	case K_CONDITIONAL_EXPRESSION:
	case K_INTERPOLATION:
	case K_SUBSCRIPT:
	case K_SLICE: {
		long long m = 0;
		uint32_t cnt = ts_node_named_child_count(n);
		for (uint32_t i = 0; i < cnt; i++) {
			TSNode ch = ts_node_named_child(n, i);
			ck_kind ck = kind(s, ch);
			if (ck == K_STRING_START || ck == K_STRING_CONTENT || ck == K_COMMENT ||
			    ck == K_FORMAT_SPECIFIER || ck == K_TYPE_CONVERSION ||
			    strcmp(ts_node_type(ch), "string_end") == 0 ||
			    strcmp(ts_node_type(ch), "escape_sequence") == 0)
				continue;
			long long r = from_params(s, b, ch, depth + 1);
			if (r < 0)
				return -1;
			m |= r;
		}
		return m;
	}
	case K_ATTRIBUTE:
		return from_params(s, b, field(s, n, F_OBJECT), depth + 1);
	case K_CALL: {
		/* a method of a value made from parameters: fullname.rpartition(".") */
		TSNode fn = field(s, n, F_FUNCTION);
		if (kind(s, fn) != K_ATTRIBUTE)
			return -1;
		long long m = from_params(s, b, field(s, fn, F_OBJECT), depth + 1);
		TSNode al = field(s, n, F_ARGUMENTS);
		uint32_t cnt = ts_node_is_null(al) ? 0 : ts_node_named_child_count(al);
		for (uint32_t i = 0; i < cnt && m >= 0; i++) {
			long long r = from_params(s, b, ts_node_named_child(al, i), depth + 1);
			m = r < 0 ? -1 : m | r;
		}
		return m;
	}
	default:
		return -1;
	}
}

/* What a computed import name is: a fixed list (0), made from these parameters only (*pm set,
 * 0), or anything (CK_CAP_IMPORT). */
static unsigned import_name_caps(const scan *s, const body *b, TSNode a0, long long *pm)
{
	char name[NAME_MAX_LEN];
	bool seen = false;
	if (kind(s, a0) == K_IDENTIFIER && text(s, a0, name, sizeof name) && !is_param(b, name) &&
	    from_table(s, b, field(s, b->fn->node, F_BODY), name, &seen, 0) && seen)
		return 0;
	long long m = from_params(s, b, a0, 0);
	if (m > 0)
		*pm = m;
	return CK_CAP_IMPORT;
}

/* evals of the library's that look a dotted name up and run no code: inspect's
 * _signature_fromstr (reached by signature, getfullargspec, Signature.from_callable) reads a
 * text signature with ast.parse, and its nested wrap_value evaluates only what
 * RewriteSymbolics hands it, an ast.Name's id or a chain of ast.Attribute names over one
 * (anything else raises ValueError first), keeping the value only when it is a str, number,
 * bytes, bool or None. No call is made: what it gives is what `getattr(m, "literal")` gives. */
static bool name_eval(const char *fn)
{
	static const char *const evals[] = {"inspect._signature_fromstr"};
	for (size_t i = 0; fn && i < sizeof evals / sizeof *evals; i++)
		if (strcmp(fn, evals[i]) == 0)
			return true;
	return false;
}

/* The capability a direct call of q gives, by the rules' own tables: the sinks of the
 * summaries are the calls the direct rules reject. Code and imports count when they run
 * what the caller handed in (exec(cmd) in bdb.run, import_module(name) in pkgutil): the
 * standard library compiles its own generated code everywhere (namedtuple, dataclasses). */
static unsigned sink_caps(const scan *s, const body *b, const char *q, TSNode call,
			  long long *pm)
{
	ck_rule r = ck_classify(q, false, LB_CHECK_STANDARD);
	TSNode al = field(s, call, F_ARGUMENTS);
	TSNode a0 = ts_node_is_null(al) || ts_node_named_child_count(al) == 0
			    ? (TSNode){0}
			    : ts_node_named_child(al, 0);
	switch (r) {
	case R_PROCESS:
	case R_SUBPROCESS:
	case R_PTY:
		/* multiprocessing and concurrent.futures start the interpreter itself, on the
		 * experiment's own functions: that child stays in the sandbox, under the gate */
		if (strncmp(s->mod, "multiprocessing", 15) == 0 ||
		    strncmp(s->mod, "concurrent.futures", 18) == 0)
			return 0;
		if (strcmp(q, "os.kill") == 0 || strcmp(q, "os.killpg") == 0 ||
		    strncmp(q, "signal.", 7) == 0)
			return 0; /* signalling its own children */
		return CK_CAP_PROCESS;
	case R_NETWORK:
		return CK_CAP_SOCKET;
	case R_NATIVE:
		return CK_CAP_NATIVE;
	case R_DYNCODE:
	case R_DYNIMPORT: {
		bool builtin = strncmp(q, "builtins.", 9) == 0 ||
			       strcmp(q, "importlib.import_module") == 0;
		if (!builtin)
			return r == R_DYNCODE ? CK_CAP_EXEC : CK_CAP_IMPORT;
		char name[NAME_MAX_LEN];
		if (r == R_DYNCODE) {
			/* ast.parse compiles to a syntax tree, which runs nothing */
			if (strcmp(s->mod, "ast") == 0)
				return 0;
			if (strcmp(q, "builtins.eval") == 0 && name_eval(b->fn->qual))
				return 0;
			if (!ts_node_is_null(a0) && kind(s, a0) == K_IDENTIFIER &&
			    text(s, a0, name, sizeof name) && is_param(b, name) &&
			    strcmp(name, b->self) != 0)
				return CK_CAP_EXEC;
			return 0;
		}
		/* a written-out name is that import (import_module("imp")), as in the
		 * experiment's own code; a computed one is judged by where it comes from */
		if (ts_node_is_null(a0) || kind(s, a0) == K_STRING)
			return 0;
		return import_name_caps(s, b, a0, pm);
	}
	default:
		break;
	}
	if (strcmp(q, "builtins.open") == 0 || strcmp(q, "io.open") == 0) {
		TSNode m = ts_node_is_null(al) || ts_node_named_child_count(al) < 2
				   ? (TSNode){0}
				   : ts_node_named_child(al, 1);
		char mode[64];
		if (!ts_node_is_null(m) && kind(s, m) == K_STRING && text(s, m, mode, sizeof mode) &&
		    strpbrk(mode + 1, "wax+"))
			return CK_CAP_WRITE;
	}
	return 0;
}

/* A call's arguments as "NPOS[,kw...]" when they are all plain (no *args, **kw): which
 * parameters of the callee it passes (K records). */
static bool call_args(const scan *s, TSNode call, char *out, size_t len)
{
	TSNode al = field(s, call, F_ARGUMENTS);
	if (ts_node_is_null(al) || kind(s, al) != K_ARGUMENT_LIST)
		return false;
	unsigned npos = 0;
	char kws[NAME_MAX_LEN] = "";
	uint32_t cnt = ts_node_named_child_count(al);
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode a = ts_node_named_child(al, i);
		ck_kind k = kind(s, a);
		if (k == K_COMMENT)
			continue;
		if (k == K_LIST_SPLAT || k == K_DICTIONARY_SPLAT)
			return false;
		if (k == K_KEYWORD_ARGUMENT) {
			char kw[NAME_MAX_LEN];
			size_t l = strlen(kws);
			if (!text(s, field(s, a, F_NAME), kw, sizeof kw) ||
			    snprintf(kws + l, sizeof kws - l, ",%s", kw) >= (int)(sizeof kws - l))
				return false;
			continue;
		}
		npos++;
	}
	return snprintf(out, len, "%u%s", npos, kws) < (int)len;
}

static void body_walk(scan *s, body *b, TSNode n, int depth)
{
	if (depth > SCAN_DEPTH || s->err)
		return;
	ck_kind k = kind(s, n);
	char q[NAME_MAX_LEN];
	if (k == K_CALL) {
		TSNode fn = field(s, n, F_FUNCTION);
		if (kind(s, fn) == K_ATTRIBUTE) {
			TSNode obj = field(s, fn, F_OBJECT);
			char o[NAME_MAX_LEN], m[NAME_MAX_LEN];
			if (b->fn->cls && b->self[0] && text(s, field(s, fn, F_ATTRIBUTE), m, sizeof m)) {
				if (kind(s, obj) == K_IDENTIFIER && text(s, obj, o, sizeof o) &&
				    strcmp(o, b->self) == 0) {
					emit(s, "V %s %s %s", b->fn->qual, b->fn->cls, m);
				} else if (kind(s, obj) == K_CALL &&
					   text(s, field(s, obj, F_FUNCTION), o, sizeof o) &&
					   strcmp(o, "super") == 0) {
					emit(s, "U %s %s %s", b->fn->qual, b->fn->cls, m);
				}
			}
		}
		if (resolve(s, &b->local, fn, q, sizeof q)) {
			long long pm = 0;
			unsigned caps = sink_caps(s, b, q, n, &pm);
			char args[NAME_MAX_LEN];
			if (caps && pm > 0) {
				char ps[NAME_MAX_LEN] = "";
				for (int i = 0; i < b->npar; i++) {
					if (!(pm >> i & 1))
						continue;
					size_t l = strlen(ps);
					snprintf(ps + l, sizeof ps - l, "%s%d:%s", l ? "," : "",
						 b->par[i].pos, b->par[i].name);
				}
				emit(s, "P %s %u %s@%s", b->fn->qual, caps, q, ps);
			} else if (caps) {
				emit(s, "S %s %u %s", b->fn->qual, caps, q);
			} else if (call_args(s, n, args, sizeof args)) {
				emit(s, "K %s %s %s", b->fn->qual, q, args);
			} else {
				emit(s, "E %s %s", b->fn->qual, q);
			}
		} else {
			body_walk(s, b, fn, depth + 1);
		}
		TSNode al = field(s, n, F_ARGUMENTS);
		if (!ts_node_is_null(al))
			body_walk(s, b, al, depth + 1);
		return;
	}
	if (k == K_ATTRIBUTE || k == K_IDENTIFIER) {
		TSNode obj = field(s, n, F_OBJECT);
		char o[NAME_MAX_LEN], m[NAME_MAX_LEN];
		if (k == K_ATTRIBUTE && b->fn->cls && b->self[0] && kind(s, obj) == K_IDENTIFIER &&
		    text(s, obj, o, sizeof o) && strcmp(o, b->self) == 0 &&
		    text(s, field(s, n, F_ATTRIBUTE), m, sizeof m)) {
			emit(s, "V %s %s %s", b->fn->qual, b->fn->cls, m); /* target=self._run */
			return;
		}
		if (resolve(s, &b->local, n, q, sizeof q)) {
			if (strncmp(q, "builtins.", 9) != 0)
				emit(s, "R %s %s", b->fn->qual, q);
			return;
		}
		/* obj.name on a value labbox does not know: name is that object's attribute, not
		 * the module's function of that name (mod.open in dbm.open is not dbm.open) */
		if (k == K_ATTRIBUTE) {
			body_walk(s, b, obj, depth + 1);
			return;
		}
	}
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++)
		body_walk(s, b, ts_node_named_child(n, i), depth + 1);
}

int ck_stdlib_scan(const ck_syntax *syn, TSNode root, const char *src, size_t len,
		   const char *mod, bool is_pkg, lb_buf *out)
{
	scan s = {.syn = syn, .src = src, .len = len, .mod = mod, .out = out};
	char pkg[NAME_MAX_LEN];
	snprintf(pkg, sizeof pkg, "%s", mod);
	if (!is_pkg) {
		char *d = strrchr(pkg, '.');
		if (d)
			*d = '\0';
		else
			pkg[0] = '\0';
	}
	s.pkg = pkg;
	s.root = root;
	fdefs defs = {0};
	top_block(&s, root, false, &defs, NULL, 0);
	consts_settle(&s);
	for (size_t i = 0; i < defs.n && !s.err; i++) {
		body b = {.fn = &defs.v[i]};
		param_names(&s, &b, field(&s, defs.v[i].node, F_PARAMETERS));
		TSNode bd = field(&s, defs.v[i].node, F_BODY);
		locals_of(&s, &b, bd, 0);
		body_walk(&s, &b, bd, 0);
		stab_free(&b.local);
	}
	for (size_t i = 0; i < s.consts.n && !s.err; i++)
		if (s.consts.v[i].target && s.consts.v[i].param)
			emit(&s, "T %s.%s", mod, s.consts.v[i].name);
	fdefs_free(&defs);
	stab_free(&s.top);
	stab_free(&s.consts);
	return s.err;
}
