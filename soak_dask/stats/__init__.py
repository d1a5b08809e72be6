"""Statistics on plain arrays, below every result kind: tests of a mean difference of paired
scores (``mean_tests``), shared by ``compare``, ``pvalues``, ``evaluate``'s McNemar cells and
the level simulations of ``benchmarks/``."""
