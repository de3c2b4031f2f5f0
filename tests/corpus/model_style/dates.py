# Model-style date and time snippets.

# %% days-between
from datetime import date

start = date(2024, 1, 15)
end = date(2024, 3, 1)
delta = end - start
print(f"{delta.days} days")
assert delta.days == 46

# %% strptime-parse
from datetime import datetime

ts = datetime.strptime("2024-07-04 18:30", "%Y-%m-%d %H:%M")
print(ts.isoformat())
assert ts.hour == 18 and ts.month == 7

# %% strftime-format
from datetime import datetime

dt = datetime(2023, 12, 25, 9, 5)
label = dt.strftime("%A %d %B %Y, %H:%M")
print(label)
assert label == "Monday 25 December 2023, 09:05"

# %% timedelta-add
from datetime import datetime, timedelta

deadline = datetime(2024, 2, 27) + timedelta(days=3)
print(deadline.date())
assert deadline.date().isoformat() == "2024-03-01"

# %% calendar-month
import calendar

first_weekday, ndays = calendar.monthrange(2024, 2)
print("Feb 2024 has", ndays, "days; leap:", calendar.isleap(2024))
assert ndays == 29 and calendar.isleap(2024)

# %% iso-week
from datetime import date

year, week, weekday = date(2024, 12, 30).isocalendar()
print(year, week, weekday)
assert (year, week, weekday) == (2025, 1, 1)

# %% timezone-convert
from datetime import datetime, timezone, timedelta

utc_time = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)
ist = utc_time.astimezone(timezone(timedelta(hours=5, minutes=30)))
print(ist.isoformat())
assert ist.hour == 17 and ist.minute == 30

# %% fromisoformat
from datetime import datetime

stamps = ["2024-05-01T10:00:00", "2024-04-30T23:59:59", "2024-05-01T09:00:00"]
latest = max(stamps, key=datetime.fromisoformat)
print("latest:", latest)
assert latest == "2024-05-01T10:00:00"

# %% business-days
from datetime import date, timedelta

def business_days(start: date, end: date) -> int:
    days = 0
    current = start
    while current < end:
        if current.weekday() < 5:
            days += 1
        current += timedelta(days=1)
    return days

n = business_days(date(2024, 3, 4), date(2024, 3, 18))
print(n)
assert n == 10

# %% age-from-birthday
from datetime import date

def age(born: date, today: date) -> int:
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))

print(age(date(1990, 8, 20), date(2024, 8, 19)))
assert age(date(1990, 8, 20), date(2024, 8, 19)) == 33
assert age(date(1990, 8, 20), date(2024, 8, 20)) == 34

# %% time-measure
import time

start = time.perf_counter()
total = sum(i * i for i in range(10000))
elapsed = time.perf_counter() - start
print(f"computed {total} in {elapsed:.4f}s")
assert total == 333283335000 and elapsed >= 0

# %% zoneinfo-offset
from datetime import datetime
from zoneinfo import ZoneInfo

dt = datetime(2024, 1, 15, 12, 0, tzinfo=ZoneInfo("UTC"))
print(dt.tzname(), dt.utcoffset())
assert dt.utcoffset().total_seconds() == 0
