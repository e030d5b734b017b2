"""Resolve a name through the C library (resolv.conf points at the host's loopback) and by
hand-made DNS queries over UDP and TCP to a server on the host's loopback."""
import socket
import struct

from attack import A, P

name = P["name"]
qname = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
query = struct.pack(">HHHHHH", 0x4c42, 0x0100, 1, 0, 0, 0) + qname + struct.pack(">HH", 1, 1)


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.connect(("127.0.0.1", P["port"]))
    s.send(query)
    return s.recv(512)


def tcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("127.0.0.1", P["tcp_port"]))
    s.sendall(struct.pack(">H", len(query)) + query)
    return s.recv(512)


A.attempt("getaddrinfo", socket.getaddrinfo, name, 80)
A.attempt("gethostbyname", socket.gethostbyname, "www." + name)
A.attempt("udp_query", udp)
A.attempt("tcp_query", tcp)
A.finish(reraise="getaddrinfo")
