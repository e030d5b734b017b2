"""A thread bomb, bounded: start sleeping threads until the kernel refuses or MAX_TOTAL."""
import threading

from attack import A, P

threading.stack_size(256 * 1024)
stop = threading.Event()
threads = []


def bomb():
    while len(threads) < P["max_total"]:
        t = threading.Thread(target=stop.wait, args=(120,), daemon=True)
        t.start()
        threads.append(t)
    return len(threads)


A.attempt("threads", bomb)
print("threads: %d" % len(threads), flush=True)
stop.wait(1)
A.finish()
