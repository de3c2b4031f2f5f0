"""Imported by every interpreter a network session starts (this directory is on its
PYTHONPATH): its TCP sockets reach the host proxy over the inherited egress channel."""

from safeexec.sandbox.egress_client import install_from_environment

install_from_environment()
