# verdict: reject
import numpy as np
np.os.system("id")  # expect: LB101
