"""R and Octave have no runtime gate, and the static check cannot read every computed name
(`match.fun(paste0("sys", "tem"))`, Octave's `builtin(["sys" "tem"], ...)`): an experiment
reaches a shell. Under a policy that refuses, the sandbox's exec guard keeps the tree to the
interpreter's own programs, so what the shell is asked to start never runs: a Python that
skips its gate (`python3 -I -S`), a native program the run wrote and execs from a memfd, a
script the run wrote. Each is seen from the host (no marker in the run's exp/) and in the
verdict (the guard's refusal, with its evidence). A plain R or Octave run still completes.
"""
import base64
import json
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from escape_lib import e2e

RSCRIPT = shutil.which("Rscript")
OCTAVE = shutil.which("octave-cli")
LANGS = [pytest.param("r", marks=pytest.mark.skipif(not RSCRIPT, reason="no Rscript")),
         pytest.param("octave", marks=pytest.mark.skipif(not OCTAVE, reason="no octave-cli"))]

# A shell command by a computed name, then a metric: the run would complete if the command
# did nothing the guard refuses.
R_MAIN = """\
f <- match.fun(paste0("sys", "tem"))
{calls}
cat("accuracy: 1\\n")
"""
OCTAVE_MAIN = """\
{calls}
printf("accuracy: 1\\n");
"""

NATIVE = r"""
#include <fcntl.h>
#include <unistd.h>
int main(void)
{
    int fd = open("marker_native", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    write(fd, "native\n", 7);
    return 0;
}
"""

# The red team's loader: the ELF's bytes into a memfd, executed from /proc/self/fd/N.
MEMFD_PY = ("import os,base64;d=base64.b64decode(open('blob.b64').read());"
            "fd=os.memfd_create('x',0);os.write(fd,d);os.execv('/proc/self/fd/%d'%fd,['x'])\n")

SCRIPT = "#!/bin/sh\necho ran > marker_script\n"


def shell_calls(lang, commands):
    if lang == "r":
        return R_MAIN.format(calls="\n".join(f"f({json.dumps(c)})" for c in commands))
    return OCTAVE_MAIN.format(
        calls="\n".join(f"builtin([\"sys\" \"tem\"], {json.dumps(c)});" for c in commands))


def run(tmp_path, lang, main, files=None, policy="standard"):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / ("main.R" if lang == "r" else "main.m")).write_text(main)
    for name, content in (files or {}).items():
        (exp / name).write_text(content)
    exp.chmod(0o777)
    interp = RSCRIPT if lang == "r" else OCTAVE
    t0 = time.monotonic()
    proc = e2e.labbox("run", "--json", "--policy", policy, "--interpreter", interp,
                      "--runs-dir", tmp_path / "runs", exp)
    return e2e.Run(proc, tmp_path / "runs", time.monotonic() - t0)


def assert_refused_by_guard(r, *programs):
    assert r.rc == 1 and r.result["status"] == "failed", r.why()
    f = r.result.get("failure") or {}
    assert f.get("class") == "gate_refused", r.why()
    assert "exec guard" in f.get("summary", ""), r.why()
    evidence = " ".join(f.get("evidence", []))
    for p in programs:
        assert p in evidence, f"the evidence does not name {p!r}\n{r.why()}"
    assert r.result["isolation"]["exec_guard"], r.result["isolation"]


def markers(r):
    return sorted(p.name for p in r.exp.glob("marker*"))


@pytest.mark.parametrize("lang", LANGS)
def test_a_shell_by_a_computed_name_starts_no_python_without_its_gate(tmp_path, lang):
    cmd = "python3 -I -S -c \"open('marker_py', 'w').write('ran')\""
    r = run(tmp_path, lang, shell_calls(lang, [cmd]))
    assert markers(r) == [], r.why()
    assert_refused_by_guard(r, "python3 -I -S")


@pytest.mark.parametrize("lang", LANGS)
def test_native_code_the_run_wrote_does_not_run_from_a_memfd(tmp_path, lang):
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler to build the native program")
    (tmp_path / "n.c").write_text(NATIVE)
    built = subprocess.run([cc, "-static", "-Os", "-o", str(tmp_path / "n"), str(tmp_path / "n.c")],
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"no static C library to build the native program: {built.stderr[-300:]}")
    blob = base64.b64encode((tmp_path / "n").read_bytes()).decode()
    r = run(tmp_path, lang, shell_calls(lang, ["python3 -I -S p.py", "perl -e 1"]),
            files={"blob.b64": blob, "p.py": MEMFD_PY})
    assert markers(r) == [], r.why()
    assert_refused_by_guard(r, "python3 -I -S p.py", "perl -e 1")


@pytest.mark.parametrize("lang", LANGS)
def test_a_script_the_run_wrote_does_not_run(tmp_path, lang):
    # ./s.sh meets the noexec of exp/; sh and bash, run on it, meet the guard
    r = run(tmp_path, lang, shell_calls(lang, ["chmod +x s.sh; ./s.sh", "sh s.sh", "bash s.sh"]),
            files={"s.sh": SCRIPT})
    assert markers(r) == [], r.why()
    assert_refused_by_guard(r, "sh s.sh", "bash s.sh")


