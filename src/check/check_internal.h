/* check: shared between the parser wrapper, the analysis, the rules and the report. */
#ifndef LABBOX_CHECK_INTERNAL_H
#define LABBOX_CHECK_INTERNAL_H

#include "labbox/check.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
	X(K_DICTIONARY_COMPREHENSION, "dictionary_comprehension")                                  \
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
	X(K_PATTERN_LIST, "pattern_list") X(K_PRINT_STATEMENT, "print_statement")                  \
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
	X(F_LEFT, "left") X(F_MODULE_NAME, "module_name") X(F_NAME, "name") X(F_OBJECT, "object")  \
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
	ck_list allow_modules, allow_calls, deny_modules, deny_calls, output_paths, ignore;
	ck_list local_modules; /* modules of the experiment directory itself (import allowlist) */
	double budget;
	long plan_conditions, plan_seeds, plan_iterations;
	unsigned plan_line; /* line of `plan:` in labbox.yaml, 0 when not from there */
	char *python;
	struct lb_python_info *python_info; /* set_python_info: the probe is done */
	char *cache_dir; /* set_cache_dir: compile() verdicts and the interpreter probe */
	char *entry;
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
} ck_raw;

typedef struct ck_raws {
	ck_raw *v;
	size_t n, cap;
	struct json_object *seeds; /* lb_check_report.seeds of this file, without "file" */
	struct json_object *imports; /* lb_check_report.imports of this file */
} ck_raws;

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

/* Analyse one parsed file into raw findings. */
typedef struct ck_analysis_in {
	const lb_check_config *cfg;
	const ck_syntax *syn;
	ck_keep *keep; /* NULL: nothing is kept */
	const char *src;
	size_t len;
	TSNode root;
	bool harness;
} ck_analysis_in;
int ck_analyze(const ck_analysis_in *in, ck_raws *out);

/* Apply configuration, suppressions and the policy to raw findings of one file and append the
 * result to the report. src is scanned for `# labbox: allow[...]` comments via the tree. */
int ck_settle(const lb_check_config *cfg, const char *path, const char *src, TSNode root,
	      ck_raws *raws, lb_check_report *rep);

/* Move every finding of from to the end of rep, as they are (from is left empty). */
int ck_report_take(lb_check_report *rep, lb_check_report *from);

/* Append one finding to a report (copies strings). */
int ck_report_add(lb_check_report *rep, const char *file, unsigned line, unsigned col,
		  ck_rule rule, lb_check_severity sev, const char *message, const char *name);

/* Budget rules against labbox.yaml's plan: raw findings attributed to labbox.yaml. */
int ck_budget(const lb_check_config *cfg, ck_raws *out);

#endif
