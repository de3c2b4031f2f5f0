# Multi-step snippets: the cells of this file run in order in ONE session, like an agent's steps,
# and later cells use the variables, imports and files earlier ones left behind.

# %% step-load-data
records = [
    {"id": 1, "city": "Lyon", "temp": 21.5},
    {"id": 2, "city": "Oslo", "temp": 12.0},
    {"id": 3, "city": "Lima", "temp": 19.0},
]
print(f"loaded {len(records)} records")
assert len(records) == 3

# %% step-derive
warm = [r for r in records if r["temp"] > 15]
print([r["city"] for r in warm])
assert len(warm) == 2

# %% step-helper-function
def fahrenheit(c: float) -> float:
    return c * 9 / 5 + 32

for r in records:
    r["temp_f"] = round(fahrenheit(r["temp"]), 1)
print(records[0])
assert records[1]["temp_f"] == 53.6

# %% step-save
import json

with open("records.json", "w") as f:
    json.dump(records, f)
print("saved")

# %% step-reload
with open("records.json") as f:
    again = json.load(f)
assert again == records
print("reloaded the same", len(again), "records")

# %% step-class-defined
class RunningMean:
    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x

    @property
    def value(self) -> float:
        return self.total / self.n if self.n else 0.0

rm = RunningMean()
for r in records:
    rm.add(r["temp"])
print(round(rm.value, 2))
assert round(rm.value, 2) == 17.5

# %% step-class-reused
rm.add(30.0)
print("after one more:", rm.value)
assert rm.n == 4 and rm.value == 20.625

# %% step-numpy-array
import numpy as np

temps = np.array([r["temp"] for r in records])
print(temps.max())
assert temps.argmax() == 0

# %% step-numpy-reused
normalized = (temps - temps.min()) / (temps.max() - temps.min())
print(normalized.round(3))
assert normalized.min() == 0.0 and normalized.max() == 1.0

# %% step-dataframe
import pandas as pd

frame = pd.DataFrame(records)
print(frame[["city", "temp"]])
assert list(frame.columns[:3]) == ["id", "city", "temp"]

# %% step-dataframe-update
frame["rank"] = frame["temp"].rank(ascending=False).astype(int)
print(frame.sort_values("rank")["city"].tolist())
assert frame.sort_values("rank")["city"].tolist() == ["Lyon", "Lima", "Oslo"]

# %% step-summary
summary = {"count": len(frame), "mean": float(frame["temp"].mean()), "warm": len(warm)}
print(summary)
assert summary == {"count": 3, "mean": 17.5, "warm": 2}
