# verdict: reject
# multiprocessing's connection client is a socket to any address.
import multiprocessing.connection as c
c.Client(("127.0.0.1", 9))  # expect: LB105
