"""Adapters that put rl-verifier rewards into other trainers.

Each submodule imports its trainer's package only where it needs its types, so importing
``rl_verifier.integrations.trl`` does not need ``verl`` and the other way round:

- ``rl_verifier.integrations.trl``: reward functions for TRL's ``GRPOTrainer``;
- ``rl_verifier.integrations.verl``: ``compute_score`` for verl's reward managers;
- ``rl_verifier.integrations.verl_reward_loop``: a reward manager for verl's Reward Loop;
- ``rl_verifier.integrations.tinker_cookbook``: ``Env``/``EnvGroupBuilder``/``RLDataset``
  for the tinker-cookbook's RL loop;
- ``rl_verifier.integrations.prime_verifiers``: v1 reward functions and a ``Taskset``
  for PrimeIntellect's ``verifiers`` 0.4.
"""
