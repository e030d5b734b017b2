# verdict: reject
import os
def helper(m):
    return m
helper(os)  # expect: LB111
