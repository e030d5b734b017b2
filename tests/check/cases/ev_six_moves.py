# verdict: reject
# six.moves names for the standard library's modules.
from six.moves.urllib.request import urlopen  # expect: LB105
from six.moves import builtins  # expect: LB201
urlopen("http://example.com")  # expect: LB105
builtins.eval("1")  # expect: LB103
