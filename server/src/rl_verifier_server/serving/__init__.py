"""Running ``rlv serve``: the app over both APIs' routes, start-up (bind, lock, clean
up), the data directory's lock."""
