# verdict: accept
# What research code calls in the standard library: none of it reaches a process, a socket,
# or code it is handed.
import argparse
import asyncio
import collections
import concurrent.futures
import csv
import dataclasses
import json
import logging
import multiprocessing as mp
import pickle
import tempfile
import threading


@dataclasses.dataclass
class Config:
    lr: float = 0.1


Point = collections.namedtuple("Point", "x y")


def square(x):
    return x * x


async def step():
    await asyncio.sleep(0)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log = logging.getLogger(__name__)
    log.addHandler(logging.StreamHandler())
    log.addHandler(logging.FileHandler("train.log"))
    args = argparse.ArgumentParser().parse_args()
    with mp.Pool(2) as pool:
        print(pool.map(square, range(4)))
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        print(list(ex.map(square, range(4))))
    q = mp.Queue()
    p = mp.Process(target=square, args=(3,))
    p.start()
    p.join()
    t = threading.Thread(target=square, args=(2,))
    t.start()
    t.join()
    asyncio.run(step())
    d = tempfile.mkdtemp()
    with open("state.pkl", "wb") as f:
        pickle.dump({"cfg": Config(), "p": Point(1, 2)}, f)
    with open("log.csv", "w", newline="") as f:
        csv.writer(f).writerow([1, 2])
    json.dump({"loss": 0.1}, open("results.json", "w"))
