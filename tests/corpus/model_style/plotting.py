# Model-style plotting snippets (matplotlib, Agg backend).

# %% line-plot-savefig
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

xs = list(range(10))
plt.plot(xs, [x * x for x in xs], label="x^2")
plt.legend()
plt.title("Squares")
plt.savefig("squares.png")
plt.close()
import os
assert os.path.getsize("squares.png") > 1000
print("saved squares.png")

# %% bar-chart
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(4, 3))
ax.bar(["a", "b", "c"], [3, 7, 5], color="steelblue")
ax.set_ylabel("count")
fig.tight_layout()
fig.savefig("bars.png", dpi=80)
plt.close(fig)
with open("bars.png", "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
print("bar chart written")

# %% histogram-numpy
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

data = np.random.default_rng(0).normal(size=500)
counts, edges, _ = plt.hist(data, bins=20)
plt.savefig("hist.png")
plt.close("all")
print("bins:", len(edges) - 1)
assert counts.sum() == 500

# %% subplots-grid
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, axes = plt.subplots(2, 2)
for i, ax in enumerate(axes.flat):
    ax.plot([0, 1], [0, i])
    ax.set_title(f"panel {i}")
fig.savefig("grid.png")
assert len(fig.axes) == 4
plt.close(fig)
print("grid saved")

# %% pandas-plot
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

df = pd.DataFrame({"day": range(1, 8), "visits": [5, 8, 6, 9, 12, 15, 11]})
ax = df.plot(x="day", y="visits", kind="line", marker="o")
ax.figure.savefig("visits.png")
plt.close("all")
import os
assert os.path.exists("visits.png")
print("pandas plot saved")

# %% scatter-annotate
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

points = [(1, 2), (2, 3), (3, 5), (4, 4)]
fig, ax = plt.subplots()
ax.scatter([p[0] for p in points], [p[1] for p in points])
for x, y in points:
    ax.annotate(f"({x},{y})", (x, y))
fig.savefig("scatter.svg")
plt.close(fig)
with open("scatter.svg") as f:
    assert "<svg" in f.read()
print("svg written")

# %% plot-to-bytes
import io

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig = plt.figure()
plt.pie([30, 50, 20], labels=["x", "y", "z"])
buf = io.BytesIO()
fig.savefig(buf, format="png")
plt.close(fig)
print("png bytes:", buf.tell())
assert buf.getvalue().startswith(b"\x89PNG")

# %% open-figure-artifact
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

plt.figure()
plt.plot([3, 1, 2])
plt.xlabel("index")
print("figure left open for the harness")
assert plt.gcf() is not None
