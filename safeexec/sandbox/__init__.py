"""The child side of the native mode: worker loop, template process and confinement layers.

Nothing here runs in the host except :mod:`channel` (frame codec) and :mod:`layers` (names and
reports); the worker and the template run in separately exec'd processes.
"""
