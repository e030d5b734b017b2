# verdict: reject
import urllib.request  # expect: LB105
urllib.request.urlopen("http://example.com")  # expect: LB105
