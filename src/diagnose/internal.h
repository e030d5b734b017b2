/* What the diagnosis files share among themselves (not part of labbox's face). */
#ifndef LABBOX_DIAGNOSE_INTERNAL_H
#define LABBOX_DIAGNOSE_INTERNAL_H

#include "labbox/diagnose.h"

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* JSON pieces the diagnosis files share: a member added (v freed when it cannot be; -ENOMEM
 * for a NULL v), and a string of text made valid UTF-8 and cut at cap bytes (at most
 * DIAG_JSON_TEXT_MAX). */
#define DIAG_JSON_TEXT_MAX 1200
int lb_diag_json_add(struct json_object *o, const char *key, struct json_object *v);
struct json_object *lb_diag_json_text(const char *s, size_t cap);

/* A top-level module name of CPython's standard library (3.10 to 3.13), n bytes of name. */
bool lb_diag_is_stdlib(const char *name, size_t n);

/* The size of the one allocation an out-of-memory message says was refused, in bytes:
 * numpy's "Unable to allocate 7.28 TiB", torch's CPU allocator's "you tried to allocate N
 * bytes", R's "cannot allocate vector of size 3.2 Gb"; 0 when s names none. */
unsigned long long lb_diag_requested_bytes(const char *s);

/* Whether a path names a credential of a user's (~/.ssh, ~/.aws, ~/.netrc, a key file...):
 * what labbox hides from every run on purpose, so that advice never asks to copy or mount
 * it for the experiment, whose output named it. */
bool lb_diag_credential_path(const char *path);

/* warnings.c: whether a loss printed in text (len bytes of a log's lines) diverged by the
 * loss_divergence warning's rule; what gets the first such loss ("loss rose from 3.2 to 900,
 * 281x its first value"). */
bool lb_diag_loss_diverged(const char *text, size_t len, char *what, size_t whatlen);

/* caught.c: the exception_caught_at_end warning of a completed run whose output (log, len
 * bytes: run.log's end) ends in a whole traceback, appended to out; children: the code may
 * start processes, whose dying traceback would read the same. 0 or -ENOMEM. */
int lb_diag_caught_at_end(const lb_diagnosis_input *in, const char *log, size_t len,
			  bool children, struct json_object *out);

#endif
