# verdict: reject
import runpy  # expect: LB103
runpy.run_path("other.py")  # expect: LB103
