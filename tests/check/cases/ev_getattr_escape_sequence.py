# verdict: reject
import os
getattr(os, "\x73\x79stem")("id")  # expect: LB101
