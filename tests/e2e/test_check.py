"""`labbox check` against the case corpus in tests/check/ and on experiment directories.

Case format (tests/check/cases/*.py, documented in docs/check.md): header comments
`# verdict: reject|accept` (required), `# policy: NAME`, `# args: FLAGS`, `# harness: yes`;
a finding is expected on a line by a trailing `# expect: LB101[,LB102]` marker, a suppressed
one by `# expect-suppressed: LB108`. The (rule, line) pairs must match exactly: a missing pair
is an evasion that got through, an extra one a false positive.
"""
import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest

from conftest import PYTHON, labbox, write_exp

CASES = Path(__file__).resolve().parents[1] / "check"
MARK = re.compile(r"#\s*expect(-suppressed)?:\s*([A-Z0-9, ]+?)\s*(?:#|$)")


def parse_case(path: Path):
    meta = {"policy": "standard", "args": [], "harness": False, "verdict": None}
    expect, suppressed = set(), set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        head = re.match(r"#\s*(verdict|policy|args|harness):\s*(.*?)\s*$", line)
        if head:
            k, v = head.groups()
            meta[k] = shlex.split(v) if k == "args" else (v == "yes" if k == "harness" else v)
        for m in MARK.finditer(line):
            target = suppressed if m.group(1) else expect
            for rid in m.group(2).replace(" ", "").split(","):
                if rid:
                    target.add((rid, lineno))
    assert meta["verdict"] in ("reject", "accept"), f"{path.name}: no `# verdict:` header"
    return meta, expect, suppressed


def check_json(*args, cwd=None):
    p = labbox("check", "--json", *args, cwd=cwd)
    assert p.returncode in (0, 3), f"rc={p.returncode}\nstderr:\n{p.stderr}\nstdout:\n{p.stdout[-2000:]}"
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.check/1"
    return p, doc


CASE_FILES = sorted((CASES / "cases").glob("*.py"))


def test_corpus_is_large_enough():
    assert len(CASE_FILES) >= 60
    kinds = {p.name.split("_")[0] for p in CASE_FILES}
    assert {"ev", "fp"} <= kinds


@pytest.mark.parametrize("case", CASE_FILES, ids=lambda p: p.stem)
def test_case(case):
    meta, expect, suppressed = parse_case(case)
    args = ["--policy", meta["policy"], "--ignore", "budget", *meta["args"]]
    if not meta["harness"]:
        args += ["--ignore", "harness"]
    p, doc = check_json(*args, str(case))
    got = {(f["id"], f["line"]) for f in doc["findings"] if not f["suppressed"]}
    got_sup = {(f["id"], f["line"]) for f in doc["findings"] if f["suppressed"]}
    assert got == expect, (f"missing: {sorted(expect - got)} extra: {sorted(got - expect)}\n"
                           + "\n".join(f"{f['line']}:{f['col']} {f['id']} {f['message']}"
                                       for f in doc["findings"]))
    assert got_sup == suppressed
    assert doc["rejected"] == (meta["verdict"] == "reject")
    assert p.returncode == (3 if meta["verdict"] == "reject" else 0)


RESEARCH = sorted((CASES / "research").glob("*.py"))


@pytest.mark.parametrize("script", RESEARCH, ids=lambda p: p.stem)
def test_research_templates_pass_standard_cleanly(script):
    """AI-Scientist-style experiments: accepted, and with every harness rule satisfied."""
    p, doc = check_json(str(script))
    assert p.returncode == 0, doc["llm_text"]
    assert doc["findings"] == [], doc["llm_text"]


def test_research_templates_exist():
    assert len(RESEARCH) >= 3


def test_compiler_style_text_and_summary(tmp_path):
    f = tmp_path / "main.py"
    f.write_text("import os as o\no.system('id')\n")
    p = labbox("check", "--ignore", "harness", str(f))
    assert p.returncode == 3
    lines = p.stdout.strip().splitlines()
    assert lines[0] == f"{f}:2:1: error[LB101]: call of `os.system`: process creation or signalling"
    assert lines[-1].startswith("labbox check: 1 file, 1 error, 0 warnings")
    assert lines[-1].endswith("rejected under policy standard")


