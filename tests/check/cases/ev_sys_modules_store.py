# verdict: reject
# Stores into the module table under a name the check cannot tell apart from this module's
# own (__name__'s value, a computed name, "__main__"): `import helper` elsewhere, or this
# module's sys.modules[__name__], would then give another module. A shim under the written-out
# name of a module that is not the experiment's stays quiet, and so does a removal (the next
# import loads the module again from its file).
import sys
import tempfile
import types

stub = types.ModuleType("wandb")
sys.modules["wandb"] = stub
sys.modules.setdefault("wandb", stub)
del sys.modules["wandb"]
del sys.modules[__name__]

sys.modules[__name__] = tempfile  # expect: LB111
sys.modules["__main__"] = tempfile  # expect: LB111
sys.modules[sys.argv[1]] = tempfile  # expect: LB111
table = sys.modules
table["__ma" + "in__"] = tempfile  # expect: LB111
sys.modules.update({"__main__": tempfile})  # expect: LB111
sys.modules.update(dict(__main__=tempfile))  # expect: LB111
sys.modules.update(__main__=tempfile)  # expect: LB111
sys.modules.setdefault(__name__, tempfile)  # expect: LB111
sys.modules.__setitem__(sys.argv[2], tempfile)  # expect: LB111
sys.modules |= {"__main__": tempfile}  # expect: LB111
sys.modules = {"__main__": tempfile}  # expect: LB111
vars(sys)["modules"] = {}  # expect: LB111
some = sys.modules[sys.argv[3]]
some.__name__ = "os"  # expect: LB111
