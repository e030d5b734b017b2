/* check: name resolution over the tree-sitter syntax tree, and the events the rules need.
 *
 * One walk per file, in source order, with a scope chain. Each name is bound to a small set
 * of abstract values: a dotted reference into a module (REF "os.system"), a string constant
 * (STR, for getattr/__import__ names built from literals), a literal path (PATH), a module
 * namespace dict (NSDICT, GLOBALS), or something that cannot be followed (DYN). Values flow
 * through aliases silently and are reported where they are used: called, passed, stored,
 * returned. An empty set means "an ordinary value" and never produces a finding, which is
 * what keeps model.eval() and local functions named eval quiet.
 *
 * Flow: statements that always run replace a binding; those under if/for/while/try add to it,
 * so a value that may be there is never lost. Function bodies run later than their
 * definition, so they are analysed after the enclosing scope and see every value a free name
 * ever had there. Names a function declares `global` feed back into module-level lookups
 * through a second pass. */
#include "check_internal.h"
#include "labbox/collect.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VMAX 8
#define MAX_DEPTH 160
#define STR_MAX 1024
#define ARENA_BLOCK 65536

typedef enum vkind {
	VK_REF,      /* s: canonical dotted name */
	VK_STR,      /* s: the string, NULL for "some string" */
	VK_PATH,     /* s: a literal path (pathlib) */
	VK_DYN,      /* s: why it cannot be followed; weak: not near a sensitive module */
	VK_NSDICT,   /* s: module whose __dict__ / vars() this is */
	VK_GLOBALS,  /* globals(), locals(), vars() */
	VK_GETTER,   /* operator.attrgetter(s) (weak: methodcaller) */
	VK_BOUNDGET, /* t: dict.get of base s ("M" sys.modules, "B" builtins, "G" globals, "N"+q) */
	VK_STRMETH,  /* s: string, t: method */
	VK_PATHMETH, /* s: path, t: method */
	VK_TYPEOBJ,  /* a class reached by introspection (().__class__, type(x), __mro__[-1]) */
	VK_NSSET,    /* s: module whose vars() this is the update/setdefault/__setitem__ of
		      * ("sys.modules": that table's, t the method) */
	VK_SELFMOD,  /* sys.modules[__name__] at module level: this module (its globals) */
} vkind;

typedef struct val {
	uint8_t kind;
	bool weak;
	const char *s;
	const char *t;
} val;

/* unk: besides the values in v, the expression may give one the analysis knows nothing of
 * (one branch of an if/else, one side of an `or`, one of a name's bindings was an ordinary
 * value). An empty set is an ordinary value already; the flag matters where v is not empty:
 * a consumer that takes the strings in v for every name there can be (a subscript key,
 * getattr's name, an import name) must take its computed path as well, or the unknown
 * alternative goes through unseen (`globals()[argv[1] if ... else "A"]`). */
typedef struct vset {
	val v[VMAX];
	uint8_t n;
	bool unk;
} vset;

typedef struct binding {
	const char *name;
	vset cur, ever;
	bool bound; /* a value was bound here (cur empty then means an ordinary value) */
	bool global_decl, nonlocal_decl;
	struct binding *next;
} binding;

enum { SC_MODULE, SC_FUNC, SC_CLASS };
#define NBUCKET 32

typedef struct scope {
	int kind;
	int id;
	const char *fn_name;
	struct scope *parent;
	binding *tab[NBUCKET];
	vset stars;
} scope;

typedef struct pending {
	TSNode node;
	scope *parent;
	const char *name;
	struct pending *next;
} pending;

typedef struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
} chunk;

enum { EV_SEED, EV_RANDOM, EV_CALLFN };
typedef struct event {
	int kind;
	const char *lib; /* or function name for EV_CALLFN */
	const char *qual;
	const char *arg; /* EV_SEED: the seed argument's source text, NULL when none */
	int scope_id;
	unsigned order, line, col;
} event;

typedef struct fnscope {
	const char *name;
	int id;
} fnscope;

typedef struct ctx {
	const ck_analysis_in *in;
	ck_keep *keep; /* the worker's, or one of this file's */
	const char *src;
	ck_raws *out;
	int err;
	chunk *arena;
	scope *module;
	scope *gw; /* values written to module names from functions (`global`), kept across passes */
	bool saw_global_write;
	int cond;
	int import_guarded; /* inside a try whose handler catches a failed import */
	int depth;
	bool too_deep;
	int next_scope_id;
	unsigned order;
	pending **pend; /* where deferred bodies of the current scope go */
	event *ev;
	size_t nev, cap_ev;
	fnscope *fns;
	size_t nfns, cap_fns;
	scope *taint; /* names holding time measurements */
	bool any_taint; /* taint_target ran this pass (taint may hold a name) */
	bool time_flag;
	bool h_estimate, h_guard, h_results, h_metrics;
	/* What the file logs and how it configures logging (LB404, log_facts_settle). */
	struct logline *log_msgs, *log_fmts;
	unsigned nlog_msgs, nlog_fmts;
	bool log_basic, log_level_on, log_set_info, log_handler, log_stdout, log_dict;
	bool module_has_sensitive;
	/* Reporting a container whose names alone are read (`x in C`, `len(C)`, `for k in C`):
	 * a module table there is asked about, not handed on. names_need: the builtins (NB_*
	 * bits) that reading relies on; when a file can rebind one, the finding is made after
	 * all (names_settle). */
	bool names_only;
	bool names_keys; /* what is read is the elements (list(C), for): names only of a mapping */
	unsigned names_need;
	bool names_kill; /* the file reaches the builtins module or main's namespace */
	struct held *held;
	/* Loops (loop_walk): the scope whose loop is walked, whether a walk added a value to one
	 * of its bindings, whether this is a walk after the first, the walks after the first so
	 * far, and whether a loop's values never settled. */
	scope *loop_sc;
	bool grew;
	int rewalk;
	unsigned extra_walks;
	bool unsettled;
	bool deleting; /* bind_target_empty is walking a `del` statement's targets */
	/* sys.modules[__name__] read as this module (self_module_ok): 0 not yet asked, 1 the
	 * file can rebind no __name__, -1 it can; self_import_at: where the first import of the
	 * experiment's own code (or a computed import) begins, UINT32_MAX for none. */
	int self_clean;
	uint32_t self_import_at;
} ctx;

/* A message logged at INFO, as a template (print's: LB_METRIC_HOLE for what is computed;
 * style 'L' for loguru's), or a logging format (style '%', '{' or '$'). */
typedef struct logline {
	const char *t;
	size_t n;
	char style;
	struct logline *next;
} logline;

/* A "passed on as a value" finding the names-only reading held back. */
typedef struct held {
	TSNode at;
	const char *name, *msg;
	unsigned need;
	struct held *next;
} held;

/* ---- memory --------------------------------------------------------------------------------- */

/* Arena memory, not zeroed. */
static void *amalloc_raw(ctx *c, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!c->arena || c->arena->cap - c->arena->used < n) {
		size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		chunk *k = NULL;
		if (cap == ARENA_BLOCK && c->keep->block) {
			k = c->keep->block;
			c->keep->block = NULL;
		} else {
			k = malloc(sizeof *k + cap);
		}
		if (!k) {
			c->err = -ENOMEM;
			return NULL;
		}
		k->next = c->arena;
		k->used = 0;
		k->cap = cap;
		c->arena = k;
	}
	void *p = c->arena->data + c->arena->used;
	c->arena->used += n;
	return p;
}

static void *amalloc(ctx *c, size_t n)
{
	void *p = amalloc_raw(c, n);
	if (p)
		memset(p, 0, n);
	return p;
}

static const char *astrndup(ctx *c, const char *s, size_t n)
{
	char *p = amalloc(c, n + 1);
	if (!p)
		return "";
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

static const char *astrdup(ctx *c, const char *s)
{
	return astrndup(c, s, strlen(s));
}

static const char *afmt(ctx *c, const char *a, const char *sep, const char *b)
{
	size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
	char *p = amalloc(c, la + ls + lb + 1);
	if (!p)
		return "";
	memcpy(p, a, la);
	memcpy(p + la, sep, ls);
	memcpy(p + la + ls, b, lb + 1);
	return p;
}

static void arena_free(ctx *c)
{
	while (c->arena) {
		chunk *k = c->arena->next;
		if (!c->keep->block && c->arena->cap == ARENA_BLOCK)
			c->keep->block = c->arena;
		else
			free(c->arena);
		c->arena = k;
	}
}

void ck_keep_free(ck_keep *k)
{
	free(k->block);
	k->block = NULL;
	if (k->have_cur)
		ts_tree_cursor_delete(&k->cur);
	k->have_cur = false;
}

/* ---- value sets ----------------------------------------------------------------------------- */

static bool val_eq(const val *a, const val *b)
{
	if (a->kind != b->kind || a->weak != b->weak)
		return false;
	if ((a->s == NULL) != (b->s == NULL) || (a->s && strcmp(a->s, b->s) != 0))
		return false;
	if ((a->t == NULL) != (b->t == NULL) || (a->t && strcmp(a->t, b->t) != 0))
		return false;
	return true;
}

static void vs_add(vset *vs, val v)
{
	for (unsigned i = 0; i < vs->n; i++)
		if (val_eq(&vs->v[i], &v))
			return;
	if (vs->n < VMAX) {
		vs->v[vs->n++] = v;
		return;
	}
	/* Too many possibilities: strings collapse to "some string"; anything else becomes
	 * something that cannot be followed, so no candidate is ever dropped silently. */
	if (v.kind == VK_STR || v.kind == VK_PATH) {
		val some = {.kind = VK_STR};
		vs->v[VMAX - 1] = some;
	} else {
		val d = {.kind = VK_DYN, .s = "too many possible values to follow"};
		vs->v[VMAX - 1] = d;
	}
}

static void vs_union(vset *a, const vset *b)
{
	for (unsigned i = 0; i < b->n; i++)
		vs_add(a, b->v[i]);
	a->unk |= b->unk;
}

/* a and b are alternatives (either may be the value): an alternative with no value the
 * analysis follows is an unknown one, and stays one in the union. */
static void vs_alt(vset *a, const vset *b)
{
	if (!a->n || !b->n)
		a->unk = true;
	vs_union(a, b);
}

/* Whether a set may hold a value other than a literal string: nothing known, a string of
 * unknown text, anything that is not a string, or an unknown alternative. Such a key or
 * name may be any name. */
static bool vs_computed(const vset *vs)
{
	if (!vs->n || vs->unk)
		return true;
	for (unsigned i = 0; i < vs->n; i++)
		if (vs->v[i].kind != VK_STR || !vs->v[i].s)
			return true;
	return false;
}

static vset vs1(val v)
{
	vset vs = {.n = 1};
	vs.v[0] = v;
	return vs;
}

static val ref(ctx *c, const char *q)
{
	char canon[512];
	ck_canonical(q, canon, sizeof canon);
	val v = {.kind = VK_REF, .s = astrdup(c, canon)};
	/* Through these, a builtin's name can be rebound by a computed one. */
	if (strcmp(canon, "builtins") == 0 || strcmp(canon, "__main__") == 0)
		c->names_kill = true;
	return v;
}

static val str(const char *s)
{
	val v = {.kind = VK_STR, .s = s};
	return v;
}

static val dyn(const char *why, bool weak)
{
	val v = {.kind = VK_DYN, .s = why, .weak = weak};
	return v;
}

/* The single literal string of a set, or NULL (also when it has an unknown alternative). */
static const char *vs_str(const vset *vs)
{
	if (vs->n == 1 && vs->v[0].kind == VK_STR && !vs->unk)
		return vs->v[0].s;
	return NULL;
}

static bool vs_has_str(const vset *vs)
{
	for (unsigned i = 0; i < vs->n; i++)
		if (vs->v[i].kind == VK_STR)
			return true;
	return false;
}

/* ---- tree helpers ----------------------------------------------------------------------------- */

static ck_kind kind(const ctx *c, TSNode n)
{
	return ck_node_kind(c->in->syn, n);
}

static bool is(const ctx *c, TSNode n, ck_kind k)
{
	return kind(c, n) == k;
}

static TSNode field(const ctx *c, TSNode n, ck_field f)
{
	return ts_node_child_by_field_id(n, c->in->syn->field[f]);
}

/* The named children of a node. ts_node_named_child(n, i) walks from the first child at every
 * call, which made loops over long blocks quadratic; a cursor collects them in one walk. */
#define KIDS_INLINE 8
typedef struct kids {
	TSNode *v;
	uint32_t n;
	TSNode inl[KIDS_INLINE];
} kids;

static void kids_of(ctx *c, TSNode n, kids *k)
{
	uint32_t cnt = ts_node_named_child_count(n);
	k->v = k->inl;
	k->n = 0;
	if (cnt > KIDS_INLINE) {
		k->v = amalloc_raw(c, cnt * sizeof *k->v);
		if (!k->v) {
			k->v = k->inl;
			return;
		}
	}
	/* up to a few children, ts_node_named_child is cheaper than resetting the cursor */
	if (cnt > 4) {
		TSTreeCursor *cur = &c->keep->cur;
		if (c->keep->have_cur) {
			ts_tree_cursor_reset(cur, n);
		} else {
			*cur = ts_tree_cursor_new(n);
			c->keep->have_cur = true;
		}
		uint32_t got = 0;
		bool same = true;
		if (ts_tree_cursor_goto_first_child(cur)) {
			do {
				TSNode ch = ts_tree_cursor_current_node(cur);
				if (ts_node_is_named(ch)) {
					if (got == cnt) {
						same = false;
						break;
					}
					k->v[got++] = ch;
				} else if (ts_node_child_count(ch) > 0) {
					/* an anonymous node with children: ts_node_named_child counts
					 * its named children as the parent's, the cursor does not */
					same = false;
					break;
				}
			} while (ts_tree_cursor_goto_next_sibling(cur));
		}
		if (same && got == cnt) {
			k->n = cnt;
			return;
		}
	}
	for (uint32_t i = 0; i < cnt; i++)
		k->v[i] = ts_node_named_child(n, i);
	k->n = cnt;
}

static const char *text(ctx *c, TSNode n)
{
	uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
	if (b > c->in->len)
		b = (uint32_t)c->in->len;
	if (a > b)
		a = b;
	return astrndup(c, c->src + a, b - a);
}

static unsigned line_of(TSNode n)
{
	return ts_node_start_point(n).row + 1;
}

static unsigned col_of(TSNode n)
{
	return ts_node_start_point(n).column + 1;
}

static void raw(ctx *c, ck_rule r, TSNode at, const char *name, const char *msg)
{
	if (c->err)
		return;
	/* One finding per rule, position and name, however many paths lead there. */
	unsigned line = line_of(at), col = col_of(at);
	for (size_t i = 0; i < c->out->n; i++) {
		ck_raw *x = &c->out->v[i];
		if (x->rule == r && x->line == line && x->col == col &&
		    ((!x->name && !name) || (x->name && name && strcmp(x->name, name) == 0)))
			return;
	}
	int e = ck_raw_add(c->out, r, line, col, name, "%s", msg);
	if (e < 0)
		c->err = e;
}

/* raw(), for what the runtime gate judges where it happens (ck_raw.gate_judges) */
static void raw_judged(ctx *c, ck_rule r, TSNode at, const char *name, const char *msg)
{
	size_t before = c->out->n;
	raw(c, r, at, name, msg);
	if (c->out->n > before)
		c->out->v[before].gate_judges = true;
}

static bool add_event(ctx *c, int kind, const char *lib, const char *qual, scope *sc, TSNode at)
{
	/* a loop's body walked again (loop_walk) happens once for the order of events */
	if (c->rewalk)
		return false;
	if (c->nev == c->cap_ev) {
		size_t nc = c->cap_ev ? c->cap_ev * 2 : 32;
		event *nv = realloc(c->ev, nc * sizeof *nv);
		if (!nv) {
			c->err = -ENOMEM;
			return false;
		}
		c->ev = nv;
		c->cap_ev = nc;
	}
	event *e = &c->ev[c->nev++];
	e->kind = kind;
	e->lib = lib;
	e->qual = qual;
	e->arg = NULL;
	e->scope_id = sc->id;
	e->order = c->order++;
	e->line = line_of(at);
	e->col = col_of(at);
	return true;
}

/* ---- identifiers: Python NFKC-normalises them, so ｅｖａｌ is eval ------------------------------- */

static uint32_t utf8_next(const unsigned char **p, const unsigned char *end)
{
	const unsigned char *s = *p;
	uint32_t cp;
	int n;
	if (s[0] < 0x80) {
		cp = s[0];
		n = 1;
	} else if ((s[0] & 0xe0) == 0xc0 && end - s >= 2) {
		cp = ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
		n = 2;
	} else if ((s[0] & 0xf0) == 0xe0 && end - s >= 3) {
		cp = ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
		n = 3;
	} else if ((s[0] & 0xf8) == 0xf0 && end - s >= 4) {
		cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3f) << 12) |
		     ((uint32_t)(s[2] & 0x3f) << 6) | (s[3] & 0x3f);
		n = 4;
	} else {
		cp = 0xfffd;
		n = 1;
	}
	*p = s + n;
	return cp;
}

/* ASCII that NFKC gives for cp, "" when cp is not a compatibility character we know, NULL
 * when it is one we do not know (so the name cannot be trusted). */
static const char *nfkc_ascii(uint32_t cp, char buf[4])
{
	static const struct {
		uint32_t cp;
		const char *to;
	} single[] = {
		{0x00aa, "a"}, {0x00ba, "o"}, {0x017f, "s"}, {0x02b0, "h"}, {0x02b2, "j"},
		{0x02b3, "r"}, {0x02b7, "w"}, {0x02b8, "y"}, {0x02e1, "l"}, {0x02e2, "s"},
		{0x02e3, "x"}, {0x2071, "i"}, {0x207f, "n"}, {0x2090, "a"}, {0x2091, "e"},
		{0x2092, "o"}, {0x2093, "x"}, {0x2095, "h"}, {0x2096, "k"}, {0x2097, "l"},
		{0x2098, "m"}, {0x2099, "n"}, {0x209a, "p"}, {0x209b, "s"}, {0x209c, "t"},
		{0x2102, "C"}, {0x210a, "g"}, {0x210b, "H"}, {0x210c, "H"}, {0x210d, "H"},
		{0x210e, "h"}, {0x2110, "I"}, {0x2111, "I"}, {0x2112, "L"}, {0x2113, "l"},
		{0x2115, "N"}, {0x2119, "P"}, {0x211a, "Q"}, {0x211b, "R"}, {0x211c, "R"},
		{0x211d, "R"}, {0x2124, "Z"}, {0x2128, "Z"}, {0x212a, "K"}, {0x212c, "B"},
		{0x212d, "C"}, {0x212f, "e"}, {0x2130, "E"}, {0x2131, "F"}, {0x2133, "M"},
		{0x2134, "o"}, {0x2139, "i"}, {0x2145, "D"}, {0x2146, "d"}, {0x2147, "e"},
		{0x2148, "i"}, {0x2149, "j"}, {0xfb00, "ff"}, {0xfb01, "fi"}, {0xfb02, "fl"},
		{0xfb03, "ffi"}, {0xfb04, "ffl"}, {0xfb05, "st"}, {0xfb06, "st"},
	};
	for (size_t i = 0; i < sizeof single / sizeof single[0]; i++)
		if (single[i].cp == cp)
			return single[i].to;
	buf[1] = '\0';
	if (cp >= 0xff10 && cp <= 0xff19) {
		buf[0] = (char)('0' + (cp - 0xff10));
		return buf;
	}
	if (cp >= 0xff21 && cp <= 0xff3a) {
		buf[0] = (char)('A' + (cp - 0xff21));
		return buf;
	}
	if (cp >= 0xff41 && cp <= 0xff5a) {
		buf[0] = (char)('a' + (cp - 0xff41));
		return buf;
	}
	if (cp == 0xff3f)
		return "_";
	if (cp >= 0x1d400 && cp <= 0x1d6a3) {
		uint32_t k = (cp - 0x1d400) % 52;
		buf[0] = (char)(k < 26 ? 'A' + k : 'a' + (k - 26));
		return buf;
	}
	if (cp >= 0x1d7ce && cp <= 0x1d7ff) {
		buf[0] = (char)('0' + (cp - 0x1d7ce) % 10);
		return buf;
	}
	if (cp >= 0x2160 && cp <= 0x217f) /* roman numerals: "ⅰ" is "i", "ⅳ" is "iv"... */
		return NULL;
	if ((cp >= 0x02b0 && cp <= 0x02ff) || (cp >= 0x1d2c && cp <= 0x1dbf) ||
	    (cp >= 0x2070 && cp <= 0x209f) || (cp >= 0x2100 && cp <= 0x214f) ||
	    (cp >= 0xfb00 && cp <= 0xfb4f) || (cp >= 0xff00 && cp <= 0xffef) ||
	    (cp >= 0x1d400 && cp <= 0x1d7ff) || (cp >= 0x1e030 && cp <= 0x1e08f) ||
	    (cp >= 0x2460 && cp <= 0x24ff) || cp == 0x00b2 || cp == 0x00b3 || cp == 0x00b9)
		return NULL;
	return "";
}

/* The name Python will use for an identifier node. */
static const char *ident(ctx *c, TSNode n)
{
	const char *t = text(c, n);
	const unsigned char *p = (const unsigned char *)t;
	bool ascii = true;
	for (const unsigned char *q = p; *q; q++)
		if (*q >= 0x80)
			ascii = false;
	if (ascii)
		return t;
	const unsigned char *end = p + strlen(t);
	char out[512];
	size_t o = 0;
	bool changed = false;
	while (p < end && o + 8 < sizeof out) {
		const unsigned char *start = p;
		uint32_t cp = utf8_next(&p, end);
		char buf[4];
		const char *m = cp < 0x80 ? NULL : nfkc_ascii(cp, buf);
		if (cp < 0x80 || (m && !*m)) {
			memcpy(out + o, start, (size_t)(p - start));
			o += (size_t)(p - start);
		} else if (m) {
			size_t k = strlen(m);
			memcpy(out + o, m, k);
			o += k;
			changed = true;
		} else {
			raw(c, R_UNRESOLVED, n, t,
			    "identifier uses compatibility characters that Python normalises (NFKC) "
			    "to other letters; write it in plain letters");
			return t;
		}
	}
	out[o] = '\0';
	return changed ? astrdup(c, out) : t;
}

/* ---- scopes ----------------------------------------------------------------------------------- */

static unsigned hash(const char *s)
{
	unsigned h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % NBUCKET;
}

static scope *new_scope(ctx *c, int kind, scope *parent, const char *fn_name)
{
	scope *s = amalloc(c, sizeof *s);
	if (!s)
		return NULL;
	s->kind = kind;
	s->parent = parent;
	s->id = c->next_scope_id++;
	s->fn_name = fn_name;
	return s;
}

