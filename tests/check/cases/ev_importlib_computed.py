# verdict: reject
import importlib  # expect: LB201
name = input()
importlib.import_module(name).run()  # expect: LB111
