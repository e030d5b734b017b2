/* The class a message or an exception line names: the words of each cause outside the code
 * (GPU, memory, network, sandbox, environment, data), the suggestion that goes with each,
 * and the verdict's setters. Text alone decides here; refine.c reads the traceback and the
 * files. */
#include "failure_internal.h"
#include "labbox/sandbox.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

const char *dg_pip_name(const char *module)
{
	static const char *const map[][2] = {
		{ "sklearn", "scikit-learn" },	 { "cv2", "opencv-python" },
		{ "PIL", "Pillow" },		 { "yaml", "PyYAML" },
		{ "skimage", "scikit-image" },	 { "bs4", "beautifulsoup4" },
		{ "attr", "attrs" },		 { "dateutil", "python-dateutil" },
		{ "Crypto", "pycryptodome" },	 { "dotenv", "python-dotenv" },
		{ "jwt", "PyJWT" },		 { "serial", "pyserial" },
		{ "google.protobuf", "protobuf" }, { "tensorflow_datasets", "tensorflow-datasets" },
		/* the project that installs the module, not one of the module's name (one
		 * word each: the escalation's environment is the word after "pip install") */
		{ "umap", "umap-learn" },	 { "fitz", "PyMuPDF" },
		{ "Bio", "biopython" },		 { "community", "python-louvain" },
		{ "mpl_toolkits", "matplotlib" }, { "git", "GitPython" },
		{ "docx", "python-docx" },	 { "pptx", "python-pptx" },
		{ "magic", "python-magic" },	 { "zmq", "pyzmq" },
		{ "OpenGL", "PyOpenGL" },	 { "skopt", "scikit-optimize" },
		{ "absl", "absl-py" },		 { "haiku", "dm-haiku" },
		{ "tree", "dm-tree" },		 { "hydra", "hydra-core" },
		{ "pkg_resources", "setuptools" }, { "faiss", "faiss-cpu" },
		{ "MySQLdb", "mysqlclient" },	 { "googleapiclient", "google-api-python-client" },
		{ "OpenSSL", "pyOpenSSL" },	 { "jose", "python-jose" },
		{ "wx", "wxPython" },		 { "usb", "pyusb" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(module, map[i][0]) == 0)
			return map[i][1];
	return module;
}

void dg_verdict_set(lb_verdict *v, const char *cls, const char *what, const char *line,
		    const char *suggestion)
{
	v->cls = cls;
	v->handled[0] = '\0'; /* it was said of the verdict being replaced */
	if (line)
		snprintf(v->summary, sizeof(v->summary), "%s: %s", what, line);
	else
		snprintf(v->summary, sizeof(v->summary), "%s", what);
	snprintf(v->suggestion, sizeof(v->suggestion), "%s", suggestion);
}

static const char *const gpu_oom_text[] = {
	"CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
	"CUDNN_STATUS_ALLOC_FAILED", "HIP out of memory", "MPS backend out of memory",
	"RESOURCE_EXHAUSTED", "OOM when allocating", "out of memory on device", NULL
};
/* CUDA errors that are bugs in the code, not a missing GPU. */
static const char *const gpu_code_text[] = {
	"device-side assert", "illegal memory access", "misaligned address",
	"illegal instruction was encountered", NULL
};
/* A build of the library without CUDA: the environment's, whatever GPUs the host has. */
static const char *const cpu_build_text[] = {
	"not compiled with CUDA", "compiled without CUDA", "not compiled with GPU support",
	"built without CUDA", NULL
};
static const char *const gpu_unavailable_text[] = {
	"No CUDA GPUs are available", "no CUDA-capable device",
	"Found no NVIDIA driver", "NVIDIA driver on your system is too old",
	"CUDA driver version is insufficient", "torch.cuda.is_available() is False",
	"CUDA driver initialization failed", "cuInit", "CUDA unknown error",
	"Unknown backend: 'gpu'", "Unknown backend: gpu", "invalid device ordinal",
	"CUDA-capable device(s) is/are busy", "all CUDA-capable devices are busy", "nvidia-smi",
	"NVML", "libcuda.so", "libcudart", "libcudnn", "libnvrtc", "libcublas",
	"no kernel image is available", "CUDA is not available", "CUDA error",
	"CUDNN_STATUS_NOT_INITIALIZED", "CUDA initialization", "cuda is unavailable",
	"CUDA unavailable", "CUDA not available", NULL
};
/* A DataLoader's workers hand batches over through /dev/shm; when it fills up a worker dies
 * of SIGBUS or a write there fails. */
static const char *const shm_text[] = {
	"killed by signal: Bus error", "out of shared memory", "insufficient shared memory",
	"shared memory limit", "unable to write to file </torch_", "/dev/shm",
	"Unexpected bus error encountered in worker", NULL
};
/* Hugging Face datasets: the dataset is neither in the experiment nor in a cache. */
static const char *const dataset_names[] = { "DatasetNotFoundError", "DataFilesNotFoundError",
					     "EmptyDatasetError", NULL };
static const char *const dataset_text[] = {
	"Couldn't find a dataset script", "doesn't exist on the Hub", "Couldn't find any data file",
	"DatasetNotFoundError", "Unable to find any data files", NULL
};
/* Words of a connection failure, as opposed to a name that merely mentions the Hub. */
static const char *const connection_text[] = {
	"ConnectionError", "Couldn't reach", "offline mode", "OfflineModeIsEnabled",
	"LocalEntryNotFoundError", "Temporary failure in name resolution",
	"Name or service not known", "Network is unreachable", "No route to host",
	"Connection refused", "Max retries exceeded", "Failed to establish a new connection",
	"Operation not permitted", NULL
};
static const char *const nan_text[] = {
	"non-finite", "nonfinite", "diverged", "divergence", "contains infinity",
	"infinity or a value too large", "returned nan values", NULL
};
static const char *const network_names[] = {
	"gaierror", "herror", "ConnectionError", "ConnectionRefusedError", "ConnectionResetError",
	"ConnectionAbortedError", "NewConnectionError", "MaxRetryError", "URLError", "HTTPError",
	"ConnectTimeout", "ConnectTimeoutError", "ReadTimeout", "ReadTimeoutError", "SSLError",
	"ProxyError", "RemoteDisconnected", "LocalEntryNotFoundError", "OfflineModeIsEnabled",
	"NameResolutionError", "ContentTooShortError", NULL
};
static const char *const network_text[] = {
	"Temporary failure in name resolution", "Name or service not known",
	"nodename nor servname", "Network is unreachable", "No route to host",
	"Connection refused", "Max retries exceeded", "urlopen error", "getaddrinfo",
	"Could not resolve host", "couldn't connect to", "Couldn't reach", "could not connect to",
	"Failed to establish a new connection", "huggingface.co", "Hugging Face Hub",
	"offline mode", NULL
};
static const char *const no_space_text[] = { "No space left on device", "Disk quota exceeded",
					     "File too large",
					     NULL };
/* A process or thread the kernel would not make: the cgroup's pids limit or RLIMIT_NPROC,
 * which --pids-limit sets. Open files are not among them: EMFILE and ENFILE are read apart. */
static const char *const limit_text[] = { "can't start new thread",
					  "Resource temporarily unavailable", NULL };
static const char *const sandbox_text[] = { "Read-only file system", "Operation not permitted",
					    "Permission denied", "Bad system call", NULL };
static const char *const wrong_env_text[] = {
	"cannot import name", "undefined symbol", "GLIBC", "compiled using NumPy",
	"numpy.core.multiarray failed to import", "_ARRAY_API", "version `",
	"cannot open shared object file", "wrong ELF class", "incompatible architecture",
	"Numpy is not available", "requires Python", "unsupported operand type(s) for |: 'type'",
	"'type' object is not subscriptable", "command not found", NULL
};
/* API removed between versions: numpy.float, time.clock, collections.Mapping... */
static const char *const moved_api_text[] = {
	"module 'numpy' has no attribute", "module 'np' has no attribute",
	"module 'torch' has no attribute", "module 'tensorflow' has no attribute",
	"module 'jax' has no attribute", "module 'scipy' has no attribute",
	"module 'pandas' has no attribute", "module 'sklearn' has no attribute",
	"module 'collections' has no attribute", "module 'time' has no attribute",
	"module 'typing' has no attribute", "module 'inspect' has no attribute",
	"was removed in the NumPy 2.0 release", NULL
};

static const char SUGGEST_GPU_OOM[] =
	"reduce the batch size or the model size, use mixed precision (torch.autocast) or "
	"gradient accumulation, and release tensors that are no longer needed";
static const char SUGGEST_GPU_UNAVAILABLE[] =
	"give the run a GPU with --gpus all or --gpus 0,1 (`labbox probe` lists the host's "
	"NVIDIA GPUs), or make the code fall back to the CPU when torch.cuda.is_available() is "
	"False";
static const char SUGGEST_OCTAVE_GNUPLOT[] =
	"install gnuplot where the experiment runs (Debian: apt install gnuplot-nox), which "
	"octave-cli draws figures and prints them to files with; or save the data the figure "
	"shows (save, csvwrite) and plot it elsewhere";

static const char SUGGEST_TORCH_CPU_BUILD[] =
	"run it with an interpreter whose torch is a CUDA build (pip install torch in a virtual "
	"environment on Linux gives one; labbox installs nothing itself), with --python "
	"VENV/bin/python and --gpus all on a host with an NVIDIA GPU, or run it on the CPU "
	"(device \"cpu\", or fall back when torch.cuda.is_available() is False): --gpus alone "
	"cannot help a torch without CUDA";
static const char SUGGEST_CPU_BUILD[] =
	"install a build of the library with CUDA (GPU support) into a virtual environment and "
	"run with --python VENV/bin/python (and --gpus all on a host with an NVIDIA GPU), or run "
	"it on the CPU: --gpus alone cannot help a build without CUDA";
const char DG_SUGGEST_OOM[] =
	"raise the memory limit (--memory), or hold less in memory: smaller batches, float32 "
	"instead of float64, streaming the data instead of loading it whole";

static const char SUGGEST_NAN[] =
	"lower the learning rate, clip gradients, and check inputs and the loss for NaN, log(0) "
	"or division by zero; np.seterr(all='raise') or torch.autograd.set_detect_anomaly(True) "
	"stops at the first NaN";
static const char SUGGEST_NETWORK[] =
	"the sandbox has no network by default (--network none): download datasets and models "
	"into the experiment directory beforehand, or allow the network explicitly with "
	"--network host";
static const char SUGGEST_SANDBOX[] =
	"write only inside the experiment directory or /tmp (the rest of the file system is "
	"read-only and the home directory is hidden), and avoid privileged operations; mount "
	"what the code needs with -v SRC:DST[:ro], or give it a scratch directory with "
	"--tmpfs PATH";

static const char SUGGEST_GATE[] =
	"the runtime gate refuses what the static check's hard gate refuses (the rule named, "
	"docs/check.md): remove the call, or do it in the experiment's own Python; result.json's "
	"runtime_gate lists the event with the line that made it. --runtime-gate off runs "
	"without the gate (the sandbox still holds)";
static const char SUGGEST_GATE_UNRECORDED[] =
	"fix the error shown in the traceback (run.log has all of it): result.json's runtime_gate "
	"lists every refusal of this run's gate, and this one is not among them";

/* "... refused EVENT: RULE title (policy P)" -> EVENT and RULE; false when the line is not
 * one. RULE is "" for the gate's refusals that name none ("events nested in..."). */
bool dg_gate_refusal_of(const char *line, char *ev, size_t evlen, char *rule, size_t rulelen)
{
	const char *g = strstr(line, GATE_MARK);
	size_t n;

	if (!g)
		return false;
	g += strlen(GATE_MARK);
	n = strcspn(g, ": ");
	if (n == 0 || n >= evlen || g[n] != ':')
		return false;
	memcpy(ev, g, n);
	ev[n] = '\0';
	g += n + 1;
	while (*g == ' ')
		g++;
	n = strspn(g, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.");
	rule[0] = '\0';
	/* only a rule id (LB102, gate.pickle) is one: other refusals go on in words */
	if (n < rulelen && (strncmp(g, "LB", 2) == 0 || strncmp(g, "gate.", 5) == 0)) {
		memcpy(rule, g, n);
		rule[n] = '\0';
	}
	return true;
}

/* Whether the gate's own record (result.json's runtime_gate) holds the refusal a line names:
 * an event of that name, refused, under that rule. The output alone proves nothing: the code
 * can print or raise the gate's words itself, and under --runtime-gate record the gate
 * refuses nothing. */
bool dg_gate_recorded(struct json_object *gate, const char *line)
{
	struct json_object *events, *v;
	char ev[80], rule[32];

	if (!gate || !dg_gate_refusal_of(line, ev, sizeof(ev), rule, sizeof(rule)) ||
	    !json_object_object_get_ex(gate, "events", &events) ||
	    !json_object_is_type(events, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		struct json_object *e = json_object_array_get_idx(events, i);

		if (!json_object_object_get_ex(e, "refused", &v) || !json_object_get_boolean(v) ||
		    !json_object_object_get_ex(e, "event", &v) ||
		    strcmp(json_object_get_string(v) ? json_object_get_string(v) : "", ev) != 0)
			continue;
		if (!rule[0] || (json_object_object_get_ex(e, "rule", &v) &&
				 strcmp(json_object_get_string(v) ? json_object_get_string(v) : "",
					rule) == 0))
			return true;
	}
	return false;
}

const char DG_SUGGEST_NO_SPACE[] =
	"write less, or give the sandbox more room: a larger private /tmp "
	"(--tmpfs /tmp:size=4g), a larger /dev/shm (--shm-size 4g), a larger --disk-limit for "
	"exp/, or a mounted output directory (-v SRC:DST:rw)";

static const char SUGGEST_SHM[] =
	"/dev/shm filled up (DataLoader workers pass every batch through it): give the sandbox a "
	"larger one with --shm-size SIZE (the default is 1g; e.g. --shm-size 8g, and a --memory "
	"that leaves room for it, since /dev/shm is memory), or use fewer DataLoader workers "
	"(num_workers) or smaller batches";
static const char SUGGEST_DATASET[] =
	"the dataset is not in the sandbox and cannot be downloaded there (no network unless "
	"--network host): download it beforehand (datasets' save_to_disk, or the Hub cache) into "
	"the experiment directory or a directory mounted with -v SRC:DST:ro, and load it from "
	"that path; check the dataset's name too";
static const char SUGGEST_LIMIT[] =
	"a process or thread limit was reached (without --pids-limit a run may have 4096 processes "
	"and threads, more on machines of many CPUs; result.json's isolation.pids_limit has the "
	"run's): raise "
	"--pids-limit, or use fewer worker threads and "
	"processes (-e OMP_NUM_THREADS=N, or --cpus N which sets it; DataLoader num_workers)";
/* EMFILE: the process's own RLIMIT_NOFILE. The local sandbox only raises its soft limit to the
 * hard one labbox was started with (sandbox/run.c setup_rlimits), so the code fails the same
 * way outside; the gate's own EMFILE, a channel closed for good, is read before this. */
static const char SUMMARY_EMFILE[] =
	"the process ran out of file descriptors: it had as many files, sockets and pipes open at "
	"once as its open-file limit (RLIMIT_NOFILE) allows; labbox lowers no such limit (the "
	"sandbox keeps the hard limit labbox was started with, unless the code set its own), so "
	"the code fails the same way outside labbox";
static const char SUGGEST_EMFILE[] =
	"close what the code opens (with open(...) as f:, one file at a time, instead of keeping "
	"every handle); for torch DataLoader workers passing tensors, call "
	"torch.multiprocessing.set_sharing_strategy(\"file_system\") first; or raise the limit "
	"with ulimit -n N in the shell that starts labbox (the sandbox keeps it; a docker "
	"container has the daemon's): no labbox flag changes it";
/* ENFILE: the kernel's table of open files for the whole machine (fs.file-max), which every
 * process on it shares: neither the code's limit nor one labbox sets. */
static const char SUMMARY_ENFILE[] =
	"the machine's system-wide table of open files (fs.file-max) was full: it is shared by "
	"every process on the host, this run's among them, and is no limit of the run's or "
	"labbox's";
static const char SUGGEST_ENFILE[] =
	"see what holds the machine's open files (/proc/sys/fs/file-nr; lsof) and rerun when they "
	"are released, close files the code keeps open, or raise fs.file-max on the host (sysctl, "
	"as root); no labbox flag changes it";

static const char SUGGEST_WRONG_ENV[] =
	"the installed packages or the Python version do not match what the code expects: "
	"install compatible versions into a virtual environment and run with --python "
	"VENV/bin/python (labbox installs nothing itself)";

/* Top-level names that several distributions share (namespace packages): that one of them
 * imports says nothing of the one a dotted name needs, which is installed by its own name. */
static bool namespace_top(const char *top)
{
	static const char *const tops[] = { "google", "azure", "mpl_toolkits", "ruamel", "zope",
					    "jaraco", "backports", "sphinxcontrib", "nvidia", NULL };
	for (size_t i = 0; tops[i]; i++)
		if (strcmp(top, tops[i]) == 0)
			return true;
	return false;
}

static void classify_missing_package(lb_verdict *v, const char *line)
{
	char module[128], top[128], dist[128];
	char *dot;

	if (!dg_quoted_after(line, "No module named", module, sizeof(module))) {
		dg_verdict_set(v, "missing_package", "a Python package is missing", line,
			       "install the missing package in the experiment's environment, or "
			       "choose an interpreter that has it with --python");
		return;
	}
	memcpy(top, module, sizeof(top));
	dot = strchr(top, '.');
	if (dot)
		*dot = '\0';
	if (dot && lb_diag_is_stdlib(top, strlen(top))) {
		v->cls = "wrong_env";
		snprintf(v->summary, sizeof(v->summary),
			 "this Python's standard library has no module '%s' (another Python version "
			 "has it): %s", module, line);
		snprintf(v->suggestion, sizeof(v->suggestion),
			 "run it with the Python version the code was written for (--python "
			 "PATH; `labbox probe` lists the interpreters it finds)");
		return;
	}
	if (dot && !namespace_top(top)) {
		/* Python imports a dotted name's packages first and names the first part it
		 * could not find: 'torch._inductor' means torch itself imported, and its version
		 * has no _inductor (added since, or removed: sklearn.externals.joblib). */
		v->cls = "wrong_env";
		snprintf(v->summary, sizeof(v->summary),
			 "the installed %s has no module '%s' (%s itself imports; another version of "
			 "it has the module): %s", top, module, top, line);
		snprintf(v->suggestion, sizeof(v->suggestion),
			 "install the version of %s the code was written for, one that has %s, into "
			 "a virtual environment (pip install %s==VERSION; labbox installs nothing "
			 "itself; environment.txt in the run directory lists the version this run "
			 "had) and run with --python VENV/bin/python",
			 top, module, dg_pip_name(top));
		return;
	}
	/* google.protobuf is installed as protobuf; other namespaces' parts by their dotted
	 * name (azure.storage.blob: azure-storage-blob). */
	if (!dot)
		snprintf(dist, sizeof(dist), "%s", dg_pip_name(top));
	else if (strcmp(module, "google.protobuf") == 0 || strncmp(module, "google.protobuf.", 16) == 0)
		snprintf(dist, sizeof(dist), "protobuf");
	else if (strcmp(module, "mpl_toolkits.mplot3d") == 0 ||
		 strcmp(module, "mpl_toolkits.axes_grid1") == 0 ||
		 strcmp(module, "mpl_toolkits.axisartist") == 0 ||
		 strncmp(module, "mpl_toolkits.mplot3d.", 21) == 0)
		snprintf(dist, sizeof(dist), "matplotlib"); /* matplotlib's own toolkits */
	else if (strncmp(module, "mpl_toolkits.", 13) == 0)
		snprintf(dist, sizeof(dist), "%.100s", module + 13); /* basemap */
	else {
		snprintf(dist, sizeof(dist), "%s", module);
		for (char *c = dist; *c; c++)
			if (*c == '.' || *c == '_')
				*c = '-';
	}
	v->cls = "missing_package";
	snprintf(v->summary, sizeof(v->summary), "module '%s' is not installed: %s", module, line);
	snprintf(v->suggestion, sizeof(v->suggestion),
		 "install it into the interpreter's environment (pip install %s in a virtual "
		 "environment; labbox installs nothing itself) and run with --python "
		 "VENV/bin/python, or choose another interpreter that has it with --python",
		 dist);
}

/* A missing path under the sandbox's HOME (/tmp): code that reads ~/datasets/... (expanduser,
 * Path.home()) reaches /tmp/datasets/... in the sandbox, a path the user has nowhere. The
 * advice names the host's ~ and where to mount it so the code finds it unchanged. */
static bool missing_under_home(lb_verdict *v, const char *path, const char *line)
{
	static const char home[] = LB_SANDBOX_HOME "/";
	const char *rest = path + sizeof home - 1;
	char top[64];

	if (strncmp(path, home, sizeof home - 1) != 0 || !rest[0])
		return false;
	snprintf(top, sizeof top, "%.*s", (int)strcspn(rest, "/"), rest);
	if (!top[0])
		return false;
	snprintf(v->summary, sizeof(v->summary),
		 "file '%.200s' does not exist in the sandbox, whose HOME is %s: a path made from ~ "
		 "(os.path.expanduser, Path.home()) lands under %s there, not in your home "
		 "directory: %s",
		 path, LB_SANDBOX_HOME, LB_SANDBOX_HOME, line);
	snprintf(v->suggestion, sizeof(v->suggestion),
		 "if the code means ~/%.120s on the host, mount it where the code looks: "
		 "-v ~/%s:%s%s:ro; or put the data inside the experiment directory (it is staged "
		 "as exp/) and open it by a relative path; the rest of the host is hidden from the "
		 "sandbox",
		 rest, top, home, top);
	return true;
}

/* subprocess: the traceback went through subprocess, so a missing name is a program. */
static void classify_missing_file(lb_verdict *v, const char *line, bool subprocess)
{
	char path[256];

	if (!dg_quoted_after(line, "No such file or directory", path, sizeof(path)) &&
	    !dg_quoted_after(line, "Error:", path, sizeof(path))) {
		dg_verdict_set(v, "missing_data", "a file the experiment reads is missing", line,
			       "put the data inside the experiment directory (it is staged as exp/) "
			       "and open it by a relative path, or mount it with -v SRC:DST:ro");
		return;
	}
	if (subprocess && !strchr(path, '/')) {
		v->cls = "wrong_env";
		snprintf(v->summary, sizeof(v->summary), "program '%s' was not found: %s", path,
			 line);
		snprintf(v->suggestion, sizeof(v->suggestion),
			 "install %s where the experiment runs, or do without it", path);
		return;
	}
	v->cls = "missing_data";
	snprintf(v->summary, sizeof(v->summary), "file '%s' does not exist in the sandbox: %s",
		 path, line);
	if (lb_diag_credential_path(path)) {
		snprintf(v->suggestion, sizeof(v->suggestion), DG_SUGGEST_CREDENTIAL, path);
		return;
	}
	if (missing_under_home(v, path, line))
		return;
	snprintf(v->suggestion, sizeof(v->suggestion),
		 "put '%s' inside the experiment directory (it is staged as exp/) and open it by "
		 "a relative path, or mount it with -v SRC:DST:ro; the rest of the host is hidden "
		 "from the sandbox",
		 path);
}

/* A dataset the Hub loader could not find: missing data, unless the message shows that the
 * Hub could not be reached, which is the network (the sandbox has none by default). */
static void classify_dataset(lb_verdict *v, const char *line)
{
	if (dg_has_any(line, connection_text)) {
		dg_verdict_set(v, "network", "the dataset could not be fetched: no network", line,
			       SUGGEST_NETWORK);
		return;
	}
	dg_verdict_set(v, "missing_data", "the dataset was not found", line, SUGGEST_DATASET);
}

/* Names that a version of the library or of Python removed (or renamed) and that Python's
 * "Did you mean" may still meet with a close name: np.float ("Did you mean: 'cfloat'?"),
 * inspect.getargspec ("'getargs'?"). */
static bool removed_name(const char *module, const char *name)
{
	static const char *const removed[] = {
		"numpy.float", "numpy.int", "numpy.bool", "numpy.object", "numpy.str",
		"numpy.long", "numpy.unicode", "numpy.complex", "numpy.float_", "numpy.complex_",
		"numpy.string_", "numpy.unicode_", "numpy.NaN", "numpy.NAN", "numpy.Inf",
		"numpy.PINF", "numpy.NINF", "numpy.infty", "numpy.Infinity", "numpy.asscalar",
		"numpy.alltrue", "numpy.sometrue", "numpy.product", "numpy.cumproduct",
		"numpy.round_", "numpy.msort", "numpy.cast", "numpy.find_common_type", "numpy.mat",
		"numpy.trapz", "numpy.in1d", "numpy.row_stack", "numpy.int0", "numpy.uint0",
		"numpy.bool8", "numpy.float96", "numpy.set_string_function", "numpy.safe_eval",
		"time.clock", "inspect.getargspec", "inspect.formatargspec",
		"inspect.getmoduleinfo", "typing.io", "typing.re", "collections.Mapping",
		"collections.MutableMapping", "collections.Sequence",
		"collections.MutableSequence", "collections.Iterable", "collections.Iterator",
		"collections.Callable", "collections.Set", "collections.MutableSet",
		"collections.Hashable", "collections.Sized", "collections.Container",
		"collections.Generator", "collections.Awaitable", "collections.Coroutine",
		"collections.KeysView", "collections.ItemsView", "collections.ValuesView",
		"collections.MappingView", "collections.ByteString", "jinja2.Markup",
		"jinja2.escape", "jinja2.contextfunction", "pandas.Panel", "pandas.Int64Index",
		"pandas.Float64Index", "pandas.datetime", "pandas.np", "scipy.misc",
		"scipy.interp", "scipy.rand", "torch._six", "asyncio.coroutine", "os.errno",
		"fractions.gcd", "string.maketrans", "base64.encodestring",
		"base64.decodestring", "sklearn.externals", NULL,
	};
	char full[256];

	if (strcmp(module, "np") == 0)
		module = "numpy";
	snprintf(full, sizeof(full), "%.120s.%.120s", module, name);
	for (size_t i = 0; removed[i]; i++)
		if (strcmp(full, removed[i]) == 0)
			return true;
	return false;
}

/* Python's "Did you mean: 'array'?" on an attribute or a name imported from a module that
 * does not have it (np.arrray): the code misspelt it, unless the name is one a version
 * removed. Only the exception's own line is read: numpy's removed aliases explain themselves
 * on the lines below it. */
bool dg_misspelt_name(const char *line)
{
	char module[128], name[128];

	if (!dg_has(line, "Did you mean"))
		return false;
	if (dg_has(line, "has no attribute")) {
		if (dg_quoted_after(line, "module", module, sizeof(module)) &&
		    dg_quoted_after(line, "has no attribute", name, sizeof(name)))
			return !removed_name(module, name);
		return true; /* an object's attribute: never the environment's */
	}
	if (dg_has(line, "cannot import name") &&
	    dg_quoted_after(line, "cannot import name", name, sizeof(name)) &&
	    strstr(line, "' from ") && dg_quoted_after(strstr(line, "' from ") + 1, "from", module,
						     sizeof(module)))
		return !removed_name(module, name);
	return false;
}

/* Classes a message can show without a Python exception name: used both for exception lines
 * and for the output of programs that crash without a traceback. Returns false when the text
 * says nothing specific. */

bool dg_classify_text(lb_verdict *v, const char *line)
{
	if (dg_starts_with(line + dg_indent_of(line),
			   "labbox runtime gate: its channel was closed and cannot be opened")) {
		/* the gate's own last words (sitecustomize.py, stop_unrecorded): before the
		 * errno's text it quotes can read as another cause (EMFILE, a limit) */
		dg_verdict_set(v, "sandbox_restriction",
			       "the runtime gate stopped the interpreter: the code closed the gate's "
			       "channel (a descriptor it did not open) and left no way to open it "
			       "again, so what it did next could not be recorded",
			       line,
			       "do not close file descriptors the program did not open (os.closerange, "
			       "closing every descriptor) nor lower RLIMIT_NOFILE below what is open");
	} else if (dg_has(line, "there is no package called")) {
		dg_classify_missing_lang_package(v, line, true);
	} else if (dg_r_install_error(v, line)) {
		return true;
	} else if (dg_has(line, "error: package ") && dg_has(line, " is not installed")) {
		dg_classify_missing_lang_package(v, line, false);
	} else if (dg_has(line, "no graphics toolkits are available")) {
		/* octave-cli has no Qt or FLTK toolkit; it draws, to files too, through gnuplot */
		dg_verdict_set(v, "wrong_env",
			       "program 'gnuplot' was not found: Octave has no graphics toolkit to "
			       "draw figures with (octave-cli draws through gnuplot, and the Qt and "
			       "FLTK toolkits need a display)",
			       line, SUGGEST_OCTAVE_GNUPLOT);
	} else if (dg_has(line, "cannot allocate vector of size") ||
		   dg_has(line, "out of memory or dimension too large")) {
		dg_verdict_set(v, "oom", "the experiment ran out of memory", line, DG_SUGGEST_OOM);
	} else if (dg_has_any(line, gpu_oom_text)) {
		dg_verdict_set(v, "gpu_oom", "the GPU ran out of memory", line, SUGGEST_GPU_OOM);
	} else if (dg_has_any(line, gpu_code_text)) {
		return false;
	} else if (dg_has_any(line, shm_text)) {
		dg_verdict_set(v, "sandbox_restriction", "shared memory (/dev/shm) ran out", line,
			       SUGGEST_SHM);
	} else if (dg_has(line, "is killed by signal: Killed")) {
		dg_verdict_set(v, "oom", "a worker process was killed, most likely for memory", line,
			       DG_SUGGEST_OOM);
	} else if (dg_has_any(line, cpu_build_text)) {
		/* The library itself has no CUDA: no GPU granted to it would be used. */
		bool torch = dg_has(line, "Torch not compiled");
		dg_verdict_set(v, "wrong_env",
			       torch ? "this interpreter's torch was built without CUDA, so no GPU can "
				    "be used by it"
				  : "the installed library was built without CUDA (or GPU support), "
				    "so no GPU can be used by it",
			       line,
			       torch ? SUGGEST_TORCH_CPU_BUILD : SUGGEST_CPU_BUILD);
	} else if (dg_has_any(line, gpu_unavailable_text)) {
		dg_verdict_set(v, "gpu_unavailable", "no usable GPU", line, SUGGEST_GPU_UNAVAILABLE);
	} else if (dg_has_any(line, dataset_text)) {
		classify_dataset(v, line);
	} else if (dg_has(line, "No module named")) {
		classify_missing_package(v, line);
	} else if (dg_misspelt_name(line)) {
		dg_verdict_set(v, "code_error",
			       "the code names something the module does not have, and Python suggests "
			       "a close name that it has: a misspelling", line,
			       "use the name Python suggests (or the one meant); no version of the "
			       "library or environment has the misspelt one");
	} else if (dg_has_any(line, wrong_env_text) || dg_has_any(line, moved_api_text)) {
		dg_verdict_set(v, "wrong_env", "the environment does not match the code", line,
			       SUGGEST_WRONG_ENV);
	} else if (dg_has(line, "Unable to allocate") || dg_has(line, "Cannot allocate memory") ||
		   dg_has(line, "std::bad_alloc")) {
		dg_verdict_set(v, "oom", "the experiment ran out of memory", line, DG_SUGGEST_OOM);
	} else if (dg_has_nan_word(line) || dg_has_any(line, nan_text)) {
		dg_verdict_set(v, "nan_divergence", "values became NaN or infinite", line, SUGGEST_NAN);
	} else if (dg_has_any(line, network_text)) {
		dg_verdict_set(v, "network", "the experiment needs the network", line,
			       SUGGEST_NETWORK);
	} else if (dg_has_any(line, no_space_text)) {
		dg_verdict_set(v, "sandbox_restriction", "no space left to write", line,
			       DG_SUGGEST_NO_SPACE);
	} else if (dg_has(line, "Too many open files in system")) {
		dg_verdict_set(v, "infra_error", SUMMARY_ENFILE, line, SUGGEST_ENFILE);
	} else if (dg_has(line, "Too many open files")) {
		dg_verdict_set(v, "code_error", SUMMARY_EMFILE, line, SUGGEST_EMFILE);
	} else if (dg_has_any(line, limit_text)) {
		dg_verdict_set(v, "sandbox_restriction", "a sandbox limit was reached", line,
			       SUGGEST_LIMIT);
	} else if (dg_has_any(line, sandbox_text)) {
		dg_verdict_set(v, "sandbox_restriction", "the sandbox denied an operation", line,
			       SUGGEST_SANDBOX);
	} else if (dg_has(line, "No such file or directory")) {
		classify_missing_file(v, line, false);
	} else {
		return false;
	}
	return true;
}

/* The class an exception line decides; code_error when neither its name nor its message
 * names a cause outside the code. */
void dg_classify_exception(lb_verdict *v, const char *line, size_t name_len, bool subprocess,
			   bool gate_said)
{
	static const char *const memory_names[] = { "MemoryError", "_ArrayMemoryError", NULL };
	static const char *const gpu_oom_names[] = { "OutOfMemoryError", "ResourceExhaustedError",
						     NULL };
	static const char *const missing_names[] = { "ModuleNotFoundError", NULL };
	static const char *const nan_names[] = { "FloatingPointError", NULL };
	static const char *const file_names[] = { "FileNotFoundError", "EmptyDataError", NULL };
	static const char *const sandbox_names[] = { "PermissionError", NULL };

	if (dg_name_is(line, name_len, gpu_oom_names)) {
		dg_verdict_set(v, "gpu_oom", "the GPU ran out of memory", line, SUGGEST_GPU_OOM);
	} else if (dg_name_is(line, name_len, memory_names)) {
		dg_verdict_set(v, "oom", "the experiment ran out of memory", line, DG_SUGGEST_OOM);
	} else if (dg_name_is(line, name_len, missing_names)) {
		classify_missing_package(v, line);
	} else if (dg_name_is(line, name_len, dataset_names) || dg_has_any(line, dataset_text)) {
		/* Before the file and network names: datasets raises FileNotFoundError and
		 * ConnectionError subclasses whose message says which it was. */
		classify_dataset(v, line);
	} else if (dg_name_is(line, name_len, nan_names)) {
		dg_verdict_set(v, "nan_divergence", "a floating point error (NaN or overflow)", line,
			       SUGGEST_NAN);
	} else if (dg_name_is(line, name_len, network_names)) {
		dg_verdict_set(v, "network", "the experiment needs the network", line,
			       SUGGEST_NETWORK);
	} else if (dg_name_is(line, name_len, file_names) && !dg_has_any(line, gpu_unavailable_text)) {
		/* Before the message checks: a path may contain any word. */
		classify_missing_file(v, line, subprocess);
	} else if (dg_name_is(line, name_len, sandbox_names) && dg_has(line, GATE_MARK) && gate_said) {
		/* The runtime gate's refusal names its rule: the class says the gate, not the
		 * kernel, said no, and which rule to look up (docs/check.md). */
		dg_verdict_set(v, "gate_refused", "the labbox runtime gate refused an operation", line,
			       SUGGEST_GATE);
	} else if (dg_name_is(line, name_len, sandbox_names) && dg_has(line, GATE_MARK)) {
		/* Neither the kernel nor this run's gate said no: the words are the code's own
		 * (or a gate's elsewhere, whose record this labbox does not hold: ssh's, slurm's). */
		dg_verdict_set(v, "code_error",
			       "a PermissionError in the runtime gate's words that the gate did not "
			       "record refusing", line, SUGGEST_GATE_UNRECORDED);
	} else if (dg_name_is(line, name_len, sandbox_names)) {
		dg_verdict_set(v, "sandbox_restriction", "the sandbox denied an operation", line,
			       SUGGEST_SANDBOX);
	} else if (dg_classify_text(v, line)) {
		return;
	} else if (strncmp(line, "ImportError", 11) == 0) {
		dg_verdict_set(v, "missing_package", "an import failed", line,
			       "install the package the import needs in the experiment's environment, "
			       "or choose an interpreter that has it with --python");
	} else {
		dg_verdict_set(v, "code_error", "the code raised an exception", line,
			       "fix the error shown in the traceback (run.log has all of it)");
	}
}

void dg_add_evidence(lb_verdict *v, size_t line)
{
	if (line == NONE || v->n_evidence >= DIAG_EVIDENCE_MAX)
		return;
	for (size_t i = 0; i < v->n_evidence; i++)
		if (v->evidence[i] == line)
			return;
	v->evidence[v->n_evidence++] = line;
}

void dg_set_confidence(lb_verdict *v, int level, const char *reason)
{
	v->confidence = level;
	v->confidence_reason = reason;
}

/* Octave's "warning: function name 'f' does not agree with function filename '.../main.m'":
 * main.m's first statement is a function definition, so Octave took the file for a function
 * file and called its first function with no arguments; the script's lines after it never
 * ran. The error that follows (an argument "undefined") is a symptom; the warning is why. */
static bool octave_function_file(lb_verdict *v, const lb_log *log, size_t first, size_t last)
{
	static const char mark[] = "does not agree with function filename";
	char fn[128];

	for (size_t i = first; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		if (!dg_starts_with(s, "warning: function name '") || !strstr(s, mark) ||
		    !dg_quoted_after(s, "warning: function name", fn, sizeof fn))
			continue;
		char what[400], sugg[DIAG_TEXT_LEN];
		snprintf(what, sizeof what, "Octave ran the entry file as a function file, since its "
			 "first statement defines function '%.100s': it called %.100s with no "
			 "arguments and never ran the script's own lines; so it stopped with an error",
			 fn, fn);
		snprintf(sugg, sizeof sugg, "make the entry file a script: put 1; on its first line, "
			 "before function %.100s (or move %.100s to a file %.100s.m of its own)",
			 fn, fn, fn);
		dg_verdict_set(v, "code_error", what,
			       log->lines[first] + dg_indent_of(log->lines[first]), sugg);
		dg_add_evidence(v, i);
		dg_add_evidence(v, first);
		if (first != last)
			dg_add_evidence(v, last);
		dg_set_confidence(v, CONF_HIGH, "Octave's own warning says it took the entry file "
					     "for a function file named for another function");
		v->code_frame = dg_octave_frame(log, first);
		dg_add_evidence(v, v->code_frame);
		return true;
	}
	return false;
}

bool dg_scan_messages(lb_verdict *v, const lb_log *log, const char *language)
{
	for (size_t i = log->n; i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		if (dg_classify_text(v, log->lines[i])) {
			dg_add_evidence(v, i);
			dg_set_confidence(v, CONF_MEDIUM,
					  "a message in the output names the cause; no traceback says so");
			/* Octave says where, below its message: the experiment's line is the
			 * reader's way in, whatever the cause */
			if (language && strcmp(language, "octave") == 0 &&
			    (v->code_frame = dg_octave_frame(log, i)) != NONE)
				dg_add_evidence(v, v->code_frame);
			return true;
		}
	}
	/* No rule knew a message: an R or Octave error is the code's, named by its own line
	 * (the last one: R prints the call, Octave the message and then where it was). */
	bool r = language && strcmp(language, "r") == 0;
	bool octave = language && strcmp(language, "octave") == 0;
	for (size_t i = log->n; (r || octave) && i-- > 0 && log->n - i <= DIAG_SCAN_LINES;) {
		const char *s = log->lines[i] + dg_indent_of(log->lines[i]);
		if (!dg_lang_error_line(s))
			continue;
		size_t first = i;
		while (first > 0 && log->n - first < DIAG_SCAN_LINES &&
		       dg_lang_error_line(log->lines[first - 1] + dg_indent_of(log->lines[first - 1])))
			first--;
		if (octave && octave_function_file(v, log, first, i))
			return true;
		dg_verdict_set(v, "code_error",
			       r ? "the R script stopped with an error"
					: "the Octave script stopped with an error",
			       log->lines[first] + dg_indent_of(log->lines[first]),
			       "fix the error at the line R or Octave names; run the script alone to see "
			       "it again");
		dg_add_evidence(v, first);
		if (first != i)
			dg_add_evidence(v, i);
		dg_set_confidence(v, CONF_MEDIUM, octave ? "Octave's error line, which names no cause outside the code"
						      : "R's error line, which names no cause outside the code");
		if (octave) {
			v->code_frame = dg_octave_frame(log, first);
			dg_add_evidence(v, v->code_frame);
		}
		return true;
	}
	return false;
}

bool lb_diag_credential_path(const char *path)
{
	/* directories of credentials, as a path component; files by their whole name */
	static const char *const dirs[] = {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker",
					   "gcloud", ".password-store", ".pki", NULL};
	static const char *const files[] = {".netrc", ".git-credentials", ".pgpass", ".pypirc",
					    "credentials", "credentials.json", ".boto",
					    "authorized_keys", "known_hosts", "shadow", "gshadow",
					    ".Xauthority", NULL};
	static const char *const prefixes[] = {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", NULL};
	const char *p = path;

	if (!path)
		return false;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		bool last = !end || !end[1];

		for (size_t i = 0; dirs[i]; i++)
			if (n == strlen(dirs[i]) && memcmp(p, dirs[i], n) == 0)
				return true;
		for (size_t i = 0; last && files[i]; i++)
			if (n == strlen(files[i]) && memcmp(p, files[i], n) == 0)
				return true;
		for (size_t i = 0; last && prefixes[i]; i++)
			if (n >= strlen(prefixes[i]) && memcmp(p, prefixes[i], strlen(prefixes[i])) == 0)
				return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}
