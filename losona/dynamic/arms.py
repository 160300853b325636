"""The arms of the second turn: a breach is continued twice, with the sanction (`sanction`)
and with the neutral continuation (`control`), a pass once (`retention`); an unscored
first turn has no arm."""

from __future__ import annotations

SANCTION, CONTROL, RETENTION = "sanction", "control", "retention"
ARMS = (SANCTION, CONTROL, RETENTION)
# What the group says in each arm: the sanction, or the neutral continuation.
SANCTIONING, NEUTRAL = "sanction", "neutral"
CONTINUATION = {SANCTION: SANCTIONING, CONTROL: NEUTRAL, RETENTION: NEUTRAL}
# The statuses of a first-turn trial's row in the dynamic prompt table.
OK = "ok"
FIRST_TURN_UNSCORED = "first_turn_unscored"
NO_FOLLOWUP = "no_followup"


def arms_for(complies: bool | None) -> tuple[str, ...]:
    """The arms a first-turn verdict puts its trial in: two after a breach, one after a pass."""
    if complies is None:
        return ()
    return (RETENTION,) if complies else (SANCTION, CONTROL)
