/* check: what the code needs from the sandbox beyond its defaults (the network, a GPU, a
 * writable directory outside the experiment), with the line that shows it and the flag that
 * grants it. A need is not a finding: it never rejects; the rules decide that. */
#include "check_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

/* One file's needs are bounded: a loop of downloads is one need per line, and a file with
 * hundreds of lines that each need the network says so in its first needs. */
#define CK_NEEDS_MAX 64

typedef struct need_pat {
	const char *pat; /* exact dotted name, or a prefix ending in '.' or '*' */
	const char *kind;
	bool optional; /* the code asks whether there is one: it may run without */
} need_pat;

static const need_pat call_pats[] = {
	/* downloads of models, data sets and weights: what research code fetches */
	{"huggingface_hub.hf_hub_download", "network", false},
	{"huggingface_hub.snapshot_download", "network", false},
	{"huggingface_hub.login", "network", false},
	{"huggingface_hub.HfApi", "network", false},
	{"huggingface_hub.InferenceClient", "network", false},
	{"datasets.load_dataset", "network", false},
	{"datasets.load_dataset_builder", "network", false},
	{"torch.hub.", "network", false},
	{"torchvision.datasets.utils.download_url", "network", false},
	{"torchvision.datasets.utils.download_and_extract_archive", "network", false},
	{"wandb.init", "network", false},
	{"wandb.login", "network", false},
	{"tensorflow_datasets.load", "network", false},
	{"tensorflow.keras.utils.get_file", "network", false},
	{"keras.utils.get_file", "network", false},
	{"tensorflow.keras.datasets.*", "network", false},
	{"keras.datasets.*", "network", false},
	{"sklearn.datasets.fetch_*", "network", false},
	{"nltk.download", "network", false},
	{"gdown.", "network", false},
	{"kagglehub.", "network", false},
	{"openml.", "network", false},
	{"transformers.pipeline", "network", false},
	{"sentence_transformers.SentenceTransformer", "network", false},
	/* what the network rule (LB105) finds is a need too: the finding says whether the
	 * policy lets it run at all */
	{"requests.", "network", false},
	{"httpx.", "network", false},
	{"aiohttp.", "network", false},
	{"urllib3.", "network", false},
	{"urllib.request.", "network", false},
	{"http.client.", "network", false},
	{"socket.socket", "network", false},
	{"socket.create_connection", "network", false},
	{"socket.getaddrinfo", "network", false},
	{"socket.gethostbyname", "network", false},
	{"ftplib.", "network", false},
	{"smtplib.", "network", false},
	{"pycurl.", "network", false},
	{"websocket.", "network", false},
	{"websockets.", "network", false},
	/* GPUs */
	{"torch.cuda.is_available", "gpu", true},
	{"torch.cuda.device_count", "gpu", true},
	{"torch.cuda.is_initialized", "gpu", true},
	{"torch.cuda.manual_seed", NULL, false}, /* seeds lazily; no GPU needed */
	{"torch.cuda.manual_seed_all", NULL, false},
	{"torch.cuda.", "gpu", false},
	{"tensorflow.config.list_physical_devices", "gpu", true},
	{"tensorflow.test.is_gpu_available", "gpu", true},
	{"cupy.", "gpu", false},
	{"numba.cuda.", "gpu", false},
	{"pycuda.", "gpu", false},
};

static bool pat_match(const char *pat, const char *q)
{
	size_t k = strlen(pat);
	if (pat[k - 1] == '*' || pat[k - 1] == '.')
		return strncmp(q, pat, pat[k - 1] == '*' ? k - 1 : k) == 0;
	return strcmp(q, pat) == 0;
}

