"""Raw IP, raw IPv6, packet and ping sockets: send an ICMP echo carrying a tag to the loopback,
and listen for the host's frames."""
import socket
import struct

from attack import A, P

tag = P["tag"].encode()


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def echo(typ=8):
    body = struct.pack("!BBHHH", typ, 0, 0, 0x4c42, 1) + tag
    return body[:2] + struct.pack("!H", checksum(body)) + body[4:]


def raw4():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.sendto(echo(), ("127.0.0.1", 0))
    return "sent"


def raw6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    s.sendto(echo(128), ("::1", 0))
    return "sent"


def packet():
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.settimeout(1)
    try:
        return s.recv(2048)[:64]
    except socket.timeout:
        return "no frame"


def ping():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.sendto(echo(), ("127.0.0.1", 0))
    return "sent"


A.attempt("raw_ipv4", raw4)
A.attempt("raw_ipv6", raw6)
A.attempt("packet", packet)
A.attempt("ping", ping)
A.finish()
