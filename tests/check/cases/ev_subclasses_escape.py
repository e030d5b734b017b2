# verdict: reject
classes = ().__class__.__bases__[0].__subclasses__()  # expect: LB111
