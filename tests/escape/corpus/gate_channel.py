"""Attack the runtime gate's events channel, the one place outside exp/ the experiment can
write to: first a real refusal (os.system, which the gate records), then try to hide it
(truncate the channel, reopen it truncating, read it back to take the line out, chmod it)
and flood it with BOUND bytes through the descriptor the gate opened (os.write raises no
audit event), bounded so that an unbounded channel fails the test instead of filling the
host's disk. Standalone (attack.py imports ctypes, which the gate refuses under `on`)."""
import json
import os
import stat

with open("params.json") as f:
    P = json.load(f)
CHANNEL = "/run/labbox-gate/events.jsonl"
report = {}


def attempt(name, fn):
    try:
        report[name] = {"ok": True, "value": repr(fn())}
    except Exception as e:
        report[name] = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}


def channel_fd():
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + name) == CHANNEL:
                return int(name)
        except OSError:
            pass
    raise FileNotFoundError(CHANNEL)


attempt("refused_event", lambda: os.system("true"))  # the gate refuses and records it (LB101)
fd = channel_fd()
attempt("kind", lambda: stat.filemode(os.fstat(fd).st_mode))
attempt("ftruncate", lambda: os.ftruncate(fd, 0))
attempt("reopen_truncating", lambda: os.close(os.open(CHANNEL, os.O_WRONLY | os.O_TRUNC)))
attempt("read_back", lambda: os.read(os.open(CHANNEL, os.O_RDONLY | os.O_NONBLOCK), 4096))
attempt("chmod", lambda: os.chmod(CHANNEL, 0o666))
written = 0


def flood():
    global written
    chunk = b"\xff" * (1 << 20)
    while written < P["bound"]:
        written += os.write(fd, chunk)
    return written


attempt("flood", flood)
with open("report.json", "w") as f:
    json.dump(report, f, indent=1)
print("written_mb: %d" % (written >> 20), flush=True)
