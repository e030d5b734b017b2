# verdict: reject
# Arrays, checkpoints and figures are written by library functions, not only by open():
# a destination outside the experiment directory is the same write outside the output paths.
import numpy as np
import torch
import matplotlib.pyplot as plt
from numpy import savetxt as save_table

x = np.zeros(3)
np.save("/etc/evil.npy", x)  # expect: LB110
np.savez(file="/root/.ssh/x.npz", a=x)  # expect: LB110
np.savez_compressed("../../outside.npz", a=x)  # expect: LB110
torch.save({"w": x}, "/home/user/.bashrc")  # expect: LB110
plt.savefig("/usr/local/bin/fig.png")  # expect: LB110
save_table("/var/lib/table.txt", x)  # expect: LB110
