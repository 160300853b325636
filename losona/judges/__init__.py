"""The judges: the paper's LLM judge (`llm`, `prompt`, `reply`), the offline lexicon judge
(`lexicon`, `rules`, `uptake`), panels (`panels`), every kind in one registry (`kinds`),
and the tables they fill (`run`, `finish`, `verdicts`, `health`)."""
