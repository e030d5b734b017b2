/* The one way every command says that a run's record is not labbox's word. */
#include "cli.h"
#include "labbox/record.h"

#include <stdio.h>

bool cli_run_sealed(const char *dir, const char *id, char *why, size_t whylen)
{
	if (lb_record_run_sealed(dir, id))
		return true;
	if (why && whylen)
		snprintf(why, whylen,
			 "run '%s' (%s) was not recorded by this user's labbox as it stands (its "
			 "manifest.json does not match the seal in its result.json: made elsewhere, "
			 "such as a .labbox/ that came with the experiment, changed since, or older "
			 "than seals); its status and metrics are only what those files say",
			 id ? id : "?", dir);
	return false;
}
