"""safeexec: run model-generated code without trusting it.

extract → parse → check (policy + estimate) → run (native | restricted) → observe → audit.
"""

from __future__ import annotations

__version__ = "0.1.0"
