# verdict: reject
# sys.modules keyed by a name that is a literal on one path only: any loaded module.
import sys

a = sys.argv[1] if len(sys.argv) > 1 else "json"
sys.modules[a].system("id")  # expect: LB111

if len(sys.argv) > 2:
    b = sys.argv[2]
else:
    b = "json"
sys.modules.get(b).system("id")  # expect: LB111

cfg = {}
c = cfg.get("name", "json")
sys.modules[c].system("id")  # expect: LB111

for d in ["json", input()]:
    sys.modules[d].system("id")  # expect: LB111


def run(e="json"):
    sys.modules[e].system("id")  # expect: LB111


run(sys.argv[1])
