# verdict: accept
# A package's data read through the import system, with the package written out: the import
# of that package, and data read, not run.
import importlib.resources  # expect: LB201
import pkgutil  # expect: LB201

text = importlib.resources.files("json").joinpath("__init__.py").read_text()
raw = pkgutil.get_data("json", "__init__.py")
print(len(text), len(raw))
