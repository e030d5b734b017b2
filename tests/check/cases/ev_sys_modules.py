# verdict: reject
import sys
sys.modules["os"].system("id")  # expect: LB101
