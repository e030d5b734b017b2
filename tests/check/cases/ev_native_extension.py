# verdict: reject
# Native code through numpy's and torch's loaders.
import numpy.ctypeslib as npc  # expect: LB106
from torch.utils import cpp_extension  # expect: LB106
npc.load_library("libevil", ".")  # expect: LB106
cpp_extension.load(name="x", sources=["x.cpp"])  # expect: LB106
