"""Make the shared helpers (lean_helpers, fake_repl) importable."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
