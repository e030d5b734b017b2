# policy: strict
# verdict: reject
import random
x = random.random()  # expect: LB302
