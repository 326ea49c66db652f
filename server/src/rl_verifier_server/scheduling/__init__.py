"""When work runs: the compute thread, request futures, ``seq_id`` ordering, batched
sampling."""
