# The data-analysis pack: the scientific stack is allowed; its code-running entry points are not.

# case: the scientific stack is allowed
import numpy as np  # ok: SX201
import pandas as pd  # ok: SX201
import matplotlib.pyplot as plt  # ok: SX201
from scipy import stats  # ok: SX201
frame = pd.DataFrame({"x": np.arange(10), "y": np.arange(10) ** 2})
frame.describe()
plt.plot(frame["x"], frame["y"])
plt.savefig("plot.png")  # ok: SX305
print(stats.pearsonr(frame["x"], frame["y"]))  # ok: SX307

# case: the default pack's denials still hold
import subprocess  # expect: SX201, SX202
import numpy
numpy._globals  # expect: SX403

# case: unpickling and expression evaluation
import pandas as pd
pd.read_pickle("frame.pkl")  # expect: SX307
pd.eval("1 + 1")  # expect: SX307
import numpy.ctypeslib as npc
npc.load_library("libc", ".")  # expect: SX307

# case: method-level evaluation is a known miss
import pandas as pd
frame = pd.DataFrame({"a": [1, 2]})
frame.query("a > 1")  # todo-expect: SX307

# case: reading data files from the workdir, not outside it
import pandas as pd
pd.read_csv("data.csv")  # ok: SX305
pd.read_csv("/etc/passwd")  # expect: SX305

# case: a larger memory threshold  # ok: SX503
big = [0.0] * (2 * 10**8)

# case: above the larger memory threshold  # expect: SX503
huge = [0.0] * 10**10

# case: figures are saved in the workdir
import matplotlib.pyplot as plt
plt.savefig("figures/plot.png")  # ok: SX305
plt.savefig("/tmp/../etc/plot.png")  # expect: SX305

# case: numpy pickles need a keyword the call rule cannot see
import numpy as np
np.load("arrays.npy", allow_pickle=True)  # todo-expect: SX307
np.load("arrays.npy")  # ok: SX307

# case: a numpy array above the memory threshold  # expect: SX503
import numpy as np
grid = np.zeros((10**5, 10**5))

# case: ordinary numpy arrays are fine  # ok: SX503
import numpy as np
grid = np.zeros((1000, 1000))
axis = np.arange(0, 10, 0.5)
