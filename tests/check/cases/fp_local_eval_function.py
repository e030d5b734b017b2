# verdict: accept
def eval(model, data):
    return sum(data)
score = eval(None, [1, 2])
