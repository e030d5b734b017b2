# verdict: reject
__import__("subprocess").run(["id"])  # expect: LB102
