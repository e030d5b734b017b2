/* check: shared between the parser wrapper, the analysis, the rules and the report. */
#ifndef LABBOX_CHECK_INTERNAL_H
#define LABBOX_CHECK_INTERNAL_H

#include "labbox/check.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <tree_sitter/api.h>

const TSLanguage *tree_sitter_python(void);

/* ---- syntax tree lookups ------------------------------------------------------------------ */

/* The node types the analysis tells apart. Comparing ts_node_type() strings cost a tenth of the
 * check; a node's kind is one table lookup by its symbol id instead. */
#define CK_NODE_KINDS(X)                                                                         \
	X(K_ALIASED_IMPORT, "aliased_import") X(K_ARGUMENT_LIST, "argument_list")                 \
	X(K_AS_PATTERN, "as_pattern") X(K_ASSERT_STATEMENT, "assert_statement")                   \
	X(K_ASSIGNMENT, "assignment") X(K_ATTRIBUTE, "attribute")                                  \
	X(K_AUGMENTED_ASSIGNMENT, "augmented_assignment") X(K_AWAIT, "await")                      \
	X(K_BINARY_OPERATOR, "binary_operator") X(K_BLOCK, "block")                                \
	X(K_BOOLEAN_OPERATOR, "boolean_operator") X(K_BREAK_STATEMENT, "break_statement")          \
	X(K_CALL, "call") X(K_CLASS_DEFINITION, "class_definition") X(K_COMMENT, "comment")        \
	X(K_CONCATENATED_STRING, "concatenated_string")                                            \
	X(K_CONDITIONAL_EXPRESSION, "conditional_expression")                                      \
	X(K_CONTINUE_STATEMENT, "continue_statement")                                              \
	X(K_DECORATED_DEFINITION, "decorated_definition") X(K_DECORATOR, "decorator")              \
	X(K_DELETE_STATEMENT, "delete_statement")                                                  \
	X(K_DICTIONARY, "dictionary") X(K_DICTIONARY_COMPREHENSION, "dictionary_comprehension")    \
	X(K_DICTIONARY_SPLAT, "dictionary_splat")                                                  \
	X(K_DICTIONARY_SPLAT_PATTERN, "dictionary_splat_pattern") X(K_DOTTED_NAME, "dotted_name") \
	X(K_ELIF_CLAUSE, "elif_clause") X(K_ELLIPSIS, "ellipsis") X(K_ELSE_CLAUSE, "else_clause")   \
	X(K_EXEC_STATEMENT, "exec_statement") X(K_EXPRESSION_LIST, "expression_list")              \
	X(K_EXPRESSION_STATEMENT, "expression_statement") X(K_FALSE, "false") X(K_FLOAT, "float")  \
	X(K_FOR_IN_CLAUSE, "for_in_clause") X(K_FOR_STATEMENT, "for_statement")                    \
	X(K_FORMAT_SPECIFIER, "format_specifier") X(K_FUNCTION_DEFINITION, "function_definition")  \
	X(K_FUTURE_IMPORT_STATEMENT, "future_import_statement")                                    \
	X(K_GENERATOR_EXPRESSION, "generator_expression")                                          \
	X(K_GLOBAL_STATEMENT, "global_statement") X(K_IDENTIFIER, "identifier")                    \
	X(K_IF_STATEMENT, "if_statement") X(K_IMPORT_FROM_STATEMENT, "import_from_statement")      \
	X(K_IMPORT_STATEMENT, "import_statement") X(K_INTEGER, "integer")                          \
	X(K_INTERPOLATION, "interpolation") X(K_KEYWORD_ARGUMENT, "keyword_argument")              \
	X(K_LAMBDA, "lambda") X(K_LIST, "list") X(K_LIST_COMPREHENSION, "list_comprehension")      \
	X(K_LIST_PATTERN, "list_pattern") X(K_LIST_SPLAT, "list_splat")                            \
	X(K_LIST_SPLAT_PATTERN, "list_splat_pattern") X(K_MATCH_STATEMENT, "match_statement")      \
	X(K_MODULE, "module") X(K_NAMED_EXPRESSION, "named_expression") X(K_NONE, "none")          \
	X(K_NONLOCAL_STATEMENT, "nonlocal_statement")                                              \
	X(K_PARENTHESIZED_EXPRESSION, "parenthesized_expression") X(K_PASS_STATEMENT, "pass_statement") \
	X(K_PAIR, "pair") X(K_PATTERN_LIST, "pattern_list") X(K_PRINT_STATEMENT, "print_statement")                  \
	X(K_RAISE_STATEMENT, "raise_statement") X(K_RELATIVE_IMPORT, "relative_import")            \
	X(K_RETURN_STATEMENT, "return_statement") X(K_SET_COMPREHENSION, "set_comprehension")      \
	X(K_SLICE, "slice") X(K_STRING, "string") X(K_STRING_CONTENT, "string_content")            \
	X(K_STRING_START, "string_start") X(K_SUBSCRIPT, "subscript") X(K_TRUE, "true")            \
	X(K_TRY_STATEMENT, "try_statement") X(K_TUPLE, "tuple") X(K_TUPLE_PATTERN, "tuple_pattern") \
	X(K_TYPE_ALIAS_STATEMENT, "type_alias_statement") X(K_TYPE_CONVERSION, "type_conversion")  \
	X(K_WHILE_STATEMENT, "while_statement") X(K_WILDCARD_IMPORT, "wildcard_import")            \
	X(K_WITH_CLAUSE, "with_clause") X(K_WITH_ITEM, "with_item") X(K_WITH_STATEMENT, "with_statement")

