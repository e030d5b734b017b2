# verdict: accept
# Plugin auto-registration: a package lists its own submodules with pkgutil.iter_modules and
# imports each under its own name. iter_modules with a path only lists what is there; the
# summary's reach of an import (iter_importers with a dotted name) is not taken when the call
# leaves that parameter at its literal default.
import importlib  # expect: LB201
import pkgutil  # expect: LB201

__path__ = ["."]
REGISTRY = {}
for info in pkgutil.iter_modules(__path__):
    REGISTRY[info.name] = info.ispkg
for info in pkgutil.iter_modules(__path__, prefix="models."):
    REGISTRY[info.name] = info.ispkg
finder = pkgutil.get_importer(".")
print(len(REGISTRY), finder is not None)
