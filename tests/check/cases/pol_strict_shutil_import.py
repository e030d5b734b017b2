# policy: strict
# verdict: reject
import shutil  # expect: LB109
