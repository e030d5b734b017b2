# verdict: accept
with open("/etc/hostname") as f:
    print(f.read())
