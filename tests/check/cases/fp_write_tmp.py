# verdict: accept
with open("/tmp/scratch.txt", "w") as f:
    f.write("ok")
