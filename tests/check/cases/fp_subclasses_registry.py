# verdict: accept
# A registry helper: the subclasses of the experiment's own base class.
from operator import methodcaller


class Model:
    pass


class MLP(Model):
    pass


def all_subclasses(cls):
    subs = methodcaller("__subclasses__")(cls)
    return set(subs).union(s for c in subs for s in all_subclasses(c))


registry = {c.__name__: c for c in all_subclasses(Model)}
direct = Model.__subclasses__()
print(sorted(registry), self_name := type(MLP()).__name__)
