/* check: the rule table and the name tables the rules match against. */
#include "check_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E LB_CHECK_ERROR
#define W LB_CHECK_WARNING
#define I LB_CHECK_INFO

/* Severity under standard and strict; permissive reports with standard's severities and
 * rejects nothing. Hard-gate rules are the seed's HARD-GATE (process, subprocess, eval/exec,
 * network) and what the issue adds to it; only the operator may lift them. */
const ck_rule_def ck_rules[R_COUNT] = {
	[R_SYNTAX] = {{"LB001", "syntax", "syntax error"}, E, E, true,
		      "fix the syntax error; the file must compile with the interpreter that runs it"},
	[R_UNPARSED] = {{"LB002", "syntax", "code that cannot be analysed"}, E, E, true,
			"rewrite the construct in plain Python (UTF-8 source, ordinary identifiers)"},
	[R_SUPPRESS] = {{"LB003", "suppression", "inline allow not honored"}, W, W, false,
			"an inline allow needs a rule ID and a reason, and cannot lift a hard-gate rule"},
	[R_PROCESS] = {{"LB101", "security", "process creation or signalling"}, E, E, true,
		       "do not start or signal processes; compute in Python inside the experiment"},
	[R_SUBPROCESS] = {{"LB102", "security", "subprocess"}, E, E, true,
			  "remove subprocess; call the Python library directly instead of a command"},
	[R_DYNCODE] = {{"LB103", "security", "dynamic code (eval, exec, compile)"}, E, E, true,
		       "do not build code at run time; write the code out, or use json/ast.literal_eval for data"},
	[R_DYNIMPORT] = {{"LB104", "security", "dynamic import"}, E, E, true,
			 "use a plain `import module` statement at the top of the file"},
	[R_NETWORK] = {{"LB105", "security", "network access"}, E, E, true,
		       "the experiment has no network; read data from files in the experiment directory"},
	[R_NATIVE] = {{"LB106", "security", "native code (ctypes, cffi)"}, E, E, true,
		      "do not load native code directly; use numpy or another packaged library"},
	[R_PTY] = {{"LB107", "security", "pseudo-terminals (pty)"}, E, E, true,
		   "remove pty; experiments have no terminal"},
	[R_SHUTIL] = {{"LB108", "security", "shutil file operations"}, W, E, false,
		      "write results with open() inside the output directory instead of shutil"},
	[R_SEED_BANNED] = {{"LB109", "security", "module the seed bans (os beyond os.path, shutil)"},
			   CK_OFF, E, false,
			   "under the strict policy use only os.path from os, and no shutil"},
	[R_WRITE] = {{"LB110", "security", "write outside the output paths"}, E, E, true,
		     "write only inside the experiment directory (relative paths) or a configured output path"},
	[R_UNRESOLVED] = {{"LB111", "security", "unresolved access to a sensitive name"}, E, E, true,
			  "use names literally (os.path.join, not getattr(os, name)); labbox must see what is called"},
	[R_UNRESOLVED_WEAK] = {{"LB112", "security", "unresolved attribute of a module"}, W, E, false,
			       "prefer an explicit mapping {name: function} over getattr(module, name)"},
	[R_WRITE_UNKNOWN] = {{"LB113", "security", "write whose destination cannot be checked"},
			     CK_OFF, W, false,
			     "build output paths from the output directory so they can be checked"},
	[R_DESERIALIZE] = {{"LB114", "security", "deserialization that can run code (pickle, marshal, unsafe loaders)"},
			   W, W, false,
			   "load data with json, numpy.load (allow_pickle=False) or torch.load(weights_only=True); the runtime gate refuses a pickle that names anything but plain data classes"},
	[R_DYNCODE_FILE] = {{"LB115", "security", "exec of a file's text"}, W, E, false,
			    "under the runtime gate the text runs only when it is a .py file of the experiment's, which the check reads too; import it as a module where you can"},
	[R_DENIED] = {{"LB120", "security", "denied by configuration"}, E, E, false,
		      "the configuration denies this module or call; remove it"},
	[R_IMPORT] = {{"LB201", "imports", "import not on the allowlist"}, W, W, false,
		      "use allowed modules, or allow the module in labbox.yaml (check: allow: modules:)"},
	[R_SEED_ORDER] = {{"LB301", "determinism", "random operation before its seed"}, W, E, false,
			  "set the seed (np.random.seed(42), random.seed(42), torch.manual_seed(42)) before any random operation"},
	[R_SEED_MISSING] = {{"LB302", "determinism", "random operations without a seed"}, W, E, false,
			    "set a fixed seed at the start of main()"},
	[R_UNSEEDED_GEN] = {{"LB303", "determinism", "generator created without a seed"}, W, E, false,
			    "pass a seed: np.random.default_rng(42), random.Random(42)"},
	[R_TIME_ESTIMATE] = {{"LB401", "harness", "no TIME_ESTIMATE line"}, W, E, false,
			     "print(f\"TIME_ESTIMATE: {seconds:.0f}s\") after a one-condition pilot run"},
	[R_TIME_GUARD] = {{"LB402", "harness", "no time guard"}, W, E, false,
			  "stop and save partial results when time.time() - start > 0.8 * budget"},
	[R_RESULTS_JSON] = {{"LB403", "harness", "results.json not written"}, W, E, false,
			    "json.dump the metrics into results.json in the output directory"},
	[R_METRIC_LINES] = {{"LB404", "harness", "no `name: value` metric lines"}, W, E, false,
			    "print each metric as print(f\"{name}: {value}\")"},
	[R_BUDGET_CONDITIONS] = {{"LB501", "budget", "too many conditions for the budget"}, W, E, false,
				 "reduce plan.conditions or raise the budget (seed's compute budget table)"},
	[R_BUDGET_SEEDS] = {{"LB502", "budget", "too many seeds for the budget"}, W, E, false,
			    "reduce plan.seeds or raise the budget"},
	[R_BUDGET_ITERATIONS] = {{"LB503", "budget", "too many iterations for the budget"}, W, E,
				 false, "reduce plan.iterations or raise the budget"},
};

