# verdict: reject
import requests  # expect: LB105
requests.get("http://example.com")  # expect: LB105
