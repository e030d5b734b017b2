# verdict: reject
# The module itself through sys.modules[__name__] (this file cannot rebind __name__): its
# globals are read as such, anything else done with it is LB111.
import os
import sys

me = sys.modules[__name__]
run = print


def later():
    return sys.modules[__name__].run("x")  # expect: LB111


me.run("ok")
me.system("id")  # expect: LB111
me.run = os.system  # expect: LB111,LB101
setattr(me, "run", print)  # expect: LB111
getattr(me, sys.argv[1])("id")  # expect: LB111
getattr(me, "run")("ok")
print(me)  # expect: LB111
me.__dict__["run"]("ok")
