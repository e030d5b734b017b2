"""Memory outside any process: fill the private /dev/shm (a tmpfs, so RAM) far past the
memory limit. No process's RSS grows."""
from attack import A, P

written = 0


def fill():
    global written
    chunk = b"\xab" * (16 << 20)
    with open("/dev/shm/fill", "wb") as f:
        while written < P["bytes"]:
            f.write(chunk)
            f.flush()
            written += len(chunk)
    return written


A.attempt("fill_dev_shm", fill)
print("written_mb: %d" % (written >> 20), flush=True)
A.finish()
