"""Reach a server the host runs on its loopback (TCP or UDP, IPv4 or IPv6) and hand it a tag."""
import socket

from attack import A, P

fam = socket.AF_INET6 if ":" in P["host"] else socket.AF_INET
tag = P["tag"].encode()


def tcp():
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((P["host"], P["port"]))
    s.sendall(tag)
    data = s.recv(100)
    s.close()
    return data


def udp():
    # connected, so that an ICMP port-unreachable comes back as ConnectionRefusedError
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.connect((P["host"], P["port"]))
    for _ in range(3):
        s.send(tag)
    data = s.recv(200)
    s.close()
    return data


A.attempt("connect", tcp if P["proto"] == "tcp" else udp)
A.finish()
