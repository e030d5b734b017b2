# policy: strict
# verdict: reject
import os  # expect: LB201
os.makedirs("out", exist_ok=True)  # expect: LB109
print(os.path.join("a", "b"))
