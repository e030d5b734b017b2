/* check: shared between the parser wrapper, the analysis, the rules and the report. */
#ifndef LABBOX_CHECK_INTERNAL_H
#define LABBOX_CHECK_INTERNAL_H

#include "labbox/check.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

const TSLanguage *tree_sitter_python(void);

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
} ck_raws;

int ck_raw_add(ck_raws *r, ck_rule rule, unsigned line, unsigned col, const char *name,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void ck_raws_free(ck_raws *r);

/* Analyse one parsed file into raw findings. */
typedef struct ck_analysis_in {
	const lb_check_config *cfg;
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

/* Append one finding to a report (copies strings). */
int ck_report_add(lb_check_report *rep, const char *file, unsigned line, unsigned col,
		  ck_rule rule, lb_check_severity sev, const char *message, const char *name);

/* Budget rules against labbox.yaml's plan: raw findings attributed to labbox.yaml. */
int ck_budget(const lb_check_config *cfg, ck_raws *out);

#endif
