# verdict: reject
import sys
mod = __import__(sys.argv[1])  # expect: LB104
mod.anything()  # expect: LB111
