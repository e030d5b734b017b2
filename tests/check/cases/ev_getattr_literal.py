# verdict: reject
import os
getattr(os, "system")("id")  # expect: LB101
