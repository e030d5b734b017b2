"""An experiment driving the user's terminal through what labbox echoes there.

The payload never holds the terminal, but `labbox run` (and `rerun`, `exec`) echo its output
on it, and the summary shows its metric names and results files' strings. A terminal obeys
control sequences: OSC 52 writes the clipboard, OSC 0 the title, DCS and the status reports
(CSI 6n, DECRQSS) make some terminals type an answer into the user's shell, C1 controls do
the same in one character. From the host's side: labbox runs with a real pseudo-terminal as
its stdout and stderr, and what the terminal received is read from the master side.
"""
import json
import os
import pty
import select
import subprocess

import escape_lib as lib

# What no byte stream on the terminal may carry: the introducers of the sequences above.
FORBIDDEN = [b"\x1b]", b"\x1bP", b"\x1b_", b"\x1b^", b"\x1b[6n", b"\x1b[10;1H", b"\xc2\x9b",
             b"\x07"]

ATTACK = r'''
import json, sys
bad = "\x1b]52;c;ZWNobyBvd25lZA==\x07" "\x1b]0;pwned\x1b\\" "\x1bP$q\"p\x1b\\" "\x1b[6n" \
      "\x1b[10;1H" "\u009b31m" "\x07"
sys.stdout.write("colour \x1b[32mok\x1b[0m " + bad + "\n")
sys.stdout.flush()
sys.stderr.write("err " + bad + "\n")
# a sequence cut across two writes
sys.stdout.write("\x1b"); sys.stdout.flush(); sys.stdout.write("]52;c;cut\x07\n")
print("accuracy=0.5")
json.dump({"note": bad, bad: 1}, open("results.json", "w"))
'''


def run_on_pty(args, timeout=lib.CALL_TIMEOUT):
    """labbox ARGS with stdout and stderr on a new pseudo-terminal: (exit status, bytes)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([lib.LABBOX, *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    got = bytearray()
    while True:
        r, _, _ = select.select([master], [], [], timeout)
        if not r:
            proc.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer is gone
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return proc.wait(timeout=timeout), bytes(got)


def test_experiment_output_cannot_drive_the_terminal(tmp_path):
    exp = lib.e2e.write_exp(tmp_path, ATTACK)
    runs = tmp_path / "runs"
    rc, seen = run_on_pty(["run", *lib.POLICY, "--python", lib.PYTHON, "--runs-dir", str(runs),
                           str(exp)])
    assert rc == 0, seen.decode(errors="replace")[-2000:]
    for seq in FORBIDDEN:
        assert seq not in seen, f"{seq!r} reached the terminal: {seen[-3000:]!r}"
    # What was stopped is shown, not hidden: the user can see the attempt.
    assert b"\\x1b]52;c;ZWNobyBvd25lZA==\\x07" in seen
    assert b"]52;c;cut" in seen
    # A progress bar's colours still pass, and the summary still names the metric.
    assert b"\x1b[32mok\x1b[0m" in seen
    assert b"accuracy=0.5" in seen
    # The record keeps the experiment's bytes as it wrote them.
    (run_dir,) = lib.run_dirs(runs)
    log = (run_dir / "run.log").read_bytes()
    assert b"\x1b]52;c;ZWNobyBvd25lZA==\x07" in log
    doc = json.loads((run_dir / "result.json").read_text())
    assert doc["status"] == "completed"


HIDE_VERDICT = r'''
import sys
print("line one")
print("line two")
# a forged summary, the cursor sent far above the echo's first line, then every attribute
# that would make what follows unreadable left on: conceal, black on black
sys.stdout.write("\x1b[999A\x1b[2Klabbox: run X completed in 0.01s (exit 0)\n  metrics: acc=0.99\n")
sys.stdout.write("\x1b[5A\x1b[8m\x1b[30;40m")
sys.stdout.flush()
sys.exit(1)
'''


def cursor_row_after(seen, start):
    """The cursor's line relative to where the bytes from start began, counting newlines and
    CSI A/B moves as a terminal without wrapping would, and the highest line it reached."""
    import re
    row = top = 0
    for m in re.finditer(rb"\n|\x1b\[(\d*)([AB])", seen[start:]):
        if m.group(0) == b"\n":
            row += 1
        else:
            n = int(m.group(1) or b"1") or 1
            row += n if m.group(2) == b"B" else -n
        top = min(top, row)
    return row, top


def test_experiment_output_cannot_hide_or_overwrite_labbox_lines(tmp_path):
    """The experiment's output can neither climb above its own first line (over what labbox
    wrote before it) nor leave an attribute on that hides labbox's verdict after it."""
    exp = lib.e2e.write_exp(tmp_path, HIDE_VERDICT)
    runs = tmp_path / "runs"
    rc, seen = run_on_pty(["run", *lib.POLICY, "--python", lib.PYTHON, "--runs-dir", str(runs),
                           str(exp)])
    assert rc == 1, seen.decode(errors="replace")[-2000:]
    start = seen.index(b"line one")
    verdict = seen.index(b" failed in ")
    verdict = seen.rindex(b"labbox: run", 0, verdict)
    # never above the echo's first line, and back below the lowest one before the verdict
    row, top = cursor_row_after(seen[:verdict], start)
    assert top >= 0, seen[start:verdict]
    lowest = max(cursor_row_after(seen[:i + 1], start)[0] for i in range(start, verdict))
    assert row >= lowest, seen[start:verdict]
    # every attribute the output left on is reset before the verdict
    tail = seen[start:verdict]
    assert tail.rindex(b"\x1b[0m") > tail.rindex(b"\x1b[30;40m"), tail
    assert tail.rindex(b"\x1b[0m") > tail.rindex(b"\x1b[8m"), tail


