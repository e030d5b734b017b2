/* Unit tests for gate: modes, the events channel (outside input), and the diagnosis of a
 * refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdlib.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "labbox/check.h"
#include "labbox/diagnose.h"
#include "labbox/gate.h"

static void test_modes(void **state)
{
	(void)state;
	lb_gate_mode m;
	assert_int_equal(lb_gate_mode_parse("off", &m), 0);
	assert_int_equal(m, LB_GATE_OFF);
	assert_int_equal(lb_gate_mode_parse("record", &m), 0);
	assert_int_equal(lb_gate_mode_parse("On", &m), -EINVAL);
	assert_int_equal(lb_gate_effective(LB_GATE_DEFAULT, LB_CHECK_STANDARD), LB_GATE_ON);
	assert_int_equal(lb_gate_effective(LB_GATE_DEFAULT, LB_CHECK_STRICT), LB_GATE_ON);
	assert_int_equal(lb_gate_effective(LB_GATE_DEFAULT, LB_CHECK_PERMISSIVE), LB_GATE_RECORD);
	assert_int_equal(lb_gate_effective(LB_GATE_ON, LB_CHECK_PERMISSIVE), LB_GATE_ON);
	assert_string_equal(lb_gate_mode_name(LB_GATE_DEFAULT), "default");
	assert_true(lb_gate_source_len > 1000 && strstr(lb_gate_source, "addaudithook"));
}

static void test_parse_events(void **state)
{
	(void)state;
	static const char text[] =
		"{\"v\": 1, \"pid\": 2, \"event\": \"os.system\", \"args\": [\"touch x\"], "
		"\"refused\": true, \"rule\": \"LB101\", \"title\": \"process creation\", "
		"\"file\": \"/e/main.py\", \"line\": 3}\n"
		"not json\n"
		"{\"v\": 2, \"event\": \"x\", \"rule\": \"LB101\"}\n"              /* wrong version */
		"{\"v\": 1, \"event\": \"x\", \"rule\": \"rm -rf\"}\n"             /* bad rule */
		"{\"v\": 1, \"event\": \"p\", \"rule\": \"gate.pickle\", \"args\": [[[[1]]]], "
		"\"file\": \"\\u00e9\\udc80\", \"line\": -4} trailing\n"          /* not whole */
		"{\"v\": 1, \"event\": \"pickle.find_class\", \"rule\": \"gate.pickle\", "
		"\"args\": [[[[1]]], 1e999], \"line\": -4}\n"
		"\n{\"v\":1,\"event\":\"e\",\"rule\":\"LB105\"";                  /* cut */
	json_object *evs = json_object_new_array();
	size_t dropped = 9, bad = 9;
	assert_int_equal(lb_gate_parse_events(text, sizeof text - 1, evs, &dropped, &bad), 0);
	assert_int_equal(json_object_array_length(evs), 2);
	assert_int_equal(dropped, 0);
	assert_int_equal(bad, 5);
	json_object *e = json_object_array_get_idx(evs, 0), *v;
	assert_true(json_object_object_get_ex(e, "static_rule", &v));
	assert_string_equal(json_object_get_string(v), "LB101");
	assert_true(json_object_object_get_ex(e, "line", &v));
	assert_int_equal(json_object_get_int(v), 3);
	e = json_object_array_get_idx(evs, 1);
	assert_true(json_object_object_get_ex(e, "static_rule", &v) && v == NULL);
	assert_true(json_object_object_get_ex(e, "line", &v) && v == NULL);
	json_object_put(evs);
}

