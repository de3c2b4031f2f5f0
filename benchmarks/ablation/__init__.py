"""The ablation benchmark: action formats (code, JSON, text, DSL) × execution modes (native,
restricted, DSL, the tool gateway) × scripted agents × {clean, faults, injections}, on the
harness and its own suite (``suite/``). ``python -m benchmarks.ablation`` runs it; see
:mod:`benchmarks.ablation.matrix` for what runs, :mod:`~benchmarks.ablation.faults` for the fault
plan, :mod:`~benchmarks.ablation.run` for the executors, :mod:`~benchmarks.ablation.report` for
the aggregates."""