R_LEGIT = """\
set.seed(1)
x <- rnorm(100)
d <- tempfile()
writeLines("ok", d)
info <- Sys.info()
cat("accuracy:", round(mean(x > -10), 3), "\\n")
"""
OCTAVE_LEGIT = """\
rand("seed", 1);
x = rand(100, 1);
printf("accuracy: %g\\n", mean(x >= 0));
"""


@pytest.mark.parametrize("lang", LANGS)
def test_a_plain_run_completes_under_the_guard(tmp_path, lang):
    r = run(tmp_path, lang, R_LEGIT if lang == "r" else OCTAVE_LEGIT)
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    assert r.result["metrics"]["values"]["accuracy"] == 1, r.why()
    assert "interpreter" in (r.result["isolation"]["exec_guard"] or ""), r.result["isolation"]



# Java's foreign-function API, from the JVM Octave embeds: the class maps memory writable and
# executable, copies in code (getpid, plus 1000000) and calls it, with no exec at all.
JAVA_NATIVE = r"""
import jdk.incubator.foreign.*;
import java.lang.invoke.*;
public class Nat {
  public static int run() throws Throwable {
    CLinker l = CLinker.getInstance();
    MethodHandle mmap = l.downcallHandle(CLinker.systemLookup().lookup("mmap").get(),
        MethodType.methodType(MemoryAddress.class, MemoryAddress.class, long.class, int.class,
                              int.class, int.class, long.class),
        FunctionDescriptor.of(CLinker.C_POINTER, CLinker.C_POINTER, CLinker.C_LONG,
                              CLinker.C_INT, CLinker.C_INT, CLinker.C_INT, CLinker.C_LONG));
    MemoryAddress p = (MemoryAddress) mmap.invokeExact(MemoryAddress.NULL, 4096L, 7, 0x22, -1, 0L);
    MemorySegment seg = p.asSegment(4096, ResourceScope.globalScope());
    byte[] code = {(byte)0xb8, 39,0,0,0, 0x0f,0x05, 0x05, 0x40,0x42,0x0f,0x00, (byte)0xc3};
    seg.copyFrom(MemorySegment.ofArray(code));
    MethodHandle f = l.downcallHandle(p, MethodType.methodType(int.class),
                                      FunctionDescriptor.of(CLinker.C_INT));
    return (int) f.invokeExact();
  }
}
"""


@pytest.mark.skipif(not OCTAVE, reason="no octave-cli")
def test_octaves_java_runs_no_machine_code_the_run_wrote(tmp_path):
    """Octave embeds a Java VM, reached by a computed name (`builtin(["java" "Method"])`);
    through Java's foreign-function API the run mapped memory writable and executable and
    called bytes it wrote: no exec, no file, no memfd. Under the guard no memory is made
    executable once writable (PR_SET_MDWE), so the code never runs (the JVM, which wants such
    memory for itself, does not start)."""
    jdk = "/usr/lib/jvm/java-17-openjdk-amd64"
    javac = shutil.which("javac", path=jdk + "/bin")
    if not javac or not list(Path(jdk).glob("lib/server/libjvm.so")):
        pytest.skip("no JDK 17 with javac and libjvm.so (Octave's Java)")
    src = tmp_path / "src"
    src.mkdir()
    (src / "Nat.java").write_text(JAVA_NATIVE)
    built = subprocess.run([javac, "--add-modules", "jdk.incubator.foreign", "--release", "17",
                            "-d", str(src), str(src / "Nat.java")], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"javac could not build the class: {built.stderr[-300:]}")
    main = textwrap.dedent(f"""\
        setenv("JAVA_HOME", "{jdk}");
        setenv("JAVA_TOOL_OPTIONS", "--add-modules=jdk.incubator.foreign --enable-native-access=ALL-UNNAMED");
        builtin(["java" "addpath"], pwd);
        r = builtin(["java" "Method"], "run", "Nat");
        printf("native_result: %d\\n", r);
        printf("accuracy: 1\\n");
        """)
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.m").write_text(main)
    shutil.copy(src / "Nat.class", exp / "Nat.class")
    exp.chmod(0o777)
    proc = e2e.labbox("run", "--json", "--policy", "standard", "--interpreter", OCTAVE,
                      "--runs-dir", tmp_path / "runs", exp)
    r = e2e.Run(proc, tmp_path / "runs", 0)
    log = (r.run_dir / "run.log").read_text(errors="replace") if r.run_dir else ""
    values = [int(l.split()[1]) for l in log.splitlines() if l.startswith("native_result: ")]
    assert not [v for v in values if v > 1000000], (values, log[-1500:])
    assert r.result["status"] != "completed", r.why()
    assert "once writable" in (r.result["isolation"]["exec_guard"] or ""), r.result["isolation"]
