# verdict: reject
import os
getattr(os, "metsys"[::-1])("id")  # expect: LB101
