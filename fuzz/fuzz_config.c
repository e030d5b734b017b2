/* libFuzzer target: labbox.yaml parsing never crashes, leaks or reads out of bounds. */
#include "labbox/config.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lb_exp_config c;
	char err[256];
	if (lb_config_parse((const char *)data, size, &c, err, sizeof err) == 0)
		lb_config_free(&c);
	return 0;
}
