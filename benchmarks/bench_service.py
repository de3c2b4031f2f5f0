"""The HTTP service under bounded load (loopback only; it stops by itself).

50 concurrent clients x 20 trivial runs each on one ``safeexec serve`` process; every figure is
a ratio against a direct ``Session.run`` of the same code measured in the same run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "service"))

from service_load import run_load


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="safeexec-bench-service-") as work:
        report = run_load(Path(work), clients=50, runs=20)
    print(report.table())
    if report.errors:
        print(f"first error: {report.errors[0]}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
