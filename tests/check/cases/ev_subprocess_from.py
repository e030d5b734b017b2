# verdict: reject
from subprocess import check_output  # expect: LB102
check_output(["id"])  # expect: LB102
