"""Checkpoints on disk: the store, peft exports and ``rlv export``, signed download URLs,
the REST client's views of runs and checkpoints."""
