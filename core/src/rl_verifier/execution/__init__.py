"""Where verifier code runs: in this process, in worker processes, on Ray; the one
codec for calls across processes."""