static binding *find(scope *s, const char *name)
{
	for (binding *b = s->tab[hash(name)]; b; b = b->next)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

static binding *find_or_add(ctx *c, scope *s, const char *name)
{
	binding *b = find(s, name);
	if (b)
		return b;
	b = amalloc(c, sizeof *b);
	if (!b)
		return NULL;
	b->name = astrdup(c, name);
	unsigned h = hash(name);
	b->next = s->tab[h];
	s->tab[h] = b;
	return b;
}

static void stars_lookup(ctx *c, scope *s, const char *name, vset *out)
{
	for (unsigned i = 0; i < s->stars.n; i++)
		if (s->stars.v[i].kind == VK_REF)
			vs_add(out, ref(c, afmt(c, s->stars.v[i].s, ".", name)));
}

static vset lookup(ctx *c, scope *sc, const char *name)
{
	vset out = {0};
	binding *b = find(sc, name);
	if (b && b->global_decl) {
		binding *m = find(c->module, name);
		if (m)
			vs_union(&out, &m->ever);
		binding *g = find(c->gw, name);
		if (g)
			vs_union(&out, &g->ever);
		stars_lookup(c, c->module, name, &out);
		if (!m && !g && !out.n)
			vs_add(&out, ref(c, afmt(c, "builtins", ".", name)));
		return out;
	}
	if (b && !b->nonlocal_decl) {
		out = b->cur;
		if (sc == c->module) {
			binding *g = find(c->gw, name);
			if (g && b->bound)
				vs_alt(&out, &g->ever);
			else if (g)
				vs_union(&out, &g->ever);
		}
		return out;
	}
	stars_lookup(c, sc, name, &out);
	for (scope *p = sc->parent; p; p = p->parent) {
		if (p->kind == SC_CLASS)
			continue;
		binding *pb = find(p, name);
		if (pb && !pb->global_decl) {
			vs_union(&out, &pb->ever);
			if (p == c->module) {
				binding *g = find(c->gw, name);
				if (g && pb->bound)
					vs_alt(&out, &g->ever);
				else if (g)
					vs_union(&out, &g->ever);
			}
			return out;
		}
		stars_lookup(c, p, name, &out);
	}
	binding *g = find(c->gw, name);
	if (g) {
		vs_union(&out, &g->ever);
		return out;
	}
	/* Not bound anywhere: a builtin (or a NameError, which is harmless). */
	vs_add(&out, ref(c, afmt(c, "builtins", ".", name)));
	return out;
}

/* Whether after, a union over before, holds a value before did not (an unknown alternative
 * counts where there is a value beside it: an empty set is taken as computed already). */
static bool vs_grew(const vset *before, const vset *after)
{
	if (after->n != before->n || (after->n && after->unk != before->unk))
		return true;
	return after->n == VMAX && !val_eq(&after->v[VMAX - 1], &before->v[VMAX - 1]);
}

static void bind(ctx *c, scope *sc, const char *name, const vset *vs)
{
	binding *b = find_or_add(c, sc, name);
	if (!b)
		return;
	/* ever and a global's or nonlocal's values gather every binding: each is an
	 * alternative, and an ordinary value among them an unknown one */
	if (b->global_decl) {
		binding *g = find_or_add(c, c->gw, name);
		binding *m = find_or_add(c, c->module, name);
		if (g && m) {
			vset before = g->ever;
			vs_union(&g->ever, vs);
			vs_union(&m->ever, vs);
			g->ever.unk |= !vs->n;
			m->ever.unk |= !vs->n;
			c->grew |= vs_grew(&before, &g->ever);
			if (vs->n)
				c->saw_global_write = true;
		}
		return;
	}
	if (b->nonlocal_decl) {
		for (scope *p = sc->parent; p; p = p->parent) {
			binding *pb = p->kind == SC_FUNC ? find(p, name) : NULL;
			if (pb) {
				vset before = pb->cur;
				vs_union(&pb->ever, vs);
				vs_alt(&pb->cur, vs);
				c->grew |= vs_grew(&before, &pb->cur);
				pb->ever.unk |= !vs->n;
				break;
			}
		}
		return;
	}
	/* Under a condition the binding before (when there was one) stays an alternative. A
	 * value added to a binding of the scope whose loop is walked is one the loop's next
	 * iteration may read (loop_walk). */
	if (c->cond > 0 && b->bound) {
		vset before = b->cur;
		vs_alt(&b->cur, vs);
		if (sc == c->loop_sc)
			c->grew |= vs_grew(&before, &b->cur);
	} else if (c->cond > 0) {
		b->cur = *vs;
		b->cur.unk |= !vs->n;
		if (sc == c->loop_sc)
			c->grew |= vs->n > 0;
	} else {
		b->cur = *vs;
	}
	b->bound = true;
	vs_union(&b->ever, vs);
	b->ever.unk |= !vs->n;
	if (sc == c->module) {
		for (unsigned i = 0; i < vs->n; i++)
			if (vs->v[i].kind == VK_REF && ck_sensitive_module(vs->v[i].s))
				c->module_has_sensitive = true;
	}
}

static void bind_empty(ctx *c, scope *sc, const char *name)
{
	vset e = {0};
	bind(c, sc, name, &e);
}

/* ---- reporting uses --------------------------------------------------------------------------- */

enum { USE, CALL };

static bool deny_match(const ctx *c, const char *q)
{
	return ck_list_match(&c->in->cfg->deny_calls, q) || ck_list_match(&c->in->cfg->deny_modules, q);
}

/* The rule a capability reached through the standard library falls under: the rule of the
 * direct call it ends in (process before code, network, native and import). */
static ck_rule cap_rule(unsigned caps)
{
	if (caps & CK_CAP_PROCESS)
		return R_PROCESS;
	if (caps & CK_CAP_EXEC)
		return R_DYNCODE;
	if (caps & CK_CAP_SOCKET)
		return R_NETWORK;
	if (caps & CK_CAP_NATIVE)
		return R_NATIVE;
	if (caps & CK_CAP_IMPORT)
		return R_DYNIMPORT;
	return R_COUNT;
}

/* A process reached through subprocess is subprocess's rule, as the runtime gate names the
 * event (subprocess.Popen is LB102, os.system LB101). */
static ck_rule cap_rule_via(ctx *c, unsigned caps, const char *via)
{
	ck_rule r = cap_rule(caps);
	if (r == R_PROCESS && via) {
		ck_rule v = ck_classify(via, false, c->in->cfg->policy);
		if (v == R_SUBPROCESS || v == R_PTY)
			r = v;
	}
	return r;
}

static const char *cap_words(ck_rule r)
{
	switch (r) {
	case R_PROCESS:
	case R_SUBPROCESS:
	case R_PTY:
		return "starts a process";
	case R_DYNCODE:
		return "runs code it is given";
	case R_NETWORK:
		return "opens a socket";
	case R_NATIVE:
		return "loads native code";
	default:
		return "imports a module it is named";
	}
}

/* The capability a sink's own name stands for (subprocess.check_output: a process), as the
 * summaries count it. */
static unsigned name_caps_of(ctx *c, const char *q)
{
	switch (ck_classify(q, false, c->in->cfg->policy)) {
	case R_PROCESS:
	case R_SUBPROCESS:
	case R_PTY:
		return CK_CAP_PROCESS;
	case R_DYNCODE:
		return CK_CAP_EXEC;
	case R_NETWORK:
		return CK_CAP_SOCKET;
	case R_NATIVE:
		return CK_CAP_NATIVE;
	case R_DYNIMPORT:
		return CK_CAP_IMPORT;
	default:
		return 0;
	}
}

/* A name the direct rules do not know, seen through the standard library's summaries: its
 * own name for it there (tempfile._os.system is os.system), or what it reaches. */
static bool stdlib_ref(ctx *c, const char *q, TSNode at, int how)
{
	char msg[900], real[512];
	const char *name = q;
	if (ck_stdlib_rename(c->in->std, q, real, sizeof real)) {
		ck_rule r = ck_classify(real, false, c->in->cfg->policy);
		if (r != R_COUNT) {
			snprintf(msg, sizeof msg, "%s `%s` (the standard library's `%s`): %s",
				 how == CALL ? "call of" : "use of", q, real, ck_rules[r].info.title);
			raw(c, r, at, real, msg);
			return true;
		}
		name = real;
	}
	const char *via = NULL, *what = NULL;
	const char *sink = ck_wrapped_sink(name, &what);
	unsigned caps = ck_stdlib_caps(c->in->std, sink ? sink : name, &via) & CK_CAP_FINDING;
	ck_rule r = cap_rule_via(c, caps, via);
	if (r == R_COUNT)
		return false;
	if (sink) {
		snprintf(msg, sizeof msg, "%s `%s`: %s: it hands %s to the standard library's `%s`, "
			 "which compiles them (time a function instead: time.perf_counter() around "
			 "the call, or timeit.timeit(lambda: ...))",
			 how == CALL ? "call of" : "use of", q, cap_words(r), what, sink);
		raw(c, r, at, q, msg);
		return true;
	}
	/* via is the first sink found, which may be of another capability than the rule's
	 * (a socket where the rule is a process): then it is not named as the reason. */
	ck_rule vr = via ? cap_rule_via(c, name_caps_of(c, via), via) : R_COUNT;
	bool via_fits = via && (vr == r || (cap_words(vr) == cap_words(r)));
	if (via_fits)
		snprintf(msg, sizeof msg, "%s `%s`: %s (the standard library reaches `%s` from it)",
			 how == CALL ? "call of" : "use of", q, cap_words(r), via);
	else
		snprintf(msg, sizeof msg, "%s `%s`: %s (through the standard library)",
			 how == CALL ? "call of" : "use of", q, cap_words(r));
	/* A process a library call may start meets the runtime gate and, under it, the exec
	 * guard, which the kernel holds whatever frame makes the call. What it reaches among
	 * code, imports, sockets and native code has no such second layer: a library frame
	 * that calls what it is handed (np.vectorize) makes the call the library's, which the
	 * gate lets pass. */
	if (r == R_PROCESS || r == R_SUBPROCESS || r == R_PTY)
		raw_judged(c, r, at, q, msg);
	else
		raw(c, r, at, q, msg);
	return true;
}

/* A container reported where only its names are read: nothing when that reading relies on no
 * builtin's name (`in`, `for`, an f-string), held to the end of the file otherwise. */
static void hold(ctx *c, TSNode at, const char *name, const char *msg)
{
	if (!c->names_need)
		return;
	held *h = amalloc(c, sizeof *h);
	if (!h)
		return;
	*h = (held){.at = at, .name = astrdup(c, name), .msg = astrdup(c, msg),
		    .need = c->names_need, .next = c->held};
	c->held = h;
}

static void report_ref(ctx *c, const char *q, TSNode at, int how)
{
	char msg[600];
	if (deny_match(c, q)) {
		snprintf(msg, sizeof msg, "`%s` is denied by the configuration", q);
		raw(c, R_DENIED, at, q, msg);
	}
	/* import_module's and __import__'s calls are judged by the name they are given
	 * (call_value: a literal is that import, and what a computed one gives is judged where it
	 * is used; the gate judges the import); handed on as a value, the caller is not seen */
	if (how == CALL &&
	    (strcmp(q, "importlib.import_module") == 0 || strcmp(q, "builtins.__import__") == 0))
		return;
	ck_rule r = ck_classify(q, false, c->in->cfg->policy);
	if (r != R_COUNT) {
		snprintf(msg, sizeof msg, "%s `%s`: %s", how == CALL ? "call of" : "use of", q,
			 ck_rules[r].info.title);
		raw(c, r, at, q, msg);
		return;
	}
	if (c->in->std && stdlib_ref(c, q, at, how))
		return;
	if (how == USE && ck_sensitive_module(q)) {
		snprintf(msg, sizeof msg,
			 "module `%s` is passed on as a value; what is done with it cannot be followed", q);
		/* list(sys.meta_path) gives the finders themselves, list(sys.modules) names */
		if (c->names_only && (!c->names_keys || strcmp(q, "sys.modules") == 0))
			hold(c, at, q, msg);
		else
			raw(c, R_UNRESOLVED, at, q, msg);
	}
}

static void report(ctx *c, const vset *vs, TSNode at, int how)
{
	for (unsigned i = 0; i < vs->n; i++) {
		const val *v = &vs->v[i];
		char msg[600];
		switch (v->kind) {
		case VK_REF:
			report_ref(c, v->s, at, how);
			break;
		case VK_DYN:
			if (v->t && how == USE)
				break;
			snprintf(msg, sizeof msg, "%s %s: it cannot be resolved statically",
				 how == CALL ? "call of" : "use of", v->s);
			raw(c, v->weak ? R_UNRESOLVED_WEAK : R_UNRESOLVED, at, NULL, msg);
			break;
		case VK_SELFMOD:
			/* what a function given the module does to it (sets a name, rebinds
			 * __name__) is not seen where its attributes are read */
			raw(c, R_UNRESOLVED, at, "sys.modules[__name__]",
			    how == CALL ? "call of the module itself (`sys.modules[__name__]`)"
					: "the module itself (`sys.modules[__name__]`) is passed on as a "
					  "value; what is done with it cannot be followed");
			break;
		case VK_NSDICT:
			if (how == USE && ck_sensitive_module(v->s)) {
				snprintf(msg, sizeof msg,
					 "the namespace of `%s` is passed on; what is taken from it cannot be followed",
					 v->s);
				if (c->names_only)
					hold(c, at, v->s, msg);
				else
					raw(c, R_UNRESOLVED, at, v->s, msg);
			}
			break;
		default:
			break;
		}
	}
}

/* ---- expressions ------------------------------------------------------------------------------ */

static vset eval(ctx *c, scope *sc, TSNode n);
static void stmt(ctx *c, scope *sc, TSNode n);
static void block(ctx *c, scope *sc, TSNode n);

static vset use(ctx *c, scope *sc, TSNode n)
{
	vset v = eval(c, sc, n);
	report(c, &v, n, USE);
	return v;
}

/* A use in which only the names (keys) of a container are read: n is evaluated as any
 * expression (a call inside it is still a call); only the container it gives is exempt. */
static void report_names(ctx *c, const vset *v, TSNode n, unsigned need, bool keys)
{
	c->names_only = true;
	c->names_keys = keys;
	c->names_need = need;
	report(c, v, n, USE);
	c->names_only = c->names_keys = false;
	c->names_need = 0;
}

static vset use_names(ctx *c, scope *sc, TSNode n, unsigned need, bool keys)
{
	vset v = eval(c, sc, n);
	report_names(c, &v, n, need, keys);
	return v;
}

static const char *const module_attr_names[] = {
	"os", "sys", "subprocess", "builtins", "__builtins__", "importlib", "posix", "nt", "pty",
	"ctypes", "socket", "shutil", "runpy", "_posixsubprocess", "__builtin__",
};

static bool module_attr(const char *a)
{
	for (size_t i = 0; i < sizeof module_attr_names / sizeof module_attr_names[0]; i++)
		if (a[0] == module_attr_names[i][0] && strcmp(a, module_attr_names[i]) == 0)
			return true;
	return false;
}

/* Attributes that reach code objects, frames, globals or every class: the way out of any
 * static view (().__class__.__bases__[0].__subclasses__()...). */
static const char *const escape_attr_names[] = {
	"__subclasses__", "__globals__", "__code__", "__getattribute__", "__closure__",
	"f_globals", "f_locals", "f_builtins", "f_back", "gi_frame", "cr_frame", "ag_frame",
	"tb_frame", "__reduce__", "__reduce_ex__", "__loader__", "__spec__", "func_globals",
	"_getframe",
};

static bool escape_attr(const char *a)
{
	for (size_t i = 0; i < sizeof escape_attr_names / sizeof escape_attr_names[0]; i++)
		if (a[0] == escape_attr_names[i][0] && strcmp(a, escape_attr_names[i]) == 0)
			return true;
	return false;
}

/* dict methods that give the values (modules, functions), not the keys */
static bool dict_values(const char *a)
{
	return strcmp(a, "values") == 0 || strcmp(a, "items") == 0 || strcmp(a, "copy") == 0 ||
	       strcmp(a, "popitem") == 0;
}

static bool dict_getter(const char *a)
{
	return strcmp(a, "get") == 0 || strcmp(a, "pop") == 0 || strcmp(a, "setdefault") == 0 ||
	       strcmp(a, "__getitem__") == 0;
}

static const char *const str_methods[] = {
	"join", "lower", "upper", "strip", "lstrip", "rstrip", "replace", "format", "decode",
	"encode", "title", "capitalize", "swapcase", "casefold", "removeprefix", "removesuffix",
};
static const char *const path_methods[] = {
	"joinpath", "write_text", "write_bytes", "open", "touch", "expanduser", "resolve",
	"absolute", "with_name", "with_suffix", "mkdir", "unlink", "rmdir", "chmod", "lchmod",
	"symlink_to", "hardlink_to", "link_to", "rename", "replace",
};

static bool in_names(const char *a, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[0] == v[i][0] && strcmp(a, v[i]) == 0)
			return true;
	return false;
}

static const char *path_dirname(ctx *c, const char *p)
{
	const char *slash = strrchr(p, '/');
	if (!slash)
		return ".";
	if (slash == p)
		return "/";
	return astrndup(c, p, (size_t)(slash - p));
}

/* __subclasses__ lists every class, the way to os._wrap_close and subprocess.Popen, when it is
 * taken from object, a builtin type or a class reached by introspection; on the experiment's
 * own class (a registry helper) or a parameter it lists that class's subclasses. */
static bool reaches_any_class(const vset *base)
{
	for (unsigned i = 0; i < base->n; i++) {
		const val *v = &base->v[i];
		if (v->kind == VK_TYPEOBJ || v->kind == VK_REF || v->kind == VK_DYN ||
		    v->kind == VK_NSDICT || v->kind == VK_GLOBALS)
			return true;
	}
	return false;
}

/* dict methods that store into the dict they are called on */
static bool modules_setter(const char *a)
{
	return strcmp(a, "update") == 0 || strcmp(a, "setdefault") == 0 ||
	       strcmp(a, "__setitem__") == 0 || strcmp(a, "__ior__") == 0;
}

/* An attribute of this module reached as sys.modules[__name__] (VK_SELFMOD): the module
 * global of that name, with every value it is ever bound to at module level or through
 * `global`; its namespace is globals(). A name the module never binds can only be set from
 * outside (or be a module __getattr__'s): it cannot be followed. */
static vset self_member(ctx *c, const char *attr)
{
	vset out = {0};
	if (strcmp(attr, "__dict__") == 0)
		return vs1((val){.kind = VK_GLOBALS});
	if (strcmp(attr, "__name__") == 0 || strcmp(attr, "__file__") == 0 ||
	    strcmp(attr, "__doc__") == 0 || strcmp(attr, "__package__") == 0)
		return out; /* strings */
	binding *b = find(c->module, attr), *g = find(c->gw, attr);
	bool bound = b && b->bound && !b->global_decl;
	if (bound)
		vs_union(&out, &b->ever);
	if (g)
		vs_union(&out, &g->ever);
	if (bound || g)
		return out;
	stars_lookup(c, c->module, attr, &out);
	if (!out.n) {
		char why[300];
		snprintf(why, sizeof why, "sys.modules[__name__].%s (a name this module does not bind)",
			 attr);
		vs_add(&out, dyn(astrdup(c, why), false));
	}
	return out;
}

static vset member(ctx *c, const vset *base, const char *attr)
{
	vset out = {0};
	char why[300];
	if (escape_attr(attr) && (strcmp(attr, "__subclasses__") != 0 || reaches_any_class(base))) {
		snprintf(why, sizeof why, "introspection through `.%s`", attr);
		vs_add(&out, dyn(astrdup(c, why), false));
		return out;
	}
	if (escape_attr(attr))
		return out;
	if (strcmp(attr, "__self__") == 0)
		c->names_kill = true; /* len.__self__ is the builtins module */
	if (strcmp(attr, "__class__") == 0 || strcmp(attr, "__base__") == 0 ||
	    strcmp(attr, "__bases__") == 0 || strcmp(attr, "__mro__") == 0) {
		val t = {.kind = VK_TYPEOBJ};
		vs_add(&out, t);
		return out;
	}
	bool modname = module_attr(attr);
	for (unsigned i = 0; i < base->n; i++) {
		const val *v = &base->v[i];
		switch (v->kind) {
		case VK_REF:
			if (strcmp(v->s, "sys.modules") == 0 && modules_setter(attr)) {
				/* a store into the module table (eval_call judges its keys) */
				val u = {.kind = VK_NSSET, .s = "sys.modules", .t = astrdup(c, attr)};
				vs_add(&out, u);
				if (strcmp(attr, "setdefault") != 0)
					break; /* setdefault gets, too: on */
			}
			if (strcmp(attr, "__call__") == 0)
				vs_add(&out, *v);
			else if (strcmp(attr, "__dict__") == 0) {
				val d = {.kind = VK_NSDICT, .s = v->s};
				vs_add(&out, d);
			} else if (strcmp(v->s, "sys.modules") == 0 && dict_values(attr)) {
				vs_add(&out, dyn("sys.modules.values()/items()", false));
			} else if ((strcmp(v->s, "sys.modules") == 0 || strcmp(v->s, "builtins") == 0) &&
				   dict_getter(attr)) {
				val g = {.kind = VK_BOUNDGET, .s = v->s[0] == 's' ? "M" : "B"};
				vs_add(&out, g);
			} else if (modname && strcmp(v->s, attr) != 0)
				vs_add(&out, ref(c, attr)); /* socket.socket is the class, not the module */
			else
				vs_add(&out, ref(c, afmt(c, v->s, ".", attr)));
			break;
		case VK_STR:
			if (v->s && in_names(attr, str_methods, sizeof str_methods / sizeof str_methods[0])) {
				val m = {.kind = VK_STRMETH, .s = v->s, .t = astrdup(c, attr)};
				vs_add(&out, m);
			}
			break;
		case VK_PATH:
			if (strcmp(attr, "parent") == 0) {
				val p = {.kind = VK_PATH, .s = path_dirname(c, v->s)};
				vs_add(&out, p);
			} else if (in_names(attr, path_methods,
					    sizeof path_methods / sizeof path_methods[0])) {
				val m = {.kind = VK_PATHMETH, .s = v->s, .t = astrdup(c, attr)};
				vs_add(&out, m);
			}
			break;
		case VK_DYN:
			/* getattr(module, name).anything: a computed attribute of any module can be
			 * another module (numpy.os), so going further is never harmless. */
			snprintf(why, sizeof why, "%s.%s", v->s, attr);
			vs_add(&out, dyn(astrdup(c, why), false));
			break;
		case VK_NSDICT:
			if (dict_values(attr)) {
				snprintf(why, sizeof why, "vars(%s).%s()", v->s, attr);
				vs_add(&out, dyn(astrdup(c, why), !ck_sensitive_module(v->s)));
				break;
			}
			if (strcmp(attr, "update") == 0 || strcmp(attr, "setdefault") == 0 ||
			    strcmp(attr, "__setitem__") == 0 || strcmp(attr, "pop") == 0 ||
			    strcmp(attr, "clear") == 0 || strcmp(attr, "__delitem__") == 0) {
				/* a removal too: helper's __name__ or len is then builtins' */
				val u = {.kind = VK_NSSET, .s = v->s};
				vs_add(&out, u); /* and setdefault gets, too: on */
			}
			/* fall through */
		case VK_GLOBALS:
			if (dict_getter(attr)) {
				val g = {.kind = VK_BOUNDGET,
					 .s = v->kind == VK_GLOBALS ? "G" : afmt(c, "N", "", v->s)};
				vs_add(&out, g);
			}
			break;
		case VK_SELFMOD: {
			vset r = self_member(c, attr);
			vs_union(&out, &r);
			break;
		}
		default:
			break;
		}
	}
	/* Objects we know nothing about: `m.os` is the os module whatever m is. */
	if (modname && (base->n == 0 || !out.n))
		vs_add(&out, ref(c, attr));
	out.unk |= base->unk;
	return out;
}

static vset subscr_lit(ctx *c, scope *sc, const val *v, const char *key, TSNode at)
{
	vset out = {0};
	char why[300];
	switch (v->kind) {
	case VK_REF:
		if (strcmp(v->s, "sys.modules") == 0) {
			if (key)
				vs_add(&out, ref(c, key));
			else
				vs_add(&out, dyn("sys.modules[<computed>]", false));
		} else if (strcmp(v->s, "builtins") == 0) {
			if (key)
				vs_add(&out, ref(c, afmt(c, "builtins", ".", key)));
			else
				vs_add(&out, dyn("__builtins__[<computed>]", false));
		}
		break;
	case VK_NSDICT:
		if (key) {
			vset b = vs1(ref(c, v->s));
			out = member(c, &b, key);
		} else {
			snprintf(why, sizeof why, "vars(%s)[<computed>]", v->s);
			vs_add(&out, dyn(astrdup(c, why), !ck_sensitive_module(v->s)));
		}
		break;
	case VK_GLOBALS:
		if (key)
			out = lookup(c, sc, key);
		else
		{
			/* t: only calling it (or taking attributes from it) is out of view; reading
			 * a module global to compare or log it is what configurators do */
			val d = dyn("globals()[<computed>]", !c->module_has_sensitive);
			d.t = "read";
			vs_add(&out, d);
		}
		break;
	case VK_TYPEOBJ:
		vs_add(&out, *v); /* __bases__[0], __mro__[-1] */
		break;
	case VK_DYN:
		/* frame.f_globals["os"], f.__globals__["__builtins__"]: an item of what cannot be
		 * followed cannot be followed either, as its attributes (member) */
		snprintf(why, sizeof why, "%s[...]", v->s);
		{
			/* an item of globals()[k] only read is only read too (t) */
			val d = dyn(astrdup(c, why), v->weak);
			d.t = v->t;
			vs_add(&out, d);
		}
		break;
	case VK_STR:
		break;
	default:
		break;
	}
	(void)at;
	return out;
}

static vset subscr(ctx *c, scope *sc, const vset *base, const vset *keys, TSNode at)
{
	vset out = {.unk = base->unk};
	bool computed = vs_computed(keys);
	for (unsigned i = 0; i < base->n; i++) {
		if (computed) {
			vset r = subscr_lit(c, sc, &base->v[i], NULL, at);
			vs_union(&out, &r);
		}
		for (unsigned k = 0; k < keys->n; k++)
			if (keys->v[k].kind == VK_STR && keys->v[k].s) {
				vset r = subscr_lit(c, sc, &base->v[i], keys->v[k].s, at);
				vs_union(&out, &r);
			}
	}
	return out;
}

static vset getattr_val(ctx *c, const vset *obj, const vset *names)
{
	vset out = {.unk = obj->unk};
	bool computed = vs_computed(names);
	if (computed) {
		char why[300];
		c->names_kill = true; /* getattr(len, name): name may be "__self__" */
		for (unsigned i = 0; i < obj->n; i++) {
			const val *v = &obj->v[i];
			if (v->kind == VK_REF) {
				snprintf(why, sizeof why, "getattr(%s, <computed>)", v->s);
				vs_add(&out, dyn(astrdup(c, why), !ck_sensitive_module(v->s)));
			} else if (v->kind == VK_NSDICT || v->kind == VK_GLOBALS || v->kind == VK_DYN ||
				   v->kind == VK_SELFMOD) {
				vs_add(&out, dyn("getattr(<namespace>, <computed>)", false));
			}
		}
	}
	for (unsigned k = 0; k < names->n; k++)
		if (names->v[k].kind == VK_STR && names->v[k].s) {
			vset r = member(c, obj, names->v[k].s);
			vs_union(&out, &r);
		}
	return out;
}

/* ---- strings ---------------------------------------------------------------------------------- */

static void put_utf8(lb_buf *b, uint32_t cp)
{
	char o[4];
	size_t n;
	if (cp < 0x80) {
		o[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		o[0] = (char)(0xf0 | (cp >> 18));
		o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	lb_buf_append(b, o, n);
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Python's escapes; false for \N{...}, which needs the Unicode name table. */
static bool unescape(const char *s, size_t n, lb_buf *b)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 >= n) {
			/* the whole run of plain bytes at once */
			size_t j = i + 1;
			while (j < n && (s[j] != '\\' || j + 1 >= n))
				j++;
			lb_buf_append(b, s + i, j - i);
			i = j - 1;
			continue;
		}
		char e = s[++i];
		switch (e) {
		case '\n': break;
		case '\\': lb_buf_append(b, "\\", 1); break;
		case '\'': lb_buf_append(b, "'", 1); break;
		case '"': lb_buf_append(b, "\"", 1); break;
		case 'a': lb_buf_append(b, "\a", 1); break;
		case 'b': lb_buf_append(b, "\b", 1); break;
		case 'f': lb_buf_append(b, "\f", 1); break;
		case 'n': lb_buf_append(b, "\n", 1); break;
		case 'r': lb_buf_append(b, "\r", 1); break;
		case 't': lb_buf_append(b, "\t", 1); break;
		case 'v': lb_buf_append(b, "\v", 1); break;
		case 'x':
		case 'u':
		case 'U': {
			int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
			uint32_t cp = 0;
			int k;
			for (k = 0; k < digits && i + 1 < n && hexval(s[i + 1]) >= 0; k++)
				cp = cp * 16 + (uint32_t)hexval(s[++i]);
			if (k < digits || cp > 0x10ffff)
				return false;
			put_utf8(b, cp);
			break;
		}
		case 'N':
			return false;
		default:
			if (e >= '0' && e <= '7') {
				uint32_t cp = (uint32_t)(e - '0');
				for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
					cp = cp * 8 + (uint32_t)(s[++i] - '0');
				put_utf8(b, cp);
			} else {
				lb_buf_append(b, s + i - 1, 2);
			}
		}
	}
	return true;
}

static void string_facts(ctx *c, const char *s)
{
	if (strstr(s, "TIME_ESTIMATE"))
		c->h_estimate = true;
	if (strstr(s, "results.json") || strstr(s, "final_info.json"))
		c->h_results = true;
}