static void test_parse_bounds(void **state)
{
	(void)state;
	size_t n = LB_GATE_MAX_EVENTS + 50, one = 80;
	char *buf = malloc(n * one + LB_GATE_MAX_LINE + 16);
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(buf + len, "{\"v\":1,\"event\":\"open\",\"rule\":\"LB110\",\"line\":%zu}\n",
				       i + 1);
	memset(buf + len, 'x', LB_GATE_MAX_LINE + 8); /* a line too long */
	len += LB_GATE_MAX_LINE + 8;
	json_object *evs = json_object_new_array();
	size_t dropped, bad;
	assert_int_equal(lb_gate_parse_events(buf, len, evs, &dropped, &bad), 0);
	assert_int_equal(json_object_array_length(evs), LB_GATE_MAX_EVENTS);
	assert_int_equal(dropped, 50);
	assert_int_equal(bad, 1);
	json_object_put(evs);
	free(buf);
}

static void test_diagnose_refusal(void **state)
{
	(void)state;
	static const char tail[] =
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 6, in <module>\n"
		"    os.system(\"echo\")\n"
		"PermissionError: [Errno 1] labbox runtime gate refused os.system: LB101 process "
		"creation (policy standard)\n";
	json_object *gate = json_tokener_parse(
		"{\"events\": [{\"event\": \"os.system\", \"refused\": true, \"rule\": \"LB101\"}]}");
	lb_failure_input in = {.log_tail = tail, .log_tail_len = sizeof tail - 1, .exit_code = 1,
			       .runtime_gate = gate};
	json_object *f = lb_diagnose_failure(&in), *v;
	assert_non_null(f);
	assert_true(json_object_object_get_ex(f, "class", &v));
	assert_string_equal(json_object_get_string(v), "gate_refused");
	assert_true(json_object_object_get_ex(f, "rule", &v));
	assert_string_equal(json_object_get_string(v), "LB101");
	assert_true(json_object_object_get_ex(f, "gate_event", &v));
	assert_string_equal(json_object_get_string(v), "os.system");
	json_object_put(f);
	/* The same words without the gate's record of them are the code's own. */
	in.runtime_gate = NULL;
	f = lb_diagnose_failure(&in);
	assert_true(json_object_object_get_ex(f, "class", &v));
	assert_string_equal(json_object_get_string(v), "code_error");
	assert_false(json_object_object_get_ex(f, "gate_event", &v));
	json_object_put(f);
	json_object_put(gate);
}

/* The config the gate reads with str methods: a header, then "key hex" lines, so that a path
 * with a newline, a space or bytes that are not UTF-8 comes through whole. */
static void test_write_config(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-unit-gate-XXXXXX";
	assert_non_null(mkdtemp(dir));
	const char *outs[] = {"/tmp", "/odd\npath \xff"};
	lb_gate_config gc = {.mode = LB_GATE_ON, .policy = "strict", .network = false,
			     .exp_dir = "/x y", .outputs = outs, .noutputs = 2};
	assert_int_equal(lb_gate_write_config(dir, &gc), 0);
	char path[256], buf[1024];
	snprintf(path, sizeof path, "%s/%s", dir, LB_GATE_CONFIG);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, "labbox-gate 1\n"
				 "policy 737472696374\n"
				 "enforce 31\n"
				 "network 30\n"
				 "exp_dir 2f782079\n"
				 "output 2f746d70\n"
				 "output 2f6f64640a7061746820ff\n"
				 "events 2f72756e2f6c6162626f782d676174652f6576656e74732e6a736f6e6c\n"
				 "max_events 323030\n"
				 "max_line 32303438\n");
	unlink(path);
	rmdir(dir);
}

/* The loader variables the gate refuses during the run are the ones refused before it: the
 * gate's loader_env, read from its embedded source, against lb_gate_loader_vars. */
