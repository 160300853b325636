"""What the test server answers: request bodies, their identity and the default reply."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

Body = dict[str, Any]
Reply = Callable[[Body], str]


def body_digest(body: Body) -> str:
    """A stable hash of a request body: the identity of one call, retries included."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def hash_number(text: str) -> int:
    """A number in [0, 2**32) fixed by the text."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def default_reply(body: Body) -> str:
    """A deterministic reply that differs between prompts and between seeds (trials)."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode())
    return f"Reply {digest.hexdigest()[:12]} for seed {body.get('seed')}."


def words(text: Any) -> int:
    """A reply's tokens as the server counts them: its words."""
    return len(text.split()) if isinstance(text, str) else 0
