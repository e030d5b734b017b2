# verdict: reject
# io.FileIO opens like open() does.
import io
io.FileIO("/var/lib/labbox-marker", "w").write(b"x")  # expect: LB110
io.FileIO("/etc/hostname").read()
io.FileIO("out.bin", "wb").write(b"x")
