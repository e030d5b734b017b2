# verdict: reject
# A star import can bind any builtin's name.
import sys
from helpers_unknown import *  # expect: LB201

len(sys.modules)  # expect: LB111
