# verdict: accept
# The random draw is in a helper; the module calls it before seeding (found through two
# levels of calls). A warning under standard, like any random operation before its seed.
import numpy as np


def noise(n):
    return np.random.randn(n)


def make_data():
    return noise(10)


data = make_data()  # expect: LB301
np.random.seed(0)
