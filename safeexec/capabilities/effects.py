"""What calling a tool may do to the world: the one vocabulary that tool specs declare, policies
name (``[approval] effects``) and every recorded call carries.

Apart from :mod:`safeexec.capabilities.specs` so that loading a policy does not load the tool layer
(its path and URL checks pull in ``socket`` and ``ctypes``), which ``safeexec run`` would otherwise
import before it can start the template.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Effect"]


class Effect(StrEnum):
    """What calling a tool may do to the world (recorded on every call)."""

    READ = "read"
    WRITE = "write"
    NETWORK = "network"
    MONEY = "money"