const char *ck_need_of_call(const char *q, bool *optional)
{
	char canon[512];
	ck_canonical(q, canon, sizeof canon);
	*optional = false;
	for (size_t i = 0; i < sizeof call_pats / sizeof call_pats[0]; i++)
		if (canon[0] == call_pats[i].pat[0] && pat_match(call_pats[i].pat, canon)) {
			*optional = call_pats[i].optional;
			return call_pats[i].kind;
		}
	/* Model hubs' loaders: AutoModel.from_pretrained("bert-base-uncased"), any library */
	size_t n = strlen(canon);
	if (n > 16 && strcmp(canon + n - 16, ".from_pretrained") == 0)
		return "network";
	return NULL;
}

/* ---- GPU uses the code reaches only when there is a GPU --------------------------------------
 * Research code runs on CPU and GPU alike by testing torch.cuda.is_available() or a --device
 * flag; a use under such a test needs no GPU, and a pipeline that reserved one for it (or
 * refused to schedule it without one) would be wrong. Read by the syntax alone: a guard is
 * written at the use, and the names it tests are the ones the analysis cannot evaluate (a
 * flag, the machine). */

/* A condition's nodes are few; one larger is not a device test worth reading whole. */
#define GUARD_NODES_MAX 256

static bool node_is(TSNode n, const char *type)
{
	return !ts_node_is_null(n) && strcmp(ts_node_type(n), type) == 0;
}

static bool has_ci(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	for (size_t i = 0; i + k <= n; i++)
		if (strncasecmp(s + i, w, k) == 0)
			return true;
	return false;
}

/* One node of a condition that shows a device test: a name that says cuda or gpu
 * (torch.cuda.is_available, device_count, args.use_gpu, no_cuda, n_gpu), or a device
 * string ("cuda", "cuda:0", "gpu", "cpu") compared or matched. */
static bool device_word(const char *src, size_t len, TSNode n)
{
	const char *t = ts_node_type(n);
	uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e > len || b >= e)
		return false;
	const char *s = src + b;
	size_t k = e - b;
	if (strcmp(t, "identifier") == 0)
		return has_ci(s, k, "cuda") || has_ci(s, k, "gpu");
	if (strcmp(t, "string_content") == 0)
		return (k >= 4 && strncmp(s, "cuda", 4) == 0) ||
		       (k == 3 && (strncasecmp(s, "gpu", 3) == 0 || strncmp(s, "cpu", 3) == 0));
	return false;
}

/* Whether the expression x tests for a GPU or a device choice. */
static bool device_test(const char *src, size_t len, TSNode x)
{
	if (ts_node_is_null(x))
		return false;
	TSTreeCursor cur = ts_tree_cursor_new(x);
	bool found = false;
	unsigned seen = 0, depth = 0;
	while (!found && seen++ < GUARD_NODES_MAX) {
		found = device_word(src, len, ts_tree_cursor_current_node(&cur));
		if (ts_tree_cursor_goto_first_child(&cur)) {
			depth++;
			continue;
		}
		while (depth > 0 && !ts_tree_cursor_goto_next_sibling(&cur)) {
			ts_tree_cursor_goto_parent(&cur);
			depth--;
		}
		if (depth == 0)
			break;
	}
	ts_tree_cursor_delete(&cur);
	return found;
}

/* Whether any test of the if chain (its condition and each elif's) is a device test. */
static bool if_chain_tests_device(const char *src, size_t len, TSNode ifs)
{
	if (device_test(src, len, ts_node_child_by_field_name(ifs, "condition", 9)))
		return true;
	uint32_t n = ts_node_named_child_count(ifs);
	for (uint32_t i = 0; i < n; i++) {
		TSNode ch = ts_node_named_child(ifs, i);
		if (node_is(ch, "elif_clause") &&
		    device_test(src, len, ts_node_child_by_field_name(ch, "condition", 9)))
			return true;
	}
	return false;
}

/* GradScaler(enabled=torch.cuda.is_available()), autocast(device_type="cuda" if use_gpu
 * else "cpu"). */
