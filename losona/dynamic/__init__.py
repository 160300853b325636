"""The dynamic extension (docs/dynamic.md): after a first-turn breach or pass, the group's
follow-up and a second elicitor, the subject's second reply, and the same judge's verdict
on it. The stages' functions are losona/pipeline/dynamic_*.py."""
