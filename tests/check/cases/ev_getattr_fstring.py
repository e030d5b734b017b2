# verdict: reject
import os
part = "sys"
getattr(os, f"{part}tem")("id")  # expect: LB101
