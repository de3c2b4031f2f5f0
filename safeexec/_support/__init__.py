"""Internals every layer may use: caches, the collector pause, escaping, units, the environment
fingerprint and bearer tokens. Nothing here knows about the pipeline."""
