"""``python -m rl_verifier_server [serve options]`` runs ``rlv serve``."""

import sys

from rl_verifier.cli_support import rlv_main

if __name__ == "__main__":
    sys.argv = ["rlv", "serve", *sys.argv[1:]]
    rlv_main()
