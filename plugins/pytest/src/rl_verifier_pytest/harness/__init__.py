"""Scripts that run inside the sandbox (stdlib only); mounted read-only under /harness."""
