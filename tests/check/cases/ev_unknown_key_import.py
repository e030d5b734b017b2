# verdict: reject
# An import name that is a literal on one path only is a computed import.
import importlib  # expect: LB201
import sys

a = sys.argv[1] if len(sys.argv) > 1 else "json"
importlib.import_module(a).system("id")  # expect: LB111

if len(sys.argv) > 2:
    b = sys.argv[2]
else:
    b = "json"
__import__(b).system("id")  # expect: LB111

cfg = {}
c = cfg.get("name", "json")
importlib.import_module(c).system("id")  # expect: LB111

for d in ["json", input()]:
    __import__(d).system("id")  # expect: LB111


def run(e="json"):
    importlib.import_module(e).system("id")  # expect: LB111


run(sys.argv[1])
