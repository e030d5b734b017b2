"""Flood labbox with output, then print one last metric that must still be collected.

lines:   BYTES of 1 KiB lines
oneline: BYTES without a single newline
names:   NAMES distinct metric names (past any cap), final_metric known from the start
"""
import sys

from attack import P

out = sys.stdout.buffer
mode = P["mode"]
print("final_metric: 0", flush=True)
if mode == "lines":
    block = (b"x" * 1023 + b"\n") * 1024
    for _ in range(P["bytes"] // len(block)):
        out.write(block)
elif mode == "oneline":
    block = b"y" * (1 << 20)
    for _ in range(P["bytes"] // len(block)):
        out.write(block)
    out.write(b"\n")
elif mode == "names":
    for i in range(P["names"]):
        out.write(b"flood_%d: %d\n" % (i, i))
out.flush()
print("final_metric: 42", flush=True)
