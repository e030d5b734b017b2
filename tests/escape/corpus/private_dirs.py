"""Read a file the host keeps in /tmp, /var/tmp or /dev/shm, overwrite it, and drop a new one
next to it (a classic way to plant code or poison caches other users' programs pick up)."""
import os

from attack import A, P

A.attempt("read_host_file", lambda: open(P["hostfile"]).read())
A.attempt("overwrite_host_file", lambda: open(P["hostfile"], "w").write("OVERWRITTEN\n"))
A.attempt("create_new_file", lambda: open(P["newfile"], "w").write("PLANTED\n"))
A.attempt("list_dir", lambda: sorted(os.listdir(P["dir"]))[:100])
if P.get("shm_name"):
    def shm():
        from multiprocessing import shared_memory
        m = shared_memory.SharedMemory(name=P["shm_name"])
        data = bytes(m.buf[:64])
        m.buf[:11] = b"OVERWRITTEN"
        m.close()
        return data
    A.attempt("posix_shm", shm)
A.finish(reraise="read_host_file")