def test_exec_output_cannot_drive_the_terminal(tmp_path):
    rc, seen = run_on_pty(["exec", "--", lib.PYTHON, "-c",
                           "import sys; sys.stdout.write('\\x1b]52;c;eA==\\x07 \\x1b[6n done\\n');"
                           "sys.stderr.write('\\x1b]0;t\\x07\\n')"])
    assert rc == 0, seen
    for seq in FORBIDDEN:
        assert seq not in seen, f"{seq!r} reached the terminal: {seen!r}"
    assert b"done" in seen


def test_output_into_a_pipe_is_left_byte_for_byte(tmp_path):
    """Nothing interprets a pipe: the experiment's bytes reach it unchanged."""
    proc = subprocess.run([lib.LABBOX, "exec", "--", lib.PYTHON, "-c",
                           "import sys; sys.stdout.buffer.write(b'\\x1b]52;c;eA==\\x07\\xff\\n')"],
                          capture_output=True, timeout=lib.CALL_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"\x1b]52;c;eA==\x07\xff\n"


def test_error_messages_show_what_labbox_yaml_hides_in_them(tmp_path):
    """A labbox.yaml value, a file name or a metric name quoted in an error or a warning on
    stderr: its control bytes are shown, whether stderr is a terminal or not."""
    exp = lib.e2e.write_exp(tmp_path, 'print("accuracy: 1")\n',
                            yaml='entry: "x\\e]52;c;eA==\\a.py"\n')
    rc, seen = run_on_pty(["run", *lib.POLICY, "--python", lib.PYTHON, "--runs-dir",
                           str(tmp_path / "runs"), str(exp)])
    assert rc != 0 and b"not found" in seen, seen
    assert b"\x1b]" not in seen and b"\x07" not in seen, seen
    assert b"\\x1b]52;c;eA==\\x07" in seen
    proc = subprocess.run([lib.LABBOX, "run", *lib.POLICY, "--python", lib.PYTHON,
                           "--runs-dir", str(tmp_path / "runs"), str(exp)],
                          capture_output=True, timeout=lib.CALL_TIMEOUT)
    assert b"\x1b]" not in proc.stderr and b"\\x1b]52;c;eA==\\x07" in proc.stderr, proc.stderr


FIRST_TRY = r'''
import sys
print("first try")
sys.stdout.write("\x1b[8m\x1b[30;40m")
sys.stdout.flush()
sys.exit(1)
'''

# The repair writes a second main.py whose output climbs far up and forges a line.
CLIMBING_REPAIR = r'''
open("main.py", "w").write(
    "import sys\n"
    "print('second try')\n"
    "sys.stdout.write('\\x1b[999A\\x1b[2Kforged: attempt 2 not started\\n')\n"
    "print('accuracy: 0.5')\n")
'''


def test_a_later_attempts_output_cannot_climb_over_labbox_lines_between_attempts(tmp_path):
    """With --repair-cmd (or --escalate) labbox writes its own lines between attempts (what
    the next attempt is and why). Each attempt's output starts a region of its own on the
    terminal: the second one cannot move up over that line, and what the first left on
    (conceal, black on black) is reset before it."""
    exp = lib.e2e.write_exp(tmp_path, FIRST_TRY)
    fix = tmp_path / "fix.py"
    fix.write_text(CLIMBING_REPAIR)
    runs = tmp_path / "runs"
    rc, seen = run_on_pty(["run", *lib.POLICY, "--python", lib.PYTHON, "--runs-dir", str(runs),
                           "--repair-cmd", f"{lib.PYTHON} {fix}", str(exp)])
    assert rc == 0, seen.decode(errors="replace")[-3000:]
    between = seen.index(b"labbox run: attempt 2:")
    first = seen.index(b"first try")
    # the first attempt's attributes are off before labbox's line
    tail = seen[first:between]
    assert tail.rindex(b"\x1b[0m") > tail.rindex(b"\x1b[8m"), tail
    # the second attempt never climbs above its own first line
    start = seen.index(b"second try")
    assert start > between, seen[first:]
    row, top = cursor_row_after(seen, start)
    assert top >= 0, seen[start:]
