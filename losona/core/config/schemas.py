"""The first turn's config groups' schemas (model, batch mode, sampling, judge controls,
aggregate, judge, condition, dataset, paths), and what a run records of a model or judge.
A stage family's own settings sit in its package, so that editing them reruns no
first-turn stage.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Self, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    Field,
    Strict,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from losona.core.config.checker import Refusal
from losona.core.config.loading import ROOT_FILE, RUN_FILE
from losona.core.config.values import (
    AnyInteger,
    CostCap,
    Count,
    Dollars,
    Flag,
    LocalPath,
    Names,
    PathText,
    PositiveNumber,
    Schema,
    Text,
    WholeNumber,
    no_inf_nan,
)
from losona.core.errors import LosonaError

# -- model (conf/model/*.yaml, and a judge's `model:` node) -------------------------------

ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Call settings the model layer owns; a config's `params` may not set them.
MANAGED_PARAMS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "n",
        "api_key",
        "api_base",
        "base_url",
        "timeout",
        "num_retries",
        "max_retries",
        "mock_response",
    }
)

Params = Annotated[dict[StrictStr, Any], Field(description="a mapping of generation parameters")]


class Price(Schema):
    """What a model costs, when litellm's price map does not know it (e.g. your own server)."""

    input_usd_per_mtok: Dollars
    output_usd_per_mtok: Dollars
    # What a prompt token read from the provider's prompt cache costs; None: the input price.
    cached_input_usd_per_mtok: Dollars | None = None


class ModelSpec(Schema):
    """One model as a config describes it (conf/model/*.yaml, or a judge's `model:` node)."""

    KEY: ClassVar[str] = "model"

    name: Text  # the config option's name, e.g. "claude_opus"
    model: Text  # the litellm model string, e.g. "anthropic/claude-opus-4-8"
    # Who made the model ("Google", "Anthropic", ...): the audit's self-preference check
    # compares a judge's family with its subjects'. None: not stated (left out of the check).
    family: Text | None = None
    params: Params = Field(default_factory=dict)  # sent with every call
    label: Annotated[StrictStr, Field(description="text")] = ""  # display name; the name when empty
    api_key_env: Text | None = None  # the environment variable holding the key, never the key
    api_base: Text | None = None  # one endpoint, e.g. a local vLLM or llama.cpp server
    endpoints: Names = ()  # several endpoints serving the same model (Router)
    concurrency: Count = 8  # calls in flight at once
    timeout_s: PositiveNumber = 120.0  # per attempt
    max_attempts: Count = 6  # sends per call, rate-limited ones aside; then recorded as failed
    # How long a call may keep being rate limited (429) before it is recorded as failed:
    # a time, not a count, since a quota refills with time whatever the number of tries.
    rate_limit_patience_s: PositiveNumber = 600.0
    backoff_s: PositiveNumber = 1.0  # first retry delay; doubles each attempt, with jitter
    drop_params: Names = ()  # params removed before sending (provider rejects them)
    seed_per_trial: Flag = False  # send a seed derived from the prompt and the trial index
    price: Price | None = None  # overrides litellm's price map
    # Send calls so the provider can cache their shared prefixes (billing only: what is sent
    # as the prompt and the cache key are the same either way; losona/models/prompt_caching.py).
    prompt_caching: Flag = True
    # A stand-in served by the project's test server (scripted replies or verdicts), for
    # checking the plumbing: every table and figure marks it, so that its numbers never
    # read as a real model's or judge's. Not part of the cache key.
    test_double: Flag = False

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_config(cls, node: Any) -> Any:
        if isinstance(node, Mapping) and "api_key" in node:
            # Never echoed: the value is a secret.
            raise Refusal(
                "no key here (never put an API key in a config): name the environment "
                "variable that holds it with api_key_env, e.g. api_key_env: OPENAI_API_KEY",
                found="a key (not shown)",
                key="api_key",
            )
        return node

    @field_validator("api_key_env")
    @classmethod
    def _env_var_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_VAR_NAME.match(value):
            # Not echoed: a key pasted here by mistake must not reach a log.
            raise Refusal("the name of an environment variable", found="something else (not shown)")
        return value

    @field_validator("params")
    @classmethod
    def _generation_params_only(cls, params: dict[str, Any]) -> dict[str, Any]:
        managed = sorted(MANAGED_PARAMS & set(params))
        if managed:
            raise Refusal(f"generation parameters only; the model layer sets {managed} itself")
        no_inf_nan(params)
        return params

    @field_validator("endpoints")
    @classmethod
    def _one_way_to_reach_it(
        cls, endpoints: tuple[str, ...], info: ValidationInfo
    ) -> tuple[str, ...]:
        if endpoints and info.data.get("api_base"):
            raise Refusal("no endpoints when api_base is set (one endpoint, or several, not both)")
        if len(set(endpoints)) != len(endpoints):
            raise Refusal("distinct endpoints")
        return endpoints

    @model_validator(mode="after")
    def _seed_from_one_place(self) -> Self:
        if self.seed_per_trial and "seed" in self.params:
            raise Refusal(
                "no fixed seed when seed_per_trial is true",
                repr(self.params["seed"]),
                "params.seed",
            )
        return self

    @property
    def display_name(self) -> str:
        """The label, or the name when there is none."""
        return self.label or self.name

    def check_credentials(self) -> None:
        """Refuse to start when the key's environment variable is unset or empty."""
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise LosonaError(
                f"model '{self.name}' ({self.model}) needs its API key in the environment "
                f"variable {self.api_key_env}, which is not set: export {self.api_key_env}=... "
                "and rerun. The key is read at call time and never written anywhere."
            )

    def api_key(self) -> str | None:
        """The key from the environment, read now (never stored)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def with_params(self, **params: Any) -> ModelSpec:
        """The same model with these parameters sent on top of its own."""
        return self.model_copy(update={"params": {**self.params, **params}})


# -- batch mode (sampling.batch*, a judge config's batch*) ----------------------------------


@dataclass(frozen=True)
class BatchSettings:
    """Batch mode as a config sets it: `sampling.batch*` or a judge config's `batch*`."""

    enabled: bool
    poll_interval_s: float  # seconds between two looks at a batch's status
    rounds: int  # batches in all: the first, then one per retry of its failed lines
    where: str = "sampling."  # the settings' prefix, for messages: "sampling." or "judge."


