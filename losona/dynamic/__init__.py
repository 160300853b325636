"""The dynamic extension: sanctioned after a breach, does the model adapt on its next turn?

The paper's Section 7 names the next step: a benchmark where the subject can be
sanctioned and then adapt. After a cell's first turn (the paper's single reply), every
trial the first-turn judge scored gets a second turn in the same chat: the group's
follow-up (a sanction after a breach, a neutral continuation otherwise), then a second
elicitor that invites the same norm again; the subject answers under the same condition's
prompt and the same judge scores that reply (docs/dynamic.md).

`arms` names the arms, `chat` builds the second turn's chat, `group` holds the group
model's prompt (source simulated), `settings` and `tables` its config and tables; `render`,
`sample` and `judge` the second turn's prompts, replies and verdicts; `cells` (each cell's
tables read back), `statistics` (the numbers) and `aggregate` (the tables and metrics);
`plots` and `report` the figure and the HTML report's section. The stages' functions are
losona/pipeline/dynamic_*.py.
"""
