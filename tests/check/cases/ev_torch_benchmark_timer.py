# verdict: reject
# torch.utils.benchmark.Timer hands its stmt and setup strings to timeit.Timer, which compiles
# them in the standard library's frame: the runtime gate refuses that compile, so the check
# judges the call as timeit.Timer's, however the class is reached.
import torch
import torch.utils.benchmark as benchmark
from torch.utils.benchmark import Timer
from torch.utils.benchmark.utils.timer import Timer as RawTimer

x = torch.zeros(4, 4)
t = benchmark.Timer(stmt="x @ x", globals={"x": x})  # expect: LB103
m = Timer("x + 1", setup="y = 2", globals={"x": x}).timeit(10)  # expect: LB103
RawTimer(stmt="x * 2", globals={"x": x})  # expect: LB103
torch.utils.benchmark.Timer("x.sum()")  # expect: LB103
print("matmul_us:", m.mean * 1e6)