class _Batched(Schema):
    """The three batch settings a node may carry, flat as the configs write them."""

    batch: Flag = False
    batch_poll_s: PositiveNumber = 30.0
    batch_rounds: Count = 3

    @property
    def batching(self) -> BatchSettings:
        """Batch mode as the model layer takes it."""
        return BatchSettings(self.batch, self.batch_poll_s, self.batch_rounds, f"{self.KEY}.")


# -- sampling, judge controls, aggregate (conf/config.yaml, conf/run.yaml) -------------------------


class SamplingSettings(_Batched):
    """The `sampling:` node of conf/config.yaml, with K (`trials`) from conf/run.yaml."""

    KEY: ClassVar[str] = "sampling"
    FILE: ClassVar[str] = str(ROOT_FILE)

    trials: Count  # conf/run.yaml
    dry_run: Flag
    max_cost_usd: CostCap


class ControlsSettings(Schema):
    """What a judge that cannot judge its validity controls does (conf/run.yaml)."""

    KEY: ClassVar[str] = "judge_controls"
    FILE: ClassVar[str] = str(RUN_FILE)

    # false: such a judge stops the run before its cells (losona/judges/health.py).
    judge_anyway: Flag


class AggregateSettings(Schema):
    """The scenario bootstrap's settings (conf/config.yaml, `aggregate:`)."""

    KEY: ClassVar[str] = "aggregate"
    FILE: ClassVar[str] = str(ROOT_FILE)

    resamples: Count
    seed: WholeNumber
    confidence: Annotated[
        float,
        Strict(),
        Field(gt=0, lt=1, allow_inf_nan=False, description="a number between 0 and 1 (e.g. 0.95)"),
    ]


# -- judge (conf/judge/*.yaml) --------------------------------------------------------------


# A panel's settings (docs/judges.md, "Judge panels"): how its members' verdicts combine.
PanelRule = Literal["majority", "unanimous"]
UnscoredPolicy = Literal["abstain", "void"]
PanelMembers = Annotated[tuple[Text, ...], Field(min_length=2)]


