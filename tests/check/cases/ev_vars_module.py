# verdict: reject
import os
vars(os)["system"]("id")  # expect: LB101
