/* libFuzzer target: the sweep's outside input (labbox.yaml's sweep: block, --param and
 * --seeds text, argument templates) never crashes, leaks or reads out of bounds, and every
 * plan it yields expands and serialises to strict JSON. The input is split at the first two
 * NUL bytes: YAML, then a --param argument, then a --seeds argument. */
#include "fuzz_common.h"
#include "labbox/sweep.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 3);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = buf[size + 2] = '\0';
	const char *yaml = buf;
	size_t ylen = strlen(yaml);
	const char *param = yaml + ylen + 1 <= buf + size ? yaml + ylen + 1 : buf + size + 1;
	const char *seeds = param + strlen(param) + 1;
	if (seeds > buf + size + 2)
		seeds = buf + size + 2;
	lb_sweep_spec s = {0};
	char err[512];
	lb_sweep_spec_load_yaml(&s, yaml, ylen, err, sizeof err);
	if (*param)
		lb_sweep_spec_param_arg(&s, param, err, sizeof err);
	if (*seeds) {
		long *v = NULL;
		size_t n = 0;
		if (lb_sweep_parse_seeds(seeds, &v, &n, err, sizeof err) == 0) {
			free(s.seeds);
			s.seeds = v;
			s.nseeds = n;
		}
	}
	char **tok = NULL;
	size_t ntok = 0;
	if (lb_sweep_split_template(param, &tok, &ntok) == 0) {
		for (size_t i = 0; i < ntok; i++)
			free(tok[i]);
		free(tok);
	}
	lb_sweep_plan p;
	if (lb_sweep_plan_make(&s, &p, err, sizeof err) == 0) {
		struct json_object *pj = lb_sweep_plan_json(&p);
		fuzz_assert_strict_json(pj);
		json_object_put(pj);
		if (p.ncells) {
			struct json_object *tag = lb_sweep_cell_tag(&p, p.ncells - 1, "fuzz");
			fuzz_assert_strict_json(tag);
			json_object_put(tag);
		}
		lb_sweep_plan_free(&p);
	}
	lb_sweep_spec_free(&s);
	free(buf);
	return 0;
}
