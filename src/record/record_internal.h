/* record internals shared by its files. */
#ifndef LABBOX_RECORD_INTERNAL_H
#define LABBOX_RECORD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* True when the git repository at dir configures filters that would make git run commands
 * (or its configuration cannot be read); which names them. */
bool lb_record_git_runs_commands(const char *dir, char *which, size_t n);

#endif