static vset fold_string(ctx *c, scope *sc, TSNode n)
{
	bool raw_s = false, bytes = false, fstr = false, tstr = false;
	lb_buf b = {0};
	bool known = true;
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		ck_kind t = kind(c, ch);
		if (t == K_STRING_START) {
			const char *p = text(c, ch);
			for (; *p && *p != '"' && *p != '\''; p++) {
				if (*p == 'r' || *p == 'R')
					raw_s = true;
				else if (*p == 'b' || *p == 'B')
					bytes = true;
				else if (*p == 'f' || *p == 'F' || *p == 't' || *p == 'T') {
					fstr = true;
					tstr = *p == 't' || *p == 'T';
				}
			}
		} else if (t == K_STRING_CONTENT) {
			uint32_t a = ts_node_start_byte(ch), e = ts_node_end_byte(ch);
			if (e > c->in->len || a > e)
				continue;
			if (raw_s)
				lb_buf_append(&b, c->src + a, e - a);
			else if (!unescape(c->src + a, e - a, &b))
				known = false;
		} else if (t == K_INTERPOLATION) {
			TSNode ex = field(c, ch, F_EXPRESSION);
			/* An f-string formats the value into text (its type's __format__, no name
			 * looked up); a t-string hands the value itself to whoever takes the
			 * template. */
			vset v = ts_node_is_null(ex)   ? (vset){0}
				 : fstr && !tstr ? use_names(c, sc, ex, 0, false)
						 : use(c, sc, ex);
			const char *s = vs_str(&v);
			if (!fstr || !s || !ts_node_is_null(field(c, ch, F_TYPE_CONVERSION)) ||
			    !ts_node_is_null(field(c, ch, F_FORMAT_SPECIFIER)))
				known = false;
			else
				lb_buf_puts(&b, s);
		}
	}
	vset out = {0};
	if (b.data)
		string_facts(c, b.data);
	if (known && !bytes && b.len <= STR_MAX)
		vs_add(&out, str(astrndup(c, b.data ? b.data : "", b.len)));
	else
		vs_add(&out, str(NULL));
	lb_buf_free(&b);
	return out;
}

static vset concat(ctx *c, const vset *a, const vset *b)
{
	vset out = {.unk = a->unk || b->unk};
	for (unsigned i = 0; i < a->n; i++)
		for (unsigned k = 0; k < b->n; k++) {
			const val *x = &a->v[i], *y = &b->v[k];
			if (x->kind != VK_STR || y->kind != VK_STR) {
				out.unk = true; /* "A" + x where x may be no string known */
				continue;
			}
			if (!x->s || !y->s || strlen(x->s) + strlen(y->s) > STR_MAX)
				vs_add(&out, str(NULL));
			else
				vs_add(&out, str(afmt(c, x->s, "", y->s)));
		}
	if (!out.n && (vs_has_str(a) || vs_has_str(b)))
		vs_add(&out, str(NULL));
	return out;
}

static const char *path_join(ctx *c, const char *a, const char *b)
{
	if (b[0] == '/')
		return b;
	size_t la = strlen(a);
	if (la && a[la - 1] == '/')
		return afmt(c, a, "", b);
	return afmt(c, a, "/", b);
}

static void import_event(ctx *c, const char *q, TSNode at, bool report_module);

/* ---- calls ------------------------------------------------------------------------------------ */

#define MAX_ARGS 16
typedef struct args {
	TSNode pos[MAX_ARGS];
	unsigned npos;
	TSNode kw[MAX_ARGS];
	const char *kwname[MAX_ARGS];
	unsigned nkw;
	bool splat; /* *args or **kwargs: positions cannot be trusted */
	bool used[MAX_ARGS];
	bool have_pre0; /* pre0: the first argument, evaluated and reported already */
	vset pre0;
	bool judged; /* call_ref judged the call whole: the callee is not reported again */
} args;

/* ks gets the argument list's named children, which eval_call walks again */
static void collect_args(ctx *c, TSNode list, args *a, kids *ks)
{
	memset(a, 0, sizeof *a);
	ks->v = ks->inl;
	ks->n = 0;
	if (ts_node_is_null(list) || !is(c, list, K_ARGUMENT_LIST))
		return;
	kids_of(c, list, ks);
	for (uint32_t i = 0; i < ks->n; i++) {
		TSNode ch = ks->v[i];
		ck_kind k = kind(c, ch);
		if (k == K_COMMENT)
			continue;
		if (k == K_KEYWORD_ARGUMENT) {
			if (a->nkw < MAX_ARGS) {
				a->kwname[a->nkw] = text(c, field(c, ch, F_NAME));
				a->kw[a->nkw++] = field(c, ch, F_VALUE);
			}
		} else if (k == K_LIST_SPLAT || k == K_DICTIONARY_SPLAT) {
			a->splat = true;
		} else if (a->npos < MAX_ARGS) {
			a->pos[a->npos++] = ch;
		}
	}
}

static TSNode arg(const args *a, unsigned pos, const char *kw)
{
	if (pos < a->npos)
		return a->pos[pos];
	for (unsigned i = 0; i < a->nkw; i++)
		if (kw && strcmp(a->kwname[i], kw) == 0)
			return a->kw[i];
	TSNode null = {0};
	return null;
}

/* expanduser in the sandbox: `~` and `~/...` are under its HOME (LB_SANDBOX_HOME, the private
 * writable /tmp), as the sandbox sets it, so that the check, the runtime gate and the run
 * agree on where a write lands; NULL for `~user`, another user's home, which is not known. */
static const char *sandbox_home(ctx *c, const char *p)
{
	if (!p || p[0] != '~' || c->in->cfg->real_home)
		return p; /* the real home: left as `~`, which path_allowed refuses */
	if (p[1] != '\0' && p[1] != '/')
		return NULL;
	return afmt(c, LB_SANDBOX_HOME, "", p + 1);
}

static bool path_allowed(const ctx *c, const char *p)
{
	if (p[0] == '~' && c->in->cfg->real_home)
		return false;
	/* A `~` left unexpanded is a directory named `~` under the working directory: relative,
	 * like any other name (expanduser is modelled where it is called, sandbox_home). */
	/* Normalise . and .. lexically; a relative path must stay inside the experiment. */
	char norm[1100];
	size_t o = 0;
	int depth = 0;
	bool abs = p[0] == '/';
	const char *s = p;
	while (*s) {
		while (*s == '/')
			s++;
		const char *e = s;
		while (*e && *e != '/')
			e++;
		size_t k = (size_t)(e - s);
		if (k == 0)
			break;
		if (k == 1 && s[0] == '.') {
		} else if (k == 2 && s[0] == '.' && s[1] == '.') {
			if (depth == 0) {
				if (!abs)
					return false;
			} else {
				depth--;
				while (o > 0 && norm[o - 1] != '/')
					o--;
				if (o > 0)
					o--;
			}
		} else {
			if (o + k + 2 >= sizeof norm)
				return false;
			norm[o++] = '/';
			memcpy(norm + o, s, k);
			o += k;
			depth++;
		}
		s = e;
	}
	norm[o] = '\0';
	if (!abs)
		return true;
	if (o == 0)
		return false;
	static const char *const std_ok[] = {"/tmp", "/var/tmp", "/dev/shm"};
	static const char *const always_ok[] = {"/dev/null", "/dev/stdout", "/dev/stderr"};
	for (size_t i = 0; i < 3; i++)
		if (strcmp(norm, always_ok[i]) == 0)
			return true;
	const lb_check_config *cfg = c->in->cfg;
	if (cfg->policy != LB_CHECK_STRICT)
		for (size_t i = 0; i < 3; i++) {
			size_t k = strlen(std_ok[i]);
			if (strncmp(norm, std_ok[i], k) == 0 && (norm[k] == '\0' || norm[k] == '/'))
				return true;
		}
	for (size_t i = 0; i < cfg->output_paths.n; i++) {
		const ck_item *it = &cfg->output_paths.v[i];
		if (it->project && !cfg->trust_project)
			continue;
		size_t k = strlen(it->s);
		while (k > 1 && it->s[k - 1] == '/')
			k--;
		if (strncmp(norm, it->s, k) == 0 && (norm[k] == '\0' || norm[k] == '/' || k == 1))
			return true;
	}
	return false;
}

static void need(ctx *c, const char *kind, TSNode at, const char *via, const char *path,
		 bool optional);

/* A write outside the experiment needs a writable mount of the directory it writes into;
 * the sandbox's own /tmp, /var/tmp and /dev/shm are writable already. */
static void write_need(ctx *c, TSNode at, const char *what, const char *path)
{
	static const char *const sandbox_own[] = {"/tmp", "/var/tmp", "/dev/shm"};
	for (size_t i = 0; i < 3; i++) {
		size_t k = strlen(sandbox_own[i]);
		if (strncmp(path, sandbox_own[i], k) == 0 && (path[k] == '/' || path[k] == '\0'))
			return;
	}
	if (path[0] != '/')
		return; /* ../x: above the experiment, where no mount point can be made */
	const char *slash = strrchr(path, '/');
	const char *dir = astrndup(c, path, slash && slash != path ? (size_t)(slash - path) : 1);
	if (dir)
		need(c, "write_outside", at, what, dir, false);
}

/* A write through open()-like calls: mode decides whether it writes, the literal path where. */
static void check_write(ctx *c, TSNode at, const vset *paths, const vset *modes, bool mode_given,
			const char *what)
{
	if (!mode_given)
		return;
	bool writes = false;
	for (unsigned i = 0; i < modes->n; i++) {
		const val *m = &modes->v[i];
		if (m->kind != VK_STR || !m->s || strpbrk(m->s, "wax+"))
			writes = true;
	}
	if (!modes->n || modes->unk)
		writes = true;
	if (!writes)
		return;
	bool literal = false;
	char msg[700];
	for (unsigned i = 0; i < paths->n; i++) {
		const val *p = &paths->v[i];
		if ((p->kind != VK_STR && p->kind != VK_PATH) || !p->s)
			continue;
		literal = true;
		if (!path_allowed(c, p->s)) {
			snprintf(msg, sizeof msg, "%s writes to '%.400s', outside the experiment directory "
				 "and the output paths", what, p->s);
			raw(c, R_WRITE, at, what, msg);
			write_need(c, at, what, p->s);
		}
	}
	if (!literal || paths->unk) {
		snprintf(msg, sizeof msg, "%s writes to a path computed at run time", what);
		raw(c, R_WRITE_UNKNOWN, at, what, msg);
	}
}

static bool is_time_call(const char *q)
{
	return strcmp(q, "time.time") == 0 || strcmp(q, "time.perf_counter") == 0 ||
	       strcmp(q, "time.monotonic") == 0 || strcmp(q, "time.process_time") == 0 ||
	       strcmp(q, "time.time_ns") == 0 || strcmp(q, "time.perf_counter_ns") == 0 ||
	       strcmp(q, "time.monotonic_ns") == 0 || strcmp(q, "datetime.datetime.now") == 0;
}

/* ---- metric lines (LB404) -------------------------------------------------------------------
 * Whether print() prints a metric line is decided by the collector's own parser: the call's
 * output is rebuilt as a template (literal text as written, LB_METRIC_HOLE for anything computed
 * at run time) and handed to lb_metric_template_parse, so code the check passes prints lines
 * that labbox collects, and a log line (`INFO: ...`) or a progress line (`Epoch: ...`) does not
 * count (docs/check.md). */

#define TEMPLATE_MAX 4096

static void put_hole(lb_buf *b)
{
	char h = LB_METRIC_HOLE;
	lb_buf_append(b, &h, 1);
}

/* "%.3f" conversions of a %-format become holes; "%%" is a '%'. */
static void percent_holes(const char *s, size_t n, lb_buf *b)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			lb_buf_append(b, s + i, 1);
			continue;
		}
		if (i + 1 < n && s[i + 1] == '%') {
			lb_buf_append(b, "%", 1);
			i++;
			continue;
		}
		size_t k = i + 1;
		if (k < n && s[k] == '(') {
			while (k < n && s[k] != ')')
				k++;
			k++;
		}
		while (k < n && strchr("#0- +.*0123456789hlL", s[k]))
			k++;
		if (k < n && strchr("diouxXeEfFgGcrsa", s[k])) {
			put_hole(b);
			i = k;
		} else {
			lb_buf_append(b, s + i, 1);
		}
	}
}

/* "{...}" replacement fields of str.format become holes; "{{" and "}}" are braces. */
static void brace_holes(const char *s, size_t n, lb_buf *b)
{
	for (size_t i = 0; i < n; i++) {
		if ((s[i] == '{' || s[i] == '}') && i + 1 < n && s[i + 1] == s[i]) {
			lb_buf_append(b, s + i, 1);
			i++;
		} else if (s[i] == '{') {
			const char *e = memchr(s + i, '}', n - i);
			put_hole(b);
			i = e ? (size_t)(e - s) : n;
		} else {
			lb_buf_append(b, s + i, 1);
		}
	}
}

static void string_template(ctx *c, TSNode n, lb_buf *b)
{
	bool raw_s = false, fstr = false;
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		ck_kind t = kind(c, ch);
		if (t == K_STRING_START) {
			for (const char *p = text(c, ch); *p && *p != '"' && *p != '\''; p++) {
				raw_s |= *p == 'r' || *p == 'R';
				fstr |= *p == 'f' || *p == 'F';
			}
		} else if (t == K_STRING_CONTENT) {
			uint32_t a = ts_node_start_byte(ch), e = ts_node_end_byte(ch);
			if (e > c->in->len || a > e)
				continue;
			lb_buf tmp = {0};
			if (raw_s || !unescape(c->src + a, e - a, &tmp)) {
				lb_buf_free(&tmp);
				lb_buf_append(&tmp, c->src + a, e - a);
			}
			/* An f-string's "{{" is one brace. */
			if (fstr && tmp.data)
				brace_holes(tmp.data, tmp.len, b);
			else if (tmp.data)
				lb_buf_append(b, tmp.data, tmp.len);
			lb_buf_free(&tmp);
		} else if (t == K_INTERPOLATION) {
			put_hole(b);
		}
	}
}

static void print_template(ctx *c, TSNode n, lb_buf *b, int depth)
{
	ck_kind t = kind(c, n);
	if (depth > 16 || b->len > TEMPLATE_MAX) {
		put_hole(b);
		return;
	}
	if (t == K_STRING) {
		string_template(c, n, b);
		return;
	}
	if (t == K_CONCATENATED_STRING) {
		kids ks;
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++)
			if (is(c, ks.v[i], K_STRING))
				string_template(c, ks.v[i], b);
		return;
	}
	if (t == K_PARENTHESIZED_EXPRESSION && ts_node_named_child_count(n) == 1) {
		print_template(c, ts_node_named_child(n, 0), b, depth + 1);
		return;
	}
	if (t == K_BINARY_OPERATOR) {
		TSNode op = field(c, n, F_OPERATOR);
		const char *ot = ts_node_is_null(op) ? "" : text(c, op);
		TSNode left = field(c, n, F_LEFT), right = field(c, n, F_RIGHT);
		if (strcmp(ot, "+") == 0 && !ts_node_is_null(left) && !ts_node_is_null(right)) {
			print_template(c, left, b, depth + 1);
			print_template(c, right, b, depth + 1);
			return;
		}
		if (strcmp(ot, "%") == 0 && !ts_node_is_null(left) &&
		    (is(c, left, K_STRING) || is(c, left, K_CONCATENATED_STRING))) {
			lb_buf tmp = {0};
			print_template(c, left, &tmp, depth + 1);
			if (tmp.data)
				percent_holes(tmp.data, tmp.len, b);
			lb_buf_free(&tmp);
			return;
		}
	}
	if (t == K_CALL) {
		TSNode fn = field(c, n, F_FUNCTION);
		if (!ts_node_is_null(fn) && is(c, fn, K_ATTRIBUTE)) {
			TSNode obj = field(c, fn, F_OBJECT), at = field(c, fn, F_ATTRIBUTE);
			if (!ts_node_is_null(obj) && !ts_node_is_null(at) &&
			    strcmp(text(c, at), "format") == 0 &&
			    (is(c, obj, K_STRING) || is(c, obj, K_CONCATENATED_STRING))) {
				lb_buf tmp = {0};
				print_template(c, obj, &tmp, depth + 1);
				if (tmp.data)
					brace_holes(tmp.data, tmp.len, b);
				lb_buf_free(&tmp);
				return;
			}
		}
	}
	put_hole(b);
}

/* print(a, b, sep=...) or sys.stdout.write(a): is any line it prints a metric line? */
static void metric_line_facts(ctx *c, TSNode arglist)
{
	if (c->h_metrics || ts_node_is_null(arglist))
		return;
	lb_buf b = {0}, sep = {0};
	bool any = false;
	kids ks;
	kids_of(c, arglist, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		if (is(c, ch, K_KEYWORD_ARGUMENT)) {
			TSNode nm = field(c, ch, F_NAME), v = field(c, ch, F_VALUE);
			if (!ts_node_is_null(nm) && !ts_node_is_null(v) &&
			    strcmp(text(c, nm), "sep") == 0 && is(c, v, K_STRING))
				string_template(c, v, &sep);
		}
	}
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		if (is(c, ch, K_KEYWORD_ARGUMENT) || is(c, ch, K_COMMENT))
			continue;
		if (any) {
			if (sep.data)
				lb_buf_append(&b, sep.data, sep.len);
			else
				lb_buf_append(&b, " ", 1);
		}
		print_template(c, ch, &b, 0);
		any = true;
	}
	for (size_t s = 0; b.data && s < b.len && !c->h_metrics;) {
		/* Split as the collector splits what is printed: at '\n' and at '\r'. */
		size_t e = s + lb_metric_line_end(b.data + s, b.len - s);
		lb_metric_line ml;
		if (e - s <= LB_METRIC_LINE_MAX && lb_metric_template_parse(b.data + s, e - s, &ml))
			c->h_metrics = true;
		s = e + 1;
	}
	lb_buf_free(&b);
	lb_buf_free(&sep);
}

/* ---- logged metric lines (LB404) ------------------------------------------------------------
 * The collector reads Python logging's INFO lines, the message read as a line, so
 * `logger.info("acc: %.3f", acc)` reports a metric when logging prints INFO lines in a format
 * whose prefix the collector knows. The messages and what the file configures (basicConfig's
 * level, format and stream, Formatters, StreamHandlers, setLevel, dictConfig) are gathered over
 * the file and judged at its end (log_facts_settle): a basicConfig often comes after the
 * functions that log. */

#define LOG_LINES_MAX 64

static void log_keep(ctx *c, logline **list, unsigned *n, const char *t, size_t len, char style)
{
	if (!t || *n >= LOG_LINES_MAX)
		return;
	logline *l = amalloc(c, sizeof *l);
	if (!l)
		return;
	*l = (logline){.t = astrndup(c, t, len), .n = len, .style = style, .next = *list};
	*list = l;
	(*n)++;
}

/* Whether a level lets INFO through: INFO, DEBUG, NOTSET, a number up to 20. One computed at
 * run time (a flag's value) is given the benefit of the doubt: the check cannot know it. */
static bool log_level_info(ctx *c, TSNode lv)
{
	const char *t = ts_node_is_null(lv) ? NULL : text(c, lv);
	if (!t)
		return false;
	static const char *const above[] = {"WARN", "ERROR", "CRITICAL", "FATAL"};
	for (size_t i = 0; i < sizeof above / sizeof *above; i++)
		if (strcasestr(t, above[i]))
			return false;
	if (t[0] >= '0' && t[0] <= '9')
		return strtol(t, NULL, 0) <= 20;
	return true;
}

/* logging.info(msg, *args): logging applies msg % args only when args follow, and prints msg
 * as written without; loguru applies str.format when given any argument. */
static void log_message(ctx *c, const args *a, unsigned at, char style)
{
	if (at >= a->npos)
		return;
	lb_buf m = {0}, b = {0};
	print_template(c, a->pos[at], &m, 0);
	bool fmt = a->npos > at + 1 || a->splat || (style == 'L' && a->nkw > 0);
	if (fmt && m.data) {
		if (style == 'L')
			brace_holes(m.data, m.len, &b);
		else
			percent_holes(m.data, m.len, &b);
		log_keep(c, &c->log_msgs, &c->nlog_msgs, b.data, b.len, style);
	} else if (m.data) {
		log_keep(c, &c->log_msgs, &c->nlog_msgs, m.data, m.len, style);
	}
	lb_buf_free(&m);
	lb_buf_free(&b);
}

static const char log_default_format[] = "%(levelname)s:%(name)s:%(message)s";

/* A format the code gives (basicConfig's format=, a Formatter's fmt): a literal or a constant;
 * one computed at run time is taken as logging's default, the likeliest. */
static void log_format(ctx *c, scope *sc, TSNode f, TSNode style)
{
	const char *st = ts_node_is_null(style) ? "" : text(c, style);
	char sty = strchr(st, '{') ? '{' : strchr(st, '$') ? '$' : '%';
	const char *s = NULL;
	if (!ts_node_is_null(f)) {
		vset v = eval(c, sc, f);
		s = vs_str(&v);
	}
	if (!s) {
		s = log_default_format;
		sty = '%';
	}
	log_keep(c, &c->log_fmts, &c->nlog_fmts, s, strlen(s), sty);
}

static bool last_name_has_log(ctx *c, TSNode obj)
{
	const char *t = ts_node_is_null(obj) ? NULL : text(c, obj);
	if (!t)
		return false;
	const char *dot = strrchr(t, '.');
	return strcasestr(dot ? dot + 1 : t, "log") != NULL;
}

/* What one call adds: a message logged at INFO, or a piece of logging's configuration. A
 * method called on a name the analysis cannot follow (a logger got from getLogger, self.log)
 * is a logger's when that name says so ("logger", "log", "LOGGER"). */
static void log_call_facts(ctx *c, scope *sc, TSNode fn, const vset *callee, const args *a)
{
	const char *q = NULL;
	for (unsigned i = 0; i < callee->n && !q; i++)
		if (callee->v[i].kind == VK_REF)
			q = callee->v[i].s;
	if (q && strncmp(q, "logging.", 8) != 0 && strncmp(q, "loguru.", 7) != 0)
		return;
	if (q && strcmp(q, "logging.basicConfig") == 0) {
		c->log_basic = true;
		TSNode lv = arg(a, 99, "level"), stream = arg(a, 99, "stream");
		c->log_level_on |= log_level_info(c, lv);
		log_format(c, sc, arg(a, 99, "format"), arg(a, 99, "style"));
		if (!ts_node_is_null(stream) && strstr(text(c, stream), "stdout"))
			c->log_stdout = true;
		return;
	}
	if (q && strcmp(q, "logging.Formatter") == 0) {
		log_format(c, sc, arg(a, 0, "fmt"), arg(a, 2, "style"));
		return;
	}
	if (q && strcmp(q, "logging.StreamHandler") == 0) {
		TSNode stream = arg(a, 0, "stream");
		c->log_handler = true;
		if (!ts_node_is_null(stream) && strstr(text(c, stream), "stdout"))
			c->log_stdout = true;
		return;
	}
	if (q && (strcmp(q, "logging.config.dictConfig") == 0 ||
		  strcmp(q, "logging.config.fileConfig") == 0)) {
		c->log_dict = true;
		return;
	}
	const char *meth = q ? strrchr(q, '.') + 1 : NULL;
	if (!q) {
		if (callee->n > 0 || !is(c, fn, K_ATTRIBUTE))
			return;
		TSNode at = field(c, fn, F_ATTRIBUTE);
		meth = ts_node_is_null(at) ? NULL : text(c, at);
		if (!meth || (strcmp(meth, "setLevel") != 0 && !last_name_has_log(c, field(c, fn, F_OBJECT))))
			return;
	}
	char style = q && strncmp(q, "loguru.", 7) == 0 ? 'L' : '%';
	if (strcmp(meth, "setLevel") == 0) {
		c->log_set_info |= log_level_info(c, arg(a, 0, "level"));
	} else if (strcmp(meth, "info") == 0) {
		log_message(c, a, 0, style);
	} else if (strcmp(meth, "log") == 0 && a->npos >= 2 && style == '%') {
		const char *lv = text(c, a->pos[0]);
		if (lv && (strstr(lv, "INFO") || strcmp(lv, "20") == 0))
			log_message(c, a, 1, style);
	}
}

/* A field of a logging format, as logging fills it for an INFO record of the experiment. */
static const char *log_field_value(const char *name, size_t n)
{
	static const struct {
		const char *name, *value;
	} f[] = {
		{"asctime", "2026-01-01 10:00:00,123"}, {"time", "2026-01-01 10:00:00.123"},
		{"levelname", "INFO"}, {"level", "INFO"}, {"levelno", "20"}, {"name", "__main__"},
		{"module", "main"}, {"filename", "main.py"}, {"funcName", "main"},
		{"function", "main"}, {"lineno", "12"}, {"line", "12"}, {"msecs", "123"},
		{"created", "1767261600.123"}, {"relativeCreated", "1234.5"}, {"process", "4321"},
		{"processName", "MainProcess"}, {"thread", "140001"}, {"threadName", "MainThread"},
		{"pathname", "/tmp/exp/main.py"}, {"taskName", "None"},
	};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (strlen(f[i].name) == n && memcmp(f[i].name, name, n) == 0)
			return f[i].value;
	return "x";
}

/* One field into out: the message's template, or a value padded as the spec says ("-8",
 * "8", "<8", ">8"; printf pads on the left by default, str.format a string on the right). */
static void log_put_field(lb_buf *out, const char *name, size_t n, const char *spec, size_t sn,
			  const logline *msg, bool printf_style)
{
	if (n == 7 && memcmp(name, "message", 7) == 0) {
		lb_buf_append(out, msg->t, msg->n);
		return;
	}
	const char *v = log_field_value(name, n);
	bool left = !printf_style;
	size_t width = 0;
	for (size_t i = 0; i < sn; i++) {
		if (spec[i] == '-' || spec[i] == '<')
			left = true;
		else if (spec[i] == '>')
			left = false;
		else if (spec[i] >= '0' && spec[i] <= '9' && (i == 0 || spec[i - 1] != '.'))
			width = width * 10 + (size_t)(spec[i] - '0');
		else if (spec[i] == '.')
			break;
	}
	size_t len = strlen(v), pad = width > len && width < 64 ? width - len : 0;
	for (size_t i = 0; !left && i < pad; i++)
		lb_buf_append(out, " ", 1);
	lb_buf_append(out, v, len);
	for (size_t i = 0; left && i < pad; i++)
		lb_buf_append(out, " ", 1);
}

