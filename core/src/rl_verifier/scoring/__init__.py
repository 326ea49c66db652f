"""The scoring engine and what stands on it: the verdict cache, resolving reward specs
and task sources, the ``Scorer`` for Python, the batch summary."""
