# verdict: reject
# policy: strict
exec(open("configurator.py").read())  # expect: LB115
