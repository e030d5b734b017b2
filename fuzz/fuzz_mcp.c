/* libFuzzer target: an MCP message from a client (one line of JSON-RPC) is parsed and, when
 * it is a tools/call, made into a labbox command line (inline files validated, not written)
 * without crashing, leaking or reading out of bounds. */
#include "labbox/mcp.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lb_mcp_msg m;
	lb_mcp_parse((const char *)data, size, &m);
	if (m.kind == LB_MCP_MSG_REQUEST && m.params) {
		json_object *name, *args = NULL;
		if (json_object_object_get_ex(m.params, "name", &name) &&
		    json_object_is_type(name, json_type_string)) {
			json_object_object_get_ex(m.params, "arguments", &args);
			lb_mcp_limits lim = {.root = "/tmp", .max_budget = 60, .max_memory = 1 << 30};
			lb_mcp_call call;
			char err[512], limit[64];
			if (lb_mcp_call_build(json_object_get_string(name), args, &lim, false, &call, err,
					      sizeof err, limit, sizeof limit) == 0) {
				if (!call.argv || call.argv[call.argc] != NULL)
					abort();
				lb_mcp_call_free(&call);
			}
			json_object *cfg;
			if (args && json_object_object_get_ex(args, "config", &cfg))
				lb_mcp_config_within(cfg, &lim, err, sizeof err, limit, sizeof limit);
		}
	}
	lb_mcp_msg_free(&m);
	return 0;
}
