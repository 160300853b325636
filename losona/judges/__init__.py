"""The judges: the paper's LLM judge (`llm`, `prompt`, `reply`), the offline lexicon judge
(`lexicon`, `rules`, `uptake`), panels (`panels`), every kind's behaviour (`kinds`),
and the tables they fill (`run`, `finish`, `verdicts`, `health`)."""
