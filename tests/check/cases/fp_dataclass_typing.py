# verdict: accept
from dataclasses import dataclass
from typing import Callable
@dataclass
class Cfg:
    fn: Callable = print
Cfg().fn("x")
