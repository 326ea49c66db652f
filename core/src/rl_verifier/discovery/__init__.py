"""Plugins: the hooks, entry-point discovery, the extension records, the loss table."""
