"""The built-in backends by mode name, made on first use (``Session`` asks here by default),
and the one list of modes that run the model's code in the host process."""

from __future__ import annotations

from safeexec.backends.base import Backend
from safeexec.errors import BackendUnavailable, InProcessRefused

__all__ = ["IN_PROCESS_MODES", "default_backend", "refuse_in_process", "runs_in_process"]

IN_PROCESS_MODES: frozenset[str] = frozenset({"restricted-inprocess", "dsl-inprocess"})
"""Modes whose code runs in the host process: not a security boundary (a guard bug is a host
compromise). They exist to measure the guards' overhead without the worker round trip and for
hosts that cannot fork; no face offers one unless its operator's configuration names it."""


def runs_in_process(mode: str) -> bool:
    """Whether ``mode`` runs the model's code in the host process (see ``IN_PROCESS_MODES``)."""
    return mode in IN_PROCESS_MODES


def refuse_in_process(mode: str, *, allowed: bool, face: str, option: str) -> None:
    """Raise ``InProcessRefused`` if ``mode`` runs in the host process and ``face``'s operator
    did not allow that with ``option`` (named in the message, as the way to allow it)."""
    if runs_in_process(mode) and not allowed:
        raise InProcessRefused(
            f"mode={mode!r} runs the model's code in this host process, which is not a security "
            f"boundary; {face} refuses it unless its operator allows it with {option} "
            "(or choose 'restricted', the same runtime inside the confined worker)",
            mode=mode,
        )


def default_backend(name: str, *, pool_size: int | None = None) -> Backend:
    """Make the built-in backend called ``name``; ``BackendUnavailable`` if it cannot be had.

    ``pool_size``: how many sessions a backend with a template keeps forked ahead (None: its
    default); a caller that opens a single session (``safeexec run``) asks for 1.
    """
    # Imported here so that a missing optional piece fails only the mode that needs it.
    try:
        if name == "native":
            from safeexec.backends.native import NativeBackend

            return NativeBackend() if pool_size is None else NativeBackend(pool_size=pool_size)
        if name == "restricted":
            from safeexec.backends.native import NativeBackend
            from safeexec.backends.restricted import RestrictedBackend

            if pool_size is None:
                return RestrictedBackend()
            return RestrictedBackend(
                native=NativeBackend(executor="restricted", pool_size=pool_size)
            )
        if name == "restricted-inprocess":
            from safeexec.backends.restricted import InProcessRestrictedBackend

            return InProcessRestrictedBackend()
        if name == "dsl":
            from safeexec.backends.dsl import DslBackend
            from safeexec.backends.native import NativeBackend

            if pool_size is None:
                return DslBackend()
            return DslBackend(native=NativeBackend(executor="dsl", pool_size=pool_size))
        if name == "dsl-inprocess":
            from safeexec.backends.dsl import InProcessDslBackend

            return InProcessDslBackend()
        if name == "fake":
            from safeexec.backends.fake import FakeBackend, not_executed

            return FakeBackend(not_executed)
    except ImportError as exc:
        raise BackendUnavailable(
            f"backend name={name!r} cannot be loaded here: {exc}; "
            "install the missing piece or choose another mode"
        ) from exc
    raise BackendUnavailable(
        f"no backend named name={name!r}; choose one of 'native', 'restricted', "
        "'restricted-inprocess', 'dsl', 'dsl-inprocess', 'fake' "
        "or pass backends={...} to Session"
    )
