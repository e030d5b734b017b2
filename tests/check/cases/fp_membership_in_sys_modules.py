# verdict: accept
# Asking whether a library is loaded hands the module table to nothing.
import sys

if "torch" in sys.modules:
    print("torch was imported by a dependency")
have_numpy = "numpy" not in sys.modules
print(have_numpy)
