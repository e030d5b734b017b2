"""Fill the private /tmp, /var/tmp and /dev/shm until the disk is full (bounded: BOUND bytes
each, so an unbounded directory cannot take the host's disk or memory)."""
import os

from attack import A, P

chunk = b"\xcd" * (16 << 20)


def fill(d):
    n = 0
    path = os.path.join(d, "fill.bin")
    try:
        with open(path, "wb") as f:
            while n < P["bound"]:
                f.write(chunk)
                f.flush()
                n += len(chunk)
    except OSError:
        A.note(d, n)
        print("%s_mb: %d" % (d.strip("/").replace("/", "_"), n >> 20), flush=True)
        raise
    finally:
        try:
            os.unlink(path)  # give the memory back before the next one
        except OSError:
            pass
    A.note(d, n)
    print("%s_mb: %d" % (d.strip("/").replace("/", "_"), n >> 20), flush=True)
    return n


for d in ("/tmp", "/var/tmp", "/dev/shm"):
    A.attempt("fill " + d, fill, d)
A.finish()
