"""Read a secret from the kernel keyring the sandbox was started from (the session keyring
labbox inherited), by id and by searching for its description."""
import ctypes

from attack import A, P, sys_call

KEYCTL_READ, KEYCTL_SEARCH, KEYCTL_GET_KEYRING_ID = 11, 10, 0


def read(key_id):
    buf = ctypes.create_string_buffer(256)
    n = sys_call("keyctl", KEYCTL_READ, key_id, buf, 256)
    return buf.raw[:n]


def search():
    kid = sys_call("keyctl", KEYCTL_SEARCH, -3, b"user", P["description"].encode(), 0)
    return read(kid)


A.attempt("read_by_id", read, P["key_id"])
A.attempt("search_session", search)
A.attempt("session_keyring_id", sys_call, "keyctl", KEYCTL_GET_KEYRING_ID, -3, 0)
A.attempt("request_key", sys_call, "request_key", b"user", P["description"].encode(), None, 0)
A.finish(reraise="read_by_id")
