"""The judges: the paper's LLM judge and the offline lexicon judge, and the tables they fill.

`base` holds what a judge sees (JudgeCase) and returns (Judgement); `prompt` the paper's
judge prompt and our judge instructions; `llm` sending it, reply parsing and the one
repair; `lexicon` the rule-based judge; `run` builds a judge from its config and fills
the verdict and control tables.
"""
