"""An experiment poisoning the user's labbox cache, which later runs trust on the host.

labbox keeps interpreter probes (which executable an interpreter path is), freezes and check
verdicts in XDG_CACHE_HOME/labbox. A probe entry names the executable that the next run's
freeze starts on the host, so whoever writes the cache chooses what labbox runs outside the
sandbox. The home is hidden in the sandbox, but XDG_CACHE_HOME may point elsewhere (a scratch
file system, as on clusters with small home quotas), and a writable volume may contain it.
From the host's side: the cache entries stay as labbox wrote them, and no forged executable
runs on the host at the next run.
"""
import hashlib
import json
import os
from pathlib import Path

import escape_lib as lib

POISON = r'''
import json, os, stat
cache = os.environ["VOL"] + "/cache/labbox"
seen = []
for root, dirs, files in os.walk(cache):
    seen += [os.path.join(root, f) for f in files]
print("SEEN", json.dumps(seen))
evil = os.environ["VOL"] + "/evil.sh"
open(evil, "w").write("#!/bin/sh\ntouch %s\nexec /usr/bin/python3 \"$@\"\n" % os.environ["MARK"])
os.chmod(evil, 0o755)
forged = 0
for p in seen:
    if os.path.basename(p).startswith("probe-"):
        try:
            doc = json.load(open(p))
            doc["info"]["executable"] = evil
            tmp = p + ".tmp"
            json.dump(doc, open(tmp, "w"))
            os.rename(tmp, p)
            forged += 1
        except OSError as e:
            print("cannot forge", p, e)
print("FORGED", forged)
print("accuracy: 1")
'''


def digest_tree(d: Path):
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def test_a_cache_inside_a_writable_volume_cannot_be_poisoned(tmp_path):
    """The volume at its own path, as `-v /scratch/me:/scratch/me:rw` gives it: a forged probe
    entry naming an executable there was run by the next run's freeze on the host."""
    vol = tmp_path / "vol"
    (vol / "cache").mkdir(parents=True)
    runs = tmp_path / "runs"
    mark = tmp_path / "host-ran-the-forged-executable"
    if lib.IS_ROOT:
        # the payload runs as nobody: a volume it may write to
        os.chmod(tmp_path, 0o755)
        os.chown(vol, lib.PAYLOAD_UID, lib.PAYLOAD_GID)
    env = dict(lib.user_dirs(vol / "cache"), MARK=str(mark))
    exp = lib.e2e.write_exp(tmp_path, 'print("accuracy: 1")\n', name="plain")
    first = lib.run_exp(exp, runs, env=env)
    assert first.rc == 0, first.why()
    cache = vol / "cache" / "labbox"
    before = digest_tree(cache)
    assert any(k.startswith("probe-") or "/probe-" in k for k in before), before

    bad = lib.e2e.write_exp(tmp_path, POISON, name="poison")
    attack = lib.run_exp(bad, runs, "-v", f"{vol}:{vol}:rw", "-e", f"VOL={vol}", "-e", f"MARK={mark}", env=env)
    assert attack.rc == 0, attack.why()
    log = attack.log()
    assert 'SEEN []' in log, log[-2000:]
    after = digest_tree(cache)
    changed = [k for k, v in before.items() if after.get(k) != v]
    assert not changed, f"the experiment rewrote the cache entries {changed}"

    again = lib.run_exp(exp, runs, env=env)
    assert again.rc == 0, again.why()
    assert not mark.exists(), "the next run executed what the experiment planted"
    manifest = json.loads((Path(again.result["run_dir"]) / "manifest.json").read_text())
    assert manifest["interpreter"]["path"] != str(vol / "evil.sh")


GATE_PROBE = r'''
import glob, hashlib
seen = sorted(glob.glob("/run/labbox-gate/py/__pycache__/sitecustomize.*.pyc"))
for p in seen:
    print("PYC", hashlib.sha256(open(p, "rb").read()).hexdigest())
try:
    import subprocess
    subprocess.run(["true"])
    print("SPAWNED")
except PermissionError as e:
    print("REFUSED", e)
print("accuracy: 1")
'''


def gate_cache_entries(cache: Path):
    pycs = sorted(cache.glob("gate-*.pyc"))
    recs = sorted(cache.glob("gate-*.rec"))
    assert len(pycs) == 1 and len(recs) == 1, sorted(p.name for p in cache.iterdir())
    return pycs[0], recs[0]


def test_a_tampered_compiled_gate_in_the_cache_is_not_used(tmp_path):
    """The runtime gate is compiled once per interpreter into a .pyc kept in the user's cache.
    One rewritten there (a gate that installs nothing, with the genuine header, so Python
    itself would take it for the gate's) must not reach the next run: the refusal still
    happens, and what the run loads is a freshly compiled gate, not the planted bytes."""
    cache_home = tmp_path / "cache"
    runs = tmp_path / "runs"
    env = lib.user_dirs(cache_home)
    exp = lib.e2e.write_exp(tmp_path, GATE_PROBE, name="gate-probe")
    opts = ("--policy", "permissive", "--runtime-gate", "on")
    first = lib.run_exp(exp, runs, *opts, env=env)
    assert first.rc == 0, first.why()
    cache = cache_home / "labbox"
    pyc, rec = gate_cache_entries(cache)
    genuine = pyc.read_bytes()
    assert (pyc.stat().st_mode & 0o077) == 0 and (rec.stat().st_mode & 0o077) == 0
    log = first.log()
    # The run loaded the cached bytes (copied into its read-only gate directory) and the gate
    # they hold refused the spawn.
    assert f"PYC {hashlib.sha256(genuine).hexdigest()}" in log, log[-2000:]
    assert "REFUSED" in log and "SPAWNED" not in log, log[-2000:]

    # Same header (magic, checked-hash flag, the source's hash), code that does nothing.
    import marshal
    poison = genuine[:16] + marshal.dumps(compile("", "/run/labbox-gate/py/sitecustomize.py",
                                                  "exec"))
    pyc.write_bytes(poison)
    again = lib.run_exp(exp, runs, *opts, env=env)
    assert again.rc == 0, again.why()
    log = again.log()
    assert "REFUSED" in log and "SPAWNED" not in log, log[-2000:]
    assert f"PYC {hashlib.sha256(poison).hexdigest()}" not in log, log[-2000:]
    g = again.result["runtime_gate"]
    assert any(e["refused"] and e["rule"] == "LB102" for e in g["events"]), g
    # The entry was compiled again: the planted bytes are gone from the cache too.
    assert pyc.read_bytes() != poison
