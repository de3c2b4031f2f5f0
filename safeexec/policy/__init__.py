"""Policies: the frozen schema, the TOML pack loader with precise errors, and the shipped packs."""

from __future__ import annotations

from safeexec.policy.loader import load_policy
from safeexec.policy.packs import shipped_packs
from safeexec.policy.schema import Policy

__all__ = ["Policy", "load_policy", "shipped_packs"]
