"""No native code of the experiment's, whatever leads a library to it.

With the runtime gate on, the experiment may not load native code (ctypes, an extension
module it wrote): the gate refuses the call in Python. A library can be led to load a shared
object without any such call: OpenSSL's configuration names provider modules, GIO and
GStreamer read module directories, CUDA an injection library. Under the gate the places the
run can write (its exp/, /tmp, /var/tmp, /dev/shm, --tmpfs) are mounted noexec, so the kernel
refuses to map a file from there executable, however the library got there. A staged venv in
the experiment (read-only, pinned) still runs. With the gate off, the run may (the user said
so).
"""
import shutil
import subprocess

import pytest

from escape_lib import IS_ROOT, run_exp, unique

# Each place the run can write: a shared object is written there by the experiment and mapped
# executable, as dlopen maps one; and loaded by OpenSSL through a configuration the
# experiment wrote, with OPENSSL_CONF given on the command line (the user's own -e: still the
# experiment's code that would run).
MAP_EXEC = """
import mmap, os, sys
where = sys.argv[1]
os.makedirs(where, exist_ok=True)
path = os.path.join(where, "blob.so")
with open(path, "wb") as f:
    f.write(b"\\x7fELF" + b"\\0" * 8188)
fd = os.open(path, os.O_RDONLY)
try:
    mmap.mmap(fd, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC, flags=mmap.MAP_PRIVATE)
    print("mapped_exec: 1")
except OSError as e:
    print("mapped_exec: 0")
    print("errno:", e.errno)
"""

EVIL_SO = r"""
#include <stdio.h>
__attribute__((constructor)) static void mark(void)
{
    FILE *f = fopen("MARKER", "w");
    if (f) { fputs("native code of the experiment ran\n", f); fclose(f); }
}
"""

OPENSSL = """
import hashlib, os
print("digest_len:", len(hashlib.sha256(b"x").hexdigest()))
print("marker:", int(os.path.exists("MARKER")))
"""


@pytest.mark.parametrize("where", ["exp", "/tmp/x", "/var/tmp/x", "/dev/shm/x", "/scratch"])
def test_nothing_the_run_wrote_maps_executable(tmp_path, where):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(MAP_EXEC)
    arg = "." if where == "exp" else where
    gated = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on",
                    "--tmpfs", "/scratch", args=[arg])
    assert gated.rc == 0, gated.why()
    assert gated.result["metrics"]["values"]["mapped_exec"] == 0, gated.why()
    assert gated.result["metrics"]["values"]["errno"] == 1, gated.why()  # EPERM
    free = run_exp(exp, tmp_path / "runs", "--runtime-gate", "off",
                   "--tmpfs", "/scratch", args=[arg])
    assert free.rc == 0, free.why()
    assert free.result["metrics"]["values"]["mapped_exec"] == 1, free.why()


def test_a_library_led_to_the_experiments_shared_object_cannot_load_it(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the shared object")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(OPENSSL)
    (tmp_path / "evil.c").write_text(EVIL_SO)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(exp / "evil.so"), str(tmp_path / "evil.c")],
                   check=True)
    runs = tmp_path / "runs"
    conf = unique("ossl") + ".cnf"
    (exp / conf).write_text("openssl_conf = init\n[init]\nproviders = prov\n[prov]\n"
                            "evil = evil_sect\n[evil_sect]\nmodule = ./evil.so\nactivate = 1\n")
    r = run_exp(exp, runs, "--runtime-gate", "on", "-e", f"OPENSSL_CONF={conf}", "-e",
                "OPENSSL_MODULES=.")
    # Whatever OpenSSL then does (it may refuse to start), the constructor never ran.
    assert not (r.exp / "MARKER").exists(), r.why()
    assert r.result["metrics"]["values"].get("marker", 0) == 0, r.why()
    if IS_ROOT:
        # The same with the gate off loads it: the test would see the loading if it happened.
        off = run_exp(exp, runs, "--runtime-gate", "off", "-e", f"OPENSSL_CONF={conf}",
                      "-e", "OPENSSL_MODULES=.")
        assert (off.exp / "MARKER").exists(), off.why()
