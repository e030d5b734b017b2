# verdict: accept
# Methods of objects the check cannot type, named like methods of the standard library that
# reach a socket or a process there: ordinary names stay ordinary.
import multiprocessing as mp
import pandas as pd

df = pd.read_csv("data.csv")
print(df.head())
ctx = mp.get_context("spawn")
q = ctx.Queue()
arr = ctx.Array("d", 4)


class Retriever:
    pass


r = Retriever()
r.retrieve("query")
r.request("x")
r.post({"a": 1})
r.verify()
r.processor("x")
r.spawn()
r.connect()
r.login_cram_md5()
