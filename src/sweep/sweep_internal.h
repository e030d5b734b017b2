/* What the sweep module's files share, and no one else sees. */
#ifndef LABBOX_SWEEP_INTERNAL_H
#define LABBOX_SWEEP_INTERNAL_H

#include "labbox/sweep.h"

/* The cells' loop itself (local.c), in the process that forks the cells: lb_sweep_run_local
 * runs it in a launcher process of its own (relay.c) and relays its events. */
int lb_sweep_run_cells(const lb_sweep_local *cfg, const size_t *todo, size_t ntodo,
		       lb_sweep_local_result *out, char *err, size_t errlen);

#endif