const lb_check_rule_info *lb_check_rule(size_t i)
{
	return i < R_COUNT ? &ck_rules[i].info : NULL;
}
/* ---- names -------------------------------------------------------------------------------- */

/* Modules that are other spellings of one labbox reasons about. */
static const struct {
	const char *from, *to;
} aliases[] = {
	{"posix", "os"},        {"nt", "os"},           {"__builtin__", "builtins"},
	{"__builtins__", "builtins"}, {"posixpath", "os.path"}, {"ntpath", "os.path"},
	{"genericpath", "os.path"}, {"_io", "io"},       {"_socket", "socket"},
	{"_ctypes", "ctypes"},  {"_posixsubprocess", "subprocess"}, {"_thread", "_thread"},
	{"io.open", "builtins.open"}, {"importlib.__import__", "builtins.__import__"},
	{"os.path.os", "os"},   {"_frozen_importlib.__import__", "builtins.__import__"},
	{"_pickle", "pickle"},  {"cPickle", "pickle"},   {"six.moves.cPickle", "pickle"},
	/* six.moves: the names six gives the standard library's modules */
	{"six.moves.builtins", "builtins"}, {"six.moves.urllib.request", "urllib.request"},
	{"six.moves.urllib", "urllib"}, {"six.moves.http_client", "http.client"},
	{"six.moves.BaseHTTPServer", "http.server"}, {"six.moves.SimpleHTTPServer", "http.server"},
	{"six.moves.CGIHTTPServer", "http.server"}, {"six.moves.socketserver", "socketserver"},
	{"six.moves.xmlrpc_client", "xmlrpc.client"}, {"six.moves.urllib_request", "urllib.request"},
	{"six.moves.reload_module", "importlib.reload"}, {"six.moves._thread", "_thread"},
	{"six.moves.input", "builtins.input"}, {"six.moves.getoutput", "subprocess.getoutput"},
	{"six.moves.shlex_quote", "shlex.quote"}, {"six.moves.configparser", "configparser"},
	{"six.moves.copyreg", "copyreg"}, {"six.moves.queue", "queue"},
	{"six.exec_", "builtins.exec"},
};

/* a then b into out, cut at outlen - 1 bytes as snprintf(out, outlen, "%s%s", a, b) would
 * (this runs for every name the analysis meets, and snprintf was a tenth of its time) */
static void cat2(char *out, size_t outlen, const char *a, const char *b)
{
	if (!outlen)
		return;
	size_t o = 0;
	for (const char *p = a; *p && o + 1 < outlen; p++)
		out[o++] = *p;
	for (const char *p = b; *p && o + 1 < outlen; p++)
		out[o++] = *p;
	out[o] = '\0';
}

