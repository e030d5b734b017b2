/* mcp: message parsing and the making of tool calls into command lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/mcp.h"

#include <json-c/json.h>
#include <string.h>

static void parse(const char *text, lb_mcp_msg *m)
{
	lb_mcp_parse(text, strlen(text), m);
}

static void test_parse_kinds(void **state)
{
	(void)state;
	lb_mcp_msg m;
	parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{}}", &m);
	assert_int_equal(m.kind, LB_MCP_MSG_REQUEST);
	assert_string_equal(m.method, "tools/list");
	assert_int_equal(json_object_get_int(m.id), 7);
	lb_mcp_msg_free(&m);
	parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r", &m);
	assert_int_equal(m.kind, LB_MCP_MSG_NOTIFICATION);
	lb_mcp_msg_free(&m);
	parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &m);
	assert_int_equal(m.kind, LB_MCP_MSG_RESPONSE);
	lb_mcp_msg_free(&m);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int code;
		bool has_id;
	} cases[] = {
		{"{", LB_MCP_PARSE_ERROR, false},
		{"{} {}", LB_MCP_PARSE_ERROR, false},
		{"[{}]", LB_MCP_INVALID_REQUEST, false},
		{"3", LB_MCP_INVALID_REQUEST, false},
		{"{\"id\":1,\"method\":\"ping\"}", LB_MCP_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", LB_MCP_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", LB_MCP_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\"}", LB_MCP_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":3}", LB_MCP_INVALID_PARAMS, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"s\":\"\xc3\x28\"}", LB_MCP_PARSE_ERROR, false},
		/* json-c takes NaN even when strict; the method is still not a string. */
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":NaN}", LB_MCP_INVALID_REQUEST, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		lb_mcp_msg m;
		parse(cases[i].text, &m);
		assert_int_equal(m.kind, LB_MCP_MSG_INVALID);
		assert_int_equal(m.code, cases[i].code);
		assert_true((m.id != NULL) == cases[i].has_id);
		lb_mcp_msg_free(&m);
	}
	/* Nesting is bounded. */
	char deep[200];
	memset(deep, '[', sizeof deep - 1);
	deep[sizeof deep - 1] = '\0';
	lb_mcp_msg m;
	parse(deep, &m);
	assert_int_equal(m.code, LB_MCP_PARSE_ERROR);
	lb_mcp_msg_free(&m);
}

static int build(const char *tool, const char *args, const lb_mcp_limits *lim, lb_mcp_call *call,
		 char *err, char *limit)
{
	json_object *a = args ? json_tokener_parse(args) : NULL;
	int r = lb_mcp_call_build(tool, a, lim, false, call, err, 512, limit, 64);
	json_object_put(a);
	return r;
}

static bool has_arg(const lb_mcp_call *c, const char *s)
{
	for (size_t i = 0; i < c->argc; i++)
		if (strcmp(c->argv[i], s) == 0)
			return true;
	return false;
}

