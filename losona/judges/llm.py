"""The paper's LLM judge: a judge model called through the model layer, with one bounded
repair of a reply that holds no verdict; a reply still without one is unscored with both
raw replies kept, and a call that failed after retries fails the stage (CallsFailed)."""

from __future__ import annotations

import bisect
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from losona.core.errors import LosonaError
from losona.core.files import OnDemand, sha256_text
from losona.judges.base import JudgeCase, Judgement, JudgementTable
from losona.judges.prompt import (
    JUDGE_JSON_SCHEMA,
    JUDGE_TEMPLATE_VERSION,
    Messages,
    judge_messages,
    repair_messages,
)
from losona.judges.reply import ReplyContext, UnparseableReply, parse_verdict
from losona.models import (
    BatchSettings,
    CallOptions,
    CallsFailed,
    Completion,
    ModelSpec,
    Request,
    complete,
    provider_of,
    require_every_call,
    unsupported_params,
)

# Joins the two raw replies of an unparseable case in `evidence`.
REPAIR_SEPARATOR = "\n--- reply to the repair request ---\n"

# litellm's response_format for each `structured_output` setting of a judge config ("none":
# the paper's setting, the prompt alone asks for the JSON object).
RESPONSE_FORMATS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "json_schema": {
        "type": "json_schema",
        "json_schema": {"name": "losona_verdict", "schema": JUDGE_JSON_SCHEMA, "strict": True},
    },
    "json_object": {"type": "json_object"},
    # llama-cpp-python's own server takes the schema inside JSON mode (its response_format
    # type is "text" or "json_object"); llama.cpp's C++ server and vLLM take json_schema.
    "json_object_schema": {"type": "json_object", "schema": JUDGE_JSON_SCHEMA},
}
STRUCTURED_ADVICE = (
    "set structured_output: none in the judge's config (docs/judges.md, 'Structured output'): the "
    "prompt alone asks for the same JSON object"
)

# What llama-cpp-python's server says of a response_format it does not take (with an HTTP
# 500, not 400: its validation fails inside the handler).
LLAMA_CPP_PYTHON_FORMATS = "'text' or 'json_object'"


def structured_output_advice(structured_output: str, failure: str) -> str | None:
    """What to do when calls that asked for structured output failed (a 400, or an error
    naming response_format), or None if unrelated."""
    if structured_output == "none":
        return None
    if LLAMA_CPP_PYTHON_FORMATS in failure:
        keep = (
            "json_object_schema to keep the schema (inside JSON mode, which this server takes), or "
            if structured_output != "json_object_schema"
            else ""
        )
        return (
            f"The server refused structured_output: {structured_output} with an HTTP 500 (its "
            f"response_format types are {LLAMA_CPP_PYTHON_FORMATS}: llama-cpp-python's server, "
            "which reports a request it does not take as a server error). Set "
            f"structured_output: {keep}none (the paper's setting: the prompt alone asks for "
            "the same JSON object) in the judge's config (docs/judges.md, 'Structured output')."
        )
    if "(400)" in failure or "response_format" in failure:
        return (
            f"The requests asked for structured output ({structured_output}); if the provider "
            f"rejects response_format, {STRUCTURED_ADVICE}, or the form your server takes."
        )
    return None


def repair_log(run_log: str | Path | None) -> Path | None:
    """Where the repair round's run log goes: `x.log.json` -> `x.repair.log.json`."""
    if run_log is None:
        return None
    path = Path(run_log)
    return path.with_name(path.name.removesuffix(".log.json") + ".repair.log.json")