/* A record's line in a format: "%(name)-8s", "{name:<8}" or "${name}" fields filled. */
static void log_render(const logline *f, const logline *msg, lb_buf *out)
{
	const char *s = f->t;
	size_t n = f->n;
	for (size_t i = 0; i < n; i++) {
		if (f->style == '%' && s[i] == '%' && i + 1 < n && s[i + 1] == '(') {
			const char *close = memchr(s + i + 2, ')', n - i - 2);
			if (!close)
				break;
			size_t k = (size_t)(close - s) + 1, spec = k;
			while (k < n && strchr("#0- +.0123456789", s[k]))
				k++;
			log_put_field(out, s + i + 2, (size_t)(close - s) - i - 2, s + spec, k - spec,
				      msg, true);
			i = k; /* the conversion letter */
		} else if (f->style == '%' && s[i] == '%' && i + 1 < n && s[i + 1] == '%') {
			lb_buf_append(out, "%", 1);
			i++;
		} else if ((f->style == '{' || f->style == '$') && s[i] == (f->style == '{' ? '{' : '$') &&
			   i + 1 < n && s[i + 1] == s[i]) {
			lb_buf_append(out, s + i, 1);
			i++;
		} else if ((f->style == '{' && s[i] == '{') ||
			   (f->style == '$' && s[i] == '$' && i + 1 < n && s[i + 1] == '{')) {
			size_t a = i + (f->style == '$' ? 2 : 1);
			const char *close = memchr(s + a, '}', n - a);
			if (!close)
				break;
			size_t e = (size_t)(close - s);
			const char *colon = memchr(s + a, ':', e - a);
			size_t ne = colon ? (size_t)(colon - s) : e;
			log_put_field(out, s + a, ne - a, colon ? colon + 1 : "", colon ? e - ne - 1 : 0,
				      msg, false);
			i = e;
		} else {
			lb_buf_append(out, s + i, 1);
		}
	}
}

/* Whether a message, printed in a format, gives a line the collector reads: on stdout any
 * metric line, on stderr (logging's default stream) only a logging INFO line. */
static bool log_line_read(const logline *f, const logline *msg, bool to_stdout)
{
	lb_buf b = {0};
	bool read = false;
	log_render(f, msg, &b);
	for (size_t s = 0; b.data && s < b.len && !read;) {
		size_t e = s + lb_metric_line_end(b.data + s, b.len - s);
		lb_metric_line ml;
		read = e - s <= LB_METRIC_LINE_MAX && lb_metric_template_parse(b.data + s, e - s, &ml) &&
		       (to_stdout || ml.logged);
		s = e + 1;
	}
	lb_buf_free(&b);
	return read;
}

/* The logged messages judged with what the file configured. *unprinted: a message would be
 * read, but nothing configures logging to print INFO lines (its default level is WARNING). */
static void log_facts_settle(ctx *c, bool *unprinted)
{
	static const logline deflt = {log_default_format, sizeof log_default_format - 1, '%', NULL};
	static const char loguru_fmt[] = "{time} | {level: <8} | {name}:{function}:{line} - {message}";
	static const logline loguru = {loguru_fmt, sizeof loguru_fmt - 1, '{', NULL};
	static const logline alone = {"%(message)s", 11, '%', NULL};
	bool on = (c->log_basic && c->log_level_on) ||
		  ((c->log_basic || c->log_handler) && c->log_set_info) || c->log_dict;
	*unprinted = false;
	for (const logline *m = c->log_msgs; m && !c->h_metrics; m = m->next) {
		if (m->style == 'L') {
			c->h_metrics = log_line_read(&loguru, m, false);
			continue;
		}
		if (!on) {
			*unprinted |= log_line_read(&deflt, m, false);
			continue;
		}
		/* A handler without a formatter prints the message alone; dictConfig's formats are
		 * not followed: the message alone on stdout and logging's default are tried. */
		if (!c->log_fmts || c->log_dict)
			c->h_metrics = log_line_read(c->log_handler || c->log_dict ? &alone : &deflt, m,
						     c->log_stdout || c->log_dict) ||
				       (c->log_dict && log_line_read(&deflt, m, false));
		for (const logline *f = c->log_fmts; f && !c->h_metrics; f = f->next)
			c->h_metrics = log_line_read(f, m, c->log_stdout);
	}
}

static bool kw_is(ctx *c, const args *a, const char *kw, const char *want)
{
	for (unsigned i = 0; i < a->nkw; i++)
		if (strcmp(a->kwname[i], kw) == 0) {
			const char *t = text(c, a->kw[i]);
			return t && strcmp(t, want) == 0;
		}
	return false;
}

/* Loaders that run what the data names: research code loads its own pickles (CIFAR's
 * batches), so this warns; the runtime gate refuses a pickle naming more than plain data. */
static bool deserialize_call(ctx *c, scope *sc, const char *q, TSNode node, args *a)
{
	static const char *const always[] = {
		"pickle.load", "pickle.loads", "pickle.Unpickler", "marshal.load", "marshal.loads",
		"shelve.open", "shelve.Shelf", "shelve.DbfilenameShelf", "dill.load", "dill.loads",
		"joblib.load", "pandas.read_pickle", "yaml.unsafe_load", "yaml.unsafe_load_all",
		"numpy.lib.format.read_array",
	};
	bool hit = in_names(q, always, sizeof always / sizeof *always);
	const char *why = "it can run code named by the data";
	if (!hit && strcmp(q, "torch.load") == 0) {
		hit = !kw_is(c, a, "weights_only", "True");
		why = "without weights_only=True it unpickles arbitrary objects";
	}
	if (!hit && strcmp(q, "numpy.load") == 0) {
		hit = kw_is(c, a, "allow_pickle", "True");
		why = "allow_pickle=True unpickles object arrays";
	}
	if (!hit && (strcmp(q, "yaml.load") == 0 || strcmp(q, "yaml.load_all") == 0)) {
		TSNode l = arg(a, 1, "Loader");
		const char *t = ts_node_is_null(l) ? NULL : text(c, l);
		hit = !t || !(strstr(t, "SafeLoader") || strstr(t, "BaseLoader"));
		why = "a loader other than SafeLoader builds arbitrary Python objects";
	}
	if (!hit)
		return false;
	char msg[600];
	snprintf(msg, sizeof msg, "call of `%s`: deserialization, %s", q, why);
	raw(c, R_DESERIALIZE, node, q, msg);
	(void)sc;
	return false; /* its arguments are still uses */
}

/* Calls that create, move or re-permission a file at a path they are given. */
static bool file_call(ctx *c, scope *sc, const char *q, TSNode node, args *a)
{
	static const struct {
		const char *name;
		unsigned pos;
		const char *kw;
	} dests[] = {
		{"os.replace", 1, "dst"},	  {"os.rename", 1, "dst"},
		{"os.renames", 1, "new"},	  {"os.chmod", 0, "path"},
		{"os.lchmod", 0, "path"},	  {"os.chown", 0, "path"},
		{"os.symlink", 1, "dst"},	  {"os.link", 1, "dst"},
		{"os.truncate", 0, "path"},	  {"os.mkfifo", 0, "path"},
		{"sqlite3.connect", 0, "database"}, {"logging.FileHandler", 0, "filename"},
		{"logging.handlers.RotatingFileHandler", 0, "filename"},
		{"logging.handlers.TimedRotatingFileHandler", 0, "filename"},
		{"logging.handlers.WatchedFileHandler", 0, "filename"},
		{"logging.basicConfig", 99, "filename"},
		/* what moves a file away removes it where it was */
		{"os.replace", 0, "src"},	  {"os.rename", 0, "src"},
		{"os.renames", 0, "old"},	  {"shutil.move", 0, "src"},
		{"shutil.move", 1, "dst"},	  {"shutil.copy", 1, "dst"},
		{"shutil.copy2", 1, "dst"},	  {"shutil.copyfile", 1, "dst"},
		{"shutil.copytree", 1, "dst"},	  {"shutil.copymode", 1, "dst"},
		{"shutil.copystat", 1, "dst"},	  {"shutil.rmtree", 0, "path"},
		{"shutil.chown", 0, "path"},	  {"shutil.make_archive", 0, "base_name"},
		{"os.remove", 0, "path"},	  {"os.unlink", 0, "path"},
		{"os.rmdir", 0, "path"},	  {"os.removedirs", 0, "name"},
		{"os.mkdir", 0, "path"},	  {"os.makedirs", 0, "name"},
		{"os.utime", 0, "path"},	  {"os.mknod", 0, "path"},
		{"os.lchown", 0, "path"},	  {"os.chflags", 0, "path"},
		{"os.lchflags", 0, "path"},
	};
	if (strcmp(q, "io.FileIO") == 0) {
		TSNode f = arg(a, 0, "file"), m = arg(a, 1, "mode");
		vset paths = {0}, modes = {0};
		if (!ts_node_is_null(f))
			paths = use(c, sc, f);
		if (!ts_node_is_null(m))
			modes = use(c, sc, m);
		for (unsigned i = 0; i < a->npos && i < 2; i++)
			a->used[i] = true;
		check_write(c, node, &paths, &modes, !ts_node_is_null(m) || a->splat, q);
		return true;
	}
	/* A call may change two paths (a move: where it was and where it goes), one entry each. */
	bool judged = false;
	for (size_t i = 0; i < sizeof dests / sizeof *dests; i++) {
		if (strcmp(q, dests[i].name) != 0)
			continue;
		TSNode f = arg(a, dests[i].pos, dests[i].kw);
		if (ts_node_is_null(f))
			continue;
		judged = true;
		vset paths = use(c, sc, f);
		if (dests[i].pos < a->npos)
			a->used[dests[i].pos] = true;
		/* an in-memory or URI database names no file of its own here */
		const char *p = vs_str(&paths);
		if (q[0] == 's' && q[1] == 'q' && p && (strcmp(p, ":memory:") == 0 || p[0] == '\0'))
			continue;
		vset w = vs1(str("w"));
		check_write(c, node, &paths, &w, true, q);
	}
	return judged;
}

/* sqlite's ATTACH and VACUUM INTO write the file they name, whatever connect() opened. */
static void sql_write(ctx *c, scope *sc, TSNode fn, const args *a)
{
	TSNode at = field(c, fn, F_ATTRIBUTE);
	const char *m = ts_node_is_null(at) ? NULL : text(c, at);
	if (!m || (strcmp(m, "execute") != 0 && strcmp(m, "executescript") != 0) || a->npos < 1)
		return;
	vset v = eval(c, sc, a->pos[0]);
	const char *sql = vs_str(&v);
	if (!sql)
		return;
	for (const char *p = sql; *p; p++) {
		const char *rest = NULL;
		if (strncasecmp(p, "attach", 6) == 0)
			rest = p + 6;
		else if (strncasecmp(p, "vacuum", 6) == 0) {
			const char *r = p + 6;
			while (*r == ' ' || *r == '\t' || *r == '\n')
				r++;
			if (strncasecmp(r, "into", 4) == 0)
				rest = r + 4;
		}
		if (!rest)
			continue;
		while (*rest == ' ' || *rest == '\t' || *rest == '\n')
			rest++;
		if (strncasecmp(rest, "database", 8) == 0)
			rest += 8;
		while (*rest == ' ' || *rest == '\t' || *rest == '\n')
			rest++;
		if (*rest != '\'' && *rest != '"')
			continue;
		char qch = *rest++;
		const char *e = strchr(rest, qch);
		if (!e)
			continue;
		const char *path = astrndup(c, rest, (size_t)(e - rest));
		if (strcmp(path, ":memory:") == 0 || !path[0])
			continue;
		vset paths = vs1(str(path)), w = vs1(str("w"));
		check_write(c, fn, &paths, &w, true, "sqlite ATTACH");
	}
}

/* The experiment's own package a computed module name stays inside: the dotted path before
 * the first part the code computes, when that is all literal ("models." + name,
 * f"models.{name}", "models.nets.%s" % name) and its first part is one of the experiment's
 * modules; NULL otherwise. */
static const char *own_package_prefix(ctx *c, TSNode x)
{
	lb_buf b = {0};
	print_template(c, x, &b, 0);
	const char *hole = b.data ? memchr(b.data, LB_METRIC_HOLE, b.len) : NULL;
	size_t k = hole ? (size_t)(hole - b.data) : 0;
	const char *dot = NULL;
	for (size_t i = 0; i < k; i++)
		if (b.data[i] == '.')
			dot = b.data + i;
	const char *pkg = NULL;
	if (dot && dot > b.data) {
		const char *p = astrndup(c, b.data, (size_t)(dot - b.data));
		bool ok = p != NULL && ck_dotted_name(p);
		char top[256] = "";
		if (ok) {
			size_t t = strcspn(p, ".");
			ok = t < sizeof top;
			if (ok) {
				memcpy(top, p, t);
				top[t] = '\0';
			}
		}
		if (ok && ck_local_module(c->in, top))
			pkg = p;
	}
	lb_buf_free(&b);
	return pkg;
}

static vset call_ref(ctx *c, scope *sc, const char *q, TSNode node, args *a)
{
	vset out = {0};
	TSNode x;
	/* every name below starts with one of these: most calls (random, sklearn...) need no
	 * comparison at all */
	if (!q[0] || !strchr("biopctdsnmlyj", q[0]))
		return out;
	if (deserialize_call(c, sc, q, node, a) || file_call(c, sc, q, node, a))
		return out;
	if (strcmp(q, "builtins.getattr") == 0 && a->npos >= 2) {
		vset obj = eval(c, sc, a->pos[0]);
		vset names = eval(c, sc, a->pos[1]);
		a->used[0] = a->used[1] = true;
		/* a module whose members fall under a rule unless named (socket: gethostname
		 * passes, the rest is network) is that rule with a name that may be any */
		for (unsigned i = 0; i < obj.n && vs_computed(&names); i++) {
			ck_rule r = obj.v[i].kind == VK_REF ? ck_classify(obj.v[i].s, false, c->in->cfg->policy)
							    : R_COUNT;
			if (r != R_COUNT) {
				char msg[600];
				snprintf(msg, sizeof msg, "getattr(%s, <computed>): %s", obj.v[i].s,
					 ck_rules[r].info.title);
				raw(c, r, node, obj.v[i].s, msg);
			}
		}
		return getattr_val(c, &obj, &names);
	}
	if (strcmp(q, "builtins.__import__") == 0 || strcmp(q, "importlib.import_module") == 0) {
		bool imp = q[0] == 'b';
		x = arg(a, 0, "name");
		if (ts_node_is_null(x))
			return out;
		vset names = eval(c, sc, x);
		if (a->npos > 0)
			a->used[0] = true;
		const char *s = vs_str(&names);
		if (!s && !imp) {
			/* import_module(f"models.{name}"): a module of the experiment's own package,
			 * whichever; the gate judges the import where it happens */
			const char *pkg = own_package_prefix(c, x);
			if (pkg) {
				vs_add(&out, ref(c, pkg));
				return out;
			}
		}
		if (!s) {
			vs_add(&out, dyn(imp ? "__import__(<computed>)" : "importlib.import_module(<computed>)",
					 false));
			return out;
		}
		if (s[0] == '.')
			return out; /* relative: the experiment's own package */
		import_event(c, s, node, true);
		vs_add(&out, ref(c, s));
		if (imp) {
			const char *dot = strchr(s, '.');
			if (dot)
				vs_add(&out, ref(c, astrndup(c, s, (size_t)(dot - s))));
		}
		return out;
	}
	/* timeit handed callables (timeit(lambda: step(), number=100), the usual way a step is
	 * timed) compiles only its own template around them: no code of the caller's. A
	 * string, or what cannot be told from one, is the code it runs (LB103, the summary's). */
	const char *sink = ck_wrapped_sink(q, NULL);
	const char *tq = sink ? sink : q;
	if ((strcmp(tq, "timeit.timeit") == 0 || strcmp(tq, "timeit.repeat") == 0 ||
	     strcmp(tq, "timeit.Timer") == 0) && !a->splat) {
		static const char *const kw[] = {"stmt", "setup"};
		bool callables = true;
		for (unsigned i = 0; i < 2 && callables; i++) {
			x = arg(a, i, kw[i]);
			if (ts_node_is_null(x)) {
				if (i == 0)
					callables = false; /* the default stmt is "pass": nothing timed */
				continue;
			}
			if (is(c, x, K_LAMBDA))
				continue;
			vset v = eval(c, sc, x);
			for (unsigned k = 0; k < v.n && callables; k++)
				callables = v.v[k].kind != VK_STR && v.v[k].kind != VK_DYN;
			/* a name the check cannot follow (a parameter) is left to the runtime
			 * gate, which refuses a string there as it is compiled */
			callables = callables && !is(c, x, K_STRING) &&
				    !is(c, x, K_CONCATENATED_STRING);
		}
		if (callables)
			a->judged = true;
		return out;
	}
	/* find_spec("pkg.mod") imports pkg to search its __path__, and what it finds is one
	 * call from being loaded (spec.loader.load_module(), which raises no import event):
	 * with the name written out it is judged as the import of that name, which for an
	 * optional dependency looked for (find_spec("sklearn") is not None) is what the code
	 * means. A computed name stays the summary's (LB104). */
	if (strcmp(q, "importlib.util.find_spec") == 0 && !a->splat) {
		x = arg(a, 0, "name");
		if (ts_node_is_null(x))
			return out;
		vset names = eval(c, sc, x);
		const char *s = vs_str(&names);
		if (!s || s[0] == '.')
			return out;
		if (a->npos > 0)
			a->used[0] = true;
		import_event(c, s, node, true);
		a->judged = true;
		return out;
	}
	/* A package's data read through the import system (importlib.resources.files("pkg"),
	 * pkgutil.get_data("pkg", "data.json")): with the package written out this is the
	 * import of that package, and the data is read, not run. A computed or relative package
	 * stays the summary's (LB104). */
	static const char *const resource_readers[] = {
		"importlib.resources.files", "importlib.resources.read_text",
		"importlib.resources.read_binary", "importlib.resources.open_text",
		"importlib.resources.open_binary", "importlib.resources.path",
		"importlib.resources.contents", "importlib.resources.is_resource",
		"pkgutil.get_data",
	};
	if (!a->splat && a->npos > 0 &&
	    in_names(q, resource_readers, sizeof resource_readers / sizeof *resource_readers)) {
		vset names = eval(c, sc, a->pos[0]);
		const char *s = vs_str(&names);
		if (!s || !s[0] || s[0] == '.')
			return out;
		a->used[0] = true;
		import_event(c, s, node, true);
		a->judged = true;
		return out;
	}
	if (strcmp(q, "builtins.type") == 0 && a->npos == 1) {
		val t = {.kind = VK_TYPEOBJ};
		vs_add(&out, t);
		return out;
	}
	if (strcmp(q, "builtins.vars") == 0 || strcmp(q, "builtins.globals") == 0 ||
	    strcmp(q, "builtins.locals") == 0) {
		if (a->npos == 0) {
			val g = {.kind = VK_GLOBALS};
			vs_add(&out, g);
			return out;
		}
		vset o = eval(c, sc, a->pos[0]);
		a->used[0] = true;
		for (unsigned i = 0; i < o.n; i++)
			if (o.v[i].kind == VK_REF) {
				val d = {.kind = VK_NSDICT, .s = o.v[i].s};
				vs_add(&out, d);
			}
		return out;
	}
	if ((strcmp(q, "operator.attrgetter") == 0 || strcmp(q, "operator.methodcaller") == 0) &&
	    a->npos >= 1) {
		vset names = eval(c, sc, a->pos[0]);
		a->used[0] = true;
		val g = {.kind = VK_GETTER, .s = vs_str(&names), .weak = q[9] == 'm'};
		vs_add(&out, g);
		return out;
	}
	if (strcmp(q, "pathlib.Path") == 0 || strcmp(q, "pathlib.PurePath") == 0 ||
	    strcmp(q, "pathlib.PosixPath") == 0 || strcmp(q, "pathlib.PurePosixPath") == 0 ||
	    strcmp(q, "os.path.join") == 0) {
		const char *p = q[0] == 'p' && a->npos == 0 ? "." : NULL;
		bool ok = !a->splat;
		for (unsigned i = 0; i < a->npos && ok; i++) {
			vset v = use(c, sc, a->pos[i]);
			a->used[i] = true;
			const char *s = vs_str(&v);
			if (!s && v.n == 1 && v.v[0].kind == VK_PATH && !v.unk)
				s = v.v[0].s;
			if (!s)
				ok = false;
			else
				p = p ? path_join(c, p, s) : s;
		}
		if (ok && p) {
			val v = {.kind = q[0] == 'p' ? VK_PATH : VK_STR, .s = p};
			vs_add(&out, v);
		}
		return out;
	}
	if (strcmp(q, "pathlib.Path.home") == 0 && a->npos == 0) {
		val r = {.kind = VK_PATH, .s = c->in->cfg->real_home ? "~" : LB_SANDBOX_HOME};
		vs_add(&out, r);
		return out;
	}
	if ((strcmp(q, "os.getenv") == 0 || strcmp(q, "os.environ.get") == 0) && a->npos >= 1) {
		vset k = use(c, sc, a->pos[0]);
		const char *ks = vs_str(&k);
		a->used[0] = true;
		/* The sandbox sets HOME, whatever default the call gives. */
		if (ks && strcmp(ks, "HOME") == 0 && !k.unk) {
			vs_add(&out, str(c->in->cfg->real_home ? "~" : LB_SANDBOX_HOME));
			return out;
		}
		out.unk = true;
		return out;
	}
	if (strcmp(q, "os.path.expanduser") == 0 || strcmp(q, "os.path.abspath") == 0 ||
	    strcmp(q, "os.path.normpath") == 0 || strcmp(q, "os.path.realpath") == 0 ||
	    strcmp(q, "builtins.str") == 0) {
		bool home = q[8] == 'e';
		if (a->npos >= 1) {
			vset v = a->have_pre0 ? a->pre0 : use(c, sc, a->pos[0]);
			a->used[0] = true;
			for (unsigned i = 0; i < v.n; i++) {
				const char *e = home && (v.v[i].kind == VK_STR || v.v[i].kind == VK_PATH)
							? sandbox_home(c, v.v[i].s)
							: v.v[i].s;
				if ((v.v[i].kind == VK_STR || v.v[i].kind == VK_PATH) && e)
					vs_add(&out, str(e));
				else
					out.unk = true;
			}
			out.unk |= v.unk;
		}
		return out;
	}
	if (strcmp(q, "builtins.chr") == 0 && a->npos == 1 && is(c, a->pos[0], K_INTEGER)) {
		long cp = strtol(text(c, a->pos[0]), NULL, 0);
		a->used[0] = true;
		if (cp >= 0 && cp <= 0x10ffff) {
			lb_buf b = {0};
			put_utf8(&b, (uint32_t)cp);
			vs_add(&out, str(astrndup(c, b.data ? b.data : "", b.len)));
			lb_buf_free(&b);
		}
		return out;
	}
	if (strcmp(q, "builtins.open") == 0 || strcmp(q, "codecs.open") == 0 ||
	    strcmp(q, "os.fdopen") == 0) {
		TSNode f = arg(a, 0, "file");
		if (ts_node_is_null(f))
			f = arg(a, 0, "filename");
		TSNode m = arg(a, 1, "mode");
		vset paths = {0}, modes = {0};
		if (!ts_node_is_null(f))
			paths = use(c, sc, f);
		if (!ts_node_is_null(m))
			modes = use(c, sc, m);
		for (unsigned i = 0; i < a->npos && i < 2; i++)
			a->used[i] = true;
		if (strcmp(q, "os.fdopen") != 0)
			check_write(c, node, &paths, &modes, !ts_node_is_null(m) || a->splat, q);
		return out;
	}
	/* Library functions that write a file at a path they are given: research code saves
	 * arrays, checkpoints and figures with these rather than with open(). */
	static const struct {
		const char *name;
		unsigned pos;
		const char *kw;
	} savers[] = {
		{"numpy.save", 0, "file"},	  {"numpy.savez", 0, "file"},
		{"numpy.savez_compressed", 0, "file"}, {"numpy.savetxt", 0, "fname"},
		{"torch.save", 1, "f"},		  {"matplotlib.pyplot.savefig", 0, "fname"},
	};
	for (size_t i = 0; i < sizeof savers / sizeof *savers; i++) {
		if (strcmp(q, savers[i].name) != 0)
			continue;
		TSNode f = arg(a, savers[i].pos, savers[i].kw);
		if (ts_node_is_null(f))
			return out;
		vset paths = use(c, sc, f);
		if (savers[i].pos < a->npos)
			a->used[savers[i].pos] = true;
		vset w = vs1(str("w"));
		check_write(c, node, &paths, &w, true, q);
		return out;
	}
	if (strcmp(q, "os.open") == 0) {
		TSNode f = arg(a, 0, "path"), fl = arg(a, 1, "flags");
		vset paths = {0};
		if (!ts_node_is_null(f))
			paths = use(c, sc, f);
		bool writes = true;
		if (!ts_node_is_null(fl)) {
			const char *t = text(c, fl);
			writes = strstr(t, "O_WRONLY") || strstr(t, "O_RDWR") || strstr(t, "O_CREAT") ||
				 strstr(t, "O_APPEND") || strstr(t, "O_TRUNC") || !strstr(t, "O_");
		}
		for (unsigned i = 0; i < a->npos && i < 2; i++)
			a->used[i] = true;
		vset w = vs1(str("w"));
		if (writes)
			check_write(c, node, &paths, &w, true, q);
		return out;
	}
	if (is_time_call(q))
		c->time_flag = true;
	if (strcmp(q, "builtins.print") == 0 || strcmp(q, "sys.stdout.write") == 0)
		metric_line_facts(c, field(c, node, F_ARGUMENTS));
	return out;
}

