"""The subject's prompt and its rendering: one prompt row per scenario and condition.

- `subject`: the prompt text, the cast line and each condition's prefix (Appendix C).
- `render`: one prompt row per scenario and condition, the chat as the subject sees it.
"""
