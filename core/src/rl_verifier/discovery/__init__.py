"""Plugins: the hooks, entry-point discovery, what ships with the core, the loss table."""
