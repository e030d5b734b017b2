# verdict: accept
# Logging which modules are loaded, counting them, asking for one: only names, counts and
# text are read from the module table, the namespace or the arguments.
import argparse
import json
import os
import sys

print("mods: %d" % len(sys.modules))
print(" ".join(sorted(sys.modules)), file=sys.stderr)
loaded = list(sys.modules.keys())
names = sorted(sys.modules, reverse=True) + list(sys.modules) + list(set(sys.modules))
print(len(tuple(sys.modules)), frozenset(sys.modules) == set(loaded), repr(sys.modules)[:80])
print(str(sys.modules)[:80], format(sys.modules)[:80], f"{sys.modules!r:.80}")
print("%s" % sys.modules)
have_torch = "torch" in sys.modules
for name in sys.modules:
    if name.startswith("torch"):
        print("torch part:", name)
print([k for k in sys.modules if k.startswith("numpy")])
print(len(vars(os)), sorted(vars(os))[:3])
print(len(globals()), sorted(globals()), globals().keys())
words = ["a", "bb"]
print(max(words, key=len), list(map(str, words)))


class Tee:
    def write(self, s):
        sys.stdout.write(s.upper())


print(sys.modules, file=Tee())
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()
print(sorted(vars(args)), json.dumps(vars(args)))
