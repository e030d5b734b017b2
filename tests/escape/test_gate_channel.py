"""The runtime gate's events channel, attacked from inside: the experiment holds a descriptor
to it (os.write raises no audit event) and sees its path. What the host checks: the channel
costs the host's disk nothing however much is written to it, and a refusal the gate recorded
stays in result.json's runtime_gate whatever the experiment does to the channel afterwards."""
import json

from escape_lib import LiveRun, MiB, free_bytes, run_dirs, stage


def test_the_events_channel_cannot_fill_the_disk_or_lose_a_refusal(tmp_path):
    free = free_bytes(str(tmp_path))
    bound = min(512 * MiB, free // 8)
    exp = stage(tmp_path, "gate_channel", {"bound": bound})
    lr = LiveRun(exp, tmp_path / "runs", "--runtime-gate", "on", disk=str(tmp_path))
    r = lr.wait(timeout=300)
    att = json.loads((r.exp / "report.json").read_text())
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    written = int(r.result["metrics"]["values"]["written_mb"]) * MiB
    assert written >= min(bound, 64 * MiB), att  # the flood got through to the channel
    assert lr.min_free >= free - 64 * MiB, (
        f"the experiment wrote {written >> 20} MiB into the gate's events channel and the host's "
        f"disk lost {(free - lr.min_free) >> 20} MiB: the channel is a file on the host's disk "
        f"that no limit bounds")
    g = r.result["runtime_gate"]
    hit = [e for e in g["events"] if e["event"] == "os.system" and e["rule"] == "LB101"]
    assert hit and hit[0]["refused"] is True, (
        f"the gate refused os.system, but runtime_gate does not say so after the experiment "
        f"attacked the channel ({att}): {json.dumps(g)[:1500]}")
    assert g["refused"] >= 1
    # the flood is not silently absorbed: the record says the channel was more than was read
    assert g["channel"] == "read in part", json.dumps(g)[:1500]
    assert not (run_dirs(tmp_path / "runs")[0] / "gate").exists()
