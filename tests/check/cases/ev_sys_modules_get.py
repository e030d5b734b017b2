# verdict: reject
import sys
sys.modules.get("os").popen("id")  # expect: LB101
