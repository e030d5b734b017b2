# verdict: reject
# sys.modules[__name__] is read as this module only where nothing can have made it another
# by then: in a function it is read later (after any store into the table), and a file that
# can rebind __name__ by a computed name (globals()[k] = v) gives it up. What the module
# itself is used for beyond reading its globals is out of view: a name it never binds, the
# module handed on or given names, a computed attribute.
import sys

system = print
globals()[sys.argv[1]] = sys.argv[2]
me = sys.modules[__name__]
me.system("id")  # expect: LB111
