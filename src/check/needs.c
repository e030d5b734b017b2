/* check: what the code needs from the sandbox beyond its defaults (the network, a GPU, a
 * writable directory outside the experiment), with the line that shows it and the flag that
 * grants it. A need is not a finding: it never rejects; the rules decide that. */
#include "check_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
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
