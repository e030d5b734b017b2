# verdict: accept
import numpy as np
np.random.seed(42)
x = np.random.randn(10)
rng = np.random.default_rng(0)
print(x.mean(), rng.normal())
