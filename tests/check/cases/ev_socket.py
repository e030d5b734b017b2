# verdict: reject
import socket  # expect: LB201
s = socket.socket()  # expect: LB105
