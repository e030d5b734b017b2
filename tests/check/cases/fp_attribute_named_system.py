# verdict: accept
class Config:
    system = "linux"
cfg = Config()
print(cfg.system)
