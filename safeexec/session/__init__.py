"""The composition root and its parts: :class:`~safeexec.session.session.Session` wires the stages
to backends and a log; :mod:`~safeexec.session.steps` holds a step's pure pieces,
:mod:`~safeexec.session.pool` the backend sessions it holds, :mod:`~safeexec.session.statistics` its
counters, :mod:`~safeexec.session.files` the host's view of its workdir."""