static vset call_strmeth(ctx *c, scope *sc, const val *v, args *a)
{
	vset out = {0};
	const char *s = v->s, *m = v->t;
	if (strcmp(m, "join") == 0) {
		if (a->npos != 1)
			return out;
		TSNode l = a->pos[0];
		if (!(is(c, l, K_LIST) || is(c, l, K_TUPLE))) {
			vs_add(&out, str(NULL));
			return out;
		}
		lb_buf b = {0};
		bool ok = true;
		kids ks;
		kids_of(c, l, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			vset e = use(c, sc, ks.v[i]);
			const char *es = vs_str(&e);
			if (!es) {
				ok = false;
				continue;
			}
			if (i)
				lb_buf_puts(&b, s);
			lb_buf_puts(&b, es);
		}
		a->used[0] = true;
		vs_add(&out, str(ok && b.len <= STR_MAX ? astrndup(c, b.data ? b.data : "", b.len) : NULL));
		lb_buf_free(&b);
		return out;
	}
	if (strcmp(m, "lower") == 0 || strcmp(m, "upper") == 0 || strcmp(m, "casefold") == 0 ||
	    strcmp(m, "swapcase") == 0) {
		char *d = (char *)astrdup(c, s);
		for (char *p = d; *p; p++) {
			bool up = *p >= 'A' && *p <= 'Z', lo = *p >= 'a' && *p <= 'z';
			if ((m[0] == 'l' || m[0] == 'c' || (m[0] == 's' && up)) && up)
				*p = (char)(*p - 'A' + 'a');
			else if ((m[0] == 'u' || m[0] == 's') && lo)
				*p = (char)(*p - 'a' + 'A');
		}
		vs_add(&out, str(d));
		return out;
	}
	if ((strcmp(m, "strip") == 0 || strcmp(m, "lstrip") == 0 || strcmp(m, "rstrip") == 0) &&
	    a->npos == 0) {
		const char *b = s, *e = s + strlen(s);
		if (m[0] != 'r')
			while (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r')
				b++;
		if (m[0] != 'l')
			while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
				e--;
		vs_add(&out, str(astrndup(c, b, (size_t)(e - b))));
		return out;
	}
	if (strcmp(m, "replace") == 0 && a->npos == 2) {
		vset f = use(c, sc, a->pos[0]), t = use(c, sc, a->pos[1]);
		a->used[0] = a->used[1] = true;
		const char *fs = vs_str(&f), *ts = vs_str(&t);
		if (!fs || !ts || !*fs) {
			vs_add(&out, str(NULL));
			return out;
		}
		lb_buf b = {0};
		for (const char *p = s; *p;) {
			if (strncmp(p, fs, strlen(fs)) == 0) {
				lb_buf_puts(&b, ts);
				p += strlen(fs);
			} else {
				lb_buf_append(&b, p++, 1);
			}
			if (b.len > STR_MAX)
				break;
		}
		vs_add(&out, str(b.len <= STR_MAX ? astrndup(c, b.data ? b.data : "", b.len) : NULL));
		lb_buf_free(&b);
		return out;
	}
	if (strcmp(m, "decode") == 0 || strcmp(m, "encode") == 0 || strcmp(m, "title") == 0 ||
	    strcmp(m, "capitalize") == 0) {
		if (m[0] == 'd' || m[0] == 'e')
			vs_add(&out, str(s));
		else
			vs_add(&out, str(NULL));
		return out;
	}
	vs_add(&out, str(NULL));
	return out;
}

static vset call_pathmeth(ctx *c, scope *sc, const val *v, TSNode node, args *a)
{
	vset out = {0};
	const char *m = v->t;
	if (strcmp(m, "joinpath") == 0) {
		const char *p = v->s;
		for (unsigned i = 0; i < a->npos; i++) {
			vset s = use(c, sc, a->pos[i]);
			a->used[i] = true;
			const char *ss = vs_str(&s);
			if (!ss)
				return out;
			p = path_join(c, p, ss);
		}
		val r = {.kind = VK_PATH, .s = p};
		vs_add(&out, r);
		return out;
	}
	if (strcmp(m, "expanduser") == 0 || strcmp(m, "resolve") == 0 || strcmp(m, "absolute") == 0) {
		val r = {.kind = VK_PATH, .s = m[0] == 'e' ? sandbox_home(c, v->s) : v->s};

		if (!r.s) {
			out.unk = true;
			return out;
		}
		vs_add(&out, r);
		return out;
	}
	vset paths = vs1(str(v->s));
	if (strcmp(m, "write_text") == 0 || strcmp(m, "write_bytes") == 0 || strcmp(m, "touch") == 0) {
		vset w = vs1(str("w"));
		check_write(c, node, &paths, &w, true, afmt(c, "pathlib.Path", ".", m));
	} else if (strcmp(m, "mkdir") == 0 || strcmp(m, "unlink") == 0 || strcmp(m, "rmdir") == 0 ||
		   strcmp(m, "chmod") == 0 || strcmp(m, "lchmod") == 0 || strcmp(m, "symlink_to") == 0 ||
		   strcmp(m, "hardlink_to") == 0 || strcmp(m, "rename") == 0 || strcmp(m, "replace") == 0) {
		/* The path itself is made, removed, re-permissioned or moved away. */
		vset w = vs1(str("w"));
		out.unk = true; /* rename's and replace's new Path: not followed */
		check_write(c, node, &paths, &w, true, afmt(c, "pathlib.Path", ".", m));
		TSNode to = arg(a, 0, "target");
		if ((m[0] == 'r' && m[1] == 'e') && !ts_node_is_null(to)) {
			vset dst = use(c, sc, to);
			if (a->npos > 0)
				a->used[0] = true;
			check_write(c, node, &dst, &w, true, afmt(c, "pathlib.Path", ".", m));
		}
	} else if (strcmp(m, "link_to") == 0 && a->npos > 0) {
		vset dst = use(c, sc, a->pos[0]), w = vs1(str("w"));
		a->used[0] = true;
		check_write(c, node, &dst, &w, true, "pathlib.Path.link_to");
	} else if (strcmp(m, "open") == 0) {
		TSNode md = arg(a, 0, "mode");
		vset modes = {0};
		if (!ts_node_is_null(md)) {
			modes = use(c, sc, md);
			if (a->npos > 0)
				a->used[0] = true;
		}
		check_write(c, node, &paths, &modes, !ts_node_is_null(md) || a->splat, "pathlib.Path.open");
	}
	return out;
}

static void seed_events(ctx *c, scope *sc, const char *q, TSNode node, const args *a)
{
	const char *lib = ck_seed_lib(q);
	if (lib && (a->npos > 0 || a->nkw > 0 || a->splat) && add_event(c, EV_SEED, lib, q, sc, node)) {
		TSNode v = arg(a, 0, "seed");
		if (ts_node_is_null(v))
			v = arg(a, 0, "a"); /* random.seed(a=...) */
		if (!ts_node_is_null(v))
			c->ev[c->nev - 1].arg = text(c, v);
	}
	lib = ck_random_lib(q);
	if (lib)
		add_event(c, EV_RANDOM, lib, q, sc, node);
	if (ck_generator_ctor(q) && a->npos == 0 && a->nkw == 0 && !a->splat) {
		char msg[300];
		snprintf(msg, sizeof msg, "`%s()` without a seed draws its state from the operating system",
			 q);
		raw(c, R_UNSEEDED_GEN, node, q, msg);
	}
}

/* ---- needs: what the code asks of the sandbox (needs.c) --------------------------------------- */

static void need(ctx *c, const char *kind, TSNode at, const char *via, const char *path,
		 bool optional)
{
	if (c->err)
		return;
	TSPoint p = ts_node_start_point(at);
	size_t b = ts_node_start_byte(at), start = b >= p.column ? b - p.column : 0, end = b;
	while (end < c->in->len && c->src[end] != '\n' && c->src[end] != '\r')
		end++;
	while (start < end && (c->src[start] == ' ' || c->src[start] == '\t'))
		start++;
	/* A GPU use that the code reaches only when it found one, or was told to use one */
	if (!optional && strcmp(kind, "gpu") == 0 && ck_need_gpu_guarded(c->src, c->in->len, at))
		optional = true;
	ck_need nd = {.kind = kind, .line = p.row + 1, .text = c->src + start,
		      .text_len = end - start > 240 ? 240 : end - start, .via = via, .path = path,
		      .optional = optional};
	int e = ck_need_add(c->out, &nd);
	if (e < 0)
		c->err = e;
}

/* The literal string x is, or NULL (x may be a null node). An f-string with fields is not
 * one, and is not evaluated here: its fields are the walk's to report. */
static const char *literal(ctx *c, scope *sc, TSNode x)
{
	if (ts_node_is_null(x) || !is(c, x, K_STRING))
		return NULL;
	kids ks;
	kids_of(c, x, &ks);
	for (uint32_t i = 0; i < ks.n; i++)
		if (is(c, ks.v[i], K_INTERPOLATION))
			return NULL;
	vset v = eval(c, sc, x);
	return vs_str(&v);
}

static bool local_path(const char *s)
{
	return s && (s[0] == '.' || s[0] == '/' || s[0] == '~');
}

/* A download that reads a local copy instead needs nothing: from_pretrained("./model"),
 * local_files_only=True, load_dataset("csv", data_files=...), wandb.init(mode="offline"). */
static bool fetches(ctx *c, scope *sc, const char *q, const args *a)
{
	static const char *const builders[] = {"csv", "json", "parquet", "text", "arrow", "pandas",
					       "imagefolder", "audiofolder", "webdataset", "sql"};
	const char *first = literal(c, sc, arg(a, 0, NULL));
	if (local_path(first) || kw_is(c, a, "local_files_only", "True"))
		return false;
	if (strcmp(q, "datasets.load_dataset") == 0 && first)
		for (size_t i = 0; i < sizeof builders / sizeof *builders; i++)
			if (strcmp(first, builders[i]) == 0)
				return false;
	if (strcmp(q, "wandb.init") == 0 && (kw_is(c, a, "mode", "\"offline\"") ||
					      kw_is(c, a, "mode", "'offline'") ||
					      kw_is(c, a, "mode", "\"disabled\"") ||
					      kw_is(c, a, "mode", "'disabled'")))
		return false;
	return true;
}

static bool cuda_literal(const char *s)
{
	return s && (strncmp(s, "cuda", 4) == 0 || strcmp(s, "gpu") == 0);
}

static void needs_of_call(ctx *c, scope *sc, TSNode fn, TSNode node, const vset *callee,
			  const args *a)
{
	bool resolved = false;
	for (unsigned i = 0; i < callee->n; i++) {
		const val *v = &callee->v[i];
		bool optional;
		if (v->kind != VK_REF)
			continue;
		resolved = true;
		const char *kind = ck_need_of_call(v->s, &optional);
		if (kind && (strcmp(kind, "network") != 0 || fetches(c, sc, v->s, a)))
			need(c, kind, node, v->s, NULL, optional);
		if ((strcmp(v->s, "torch.device") == 0 || strcmp(v->s, "jax.devices") == 0) &&
		    cuda_literal(literal(c, sc, arg(a, 0, NULL))))
			need(c, "gpu", node, v->s, NULL, false);
	}
	/* Methods of objects the analysis does not follow (a model, a tensor): by their name. */
	if (!resolved && is(c, fn, K_ATTRIBUTE)) {
		TSNode at = field(c, fn, F_ATTRIBUTE);
		const char *m = ts_node_is_null(at) ? "" : text(c, at);
		if (strcmp(m, "cuda") == 0)
			need(c, "gpu", node, ".cuda()", NULL, false);
		else if (strcmp(m, "to") == 0 && cuda_literal(literal(c, sc, arg(a, 0, "device"))))
			need(c, "gpu", node, ".to(\"cuda\")", NULL, false);
		else if (strcmp(m, "from_pretrained") == 0 && fetches(c, sc, "from_pretrained", a))
			need(c, "network", node, ".from_pretrained()", NULL, false);
	}
	for (unsigned i = 0; i < a->nkw; i++) {
		const char *k = a->kwname[i];
		if (strcmp(k, "device") == 0 && cuda_literal(literal(c, sc, a->kw[i])))
			need(c, "gpu", node, "device=\"cuda\"", NULL, false);
		else if ((strcmp(k, "download") == 0 || strcmp(k, "pretrained") == 0) &&
			 strcmp(text(c, a->kw[i]), "True") == 0)
			need(c, "network", node, strcmp(k, "download") == 0 ? "download=True" : "pretrained=True",
			     NULL, false);
	}
}

/* `def name(` anywhere in the file: the experiment's own method of that name. */
static bool defines(const ctx *c, const char *name)
{
	/* The source is not NUL-terminated (nor free of NULs): every read stays below its end. */
	size_t n = strlen(name), len = c->in->len;
	const char *end = c->src + len;
	for (const char *p = c->src; (p = memmem(p, (size_t)(end - p), "def ", 4)); p += 4) {
		const char *q = p + 4;
		while (q < end && *q == ' ')
			q++;
		if ((size_t)(end - q) > n && memcmp(q, name, n) == 0 && (q[n] == '(' || q[n] == ' '))
			return true;
	}
	return false;
}

/* obj.meth() on an object the analysis knows nothing of (loop = asyncio.get_running_loop()):
 * a method name that, in every class of the standard library defining it, starts a process or
 * opens a socket is that, unless the experiment defines a method of that name itself. */
/* `.load_module()` and `.exec_module()` of a loader whatever found it (find_spec,
 * find_loader, a finder of sys.meta_path, the import system's private helpers): they run a
 * module's code with no import statement to judge by name, so which module it is cannot be
 * told. A class of the experiment's own with such a method is its own. */
static void loader_method(ctx *c, TSNode fn)
{
	TSNode at = field(c, fn, F_ATTRIBUTE);
	const char *m = ts_node_is_null(at) ? NULL : text(c, at);
	if (!m || (strcmp(m, "load_module") != 0 && strcmp(m, "exec_module") != 0) || defines(c, m))
		return;
	char msg[300];
	snprintf(msg, sizeof msg, "call of `.%s()`: runs a module's code through its loader, "
		 "which module it is cannot be told", m);
	raw(c, R_DYNIMPORT, fn, m, msg);
}

static void stdlib_method(ctx *c, TSNode fn)
{
	TSNode obj = field(c, fn, F_OBJECT), at = field(c, fn, F_ATTRIBUTE);
	if (ts_node_is_null(at))
		return;
	const char *m = text(c, at);
	if (!m || m[0] == '_')
		return;
	if (is(c, obj, K_IDENTIFIER)) {
		const char *o = text(c, obj);
		if (o && (strcmp(o, "self") == 0 || strcmp(o, "cls") == 0))
			return;
	}
	const char *via = NULL;
	unsigned caps = ck_stdlib_method_caps(c->in->std, m, &via) & CK_CAP_FINDING;
	ck_rule r = cap_rule_via(c, caps, via);
	if (r == R_COUNT || defines(c, m))
		return;
	char msg[700];
	snprintf(msg, sizeof msg,
		 "call of `.%s()`: every class of the standard library that has this method %s "
		 "through it (it reaches `%s`)",
		 m, cap_words(r), via ? via : "?");
	raw(c, r, fn, m, msg);
}

/* Builtins that, given a container, read only its keys or its text: len a count, sorted and
 * the constructors the keys (strings), print/str/repr/ascii/format the repr. A key= would
 * hand each name, and through it the module, to the experiment's function, so only the
 * keywords listed are taken; every: each positional argument is read so (print). */
enum { NB_COUNT = 12 };
static const struct {
	const char *name;
	const char *kws;
	bool every;
	bool keys; /* gives the elements: names only of a mapping (report_ref) */
} names_builtins[NB_COUNT] = {
	{"len", "", false, false},	    {"print", " sep end file flush ", true, false},
	{"str", "", false, false},	    {"repr", "", false, false},
	{"ascii", "", false, false},	    {"format", "", false, false},
	{"sorted", " reverse ", false, true}, {"list", "", false, true},
	{"set", "", false, true},	    {"tuple", "", false, true},
	{"frozenset", "", false, true},  {"hasattr", "", false, false},
};

static int names_builtin(const char *s, size_t n)
{
	for (int i = 0; i < NB_COUNT; i++)
		if (strlen(names_builtins[i].name) == n && memcmp(names_builtins[i].name, s, n) == 0)
			return i;
	return -1;
}

/* A string written out: no interpolation, no concatenation, no t-string. */
static bool plain_string(ctx *c, TSNode n)
{
	if (!is(c, n, K_STRING))
		return false;
	uint32_t cnt = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < cnt; i++) {
		TSNode ch = ts_node_named_child(n, i);
		if (is(c, ch, K_INTERPOLATION))
			return false;
		if (is(c, ch, K_STRING_START)) {
			const char *p = text(c, ch);
			for (; p && *p && *p != '"' && *p != '\''; p++)
				if (*p == 't' || *p == 'T')
					return false;
		}
	}
	return true;
}

/* Which entry of names_builtins the call fn(a) is, or -1: fn a plain name that resolves to
 * nothing but that builtin here (a binding of the name anywhere in the file is checked again
 * at its end, names_settle). */
static int names_call(ctx *c, TSNode fn, const vset *callee, const args *a)
{
	if (!is(c, fn, K_IDENTIFIER) || a->splat || callee->n != 1 || callee->v[0].kind != VK_REF ||
	    strncmp(callee->v[0].s, "builtins.", 9) != 0)
		return -1;
	const char *name = ident(c, fn);
	int i = names_builtin(name, strlen(name));
	if (i < 0 || strcmp(callee->v[0].s + 9, name) != 0)
		return -1;
	for (unsigned k = 0; k < a->nkw; k++) {
		char w[40];
		if (!a->kwname[k] || strlen(a->kwname[k]) > 30)
			return -1;
		snprintf(w, sizeof w, " %s ", a->kwname[k]);
		if (!strstr(names_builtins[i].kws, w))
			return -1;
	}
	/* hasattr(m, "name") answers whether m has that one name: getattr(m, "name") read and
	 * dropped. A computed name stays what getattr(m, <computed>) is. */
	bool has = strcmp(name, "hasattr") == 0;
	if (has && (a->npos != 2 || !plain_string(c, a->pos[1])))
		return -1;
	unsigned most = names_builtins[i].every ? MAX_ARGS : has || strcmp(name, "format") == 0 ? 2 : 1;
	if (a->npos > most || (!names_builtins[i].every && a->npos == 0))
		return -1;
	return i;
}

/* `helper.len = f`, setattr(helper, k, f), vars(helper)[k] = f: a builtin's name (name, or
 * NULL for a computed one) rebound in another of the experiment's modules, whose names-only
 * readings (len(sys.modules) there) rely on it being the builtin. */
/* A list of module names the standard library imports from (dbm._names): the summaries take
 * its imports for the fixed ones it holds, so the experiment may not touch it at all (read,
 * changed, rebound, handed on). */
static void import_table(ctx *c, const char *q, TSNode at, bool within)
{
	if (!c->in->std || !q)
		return;
	char real[512];
	const char *name = ck_stdlib_rename(c->in->std, q, real, sizeof real) ? real : q;
	const char *via = ck_stdlib_table(c->in->std, name, within);
	if (!via)
		return;
	char msg[700];
	snprintf(msg, sizeof msg,
		 "use of `%s`: the standard library imports the modules it names (through `%s`), "
		 "so changed it imports any module",
		 q, via);
	raw(c, R_DYNIMPORT, at, q, msg);
}

static void tables_of(ctx *c, const vset *vs, TSNode at)
{
	for (unsigned i = 0; i < vs->n; i++)
		if (vs->v[i].kind == VK_REF)
			import_table(c, vs->v[i].s, at, false); /* dbm._names.append: at dbm._names */
}

/* A key of sys.modules the check relies on staying what the import system put there:
 * "__main__", or a name in one of the experiment's own modules (whose attributes, imported
 * elsewhere, are read as that module's globals: a table entry replaced makes `import helper`
 * give any module). */
static bool modules_key_own(ctx *c, const char *s)
{
	if (strcmp(s, "__main__") == 0)
		return true;
	char top[256];
	snprintf(top, sizeof top, "%.*s", (int)strcspn(s, "."), s);
	return top[0] && ck_local_module(c->in, top);
}

/* A store into sys.modules (`[k] =`, update, setdefault, __setitem__, |=) under the keys
 * keys: LB111 where a key is computed (it may be __name__'s value, or any module's name),
 * "__main__" or the name of one of the experiment's modules. Shims under a written-out name
 * of another module (`sys.modules["wandb"] = stub`) stay quiet. */
static void modules_store(ctx *c, const vset *keys, TSNode at)
{
	const char *own = NULL;
	for (unsigned i = 0; i < keys->n && !own; i++)
		if (keys->v[i].kind == VK_STR && keys->v[i].s && modules_key_own(c, keys->v[i].s))
			own = keys->v[i].s;
	if (!own && !vs_computed(keys))
		return;
	char msg[700];
	if (own)
		snprintf(msg, sizeof msg,
			 "store into `sys.modules[\"%s\"]`: the experiment's own module (or __main__) "
			 "replaced in the module table makes its imports, and sys.modules[__name__] "
			 "there, give another module",
			 own);
	else
		snprintf(msg, sizeof msg,
			 "store into `sys.modules` under a computed name: it may be this module's "
			 "__name__ or one of the experiment's own modules, whose imports then give "
			 "another module");
	raw(c, R_UNRESOLVED, at, "sys.modules", msg);
}

/* sys.modules.update(...) / setdefault(k, v) / __setitem__(k, v) / __ior__(d): the keys
 * stored, from the call's text (a dict display of literal keys, keywords); anything else
 * (a variable, **kw, a comprehension) is a computed key. */
static void modules_update(ctx *c, scope *sc, const char *meth, TSNode al)
{
	vset keys = {0};
	kids ks;
	if (ts_node_is_null(al) || !is(c, al, K_ARGUMENT_LIST)) {
		keys.unk = true;
		modules_store(c, &keys, al);
		return;
	}
	kids_of(c, al, &ks);
	bool setter = strcmp(meth, "setdefault") == 0 || strcmp(meth, "__setitem__") == 0;
	unsigned npos = 0;
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		ck_kind k = kind(c, ch);
		if (k == K_COMMENT)
			continue;
		if (k == K_KEYWORD_ARGUMENT) {
			TSNode nm = field(c, ch, F_NAME);
			if (setter || ts_node_is_null(nm))
				keys.unk = true; /* setdefault(key=...) is a TypeError; be safe */
			else
				vs_add(&keys, str(ident(c, nm)));
		} else if (k == K_LIST_SPLAT || k == K_DICTIONARY_SPLAT) {
			keys.unk = true;
		} else if (setter) {
			if (npos++ == 0) {
				vset kv = eval(c, sc, ch);
				vs_union(&keys, &kv);
				if (!kv.n)
					keys.unk = true;
			}
		} else if (is(c, ch, K_DICTIONARY)) {
			kids ps;
			kids_of(c, ch, &ps);
			for (uint32_t j = 0; j < ps.n; j++) {
				if (is(c, ps.v[j], K_COMMENT))
					continue;
				if (!is(c, ps.v[j], K_PAIR)) {
					keys.unk = true; /* {**d}, a comprehension */
					continue;
				}
				vset kv = eval(c, sc, field(c, ps.v[j], F_KEY));
				vs_union(&keys, &kv);
				if (!kv.n)
					keys.unk = true;
			}
		} else {
			keys.unk = true; /* update(d), update(pairs) */
		}
	}
	if (keys.n || keys.unk)
		modules_store(c, &keys, al);
}

/* Whether a value reached through the module table by a computed key or its values (any
 * module, the experiment's own included). */
static bool modules_dyn(const val *v)
{
	return v->kind == VK_DYN && v->s && strncmp(v->s, "sys.modules", 11) == 0;
}

static void rebinds_builtin(ctx *c, const vset *obj, const char *name, TSNode at)
{
	/* sys.modules rebound (sys.modules = d, |=, setattr(sys, "modules"...), vars(sys)[k]):
	 * sys.modules[__name__] then reads another table */
	for (unsigned i = 0; i < obj->n; i++) {
		const val *v = &obj->v[i];
		if ((v->kind == VK_REF || v->kind == VK_NSDICT) && v->s && strcmp(v->s, "sys") == 0 &&
		    (!name || strcmp(name, "modules") == 0))
			raw(c, R_UNRESOLVED, at, "sys.modules",
			    name ? "`sys.modules` rebound or changed in place: the module table the "
				   "check reads imports from is another"
				 : "`sys` gets a computed name set: it may be `modules`, the module "
				   "table the check reads imports from");
		else if (v->kind == VK_SELFMOD)
			raw(c, R_UNRESOLVED, at, "sys.modules[__name__]",
			    "a name set on the module itself through `sys.modules[__name__]`: write "
			    "the module global instead");
		else if (modules_dyn(v) && (!name || strcmp(name, "__name__") == 0 ||
					    names_builtin(name, strlen(name)) >= 0)) {
			char msg[700];
			snprintf(msg, sizeof msg,
				 "%s%s%s set on %s: it may be one of the experiment's own modules",
				 name ? "`" : "a computed name", name ? name : "", name ? "`" : "", v->s);
			raw(c, R_UNRESOLVED, at, v->s, msg);
		}
	}
	if (name && strcmp(name, "__name__") == 0) {
		/* helper.__name__ = "os": helper's sys.modules[__name__] then reads another
		 * module, while its attributes are read as helper's globals */
		for (unsigned i = 0; i < obj->n; i++) {
			const val *v = &obj->v[i];
			if ((v->kind != VK_REF && v->kind != VK_NSDICT) || !v->s)
				continue;
			char top[256], msg[700];
			snprintf(top, sizeof top, "%.*s", (int)strcspn(v->s, "."), v->s);
			if (!ck_local_module(c->in, top))
				continue;
			snprintf(msg, sizeof msg,
				 "`%s` gets `__name__` set from outside: its sys.modules[__name__] then "
				 "reads another module",
				 v->s);
			raw(c, R_UNRESOLVED, at, v->s, msg);
		}
		return;
	}

	/* a standard library module's import list set from outside (dbm._names = [...],
	 * setattr(dbm, k, v), vars(dbm).update(...)) */
	for (unsigned i = 0; i < obj->n && c->in->std; i++) {
		const val *v = &obj->v[i];
		if ((v->kind != VK_REF && v->kind != VK_NSDICT) || !v->s)
			continue;
		if (name) {
			char q[512];
			snprintf(q, sizeof q, "%s.%s", v->s, name);
			import_table(c, q, at, true);
		} else if (ck_stdlib_has_table(c->in->std, v->s)) {
			char msg[700];
			snprintf(msg, sizeof msg,
				 "`%s` gets a computed name set from outside: it has a list of module "
				 "names the standard library imports",
				 v->s);
			raw(c, R_DYNIMPORT, at, v->s, msg);
		}
	}
	if (name && names_builtin(name, strlen(name)) < 0)
		return;
	for (unsigned i = 0; i < obj->n; i++) {
		const val *v = &obj->v[i];
		if ((v->kind != VK_REF && v->kind != VK_NSDICT) || !v->s)
			continue;
		char top[256], msg[700];
		snprintf(top, sizeof top, "%s", v->s);
		top[strcspn(top, ".")] = '\0';
		if (!ck_local_module(c->in, top))
			continue;
		snprintf(msg, sizeof msg,
			 "`%s` gets %s%s%s set from outside: a builtin's name rebound in the experiment's "
			 "own module, whose calls of it then hand their arguments on",
			 v->s, name ? "`" : "a computed name", name ? name : "", name ? "`" : "");
		raw(c, R_UNRESOLVED, at, v->s, msg);
	}
}

/* exec(open(PATH).read()) or exec(Path(PATH).read_text()), as nanoGPT's configurator runs
 * its config files: the check reads the experiment's .py files, and the runtime gate runs
 * such text only when it is one of them (what it read, byte for byte). */
static bool file_text_exec(ctx *c, const vset *callee, const args *a)
{
	if (callee->n != 1 || callee->v[0].kind != VK_REF ||
	    strcmp(callee->v[0].s, "builtins.exec") != 0 || a->npos < 1)
		return false;
	TSNode x = a->pos[0];
	if (!is(c, x, K_CALL))
		return false;
	TSNode f = field(c, x, F_FUNCTION), al = field(c, x, F_ARGUMENTS);
	if (ts_node_is_null(f) || !is(c, f, K_ATTRIBUTE) || ts_node_is_null(al) ||
	    ts_node_named_child_count(al) != 0)
		return false;
	TSNode at = field(c, f, F_ATTRIBUTE), obj = field(c, f, F_OBJECT);
	if (ts_node_is_null(at) || ts_node_is_null(obj) || !is(c, obj, K_CALL))
		return false;
	TSNode of = field(c, obj, F_FUNCTION);
	const char *m = text(c, at), *opener = ts_node_is_null(of) ? NULL : text(c, of);
	if (!m || !opener)
		return false;
	if (strcmp(m, "read") == 0)
		return strcmp(opener, "open") == 0 || strcmp(opener, "io.open") == 0;
	if (strcmp(m, "read_text") == 0)
		return strcmp(opener, "Path") == 0 || strcmp(opener, "pathlib.Path") == 0;
	return false;
}

