"""``python -m rl_verifier``: the ``rlv`` command."""

from rl_verifier.cli import main

main()
