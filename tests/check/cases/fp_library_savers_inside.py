# verdict: accept
# The same library writers aimed inside the experiment directory (relative paths, also through
# os.path.join) or at the private /tmp are what research code does: no finding.
import os

import matplotlib.pyplot as plt
import numpy as np
import torch

out_dir = "run_0"
os.makedirs(out_dir, exist_ok=True)
x = np.zeros(3)
np.save("x.npy", x)
np.save(os.path.join(out_dir, "x.npy"), x)
np.savez_compressed(file=os.path.join(out_dir, "arrays.npz"), a=x)
np.savetxt("table.txt", x)
torch.save({"w": x}, os.path.join(out_dir, "model.pt"))
torch.save(x, "/tmp/scratch.pt")
plt.savefig(os.path.join(out_dir, "loss.png"))
plt.savefig("fig.png", dpi=150)
