"""The verifiers 0.4 env id ``rl-verifier-group``: n attempts of a task judged as one
group by our scorer (``--env.id rl-verifier-group --env.n 4 --env.spec judge_rank``).

v1 imports an env id as a top-level module exporting one ``Env`` subclass; this is that
module for ``rl_verifier.integrations.prime_verifiers_group.VerifierGroupEnv``.
"""

from rl_verifier.integrations.prime_verifiers_group import VerifierGroupEnv

__all__ = ["VerifierGroupEnv"]
