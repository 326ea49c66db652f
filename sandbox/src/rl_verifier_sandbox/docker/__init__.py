"""The docker backend: its engine, containers and their layout, the in-container supervisor,
the exec stream, the seccomp profile, the default image."""
