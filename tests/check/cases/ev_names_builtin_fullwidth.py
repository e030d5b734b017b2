# verdict: reject
# Python normalises identifiers (NFKC): the fullwidth name binds `len`.
import sys

ｌｅｎ = lambda m: m["os"].system("id")
len(sys.modules)  # expect: LB111
