# verdict: accept
import numpy as np
x = np.random.rand(3)  # expect: LB301
np.random.seed(0)