/* os.kill(os.getpid(), SIG): the process signals itself, as signal.raise_signal does (a
 * preemption handler tested by hand); no other process is reached. */
static bool self_signal(ctx *c, scope *sc, const vset *callee, const args *a)
{
	if (callee->n != 1 || callee->v[0].kind != VK_REF || strcmp(callee->v[0].s, "os.kill") != 0 ||
	    a->npos != 2 || a->splat || !is(c, a->pos[0], K_CALL))
		return false;
	TSNode al = field(c, a->pos[0], F_ARGUMENTS);
	if (ts_node_is_null(al) || ts_node_named_child_count(al) != 0)
		return false;
	vset f = eval(c, sc, field(c, a->pos[0], F_FUNCTION));
	return f.n == 1 && f.v[0].kind == VK_REF && strcmp(f.v[0].s, "os.getpid") == 0;
}

/* helper.__init__("os"), helper.__setattr__("__name__", v), object.__setattr__(helper, ...),
 * types.ModuleType.__init__(helper, "os"), type(helper).__init__(helper, "os"): one of the
 * experiment's modules renamed or given a name by its methods, out of rebinds_builtin's
 * view. `Base.__init__(self, ...)` of a class the experiment imports stays quiet. */
static void module_reinit(ctx *c, scope *sc, TSNode fn, const vset *callee, const args *a)
{
	if (!is(c, fn, K_ATTRIBUTE))
		return;
	TSNode an = field(c, fn, F_ATTRIBUTE);
	const char *m = ts_node_is_null(an) ? NULL : ident(c, an);
	if (!m || (strcmp(m, "__init__") != 0 && strcmp(m, "__setattr__") != 0 &&
		   strcmp(m, "__delattr__") != 0))
		return;
	const char *mod = NULL;
	/* the method of the module object: helper.__init__ (a dotted prefix may be a class:
	 * then only where its first argument is not a plain name, such as self) */
	for (unsigned i = 0; i < callee->n && !mod; i++) {
		const val *v = &callee->v[i];
		if (v->kind != VK_REF || !v->s)
			continue;
		size_t l = strlen(v->s), ml = strlen(m);
		if (l <= ml + 1 || v->s[l - ml - 1] != '.' || strcmp(v->s + l - ml, m) != 0)
			continue;
		char top[256];
		snprintf(top, sizeof top, "%.*s", (int)strcspn(v->s, "."), v->s);
		bool bare = strcspn(v->s, ".") == l - ml - 1;
		if (!ck_local_module(c->in, top))
			continue;
		if (bare || (a->npos >= 1 && !is(c, a->pos[0], K_IDENTIFIER)))
			mod = v->s;
		else if (a->npos >= 1) {
			bool tf = c->time_flag;
			vset f = eval(c, sc, a->pos[0]);
			c->time_flag = tf;
			if (vs_has_str(&f))
				mod = v->s;
		}
	}
	/* the module handed to another type's method as its self */
	if (!mod && a->npos >= 1 &&
	    (is(c, a->pos[0], K_IDENTIFIER) || is(c, a->pos[0], K_ATTRIBUTE))) {
		bool tf = c->time_flag;
		vset o = eval(c, sc, a->pos[0]);
		c->time_flag = tf;
		for (unsigned i = 0; i < o.n && !mod; i++) {
			char top[256];
			if (o.v[i].kind != VK_REF || !o.v[i].s)
				continue;
			snprintf(top, sizeof top, "%.*s", (int)strcspn(o.v[i].s, "."), o.v[i].s);
			if (ck_local_module(c->in, top))
				mod = o.v[i].s;
		}
	}
	if (!mod)
		return;
	char msg[700];
	snprintf(msg, sizeof msg,
		 "call of `%s` on the experiment's own module `%.*s`: it can set its `__name__` "
		 "(and so what its sys.modules[__name__] reads) from outside",
		 m, (int)strcspn(mod, ".") , mod);
	raw(c, R_UNRESOLVED, fn, mod, msg);
}

static vset eval_call(ctx *c, scope *sc, TSNode n)
{
	TSNode fn = field(c, n, F_FUNCTION);
	TSNode al = field(c, n, F_ARGUMENTS);
	vset callee = eval(c, sc, fn);
	args a;
	kids ks;
	collect_args(c, al, &a, &ks);
	vset out = {0};
	if (is(c, fn, K_IDENTIFIER))
		add_event(c, EV_CALLFN, text(c, fn), NULL, sc, n);
	if (callee.n == 1 && callee.v[0].kind == VK_REF &&
	    (strcmp(callee.v[0].s, "builtins.setattr") == 0 ||
	     strcmp(callee.v[0].s, "builtins.delattr") == 0) &&
	    a.npos >= 2) {
		/* delattr(helper, "__name__"): helper's __name__ is then builtins' */
		vset o = use(c, sc, a.pos[0]), nm = use(c, sc, a.pos[1]);
		a.used[0] = a.used[1] = true;
		rebinds_builtin(c, &o, vs_str(&nm), n);
	}
	for (unsigned i = 0; i < callee.n; i++)
		if (callee.v[i].kind == VK_NSSET && callee.v[i].t) {
			/* sys.modules.update({...}), setdefault(k, m), __setitem__(k, m) */
			modules_update(c, sc, callee.v[i].t, al);
		} else if (callee.v[i].kind == VK_NSSET) {
			/* vars(helper).update(len=f), helper.__dict__.setdefault(k, f) */
			vset one = vs1((val){.kind = VK_NSDICT, .s = callee.v[i].s});
			rebinds_builtin(c, &one, NULL, n);
		}
	module_reinit(c, sc, fn, &callee, &a);
	int nb = names_call(c, fn, &callee, &a);
	if (nb >= 0) {
		unsigned upto = names_builtins[nb].every ? a.npos : 1;
		for (unsigned i = 0; i < upto; i++) {
			vset v = use_names(c, sc, a.pos[i], 1u << nb, names_builtins[nb].keys);
			if (i == 0) {
				a.pre0 = v;
				a.have_pre0 = true;
			}
			a.used[i] = true;
		}
	}
	for (unsigned i = 0; i < callee.n; i++) {
		const val *v = &callee.v[i];
		vset r = {0};
		switch (v->kind) {
		case VK_REF:
			a.judged = false;
			r = call_ref(c, sc, v->s, n, &a);
			seed_events(c, sc, v->s, n, &a);
			if (a.judged)
				callee.v[i].kind = VK_STR; /* a value of no capability: not reported */
			break;
		case VK_GETTER:
			if (a.npos >= 1) {
				vset obj = eval(c, sc, a.pos[0]);
				vset names = vs1(str(v->s));
				a.used[0] = true;
				r = getattr_val(c, &obj, &names);
				if (v->weak) /* methodcaller: the method is called right away */
					report(c, &r, n, CALL);
			}
			break;
		case VK_BOUNDGET:
			if (a.npos >= 1) {
				vset keys = eval(c, sc, a.pos[0]);
				a.used[0] = true;
				val base;
				if (v->s[0] == 'M')
					base = ref(c, "sys.modules");
				else if (v->s[0] == 'B')
					base = ref(c, "builtins");
				else if (v->s[0] == 'G')
					base = (val){.kind = VK_GLOBALS};
				else
					base = (val){.kind = VK_NSDICT, .s = v->s + 1};
				vset bs = vs1(base);
				r = subscr(c, sc, &bs, &keys, n);
			}
			break;
		case VK_STRMETH:
			r = call_strmeth(c, sc, v, &a);
			break;
		case VK_PATHMETH:
			r = call_pathmeth(c, sc, v, n, &a);
			break;
		default:
			break;
		}
		vs_union(&out, &r);
	}
	out.unk |= callee.unk; /* what an unknown alternative of the callee gives is unknown */
	log_call_facts(c, sc, fn, &callee, &a);
	needs_of_call(c, sc, fn, n, &callee, &a);
	if (file_text_exec(c, &callee, &a))
		raw(c, R_DYNCODE_FILE, fn, "builtins.exec",
		    "call of `exec` on a file's text (`open(...).read()`): the runtime gate runs it "
		    "only when the text is a .py file of the experiment's");
	else if (!self_signal(c, sc, &callee, &a))
		report(c, &callee, fn, CALL);
	if (callee.n == 0 && is(c, fn, K_ATTRIBUTE)) {
		sql_write(c, sc, fn, &a);
		loader_method(c, fn);
		if (c->in->std)
			stdlib_method(c, fn);
	}
	/* Every argument not consumed above is a use (passing os.system to map() is using it). */
	for (unsigned i = 0; i < a.npos; i++)
		if (!a.used[i])
			use(c, sc, a.pos[i]);
	if (!ts_node_is_null(al)) {
		if (is(c, al, K_ARGUMENT_LIST)) {
			for (uint32_t i = 0; i < ks.n; i++) {
				TSNode ch = ks.v[i];
				ck_kind kc = kind(c, ch);
				if (kc == K_KEYWORD_ARGUMENT) {
					/* keyword values call_ref read were evaluated there too; a second
					 * evaluation only repeats the same (deduplicated) findings */
					use(c, sc, field(c, ch, F_VALUE));
				} else if (kc == K_LIST_SPLAT || kc == K_DICTIONARY_SPLAT) {
					use(c, sc, ch);
				} else {
					bool positional = false;
					for (unsigned k = 0; k < a.npos; k++)
						if (ts_node_eq(a.pos[k], ch))
							positional = true;
					if (!positional && kc != K_COMMENT)
						use(c, sc, ch);
				}
			}
		} else {
			use(c, sc, al); /* f(x for x in y) */
		}
	}
	return out;
}

/* ---- the generic walk ------------------------------------------------------------------------- */

static void defer(ctx *c, scope *sc, TSNode n, const char *name)
{
	/* a loop walked again defines the same function: its body is walked once, later, with
	 * every value its free names get */
	if (c->rewalk)
		return;
	pending *p = amalloc(c, sizeof *p);
	if (!p)
		return;
	p->node = n;
	p->parent = sc;
	p->name = name;
	p->next = *c->pend;
	*c->pend = p;
}

static void params_defaults(ctx *c, scope *sc, TSNode params)
{
	if (ts_node_is_null(params))
		return;
	kids ks;
	kids_of(c, params, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode p = ks.v[i];
		TSNode v = field(c, p, F_VALUE);
		TSNode t = field(c, p, F_TYPE);
		if (!ts_node_is_null(v))
			use(c, sc, v);
		if (!ts_node_is_null(t))
			use(c, sc, t);
	}
}

static void bind_params(ctx *c, scope *sc, TSNode params)
{
	if (ts_node_is_null(params))
		return;
	if (is(c, params, K_IDENTIFIER)) {
		bind_empty(c, sc, ident(c, params));
		return;
	}
	kids ks;
	kids_of(c, params, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode p = ks.v[i];
		if (is(c, p, K_IDENTIFIER)) {
			bind_empty(c, sc, ident(c, p));
			continue;
		}
		TSNode nm = field(c, p, F_NAME);
		if (!ts_node_is_null(nm) && is(c, nm, K_IDENTIFIER)) {
			bind_empty(c, sc, ident(c, nm));
			continue;
		}
		/* typed_parameter, *args, **kwargs, tuple parameters: every identifier inside
		 * that is not a type annotation */
		kids ps;
		kids_of(c, p, &ps);
		for (uint32_t j = 0; j < ps.n; j++) {
			TSNode ch = ps.v[j];
			ck_kind k = kind(c, ch);
			if (k == K_IDENTIFIER)
				bind_empty(c, sc, ident(c, ch));
			else if (k == K_TUPLE_PATTERN || k == K_LIST_SPLAT_PATTERN ||
				 k == K_DICTIONARY_SPLAT_PATTERN)
				bind_params(c, sc, ch);
		}
	}
}

/* Bind every name in an assignment target to "an ordinary value", evaluating the objects
 * of attribute and subscript targets. */
static void bind_target_empty(ctx *c, scope *sc, TSNode t)
{
	if (ts_node_is_null(t))
		return;
	if (is(c, t, K_IDENTIFIER)) {
		bind_empty(c, sc, ident(c, t));
		return;
	}
	if (is(c, t, K_ATTRIBUTE)) {
		vset o = eval(c, sc, field(c, t, F_OBJECT));
		TSNode an = field(c, t, F_ATTRIBUTE);
		if (o.n && !ts_node_is_null(an))
			rebinds_builtin(c, &o, ident(c, an), t);
		return;
	}
	if (is(c, t, K_SUBSCRIPT)) {
		vset o = eval(c, sc, field(c, t, F_VALUE));
		kids ks;
		kids_of(c, t, &ks);
		for (uint32_t i = 1; i < ks.n; i++) {
			if (is(c, ks.v[i], K_COMMENT))
				continue;
			vset k = use(c, sc, ks.v[i]);
			for (unsigned j = 0; j < o.n; j++)
				if (o.v[j].kind == VK_NSDICT) {
					vset one = vs1(o.v[j]);
					rebinds_builtin(c, &one, vs_str(&k), t);
				} else if (o.v[j].kind == VK_REF && !c->deleting &&
					   strcmp(o.v[j].s, "sys.modules") == 0) {
					/* `del sys.modules[k]` only makes the next import load the
					 * module again, from the same file */
					modules_store(c, &k, t);
				}
		}
		return;
	}
	kids ks;
	kids_of(c, t, &ks);
	for (uint32_t i = 0; i < ks.n; i++)
		bind_target_empty(c, sc, ks.v[i]);
}

static bool taint_any(ctx *c, TSNode n, int depth)
{
	if (depth > 40 || !c->any_taint)
		return false; /* nothing is tainted: no need to look */
	if (is(c, n, K_IDENTIFIER))
		return find(c->taint, text(c, n)) != NULL;
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++)
		if (taint_any(c, ks.v[i], depth + 1))
			return true;
	return false;
}

static void taint_target(ctx *c, TSNode t)
{
	c->any_taint = true;
	if (is(c, t, K_IDENTIFIER))
		find_or_add(c, c->taint, text(c, t));
	else if (is(c, t, K_ATTRIBUTE))
		find_or_add(c, c->taint, text(c, field(c, t, F_ATTRIBUTE)));
}

static void bind_target(ctx *c, scope *sc, TSNode t, const vset *v, TSNode rhs)
{
	if (is(c, t, K_IDENTIFIER)) {
		/* A class attribute is reached through the class, which is not followed. */
		if (sc->kind == SC_CLASS)
			report(c, v, rhs, USE);
		bind(c, sc, ident(c, t), v);
		return;
	}
	report(c, v, rhs, USE);
	bind_target_empty(c, sc, t);
}

static bool tuple_like(const ctx *c, TSNode n)
{
	ck_kind k = kind(c, n);
	return k == K_PATTERN_LIST || k == K_TUPLE_PATTERN || k == K_LIST_PATTERN ||
	       k == K_EXPRESSION_LIST || k == K_TUPLE || k == K_LIST;
}

/* a, b = os.system, print: element-wise aliases when both sides line up. False when they do
 * not. Apart from assign so that its 64 value sets are not on the stack of every link of a
 * chained assignment. */
__attribute__((noinline)) static bool assign_elementwise(ctx *c, scope *sc, TSNode left,
							 TSNode right)
{
	if (!tuple_like(c, left) || !tuple_like(c, right) ||
	    ts_node_named_child_count(left) != ts_node_named_child_count(right))
		return false;
	kids kl, kr;
	kids_of(c, left, &kl);
	kids_of(c, right, &kr);
	uint32_t k = kl.n < kr.n ? kl.n : kr.n;
	for (uint32_t i = 0; i < k; i++)
		if (is(c, kr.v[i], K_LIST_SPLAT) || is(c, kl.v[i], K_LIST_SPLAT_PATTERN))
			return false;
	vset vals[64];
	uint32_t m = k < 64 ? k : 64;
	for (uint32_t i = 0; i < m; i++)
		vals[i] = eval(c, sc, kr.v[i]);
	for (uint32_t i = m; i < k; i++)
		use(c, sc, kr.v[i]);
	for (uint32_t i = 0; i < m; i++)
		bind_target(c, sc, kl.v[i], &vals[i], kr.v[i]);
	for (uint32_t i = m; i < k; i++)
		bind_target_empty(c, sc, kl.v[i]);
	return true;
}

/* `__annotations__ = {...}`, `f.__annotations__ = ...`, `x.__annotations__[k] = ...`:
 * annotations written as data rather than as annotations. typing, inspect, dataclasses and
 * functools.singledispatch turn their text into code (a dataclass's field names are pasted
 * into the methods it compiles), out of the check's sight. */
static void annotations_written(ctx *c, TSNode left)
{
	TSNode t = left;
	if (is(c, t, K_SUBSCRIPT))
		t = field(c, t, F_VALUE);
	const char *name = NULL;
	if (is(c, t, K_IDENTIFIER))
		name = text(c, t);
	else if (is(c, t, K_ATTRIBUTE)) {
		TSNode at = field(c, t, F_ATTRIBUTE);
		name = ts_node_is_null(at) ? NULL : text(c, at);
	}
	if (name && strcmp(name, "__annotations__") == 0)
		raw(c, R_DYNCODE, left, "__annotations__",
		    "assignment to `__annotations__`: typing, inspect and dataclasses evaluate "
		    "annotations as code, and these are written as data the check cannot read as "
		    "annotations");
}

static vset assign(ctx *c, scope *sc, TSNode n)
{
	TSNode left = field(c, n, F_LEFT), right = field(c, n, F_RIGHT), type = field(c, n, F_TYPE);
	if (!ts_node_is_null(left))
		annotations_written(c, left);
	if (!ts_node_is_null(type))
		use(c, sc, type);
	if (ts_node_is_null(right))
		return (vset){0};
	/* a = b = ... = v recurses once per target: bounded like expressions, and what is too
	 * deep is reported as not analysed, never passed. */
	if (c->depth >= MAX_DEPTH) {
		c->too_deep = true;
		return (vset){0};
	}
	bool tf = c->time_flag;
	c->time_flag = false;
	if (assign_elementwise(c, sc, left, right)) {
		c->time_flag = tf;
		return (vset){0};
	}
	c->depth++;
	vset v = is(c, right, K_ASSIGNMENT) ? assign(c, sc, right) : eval(c, sc, right);
	c->depth--;
	bool timed = c->time_flag || taint_any(c, right, 0);
	if (timed)
		taint_target(c, left);
	if (tuple_like(c, left)) {
		report(c, &v, right, USE);
		bind_target_empty(c, sc, left);
	} else {
		bind_target(c, sc, left, &v, right);
	}
	c->time_flag = tf || timed;
	return v;
}

static void augassign(ctx *c, scope *sc, TSNode n)
{
	TSNode left = field(c, n, F_LEFT), right = field(c, n, F_RIGHT), op = field(c, n, F_OPERATOR);
	vset r = eval(c, sc, right);
	if (is(c, left, K_IDENTIFIER)) {
		const char *name = ident(c, left);
		if (!ts_node_is_null(op) && strcmp(text(c, op), "+=") == 0) {
			vset cur = lookup(c, sc, name);
			vset s = concat(c, &cur, &r);
			if (!s.n)
				report(c, &r, right, USE);
			bind(c, sc, name, &s);
			return;
		}
		report(c, &r, right, USE);
		bind_empty(c, sc, name);
		return;
	}
	report(c, &r, right, USE);
	bind_target_empty(c, sc, left);
}

static bool stmt_kind(ck_kind k)
{
	static const bool kinds[K_COUNT] = {
		[K_IMPORT_STATEMENT] = true, [K_IMPORT_FROM_STATEMENT] = true,
		[K_FUTURE_IMPORT_STATEMENT] = true, [K_EXPRESSION_STATEMENT] = true,
		[K_RETURN_STATEMENT] = true, [K_DELETE_STATEMENT] = true, [K_RAISE_STATEMENT] = true,
		[K_ASSERT_STATEMENT] = true, [K_PASS_STATEMENT] = true, [K_BREAK_STATEMENT] = true,
		[K_CONTINUE_STATEMENT] = true, [K_GLOBAL_STATEMENT] = true,
		[K_NONLOCAL_STATEMENT] = true, [K_IF_STATEMENT] = true, [K_FOR_STATEMENT] = true,
		[K_WHILE_STATEMENT] = true, [K_TRY_STATEMENT] = true, [K_WITH_STATEMENT] = true,
		[K_FUNCTION_DEFINITION] = true, [K_DECORATED_DEFINITION] = true,
		[K_CLASS_DEFINITION] = true, [K_MATCH_STATEMENT] = true, [K_EXEC_STATEMENT] = true,
		[K_PRINT_STATEMENT] = true, [K_BLOCK] = true, [K_TYPE_ALIAS_STATEMENT] = true,
		[K_COMMENT] = true,
	};
	return kinds[k];
}

static bool is_statement(const ctx *c, TSNode n)
{
	return stmt_kind(kind(c, n));
}

static void generic(ctx *c, scope *sc, TSNode n)
{
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		ck_kind k = kind(c, ch);
		if (stmt_kind(k))
			stmt(c, sc, ch);
		else if (k == K_KEYWORD_ARGUMENT)
			use(c, sc, field(c, ch, F_VALUE));
		else if (k == K_FOR_IN_CLAUSE) {
			use_names(c, sc, field(c, ch, F_RIGHT), 0, true);
			c->cond++;
			bind_target_empty(c, sc, field(c, ch, F_LEFT));
			c->cond--;
		} else if (k == K_LAMBDA)
			eval(c, sc, ch);
		else if (k != K_FORMAT_SPECIFIER && k != K_TYPE_CONVERSION)
			use(c, sc, ch);
	}
}

/* `"torch" in sys.modules` asks whether a name is there: the module is not handed to
 * anything, so it is not "passed on as a value". Every operand is still evaluated and
 * reported for what it is (a call in it, a capability named directly). */
static void comparison(ctx *c, scope *sc, TSNode n)
{
	uint32_t cnt = ts_node_child_count(n);
	bool member = false;
	for (uint32_t i = 0; i < cnt && !c->err; i++) {
		TSNode ch = ts_node_child(n, i);
		if (!ts_node_is_named(ch)) {
			const char *op = ts_node_type(ch);
			member = strcmp(op, "in") == 0 || strcmp(op, "not in") == 0;
			continue;
		}
		vset v = eval(c, sc, ch);
		if (member)
			report_names(c, &v, ch, 0, false);
		else
			report(c, &v, ch, USE);
		member = false;
	}
}

static const char *dotted(ctx *c, TSNode n);
static bool names_namespace_read(ctx *c, TSNode id, unsigned *passed);

/* Whether an identifier `__name__` only reads the name: as the key of a subscript, an
 * argument, compared, an operand, an attribute's object, formatted, a keyword's value (or is
 * not the module's: `obj.__name__`, whose stores rebinds_builtin judges). Any
 * other place may bind it (an assignment, for, with, except, import, def, a parameter, a
 * global statement, a pattern, a keyword's name as in globals().update(__name__=...)). */
static bool self_name_read(ctx *c, TSNode id)
{
	TSNode p = ts_node_parent(id);
	if (ts_node_is_null(p))
		return false;
	const char *pt = ts_node_type(p);
	switch (kind(c, p)) {
	case K_SUBSCRIPT:
		return !ts_node_eq(field(c, p, F_VALUE), id);
	case K_ARGUMENT_LIST:
	case K_BINARY_OPERATOR:
	case K_BOOLEAN_OPERATOR:
	case K_INTERPOLATION:
	case K_CONDITIONAL_EXPRESSION:
		return true;
	case K_ATTRIBUTE:
		return true; /* __name__.split, or obj.__name__: another object's attribute */
	case K_KEYWORD_ARGUMENT:
		return ts_node_eq(field(c, p, F_VALUE), id);
	default:
		return strcmp(pt, "comparison_operator") == 0;
	}
}

/* Words that reach a module's namespace by a computed name, or its imported code: a frame's
 * or a function's globals. */
static const char *const self_kill_words[] = {
	"f_globals", "f_locals", "__globals__", "func_globals",
};

/* The first place the module may run code of the experiment's other modules, or code it
 * does not see: an import of one of the experiment's modules (or a relative one), or a
 * computed import. */
static bool self_import_node(ctx *c, TSNode n, ck_kind k)
{
	if (k == K_IMPORT_FROM_STATEMENT) {
		TSNode mn = field(c, n, F_MODULE_NAME);
		if (ts_node_is_null(mn) || is(c, mn, K_RELATIVE_IMPORT))
			return true;
		const char *q = dotted(c, mn);
		char top[256];
		snprintf(top, sizeof top, "%.*s", q ? (int)strcspn(q, ".") : 0, q ? q : "");
		return !top[0] || ck_local_module(c->in, top);
	}
	/* import a.b, import a as b */
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode d = ks.v[i];
		if (is(c, d, K_ALIASED_IMPORT))
			d = field(c, d, F_NAME);
		if (!is(c, d, K_DOTTED_NAME))
			continue;
		const char *q = dotted(c, d);
		char top[256];
		snprintf(top, sizeof top, "%.*s", q ? (int)strcspn(q, ".") : 0, q ? q : "");
		if (!top[0] || ck_local_module(c->in, top))
			return true;
	}
	return false;
}

/* sys.modules[__name__] (the subscript at) evaluated at module level is this module, as long
 * as nothing can have changed what the table holds under this module's name or what its
 * __name__ is by then. The stores into the table under a computed name, __main__ or any of
 * the experiment's module names are LB111 wherever they are made (modules_store), and so are
 * __name__ set on one of its modules from outside (rebinds_builtin, module_reinit); here, the
 * file itself: every `__name__` only read, no string "__name__", no namespace written by a
 * computed name (globals()/locals()/vars() only read, no frame or function globals), no star
 * import; and the statement comes before the first import of the experiment's own code, which
 * could be handed this half-imported module and rename it through a parameter the check does
 * not follow. Settled once per file, only for files with such a subscript. */
