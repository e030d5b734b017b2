# verdict: reject
ｅｖａｌ("1 + 1")  # expect: LB103
