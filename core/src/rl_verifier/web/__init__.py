"""``rlv builder``: a local web page that previews and downloads what ``rlv new`` writes."""

from rl_verifier.web.app import create_app, serve

__all__ = ["create_app", "serve"]
