# policy: permissive
# verdict: accept
import os
os.system("id")  # expect: LB101
