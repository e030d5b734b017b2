import importlib, os, platform, pydoc, signal, sys
mod = importlib.import_module(f"fuzz.{sys.argv[1]}")
mod.Model(4)
other = importlib.import_module("fuzz." + sys.argv[1]).run
third = importlib.import_module("fuzz.nets.%s" % sys.argv[1])
bad = importlib.import_module(f"{sys.argv[1]}.fuzz")
bad.system("x")
j = __import__("json")
k = __import__(sys.argv[1], fromlist=["x"])
list(map(importlib.import_module, ["json"]))
os.kill(os.getpid(), signal.SIGUSR1)
os.kill(os.getppid(), 9)
print(platform.platform())
pydoc.pipepager("t", "cat")
