/* The backends' registry: which modes exist in this build. */
#include "labbox/backend.h"

#include <stdlib.h>
#include <string.h>

bool lb_backend_known(const char *mode)
{
	return mode && (strcmp(mode, "local") == 0 || strcmp(mode, "docker") == 0 ||
			strcmp(mode, "ssh") == 0 ||
			strcmp(mode, "slurm") == 0 ||
			strcmp(mode, "colab") == 0);
}

void lb_backend_free(lb_backend *b)
{
	if (b && b->ops->free)
		b->ops->free(b);
	free(b);
}
