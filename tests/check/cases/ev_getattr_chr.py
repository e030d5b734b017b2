# verdict: reject
import os
getattr(os, chr(115) + "ystem")("id")  # expect: LB101
