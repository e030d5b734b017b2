# verdict: accept
# Feature tests on a module with the name written out: hasattr(m, "name") answers whether
# the name is there, as getattr(m, "name", None) is not None does. The main guard compares
# "__main__" and so reaches no namespace.
import inspect
import multiprocessing
import os
import sys


def cpu_count():
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return multiprocessing.cpu_count()


interactive = hasattr(sys, "ps1") or bool(getattr(sys, "flags", None))
old_api = hasattr(inspect, "getargspec")
print(len(sys.modules), interactive, old_api)

if __name__ == "__main__":
    print("workers:", cpu_count())