def test_json_fields_and_llm_text(tmp_path):
    f = tmp_path / "main.py"
    f.write_text("import subprocess\nsubprocess.run(['id'])\n")
    p, doc = check_json("--ignore", "harness", str(f))
    assert p.returncode == 3
    for finding in doc["findings"]:
        assert {"id", "severity", "category", "message", "line", "col", "name"} <= finding.keys()
    assert {f["name"] for f in doc["findings"]} == {"subprocess", "subprocess.run"}
    assert "REJECTED" in doc["llm_text"] and "LB102" in doc["llm_text"]
    assert "Fix:" in doc["llm_text"]
    # human summary goes to stderr with --json
    assert "rejected under policy standard" in p.stderr
    # a rule's fix hint follows its first finding; its later ones point back to it
    f.write_text("import os\nos.system('a')\nos.system('b')\nos.popen('c')\n")
    p, doc = check_json("--ignore", "harness", str(f))
    blocking = [l for l in doc["llm_text"].splitlines() if "[LB101]" in l]
    assert len(blocking) == 3, doc["llm_text"]
    hint = blocking[0].split(". Fix: ", 1)[1]
    assert "process" in hint and "as for" not in hint, blocking
    assert all(l.endswith(". Fix: as for LB101 above.") for l in blocking[1:]), blocking


def test_usage_errors_exit_2(tmp_path):
    assert labbox("check").returncode == 2
    assert labbox("check", "--policy", "lax", str(tmp_path)).returncode == 2
    assert labbox("check", str(tmp_path / "missing.py")).returncode == 2
    assert labbox("check", "--bogus", str(tmp_path)).returncode == 2
    assert labbox("check", "--ignore", "LB999", str(tmp_path)).returncode == 2
    assert labbox("check", "--runtime-gate", "maybe", str(tmp_path)).returncode == 2
    # a directory without Python files (a wrong path, say) is not clean code
    (tmp_path / "empty" / ".venv").mkdir(parents=True)
    (tmp_path / "empty" / ".venv" / "x.py").write_text("import os\nos.system('x')\n")
    p = labbox("check", str(tmp_path / "empty"))
    assert p.returncode == 2 and "no Python files" in p.stderr, p.stderr
    h = labbox("check", "--help")
    assert h.returncode == 0
    for flag in ("--policy", "--python", "--config", "--entry", "--allow-module", "--allow-call",
                 "--deny-module", "--deny-call", "--output-path", "--ignore", "--trust-project",
                 "--list-rules", "--json", "--runtime-gate"):
        assert flag in h.stdout


def test_directory_uses_labbox_yaml_and_entry(tmp_path):
    exp = write_exp(tmp_path, """
        import helper
        import numpy as np
        print(np.zeros(2))
        """, yaml="""
        budget: 100
        plan: {conditions: 8, seeds: 1, iterations: 100}
        check:
          deny: {modules: [pickle]}
        """, files={"helper.py": "import pickle\n", "sub/__init__.py": ""})
    p, doc = check_json(str(exp))
    ids = {(f["file"], f["id"]) for f in doc["findings"]}
    assert ("helper.py", "LB120") in ids          # the project's deny list applies
    assert ("labbox.yaml", "LB501") in ids        # 8 conditions do not fit in 100 s
    assert ("main.py", "LB401") in ids            # harness rules on the entry point only
    assert not any(f["file"] == "helper.py" and f["category"] == "harness" for f in doc["findings"])
    assert not any(f["id"] == "LB201" for f in doc["findings"])  # `import helper` is local
    assert doc["files"] == 3
    assert p.returncode == 3


