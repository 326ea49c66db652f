"""Errors that are the user's to fix: printed as one line, never as a traceback."""


class UserError(Exception):
    """Bad input from the user: a missing file, a malformed row, an unknown name."""
