"""Training loop for rl-verifier: RL on verifier rewards through the Tinker SDK."""

from pathlib import Path

from rl_verifier.train.config import TrainConfig, load_config

__all__ = ["TrainConfig", "load_config", "run"]


def run(config: TrainConfig, resume: Path | None = None) -> Path:
    """Train; returns the run directory. ``resume`` continues a run from its checkpoint."""
    from rl_verifier.train.loop import run as run_loop

    return run_loop(config, resume)
