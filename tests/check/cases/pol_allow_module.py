# args: --allow-module requests
# verdict: accept
import requests  # expect-suppressed: LB105
