import os
import sys
import builtins
import importlib
from os import system as s2
s2("x")
posix = __import__("posix")
posix.system("x")
builtins.eval("1")
__builtins__.exec("x")
__builtins__["eval"]("1")
importlib.import_module("socket").socket()
sys.modules["os"].system("x")
vars(os)["system"]("x")
os.__dict__["popen"]("x")
g = lambda c: os.system(c)
name = "sys" + "tem"
getattr(os, name)("x")
getattr(os, sys.argv[1])("x")
m = __import__(sys.argv[1])
m.anything()
os.system.__call__("x")
import numpy as np
np.os.system("x")
getattr(np, "os").system("y")
class A:
    run = os.system
def f(mod):
    mod.os.system("z")
import operator
operator.attrgetter("system")(os)("x")
operator.methodcaller("system", "ls")(os)
x = "\x73ystem"
getattr(os, x)("q")
getattr(os, "metsys"[::-1])("q")
getattr(os, "".join(["sy", "stem"]))("q")
getattr(os, chr(115) + "ystem")("q")
ｅｖａｌ("1")
from os import *
system("x")
().__class__.__bases__[0].__subclasses__()
globals()["os"].system("x")
