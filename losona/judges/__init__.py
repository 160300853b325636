"""The judges: the paper's LLM judge and the offline lexicon judge, and the tables they fill.

- `base`: what a judge sees (JudgeCase) and returns (Judgement).
- `prompt`: the paper's judge prompt and our additional judge instructions.
- `llm`: the LLM judge: sending the prompt, reading the reply, the one repair.
- `rules`: the lexicon judge's rules file, read and checked, and one rule applied.
- `uptake`: whether a reply takes up the elicitor at all (Appendix C, step 1).
- `lexicon`: the rule-based judge.
- `kinds`: every kind of judge in one registry: how each is made, judged again offline and
  recorded (a config's `kind` names one).
- `run`: a judge built from its config; the verdict and control tables filled.
- `panels`: several judges' verdicts combined into one, with no model call.
- `verdicts`: the verdict files a run leaves, read and checked to add up.
- `health`: whether a judge's verdicts in one cell say anything (the degenerate flag).
- `stage`: the judge and judge_controls stages as functions, and every judging stage's end.
"""
