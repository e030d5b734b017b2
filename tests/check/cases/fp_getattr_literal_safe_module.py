# verdict: accept
import math
f = getattr(math, "sqrt")
print(f(4.0))
