"""The runtime gate (issue 14 §1): a PEP 578 audit hook in the sandboxed interpreter.

Each evasion the static check misses is run under labbox with `--policy permissive` (so the
static check lets it through) and `--runtime-gate on` (so the runtime layer is what is
tested): the operation must be refused as it happens, its effect must be absent when seen
from the host (a marker the spawned process or the write would leave), and result.json's
runtime_gate must name the event. Research code must stay accepted under the default policy.
"""
import base64
import json
import os
import shutil
import textwrap
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import PYTHON, run_exp, write_exp, labbox, user_dirs

GATE_ON = ("--policy", "permissive", "--runtime-gate", "on")


def gate(run):
    g = run.result.get("runtime_gate")
    assert g is not None, run.why()
    return g


def refused_events(run):
    return [e for e in gate(run)["events"] if e["refused"]]


def assert_refused(run, event, rule=None):
    evs = [e for e in refused_events(run) if e["event"] == event]
    assert evs, f"no refused {event} event\n{run.why()}"
    if rule:
        assert evs[0]["rule"] == rule, run.why()
    return evs[0]


def outside_marker():
    # Under /var/lib, which the sandbox shows read-only: the gate must refuse before the
    # kernel would; either way nothing may appear there on the host.
    return Path("/var/lib") / f"labbox-gate-marker-{uuid.uuid4().hex[:10]}"


# ---- evasions the static check misses ----------------------------------------------------

SPAWN_CASES = {
    "pipepager": """
        import pydoc
        try:
            pydoc.pipepager("text", "touch MARKER")
        except PermissionError as e:
            print("refused:", e)
            raise
    """,
    "asyncio_subprocess_shell": """
        import asyncio
        async def main():
            loop = asyncio.get_running_loop()
            await loop.subprocess_shell(asyncio.SubprocessProtocol, "touch MARKER")
        asyncio.run(main())
    """,
    "pickle_payload": """
        import os, pickle
        class R:
            def __reduce__(self):
                return (os.system, ("touch MARKER",))
        data = pickle.dumps(R())
        del R
        pickle.loads(data)
    """,
    "gc_walk": """
        import gc
        for o in gc.get_objects():
            if isinstance(o, dict) and "system" in o and "getcwd" in o:
                o["system"]("touch MARKER")
                break
    """,
    "tempfile_os": """
        import tempfile
        tempfile._os.system("touch MARKER")
    """,
    "pkgutil_resolve_name": """
        import pkgutil
        pkgutil.resolve_name("os:system")("touch MARKER")
    """,
    "spawnv_passfds": """
        import multiprocessing.util as u
        import os
        pid = u.spawnv_passfds(b"/usr/bin/touch", ["touch", "MARKER"], [])
        os.waitpid(pid, 0)
    """,
    # multiprocessing's own starts are let through (spawn, forkserver): what rides on them
    # is not. A program of the interpreter's that is not one of its entry points:
    "spawnv_passfds_python": """
        import multiprocessing.util as u
        import os, sys
        pid = u.spawnv_passfds(sys.executable,
                               [sys.executable, "-c", "import os; os.system('touch MARKER')"], [])
        os.waitpid(pid, 0)
    """,
    # an entry point with code in its arguments:
    "spawn_main_with_code": """
        import multiprocessing.util as u
        import os, sys
        prog = ("from multiprocessing.spawn import spawn_main; "
                "spawn_main(__import__('os').system('touch MARKER'))")
        pid = u.spawnv_passfds(sys.executable, [sys.executable, "-c", prog,
                                                "--multiprocessing-fork"], [])
        os.waitpid(pid, 0)
    """,
    # another program in the interpreter's place:
    "set_executable": """
        import multiprocessing as mp, os
        with open("fakepy", "w") as f:
            f.write("#!/bin/sh\\ntouch MARKER\\n")
        os.chmod("fakepy", 0o755)
        mp.set_executable(os.path.abspath("fakepy"))
        if __name__ == "__main__":
            mp.set_start_method("spawn")
            p = mp.Process(target=print, args=("child",))
            p.start()
            p.join()
    """,
    # a flag the interpreter was not started with (a warning category imports its module):
    "warnoption_flag": """
        import multiprocessing as mp, sys, warnings  # warnings has read its options now
        with open("evil.py", "w") as f:
            f.write("import os\\nos.system('touch MARKER')\\nclass W(Warning): pass\\n")
        sys.warnoptions.append("ignore::evil.W")
        def f(x):
            return x
        if __name__ == "__main__":
            mp.set_start_method("spawn")
            with mp.Pool(1) as pool:
                print(pool.map(f, [1]))
    """,
    # a name that tells the check one thing and the exec another (bytes.decode overridden):
    "set_executable_bytes_subclass": """
        import multiprocessing as mp, os, sys
        with open("fakepy", "w") as f:
            f.write("#!/bin/sh\\ntouch MARKER\\n")
        os.chmod("fakepy", 0o755)
        class Name(bytes):
            def decode(self, *a):
                return sys.executable
        def work(x):
            return x
        if __name__ == "__main__":
            mp.set_start_method("spawn")
            mp.set_executable(Name(os.path.abspath("fakepy").encode()))
            p = mp.Process(target=work, args=(1,))
            p.start()
            p.join()
    """,
    # a pickle that hands back the constructor of functions (or of code objects):
    "pickle_function_type": """
        import pickle
        f = pickle.loads(b"ctypes\\nFunctionType\\n.")
        print("got", f)
    """,
    # OpenSSL's configuration naming a provider module of the experiment's (native code
    # without ctypes, loaded when hashlib starts OpenSSL):
    "openssl_conf": """
        import os
        here = os.getcwd()
        with open("ossl.cnf", "w") as f:
            f.write("openssl_conf = init\\n[init]\\nproviders = prov\\n[prov]\\n"
                    "evil = evil_sect\\n[evil_sect]\\nmodule = %s/evil.so\\n"
                    "activate = 1\\n" % here)
        os.environ["OPENSSL_CONF"] = here + "/ossl.cnf"
        import hashlib
        print(hashlib.sha256(b"x").hexdigest())
    """,
    # a second copy of a built-in module, made without an import (no event of its own):
    "fresh_posixsubprocess": """
        import importlib._bootstrap as b
        import os
        class Spec:
            name = "_posixsubprocess"
        fresh = b._imp.create_builtin(Spec())
        r, w = os.pipe()
        pid = fresh.fork_exec([b"/bin/sh", b"-c", b"touch MARKER"], [b"/bin/sh"], True, (w,), None,
                        None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None,
                        -1, None, False)
        os.waitpid(pid, 0)
    """,
    # a library path that is only a prefix: ".." leads back into the experiment
    "dotdot_library_path": """
        import os, sys
        here = os.getcwd()
        with open("stage1.py", "w") as f:
            f.write("import ctypes\\nctypes.CDLL(None).system(b'touch %s/MARKER')\\n" % here)
        sys.path.insert(0, "/usr/lib/python3/dist-packages/../../../.." + here)
        import stage1
    """,
    # a relative zip path whose files' names start like a frozen module's
    "frozen_named_zip": """
        import os, sys, zipfile
        here = os.getcwd()
        STAGE = r'''
        def go(here):
            src = "import ctypes\\nctypes.CDLL(None).system(b'touch %s/MARKER')" % here
            c = compile(src, "<frozen x>.zip/stage.py", "exec")
            c = c.replace(co_filename="/usr/lib/python3/dist-packages/zz.py")
            exec(c, {})
        '''
        with zipfile.ZipFile("<frozen x>.zip", "w") as z:
            z.writestr("stage.py", STAGE.replace("\\n        ", "\\n"))
        sys.path.insert(0, "<frozen x>.zip")
        import stage
        stage.go(here)
    """,
    # the child started without the gate's environment: it has the gate all the same.
    "environ_drops_gate": """
        import multiprocessing as mp, os
        os.environ["PYTHONPATH"] = ""
        os.environ["LD_PRELOAD"] = ""
        def touch(x):
            os.system("touch MARKER")
            return x
        if __name__ == "__main__":
            mp.set_start_method("spawn")
            with mp.Pool(1) as pool:
                print(pool.map(touch, [1]))
    """,
}

SPAWN_EVENTS = {
    "pipepager": ("subprocess.Popen", "LB102"),
    "asyncio_subprocess_shell": ("subprocess.Popen", "LB102"),
    "pickle_payload": ("pickle.find_class", "gate.pickle"),
    "gc_walk": ("gc.get_objects", "LB111"),
    "tempfile_os": ("os.system", "LB101"),
    "pkgutil_resolve_name": ("os.system", "LB101"),
    "spawnv_passfds": ("_posixsubprocess.fork_exec", "LB102"),
    "spawnv_passfds_python": ("_posixsubprocess.fork_exec", "LB102"),
    "spawn_main_with_code": ("_posixsubprocess.fork_exec", "LB102"),
    "set_executable": ("_posixsubprocess.fork_exec", "LB102"),
    "warnoption_flag": ("_posixsubprocess.fork_exec", "LB102"),
    "environ_drops_gate": ("os.system", "LB101"),
    "set_executable_bytes_subclass": ("_posixsubprocess.fork_exec", "LB102"),
    "pickle_function_type": ("pickle.find_class", "gate.pickle"),
    "openssl_conf": ("os.putenv", "LB106"),
    "fresh_posixsubprocess": ("_imp.create_builtin", "gate.tamper"),
    "dotdot_library_path": ("import", "LB106"),
    "frozen_named_zip": ("compile", "LB103"),
}

# A shared object whose constructor leaves the marker: what the openssl_conf case would load.
EVIL_SO = r"""
#include <stdio.h>
__attribute__((constructor)) static void mark(void)
{
    FILE *f = fopen("MARKER", "w");
    if (f)
        fclose(f);
}
"""


@pytest.mark.parametrize("name", sorted(SPAWN_CASES))
def test_spawning_evasion_is_refused(tmp_path, name):
    exp = write_exp(tmp_path, SPAWN_CASES[name])
    if name == "openssl_conf":
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            pytest.skip("no C compiler to build the shared object")
        (tmp_path / "evil.c").write_text(EVIL_SO)
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(exp / "evil.so"),
                        str(tmp_path / "evil.c")], check=True)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    event, rule = SPAWN_EVENTS[name]
    ev = assert_refused(r, event, rule)
    assert r.rc == 1, r.why()
    # The process was never created: the marker it would have left in exp/ is absent.
    assert not (r.exp / "MARKER").exists(), r.why()
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    assert r.result["failure"]["rule"] == rule, r.why()
    assert gate(r)["enforced"] is True
    # The event names the experiment's line, where it is the experiment's code that asked.
    if ev["file"]:
        assert ev["file"].startswith(str(r.exp)), r.why()
        assert ev["line"] >= 1



# Hand-built pickles that reach exec through names the allowlist let through before: a
# module's __builtins__ (a dict of exec, __import__, getattr), a class found under a name it
# was not defined under (collections._itemgetter is operator's itemgetter; a class the
# experiment imported), then a trusted library function or class that calls what it is given
# (torch's mp.spawn _wrap, numpy.vectorize), so the exec came from a library's frame.
PICKLE_PRELUDE = """
    import pickle, struct
    import numpy
    def g(m, n):
        return b"c" + m.encode() + b"\\n" + n.encode() + b"\\n"
    def s(x):
        b = x.encode()
        return b"X" + struct.pack("<I", len(b)) + b
    SRC = "open('MARKER', 'w').close()"
    WORD = s("ex" + "ec")
"""
PICKLE_GADGETS = {
    # the builtins dict first (memo 0), then itemgetter("exec") of it, called by numpy.vectorize
    "builtins_dict": ("__builtins__", """
        p = (b"\\x80\\x02" + g("numpy", "__builtins__") + b"p0\\n0" + g("numpy", "vectorize") +
             b"(" + g("collections", "_itemgetter") + b"(" + WORD + b"tR(g0\\ntR" + b"tR" +
             b"(" + s(SRC) + b"tR.")
        pickle.loads(p)
    """),
    # the re-exported class first: operator's itemgetter found in collections, then torch's _wrap
    "reexported_class": ("_itemgetter", """
        p = (b"\\x80\\x02" + g("collections", "_itemgetter") + b"(" + WORD + b"tRp0\\n0" +
             g("torch.multiprocessing.spawn", "_wrap") + b"(g0\\n(" + g("numpy", "__builtins__") +
             b"tR" + s(SRC) + b")NtR.")
        pickle.loads(p)
    """),
    # torch.fx: a Graph whose code generator holds the pickle's string, and a GraphModule
    # that recompiles from it (exec from fx's own frame) while it is unpickled
    "fx_graph_module": ("GraphModule", """
        code = "x=open('MARKER', 'w')"
        p = (b"\\x80\\x02" + g("torch.fx.graph_module", "GraphModule") +
             g("torch.nn", "Module") + b")R" + g("torch.fx.graph", "Graph") + b")R" +
             b"}" + s("_codegen") + g("torch.fx.graph", "_PyTreeCodeGen") +
             g("torch.fx.graph", "_PyTreeInfo") + b"(]" + s(code) + b"aNNtR" + b"\\x85R" +
             b"sb" + b"\\x86R.")
        pickle.loads(p)
    """),
    # a class the experiment imported is not the experiment's own class
    "experiment_reexport": ("itemgetter", """
        from operator import itemgetter
        getter = pickle.loads(b"c__main__\\nitemgetter\\n.")
        print("got", getter)
        open("MARKER", "w").close()
    """),
}


@pytest.mark.parametrize("name", sorted(PICKLE_GADGETS))
def test_a_pickle_gadget_reaches_no_builtin(tmp_path, name):
    pytest.importorskip("torch")
    refused_name, body = PICKLE_GADGETS[name]
    exp = write_exp(tmp_path, textwrap.dedent(PICKLE_PRELUDE) + "\nimport torch\n" +
                    textwrap.dedent(body))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"][1] == refused_name, r.why()
    assert r.rc == 1 and r.result["failure"]["class"] == "gate_refused", r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


# A pickle naming a module the experiment has not imported yet (find_class imports it): the
# name is judged on what it is once the module is there, not on whether it looks like a class.
def test_a_pickle_of_a_module_not_imported_yet_is_judged_on_what_it_names(tmp_path):
    import datetime
    import fractions
    import pathlib
    import pickle
    values = [datetime.date(2024, 1, 2), datetime.timedelta(days=3),
              datetime.datetime(2024, 5, 6, 7, 8, tzinfo=datetime.timezone.utc),
              fractions.Fraction(1, 3), pathlib.PurePosixPath("data/train.csv")]
    blob = pickle.dumps(values, protocol=2)
    exp = write_exp(tmp_path, f"""
        import pickle, sys
        mods = ("datetime", "fractions", "pathlib", "numbers")
        print("loaded before:", [m for m in mods if m in sys.modules])
        v = pickle.loads({blob!r})
        print("value:", v)
        try:
            got = pickle.loads(b"cnumbers\\nABCMeta\\n.")
        except PermissionError as e:
            print("refused:", e)
        else:
            print("got", got)
            open("MARKER", "w").close()
        print("n_values:", len(v))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    log = r.log()
    # None of them was there before: find_class imported each.
    assert "loaded before: []" in log, r.why()
    # Lower-case classes of the standard library (date, timedelta, timezone) unpickle.
    assert "value: [datetime.date(2024, 1, 2), datetime.timedelta(days=3)" in log, r.why()
    assert r.rc == 0 and r.result["metrics"]["values"]["n_values"] == 5, r.why()
    # A class-like name that is a re-export (abc's ABCMeta in numbers) is what it is.
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"] == ["numbers", "ABCMeta"], r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


# Code relabelled as a library's file through the standard library's helpers that call what
# they are given: the compile and the exec came from the helper's frame, and the code then
# ran as numpy's, so its `import ctypes` passed. The relabelling is the experiment's doing.
RELABEL_PRELUDE = """
    import numpy
    SRC = "import ctypes\\nopen('MARKER', 'w').write(repr(ctypes.CDLL))\\n"
"""
RELABEL_CASES = {
    "thread_pool": """
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1) as ex:
            c = ex.submit(compile, SRC, "<payload>", "exec").result()
            c2 = ex.submit(c.replace, co_filename=numpy.__file__).result()
            ex.submit(exec, c2, {}).result()
    """,
    "copy_reduce": """
        import copy, types
        from concurrent.futures import ThreadPoolExecutor
        c = ThreadPoolExecutor(1).submit(compile, SRC, "<payload>", "exec").result()
        fields = [c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_nlocals,
                  c.co_stacksize, c.co_flags, c.co_code, c.co_consts, c.co_names,
                  c.co_varnames, numpy.__file__, c.co_name, c.co_qualname,
                  c.co_firstlineno, c.co_linetable, c.co_exceptiontable]
        class R:
            def __reduce_ex__(self, proto):
                return (types.CodeType, tuple(fields))
        c2 = copy.deepcopy(R())
        ThreadPoolExecutor(1).submit(exec, c2, {}).result()
    """,
}


@pytest.mark.parametrize("name", sorted(RELABEL_CASES))
def test_code_relabelled_through_the_standard_library_is_refused(tmp_path, name):
    exp = write_exp(tmp_path, textwrap.dedent(RELABEL_PRELUDE) +
                    textwrap.dedent(RELABEL_CASES[name]))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    # the thread pool that compiles the string is refused first now (a caller of what it is
    # handed decides nothing); were it not, the relabelling is
    evs = [e for e in refused_events(r) if e["rule"] == "LB103" and
           (e["event"] == "compile" or
            (e["event"] == "code.__new__" and "numpy" in (e["detail"] or "")))]
    assert evs, r.why()
    assert r.rc == 1 and r.result["failure"]["class"] == "gate_refused", r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


# A builtin handed to a callback the interpreter runs from C (a thread started on a builtin,
# atexit, a builtin mapped over inside one) runs with no Python frame under it: compile,
# exec and marshal.loads made there carried the experiment's arguments but passed as the
# interpreter's own, and code naming numpy's file then ran as numpy's.
FRAMELESS_PRELUDE = """
    import _thread, atexit, collections, time, numpy
    SRC = "import ctypes\\nopen('MARKER', 'w').write(repr(ctypes.CDLL))\\n"
    out = collections.deque()
    def wait():
        for _ in range(100):
            if out:
                return out[0]
            time.sleep(0.02)
        print("nothing came back")
