/* check: name resolution, rules, policies, suppressions and the report formats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "labbox/check.h"
#include "labbox/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "LB101@5 LB102@2 ..." of the unsuppressed findings, in report order, harness ignored. */
static char *findings_of(const char *src, lb_check_policy policy, bool *rejected)
{
	lb_check_config *cfg;
	lb_check_report rep = {0};
	assert_int_equal(lb_check_config_new(&cfg), 0);
	lb_check_config_set_policy(cfg, policy);
	assert_int_equal(lb_check_config_ignore(cfg, "harness"), 0);
	assert_int_equal(lb_check_source(cfg, "t.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	lb_buf b = {0};
	for (size_t i = 0; i < rep.n; i++) {
		if (rep.items[i].suppressed)
			continue;
		lb_buf_printf(&b, "%s%s@%u", b.len ? " " : "", rep.items[i].id, rep.items[i].line);
	}
	if (rejected)
		*rejected = rep.rejected;
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	return b.data ? b.data : strdup("");
}

#define EXPECT(src, want)                                                                      \
	do {                                                                                   \
		char *got_ = findings_of(src, LB_CHECK_STANDARD, NULL);                        \
		assert_string_equal(got_, want);                                               \
		free(got_);                                                                    \
	} while (0)

static void test_aliases_and_rebinding(void **state)
{
	(void)state;
	EXPECT("import os as o\no.system('ls')\n", "LB101@2");
	EXPECT("from os import system as s\ns('ls')\n", "LB101@2");
	EXPECT("import os\nf = os.system\nf('ls')\n", "LB101@3");
	EXPECT("import subprocess as sp\nimport numpy as sp\nsp.zeros(3)\n", "LB102@1");
	EXPECT("import posix\nposix.system('x')\n", "LB201@1 LB101@2");
	EXPECT("import os\nclass A:\n    run = os.system\n", "LB101@3");
}

static void test_dynamic_access(void **state)
{
	(void)state;
	EXPECT("import os\ngetattr(os, 'sys' + 'tem')('x')\n", "LB101@2");
	EXPECT("import os\ngetattr(os, '\\x73ystem')('x')\n", "LB101@2");
	EXPECT("import os\ngetattr(os, 'metsys'[::-1])('x')\n", "LB101@2");
	EXPECT("import os, sys\ngetattr(os, sys.argv[1])('x')\n", "LB111@2");
	EXPECT("__import__('subprocess').run(['ls'])\n", "LB102@1 LB102@1");
	/* handed on as a value, import_module's caller is not seen */
	EXPECT("import importlib\nlist(map(importlib.import_module, ['json']))\n", "LB201@1 LB104@2");
	EXPECT("import importlib\nimportlib.import_module('subprocess')\n", "LB201@1 LB102@2");
	EXPECT("import sys\nsys.modules['os'].system('x')\n", "LB101@2");
	EXPECT("import os\nvars(os)['system']('x')\n", "LB101@2");
	EXPECT("import os\nos.__dict__['popen']('x')\n", "LB101@2");
	EXPECT("__builtins__['eval']('1')\n", "LB103@1");
	EXPECT("import builtins\nbuiltins.exec('x')\n", "LB201@1 LB103@2");
	EXPECT("import numpy as np\nnp.os.system('x')\n", "LB101@2");
	EXPECT("().__class__.__bases__[0].__subclasses__()\n", "LB111@1");
}

static void test_false_positive_traps(void **state)
{
	(void)state;
	EXPECT("model.eval()\nobj.exec()\n", "");
	EXPECT("import re\nre.compile('x')\n", "");
	EXPECT("def eval(x):\n    return x\neval('1')\n", "");
	EXPECT("x = 'os.system(1)'  # subprocess.run\n", "");
	EXPECT("import os\nos.makedirs('out', exist_ok=True)\nos.path.join('a', 'b')\n", "");
	EXPECT("import torch\nm = torch.compile(object())\n", "");
	EXPECT("def f(args):\n    return getattr(args, 'lr')\n", "");
	EXPECT("f(eval=1)\n", "");
	/* a process that signals itself (a preemption handler tested by hand) */
	EXPECT("import os, signal\nos.kill(os.getpid(), signal.SIGUSR1)\n", "");
	EXPECT("import os\nos.kill(os.getppid(), 9)\nos.kill(1, 9)\n", "LB101@2 LB101@3");
}

static void test_functions_see_every_binding(void **state)
{
	(void)state;
	/* the function runs later: both values of sp are possible inside it */
	EXPECT("import subprocess as sp\ndef f():\n    sp.run(['x'])\nimport numpy as sp\n",
	       "LB102@1 LB102@3");
	/* a function that defines the name globally */
	EXPECT("def setup():\n    global h\n    import os as h\nsetup()\nh.system('x')\n",
	       "LB101@5");
	/* conditional rebinding keeps the dangerous value */
	EXPECT("import os\nf = print\nif cond:\n    f = os.system\nf('x')\n", "LB101@5");
}

/* The findings of src under standard with `~` the user's real home (a mode without the
 * sandbox) or the sandbox's. */
static char *home_findings(const char *src, bool real)
{
	lb_check_config *cfg;
	lb_check_report rep = {0};
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_config_ignore(cfg, "harness"), 0);
	assert_int_equal(lb_check_config_set_real_home(cfg, real), 0);
	assert_int_equal(lb_check_source(cfg, "t.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	lb_buf b = {0};
	for (size_t i = 0; i < rep.n; i++)
		if (!rep.items[i].suppressed)
			lb_buf_printf(&b, "%s%s@%u", b.len ? " " : "", rep.items[i].id, rep.items[i].line);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	return b.data ? b.data : strdup("");
}

static void test_writes_under_the_home(void **state)
{
	(void)state;
	static const char *const srcs[] = {
		"import os\nopen(os.path.join(os.path.expanduser('~'), '.cache', 'x'), 'w')\n",
		"from pathlib import Path\n(Path.home() / '.local' / 'lib' / 'x.pth').write_text('y')\n",
		"import os\nopen(os.path.join(os.environ['HOME'], '.zshenv'), 'a')\n",
	};
	for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
		/* the sandbox's HOME is its private /tmp: harmless there */
		char *got = home_findings(srcs[i], false);
		assert_string_equal(got, "");
		free(got);
		/* without the sandbox it is the user's own: every write there is refused */
		got = home_findings(srcs[i], true);
		assert_string_equal(got, "LB110@2");
		free(got);
	}
}

static void test_writes(void **state)
{
	(void)state;
	EXPECT("open('/etc/passwd', 'w')\n", "LB110@1");
	EXPECT("open('out/results.json', 'w')\nopen('/tmp/x', 'a')\n", "");
	EXPECT("open('../../x', 'w')\n", "LB110@1");
	EXPECT("open('/etc/passwd')\n", "");
	EXPECT("from pathlib import Path\nPath('/etc/cron.d/x').write_text('y')\n", "LB110@2");
	EXPECT("import os\nopen(os.path.join('/etc', 'x'), 'wb')\n", "LB110@2");
}

static void test_determinism(void **state)
{
	(void)state;
	EXPECT("import numpy as np\nx = np.random.rand(3)\n", "LB302@2");
	EXPECT("import numpy as np\nx = np.random.rand(3)\nnp.random.seed(0)\n", "LB301@2");
	EXPECT("import numpy as np\nnp.random.seed(0)\nx = np.random.rand(3)\n", "");
	EXPECT("import numpy as np\nrng = np.random.default_rng()\n", "LB303@2");
	EXPECT("import random\ndef main():\n    random.seed(1)\n    random.random()\n", "");
}

/* The seed calls the report lists for the manifest: literal integers (and module constants
 * assigned one literal, once) as numbers, the rest as the argument's text, in source order,
 * whatever the policy makes of the determinism rules. */
static void test_seeds_found(void **state)
{
	static const char src[] = "import random, torch\nimport numpy as np\nSEED = 7\n"
				  "random.seed(SEED)\nnp.random.seed(seed=0x2a)\n"
				  "def main(args):\n    torch.manual_seed(1_000)\n"
				  "    np.random.seed(args.seed)\n    np.random.seed()\n"
				  "S2 = 1\nS2 = 2\nrandom.seed(S2)\nrandom.seed(0o17)\n";
	lb_check_config *cfg;
	lb_check_report rep = {0};
	(void)state;
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_config_ignore(cfg, "determinism"), 0);
	assert_int_equal(lb_check_source(cfg, "m.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	assert_non_null(rep.seeds);
	assert_string_equal(json_object_to_json_string_ext(rep.seeds, JSON_C_TO_STRING_PLAIN |
									JSON_C_TO_STRING_NOSLASHESCAPE),
			    "[{\"line\":4,\"col\":1,\"call\":\"random.seed\",\"lib\":\"random\","
			    "\"value\":7,\"file\":\"m.py\"},"
			    "{\"line\":5,\"col\":1,\"call\":\"numpy.random.seed\",\"lib\":\"numpy\","
			    "\"value\":42,\"file\":\"m.py\"},"
			    "{\"line\":7,\"col\":5,\"call\":\"torch.manual_seed\",\"lib\":\"torch\","
			    "\"value\":1000,\"file\":\"m.py\"},"
			    "{\"line\":8,\"col\":5,\"call\":\"numpy.random.seed\",\"lib\":\"numpy\","
			    "\"value\":\"args.seed\",\"file\":\"m.py\"},"
			    "{\"line\":12,\"col\":1,\"call\":\"random.seed\",\"lib\":\"random\","
			    "\"value\":\"S2\",\"file\":\"m.py\"},"
			    "{\"line\":13,\"col\":1,\"call\":\"random.seed\",\"lib\":\"random\","
			    "\"value\":15,\"file\":\"m.py\"}]");
	lb_check_report_free(&rep);
	assert_null(rep.seeds);

	/* The argument's text is quoted valid UTF-8, at most 120 bytes, cut between characters. */
	static const char bad[] = "import numpy as np\nnp.random.seed(\"a\xff\xfe\")\n"
				  "np.random.seed(\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\")\n";
	memset(&rep, 0, sizeof rep);
	assert_int_equal(lb_check_source(cfg, "m.py", bad, strlen(bad), false, &rep), 0);
	assert_int_equal(json_object_array_length(rep.seeds), 2);
	const char *v0 = json_object_get_string(
		json_object_object_get(json_object_array_get_idx(rep.seeds, 0), "value"));
	const char *v1 = json_object_get_string(
		json_object_object_get(json_object_array_get_idx(rep.seeds, 1), "value"));
	assert_string_equal(v0, "\"a??\"");
	/* a quote and 59 two-byte characters fit in 120 bytes; the 60th would not */
	assert_int_equal(strlen(v1), 119);
	assert_int_equal((unsigned char)v1[117], 0xc3);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
}

static void test_policies(void **state)
{
	(void)state;
	bool rej;
	char *s = findings_of("import os\nos.makedirs('x')\n", LB_CHECK_STRICT, &rej);
	assert_string_equal(s, "LB201@1 LB109@2");
	assert_true(rej);
	free(s);
	s = findings_of("import os\nos.makedirs('x')\n", LB_CHECK_STANDARD, &rej);
	assert_string_equal(s, "");
	assert_false(rej);
	free(s);
	s = findings_of("import os\nos.system('x')\n", LB_CHECK_PERMISSIVE, &rej);
	assert_string_equal(s, "LB101@2");
	assert_false(rej);
	free(s);
}

static void test_suppression(void **state)
{
	(void)state;
	lb_check_config *cfg;
	lb_check_report rep = {0};
	const char *src = "import shutil\nshutil.rmtree('x')  # labbox: allow[LB108] scratch dir\n"
			  "import os\nos.system('x')  # labbox: allow[LB101] I promise\n";
	assert_int_equal(lb_check_config_new(&cfg), 0);
	lb_check_config_ignore(cfg, "harness");
	assert_int_equal(lb_check_source(cfg, "t.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	size_t suppressed = 0, refused = 0;
	for (size_t i = 0; i < rep.n; i++) {
		if (rep.items[i].suppressed) {
			suppressed++;
			assert_string_equal(rep.items[i].id, "LB108");
			assert_non_null(strstr(rep.items[i].suppression, "scratch dir"));
		}
		if (strcmp(rep.items[i].id, "LB003") == 0)
			refused++;
	}
	assert_int_equal(suppressed, 1);
	assert_int_equal(refused, 1); /* the hard gate is not lifted by the code itself */
	assert_true(rep.rejected);
	lb_check_report_free(&rep);
	/* the operator may trust the project */
	lb_check_config_set_trust_project(cfg, true);
	assert_int_equal(lb_check_source(cfg, "t.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	assert_false(rep.rejected);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
}

static void test_yaml_config(void **state)
{
	(void)state;
	lb_check_config *cfg;
	lb_check_report rep = {0};
	char err[256] = "";
	const char *y = "entry: main.py\nbudget: 100\nplan: {conditions: 4, seeds: 1, iterations: 50}\n"
			"check:\n  allow: {modules: [tqdm2]}\n  deny: {calls: [pickle.load]}\n";
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_config_load_yaml(cfg, y, strlen(y), err, sizeof err), 0);
	const char *src = "import tqdm2\nimport pickle\npickle.load(f)\n";
	lb_check_config_ignore(cfg, "harness");
	assert_int_equal(lb_check_source(cfg, "t.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	/* denied, and a deserialization warning on the same call */
	assert_int_equal(rep.n, 2);
	assert_true((strcmp(rep.items[0].id, "LB120") == 0 && strcmp(rep.items[1].id, "LB114") == 0) ||
		    (strcmp(rep.items[0].id, "LB114") == 0 && strcmp(rep.items[1].id, "LB120") == 0));
	lb_check_report_free(&rep);
	assert_int_equal(lb_check_config_load_yaml(cfg, "check: {bogus: 1}\n", 18, err, sizeof err),
			 -EINVAL);
	assert_non_null(strstr(err, "bogus"));
	lb_check_config_free(cfg);
}

static void test_syntax_and_encoding(void **state)
{
	(void)state;
	EXPECT("x = (1,\n", "LB001@1");
	EXPECT("# -*- coding: utf-7 -*-\nx = 1\n", "LB002@1");
	EXPECT("# coding: utf-8\nx = 1\n", "");
	EXPECT("# coding: latin-1\nx = 1\n", "");
	EXPECT("#!/usr/bin/env python3\n# -*- coding: iso-8859-1 -*-\nx = 1\n", "");
	/* decoded through the codec registry, which the run's code can replace */
	EXPECT("# -*- coding: cp1252 -*-\nx = 1\n", "LB002@1");
	EXPECT("\n# vim: set fileencoding=iso-8859-15 :\nx = 1\n", "LB002@1");
	EXPECT("\xef\xbd\x85\xef\xbd\x96\xef\xbd\x81\xef\xbd\x8c('1')\n", "LB103@1"); /* ｅｖａｌ */
}

static void test_json_and_text(void **state)
{
	(void)state;
	lb_check_config *cfg;
	lb_check_report rep = {0};
	const char *src = "import subprocess\n";
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_source(cfg, "main.py", src, strlen(src), true, &rep), 0);
	lb_check_finish(&rep);
	json_object *doc = lb_check_report_json(&rep);
	json_object *v;
	assert_true(json_object_object_get_ex(doc, "schema", &v));
	assert_string_equal(json_object_get_string(v), "labbox.check/1");
	assert_true(json_object_object_get_ex(doc, "rejected", &v));
	assert_true(json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(doc, "llm_text", &v));
	assert_non_null(strstr(json_object_get_string(v), "LB102"));
	assert_true(json_object_object_get_ex(doc, "findings", &v));
	json_object *f0 = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(f0, "category", &v));
	json_object_put(doc);
	char *text = lb_check_text(&rep);
	assert_non_null(strstr(text, "main.py:1:8: error[LB102]: "));
	assert_non_null(strstr(text, "rejected under policy standard"));
	free(text);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
}

static void test_deep_nesting_is_not_a_pass(void **state)
{
	(void)state;
	lb_buf b = {0};
	lb_buf_puts(&b, "import os\nx = ");
	for (int i = 0; i < 400; i++)
		lb_buf_puts(&b, "[");
	lb_buf_puts(&b, "os.system");
	for (int i = 0; i < 400; i++)
		lb_buf_puts(&b, "]");
	lb_buf_puts(&b, "\n");
	bool rej = false;
	char *s = findings_of(b.data, LB_CHECK_STANDARD, &rej);
	assert_true(rej);
	assert_non_null(strstr(s, "LB002"));
	free(s);
	lb_buf_free(&b);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A worker keeps its parser from one file to the next; what one file leaves in it must not
 * change how the next is read. An unterminated f-string left the Python scanner "inside an
 * f-string" after a reset, and then the next file's dedents were lost: b.py's last lines
 * became part of the `if`, so f could still be os.system. Long blocks and argument lists
 * (collected with a cursor) are resolved as short ones are. */
static void test_files_do_not_leak_into_each_other(void **state)
{
	(void)state;
	char dir[] = "/tmp/labbox-test-check-XXXXXX";
	assert_non_null(mkdtemp(dir));
	write_file(dir, "a.py", "x = f\"{\n");
	write_file(dir, "b.py", "import os\nif x:\n    pass\nf = os.system\nf = print\nf('x')\n");
	lb_check_config *cfg;
	lb_check_report rep = {0};
	char err[256] = "";
	assert_int_equal(lb_check_config_new(&cfg), 0);
	assert_int_equal(lb_check_config_ignore(cfg, "harness"), 0);
	assert_int_equal(lb_check_dir(cfg, dir, &rep, err, sizeof err), 0);
	lb_check_finish(&rep);
	assert_int_equal(rep.files, 2);
	assert_int_equal(rep.n, 1);
	assert_string_equal(rep.items[0].file, "a.py");
	assert_string_equal(rep.items[0].id, "LB001");
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	char p[512];
	snprintf(p, sizeof p, "%s/a.py", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/b.py", dir);
	unlink(p);
	rmdir(dir);
	EXPECT("import os\nprint(1, 2, 3, 4, 5, 6, 7, 8, 9, os.system, 11)\n", "LB101@2");
	EXPECT("import os\nx0 = 0\nx1 = 1\nx2 = 2\nx3 = 3\nx4 = 4\nx5 = 5\nx6 = 6\nx7 = 7\n"
	       "x8 = 8\nx9 = 9\nos.system('x')\n", "LB101@12");
}

/* "kind@line[?]:via" of each need ("?" when optional, "!ID" when a finding rejects the line),
 * and whether the code is rejected under policy. */
static char *needs_of(const char *src, lb_check_policy policy, bool *rejected, json_object *sandbox)
{
	lb_check_config *cfg;
	lb_check_report rep = {0};
	assert_int_equal(lb_check_config_new(&cfg), 0);
	lb_check_config_set_policy(cfg, policy);
	assert_int_equal(lb_check_source(cfg, "t.py", src, strlen(src), false, &rep), 0);
	lb_check_finish(&rep);
	json_object *needs = lb_check_needs_json(&rep, sandbox);
	lb_buf b = {0};
	for (size_t i = 0; i < json_object_array_length(needs); i++) {
		json_object *n = json_object_array_get_idx(needs, i), *v, *ev;
		assert_true(json_object_object_get_ex(n, "evidence", &ev));
		assert_true(json_object_object_get_ex(ev, "line", &v));
		int line = json_object_get_int(v);
		json_object_object_get_ex(n, "kind", &v);
		lb_buf_printf(&b, "%s%s@%d", b.len ? " " : "", json_object_get_string(v), line);
		json_object_object_get_ex(n, "optional", &v);
		if (json_object_get_boolean(v))
			lb_buf_printf(&b, "?");
		json_object_object_get_ex(n, "finding", &v);
		if (v)
			lb_buf_printf(&b, "!%s", json_object_get_string(v));
		json_object_object_get_ex(n, "granted", &v);
		if (json_object_get_boolean(v))
			lb_buf_printf(&b, "+");
		json_object_object_get_ex(n, "flag", &v);
		lb_buf_printf(&b, "[%s]", json_object_get_string(v));
	}
	if (rejected)
		*rejected = rep.rejected;
	json_object_put(needs);
	lb_check_report_free(&rep);
	lb_check_config_free(cfg);
	return b.data ? b.data : strdup("");
}

#define EXPECT_NEEDS(src, want)                                                                \
	do {                                                                                   \
		bool rej_;                                                                     \
		char *got_ = needs_of(src, LB_CHECK_STANDARD, &rej_, NULL);                    \
		assert_string_equal(got_, want);                                               \
		free(got_);                                                                    \
	} while (0)

static void test_needs_network_downloads(void **state)
{
	(void)state;
	bool rej;
	/* downloads are needs, not findings: the code is not rejected for them */
	const char *dl = "from transformers import AutoModel as M\n"
			 "m = M.from_pretrained('bert-base-uncased')\n"
			 "from huggingface_hub import hf_hub_download\n"
			 "p = hf_hub_download('org/x', 'w.bin')\n"
			 "import datasets\n"
			 "d = datasets.load_dataset('imdb')\n"
			 "import torch\n"
			 "h = torch.hub.load('pytorch/vision', 'resnet18')\n"
			 "import torchvision\n"
			 "t = torchvision.datasets.MNIST('data', download=True)\n"
			 "import wandb\n"
			 "wandb.init(project='p')\n";
	char *got = needs_of(dl, LB_CHECK_STANDARD, &rej, NULL);
	assert_string_equal(got, "network@2[--network host] network@4[--network host] "
				 "network@6[--network host] network@8[--network host] "
				 "network@10[--network host] network@12[--network host]");
	assert_false(rej);
	free(got);
	got = needs_of(dl, LB_CHECK_STRICT, &rej, NULL);
	assert_non_null(strstr(got, "network@2[--network host]"));
	assert_null(strstr(got, "!LB105"));
	free(got);
	/* local copies need nothing */
	EXPECT_NEEDS("from transformers import AutoModel\n"
		     "m = AutoModel.from_pretrained('./ckpt')\n"
		     "m = AutoModel.from_pretrained('bert', local_files_only=True)\n"
		     "import datasets\n"
		     "d = datasets.load_dataset('csv', data_files='d.csv')\n"
		     "import wandb\n"
		     "wandb.init(mode='offline')\n",
		     "");
	/* a method of an object labbox does not follow, by its name */
	EXPECT_NEEDS("m = load_model_class().from_pretrained('gpt2')\n",
		     "network@1[--network host]");
	/* the network rule still rejects requests; the need says which finding stands */
	got = needs_of("import requests\nr = requests.get('http://x')\n", LB_CHECK_STANDARD, &rej, NULL);
	assert_string_equal(got, "network@2!LB105[--network host]");
	assert_true(rej);
	free(got);
	got = needs_of("import requests\nr = requests.get('http://x')\n", LB_CHECK_PERMISSIVE, &rej,
		       NULL);
	assert_string_equal(got, "network@2[--network host]");
	assert_false(rej);
	free(got);
}

static void test_needs_gpu_and_writes(void **state)
{
	(void)state;
	EXPECT_NEEDS("import torch\n"
		     "dev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
		     "x = torch.zeros(3).to('cuda')\n"
		     "y = torch.zeros(3).cuda()\n"
		     "z = torch.ones(2, device='cuda:0')\n"
		     "d = torch.device('cuda')\n"
		     "torch.cuda.synchronize()\n"
		     "torch.cuda.manual_seed_all(0)\n"
		     "w = torch.zeros(3).to('cpu')\n",
		     "gpu@2?[--gpus all] gpu@3[--gpus all] gpu@4[--gpus all] gpu@5[--gpus all] "
		     "gpu@6[--gpus all] gpu@7[--gpus all]");
	EXPECT_NEEDS("import jax\ng = jax.devices('gpu')\nc = jax.devices('cpu')\n",
		     "gpu@2[--gpus all]");
	EXPECT_NEEDS("f = open('/data/out/r.csv', 'w')\n"
		     "g = open('/tmp/x', 'w')\n"
		     "h = open('out/r.csv', 'w')\n"
		     "i = open('/etc/passwd')\n",
		     "write_outside@1!LB110[-v SRC:/data/out:rw]");
	/* what the run was given is granted */
	json_object *sb = json_tokener_parse(
		"{\"network\": \"host\", \"gpus\": \"0\", \"volumes\": [\"/srv/o:/data:rw\"]}");
	char *got = needs_of("import torch\nx = torch.zeros(1).cuda()\n"
			     "import datasets\nd = datasets.load_dataset('imdb')\n"
			     "f = open('/data/out/r.csv', 'w')\nf = open('/other/r.csv', 'w')\n",
			     LB_CHECK_PERMISSIVE, NULL, sb);
	assert_string_equal(got, "gpu@2+[--gpus all] network@4+[--network host] "
				 "write_outside@5+[-v SRC:/data/out:rw] "
				 "write_outside@6[-v SRC:/other:rw]");
	free(got);
	json_object_put(sb);
	sb = json_tokener_parse("{\"network\": \"loopback\", \"gpus\": null, "
				"\"volumes\": [\"/srv/o:/data:ro\"]}");
	got = needs_of("import datasets\nd = datasets.load_dataset('imdb')\n"
		       "f = open('/data/out/r.csv', 'w')\n",
		       LB_CHECK_PERMISSIVE, NULL, sb);
	assert_string_equal(got, "network@2[--network host] write_outside@3[-v SRC:/data/out:rw]");
	free(got);
	json_object_put(sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aliases_and_rebinding),
		cmocka_unit_test(test_dynamic_access),
		cmocka_unit_test(test_false_positive_traps),
		cmocka_unit_test(test_functions_see_every_binding),
		cmocka_unit_test(test_writes),
		cmocka_unit_test(test_writes_under_the_home),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_seeds_found),
		cmocka_unit_test(test_policies),
		cmocka_unit_test(test_suppression),
		cmocka_unit_test(test_yaml_config),
		cmocka_unit_test(test_syntax_and_encoding),
		cmocka_unit_test(test_json_and_text),
		cmocka_unit_test(test_deep_nesting_is_not_a_pass),
		cmocka_unit_test(test_files_do_not_leak_into_each_other),
		cmocka_unit_test(test_needs_network_downloads),
		cmocka_unit_test(test_needs_gpu_and_writes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
