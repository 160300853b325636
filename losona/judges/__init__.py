"""The judges: the paper's LLM judge and the offline lexicon judge, and the tables they fill.

`base` holds what a judge sees (JudgeCase) and returns (Judgement); `llm` the paper's
judge prompt, reply parsing and the one repair; `lexicon` the rule-based judge; `run`
builds a judge from its config and fills the verdict and control tables.
"""