static void test_loader_vars_are_the_gates(void **state)
{
	(void)state;
	size_t n = 0, seen = 0;
	const char *const *vars = lb_gate_loader_vars(&n);
	const char *start = strstr(lb_gate_source, "loader_env = frozenset([");
	assert_non_null(start);
	const char *end = strstr(start, "])");
	assert_non_null(end);
	for (const char *p = strchr(start, '"'); p && p < end; p = strchr(p, '"')) {
		const char *q = strchr(p + 1, '"');
		assert_non_null(q);
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)(q - p - 1), p + 1);
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found = found || strcmp(vars[i], name) == 0;
		if (!found)
			fail_msg("the gate's loader_env has %s, lb_gate_loader_vars does not", name);
		assert_true(lb_gate_startup_var(name));
		seen++;
		p = q + 1;
	}
	assert_int_equal(seen, n);
	assert_true(lb_gate_startup_var("LD_AUDIT"));
	assert_true(lb_gate_startup_var("PYTHONSTARTUP"));
	assert_false(lb_gate_startup_var("PYTHONHASHSEED"));
	assert_false(lb_gate_startup_var("OMP_NUM_THREADS"));
	assert_false(lb_gate_startup_var("CUDA_VISIBLE_DEVICES"));
	/* R's and Octave's start-up files and packages */
	assert_true(lb_gate_startup_var("R_PROFILE_USER"));
	assert_true(lb_gate_startup_var("R_LIBS_USER"));
	assert_true(lb_gate_startup_var("R_DEFAULT_PACKAGES"));
	assert_true(lb_gate_startup_var("OCTAVE_SITE_INITFILE"));
	assert_true(lb_gate_startup_var("BASH_ENV"));
	assert_false(lb_gate_startup_var("ENV"));
	assert_true(lb_gate_startup_var("BASH_FUNC_uname%%"));
	assert_false(lb_gate_startup_var("ENVIRONMENT"));
	assert_false(lb_gate_startup_var("RANK"));
	assert_false(lb_gate_startup_var("R"));
}

/* The gate's own line: heard only whole and on a line of its own; never an event or a bad one. */
static void test_heard(void **state)
{
	(void)state;
	static const char hello[] = "{\"v\": 1, \"gate\": \"installed\"}\n";
	static const char mixed[] = "junk\n{\"v\": 1, \"gate\": \"installed\"}\n";
	static const char cut[] = "{\"v\": 1, \"gate\": \"installed\"}";
	static const char longer[] = "{\"v\": 1, \"gate\": \"installed\"} \n";
	assert_true(lb_gate_heard(hello, sizeof hello - 1));
	assert_true(lb_gate_heard(mixed, sizeof mixed - 1));
	assert_false(lb_gate_heard(cut, sizeof cut - 1));
	assert_false(lb_gate_heard(longer, sizeof longer - 1));
	assert_false(lb_gate_heard(NULL, 0));
	json_object *evs = json_object_new_array();
	size_t dropped = 9, bad = 9;
	assert_int_equal(lb_gate_parse_events(mixed, sizeof mixed - 1, evs, &dropped, &bad), 0);
	assert_int_equal(json_object_array_length(evs), 0);
	assert_int_equal(bad, 1);
	json_object_put(evs);
}

/* The gate's lines about its channel: a replaced descriptor is said (and is no event or bad
 * line), and its one line about events dropped past its cap counts as a drop. */
