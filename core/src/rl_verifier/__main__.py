"""``python -m rl_verifier``: the ``rlv`` command."""

from rl_verifier.cli.app import main

main()