class JudgeConfig(_Batched):
    """A judge: the lexicon rules, an LLM through the model layer, or a panel of judges."""

    KEY: ClassVar[str] = "judge"

    name: Text
    label: Annotated[StrictStr, Field(description="text")] = ""
    # One of JUDGE_KINDS' names (below): what else the config must and must not hold.
    kind: StrictStr
    model: ModelSpec | None = None
    max_cost_usd: CostCap = None
    # How the verdict's schema goes with each call; checked against the judge's response
    # formats when the judge is built (losona/judges/llm.py). None: the paper's setting.
    structured_output: Text | None = None
    # kind panel only (losona/judges/panels.py): the judges it combines, how their votes decide,
    # and what an unscored member's verdict does (abstain: the others decide; void: the
    # panel's verdict is unscored too). Each must be written out: none has a default.
    members: PanelMembers | None = Field(
        None, description="a list of at least two judge names, each once"
    )
    rule: PanelRule | None = None
    unscored_members: UnscoredPolicy | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _a_known_kind(cls, kind: Any) -> Any:
        if not (isinstance(kind, str) and kind in JUDGE_KINDS):
            # In the words pydantic used for the Literal this field once was.
            *names, last = [repr(name) for name in JUDGE_KINDS]
            raise Refusal(f"{', '.join(names)} or {last}" if names else last)
        return kind

    @model_validator(mode="before")
    @classmethod
    def _no_settings_of_other_kinds(cls, node: Any) -> Any:
        if not isinstance(node, Mapping):
            return node
        kind = node.get("kind")
        mine = JUDGE_KINDS.get(kind) if isinstance(kind, str) else None
        # Settings for a model would silently do nothing on a judge that calls none.
        if mine is not None and mine.refuses_model_settings is not None:
            for key in mine.refuses_model_settings:
                if key in node:
                    raise Refusal(f"no such setting: {mine.called} calls no model", "one", key)
            if node.get("batch"):
                raise Refusal(f"false: {mine.called} calls no model", "true", "batch")
        for name, other in JUDGE_KINDS.items():
            for key in other.own_settings:
                if key in node and other is not mine:
                    raise Refusal(
                        f"no such setting: only a judge of kind {name} has it", "one", key
                    )
        return node

    @model_validator(mode="after")
    def _what_its_kind_needs(self) -> Self:
        check = JUDGE_KINDS[self.kind].check
        if check is not None:
            check(self)
        return self

    @property
    def family(self) -> str | None:
        """The family of the judge's model; None for rules and panels (no one model)."""
        return None if self.model is None else self.model.family

    @property
    def display_name(self) -> str:
        """The label, or the name when there is none."""
        return self.label or self.name

    @property
    def test_double(self) -> bool:
        """Whether its verdicts come from a test double (its model node says so)."""
        return self.model is not None and self.model.test_double


@dataclass(frozen=True)
class JudgeKindSettings:
    """A kind of judge, as registered: what it asks of its config, what is known of its judges
    by kind alone, and the module that holds the rest, its behaviour.

    Every JudgeConfig is checked against its kind's. How its judge is made and recorded is its
    JudgeKind (losona/judges/kinds/), which this names but never imports: a config is read and
    checked without any judge code (preflight, the config stages), and aggregate reads
    `own_words` without it.
    """

    # How a refusal names a judge of the kind ("the lexicon judge", "a panel").
    called: str
    # The module whose KIND is its JudgeKind, imported when a judge of the kind is made or
    # recorded (losona.judges.kinds.judge_kind).
    behaviour: str
    # The model settings it refuses, with batch mode, since it calls no model (None: it calls
    # one, and takes them).
    refuses_model_settings: tuple[str, ...] | None = None
    # Settings only this kind has: a judge of any other kind is refused them.
    own_settings: tuple[str, ...] = ()
    # What its config must hold beyond each setting's own check: raises a Refusal.
    check: Callable[[JudgeConfig], None] | None = None
    # Whether its reasoning is a model's own words, so that the same reasoning on most
    # verdicts, or none, says the verdicts say nothing (losona/judges/health.py).
    own_words: bool = False
    # Whether it judges nothing itself but combines other judges' verdicts (a panel: it is
    # run by the panel stages, and the self-preference check leaves it out).
    combines: bool = False
    # Why its verdicts cannot change when judged again, as the determinism audit's `method`
    # says it ("rules", "panel"); None: the audit judges it again to see.
    determinism: str | None = None


def _llm_needs_a_model(config: JudgeConfig) -> None:
    if config.model is None:
        raise Refusal("a node shaped like conf/model/*.yaml (kind llm needs one)", "none", "model")


def _panel_needs_its_members(config: JudgeConfig) -> None:
    for key, expected in (
        ("members", "a list of at least two judge names (kind panel needs it)"),
        ("rule", f"one of {list(get_args(PanelRule))} (kind panel needs it)"),
        ("unscored_members", f"one of {list(get_args(UnscoredPolicy))} (kind panel needs it)"),
    ):
        if getattr(config, key) is None:
            raise Refusal(expected, "nothing (it is missing)", key)
    assert config.members is not None
    if len(set(config.members)) != len(config.members):
        raise Refusal("each member once", repr(list(config.members)), "members")
    if config.name in config.members:
        raise Refusal("other judges than the panel itself", config.name, "members")


# Every kind of judge a config may name, by name, each registered once (docs/judges.md,
# "Adding a judge kind"); losona.judges.kinds.register adds one.
JUDGE_KINDS: dict[str, JudgeKindSettings] = {
    "lexicon": JudgeKindSettings(
        called="the lexicon judge",
        behaviour="losona.judges.kinds.lexicon",
        refuses_model_settings=("model", "structured_output"),
        determinism="rules",
    ),
    "llm": JudgeKindSettings(
        called="an LLM judge",
        behaviour="losona.judges.kinds.llm",
        check=_llm_needs_a_model,
        own_words=True,
    ),
    "panel": JudgeKindSettings(
        called="a panel",
        behaviour="losona.judges.kinds.panel",
        refuses_model_settings=("model", "structured_output", "max_cost_usd"),
        own_settings=("members", "rule", "unscored_members"),
        check=_panel_needs_its_members,
        combines=True,
        determinism="panel",
    ),
}