void ck_canonical(const char *qual, char *out, size_t outlen)
{
	cat2(out, outlen, qual, "");
	/* Rewrite the longest matching prefix, repeatedly (io.open after _io -> io). */
	for (int round = 0; round < 4; round++) {
		bool changed = false;
		for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
			const char *from = aliases[i].from;
			if (out[0] != from[0])
				continue; /* the common case, without a strlen and a strncmp */
			size_t k = strlen(from);
			if (strncmp(out, from, k) == 0 && (out[k] == '\0' || out[k] == '.') &&
			    strcmp(from, aliases[i].to) != 0) {
				char tmp[512];
				cat2(tmp, sizeof tmp, aliases[i].to, out + k);
				cat2(out, outlen, tmp, "");
				changed = true;
			}
		}
		if (!changed)
			break;
	}
}

typedef struct pat {
	const char *pat; /* "mod" (module and below, when module), "a.b" exact, "a.b*" prefix */
	ck_rule rule;
	bool module; /* the whole module is banned: also matches at import statements */
} pat;

static const pat security_pats[] = {
	{"os.system", R_PROCESS, false},
	{"os.popen", R_PROCESS, false},
	{"os.exec*", R_PROCESS, false},
	{"os.spawn*", R_PROCESS, false},
	{"os.posix_spawn*", R_PROCESS, false},
	{"os.fork", R_PROCESS, false},
	{"os.forkpty", R_PROCESS, false},
	{"os.kill", R_PROCESS, false},
	{"os.killpg", R_PROCESS, false},
	{"os.startfile", R_PROCESS, false},
	{"os.pidfd_send_signal", R_PROCESS, false},
	{"os.plock", R_PROCESS, false},
	{"signal.pthread_kill", R_PROCESS, false},
	{"multiprocessing.util.spawnv_passfds", R_PROCESS, false},
	{"platform.popen", R_PROCESS, false},
	{"subprocess", R_SUBPROCESS, true},
	{"asyncio.subprocess", R_SUBPROCESS, true},
	{"asyncio.create_subprocess_*", R_SUBPROCESS, false},
	{"commands", R_SUBPROCESS, true},
	{"popen2", R_SUBPROCESS, true},
	{"sh", R_SUBPROCESS, true},
	{"pexpect", R_SUBPROCESS, true},
	{"builtins.eval", R_DYNCODE, false},
	{"builtins.exec", R_DYNCODE, false},
	{"builtins.compile", R_DYNCODE, false},
	{"builtins.execfile", R_DYNCODE, false},
	{"runpy", R_DYNCODE, true},
	{"code", R_DYNCODE, true},
	{"codeop", R_DYNCODE, true},
	/* a subinterpreter runs a string of source with no frame above it */
	{"_xxsubinterpreters", R_DYNCODE, true},
	{"_xxinterpchannels", R_DYNCODE, true},
	{"_interpreters", R_DYNCODE, true},
	{"_interpchannels", R_DYNCODE, true},
	{"_interpqueues", R_DYNCODE, true},
	{"interpreters", R_DYNCODE, true},
	{"concurrent.interpreters", R_DYNCODE, true},
	{"test.support.interpreters", R_DYNCODE, true},
	{"builtins.__import__", R_DYNIMPORT, false},
	{"importlib.import_module", R_DYNIMPORT, false}, /* passed on as a value: its caller is not seen */
	{"imp", R_DYNIMPORT, true},
	{"zipimport", R_DYNIMPORT, true},
	{"_imp", R_DYNIMPORT, true}, /* create_builtin makes a second, unguarded copy of a module */
	{"importlib.util.spec_from_file_location", R_DYNIMPORT, false},
	/* .pth files: their `import` lines run as code */
	{"site.addsitedir", R_DYNIMPORT, false},
	{"site.addpackage", R_DYNIMPORT, false},
	{"importlib.util.spec_from_loader", R_DYNIMPORT, false},
	{"importlib.util.module_from_spec", R_DYNIMPORT, false},
	{"importlib.machinery", R_DYNIMPORT, true},
	{"importlib.abc", R_DYNIMPORT, true},
	/* socket's members: socket_member(); the module object itself passed on is all of them */
	{"socket", R_NETWORK, false},
	{"socketserver", R_NETWORK, true},
	{"ssl.wrap_socket", R_NETWORK, false},
	{"urllib.request", R_NETWORK, true},
	{"urllib.urlopen", R_NETWORK, false},
	{"urllib.urlretrieve", R_NETWORK, false},
	{"urllib2", R_NETWORK, true},
	{"http.client", R_NETWORK, true},
	{"http.server", R_NETWORK, true},
	{"httplib", R_NETWORK, true},
	{"ftplib", R_NETWORK, true},
	{"smtplib", R_NETWORK, true},
	{"telnetlib", R_NETWORK, true},
	{"poplib", R_NETWORK, true},
	{"imaplib", R_NETWORK, true},
	{"nntplib", R_NETWORK, true},
	{"xmlrpc", R_NETWORK, true},
	{"requests", R_NETWORK, true},
	{"httpx", R_NETWORK, true},
	{"aiohttp", R_NETWORK, true},
	{"urllib3", R_NETWORK, true},
	{"pycurl", R_NETWORK, true},
	{"websocket", R_NETWORK, true},
	{"websockets", R_NETWORK, true},
	{"paramiko", R_NETWORK, true},
	{"webbrowser", R_NETWORK, true},
	{"wget", R_NETWORK, true},
	{"asyncio.open_connection", R_NETWORK, false},
	{"asyncio.start_server", R_NETWORK, false},
	{"asyncio.open_unix_connection", R_NETWORK, false},
	{"asyncio.start_unix_server", R_NETWORK, false},
	{"ctypes", R_NATIVE, true},
	{"cffi", R_NATIVE, true},
	{"numpy.ctypeslib", R_NATIVE, true},
	{"torch.utils.cpp_extension", R_NATIVE, true},
	{"logging.config.listen", R_NETWORK, false},
	{"twisted.internet.reactor.listen*", R_NETWORK, false},
	{"twisted.internet.reactor.connect*", R_NETWORK, false},
	{"twisted.internet.endpoints", R_NETWORK, true},
	{"twisted.web.server", R_NETWORK, true},
	{"twisted.web.client", R_NETWORK, true},
	{"twisted.internet.reactor.spawnProcess", R_PROCESS, false},
	{"twisted.internet.utils.getProcess*", R_PROCESS, false},
	{"gc.get_objects", R_UNRESOLVED, false},
	{"gc.get_referrers", R_UNRESOLVED, false},
	{"gc.get_referents", R_UNRESOLVED, false},
	{"os.openpty", R_PTY, false},
	{"pty", R_PTY, true},
	{"shutil.rmtree", R_SHUTIL, false},
	{"shutil.move", R_SHUTIL, false},
	{"shutil.copy*", R_SHUTIL, false},
	{"shutil.chown", R_SHUTIL, false},
	{"shutil.make_archive", R_SHUTIL, false},
	{"shutil.unpack_archive", R_SHUTIL, false},
};

