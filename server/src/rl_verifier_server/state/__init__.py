"""The server's state apart from HTTP: sessions, training clients, samplers, stability
records, and the ``Service`` that holds them."""
