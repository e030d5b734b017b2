# args: --deny-call pickle.load
# verdict: reject
import pickle
with open("data.pkl", "rb") as f:
    obj = pickle.load(f)  # expect: LB120,LB114
