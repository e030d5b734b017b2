# verdict: reject
# An item taken from what introspection gives (a frame's or a function's globals) is as far
# out of view as an attribute of it: the module table of the caller, builtins' eval.
import inspect
import sys

frame = inspect.currentframe()
frame.f_globals["sys"].modules["os"].system("id")  # expect: LB111
g = sys._getframe().f_globals  # expect: LB111
(lambda: 0).__globals__["__builtins__"].exec("print(1)")  # expect: LB111