static void test_channel_lines(void **state)
{
	(void)state;
	static const char lines[] =
		"{\"v\": 1, \"gate\": \"installed\"}\n"
		"{\"v\": 1, \"gate\": \"channel tampered\"}\n"
		"{\"v\": 1, \"gate\": \"dropped\"}\n";
	static const char plain[] = "{\"v\": 1, \"gate\": \"installed\"}\n";
	static const char cut[] = "{\"v\": 1, \"gate\": \"channel tampered\"}";
	assert_true(lb_gate_tampered(lines, sizeof lines - 1));
	assert_false(lb_gate_tampered(plain, sizeof plain - 1));
	assert_false(lb_gate_tampered(cut, sizeof cut - 1));
	json_object *evs = json_object_new_array();
	size_t dropped = 9, bad = 9;
	assert_int_equal(lb_gate_parse_events(lines, sizeof lines - 1, evs, &dropped, &bad), 0);
	assert_int_equal(json_object_array_length(evs), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(dropped, 1);
	json_object_put(evs);
	lb_gate_channel ch = {.buf = (char *)lines, .len = sizeof lines - 1,
			      .total = sizeof lines - 1};
	json_object *g = lb_gate_collect(&ch, LB_GATE_ON, "standard", false, NULL, NULL), *v;
	assert_non_null(g);
	assert_true(json_object_object_get_ex(g, "channel", &v));
	assert_string_equal(json_object_get_string(v), "tampered");
	assert_true(json_object_object_get_ex(g, "dropped", &v));
	assert_int_equal(json_object_get_int64(v), 1);
	json_object_put(g);
}

/* The reader takes the channel line by line as it comes: a part line the experiment wrote
 * before a line of the gate's (which starts with a newline) is foreign and swallows nothing;
 * a flood past the caps keeps counting refusals; a line split across reads is whole. */
static void test_channel_feed(void **state)
{
	(void)state;
	lb_gate_channel ch = {0};
	ch.buf = malloc(LB_GATE_MAX_READ);
	ch.line = malloc(LB_GATE_MAX_LINE);
	assert_non_null(ch.buf);
	assert_non_null(ch.line);
	static const char hello[] = "\n{\"v\": 1, \"gate\": \"installed\"}\n";
	static const char refusal[] =
		"\n{\"v\": 1, \"event\": \"open\", \"args\": [], \"refused\": true, "
		"\"rule\": \"LB110\", \"file\": \"/x/main.py\", \"line\": 3}\n";
	assert_int_equal(lb_gate_channel_feed(&ch, hello, sizeof hello - 1, false), 0);
	assert_int_equal(lb_gate_channel_feed(&ch, "{", 1, false), 0);
	/* the gate's line in two reads */
	assert_int_equal(lb_gate_channel_feed(&ch, refusal, 20, false), 0);
	assert_int_equal(lb_gate_channel_feed(&ch, refusal + 20, sizeof refusal - 1 - 20, false), 0);
	/* a flood of forged events of one kind, then a long line, then a refusal of a kind
	 * past the caps' kinds: counted though not kept */
	char forged[200];
	for (int i = 0; i < LB_GATE_MAX_EVENTS + 10; i++) {
		int n = snprintf(forged, sizeof forged,
				 "{\"v\": 1, \"event\": \"e%d\", \"args\": [], \"refused\": false, "
				 "\"rule\": \"LB101\"}\n", i);
		assert_int_equal(lb_gate_channel_feed(&ch, forged, (size_t)n, false), 0);
	}
	char *junk = malloc(3 * LB_GATE_MAX_LINE);
	assert_non_null(junk);
	memset(junk, 'x', 3 * LB_GATE_MAX_LINE);
	assert_int_equal(lb_gate_channel_feed(&ch, junk, 3 * LB_GATE_MAX_LINE, false), 0);
	free(junk);
	static const char late[] =
		"\n{\"v\": 1, \"event\": \"socket.connect\", \"args\": [], \"refused\": true, "
		"\"rule\": \"LB105\"}\n";
	assert_int_equal(lb_gate_channel_feed(&ch, late, sizeof late - 1, false), 0);
	assert_int_equal(lb_gate_channel_feed(&ch, "{\"part", 6, true), 0);
	assert_true(ch.len <= LB_GATE_MAX_READ);
	json_object *g = lb_gate_collect(&ch, LB_GATE_ON, "standard", false, NULL, NULL), *v, *e;
	assert_non_null(g);
	assert_true(json_object_object_get_ex(g, "installed", &v) && json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(g, "channel", &v));
	assert_string_equal(json_object_get_string(v), "tampered");
	assert_true(json_object_object_get_ex(g, "malformed", &v));
	assert_int_equal(json_object_get_int64(v), 3); /* "{", the long line, the part at the end */
	assert_true(json_object_object_get_ex(g, "refused", &v));
	assert_int_equal(json_object_get_int64(v), 2);
	assert_true(json_object_object_get_ex(g, "events", &v));
	e = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(e, "event", &v));
	assert_string_equal(json_object_get_string(v), "open");
	assert_true(json_object_object_get_ex(g, "note", &v));
	assert_non_null(strstr(json_object_get_string(v), "wrote into the gate's channel"));
	json_object_put(g);
	lb_gate_channel_free(&ch);
}

