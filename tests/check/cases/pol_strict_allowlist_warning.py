# policy: strict
# verdict: accept
import numpy as np  # seed list
import json
import argparse  # expect: LB201
np.random.seed(1)
