/* lang: the languages an experiment may be written in, and their interpreters.
 *
 * Python is the pipeline's first language (src/diagnose probes Python interpreters); R
 * (Rscript) and GNU Octave (octave-cli) are run, checked and recorded through the same
 * pipeline: the language only decides the interpreter, its command line, what the static
 * check reads and how the environment is listed. */
#ifndef LABBOX_LANG_H
#define LABBOX_LANG_H

#include "labbox/env.h"
#include "labbox/sandbox.h"
#include "labbox/util.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum lb_lang {
	LB_LANG_PYTHON = 0,
	LB_LANG_R,
	LB_LANG_OCTAVE,
	LB_LANG_JULIA,
} lb_lang;

/* "python", "r", "octave", "julia". */
const char *lb_lang_name(lb_lang lang);
/* The language of a name as labbox.yaml's language: gives it (case-insensitive; "R",
 * "matlab" is Octave's); -EINVAL for another. */
int lb_lang_parse(const char *name, lb_lang *out);
/* The language of an entry point by its extension (.py, .R/.r, .m, .jl); Python otherwise. */
lb_lang lb_lang_of_entry(const char *entry);
/* The entry point of an experiment directory that names none: the first of main.py, main.R,
 * main.r, main.m, main.jl, then experiment.py (AI-Scientist's templates), that is there (a
 * link counts as there: staging and the run judge it). "main.py" when none is, so that the
 * error names the usual one. */
const char *lb_lang_default_entry(const char *dir);
/* The interpreter looked up on PATH when none is named: Rscript, octave-cli, julia. */
const char *lb_lang_default_interpreter(lb_lang lang);
/* The Debian package that provides it, for the error when it is missing. */
const char *lb_lang_package(lb_lang lang);

/* Finds the interpreter (a path, or a name looked up on PATH) and asks it, inside the
 * sandbox, what it is: executable, version ("4.2.2"), implementation ("R", "Octave") and
 * the directories it needs visible (prefix: R.home(); base_prefix: its first library).
 * -ENOENT with err naming the package when it is missing. lim: the run's limits, for an
 * interpreter that may be the experiment's own (NULL: none). */
int lb_lang_probe(lb_lang lang, const char *interpreter, const lb_sandbox_limits *lim,
		  lb_python_info *out, char *err, size_t errlen);

/* The payload's command line: the interpreter with the options labbox runs it with, the
 * entry point, the arguments. malloc'd array of borrowed strings, NULL-terminated; *store
 * gets a string of its own the caller frees after the array (or NULL). */
char **lb_lang_argv(lb_lang lang, const lb_python_info *interp, const char *entry,
		    char *const *args, size_t nargs, char **store);

/* The environment listing (environment.txt's packages), made inside the sandbox: R's
 * installed packages as NAME==VERSION lines, Octave's `pkg list`. */
int lb_lang_freeze(lb_lang lang, const lb_python_info *interp, const lb_sandbox_limits *lim,
		   lb_buf *out, char *err, size_t errlen);

#endif
