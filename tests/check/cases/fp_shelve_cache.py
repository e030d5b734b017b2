# verdict: accept
# A results cache in a shelf: dbm imports its backends from a fixed list of literal names
# (dbm.gnu, dbm.ndbm, dbm.dumb), which is that set of imports and not an import of anything.
import dbm  # expect: LB201
import shelve  # expect: LB201

with shelve.open("/tmp/cache") as db:  # expect: LB114
    db["loss"] = [0.5, 0.25]
with dbm.open("/tmp/cache2", "c") as kv:
    kv["k"] = "v"
print(dbm.whichdb("/tmp/cache2"))
