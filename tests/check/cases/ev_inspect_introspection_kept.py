# verdict: reject
# Reading a signature hands nothing on, but what is passed to it is still judged where it is
# named, and a frame's globals stay out of view however the frame is reached.
import inspect
import os

spec = inspect.getfullargspec(os.system)  # expect: LB101
frame = inspect.currentframe()
frame.f_globals["os"].system("id")  # expect: LB111