def test_project_cannot_lift_the_hard_gate_without_trust(tmp_path):
    exp = write_exp(tmp_path, "import subprocess\n", yaml="""
        check:
          allow: {modules: [subprocess]}
          policy: permissive
        """)
    p, doc = check_json("--ignore", "harness", str(exp))
    assert p.returncode == 3 and doc["policy"] == "standard"
    p, doc = check_json("--ignore", "harness", "--trust-project", str(exp))
    assert p.returncode == 0
    assert all(f["suppressed"] for f in doc["findings"] if f["id"] == "LB102")


def test_syntax_error_from_the_target_interpreter(tmp_path):
    f = tmp_path / "main.py"
    # valid for tree-sitter's grammar, but not for Python 3.11 (PEP 695 needs 3.12)
    f.write_text("type Vector = list[float]\n")
    p, doc = check_json("--ignore", "harness", "--python", PYTHON, str(f))
    import sys
    if sys.version_info < (3, 12):
        assert p.returncode == 3
        assert [x["id"] for x in doc["findings"]] == ["LB001"]
        assert doc["syntax_checked_by"].startswith("python 3.")
    g = tmp_path / "bad.py"
    g.write_text("def f(:\n    pass\n")
    p, doc = check_json("--ignore", "harness", "--python", PYTHON, str(g))
    assert p.returncode == 3
    assert doc["findings"][0]["id"] == "LB001" and "SyntaxError" in doc["findings"][0]["message"]
    p, doc = check_json("--ignore", "harness", str(g))
    assert doc["findings"][0]["id"] == "LB001" and doc["syntax_checked_by"] == "tree-sitter"


def test_list_rules():
    p = labbox("check", "--list-rules")
    assert p.returncode == 0
    ids = [line.split()[0] for line in p.stdout.splitlines()]
    assert "LB101" in ids and "LB404" in ids and len(ids) == len(set(ids))