/* The main program's uncaught exception decides the verdict: a flood of forged kinds the
 * experiment wrote into the channel before it cannot push it past the caps, and of many such
 * lines only the first is kept. */
static void test_channel_keeps_uncaught(void **state)
{
	(void)state;
	lb_gate_channel ch = {0};
	ch.buf = malloc(LB_GATE_MAX_READ);
	ch.line = malloc(LB_GATE_MAX_LINE);
	assert_non_null(ch.buf);
	assert_non_null(ch.line);
	static const char hello[] = "\n{\"v\": 1, \"gate\": \"installed\"}\n";
	assert_int_equal(lb_gate_channel_feed(&ch, hello, sizeof hello - 1, false), 0);
	char forged[200];
	for (int i = 0; i < LB_GATE_MAX_EVENTS + LB_GATE_MAX_KINDS + 10; i++) {
		int n = snprintf(forged, sizeof forged,
				 "\n{\"v\": 1, \"event\": \"e%d\", \"args\": [], \"refused\": false, "
				 "\"rule\": \"LB101\"}\n", i);
		assert_int_equal(lb_gate_channel_feed(&ch, forged, (size_t)n, false), 0);
	}
	assert_null(lb_gate_uncaught(ch.kept));
	static const char uncaught[] =
		"\n{\"v\": 1, \"pid\": 2, \"event\": \"labbox.uncaught\", \"args\": "
		"[\"RuntimeError\", \"evaluation crashed\"], \"refused\": false, \"rule\": "
		"\"gate.uncaught\", \"file\": \"/x/main.py\", \"line\": 4}\n";
	for (int i = 0; i < 3; i++)
		assert_int_equal(lb_gate_channel_feed(&ch, uncaught, sizeof uncaught - 1, false), 0);
	assert_int_equal(lb_gate_channel_feed(&ch, NULL, 0, true), 0);
	json_object *u = lb_gate_uncaught(ch.kept), *v;
	assert_non_null(u);
	assert_true(json_object_object_get_ex(u, "line", &v));
	assert_int_equal(json_object_get_int(v), 4);
	json_object *g = lb_gate_collect(&ch, LB_GATE_ON, "standard", false, NULL, NULL), *evs;
	assert_non_null(g);
	/* runtime_gate.uncaught has it, events (the gate's judgings) not */
	assert_true(json_object_object_get_ex(g, "uncaught", &u) && u);
	assert_true(json_object_object_get_ex(u, "exception", &v));
	assert_string_equal(json_object_get_string(v), "RuntimeError");
	assert_true(json_object_object_get_ex(u, "message", &v));
	assert_string_equal(json_object_get_string(v), "evaluation crashed");
	assert_true(json_object_object_get_ex(u, "file", &v));
	assert_string_equal(json_object_get_string(v), "/x/main.py");
	assert_true(json_object_object_get_ex(g, "events", &evs));
	assert_null(lb_gate_uncaught(evs));
	assert_int_equal(json_object_array_length(evs), LB_GATE_MAX_EVENTS + LB_GATE_MAX_KINDS);
	json_object_put(g);
	lb_gate_channel_free(&ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_parse_events),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_heard),
		cmocka_unit_test(test_loader_vars_are_the_gates),
		cmocka_unit_test(test_channel_lines),
		cmocka_unit_test(test_channel_feed),
		cmocka_unit_test(test_channel_keeps_uncaught),
		cmocka_unit_test(test_diagnose_refusal),
		cmocka_unit_test(test_write_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
