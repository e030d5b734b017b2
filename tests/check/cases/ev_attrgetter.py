# verdict: reject
import operator
import os
operator.attrgetter("system")(os)("id")  # expect: LB101