static bool enabled_by_test(const char *src, size_t len, TSNode call)
{
	TSNode al = ts_node_child_by_field_name(call, "arguments", 9);
	uint32_t n = ts_node_is_null(al) ? 0 : ts_node_named_child_count(al);
	for (uint32_t i = 0; i < n; i++) {
		TSNode kw = ts_node_named_child(al, i);
		if (!node_is(kw, "keyword_argument"))
			continue;
		TSNode name = ts_node_child_by_field_name(kw, "name", 4);
		uint32_t b = ts_node_start_byte(name), e = ts_node_end_byte(name);
		if (e > len || b >= e)
			continue;
		TSNode v = ts_node_child_by_field_name(kw, "value", 5);
		if (e - b == 7 && memcmp(src + b, "enabled", 7) == 0 && device_test(src, len, v))
			return true;
		/* device="cuda" itself is a use; a choice between devices made by a test is not */
		if (e - b >= 6 && memcmp(src + b, "device", 6) == 0 &&
		    node_is(v, "conditional_expression") &&
		    device_test(src, len, ts_node_named_child(v, 1)))
			return true;
	}
	return false;
}

bool ck_need_gpu_guarded(const char *src, size_t len, TSNode at)
{
	if (node_is(at, "call") && enabled_by_test(src, len, at))
		return true;
	TSNode prev = at;
	for (TSNode p = ts_node_parent(at); !ts_node_is_null(p); prev = p, p = ts_node_parent(p)) {
		if (node_is(p, "if_statement")) {
			/* in a branch, not in the test itself */
			if (!ts_node_eq(prev, ts_node_child_by_field_name(p, "condition", 9)) &&
			    if_chain_tests_device(src, len, p))
				return true;
		} else if (node_is(p, "conditional_expression")) {
			/* a if TEST else b: the test is the second named child */
			TSNode test = ts_node_named_child(p, 1);
			if (!ts_node_eq(prev, test) && device_test(src, len, test))
				return true;
		} else if (node_is(p, "boolean_operator")) {
			/* use_cuda and x.cuda(), not use_cuda or x.cuda(): right reached after left */
			TSNode left = ts_node_child_by_field_name(p, "left", 4);
			if (!ts_node_eq(prev, left) && device_test(src, len, left))
				return true;
		}
	}
	return false;
}

const char *ck_need_flag(const char *kind)
{
	if (strcmp(kind, "network") == 0)
		return "--network host";
	if (strcmp(kind, "gpu") == 0)
		return "--gpus all";
	return "-v SRC:DST:rw";
}

int ck_need_add(ck_raws *out, const ck_need *nd)
{
	if (!out->needs && !(out->needs = json_object_new_array()))
		return -ENOMEM;
	size_t n = json_object_array_length(out->needs);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(out->needs, i), *v;
		/* One need of a kind per line, however many calls on it show it; a certain one
		 * replaces an optional one. */
		if (json_object_object_get_ex(o, "line", &v) &&
		    (unsigned)json_object_get_int64(v) == nd->line &&
		    json_object_object_get_ex(o, "kind", &v) &&
		    strcmp(json_object_get_string(v), nd->kind) == 0) {
			if (!nd->optional)
				json_object_object_add(o, "optional", json_object_new_boolean(false));
			return 0;
		}
	}
	if (n >= CK_NEEDS_MAX)
		return 0;
	json_object *o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	char flag[1200];
	if (nd->path)
		snprintf(flag, sizeof flag, "-v SRC:%s:rw", nd->path);
	else
		snprintf(flag, sizeof flag, "%s", ck_need_flag(nd->kind));
	json_object_object_add(o, "kind", json_object_new_string(nd->kind));
	json_object_object_add(o, "line", json_object_new_int64(nd->line));
	json_object_object_add(o, "text", json_object_new_string_len(nd->text, (int)nd->text_len));
	json_object_object_add(o, "via", nd->via ? json_object_new_string(nd->via) : NULL);
	if (nd->path)
		json_object_object_add(o, "path", json_object_new_string(nd->path));
	json_object_object_add(o, "flag", json_object_new_string(flag));
	json_object_object_add(o, "optional", json_object_new_boolean(nd->optional));
	json_object_array_add(out->needs, o);
	return 0;
}
