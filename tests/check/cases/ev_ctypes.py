# verdict: reject
import ctypes  # expect: LB106
ctypes.CDLL(None).system(b"id")  # expect: LB106
