# verdict: reject
open("../../outside.txt", "a").write("x")  # expect: LB110