static bool pat_match(const pat *p, const char *q, bool module_only)
{
	if (module_only && !p->module)
		return false;
	if (q[0] != p->pat[0])
		return false; /* every pattern has a first character before any '*' */
	size_t k = strlen(p->pat);
	if (p->pat[k - 1] == '*')
		return strncmp(q, p->pat, k - 1) == 0;
	if (strncmp(q, p->pat, k) != 0)
		return false;
	if (q[k] == '\0')
		return true;
	return p->module && q[k] == '.';
}

/* What of socket reaches no network: the host's own name, the exception classes handlers
 * catch (socket.timeout is TimeoutError, socket.error OSError), the address family and type
 * constants and has_ipv6, as DDP and logging code reads them. Any other member (socket,
 * create_connection, socketpair, fromfd, the DNS lookups getaddrinfo, gethostbyname(_ex),
 * gethostbyaddr, getfqdn, getnameinfo, if_nameindex, and whatever a later Python adds) is
 * network access: a list of what passes, so a new member is never passed unseen. */
static bool socket_harmless(const char *m)
{
	static const char *const names[] = {"gethostname", "timeout", "error", "herror",
					    "gaierror", "has_ipv6"};
	/* the name itself, no attribute of it (socket.AF_INET, not socket.gethostname.__self__) */
	if (strchr(m, '.'))
		return false;
	if (strncmp(m, "AF_", 3) == 0 || strncmp(m, "SOCK_", 5) == 0)
		return true;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(m, names[i]) == 0)
			return true;
	return false;
}

