import os as o
import subprocess as sp
import numpy as sp
sp.zeros(3)
o.system("ls")
f = o.system
f("x")
getattr(o, "sys" + "tem")("ls")
__import__("subprocess").run(["ls"])
model.eval()
import re
re.compile("x")
def eval(x): return x
eval("1")
x = "os.system('ls')"  # os.system in a comment
open("/etc/passwd", "w")
open("out/results.json", "w")
