# verdict: reject
# operator.attrgetter / methodcaller with a name that is a literal on one path only.
import operator
import os
import sys

a = sys.argv[1] if len(sys.argv) > 1 else "getcwd"
operator.attrgetter(a)(os)("id")  # expect: LB111

if len(sys.argv) > 2:
    b = sys.argv[2]
else:
    b = "getcwd"
operator.methodcaller(b, "id")(os)  # expect: LB111

c = os.environ.get("NAME", "getcwd")
operator.attrgetter(c)(os)("id")  # expect: LB111

for d in ["getcwd", input()]:
    operator.methodcaller(d, "id")(os)  # expect: LB111


def run(e="getcwd"):
    operator.attrgetter(e)(os)("id")  # expect: LB111


run(sys.argv[1])
