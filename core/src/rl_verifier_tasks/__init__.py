"""The verifiers 0.4 taskset id ``rl-verifier-tasks``: our task sets in ``vf-eval`` and
prime-rl (``--env.taskset.id rl-verifier-tasks --env.taskset.source taskset:NAME``).

v1 imports a taskset id as a top-level module exporting one ``Taskset`` subclass; this
is that module for ``rl_verifier.integrations.prime_verifiers.VerifierTaskset``.
"""

from rl_verifier.integrations.prime_verifiers import VerifierTaskset

__all__ = ["VerifierTaskset"]
