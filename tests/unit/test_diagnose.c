/* Unit tests for diagnose: failure classes from realistic endings of Python experiments. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labbox/diagnose.h"
#include "labbox/record.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static struct json_object *diagnose_log(const char *log, int exit_code, int sig)
{
	lb_failure_input in = {
		.log_tail = log,
		.log_tail_len = log ? strlen(log) : 0,
		.exit_code = exit_code,
		.signal = sig,
	};

	return lb_diagnose_failure(&in);
}

/* With the runtime gate's record (result.json's runtime_gate) as JSON text. */
static struct json_object *diagnose_gated(const char *log, const char *gate_json)
{
	struct json_object *gate = json_tokener_parse(gate_json);
	assert_non_null(gate);
	lb_failure_input in = {
		.log_tail = log,
		.log_tail_len = strlen(log),
		.exit_code = 1,
		.runtime_gate = gate,
	};
	struct json_object *doc = lb_diagnose_failure(&in);
	json_object_put(gate);
	return doc;
}

#define GATE_PICKLE_REFUSED \
	"{\"events\": [{\"event\": \"pickle.find_class\", \"refused\": true, " \
	"\"rule\": \"gate.pickle\"}]}"
#define GATE_OPEN_REFUSED \
	"{\"events\": [{\"event\": \"open\", \"refused\": true, \"rule\": \"LB110\"}]}"

static const char *field(struct json_object *doc, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(doc, key, &v))
		fail_msg("no %s in %s", key, json_object_to_json_string(doc));
	return json_object_get_string(v);
}

static bool evidence_has(struct json_object *doc, const char *needle)
{
	struct json_object *ev = NULL;

	assert_true(json_object_object_get_ex(doc, "evidence", &ev));
	assert_true(json_object_array_length(ev) <= 8);
	for (size_t i = 0; i < json_object_array_length(ev); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(ev, i)), needle))
			return true;
	return false;
}

/* Checks the class and that summary, suggestion and evidence are there, then frees. */
static void expect(struct json_object *doc, const char *cls, const char *evidence)
{
	assert_non_null(doc);
	if (strcmp(field(doc, "class"), cls) != 0)
		fail_msg("want %s, got %s", cls, json_object_to_json_string(doc));
	assert_true(strlen(field(doc, "summary")) > 0);
	assert_null(strchr(field(doc, "summary"), '\n'));
	assert_true(strlen(field(doc, "suggestion")) > 0);
	if (evidence && !evidence_has(doc, evidence))
		fail_msg("no evidence line with \"%s\": %s", evidence, json_object_to_json_string(doc));
	json_object_put(doc);
}

static void test_success_is_not_a_failure(void **state)
{
	(void)state;
	assert_null(diagnose_log("accuracy: 0.9\n", 0, 0));
	assert_null(diagnose_log(NULL, 0, 0));
	assert_null(lb_diagnose_failure(NULL));
}

static void test_missing_package(void **state)
{
	static const char log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 4, in <module>\n"
		"    from sklearn.linear_model import LogisticRegression\n"
		"ModuleNotFoundError: No module named 'sklearn'\n";
	struct json_object *doc = diagnose_log(log, 1, 0);

	(void)state;
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "suggestion"), "pip install scikit-learn"));
	assert_string_equal(field(doc, "exception"), "ModuleNotFoundError");
	assert_true(evidence_has(doc, "from sklearn.linear_model"));
	expect(doc, "missing_package", "No module named 'sklearn'");
	/* Python's -m without the module. */
	expect(diagnose_log("/usr/bin/python3: No module named torch\n", 1, 0), "missing_package",
	       "No module named torch");
}

