"""Gain root through the host's set-user-ID programs: passwd waits for a password, long
enough to read its credentials; su and mount are run too."""
import subprocess
import time

from attack import A


def passwd():
    p = subprocess.Popen(["/usr/bin/passwd"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        for _ in range(100):  # until the exec happened
            try:
                if open("/proc/%d/cmdline" % p.pid).read().startswith("/usr/bin/passwd"):
                    break
            except OSError:
                pass
            time.sleep(0.05)
        time.sleep(1.5)  # the host samples it meanwhile
        if p.poll() is not None:
            raise RuntimeError("passwd exited at once: %r" % p.stdout.read()[:200])
        st = open("/proc/%d/status" % p.pid).read()
        return [int(x) for x in st.split("Uid:")[1].split("\n")[0].split()]
    finally:
        p.kill()
        p.wait()


def prog(*argv):
    p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return [p.returncode, (p.stdout + p.stderr).strip()[:200]]


uids = A.attempt("passwd", passwd)
A.attempt("su", prog, "/usr/bin/su", "-c", "id -u", "root")
A.attempt("mount", prog, "/usr/bin/mount", "-t", "tmpfs", "none", "/tmp")
if uids:
    print("passwd_euid: %d" % uids[1])
A.finish()
