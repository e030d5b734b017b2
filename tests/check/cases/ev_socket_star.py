# verdict: reject
# A star import of socket brings names the check cannot tell apart.
from socket import *  # expect: LB201,LB105