def test_needs_are_listed_before_the_summary_and_reject_nothing(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(
        "import torch\n"
        "from huggingface_hub import hf_hub_download\n"
        "w = hf_hub_download('org/model', 'weights.bin')\n"
        "x = torch.zeros(2).cuda()\n"
        "print('accuracy: 1')\n")
    p = labbox("check", "--ignore", "harness", exp)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert "main.py:3: need[network]: --network host (huggingface_hub.hf_hub_download)" in lines
    assert "main.py:4: need[gpu]: --gpus all (.cuda())" in lines
    assert lines[-1].startswith("labbox check: 1 file")


def test_module_names_read_in_one_module_and_its_len_rebound_from_another(tmp_path):
    """len(sys.modules) in the experiment's helper reads names only while `len` there is the
    builtin; another module of the experiment setting helper.len (or setattr with a computed
    name) makes it a function that gets the module table, and is refused where it does so."""
    helper = ("import sys\n\n\ndef loaded():\n"
              "    print(\"mods: %d\" % len(sys.modules))\n"
              "    return sorted(sys.modules)\n")
    d = write_exp(tmp_path, "import helper\n\nprint(len(helper.loaded()))\n",
                  files={"helper.py": helper})
    p, doc = check_json("--ignore", "harness", "--ignore", "budget", str(d))
    assert p.returncode == 0, doc["llm_text"]
    assert doc["findings"] == []
    d2 = write_exp(tmp_path, """
        import sys
        import helper

        helper.len = lambda m: m["os"].system("id")
        setattr(helper, sys.argv[1], print)
        helper.value = 3
        helper.__dict__.update(sorted=print)
        helper.loaded()
        """, files={"helper.py": helper}, name="exp2")
    p, doc = check_json("--ignore", "harness", "--ignore", "budget", str(d2))
    assert p.returncode == 3
    got = sorted((f["file"].split("/")[-1], f["line"], f["id"]) for f in doc["findings"])
    assert got == [("main.py", 4, "LB111"), ("main.py", 5, "LB111"),
                   ("main.py", 7, "LB111")], doc["llm_text"]


def test_sys_modules_name_is_the_module_unless_the_table_or_its_name_is_changed(tmp_path):
    """`d2l = sys.modules[__name__]` at module level is the module itself (d2l/torch.py), so
    `d2l.X` is its global X. That holds only while no module of the experiment stores into
    the module table under one of the experiment's names (or a computed one, or __main__) and
    none sets another's __name__: those are LB111 where they are done. A module imported by
    this one before the line may be handed the half-imported module and rename it through a
    parameter, out of view: then the line is not read as the module."""
    helper = ("import sys\n\nd2l = sys.modules[__name__]\n\n\n"
              "def run():\n    return d2l.scale(3)\n\n\nscale = abs\n")
    d = write_exp(tmp_path, "import sys\nimport types\nimport pkg.torch\nimport helper\n\n"
                  "sys.modules[\"wandb\"] = types.ModuleType(\"wandb\")\n"
                  "print(helper.run(), pkg.torch.run())\n",
                  files={"helper.py": helper, "pkg/__init__.py": "", "pkg/torch.py": helper})
    p, doc = check_json("--ignore", "harness", "--ignore", "budget", str(d))
    assert p.returncode == 0, doc["llm_text"]
    assert doc["findings"] == []
    evil = """
        import sys
        import tempfile
        import types
        import helper

        sys.modules["helper"] = tempfile
        sys.modules.update({"helper": tempfile})
        helper.__name__ = "os"
        helper.__init__("os")
        object.__setattr__(helper, "__name__", "os")
        types.ModuleType.__init__(helper, "os")
        setattr(helper, "__name__", "os")
        delattr(helper, "__name__")
        helper.__dict__.pop("__name__")
        """
    d2 = write_exp(tmp_path, "import evil\nimport helper\n\nhelper.run()\n",
                   files={"helper.py": helper, "evil.py": textwrap.dedent(evil).lstrip("\n")},
                   name="exp2")
    p, doc = check_json("--ignore", "harness", "--ignore", "budget", str(d2))
    assert p.returncode == 3
    got = sorted((f["file"].split("/")[-1], f["line"], f["id"]) for f in doc["findings"])
    assert got == [("evil.py", n, "LB111") for n in range(6, 15)], doc["llm_text"]
    early = helper.replace("import sys\n", "import sys\nimport evil\n")
    renamer = "import sys\n\n\ndef rename(m):\n    m.__name__ = \"os\"\n\n\nrename(sys.modules[\"helper\"])\n"
    d3 = write_exp(tmp_path, "import helper\n\nhelper.run()\n",
                   files={"helper.py": early, "evil.py": renamer}, name="exp3")
    p, doc = check_json("--ignore", "harness", "--ignore", "budget", str(d3))
    assert p.returncode == 3
    got = sorted((f["file"].split("/")[-1], f["line"], f["id"]) for f in doc["findings"])
    assert got == [("helper.py", 8, "LB111")], doc["llm_text"]


def test_a_registry_import_by_config_name_is_the_experiments_own(tmp_path):
    """importlib.import_module(f"models.{args.model}"): the computed name stays inside the
    experiment's own package, so what it gives is the experiment's code, which the check
    reads (the gate judges the import where it happens); a prefix that is not the
    experiment's package, or none, leaves the use unreadable (LB111)."""
    exp = tmp_path / "exp"
    (exp / "models").mkdir(parents=True)
    (exp / "models" / "__init__.py").write_text("")
    (exp / "models" / "mlp.py").write_text(
        "class Model:\n    def __init__(self, n):\n        self.n = n\n"
        "    def forward(self, x):\n        return self.n * x\n")

    def errors(*lines):
        (exp / "main.py").write_text("".join(line + "\n" for line in lines))
        p, doc = check_json("--ignore", "harness", str(exp))
        return p.returncode, {(f["id"], f["line"]) for f in doc["findings"]
                              if f["severity"] == "error"}

    assert errors("import argparse, importlib, sys",
                  "p = argparse.ArgumentParser()",
                  "p.add_argument('--model', default='mlp')",
                  "args = p.parse_args()",
                  "mod = importlib.import_module(f'models.{args.model}')",
                  "net = mod.Model(4)",
                  "other = importlib.import_module('models.' + args.model).Model",
                  "own = __import__('models')",
                  "print(f'out: {net.forward(2)}')") == (0, set())
    assert errors("import importlib, sys",
                  "mod = importlib.import_module(f'os{sys.argv[1]}')",
                  "mod.system('id')",
                  "top = importlib.import_module(f'{sys.argv[1]}.models')",
                  "top.run()") == (3, {("LB111", 3), ("LB111", 5)})


def test_a_library_seeded_in_another_file_is_seeded(tmp_path):
    """LB302 ("torch is never seeded") was said of a model module whose torch.randn runs after
    main.py's torch.manual_seed: a file cannot see the others. It is said only when no file
    of the experiment seeds that library."""
    exp = tmp_path / "exp"
    (exp / "models").mkdir(parents=True)
    (exp / "models" / "net.py").write_text("import torch\ndef make():\n    return torch.randn(3)\n")
    (exp / "main.py").write_text("import torch\nfrom models.net import make\n"
                                 "torch.manual_seed(0)\nprint(make())\n")
    p, doc = check_json("--ignore", "harness", str(exp))
    assert not [f for f in doc["findings"] if f["id"] == "LB302"], doc["findings"]
    assert doc["counts"]["warning"] == 0, doc["counts"]
    (exp / "main.py").write_text("from models.net import make\nprint(make())\n")
    p, doc = check_json("--ignore", "harness", str(exp))
    assert [(f["file"], f["line"]) for f in doc["findings"] if f["id"] == "LB302"] == [
        ("models/net.py", 3)], doc["findings"]


def test_gpu_uses_under_a_device_test_are_optional_needs(tmp_path):
    """Code that runs on CPU and GPU alike (makemore's `if args.device.startswith('cuda'):
    torch.cuda.synchronize()`) needs no GPU: a pipeline reading `needs` must not reserve one
    for it. A use the code always reaches stays a certain need."""
    d = write_exp(tmp_path, """
        import argparse, torch
        p = argparse.ArgumentParser(); p.add_argument("--device", default="cpu"); a = p.parse_args()
        model = torch.nn.Linear(2, 2)
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()
        if torch.cuda.is_available():
            model = model.cuda()
        elif a.device == "cpu":
            pass
        else:
            model = model.to("cuda:0")
        amp = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
        x = torch.zeros(2).cuda() if a.device != "cpu" else torch.zeros(2)
        use_gpu = torch.cuda.device_count() > 0
        use_gpu and torch.cuda.empty_cache()
        y = torch.ones(2, device="cuda" if use_gpu else "cpu")
        model = model.cuda()
        torch.cuda.synchronize()
        z = torch.ones(2, device="cuda")
        print("ok: 1")
        """)
    p, doc = check_json("--ignore", "harness", "--ignore", "budget", str(d))
    gpu = {n["evidence"]["line"]: n["optional"] for n in doc["needs"] if n["kind"] == "gpu"}
    src = [l.strip() for l in (d / "main.py").read_text().splitlines()]
    shown = {k: (src[k - 1], v) for k, v in sorted(gpu.items())}
    for line in ("torch.cuda.synchronize()", "model = model.cuda()", 'model = model.to("cuda:0")',
                 "amp = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())",
                 'x = torch.zeros(2).cuda() if a.device != "cpu" else torch.zeros(2)',
                 "use_gpu and torch.cuda.empty_cache()",
                 'y = torch.ones(2, device="cuda" if use_gpu else "cpu")'):
        k = src.index(line) + 1  # the first, guarded, one
        assert gpu.get(k, True) is True, (line, shown)
    # the same calls written unguarded at the end of the file are what needs a GPU
    last = len(src)
    assert [gpu.get(k) for k in (last - 3, last - 2, last - 1)] == [False] * 3, shown


def test_a_labbox_yaml_run_would_refuse_is_no_accepted_directory(tmp_path):
    # `check` before `run` answers what the run will: a misspelled key is exit 2 in both.
    exp = write_exp(tmp_path, 'print("acc: 1")\n', yaml="budgett: 10\n")
    c = labbox("check", "--json", str(exp), cwd=tmp_path)
    assert c.returncode == 2, (c.returncode, c.stdout, c.stderr)
    err = json.loads(c.stdout)
    assert err["schema"] == "labbox.error/1"
    assert "labbox.yaml line 1" in err["error"]["message"]
    assert "unknown key 'budgett'" in err["error"]["message"]
    r = labbox("run", "-q", "--python", PYTHON, str(exp), cwd=tmp_path)
    assert r.returncode == 2 and "unknown key 'budgett'" in r.stderr


def test_a_tree_with_no_entry_point_is_checked_as_code_and_says_run_would_refuse_it(tmp_path):
    # a tree of code (as Bandit checks one) names no entry point and has no main.py: its code
    # is checked and answered, and check says beside the answer that run would refuse it
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "train.py").write_text('import os\nos.system("ls")\nprint("acc: 1")\n')
    r = labbox("run", "-q", "--python", PYTHON, str(exp), cwd=tmp_path)
    assert r.returncode == 2 and "entry point 'main.py' not found in" in r.stderr, r.stderr
    c = labbox("check", "--json", str(exp), cwd=tmp_path)
    doc = json.loads(c.stdout)
    assert doc.get("schema") != "labbox.error/1", doc
    assert any(f["file"] == "train.py" for f in doc["findings"]), doc["findings"]
    assert "no entry point (main.py): labbox run would refuse it" in c.stderr, c.stderr


