"""Netlink: list the network interfaces (rtnetlink) and every TCP socket (sock_diag), and
subscribe to the kernel's device events, to learn about the host's network."""
import socket
import struct

from attack import A, P


def dump(proto, msg_type, payload):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
    s.bind((0, 0))
    s.settimeout(2)
    s.send(struct.pack("=IHHII", 16 + len(payload), msg_type, 0x301, 1, 0) + payload)
    msgs = []
    for _ in range(10000):
        data = s.recv(1 << 16)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if ln < 16 or typ == 3:  # NLMSG_DONE
                return msgs
            if typ == 2:  # NLMSG_ERROR
                err = -struct.unpack_from("=i", data, off + 16)[0]
                raise OSError(err, "netlink error %d" % err)
            msgs.append(data[off + 16:off + ln])
            off += (ln + 3) & ~3
    return msgs


def links():
    names = []
    for m in dump(socket.NETLINK_ROUTE, 18, struct.pack("=BxHiII", 0, 0, 0, 0, 0)):
        off = 16
        while off + 4 <= len(m):
            alen, atype = struct.unpack_from("=HH", m, off)
            if alen < 4:
                break
            if atype == 3:  # IFLA_IFNAME
                names.append(m[off + 4:off + alen].split(b"\0")[0].decode())
            off += (alen + 3) & ~3
    return names


def tcp_ports(family):
    req = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 0xffffffff) + b"\0" * 48
    return sorted({struct.unpack_from(">H", m, 4)[0] for m in dump(4, 20, req)})


def uevents():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)  # NETLINK_KOBJECT_UEVENT
    s.bind((0, 1))
    return "subscribed"


A.attempt("rtnetlink_links", links)
A.attempt("sock_diag_tcp4", tcp_ports, socket.AF_INET)
A.attempt("sock_diag_tcp6", tcp_ports, socket.AF_INET6)
A.attempt("uevent", uevents)
A.finish(reraise=P.get("reraise", True))
