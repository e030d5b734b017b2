# verdict: accept
def run(eval=False, exec=None):
    return eval
run(eval=True, exec=1)