static bool self_module_ok(ctx *c, TSNode at)
{
	kids ks;
	kids_of(c, at, &ks);
	uint32_t nk = 0;
	TSNode key = {0};
	for (uint32_t i = 1; i < ks.n; i++)
		if (!is(c, ks.v[i], K_COMMENT)) {
			key = ks.v[i];
			nk++;
		}
	if (nk != 1 || !is(c, key, K_IDENTIFIER) || strcmp(text(c, key), "__name__") != 0)
		return false;
	if (!c->self_clean) {
		c->self_clean = 1;
		c->self_import_at = UINT32_MAX;
		unsigned passed = 0;
		TSTreeCursor cur = ts_tree_cursor_new(c->in->root);
		for (;;) {
			TSNode n = ts_tree_cursor_current_node(&cur);
			ck_kind k = kind(c, n);
			uint32_t a = ts_node_start_byte(n), e = ts_node_end_byte(n);
			const char *s = c->src + a;
			size_t len = e > a && e <= c->in->len ? e - a : 0;
			if (k == K_WILDCARD_IMPORT) {
				c->self_clean = -1;
			} else if (k == K_IDENTIFIER) {
				bool ascii = true;
				for (size_t i = 0; i < len; i++)
					ascii &= (unsigned char)s[i] < 0x80;
				bool ns = (len == 7 && memcmp(s, "globals", 7) == 0) ||
					  (len == 6 && memcmp(s, "locals", 6) == 0) ||
					  (len == 4 && memcmp(s, "vars", 4) == 0);
				bool kill = !ascii;
				for (size_t i = 0; i < sizeof self_kill_words / sizeof *self_kill_words; i++)
					kill |= strlen(self_kill_words[i]) == len &&
						memcmp(self_kill_words[i], s, len) == 0;
				if (len == 8 && memcmp(s, "__name__", 8) == 0 && !self_name_read(c, n))
					kill = true;
				if (ns && !names_namespace_read(c, n, &passed))
					kill = true;
				if ((len == 13 && memcmp(s, "import_module", 13) == 0) ||
				    (len == 10 && memcmp(s, "__import__", 10) == 0)) {
					if (a < c->self_import_at)
						c->self_import_at = a;
				}
				if (kill)
					c->self_clean = -1;
			} else if (k == K_STRING_CONTENT) {
				lb_buf b = {0};
				bool ok = len < 64 && unescape(s, len, &b);
				if (ok && b.len == 8 && memcmp(b.data, "__name__", 8) == 0)
					c->self_clean = -1;
				else if (!ok && len == 8 && memcmp(s, "__name__", 8) == 0)
					c->self_clean = -1;
				lb_buf_free(&b);
			} else if ((k == K_IMPORT_STATEMENT || k == K_IMPORT_FROM_STATEMENT) &&
				   a < c->self_import_at && self_import_node(c, n, k)) {
				c->self_import_at = a;
			}
			if (c->self_clean < 0)
				break;
			if (ts_tree_cursor_goto_first_child(&cur))
				continue;
			bool up = true;
			while (up && !ts_tree_cursor_goto_next_sibling(&cur))
				up = ts_tree_cursor_goto_parent(&cur);
			if (!up)
				break;
		}
		ts_tree_cursor_delete(&cur);
	}
	if (c->self_clean < 0)
		return false;
	/* the module-level statement holding it ends before the first such import (a loop
	 * around both runs the import first on its second turn) */
	TSNode top = at;
	for (TSNode p = ts_node_parent(top); !ts_node_is_null(p) && !is(c, p, K_MODULE);
	     p = ts_node_parent(p))
		top = p;
	return ts_node_end_byte(top) <= c->self_import_at;
}

static vset eval_inner(ctx *c, scope *sc, TSNode n)
{
	vset out = {0};
	ck_kind t = kind(c, n);
	if (t == K_IDENTIFIER) {
		const char *name = ident(c, n);
		if (find(c->taint, name))
			c->time_flag = true;
		if (strcmp(name, "__builtins__") == 0) {
			binding *b = find(sc, name);
			if (!b)
				return vs1(ref(c, "builtins"));
		}
		return lookup(c, sc, name);
	}
	if (t == K_ATTRIBUTE) {
		vset base = eval(c, sc, field(c, n, F_OBJECT));
		TSNode an = field(c, n, F_ATTRIBUTE);
		if (ts_node_is_null(an))
			return out;
		return member(c, &base, ident(c, an));
	}
	if (t == K_SUBSCRIPT) {
		vset base = eval(c, sc, field(c, n, F_VALUE));
		kids ks;
		kids_of(c, n, &ks);
		vset keys = {0};
		bool reverse = false;
		for (uint32_t i = 1; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_SLICE)) {
				const char *st = text(c, ch);
				char sq[32];
				size_t o = 0;
				for (const char *p = st; *p && o + 1 < sizeof sq; p++)
					if (*p != ' ')
						sq[o++] = *p;
				sq[o] = '\0';
				reverse = strcmp(sq, "::-1") == 0;
				generic(c, sc, ch);
			} else if (!is(c, ch, K_COMMENT)) {
				keys = use(c, sc, ch);
			}
		}
		/* os.environ["HOME"]: the sandbox's HOME, as expanduser's. */
		if (base.n == 1 && base.v[0].kind == VK_REF && base.v[0].s &&
		    strcmp(base.v[0].s, "os.environ") == 0 && !keys.unk && vs_str(&keys) &&
		    strcmp(vs_str(&keys), "HOME") == 0) {
			vs_add(&out, str(c->in->cfg->real_home ? "~" : LB_SANDBOX_HOME));
			return out;
		}
		if (reverse) {
			out.unk = base.unk || vs_computed(&base);
			for (unsigned i = 0; i < base.n; i++)
				if (base.v[i].kind == VK_STR && base.v[i].s) {
					size_t l = strlen(base.v[i].s);
					char *r = amalloc(c, l + 1);
					if (!r)
						return out;
					for (size_t j = 0; j < l; j++)
						r[j] = base.v[i].s[l - 1 - j];
					vs_add(&out, str(r));
				}
			return out;
		}
		if (sc == c->module && base.n == 1 && !base.unk && base.v[0].kind == VK_REF &&
		    strcmp(base.v[0].s, "sys.modules") == 0 && self_module_ok(c, n))
			return vs1((val){.kind = VK_SELFMOD});
		return subscr(c, sc, &base, &keys, n);
	}
	if (t == K_CALL)
		return eval_call(c, sc, n);
	if (t == K_PARENTHESIZED_EXPRESSION || t == K_AWAIT) {
		kids ks;
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (!is(c, ch, K_COMMENT))
				out = eval(c, sc, ch);
		}
		return out;
	}
	if (t == K_CONDITIONAL_EXPRESSION) {
		/* x if cond else y: children x, cond, y (comments aside) */
		kids ks;
		kids_of(c, n, &ks);
		unsigned alt = 0;
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_COMMENT))
				continue;
			if (alt++ == 1) {
				use(c, sc, ch);
				continue;
			}
			vset v = eval(c, sc, ch);
			if (alt == 1)
				out = v;
			else
				vs_alt(&out, &v);
		}
		return out;
	}
	if (t == K_BOOLEAN_OPERATOR) {
		/* a or b, a and b: either operand may be the value */
		out = eval(c, sc, field(c, n, F_LEFT));
		vset b = eval(c, sc, field(c, n, F_RIGHT));
		vs_alt(&out, &b);
		return out;
	}
	if (t == K_NAMED_EXPRESSION) {
		out = eval(c, sc, field(c, n, F_VALUE));
		TSNode nm = field(c, n, F_NAME);
		if (is(c, nm, K_IDENTIFIER))
			bind(c, sc, ident(c, nm), &out);
		return out;
	}
	if (t == K_STRING)
		return fold_string(c, sc, n);
	if (t == K_CONCATENATED_STRING) {
		kids ks;
		kids_of(c, n, &ks);
		out = vs1(str(""));
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (!is(c, ch, K_STRING))
				continue;
			vset s = fold_string(c, sc, ch);
			out = concat(c, &out, &s);
		}
		return out;
	}
	if (t == K_BINARY_OPERATOR) {
		TSNode op = field(c, n, F_OPERATOR);
		TSNode left = field(c, n, F_LEFT), right = field(c, n, F_RIGHT);
		const char *ot = ts_node_is_null(op) ? "" : text(c, op);
		vset a = eval(c, sc, left);
		vset b = eval(c, sc, right);
		if (strcmp(ot, "+") == 0 && (vs_has_str(&a) || vs_has_str(&b)))
			return concat(c, &a, &b);
		if (strcmp(ot, "/") == 0) {
			out.unk = a.unk || b.unk;
			for (unsigned i = 0; i < a.n; i++)
				if (a.v[i].kind == VK_PATH) {
					const char *s = vs_str(&b);
					if (s) {
						val p = {.kind = VK_PATH, .s = path_join(c, a.v[i].s, s)};
						vs_add(&out, p);
					}
				}
			if (out.n)
				return out;
		}
		report(c, &a, left, USE);
		/* "..." % C with a literal template is str's own formatting: C's text */
		if (strcmp(ot, "%") == 0 && (is(c, left, K_STRING) || is(c, left, K_CONCATENATED_STRING)))
			report_names(c, &b, right, 0, false);
		else
			report(c, &b, right, USE);
		if (strcmp(ot, "%") == 0 && vs_has_str(&a))
			vs_add(&out, str(NULL));
		return out;
	}
	if (t == K_LAMBDA) {
		params_defaults(c, sc, field(c, n, F_PARAMETERS));
		defer(c, sc, n, NULL);
		return out;
	}
	if (t == K_LIST_COMPREHENSION || t == K_SET_COMPREHENSION ||
	    t == K_DICTIONARY_COMPREHENSION || t == K_GENERATOR_EXPRESSION) {
		/* Clauses first (they bind the loop names), then the element. */
		kids ks;
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_FOR_IN_CLAUSE)) {
				use_names(c, sc, field(c, ch, F_RIGHT), 0, true);
				c->cond++;
				bind_target_empty(c, sc, field(c, ch, F_LEFT));
				c->cond--;
			}
		}
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (!is(c, ch, K_FOR_IN_CLAUSE))
				generic(c, sc, ch);
		}
		return out;
	}
	if (t == K_KEYWORD_ARGUMENT) {
		use(c, sc, field(c, n, F_VALUE));
		return out;
	}
	if (t == K_INTEGER || t == K_FLOAT || t == K_TRUE ||
	    t == K_FALSE || t == K_NONE || t == K_COMMENT ||
	    t == K_ELLIPSIS)
		return out;
	if (t == K_EXEC_STATEMENT || stmt_kind(t)) {
		stmt(c, sc, n);
		return out;
	}
	if (strcmp(ts_node_type(n), "comparison_operator") == 0) {
		comparison(c, sc, n);
		return out;
	}
	generic(c, sc, n);
	return out;
}

static vset eval(ctx *c, scope *sc, TSNode n)
{
	vset out = {0};
	if (ts_node_is_null(n) || c->err)
		return out;
	if (c->depth >= MAX_DEPTH) {
		c->too_deep = true;
		return out;
	}
	c->depth++;
	out = eval_inner(c, sc, n);
	c->depth--;
	if (c->in->std && out.n)
		tables_of(c, &out, n);
	return out;
}

/* ---- statements ------------------------------------------------------------------------------- */

/* Whether a try's handlers catch a failed import (bare except, ImportError,
 * ModuleNotFoundError, Exception, BaseException): its body's imports are optional. */
static bool try_guards_import(ctx *c, const kids *ks)
{
	static const char *const names[] = {"ImportError", "ModuleNotFoundError", "Exception"};
	for (uint32_t i = 0; i < ks->n; i++) {
		TSNode ch = ks->v[i];
		if (is(c, ch, K_BLOCK) || strcmp(ts_node_type(ch), "except_clause") != 0)
			continue;
		/* The clause's text up to its body: "except (ImportError, OSError) as e:" */
		const char *s = text(c, ch);
		size_t n = strcspn(s, ":");
		if (strspn(s, "except \t") >= n)
			return true;
		for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
			const char *f = strstr(s, names[k]);
			if (f && (size_t)(f - s) < n)
				return true;
		}
	}
	return false;
}

static void import_event(ctx *c, const char *q, TSNode at, bool report_module)
{
	char msg[600];
	const lb_check_config *cfg = c->in->cfg;
	ck_rule banned = ck_classify(q, true, cfg->policy);
	if (report_module) {
		if (banned != R_COUNT) {
			snprintf(msg, sizeof msg, "import of `%s`: %s", q, ck_rules[banned].info.title);
			raw(c, banned, at, q, msg);
		}
		if (ck_list_match(&cfg->deny_modules, q)) {
			snprintf(msg, sizeof msg, "import of `%s` is denied by the configuration", q);
			raw(c, R_DENIED, at, q, msg);
		}
	}
	char top[256];
	snprintf(top, sizeof top, "%.*s", (int)strcspn(q, "."), q);
	if (top[0] && !c->import_guarded && !ck_local_module(c->in, top)) {
		if (!c->out->imports)
			c->out->imports = json_object_new_object();
		if (c->out->imports && !json_object_object_get_ex(c->out->imports, top, NULL))
			json_object_object_add(c->out->imports, top, NULL);
	}
	/* a banned module already has its finding; "not on the allowlist" would only repeat it */
	if (banned == R_COUNT && !ck_import_allowed(top, cfg->policy) && !ck_list_match(&cfg->allow_modules, q) &&
	    !ck_local_module(c->in, top)) {
		snprintf(msg, sizeof msg, "module `%s` is not on the import allowlist", top);
		raw(c, R_IMPORT, at, top, msg);
	}
}

static const char *dotted(ctx *c, TSNode n)
{
	/* dotted_name: identifiers joined by dots, whatever spacing or comments sit between */
	lb_buf b = {0};
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		if (!is(c, ch, K_IDENTIFIER))
			continue;
		if (b.len)
			lb_buf_puts(&b, ".");
		lb_buf_puts(&b, ident(c, ch));
	}
	const char *r = b.data ? astrndup(c, b.data, b.len) : text(c, n);
	lb_buf_free(&b);
	return r;
}

static void import_stmt(ctx *c, scope *sc, TSNode n)
{
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		if (is(c, ch, K_DOTTED_NAME)) {
			const char *q = dotted(c, ch);
			import_event(c, q, ch, true);
			char top[256];
			snprintf(top, sizeof top, "%.*s", (int)strcspn(q, "."), q);
			vset v = vs1(ref(c, top));
			bind(c, sc, top, &v);
		} else if (is(c, ch, K_ALIASED_IMPORT)) {
			const char *q = dotted(c, field(c, ch, F_NAME));
			import_event(c, q, ch, true);
			vset v = vs1(ref(c, q));
			TSNode al = field(c, ch, F_ALIAS);
			if (!ts_node_is_null(al))
				bind(c, sc, ident(c, al), &v);
		}
	}
}

static void import_from(ctx *c, scope *sc, TSNode n)
{
	TSNode mn = field(c, n, F_MODULE_NAME);
	bool relative = is(c, mn, K_RELATIVE_IMPORT);
	const char *q = relative ? NULL : dotted(c, mn);
	bool module_banned = false;
	if (q) {
		module_banned = ck_classify(q, true, c->in->cfg->policy) != R_COUNT;
		import_event(c, q, mn, true);
	}
	kids ks;
	kids_of(c, n, &ks);
	for (uint32_t i = 0; i < ks.n; i++) {
		TSNode ch = ks.v[i];
		if (ts_node_eq(ch, mn))
			continue;
		if (is(c, ch, K_WILDCARD_IMPORT)) {
			if (!q)
				continue;
			vs_add(&sc->stars, ref(c, q));
			char canon[512];
			ck_canonical(q, canon, sizeof canon);
			if (c->in->cfg->policy == LB_CHECK_STRICT && strcmp(canon, "os") == 0)
				raw(c, R_SEED_BANNED, ch, "os",
				    "`from os import *` imports all of os; the seed allows only os.path");
			/* socket's names are each judged, but not the ones a star brings */
			ck_rule whole = ck_classify(q, false, c->in->cfg->policy);
			if (whole != R_COUNT && !module_banned) {
				char msg[600];
				snprintf(msg, sizeof msg, "star import of `%s`: %s; import the names you use",
					 q, ck_rules[whole].info.title);
				raw(c, whole, ch, q, msg);
			} else if (ck_sensitive_module(q) && !module_banned)
				raw(c, R_UNRESOLVED, ch, q,
				    "star import of a sensitive module: which names it brings cannot be "
				    "checked; import the names you use");
			continue;
		}
		TSNode name = ch, alias = {0};
		if (is(c, ch, K_ALIASED_IMPORT)) {
			name = field(c, ch, F_NAME);
			alias = field(c, ch, F_ALIAS);
		}
		if (!is(c, name, K_DOTTED_NAME))
			continue;
		const char *nm = dotted(c, name);
		const char *bound = ts_node_is_null(alias) ? nm : ident(c, alias);
		if (!q) {
			bind_empty(c, sc, bound);
			continue;
		}
		const char *full = afmt(c, q, ".", nm);
		if (!module_banned) {
			ck_rule r = ck_classify(full, true, c->in->cfg->policy);
			if (r != R_COUNT) {
				char msg[600];
				snprintf(msg, sizeof msg, "import of `%s`: %s", full, ck_rules[r].info.title);
				raw(c, r, ch, full, msg);
			}
		}
		vset v = vs1(ref(c, full));
		bind(c, sc, bound, &v);
	}
}

static void guard_check(ctx *c, scope *sc, TSNode cond)
{
	bool tf = c->time_flag;
	c->time_flag = false;
	use(c, sc, cond);
	if ((c->time_flag || taint_any(c, cond, 0)) && strpbrk(text(c, cond), "<>"))
		c->h_guard = true;
	c->time_flag = tf;
}

static void walk_body(ctx *c, scope *sc, TSNode body, TSNode params, bool lambda);

static void def_function(ctx *c, scope *sc, TSNode n)
{
	TSNode name = field(c, n, F_NAME);
	params_defaults(c, sc, field(c, n, F_PARAMETERS));
	TSNode rt = field(c, n, F_RETURN_TYPE);
	if (!ts_node_is_null(rt))
		use(c, sc, rt);
	const char *nm = ts_node_is_null(name) ? NULL : ident(c, name);
	if (nm)
		bind_empty(c, sc, nm);
	defer(c, sc, n, nm);
}

static void def_class(ctx *c, scope *sc, TSNode n)
{
	TSNode sup = field(c, n, F_SUPERCLASSES);
	if (!ts_node_is_null(sup))
		generic(c, sc, sup);
	TSNode name = field(c, n, F_NAME);
	scope *cs = new_scope(c, SC_CLASS, sc, NULL);
	if (!cs)
		return;
	/* The body runs now, in its own namespace; its functions see the enclosing scopes. */
	block(c, cs, field(c, n, F_BODY));
	if (!ts_node_is_null(name))
		bind_empty(c, sc, ident(c, name));
}

static void cond_block(ctx *c, scope *sc, TSNode n)
{
	c->cond++;
	block(c, sc, n);
	c->cond--;
}

#define LOOP_WALKS 10          /* walks of one loop body before its values count as unsettled */
#define EXTRA_WALKS_MAX 2048   /* walks after the first, all loops of a pass together */

/* A loop's body (with a while's condition and the else clause), walked until no walk adds a
 * value to a binding of this scope: a value bound late in the body is there at the top of
 * the next iteration (name = "A"; for ..: globals()[name](); name = argv[1]), and one walk
 * in source order would never show it to the read above. Bindings in a loop are unions, so
 * the walks settle; ordinary code binds nothing the check follows and is walked once, or
 * twice when the body binds a string or a module's name. A loop that does not settle within
 * the limits is reported as not analysed (never passed). */
static void loop_walk(ctx *c, scope *sc, TSNode n, bool is_for)
{
	scope *saved_sc = c->loop_sc;
	bool grew_any = false;
	c->loop_sc = sc;
	c->cond++;
	for (unsigned walk = 0;; walk++) {
		bool saved_grew = c->grew;
		c->grew = false;
		c->rewalk += walk > 0;
		if (is_for)
			bind_target_empty(c, sc, field(c, n, F_LEFT));
		else if (walk > 0)
			guard_check(c, sc, field(c, n, F_CONDITION));
		block(c, sc, field(c, n, F_BODY));
		TSNode alt = field(c, n, F_ALTERNATIVE);
		if (!ts_node_is_null(alt))
			block(c, sc, field(c, alt, F_BODY));
		c->rewalk -= walk > 0;
		bool grew = c->grew;
		c->grew = saved_grew;
		grew_any |= grew;
		if (!grew || c->err)
			break;
		if (walk + 1 >= LOOP_WALKS || ++c->extra_walks > EXTRA_WALKS_MAX) {
			c->unsettled = true;
			break;
		}
	}
	c->cond--;
	c->loop_sc = saved_sc;
	/* what this loop added is new to an enclosing loop of the same scope as well */
	c->grew |= grew_any && saved_sc == sc;
}

static void stmt_inner(ctx *c, scope *sc, TSNode n)
{
	ck_kind t = kind(c, n);
	kids ks, ki;
	if (t == K_IMPORT_STATEMENT) {
		import_stmt(c, sc, n);
	} else if (t == K_IMPORT_FROM_STATEMENT) {
		import_from(c, sc, n);
	} else if (t == K_FUTURE_IMPORT_STATEMENT || t == K_COMMENT ||
		   t == K_PASS_STATEMENT || t == K_BREAK_STATEMENT ||
		   t == K_CONTINUE_STATEMENT || t == K_TYPE_ALIAS_STATEMENT) {
	} else if (t == K_EXPRESSION_STATEMENT) {
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_ASSIGNMENT))
				assign(c, sc, ch);
			else if (is(c, ch, K_AUGMENTED_ASSIGNMENT))
				augassign(c, sc, ch);
			else if (is(c, ch, K_STRING) || is(c, ch, K_CONCATENATED_STRING))
				; /* a docstring or a bare string does nothing */
			else
				eval(c, sc, ch);
		}
	} else if (t == K_GLOBAL_STATEMENT || t == K_NONLOCAL_STATEMENT) {
		if (sc == c->module)
			return;
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (!is(c, ch, K_IDENTIFIER))
				continue;
			binding *b = find_or_add(c, sc, ident(c, ch));
			if (!b)
				return;
			if (t == K_GLOBAL_STATEMENT)
				b->global_decl = true;
			else
				b->nonlocal_decl = true;
		}
	} else if (t == K_IF_STATEMENT) {
		guard_check(c, sc, field(c, n, F_CONDITION));
		cond_block(c, sc, field(c, n, F_CONSEQUENCE));
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_ELIF_CLAUSE)) {
				guard_check(c, sc, field(c, ch, F_CONDITION));
				cond_block(c, sc, field(c, ch, F_CONSEQUENCE));
			} else if (is(c, ch, K_ELSE_CLAUSE)) {
				cond_block(c, sc, field(c, ch, F_BODY));
			}
		}
	} else if (t == K_FOR_STATEMENT) {
		/* iterating a mapping gives its keys: the loop name is bound to no value */
		use_names(c, sc, field(c, n, F_RIGHT), 0, true);
		loop_walk(c, sc, n, true);
	} else if (t == K_WHILE_STATEMENT) {
		guard_check(c, sc, field(c, n, F_CONDITION));
		loop_walk(c, sc, n, false);
	} else if (t == K_TRY_STATEMENT) {
		c->cond++;
		kids_of(c, n, &ks);
		bool guards = try_guards_import(c, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_BLOCK)) {
				c->import_guarded += guards;
				block(c, sc, ch);
				c->import_guarded -= guards;
				continue;
			}
			/* except / except* / else / finally clauses */
			kids_of(c, ch, &ki);
			for (uint32_t j = 0; j < ki.n; j++) {
				TSNode x = ki.v[j];
				if (is(c, x, K_BLOCK))
					block(c, sc, x);
				else if (is(c, x, K_AS_PATTERN)) {
					use(c, sc, ts_node_named_child(x, 0));
					TSNode al = field(c, x, F_ALIAS);
					if (!ts_node_is_null(al))
						bind_target_empty(c, sc, al);
				} else if (!is(c, x, K_COMMENT))
					use(c, sc, x);
			}
		}
		c->cond--;
	} else if (t == K_WITH_STATEMENT) {
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_WITH_CLAUSE)) {
				kids_of(c, ch, &ki);
				for (uint32_t j = 0; j < ki.n; j++) {
					TSNode item = ki.v[j];
					TSNode v = is(c, item, K_WITH_ITEM) ? field(c, item, F_VALUE) : item;
					if (is(c, v, K_AS_PATTERN)) {
						use(c, sc, ts_node_named_child(v, 0));
						TSNode al = field(c, v, F_ALIAS);
						if (!ts_node_is_null(al))
							bind_target_empty(c, sc, al);
					} else if (!ts_node_is_null(v) && !is(c, v, K_COMMENT)) {
						use(c, sc, v);
					}
				}
			}
		}
		block(c, sc, field(c, n, F_BODY));
	} else if (t == K_FUNCTION_DEFINITION) {
		def_function(c, sc, n);
	} else if (t == K_CLASS_DEFINITION) {
		def_class(c, sc, n);
	} else if (t == K_DECORATED_DEFINITION) {
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (is(c, ch, K_DECORATOR))
				generic(c, sc, ch);
		}
		TSNode d = field(c, n, F_DEFINITION);
		if (is(c, d, K_CLASS_DEFINITION))
			def_class(c, sc, d);
		else if (!ts_node_is_null(d))
			def_function(c, sc, d);
	} else if (t == K_EXEC_STATEMENT) {
		vset e = vs1(ref(c, "builtins.exec"));
		report(c, &e, n, CALL);
		generic(c, sc, n);
	} else if (t == K_MATCH_STATEMENT) {
		TSNode subj = field(c, n, F_SUBJECT);
		if (!ts_node_is_null(subj))
			use(c, sc, subj);
		c->cond++;
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++) {
			TSNode ch = ks.v[i];
			if (!is(c, ch, K_BLOCK))
				continue;
			kids_of(c, ch, &ki);
			for (uint32_t j = 0; j < ki.n; j++) {
				TSNode cc = ki.v[j];
				TSNode cons = field(c, cc, F_CONSEQUENCE);
				TSNode guard = field(c, cc, F_GUARD);
				if (!ts_node_is_null(guard))
					use(c, sc, guard);
				if (!ts_node_is_null(cons))
					block(c, sc, cons);
			}
		}
		c->cond--;
	} else if (t == K_BLOCK || t == K_MODULE) {
		kids_of(c, n, &ks);
		for (uint32_t i = 0; i < ks.n; i++)
			stmt(c, sc, ks.v[i]);
	} else if (t == K_DELETE_STATEMENT) {
		kids_of(c, n, &ks);
		bool was = c->deleting;
		c->deleting = true;
		for (uint32_t i = 0; i < ks.n; i++)
			bind_target_empty(c, sc, ks.v[i]);
		c->deleting = was;
	} else {
		/* return, raise, assert, print, ERROR and anything newer: every expression inside
		 * is a use */
		generic(c, sc, n);
	}
}

