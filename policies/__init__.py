"""The shipped policy packs (installed as ``safeexec.policies``); the content is the TOML beside this file."""
