"""The tool wing: the only way sandboxed code causes an effect in the world.

:mod:`~safeexec.capabilities.specs` makes a tool from a host function,
:mod:`~safeexec.capabilities.gateway` grants and calls it as a capability,
:mod:`~safeexec.capabilities.targets` resolves checked paths and URLs, and
:mod:`~safeexec.capabilities.effects` names what a call may do.
"""