#define CK_FIELDS(X)                                                                             \
	X(F_ALIAS, "alias") X(F_ALTERNATIVE, "alternative") X(F_ARGUMENTS, "arguments")            \
	X(F_ATTRIBUTE, "attribute") X(F_BODY, "body") X(F_CONDITION, "condition")                  \
	X(F_CONSEQUENCE, "consequence") X(F_DEFINITION, "definition") X(F_EXPRESSION, "expression") \
	X(F_FORMAT_SPECIFIER, "format_specifier") X(F_FUNCTION, "function") X(F_GUARD, "guard")    \
	X(F_KEY, "key") X(F_LEFT, "left") X(F_MODULE_NAME, "module_name") X(F_NAME, "name") X(F_OBJECT, "object")  \
	X(F_OPERATOR, "operator") X(F_PARAMETERS, "parameters") X(F_RETURN_TYPE, "return_type")    \
	X(F_RIGHT, "right") X(F_SUBJECT, "subject") X(F_SUPERCLASSES, "superclasses")              \
	X(F_TYPE, "type") X(F_TYPE_CONVERSION, "type_conversion") X(F_VALUE, "value")

#define CK_ENUM_ITEM(k, s) k,
typedef enum ck_kind { K_OTHER, CK_NODE_KINDS(CK_ENUM_ITEM) K_COUNT } ck_kind;
typedef enum ck_field { CK_FIELDS(CK_ENUM_ITEM) F_COUNT } ck_field;
#undef CK_ENUM_ITEM

/* Kinds by symbol id and field ids by name, for one language; read-only once built, so one is
 * shared by every file a worker checks. Every symbol whose name is a kind's name maps to that
 * kind (named or not), exactly as comparing ts_node_type() with the name did. */
typedef struct ck_syntax {
	const TSLanguage *lang;
	uint8_t *kind; /* ck_kind by symbol id, nsym entries */
	uint32_t nsym;
	TSFieldId field[F_COUNT];
} ck_syntax;

int ck_syntax_init(ck_syntax *s);
void ck_syntax_free(ck_syntax *s);

static inline ck_kind ck_node_kind(const ck_syntax *s, TSNode n)
{
	if (ts_node_is_null(n))
		return K_OTHER;
	TSSymbol sym = ts_node_symbol(n);
	return sym < s->nsym ? (ck_kind)s->kind[sym] : K_OTHER;
}

