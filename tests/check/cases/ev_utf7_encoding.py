# -*- coding: utf-7 -*-  # expect: LB002
# verdict: reject
x = 1
