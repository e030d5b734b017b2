"""Man pages and completions generated from --help (scripts/manpages), and `make install
PREFIX=` with the library, headers and labbox.pc a C program links against."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import LABBOX, REPO


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("man")
    subprocess.run(["/usr/bin/python3", str(REPO / "scripts" / "manpages"), LABBOX, str(out)],
                   check=True, timeout=120)
    return out


COMMANDS = ["run", "exec", "check", "probe", "runs", "rerun", "mcp", "report"]


def help_of(*cmd):
    return subprocess.run([LABBOX, *cmd, "--help"], capture_output=True, text=True,
                          timeout=60).stdout


def test_a_page_per_command_with_every_option_of_its_help(generated):
    assert (generated / "man1" / "labbox.1").exists()
    for c in COMMANDS:
        page = (generated / "man1" / f"labbox-{c}.1").read_text()
        assert page.startswith(f'.TH "LABBOX-{c.upper()}" 1')
        for opt in set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_of(c))):
            assert opt.replace("-", "\\-") in page, (c, opt)


def test_pages_render(generated):
    if not shutil.which("man"):
        pytest.skip("man is not installed")
    p = subprocess.run(["man", "-l", str(generated / "man1" / "labbox-mcp.1")],
                       capture_output=True, text=True, env=dict(os.environ, MANWIDTH="80"),
                       timeout=60)
    assert p.returncode == 0 and "--max-budget" in p.stdout and "SYNOPSIS" in p.stdout


def test_bash_completion(generated):
    script = generated / "completions" / "labbox.bash"

    def complete(*words):
        p = subprocess.run(["bash", "-c", f'source "{script}"; COMP_WORDS=({" ".join(words)}); '
                            f'COMP_CWORD={len(words) - 1}; _labbox; echo "${{COMPREPLY[@]}}"'],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()
    assert complete("labbox", "r") == ["run", "runs", "rerun", "report"]
    assert complete("labbox", "report", "--f") == ["--format"]
    assert complete("labbox", "mcp", "--max") == ["--max-budget", "--max-memory"]
    assert "--budget" in complete("labbox", "run", "--bu")
    assert complete("labbox", "runs", "s") == ["show"]
    zsh = (generated / "completions" / "_labbox").read_text()
    assert zsh.startswith("#compdef labbox") and "--max-memory" in zsh


def test_make_install_and_link_a_c_program(tmp_path):
    build = REPO / "build"
    # The plain build's install: not the sanitizer build that `make SAN=1 check` passes down
    # to its children through MAKEFLAGS.
    menv = {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "SAN")}
    up_to_date = subprocess.run(["make", "-q", "-C", str(REPO), "build/labbox",
                                 "build/liblabbox.a"], capture_output=True,
                                env=menv).returncode == 0
    if not up_to_date or not os.access(build, os.W_OK) or not shutil.which("pkg-config"):
        pytest.skip("needs an up-to-date, writable build/ of this checkout and pkg-config")
    prefix = tmp_path / "prefix"
    p = subprocess.run(["make", "-C", str(REPO), "install", f"PREFIX={prefix}"],
                       capture_output=True, text=True, timeout=600, env=menv)
    assert p.returncode == 0, p.stdout + p.stderr
    for f in ["bin/labbox", "lib/liblabbox.a", "include/labbox/run.h", "include/labbox/mcp.h",
              "lib/pkgconfig/labbox.pc", "share/man/man1/labbox-run.1",
              "share/bash-completion/completions/labbox", "share/zsh/site-functions/_labbox"]:
        assert (prefix / f).exists(), f
    src = tmp_path / "prog.c"
    src.write_text('#include <labbox/util.h>\n#include <stdio.h>\nint main(void) {\n'
                   '  uint64_t n = 0;\n  if (lb_parse_size("4g", &n) < 0) return 1;\n'
                   '  printf("%llu\\n", (unsigned long long)n);\n  return 0;\n}\n')
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "--static", "labbox"],
                           capture_output=True, text=True, env=env, check=True).stdout.split()
    subprocess.run(["cc", "-o", str(tmp_path / "prog"), str(src), *flags], check=True, timeout=120)
    out = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(4 << 30)