/* ---- configuration ------------------------------------------------------------------------ */

typedef struct ck_item {
	char *s;
	bool project; /* came from the experiment's labbox.yaml (untrusted unless trust_project) */
} ck_item;

typedef struct ck_list {
	ck_item *v;
	size_t n;
} ck_list;

struct lb_check_config {
	lb_check_policy policy;
	bool trust_project;
	bool real_home; /* `~` is the user's own home: no sandbox sets HOME (lb_check_config_set_real_home) */
	/* The run's limits, for the sandboxes that run the interpreter on the code (it may be
	 * the experiment's own); lb_check_config_set_limits. */
	lb_sandbox_limits limits;
	bool have_limits;
	ck_list allow_modules, allow_calls, deny_modules, deny_calls, output_paths, ignore;
	ck_list local_modules; /* modules of the experiment directory itself (import allowlist) */
	double budget;
	long plan_conditions, plan_seeds, plan_iterations;
	unsigned plan_line; /* line of `plan:` in labbox.yaml, 0 when not from there */
	char *python;
	struct lb_python_info *python_info; /* set_python_info: the probe is done */
	char *cache_dir; /* set_cache_dir: compile() verdicts and the interpreter probe */
	char *cache_name; /* set_cache_name: what the result cache keeps this check's files under */
	char *entry;
	bool answer_probe; /* set_answer_probe: look at the files, decode nothing */
	/* lb_check_dir_imports: only the imports are wanted, which no library summary changes;
	 * none is read or (with no cache) built */
	bool imports_only;
	/* set_runtime_gate: the run's gate refuses what a library call reaches as it happens */
	bool gate_refuses;
};

/* An R or Octave experiment (lang is an lb_lang): its files read by the language's own
 * parser in the sandbox, the gate's rules in that language's terms (check/lang.c). */
int ck_check_lang_dir(const lb_check_config *cfg, int lang, const char *root,
		      lb_check_report *rep, char *err, size_t errlen);

int ck_list_add(ck_list *l, const char *s, bool project);
void ck_list_free(ck_list *l);
int ck_config_copy(const lb_check_config *src, lb_check_config **out);
/* The item of l that equals name or is a dotted prefix of it; NULL when none. */
const ck_item *ck_list_match(const ck_list *l, const char *name);
/* A dotted Python name: identifiers separated by single dots. */
bool ck_dotted_name(const char *s);

/* ---- rules -------------------------------------------------------------------------------- */

typedef enum ck_rule {
	R_SYNTAX,       /* LB001 */
	R_UNPARSED,     /* LB002 */
	R_SUPPRESS,     /* LB003 */
	R_PROCESS,      /* LB101 */
	R_SUBPROCESS,   /* LB102 */
	R_DYNCODE,      /* LB103 */
	R_DYNIMPORT,    /* LB104 */
	R_NETWORK,      /* LB105 */
	R_NATIVE,       /* LB106 */
	R_PTY,          /* LB107 */
	R_SHUTIL,       /* LB108 */
	R_SEED_BANNED,  /* LB109 */
	R_WRITE,        /* LB110 */
	R_UNRESOLVED,   /* LB111 */
	R_UNRESOLVED_WEAK, /* LB112 */
	R_WRITE_UNKNOWN,   /* LB113 */
	R_DESERIALIZE,     /* LB114 */
	R_DYNCODE_FILE,    /* LB115 */
	R_DENIED,       /* LB120 */
	R_IMPORT,       /* LB201 */
	R_SEED_ORDER,   /* LB301 */
	R_SEED_MISSING, /* LB302 */
	R_UNSEEDED_GEN, /* LB303 */
	R_TIME_ESTIMATE, /* LB401 */
	R_TIME_GUARD,   /* LB402 */
	R_RESULTS_JSON, /* LB403 */
	R_METRIC_LINES, /* LB404 */
	R_BUDGET_CONDITIONS, /* LB501 */
	R_BUDGET_SEEDS, /* LB502 */
	R_BUDGET_ITERATIONS, /* LB503 */
	R_COUNT
} ck_rule;

