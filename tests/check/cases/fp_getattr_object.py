# verdict: accept
class Args:
    lr = 0.1
args = Args()
for name in ["lr"]:
    print(getattr(args, name))
