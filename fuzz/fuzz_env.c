/* libFuzzer target: what the env module reads from an experiment directory and from the
 * import check's output never crashes, leaks or reads out of bounds: environment.yml, and
 * module names (--imports, and the names an interpreter answers for), and a script on PATH
 * read as a pyenv shim. */
#include "labbox/env.h"
#include "../src/env/env_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256], prefix[4096], err[256];
	if (lb_env_parse_environment_yml((const char *)data, size, name, prefix, err, sizeof err) == 0 &&
	    (strlen(name) >= sizeof name || strlen(prefix) >= sizeof prefix))
		abort();
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)lb_env_module_valid(s);
	char root[4096];
	if (env_pyenv_shim_root(s, root, sizeof root) == 0 && (root[0] != '/' || strlen(root) >= sizeof root))
		abort();
	free(s);
	return 0;
}
