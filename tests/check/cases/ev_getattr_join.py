# verdict: reject
import os
getattr(os, "".join(["sy", "st", "em"]))("id")  # expect: LB101
