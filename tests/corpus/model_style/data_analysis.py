# Model-style data analysis snippets (numpy, pandas). One cell per `# %% name`.

# %% numpy-mean-std
import numpy as np

values = np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
mean = values.mean()
std = values.std()
print(f"mean={mean:.2f} std={std:.2f}")
assert mean == 5.0 and std == 2.0

# %% numpy-matrix-solve
import numpy as np

# Solve the linear system A x = b
A = np.array([[3.0, 1.0], [1.0, 2.0]])
b = np.array([9.0, 8.0])
x = np.linalg.solve(A, b)
print("solution:", x)
assert np.allclose(x, [2.0, 3.0])

# %% numpy-boolean-mask
import numpy as np

temps = np.array([12, 18, 25, 31, 9, 27])
hot = temps[temps > 20]
print("hot days:", hot.tolist())
assert hot.tolist() == [25, 31, 27]

# %% numpy-reshape-sum
import numpy as np

grid = np.arange(12).reshape(3, 4)
row_sums = grid.sum(axis=1)
col_sums = grid.sum(axis=0)
print(row_sums, col_sums)
assert row_sums.tolist() == [6, 22, 38]
assert col_sums.tolist() == [12, 15, 18, 21]

# %% numpy-random-seeded
import numpy as np

rng = np.random.default_rng(42)
sample = rng.normal(loc=10, scale=2, size=1000)
print(f"sample mean ~ {sample.mean():.3f}")
assert 9.5 < sample.mean() < 10.5

# %% numpy-polyfit
import numpy as np

xs = np.array([0, 1, 2, 3, 4], dtype=float)
ys = 2 * xs + 1
slope, intercept = np.polyfit(xs, ys, 1)
print(f"y = {slope:.2f}x + {intercept:.2f}")
assert round(slope, 6) == 2.0 and round(intercept, 6) == 1.0

# %% pandas-groupby
import pandas as pd

df = pd.DataFrame({
    "region": ["north", "south", "north", "east", "south"],
    "sales": [100, 250, 175, 80, 50],
})
totals = df.groupby("region")["sales"].sum().sort_values(ascending=False)
print(totals)
assert totals.to_dict() == {"south": 300, "north": 275, "east": 80}

# %% pandas-describe
import pandas as pd

df = pd.DataFrame({"age": [23, 35, 31, 47, 52], "score": [88, 92, 79, 65, 70]})
summary = df.describe()
print(summary.round(2))
assert summary.loc["mean", "age"] == 37.6
assert summary.loc["count", "score"] == 5

# %% pandas-csv-roundtrip
import pandas as pd

df = pd.DataFrame({"name": ["Ana", "Ben"], "points": [12, 7]})
df.to_csv("scores.csv", index=False)
back = pd.read_csv("scores.csv")
print(back)
assert back.equals(df)

# %% pandas-merge
import pandas as pd

orders = pd.DataFrame({"order_id": [1, 2, 3], "customer_id": [10, 11, 10]})
customers = pd.DataFrame({"customer_id": [10, 11], "name": ["Acme", "Globex"]})
joined = orders.merge(customers, on="customer_id", how="left")
print(joined)
assert joined["name"].tolist() == ["Acme", "Globex", "Acme"]

# %% pandas-missing-values
import numpy as np
import pandas as pd

df = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [np.nan, 5.0, 6.0]})
print("missing per column:\n", df.isna().sum())
filled = df.fillna(df.mean())
assert filled.isna().sum().sum() == 0
assert filled.loc[1, "a"] == 2.0

# %% pandas-pivot
import pandas as pd

df = pd.DataFrame({
    "month": ["Jan", "Jan", "Feb", "Feb"],
    "product": ["A", "B", "A", "B"],
    "units": [5, 3, 7, 2],
})
table = df.pivot_table(index="month", columns="product", values="units", aggfunc="sum")
print(table)
assert table.loc["Feb", "A"] == 7

# %% pandas-datetime-resample
import pandas as pd

idx = pd.date_range("2024-01-01", periods=14, freq="D")
series = pd.Series(range(14), index=idx)
weekly = series.resample("W").sum()
print(weekly)
assert weekly.iloc[0] == 0 + 1 + 2 + 3 + 4 + 5 + 6

# %% pandas-apply-lambda
import pandas as pd

df = pd.DataFrame({"price": [10.0, 20.0, 30.0]})
df["with_tax"] = df["price"].apply(lambda p: round(p * 1.2, 2))
print(df)
assert df["with_tax"].tolist() == [12.0, 24.0, 36.0]

# %% pandas-value-counts
import pandas as pd

colors = pd.Series(["red", "blue", "red", "green", "red", "blue"])
counts = colors.value_counts()
print(counts)
assert counts["red"] == 3 and counts.index[0] == "red"

# %% pandas-json-records
import json

import pandas as pd

records = [{"id": 1, "ok": True}, {"id": 2, "ok": False}, {"id": 3, "ok": True}]
df = pd.DataFrame.from_records(records)
passing = df[df["ok"]]["id"].tolist()
print(json.dumps(passing))
assert passing == [1, 3]

# %% numpy-percentiles
import numpy as np

latencies = np.array([120, 95, 300, 110, 105, 98, 2000, 130])
p50, p95 = np.percentile(latencies, [50, 95])
print(f"p50={p50} p95={p95:.1f}")
assert p50 == 115.0
assert p95 > 1000
