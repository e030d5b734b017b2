# verdict: reject
# The list dbm imports its backends from, changed by the experiment, is an import of any
# module (dbm.open then keeps it in dbm._modules): any use of it is LB104.
import dbm  # expect: LB201
import shelve  # expect: LB201
from dbm import _names  # expect: LB201

dbm._names.append("ctypes")  # expect: LB104
dbm._names[0] = "ctypes"  # expect: LB104
dbm._names = ["ctypes"]  # expect: LB104
setattr(dbm, "_names", ["ctypes"])  # expect: LB104
vars(dbm)["_names"] = ["ctypes"]  # expect: LB104
_names.insert(0, "ctypes")  # expect: LB104
key = input()
setattr(dbm, key, ["ctypes"])  # expect: LB104
dbm.__dict__.update(_names=["ctypes"])  # expect: LB104
with shelve.open("/tmp/x") as db:  # expect: LB114
    pass
