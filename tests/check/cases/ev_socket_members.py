# verdict: reject
# `import socket` is no finding of its own: every member that reaches the network is, as is
# the module object handed to what the check cannot follow.
import socket  # expect: LB201
import sys
from socket import create_connection  # expect: LB201

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # expect: LB105
socket.create_connection(("example.org", 80))  # expect: LB105
socket.create_server(("", 8080))  # expect: LB105
a, b = socket.socketpair()  # expect: LB105
socket.fromfd(3, socket.AF_INET, socket.SOCK_STREAM)  # expect: LB105
socket.getaddrinfo("example.org", 80)  # expect: LB105
socket.gethostbyname("example.org")  # expect: LB105
socket.gethostbyname_ex("example.org")  # expect: LB105
socket.gethostbyaddr("127.0.0.1")  # expect: LB105
print(socket.getfqdn())  # expect: LB105
socket.getnameinfo(("127.0.0.1", 80), 0)  # expect: LB105
socket.if_nameindex()  # expect: LB105
create_connection(("example.org", 80))  # expect: LB105
print(socket)  # expect: LB105
getattr(socket, sys.argv[1])  # expect: LB105
getattr(socket, "gethostname" if len(sys.argv) < 2 else sys.argv[1])()  # expect: LB105,LB111
sock = socket
sock.socket()  # expect: LB105
