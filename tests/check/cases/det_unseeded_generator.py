# verdict: accept
import numpy as np
rng = np.random.default_rng()  # expect: LB303
