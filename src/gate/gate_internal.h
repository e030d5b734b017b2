/* gate: shared between gate.c and pyc.c. */
#ifndef LB_GATE_INTERNAL_H
#define LB_GATE_INTERNAL_H
#include <stddef.h>
#include <sys/types.h>

/* A file of the run's gate directory, written in place without fsync: the directory is the
 * run's own and new, and its files live only as long as the run (lb_gate_cleanup), so a crash
 * loses nothing a record needs. */
int gate_write_file(const char *path, const void *data, size_t len, mode_t mode);

#endif
