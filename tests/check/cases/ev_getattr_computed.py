# verdict: reject
import os
import sys
getattr(os, sys.argv[1])("id")  # expect: LB111