class LLMJudge:
    """A judge model called through the shared model layer (cache, retries, cost)."""

    def __init__(
        self,
        spec: ModelSpec,
        options: CallOptions,
        *,
        structured_output: str = "none",
        batch: BatchSettings | None = None,
    ) -> None:
        if structured_output not in RESPONSE_FORMATS:
            raise LosonaError(
                f"judge '{spec.name}': structured_output: expected one of "
                f"{sorted(RESPONSE_FORMATS)}, found {structured_output!r}"
            )
        response_format = RESPONSE_FORMATS[structured_output]
        if response_format is not None:
            # The prompt is unchanged; only the request asks for the schema, so these calls
            # have cache keys of their own.
            spec = spec.with_params(response_format=response_format)
            if "response_format" in unsupported_params(spec):
                raise LosonaError(
                    f"judge '{spec.name}': structured_output: {structured_output} is sent as "
                    f"litellm's response_format, which litellm reports that "
                    f"{provider_of(spec)} does not accept for {spec.model}; {STRUCTURED_ADVICE}"
                )
        self.structured_output = structured_output
        self.spec = spec
        self.options = options
        # What its progress lines call the cell it judges (judges.run.name_cell sets it).
        self.progress = options.progress or f"judge ({spec.model})"
        # Batch mode fills the call cache first, so a run that bypasses the cache (the
        # determinism audit) calls the model directly.
        self.batch = batch if batch is not None and batch.enabled and options.use_cache else None
        # Each round of calls (first, repairs), published with the run, and its run log.
        self.calls: list[Sequence[Completion]] = []
        self.run_logs: list[Path] = []

    @property
    def model(self) -> str:
        """The provider's model string, as written to `judge_model`."""
        return self.spec.model

    @property
    def version(self) -> str:
        """The judge template's version."""
        return JUDGE_TEMPLATE_VERSION

    def _complete(
        self, conversations: Sequence[Messages], options: CallOptions
    ) -> Sequence[Completion]:
        # Identical conversations (e.g. two scenarios sharing a norm's control examples)
        # are sent once.
        sent: dict[str, int] = {}  # each distinct conversation's key: its request's number
        firsts: list[int] = []  # the conversation each request is made of
        request_of = []  # each conversation's request
        for number, messages in enumerate(conversations):
            key = sha256_text(json.dumps(messages, sort_keys=True, ensure_ascii=False))

            if key not in sent:
                sent[key] = len(firsts)
                firsts.append(number)
            request_of.append(sent[key])
        requests = OnDemand(
            len(firsts), lambda n: Request(messages=conversations[firsts[n]], trial=0)
        )
        results = complete(self.spec, requests, options, batch=self.batch)
        self.calls.append(results)
        if options.run_log is not None:
            self.run_logs.append(Path(options.run_log))
        return OnDemand(len(request_of), lambda n: results[request_of[n]])

    def judge(self, cases: Sequence[JudgeCase]) -> Sequence[Judgement]:
        """One judgement per case: parsed, repaired once, or unparseable with the reason kept;
        CallsFailed when any call still failed after the model layer's retries."""
        asked = [i for i, case in enumerate(cases) if case.response is not None]
        conversations = OnDemand(len(asked), lambda n: judge_messages(cases[asked[n]]))
        # A round's progress lines give that round's time left: the repairs are not known yet.
        first_round = dataclasses.replace(self.options, progress=f"{self.progress}, first round")
        first = self._complete(conversations, first_round) if asked else []

        problems: dict[int, str] = {}  # the number (in `asked`) of each reply to repair: why
        for number, completion in enumerate(first):
            if not completion.ok:
                continue  # no verdict: counted and raised below, after the repairs
            try:
                parse_verdict(completion.text, ReplyContext.of(cases[asked[number]]))
            except UnparseableReply as problem:
                problems[number] = str(problem)
        numbers = list(problems)
        repairs = OnDemand(
            len(numbers),
            lambda n: repair_messages(
                conversations[numbers[n]], first[numbers[n]].text or "", problems[numbers[n]]
            ),
        )

        # Repairs are sent even when some first calls failed, so that a rerun finds them in
        # the call cache and sends only what failed.
        repair_round = dataclasses.replace(
            self.options,
            run_log=repair_log(self.options.run_log),
            progress=f"{self.progress}, repair round ({len(numbers)} replies it could not read "
            "asked again)",
        )
        repaired = self._complete(repairs, repair_round) if problems else []
        try:
            require_every_call(
                first, repaired, to=f"the judge '{self.spec.name}'", run_log=self.options.run_log
            )
        except CallsFailed as failed:
            advice = structured_output_advice(self.structured_output, str(failed))
            if advice is not None:
                raise CallsFailed(f"{failed}\n{advice}") from None
            raise
        repair_of = {number: n for n, number in enumerate(numbers)}  # its repair's number

        def judgement(index: int) -> Judgement:
            """Case `index`'s judgement, from its first reply and its repair's."""
            number = bisect.bisect_left(asked, index)
            if number == len(asked) or asked[number] != index:
                return Judgement.unscored("no_response", "no subject message to judge")
            context = ReplyContext.of(cases[index])
            if number not in repair_of:
                return parse_verdict(first[number].text, context)
            repair = repaired[repair_of[number]]
            try:
                return parse_verdict(repair.text, context)
            except UnparseableReply as problem:
                return Judgement.unscored(
                    problem.status,
                    f"judge reply unparseable after one repair: {problem}",
                    evidence=(first[number].text or "") + REPAIR_SEPARATOR + (repair.text or ""),
                )

        # Compact columns now, so that the cases need not outlive the judging.
        return JudgementTable.of(map(judgement, range(len(cases))))
