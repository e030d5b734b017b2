# verdict: reject
import operator
import os
operator.methodcaller("system", "id")(os)  # expect: LB101
