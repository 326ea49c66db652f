"""Base models: the built-in ones (made offline, cached, published to the Hugging Face
cache) and which models a server may load."""