static void test_wrong_env(void **state)
{
	static const char cannot_import[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 2, in <module>\n"
		"    from jinja2 import Markup\n"
		"ImportError: cannot import name 'Markup' from 'jinja2' "
		"(/usr/lib/python3/dist-packages/jinja2/__init__.py)\n";
	static const char numpy_float[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/run.py\", line 17, in <module>\n"
		"    x = np.zeros(3, dtype=np.float)\n"
		"  File \"/usr/lib/python3/dist-packages/numpy/__init__.py\", line 305, in __getattr__\n"
		"    raise AttributeError(__former_attrs__[attr])\n"
		"AttributeError: module 'numpy' has no attribute 'float'.\n"
		"`np.float` was a deprecated alias for the builtin `float`.\n";
	static const char py39[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/model.py\", line 8, in <module>\n"
		"    def f(x: int | None) -> int:\n"
		"TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'\n";

	(void)state;
	expect(diagnose_log(cannot_import, 1, 0), "wrong_env", "cannot import name 'Markup'");
	expect(diagnose_log(numpy_float, 1, 0), "wrong_env", "has no attribute 'float'");
	expect(diagnose_log(py39, 1, 0), "wrong_env", "unsupported operand");
	expect(diagnose_log("bash: line 1: python: command not found\n", 127, 0), "wrong_env",
	       "command not found");
}

static void test_missing_data(void **state)
{
	static const char log[] =
		"Loading data...\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 30, in <module>\n"
		"    main()\n"
		"  File \"/exp/train.py\", line 12, in main\n"
		"    df = pd.read_csv(\"data/nan_train.csv\")\n"
		"  File \"/usr/lib/python3/dist-packages/pandas/io/common.py\", line 856, in get_handle\n"
		"    handle = open(\n"
		"             ^^^^^\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/nan_train.csv'\n";
	struct json_object *doc = diagnose_log(log, 1, 0);
	struct json_object *loc = NULL, *v = NULL;

	(void)state;
	assert_non_null(doc);
	/* The path is named in the suggestion; "nan" in a file name is not a NaN. */
	assert_non_null(strstr(field(doc, "suggestion"), "data/nan_train.csv"));
	assert_true(json_object_object_get_ex(doc, "location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 856);
	expect(doc, "missing_data", "No such file or directory");
}

/* FileNotFoundError that is no missing data: a write into a directory the code never made
 * (its own open() with a mode that writes, or a saver it called), multiprocessing reaching a
 * process of its own that had exited. A read stays missing data. */
static void test_missing_file_that_is_no_data(void **state)
{
	static const char write_open[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    with open(\"out/results.json\", \"w\") as f:\n"
		"         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'out/results.json'\n";
	static const char np_save[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in <module>\n"
		"    np.save(\"ckpt/w.npy\", w)\n"
		"  File \"/usr/lib/python3/dist-packages/numpy/lib/npyio.py\", line 518, in save\n"
		"    file_ctx = open(file, \"wb\")\n"
		"               ^^^^^^^^^^^^^^^^\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'ckpt/w.npy'\n";
	static const char mp_socket[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 20, in <module>\n"
		"    print(q.get())\n"
		"  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 628, in SocketClient\n"
		"    s.connect(address)\n"
		"FileNotFoundError: [Errno 2] No such file or directory\n";
	static const char write_outside[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 11, in append\n"
		"    with open(P[\"existing\"], \"a\") as f:\n"
		"FileNotFoundError: [Errno 2] No such file or directory: '/home/u/.profile'\n";
	static const char read_open[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    with open(\"data/train.json\") as f:\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/train.json'\n";
	struct json_object *doc;

	(void)state;
	doc = diagnose_log(write_open, 1, 0);
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "into a directory that does not exist"));
	assert_non_null(strstr(field(doc, "suggestion"), "os.makedirs"));
	expect(doc, "code_error", "out/results.json");
	doc = diagnose_log(np_save, 1, 0);
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "'ckpt/w.npy' into a directory"));
	expect(doc, "code_error", "np.save(");
	doc = diagnose_log(mp_socket, 1, 0);
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "multiprocessing could not reach"));
	expect(doc, "code_error", "FileNotFoundError");
	expect(diagnose_log(read_open, 1, 0), "missing_data", "data/train.json");
	/* a host file the sandbox hides is not the code's directory to make */
	expect(diagnose_log(write_outside, 1, 0), "missing_data", "/home/u/.profile");
}

static void test_missing_data_wrapped(void **state)
{
	/* A data loader that wraps the real cause in its own exception. */
	static const char log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/data.py\", line 5, in load\n"
		"    return np.load(path)\n"
		"FileNotFoundError: [Errno 2] No such file or directory: '/datasets/cifar10/train.npz'\n"
		"\n"
		"The above exception was the direct cause of the following exception:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 40, in <module>\n"
		"    x = load('/datasets/cifar10/train.npz')\n"
		"  File \"/exp/data.py\", line 7, in load\n"
		"    raise RuntimeError(f\"could not load {path}\") from e\n"
		"RuntimeError: could not load /datasets/cifar10/train.npz\n";
	static const char unrelated[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 5, in <module>\n"
		"    import wandb\n"
		"ModuleNotFoundError: No module named 'wandb'\n"
		"wandb not installed, logging disabled\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 50, in <module>\n"
		"    print(results['acc'])\n"
		"KeyError: 'acc'\n";
	struct json_object *doc = diagnose_log(log, 1, 0), *loc = NULL, *v = NULL;

	(void)state;
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "FileNotFoundError");
	assert_true(json_object_object_get_ex(doc, "location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 5);
	assert_true(evidence_has(doc, "RuntimeError: could not load"));
	expect(doc, "missing_data", "FileNotFoundError");
	/* A traceback that was handled and logged earlier does not explain a later one. */
	expect(diagnose_log(unrelated, 1, 0), "code_error", "KeyError: 'acc'");
}

/* `raise RuntimeError("fit failed") from e`: a cause explains what follows it whatever its
 * class, so the verdict names where the fit failed, not the wrapper's line; an error met
 * while handling another (a context) does not take over. */
static void test_code_error_cause_takes_over(void **state)
{
	static const char log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 13, in run\n"
		"    fit(X, ls)\n"
		"  File \"/exp/main.py\", line 6, in fit\n"
		"    L = np.linalg.cholesky(K)\n"
		"  File \"/usr/lib/python3/dist-packages/numpy/linalg/linalg.py\", line 92, in _raise\n"
		"    raise LinAlgError(\"Matrix is not positive definite\")\n"
		"numpy.linalg.LinAlgError: Matrix is not positive definite\n"
		"\n"
		"The above exception was the direct cause of the following exception:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 15, in run\n"
		"    raise RuntimeError(f\"GP fit failed for lengthscale={ls}\") from e\n"
		"RuntimeError: GP fit failed for lengthscale=0.1\n";
	static const char context[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    cfg = CONFIGS[name]\n"
		"KeyError: 'small'\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 5, in <module>\n"
		"    print(nmae)\n"
		"NameError: name 'nmae' is not defined\n";
	(void)state;
	struct json_object *doc = diagnose_log(log, 1, 0);
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "numpy.linalg.LinAlgError");
	assert_true(evidence_has(doc, "RuntimeError: GP fit failed"));
	struct json_object *loc = NULL, *v = NULL;
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 6);
	expect(doc, "code_error", "Matrix is not positive definite");
	expect(diagnose_log(context, 1, 0), "code_error", "NameError");
}

static void test_program_not_found(void **state)
{
	static const char log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/prep.py\", line 3, in <module>\n"
		"    subprocess.run([\"ffmpeg\", \"-i\", \"a.mp4\"], check=True)\n"
		"  File \"/usr/lib/python3.11/subprocess.py\", line 548, in run\n"
		"    with Popen(*popenargs, **kwargs) as process:\n"
		"  File \"/usr/lib/python3.11/subprocess.py\", line 1950, in _execute_child\n"
		"    raise child_exception_type(errno_num, err_msg, err_filename)\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'ffmpeg'\n";

	(void)state;
	expect(diagnose_log(log, 1, 0), "wrong_env", "'ffmpeg'");
}

static void test_network(void **state)
{
	static const char requests_log[] =
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/urllib3/connection.py\", line 174, in _new_conn\n"
		"    conn = connection.create_connection(\n"
		"socket.gaierror: [Errno -3] Temporary failure in name resolution\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/fetch.py\", line 3, in <module>\n"
		"    r = requests.get(\"https://example.org/data.csv\")\n"
		"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='example.org', "
		"port=443): Max retries exceeded with url: /data.csv (Caused by "
		"NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to "
		"establish a new connection: [Errno -3] Temporary failure in name resolution'))\n";
	static const char urllib_log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 9, in <module>\n"
		"    ds = torchvision.datasets.MNIST('data', download=True)\n"
		"urllib.error.URLError: <urlopen error [Errno 101] Network is unreachable>\n";
	static const char hf_log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/ft.py\", line 5, in <module>\n"
		"    tok = AutoTokenizer.from_pretrained(\"gpt2\")\n"
		"OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
		"find it in the cached files and it looks like gpt2 is not the path to a directory "
		"containing a file named config.json.\n";

	(void)state;
	expect(diagnose_log(requests_log, 1, 0), "network", "Max retries exceeded");
	expect(diagnose_log(urllib_log, 1, 0), "network", "Network is unreachable");
	expect(diagnose_log(hf_log, 1, 0), "network", "huggingface.co");
}

static void test_sandbox_restriction(void **state)
{
	static const char perm[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 22, in <module>\n"
		"    with open(os.path.expanduser('~/.cache/results.pkl'), 'wb') as f:\n"
		"PermissionError: [Errno 13] Permission denied: '/home/alice/.cache/results.pkl'\n";
	static const char rofs[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 8, in <module>\n"
		"    os.makedirs('/opt/out', exist_ok=True)\n"
		"  File \"<frozen os>\", line 225, in makedirs\n"
		"OSError: [Errno 30] Read-only file system: '/opt/out'\n";
	static const char eperm[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/x.py\", line 2, in <module>\n"
		"    os.setuid(0)\n"
		"PermissionError: [Errno 1] Operation not permitted\n";
	static const char nospace[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/x.py\", line 2, in <module>\n"
		"    np.save('/tmp/big.npy', arr)\n"
		"OSError: [Errno 28] No space left on device\n";
	static const char exists[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/x.py\", line 2, in <module>\n"
		"    os.mkdir('out')\n"
		"FileExistsError: [Errno 17] File exists: 'out'\n";
	struct json_object *doc;

	(void)state;
	expect(diagnose_log(perm, 1, 0), "sandbox_restriction", "Permission denied");
	expect(diagnose_log(rofs, 1, 0), "sandbox_restriction", "Read-only file system");
	expect(diagnose_log(eperm, 1, 0), "sandbox_restriction", "Operation not permitted");
	doc = diagnose_log(nospace, 1, 0);
	assert_non_null(strstr(field(doc, "suggestion"), "--tmpfs"));
	expect(doc, "sandbox_restriction", "No space left");
	/* "[Errno 17]" is not "[Errno 1]": an ordinary bug. */
	expect(diagnose_log(exists, 1, 0), "code_error", "File exists");
	expect(diagnose_log("", -1, SIGSYS), "sandbox_restriction", NULL);
	expect(diagnose_log("Bad system call (core dumped)\n", 159, 0), "sandbox_restriction",
	       "Bad system call");
}

static void test_gpu_oom(void **state)
{
	static const char torch2[] =
		"Epoch 1:  12%|#2        | 120/1000 [00:14<01:40,  8.71it/s]\r"
		"Epoch 1:  12%|#2        | 121/1000 [00:14<01:40,  8.71it/s]\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 88, in <module>\n"
		"    loss.backward()\n"
		"  File \"/usr/local/lib/python3.11/site-packages/torch/_tensor.py\", line 522, in backward\n"
		"    torch.autograd.backward(\n"
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
		"total capacity of 79.15 GiB of which 1.25 GiB is free. Of the allocated memory 75.02 "
		"GiB is allocated by PyTorch, and 1.53 GiB is reserved by PyTorch but unallocated.\n";
	static const char old_torch[] =
		"Traceback (most recent call last):\n"
		"  File \"train.py\", line 40, in <module>\n"
		"    out = model(x)\n"
		"RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.78 GiB "
		"total capacity; 14.20 GiB already allocated; 180.75 MiB free)\n";
	static const char jax[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/jx.py\", line 10, in <module>\n"
		"    y = f(x)\n"
		"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
		"to allocate 17179869184 bytes.\n";

	(void)state;
	expect(diagnose_log(torch2, 1, 0), "gpu_oom", "CUDA out of memory");
	expect(diagnose_log(old_torch, 1, 0), "gpu_oom", "CUDA out of memory");
	expect(diagnose_log(jax, 1, 0), "gpu_oom", "RESOURCE_EXHAUSTED");
}

static void test_gpu_unavailable(void **state)
{
	static const char no_gpu[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 6, in <module>\n"
		"    model = Net().cuda()\n"
		"  File \"/usr/lib/python3/dist-packages/torch/cuda/__init__.py\", line 302, in _lazy_init\n"
		"    torch._C._cuda_init()\n"
		"RuntimeError: No CUDA GPUs are available\n";
	static const char no_cuda_build[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 6, in <module>\n"
		"    x = torch.zeros(3, device='cuda')\n"
		"AssertionError: Torch not compiled with CUDA enabled\n";
	static const char driver[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 6, in <module>\n"
		"    torch.cuda.init()\n"
		"RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
		"NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n";
	static const char device_assert[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 50, in <module>\n"
		"    loss = F.cross_entropy(logits, y)\n"
		"RuntimeError: CUDA error: device-side assert triggered\n";

	(void)state;
	expect(diagnose_log(no_gpu, 1, 0), "gpu_unavailable", "No CUDA GPUs are available");
	/* A torch built without CUDA is the environment's: no GPU granted would be used. */
	struct json_object *doc = diagnose_log(no_cuda_build, 1, 0), *esc;
	assert_true(json_object_object_get_ex(doc, "escalation", &esc) && esc);
	assert_string_equal(field(esc, "grants"), "environment");
	assert_string_equal(field(esc, "flag"), "--python VENV/bin/python");
	assert_string_equal(field(esc, "environment"), "pip install torch");
	assert_null(strstr(field(doc, "suggestion"), "flag: --gpus"));
	expect(doc, "wrong_env", "not compiled with CUDA");
	expect(diagnose_log(driver, 1, 0), "gpu_unavailable", "NVIDIA driver");
	/* A CUDA error caused by the code is a code error. */
	expect(diagnose_log(device_assert, 1, 0), "code_error", "device-side assert");
}

static void test_oom(void **state)
{
	static const char numpy_oom[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/big.py\", line 3, in <module>\n"
		"    a = np.zeros((100000, 100000))\n"
		"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 74.5 GiB for an array "
		"with shape (100000, 100000) and data type float64\n";
	static const char plain[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/big.py\", line 3, in <module>\n"
		"    x = [0] * (10 ** 12)\n"
		"MemoryError\n";
	lb_failure_input in = { .log_tail = "epoch 3\n", .log_tail_len = 8, .exit_code = -1,
				.signal = SIGKILL, .oom_killed = true };

	(void)state;
	expect(diagnose_log(numpy_oom, 1, 0), "oom", "Unable to allocate");
	expect(diagnose_log(plain, 1, 0), "oom", "MemoryError");
	expect(lb_diagnose_failure(&in), "oom", "epoch 3");
	/* SIGKILL nobody accounted for, after the shell's "Killed". */
	expect(diagnose_log("step 10\nKilled\n", 137, 0), "oom", "Killed");
}

/* SIGXCPU is the kernel's word for a CPU-time limit, and labbox sets none: the limit is the
 * experiment's or a library's, so the verdict is the code's and points at setrlimit, not at
 * --budget (wall-clock time, whose end labbox records itself as a timeout). */
static void test_cpu_time_limit_is_not_the_budget(void **state)
{
	(void)state;
	struct json_object *doc = diagnose_log("loss: 0.3\n", -1, SIGXCPU);
	assert_string_equal(field(doc, "confidence"), "medium");
	assert_non_null(strstr(field(doc, "summary"), "SIGXCPU"));
	assert_non_null(strstr(field(doc, "suggestion"), "setrlimit"));
	assert_null(strstr(field(doc, "suggestion"), "raise the time budget"));
	expect(doc, "code_error", "loss: 0.3");
	/* through a shell: 128 + 24 */
	expect(diagnose_log("", 152, 0), "code_error", NULL);
	/* labbox's own budget stays a timeout, whatever signal ended the tree */
	lb_failure_input budget = {.exit_code = -1, .signal = SIGKILL, .timed_out = true};
	expect(lb_diagnose_failure(&budget), "timeout", NULL);
}

static void test_nan_divergence(void **state)
{
	static const char sklearn[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/fit.py\", line 14, in <module>\n"
		"    clf.fit(X, y)\n"
		"ValueError: Input X contains NaN.\n";
	static const char anomaly[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 60, in <module>\n"
		"    loss.backward()\n"
		"RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.\n";
	static const char fpe[] =
		"step 1 loss 2.3\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 3, in <module>\n"
		"    np.log(0)\n"
		"FloatingPointError: divide by zero encountered in log\n";
	static const char quiet[] = "step 100 loss 0.31\nstep 200 loss nan\nLoss is NaN, stopping\n";
	static const char keyerror[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/x.py\", line 3, in <module>\n"
		"    d['nan']\n"
		"KeyError: 'nan'\n";

	(void)state;
	/* Missing values in the data met an input check: nothing trained, nothing diverged. */
	expect(diagnose_log(sklearn, 1, 0), "code_error", "contains NaN");
	expect(diagnose_log(anomaly, 1, 0), "nan_divergence", "returned nan values");
	expect(diagnose_log(fpe, 1, 0), "nan_divergence", "FloatingPointError");
	expect(diagnose_log(quiet, 1, 0), "nan_divergence", "Loss is NaN");
	expect(diagnose_log(keyerror, 1, 0), "code_error", "KeyError");
}

static void test_code_error(void **state)
{
	static const char log[] =
		"\x1b[31mTraceback (most recent call last):\x1b[0m\n"
		"  File \"/exp/train.py\", line 42, in <module>\n"
		"    main()\n"
		"  File \"/exp/train.py\", line 37, in main\n"
		"    acc = correct / total\n"
		"          ~~~~~~~~^~~~~~~\n"
		"ZeroDivisionError: division by zero\n";
	static const char syntax[] =
		"  File \"/exp/train.py\", line 3\n"
		"    def f(:\n"
		"          ^\n"
		"SyntaxError: invalid syntax\n";
	struct json_object *doc = diagnose_log(log, 1, 0);
	struct json_object *loc = NULL, *v = NULL;

	(void)state;
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "ZeroDivisionError: division by zero"));
	assert_non_null(strstr(field(doc, "summary"), "/exp/train.py line 37, in main"));
	assert_true(json_object_object_get_ex(doc, "location", &loc));
	assert_true(json_object_object_get_ex(loc, "function", &v));
	assert_string_equal(json_object_get_string(v), "main");
	assert_true(evidence_has(doc, "acc = correct / total"));
	assert_true(evidence_has(doc, "File \"/exp/train.py\", line 37, in main"));
	expect(doc, "code_error", "ZeroDivisionError");

	doc = diagnose_log(syntax, 1, 0);
	assert_string_equal(field(doc, "exception"), "SyntaxError");
	assert_true(evidence_has(doc, "def f(:"));
	expect(doc, "code_error", "SyntaxError: invalid syntax");

	expect(diagnose_log("done with step 3\n", 2, 0), "code_error", "done with step 3");
	doc = diagnose_log("", -1, SIGSEGV);
	assert_non_null(strstr(field(doc, "summary"), "a crash"));
	expect(doc, "code_error", NULL);
	/* A timer's signal, a broken pipe and a signal some process sent are no crash. */
	doc = diagnose_log("epoch 1\n", -1, SIGALRM);
	assert_non_null(strstr(field(doc, "summary"), "signal.alarm"));
	assert_null(strstr(field(doc, "summary"), "crash,"));
	assert_null(strstr(field(doc, "suggestion"), "native extensions"));
	expect(doc, "code_error", NULL);
	doc = diagnose_log("", -1, SIGPIPE);
	assert_non_null(strstr(field(doc, "summary"), "pipe"));
	expect(doc, "code_error", NULL);
	doc = diagnose_log("", -1, SIGUSR1);
	assert_non_null(strstr(field(doc, "summary"), "which a process sent"));
	assert_string_equal(field(doc, "confidence"), "low");
	expect(doc, "code_error", NULL);
	doc = diagnose_log("Segmentation fault (core dumped)\n", 139, 0);
	assert_non_null(strstr(field(doc, "summary"), "SIGSEGV"));
	expect(doc, "code_error", "Segmentation fault");
}

/* stdout and stderr are two pipes: a metric line of stdout can stand between a traceback's
 * frames or before its exception line in run.log. The exception is still the traceback's. */
static void test_a_line_of_the_other_stream_inside_a_traceback(void **state)
{
	static const char inside[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in <module>\n"
		"accuracy: 0.91\n"
		"    run()\n"
		"  File \"/exp/main.py\", line 5, in run\n"
		"    open(\"missing.bin\").read()\n"
		"Accuracy: 0.5\n"
		"OSError: [Errno 5] Input/output error\n";
	/* A traceback that really ends: the next line is no exception, and nothing follows. */
	static const char cut[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in <module>\n"
		"    run()\n"
		"accuracy: 0.91\n"
		"done\n";
	struct json_object *doc = diagnose_log(inside, 1, 0);

	(void)state;
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "OSError");
	assert_non_null(strstr(field(doc, "summary"), "/exp/main.py line 5, in run"));
	json_object_put(doc);
	doc = diagnose_log(cut, 1, 0);
	assert_non_null(doc);
	assert_null(strstr(field(doc, "summary"), "accuracy"));
	json_object_put(doc);
}

static void test_exception_group(void **state)
{
	static const char log[] =
		"  + Exception Group Traceback (most recent call last):\n"
		"  |   File \"/exp/run.py\", line 9, in <module>\n"
		"  |     asyncio.run(main())\n"
		"  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
		"  +-+---------------- 1 ----------------\n"
		"    | Traceback (most recent call last):\n"
		"    |   File \"/exp/run.py\", line 5, in fetch\n"
		"    |     import aiohttp\n"
		"    | ModuleNotFoundError: No module named 'aiohttp'\n"
		"    +------------------------------------\n";
	struct json_object *doc = diagnose_log(log, 1, 0);

	(void)state;
	assert_non_null(doc);
	/* The last traceback decides; the group names nothing of its own. */
	expect(doc, "missing_package", "No module named 'aiohttp'");
}

static void test_timeout_and_infra(void **state)
{
	lb_failure_input timeout = { .log_tail = "TIME_GUARD: 250.0s\nstep 900\n",
				     .log_tail_len = 28,
				     .exit_code = -1,
				     .signal = SIGKILL,
				     .timed_out = true };
	lb_failure_input infra = { .exit_code = -1,
				   .infra_error = true,
				   .infra_message = "cannot create user namespace: Operation not "
						    "permitted" };
	struct json_object *doc;

	(void)state;
	expect(lb_diagnose_failure(&timeout), "timeout", "step 900");
	doc = lb_diagnose_failure(&infra);
	assert_non_null(strstr(field(doc, "summary"), "user namespace"));
	expect(doc, "infra_error", NULL);
}

static void test_hostile_log(void **state)
{
	/* Binary junk, NULs, invalid UTF-8 and a huge line: the output stays valid JSON. */
	static const char end[] = "\nValueError: \xff\xfe bad \x01\x02 input\n";
	size_t len = 300000;
	char *log = malloc(len);
	lb_failure_input in = { .log_tail = log, .log_tail_len = len, .exit_code = 1 };
	struct json_object *doc, *back;
	struct json_tokener *tok;
	const char *text;

	(void)state;
	for (size_t i = 0; i < len; i++)
		log[i] = (char)((i * 2654435761u) >> 13);
	memcpy(log + len - sizeof(end), end, sizeof(end) - 1);
	log[len - 1] = '\n';
	doc = lb_diagnose_failure(&in);
	assert_non_null(doc);
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8 | JSON_TOKENER_STRICT);
	back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	assert_non_null(back);
	json_object_put(back);
	json_tokener_free(tok);
	expect(doc, "code_error", "ValueError");
	free(log);
}

static struct json_object *diagnose_bytes(const char *log, size_t len, int exit_code)
{
	lb_failure_input in = { .log_tail = log, .log_tail_len = len, .exit_code = exit_code };

	return lb_diagnose_failure(&in);
}

static void test_gpu_unavailable_more(void **state)
{
	static const char assert_cuda[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in <module>\n"
		"    device = pick_device(cfg)\n"
		"  File \"/exp/util.py\", line 4, in pick_device\n"
		"    assert torch.cuda.is_available(), f\"Device set to {name}, but {name} is unavailable.\"\n"
		"AssertionError: Device set to cuda, but cuda is unavailable.\n";
	/* torch prints a NUL before the traceback it forwards from a worker; the tail given to
	 * the classifier holds it, and what follows still counts. */
	static const char nul_driver[] =
		"epoch 0 starting\n"
		"\0\0Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 14, in <module>\n"
		"    model = model.to(\"cuda\")\n"
		"  File \"/usr/lib/python3/dist-packages/torch/cuda/__init__.py\", line 298, in _lazy_init\n"
		"    torch._C._cuda_init()\n"
		"RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
		"NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n";
	struct json_object *doc;

	(void)state;
	doc = diagnose_log(assert_cuda, 1, 0);
	assert_string_equal(field(doc, "exception"), "AssertionError");
	assert_non_null(strstr(field(doc, "suggestion"), "--gpus"));
	expect(doc, "gpu_unavailable", "cuda is unavailable");
	doc = diagnose_bytes(nul_driver, sizeof(nul_driver) - 1, 1);
	assert_string_equal(field(doc, "exception"), "RuntimeError");
	expect(doc, "gpu_unavailable", "Found no NVIDIA driver");
}

static void test_binary_bytes_in_tail(void **state)
{
	/* A progress bar's NULs, a pickled blob written to stdout, then a traceback. */
	static const char log[] =
		"\x80\x04\x95\x1a\0\0\0\0\0\0\0}\x94(\x8c\x03" "acc\x94G?\xe0\0\0\0\0\0\0u.\n"
		"loss \0 0.5\x07\x7f\n"
		"Trace\0back (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    import lightgbm\n"
		"ModuleNotFoundError: No module named 'light\0gbm'\n";
	struct json_object *doc = diagnose_bytes(log, sizeof(log) - 1, 1);

	(void)state;
	assert_string_equal(field(doc, "exception"), "ModuleNotFoundError");
	expect(doc, "missing_package", "No module named 'lightgbm'");
}

static void test_hf_datasets(void **state)
{
	static const char not_found[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    ds = load_dataset(\"stanfordnlp/imdbx\")\n"
		"  File \"/usr/local/lib/python3.11/site-packages/datasets/load.py\", line 2129, in load_dataset\n"
		"    builder_instance = load_dataset_builder(\n"
		"  File \"/usr/local/lib/python3.11/site-packages/datasets/load.py\", line 1512, in dataset_module_factory\n"
		"    raise e1 from None\n"
		"  File \"/usr/local/lib/python3.11/site-packages/datasets/load.py\", line 1468, in dataset_module_factory\n"
		"    raise DatasetNotFoundError(msg) from e\n"
		"datasets.exceptions.DatasetNotFoundError: Dataset 'stanfordnlp/imdbx' doesn't exist "
		"on the Hub or cannot be accessed.\n";
	static const char no_script[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    ds = load_dataset(\"mydata\")\n"
		"FileNotFoundError: Couldn't find a dataset script at /exp/mydata/mydata.py or any data "
		"file in the same directory.\n";
	static const char no_script_offline[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    ds = load_dataset(\"imdb\")\n"
		"FileNotFoundError: Couldn't find a dataset script at /exp/imdb/imdb.py or any data file "
		"in the same directory. Couldn't find 'imdb' on the Hugging Face Hub either: "
		"ConnectionError: Couldn't reach 'imdb' on the Hub (ConnectionError)\n";
	static const char offline[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    ds = load_dataset(\"imdb\")\n"
		"ConnectionError: Couldn't reach 'imdb' on the Hub (LocalEntryNotFoundError)\n";
	static const char hub_offline[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 6, in <module>\n"
		"    path = hf_hub_download(\"gpt2\", \"config.json\")\n"
		"huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach "
		"https://huggingface.co/api/models/gpt2: offline mode is enabled. To disable it, please "
		"unset the `HF_HUB_OFFLINE` environment variable.\n";
	/* The Hub call failed on the sandbox's denied socket; datasets then says "not found". */
	static const char chained[] =
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/urllib3/connection.py\", line 198, in _new_conn\n"
		"    sock = connection.create_connection(\n"
		"PermissionError: [Errno 1] Operation not permitted\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/requests/adapters.py\", line 486, in send\n"
		"    resp = conn.urlopen(\n"
		"urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='huggingface.co', port=443): "
		"Max retries exceeded with url: /api/datasets/imdb (Caused by "
		"NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3>: Failed to "
		"establish a new connection: [Errno 1] Operation not permitted'))\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    ds = load_dataset(\"imdb\")\n"
		"datasets.exceptions.DatasetNotFoundError: Dataset 'imdb' doesn't exist on the Hub or "
		"cannot be accessed.\n";
	struct json_object *doc;

	(void)state;
	doc = diagnose_log(not_found, 1, 0);
	assert_string_equal(field(doc, "exception"), "datasets.exceptions.DatasetNotFoundError");
	assert_non_null(strstr(field(doc, "suggestion"), "-v SRC:DST:ro"));
	expect(doc, "missing_data", "doesn't exist on the Hub");
	expect(diagnose_log(no_script, 1, 0), "missing_data", "Couldn't find a dataset script");
	expect(diagnose_log(no_script_offline, 1, 0), "network", "Couldn't reach 'imdb'");
	expect(diagnose_log(offline, 1, 0), "network", "Couldn't reach 'imdb'");
	expect(diagnose_log(hub_offline, 1, 0), "network", "offline mode is enabled");
	doc = diagnose_log(chained, 1, 0);
	assert_string_equal(field(doc, "exception"), "urllib3.exceptions.MaxRetryError");
	assert_true(evidence_has(doc, "DatasetNotFoundError"));
	expect(doc, "network", "Max retries exceeded");
}

/* A spawned child's refusal by the runtime gate, uncaught in a traceback of its own, then the
 * parent's generic error about the child: the refusal is the verdict, the parent's line the
 * experiment's location. A generic error alone stays code_error, and so does one after a
 * child's EPERM from the kernel, which is no refusal of the gate. */
/* torch's DataLoader raises a worker's exception again in the parent, with the worker's
 * traceback as text below it ("Original Traceback"): the worker's is the root, its class
 * and its line in the experiment's code (__getitem__), not the loop that got it. */
static void test_worker_original_traceback(void **state)
{
	(void)state;
	static const char head[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 16, in <module>\n"
		"    for b in dl:\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1359, in _process_data\n"
		"    data.reraise()\n"
		"  File \"/usr/lib/python3/dist-packages/torch/_utils.py\", line 543, in reraise\n"
		"    raise exception\n";
	static const char body[] =
		"Original Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302, in _worker_loop\n"
		"    data = fetcher.fetch(index)\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58, in <listcomp>\n"
		"    data = [self.dataset[idx] for idx in possibly_batched_index]\n"
		"  File \"/exp/main.py\", line 10, in __getitem__\n";
	char full[4096];
	snprintf(full, sizeof full, "%s%s%s%s%s", head,
		 "IndexError: Caught IndexError in DataLoader worker process 0.\n", body,
		 "    return self.data[i]\n", "IndexError: list index out of range\n");
	struct json_object *doc = diagnose_log(full, 1, 0);
	assert_non_null(doc);
	struct json_object *loc = NULL, *v = NULL;
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 10);
	assert_true(evidence_has(doc, "Caught IndexError"));
	expect(doc, "code_error", "list index out of range");
	/* a worker that could not find its data file: missing_data, naming the path */
	snprintf(full, sizeof full, "%s%s%s%s%s", head,
		 "FileNotFoundError: Caught FileNotFoundError in DataLoader worker process 1.\n", body,
		 "    return np.load(self.paths[i])\n",
		 "FileNotFoundError: [Errno 2] No such file or directory: 'data/shard_3.npy'\n");
	expect(diagnose_log(full, 1, 0), "missing_data", "data/shard_3.npy");

	/* A pool's worker: its traceback as text, the cause of the same error in the parent. */
	static const char remote[] =
		"multiprocessing.pool.RemoteTraceback: \n"
		"\"\"\"\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3.11/multiprocessing/pool.py\", line 125, in worker\n"
		"    result = (True, func(*args, **kwds))\n"
		"  File \"/exp/main.py\", line 7, in work\n"
		"    return d[x]\n"
		"KeyError: 'b'\n"
		"\"\"\"\n"
		"\n"
		"The above exception was the direct cause of the following exception:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 11, in <module>\n"
		"    print(pool.map(work, [\"a\", \"b\"]))\n"
		"  File \"/usr/lib/python3.11/multiprocessing/pool.py\", line 774, in get\n"
		"    raise self._value\n"
		"KeyError: 'b'\n";
	doc = diagnose_log(remote, 1, 0);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 7);
	expect(doc, "code_error", "return d[x]");
}

static void test_child_gate_refusal(void **state)
{
	(void)state;
	static const char child[] =
		"Traceback (most recent call last):\n"
		"  File \"<string>\", line 1, in <module>\n"
		"  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 130, in _main\n"
		"    self = reduction.pickle.load(from_parent)\n"
		"PermissionError: [Errno 1] labbox runtime gate refused pickle.find_class: gate.pickle "
		"pickle find_class outside the allowlist (policy standard); posix.getcwd is not a class "
		"or reconstruction function labbox allows to unpickle\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 8, in <module>\n"
		"    mp.spawn(work, nprocs=2)\n"
		"  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 149, in join\n"
		"    raise ProcessExitedException(\n"
		"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1\n";
	struct json_object *doc = diagnose_gated(child, GATE_PICKLE_REFUSED);
	assert_non_null(doc);
	assert_string_equal(field(doc, "rule"), "gate.pickle");
	assert_string_equal(field(doc, "gate_event"), "pickle.find_class");
	assert_string_equal(field(doc, "confidence"), "medium");
	struct json_object *loc = NULL, *v = NULL;
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 8);
	assert_true(evidence_has(doc, "ProcessExitedException"));
	expect(doc, "gate_refused", "posix.getcwd");

	static const char generic[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    run()\n"
		"KeyError: 'lr'\n";
	expect(diagnose_log(generic, 1, 0), "code_error", "KeyError");
	/* A refusal of another kind of error (the kernel's EPERM) is no gate refusal. */
	static const char eperm[] =
		"Traceback (most recent call last):\n"
		"  File \"<string>\", line 1, in <module>\n"
		"PermissionError: [Errno 1] Operation not permitted: '/sys/fs'\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 8, in <module>\n"
		"    mp.spawn(work, nprocs=2)\n"
		"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1\n";
	expect(diagnose_log(eperm, 1, 0), "code_error", "ProcessExitedException");

	/* Two workers failing at once: the second one's header lands inside the first one's
	 * traceback, which then parses as no chain; the refusal's own line still decides. */
	static const char mixed[] =
		"Process ForkProcess-2:\n"
		"Traceback (most recent call last):\n"
		"Process ForkProcess-1:\n"
		"  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 314, in _bootstrap\n"
		"    self.run()\n"
		"  File \"/usr/lib/python3.11/concurrent/futures/process.py\", line 244, in _process_worker\n"
		"    call_item = call_queue.get(block=True)\n"
		"  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 122, in get\n"
		"    return _ForkingPickler.loads(res)\n"
		"  File \"/run/labbox-gate/py/sitecustomize.py\", line 821, in hook\n"
		"    raise e\n"
		"PermissionError: [Errno 1] labbox runtime gate refused pickle.find_class: gate.pickle "
		"pickle find_class outside the allowlist (policy standard); json.loads is not a class "
		"or reconstruction function labbox allows to unpickle\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 19, in <module>\n"
		"    out = list(ex.map(fn, data))\n"
		"  File \"/usr/lib/python3.11/concurrent/futures/_base.py\", line 401, in __get_result\n"
		"    raise self._exception\n"
		"concurrent.futures.process.BrokenProcessPool: A process in the process pool was "
		"terminated abruptly while the future was running or pending.\n";
	doc = diagnose_gated(mixed, GATE_PICKLE_REFUSED);
	assert_non_null(doc);
	assert_string_equal(field(doc, "gate_event"), "pickle.find_class");
	assert_string_equal(field(doc, "confidence"), "medium");
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 19);
	assert_true(evidence_has(doc, "BrokenProcessPool"));
	expect(doc, "gate_refused", "json.loads");
	/* without the gate's record of it, the child's words decide nothing */
	expect(diagnose_log(child, 1, 0), "code_error", "ProcessExitedException");
}

/* A refusal is the verdict only when it ended the run (the last exception, or one its chain
 * leads to) and the gate recorded it; a refusal the code caught and printed before an
 * unrelated error, or the gate's words printed by the code, are not. */
static void test_gate_refusal_needs_its_record_and_the_end(void **state)
{
	(void)state;
	static const char caught[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in save_cache\n"
		"    with open(os.path.join(cfg[\"cache_dir\"], \"note.txt\"), \"w\") as f:\n"
		"  File \"/run/labbox-gate/py/sitecustomize.py\", line 1090, in hook\n"
		"    raise e\n"
		"PermissionError: [Errno 1] labbox runtime gate refused open: LB110 write outside the "
		"output paths (policy standard); destination /var/cache/exp/note.txt\n"
		"loss: 0.5\n"
		"loss: 0.25\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 19, in <module>\n"
		"    y = w @ x\n"
		"ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0\n";
	struct json_object *doc = diagnose_gated(caught, GATE_OPEN_REFUSED), *loc, *v;
	assert_string_equal(field(doc, "exception"), "ValueError");
	assert_false(json_object_object_get_ex(doc, "gate_event", &v));
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 19);
	assert_false(evidence_has(doc, "runtime gate refused"));
	expect(doc, "code_error", "ValueError: matmul");

	static const char printed[] =
		"Traceback (most recent call last):\n"
		"  File \"/x/main.py\", line 3, in <module>\n"
		"PermissionError: [Errno 1] labbox runtime gate refused subprocess.Popen: LB102 "
		"subprocess (policy standard)\n"
		"loss: 0.3\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 6, in <module>\n"
		"    raise ValueError(\"shape mismatch in layer 3\")\n"
		"ValueError: shape mismatch in layer 3\n";
	doc = diagnose_gated(printed, "{\"events\": [], \"refused\": 0}");
	assert_false(json_object_object_get_ex(doc, "gate_event", &v));
	expect(doc, "code_error", "shape mismatch in layer 3");

	/* the last exception in the gate's words: refused by it only when it says so */
	static const char last[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    open(\"/var/cache/exp/note.txt\", \"w\")\n"
		"PermissionError: [Errno 1] labbox runtime gate refused open: LB110 write outside the "
		"output paths (policy standard)\n";
	doc = diagnose_gated(last, GATE_OPEN_REFUSED);
	assert_string_equal(field(doc, "rule"), "LB110");
	assert_string_equal(field(doc, "gate_event"), "open");
	expect(doc, "gate_refused", "LB110");
	/* --runtime-gate record: the event is there, refused false */
	doc = diagnose_gated(last, "{\"events\": [{\"event\": \"open\", \"refused\": false, "
				   "\"rule\": \"LB110\"}]}");
	assert_non_null(strstr(field(doc, "summary"), "did not record"));
	expect(doc, "code_error", "LB110");
	/* another rule's refusal of the same event is not this one */
	expect(diagnose_gated(last, "{\"events\": [{\"event\": \"open\", \"refused\": true, "
				    "\"rule\": \"LB999\"}]}"),
	       "code_error", "LB110");
	expect(diagnose_log(last, 1, 0), "code_error", "LB110");

	/* a library that catches the refusal and raises its own error: the chain leads to it */
	static const char wrapped[] =
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/cachelib/store.py\", line 40, in put\n"
		"    with open(path, \"w\") as f:\n"
		"PermissionError: [Errno 1] labbox runtime gate refused open: LB110 write outside the "
		"output paths (policy standard)\n"
		"\n"
		"The above exception was the direct cause of the following exception:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 5, in <module>\n"
		"    store.put(\"k\", 1)\n"
		"  File \"/usr/lib/python3/dist-packages/cachelib/store.py\", line 42, in put\n"
		"    raise CacheError(\"cannot write the cache\") from e\n"
		"cachelib.CacheError: cannot write the cache\n";
	doc = diagnose_gated(wrapped, GATE_OPEN_REFUSED);
	assert_true(evidence_has(doc, "CacheError"));
	expect(doc, "gate_refused", "LB110");
	expect(diagnose_log(wrapped, 1, 0), "code_error", "CacheError");

	/* a child's refusal above a parent's error that is not about the child: the error's own */
	static const char unrelated[] =
		"Process SpawnProcess-1:\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 130, in _main\n"
		"    self = reduction.pickle.load(from_parent)\n"
		"PermissionError: [Errno 1] labbox runtime gate refused pickle.find_class: gate.pickle "
		"pickle find_class outside the allowlist (policy standard)\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 12, in <module>\n"
		"    print(cfg[\"lr\"])\n"
		"KeyError: 'lr'\n";
	expect(diagnose_gated(unrelated, GATE_PICKLE_REFUSED), "code_error", "KeyError");
}

static void test_chain_root_cause(void **state)
{
	/* A cache miss handled by downloading: the download's failure is the cause. */
	static const char cache_miss[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/data.py\", line 8, in load\n"
		"    return np.load(\"cache/train.npy\")\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'cache/train.npy'\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/data.py\", line 10, in load\n"
		"    urllib.request.urlretrieve(URL, \"cache/train.npy\")\n"
		"urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n";
	/* An optional import that was handled: the missing file after it is the failure. */
	static const char optional_import[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    import ujson as json\n"
		"ModuleNotFoundError: No module named 'ujson'\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 6, in <module>\n"
		"    cfg = json.load(open(\"cfg/params.json\"))\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'cfg/params.json'\n";
	/* Three deep, with a generic error in the middle: the root names the class. */
	static const char deep[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/io.py\", line 3, in save\n"
		"    f = open(\"/results/out.json\", \"w\")\n"
		"OSError: [Errno 30] Read-only file system: '/results/out.json'\n"
		"\n"
		"The above exception was the direct cause of the following exception:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/io.py\", line 6, in save\n"
		"    raise ValueError(\"save failed\") from e\n"
		"ValueError: save failed\n"
		"\n"
		"During handling of the above exception, another exception occurred:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 40, in <module>\n"
		"    raise SystemError(\"run aborted\")\n"
		"SystemError: run aborted\n";
	struct json_object *doc, *loc = NULL, *v = NULL;

	(void)state;
	expect(diagnose_log(cache_miss, 1, 0), "network", "Temporary failure in name resolution");
	expect(diagnose_log(optional_import, 1, 0), "missing_data", "cfg/params.json");
	doc = diagnose_log(deep, 1, 0);
	assert_string_equal(field(doc, "exception"), "OSError");
	assert_true(json_object_object_get_ex(doc, "location", &loc));
	assert_true(json_object_object_get_ex(loc, "file", &v));
	assert_string_equal(json_object_get_string(v), "/exp/io.py");
	assert_true(evidence_has(doc, "SystemError: run aborted"));
	expect(doc, "sandbox_restriction", "Read-only file system");
}

/* Cython's frames name their .pyx by a relative path: numpy's, not the experiment's. */
static void test_cython_frame_is_a_librarys(void **state)
{
	static const char log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 5, in nystroem\n"
		"    idx = rng.choice(len(X), m, replace=False)\n"
		"  File \"_generator.pyx\", line 847, in numpy.random._generator.Generator.choice\n"
		"TypeError: 'str' object cannot be interpreted as an integer\n";
	struct json_object *doc, *loc = NULL, *v = NULL;

	(void)state;
	doc = diagnose_log(log, 1, 0);
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_true(json_object_object_get_ex(loc, "file", &v));
	if (strcmp(json_object_get_string(v), "main.py") != 0)
		fail_msg("code_location %s", json_object_to_json_string(doc));
	assert_string_equal(field(doc, "confidence"), "medium");
	expect(doc, "code_error", "TypeError");
}

static void test_shm_exhausted(void **state)
{
	static const char bus[] =
		"ERROR: Unexpected bus error encountered in worker. This might be caused by "
		"insufficient shared memory (shm).\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1132, in _try_get_data\n"
		"    data = self._data_queue.get(timeout=timeout)\n"
		"  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 113, in get\n"
		"    if not self._poll(timeout):\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py\", line 66, in handler\n"
		"    _error_if_any_worker_fails()\n"
		"RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
		"possible that dataloader's workers are out of shared memory. Please try to raise your "
		"shared memory limit.\n"
		"\n"
		"The above exception was the direct cause of the following exception:\n"
		"\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 21, in <module>\n"
		"    for xb, yb in loader:\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1145, in _try_get_data\n"
		"    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e\n"
		"RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly\n";
	static const char write_failed[] =
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 308, in _worker_loop\n"
		"    data = fetcher.fetch(index)\n"
		"  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/reductions.py\", line 568, in reduce_storage\n"
		"    fd, size = storage._share_fd_cpu_()\n"
		"RuntimeError: unable to write to file </torch_4242_3141592653_0>: No space left on "
		"device (28)\n";
	static const char no_chain[] =
		"ERROR: Unexpected bus error encountered in worker. This might be caused by "
		"insufficient shared memory (shm).\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/train.py\", line 21, in <module>\n"
		"    for xb, yb in loader:\n"
		"RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly\n";
	static const char oserror[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/prep.py\", line 9, in <module>\n"
		"    np.save(\"/dev/shm/features.npy\", feats)\n"
		"OSError: [Errno 28] No space left on device: '/dev/shm/features.npy'\n";
	struct json_object *doc;

	(void)state;
	doc = diagnose_log(bus, 1, 0);
	assert_non_null(strstr(field(doc, "suggestion"), "--shm-size"));
	assert_true(evidence_has(doc, "exited unexpectedly"));
	expect(doc, "sandbox_restriction", "killed by signal: Bus error");
	doc = diagnose_log(write_failed, 1, 0);
	assert_non_null(strstr(field(doc, "suggestion"), "--shm-size"));
	expect(doc, "sandbox_restriction", "unable to write to file </torch_");
	doc = diagnose_log(no_chain, 1, 0);
	assert_non_null(strstr(field(doc, "suggestion"), "--shm-size"));
	expect(doc, "sandbox_restriction", "Unexpected bus error");
	doc = diagnose_log(oserror, 1, 0);
	assert_non_null(strstr(field(doc, "suggestion"), "--shm-size"));
	expect(doc, "sandbox_restriction", "/dev/shm/features.npy");
	/* A full /tmp is still the general advice. */
	doc = diagnose_log("OSError: [Errno 28] No space left on device: '/tmp/x.bin'\n", 1, 0);
	assert_non_null(strstr(field(doc, "suggestion"), "--tmpfs"));
	expect(doc, "sandbox_restriction", "No space left");
}

static void test_denied_socket_names_network_flag(void **state)
{
	static const char log[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    s = socket.create_connection((\"10.0.0.5\", 6379))\n"
		"  File \"/usr/lib/python3.11/socket.py\", line 831, in create_connection\n"
		"    sock = socket(af, socktype, proto)\n"
		"  File \"/usr/lib/python3.11/socket.py\", line 232, in __init__\n"
		"    _socket.socket.__init__(self, family, type, proto, fileno)\n"
		"PermissionError: [Errno 1] Operation not permitted\n";
	struct json_object *doc = diagnose_log(log, 1, 0);

	(void)state;
	assert_non_null(strstr(field(doc, "suggestion"), "--network"));
	expect(doc, "sandbox_restriction", "Operation not permitted");
}

/* Diagnosis warnings ------------------------------------------------------------------------ */

/* The warnings of a run that printed log, reported metrics (JSON text) and left files
 * (name, content pairs, NULL-terminated) in its experiment directory. */
static struct json_object *warnings_of(const char *log, size_t len, const char *metrics,
				       const char *const *files, char *const *args, size_t nargs)
{
	char dir[] = "/tmp/lbdiagXXXXXX";
	struct json_object *out = json_object_new_array(), *m = NULL;
	lb_diagnosis_input in = { .log = log, .log_len = len, .entry = "main.py", .args = args,
				  .nargs = nargs };

	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; files && files[i]; i += 2) {
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (strchr(files[i], '/')) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s/%.*s", dir,
				 (int)(strchr(files[i], '/') - files[i]), files[i]);
			mkdir(sub, 0700);
		}
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(files[i + 1], f);
		fclose(f);
	}
	if (metrics) {
		m = json_tokener_parse(metrics);
		assert_non_null(m);
	}
	in.metrics = m;
	in.exp_dir = dir;
	assert_int_equal(lb_diagnose_warnings(&in, out), 0);
	json_object_put(m);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
	return out;
}

/* The first warning of kind, or NULL. */
static struct json_object *warning_kind(struct json_object *ws, const char *kind, size_t nth)
{
	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		struct json_object *w = json_object_array_get_idx(ws, i);

		if (strcmp(field(w, "kind"), kind) == 0 && nth-- == 0)
			return w;
	}
	return NULL;
}

/* A worker's traceback with a metric line of stdout inside it (two pipes): the warning quotes
 * the exception's line, socket's lower-case classes included, never the metric. */
static void test_worker_exception_with_the_other_stream_inside(void **state)
{
	static const char log[] =
		"Exception in thread Thread-1 (evaluate):\n"
		"epoch: 1\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in evaluate\n"
		"accuracy: 0.9\n"
		"    raise ValueError(\"shapes\")\n"
		"loss: 0.2\n"
		"ValueError: shapes\n"
		"Process Process-1:\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 8, in fetch\n"
		"socket.gaierror: [Errno -2] Name or service not known\n";
	struct json_object *ws = warnings_of(log, sizeof(log) - 1, NULL, NULL, NULL, 0);
	struct json_object *w = warning_kind(ws, "worker_exception", 0), *ev;

	(void)state;
	assert_non_null(w);
	assert_true(json_object_object_get_ex(w, "evidence", &ev));
	const char *all = json_object_to_json_string(ev);
	assert_non_null(strstr(all, "ValueError: shapes"));
	assert_non_null(strstr(all, "socket.gaierror"));
	assert_null(strstr(all, "accuracy"));
	assert_null(strstr(all, "loss"));
	assert_null(strstr(all, "epoch"));
	json_object_put(ws);
}

static size_t count_kind(struct json_object *ws, const char *kind)
{
	size_t n = 0;

	while (warning_kind(ws, kind, n))
		n++;
	return n;
}

/* exception_caught_at_end of a completed run: the log and each stream's last line. */
static struct json_object *caught_of(const char *log, const char *out_last, const char *err_last,
				     const char *failure_class)
{
	struct json_object *out = json_object_new_array();
	lb_diagnosis_input in = { .log = log, .log_len = strlen(log), .stdout_last = out_last,
				  .stderr_last = err_last, .failure_class = failure_class };

	assert_int_equal(lb_diagnose_warnings(&in, out), 0);
	return out;
}

#define CAUGHT_TB                                                                          \
	"Traceback (most recent call last):\n"                                             \
	"  File \"/exp/main.py\", line 14, in <module>\n"                                  \
	"    main()\n"                                                                     \
	"  File \"/exp/main.py\", line 8, in main\n"                                       \
	"    raise ValueError(f\"shapes {a} {b}\")\n"                                      \
	"ValueError: shapes (9,) (8,)\n"

static void test_warn_exception_caught_at_end(void **state)
{
	static const char far[] = "train_loss: 6.1\ntrain_loss: 5.9\nnote 1\nnote 2\nnote 3\n"
				  "note 4\n" CAUGHT_TB "\n\n";
	struct json_object *ws = caught_of(far, "train_loss: 5.9", "ValueError: shapes (9,) (8,)",
					   NULL), *w, *v;

	(void)state;
	w = warning_kind(ws, "exception_caught_at_end", 0);
	assert_non_null(w);
	assert_string_equal(field(w, "exception"), "ValueError");
	assert_non_null(strstr(field(w, "message"), "ValueError: shapes (9,) (8,)"));
	assert_non_null(strstr(field(w, "message"), "main.py line 8, in main"));
	assert_true(json_object_object_get_ex(w, "order_certain", &v) && json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(w, "evidence", &v));
	assert_int_equal(json_object_array_length(v), 3);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
			    "run.log line 7: Traceback (most recent call last):");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)),
			    "run.log line 10: File \"/exp/main.py\", line 8, in main");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 2)),
			    "run.log line 12: ValueError: shapes (9,) (8,)");
	json_object_put(ws);

	/* stdout's last line just above it: may have come after it; named, in doubt */
	ws = caught_of("train_loss: 5.9\n" CAUGHT_TB, "train_loss: 5.9",
		       "ValueError: shapes (9,) (8,)", NULL);
	w = warning_kind(ws, "exception_caught_at_end", 0);
	assert_non_null(w);
	assert_true(json_object_object_get_ex(w, "order_certain", &v) && !json_object_get_boolean(v));
	assert_non_null(strstr(field(w, "message"), "stdout's last line, run.log line 1"));
	json_object_put(ws);

	/* the traceback printed to stdout, nothing on stderr */
	ws = caught_of("acc: 0.1\n" CAUGHT_TB, "ValueError: shapes (9,) (8,)", NULL, NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 1);
	json_object_put(ws);
}

static void test_no_warn_exception_caught_at_end(void **state)
{
	struct json_object *ws;

	(void)state;
	/* stdout's last line read inside the traceback: stdout is drained first, so the program
	 * printed it after the traceback began */
	ws = caught_of("Traceback (most recent call last):\n"
		       "  File \"/exp/main.py\", line 8, in main\n"
		       "accuracy: 0.9\n"
		       "    raise ValueError(\"x\")\n"
		       "ValueError: x\n",
		       "accuracy: 0.9", "ValueError: x", NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	json_object_put(ws);
	/* stderr went on past what the log's end shows */
	ws = caught_of(CAUGHT_TB, NULL, "done", NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	json_object_put(ws);
	/* output after it */
	ws = caught_of(CAUGHT_TB "falling back to the CPU\n", NULL, "falling back to the CPU", NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	json_object_put(ws);
	/* a failed run, a thread's death, a bare exception line, an ignored exception */
	ws = caught_of(CAUGHT_TB, NULL, "ValueError: shapes (9,) (8,)", "code_error");
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	json_object_put(ws);
	ws = caught_of("Exception in thread Thread-1 (work):\n" CAUGHT_TB, NULL,
		       "ValueError: shapes (9,) (8,)", NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	assert_int_equal(count_kind(ws, "worker_exception"), 1);
	json_object_put(ws);
	ws = caught_of("acc: 0.5\nValueError: bad input\n", NULL, "ValueError: bad input", NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	json_object_put(ws);
	ws = caught_of("acc: 0.5\nException ignored in: <function Loader.__del__ at 0x7f>\n"
		       CAUGHT_TB, "acc: 0.5", "ValueError: shapes (9,) (8,)", NULL);
	assert_int_equal(count_kind(ws, "exception_caught_at_end"), 0);
	json_object_put(ws);
}

static bool warning_evidence_has(struct json_object *w, const char *needle)
{
	return evidence_has(w, needle);
}

static void test_warn_loss_divergence(void **state)
{
	static const char rising[] =
		"Epoch 1/5\n"
		"step 100 | loss: 2.3026 | lr 0.5\n"
		"step 200 | loss: 3.9112 | lr 0.5\n"
		"step 300 | loss: 41.07 | lr 0.5\n"
		"step 400 | loss: 8312.5 | lr 0.5\n"
		"step 500 | loss: 1.2e+06 | lr 0.5\n";
	static const char to_nan[] =
		"condition: adam_lr1\n"
		"Epoch: 1, Batch: 10, Loss: 0.6931\n"
		"Epoch: 1, Batch: 20, Loss: 0.7012\n"
		"Epoch: 1, Batch: 30, Loss: nan\n"
		"condition: sgd\n"
		"Epoch: 1, Batch: 10, Loss: 0.6931\n"
		"Epoch: 1, Batch: 20, Loss: 0.52\n";
	static const char tagged[] =
		"condition=A seed=0 step=1 train_loss: 0.9\n"
		"condition=B seed=0 step=1 train_loss: 0.9\n"
		"condition=A seed=0 step=2 train_loss: 0.5\n"
		"condition=B seed=0 step=2 train_loss=12.0\n"
		"condition=A seed=0 step=3 train_loss: 0.3\n"
		"condition=B seed=0 step=3 train_loss=tensor(inf, grad_fn=<NllLossBackward0>)\n";
	/* Healthy training, AMP's loss scale growing, a loss that starts at NaN, a traceback
	 * quoting code. */
	static const char healthy[] =
		"step 1 loss: 2.30 loss_scale: 65536\n"
		"step 2 loss: 1.10 loss_scale: 131072\n"
		"step 3 loss: 0.40 loss_scale: 1.67e+07\n"
		"step 4 loss: 0.45 loss_scale: 3.3e+08\n"
		"val_loss: nan\n"
		"val_loss: 0.5\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    loss = 1e9\n";
	struct json_object *ws, *w;

	(void)state;
	ws = warnings_of(rising, strlen(rising), NULL, NULL, NULL, 0);
	w = warning_kind(ws, "loss_divergence", 0);
	assert_non_null(w);
	assert_true(warning_evidence_has(w, "line 2: step 100 | loss: 2.3026"));
	assert_true(warning_evidence_has(w, "loss: 8312.5"));
	assert_string_equal(field(w, "metric"), "loss");
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	json_object_put(ws);

	ws = warnings_of(to_nan, strlen(to_nan), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	w = warning_kind(ws, "loss_divergence", 0);
	assert_string_equal(field(w, "condition"), "adam_lr1");
	assert_non_null(strstr(field(w, "message"), "NaN"));
	assert_true(warning_evidence_has(w, "Loss: nan"));
	json_object_put(ws);

	ws = warnings_of(tagged, strlen(tagged), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	w = warning_kind(ws, "loss_divergence", 0);
	assert_string_equal(field(w, "condition"), "B");
	assert_string_equal(field(w, "metric"), "train_loss");
	json_object_put(ws);

	ws = warnings_of(healthy, strlen(healthy), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 0);
	json_object_put(ws);
}

/* A part of an objective that grows while the run improves is no divergence (thirtieth
 * session): a VAE's KL term under annealing beside a falling reconstruction loss, PPO's value
 * loss beside rising returns. A total's name, a part printed alone, a part whose siblings did
 * not improve, and a NaN are still flagged. */
static void test_a_growing_part_of_an_improving_objective_is_no_divergence(void **state)
{
	static const char vae[] =
		"Epoch 1/5 | recon_loss: 180.20 | kl_loss: 0.012 | beta: 0.00\n"
		"Epoch 2/5 | recon_loss: 140.10 | kl_loss: 0.350 | beta: 0.25\n"
		"Epoch 3/5 | recon_loss: 121.50 | kl_loss: 2.100 | beta: 0.50\n"
		"Epoch 4/5 | recon_loss: 110.30 | kl_loss: 5.800 | beta: 0.75\n"
		"Epoch 5/5 | recon_loss: 104.90 | kl_loss: 8.400 | beta: 1.00\n"
		"test_elbo: -113.30\n";
	static const char ppo[] =
		"update 1: episodic_return: 9.5, value_loss: 0.4513, policy_loss: -0.0100\n"
		"update 2: episodic_return: 22.0, value_loss: 2.4200, policy_loss: -0.0080\n"
		"update 3: episodic_return: 80.3, value_loss: 32.2405, policy_loss: -0.0060\n"
		"update 4: episodic_return: 190.2, value_loss: 180.8802, policy_loss: -0.0040\n"
		"update 5: episodic_return: 410.7, value_loss: 843.3625, policy_loss: -0.0020\n";
	/* both parts explode: nothing improved */
	static const char parts_blow_up[] =
		"step 1 recon_loss: 3.2 kl_loss: 0.01\n"
		"step 2 recon_loss: 4.1 kl_loss: 0.02\n"
		"step 3 recon_loss: 40.0 kl_loss: 0.5\n"
		"step 4 recon_loss: 900.0 kl_loss: 8.0\n";
	/* the total explodes while an auxiliary term falls */
	static const char total_blows_up[] =
		"step 1 loss: 3.2 aux_loss: 0.5\n"
		"step 2 loss: 4.1 aux_loss: 0.3\n"
		"step 3 loss: 40.0 aux_loss: 0.2\n"
		"step 4 loss: 900.0 aux_loss: 0.1\n";
	/* a part printed alone is the objective */
	static const char alone[] =
		"epoch 1 kl_loss: 0.02\n"
		"epoch 2 kl_loss: 0.5\n"
		"epoch 3 kl_loss: 7.0\n";
	/* a rising KL term that then goes NaN, whatever its sibling does */
	static const char kl_nan[] =
		"Epoch 1 | recon_loss: 180.2 | kl_loss: 0.012\n"
		"Epoch 2 | recon_loss: 140.1 | kl_loss: 0.35\n"
		"Epoch 3 | recon_loss: 121.5 | kl_loss: 2.1\n"
		"Epoch 4 | recon_loss: 110.3 | kl_loss: nan\n";
	struct json_object *ws, *w;

	(void)state;
	ws = warnings_of(vae, strlen(vae), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 0);
	json_object_put(ws);
	ws = warnings_of(ppo, strlen(ppo), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 0);
	json_object_put(ws);

	ws = warnings_of(parts_blow_up, strlen(parts_blow_up), NULL, NULL, NULL, 0);
	w = warning_kind(ws, "loss_divergence", 0);
	assert_non_null(w);
	assert_string_equal(field(w, "metric"), "recon_loss");
	json_object_put(ws);
	ws = warnings_of(total_blows_up, strlen(total_blows_up), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	assert_string_equal(field(warning_kind(ws, "loss_divergence", 0), "metric"), "loss");
	json_object_put(ws);
	ws = warnings_of(alone, strlen(alone), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	json_object_put(ws);
	ws = warnings_of(kl_nan, strlen(kl_nan), NULL, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	w = warning_kind(ws, "loss_divergence", 0);
	assert_string_equal(field(w, "metric"), "kl_loss");
	assert_non_null(strstr(field(w, "message"), "NaN"));
	json_object_put(ws);
}

static void test_warn_runtime_warnings(void **state)
{
	/* numpy's warnings as Python prints them: the location, then the source line. */
	static const char log[] =
		"step 1\n"
		"/exp/main.py:14: RuntimeWarning: overflow encountered in exp\n"
		"  p = 1 / (1 + np.exp(-z))\n"
		"/exp/main.py:20: RuntimeWarning: divide by zero encountered in log\n"
		"  loss = -np.mean(y * np.log(p))\n"
		"/exp/main.py:20: RuntimeWarning: invalid value encountered in multiply\n"
		"  loss = -np.mean(y * np.log(p))\n"
		"/usr/lib/python3/dist-packages/numpy/core/_methods.py:192: RuntimeWarning: invalid "
		"value encountered in scalar divide\n"
		"  ret = ret.dtype.type(ret / rcount)\n"
		"/exp/main.py:3: DeprecationWarning: `np.float` is a deprecated alias\n";
	struct json_object *ws = warnings_of(log, strlen(log), NULL, NULL, NULL, 0), *w;

	(void)state;
	assert_int_equal(count_kind(ws, "runtime_warning"), 3);
	w = warning_kind(ws, "runtime_warning", 0);
	assert_string_equal(field(w, "warning"), "overflow");
	assert_true(warning_evidence_has(w, "/exp/main.py:14: RuntimeWarning: overflow"));
	w = warning_kind(ws, "runtime_warning", 1);
	assert_string_equal(field(w, "warning"), "invalid_value");
	assert_non_null(strstr(field(w, "message"), "2 lines"));
	w = warning_kind(ws, "runtime_warning", 2);
	assert_string_equal(field(w, "warning"), "divide_by_zero");
	json_object_put(ws);
}

/* A difference, spread or uncertainty of an accuracy near 1/k is no accuracy near chance:
 * CIFAR-10's generalization gap of 0.1 beside a test accuracy of 0.905. */
static void test_near_chance_is_for_an_accuracy_itself(void **state)
{
	static const char *const not_accuracies[] = {
		"acc_gap", "generalization_gap_acc", "train_test_acc_gap", "acc_margin", "acc_lift",
		"acc_uplift", "acc_increase", "acc_decrease", "acc_regret", "acc_forgetting",
		"acc_stderr", "acc_se", "acc_ci95", "acc_95ci", "acc_halfwidth", "acc_iqr",
		"acc_range", "acc_spread", "acc_ece", "acc_threshold", "acc_std", "acc_delta",
		"acc_diff", "val_acc_sd", "test/acc_interval", NULL };
	static const char *const accuracies[] = { "acc", "test_acc", "val-accuracy", "top1",
						  "acc1", "test/Accuracy", "eval_accuracy", NULL };
	(void)state;
	for (size_t i = 0; not_accuracies[i]; i++) {
		char metrics[256];
		snprintf(metrics, sizeof metrics,
			 "{\"values\": {\"dataset\": \"cifar10\", \"test_acc\": 0.905, \"%s\": 0.1}}",
			 not_accuracies[i]);
		struct json_object *ws = warnings_of("", 0, metrics, NULL, NULL, 0);
		if (count_kind(ws, "near_chance_accuracy") != 0)
			fail_msg("%s flagged: %s", not_accuracies[i], json_object_to_json_string(ws));
		json_object_put(ws);
	}
	for (size_t i = 0; accuracies[i]; i++) {
		char metrics[256];
		snprintf(metrics, sizeof metrics,
			 "{\"values\": {\"dataset\": \"cifar10\", \"%s\": 0.1}}", accuracies[i]);
		struct json_object *ws = warnings_of("", 0, metrics, NULL, NULL, 0);
		if (count_kind(ws, "near_chance_accuracy") != 1)
			fail_msg("%s not flagged: %s", accuracies[i], json_object_to_json_string(ws));
		json_object_put(ws);
	}
}

static void test_warn_near_chance(void **state)
{
	static const char by_metric[] =
		"{\"values\": {\"num_classes\": 10}, \"conditions\": {\"baseline\": {\"test_acc\": "
		"0.1043, \"loss\": 2.302}, \"ours\": {\"test_acc\": 0.874}}}";
	static const char percent[] =
		"{\"values\": {\"val_accuracy\": 1.2, \"top5_acc\": 5.0}, \"annotated\": [{\"condition\": "
		"null, \"metric\": \"val_accuracy\", \"value\": 1.2, \"text\": \"1.2%\", \"percent\": "
		"true}]}";
	static const char plain[] = "{\"values\": {\"accuracy\": 0.101}}";
	static const char *const cifar_src[] = {
		"main.py",
		"import torchvision\n"
		"MEAN = (0.485, 0.456, 0.406)  # IMAGENET_MEAN\n"
		"train = torchvision.datasets.CIFAR10(root='data', train=True, download=False)\n",
		NULL
	};
	static const char *const two_datasets[] = {
		"main.py", "a = datasets.MNIST('d')\nb = datasets.CIFAR100('d')\n", NULL
	};
	static const char *const keras[] = {
		"main.py", "(x, y), _ = tf.keras.datasets.cifar100.load_data()\n", NULL
	};
	static const char cifar100_metric[] = "{\"values\": {\"accuracy\": 0.011}}";
	char *dataset_args[] = { "--epochs", "3", "--dataset=ImageNet-1k" };
	char *classes_args[] = { "--num-classes", "2" };
	struct json_object *ws, *w;

	(void)state;
	ws = warnings_of("", 0, by_metric, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 1);
	w = warning_kind(ws, "near_chance_accuracy", 0);
	assert_string_equal(field(w, "condition"), "baseline");
	assert_string_equal(field(w, "metric"), "test_acc");
	assert_true(warning_evidence_has(w, "condition baseline test_acc: 0.1043"));
	assert_true(warning_evidence_has(w, "num_classes: 10 (stdout)"));
	json_object_put(ws);

	/* 1.2% of ImageNet's 1000 classes is not chance (0.1%); with 100 classes it is. */
	ws = warnings_of("", 0, percent, NULL, dataset_args, 3);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 0);
	json_object_put(ws);
	ws = warnings_of("", 0, "{\"values\": {\"val_accuracy\": 0.12, \"dataset\": \"cifar-100\"}}",
			 NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 0);
	json_object_put(ws);
	ws = warnings_of("", 0, percent, NULL, (char *[]){ "--dataset", "uoft-cs/cifar100" }, 2);
	w = warning_kind(ws, "near_chance_accuracy", 0);
	assert_non_null(w);
	assert_string_equal(field(w, "metric"), "val_accuracy");
	assert_true(warning_evidence_has(w, "--dataset uoft-cs/cifar100 (arguments)"));
	json_object_put(ws);

	ws = warnings_of("", 0, plain, cifar_src, NULL, 0);
	w = warning_kind(ws, "near_chance_accuracy", 0);
	assert_non_null(w);
	assert_true(warning_evidence_has(w, "main.py: CIFAR10( (source)"));
	json_object_put(ws);
	/* Two datasets with two answers: nothing is said. */
	ws = warnings_of("", 0, plain, two_datasets, NULL, 0);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 0);
	json_object_put(ws);
	ws = warnings_of("", 0, cifar100_metric, keras, NULL, 0);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 1);
	json_object_put(ws);
	ws = warnings_of("", 0, "{\"values\": {\"acc\": 0.52}}", NULL, classes_args, 2);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 1);
	json_object_put(ws);
	/* No way to know k: nothing. */
	ws = warnings_of("", 0, plain, NULL, NULL, 0);
	assert_int_equal(count_kind(ws, "near_chance_accuracy"), 0);
	json_object_put(ws);
}

static void test_warn_time_guard_skipped(void **state)
{
	static const char *const src[] = {
		"main.py",
		"import time\n"
		"CONDITIONS: list[str] = [\n"
		"    \"baseline\",  # the reference, [not, a, list]\n"
		"    \"dropout(0.1)\", 'dropout(0.5)', \"wd, 1e-4\",\n"
		"    \"mixup\",\n"
		"]\n"
		"for condition in CONDITIONS:\n"
		"    pass\n",
		NULL
	};
	static const char fired[] = "{\"time_guard\": \"240.1s - saving partial results\", "
				    "\"condition_order\": [\"baseline\", \"dropout(0.1)\"]}";
	static const char fired_late[] = "{\"time_guard\": \"240.1s - saving partial results\", "
					 "\"condition_order\": [\"a\", \"b\", \"c\"]}";
	static const char not_fired[] = "{\"time_guard\": null, \"condition_order\": [\"a\"]}";
	struct json_object *ws, *w, *v = NULL;

	(void)state;
	ws = warnings_of("", 0, fired, src, NULL, 0);
	w = warning_kind(ws, "time_guard_skipped", 0);
	assert_non_null(w);
	assert_true(json_object_object_get_ex(w, "planned", &v));
	assert_int_equal(json_object_get_int(v), 5);
	assert_true(json_object_object_get_ex(w, "reported", &v));
	assert_int_equal(json_object_get_int(v), 2);
	assert_true(warning_evidence_has(w, "main.py line 2: CONDITIONS"));
	assert_true(warning_evidence_has(w, "TIME_GUARD: 240.1s"));
	json_object_put(ws);
	ws = warnings_of("", 0, fired_late, src, NULL, 0);
	assert_int_equal(count_kind(ws, "time_guard_skipped"), 0);
	json_object_put(ws);
	ws = warnings_of("", 0, not_fired, src, NULL, 0);
	assert_int_equal(count_kind(ws, "time_guard_skipped"), 0);
	json_object_put(ws);
}

static void test_warn_stdlib_shadow(void **state)
{
	static const char *const files[] = {
		"main.py", "import json\n", "json.py", "def dump(x): pass\n", "config.py", "lr = 0.1\n",
		"test.py", "\n", "random/__init__.py", "\n", "typing/notes.txt", "\n", NULL
	};
	struct json_object *ws = warnings_of("", 0, NULL, files, NULL, 0), *w;
	bool json_seen = false, random_seen = false;

	(void)state;
	/* config is not the standard library's; test is, but nothing imports it; a directory
	 * without __init__.py is a namespace package, which yields to the real module. */
	assert_int_equal(count_kind(ws, "stdlib_shadow"), 2);
	for (size_t i = 0; (w = warning_kind(ws, "stdlib_shadow", i)); i++) {
		if (strcmp(field(w, "module"), "json") == 0) {
			json_seen = true;
			assert_string_equal(field(w, "file"), "json.py");
			assert_true(warning_evidence_has(w, "exp/json.py"));
		}
		if (strcmp(field(w, "module"), "random") == 0) {
			random_seen = true;
			assert_string_equal(field(w, "file"), "random/__init__.py");
		}
	}
	assert_true(json_seen && random_seen);
	json_object_put(ws);
}

static void test_warn_log_with_nuls(void **state)
{
	/* The log is read whole, NULs and binary bytes and all. */
	static const char log[] =
		"\0\x80\xff" "step 1 loss: 1.5\n"
		"\0step 2 loss: 9.0\n"
		"step 3 \x1b[31mloss: 2e4\x1b[0m\n"
		"\0/exp/m.py:2: RuntimeWarning: overflow encountered in square\n";
	struct json_object *ws = warnings_of(log, sizeof(log) - 1, NULL, NULL, NULL, 0);

	(void)state;
	assert_int_equal(count_kind(ws, "loss_divergence"), 1);
	assert_int_equal(count_kind(ws, "runtime_warning"), 1);
	json_object_put(ws);
}

static void test_runlog_tail_keeps_nuls(void **state)
{
	char path[] = "/tmp/lbrunlogXXXXXX";
	static const char out[] = "x\n\0Traceback (most recent call last):\n";
	lb_runlog *l;
	size_t len = 0;
	char *tail;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lb_runlog_open(path, 1 << 20, &l), 0);
	lb_runlog_write(l, out, sizeof(out) - 1);
	tail = lb_runlog_tail_n(l, 6144, &len);
	assert_int_equal(len, sizeof(out) - 1);
	assert_memory_equal(tail, out, len);
	free(tail);
	assert_int_equal(lb_runlog_close(l, NULL, NULL, NULL), 0);
	unlink(path);
}

static const char *sub(struct json_object *doc, const char *obj, const char *key)
{
	struct json_object *o = NULL, *v = NULL;

	if (!json_object_object_get_ex(doc, obj, &o) || !o ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v ? json_object_get_string(v) : NULL;
}

#define EXP "/runs/20260101-000000-abcdef/exp"
static const char library_raise[] =
	"Traceback (most recent call last):\n"
	"  File \"" EXP "/main.py\", line 6, in <module>\n"
	"    main()\n"
	"  File \"" EXP "/main.py\", line 3, in f\n"
	"    return np.linalg.inv(x)\n"
	"           ^^^^^^^^^^^^^^^^\n"
	"  File \"<__array_function__ internals>\", line 200, in inv\n"
	"  File \"/usr/lib/python3/dist-packages/numpy/linalg/linalg.py\", line 190, in "
	"_assert_stacked_square\n"
	"    raise LinAlgError('Last 2 dimensions of the array must be square')\n"
	"numpy.linalg.LinAlgError: Last 2 dimensions of the array must be square\n";

static void test_code_location_apart_from_raising_frame(void **state)
{
	(void)state;
	lb_failure_input in = {.log_tail = library_raise, .log_tail_len = strlen(library_raise),
			       .exit_code = 1, .exp_dir = EXP};
	struct json_object *doc = lb_diagnose_failure(&in);

	assert_non_null(doc);
	assert_string_equal(field(doc, "class"), "code_error");
	assert_string_equal(sub(doc, "location", "function"), "_assert_stacked_square");
	assert_string_equal(sub(doc, "code_location", "file"), "main.py");
	assert_string_equal(sub(doc, "code_location", "line"), "3");
	assert_string_equal(sub(doc, "code_location", "function"), "f");
	assert_string_equal(sub(doc, "code_location", "text"), "return np.linalg.inv(x)");
	/* a library raised it: the code's call or the library's version, not certain */
	assert_string_equal(field(doc, "confidence"), "medium");
	assert_non_null(strstr(field(doc, "summary"), "main.py line 3, in f"));
	assert_true(evidence_has(doc, "return np.linalg.inv(x)"));
	assert_true(evidence_has(doc, "LinAlgError"));
	json_object_put(doc);

	/* without exp_dir (a run recorded elsewhere) the exp/ directory still tells */
	in.exp_dir = NULL;
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "code_location", "file"), "main.py");
	json_object_put(doc);

	/* raised on the experiment's own line: certain */
	const char *own = "Traceback (most recent call last):\n"
			  "  File \"" EXP "/train.py\", line 9, in step\n"
			  "    loss = total / count\n"
			  "ZeroDivisionError: division by zero\n";
	in = (lb_failure_input){.log_tail = own, .log_tail_len = strlen(own), .exit_code = 1,
				.exp_dir = EXP};
	doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "code_error");
	assert_string_equal(field(doc, "confidence"), "high");
	assert_string_equal(sub(doc, "code_location", "file"), "train.py");
	assert_string_equal(sub(doc, "location", "file"), EXP "/train.py");
	assert_null(sub(doc, "escalation", "flag"));
	json_object_put(doc);

	/* only library frames: no code_location */
	const char *lib = "Traceback (most recent call last):\n"
			  "  File \"/usr/lib/python3.11/threading.py\", line 1038, in _bootstrap\n"
			  "    self.run()\n"
			  "ValueError: bad\n";
	doc = diagnose_log(lib, 1, 0);
	struct json_object *cl = (struct json_object *)1;
	assert_true(json_object_object_get_ex(doc, "code_location", &cl));
	assert_null(cl);
	assert_string_equal(field(doc, "confidence"), "medium");
	json_object_put(doc);
}

static void test_confidence_levels(void **state)
{
	(void)state;
	struct json_object *doc = diagnose_log("", 3, 0);
	assert_string_equal(field(doc, "class"), "code_error");
	assert_string_equal(field(doc, "confidence"), "low");
	assert_true(strlen(field(doc, "confidence_reason")) > 0);
	json_object_put(doc);
	doc = diagnose_log("step 1\n", -1, SIGKILL);
	assert_string_equal(field(doc, "class"), "oom");
	assert_string_equal(field(doc, "confidence"), "low");
	json_object_put(doc);
	doc = diagnose_log("step 1\nKilled\n", -1, SIGKILL);
	assert_string_equal(field(doc, "confidence"), "medium");
	json_object_put(doc);
	doc = diagnose_log("", -1, SIGSYS);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_string_equal(field(doc, "confidence"), "high");
	/* no flag lifts the seccomp filter */
	struct json_object *esc = (struct json_object *)1;
	assert_true(json_object_object_get_ex(doc, "escalation", &esc));
	assert_null(esc);
	json_object_put(doc);
	/* a message without a traceback */
	doc = diagnose_log("loading\nRuntimeError: CUDA out of memory. Tried to allocate 2 GiB\n"
			   "\nstill here\n", 1, 0);
	assert_string_equal(field(doc, "class"), "gpu_oom");
	json_object_put(doc);
	doc = diagnose_log("fatal: Could not resolve host: example.com\n", 1, 0);
	assert_string_equal(field(doc, "class"), "network");
	assert_string_equal(field(doc, "confidence"), "medium");
	json_object_put(doc);
	lb_failure_input t = {.exit_code = -1, .timed_out = true};
	doc = lb_diagnose_failure(&t);
	assert_string_equal(field(doc, "confidence"), "high");
	json_object_put(doc);
	/* a context chain: the handled exception is taken as the cause, less surely */
	const char *chain = "Traceback (most recent call last):\n"
			    "  File \"" EXP "/main.py\", line 2, in <module>\n"
			    "    import sklearn\n"
			    "ModuleNotFoundError: No module named 'sklearn'\n"
			    "\n"
			    "During handling of the above exception, another exception occurred:\n"
			    "\n"
			    "Traceback (most recent call last):\n"
			    "  File \"" EXP "/main.py\", line 4, in <module>\n"
			    "    raise SystemError('no backend')\n"
			    "SystemError: no backend\n";
	doc = diagnose_log(chain, 1, 0);
	assert_string_equal(field(doc, "class"), "missing_package");
	assert_string_equal(field(doc, "confidence"), "medium");
	json_object_put(doc);
}

static void test_escalations(void **state)
{
	(void)state;
	const char *net = "Traceback (most recent call last):\n"
			  "  File \"" EXP "/main.py\", line 3, in <module>\n"
			  "    r = urllib.request.urlopen('http://example.com')\n"
			  "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name "
			  "resolution>\n";
	lb_failure_input in = {.log_tail = net, .log_tail_len = strlen(net), .exit_code = 1};
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "network");
	assert_string_equal(field(doc, "confidence"), "high");
	assert_string_equal(sub(doc, "escalation", "flag"), "--network host");
	assert_string_equal(sub(doc, "escalation", "grants"), "network");
	assert_string_equal(sub(doc, "escalation", "granted"), "false");
	assert_non_null(strstr(field(doc, "suggestion"), "--network host"));
	json_object_put(doc);
	/* granted already: said, and not suggested again */
	in.network_host = true;
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "granted"), "true");
	assert_non_null(strstr(sub(doc, "escalation", "note"), "had this already"));
	json_object_put(doc);

	doc = diagnose_log("Traceback (most recent call last):\n"
			   "  File \"" EXP "/main.py\", line 3, in <module>\n"
			   "    x = torch.zeros(1).cuda()\n"
			   "RuntimeError: Found no NVIDIA driver on your system.\n", 1, 0);
	assert_string_equal(field(doc, "class"), "gpu_unavailable");
	assert_string_equal(sub(doc, "escalation", "flag"), "--gpus all");
	json_object_put(doc);

	doc = diagnose_log("Traceback (most recent call last):\n"
			   "  File \"" EXP "/main.py\", line 3, in <module>\n"
			   "    open('/data/out/r.csv', 'w')\n"
			   "OSError: [Errno 30] Read-only file system: '/data/out/r.csv'\n", 1, 0);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_string_equal(sub(doc, "escalation", "flag"), "-v SRC:/data/out:rw");
	assert_non_null(strstr(field(doc, "suggestion"), "-v SRC:/data/out:rw"));
	json_object_put(doc);

	doc = diagnose_log("Traceback (most recent call last):\n"
			   "  File \"" EXP "/main.py\", line 1, in <module>\n"
			   "    import sklearn\n"
			   "ModuleNotFoundError: No module named 'sklearn'\n", 1, 0);
	assert_string_equal(sub(doc, "escalation", "flag"), "--python VENV/bin/python");
	assert_string_equal(sub(doc, "escalation", "environment"), "pip install scikit-learn");
	json_object_put(doc);

	doc = diagnose_log("Traceback (most recent call last):\n"
			   "  File \"" EXP "/main.py\", line 1, in <module>\n"
			   "    import x\n"
			   "ImportError: numpy.core.multiarray failed to import\n", 1, 0);
	assert_string_equal(field(doc, "class"), "wrong_env");
	assert_string_equal(sub(doc, "escalation", "grants"), "environment");
	json_object_put(doc);

	lb_failure_input oom = {.exit_code = -1, .signal = SIGKILL, .oom_killed = true,
				.memory_limit = 1ULL << 30};
	doc = lb_diagnose_failure(&oom);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 2g");
	json_object_put(doc);
	oom.memory_limit = 768ULL << 20;
	doc = lb_diagnose_failure(&oom);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 1536m");
	json_object_put(doc);

	/* a failure labbox made itself gets one as well */
	doc = json_tokener_parse("{\"class\": \"sandbox_restriction\", \"summary\": \"the "
				 "experiment passed the disk limit of 10 bytes in exp/\", "
				 "\"evidence\": [], \"suggestion\": \"write less\"}");
	assert_int_equal(lb_diagnose_escalation(doc, NULL), 0);
	assert_string_equal(sub(doc, "escalation", "flag"), "--disk-limit SIZE");
	json_object_put(doc);
	assert_int_equal(lb_diagnose_escalation(NULL, NULL), -EINVAL);
}

/* torch.distributed's TCPStore opens its socket in native code, so no frame of Python's
 * socket module is above the EPERM: under --network none it is the network's case all the
 * same, loopback is enough for a server on this machine, and no frame's directory (torch's
 * own package) becomes a writable mount. A file's EPERM names its path and stays a write. */
static void test_a_native_socket_refused_is_the_networks(void **state)
{
	(void)state;
	const char *tcpstore =
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/main.py\", line 6, in <module>\n"
		"    dist.init_process_group(\"gloo\", rank=0, world_size=1)\n"
		"  File \"/usr/lib/python3/dist-packages/torch/distributed/rendezvous.py\", line 177, "
		"in _create_c10d_store\n"
		"    return TCPStore(\n"
		"RuntimeError: The server socket has failed to listen on any local network address. "
		"The server socket cannot be initialized on [::]:29511 (errno: 1 - Operation not "
		"permitted).\n";
	lb_failure_input in = {.log_tail = tcpstore, .log_tail_len = strlen(tcpstore),
			       .exit_code = 1, .network_none = true};
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_non_null(strstr(field(doc, "summary"), "local network socket"));
	assert_non_null(strstr(field(doc, "summary"), "--network none"));
	assert_string_equal(sub(doc, "escalation", "grants"), "network");
	assert_string_equal(sub(doc, "escalation", "flag"), "--network loopback");
	assert_non_null(strstr(field(doc, "suggestion"), "--network loopback"));
	assert_null(strstr(json_object_to_json_string(doc), ":rw"));
	json_object_put(doc);
	/* a zmq client to another machine: the host's network */
	const char *zmq = "Traceback (most recent call last):\n"
			  "  File \"" EXP "/main.py\", line 4, in <module>\n"
			  "    s.connect(\"tcp://10.1.2.3:5555\")\n"
			  "zmq.error.ZMQError: Operation not permitted (addr='tcp://10.1.2.3:5555')\n";
	in = (lb_failure_input){.log_tail = zmq, .log_tail_len = strlen(zmq), .exit_code = 1,
				.network_none = true};
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--network host");
	json_object_put(doc);
	/* under loopback the filter refuses no socket: not labbox's network, and still no
	 * mount over torch's package */
	in = (lb_failure_input){.log_tail = tcpstore, .log_tail_len = strlen(tcpstore),
				.exit_code = 1, .network_loopback = true};
	doc = lb_diagnose_failure(&in);
	assert_null(strstr(field(doc, "summary"), "network socket"));
	assert_null(strstr(json_object_to_json_string(doc), "dist-packages/torch/distributed:rw"));
	json_object_put(doc);
	/* a file's EPERM is a write, and a frame of an installed package is never the mount */
	doc = diagnose_log("Traceback (most recent call last):\n"
			   "  File \"" EXP "/main.py\", line 3, in <module>\n"
			   "    os.chmod('/data/bind_socket.txt', 0o4755)\n"
			   "PermissionError: [Errno 1] Operation not permitted: "
			   "'/data/bind_socket.txt'\n", 1, 0);
	assert_string_equal(sub(doc, "escalation", "grants"), "write");
	assert_string_equal(sub(doc, "escalation", "flag"), "-v SRC:/data:rw");
	json_object_put(doc);
	doc = diagnose_log("Traceback (most recent call last):\n"
			   "  File \"" EXP "/main.py\", line 3, in <module>\n"
			   "    lib.cache_write()\n"
			   "  File \"/usr/lib/python3/dist-packages/lib/cache.py\", line 9, in w\n"
			   "    open(os.path.join(os.path.dirname(__file__), 'c.bin'), 'wb')\n"
			   "OSError: [Errno 30] Read-only file system: "
			   "'/usr/lib/python3/dist-packages/lib/c.bin'\n", 1, 0);
	assert_string_equal(sub(doc, "escalation", "grants"), "write");
	assert_string_equal(sub(doc, "escalation", "flag"), "-v SRC:DST:rw");
	json_object_put(doc);
}

/* A write refused under a -v ...:rw the run had is not answered with another volume: granted,
 * and, as root, the cause named is SRC's owner and mode against uid 65534. A file the
 * experiment opened is a file to mount, and an ordinary user's run says nothing of 65534. */
static void test_a_write_under_a_granted_volume_names_who_may_write_it(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-unit-vol.XXXXXX", spec[128];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(spec, sizeof spec, "%s:/results:rw", dir);
	struct json_object *vols = json_object_new_array();
	json_object_array_add(vols, json_object_new_string(spec));
	const char *log = "Traceback (most recent call last):\n"
			  "  File \"" EXP "/main.py\", line 3, in <module>\n"
			  "    os.makedirs(out, exist_ok=True)\n"
			  "PermissionError: [Errno 13] Permission denied: '/results/exp1'\n";
	lb_failure_input in = {.log_tail = log, .log_tail_len = strlen(log), .exit_code = 1,
			       .volumes = vols, .payload_other_uid = true, .payload_uid = 65534,
			       .payload_gid = 65534};
	struct json_object *doc = lb_diagnose_failure(&in), *esc, *g;
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_true(json_object_object_get_ex(doc, "escalation", &esc));
	assert_true(json_object_object_get_ex(esc, "granted", &g) && json_object_get_boolean(g));
	assert_null(strstr(json_object_to_json_string(doc), "/results/exp1:rw"));
	assert_non_null(strstr(field(doc, "suggestion"), "chown 65534"));
	assert_non_null(strstr(field(doc, "suggestion"), "mode 0755"));
	assert_non_null(strstr(field(doc, "summary"), "writable volume /results"));
	json_object_put(doc);
	/* SRC writable by 65534: still granted, the path under it is what refused */
	assert_int_equal(chmod(dir, 0777), 0);
	doc = lb_diagnose_failure(&in);
	assert_true(json_object_object_get_ex(doc, "escalation", &esc));
	assert_true(json_object_object_get_ex(esc, "granted", &g) && json_object_get_boolean(g));
	assert_null(strstr(field(doc, "suggestion"), "mode 0777"));
	assert_non_null(strstr(field(doc, "suggestion"), "uid 65534"));
	json_object_put(doc);
	/* an ordinary user's run: granted, and nothing of uid 65534 */
	in.payload_other_uid = false;
	doc = lb_diagnose_failure(&in);
	assert_true(json_object_object_get_ex(doc, "escalation", &esc));
	assert_true(json_object_object_get_ex(esc, "granted", &g) && json_object_get_boolean(g));
	assert_null(strstr(json_object_to_json_string(doc), "65534"));
	json_object_put(doc);
	/* a :ro volume grants no write: the advice is a writable one */
	json_object_array_put_idx(vols, 0, json_object_new_string("/srv/r:/results:ro"));
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "-v SRC:/results/exp1:rw");
	json_object_put(doc);
	json_object_put(vols);
	rmdir(dir);

	/* a file the gate saw opened: SRC is a file, as root writable by 65534 */
	const char *hosts = "Traceback (most recent call last):\n"
			    "  File \"" EXP "/main.py\", line 1, in <module>\n"
			    "    open(\"/etc/hosts\", \"a\").write(\"x\")\n"
			    "PermissionError: [Errno 13] Permission denied: '/etc/hosts'\n";
	struct json_object *gate = json_tokener_parse(
		"{\"events\": [{\"event\": \"open\", \"args\": [\"/etc/hosts\", \"a\", 525377]}]}");
	in = (lb_failure_input){.log_tail = hosts, .log_tail_len = strlen(hosts), .exit_code = 1,
				.runtime_gate = gate, .payload_other_uid = true,
				.payload_uid = 65534, .payload_gid = 65534};
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "-v SRC:/etc/hosts:rw");
	assert_non_null(strstr(sub(doc, "escalation", "note"), "host file"));
	assert_null(strstr(sub(doc, "escalation", "note"), "directory to write"));
	assert_non_null(strstr(sub(doc, "escalation", "note"), "65534"));
	json_object_put(doc);
	/* without the gate's record, what the host's root shows decides */
	in.runtime_gate = NULL;
	in.host_root = true;
	in.payload_other_uid = false;
	doc = lb_diagnose_failure(&in);
	assert_non_null(strstr(sub(doc, "escalation", "note"), "host file"));
	assert_null(strstr(sub(doc, "escalation", "note"), "65534"));
	json_object_put(doc);
	json_object_put(gate);
}

/* numpy's FloatingPointError says which of four errors it was; only one while a loss is being
 * computed is a divergence, and the advice never repeats the np.seterr the code has. */
static void test_a_floating_point_error_is_read_from_its_message(void **state)
{
	(void)state;
	static const char under[] =
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/main.py\", line 8, in <module>\n"
		"    K = np.exp(-d2 / 0.5)\n"
		"FloatingPointError: underflow encountered in exp\n";
	static const char div0[] =
		"accuracy: 0.6667\n"
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/main.py\", line 10, in <module>\n"
		"    precision = np.diag(cm) / cm.sum(axis=0)\n"
		"FloatingPointError: invalid value encountered in divide\n";
	static const char over[] =
		"step 10 loss 3.2\nstep 20 loss 812.5\n"
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/train.py\", line 30, in <module>\n"
		"    p = np.exp(z)\n"
		"FloatingPointError: overflow encountered in exp\n";
	struct json_object *doc = diagnose_log(under, 1, 0);
	assert_string_equal(field(doc, "class"), "code_error");
	assert_non_null(strstr(field(doc, "summary"), "underflow"));
	assert_non_null(strstr(field(doc, "suggestion"), "under='ignore'"));
	assert_null(strstr(field(doc, "suggestion"), "learning rate"));
	json_object_put(doc);
	doc = diagnose_log(div0, 1, 0);
	assert_string_equal(field(doc, "class"), "code_error");
	assert_string_equal(field(doc, "confidence"), "medium");
	assert_non_null(strstr(field(doc, "summary"), "division by zero"));
	assert_null(strstr(field(doc, "suggestion"), "seterr"));
	json_object_put(doc);
	doc = diagnose_log(over, 1, 0);
	assert_string_equal(field(doc, "class"), "nan_divergence");
	assert_string_equal(field(doc, "confidence"), "high");
	assert_non_null(strstr(field(doc, "suggestion"), "learning rate"));
	assert_null(strstr(field(doc, "suggestion"), "seterr("));
	json_object_put(doc);
}

/* The sandbox's clean environment and missing terminal are its own, not the code's bugs. */
static void test_what_the_sandbox_takes_away_is_named(void **state)
{
	(void)state;
	static const char env[] =
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/main.py\", line 3, in <module>\n"
		"    run_name = f\"{os.environ['USER']}_exp1\"\n"
		"  File \"/usr/lib/python3.12/os.py\", line 714, in __getitem__\n"
		"    raise KeyError(key) from None\n"
		"KeyError: 'USER'\n";
	static const char dict[] =
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/main.py\", line 3, in <module>\n"
		"    lr = cfg['LR']\n"
		"KeyError: 'LR'\n";
	static const char tty[] =
		"Traceback (most recent call last):\n"
		"  File \"" EXP "/main.py\", line 3, in <module>\n"
		"    user = os.getlogin()\n"
		"OSError: [Errno 6] No such device or address\n";
	struct json_object *doc = diagnose_log(env, 1, 0);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_string_equal(field(doc, "confidence"), "high");
	assert_non_null(strstr(field(doc, "summary"), "clean environment"));
	assert_non_null(strstr(field(doc, "suggestion"), "-e USER=VALUE"));
	assert_null(strstr(field(doc, "suggestion"), "-v SRC"));
	json_object_put(doc);
	expect(diagnose_log(dict, 1, 0), "code_error", "KeyError");
	doc = diagnose_log(tty, 1, 0);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_non_null(strstr(field(doc, "summary"), "controlling terminal"));
	assert_non_null(strstr(field(doc, "suggestion"), "getpass.getuser()"));
	json_object_put(doc);
}

/* numpy's and torch's savers report a short write without ENOSPC; the sandbox found its
 * private /tmp full when the run ended, and that decides: the flag doubles that tmpfs. A
 * cause of its own (a missing package) is kept. */
static void test_a_full_tmpfs_is_why_a_write_failed(void **state)
{
	(void)state;
	const char *np_save = "Traceback (most recent call last):\n"
			      "  File \"" EXP "/main.py\", line 16, in <module>\n"
			      "    np.save(p + \".npy\", np.zeros(100 * 1024 * 1024 // 8))\n"
			      "  File \"/usr/lib/python3/dist-packages/numpy/lib/format.py\", line "
			      "722, in write_array\n"
			      "    array.tofile(fp)\n"
			      "OSError: 13107200 requested and 3140592 written\n";
	lb_failure_input in = {.log_tail = np_save, .log_tail_len = strlen(np_save),
			       .exit_code = 1};
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "code_error");
	json_object_put(doc);
	in.full_tmpfs = "/tmp";
	in.full_tmpfs_bytes = 1ULL << 30;
	doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_non_null(strstr(field(doc, "summary"), "private /tmp (a tmpfs of 1g"));
	assert_string_equal(field(doc, "confidence"), "medium");
	assert_string_equal(sub(doc, "escalation", "flag"), "--tmpfs /tmp:size=2g");
	assert_string_equal(sub(doc, "escalation", "grants"), "disk");
	assert_non_null(strstr(field(doc, "suggestion"), "--tmpfs /tmp:size=2g"));
	json_object_put(doc);
	in.full_tmpfs = "/dev/shm";
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--shm-size 2g");
	json_object_put(doc);
	const char *missing = "Traceback (most recent call last):\n"
			      "  File \"" EXP "/main.py\", line 1, in <module>\n"
			      "    import sklearn\n"
			      "ModuleNotFoundError: No module named 'sklearn'\n";
	in = (lb_failure_input){.log_tail = missing, .log_tail_len = strlen(missing),
				.exit_code = 1, .full_tmpfs = "/tmp", .full_tmpfs_bytes = 1ULL << 30};
	doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "missing_package");
	json_object_put(doc);
}

static void test_octave_frame(void **state)
{
	(void)state;
	lb_failure_input in = {.exit_code = 1, .language = "octave"};
	const char *log = "warning: something\n"
			  "error: index (5,_): out of bound 2 (dimensions are 1x2)\n"
			  "error: called from\n"
			  "    g at line 2 column 5\n"
			  "    main at line 5 column 3\n";
	in.log_tail = log;
	in.log_tail_len = strlen(log);
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "code_error");
	assert_string_equal(sub(doc, "code_location", "function"), "g");
	assert_string_equal(sub(doc, "code_location", "line"), "2");
	assert_null(sub(doc, "code_location", "file"));
	assert_string_equal(field(doc, "confidence"), "medium");
	json_object_put(doc);
}

/* Octave's own function raised: the experiment's frame is the first of its own .m files. */
static void test_octave_frame_of_the_experiment(void **state)
{
	(void)state;
	char dir[] = "/tmp/lbx-octave-XXXXXX", path[PATH_MAX];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/main.m", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("x = strsplit(1, \",\");\n", f);
	fclose(f);
	const char *log = "error: strsplit: S and SEP must be string values\n"
			  "error: called from\n"
			  "    strsplit at line 188 column 5\n"
			  "    main at line 3 column 7\n";
	lb_failure_input in = {.exit_code = 1, .language = "octave", .exp_dir = dir};
	in.log_tail = log;
	in.log_tail_len = strlen(log);
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "code_location", "function"), "main");
	assert_string_equal(sub(doc, "code_location", "line"), "3");
	assert_string_equal(sub(doc, "code_location", "file"), "main.m");
	json_object_put(doc);
	unlink(path);
	rmdir(dir);
}

/* The gate recorded that the main program ended with an uncaught exception: with exit 0 the
 * run failed all the same, read from its traceback, or from the record when the output has
 * none; an atexit handler's exception printed after it is not why the main program ended;
 * a plain crash reads as it always did. */
#define UNCAUGHT_EVENT \
	"{\"exception\": \"RuntimeError\", \"message\": \"evaluation crashed\", " \
	"\"file\": \"/r/exp/main.py\", \"line\": 4, \"pid\": 2}"
#define MAIN_TRACEBACK \
	"acc: 0.5\n" \
	"Traceback (most recent call last):\n" \
	"  File \"/r/exp/main.py\", line 4, in <module>\n" \
	"    raise RuntimeError(\"evaluation crashed\")\n" \
	"RuntimeError: evaluation crashed\n"

static struct json_object *diagnose_uncaught(const char *log, int exit_code)
{
	struct json_object *ev = json_tokener_parse(UNCAUGHT_EVENT);
	assert_non_null(ev);
	lb_failure_input in = {
		.log_tail = log,
		.log_tail_len = strlen(log),
		.exit_code = exit_code,
		.exp_dir = "/r/exp",
		.uncaught = ev,
	};
	struct json_object *doc = lb_diagnose_failure(&in);
	json_object_put(ev);
	return doc;
}

static void test_uncaught_main_exception(void **state)
{
	(void)state;
	struct json_object *doc = diagnose_uncaught(MAIN_TRACEBACK, 0), *v;
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "RuntimeError");
	assert_non_null(strstr(field(doc, "summary"), "exited with status 0"));
	assert_true(evidence_has(doc, "RuntimeError: evaluation crashed"));
	assert_true(evidence_has(doc, "runtime gate: the main program ended with an uncaught "
				      "RuntimeError: evaluation crashed (main.py line 4); exit status 0"));
	expect(doc, "code_error", NULL);

	/* a sys.excepthook of the experiment's printed nothing */
	doc = diagnose_uncaught("acc: 0.5\n", 0);
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "RuntimeError");
	assert_string_equal(field(doc, "confidence"), "high");
	assert_non_null(strstr(field(doc, "summary"), "uncaught RuntimeError"));
	assert_true(json_object_object_get_ex(doc, "code_location", &v) && v);
	assert_string_equal(field(v, "file"), "main.py");
	assert_string_equal(field(v, "line"), "4");
	expect(doc, "code_error", "runtime gate:");

	/* an atexit handler raised after it: the main program's exception decides (the
	 * interpreter ignored the handler's, so the main one reads as the last traceback) */
	doc = diagnose_uncaught(MAIN_TRACEBACK
				"Exception ignored in atexit callback: <function later at 0x7f>\n"
				"Traceback (most recent call last):\n"
				"  File \"/r/exp/main.py\", line 3, in later\n"
				"    raise ValueError(\"in atexit\")\n"
				"ValueError: in atexit\n", 1);
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "RuntimeError");
	assert_false(evidence_has(doc, "in atexit"));
	expect(doc, "code_error", "RuntimeError: evaluation crashed");

	/* a plain crash: as without the record */
	doc = diagnose_uncaught(MAIN_TRACEBACK, 1);
	assert_non_null(doc);
	assert_false(evidence_has(doc, "runtime gate:"));
	assert_null(strstr(field(doc, "summary"), "status 0"));
	expect(doc, "code_error", "RuntimeError: evaluation crashed");

	/* a run that failed anyway, whose output names another exception: read as it was */
	doc = diagnose_uncaught("Traceback (most recent call last):\n"
				"  File \"/r/exp/main.py\", line 2, in <module>\n"
				"ValueError: printed by the code\n", 1);
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "ValueError");
	assert_false(evidence_has(doc, "runtime gate:"));
	expect(doc, "code_error", NULL);

	/* without the record an exit 0 is no failure */
	assert_null(diagnose_log(MAIN_TRACEBACK, 0, 0));
}

/* result.json's runtime_gate of a run whose gate was in and saw no uncaught exception. */
#define GATE_NONE_UNCAUGHT \
	"{\"installed\": true, \"channel\": \"read\", \"events\": [], \"uncaught\": null}"

/* A program that stopped itself (sys.exit) is explained by its last words; an earlier,
 * innocent line that names a GPU, the hub or a denied operation is not why, and neither is a
 * traceback it handled and went on after. */
static void test_a_program_that_stopped_itself(void **state)
{
	(void)state;
	struct json_object *doc = diagnose_log(
		"torch.cuda.is_available() is False: training on CPU\n"
		"val_acc: 0.42\n"
		"val_acc 0.42 is below the acceptance threshold 0.5; not saving the model\n", 1, 0);
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "below the acceptance threshold"));
	assert_false(evidence_has(doc, "is_available"));
	expect(doc, "code_error", "acceptance threshold");
	expect(diagnose_log("tokenizer: bert-base-uncased (cached copy of huggingface.co/bert)\n"
			    "val_acc: 0.42\n", 2, 0), "code_error", "val_acc: 0.42");
	expect(diagnose_gated("note: could not raise priority (Operation not permitted); continuing\n"
			      "sanity check failed: labels and predictions differ\n",
			      GATE_NONE_UNCAUGHT), "code_error", "sanity check failed");
	/* a library that printed its error and exited: the last words name the cause */
	expect(diagnose_log("loading model\n"
			    "ERROR: could not reach huggingface.co: Temporary failure in name "
			    "resolution\n", 1, 0), "network", "huggingface.co");
	expect(diagnose_log("step 10\nRuntimeError: CUDA error: no kernel image is available\n"
			    "Aborting.\n", 1, 0), "gpu_unavailable", "no kernel image");

	static const char handled[] =
		"ERROR:exp:no feature cache yet, computing features from scratch\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 5, in <module>\n"
		"    cache = json.load(open(\"cache/features.json\"))\n"
		"FileNotFoundError: [Errno 2] No such file or directory: 'cache/features.json'\n"
		"acc: 0.41\n"
		"acc 0.41 below the 0.5 sanity threshold: the labels are probably shuffled\n";
	doc = diagnose_gated(handled, GATE_NONE_UNCAUGHT);
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "sanity threshold"));
	assert_non_null(strstr(field(doc, "summary"), "handled"));
	assert_true(evidence_has(doc, "FileNotFoundError"));
	expect(doc, "code_error", "sanity threshold");
	/* stdout and stderr are two pipes: the exit message can come right below the handled
	 * exception's line, and is still read alone */
	doc = diagnose_gated("Traceback (most recent call last):\n"
			     "  File \"/r/exp/main.py\", line 5, in <module>\n"
			     "acc: 0.41\n"
			     "FileNotFoundError: [Errno 2] No such file or directory: 'cache/f.json'\n"
			     "acc 0.41 below the 0.5 sanity threshold\n", GATE_NONE_UNCAUGHT);
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "sanity threshold"));
	expect(doc, "code_error", "FileNotFoundError");
	/* without the gate's word the traceback may have ended it (atexit output after it) */
	expect(diagnose_log(handled, 1, 0), "missing_data", "FileNotFoundError");
	/* a traceback the code printed last before it exited is its last words */
	expect(diagnose_gated("Traceback (most recent call last):\n"
			      "  File \"/r/exp/main.py\", line 5, in <module>\n"
			      "FileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'\n",
			      GATE_NONE_UNCAUGHT), "missing_data", "data/x.csv");
}

/* labbox started the interpreter itself: a status of 128+N is no signal unless a signal was
 * seen, or a shell in between said so in its own words. */
static void test_a_status_above_128_is_no_signal(void **state)
{
	(void)state;
	struct json_object *doc = diagnose_log("acc: 0.9\n", 137, 0);
	assert_non_null(doc);
	assert_null(strstr(field(doc, "summary"), "killed by SIG"));
	assert_null(strstr(field(doc, "summary"), "SIGKILL"));
	assert_non_null(strstr(field(doc, "summary"), "no signal ended it"));
	expect(doc, "code_error", NULL);
	doc = diagnose_log("step 3\n", 139, 0);
	assert_null(strstr(field(doc, "summary"), "SIGSEGV"));
	expect(doc, "code_error", NULL);
	/* a signal labbox saw is one */
	doc = diagnose_log("step 3\n", -1, SIGSEGV);
	assert_non_null(strstr(field(doc, "summary"), "SIGSEGV"));
	expect(doc, "code_error", NULL);
	/* bash reporting its child's death */
	doc = diagnose_log("bash: line 1:  4242 Segmentation fault      (core dumped) ./solver\n",
			   139, 0);
	assert_non_null(strstr(field(doc, "summary"), "SIGSEGV"));
	expect(doc, "code_error", NULL);
}

/* A thread or child that died of its own exception, and the main process's wait that then
 * failed: the worker's exception is the cause, the main one its consequence. */
static void test_a_dead_workers_exception_is_the_cause(void **state)
{
	(void)state;
	static const char thread[] =
		"Exception in thread Thread-1 (producer):\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3.11/threading.py\", line 1038, in _bootstrap_inner\n"
		"    self.run()\n"
		"  File \"/r/exp/main.py\", line 6, in producer\n"
		"    raise ValueError(\"corrupt record at offset 4096 in shard 2\")\n"
		"ValueError: corrupt record at offset 4096 in shard 2\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 11, in <module>\n"
		"    item = q.get(timeout=2)\n"
		"  File \"/usr/lib/python3.11/queue.py\", line 179, in get\n"
		"    raise Empty\n"
		"_queue.Empty\n";
	struct json_object *doc = diagnose_log(thread, 1, 0), *loc, *v;
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "ValueError");
	assert_non_null(strstr(field(doc, "summary"), "ValueError: corrupt record"));
	assert_non_null(strstr(field(doc, "summary"), "_queue.Empty"));
	assert_true(json_object_object_get_ex(doc, "code_location", &loc) && loc);
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 6);
	expect(doc, "code_error", "_queue.Empty");

	static const char child[] =
		"Process Process-1:\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 314, in _bootstrap\n"
		"    self.run()\n"
		"  File \"/r/exp/main.py\", line 4, in worker\n"
		"    result = sum(data) / len([])\n"
		"ZeroDivisionError: division by zero\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 11, in <module>\n"
		"    r = a.recv()\n"
		"  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 382, in _recv\n"
		"    raise EOFError\n"
		"EOFError\n";
	doc = diagnose_log(child, 1, 0);
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "ZeroDivisionError");
	expect(doc, "code_error", "EOFError");
	/* the parent saw the child's exit code and stopped itself */
	static const char stopped[] =
		"Process Process-1:\n"
		"Traceback (most recent call last):\n"
		"  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 314, in _bootstrap\n"
		"  File \"/r/exp/main.py\", line 4, in worker\n"
		"ZeroDivisionError: division by zero\n"
		"worker exited with code 1; giving up\n";
	doc = diagnose_gated(stopped, GATE_NONE_UNCAUGHT);
	assert_non_null(doc);
	assert_string_equal(field(doc, "exception"), "ZeroDivisionError");
	assert_non_null(strstr(field(doc, "summary"), "child process"));
	expect(doc, "code_error", "giving up");
	/* an unrelated error of the main process stays its own */
	static const char unrelated[] =
		"Exception in thread Thread-1 (log_upload):\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 6, in log_upload\n"
		"ValueError: bad\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 11, in <module>\n"
		"KeyError: 'lr'\n";
	doc = diagnose_log(unrelated, 1, 0);
	assert_string_equal(field(doc, "exception"), "KeyError");
	expect(doc, "code_error", NULL);
}

/* The OOM killer took a worker and the pool waited until the budget: memory is the cause. */
static void test_an_oom_kill_before_the_budget_is_the_cause(void **state)
{
	(void)state;
	lb_failure_input in = {.log_tail = "loss: 0.5\n", .log_tail_len = 10, .exit_code = -1,
			       .signal = SIGKILL, .timed_out = true, .oom_killed = true,
			       .oom_counted = true, .memory_limit = 1ull << 30};
	struct json_object *doc = lb_diagnose_failure(&in), *esc, *v;
	assert_non_null(doc);
	assert_non_null(strstr(field(doc, "summary"), "out-of-memory"));
	assert_null(strstr(field(doc, "suggestion"), "raise the budget"));
	assert_true(json_object_object_get_ex(doc, "escalation", &esc) && esc);
	assert_true(json_object_object_get_ex(esc, "grants", &v));
	assert_string_equal(json_object_get_string(v), "memory");
	assert_int_equal(lb_escalate_for_failure(doc), LB_ESCALATE_MEMORY);
	expect(doc, "oom", NULL);
	/* a timeout with no OOM kill stays the budget's */
	in.oom_killed = false;
	expect(lb_diagnose_failure(&in), "timeout", NULL);
}

/* A file under dir, with its directories. */
static void put_file(const char *dir, const char *rel, const char *text)
{
	char p[512], *slash;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	for (slash = strchr(p + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(p, 0755);
		*slash = '/';
	}
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A traceback whose frames are under the staged experiment dir, diagnosed with it. */
static struct json_object *diagnose_staged(const char *dir, const char *entry, const char *src,
					   const char *exc_line)
{
	char log[2048];
	snprintf(log, sizeof(log),
		 "Traceback (most recent call last):\n"
		 "  File \"%s/%s\", line 2, in <module>\n"
		 "    %s\n"
		 "%s\n", dir, entry, src, exc_line);
	lb_failure_input in = {.log_tail = log, .log_tail_len = strlen(log), .exit_code = 1,
			       .exp_dir = dir};
	return lb_diagnose_failure(&in);
}

static const char *escalation_of(struct json_object *doc)
{
	struct json_object *esc = NULL, *v = NULL;
	if (!json_object_object_get_ex(doc, "escalation", &esc) || !esc)
		return NULL;
	json_object_object_get_ex(esc, "environment", &v);
	return v ? json_object_get_string(v) : "";
}

/* An import of the experiment's own modules is the experiment's code: a missing file of its
 * package, a module out of the import path, a misspelt own module, a name its module lacks,
 * a circular import. A dotted name whose package imports is a version of that package. */
static void test_the_experiments_own_modules_are_its_code(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-own-XXXXXX";
	assert_non_null(mkdtemp(dir));
	put_file(dir, "mypkg/__init__.py", "");
	put_file(dir, "mypkg/data.py", "X = 1\n");
	put_file(dir, "utils.py", "def load_data(): pass\n");
	put_file(dir, "src/helpers.py", "\n");
	put_file(dir, "main.py", "\n");

	struct json_object *doc = diagnose_staged(dir, "main.py", "import mypkg.models",
		"ModuleNotFoundError: No module named 'mypkg.models'");
	assert_non_null(strstr(field(doc, "summary"), "no module 'models'"));
	assert_null(strstr(field(doc, "suggestion"), "pip install"));
	assert_null(escalation_of(doc));
	assert_string_equal(field(doc, "confidence"), "high");
	assert_int_equal(lb_escalate_for_failure(doc), 0);
	expect(doc, "code_error", "mypkg.models");
	/* deeper: mypkg.data is a module, not a package */
	doc = diagnose_staged(dir, "main.py", "import mypkg.data.x",
			      "ModuleNotFoundError: No module named 'mypkg.data.x'; 'mypkg.data' is not a package");
	assert_non_null(strstr(field(doc, "summary"), "not a package"));
	expect(doc, "code_error", NULL);
	/* the experiment's own module, in a directory Python does not search */
	doc = diagnose_staged(dir, "main.py", "import helpers",
			      "ModuleNotFoundError: No module named 'helpers'");
	assert_non_null(strstr(field(doc, "summary"), "src/helpers.py"));
	assert_null(escalation_of(doc));
	expect(doc, "code_error", NULL);
	/* one letter from utils.py: a misspelt import, medium (a package could be named so) */
	doc = diagnose_staged(dir, "main.py", "import utilz",
			      "ModuleNotFoundError: No module named 'utilz'");
	assert_non_null(strstr(field(doc, "summary"), "utils.py"));
	assert_string_equal(field(doc, "confidence"), "medium");
	expect(doc, "code_error", NULL);
	/* a package the experiment does not have stays a package to install */
	doc = diagnose_staged(dir, "main.py", "import sklearn",
			      "ModuleNotFoundError: No module named 'sklearn'");
	assert_string_equal(escalation_of(doc), "pip install scikit-learn");
	expect(doc, "missing_package", NULL);
	/* a module an installed package's version lacks: that package imports */
	doc = diagnose_staged(dir, "main.py", "import torch._inductor.config as config",
			      "ModuleNotFoundError: No module named 'torch._inductor'");
	assert_non_null(strstr(field(doc, "summary"), "installed torch"));
	assert_string_equal(escalation_of(doc), "pip install torch==VERSION");
	assert_int_equal(lb_escalate_for_failure(doc), LB_ESCALATE_ENV);
	expect(doc, "wrong_env", NULL);
	/* a module the standard library of this Python lacks: the Python version */
	doc = diagnose_staged(dir, "main.py", "import distutils.msvc9compiler",
			      "ModuleNotFoundError: No module named 'distutils.msvc9compiler'");
	assert_non_null(strstr(field(doc, "summary"), "standard library"));
	assert_null(strstr(field(doc, "suggestion"), "pip install"));
	expect(doc, "wrong_env", NULL);
	/* a namespace package's part is its own distribution */
	doc = diagnose_staged(dir, "main.py", "from google.cloud import storage",
			      "ModuleNotFoundError: No module named 'google.cloud'");
	assert_string_equal(escalation_of(doc), "pip install google-cloud");
	expect(doc, "missing_package", NULL);

	/* a name the experiment's own module lacks */
	char line[600];
	snprintf(line, sizeof(line),
		 "ImportError: cannot import name 'lod_data' from 'utils' (%s/utils.py)", dir);
	doc = diagnose_staged(dir, "main.py", "from utils import lod_data", line);
	assert_non_null(strstr(field(doc, "summary"), "own module 'utils'"));
	assert_null(escalation_of(doc));
	expect(doc, "code_error", NULL);
	/* a circular import between the experiment's modules */
	snprintf(line, sizeof(line),
		 "ImportError: cannot import name 'f' from partially initialized module 'a' (most "
		 "likely due to a circular import) (%s/a.py)", dir);
	doc = diagnose_staged(dir, "main.py", "import a", line);
	assert_non_null(strstr(field(doc, "summary"), "circular import"));
	assert_string_equal(field(doc, "confidence"), "high");
	expect(doc, "code_error", NULL);
	/* a name an installed library lacks is still its version's */
	doc = diagnose_staged(dir, "main.py", "from jinja2 import Markup",
			      "ImportError: cannot import name 'Markup' from 'jinja2' "
			      "(/usr/lib/python3/dist-packages/jinja2/__init__.py)");
	expect(doc, "wrong_env", NULL);

	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* Python's "Did you mean" says the module has a close name: a misspelling, not a version,
 * unless the name is one a version removed (np.float, inspect.getargspec). */
static void test_a_misspelt_name_is_the_codes(void **state)
{
	(void)state;
	static const char typo[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 2, in <module>\n"
		"    x = np.arrray([1, 2, 3])\n"
		"  File \"/usr/lib/python3/dist-packages/numpy/__init__.py\", line 320, in __getattr__\n"
		"    raise AttributeError(\"module {!r} has no attribute \"\n"
		"AttributeError: module 'numpy' has no attribute 'arrray'. Did you mean: 'array'?\n";
	static const char getargspec[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 2, in <module>\n"
		"    inspect.getargspec(f)\n"
		"AttributeError: module 'inspect' has no attribute 'getargspec'. Did you mean: "
		"'getargs'?\n";
	static const char np2[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 2, in <module>\n"
		"    x = np.float_(1)\n"
		"AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` "
		"instead.\n";
	static const char import_typo[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 1, in <module>\n"
		"    from torch.nn import Linaer\n"
		"ImportError: cannot import name 'Linaer' from 'torch.nn' "
		"(/usr/lib/python3/dist-packages/torch/nn/__init__.py). Did you mean: 'Linear'?\n";
	struct json_object *doc = diagnose_log(typo, 1, 0);
	assert_string_equal(field(doc, "confidence"), "high");
	assert_int_equal(lb_escalate_for_failure(doc), 0);
	expect(doc, "code_error", "arrray");
	expect(diagnose_log(getargspec, 1, 0), "wrong_env", "getargspec");
	expect(diagnose_log(np2, 1, 0), "wrong_env", "NumPy 2.0");
	expect(diagnose_log(import_typo, 1, 0), "code_error", "Linaer");
}

/* EACCES on a file of the experiment's own copy whose mode forbids it (the code's chmod, or
 * staged so) is the code's; on a writable one, or outside the experiment, the sandbox's. */
static void test_a_read_only_file_of_the_experiment_is_the_codes(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-perm-XXXXXX", p[512];
	assert_non_null(mkdtemp(dir));
	put_file(dir, "ckpt.txt", "epoch 1");
	put_file(dir, "free.txt", "x");
	put_file(dir, "locked/keep", "");
	snprintf(p, sizeof(p), "%s/ckpt.txt", dir);
	assert_int_equal(chmod(p, 0444), 0);
	snprintf(p, sizeof(p), "%s/locked", dir);
	assert_int_equal(chmod(p, 0555), 0);

	struct json_object *doc = diagnose_staged(dir, "main.py", "open('ckpt.txt', 'w')",
		"PermissionError: [Errno 13] Permission denied: 'ckpt.txt'");
	assert_non_null(strstr(field(doc, "summary"), "0444"));
	assert_null(strstr(field(doc, "suggestion"), "-v "));
	assert_string_equal(field(doc, "confidence"), "high");
	assert_null(escalation_of(doc));
	expect(doc, "code_error", "ckpt.txt");
	/* a new file in a directory the code made read-only, by its absolute path */
	char line[600];
	snprintf(line, sizeof(line), "PermissionError: [Errno 13] Permission denied: '%s/locked/new.txt'",
		 dir);
	expect(diagnose_staged(dir, "main.py", "open(path, 'w')", line), "code_error", NULL);
	/* a writable file (an exec the noexec mount refused, say) stays the sandbox's */
	expect(diagnose_staged(dir, "main.py", "subprocess.run(['./free.txt'])",
			       "PermissionError: [Errno 13] Permission denied: './free.txt'"),
	       "sandbox_restriction", NULL);
	/* outside the experiment: the sandbox's */
	expect(diagnose_staged(dir, "main.py", "open('/etc/x', 'w')",
			       "PermissionError: [Errno 13] Permission denied: '/etc/x'"),
	       "sandbox_restriction", NULL);

	char cmd[64];
	snprintf(cmd, sizeof(cmd), "chmod -R u+w %s; rm -rf %s", dir, dir);
	assert_int_equal(system(cmd), 0);
}

/* A NaN that met a conversion or an input check, with no loss gone NaN before it, is a
 * missing value in the data; after a NaN loss, or naming training, a divergence. */
static void test_a_nan_in_the_data_is_no_divergence(void **state)
{
	(void)state;
	static const char convert[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    labels = [int(v) for v in data[:, 1]]\n"
		"ValueError: cannot convert float NaN to integer\n";
	static const char after_nan_loss[] =
		"step 10 loss 0.52\n"
		"step 20 loss nan\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 30, in <module>\n"
		"    print(int(acc * 100))\n"
		"ValueError: cannot convert float NaN to integer\n";
	static const char pandas[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 5, in <module>\n"
		"    df['label'] = df['label'].astype(int)\n"
		"pandas.errors.IntCastingNaNError: Cannot convert non-finite values (NA or inf) to "
		"integer\n";
	static const char grad[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 40, in <module>\n"
		"    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n"
		"RuntimeError: The total norm of order 2.0 for gradients from `parameters` is "
		"non-finite, so it cannot be clipped.\n";
	struct json_object *doc = diagnose_log(convert, 1, 0);
	assert_null(strstr(field(doc, "suggestion"), "learning rate,"));
	assert_non_null(strstr(field(doc, "summary"), "missing value"));
	assert_string_equal(field(doc, "confidence"), "high");
	expect(doc, "code_error", "cannot convert float NaN");
	doc = diagnose_log(after_nan_loss, 1, 0);
	assert_string_equal(field(doc, "confidence"), "medium");
	expect(doc, "nan_divergence", NULL);
	expect(diagnose_log(pandas, 1, 0), "code_error", "non-finite values");
	expect(diagnose_log(grad, 1, 0), "nan_divergence", "non-finite");
}

/* torch's DataLoader EMFILE and a Categorical's NaN probabilities below its message: the
 * code's descriptors, no --pids-limit; a divergence after printed episodes. */
static void test_open_files_and_a_samplers_nan(void **state)
{
	(void)state;
	static const char loader[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 9, in <module>\n"
		"    for x in loader:\n"
		"RuntimeError: Too many open files. Communication with the workers is no longer "
		"possible. Please increase the limit using `ulimit -n` in the shell or change the "
		"sharing strategy by calling `torch.multiprocessing.set_sharing_strategy('file_system')`"
		" at the beginning of your code\n";
	static const char categorical[] =
		"episode 0 return: 3.5\n"
		"episode 10 return: 912.0\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 12, in <module>\n"
		"    dist = Categorical(probs=probs)\n"
		"ValueError: Expected parameter probs (Tensor of shape (1, 4)) of distribution "
		"Categorical(probs: torch.Size([1, 4])) to satisfy the constraint Simplex(), but found "
		"invalid values:\n"
		"tensor([[nan, nan, nan, nan]], grad_fn=<DivBackward0>)\n";
	struct json_object *doc = diagnose_log(loader, 1, 0);
	assert_null(strstr(field(doc, "suggestion"), "--pids-limit"));
	expect(doc, "code_error", "Too many open files");
	doc = diagnose_log(categorical, 1, 0);
	assert_null(strstr(field(doc, "suggestion"), "changes nothing"));
	expect(doc, "nan_divergence", "Expected parameter probs");
}

/* The size an allocator refused, against the machine's memory and the limit: more than the
 * machine has is the code's (no --memory gives it), far more at high confidence; within it
 * but past twice the limit, the escalation asks for the limit and the allocation together. */
static void test_an_allocation_past_the_machines_memory_is_the_codes(void **state)
{
	(void)state;
	static const char numpy_tib[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    d = np.zeros((n, n))\n"
		"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.28 TiB for an array "
		"with shape (1000000, 1000000) and data type float64\n";
	static const char numpy_20g[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    d = np.zeros((n, n))\n"
		"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 20.0 GiB for an array "
		"with shape (50000, 53687) and data type float64\n";
	static const char numpy_1g[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    d = np.zeros((n, n))\n"
		"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 1.00 GiB for an array "
		"with shape (11585, 11585) and data type float64\n";
	static const char torch_cpu[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    x = torch.empty(10**12)\n"
		"RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: "
		"can't allocate memory: you tried to allocate 4000000000000 bytes. Error code 12 "
		"(Cannot allocate memory)\n";
	lb_failure_input in = {.log_tail = numpy_tib, .log_tail_len = strlen(numpy_tib),
			       .exit_code = 1, .memory_limit = 256ULL << 20,
			       .machine_memory = 16ULL << 30};
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "confidence"), "high");
	assert_non_null(strstr(field(doc, "summary"), "7.28 TiB"));
	assert_null(strstr(field(doc, "suggestion"), "--memory 512m"));
	assert_int_equal(lb_escalate_for_failure(doc), 0);
	assert_null(escalation_of(doc));
	expect(doc, "code_error", "7.28 TiB");
	/* a little more than the machine: still no flag, but a larger machine may be meant */
	in.log_tail = numpy_20g;
	in.log_tail_len = strlen(numpy_20g);
	doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "confidence"), "medium");
	expect(doc, "code_error", NULL);
	in.log_tail = torch_cpu;
	in.log_tail_len = strlen(torch_cpu);
	expect(lb_diagnose_failure(&in), "code_error", NULL);
	/* within the machine, past twice the limit: the limit and the allocation together */
	in.log_tail = numpy_1g;
	in.log_tail_len = strlen(numpy_1g);
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 2g");
	assert_int_equal(lb_escalate_for_failure(doc), LB_ESCALATE_MEMORY);
	expect(doc, "oom", NULL);
	/* the machine's memory not known: read as before */
	in.machine_memory = 0;
	in.log_tail = numpy_tib;
	in.log_tail_len = strlen(numpy_tib);
	expect(lb_diagnose_failure(&in), "oom", NULL);
}

/* A run the kernel killed at its limit after it caught an allocator's refusal and went on
 * (numpy's 7.28 TiB, then chunks): the printed size is not what the kill measured, so the
 * escalation is twice the limit. No memory escalation ever passes the machine's memory, and
 * none is offered where the limit already was all of it. */
static void test_a_caught_allocation_does_not_size_the_memory_escalation(void **state)
{
	(void)state;
	static const char caught[] =
		"full distance matrix does not fit (Unable to allocate 7.28 TiB for an array with "
		"shape (1000000, 1000000) and data type float64); computing in chunks\n";
	static const char numpy_10g[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 3, in <module>\n"
		"    d = np.zeros((n, n))\n"
		"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 10.0 GiB for an array "
		"with shape (36634, 36634) and data type float64\n";
	lb_failure_input in = {.log_tail = caught, .log_tail_len = strlen(caught), .exit_code = -1,
			       .signal = SIGKILL, .oom_killed = true, .memory_limit = 512ULL << 20,
			       .machine_memory = 25276157952ULL};
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 1g");
	assert_null(strstr(field(doc, "suggestion"), "7456g"));
	assert_int_equal(lb_escalate_for_failure(doc), LB_ESCALATE_MEMORY);
	expect(doc, "oom", "Unable to allocate");
	/* the same, with the machine not known: still twice the limit */
	in.machine_memory = 0;
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 1g");
	expect(doc, "oom", NULL);
	/* twice the limit past the machine: the machine's memory, no more */
	in.machine_memory = 24ULL << 30;
	in.memory_limit = 16ULL << 30;
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 24g");
	expect(doc, "oom", NULL);
	in.machine_memory = 25276157952ULL;
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 24105m");
	expect(doc, "oom", NULL);
	/* a limit already all the machine has: no flag, and the advice asks for none */
	in.memory_limit = 32ULL << 30;
	doc = lb_diagnose_failure(&in);
	assert_null(sub(doc, "escalation", "grants"));
	assert_null(strstr(field(doc, "suggestion"), "raise the memory limit"));
	assert_non_null(strstr(field(doc, "suggestion"), "no --memory gives more"));
	expect(doc, "oom", NULL);
	/* an allocator's error that ended the run sizes it, capped by the machine: 8g + 10g
	 * is past a 12g machine */
	in = (lb_failure_input){.log_tail = numpy_10g, .log_tail_len = strlen(numpy_10g),
				.exit_code = 1, .memory_limit = 8ULL << 30,
				.machine_memory = 12ULL << 30};
	doc = lb_diagnose_failure(&in);
	assert_string_equal(sub(doc, "escalation", "flag"), "--memory 12g");
	expect(doc, "oom", NULL);
}

/* CUDA's out-of-memory words on a machine with no NVIDIA GPU, given none: no GPU's memory
 * ran out (the code's own guard raised them). With GPUs, or another vendor's words, it
 * stays gpu_oom. */
static void test_a_cuda_oom_without_a_gpu_is_not_the_gpus(void **state)
{
	(void)state;
	static const char own[] =
		"device: cpu\n"
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 7, in <module>\n"
		"    acc = train(128)\n"
		"  File \"/exp/main.py\", line 4, in train\n"
		"    raise RuntimeError(\"CUDA out of memory. Tried to allocate 2.00 GiB\")\n"
		"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB "
		"total capacity; 14.1 GiB already allocated)\n";
	static const char hip[] =
		"Traceback (most recent call last):\n"
		"  File \"/exp/main.py\", line 4, in <module>\n"
		"    x = torch.empty(10**11, device='cuda')\n"
		"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB\n";
	lb_failure_input in = {.log_tail = own, .log_tail_len = strlen(own), .exit_code = 1,
			       .machine_without_gpus = true};
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_not_equal(field(doc, "confidence"), "high");
	assert_non_null(strstr(field(doc, "summary"), "no NVIDIA GPU"));
	assert_null(strstr(field(doc, "suggestion"), "--gpus all"));
	assert_null(sub(doc, "escalation", "grants"));
	expect(doc, "code_error", "CUDA out of memory");
	/* a machine with GPUs, or the run given some: the GPU's */
	in.machine_without_gpus = false;
	expect(lb_diagnose_failure(&in), "gpu_oom", "CUDA out of memory");
	in.machine_without_gpus = true;
	in.gpus = true;
	expect(lb_diagnose_failure(&in), "gpu_oom", "CUDA out of memory");
	/* AMD's HIP is not counted by /dev/nvidiaN */
	in = (lb_failure_input){.log_tail = hip, .log_tail_len = strlen(hip), .exit_code = 1,
				.machine_without_gpus = true};
	expect(lb_diagnose_failure(&in), "gpu_oom", "HIP out of memory");
}

/* torch.multiprocessing.spawn: the parent's ProcessRaisedException carries the child's
 * traceback as its message, printed below it. The child's error is the cause; the gate's
 * record of the message (line breaks in it) reads as one line. */
#define SPAWN_LOG \
	"Traceback (most recent call last):\n" \
	"  File \"/r/exp/main.py\", line 20, in <module>\n" \
	"    mp.spawn(main, args=(2,), nprocs=2)\n" \
	"  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 160, in join\n" \
	"    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n" \
	"torch.multiprocessing.spawn.ProcessRaisedException: \n" \
	"\n" \
	"-- Process 0 terminated with the following error:\n" \
	"Traceback (most recent call last):\n" \
	"  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 69, in _wrap\n" \
	"    fn(i, *args)\n" \
	"  File \"/r/exp/main.py\", line 10, in main\n" \
	"    dist.init_process_group(backend=\"gloo\", rank=rank, world_size=world_size)\n" \
	"  File \"/usr/lib/python3/dist-packages/torch/distributed/rendezvous.py\", line 177, in _create_c10d_store\n" \
	"    return TCPStore(\n" \
	"RuntimeError: The server socket has failed to listen on any local network address. " \
	"The server socket cannot be initialized on [::]:12345 (errno: 1 - Operation not permitted).\n" \
	"\n"

static void test_a_spawned_childs_traceback_is_the_cause(void **state)
{
	(void)state;
	struct json_object *ev = json_tokener_parse(
		"{\"exception\": \"ProcessRaisedException\", \"message\": \"\\n\\n-- Process 0 "
		"terminated with the following error:\\nTraceback (most recent call last):\\n  "
		"File x\", \"file\": \"/r/exp/main.py\", \"line\": 20, \"pid\": 2}");
	assert_non_null(ev);
	lb_failure_input in = {
		.log_tail = SPAWN_LOG, .log_tail_len = strlen(SPAWN_LOG), .exit_code = 1,
		.exp_dir = "/r/exp", .uncaught = ev, .network_none = true,
	};
	struct json_object *doc = lb_diagnose_failure(&in), *esc;
	assert_non_null(doc);
	assert_string_equal(field(doc, "class"), "sandbox_restriction");
	assert_non_null(strstr(field(doc, "summary"), "local network socket"));
	assert_true(json_object_object_get_ex(doc, "escalation", &esc) && esc);
	assert_string_equal(field(esc, "flag"), "--network loopback");
	assert_string_equal(sub(doc, "code_location", "function"), "main");
	assert_string_equal(sub(doc, "code_location", "line"), "10");
	json_object_put(doc);
	/* exit 0 after it (an atexit os._exit(0)): the record's evidence line is one line */
	in.exit_code = 0;
	in.log_tail = "acc: 1\n";
	in.log_tail_len = strlen(in.log_tail);
	doc = lb_diagnose_failure(&in);
	assert_non_null(doc);
	assert_true(evidence_has(doc, "ProcessRaisedException: -- Process 0 terminated with the "
				      "following error: Traceback (most recent call last): File x"));
	assert_false(evidence_has(doc, "\xef\xbf\xbd"));
	json_object_put(doc);
	json_object_put(ev);
}

/* R code that installs what it lacks when it runs: the installer's error names the package. */
static void test_an_r_install_at_run_time_is_the_missing_package(void **state)
{
	(void)state;
	static const struct {
		const char *log, *pkg, *env;
	} cases[] = {
		{"Installing package into '/usr/local/lib/R/site-library'\n"
		 "Warning in install.packages(\"glmnet\") :\n"
		 "  'lib = \"/usr/local/lib/R/site-library\"' is not writable\n"
		 "Error in install.packages(\"glmnet\") : unable to install packages\n"
		 "Execution halted\n", "'glmnet'", "apt install r-cran-glmnet"},
		{"Error in install.packages(c(\"Rcpp\", \"data.table\")) : unable to install packages\n"
		 "Execution halted\n", "'Rcpp'", "apt install r-cran-rcpp"},
		{"Error in BiocManager::install(\"limma\") : unable to install packages\n"
		 "Execution halted\n", "'limma'", "apt install r-bioc-limma"},
		{"Error in install.packages(p) : unable to install packages\n"
		 "Execution halted\n", "'?'", "apt install r-cran-NAME"},
		{"Error in remotes::install_github(\"user/mypkg\") : Failed to install\n"
		 "Execution halted\n", "'mypkg'", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		lb_failure_input in = {.exit_code = 1, .language = "r"};
		in.log_tail = cases[i].log;
		in.log_tail_len = strlen(cases[i].log);
		struct json_object *doc = lb_diagnose_failure(&in), *esc;
		assert_non_null(doc);
		assert_string_equal(field(doc, "class"), "missing_package");
		assert_non_null(strstr(field(doc, "summary"), cases[i].pkg));
		assert_true(json_object_object_get_ex(doc, "escalation", &esc) && esc);
		if (cases[i].env)
			assert_string_equal(field(esc, "environment"), cases[i].env);
		else
			assert_null(field(esc, "environment"));
		json_object_put(doc);
	}
	/* an error of the code's own that only mentions the installer is still the code's */
	lb_failure_input in = {.exit_code = 1, .language = "r"};
	in.log_tail = "Error in fit(x) : install.packages( is not the problem\nExecution halted\n";
	in.log_tail_len = strlen(in.log_tail);
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "code_error");
	json_object_put(doc);
}

/* A loader's own "not found" error naming a path the sandbox lacks is missing data; a path
 * labbox cannot check, and a message of the code's about something else, stay the code's. */

/* An OverflowError after a printed loss diverged is the divergence (thirtieth session):
 * math.exp of a diverged loss, a float power of a diverged weight. Without a diverged loss
 * above it, or with a loss that only wobbled, it stays the code's. */
static void test_an_overflow_after_a_diverged_loss_is_the_divergence(void **state)
{
	static const char ppl[] =
		"iter 0: train loss 3.2000\n"
		"iter 100: train loss 4.1000\n"
		"iter 200: train loss 40.0000\n"
		"iter 300: train loss 900.0000\n"
		"val_loss: 812.3\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 8, in <module>\n"
		"    print(f\"val_ppl: {math.exp(val_loss):.2f}\")\n"
		"OverflowError: math range error\n";
	static const char power[] =
		"step 0 loss: 6561\n"
		"step 1 loss: 2e+50\n"
		"step 2 loss: 1e+155\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 6, in <module>\n"
		"    loss = w ** 4\n"
		"OverflowError: (34, 'Numerical result out of range')\n";
	static const char healthy[] =
		"iter 0: train loss 3.2000\n"
		"iter 100: train loss 2.9000\n"
		"iter 200: train loss 2.7000\n"
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 8, in <module>\n"
		"    scale = math.exp(cfg.temperature * 1000)\n"
		"OverflowError: math range error\n";
	static const char nothing[] =
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 2, in <module>\n"
		"    print(math.exp(1000))\n"
		"OverflowError: math range error\n";
	(void)state;
	struct json_object *doc = diagnose_log(ppl, 1, 0);
	assert_string_equal(field(doc, "confidence"), "medium");
	assert_non_null(strstr(field(doc, "summary"), "loss rose from 3.2 to 900"));
	assert_non_null(strstr(field(doc, "suggestion"), "learning rate"));
	expect(doc, "nan_divergence", "math range error");
	expect(diagnose_log(power, 1, 0), "nan_divergence", "Numerical result out of range");
	doc = diagnose_log(healthy, 1, 0);
	assert_string_equal(field(doc, "confidence"), "high");
	expect(doc, "code_error", "math range error");
	expect(diagnose_log(nothing, 1, 0), "code_error", "math range error");
}
/* A read of a file that does not exist, whose name is one misspelling from a file staged where
 * the code looked, is the code's misspelt path (thirtieth session): FileNotFoundError and a
 * loader's own "not found". No near miss, several, a digit (another shard) or a one-letter
 * word (X_train beside y_train) keep missing_data. */
static void test_a_misspelt_data_path_is_the_codes(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-typo-XXXXXX", cmd[64];
	assert_non_null(mkdtemp(dir));
	put_file(dir, "main.py", "\n");
	put_file(dir, "data/train.npy", "x");
	put_file(dir, "data/y_train.npy", "x");
	put_file(dir, "data/shard_1.bin", "x");
	put_file(dir, "data/Labels.csv", "x");
	put_file(dir, "data/vals.csv", "x");
	put_file(dir, "data/valz.csv", "x");

	struct json_object *doc = diagnose_staged(dir, "main.py", "X = np.load(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/trian.npy'");
	assert_non_null(strstr(field(doc, "summary"), "did you mean data/train.npy"));
	assert_non_null(strstr(field(doc, "suggestion"), "data/train.npy"));
	assert_null(strstr(field(doc, "suggestion"), "-v SRC"));
	assert_null(escalation_of(doc));
	assert_string_equal(field(doc, "confidence"), "medium");
	expect(doc, "code_error", "trian.npy");
	/* an absolute path under the staged experiment, and a name in another letter case */
	char line[512];
	snprintf(line, sizeof line,
		 "FileNotFoundError: [Errno 2] No such file or directory: '%s/data/labels.csv'", dir);
	doc = diagnose_staged(dir, "main.py", "pd.read_csv(p)", line);
	assert_non_null(strstr(field(doc, "summary"), "data/Labels.csv"));
	expect(doc, "code_error", NULL);
	/* a loader's own words, naming a path (refine_missing_path) */
	doc = diagnose_staged(dir, "main.py", "assert os.path.exists(p), f\"{p} does not exist\"",
			      "AssertionError: data/trian.npy does not exist");
	assert_non_null(strstr(field(doc, "summary"), "did you mean data/train.npy"));
	expect(doc, "code_error", NULL);
	/* nothing close: missing data, as before */
	doc = diagnose_staged(dir, "main.py", "X = np.load(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/test.npy'");
	assert_string_equal(field(doc, "confidence"), "high");
	expect(doc, "missing_data", NULL);
	/* another shard, another member of a set: missing data */
	doc = diagnose_staged(dir, "main.py", "X = np.fromfile(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/shard_2.bin'");
	expect(doc, "missing_data", NULL);
	doc = diagnose_staged(dir, "main.py", "X = np.load(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/X_train.npy'");
	expect(doc, "missing_data", NULL);
	/* two names one letter away: which was meant is not labbox's to pick */
	doc = diagnose_staged(dir, "main.py", "pd.read_csv(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: 'data/valx.csv'");
	assert_non_null(strstr(field(doc, "summary"), "2 names one letter from it"));
	assert_string_equal(field(doc, "confidence"), "medium");
	expect(doc, "missing_data", NULL);
	/* a directory the experiment does not have, and a path outside it */
	doc = diagnose_staged(dir, "main.py", "X = np.load(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: 'dta/trian.npy'");
	expect(doc, "missing_data", NULL);
	doc = diagnose_staged(dir, "main.py", "X = np.load(p)",
		"FileNotFoundError: [Errno 2] No such file or directory: '/data/trian.npy'");
	expect(doc, "missing_data", NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_a_path_the_message_says_is_missing_is_missing_data(void **state)
{
	(void)state;
	static const char abs_path[] =
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 3, in <module>\n"
		"    assert os.path.exists(p), f\"{p} does not exist\"\n"
		"AssertionError: /data/imagenet/train.csv does not exist\n";
	static const char relative[] =
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 3, in <module>\n"
		"    raise ValueError(f\"no files found for {pat}\")\n"
		"ValueError: no files found for shards/train_*.bin\n";
	static const char no_path[] =
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 3, in <module>\n"
		"    assert best is not None, \"best model not found\"\n"
		"AssertionError: best model not found\n";
	static const char key[] =
		"Traceback (most recent call last):\n"
		"  File \"/r/exp/main.py\", line 3, in <module>\n"
		"    cfg[k]\n"
		"KeyError: 'data/train.csv not found'\n";
	lb_failure_input in = {.exit_code = 1, .exp_dir = "/tmp"};
	struct {
		const char *log, *cls;
	} cases[] = {{abs_path, "missing_data"}, {relative, "missing_data"},
		     {no_path, "code_error"}, {key, "code_error"}};
	for (size_t i = 0; i < 4; i++) {
		in.log_tail = cases[i].log;
		in.log_tail_len = strlen(cases[i].log);
		struct json_object *doc = lb_diagnose_failure(&in);
		assert_string_equal(field(doc, "class"), cases[i].cls);
		if (strcmp(cases[i].cls, "missing_data") == 0)
			assert_string_equal(field(doc, "confidence"), "medium");
		json_object_put(doc);
	}
	/* without the experiment to look in, a relative path is not checked */
	in.exp_dir = NULL;
	in.log_tail = relative;
	in.log_tail_len = strlen(relative);
	struct json_object *doc = lb_diagnose_failure(&in);
	assert_string_equal(field(doc, "class"), "code_error");
	json_object_put(doc);
}

/* The budget ended a run: idle at a prompt is the code's; a prompt while computing, or idle
 * without a prompt, stays the timeout (the latter saying it was mostly waiting). */
/* The stacks the gate's faulthandler prints as the budget's SIGTERM reaches the main program:
 * the main thread's block (outermost frame a <module>) of a dump at the end names where it
 * was; a worker thread's block, a dump long before the end, or a header cut off do not. */
static void test_a_timeout_names_where_the_main_program_was(void **state)
{
	(void)state;
	const char *main_block = "Current thread 0x00007f093c60b040 (most recent call first):\n"
				 "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
				 "  File \"" EXP "/train.py\", line 42 in gather\n"
				 "  File \"" EXP "/main.py\", line 8 in <module>\n";
	const char *worker = "Thread 0x00007f6c36e0c6c0 (most recent call first):\n"
			     "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
			     "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n";
	char log[4096];
	lb_failure_input in = {.exit_code = -1, .signal = SIGTERM, .timed_out = true,
			       .exp_dir = EXP};

	snprintf(log, sizeof log, "loss: 0.5\n%s\n%s", worker, main_block);
	in.log_tail = log;
	in.log_tail_len = strlen(log);
	struct json_object *doc = lb_diagnose_failure(&in), *loc;
	assert_string_equal(field(doc, "class"), "timeout");
	assert_non_null(strstr(field(doc, "summary"),
			       "the main program was at train.py line 42, in gather (inside "
			       "threading.py line 320, in wait)"));
	assert_true(json_object_object_get_ex(doc, "code_location", &loc));
	assert_string_equal(json_object_get_string(json_object_object_get(loc, "file")), "train.py");
	assert_int_equal(json_object_get_int(json_object_object_get(loc, "line")), 42);
	struct json_object *ev = json_object_object_get(doc, "evidence");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(ev, 0)), "loss: 0.5");
	json_object_put(doc);

	/* only a worker's block, or the main block's header cut off: the timeout as before */
	const char *without[] = {worker, strchr(main_block, '\n') + 1};
	for (size_t i = 0; i < 2; i++) {
		snprintf(log, sizeof log, "loss: 0.5\n%s", without[i]);
		in.log_tail = log;
		in.log_tail_len = strlen(log);
		doc = lb_diagnose_failure(&in);
		assert_string_equal(field(doc, "class"), "timeout");
		assert_null(strstr(field(doc, "summary"), "main program was"));
		json_object_put(doc);
	}
	/* the main program ended and waited for a thread of its own that never did */
	snprintf(log, sizeof log,
		 "accuracy: 0.9\nThread 0x00007faaac2f36c0 (most recent call first):\n"
		 "  File \"" EXP "/main.py\", line 4 in prefetch\n"
		 "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n\n"
		 "Current thread 0x00007faaac6ae040 (most recent call first):\n"
		 "  File \"/usr/lib/python3.11/threading.py\", line 1583 in _shutdown\n");
	in.log_tail = log;
	in.log_tail_len = strlen(log);
	doc = lb_diagnose_failure(&in);
	assert_non_null(strstr(field(doc, "summary"), "had finished and was waiting for a thread it "
						       "started, which was at main.py line 4, in prefetch"));
	assert_non_null(strstr(field(doc, "suggestion"), "daemon=True"));
	ev = json_object_object_get(doc, "evidence");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(ev, 0)), "accuracy: 0.9");
	json_object_put(doc);
	/* a dump the program printed itself, long before the end */
	size_t n = (size_t)snprintf(log, sizeof log, "%s", main_block);
	for (int i = 0; i < 30 && n < sizeof log - 32; i++)
		n += (size_t)snprintf(log + n, sizeof log - n, "step: %d\n", i);
	in.log_tail = log;
	in.log_tail_len = strlen(log);
	doc = lb_diagnose_failure(&in);
	if (strstr(field(doc, "summary"), "main program was"))
		fail_msg("an early dump was read: %s", field(doc, "summary"));
	json_object_put(doc);
}

static void test_a_timeout_waiting_at_a_prompt(void **state)
{
	(void)state;
	static const struct {
		const char *log;
		double wall, cpu;
		bool known;
		const char *cls, *summary;
	} cases[] = {
		{"loss: 1\nPress enter to continue.\n", 30, 0.4, true, "code_error", "keyboard input"},
		{"Overwrite the checkpoint? [y/N]", 30, 0.4, true, "code_error", "keyboard input"},
		{"Enter the number of epochs:", 30, 0.4, true, "code_error", "keyboard input"},
		{"loss: 1\nPress enter to continue.\n", 30, 25, true, "timeout", "time budget"},
		{"loss: 1\nPress enter to continue.\n", 30, 0, false, "timeout", "time budget"},
		{"epoch 3: loss 0.5\n", 60, 0.5, true, "timeout", "mostly waiting"},
		{"epoch 3: loss 0.5\n", 60, 50, true, "timeout", "time budget"},
		{"Epoch 3:\n", 30, 0.4, true, "timeout", "mostly waiting"},
		/* the stacks the main program printed as the budget ended it come after its
		 * last words, and name where it waited */
		{"loss: 1\nPress enter to continue.\n"
		 "Current thread 0x00007f0 (most recent call first):\n"
		 "  File \"/r/exp/main.py\", line 3 in <module>\n", 30, 0.4, true, "code_error",
		 "keyboard input"},
		{"epoch 3: loss 0.5\n"
		 "Current thread 0x00007f0 (most recent call first):\n"
		 "  File \"/r/exp/main.py\", line 3 in <module>\n", 60, 0.5, true, "timeout",
		 "not computing; when it ended, the main program was at main.py line 3, in "
		 "<module>"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		lb_failure_input in = {.exit_code = -1, .signal = SIGKILL, .timed_out = true};
		in.log_tail = cases[i].log;
		in.log_tail_len = strlen(cases[i].log);
		/* the stacks are printed as the budget's SIGTERM ends the program */
		if (strstr(cases[i].log, "Current thread"))
			in.signal = SIGTERM;
		in.wall_s = cases[i].wall;
		in.cpu_s = cases[i].cpu;
		in.cpu_known = cases[i].known;
		struct json_object *doc = lb_diagnose_failure(&in);
		assert_string_equal(field(doc, "class"), cases[i].cls);
		if (!strstr(field(doc, "summary"), cases[i].summary))
			fail_msg("case %zu: %s", i, field(doc, "summary"));
		json_object_put(doc);
	}
}

/* A module or class missing while unpickling is named by the file being loaded, not by an
 * import of the experiment's: the saving project's own module is its code to copy (no pip
 * install of a PyPI project of that name), a known package's is still a package to install,
 * and a dotted module of an installed package is the version that saved the file. */
static void test_a_module_a_pickle_names_is_no_import_of_the_code(void **state)
{
	(void)state;
	char dir[] = "/tmp/lb-unpickle-XXXXXX";
	assert_non_null(mkdtemp(dir));
	put_file(dir, "main.py", "\n");
	put_file(dir, "nets.py", "X = 1\n");
	put_file(dir, "src/layers.py", "X = 1\n");

	/* the C unpickler: only the experiment's line that called the load is printed */
	struct json_object *doc = diagnose_staged(dir, "main.py", "model = pickle.load(f)",
		"ModuleNotFoundError: No module named 'models'");
	assert_non_null(strstr(field(doc, "summary"), "file being loaded names module 'models'"));
	assert_non_null(strstr(field(doc, "summary"), "not staged"));
	assert_null(strstr(field(doc, "suggestion"), "pip install"));
	assert_non_null(strstr(field(doc, "suggestion"), "copy the module"));
	assert_null(escalation_of(doc));
	assert_int_equal(lb_escalate_for_failure(doc), 0);
	struct json_object *loc = NULL, *v = NULL;
	assert_true(json_object_object_get_ex(doc, "code_location", &loc) && loc);
	assert_true(json_object_object_get_ex(loc, "line", &v));
	assert_int_equal(json_object_get_int(v), 2);
	expect(doc, "code_error", "No module named 'models'");
	/* the same import written by the code itself stays a package to install */
	doc = diagnose_staged(dir, "main.py", "import models",
			      "ModuleNotFoundError: No module named 'models'");
	assert_string_equal(escalation_of(doc), "pip install models");
	expect(doc, "missing_package", NULL);
	/* a known package the file's objects come from, not installed: that package */
	doc = diagnose_staged(dir, "main.py", "clf = pickle.loads(blob)",
			      "ModuleNotFoundError: No module named 'sklearn'");
	assert_non_null(strstr(field(doc, "summary"), "file being loaded names module 'sklearn'"));
	assert_string_equal(escalation_of(doc), "pip install scikit-learn");
	assert_string_equal(field(doc, "confidence"), "high");
	expect(doc, "missing_package", NULL);
	/* a module the experiment has, out of Python's path: its own-module reading */
	doc = diagnose_staged(dir, "main.py", "obj = pickle.load(f)",
			      "ModuleNotFoundError: No module named 'layers'");
	assert_non_null(strstr(field(doc, "summary"), "src/layers.py"));
	expect(doc, "code_error", NULL);

	/* torch.load, whose frames are printed down to its find_class */
	char log[4096];
	snprintf(log, sizeof(log),
		 "Traceback (most recent call last):\n"
		 "  File \"%s/main.py\", line 3, in <module>\n"
		 "    net = torch.load(\"net.pt\")\n"
		 "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 789, in load\n"
		 "    return _load(opened_zipfile, map_location, pickle_module, **pickle_load_args)\n"
		 "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 1131, in _load\n"
		 "    result = unpickler.load()\n"
		 "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 1124, in find_class\n"
		 "    return super().find_class(mod_name, name)\n"
		 "%s\n", dir, "ModuleNotFoundError: No module named 'models'");
	lb_failure_input in = {.log_tail = log, .log_tail_len = strlen(log), .exit_code = 1,
			       .exp_dir = dir};
	doc = lb_diagnose_failure(&in);
	assert_null(escalation_of(doc));
	assert_true(json_object_object_get_ex(doc, "code_location", &loc) && loc);
	assert_true(json_object_object_get_ex(loc, "text", &v));
	assert_string_equal(json_object_get_string(v), "net = torch.load(\"net.pt\")");
	expect(doc, "code_error", NULL);
	/* the class missing from the experiment's own module of that name */
	snprintf(log, sizeof(log),
		 "Traceback (most recent call last):\n"
		 "  File \"%s/main.py\", line 3, in <module>\n"
		 "    net = torch.load(\"net.pt\")\n"
		 "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 1124, in find_class\n"
		 "    return super().find_class(mod_name, name)\n"
		 "AttributeError: Can't get attribute 'SmallNet' on <module 'nets' from '%s/nets.py'>\n",
		 dir, dir);
	in.log_tail_len = strlen(log);
	doc = lb_diagnose_failure(&in);
	assert_non_null(strstr(field(doc, "summary"), "class 'SmallNet'"));
	assert_non_null(strstr(field(doc, "summary"), "nets.py"));
	assert_string_equal(field(doc, "confidence"), "high");
	assert_null(escalation_of(doc));
	expect(doc, "code_error", NULL);
	/* a class of the saving script's __main__ */
	doc = diagnose_staged(dir, "main.py", "model = pickle.load(open(\"m.pkl\", \"rb\"))",
			      "AttributeError: Can't get attribute 'Scaler' on <module '__main__' "
			      "from '/exp/main.py'>");
	assert_non_null(strstr(field(doc, "summary"), "class 'Scaler' of module '__main__'"));
	expect(doc, "code_error", NULL);
	/* a class an installed package's version lacks: that version */
	doc = diagnose_staged(dir, "main.py", "est = joblib.load(\"est.joblib\")",
			      "AttributeError: Can't get attribute 'Old' on <module 'sklearn.tree._classes' "
			      "from '/venv/lib/python3.11/site-packages/sklearn/tree/_classes.py'>");
	assert_string_equal(escalation_of(doc), "pip install scikit-learn==VERSION");
	expect(doc, "wrong_env", NULL);
	/* numpy 2's pickle under numpy 1: numpy imports, its version lacks numpy._core */
	snprintf(log, sizeof(log),
		 "Traceback (most recent call last):\n"
		 "  File \"%s/main.py\", line 2, in <module>\n"
		 "    a = np.load(\"a.npy\", allow_pickle=True)\n"
		 "  File \"/usr/lib/python3/dist-packages/numpy/lib/npyio.py\", line 432, in load\n"
		 "    return format.read_array(fid, allow_pickle=allow_pickle,\n"
		 "  File \"/usr/lib/python3/dist-packages/numpy/lib/format.py\", line 792, in read_array\n"
		 "    array = pickle.load(fp, **pickle_kwargs)\n"
		 "ModuleNotFoundError: No module named 'numpy._core'\n", dir);
	in.log_tail_len = strlen(log);
	doc = lb_diagnose_failure(&in);
	assert_non_null(strstr(field(doc, "summary"), "saved with another version of numpy"));
	assert_string_equal(escalation_of(doc), "pip install numpy==VERSION");
	expect(doc, "wrong_env", NULL);
	/* multiprocessing's own unpickling in a spawned child is not a file being loaded */
	snprintf(log, sizeof(log),
		 "Traceback (most recent call last):\n"
		 "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 130, in _main\n"
		 "    self = reduction.pickle.load(from_parent)\n"
		 "ModuleNotFoundError: No module named 'models'\n");
	in.log_tail_len = strlen(log);
	doc = lb_diagnose_failure(&in);
	expect(doc, "missing_package", NULL);
}

static void test_octave_missing_function_hook(void **state)
{
	(void)state;
	char pkg[64];
	const char text[] = "    case {\"avifile\", \"aviinfo\"}\n      txt = [\"video\"];\n"
			    "    case {\"normpdf\", ...\n          \"ttest\"}\n"
			    "      txt = check_package (fcn, \"statistics\");\n"
			    "    otherwise\n  rlist = {\"matlabfn\", ...};\n";

	assert_true(lb_octave_help_formatter(
		"/usr/bin/perl /usr/bin/makeinfo --no-headers --no-warn --no-validate --plaintext "
		"--output=- /tmp/octave-help-a6xc4d"));
	assert_true(lb_octave_help_formatter(
		"/usr/bin/perl /usr/bin/makeinfo --no-headers --no-warn --no-validate --plaintext "
		"--force --output=- /tmp/octave-help-a6xc4d"));
	assert_false(lb_octave_help_formatter("/usr/bin/perl /usr/bin/makeinfo x.texi"));
	assert_false(lb_octave_help_formatter("/usr/bin/perl -e 1 --output=- /tmp/octave-help-a6xc4d"));
	assert_false(lb_octave_help_formatter("/usr/bin/python3 -I -S x.py"));
	assert_false(lb_octave_help_formatter(NULL));
	assert_int_equal(lb_octave_function_package(text, sizeof text - 1, "normpdf", pkg, sizeof pkg), 0);
	assert_string_equal(pkg, "statistics");
	assert_int_equal(lb_octave_function_package(text, sizeof text - 1, "ttest", pkg, sizeof pkg), 0);
	assert_int_equal(lb_octave_function_package(text, sizeof text - 1, "avifile", pkg, sizeof pkg),
			 -ENOENT);
	assert_int_equal(lb_octave_function_package(text, sizeof text - 1, "matlabfn", pkg, sizeof pkg),
			 -ENOENT);
	assert_int_equal(lb_octave_function_package(text, sizeof text - 1, "norm", pkg, sizeof pkg),
			 -ENOENT);

	/* The message itself, wrapped as makeinfo wraps it (--policy permissive). */
	const char *log = "error: 'normpdf' undefined near line 1, column 5\n\n"
			  "The 'normpdf' function belongs to the statistics package from Octave\n"
			  "Forge which you have installed but not loaded.  To load the package, run\n"
			  "'pkg load statistics' from the Octave prompt.\n\n"
			  "error: called from\n    main at line 1 column 3\n";
	lb_failure_input in = { .log_tail = log, .log_tail_len = strlen(log), .exit_code = 1,
				.language = "octave" };
	struct json_object *f = lb_diagnose_failure(&in);
	assert_string_equal(json_object_get_string(json_object_object_get(f, "class")),
			    "missing_package");
	assert_non_null(strstr(json_object_get_string(json_object_object_get(f, "summary")),
			       "installed but not loaded"));
	assert_non_null(strstr(json_object_get_string(json_object_object_get(f, "suggestion")),
			       "pkg load statistics"));
	json_object_put(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_success_is_not_a_failure),
		cmocka_unit_test(test_missing_package),
		cmocka_unit_test(test_octave_missing_function_hook),
		cmocka_unit_test(test_wrong_env),
		cmocka_unit_test(test_missing_data),
		cmocka_unit_test(test_missing_file_that_is_no_data),
		cmocka_unit_test(test_missing_data_wrapped),
		cmocka_unit_test(test_code_error_cause_takes_over),
		cmocka_unit_test(test_program_not_found),
		cmocka_unit_test(test_network),
		cmocka_unit_test(test_sandbox_restriction),
		cmocka_unit_test(test_gpu_oom),
		cmocka_unit_test(test_gpu_unavailable),
		cmocka_unit_test(test_oom),
		cmocka_unit_test(test_nan_divergence),
		cmocka_unit_test(test_code_error),
		cmocka_unit_test(test_a_line_of_the_other_stream_inside_a_traceback),
		cmocka_unit_test(test_exception_group),
		cmocka_unit_test(test_timeout_and_infra),
		cmocka_unit_test(test_hostile_log),
		cmocka_unit_test(test_gpu_unavailable_more),
		cmocka_unit_test(test_binary_bytes_in_tail),
		cmocka_unit_test(test_hf_datasets),
		cmocka_unit_test(test_chain_root_cause),
		cmocka_unit_test(test_cython_frame_is_a_librarys),
		cmocka_unit_test(test_child_gate_refusal),
		cmocka_unit_test(test_gate_refusal_needs_its_record_and_the_end),
		cmocka_unit_test(test_cpu_time_limit_is_not_the_budget),
		cmocka_unit_test(test_worker_original_traceback),
		cmocka_unit_test(test_worker_exception_with_the_other_stream_inside),
		cmocka_unit_test(test_warn_exception_caught_at_end),
		cmocka_unit_test(test_no_warn_exception_caught_at_end),
		cmocka_unit_test(test_shm_exhausted),
		cmocka_unit_test(test_denied_socket_names_network_flag),
		cmocka_unit_test(test_warn_loss_divergence),
		cmocka_unit_test(test_a_growing_part_of_an_improving_objective_is_no_divergence),
		cmocka_unit_test(test_warn_runtime_warnings),
		cmocka_unit_test(test_warn_near_chance),
		cmocka_unit_test(test_near_chance_is_for_an_accuracy_itself),
		cmocka_unit_test(test_warn_time_guard_skipped),
		cmocka_unit_test(test_warn_stdlib_shadow),
		cmocka_unit_test(test_warn_log_with_nuls),
		cmocka_unit_test(test_runlog_tail_keeps_nuls),
		cmocka_unit_test(test_code_location_apart_from_raising_frame),
		cmocka_unit_test(test_confidence_levels),
		cmocka_unit_test(test_escalations),
		cmocka_unit_test(test_a_native_socket_refused_is_the_networks),
		cmocka_unit_test(test_a_write_under_a_granted_volume_names_who_may_write_it),
		cmocka_unit_test(test_a_full_tmpfs_is_why_a_write_failed),
		cmocka_unit_test(test_a_floating_point_error_is_read_from_its_message),
		cmocka_unit_test(test_what_the_sandbox_takes_away_is_named),
		cmocka_unit_test(test_octave_frame),
		cmocka_unit_test(test_octave_frame_of_the_experiment),
		cmocka_unit_test(test_uncaught_main_exception),
		cmocka_unit_test(test_a_program_that_stopped_itself),
		cmocka_unit_test(test_a_status_above_128_is_no_signal),
		cmocka_unit_test(test_a_dead_workers_exception_is_the_cause),
		cmocka_unit_test(test_an_oom_kill_before_the_budget_is_the_cause),
		cmocka_unit_test(test_the_experiments_own_modules_are_its_code),
		cmocka_unit_test(test_a_misspelt_name_is_the_codes),
		cmocka_unit_test(test_a_read_only_file_of_the_experiment_is_the_codes),
		cmocka_unit_test(test_a_nan_in_the_data_is_no_divergence),
		cmocka_unit_test(test_open_files_and_a_samplers_nan),
		cmocka_unit_test(test_an_allocation_past_the_machines_memory_is_the_codes),
		cmocka_unit_test(test_a_caught_allocation_does_not_size_the_memory_escalation),
		cmocka_unit_test(test_a_cuda_oom_without_a_gpu_is_not_the_gpus),
		cmocka_unit_test(test_a_spawned_childs_traceback_is_the_cause),
		cmocka_unit_test(test_an_r_install_at_run_time_is_the_missing_package),
		cmocka_unit_test(test_a_path_the_message_says_is_missing_is_missing_data),
		cmocka_unit_test(test_a_misspelt_data_path_is_the_codes),
		cmocka_unit_test(test_an_overflow_after_a_diverged_loss_is_the_divergence),
		cmocka_unit_test(test_a_timeout_waiting_at_a_prompt),
		cmocka_unit_test(test_a_timeout_names_where_the_main_program_was),
		cmocka_unit_test(test_a_module_a_pickle_names_is_no_import_of_the_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
