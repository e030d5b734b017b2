# verdict: reject
from os import *  # expect: LB111
system("id")  # expect: LB101
