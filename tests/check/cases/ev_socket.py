# verdict: reject
import socket  # expect: LB105
s = socket.socket()  # expect: LB105