"""
FRAMELESS_CASES = {
    "thread_compile": ("compile", """
        _thread.start_new_thread(out.extend, (map(compile, [SRC], [numpy.__file__], ["exec"]),))
        code = wait()
        if code is not None:
            _thread.start_new_thread(exec, (code, {}))
            time.sleep(0.5)
    """),
    "atexit_compile": ("compile", """
        codes = []
        atexit.register(lambda: None)
        atexit.register(collections.deque().extend, map(exec, codes, [{}]))
        atexit.register(codes.extend, map(compile, [SRC], [numpy.__file__], ["exec"]))
    """),
    "thread_marshal": ("marshal.loads", """
        import marshal
        data = open("code.bin", "rb").read()
        _thread.start_new_thread(out.extend, (map(marshal.loads, [data]),))
        code = wait()
        if code is not None:
            _thread.start_new_thread(exec, (code, {}))
            time.sleep(0.5)
    """),
}


@pytest.mark.parametrize("name", sorted(FRAMELESS_CASES))
def test_dynamic_code_from_no_python_frame_is_the_experiments(tmp_path, name):
    event, body = FRAMELESS_CASES[name]
    exp = write_exp(tmp_path, textwrap.dedent(FRAMELESS_PRELUDE) + textwrap.dedent(body))
    # bytecode naming numpy's file, made here with the same interpreter the run uses
    made = subprocess.run([PYTHON, "-c", textwrap.dedent("""
        import marshal, numpy, sys
        src = "import ctypes\\nopen('MARKER', 'w').write(repr(ctypes.CDLL))\\n"
        sys.stdout.buffer.write(marshal.dumps(compile(src, numpy.__file__, "exec")))
    """)], capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    (exp / "code.bin").write_bytes(made.stdout)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    ev = assert_refused(r, event, "LB103")
    assert "no Python frame" in (ev["detail"] or ""), r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_a_traceback_printed_from_no_frame_is_no_refusal(tmp_path):
    """The interpreter parses a piece of a line for the carets under a call when it prints
    a traceback with no Python frame (an exception in an atexit callback, a thread started
    on a builtin): that parse is not the experiment's compile, and no refusal is recorded."""
    exp = write_exp(tmp_path, """
        import _thread, atexit, json, time
        _thread.start_new_thread(json.loads, ("{bad",))
        time.sleep(0.3)
        atexit.register(json.loads, "{bad")
        print("accuracy: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    gate = r.result["runtime_gate"]
    assert gate["refused"] == 0 and not gate["events"], r.why()
    log = r.log()
    assert log.count("JSONDecodeError") >= 2 and "json/decoder.py" in log, log[-3000:]


NATIVE_SO = r"""
#include <stdio.h>
__attribute__((constructor)) static void ran(void)
{
    FILE *f = fopen("MARKER", "w");
    if (f)
        fclose(f);
}
"""
NATIVE_CASES = {
    # an extension module shipped beside main.py: native code on `import`
    "shipped_extension": ("import", "evilmod.cpython-311-x86_64-linux-gnu.so", """
        try:
            import evilmod
        except PermissionError as e:
            print("refused:", e)
    """),
    # bytes the experiment writes as an extension module at run time, then imports
    "written_extension": ("import", "payload.bin", """
        import shutil, sys
        shutil.copy("payload.bin", "written.cpython-311-x86_64-linux-gnu.so")
        sys.path.insert(0, ".")
        try:
            import written
        except PermissionError as e:
            print("refused:", e)
    """),
    # a library loading, on the experiment's word, a shared object it put in /tmp
    "library_loads_from_tmp": ("ctypes.dlopen", "payload.bin", """
        import shutil, numpy.ctypeslib
        shutil.copy("payload.bin", "/tmp/x.so")
        try:
            numpy.ctypeslib.load_library("x.so", "/tmp/")
        except PermissionError as e:
            print("refused:", e)
    """),
}


@pytest.mark.parametrize("name", sorted(NATIVE_CASES))
def test_native_code_from_a_place_the_run_can_write_is_refused(tmp_path, name):
    """A shared object the experiment ships or writes runs its constructors when it is
    loaded, before anything a hook could judge, and no check read it: refused whoever loads
    it (the import system, a library), while the interpreter's and the libraries' own load
    (numpy's extension modules, a system library by its path) as before."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler to build the shared object")
    event, so_name, body = NATIVE_CASES[name]
    exp = write_exp(tmp_path, textwrap.dedent(body) + textwrap.dedent("""
        import numpy.ctypeslib
        print("libm:", numpy.ctypeslib.load_library("libm.so.6", "/usr/lib/x86_64-linux-gnu/") is not None)
        print("accuracy: 1")
    """))
    (tmp_path / "so.c").write_text(NATIVE_SO)
    built = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(exp / so_name),
                            str(tmp_path / "so.c")], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    ev = assert_refused(r, event, "LB106")
    assert "a place the run can write" in (ev["detail"] or ""), r.why()
    assert not (r.exp / "MARKER").exists(), r.why()
    # a system library by its path, loaded by a library, is what it was
    assert "refused:" in r.log() and "libm: True" in r.log(), r.why()


# A str subclass as a code object's file name stays its co_filename, and the gate's lookups
# ran its methods: a __hash__ and __eq__ matching a library file's found that file's kind,
# so the compiled string ran as the library's.
FILENAME_CASES = {
    "compile": ("compile", """
        code = ThreadPoolExecutor(1).submit(compile, SRC, S(numpy.__file__), "exec").result()
    """),
    "replace": ("code.__new__", """
        c = ThreadPoolExecutor(1).submit(compile, SRC, "<payload>", "exec").result()
        code = ThreadPoolExecutor(1).submit(c.replace, co_filename=S(numpy.__file__)).result()
    """),
}


@pytest.mark.parametrize("name", sorted(FILENAME_CASES))
def test_a_file_name_that_is_not_a_plain_string_is_refused(tmp_path, name):
    event, body = FILENAME_CASES[name]
    exp = write_exp(tmp_path, textwrap.dedent("""
        import types, numpy
        from concurrent.futures import ThreadPoolExecutor
        T = numpy.__file__
        class S(str):
            def __hash__(self):
                return hash(T)
            def __eq__(self, other):
                return True
        SRC = "import ctypes\\nopen('MARKER', 'w').write(repr(ctypes.CDLL))\\n"
    """) + textwrap.dedent(body) + textwrap.dedent("""
        types.FunctionType(code, {"__builtins__": __builtins__})()
    """))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    # the thread pool's compile of the string is refused first now, unless the name itself is
    evs = [e for e in refused_events(r) if e["rule"] == "LB103" and e["event"] in (event, "compile")]
    assert evs, r.why()
    if evs[0]["event"] == event:
        assert "not a plain string" in (evs[0]["detail"] or "") or event == "code.__new__", r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_an_extension_spec_whose_class_was_changed_is_refused(tmp_path):
    """_imp reads a spec's origin by attribute lookup: a property put on ModuleSpec answered
    the loader with the experiment's shared object while the spec's own dict named the
    interpreter's."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler to build the shared object")
    exp = write_exp(tmp_path, """
        import importlib.machinery as m, os, sysconfig
        here = os.path.dirname(os.path.abspath(__file__))
        ok = os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload",
                          "_json" + m.EXTENSION_SUFFIXES[0])
        spec = m.ModuleSpec("evil", None, origin=ok)
        m.ModuleSpec.origin = property(lambda s: here + "/evil.so")
        try:
            m.ExtensionFileLoader("evil", ok).create_module(spec)
        except Exception as e:
            print("after load:", type(e).__name__)
        del m.ModuleSpec.origin
        print("accuracy: 1")
    """)
    (tmp_path / "so.c").write_text(NATIVE_SO)
    built = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(exp / "evil.so"),
                            str(tmp_path / "so.c")], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert_refused(r, "_imp.create_dynamic", "gate.tamper")
    assert not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("archive", ["p.zip", "weights.bin"])
def test_code_in_an_archive_the_check_did_not_read_does_not_run(tmp_path, archive):
    """The static check reads the experiment's .py files, not what an archive on sys.path
    holds (a zip under any name imports through zipimport): under the default policy that
    code is refused when it is imported; under permissive, where no check ran, it runs and
    the gate judges it as the experiment's."""
    import zipfile
    exp = write_exp(tmp_path, f"""
        import os, sys
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), {archive!r}))
        import p
        print("value:", p.VALUE)
        print("accuracy: 1")
    """)
    with zipfile.ZipFile(exp / archive, "w") as z:
        z.writestr("p/__init__.py", "VALUE = 41 + 1\n")
    r = run_exp(exp, tmp_path / "runs")
    ev = assert_refused(r, "compile", "LB002")
    assert archive in (ev["detail"] or ""), r.why()
    assert "value: 42" not in r.log(), r.why()
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0 and "value: 42" in r.log(), r.why()


def test_a_library_function_run_with_the_experiments_globals_is_the_experiments(tmp_path):
    """types.FunctionType(a_numpy_function.__code__, {...}) runs numpy's code, named as
    numpy's file, with globals the experiment chose: every name it calls is the
    experiment's. Such a frame is trusted as numpy's no more."""
    exp = write_exp(tmp_path, """
        import functools, types
        from numpy.core import shape_base
        from numpy.core._internal import ctypes       # numpy's own import of it
        libc = ctypes.CDLL(None)
        # numpy's `return _arrays_for_stack_dispatcher(tup)`, with that name the experiment's
        code = shape_base._vhstack_dispatcher.__code__
        f = types.FunctionType(code, {"_arrays_for_stack_dispatcher":
                                      functools.partial(getattr, libc)})
        getpid = f("getpid", dtype=None, casting=None)
        open("MARKER", "w").write(str(getpid()))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    # CDLL(None) made outside ctypes' own import is refused itself now; the dlsym after it
    # was the refusal before
    evs = [e for e in refused_events(r) if e["event"] in ("ctypes.dlopen", "ctypes.dlsym")]
    assert evs and evs[0]["rule"] == "LB106", r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_the_gate_cannot_be_switched_off_through_what_it_leaves_in_reach(tmp_path):
    """The gate's stand-ins in modules (fork_exec, _imp's, sqlite3.connect) and a caught
    refusal's traceback are what the experiment can reach of it. Every cell, default and
    frame local found there is overwritten or emptied (what setting `enforce` to False in a
    closure did), and then the experiment spawns: still refused, still recorded."""
    exp = write_exp(tmp_path, """
        import _imp, _posixsubprocess, _thread, os, sqlite3
        touched = []
        def spoil(obj, depth=0):
            if depth > 3:
                return
            for c in (getattr(obj, "__closure__", None) or ()):
                try:
                    spoil(c.cell_contents, depth + 1)
                    c.cell_contents = False
                    touched.append("cell")
                except Exception:
                    pass
            for name in ("__kwdefaults__", "__defaults__"):
                try:
                    d = getattr(obj, name)
                    touched.append(name)
                    if isinstance(d, dict):
                        d.clear()
                except Exception:
                    pass
            if isinstance(obj, set):
                obj.add(_thread.get_ident())
            if isinstance(obj, dict):
                obj.clear()
        for f in (_posixsubprocess.fork_exec, _imp.create_builtin, _imp.create_dynamic,
                  sqlite3.connect):
            spoil(f)
        try:
            os.system("true")
        except PermissionError as e:
            tb = e.__traceback__
            while tb is not None:
                for v in list(tb.tb_frame.f_locals.values()):
                    spoil(v)
                tb = tb.tb_next
        print("touched:", touched)
        os.system("echo spawned > MARKER")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    evs = [e for e in refused_events(r) if e["event"] == "os.system"]
    assert len(evs) == 2, r.why()  # before the spoiling and after it
    assert not (r.exp / "MARKER").exists(), r.why()
    assert r.result["failure"]["class"] == "gate_refused", r.why()


