# verdict: reject
import sys

exec(open(sys.argv[1]).read() + "\nprint(1)")  # expect: LB103
exec(open(sys.argv[1]).readline())  # expect: LB103
