"""``rlv eval``: sample a model on a task set, score, estimate pass@k with intervals.

``estimators`` (pass@k, cons@k, intervals), ``sampling`` (seeded samples through the
Tinker SDK), ``runner`` (sample, score and log what is missing), ``summary`` (per task and
overall), ``compare`` (paired differences), ``report`` (table and plots), ``command`` (the
CLI). The training loop's held-out evals go through ``runner`` and ``summary`` too.
"""
