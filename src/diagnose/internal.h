/* What the diagnosis files share among themselves (not part of labbox's face). */
#ifndef LABBOX_DIAGNOSE_INTERNAL_H
#define LABBOX_DIAGNOSE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* A top-level module name of CPython's standard library (3.10 to 3.13), n bytes of name. */
bool lb_diag_is_stdlib(const char *name, size_t n);

#endif