def test_the_gate_runs_none_of_the_experiments_code_while_it_judges(tmp_path):
    """sqlite3.connect's event carries the database object itself, and the gate's look at it
    ran the experiment's code (a type's __module__ compared, isinstance reading a __class__
    property, str()): that code ran while the gate was busy for the thread (unjudged), and
    from its frame f_back reached the gate's, whose locals hold its state. Every hook the
    object has now spawns and spoils what it can reach; the spawn is refused, and the one
    after it too."""
    exp = write_exp(tmp_path, """
        import os, sqlite3, sys
        seen = []
        def spoil():
            seen.append("ran")
            try:
                os.system("echo inside > MARKER")
            except PermissionError:
                seen.append("refused inside")
            f = sys._getframe(1)
            while f is not None:
                for v in list(f.f_locals.values()):
                    if type(v) is set:
                        v.add(__import__("_thread").get_ident())
                    elif type(v) is dict and v is not f.f_globals:
                        v.clear()
                f = f.f_back
        class Meta(type):
            @property
            def __name__(cls):
                spoil()
                return "PosixPath"
        class Mod:
            def __eq__(self, other):
                spoil()
                return True
            __hash__ = object.__hash__
        class P(metaclass=Meta):
            @property
            def __class__(self):
                spoil()
                return P
            def __fspath__(self):
                spoil()
                return ":memory:"
            def __str__(self):
                spoil()
                return ":memory:"
        P.__module__ = Mod()
        sqlite3.connect(P()).close()
        print("seen:", seen)
        os.system("echo after > MARKER")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert not (r.exp / "MARKER").exists(), r.why()
    log = r.log()
    # __fspath__ ran, in the stand-in and outside the gate's judging: its spawn refused
    assert "'ran', 'refused inside'" in log, log[-2000:]
    evs = [e for e in refused_events(r) if e["event"] == "os.system"]
    assert len(evs) == 2, r.why()


def test_a_finalizer_freed_by_the_gate_never_runs_inside_it(tmp_path):
    """The gate reads sys.modules (and namespaces, frames' globals) through snapshots. A
    thread of the experiment's puts an object in sys.modules and takes it out again while the
    main thread's imports keep the gate judging: when the gate's snapshot held the last
    reference, the object's __del__ ran inside the gate, found its frames through f_back and
    emptied its handler table, and every later refusal was gone. Its __del__ must run (the
    control), never with a frame of the gate's judging under it (the hook's, once the gate
    returned, holds nothing: emptying what it holds changes no refusal)."""
    exp = write_exp(tmp_path, LINK_LOOK + textwrap.dedent("""
        import importlib, threading, time
        ran, inside = [0], [0]
        class Evil:
            def __del__(self):
                ran[0] += 1
                f = sys._getframe(1)
                while f is not None:
                    if f.f_code.co_filename.endswith(GATE):
                        # the hook's own frame, once the gate has returned, holds no link
                        if f.f_code.co_name != "hook":
                            inside[0] += 1
                        for v in list(f.f_locals.values()):
                            if type(v) is dict and v is not f.f_globals:
                                v.clear()
                    f = f.f_back
        stop = []
        def churn():
            while not stop:
                sys.modules["zz_evil"] = Evil()
                time.sleep(0)
                del sys.modules["zz_evil"]
        sys.setswitchinterval(1e-6)
        t = threading.Thread(target=churn, daemon=True)
        t.start()
        t0 = time.time()
        while not inside[0] and time.time() - t0 < 6:
            sys.modules.pop("ast", None)
            importlib.import_module("ast").parse("1")
        stop.append(1)
        t.join()
        sys.setswitchinterval(0.005)
        print("finalizers ran:", ran[0] > 0, "inside the gate:", inside[0])
        try:
            os.system("echo after > MARKER")
        except PermissionError:
            print("refused after")
    """))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    log = r.log()
    assert "finalizers ran: True inside the gate: 0" in log, r.why()
    assert "refused after" in log and not (r.exp / "MARKER").exists(), r.why()


def test_a_thread_turning_the_collector_on_runs_no_finalizer_inside_the_gate(tmp_path):
    """The collector is off while the gate judges, so no finalizer of the experiment's runs
    with the gate's frames under it. gc.enable is any thread's to call and raises no event: a
    thread calling it in a loop, with the collector's thresholds at 1 and a cycle whose
    __del__ makes another, had a collection run inside the gate's judging, where the
    finalizer read the gate's handler table from a frame's locals and emptied it. gc.enable
    now keeps what the experiment asks for apart from the gate's holds; the program still
    sees the collector as it set it, and its cycles are still collected."""
    exp = write_exp(tmp_path, LINK_LOOK + textwrap.dedent("""
        import gc, threading, time
        found, ran = [], [0]
        class Bomb:
            def __init__(self):
                self.me = self
            def __del__(self):
                ran[0] += 1
                f = sys._getframe(1)
                while f is not None and not found:
                    # the hook's own frame, once the gate has returned, holds no link
                    if f.f_code.co_filename.endswith(GATE) and f.f_code.co_name != "hook":
                        found.append(f.f_code.co_name)
                        for v in list(f.f_locals.values()):
                            if type(v) is dict and v is not f.f_globals:
                                v.clear()
                    f = f.f_back
                if not found:
                    Bomb()
        stop = []
        def toggler():
            while not stop:
                gc.enable()
        gc.set_threshold(1, 1, 1)
        sys.setswitchinterval(1e-6)
        Bomb()
        t = threading.Thread(target=toggler, daemon=True)
        t.start()
        t0 = time.time()
        n = 0
        while not found and time.time() - t0 < 4:
            n += 1
            try:
                open("/etc/labbox-gc-race-%d" % (n % 50), "w")
            except (PermissionError, OSError):
                pass
        stop.append(1)
        t.join()
        sys.setswitchinterval(0.005)
        gc.set_threshold(700, 10, 10)
        gc.disable()
        off = gc.isenabled()
        gc.enable()
        print("events:", n > 100, "finalizers ran:", ran[0] > 0, "found:", bool(found),
              "seen off:", off, "seen on:", gc.isenabled(),
              "named:", gc.enable.__module__ + "." + gc.enable.__name__)
        try:
            os.system("echo after > MARKER")
        except PermissionError:
            print("refused after")
    """))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    log = r.log()
    assert ("events: True finalizers ran: True found: False seen off: False seen on: True "
            "named: gc.enable" in log), r.why()
    assert "refused after" in log and not (r.exp / "MARKER").exists(), r.why()


def test_a_recursion_limit_at_the_hook_leaves_no_link_to_the_gate(tmp_path):
    """At a recursion limit the experiment chose, an audited open() deep in its own calls
    raises RecursionError inside the audit hook, at any of its steps (the collector's hold
    among them): the traceback hands over the hook's frame, which must hold no link to the
    gate's judging by then (its dispatch reaches the handler table through its closure)."""
    exp = write_exp(tmp_path, """
        import sys
        found, depths = [], 0
        def rec(k):
            if k == 0:
                open("main.py").close()
            else:
                rec(k - 1)
        sys.setrecursionlimit(200)
        for n in range(100, 200):
            try:
                rec(n)
            except PermissionError:
                pass  # the gate could not judge it at that depth: refused
            except RecursionError as e:
                depths += 1
                tb = e.__traceback__
                while tb is not None:
                    f = tb.tb_frame
                    if f.f_code.co_name == "hook" and f.f_locals.get("_d") is not None:
                        found.append(f.f_code.co_name)
                    tb = tb.tb_next
        sys.setrecursionlimit(1000)
        print("recursion errors:", depths > 0, "links found:", len(found))
        import os
        try:
            os.system("echo after > MARKER")
        except PermissionError:
            print("refused after")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    log = r.log()
    assert "recursion errors: True links found: 0" in log, r.why()
    assert "refused after" in log and not (r.exp / "MARKER").exists(), r.why()


def test_what_the_experiment_puts_in_the_hooks_outbox_is_freed_outside_the_gate(tmp_path):
    """The hook's frame (in every refusal's traceback) holds the outbox of the gate's
    snapshots, dropped when a judging ends. A finalizer the experiment put there was dropped
    by a hook the gate's own judging raised (its open of a file, judging a compile), with the
    outer judging on the stack, where its frames' locals hold the handler table. Only the
    outermost hook of a thread drops what is there."""
    exp = write_exp(tmp_path, """
        import socket, sys, threading
        out = None
        try:
            socket.socket()
        except PermissionError as e:
            tb = e.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_name == "hook":
                    out = tb.tb_frame.f_locals["_out"]
                tb = tb.tb_next
        chain = []
        class Evil:
            def __del__(self):
                f = sys._getframe(1)
                while f is not None:
                    chain.append(f.f_code.co_name)
                    f = f.f_back
        out[threading.get_ident()] = [Evil()]
        try:
            compile("x = 1\\n", "/usr/lib/python3.11/os.py", "exec")
        except PermissionError:
            print("compile refused")
        print("outbox:", type(out).__name__, "dropped:", bool(chain),
              "under dispatch:", "dispatch" in chain)
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert "outbox: dict dropped: True under dispatch: False" in r.log(), r.why()
    assert "compile refused" in r.log(), r.why()


def test_a_subinterpreter_running_a_string_is_refused(tmp_path):
    """A subinterpreter runs a string of source with no Python frame above it, which the
    gate (its own copy in the new interpreter) took for the entry point's own code: source
    decoded at run time ran unjudged. The module is refused at its import, as exec is."""
    exp = write_exp(tmp_path, """
        import base64
        src = base64.b64decode(%r).decode()
        try:
            import _xxsubinterpreters as si
        except PermissionError:
            print("refused")
        else:
            si.run_string(si.create(), src)
    """ % base64.b64encode(b"open('MARKER', 'w').write('ran')"))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert "refused" in r.log() and not (r.exp / "MARKER").exists(), r.why()
    assert_refused(r, "import", "LB103")


def test_a_pickle_naming_an_experiment_module_not_imported_yet_is_refused_unimported(tmp_path):
    """Were the gate to import it to judge the name, the experiment's code would run under
    the gate's frames, which its f_back reaches: it is refused unimported, while the
    experiment's own class in a module it imported unpickles."""
    exp = write_exp(tmp_path, """
        import pickle
        class Ok:
            pass
        data = pickle.dumps(Ok())
        print("own class:", type(pickle.loads(data)).__name__)
        evil = b"chelper\\nsystem\\n(S'echo x > MARKER'\\ntR."
        try:
            pickle.loads(evil)
        except PermissionError as e:
            print("refused:", e)
        print("accuracy: 1")
    """)
    (exp / "helper.py").write_text("open('HELPER-RAN', 'w').close()\nfrom os import system\n")
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"] == ["helper", "system"], r.why()
    assert "own class: Ok" in r.log(), r.why()
    assert not (r.exp / "HELPER-RAN").exists() and not (r.exp / "MARKER").exists(), r.why()


def test_http_handler_is_refused(tmp_path):
    exp = write_exp(tmp_path, """
        import logging, logging.handlers
        h = logging.handlers.HTTPHandler("127.0.0.1:9", "/log")
        log = logging.getLogger("x")
        log.addHandler(h)
        log.error("hello")   # logging reports the failure and goes on
        print("went on")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    ev = assert_refused(r, "socket.__new__", "LB105")
    # The socket is made where the record is emitted; the static check saw the handler,
    # through the standard library's summary of HTTPHandler, where it is made.
    assert ev["finding"] is not None and ev["finding"]["id"] == "LB105", r.why()
    assert ev["finding"]["line"] == 2, r.why()
    assert "went on" in r.log()


def test_multiprocessing_client_is_refused(tmp_path):
    exp = write_exp(tmp_path, """
        import multiprocessing.connection as c
        c.Client(("127.0.0.1", 9))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert_refused(r, "socket.__new__", "LB105")
    assert r.result["failure"]["class"] == "gate_refused", r.why()


def test_fileio_outside_is_refused(tmp_path):
    marker = outside_marker()
    exp = write_exp(tmp_path, f"""
        import io
        io.FileIO({str(marker)!r}, "w").write(b"x")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    ev = assert_refused(r, "open", "LB110")
    assert str(marker) in (ev["detail"] or ""), r.why()
    assert not marker.exists()
    assert "LB110" in r.log() and "Read-only file system" not in r.log()


def test_sqlite_attach_outside_is_refused(tmp_path):
    marker = outside_marker()
    exp = write_exp(tmp_path, f"""
        import sqlite3
        con = sqlite3.connect("results.db")
        con.execute("create table t (x)")
        con.execute("ATTACH '{marker}.db' AS other")
        con.execute("create table other.t (x)")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert_refused(r, "sqlite3.attach", "LB110")
    assert not Path(f"{marker}.db").exists()
    assert (r.exp / "results.db").exists()  # the experiment's own database is fine


# ---- the static check sees them now, and the gate still holds -------------------------------

# What the check finds in each evasion under the default policy (the standard library's
# summaries name the helper's rule); the payload only warns (LB114) and is the gate's to refuse.
STATIC_RULES = {
    "pipepager": "LB102", "asyncio_subprocess_shell": "LB102", "gc_walk": "LB111",
    "tempfile_os": "LB101", "pkgutil_resolve_name": "LB104", "spawnv_passfds": "LB101",
}
# A process found only through what a library call may reach: under standard with the gate
# on (the default) a warning, and the gate (the exec guard behind it) refuses the call where
# it does it; without a gate that refuses, the static check is the only one and rejects it.
VIA_LIBRARY = {"pipepager"}


@pytest.mark.parametrize("name", sorted(STATIC_RULES))
def test_stdlib_evasion_is_rejected_before_it_runs(tmp_path, name):
    exp = write_exp(tmp_path, SPAWN_CASES[name])
    r = run_exp(exp, tmp_path / "runs", *(("--runtime-gate", "off") if name in VIA_LIBRARY else ()))
    assert r.rc == 3, r.why()
    assert r.result["status"] == "rejected", r.why()
    assert r.result["check"]["runtime_gate_refuses"] is False or name not in VIA_LIBRARY
    ids = {f["id"] for f in r.result["findings"] if f["rejects"]}
    assert STATIC_RULES[name] in ids, r.why()
    assert not (Path(r.result["run_dir"]) / "exp" / "MARKER").exists()


@pytest.mark.parametrize("name", sorted(VIA_LIBRARY))
def test_library_reach_warns_and_the_gate_refuses_it(tmp_path, name):
    exp = write_exp(tmp_path, SPAWN_CASES[name])
    r = run_exp(exp, tmp_path / "runs")  # standard, the gate on
    assert r.rc == 1, r.why()
    assert r.result["check"]["runtime_gate_refuses"] is True, r.why()
    warned = [f for f in r.result["findings"] if f["id"] == STATIC_RULES[name]]
    assert warned and not any(f["rejects"] for f in warned), r.why()
    assert all(f["severity"] == "warning" and "runtime gate" in f["message"] for f in warned)
    event, rule = SPAWN_EVENTS[name]
    assert_refused(r, event, rule)
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_library_reach_of_ordinary_code_runs(tmp_path):
    # What research code calls to describe its machine: under standard it runs, the gate
    # refuses `uname -p` inside platform, which copes, and the run completes.
    exp = write_exp(tmp_path, """
        import platform
        print("machine", platform.platform(), platform.uname().system, platform.processor())
        print("score: 1")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed", r.why()
    assert r.result["metrics"]["values"]["score"] == 1, r.why()
    assert not any(f["rejects"] for f in r.result["findings"]), r.why()
    assert "LB102" in {f["id"] for f in r.result["findings"]}, r.why()
    assert_refused(r, "subprocess.Popen", "LB102")  # uname -p, which platform catches
    assert "machine Linux" in r.log(), r.why()
    r2 = run_exp(exp, tmp_path / "runs2", "--runtime-gate", "off")
    assert r2.rc == 3 and r2.result["status"] == "rejected", r2.why()


@pytest.mark.parametrize("name", ["pipepager", "asyncio_subprocess_shell", "tempfile_os"])
def test_gate_event_names_the_static_finding(tmp_path, name):
    # Run anyway (permissive) with the gate on: the refused event and the static finding are
    # the same rule on the same line of the experiment.
    exp = write_exp(tmp_path, SPAWN_CASES[name])
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    event, rule = SPAWN_EVENTS[name]
    ev = assert_refused(r, event, rule)
    assert not (r.exp / "MARKER").exists(), r.why()
    assert ev["finding"] is not None and ev["finding"]["id"] == rule, r.why()


def test_pickle_payload_warns_and_is_refused(tmp_path):
    exp = write_exp(tmp_path, """
        import pickle
        pickle.loads(b"cos\\nsystem\\n(S'touch MARKER'\\ntR.")
    """)
    r = run_exp(exp, tmp_path / "runs")  # the default policy: a warning does not stop it
    assert r.rc == 1, r.why()
    assert any(f["id"] == "LB114" and not f["rejects"] for f in r.result["findings"]), r.why()
    assert_refused(r, "pickle.find_class", "gate.pickle")
    assert not (r.exp / "MARKER").exists()


def test_replace_outside_is_refused(tmp_path):
    marker = outside_marker()
    exp = write_exp(tmp_path, f"""
        import os
        open("r.json", "w").write("{{}}")
        os.replace("r.json", {str(marker)!r})
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert any(f["id"] == "LB110" and f["line"] == 3 for f in r.result["findings"]), r.why()
    assert_refused(r, "os.rename", "LB110")  # os.replace raises os.rename
    assert not marker.exists()
    assert (r.exp / "r.json").exists()


def test_log_file_outside_is_refused(tmp_path):
    marker = outside_marker()
    exp = write_exp(tmp_path, f"""
        import logging
        logging.basicConfig(filename={str(marker)!r})
        logging.warning("x")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert any(f["id"] == "LB110" and f["line"] == 2 for f in r.result["findings"]), r.why()
    ev = assert_refused(r, "open", "LB110")
    assert str(marker) in (ev["detail"] or ""), r.why()
    assert not marker.exists()


def test_logging_listen_is_refused(tmp_path):
    exp = write_exp(tmp_path, """
        import logging.config
        t = logging.config.listen(0)
        t.start()
        t.ready.wait(10)
        logging.config.stopListening()
        t.join(10)
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert any(f["id"] == "LB105" and f["line"] == 2 for f in r.result["findings"]), r.why()
    evs = [e for e in refused_events(r) if e["rule"] == "LB105"]
    assert evs and evs[0]["event"] in ("socket.bind", "socket.__new__"), r.why()


# ---- tampering ------------------------------------------------------------------------------

def test_tampering_is_refused(tmp_path):
    exp = write_exp(tmp_path, """
        import sys
        results = {}
        # The interpreter swallows a hook's refusal of sys.addaudithook: the new hook is
        # simply never added, so it never runs.
        calls = []
        sys.addaudithook(lambda e, a: calls.append(e))
        open(__file__).close()
        results["addaudithook"] = "allowed" if calls else "refused"
        for name, f in [
            ("ctypes", lambda: __import__("ctypes")),
            ("exec", lambda: exec("x = 1")),
            ("code_replace", lambda: (lambda: 0).__code__.replace(co_filename="/usr/lib/python3/x.py")),
            ("current_frames", lambda: sys._current_frames()),
        ]:
            try:
                f()
                results[name] = "allowed"
            except PermissionError as e:
                results[name] = "refused" if "labbox runtime gate" in str(e) else str(e)
        print(results)
        assert set(results.values()) == {"refused"}, results
        print("refusals: 5")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0, r.why()
    events = {e["event"] for e in refused_events(r)}
    assert {"sys.addaudithook", "import", "compile", "code.__new__",
            "sys._current_frames"} <= events, r.why()


# ---- what stays the experiment's own -------------------------------------------------------

def test_interpreter_is_unchanged(tmp_path):
    exp = write_exp(tmp_path, """
        import sys, os, json
        import helper
        info = {
            "name": __name__, "file": __file__, "argv": sys.argv,
            "path0": sys.path[0], "gate_in_path": any("labbox-gate" in p for p in sys.path),
            "helper": helper.__file__,
            "sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None),
        }
        json.dump(info, open("info.json", "w"))
        def inner():
            raise ValueError("plain failure")
        inner()
    """, files={"helper.py": "X = 1\n"})
    r = run_exp(exp, tmp_path / "runs", args=("a", "b"))
    info = json.loads((r.exp / "info.json").read_text())
    assert info["name"] == "__main__"
    assert info["file"] == str(r.exp / "main.py")
    assert info["argv"] == ["main.py", "a", "b"]
    assert info["path0"] == str(r.exp)
    assert info["gate_in_path"] is False
    assert info["helper"] == str(r.exp / "helper.py")
    assert info["sitecustomize"] is None or "labbox-gate" not in info["sitecustomize"]
    log = r.log()
    assert "ValueError: plain failure" in log
    assert "labbox-gate" not in log and "sitecustomize" not in log, log
    assert gate(r)["installed"] is True and gate(r)["events"] == []


HEAVY = ("sysconfig", "json", "re", "enum", "collections", "threading", "functools")


def test_the_gate_loads_no_module_a_bare_start_does_not(tmp_path):
    """Installed before the experiment's first line, the gate leaves the interpreter's modules
    as a plain start has them: none of the standard library's heavier ones (which would cost
    every run their import) unless python3 itself loads them at start."""
    probe = "import sys\n" + "".join(
        f"print('{m}:', int(sys.modules.get('{m}') is not None))\n" for m in HEAVY)
    exp = write_exp(tmp_path, probe)
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on")
    assert r.rc == 0, r.why()
    assert gate(r)["installed"] is True
    import subprocess
    from conftest import PYTHON
    bare = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, check=True)
    want = {}
    for line in bare.stdout.splitlines():
        name, _, v = line.partition(":")
        want[name] = float(v)
    got = {m: r.result["metrics"]["values"][m] for m in HEAVY}
    assert got == want


def test_a_moved_standard_library_is_asked_of_sysconfig(tmp_path):
    """The gate takes the standard library's directories from the interpreter's probe only
    when the run's interpreter is set up as probed. Here PYTHONHOME moves the library (the
    host's /usr shown again at /opt/pyhome), so the gate asks sysconfig itself, as it did
    before the probe answered for it, and still refuses."""
    exp = write_exp(tmp_path, """
        import sys
        print("sysconfig_loaded:", int(sys.modules.get("sysconfig") is not None))
        print("stdlib_moved:", int(sys.path[1].startswith("/opt/pyhome/")))
        try:
            __import__("ctypes")
            print("ctypes_refused: 0")
        except PermissionError as e:
            print("ctypes_refused:", int("labbox runtime gate" in str(e)))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "-v", "/usr:/opt/pyhome",
                "-e", "PYTHONHOME=/opt/pyhome")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]["values"]
    assert m["stdlib_moved"] == 1, r.why()
    assert m["sysconfig_loaded"] == 1, r.why()
    assert m["ctypes_refused"] == 1, r.why()


def test_refusal_traceback_has_no_gate_frame(tmp_path):
    exp = write_exp(tmp_path, """
        import os
        def launch():
            os.system("true")
        launch()
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    log = r.log()
    assert "in launch" in log and "labbox runtime gate refused os.system: LB101" in log
    assert "labbox-gate" not in log, log
    ev = assert_refused(r, "os.system", "LB101")
    assert ev["file"] == str(r.exp / "main.py") and ev["line"] == 3
    # The static finding it corresponds to, so the two layers can be compared.
    assert ev["finding"]["id"] == "LB101" and ev["finding"]["line"] == 3, r.why()



def test_refusal_in_a_thread_has_no_gate_frame(tmp_path):
    """The gate does not import threading at start-up; a refusal in a thread the experiment
    starts is still refused and printed without the gate's frames."""
    exp = write_exp(tmp_path, """
        import os, threading
        def launch():
            os.system("true")
        t = threading.Thread(target=launch)
        t.start()
        t.join()
        print("hook:", threading.excepthook.__module__)
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    log = r.log()
    assert "Exception in thread" in log and "in launch" in log, log
    assert "labbox runtime gate refused os.system: LB101" in log, log
    assert "labbox-gate" not in log, log
    ev = assert_refused(r, "os.system", "LB101")
    assert ev["file"] == str(r.exp / "main.py") and ev["line"] == 3, r.why()

RESEARCH = """
    import json, os, pickle, dataclasses, multiprocessing as mp, queue
    import numpy as np

    @dataclasses.dataclass
    class Config:
        lr: float = 0.1
        steps: int = 3

    def square(x):
        return x * x

    def worker(wid, q):
        # a DataLoader-like worker: forked, builds its batch, hands it back
        q.put((wid, np.full(4, wid).tolist()))

    def main():
        np.random.seed(0)
        cfg = Config()
        with mp.Pool(2) as pool:
            squares = pool.map(square, range(8))
        q = mp.Queue()
        procs = [mp.Process(target=worker, args=(i, q)) for i in range(2)]
        for p in procs:
            p.start()
        batches = sorted(q.get(timeout=60) for _ in procs)
        for p in procs:
            p.join()
        os.makedirs("ckpt", exist_ok=True)
        with open("ckpt/state.pkl", "wb") as f:
            pickle.dump({"cfg": cfg, "w": np.arange(5.0)}, f)
        with open("ckpt/state.pkl", "rb") as f:
            back = pickle.load(f)
        assert back["cfg"] == cfg
        np.save("ckpt/w.npy", back["w"])
        w = np.load("ckpt/w.npy")
        loss = float(np.sum(w) / 10)
        print(f"loss: {loss}")
        json.dump({"loss": loss, "squares": squares, "batches": len(batches)},
                  open("results.json", "w"))

    if __name__ == "__main__":
        main()
"""


def test_research_code_is_accepted(tmp_path):
    exp = write_exp(tmp_path, RESEARCH)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    g = gate(r)
    assert g["mode"] == "on" and g["enforced"] is True and g["policy"] == "standard"
    assert g["events"] == [], r.why()
    assert (r.exp / "results.json").exists() and (r.exp / "ckpt" / "w.npy").exists()


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_each_start_method_is_accepted(tmp_path, method):
    """multiprocessing's spawn and forkserver start this interpreter again on an entry point
    of its own (CUDA code needs spawn; Python 3.14 defaults to forkserver): the child is gated
    like a forked one, and the pools and the process pool executor work under each."""
    code = RESEARCH.replace(
        "    def main():\n",
        "    def main():\n"
        f"        mp.set_start_method({method!r})\n"
        "        from concurrent.futures import ProcessPoolExecutor\n"
        "        with ProcessPoolExecutor(2) as ex:\n"
        "            print('cubes: %d' % sum(ex.map(square, range(4))))\n", 1)
    assert code != RESEARCH
    exp = write_exp(tmp_path, code)
    r = run_exp(exp, tmp_path / "runs", "--budget", "120")
    assert r.rc == 0, r.why()
    g = gate(r)
    assert g["enforced"] is True and g["events"] == [], r.why()
    assert r.result["metrics"]["values"]["cubes"] == 14, r.why()
    assert json.loads((r.exp / "results.json").read_text())["squares"] == [x * x for x in range(8)]


SHARED_VALUES = """
    import multiprocessing as mp
    def work(count, arr, text, i):
        with count.get_lock():
            count.value += 1
        arr[i] = i * 1.5
        if i == 0:
            text.value = b"done"
    if __name__ == "__main__":
        mp.set_start_method(%r)
        count, arr = mp.Value("i", 0), mp.Array("d", 3)
        text, raw = mp.Array("c", 8), mp.RawArray("i", [4, 5])
        procs = [mp.Process(target=work, args=(count, arr, text, i)) for i in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
        print("count: %%d" %% count.value)
        print("total: %%g" %% (sum(arr) + sum(raw) + mp.RawValue("d", 0.5).value))
        print("text:", text.value.decode())
"""


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_shared_values_are_accepted(tmp_path, method):
    """mp.Value and mp.Array (and their Raw forms) lay ctypes objects over shared memory
    inside multiprocessing: the gate passes sharedctypes' own from_buffer and addressof, and a
    spawned child unpickles the value types and the lock's wrapper. Under the standard policy,
    as a researcher runs it."""
    exp = write_exp(tmp_path, SHARED_VALUES % method)
    r = run_exp(exp, tmp_path / "runs", "--budget", "120")
    assert r.rc == 0, r.why()
    assert gate(r)["enforced"] is True and gate(r)["events"] == [], r.why()
    m = r.result["metrics"]["values"]
    assert m["count"] == 3 and m["total"] == 0 + 1.5 + 3.0 + 9 + 0.5, r.why()
    assert "text: done" in r.log()


def test_a_shared_value_does_not_carry_the_experiments_ctypes(tmp_path):
    """What passes is sharedctypes' own use: the same calls made by the experiment's code on
    the ctypes module that multiprocessing imported stay refused."""
    exp = write_exp(tmp_path, """
        import multiprocessing.sharedctypes as sc
        v = sc.RawValue("i", 7)
        ct = getattr(sc, "ct" + "ypes")
        try:
            ct.addressof(v)
        except PermissionError:
            print("addressof refused")
        try:
            ct.c_int.from_buffer(bytearray(4))
        except PermissionError:
            print("from_buffer refused")
        print("value: %d" % v.value)
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0, r.why()
    log = r.log()
    assert "addressof refused" in log and "from_buffer refused" in log and "value: 7" in log
    assert [e["event"] for e in refused_events(r)] == ["ctypes.addressof",
                                                        "ctypes.cdata/buffer"], r.why()


def test_a_spawned_child_runs_no_user_site_of_the_experiments(tmp_path):
    """site runs a user site's .pth lines before the gate's sitecustomize: a spawned child
    starts without the user site (-s), so a .pth the experiment wrote under a HOME it points
    anywhere does not run there ungated."""
    exp = write_exp(tmp_path, """
        import multiprocessing as mp, os, sys
        here = os.getcwd()
        os.environ["HOME"] = here
        sp = os.path.join(here, ".local/lib/python%d.%d/site-packages" % sys.version_info[:2])
        os.makedirs(sp, exist_ok=True)
        with open(os.path.join(sp, "zz.pth"), "w") as f:
            f.write("import os; os.system('echo PTH-RAN; touch %s/MARKER')\\n" % here)
        def work(x):
            return x * 2
        if __name__ == "__main__":
            mp.set_start_method("spawn")
            with mp.Pool(1) as pool:
                print("total: %d" % sum(pool.map(work, [1, 2])))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["total"] == 6, r.why()
    assert "PTH-RAN" not in r.log(), r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_an_error_in_a_pool_worker_is_the_experiments_own(tmp_path):
    """A worker's exception comes back to the pool pickled: unpickling it is no refusal (it
    was, and the pool's result thread died, so the run hung until its budget and was
    reported as a timeout, not as the ValueError it was)."""
    exp = write_exp(tmp_path, """
        import multiprocessing as mp
        def f(x):
            raise ValueError("bad input %d" % x)
        if __name__ == "__main__":
            print("loss: 0.5")
            with mp.Pool(1) as pool:
                pool.map(f, [1])
    """)
    r = run_exp(exp, tmp_path / "runs", "--budget", "60")
    assert r.rc == 1, r.why()
    assert r.result["failure"]["class"] == "code_error", r.why()
    assert "ValueError: bad input 1" in r.result["failure"]["summary"], r.why()
    assert gate(r)["events"] == [], r.why()


def test_a_traceback_through_the_standard_library_is_no_refusal(tmp_path):
    """Printing a traceback, the interpreter parses a piece of a line of the file it names
    (the ^^^ marks): that is no code the experiment compiled, and result.json says no
    refusal for it; the failure is the experiment's own."""
    exp = write_exp(tmp_path, """
        import json
        print("loss: 0.5")
        json.loads("{")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    assert r.result["failure"]["class"] == "code_error", r.why()
    assert gate(r)["events"] == [], r.why()
    assert "JSONDecodeError" in r.log(), r.why()


def test_torch_dataloader_is_accepted(tmp_path):
    pytest.importorskip("torch")
    exp = write_exp(tmp_path, """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        torch.manual_seed(0)
        ds = TensorDataset(torch.arange(64.0).reshape(32, 2), torch.arange(32))
        total = 0.0
        for xb, yb in DataLoader(ds, batch_size=8, num_workers=2):
            total += float(xb.sum())
        torch.save({"w": torch.ones(3)}, "ckpt.pt")
        print("w:", float(torch.load("ckpt.pt", weights_only=True)["w"].sum()))
        print(f"total: {total}")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert gate(r)["events"] == [], r.why()



def test_torch_spawned_workers_are_accepted(tmp_path):
    """torch's own process starts as research code uses them: mp.spawn (what DDP scripts
    call), DataLoader workers under spawn and forkserver, with a worker_init_fn and a
    collate_fn of the experiment's and torch's default collate. Each child unpickles the
    entry point torch hands it; the run completes with the right numbers and no refusal."""
    pytest.importorskip("torch")
    exp = write_exp(tmp_path, """
        import torch
        import torch.multiprocessing as mp
        from torch.utils.data import DataLoader, TensorDataset

        def work(rank, n, q):
            q.put(float(torch.ones(n).sum() * (rank + 1)))

        def init(worker_id):
            torch.manual_seed(worker_id)

        def pairs(batch):
            return torch.stack([x for x, _ in batch]), torch.tensor([y for _, y in batch])

        if __name__ == "__main__":
            torch.manual_seed(0)
            q = mp.get_context("spawn").SimpleQueue()
            mp.spawn(work, args=(4, q), nprocs=2, join=True)
            print("spawned:", sum(q.get() for _ in range(2)))
            ds = TensorDataset(torch.arange(64.0).reshape(32, 2), torch.arange(32))
            total = 0.0
            for xb, _ in DataLoader(ds, batch_size=8, num_workers=2,
                                    multiprocessing_context="spawn"):
                total += float(xb.sum())
            for xb, _ in DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=init,
                                    collate_fn=pairs, multiprocessing_context="forkserver"):
                total += float(xb.sum())
            print("total:", total)
    """)
    # below the call's own timeout: a run that hangs comes back with its verdict, which
    # names where the main program waited
    r = run_exp(exp, tmp_path / "runs", "--budget", "150")
    assert r.rc == 0, r.why()
    assert gate(r)["enforced"] is True and gate(r)["events"] == [], r.why()
    assert r.result["metrics"]["values"] == {"spawned": 12.0, "total": 4032.0}, r.why()


def test_a_spawned_childs_refusal_is_the_verdict(tmp_path):
    """A spawned child handed something the gate does not unpickle (a function of the os
    module) is refused before it runs anything; the parent only sees a child that exited 1
    and raises its own generic error. The verdict names the gate's refusal in the child, not
    the parent's error, with the parent's line as the experiment's location; the child's
    call never happened (its file is not there)."""
    exp = write_exp(tmp_path, """
        import multiprocessing as mp
        import os

        if __name__ == "__main__":
            p = mp.get_context("spawn").Process(target=os.mkdir, args=("made_by_child",))
            p.start()
            p.join()
            if p.exitcode != 0:
                raise RuntimeError(f"worker process terminated with exit code {p.exitcode}")
            print("done: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", "--budget", "60")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "gate_refused", r.why()
    assert f["gate_event"] == "pickle.find_class" and f["rule"] == "gate.pickle", r.why()
    assert f["code_location"]["file"] == "main.py", r.why()
    assert any("worker process terminated" in e for e in f["evidence"]), r.why()
    refused = [e for e in refused_events(r) if e["event"] == "pickle.find_class"]
    assert refused and refused[0]["args"][1] == "mkdir", r.why()
    assert not (r.run_dir / "exp" / "made_by_child").exists()
    assert not (exp / "made_by_child").exists()

# ---- modes ----------------------------------------------------------------------------------

def test_permissive_records_and_off_is_off(tmp_path):
    exp = write_exp(tmp_path, """
        import os
        os.system("touch MARKER")
        print("ran: 1")
    """)
    # permissive: recording only, the process runs, the event says it was allowed
    r = run_exp(exp, tmp_path / "runs", "--policy", "permissive")
    assert r.rc == 0, r.why()
    g = gate(r)
    assert g["mode"] == "record" and g["enforced"] is False
    evs = [e for e in g["events"] if e["event"] == "os.system"]
    assert evs and evs[0]["refused"] is False and evs[0]["rule"] == "LB101", r.why()
    assert (r.exp / "MARKER").exists()
    # off: no hook at all, recorded in the manifest, and rerun repeats it
    r2 = run_exp(exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "off")
    assert r2.rc == 0, r2.why()
    assert gate(r2)["installed"] is False and gate(r2)["events"] == []
    man = r2.file_json("manifest.json")
    assert man["config"]["runtime_gate"] == "off"
    rr = labbox("rerun", "--json", "--runs-dir", tmp_path / "runs", r2.result["id"])
    doc = json.loads(rr.stdout)
    assert doc["runtime_gate"]["installed"] is False, rr.stdout[-2000:]
    assert doc["runtime_gate"]["mode"] == "off"


def test_bad_runtime_gate_value_is_usage_error(tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    p = labbox("run", "--runtime-gate", "maybe", exp)
    assert p.returncode == 2 and "--runtime-gate" in p.stderr


def test_network_grant_lets_sockets_through(tmp_path):
    exp = write_exp(tmp_path, """
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        c = socket.create_connection(s.getsockname())
        print("connected: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--network", "loopback")
    assert r.rc == 0, r.why()
    assert gate(r)["network"] is True and refused_events(r) == []


def test_socket_for_its_host_name_is_ordinary_code(tmp_path):
    """`import socket; socket.gethostname()` (DDP and logging code) is accepted by the check
    and runs under the default policy; a connection from the same module is refused as the
    socket is made, and a name lookup fails: nothing reaches the network."""
    exp = write_exp(tmp_path, """
        import socket
        try:
            print("host_len:", len(socket.gethostname()))
        except socket.error:
            print("host_len: -1")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    assert r.result["metrics"]["values"]["host_len"] > 0, r.why()
    assert refused_events(r) == [], r.why()
    conn = write_exp(tmp_path, """
        import socket
        print("host_len:", len(socket.gethostname()))
        socket.create_connection(("127.0.0.1", 9), timeout=2)
        print("connected: 1")
    """, name="conn")
    r = run_exp(conn, tmp_path / "runs", *GATE_ON)
    assert r.rc == 1 and r.result["failure"]["class"] == "gate_refused", r.why()
    assert "connected" not in r.result["metrics"]["values"], r.why()
    assert_refused(r, "socket.__new__", "LB105")
    lookup = write_exp(tmp_path, """
        import socket
        try:
            socket.getaddrinfo("example.com", 80)
            print("resolved: 1")
        except OSError:
            print("resolved: 0")
    """, name="lookup")
    r = run_exp(lookup, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0 and r.result["metrics"]["values"] == {"resolved": 0}, r.why()


def test_the_gate_is_not_written_into_the_run_directory(tmp_path):
    """The gate's module, config and compiled form reach the sandbox from labbox's memory, in
    a read-only file system of their own: while the experiment runs, the run directory holds
    only the gate's events channel, and the run still loads the compiled gate (a checked-hash
    .pyc beside its source) and is refused what the gate refuses."""
    import os
    import subprocess
    import sys
    import time
    from conftest import LABBOX, PYTHON
    marker = outside_marker()
    exp = write_exp(tmp_path, f"""
        import os, sys, time
        import sitecustomize
        print("cached:", os.path.exists(sitecustomize.__cached__ or ""), flush=True)
        st = os.statvfs("/run/labbox-gate/py")
        print("readonly:", bool(st.f_flag & os.ST_RDONLY), flush=True)
        print("ready", flush=True)
        time.sleep(3)
        os.system("touch {marker}")
    """)
    runs = tmp_path / "runs"
    proc = subprocess.Popen([LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir", str(runs),
                             *GATE_ON, str(exp)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and seen is None:
        for log in runs.glob("*/run.log"):
            if "ready" in log.read_text(errors="replace"):
                gate_dir = log.parent / "gate"
                seen = sorted(str(p.relative_to(gate_dir)) for p in gate_dir.rglob("*"))
        time.sleep(0.05)
    out, err = proc.communicate(timeout=120)
    assert seen == ["events.jsonl"], (seen, err)
    doc = json.loads(out)
    run_dir = Path(doc["run_dir"])
    log = (run_dir / "run.log").read_text()
    assert "cached: True" in log and "readonly: True" in log, log
    assert not Path(marker).exists()
    g = doc["runtime_gate"]
    assert g["installed"] and any(e["refused"] and e["event"] == "os.system" for e in g["events"]), g
    assert not (run_dir / "gate").exists()


# ---- code the experiment puts in the gate's way ---------------------------------------------
# The gate judges inside the experiment's own process. Whatever of the experiment's it
# calls while it judges would run with the thread marked as the gate's, unjudged, and from
# its frames (f_back, f_locals, f_globals: no audit event) it would reach the gate's state.
# Each case puts a trap where a gate that calls what it finds would call it: a builtin, a
# module's function, the globals of a function the gate leaves in reach, a key in a dict the
# gate reads whose hash is that of the name it looks up, an object in sys.modules, a finder
# on sys.meta_path, a module beside main.py named as one the gate imports. The trap spawns
# (MARKER) and spoils every set and dict it finds in the frames above it. From the host:
# MARKER is absent, and a spawn after the trap has had its chance is still refused and
# recorded: the gate is neither bypassed nor switched off.

TRAP = """
    import os, sys, _thread
    trap_log = []
    def trap(*a, **k):
        trap_log.append("ran")
        try:
            os.system("echo inside > MARKER")
        except PermissionError:
            trap_log.append("refused inside")
        f = sys._getframe(1)
        while f is not None:
            if f.f_globals is globals():
                f = f.f_back  # the experiment's own frames
                continue
            for v in list(f.f_locals.values()):
                if type(v) is set:
                    v.add(_thread.get_ident())
                elif type(v) is dict:
                    for key in list(v):
                        if type(v[key]) is bool:
                            v[key] = False
                        elif callable(v[key]) and type(key) is str:
                            v[key] = lambda *a, **k: None  # a gate's table of handlers
            f = f.f_back
    class Colliding:
        # hashes as the name the gate looks up; its __eq__ is the trap
        def __init__(self, name):
            self.h = hash(name)
        def __hash__(self):
            return self.h
        def __eq__(self, other):
            trap()
            return False
"""

INSIDE_CASES = {
    "builtins_replaced": """
        import builtins
        for name in ("any", "len", "tuple", "isinstance", "getattr"):
            real = getattr(builtins, name)
            setattr(builtins, name, (lambda real: lambda *a, **k: (trap(), real(*a, **k))[1])(real))
        open("out.txt", "w").close()
    """,
    "standin_globals": """
        import _posixsubprocess, _imp
        for f in (_posixsubprocess.fork_exec, _imp.create_dynamic, sys.excepthook):
            g = f.__globals__
            for name in ("any", "len", "tuple", "type", "PermissionError"):
                g[name] = (lambda *a, **k: trap())
            b = g.get("__builtins__")
            if isinstance(b, dict):
                real_any = b["any"]
                b["any"] = lambda *a: (trap(), real_any(*a))[1]
        open("out.txt", "w").close()
        import builtins
        builtins.any = any
    """,
    "path_functions_replaced": """
        import posixpath, os.path, stat
        for mod in (posixpath, os):
            for name in ("realpath", "abspath", "split", "join", "islink", "exists",
                         "dirname", "stat", "lstat", "getcwd", "readlink", "fsdecode",
                         "statvfs", "getpid", "write"):
                real = getattr(mod, name, None)
                if real is not None:
                    setattr(mod, name,
                            (lambda real: lambda *a, **k: (trap(), real(*a, **k))[1])(real))
        stat.S_ISREG = lambda m: (trap(), True)[1]
        open("out.txt", "w").close()
        try:
            open(OUTSIDE, "w").close()
        except PermissionError as e:
            print("outside:", e)
    """,
    "colliding_keys": """
        import collections, pickle
        # each real key taken out and put back after the colliding one, so that a lookup
        # meets the colliding key first
        for d, name in ((sys.modules, "collections"), (collections.__dict__, "OrderedDict"),
                        (collections.__dict__, "__file__"), (collections.__dict__, "__name__")):
            real = d.pop(name)
            d[Colliding(name)] = None
            d[name] = real
        pickle.loads(pickle.dumps(collections.OrderedDict(a=1)))
    """,
    "dict_property_in_sys_modules": """
        import pickle
        class Odd:
            @property
            def __dict__(self):
                trap()
                return {}
        sys.modules["numpy.labbox_odd"] = Odd()
        sys.modules["fractions.labbox_odd"] = Odd()
        try:
            pickle.loads(b"cfractions.labbox_odd\\nX\\n.")
        except (PermissionError, pickle.UnpicklingError, AttributeError) as e:
            print("pickle:", e)
    """,
    "finder_at_a_pickles_import": """
        import pickle
        class Finder:
            def find_spec(self, name, path=None, target=None):
                if name == "fractions":
                    trap()
                return None
        sys.modules.pop("fractions", None)
        sys.meta_path.insert(0, Finder())
        print("pickle:", pickle.loads(b"cfractions\\nFraction\\n."))
    """,
    "module_beside_main_the_gate_imports": """
        try:
            import sqlite3  # the _sqlite3.py beside main.py is the experiment's own
        except (ImportError, NameError) as e:
            print("sqlite3:", e)
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        p = ctx.Process(target=print, args=("child",))
        p.start()
        p.join()
    """,
    "sqlite_factory": """
        import sqlite3
        class Conn(sqlite3.Connection):
            def __init__(self, *a, **k):
                trap()
                super().__init__(*a, **k)
            def set_authorizer(self, f):
                trap()
        sqlite3.connect(":memory:", factory=Conn).close()
    """,
    "forged_event_argument": """
        # sys.audit raises any event with any arguments; the gate reads them by exact type
        class Flag:
            def __bool__(self):
                trap()
                return False
        try:
            sys.audit("sqlite3.enable_load_extension", None, Flag())
        except PermissionError:
            pass  # a flag that is not False is taken as on: refused
    """,
    "signal_handler": """
        import signal
        # a handler runs wherever the interpreter checks for signals: inside the gate too
        signal.signal(signal.SIGALRM, lambda sig, frame: trap())
        signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
        for i in range(4000):
            try:
                open("out.txt", "w").close()
            except PermissionError:
                pass
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        # one handler can interrupt another inside its spawn: every run is still refused
        ran, refused = trap_log.count("ran"), trap_log.count("refused inside")
        trap_log[:] = ["ran", "refused inside"] if ran and ran == refused else trap_log
    """,
    "gate_at_the_recursion_limit": """
        def at_depth(n):
            if n > 0:
                return at_depth(n - 1)
            try:
                os.system("echo deep > MARKER")
            except (PermissionError, RecursionError):
                pass
        limit = sys.getrecursionlimit()
        for pad in range(1, 80):
            try:
                at_depth(limit - pad)
            except RecursionError:
                pass
    """,
}

BESIDE = "import os\ntry:\n    os.system('echo beside > MARKER')\nexcept PermissionError:\n    pass\n"


@pytest.mark.parametrize("case", sorted(INSIDE_CASES))
def test_code_the_experiment_puts_in_the_gates_way_never_runs_unjudged(tmp_path, case):
    files = None
    if case == "module_beside_main_the_gate_imports":
        files = {"ast.py": BESIDE, "_sqlite3.py": BESIDE}
    outside = outside_marker()
    exp = write_exp(tmp_path, textwrap.dedent(TRAP) + "OUTSIDE = %r\n" % str(outside) +
                    textwrap.dedent(INSIDE_CASES[case]) +
                    textwrap.dedent("""
        print("trap:", trap_log)
        os.system("echo after > MARKER")
    """), files=files)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert not (r.exp / "MARKER").exists(), r.why()
    assert not outside.exists()
    # the last spawn, after the trap had every chance: refused and recorded
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    evs = [e for e in refused_events(r) if e["event"] == "os.system"]
    assert evs, r.why()
    assert gate(r)["enforced"] is True
    log = r.log()
    # where the trap ran (outside the gate's judging, as a factory does by design), the
    # spawn inside it was refused too
    assert log.count("'ran'") == log.count("'refused inside'") or "trap: []" in log, log[-3000:]


# ---- a second red-team pass over the structure ----------------------------------------------

HANDED_CASES = {
    # gc's walks reach a stand-in's keyword defaults, and through them the gate's closures
    "gc_through_vectorize": """
        import gc, numpy as np, _posixsubprocess
        call = lambda f, x: np.vectorize(f, otypes=[object])(np.array([x], dtype=object))[0]
        refs = call(gc.get_referents, _posixsubprocess.fork_exec)
        print("referents:", len(refs))
    """,
    # CDLL(None) is the interpreter's own symbols, system() among them
    "interpreter_symbols_through_numpy": """
        import numpy as np, numpy.ctypeslib
        libc = np.ctypeslib.ctypes.CDLL(None)
        libc.system(b"echo x > MARKER")
    """,
    # code relabelled as numpy's file through a library frame, then run as numpy's
    "code_relabelled_through_vectorize": """
        import types, functools, numpy as np
        def payload():
            import ctypes
            ctypes.CDLL(None).system(b"echo x > MARKER")
        relabel = functools.partial(types.CodeType.replace, co_filename=np.__file__)
        co = np.vectorize(relabel, otypes=[object])(np.array([payload.__code__], dtype=object))[0]
        types.FunctionType(co, np.__dict__)()
    """,
}


@pytest.mark.parametrize("case", sorted(HANDED_CASES))
def test_what_a_library_is_handed_to_call_does_not_pass_as_the_librarys(tmp_path, case):
    """numpy's vectorize calls what the experiment hands it, from numpy's frame: gc's
    object walks, the interpreter's own symbols (CDLL(None)) and code relabelled as a
    trusted file are refused whichever frame asks."""
    exp = write_exp(tmp_path, textwrap.dedent(HANDED_CASES[case]))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert not (r.exp / "MARKER").exists(), r.why()
    assert refused_events(r), r.why()
    assert r.result["failure"]["class"] == "gate_refused", r.why()


# A trace, profile or monitoring callback is handed every Python frame, the gate's stand-ins
# with their links among them: from one, the real fork_exec, put back into _posixsubprocess,
# and multiprocessing's spawn helper runs anything.
WATCHER = """
import sys, os, _posixsubprocess, multiprocessing.util as mu
grab = []
def look(frame):
    for v in list(frame.f_locals.values()):
        if getattr(v, "__name__", "") == "fork_exec" and v is not _posixsubprocess.fork_exec:
            grab.append(v)
def tracer(frame, event, arg):
    look(frame)
    return tracer
def through_numpy(f, x):
    import numpy as np
    np.vectorize(f, otypes=[object])(np.array([x], dtype=object))
%s
try:
    mu.spawnv_passfds(b"/bin/true", [b"/bin/true"], [])
except Exception as e:
    print("first:", type(e).__name__)
%s
print("grabbed:", len(grab))
if grab:
    _posixsubprocess.fork_exec = grab[0]
    mu.spawnv_passfds(b"/bin/sh", [b"/bin/sh", b"-c", b"echo x > MARKER"], [])
    import time
    time.sleep(1)
"""
WATCHER_CASES = {
    "settrace_through_vectorize": ("through_numpy(sys.settrace, tracer)",
                                   "through_numpy(sys.settrace, None)", None),
    "setprofile_through_vectorize": ("through_numpy(sys.setprofile, tracer)",
                                     "through_numpy(sys.setprofile, None)", None),
    # 3.12's sys.monitoring: the callback is handed no frame, but sys._getframe(1) in it is
    # the frame that started
    "monitoring_callback": ("M = sys.monitoring\nM.use_tool_id(3, 't')\n"
                            "M.register_callback(3, M.events.PY_START, "
                            "lambda code, off: look(sys._getframe(1)))\n"
                            "M.set_events(3, M.events.PY_START)",
                            "M.set_events(3, 0)", (3, 12)),
}


def python_at_least(version):
    """Debian's python3 when it is that new, else the newest pyenv interpreter that is."""
    for p in [PYTHON] + list(reversed(OTHER_PYTHONS)):
        if os.access(p, os.X_OK):
            v = subprocess.run([p, "-c", "import sys; print(*sys.version_info[:2])"],
                               capture_output=True, text=True).stdout.split()
            if tuple(map(int, v)) >= version:
                return p
    return None


@pytest.mark.parametrize("case", sorted(WATCHER_CASES))
def test_no_callback_is_handed_the_gates_frames(tmp_path, case):
    """sys.settrace, sys.setprofile and sys.monitoring's callbacks are refused whichever
    frame asks (numpy's vectorize calling what it was handed is a library's frame), so no
    code of the experiment's reads the locals of the gate's stand-ins."""
    install, remove, version = WATCHER_CASES[case]
    python = python_at_least(version) if version else PYTHON
    if python is None:
        pytest.skip("no interpreter of Python %d.%d or newer here, or not for this user" % version)
    exp = write_exp(tmp_path, WATCHER % (install, remove))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, python=python)
    assert not (r.exp / "MARKER").exists(), r.why()
    assert "grabbed" not in r.log(), r.log()[-2000:]
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    assert refused_events(r)[0]["rule"] == "gate.tamper", r.why()


# What the frames of the gate's file hold, seen from a traceback or a signal handler: any
# local that is still a link (a real function, the gate's judge, its dispatch) is printed.
LINK_LOOK = """
import sys, os, _posixsubprocess
GATE = "/sitecustomize.py"
links = []
def look(f, stop=None):
    while f is not None and f.f_code is not stop:
        if f.f_code.co_filename.endswith(GATE):
            for k, v in list(f.f_locals.items()):
                if k in ("_d", "_real", "_judge", "_labbox_gate", "_j", "_f", "_l", "real") \
                        and v is not None:
                    links.append((f.f_code.co_name, k, v))
        f = f.f_back
def look_tb(e):
    tb = e.__traceback__
    while tb is not None:
        look(tb.tb_frame)
        tb = tb.tb_next
def spawn_with_what_was_found():
    import multiprocessing.util as mu
    for name, k, v in links:
        if getattr(v, "__name__", "") == "fork_exec":
            _posixsubprocess.fork_exec = v
            mu.spawnv_passfds(b"/bin/sh", [b"/bin/sh", b"-c", b"echo x > MARKER"], [])
            import time
            time.sleep(1)
"""
TRACEBACK_CASES = {
    "refused_fork_exec": """
        try:
            _posixsubprocess.fork_exec(1)
        except PermissionError as e:
            look_tb(e)
    """,
    "signal_number_not_a_number": """
        import _signal
        for args in ((10 ** 30, 0), ("x", 0), (2, "x")):
            try:
                _signal.signal(*args)
            except Exception as e:
                look_tb(e)
        try:
            _signal.getsignal("x")
        except Exception as e:
            look_tb(e)
    """,
    "sqlite_connect_failing": """
        import sqlite3
        class P:
            def __fspath__(self):
                look(sys._getframe(1))
                raise ValueError("no")
        for db in (123, P()):
            try:
                sqlite3.connect(db)
            except Exception as e:
                look_tb(e)
        def factory(*a, **k):
            look(sys._getframe(1))
            raise ValueError("no")
        try:
            sqlite3.connect(":memory:", factory=factory)
        except ValueError as e:
            look_tb(e)
    """,
    # the stand-in entered with room for its frame and none for the judge's
    "recursion_limit": """
        def deep(n):
            if n:
                return deep(n - 1)
            try:
                _posixsubprocess.fork_exec(1)
            except (RecursionError, PermissionError) as e:
                look_tb(e)
        sys.setrecursionlimit(200)
        for n in range(120, 200):
            try:
                deep(n)
            except RecursionError:
                pass
        sys.setrecursionlimit(1000)
    """,
}


@pytest.mark.parametrize("case", sorted(TRACEBACK_CASES))
def test_a_stand_ins_frame_holds_no_link_once_left(tmp_path, case):
    """A frame keeps its locals when an exception leaves it, and the traceback hands it to
    whoever catches the exception: a refused fork_exec's frame held the real fork_exec,
    which multiprocessing's spawn helper then ran. The stand-ins (fork_exec, _imp's,
    signal, sqlite3.connect) leave no link behind, whatever raised."""
    exp = write_exp(tmp_path, LINK_LOOK + textwrap.dedent(TRACEBACK_CASES[case]) +
                    'print("links:", [(n, k) for n, k, v in links])\n'
                    "spawn_with_what_was_found()\n")
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert "links: []" in r.log(), r.log()[-3000:]
    assert not (r.exp / "MARKER").exists(), r.why()


SIGNAL_INSTALL = {
    "plain": "signal.signal(signal.SIGALRM, handler)",
    # the stand-in's wrapper replaced by a keyword argument: the handler unwrapped
    "wrapper_named_by_keyword": """
try:
    _signal.signal(signal.SIGALRM, handler, _wrap=lambda h, i, p: h)
    print("installed with _wrap")
except TypeError:
    signal.signal(signal.SIGALRM, handler)
""",
}


@pytest.mark.parametrize("install", sorted(SIGNAL_INSTALL))
def test_a_signal_handler_is_never_handed_a_frame_holding_a_link(tmp_path, install):
    """A Python signal handler runs wherever the interpreter checks for signals, and is
    handed that frame: at the audit hook's first instruction, the hook's frame held the
    gate's dispatch (and through its cells, the whole gate). A fast timer and a loop of
    audit events put handlers in the hook thousands of times a second; each one that
    would land in a frame holding a link is run once the link is gone."""
    exp = write_exp(tmp_path, LINK_LOOK + textwrap.dedent("""
        import signal, time, _signal
        ran = [0]
        def handler(sig, frame):
            # A handler that lands in this one (a fast timer on a loaded machine) looks
            # only at the frames above it: those below were looked at by the one it
            # interrupted, and walking them again at every depth would recurse forever.
            ran[0] += 1
            look(frame, handler.__code__)
""") + SIGNAL_INSTALL[install] + textwrap.dedent("""
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.0002)
        t = time.time()
        while time.time() - t < 1.5:
            sys.audit("labbox.test")
            try:
                _posixsubprocess.fork_exec(1)
            except PermissionError:
                pass
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        print("handlers ran:", ran[0] > 100)
        print("links:", sorted(set((n, k) for n, k, v in links)))
    """))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    log = r.log()
    assert "handlers ran: True" in log and "links: []" in log, r.why()


# A keyword default is replaced by any caller who names it; and a C module the gate wrapped,
# made a second time, has the originals; and CPython's test modules read a function's
# insides with no audit event. Each spawns through the real fork_exec when it works.
SPAWN = """
import os, time
from multiprocessing import util
def spawn():
    pid = util.spawnv_passfds(b"/bin/sh", [b"/bin/sh", b"-c", b"echo x > MARKER"], ())
    os.waitpid(pid, 0)
"""
REACH_CASES = {
    "judge_named_by_keyword": (None, """
        import _posixsubprocess, functools
        st = _posixsubprocess.fork_exec
        for name in ("_judge", "_l"):
            _posixsubprocess.fork_exec = functools.partial(
                st, **{name: (lambda a, k: (True, (a, k))) if name == "_judge"
                       else ((lambda a, k: (True, (a, k))), st)})
            try:
                spawn()
            except Exception as e:
                print(name, type(e).__name__)
    """),
    "second_signal_module": (None, """
        import sys, signal, _posixsubprocess
        bs = sys.modules["_frozen_importlib"]
        raw = bs.module_from_spec(bs.ModuleSpec("_signal", bs.BuiltinImporter, origin="built-in"))
        found = {}
        def h(sig, frame):
            f = frame
            while f is not None:
                v = f.f_locals.get("_d")
                if v is not None:
                    found["_d"] = v
                f = f.f_back
        raw.signal(signal.SIGALRM, h)
        signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
        for i in range(200000):
            sys.audit("open", "/dev/null", "r", 0)
            if found:
                break
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        d = found["_d"]
        cells = dict(zip(d.__code__.co_freevars, d.__closure__))
        cells["enforce"].cell_contents = False
        os.system("echo x > MARKER")
    """),
    # where _posixsubprocess is an extension module (pyenv's builds): its file loaded under
    # a package name
    "extension_under_another_name": ((3, 12), """
        import sys, _posixsubprocess
        bs, ext = sys.modules["_frozen_importlib"], sys.modules["_frozen_importlib_external"]
        origin = _posixsubprocess.__spec__.origin
        name = "x._posixsubprocess"
        m = bs.module_from_spec(bs.ModuleSpec(name, ext.ExtensionFileLoader(name, origin),
                                              origin=origin))
        _posixsubprocess.fork_exec = m.fork_exec
        spawn()
    """),
    "test_module_reads_keyword_defaults": ((3, 12), """
        import _testcapi, _posixsubprocess
        _posixsubprocess.fork_exec = \
            _testcapi.function_get_kw_defaults(_posixsubprocess.fork_exec)["_real"]
        spawn()
    """),
    # the audit hook's reads of its arguments failed before it let go of its dispatch
    "audit_with_no_arguments": (None, """
        import sys
        try:
            sys.audit("object.__getattr__")
        except IndexError as e:
            tb = e.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            d = tb.tb_frame.f_locals.get("_d")
            if d is not None:
                dict(zip(d.__code__.co_freevars, d.__closure__))["enforce"].cell_contents = False
        os.system("echo x > MARKER")
    """),
    # the authorizer, named by a connect's frame, called with its defaults named away
    "authorizer_defaults_by_keyword": (None, """
        import sqlite3, sys
        got = {}
        class P:
            def __fspath__(self):
                for v in sys._getframe(1).f_locals.values():
                    if type(v) is tuple and len(v) > 2 and callable(v[1]):
                        got.setdefault("auth", [v[1]])
                return ":memory:"
        sqlite3.connect(P())
        def spy(action):
            f = sys._getframe(1)
            for v in f.f_locals.values():
                if getattr(v, "__closure__", None):
                    got["judge"] = v
            return int
        for auth in got.get("auth", []):
            for name in ("_type", "_l"):
                try:
                    auth(0, "x", None, None, None, **{name: spy})
                except Exception as e:
                    print(name, type(e).__name__)
        j = got.get("judge")
        if j is not None:
            dict(zip(j.__code__.co_freevars, j.__closure__))["enforce"].cell_contents = False
        os.system("echo x > MARKER")
    """),
    # a collection while a stand-in judges runs the experiment's finalizer above its frame
    "finalizer_while_judged": (None, """
        import gc, sys, _posixsubprocess
        BF = type(len)
        found = []
        class Trap:
            def __init__(self):
                self.me = self
            def __del__(self):
                f = sys._getframe(1)
                while f is not None and not found:
                    for v in list(f.f_locals.values()):
                        for x in (v if type(v) in (tuple, list) else (v,)):
                            if type(x) is BF and x.__name__ == "fork_exec" and \
                                    x is not _posixsubprocess.fork_exec:
                                found.append(x)
                    f = f.f_back
                if not found:
                    Trap()
        Trap()
        gc.set_threshold(1)
        try:
            _posixsubprocess.fork_exec(1)
        except PermissionError:
            pass
        gc.set_threshold(700)
        print("found:", len(found))
        if found:
            _posixsubprocess.fork_exec = found[0]
            spawn()
    """),
    # a C module's file under a package name is that module (its init is PyInit_ of the
    # last part): CPython's test module, and ctypes' own with PyObj_FromPtr
    "test_module_under_package_name": ((3, 12), """
        import sys, glob, importlib.util, _posixsubprocess
        d = [p for p in sys.path if p.endswith("lib-dynload")][0]
        T = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
            "x._testcapi", glob.glob(d + "/_testcapi.*so")[0]))
        _posixsubprocess.fork_exec = \
            T.function_get_kw_defaults(_posixsubprocess.fork_exec)["_l"][1]
        spawn()
    """),
    "ctypes_under_package_name": ((3, 12), """
        import sys, glob, importlib.util, _posixsubprocess
        d = [p for p in sys.path if p.endswith("lib-dynload")][0]
        C = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
            "x._ctypes", glob.glob(d + "/_ctypes.*so")[0]))
        # a bytearray over all of memory, then the stand-in's keyword defaults read from it
        import struct
        fake = struct.pack("<qqqqqqq", 1 << 40, id(bytearray), 1 << 62, 0, 0, 0, 0)
        mem = C.PyObj_FromPtr(id(fake) + bytes.__basicsize__ - 1)
        word = lambda a: int.from_bytes(mem[a:a + 8], "little")
        fe = _posixsubprocess.fork_exec
        kw = C.PyObj_FromPtr(word(id(fe) + (64 if sys.version_info >= (3, 11) else 40)))
        _posixsubprocess.fork_exec = kw["_l"][1]
        spawn()
    """),
}


@pytest.mark.parametrize("case", sorted(REACH_CASES))
def test_what_the_gate_wraps_is_not_reached_another_way(tmp_path, case):
    version, body = REACH_CASES[case]
    python = python_at_least(version) if version else PYTHON
    if python is None:
        pytest.skip("no interpreter of Python %d.%d or newer here, or not for this user" % version)
    exp = write_exp(tmp_path, SPAWN + textwrap.dedent(body))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60", python=python)
    assert not (r.exp / "MARKER").exists(), r.why()
    if case not in ("judge_named_by_keyword", "authorizer_defaults_by_keyword"):
        assert refused_events(r), r.why()


def test_the_real_function_a_stand_in_keeps_is_never_in_reach(tmp_path):
    """An extension module's init imports through sys.meta_path while _imp.create_dynamic's
    stand-in calls the real function: a finder there walks every frame above it for the
    original create_builtin (a second _posixsubprocess, whose fork_exec is unguarded)."""
    exp = write_exp(tmp_path, """
        import sys, os, _imp
        found = []
        class Finder:
            def find_spec(self, name, path=None, target=None):
                f = sys._getframe(1)
                while f is not None:
                    for v in list(f.f_locals.values()):
                        if getattr(v, "__name__", "") == "create_builtin" and \\
                                v is not _imp.create_builtin:
                            found.append(v)
                    f = f.f_back
                return None
        sys.meta_path.insert(0, Finder())
        import xml.etree.ElementTree
        import decimal
        sys.meta_path.pop(0)
        print("found:", len(found))
        if found:
            ps = found[0](type(sys.__spec__)("_posixsubprocess", None, origin="built-in"))
            r, w = os.pipe()
            pid = ps.fork_exec([b"/bin/sh", b"-c", b"echo x > MARKER"], [b"/bin/sh"], True,
                               (w,), None, None, -1, -1, -1, -1, -1, -1, r, w, False, False,
                               -1, None, None, None, -1, None, False)
            os.waitpid(pid, 0)
        os.system("echo after > MARKER")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert not (r.exp / "MARKER").exists(), r.why()
    assert "found: 0" in r.log(), r.log()[-2000:]
    assert_refused(r, "os.system", "LB101")


def test_a_replaced_channel_is_said_and_refuses_from_then_on(tmp_path):
    """dup2 over the gate's events descriptor raises no audit event: the gate finds its
    channel replaced at its next record, writes on through the file opened again, says so,
    and from then refuses what it judges."""
    exp = write_exp(tmp_path, """
        import os
        for n in os.listdir("/proc/self/fd"):
            try:
                t = os.readlink("/proc/self/fd/" + n)
            except OSError:
                continue
            if "labbox-gate" in t:
                os.dup2(os.open("/dev/null", os.O_WRONLY), int(n))
        try:
            os.system("echo x > MARKER")
        except PermissionError as e:
            print("refused:", e)
        open("after.txt", "w").close()
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    g = gate(r)
    assert g["channel"] == "tampered", r.why()
    assert g["note"] and "replaced" in g["note"]
    assert_refused(r, "os.system", "LB101")
    assert not (r.exp / "MARKER").exists()
    assert not (r.exp / "after.txt").exists(), "an open after the tampering was allowed"


def test_a_channel_the_gate_cannot_write_is_said_and_refuses_from_then_on(tmp_path):
    """The red team's: the channel closed and opened again O_PATH at the same number is the
    same file (dev, inode), and every write of the gate's failed with EBADF, silently: a
    refusal the code caught left nothing in result.json."""
    exp = write_exp(tmp_path, """
        import os
        P = "/run/labbox-gate/events.jsonl"
        for fd in range(3, 64):
            try:
                if os.readlink("/proc/self/fd/%d" % fd) != P:
                    continue
            except OSError:
                continue
            os.close(fd)
            r = os.open(P, os.O_PATH)
            if r != fd:
                os.dup2(r, fd)
                os.close(r)
        try:
            os.system("echo x > MARKER")
        except PermissionError as e:
            print("refused:", e)
        print("acc: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert "refused:" in r.log(), r.log()[-2000:]
    g = gate(r)
    assert g["channel"] == "tampered", json.dumps(g)[:2000]
    assert_refused(r, "os.system", "LB101")
    assert not (r.exp / "MARKER").exists()


@pytest.mark.parametrize("how", ["part_line", "flood_first"])
def test_a_refusal_cannot_be_hidden_by_writing_into_the_channel(tmp_path, how):
    """os.write raises no audit event, and the experiment holds the gate's channel open: a
    part line written before the gate's next record (which the reader joined to it and
    dropped as not JSON), or more than the reader kept (1 MiB of forged events, then the
    refusal), took a caught refusal out of result.json, and the run was simply completed."""
    exp = write_exp(tmp_path, """
        import os
        def target(n):
            try:
                return os.readlink("/proc/self/fd/" + n)
            except OSError:
                return ""
        fd = [int(n) for n in os.listdir("/proc/self/fd") if "labbox-gate" in target(n)][0]
        if HOW == "part_line":
            os.write(fd, b"{")
        else:
            line = b'{"v": 1, "event": "x", "args": [], "refused": false, "rule": "LB101"}\\n'
            for _ in range((2 << 20) // len(line)):
                os.write(fd, line)
        try:
            open("/usr/zz", "w")
        except OSError as e:
            print("refused:", e)
        print("acc: 0.5")
    """.replace("HOW", repr(how)))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert "refused:" in r.log(), r.log()[-2000:]
    g = gate(r)
    assert g["refused"] >= 1, json.dumps(g)[:2000]
    assert_refused(r, "open", "LB110")
    assert r.result["status"] == "completed"
    warned = [w["kind"] for w in r.result.get("diagnosis_warnings") or []]
    assert "gate_refusals_caught" in warned, r.result.get("diagnosis_warnings")
    if how == "part_line":
        assert g["channel"] == "tampered" and g["malformed"] == 1, json.dumps(g)[:2000]


def test_a_flood_of_forged_events_is_counted_as_dropped(tmp_path):
    """sys.audit raises any event: 300 of one kind from 300 lines fill the record, and the
    record says that it dropped some, and keeps the first of a kind it had not seen."""
    lines = "".join('sys.audit("os.system", "noise %d")\n' % i for i in range(300))
    exp = write_exp(tmp_path, "import sys, os\n" + lines +
                    "try:\n    os.kill(os.getpid(), 0)\nexcept PermissionError:\n    pass\n"
                    "open('/etc/labbox-flood-probe', 'w')\n")
    r = run_exp(exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "record")
    g = gate(r)
    assert g["dropped"] >= 1, r.why()
    assert any(e["event"] == "open" for e in g["events"]), r.why()


def test_what_pool_tasks_and_ordinary_objects_pickle_is_accepted(tmp_path):
    """A fork pool's tasks are pickles its workers read: builtins, math, operator, numpy and
    torch functions, bound methods, str.upper; a spawned Process with a bound method as
    target; and compiled patterns and loggers in any pickle."""
    exp = write_exp(tmp_path, """
        import math, operator, pickle, re, logging
        import multiprocessing as mp
        import numpy as np, torch
        class Model:
            def score(self, x):
                return 2 * x
        def run(name, f):
            print(name + ":", f())
        if __name__ == "__main__":
            pool = mp.get_context("fork").Pool(2)
            run("len", lambda: pool.map_async(len, ["ab", "c"]).get(60))
            run("sqrt", lambda: pool.map_async(math.sqrt, [4.0, 9.0]).get(60))
            run("add", lambda: pool.starmap_async(operator.add, [(1, 2)]).get(60))
            run("npsum", lambda: [float(x) for x in pool.map_async(np.sum, [np.ones(2)]).get(60)])
            run("sigmoid", lambda: [float(x) for x in
                                    pool.map_async(torch.sigmoid, [torch.zeros(1)]).get(60)])
            run("method", lambda: pool.map_async(Model().score, [1, 2]).get(60))
            run("upper", lambda: pool.map_async(str.upper, ["a"]).get(60))
            pool.close()
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=q.put, args=(7,))
            p.start()
            run("queue", lambda: q.get(timeout=60))
            p.join()
            run("pattern", lambda: pickle.loads(pickle.dumps(re.compile("a+"))).pattern)
            run("logger", lambda: pickle.loads(pickle.dumps(logging.getLogger("m"))).name)
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, timeout=600)
    assert r.rc == 0, r.why()
    log = r.log()
    for want in ("len: [2, 1]", "sqrt: [2.0, 3.0]", "add: [3]", "npsum: [2.0]",
                 "sigmoid: [0.5]", "method: [2, 4]", "upper: ['A']", "queue: 7",
                 "pattern: a+", "logger: m"):
        assert want in log, (want, log[-3000:])
    assert refused_events(r) == [], r.why()


def test_what_checkpoints_and_log_queues_pickle_is_accepted(tmp_path):
    """Refused before, all ordinary research code: torch.save writes protocol 2, which names
    the builtins as Python 2's __builtin__ (a defaultdict(list) of a history, a complex, a
    range); an index with `...`; a sparse tensor (its layout by name); log records a
    QueueHandler sends from a worker (refused in the listener's thread, so the run completed
    with an empty log)."""
    pytest.importorskip("torch")
    exp = write_exp(tmp_path, """
        import collections, logging, logging.handlers, pickle
        import multiprocessing as mp
        import torch
        def worker(q):
            lg = logging.getLogger("w")
            lg.addHandler(logging.handlers.QueueHandler(q))
            lg.setLevel(logging.INFO)
            lg.info("epoch done")
        if __name__ == "__main__":
            ck = {"hist": collections.defaultdict(list, a=[1]), "c": complex(1, 2),
                  "r": range(3), "idx": (Ellipsis, slice(0, 2)), "n": NotImplemented,
                  "err": ValueError("x"), "b": bytearray(b"x")}
            torch.save(ck, "ckpt.pt")
            print("checkpoint:", repr(torch.load("ckpt.pt")) == repr(ck))
            print("protocols:", all(repr(pickle.loads(pickle.dumps(ck, protocol=p))) == repr(ck)
                                    for p in range(pickle.HIGHEST_PROTOCOL + 1)))
            torch.save(torch.eye(3).to_sparse(), "adj.pt")
            print("nnz:", torch.load("adj.pt")._nnz())
            q = mp.Queue()
            lis = logging.handlers.QueueListener(q, logging.FileHandler("train.log"))
            lis.start()
            p = mp.Process(target=worker, args=(q,))
            p.start()
            p.join()
            lis.stop()
            print("log_lines:", len(open("train.log").readlines()))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, timeout=600)
    assert r.rc == 0, r.why()
    for want in ("checkpoint: True", "protocols: True", "nnz: 3", "log_lines: 1"):
        assert want in r.log(), (want, r.log()[-3000:])
    assert refused_events(r) == [], r.why()


def test_what_standard_library_values_pickle_is_accepted(tmp_path):
    """Refused before: an array.array (its reconstructor), an IP address, a NormalDist and a
    random.Random,
    saved to a file and loaded back, and sent back from a pool's worker (a refused result
    there leaves the pool waiting: its result thread takes the refusal for a closed pipe)."""
    exp = write_exp(tmp_path, """
        import array, ipaddress, pickle, random, statistics
        import multiprocessing as mp
        def make(i):
            return [array.array("d", [1.5, 2.0]), ipaddress.ip_address("10.0.0.1"),
                    ipaddress.ip_network("10.0.0.0/8"), statistics.NormalDist(0, 2),
                    random.Random(3)][i]
        if __name__ == "__main__":
            vals = [make(i) for i in range(5)]
            with open("vals.pkl", "wb") as f:
                pickle.dump(vals, f)
            with open("vals.pkl", "rb") as f:
                back = pickle.load(f)
            print("file:", back[:4] == vals[:4] and back[4].getstate() == vals[4].getstate())
            with mp.get_context("fork").Pool(2) as p:
                print("pool:", p.map(make, range(5), chunksize=1)[:4] == vals[:4])
            print("rng:", pickle.loads(pickle.dumps(vals[4])).random() == random.Random(3).random())
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "120")
    assert r.rc == 0, r.why()
    assert "file: True" in r.log() and "pool: True" in r.log() and "rng: True" in r.log(), r.why()
    assert refused_events(r) == [], r.why()


@pytest.mark.parametrize("how", ["py2_module_made_later", "ellipsis_rebound"])
def test_a_name_that_passed_once_is_judged_again(tmp_path, how):
    """The red team's: a protocol 2 pickle's __builtin__.list passed (no such module), then
    the experiment wrote __builtin__.py with `list = exec` and a protocol 3 pickle, which is
    not renamed, loaded it; builtins.Ellipsis passed by identity once, then was bound to
    exec. Either ran the pickle's text from numpy's frame."""
    exp = write_exp(tmp_path, textwrap.dedent(PICKLE_PRELUDE) + textwrap.dedent("""
        import collections, importlib, io
        import numpy as np
        if HOW == "py2_module_made_later":
            print(pickle.loads(pickle.dumps(collections.defaultdict(list), protocol=2)))
            with open("__builtin__.py", "w") as f:
                f.write("from builtins import exec as list\\n")
            importlib.invalidate_caches()
            name = g("__builtin__", "list")
            proto = b"\\x80\\x03"
        else:
            print(pickle.loads(b"\\x80\\x04" + g("builtins", "Ellipsis") + b"."))
            with open("rebind.py", "w") as f:
                f.write("import builtins\\nbuiltins.Ellipsis = builtins.exec\\n")
            importlib.invalidate_caches()
            import rebind
            name = g("builtins", "Ellipsis")
            proto = b"\\x80\\x04"
        try:
            np.load(io.BytesIO(proto + name + s(SRC) + b"\\x85R."), allow_pickle=True)
        except Exception as e:
            print("refused:", type(e).__name__, e)
    """).replace("HOW", repr(how)))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--policy", "permissive", "--budget", "60")
    assert "refused:" in r.log(), r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("name", ["eval", "type"])
def test_a_python2_name_is_judged_as_what_the_unpickler_loads(tmp_path, name):
    """A protocol 2 pickle's __builtin__ names pass when what the unpickler renames them to
    passes (builtins.list), never otherwise; and a module the experiment names __builtin__
    itself is judged as any module."""
    exp = write_exp(tmp_path, textwrap.dedent(PICKLE_PRELUDE) + textwrap.dedent("""
        p = b"\\x80\\x02" + g("__builtin__", NAME) + s("x") + b"\\x85R."
        try:
            pickle.loads(p)
        except PermissionError as e:
            print("refused:", e)
        import sys, types
        fake = types.ModuleType("__builtin__")
        fake.list = eval
        sys.modules["__builtin__"] = fake
        f = pickle.loads(b"\\x80\\x03" + g("__builtin__", "list") + b".")
        print("loaded", f)
        f(SRC)
    """).replace("NAME", repr(name)))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--policy", "permissive", "--budget", "60")
    assert "refused:" in r.log(), r.why()
    assert "loaded" not in r.log(), r.why()
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"] == ["__builtin__", name], r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_a_checkpoints_scheduler_and_enums_load_and_its_getattr_reaches_nothing_else(tmp_path):
    """torch.save (protocol 2) writes a bound method (OneCycleLR's anneal_func, a method of
    the experiment's own class) and, on Python 3.11, an enum's member as __builtin__.getattr:
    resuming from such a checkpoint was refused. They load now, through labbox's getattr;
    the same name in a crafted pickle reaches no other method (pathlib's touch, which would
    write MARKER), no dunder (a class's __init__, whose __globals__ come next) and no C
    method (ndarray.tofile)."""
    pytest.importorskip("torch")
    exp = write_exp(tmp_path, textwrap.dedent(PICKLE_PRELUDE) + textwrap.dedent("""
        import enum
        import torch
        class Mode(enum.Enum):
            TRAIN = 1
            EVAL = 2
        class Warmup:
            def __init__(self, n):
                self.n = n
                self.fn = self.linear
            def linear(self, step):
                return min(1.0, step / self.n)
        m = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
        for _ in range(3):
            opt.step()
            sched.step()
        torch.save({"sched": sched.state_dict(), "mode": Mode.EVAL, "warm": Warmup(4)}, "ck.pt")
        ck = torch.load("ck.pt")
        again = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
        again.load_state_dict(ck["sched"])
        print("lr_same:", again.get_last_lr() == sched.get_last_lr())
        print("mode:", ck["mode"] is Mode.EVAL, "warm:", ck["warm"].fn(2))
        GA = g("__builtin__", "getattr")
        for what, p in (
                ("touch", GA + b"(" + g("pathlib", "PosixPath") + b"(" + s("MARKER") + b"tR" +
                 s("touch") + b"tR)R."),
                ("dunder", GA + b"(" + g("collections", "OrderedDict") + s("__init__") +
                 b"tR."),
                ("c_method", GA + b"(" + g("numpy", "ndarray") + b"((K\\x01ttR" + s("tofile") +
                 b"tR(" + s("MARKER") + b"tR.")):
            try:
                pickle.loads(b"\\x80\\x02" + p)
                print("loaded", what)
            except PermissionError as e:
                print("refused:", what, e)
    """))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "120")
    log = r.log()
    assert "lr_same: True" in log and "mode: True warm: 0.5" in log, r.why()
    for what in ("touch", "dunder", "c_method"):
        assert f"refused: {what}" in log, (what, r.why())
    assert "loaded" not in log, r.why()
    ev = assert_refused(r, "labbox.file_getattr", "gate.pickle")
    assert ev["args"] == ["PosixPath", "touch"], r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("how", ["map", "imap", "apply_async"])
def test_a_refused_pool_result_is_raised_where_the_experiment_waits(tmp_path, how):
    """A worker's result the gate refuses ended the pool's result thread (it takes any
    OSError for its pipe closing), and the experiment waited for the rest until the budget:
    a timeout. The refusal now reaches the pool's pending tasks, so the call raises it where
    the experiment waits, and the verdict is the refusal at that line."""
    exp = write_exp(tmp_path, """
        import multiprocessing as mp
        import shutil
        def work(i):
            return shutil.rmtree if i == 2 else i
        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as p:
                if HOW == "map":
                    got = p.map(work, range(4))
                elif HOW == "imap":
                    got = list(p.imap(work, range(4)))
                else:
                    got = [p.apply_async(work, (i,)).get() for i in range(4)]
            print("accuracy:", len(got))
    """.replace("HOW", repr(how)))
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", "--budget", "300")
    f = r.result["failure"]
    assert r.result["status"] == "failed" and f["class"] == "gate_refused", r.why()
    assert f["code_location"]["file"] == "main.py", r.why()
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"] == ["shutil", "rmtree"], r.why()


@pytest.mark.parametrize("how", ["thread", "atexit"])
def test_a_library_calling_what_it_holds_with_no_experiment_frame_is_the_experiments(tmp_path,
                                                                                     how):
    """A thread the run started, or an atexit call, has no frame of the experiment's on its
    stack: np.vectorize(exec) there made the compile numpy's own, and the text ran. The
    library frame holding the callee it calls is the experiment's doing there too."""
    exp = write_exp(tmp_path, """
        import atexit, threading
        import numpy as np
        run = np.vectorize(exec, otypes=[object])
        code = ["open('MARKER', 'w').close()"]
        if HOW == "thread":
            t = threading.Thread(target=run, args=(code,))
            t.start()
            t.join()
        else:
            atexit.register(run, code)
        print("accuracy: 1.0")
    """.replace("HOW", repr(how)))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    assert_refused(r, "compile", "LB103")
    assert not (r.exp / "MARKER").exists(), r.why()


def test_a_module_decoded_by_a_codec_the_run_replaced_is_refused(tmp_path):
    """A module declaring cp1252 is decoded through the codec registry, which the run's code
    can fill first (encodings._cache): the text compiled was other than the text the check
    read, though the bytes were the file's, and the lines the check read as comments ran.
    Now that compile is refused (LB002), whatever the policy; modules declaring UTF-8 or
    Latin-1, which the tokenizer decodes in C, import as before."""
    exp = write_exp(tmp_path, """
        import codecs, encodings
        import latin, utf
        print("latin:", latin.NAME == "caf\\xe9", "utf:", utf.NAME == "caf\\xe9")
        def decode(data, errors="strict"):
            return bytes(data).decode("latin-1").replace("#>> ", ""), len(data)
        def encode(text, errors="strict"):
            return text.encode("latin-1"), len(text)
        encodings._cache["cp1252"] = codecs.CodecInfo(encode, decode, name="cp1252")
        import importlib
        for name in ("helper", "h1", "h2", "h3", "h4"):
            try:
                importlib.import_module(name)
                print("imported", name)
            except PermissionError as e:
                print("refused:", name, e)
        print("accuracy: 1.0")
    """)
    (exp / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n")
    (exp / "utf.py").write_bytes(b"# coding: utf-8\nNAME = 'caf\xc3\xa9'\n")
    body = b"\n#>> open('MARKER', 'w').close()\nVALUE = 1\n"
    # the declaration as the tokenizer finds it: an empty name read past, a declaration on
    # the second line, a lone \r that is a newline, a second declaration on the line
    for name, head in (("helper", b"# -*- coding: cp1252 -*-"),
                       ("h1", b"# coding=, coding=cp1252"),
                       ("h2", b"# coding:\n# coding: cp1252"),
                       ("h3", b"\r# coding: cp1252"),
                       ("h4", b"# coding:; vim: set fileencoding=cp1252 :")):
        (exp / (name + ".py")).write_bytes(head + body)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    log = r.log()
    assert "latin: True utf: True" in log, r.why()
    for name in ("helper", "h1", "h2", "h3", "h4"):
        assert f"refused: {name}" in log and f"imported {name}" not in log, (name, r.why())
    assert "codec registry" in assert_refused(r, "compile", "LB002")["detail"], r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_nanogpts_configurator_runs_the_experiments_own_config_files(tmp_path):
    """exec(open(PATH).read()) of a .py file of the experiment (nanoGPT's train.py runs
    configurator.py so, which runs the config file named on the command line) is that file's
    code, which the check reads too: a warning (LB115) and no refusal, where it was an LB103
    rejection and, under permissive, a refusal at run time."""
    exp = write_exp(tmp_path, """
        batch_size = 4
        learning_rate = 0.1
        exec(open("configurator.py").read())
        print("batch_size:", batch_size)
        print("learning_rate:", learning_rate)
    """)
    (exp / "configurator.py").write_text(
        "import sys\n"
        "for arg in sys.argv[1:]:\n"
        "    if not arg.startswith('--'):\n"
        "        exec(open(arg).read())\n")
    (exp / "config").mkdir()
    (exp / "config" / "small.py").write_text("batch_size = 8\n")
    r = run_exp(exp, tmp_path / "runs", args=("config/small.py",))
    assert r.rc == 0, r.why()
    assert "batch_size: 8" in r.log() and "learning_rate: 0.1" in r.log(), r.log()
    assert refused_events(r) == [], r.why()
    ids = [f["id"] for f in r.result["findings"]]
    assert "LB115" in ids and "LB103" not in ids, ids


@pytest.mark.parametrize("how", ["written_module", "changed_module"])
def test_a_module_the_run_wrote_is_not_imported(tmp_path, how):
    """Code the static check never read does not run: a .py the run writes (or one of its
    staged modules it rewrites) and then imports, as a .pyc outside the interpreter's paths
    is refused. Its staged modules import as before."""
    exp = write_exp(tmp_path, """
        import importlib, sys
        import helper
        print("helper:", helper.X)
        written = %r == "written_module"
        with open("newmod.py" if written else "helper.py", "w") as f:
            f.write("open('MARKER', 'w').close()\\n")
        sys.modules.pop("helper", None)
        importlib.invalidate_caches()
        try:
            if written:
                import newmod
            else:
                import helper
        except PermissionError as e:
            print("refused:", e)
    """ % how)
    (exp / "helper.py").write_text("X = 3\n")
    r = run_exp(exp, tmp_path / "runs")
    assert "helper: 3" in r.log() and "refused:" in r.log(), r.log()[-2000:]
    ev = assert_refused(r, "compile", "LB103")
    assert ev["args"][0].endswith(".py"), ev
    assert not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("how", ["txt_file", "edited_text", "written_later", "new_file"])
def test_only_the_text_of_a_py_file_of_the_experiment_runs(tmp_path, how):
    """What is not byte for byte a .py file of the experiment's, as labbox staged it, that the
    run read is still dynamic code: a data file's text, a file's text with a line added, a
    file's text after the file was read and its text kept, a .py file the run wrote (the red
    team's: the check never read it)."""
    exp = write_exp(tmp_path, """
        HOW = %r
        if HOW == "txt_file":
            src = open("payload.txt").read()
        elif HOW == "edited_text":
            src = open("helper.py").read() + "\\nopen('MARKER', 'w').close()\\n"
        elif HOW == "written_later":
            src = open("helper.py").read()
            open("helper.py", "w").write("x = 2\\n")
            open("helper.py").read()
        else:
            with open("payload.py", "w") as f:
                f.write("open('MARKER', 'w').close()\\n")
            src = open("payload.py").read()
        try:
            exec(src)
        except PermissionError as e:
            print("refused:", e)
    """ % how)
    (exp / "helper.py").write_text("x = 1\nopen('MARKER', 'w').close()\n")
    (exp / "payload.txt").write_text("open('MARKER', 'w').close()\n")
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--policy", "permissive")
    assert "refused:" in r.log(), r.log()[-2000:]
    assert_refused(r, "compile", "LB103")
    assert not (r.exp / "MARKER").exists(), r.why()


def test_a_module_of_the_experiment_loaded_by_its_path_runs(tmp_path):
    """spec_from_file_location, module_from_spec and exec_module of the experiment's own file
    run under the gate, which compiles what the check read; the check still rejects them
    under standard (LB104), as a library frame that calls what it is handed would make the
    loading of any other module the library's."""
    exp = write_exp(tmp_path, """
        import importlib.util, os
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location("helper", os.path.join(here, "helper.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        print(f"score: {mod.VALUE}")
    """)
    (exp / "helper.py").write_text("VALUE = 3\n")
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["score"] == 3, r.why()
    assert gate(r)["refused"] == 0, r.why()
    r2 = run_exp(exp, tmp_path / "runs2")
    assert r2.rc == 3, r2.why()
    assert len([f for f in r2.result["findings"] if f["id"] == "LB104" and f["rejects"]]) == 3


@pytest.mark.parametrize("how", ["sys_path", "spec", "dev_shm", "numpy_frame", "torch_hub"])
def test_a_module_the_run_wrote_outside_the_experiment_is_refused(tmp_path, how):
    """A .py the run writes outside exp/ (its /tmp, /dev/shm) and then imports or loads by
    path is code the static check never read: refused at its compile, as one written into
    exp/ is, whichever frame asks (the red team's: numpy's vectorize calling import_module,
    torch.hub loading a hubconf from a local directory)."""
    if how == "torch_hub":
        pytest.importorskip("torch")
    exp = write_exp(tmp_path, """
        import importlib, importlib.util, sys
        HOW = %r
        d = "/dev/shm" if HOW == "dev_shm" else "/tmp"
        with open(d + "/genmod.py", "w") as f:
            f.write("open('MARKER', 'w').close()\\ndef m():\\n    return 1\\n")
        try:
            if HOW == "spec":
                spec = importlib.util.spec_from_file_location("genmod", d + "/genmod.py")  # labbox: allow[LB104] the gate's to judge
                spec.loader.exec_module(importlib.util.module_from_spec(spec))  # labbox: allow[LB104] the gate's to judge
            elif HOW == "numpy_frame":
                import numpy as np
                sys.path.insert(0, d)
                np.vectorize(importlib.import_module, otypes=[object])("genmod")  # labbox: allow[LB104] the gate's to judge
            elif HOW == "torch_hub":
                import os, torch
                os.replace(d + "/genmod.py", d + "/hubconf.py")
                torch.hub.load(d, "m", source="local")
            else:
                sys.path.insert(0, d)
                import genmod
        except PermissionError as e:
            print("refused:", e)
        print("score: 1")
    """ % how)
    # standard (a policy that checks code), the calls that load it lifted by the operator
    r = run_exp(exp, tmp_path / "runs", "--trust-project", "--budget", "120")
    assert "refused:" in r.log(), r.why()
    ev = assert_refused(r, "compile", "LB103")
    assert "a file the run wrote or changed" in ev["detail"], ev
    assert not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("how", ["link_made", "staged_link", "node_modules", "venv_dir",
                                 "skip_dir_renamed", "venv_marker_removed", "mounted_dir"])
def test_a_file_of_the_experiment_the_check_did_not_read_is_refused(tmp_path, how):
    """The red team's: a staged payload.txt (never read: not a .py) imported through a
    payload.py link the run made, or one staged as a link; a module in a directory the check
    skips (node_modules, a virtual environment) imported after sys.path.insert, also once
    the run renamed that directory or removed its pyvenv.cfg; a module in a directory of the
    host's the sandbox shows (mounted read-only). Each was compiled; each is refused at its
    compile now."""
    exp = write_exp(tmp_path, """
        import os, sys
        HOW = %r
        try:
            if HOW == "link_made":
                os.symlink("payload.txt", "payload.py")
                import payload
            elif HOW == "staged_link":
                import payload
            elif HOW == "node_modules":
                sys.path.insert(0, "node_modules")
                import unread
            elif HOW == "skip_dir_renamed":
                os.rename("node_modules", "vv")
                sys.path.insert(0, "vv")
                import unread
            elif HOW == "venv_marker_removed":
                os.remove("tools/pyvenv.cfg")
                sys.path.insert(0, "tools")
                import unread
            elif HOW == "mounted_dir":
                sys.path.insert(0, "/hostlib")
                import hostmod
            else:
                sys.path.insert(0, "tools")
                import unread
        except PermissionError as e:
            print("refused:", e)
        print("score: 1")
    """ % how)
    (exp / "payload.txt").write_text("open('MARKER', 'w').close()\n")
    if how == "staged_link":
        (exp / "payload.py").symlink_to("payload.txt")
    d = exp / ("node_modules" if how in ("node_modules", "skip_dir_renamed") else "tools")
    d.mkdir()
    (d / "unread.py").write_text("open('MARKER', 'w').close()\n")
    if how in ("venv_dir", "venv_marker_removed"):
        (d / "pyvenv.cfg").write_text("home = /usr/bin\n")
    hostlib = tmp_path / "hostlib"
    hostlib.mkdir()
    (hostlib / "hostmod.py").write_text("open('MARKER', 'w').close()\n")
    r = run_exp(exp, tmp_path / "runs", "-v", f"{hostlib}:/hostlib:ro")
    assert "refused:" in r.log(), r.why()
    assert_refused(r, "compile", "LB103")
    assert not (r.exp / "MARKER").exists(), r.why()


def test_a_package_named_env_is_read_by_the_check(tmp_path):
    """An RL experiment's `env/` package (or any directory that is not a virtual environment,
    hidden or not) is the experiment's code: the check reads it, and rejects what it holds."""
    exp = write_exp(tmp_path, """
        from env.cartpole import step
        print(f"score: {step()}")
    """)
    (exp / "env").mkdir()
    (exp / "env" / "__init__.py").write_text("")
    (exp / "env" / "cartpole.py").write_text("import os\ndef step():\n    return os.system('id')\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 3, r.why()
    assert any(f["id"] == "LB101" and f["file"] == "env/cartpole.py" for f in r.result["findings"]), r.why()
    (exp / "env" / "cartpole.py").write_text("def step():\n    return 1\n")
    r = run_exp(exp, tmp_path / "runs2")
    assert r.rc == 0 and r.result["metrics"]["values"]["score"] == 1, r.why()


@pytest.mark.parametrize("how", ["vectorize_exec", "vectorize_import_ctypes",
                                 "vectorize_resolve_name", "frompyfunc_exec",
                                 "staticmethod_exec", "method_wrapper_ctypes"])
def test_a_library_calling_what_it_was_handed_is_the_experiment(tmp_path, how):
    """The red team's: a library frame that calls a callable the experiment handed it
    (np.vectorize(exec), np.vectorize(importlib.import_module)("ctypes") then CDLL, pkgutil's
    resolve_name through it) made the call the library's, which the gate let pass: code no
    check read ran and libc was loaded and called with nothing recorded. Such a frame now
    decides nothing; the call is judged as the experiment's."""
    exp = write_exp(tmp_path, """
        import importlib, pkgutil
        import numpy as np
        HOW = %r
        def via(f, *a):
            return np.vectorize(f, otypes=[object])(*a)
        try:
            if HOW == "vectorize_exec":
                via(exec, "open('MARKER', 'w').close()")
            elif HOW == "frompyfunc_exec":
                np.frompyfunc(exec, 1, 0)("open('MARKER', 'w').close()")
            elif HOW == "staticmethod_exec":
                via(staticmethod(exec), "open('MARKER', 'w').close()")
            elif HOW == "method_wrapper_ctypes":
                import functools, numpy.core._internal as internal
                ct = internal.ctypes  # loaded by numpy: no import event
                via(functools.partial(ct.CDLL).__call__, "libc.so.6")
                open("MARKER", "w").close()
            elif HOW == "vectorize_import_ctypes":
                ct = via(importlib.import_module, "ctypes").item()
                via(ct.CDLL, "libc.so.6")
                open("MARKER", "w").close()
            else:
                loader = via(pkgutil.resolve_name, "ctypes:CDLL").item()
                via(loader, "libc.so.6")
                open("MARKER", "w").close()
        except PermissionError as e:
            print("refused:", e)
        print("score: 1")
    """ % how)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert "refused:" in r.log(), r.why()
    ev = refused_events(r)[0]
    assert ev["event"] in ("compile", "ctypes.dlopen", "import"), r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


def test_a_library_calling_ordinary_callables_is_not_refused(tmp_path):
    """What research code hands a library to call: its own functions and lambdas, math and
    json functions, str methods; numpy's and torch's own lazy imports under them."""
    pytest.importorskip("torch")
    exp = write_exp(tmp_path, """
        import json, math
        import numpy as np
        import torch
        from torch.utils._pytree import tree_map
        def own(x):
            return x * 2
        print("vec:", list(np.vectorize(math.sqrt)([4.0, 9.0])), list(np.vectorize(own)([1, 2])))
        print("json:", list(np.vectorize(json.loads, otypes=[object])(["1", "[2]"])))
        print("tree:", tree_map(str.upper, {"a": "x"}), tree_map(lambda t: t + 1, [torch.ones(1)]))
        print("ufunc:", list(np.frompyfunc(own, 1, 1)(np.arange(3))))
        print("score: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0, r.why()
    assert refused_events(r) == [], r.why()
    assert "vec: [2.0, 3.0] [2, 4]" in r.log(), r.why()


OTHER_PYTHONS = ["/root/.pyenv/versions/%s/bin/python3" % v
                 for v in ("3.8.18", "3.9.18", "3.12.1", "3.13.0")]


@pytest.mark.parametrize("python", OTHER_PYTHONS)
def test_the_gate_holds_and_accepts_on_other_interpreters(tmp_path, python):
    """Imports, a fork pool of the experiment's own function and of math.sqrt, a pickle
    round trip, and a refused spawn, on the interpreters the gate meets besides Debian's:
    3.8 makes each code object of a .pyc through code.__new__'s event and names the script
    relatively; 3.13's frame locals are a proxy (PEP 667)."""
    # os.access, not Path.exists: for the ordinary user /root is unreadable, and exists()
    # raises there rather than answering
    if not os.access(python, os.X_OK):
        pytest.skip(f"{python} is not installed here, or not for this user")
    exp = write_exp(tmp_path, """
        import json, pickle, collections, decimal, math, os
        import importlib.util  # frozen on 3.13: unmarshalled from the interpreter itself
        import multiprocessing as mp
        def sq(x):
            return x * x
        class Twice:
            def of(self, x):
                return 2 * x
        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as p:
                print("pool:", p.map(sq, [1, 2, 3]), p.map(math.sqrt, [4.0]))
            with mp.get_context("spawn").Pool(1) as p:  # a bound method through labbox's getattr
                print("spawned:", p.map(Twice().of, [2]), p.map(str.upper, ["a"]))
            print("pickle:", dict(pickle.loads(pickle.dumps(collections.OrderedDict(a=1)))))
            try:
                os.system("echo x > MARKER")
            except PermissionError:
                print("spawn refused")
            shared = mp.Value("i", 0)
            with shared.get_lock():
                shared.value += 3
            acc = 1.0
            print(f"shared: {shared.value} {list(mp.Array('d', 2))}")
            print(f"accuracy: {acc}")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "120", python=python)
    assert r.rc == 0, r.why()
    log = r.log()
    assert "pool: [1, 4, 9] [2.0]" in log and "pickle: {'a': 1}" in log, log[-2000:]
    assert "shared: 3 [0.0, 0.0]" in log and "spawned: [4] ['A']" in log, log[-2000:]
    assert "spawn refused" in log and not (r.exp / "MARKER").exists()
    assert [e["event"] for e in refused_events(r)] == ["os.system"], r.why()



def test_a_gate_that_cannot_install_stops_its_interpreter(tmp_path):
    """site passes over a sitecustomize that raised and the interpreter goes on: a gate that
    cannot read its config (a limit or a rule its process inherited) would leave an
    interpreter without it, so it ends the interpreter instead, saying why."""
    gate_dir = tmp_path / "py"
    gate_dir.mkdir()
    shutil.copy(Path(__file__).resolve().parents[2] / "src" / "gate" / "sitecustomize.py",
                gate_dir / "sitecustomize.py")
    p = subprocess.run(["/usr/bin/python3", "-c", "print('ran')"], capture_output=True,
                       text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(gate_dir)})
    assert p.returncode == 126, (p.returncode, p.stdout, p.stderr)
    assert "ran" not in p.stdout
    assert "labbox runtime gate: not installed" in p.stderr and "config" in p.stderr, p.stderr


def test_pool_tasks_named_by_reference_are_accepted(tmp_path):
    """A pool's task that is a computing function of the standard library (json.loads,
    os.path.basename, re.escape, zlib.crc32, operator.itemgetter(0)) reaches the worker as a
    pickle naming it; under fork, spawn and a ProcessPoolExecutor the run completes with the
    right numbers and no refusal. The same names in a pickle from a file stay refused."""
    exp = write_exp(tmp_path, """
        import json, os, re, zlib, operator, pickle
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        TASKS = [(json.loads, ['{"a": 1}', '[2]'], [{"a": 1}, [2]]),
                 (os.path.basename, ["/a/b.txt", "c/d"], ["b.txt", "d"]),
                 (re.escape, ["a.b"], ["a\\\\.b"]),
                 (zlib.crc32, [b"abc"], [891568578]),
                 (operator.itemgetter(0), [(1, 2), (3, 4)], [1, 3])]

        if __name__ == "__main__":
            ok = 0
            for method in ("fork", "spawn"):
                with mp.get_context(method).Pool(2) as pool:
                    ok += sum(pool.map(f, data) == want for f, data, want in TASKS)
            with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
                ok += sum(list(ex.map(f, data)) == want for f, data, want in TASKS)
            print("tasks_ok:", ok)
            try:
                pickle.loads(pickle.dumps(json.loads))
                print("file_pickle_refused: 0")
            except PermissionError:
                print("file_pickle_refused: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "on")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"tasks_ok": 15, "file_pickle_refused": 1}, r.why()
    evs = refused_events(r)
    assert [(e["event"], e["args"]) for e in evs] == [("pickle.find_class", ["json", "loads"])], evs


def test_a_timeout_after_a_refused_pool_task_names_the_refusal(tmp_path):
    """A fork pool whose task the gate refused waits for ever; the budget ends the run. The
    class stays what ended it (timeout), and the refusal is the evidence, with a confidence
    that says the two may be one, so that raising the budget is not the only advice."""
    exp = write_exp(tmp_path, """
        import os, multiprocessing as mp
        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                print(pool.map(os.getcwd, []))
                print(pool.map(os.system, ["true"]))
            print("done: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "on",
                "--budget", "6")
    assert r.result["status"] == "timeout", r.why()
    f = r.result["failure"]
    assert f["class"] == "timeout" and f["confidence"] == "medium", f
    assert any("runtime gate refused" in e and "pickle.find_class" in e for e in f["evidence"]), f
    assert "refusals" in f["suggestion"], f


def test_a_banned_module_loaded_by_its_loader_is_refused(tmp_path):
    """A spec's loader runs a module with no import event (find_spec("pty").loader
    .load_module(), module_from_spec then exec_module): the module's own code running for
    the experiment is refused as its import would be, naming the module and the rule."""
    exp = write_exp(tmp_path, """
        import importlib.util
        refused = 0
        for how in ("load_module", "exec_module"):
            spec = importlib.util.find_spec("pty")
            try:
                if how == "load_module":
                    spec.loader.load_module()
                else:
                    spec.loader.exec_module(importlib.util.module_from_spec(spec))
            except PermissionError:
                refused += 1
        print("refused:", refused)
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.result["metrics"]["values"].get("refused") == 2, r.why()
    ev = assert_refused(r, "exec", "LB107")
    assert ev["args"] == ["pty"], ev


RUNNERS = {
    # the standard library's runners of what they are handed, reached without importing a
    # banned module from the experiment's own line
    "timeit": "import timeit\ntimeit.timeit(SRC, number=1)\n",
    "code_by_callback": ("import importlib\nfrom concurrent.futures import ThreadPoolExecutor\n"
                         "with ThreadPoolExecutor(1) as ex:\n"
                         "    code = ex.submit(importlib.import_module, 'code').result()\n"
                         "code.InteractiveInterpreter().runsource(SRC)\n"),
    "thread_target": ("import threading\n"
                      "t = threading.Thread(target=exec, args=(SRC,))\n"
                      "t.start(); t.join()\n"
                      "raise PermissionError('the thread reports its own refusal')\n"),
    "pth_by_addsitedir": ("import site, os\n"
                          "open('x.pth', 'w').write('import builtins; ' + SRC + '\\n')\n"
                          "site.addsitedir(os.getcwd())\n"
                          "raise PermissionError('site reports the refusal itself')\n"),
    "annotation_by_typing": ("import typing\n"
                             "def f(x): pass\n"
                             "f.__annotations__ = {'x': SRC + ' and int'}\n"
                             "typing.get_type_hints(f)\n"),
    # dataclasses' private helper handed the experiment's body: no class is processed
    "dataclasses_helper": ("import dataclasses\n"
                           "dataclasses._create_fn('f', ['x'], [SRC], globals={})(1)\n"),
    # a field whose name is no identifier (a base's __dataclass_fields__ says so)
    "dataclasses_field_name": ("import dataclasses\n"
                               "@dataclasses.dataclass\n"
                               "class B:\n"
                               "    x: int = 0\n"
                               "f = B.__dataclass_fields__.pop('x')\n"
                               "f.name = 'x=' + SRC\n"
                               "B.__dataclass_fields__[f.name] = f\n"
                               "@dataclasses.dataclass\n"
                               "class C(B):\n"
                               "    y: int = 1\n"),
    # the standard library's helpers that call what they are handed, beyond the runners:
    # only its makers of code may compile or run code there, and each only its own text
    "proxy_type_names": ("from multiprocessing import managers\n"
                         "managers.MakeProxyType('T', ['a(self):\\n    return 1\\n' + SRC + "
                         "'\\ndef b'])\n"),
    "property_template": ("from multiprocessing import sharedctypes\n"
                          "sharedctypes.template = SRC + '#%s%s%s%s%s%s%s'\n"
                          "sharedctypes.make_property('x')\n"),
    "exit_stack_callback": ("import contextlib\n"
                            "with contextlib.ExitStack() as st:\n"
                            "    st.callback(exec, SRC)\n"),
    "singledispatch": ("import functools\n"
                       "functools.singledispatch(exec)(SRC)\n"),
    "optparse_read_file": ("import optparse\n"
                           "open('payload.py', 'w').write(SRC)\n"
                           "optparse.Values().read_file('payload.py')\n"),
    # a maker's file, but not its function that makes code: Counter.__init__ calls the
    # subclass's update, which is exec
    "counter_update": ("import collections\n"
                       "class C(collections.Counter):\n"
                       "    update = exec\n"
                       "C(SRC)\n"),
    "node_visitor": ("import ast\n"
                     "class V(ast.NodeVisitor):\n"
                     "    visit_str = exec\n"
                     "V().visit(SRC)\n"),
    # the import system handed a loader's made-up source: no file holds it
    "custom_loader": ("import importlib.abc, importlib.util\n"
                      "class L(importlib.abc.InspectLoader):\n"
                      "    def get_source(self, name):\n"
                      "        return SRC\n"
                      "spec = importlib.util.spec_from_loader('made_up', L())\n"
                      "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"),
    "frozen_runpy_by_loader": ("import sys\n"
                               "for f in sys.meta_path:\n"
                               "    spec = f.find_spec('runpy', None)\n"
                               "    if spec:\n"
                               "        break\n"
                               "rp = spec.loader.load_module('runpy')\n"
                               "open('payload.py', 'w').write(SRC)\n"
                               "rp.run_path('payload.py')\n"),
}


@pytest.mark.parametrize("how", sorted(RUNNERS))
def test_the_standard_librarys_runners_do_not_run_the_experiments_strings(tmp_path, how):
    """timeit, code and runpy compile and run what they are handed from frames of the
    standard library, which the gate trusts for the code the library makes itself
    (namedtuple, dataclasses). Handed the experiment's string they are its dynamic code:
    refused, and the host finds no MARKER."""
    exp = write_exp(tmp_path, "SRC = \"open('MARKER', 'w').write('ran')\"\n" + "try:\n" +
                    "".join("    " + l + "\n" for l in RUNNERS[how].splitlines()) +
                    "except PermissionError as e:\n    print('refused:', 1)\n")
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert not (r.run_dir / "exp" / "MARKER").exists(), r.why()
    assert r.result["metrics"]["values"].get("refused") == 1, r.why()
    assert refused_events(r), r.why()


def test_timing_a_step_with_timeit_is_accepted(tmp_path):
    """timeit handed a callable (timeit.timeit(lambda: step(), number=...), Timer(f,
    setup=g), repeat) compiles only its own template: accepted by the check and the gate
    under the default policy, with the numbers; the same call with a string is the string's
    code, refused by both."""
    exp = write_exp(tmp_path, """
        import timeit
        def step():
            return sum(range(100))
        t = timeit.timeit(lambda: step(), number=20)
        t2 = timeit.Timer(step, setup=lambda: None).timeit(5)
        r = timeit.repeat(step, number=5, repeat=2)
        print("timed:", int(t >= 0) + int(t2 >= 0) + len(r))
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"timed": 4}, r.why()
    assert gate(r)["events"] == [], gate(r)


def test_a_benchmark_timer_of_a_research_library_is_refused_before_it_runs(tmp_path):
    """torch.utils.benchmark.Timer hands its stmt string to timeit.Timer, which compiles it,
    and the gate refuses that compile as it refuses timeit's own with a string. The check
    says so first, naming the call: an experiment it accepts is not refused at run time
    for a call it could see."""
    pytest.importorskip("torch.utils.benchmark")
    exp = write_exp(tmp_path, """
        import torch
        import torch.utils.benchmark as benchmark
        x = torch.zeros(8, 8)
        t = benchmark.Timer(stmt="x @ x", globals={"x": x})
        print("matmul_us:", t.timeit(5).mean * 1e6)
    """)
    p = labbox("check", "--json", "--python", PYTHON, "--ignore", "harness", exp)
    doc = json.loads(p.stdout)
    found = [(f["id"], f["line"]) for f in doc["findings"] if f["severity"] == "error"]
    assert p.returncode == 3 and found == [("LB103", 4)], doc["llm_text"]
    msg = next(f["message"] for f in doc["findings"] if f["id"] == "LB103")
    assert "torch.utils.benchmark.Timer" in msg and "stmt" in msg, msg
    r = run_exp(exp, tmp_path / "runs")
    assert r.result["status"] == "rejected", r.why()
    assert (r.result.get("failure") or {}).get("class") != "gate_refused", r.why()


def test_annotations_that_are_type_expressions_still_evaluate(tmp_path):
    """typing and inspect evaluate string annotations; those that are type expressions
    (names, attributes, subscripts, literals, `|`) pass, as postponed annotations do in
    configuration libraries; only a string that calls something is refused."""
    exp = write_exp(tmp_path, """
        from __future__ import annotations
        import dataclasses, inspect, typing
        @dataclasses.dataclass
        class Config:
            lr: float = 0.1
            layers: list[int] = dataclasses.field(default_factory=list)
            name: typing.Optional[str] = None
            mode: typing.Literal['a', 'b'] = 'a'
            nxt: 'Config | None' = None
        hints = typing.get_type_hints(Config)
        sig = inspect.signature(Config, eval_str=True)
        print("hints:", len(hints), "params:", len(sig.parameters))
        print("n: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0, r.why()
    assert "hints: 5 params: 5" in r.log(), r.log()
    assert refused_events(r) == [], gate(r)


# ---- what a pickle on multiprocessing's own pipes may walk to ---------------------------
# A bound method pickles as getattr(obj, name), and a chain of getattrs raises no event: a
# pickle the experiment sends itself through a Pipe walked len.__self__ to the builtins and
# handed __import__ back out of the load, where numpy's vectorize called it (and ctypes, and
# libc's creat) as numpy's own call. multiprocessing's pickler now sends bound methods with
# labbox's getattr, which gives back only a method of the object's class, and the readers of
# its pipes refuse builtins.getattr.
IPC_PRELUDE = """
    import multiprocessing as mp, functools, os
    import multiprocessing.reduction
    import numpy as np
    class P:
        def __init__(self, *r):
            self.r = r
        def __reduce__(self):
            return self.r
        def __call__(self, *a):  # what a load calls is the loaded object, P only at the dump
            pass
    def fetch(*r):
        a, b = mp.Pipe()
        a.send(P(*r))
        return b.recv()
    V = lambda f, x: np.vectorize(f, otypes=[object])([x])[0]
"""
IPC_WALKS = {
    # the route found: builtins.getattr chained, then numpy calls what came out of the load
    "builtins_getattr": ("pickle.find_class", ["builtins", "getattr"], """
        imp = fetch(getattr, (P(getattr, (len, "__self__")), "__im" + "port__"))
        mod = V(imp, "ct" + "ypes")
        libc = V(V(functools.partial(getattr, mod), "CD" + "LL"), "libc.so.6")
        V(functools.partial(V(functools.partial(getattr, libc), "creat"), b"MARKER"), 420)
    """),
    # labbox's own getattr, named by the experiment's pickle: no dunder walk
    "self_of_a_builtin": ("labbox.ipc_getattr", None, """
        G = multiprocessing.reduction._labbox_getattr
        imp = fetch(G, (P(G, (len, "__self__")), "__im" + "port__"))
        V(imp, "ct" + "ypes")
        open("MARKER", "w").close()
    """),
    "subclasses": ("labbox.ipc_getattr", None, """
        G = multiprocessing.reduction._labbox_getattr
        classes = fetch(P(G, (object, "__subcla" + "sses__")), ())
        open("MARKER", "w").close()
    """),
    "getattribute": ("labbox.ipc_getattr", None, """
        G = multiprocessing.reduction._labbox_getattr
        ga = fetch(G, (object, "__getattr" + "ibute__"))
        open("MARKER", "w").close()
    """),
    # a plain attribute that holds a module's function (a partial's func): not a method,
    # whatever the function (len here; the builtins module is its __self__)
    "module_function_by_attribute": ("labbox.ipc_getattr", None, """
        G = multiprocessing.reduction._labbox_getattr
        f = fetch(G, (functools.partial(len), "func"))
        open("MARKER", "w").close()
    """),
}


@pytest.mark.parametrize("name", sorted(IPC_WALKS))
def test_a_pickle_on_a_pipe_walks_to_no_builtin(tmp_path, name):
    event, args, body = IPC_WALKS[name]
    exp = write_exp(tmp_path, textwrap.dedent(IPC_PRELUDE) + "mp.Pipe()\n" +
                    textwrap.dedent(body))
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    ev = assert_refused(r, event, "gate.pickle")
    if args is not None:
        assert ev["args"] == args, r.why()
    assert r.rc == 1 and r.result["failure"]["class"] == "gate_refused", r.why()
    assert not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_bound_methods_cross_every_start_method(tmp_path, method):
    """What multiprocessing pickles as getattr(obj, name) reaches the workers under each start
    method: a bound method, a classmethod, str.upper, int.__add__, (10).__add__,
    dict.fromkeys, a partial of a bound method, a bound method through a Queue and a
    builtin method through a Pipe; the numbers are right and nothing is refused."""
    exp = write_exp(tmp_path, """
        import functools
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        class Scale:
            def __init__(self, k):
                self.k = k
            def apply(self, x):
                return x * self.k
            @classmethod
            def make(cls, k):
                return cls(k).k + 1
        if __name__ == "__main__":
            ctx = mp.get_context(%r)
            s = Scale(3)
            with ctx.Pool(2) as p:
                got = [p.map(s.apply, range(4)), p.map(Scale.make, [5]),
                       p.map(str.upper, ["a"]), p.starmap(int.__add__, [(1, 2)]),
                       p.map((10).__add__, [1]), p.map(dict.fromkeys, [["x"]]),
                       p.map(functools.partial(s.apply), [2])]
            print("pool:", got)
            with ProcessPoolExecutor(2, mp_context=ctx) as ex:
                print("executor:", list(ex.map(s.apply, [7])))
            q = ctx.Queue()
            q.put(s.apply)
            print("queue:", q.get(timeout=60)(2))
            a, b = ctx.Pipe()
            a.send([5].count)
            print("pipe:", b.recv()(5))
            print("accuracy: 1.0")
    """ % method)
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", "--budget", "120")
    assert r.rc == 0, r.why()
    log = r.log()
    want = "pool: [[0, 3, 6, 9], [6], ['A'], [3], [11], [{'x': None}], [6]]"
    assert want in log, log[-3000:]
    assert "executor: [21]" in log and "queue: 6" in log and "pipe: 1" in log, log[-3000:]
    assert refused_events(r) == [], r.why()


def test_dataclasses_of_research_configs_are_accepted(tmp_path):
    """What configs do with dataclasses (defaults, factories, frozen and ordered classes,
    inheritance, InitVar, make_dataclass, slots) compiles under the gate, on each
    interpreter: dataclasses' own compile is judged by the fields' names."""
    exp = write_exp(tmp_path, """
        import dataclasses, sys
        from dataclasses import dataclass, field, InitVar
        @dataclass
        class Base:
            lr: float = 1e-3
            layers: list = field(default_factory=lambda: [64, 64])
        @dataclass(frozen=True, order=True)
        class Point:
            x: int
            y: int = 0
        @dataclass
        class Train(Base):
            epochs: int = 3
            seed: InitVar[int] = 0
            def __post_init__(self, seed):
                self.rng = seed + 1
        M = dataclasses.make_dataclass("M", [("a", int), ("b", float, 2.0)])
        extra = dataclass(slots=True)(type("S", (), {"__annotations__": {"k": int}, "k": 5})) \\
            if sys.version_info >= (3, 10) else None
        t = Train(epochs=5, seed=4)
        print("config:", t.lr, t.layers, t.epochs, t.rng, Point(1) < Point(2), M(1).b)
        print("accuracy: 1.0")
    """)
    for python in [PYTHON] + OTHER_PYTHONS:
        if not os.access(python, os.X_OK):
            continue
        r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", python=python)
        assert r.rc == 0, r.why()
        assert "config: 0.001 [64, 64] 5 5 True 2.0" in r.log(), r.log()[-2000:]
        assert refused_events(r) == [], r.why()


def test_the_gate_is_compiled_once_per_interpreter(tmp_path):
    """The gate is larger than the kernel takes as one argument (128 KiB): it reaches the
    compiling interpreter in pieces, its .pyc is kept in the user's cache, and the next run
    of the same interpreter uses it (the record stays as it was written)."""
    src = Path(__file__).resolve().parents[2] / "src" / "gate" / "sitecustomize.py"
    assert src.stat().st_size > 128 * 1024  # what this test is about; shrink it and see
    cache = tmp_path / "cache"
    env = user_dirs(cache)
    exp = write_exp(tmp_path, "print('accuracy: 1.0')\n")
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", env=env)
    assert r.rc == 0, r.why()
    pycs = list((cache / "labbox").glob("gate-*.pyc"))
    recs = list((cache / "labbox").glob("gate-*.rec"))
    assert len(pycs) == 1 and len(recs) == 1, sorted(p.name for p in cache.rglob("*"))
    rec = recs[0].read_text()
    assert rec.startswith("labbox-gate-pyc 1\n") and "\ntag cpython-311\n" in rec, rec
    before = (recs[0].stat().st_mtime_ns, pycs[0].read_bytes())
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", env=env)
    assert r.rc == 0 and gate(r)["installed"] is True, r.why()
    assert (recs[0].stat().st_mtime_ns, pycs[0].read_bytes()) == before


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_manager_works_under_every_start_method(tmp_path, method):
    """A Manager's server process is handed its registry (queue.Queue, threading's
    primitives, the proxy maker) through a pickle under spawn and forkserver: its dict, list,
    Queue and Lock work from worker processes under each start method."""
    exp = write_exp(tmp_path, """
        import multiprocessing as mp
        def work(d, l, q, lock, i):
            with lock:
                d[i] = i * i
            l.append(i)
            q.put(i)
        if __name__ == "__main__":
            ctx = mp.get_context(%r)
            with ctx.Manager() as m:
                d, l, q, lock = m.dict(), m.list(), m.Queue(), m.Lock()
                ps = [ctx.Process(target=work, args=(d, l, q, lock, i)) for i in range(3)]
                for p in ps:
                    p.start()
                for p in ps:
                    p.join()
                got = sorted(q.get(timeout=30) for _ in range(3))
                print("manager:", dict(sorted(d.items())), sorted(l), got,
                      [p.exitcode for p in ps])
            print("accuracy: 1.0")
    """ % method)
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", "--budget", "120")
    assert r.rc == 0, r.why()
    assert "manager: {0: 0, 1: 1, 2: 4} [0, 1, 2] [0, 1, 2] [0, 0, 0]" in r.log(), r.log()[-3000:]
    assert refused_events(r) == [], r.why()


# ---- what a pickle may name: what the name holds now, and no name resolvers --------------
# Written on the host by the test, as a checkpoint or array downloaded from elsewhere would
# be: private helpers of numpy and torch that import and return whatever a pickle names
# (torch._utils._import_dotted_name, numpy.core._ufunc_reconstruct) walked to ctypes and
# libc's creat while an innocent experiment loaded them.
HOSTILE_FILE_MAKER = """
import pickle, sys
import numpy as np
class P:
    def __init__(self, *r): self.r = r
    def __reduce__(self): return self.r
    def __call__(self, *a): pass
if sys.argv[1] == "pt":
    import torch
    from torch._utils import _import_dotted_name as res
    name = lambda m, n: (m + "." + n,)
else:
    from numpy.core import _ufunc_reconstruct as res
    name = lambda m, n: (m, n)
ga = P(res, name("builtins", "getattr"))
libc = P(P(res, name("ctypes", "CDLL")), ("libc.so.6",))
payload = P(P(ga, (libc, "creat")), (b"MARKER", 420))
if sys.argv[1] == "pt":
    torch.save({"state_dict": {}, "extra": payload}, sys.argv[2])
else:
    arr = np.empty(1, dtype=object)
    arr[0] = payload
    np.save(sys.argv[2], arr, allow_pickle=True)
"""


@pytest.mark.parametrize("kind", ["pt", "npy"])
def test_a_hostile_checkpoint_names_no_resolver(tmp_path, kind):
    pytest.importorskip("torch")
    exp = write_exp(tmp_path, """
        import numpy as np, torch
        if %r == "pt":
            ckpt = torch.load("model.pt")
        else:
            ckpt = np.load("data.npy", allow_pickle=True)
        print("accuracy: 1.0")
    """ % kind)
    maker = tmp_path / "maker.py"
    maker.write_text(HOSTILE_FILE_MAKER)
    target = exp / ("model.pt" if kind == "pt" else "data.npy")
    subprocess.run([PYTHON, str(maker), kind, str(target)], check=True, cwd=tmp_path)
    r = run_exp(exp, tmp_path / "runs", "--budget", "120")
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"][1] in ("_import_dotted_name", "_ufunc_reconstruct"), r.why()
    assert r.rc == 1 and not (r.exp / "MARKER").exists(), r.why()


PIPE_NAME_TRICKS = {
    # a name on the reconstruction list, bound to getattr before the pickle is read
    "listed_name_rebound": """
        import collections
        collections.Counter = getattr
        payload = (b"\\x80\\x02ccollections\\nCounter\\nq\\x00h\\x00cbuiltins\\nlen\\n"
                   b"X\\x08\\x00\\x00\\x00__self__\\x86R" b"X\\n\\x00\\x00\\x00__import__\\x86R.")
    """,
    # a module of a class of its own, whose descriptor answers for labbox's getattr
    "module_subclass": """
        import sys, types
        import multiprocessing.reduction as red
        class Mod(types.ModuleType):
            _labbox_getattr = property(lambda self: getattr)
        fake = Mod("multiprocessing.reduction")
        fake.__dict__.update(red.__dict__)
        sys.modules["multiprocessing.reduction"] = fake
        payload = (b"\\x80\\x02cmultiprocessing.reduction\\n_labbox_getattr\\nq\\x00h\\x00"
                   b"cbuiltins\\nlen\\nX\\x08\\x00\\x00\\x00__self__\\x86R"
                   b"X\\n\\x00\\x00\\x00__import__\\x86R.")
    """,
    # pickle's Python 2 renaming, after the find_class event, through tables the
    # experiment can change
    "compat_table": """
        import _compat_pickle
        _compat_pickle.NAME_MAPPING[("collections", "OrderedDict")] = ("builtins", "getattr")
        payload = (b"\\x80\\x02ccollections\\nOrderedDict\\nq\\x00h\\x00cbuiltins\\nlen\\n"
                   b"X\\x08\\x00\\x00\\x00__self__\\x86R" b"X\\n\\x00\\x00\\x00__import__\\x86R.")
    """,
    # ... and a module of the experiment's named as a Python 2 module: its names are
    # builtins' once renamed
    "python2_module_name": """
        open("__builtin__.py", "w").close()
        import __builtin__
        payload = (b"\\x80\\x02c__builtin__\\ngetattr\\nq\\x00h\\x00cbuiltins\\nlen\\n"
                   b"X\\x08\\x00\\x00\\x00__self__\\x86R" b"X\\n\\x00\\x00\\x00__import__\\x86R.")
    """,
    # a module's __getattr__ answering for a name its namespace lacks
    "module_getattr": """
        import collections, builtins
        collections.__getattr__ = lambda n: builtins.__import__
        payload = b"\\x80\\x02ccollections\\nNoSuchName\\n."
    """,
}


@pytest.mark.parametrize("how", sorted(PIPE_NAME_TRICKS))
def test_a_pipe_pickle_gets_what_the_gate_judged(tmp_path, how):
    exp = write_exp(tmp_path, """
        import os
        import multiprocessing as mp
        import numpy as np
        a, b = mp.Pipe()
    """ + PIPE_NAME_TRICKS[how] + """
        a.send_bytes(payload)
        imp = b.recv()
        V = lambda f, *x: np.vectorize(f, otypes=[object])(*[[v] for v in x])[0]
        libc = V(V(imp, "ctypes").CDLL, "libc.so.6")
        V(V(getattr, libc, "creat"), os.path.abspath("MARKER").encode(), 420)
        print("accuracy: 1.0")
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "60")
    # a Python 2 name of getattr reaches labbox's checkpoint getattr, which refuses the
    # dunder; every other name is refused at find_class
    assert_refused(r, "labbox.file_getattr" if how == "python2_module_name"
                   else "pickle.find_class", "gate.pickle")
    assert r.rc == 1 and not (r.exp / "MARKER").exists(), r.why()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_the_experiments_nested_names_cross_a_pool(tmp_path, method):
    """A staticmethod, a nested class and a function taken from a class pickle by dotted
    name (__main__.Model.st): they reach a spawned worker; a static attribute holding a
    function of another module (os.system) does not."""
    exp = write_exp(tmp_path, """
        import multiprocessing as mp, os
        class Model:
            @staticmethod
            def st(x):
                return x + 1
            class Cfg:
                def __init__(self, k=2):
                    self.k = k
            def plain(self):
                return 5
        def cfg_k(c):
            return c.k
        if __name__ == "__main__":
            with mp.get_context(%r).Pool(2) as p:
                print("nested:", p.map(Model.st, [1, 2]), p.map(cfg_k, [Model.Cfg(3)]),
                      p.map(Model.plain, [Model()]))
            Model.evil = staticmethod(os.system)
            a, b = mp.Pipe()
            a.send_bytes(b"\\x80\\x04\\x8c\\x08__main__\\x94\\x8c\\nModel.evil\\x94\\x93\\x94.")
            try:
                b.recv()
            except PermissionError:
                print("refused: 1")
    """ % method)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON, "--budget", "120")
    assert "nested: [2, 3] [3] [5]" in r.log(), r.why()
    assert r.result["metrics"]["values"].get("refused") == 1, r.why()
    ev = assert_refused(r, "pickle.find_class", "gate.pickle")
    assert ev["args"] == ["__main__", "Model.evil"], r.why()


def test_an_autospec_mock_is_accepted(tmp_path):
    """unittest.mock's autospec writes a signature-checking function named after the
    original and execs it from mock.py: a maker of its own text, judged by that name."""
    exp = write_exp(tmp_path, """
        from unittest import mock
        def train(lr, epochs=1):
            return lr * epochs
        m = mock.create_autospec(train, return_value=0.5)
        print("mocked:", m(0.1, epochs=2))
    """)
    r = run_exp(exp, tmp_path / "runs", *GATE_ON)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"].get("mocked") == 0.5, r.why()
    assert refused_events(r) == [], r.why()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_enum_members_cross_a_pool(tmp_path, method):
    """Debian's Python 3.11 pickles an Enum member as getattr(cls, name): multiprocessing
    sends it with labbox's getattr, which gives back the member its class holds; a Flag's
    combination goes by value as before."""
    exp = write_exp(tmp_path, """
        import enum, multiprocessing as mp
        class Color(enum.Enum):
            R = 1
            G = 2
        class Perm(enum.IntFlag):
            A = 1
            B = 2
        def ident(x):
            return x
        if __name__ == "__main__":
            with mp.get_context(%r).Pool(2) as p:
                got = p.map(ident, [Color.R, Color.G]) + p.map(ident, [Perm.A | Perm.B])
            q = mp.Queue()
            q.put(Color.G)
            print("enums:", got == [Color.R, Color.G, Perm.A | Perm.B], q.get() is Color.G)
            print("accuracy: 1.0")
    """ % method)
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on", "--budget", "120")
    assert r.rc == 0 and "enums: True True" in r.log(), r.why()
    assert refused_events(r) == [], r.why()
