# verdict: reject
import os
os.system("id")  # labbox: allow[LB101] trust me  # expect: LB101,LB003