ck_rule ck_classify(const char *qual, bool module_only, lb_check_policy policy)
{
	char q[512];
	ck_canonical(qual, q, sizeof q);
	for (size_t i = 0; i < sizeof security_pats / sizeof security_pats[0]; i++)
		if (pat_match(&security_pats[i], q, module_only))
			return security_pats[i].rule;
	/* `import socket` is no finding; a member of it used is, unless it is harmless */
	if (!module_only && strncmp(q, "socket.", 7) == 0 && !socket_harmless(q + 7))
		return R_NETWORK;
	if (policy == LB_CHECK_STRICT) {
		/* The seed's list: `import os` beyond os.path, and shutil at all. */
		if (strncmp(q, "shutil", 6) == 0 && (q[6] == '\0' || q[6] == '.'))
			return R_SEED_BANNED;
		if (!module_only && strncmp(q, "os.", 3) == 0 && strcmp(q, "os.path") != 0 &&
		    strncmp(q, "os.path.", 8) != 0)
			return R_SEED_BANNED;
	}
	return R_COUNT;
}

static const char *const sensitive[] = {
	"os",      "sys",      "builtins", "importlib", "subprocess", "socket", "ctypes",
	"pty",     "shutil",   "io",       "runpy",     "code",       "imp",    "asyncio",
	"pathlib", "operator", "types",    "inspect",   "gc",         "codecs", "multiprocessing",
	"signal",  "platform", "cffi",     "urllib",    "http",       "requests", "posix", "nt",
	"__builtins__",
};

bool ck_sensitive_module(const char *qual)
{
	char q[512];
	ck_canonical(qual, q, sizeof q);
	for (size_t i = 0; i < sizeof sensitive / sizeof sensitive[0]; i++)
		if (q[0] == sensitive[i][0] && strcmp(q, sensitive[i]) == 0)
			return true;
	return strcmp(q, "sys.modules") == 0 || strcmp(q, "importlib.util") == 0 ||
	       ck_classify(q, true, LB_CHECK_STANDARD) != R_COUNT;
}

/* Research libraries' calls that hand the caller's strings to a code sink of the standard
 * library, which compiles them in the library's frame. The runtime gate refuses that compile
 * (decisions.md, "The Timer route"); reading them as the sink keeps the check from accepting
 * what the run would be refused for. Only wrappers whose route into the sink is fixed: a
 * library that parses its strings itself is not one. */
static const struct {
	const char *name, *sink, *what;
} wrapped_sinks[] = {
	{"torch.utils.benchmark.Timer", "timeit.Timer", "its stmt and setup strings"},
	{"torch.utils.benchmark.utils.timer.Timer", "timeit.Timer", "its stmt and setup strings"},
};

const char *ck_wrapped_sink(const char *q, const char **what)
{
	for (size_t i = 0; i < sizeof wrapped_sinks / sizeof wrapped_sinks[0]; i++)
		if (q[0] == wrapped_sinks[i].name[0] && strcmp(q, wrapped_sinks[i].name) == 0) {
			if (what)
				*what = wrapped_sinks[i].what;
			return wrapped_sinks[i].sink;
		}
	return NULL;
}

/* The seed's allowlist, word for word. */
static const char *const seed_allowed[] = {
	"numpy", "math", "random", "statistics", "json", "time", "collections", "itertools",
	"functools", "typing", "dataclasses",
};

/* What ordinary research code imports (standard adds these to the seed's list). */
static const char *const research_allowed[] = {
	"__future__", "abc", "argparse", "array", "ast", "bisect", "calendar", "contextlib", "copy",
	"csv", "datetime", "decimal", "enum", "fractions", "glob", "gzip", "hashlib", "heapq",
	"logging", "operator", "os", "pathlib", "pickle", "pprint", "re", "string", "struct", "sys",
	"tempfile", "textwrap", "traceback", "uuid", "warnings", "zlib", "bz2", "lzma", "zipfile",
	"tarfile", "io", "numbers", "queue", "threading", "concurrent", "multiprocessing", "timeit",
	"platform", "types", "inspect", "weakref", "shlex", "base64", "binascii", "unittest",
	"asyncio", "urllib", "shutil", "signal",
	"scipy", "pandas", "torch", "torchvision", "torchaudio", "sklearn", "matplotlib",
	"seaborn", "jax", "jaxlib", "flax", "optax", "tensorflow", "keras", "transformers",
	"datasets", "tokenizers", "einops", "tqdm", "wandb", "yaml", "h5py", "PIL", "cv2", "numba",
	"sympy", "networkx", "statsmodels", "xgboost", "lightgbm", "tiktoken", "accelerate",
	"lightning", "pytorch_lightning", "timm", "gym", "gymnasium", "omegaconf", "hydra",
};