#define CK_OFF (-1)
typedef struct ck_rule_def {
	lb_check_rule_info info; /* id, category, title */
	int standard; /* lb_check_severity or CK_OFF */
	int strict;
	bool hard_gate; /* only the operator (not the project) may lift it */
	const char *hint; /* how to fix, for llm_text */
} ck_rule_def;

extern const ck_rule_def ck_rules[R_COUNT];

/* The security rule a resolved dotted name falls under (R_COUNT for none). With module_only,
 * only rules that ban a whole module match (used at import statements). */
ck_rule ck_classify(const char *qual, bool module_only, lb_check_policy policy);
/* True for modules whose members reach process, code, import or file capabilities, so that
 * passing them around or indexing them with computed names cannot be followed. */
bool ck_sensitive_module(const char *qual);
/* The standard library's code sink a research library's q hands its code arguments to
 * (torch.utils.benchmark.Timer -> timeit.Timer), NULL for none; *what says which arguments.
 * The check judges q as that sink, through the same summaries, so it refuses what the runtime
 * gate refuses when the sink compiles them. */
const char *ck_wrapped_sink(const char *q, const char **what);
/* Canonical spelling of a dotted name: posix/nt -> os, __builtin__ -> builtins, ... into out. */
void ck_canonical(const char *qual, char *out, size_t outlen);
/* Module names on the import allowlist of a policy. */
bool ck_import_allowed(const char *top, lb_check_policy policy);

/* Determinism tables: the library a seed call seeds ("*" for all), or a random op uses. */
const char *ck_seed_lib(const char *qual);
const char *ck_random_lib(const char *qual);
/* Constructors that make an unseeded generator when called without arguments. */
bool ck_generator_ctor(const char *qual);

/* ---- findings of one file before policy and suppressions ----------------------------------- */

typedef struct ck_raw {
	ck_rule rule;
	unsigned line, col;
	char *message;
	char *name;
	/* what the runtime gate, and a kernel layer behind it, hold where it happens, so
	 * ck_settle weighs it against the run's gate: a process a standard library call may
	 * start (found only through the library's summaries), which the exec guard stops too */
	bool gate_judges;
} ck_raw;

typedef struct ck_raws {
	ck_raw *v;
	size_t n, cap;
	struct json_object *seeds; /* lb_check_report.seeds of this file, without "file" */
	struct json_object *needs; /* [{kind, line, text, via, path, flag, optional}] (needs.c) */
	struct json_object *imports; /* lb_check_report.imports of this file */
} ck_raws;

/* ---- needs (needs.c) ---------------------------------------------------------------------- */

typedef struct ck_need {
	const char *kind; /* network, gpu, write_outside */
	unsigned line;
	const char *text; /* the source line, not NUL-terminated */
	size_t text_len;
	const char *via;  /* the resolved call (datasets.load_dataset), or what showed it */
	const char *path; /* write_outside: the directory to mount; NULL otherwise */
	bool optional;	  /* the code checks for it and may do without (torch.cuda.is_available) */
} ck_need;

/* The kind of need a call of the resolved dotted name q shows (NULL for none); optional
 * when it only asks whether the resource is there. */
const char *ck_need_of_call(const char *q, bool *optional);
/* The flag that grants a kind: --network host, --gpus all, -v SRC:DST:rw. */
const char *ck_need_flag(const char *kind);
/* Whether the GPU use at node `at` (a call) runs only when the code found a GPU or was told
 * to use one: under an if, a conditional expression or an `and`/`or` whose test asks for
 * availability or compares a device, or with `enabled=`/`device...=` computed from such a
 * test. src is the file's source, len its length. */
bool ck_need_gpu_guarded(const char *src, size_t len, TSNode at);
/* Appends to out->needs, one per kind and line. 0 or -ENOMEM. */
int ck_need_add(ck_raws *out, const ck_need *nd);