static void test_run_argv_and_caps(void **state)
{
	(void)state;
	lb_mcp_limits lim = {.root = "/", .max_budget = 60, .max_memory = 1 << 30, .self = "/lb"};
	lb_mcp_call c;
	char err[512], limit[64];
	assert_int_equal(build("run", "{\"expdir\":\"/tmp\",\"args\":[\"--lr\",\"1\"],"
				      "\"env\":{\"A\":\"b c\"},\"metrics\":[\"acc\"]}",
			       &lim, &c, err, limit),
			 0);
	assert_string_equal(c.argv[0], "/lb");
	assert_string_equal(c.argv[1], "run");
	assert_true(has_arg(&c, "--budget=60"));
	assert_true(has_arg(&c, "--memory=1073741824"));
	assert_true(has_arg(&c, "--env=A=b c"));
	assert_true(has_arg(&c, "--metrics=acc"));
	assert_string_equal(c.argv[c.argc - 3], "--");
	assert_string_equal(c.argv[c.argc - 1], "1");
	assert_null(c.argv[c.argc]);
	assert_true(c.progress);
	lb_mcp_call_free(&c);

	assert_int_equal(build("run", "{\"expdir\":\"/tmp\",\"budget\":61}", &lim, &c, err, limit), 1);
	assert_string_equal(limit, "max-budget");
	assert_int_equal(build("run", "{\"expdir\":\"/tmp\",\"memory\":\"2g\"}", &lim, &c, err, limit), 1);
	assert_string_equal(limit, "max-memory");
	assert_int_equal(build("run", "{\"expdir\":\"/tmp\",\"network\":\"host\"}", &lim, &c, err, limit), 1);
	assert_string_equal(limit, "allow-network");
	assert_int_equal(build("run", "{\"expdir\":\"/tmp\",\"gpus\":\"0\"}", &lim, &c, err, limit), 1);
	assert_string_equal(limit, "allow-gpus");
	lim.degraded[0] = "memory";
	lim.ndegraded = 1;
	assert_int_equal(build("run", "{\"expdir\":\"/tmp\"}", &lim, &c, err, limit), 0);
	assert_true(has_arg(&c, "--allow-degraded=memory"));
	lb_mcp_call_free(&c);
	lim.allow_network = true;
	assert_int_equal(build("run", "{\"expdir\":\"/tmp\",\"network\":\"host\"}", &lim, &c, err, limit), 0);
	assert_true(has_arg(&c, "--network=host"));
	lb_mcp_call_free(&c);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	lb_mcp_limits lim = {.root = "/usr"};
	lb_mcp_call c;
	char err[512], limit[64];
	assert_int_equal(build("nope", "{}", &lim, &c, err, limit), LB_MCP_INVALID_PARAMS);
	assert_int_equal(build("run", "{\"expdir\":3}", &lim, &c, err, limit), LB_MCP_INVALID_PARAMS);
	assert_int_equal(build("run", "{\"expdir\":\"/usr\",\"x\":1}", &lim, &c, err, limit),
			 LB_MCP_INVALID_PARAMS);
	assert_int_equal(build("run", "{}", &lim, &c, err, limit), LB_MCP_INVALID_PARAMS);
	assert_int_equal(build("rerun", NULL, &lim, &c, err, limit), LB_MCP_INVALID_PARAMS);
	assert_int_equal(build("runs_show", "{\"run_id\":\"-x\"}", &lim, &c, err, limit),
			 LB_MCP_INVALID_PARAMS);
	assert_int_equal(build("runs_list", "{\"limit\":0}", &lim, &c, err, limit), LB_MCP_INVALID_PARAMS);
	/* Outside the root, and inline names that leave the experiment. */
	assert_int_equal(build("check", "{\"expdir\":\"/tmp\"}", &lim, &c, err, limit), 1);
	assert_string_equal(limit, "root");
	assert_int_equal(build("check", "{\"expdir\":\"../tmp\"}", &lim, &c, err, limit), 1);
	assert_string_equal(limit, "root");
	static const char *const names[] = {"{\"files\":{\"../a.py\":\"\"}}", "{\"files\":{\"/a.py\":\"\"}}",
					    "{\"files\":{\"a/./b.py\":\"\"}}", "{\"files\":{\"a/\":\"\"}}",
					    "{\"files\":{\"a//b\":\"\"}}"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		assert_int_equal(build("run", names[i], &lim, &c, err, limit), 1);
		assert_string_equal(limit, "files");
	}
	assert_int_equal(build("run", "{\"files\":{\"a/b.py\":\"x\"}}", &lim, &c, err, limit), 0);
	lb_mcp_call_free(&c);
}

static void test_config_within(void **state)
{
	(void)state;
	lb_mcp_limits lim = {.root = "/", .max_budget = 10};
	char err[512], limit[64];
	json_object *cfg = json_tokener_parse(
		"{\"budget_s\":5,\"sandbox\":{\"network\":\"none\",\"gpus\":null,\"memory_bytes\":null}}");
	assert_int_equal(lb_mcp_config_within(cfg, &lim, err, sizeof err, limit, sizeof limit), 0);
	json_object_object_add(cfg, "budget_s", NULL);
	assert_int_equal(lb_mcp_config_within(cfg, &lim, err, sizeof err, limit, sizeof limit), 1);
	assert_string_equal(limit, "max-budget");
	json_object_put(cfg);
}

static void test_tools_list(void **state)
{
	(void)state;
	json_object *t = lb_mcp_tools_list();
	assert_int_equal(json_object_array_length(t), 8);
	for (size_t i = 0; i < 8; i++) {
		json_object *schema, *type;
		assert_true(json_object_object_get_ex(json_object_array_get_idx(t, i), "inputSchema", &schema));
		assert_true(json_object_object_get_ex(schema, "type", &type));
		assert_string_equal(json_object_get_string(type), "object");
	}
	json_object_put(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kinds),     cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_run_argv_and_caps), cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_config_within),   cmocka_unit_test(test_tools_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
