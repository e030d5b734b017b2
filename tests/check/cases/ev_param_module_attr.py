# verdict: reject
def helper(m):
    m.os.system("id")  # expect: LB101