int ck_raw_add(ck_raws *r, ck_rule rule, unsigned line, unsigned col, const char *name,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void ck_raws_free(ck_raws *r);

/* What the analysis keeps from one file to the next on a worker: its first arena block and
 * its tree cursor (a 64 KiB malloc and free per file also made glibc consolidate its free
 * lists every time). */
typedef struct ck_keep {
	void *block;
	TSTreeCursor cur;
	bool have_cur;
} ck_keep;
void ck_keep_free(ck_keep *k);

/* What the analysis of one file learnt about the other files of the experiment: whether a
 * module it imports is one of the experiment's own (the import allowlist). Kept with the
 * file's cached result and checked again before that result is used (check/cache.c). */
typedef struct ck_dep {
	char *name;
	bool local;
} ck_dep;
typedef struct ck_deps {
	ck_dep *v;
	size_t n, cap;
	bool overflow; /* too many, or out of memory: the result is not cached */
} ck_deps;
void ck_deps_free(ck_deps *d);

/* Analyse one parsed file into raw findings. */
typedef struct ck_analysis_in {
	const lb_check_config *cfg;
	const ck_syntax *syn;
	ck_keep *keep; /* NULL: nothing is kept */
	const char *src;
	size_t len;
	TSNode root;
	bool harness;
	const struct ck_stdlib *std; /* summaries of the target's standard library, or NULL */
	ck_deps *deps; /* NULL: not recorded */
} ck_analysis_in;
int ck_analyze(const ck_analysis_in *in, ck_raws *out);
/* Whether top is one of the experiment's own modules; the answer is recorded in in->deps. */
bool ck_local_module(const ck_analysis_in *in, const char *top);

/* Apply configuration, suppressions and the policy to raw findings of one file and append the
 * result to the report. src is scanned for `# labbox: allow[...]` comments via the tree. */
int ck_settle(const lb_check_config *cfg, const char *path, const char *src, TSNode root,
	      ck_raws *raws, lb_check_report *rep);

/* Move every finding of from to the end of rep, as they are (from is left empty). */
int ck_report_take(lb_check_report *rep, lb_check_report *from);

/* The seed calls of one file (an array of objects, released) appended to rep->seeds, each
 * with "file" set to file. */
int ck_report_take_seeds(lb_check_report *rep, struct json_object *seeds, const char *file);

/* Append one finding to a report (copies strings). */
int ck_report_add(lb_check_report *rep, const char *file, unsigned line, unsigned col,
		  ck_rule rule, lb_check_severity sev, const char *message, const char *name);

/* ---- capability summaries of the standard library (stdlib_scan.c, stdlib.c) --------------- */

/* What a standard library function reaches, directly or through the functions it calls. */
enum {
	CK_CAP_PROCESS = 1u << 0,
	CK_CAP_SOCKET = 1u << 1,
	CK_CAP_EXEC = 1u << 2,   /* runs code its caller handed in (bdb.run, code.interact) */
	CK_CAP_IMPORT = 1u << 3, /* imports a module its caller named (pkgutil.resolve_name) */
	CK_CAP_NATIVE = 1u << 4,
	CK_CAP_WRITE = 1u << 5,
	CK_CAP_FINDING = CK_CAP_PROCESS | CK_CAP_SOCKET | CK_CAP_EXEC | CK_CAP_IMPORT | CK_CAP_NATIVE,
};

/* One module's records (see stdlib_scan.c) appended to out. */
int ck_stdlib_scan(const ck_syntax *syn, TSNode root, const char *src, size_t len,
		   const char *mod, bool is_pkg, lb_buf *out);

typedef struct ck_stdlib ck_stdlib;
/* Summaries of the library under dir, built from its sources (threads: at most that many). */
int ck_stdlib_build(const char *dir, unsigned threads, ck_stdlib **out, char *err, size_t errlen);
/* The same, kept in cache_dir/stdlib under key (interpreter, version, dir and its mtime):
 * *hit tells whether it was found there, in which case only its header has been read yet
 * (the rest on the first lookup, from the same open file). cache_dir NULL: built, not kept. */
int ck_stdlib_load(const char *dir, const char *key, const char *cache_dir, ck_stdlib **out,
		   bool *hit, char *err, size_t errlen);
void ck_stdlib_free(ck_stdlib *s);
/* Which library a summary is of (interpreter, version, directory and its time), as a hash;
 * "" for none: part of the check cache's key. */
const char *ck_stdlib_id(const ck_stdlib *s);
/* A summary's text as the cache keeps it (takes text, also on failure): -EINVAL when it is
 * not one (its header, or records that are not the ones the header's digest names). */
int ck_stdlib_parse(char *text, ck_stdlib **out);
/* A summary's first line, "labbox.stdlib/5\tMODULES\tSHA256\n", from the len bytes at data
 * (more may follow): 0 with its fields and its length, or -EINVAL. */
int ck_stdlib_header(const char *data, size_t len, size_t *modules, uint8_t digest[32],
		     size_t *head_len);
/* A summary that was read back lazily and found, when a lookup needed it, not to be the one
 * its header named (changed or damaged in the cache meanwhile): the check's results then
 * depend on a summary its key does not name and must not be kept. */
bool ck_stdlib_drifted(const ck_stdlib *s);
/* The library's own name for q (tempfile._os.system -> os.system) into out; false when the
 * library does not rename it. */
bool ck_stdlib_rename(const ck_stdlib *s, const char *q, char *out, size_t outlen);
/* Capabilities of the function or class q (0 when none or unknown); *via: a sink reached. */
/* The via of a list of module names the standard library imports from (dbm._names) that q is
 * (or, within, is taken from); NULL when q is none. */
const char *ck_stdlib_table(const ck_stdlib *s, const char *q, bool within);
/* Whether module mod has such a list (a computed name set on it may be one). */
bool ck_stdlib_has_table(const ck_stdlib *s, const char *mod);
unsigned ck_stdlib_caps(const ck_stdlib *s, const char *q, const char **via);
/* Capabilities every class of the library that defines the public method `meth` gives it,
 * whatever object it is called on (loop.subprocess_shell); 0 when any lacks them. */
unsigned ck_stdlib_method_caps(const ck_stdlib *s, const char *meth, const char **via);
/* Counts for the report: modules parsed, functions and classes with a capability. */
void ck_stdlib_counts(const ck_stdlib *s, size_t *modules, size_t *capable);
struct lb_python_info;
/* The summaries of info's interpreter (NULL: /usr/bin/python3, whose library is read in
 * /usr/lib/pythonX.Y without running it); note says which, or why there are none. */
int ck_stdlib_open(const struct lb_python_info *info, const char *cache_dir, ck_stdlib **out,
		   char *note, size_t notelen);

/* Budget rules against labbox.yaml's plan: raw findings attributed to labbox.yaml. */
int ck_budget(const lb_check_config *cfg, ck_raws *out);

/* ---- results kept between checks (check/cache.c) ------------------------------------------ */

/* The key of a file's entry is the sha256 of named parts (ck_cache_key_part): labbox's
 * version and build ID, the rule table, the grammar, the policy and every configuration list
 * the analysis or the settling reads (the base, once per check), then the file's content,
 * whether the harness rules apply and the interpreter's compile() verdict. An input added to
 * the analysis later is one more part here (or, when it is about other files, one more kind
 * of ck_deps fact). docs/check.md has the list. */
typedef struct ck_slot {
	const char *key; /* 64 hex digits inside data */
	const char *data;
	size_t len;
} ck_slot;
/* What a file was when its content was hashed (taken before the read), git-index style:
 * when all of it is unchanged, the recorded content digest stands for the bytes. */
typedef struct ck_filestat {
	bool ok; /* recorded: a regular file read whole, its digest known */
	uint64_t dev, ino, size, mode;
	int64_t mtime_ns, ctime_ns;
	uint8_t content[32];
} ck_filestat;
typedef struct ck_filerec {
	const char *path; /* NUL-terminated inside the pack's bytes */
	ck_filestat st;
} ck_filerec;
typedef struct ck_cache {
	int dfd; /* cache_dir/check; -1: no cache */
	int64_t now_ns; /* this check's start (the coarse clock), written as the pack's stamp */
	int64_t trust_before_ns; /* the pack's stamp less the granularity margin (ck_filestat_trusted) */
	ck_filerec *recs; /* the pack's file table, by path */
	size_t nrecs;
	uint8_t base[32];
	char name[65]; /* this check's pack */
	char *pack;    /* its bytes as read */
	size_t pack_len;
	ck_slot *slots; /* its entries by key */
	size_t nslots;
	bool damaged; /* the pack did not read whole: written again even without a miss */
} ck_cache;
void ck_cache_key_part(lb_sha256 *c, const char *name, const void *data, size_t len);
/* Opens cfg->cache_dir/check when it is the user's own and not inside root (the experiment
 * being checked; NULL for files given one by one, abs[0..n) then name the pack), and reads
 * this check's pack; cc->dfd stays -1 when there is no cache. Always 0. */
int ck_cache_open(const lb_check_config *cfg, const char *root, char *const abs[], size_t n,
		  const char *stdlib_id, ck_cache *cc);
void ck_cache_close(ck_cache *cc);
/* syntax: the interpreter's compile() verdict in words ("" for none). */
void ck_cache_key(const ck_cache *cc, const char *src, size_t len, bool harness,
		  const char *syntax, char hex[65]);
/* The same from the content's sha256 (ck_content_digest), without the bytes. */
void ck_cache_key_digest(const ck_cache *cc, const uint8_t content[32], bool harness,
			 const char *syntax, char hex[65]);
void ck_content_digest(const char *src, size_t len, uint8_t out[32]);
/* st (of path, taken now) as a record; false for what is not recordable. */
bool ck_filestat_from(const struct stat *st, ck_filestat *out);
/* The pack's digest of path's content when its record matches st in every field and the
 * record is not racy: mtime and ctime strictly older than the pack's stamp by more than any
 * file system's timestamp granularity, so a change made after the hash changed a field. */
bool ck_filestat_trusted(const ck_cache *cc, const char *path, const ck_filestat *st,
			 uint8_t content[32]);
/* One file's settled findings (in one) and its facts about others, as an entry's bytes. */
int ck_cache_encode(const char *key, const lb_check_report *one, const ck_deps *deps, lb_buf *out);
/* The same, refusing (-E2BIG, out emptied) what is not to be kept: too many facts, too large. */
int ck_cache_entry(const char *key, const lb_check_report *one, const ck_deps *deps, lb_buf *out);
/* An entry's bytes back into findings of file (appended to out) and deps; -EBADMSG for
 * anything that is not an intact entry of this key. */
int ck_cache_decode(const char *data, size_t len, const char *key, const char *file,
		    lb_check_report *out, ck_deps *deps);
/* cc->pack's entries into cc->slots; -EBADMSG when it ends in a damaged part (the entries
 * before it are kept). */
int ck_cache_index(ck_cache *cc);
/* Whether every fact in d is still true of this check's experiment. */
bool ck_deps_hold(const lb_check_config *cfg, const ck_deps *d);
/* The pack's entry of key, if intact and its facts hold, appended to out as findings of
 * file, and its bytes (inside the pack) in entry: 0, else -ENOENT (or -ENOMEM). */
int ck_cache_load(const ck_cache *cc, const lb_check_config *cfg, const char *key,
		  const char *file, lb_check_report *out, const char **entry, size_t *entry_len);
/* The pack written anew with these entries (NULL ones left out) when changed (a file was
 * analysed) or the pack read was damaged; failures only cost the next check its misses. */
void ck_cache_write(ck_cache *cc, const char *const entries[], const size_t lens[], size_t n,
		    bool changed, char *const abs[], const ck_filestat fst[]);
/* The pack's file table (its first block) into cc->recs; -EBADMSG for a damaged one (no
 * record is then trusted). The block's bytes are rewritten in place (paths terminated). */
int ck_cache_files_index(ck_cache *cc, char *block, size_t len);
/* The bytes of the pack's slot of key (not checked: the decoder does that): 0, else -ENOENT. */
int ck_cache_find(const ck_cache *cc, const char *key, const char **data, size_t *len);
/* ck_cache_prune with the bounds of packs (also those of check/answer.c's answers). */
void ck_cache_prune_all(int dfd);
/* The walk's listing kept for answer probes (check.c): each record of the file, in order. */
typedef struct ck_walk_rec {
	char kind; /* 'd' a directory read, 'v' one skipped for a virtual environment, 'f' a file */
	uint64_t dev, ino, size, mode; /* 'd' and 'v': as the walk found the directory */
	int64_t mtime_ns, ctime_ns;
	int64_t trust_before_ns; /* the listing's stamp less the granularity margin */
	const char *rel; /* relative to the root, not NUL-terminated; "" for the root */
	size_t rel_len;
} ck_walk_rec;
typedef int (*ck_walk_visit)(const ck_walk_rec *rec, void *arg);
/* A listing's bytes, checked whole (magic, checksum, and when root is not NULL its root),
 * then each record to visit (NULL: none) until it returns negative; -EBADMSG for anything
 * that is not an intact listing. */
int ck_walk_parse(const char *data, size_t len, const char *root, ck_walk_visit visit, void *arg);
/* A listing of root stamped stamp whose records are the len bytes at recs, into out. */
int ck_walk_format(int64_t stamp, const char *root, const char *recs, size_t len, lb_buf *out);
/* Least recently used files removed until under 3/4 of both bounds, when past either. */
void ck_cache_prune(int dfd, size_t max_files, uint64_t max_bytes);

/* ---- the whole answer of a check (check/answer.c) ------------------------------------------ */

/* Folds one call's files into rep->answer when all n were answered by their metadata: fst[i]
 * is file i as stat-ed (every field as the pack's table has it), and the pack itself, whose
 * table and entries answered them, is named by its own metadata (it is only ever replaced
 * by a rename, and any write changes its ctime). fst NULL, a file not recorded, no cache or
 * no pack: the report has no answer. */
void ck_answer_fold_files(lb_check_report *rep, const lb_check_config *cfg, const ck_cache *cc,
			  char *const shown[], char *const abs[], size_t n, const char *entry_abs,
			  const ck_filestat fst[]);
/* Folds what of a directory's configuration the entries' keys do not hold (budget, plan,
 * entry point): the findings made from labbox.yaml itself. */
void ck_answer_fold_config(lb_check_report *rep, const lb_check_config *cfg);
/* A call that the answer cannot describe (R or Octave, one buffer): no answer. */
void ck_answer_fail(lb_check_report *rep);
/* An answer file's bytes: 0 and out filled (pointing into data) when intact and made for
 * answer; -EBADMSG otherwise. */
int ck_answer_parse(const char *data, size_t len, const unsigned char answer[32],
		    lb_check_answer *out);
/* Its parts, for a file read in pieces: the head (digest, rc, stdout length) from the first
 * avail bytes of a file of len, and the stderr length line from avail bytes that start rest
 * bytes before its end. The checksum is not theirs to check. */
int ck_answer_layout(const char *data, size_t avail, size_t len, const unsigned char answer[32],
		     int *rc, size_t *out_off, size_t *out_len);
int ck_answer_err_len(const char *data, size_t avail, size_t rest, size_t *err_len);
/* The bytes of an answer file for answer, rc, out and err. */
int ck_answer_format(const unsigned char answer[32], int rc, const char *out, size_t out_len,
		     const char *err, size_t err_len, lb_buf *buf);

#endif
