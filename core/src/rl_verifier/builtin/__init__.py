"""What ships with the core as its own plugin: the exact-match and format verifiers, their
example task set, the built-in losses and the reward server's wire protocols."""
