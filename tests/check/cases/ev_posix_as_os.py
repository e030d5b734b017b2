# verdict: reject
import posix  # expect: LB201
posix.system("id")  # expect: LB101