bool ck_import_allowed(const char *top, lb_check_policy policy)
{
	for (size_t i = 0; i < sizeof seed_allowed / sizeof seed_allowed[0]; i++)
		if (top[0] == seed_allowed[i][0] && strcmp(top, seed_allowed[i]) == 0)
			return true;
	if (policy == LB_CHECK_STRICT)
		return false;
	for (size_t i = 0; i < sizeof research_allowed / sizeof research_allowed[0]; i++)
		if (top[0] == research_allowed[i][0] && strcmp(top, research_allowed[i]) == 0)
			return true;
	return false;
}

/* ---- determinism -------------------------------------------------------------------------- */

static const struct {
	const char *pat, *lib;
} seeds[] = {
	{"random.seed", "random"},
	{"numpy.random.seed", "numpy"},
	{"torch.manual_seed", "torch"},
	{"torch.cuda.manual_seed", "torch"},
	{"torch.cuda.manual_seed_all", "torch"},
	{"torch.random.manual_seed", "torch"},
	{"tensorflow.random.set_seed", "tensorflow"},
	{"tensorflow.set_random_seed", "tensorflow"},
	{"tensorflow.keras.utils.set_random_seed", "*"},
	{"keras.utils.set_random_seed", "*"},
	{"transformers.set_seed", "*"},
	{"accelerate.utils.set_seed", "*"},
	{"lightning.seed_everything", "*"},
	{"lightning.pytorch.seed_everything", "*"},
	{"pytorch_lightning.seed_everything", "*"},
};

const char *ck_seed_lib(const char *qual)
{
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		if (qual[0] == seeds[i].pat[0] && strcmp(qual, seeds[i].pat) == 0)
			return seeds[i].lib;
	return NULL;
}

static const char *const random_stdlib[] = {
	"random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
	"gauss", "normalvariate", "lognormvariate", "expovariate", "betavariate", "gammavariate",
	"triangular", "vonmisesvariate", "paretovariate", "weibullvariate", "getrandbits",
	"randbytes", "binomialvariate",
};
static const char *const random_numpy[] = {
	"rand", "randn", "randint", "random", "random_sample", "ranf", "sample", "choice",
	"shuffle", "permutation", "normal", "uniform", "binomial", "poisson", "exponential",
	"beta", "gamma", "standard_normal", "multivariate_normal", "dirichlet", "laplace",
	"logistic", "lognormal", "multinomial", "geometric", "bytes", "random_integers",
	"standard_cauchy", "standard_exponential", "standard_gamma", "standard_t", "triangular",
	"vonmises", "wald", "weibull", "zipf", "chisquare", "f", "gumbel", "hypergeometric",
	"pareto", "power", "rayleigh",
};
static const char *const random_torch[] = {
	"torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.rand_like",
	"torch.randn_like", "torch.randint_like", "torch.normal", "torch.bernoulli",
	"torch.multinomial", "torch.poisson", "torch.nn.init.*", "torch.nn.Linear",
	"torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d", "torch.nn.LSTM", "torch.nn.GRU",
	"torch.nn.RNN", "torch.nn.Embedding", "torch.nn.MultiheadAttention",
	"torch.nn.TransformerEncoderLayer", "torch.nn.TransformerDecoderLayer",
	"torch.nn.Transformer", "torch.nn.Bilinear", "torch.utils.data.random_split",
	"torch.nn.functional.dropout",
};

static bool in_list(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[0] != v[i][0])
			continue; /* no entry is a bare "*" */
		size_t k = strlen(v[i]);
		if (v[i][k - 1] == '*' ? strncmp(s, v[i], k - 1) == 0 : strcmp(s, v[i]) == 0)
			return true;
	}
	return false;
}

