# verdict: reject
import os
name = "sys" + "tem"
getattr(os, name)("id")  # expect: LB101
