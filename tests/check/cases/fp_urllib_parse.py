# verdict: accept
from urllib.parse import urlparse
print(urlparse("http://example.com/a").path)
