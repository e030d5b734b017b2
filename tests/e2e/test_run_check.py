"""labbox run checks first: rejected code never runs."""
import json
import os

from conftest import labbox, run_exp, write_exp

HOSTILE_CODE = """
open("ran.txt", "w").write("the code ran")
import subprocess as sp
sp.run(["/bin/true"])
print("acc: 1")
"""


def test_rejected_code_is_never_executed(tmp_path):
    exp = write_exp(tmp_path, HOSTILE_CODE)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 3, r.why()
    res = r.result
    assert res["status"] == "rejected" and res["check"]["rejected"] is True
    assert res["check"]["policy"] == "standard"
    ids = {f["id"] for f in res["findings"] if f["rejects"]}
    assert ids, res["findings"]
    assert any(f["name"] and f["name"].startswith("subprocess") for f in res["findings"])
    assert "subprocess" in res["check"]["llm_text"]
    assert not os.path.exists(os.path.join(res["run_dir"], "exp", "ran.txt"))
    assert res["resources"]["cpu_user_s"] == 0
    assert res["metric_issues"] == [] and res["failure"] is None
    manifest = json.load(open(os.path.join(res["run_dir"], "manifest.json")))
    assert manifest["config"]["policy"] == "standard"


def test_policy_permissive_runs_it_and_strict_rejects_more(tmp_path):
    exp = write_exp(tmp_path, HOSTILE_CODE)
    r = run_exp(exp, tmp_path / "runs", "--policy", "permissive")
    assert r.rc == 0, r.why()
    assert r.result["findings"] and r.result["check"]["rejected"] is False
    assert os.path.exists(os.path.join(r.result["run_dir"], "exp", "ran.txt"))
    # ordinary research code: accepted by standard, rejected by the seed's strict list
    exp2 = write_exp(tmp_path / "b", """
        import os, json, random
        random.seed(0)
        os.makedirs("out", exist_ok=True)
        print("acc: %f" % random.random())
        json.dump({"acc": 1}, open("out/r.json", "w"))
    """)
    ok = run_exp(exp2, tmp_path / "runs")
    assert ok.rc == 0, ok.why()
    strict = run_exp(exp2, tmp_path / "runs", "--policy", "strict")
    assert strict.rc == 3 and strict.result["status"] == "rejected"


def test_bad_policy_is_a_usage_error(tmp_path):
    exp = write_exp(tmp_path, "print('a: 1')\n")
    p = labbox("run", "--policy", "lenient", str(exp))
    assert p.returncode == 2
    assert p.stderr.strip() == "labbox run: --policy 'lenient' is not one of strict, standard, permissive"