def judge_kind_settings(kind: str) -> JudgeKindSettings:
    """The settings of a kind of judge, by its name (as a config or provenance names it)."""
    if kind not in JUDGE_KINDS:
        raise LosonaError(
            f"unknown judge kind {kind!r}: expected one of {list(JUDGE_KINDS)} "
            "(losona/judges/kinds/)"
        )
    return JUDGE_KINDS[kind]


# -- condition, dataset, paths ---------------------------------------------------------------


class ConditionConfig(Schema):
    """A prompting condition (conf/condition/*.yaml); its text is in losona/prompts/subject.py."""

    KEY: ClassVar[str] = "condition"

    name: Text
    label: Text


class DatasetConfig(Schema):
    """Where scenarios come from (conf/dataset/*.yaml), and which of them a run keeps."""

    KEY: ClassVar[str] = "dataset"

    # Every option names itself; a dataset built in code (tests, notebooks) need not.
    name: Text | None = None
    kind: Literal["bundled", "local", "huggingface"]
    path: LocalPath | None = None  # local: a .jsonl or .parquet file
    # A subset: scenario_ids keeps the ones named; limit then keeps that many.
    limit: Annotated[
        Count | None, Field(description="a positive whole number of scenarios or null (all)")
    ] = None
    limit_seed: AnyInteger = 0
    scenario_ids: Annotated[tuple[Text, ...], Field(description="a list of ids")] = ()
    # huggingface: the release and its mapping onto the scenario contract.
    repo_id: Text | None = None
    revision: Text | None = None
    local_dir: LocalPath | None = None
    data_files: Text | None = None
    columns: dict[StrictStr, StrictStr] | None = None
    turn_fields: dict[StrictStr, StrictStr] | None = None
    cast_fields: dict[StrictStr, StrictStr] | None = None
    elicitor_is_last_turn: Flag = False
    fill_from_catalog: tuple[Text, ...] = ()

    @field_validator("scenario_ids")
    @classmethod
    def _each_once(cls, ids: tuple[str, ...]) -> tuple[str, ...]:
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise Refusal("each id once", f"ids listed twice: {twice}")
        return ids

    @model_validator(mode="after")
    def _kind_has_its_settings(self) -> Self:
        needs = {
            "local": ("path",),
            "huggingface": (
                "repo_id",
                "revision",
                "data_files",
                "columns",
                "turn_fields",
                "cast_fields",
            ),
        }
        for key in needs.get(self.kind, ()):
            if getattr(self, key) is None:
                raise Refusal(f"a value (kind {self.kind} needs it)", "nothing", key)
        return self

    def settings(self) -> dict[str, Any]:
        """The settings the file gives, as plain values (what provenance records)."""
        return self.model_dump(mode="json", exclude_unset=True)


class Paths(Schema):
    """Every file location the pipeline reads or writes (conf/paths/default.yaml)."""

    KEY: ClassVar[str] = "paths"

    scenarios: PathText
    prompts: PathText
    responses_dir: PathText
    verdicts_dir: PathText
    panel_votes_dir: PathText
    judge_controls_dir: PathText
    judge_controls_reports_dir: PathText
    judge_logs_dir: PathText
    reports_dir: PathText
    provenance: PathText
    audit_dir: PathText
    figures_dir: PathText
    labels_dir: PathText
    configs_dir: PathText
    label_sheet: PathText
    label_sheet_html: PathText
    label_key: PathText
    labels: PathText
    generation_dir: PathText
    generation_reports_dir: PathText
    generation_accept: PathText
    generated_dir: PathText
    dynamic_dir: PathText
    dynamic_reports_dir: PathText
    dynamic_logs_dir: PathText
    calls_dir: PathText
    calls: PathText | None  # null: no published calls below the cache, on purpose
    call_cache: PathText


# -- what a run records of a model or judge config -------------------------------------


def without_password(url: str) -> str:
    """A URL with any user:password removed: a secret must never reach a file."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


def config_record(checked: ModelSpec | JudgeConfig) -> dict[str, Any]:
    """A checked model or judge config as plain values, defaults filled in, no password:
    what the config stage records of an option."""
    record: dict[str, Any] = checked.model_dump(mode="json")
    node = record if isinstance(checked, ModelSpec) else record.get("model")
    if node is not None:
        if node.get("api_base"):
            node["api_base"] = without_password(node["api_base"])
        node["endpoints"] = [without_password(e) for e in node["endpoints"]]
    return record