static void stmt(ctx *c, scope *sc, TSNode n)
{
	if (ts_node_is_null(n) || c->err)
		return;
	if (c->depth >= MAX_DEPTH) {
		c->too_deep = true;
		return;
	}
	c->depth++;
	stmt_inner(c, sc, n);
	c->depth--;
}

static void block(ctx *c, scope *sc, TSNode n)
{
	if (ts_node_is_null(n))
		return;
	if (is(c, n, K_BLOCK) || is(c, n, K_MODULE)) {
		stmt(c, sc, n);
		return;
	}
	/* a one-line body that tree-sitter did not wrap in a block */
	if (is_statement(c, n))
		stmt(c, sc, n);
	else
		use(c, sc, n);
}

/* Run a scope's body, then the bodies of the functions defined in it (they run later, when
 * every binding of the scope is known). */
static void walk_body(ctx *c, scope *sc, TSNode body, TSNode params, bool lambda)
{
	pending *list = NULL;
	pending **saved_pend = c->pend;
	int saved_cond = c->cond;
	c->pend = &list;
	c->cond = 0;
	if (!ts_node_is_null(params))
		bind_params(c, sc, params);
	if (lambda)
		use(c, sc, body);
	else
		block(c, sc, body);
	/* oldest first, so functions are analysed in source order */
	pending *rev = NULL;
	while (list) {
		pending *nx = list->next;
		list->next = rev;
		rev = list;
		list = nx;
	}
	c->pend = &list;
	for (pending *p = rev; p && !c->err; p = p->next) {
		scope *fs = new_scope(c, SC_FUNC, p->parent, p->name);
		if (!fs)
			break;
		if (p->name && p->parent == c->module && c->nfns < 4096) {
			if (c->nfns == c->cap_fns) {
				size_t nc = c->cap_fns ? c->cap_fns * 2 : 16;
				fnscope *nv = realloc(c->fns, nc * sizeof *nv);
				if (!nv) {
					c->err = -ENOMEM;
					break;
				}
				c->fns = nv;
				c->cap_fns = nc;
			}
			c->fns[c->nfns++] = (fnscope){p->name, fs->id};
		}
		bool lam = is(c, p->node, K_LAMBDA);
		walk_body(c, fs, field(c, p->node, F_BODY), field(c, p->node, F_PARAMETERS), lam);
	}
	c->pend = saved_pend;
	c->cond = saved_cond;
}

/* ---- determinism and harness verdicts ----------------------------------------------------------- */

/* How deep calls of the experiment's own functions are followed. */
#define CALL_DEPTH 32

static bool seeds_lib(const event *e, const char *lib)
{
	return e->kind == EV_SEED && (strcmp(e->lib, lib) == 0 || strcmp(e->lib, "*") == 0);
}

/* What a call of each of the experiment's functions does to one library's random state:
 * whether it seeds it, and the first random operation it runs before that, following the
 * functions it calls by name. Computed once per function (memoised), so the work grows with
 * the code, not with the number of paths through the call graph. */
typedef struct det {
	const ctx *c;
	const char *lib;
	size_t *evs;   /* event indices by (scope, order) */
	size_t *fnidx; /* function indices by name */
	uint8_t *state; /* per function: 0 not yet, 1 being summarised (recursion), 2 done */
	bool *seeds;
	const event **rnd;
} det;

static int ev_cmp(const void *x, const void *y, void *arg)
{
	const event *ev = arg;
	const event *a = &ev[*(const size_t *)x], *b = &ev[*(const size_t *)y];
	if (a->scope_id != b->scope_id)
		return a->scope_id < b->scope_id ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int fn_cmp(const void *x, const void *y, void *arg)
{
	const fnscope *fns = arg;
	return strcmp(fns[*(const size_t *)x].name, fns[*(const size_t *)y].name);
}

/* [*lo, *hi) of d->fnidx: the functions called name. */
static void fns_named(const det *d, const char *name, size_t *lo, size_t *hi)
{
	size_t l = 0, h = d->c->nfns;
	while (l < h) {
		size_t m = (l + h) / 2;
		if (strcmp(d->c->fns[d->fnidx[m]].name, name) < 0)
			l = m + 1;
		else
			h = m;
	}
	*lo = *hi = l;
	while (*hi < d->c->nfns && strcmp(d->c->fns[d->fnidx[*hi]].name, name) == 0)
		(*hi)++;
}

static void summarise(det *d, size_t f, int depth);

/* A call by name: what the functions of that name do (any of them). */
static void call_effect(det *d, const char *name, int depth, bool *seeds, const event **rnd)
{
	size_t lo, hi;
	*seeds = false;
	*rnd = NULL;
	fns_named(d, name, &lo, &hi);
	for (size_t k = lo; k < hi; k++) {
		size_t f = d->fnidx[k];
		summarise(d, f, depth + 1);
		if (d->state[f] != 2)
			continue;
		*seeds = *seeds || d->seeds[f];
		if (!*rnd)
			*rnd = d->rnd[f];
	}
}

static void summarise(det *d, size_t f, int depth)
{
	if (d->state[f] != 0 || depth > CALL_DEPTH)
		return;
	d->state[f] = 1;
	const ctx *c = d->c;
	int id = c->fns[f].id;
	/* this function's events: a binary search in evs */
	size_t l = 0, h = c->nev;
	while (l < h) {
		size_t m = (l + h) / 2;
		if (c->ev[d->evs[m]].scope_id < id)
			l = m + 1;
		else
			h = m;
	}
	bool seeded = false;
	const event *rnd = NULL;
	for (size_t k = l; k < c->nev && c->ev[d->evs[k]].scope_id == id; k++) {
		const event *e = &c->ev[d->evs[k]];
		if (seeds_lib(e, d->lib)) {
			seeded = true;
		} else if (e->kind == EV_RANDOM && strcmp(e->lib, d->lib) == 0) {
			if (!seeded && !rnd)
				rnd = e;
		} else if (e->kind == EV_CALLFN) {
			bool s;
			const event *r;
			call_effect(d, e->lib, depth, &s, &r);
			if (!seeded && !rnd)
				rnd = r;
			seeded = seeded || s;
		}
	}
	d->seeds[f] = seeded;
	d->rnd[f] = rnd;
	d->state[f] = 2;
}

static void det_free(det *d)
{
	free(d->evs);
	free(d->fnidx);
	free(d->state);
	free(d->seeds);
	free(d->rnd);
}

static int det_init(det *d, const ctx *c, const char *lib)
{
	size_t nf = c->nfns ? c->nfns : 1;
	*d = (det){.c = c, .lib = lib};
	d->evs = malloc((c->nev ? c->nev : 1) * sizeof *d->evs);
	d->fnidx = malloc(nf * sizeof *d->fnidx);
	d->state = calloc(nf, sizeof *d->state);
	d->seeds = calloc(nf, sizeof *d->seeds);
	d->rnd = calloc(nf, sizeof *d->rnd);
	if (!d->evs || !d->fnidx || !d->state || !d->seeds || !d->rnd) {
		det_free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nev; i++)
		d->evs[i] = i;
	for (size_t i = 0; i < c->nfns; i++)
		d->fnidx[i] = i;
	qsort_r(d->evs, c->nev, sizeof *d->evs, ev_cmp, c->ev);
	qsort_r(d->fnidx, c->nfns, sizeof *d->fnidx, fn_cmp, c->fns);
	return 0;
}

/* Whether a call of fname seeds lib, in its body or in a function it calls. */
static bool fn_seeds(det *d, const char *fname)
{
	bool s;
	const event *r;
	call_effect(d, fname, 0, &s, &r);
	return s;
}

/* Module level, in order: the first call of one of the experiment's functions that draws
 * from lib before anything has seeded it (x = make_data(); np.random.seed(0)). */
static void seed_order_by_calls(ctx *c, det *d)
{
	for (size_t i = 0; i < c->nev; i++) {
		const event *f = &c->ev[d->evs[i]];
		if (f->scope_id != 0)
			break; /* the module's events come first: scope 0 */
		if (seeds_lib(f, d->lib) || (f->kind == EV_RANDOM && strcmp(f->lib, d->lib) == 0))
			break; /* seeded here, or left to the module-level check */
		if (f->kind != EV_CALLFN)
			continue;
		bool s;
		const event *r;
		call_effect(d, f->lib, 0, &s, &r);
		if (r) {
			char msg[600];
			snprintf(msg, sizeof msg, "`%s()` runs `%s` (line %u) before %s is seeded",
				 f->lib, r->qual, r->line, d->lib);
			if (!c->err && ck_raw_add(c->out, R_SEED_ORDER, f->line, f->col, f->lib, "%s",
						  msg) < 0)
				c->err = -ENOMEM;
			return;
		}
		if (s)
			return;
	}
}

static void determinism(ctx *c)
{
	static const char *const libs[] = {"random", "numpy", "torch", "tensorflow"};
	char msg[600];
	for (size_t l = 0; l < sizeof libs / sizeof libs[0]; l++) {
		const char *lib = libs[l];
		const event *first = NULL;
		bool seeded = false;
		for (size_t i = 0; i < c->nev; i++) {
			const event *e = &c->ev[i];
			if (e->kind == EV_RANDOM && strcmp(e->lib, lib) == 0 && !first)
				first = e;
			if (e->kind == EV_SEED && (strcmp(e->lib, lib) == 0 || strcmp(e->lib, "*") == 0))
				seeded = true;
		}
		if (!first)
			continue;
		bool reported = false;
		det d;
		if (det_init(&d, c, lib) < 0) {
			c->err = -ENOMEM;
			return;
		}
		if (!seeded) {
			snprintf(msg, sizeof msg, "`%s` is random but %s is never seeded", first->qual, lib);
			if (!c->err && ck_raw_add(c->out, R_SEED_MISSING, first->line, first->col,
						  first->qual, "%s", msg) < 0)
				c->err = -ENOMEM;
			det_free(&d);
			continue;
		}
		for (size_t i = 0; i < c->nev; i++) {
			const event *r = &c->ev[i];
			if (r->kind != EV_RANDOM || strcmp(r->lib, lib) != 0)
				continue;
			bool ok = false;
			for (size_t k = 0; k < c->nev && !ok; k++) {
				const event *s = &c->ev[k];
				bool same_lib = s->kind == EV_SEED &&
						(strcmp(s->lib, lib) == 0 || strcmp(s->lib, "*") == 0);
				if (!same_lib)
					continue;
				if (s->scope_id == r->scope_id)
					ok = s->order < r->order;
				else if (r->scope_id != 0)
					ok = true; /* another function may well have run first */
			}
			if (!ok && r->scope_id == 0) {
				/* module level: a call, earlier, of a function that seeds */
				for (size_t k = 0; k < c->nev && !ok; k++) {
					const event *f = &c->ev[k];
					if (f->kind == EV_CALLFN && f->scope_id == 0 &&
					    f->order < r->order && fn_seeds(&d, f->lib))
						ok = true;
				}
			}
			if (!ok) {
				snprintf(msg, sizeof msg, "`%s` runs before %s is seeded", r->qual, lib);
				if (!c->err && ck_raw_add(c->out, R_SEED_ORDER, r->line, r->col, r->qual,
							  "%s", msg) < 0)
					c->err = -ENOMEM;
				reported = true;
				break;
			}
		}
		if (!reported)
			seed_order_by_calls(c, &d);
		det_free(&d);
	}
}

static void harness(ctx *c)
{
	static const struct {
		ck_rule r;
		size_t off;
		const char *msg;
	} h[] = {
		{R_TIME_ESTIMATE, offsetof(ctx, h_estimate),
		 "no `TIME_ESTIMATE: Xs` line is printed before the main loop"},
		{R_TIME_GUARD, offsetof(ctx, h_guard),
		 "no time guard compares the elapsed time with the budget"},
		{R_RESULTS_JSON, offsetof(ctx, h_results), "results.json is never written"},
		{R_METRIC_LINES, offsetof(ctx, h_metrics), "no `name: value` metric lines are printed"},
	};
	bool unprinted = false;
	log_facts_settle(c, &unprinted);
	for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
		bool have = *(const bool *)((const char *)c + h[i].off);
		const char *msg = h[i].r == R_METRIC_LINES && unprinted
			? "no `name: value` metric lines are printed: the ones logged with logging.info "
			  "are not, as nothing sets logging to print INFO (its default level is "
			  "WARNING); logging.basicConfig(level=logging.INFO) does"
			: h[i].msg;
		if (!have && !c->err && ck_raw_add(c->out, h[i].r, 1, 1, NULL, "%s", msg) < 0)
			c->err = -ENOMEM;
	}
}

/* ---- entry ------------------------------------------------------------------------------------ */

/* ---- names-only readings, settled at the end of the file ------------------------------------- */

/* Names through which a builtin, or this module's namespace, can be rebound by a computed
 * name (setattr(builtins, k, f), globals()[k] = f, vars()[k], len.__self__): with one in
 * the file, no reading relies on a builtin's name. */
static const char *const names_kill_words[] = {
	"setattr", "delattr", "__setattr__", "__delattr__", "__dict__",
	"__builtins__", "builtins", "__builtin__", "__main__", "__self__", "getmodule",
};

static bool names_kill_word(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof names_kill_words / sizeof *names_kill_words; i++)
		if (strlen(names_kill_words[i]) == n && memcmp(names_kill_words[i], s, n) == 0)
			return true;
	return false;
}

static bool names_store_target(ctx *c, TSNode sub)
{
	TSNode p = ts_node_parent(sub);
	ck_kind k = kind(c, p);
	if (k == K_ASSIGNMENT || k == K_AUGMENTED_ASSIGNMENT)
		return ts_node_eq(field(c, p, F_LEFT), sub);
	if (k == K_EXPRESSION_LIST)
		return is(c, ts_node_parent(p), K_DELETE_STATEMENT);
	return k == K_PATTERN_LIST || k == K_TUPLE_PATTERN || k == K_LIST_PATTERN ||
	       k == K_DELETE_STATEMENT || k == K_FOR_STATEMENT || k == K_FOR_IN_CLAUSE;
}

/* globals()/locals()/vars() where the namespace can only be read: compared, indexed (not
 * stored to), asked for keys/items/values/get/copy, or given to one of names_builtins (the
 * NB_* bit in *passed, which must hold at the end: a rebound len could write to it). */
static bool names_namespace_read(ctx *c, TSNode id, unsigned *passed)
{
	TSNode call = ts_node_parent(id);
	if (!is(c, call, K_CALL) || !ts_node_eq(field(c, call, F_FUNCTION), id))
		return false;
	TSNode al = field(c, call, F_ARGUMENTS);
	if (ts_node_is_null(al) || ts_node_named_child_count(al) != 0)
		return false;
	TSNode p = ts_node_parent(call);
	if (strcmp(ts_node_type(p), "comparison_operator") == 0)
		return true;
	if (is(c, p, K_SUBSCRIPT))
		return ts_node_eq(field(c, p, F_VALUE), call) && !names_store_target(c, p);
	if (is(c, p, K_ATTRIBUTE)) {
		TSNode at = field(c, p, F_ATTRIBUTE), gp = ts_node_parent(p);
		if (ts_node_is_null(at) || !is(c, gp, K_CALL) || !ts_node_eq(field(c, gp, F_FUNCTION), p))
			return false;
		uint32_t a = ts_node_start_byte(at), e = ts_node_end_byte(at);
		static const char *const reads[] = {"keys", "items", "values", "get", "copy"};
		for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
			if (strlen(reads[i]) == e - a && memcmp(c->src + a, reads[i], e - a) == 0)
				return true;
		return false;
	}
	if (is(c, p, K_ARGUMENT_LIST)) {
		TSNode f = field(c, ts_node_parent(p), F_FUNCTION);
		if (!is(c, f, K_IDENTIFIER))
			return false;
		uint32_t a = ts_node_start_byte(f), e = ts_node_end_byte(f);
		int i = names_builtin(c->src + a, e - a);
		if (i < 0)
			return false;
		*passed |= 1u << i;
		return true;
	}
	return false;
}

/* The NB_* bits an identifier leaves standing: a builtin's name only as the callee of a call
 * (`len(...)`, `x.format(...)`: no binding, no taking of the function itself). */
static unsigned names_ident(ctx *c, TSNode n, unsigned all, unsigned *passed)
{
	uint32_t a = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e > c->in->len || a > e)
		return 0;
	const char *s = c->src + a;
	size_t len = e - a;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0; /* NFKC could make it any name */
	if (names_kill_word(s, len))
		return 0;
	if ((len == 7 && memcmp(s, "globals", 7) == 0) || (len == 6 && memcmp(s, "locals", 6) == 0))
		return names_namespace_read(c, n, passed) ? all : 0;
	bool vars = len == 4 && memcmp(s, "vars", 4) == 0;
	if (!vars && names_builtin(s, len) < 0)
		return all;
	TSNode p = ts_node_parent(n), callee = n;
	if (is(c, p, K_ATTRIBUTE) && ts_node_eq(field(c, p, F_ATTRIBUTE), n)) {
		callee = p;
		p = ts_node_parent(p);
	}
	/* elsewhere (`len = f`, `def len`, `key=len`) the name may be bound; the builtin
	 * itself taken as a value is harmless (len.__self__ is settled by names_kill) */
	if (!vars && ts_node_eq(callee, n) &&
	    (is(c, p, K_ARGUMENT_LIST) ||
	     (is(c, p, K_KEYWORD_ARGUMENT) && ts_node_eq(field(c, p, F_VALUE), n))))
		return all; /* map(str, xs), key=len: the builtin passed, nothing bound */
	if (!is(c, p, K_CALL) || !ts_node_eq(field(c, p, F_FUNCTION), callee))
		return vars ? 0 : all & ~(1u << names_builtin(s, len));
	/* vars() with no argument is the namespace itself */
	if (vars && ts_node_eq(callee, n)) {
		TSNode al = field(c, p, F_ARGUMENTS);
		if (ts_node_is_null(al) || ts_node_named_child_count(al) == 0)
			return names_namespace_read(c, n, passed) ? all : 0;
	}
	return all;
}

/* A string that names one: the key of globals()[...], setattr(..., "len", ...) */
static unsigned names_string(ctx *c, TSNode n, unsigned all)
{
	uint32_t a = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e > c->in->len || a > e || e - a > 40)
		return all;
	lb_buf b = {0};
	bool ok = unescape(c->src + a, e - a, &b);
	const char *s = ok && b.data ? b.data : c->src + a;
	size_t len = ok ? b.len : e - a;
	unsigned r = all;
	/* `__name__ == "__main__"`: a name only compared reaches no namespace */
	bool compared = len == 8 && memcmp(s, "__main__", 8) == 0 &&
			strcmp(ts_node_type(ts_node_parent(ts_node_parent(n))), "comparison_operator") == 0;
	if (names_kill_word(s, len) && !compared)
		r = 0;
	else if (names_builtin(s, len) >= 0)
		r = all & ~(1u << names_builtin(s, len));
	lb_buf_free(&b);
	return r;
}

static unsigned names_clean(ctx *c)
{
	unsigned clean = (1u << NB_COUNT) - 1, passed = 0;
	TSTreeCursor cur = ts_tree_cursor_new(c->in->root);
	while (clean) {
		TSNode n = ts_tree_cursor_current_node(&cur);
		ck_kind k = kind(c, n);
		if (k == K_WILDCARD_IMPORT)
			clean = 0;
		else if (k == K_IDENTIFIER)
			clean = names_ident(c, n, clean, &passed);
		else if (k == K_STRING_CONTENT)
			clean = names_string(c, n, clean);
		if (ts_tree_cursor_goto_first_child(&cur))
			continue;
		bool up = true;
		while (up && !ts_tree_cursor_goto_next_sibling(&cur))
			up = ts_tree_cursor_goto_parent(&cur);
		if (!up)
			break;
	}
	ts_tree_cursor_delete(&cur);
	return (passed & clean) == passed ? clean : 0;
}

/* Each reading held back relied on builtins' names; where the file can rebind one (or reach
 * the builtins module, main's namespace), the finding is made after all. Only files with such
 * a reading pay for the walk. */
static void names_settle(ctx *c)
{
	if (!c->held)
		return;
	unsigned clean = c->names_kill ? 0 : names_clean(c);
	for (held *h = c->held; h; h = h->next)
		if ((h->need & clean) != h->need)
			raw(c, R_UNRESOLVED, h->at, h->name, h->msg);
	c->held = NULL;
}

static void reset_pass(ctx *c)
{
	c->module = new_scope(c, SC_MODULE, NULL, NULL);
	c->taint = new_scope(c, SC_MODULE, NULL, NULL);
	c->any_taint = false;
	c->saw_global_write = false;
	c->cond = c->depth = 0;
	c->too_deep = false;
	c->nev = c->nfns = 0;
	c->order = 0;
	c->time_flag = false;
	c->h_estimate = c->h_guard = c->h_results = c->h_metrics = false;
	c->log_msgs = c->log_fmts = NULL;
	c->nlog_msgs = c->nlog_fmts = 0;
	c->log_basic = c->log_level_on = c->log_set_info = c->log_handler = false;
	c->log_stdout = c->log_dict = false;
	c->module_has_sensitive = false;
	c->names_kill = false;
	c->held = NULL;
	c->loop_sc = NULL;
	c->grew = c->unsettled = false;
	c->rewalk = 0;
	c->extra_walks = 0;
	if (c->module)
		c->module->id = 0;
	c->next_scope_id = 1;
}

static void run_pass(ctx *c)
{
	if (!c->module || !c->taint) {
		c->err = -ENOMEM;
		return;
	}
	walk_body(c, c->module, c->in->root, (TSNode){0}, false);
	names_settle(c);
	if (c->too_deep)
		raw(c, R_UNPARSED, c->in->root, NULL,
		    "the code is nested too deeply to be analysed; flatten it");
	if (c->unsettled)
		raw(c, R_UNPARSED, c->in->root, NULL,
		    "the values a loop carries from one iteration to the next did not settle "
		    "within the analysis's limits; simplify the loop");
	determinism(c);
	if (c->in->harness)
		harness(c);
}

/* An integer literal of Python (1_000, 0x2a, 0o17, 0b11, 42) as a number. */
static bool int_literal(const char *s, long long *out)
{
	char digits[64];
	size_t n = 0;
	for (const char *p = s; *p; p++) {
		if (*p == '_')
			continue;
		if (n + 1 >= sizeof digits)
			return false;
		digits[n++] = *p;
	}
	digits[n] = '\0';
	if (!n || digits[0] < '0' || digits[0] > '9')
		return false;
	int base = 10;
	const char *d = digits;
	if (n > 2 && digits[0] == '0' && strchr("xXoObB", digits[1])) {
		base = strchr("xX", digits[1]) ? 16 : strchr("oO", digits[1]) ? 8 : 2;
		d += 2;
	} else if (n > 1 && digits[0] == '0') {
		return false; /* 017 is not Python 3 */
	}
	char *end;
	errno = 0;
	long long x = strtoll(d, &end, base);
	if (*end || errno || end == d)
		return false;
	*out = x;
	return true;
}

/* The integer a module-level constant holds when the module assigns it exactly once, from
 * a literal (SEED = 42): what np.random.seed(SEED) seeds with. */
static bool module_constant(ctx *c, const char *name, long long *out)
{
	kids ks;
	kids_of(c, c->in->root, &ks);
	int found = 0;
	for (uint32_t i = 0; i < ks.n && found < 2; i++) {
		if (!is(c, ks.v[i], K_EXPRESSION_STATEMENT) || ts_node_named_child_count(ks.v[i]) != 1)
			continue;
		TSNode as = ts_node_named_child(ks.v[i], 0);
		if (!is(c, as, K_ASSIGNMENT))
			continue;
		TSNode l = field(c, as, F_LEFT), r = field(c, as, F_RIGHT);
		if (!is(c, l, K_IDENTIFIER) || strcmp(text(c, l), name) != 0)
			continue;
		found++;
		if (ts_node_is_null(r) || !is(c, r, K_INTEGER) || !int_literal(text(c, r), out))
			return false;
	}
	return found == 1;
}

/* The seed calls the last pass saw, for the manifest: an integer literal, or a module-level
 * constant assigned one literal, as a number; anything else as its source text (args.seed). */
static int by_position(const void *x, const void *y)
{
	const event *a = *(const event *const *)x, *b = *(const event *const *)y;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return a->col < b->col ? -1 : a->col > b->col;
}

static int seeds_json(ctx *c, ck_raws *out)
{
	/* Function bodies are walked after the module: back to source order. */
	size_t n = 0;
	for (size_t i = 0; i < c->nev; i++)
		n += c->ev[i].kind == EV_SEED;
	if (!n)
		return 0;
	LB_AUTOFREE const event **seeds = malloc(n * sizeof *seeds);
	if (!seeds)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < c->nev; i++)
		if (c->ev[i].kind == EV_SEED)
			seeds[n++] = &c->ev[i];
	qsort(seeds, n, sizeof *seeds, by_position);
	for (size_t i = 0; i < n; i++) {
		const event *e = seeds[i];
		if (!out->seeds && !(out->seeds = json_object_new_array()))
			return -ENOMEM;
		json_object *o = json_object_new_object();
		if (!o)
			return -ENOMEM;
		json_object_object_add(o, "line", json_object_new_int((int)e->line));
		json_object_object_add(o, "col", json_object_new_int((int)e->col));
		json_object_object_add(o, "call", json_object_new_string(e->qual));
		json_object_object_add(o, "lib", json_object_new_string(e->lib));
		json_object *v = NULL;
		long long x;
		if (e->arg && (int_literal(e->arg, &x) || module_constant(c, e->arg, &x)))
			v = json_object_new_int64(x);
		else if (e->arg)
			v = json_object_new_string(e->arg); /* made valid UTF-8 and cut by the report */
		json_object_object_add(o, "value", v);
		json_object_array_add(out->seeds, o);
	}
	return 0;
}

int ck_analyze(const ck_analysis_in *in, ck_raws *out)
{
	ck_keep mine = {0};
	ctx c = {.in = in, .keep = in->keep ? in->keep : &mine, .src = in->src, .out = out};
	size_t base = out->n;
	c.gw = new_scope(&c, SC_MODULE, NULL, NULL);
	reset_pass(&c);
	run_pass(&c);
	if (!c.err && c.saw_global_write) {
		/* Functions assigned module names through `global`: run again so module-level
		 * code sees those values too (they are kept in c.gw). */
		for (size_t i = base; i < out->n; i++) {
			free(out->v[i].message);
			free(out->v[i].name);
		}
		out->n = base;
		reset_pass(&c);
		run_pass(&c);
	}
	if (!c.err)
		c.err = seeds_json(&c, out);
	free(c.ev);
	free(c.fns);
	arena_free(&c);
	ck_keep_free(&mine);
	return c.err;
}