@pytest.mark.parametrize("files, yaml, args, says", [
    # labbox.yaml's entry: names a file that is not there (a typo)
    ({"train.py": 'print("acc: 1")\n'}, "entry: trian.py\n", [], "entry point 'trian.py' not found in"),
    # --entry names a file that is not there
    ({"main.py": 'print("acc: 1")\n'}, None, ["--entry", "nonexist.py"],
     "entry point 'nonexist.py' not found in"),
    # a backend this labbox does not have
    ({"main.py": 'print("acc: 1")\n'}, "mode: dokcer\n", [],
     "labbox.yaml's mode: 'dokcer' is not a backend of this labbox"),
    # an entry point that is a directory
    ({"main.py/x.py": 'print("acc: 1")\n'}, None, [], "entry point 'main.py' in"),
    # a language labbox.yaml names that the entry point is not written in
    ({"main.py": 'print("acc: 1")\n'}, "language: r\n", [], "is not a r file"),
])
def test_check_refuses_a_directory_run_refuses_in_runs_words(tmp_path, files, yaml, args, says):
    # `check` is the pre-flight: a directory `run` stops with a configuration error (exit 2)
    # is that error in check too, never "accepted"
    exp = tmp_path / "exp"
    for name, text in files.items():
        (exp / name).parent.mkdir(parents=True, exist_ok=True)
        (exp / name).write_text(text)
    if yaml:
        (exp / "labbox.yaml").write_text(yaml)
    r = labbox("run", "-q", "--python", PYTHON, *args, str(exp), cwd=tmp_path)
    assert r.returncode == 2 and says in r.stderr, (r.returncode, r.stderr)
    run_msg = r.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    c = labbox("check", *args, str(exp), cwd=tmp_path)
    assert c.returncode == 2, (c.returncode, c.stdout, c.stderr)
    assert run_msg in c.stderr, (run_msg, c.stderr)
    c = labbox("check", "--json", *args, str(exp), cwd=tmp_path)
    assert c.returncode == 2, (c.returncode, c.stdout, c.stderr)
    err = json.loads(c.stdout)
    assert err["schema"] == "labbox.error/1" and says in err["error"]["message"], err
    assert not (exp / ".labbox").exists() or not any((exp / ".labbox" / "runs").iterdir())
