"""The OpenAI-compatible API: its routes, checked request bodies, generation, choice text."""
