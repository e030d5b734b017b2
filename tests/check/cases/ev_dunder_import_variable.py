# verdict: reject
import sys
mod = __import__(sys.argv[1])  # the import is the gate's to judge; the use cannot be read
mod.anything()  # expect: LB111