const char *ck_random_lib(const char *q)
{
	if (strncmp(q, "random.", 7) == 0 &&
	    in_list(q + 7, random_stdlib, sizeof random_stdlib / sizeof random_stdlib[0]))
		return "random";
	if (strncmp(q, "numpy.random.", 13) == 0 &&
	    in_list(q + 13, random_numpy, sizeof random_numpy / sizeof random_numpy[0]))
		return "numpy";
	if (in_list(q, random_torch, sizeof random_torch / sizeof random_torch[0]))
		return "torch";
	if (strncmp(q, "tensorflow.random.", 18) == 0 && strcmp(q, "tensorflow.random.set_seed") != 0)
		return "tensorflow";
	return NULL;
}

bool ck_generator_ctor(const char *q)
{
	return strcmp(q, "numpy.random.default_rng") == 0 ||
	       strcmp(q, "numpy.random.RandomState") == 0 || strcmp(q, "random.Random") == 0;
}

/* ---- raw findings and the budget table ----------------------------------------------------- */

int ck_raw_add(ck_raws *r, ck_rule rule, unsigned line, unsigned col, const char *name,
	       const char *fmt, ...)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 16;
		ck_raw *nv = realloc(r->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		r->v = nv;
		r->cap = nc;
	}
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ck_raw *x = &r->v[r->n];
	x->rule = rule;
	x->line = line;
	x->col = col;
	x->message = strdup(msg);
	x->name = name ? strdup(name) : NULL;
	x->gate_judges = false;
	if (!x->message || (name && !x->name)) {
		free(x->message);
		free(x->name);
		return -ENOMEM;
	}
	r->n++;
	return 0;
}

void ck_raws_free(ck_raws *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].message);
		free(r->v[i].name);
	}
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
	json_object_put(r->seeds);
	r->seeds = NULL;
	json_object_put(r->needs);
	r->needs = NULL;
	json_object_put(r->imports);
	r->imports = NULL;
}

/* The seed's compute budget table: upper bound of each band and its maxima (0: no limit), with
 * the row as the seed writes it, which a refusal quotes. */
static const lb_check_budget_row budget_table[] = {
	{120, 2, 2, 1000, "< 120s", "| < 120s | 1-2 | 1-2 | \u2264 1,000 |"},
	{300, 5, 5, 5000, "120-300s", "| 120-300s | 2-5 | 3-5 | \u2264 5,000 |"},
	{900, 10, 10, 20000, "300-900s", "| 300-900s | 5-10 | 5-10 | \u2264 20,000 |"},
	{1e300, 50, 20, 0, "> 900s", "| > 900s | 10-50 | 10-20 | No limit (but guard at 80%) |"},
};

const lb_check_budget_row *lb_check_budget_row_for(double budget)
{
	size_t b = 0;
	while (b + 1 < sizeof budget_table / sizeof budget_table[0] &&
	       budget >= budget_table[b].below)
		b++;
	return &budget_table[b];
}

int ck_budget(const lb_check_config *cfg, ck_raws *out)
{
	if (cfg->budget <= 0)
		return 0;
	size_t b = (size_t)(lb_check_budget_row_for(cfg->budget) - budget_table);
	unsigned line = cfg->plan_line ? cfg->plan_line : 1;
	int r = 0;
	if (cfg->plan_conditions > budget_table[b].conditions)
		r = ck_raw_add(out, R_BUDGET_CONDITIONS, line, 1, NULL,
			       "plan has %ld conditions; a %gs budget (%s) allows at most %ld",
			       cfg->plan_conditions, cfg->budget, budget_table[b].band,
			       budget_table[b].conditions);
	if (r == 0 && cfg->plan_seeds > budget_table[b].seeds)
		r = ck_raw_add(out, R_BUDGET_SEEDS, line, 1, NULL,
			       "plan has %ld seeds; a %gs budget (%s) allows at most %ld",
			       cfg->plan_seeds, cfg->budget, budget_table[b].band,
			       budget_table[b].seeds);
	if (r == 0 && budget_table[b].iterations &&
	    cfg->plan_iterations > budget_table[b].iterations)
		r = ck_raw_add(out, R_BUDGET_ITERATIONS, line, 1, NULL,
			       "plan has %ld iterations per condition; a %gs budget (%s) allows at most %ld",
			       cfg->plan_iterations, cfg->budget, budget_table[b].band,
			       budget_table[b].iterations);
	return r;
}
