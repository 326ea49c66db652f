"""HTTP plumbing every route shares: bodies and query parameters within limits, JSON
answers, API keys, the log of failed requests."""
