"""Fill exp/ (the run directory on the host's disk) until the disk is full, bounded by BOUND
bytes so an unlimited exp/ cannot fill the host's disk during the test."""

from attack import A, P

written = 0


def fill():
    global written
    chunk = b"\xef" * (64 << 20)
    with open("fill.bin", "wb") as f:
        while written < P["bound"]:
            f.write(chunk)
            f.flush()
            written += len(chunk)
    return written


A.attempt("fill_exp", fill)
print("written_mb: %d" % (written >> 20), flush=True)
A.finish()
