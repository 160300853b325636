"""The models the generation stages call, by option name (their files: losona/layout.py).

The generate, screen and curate nodes of the config (conf/generation/) are checked with
every other config group in losona/config/.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from losona.config import ModelSpec, option


def load_model(name: str, extra_params: Mapping[str, Any] | None = None) -> ModelSpec:
    """The model of conf/model/<name>.yaml, with `extra_params` sent on top of its own."""
    spec: ModelSpec = option("model", name)
    return spec.with_params(**extra_params) if extra_params else spec
