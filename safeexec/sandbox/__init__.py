"""The child side of the native mode: worker loop, template process and confinement layers.

Nothing here runs in the host except :mod:`channel` (frame codec), :mod:`layers` (names and
reports) and the DSL cell the host builds (:mod:`dsl_executor`); the worker and the template run in
separately exec'd processes. The opt-in in-process modes (``restricted-inprocess``,
``dsl-inprocess``) run the restricted and DSL runtimes in the host: not a security boundary.
"""
