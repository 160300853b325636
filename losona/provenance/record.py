"""What a run rests on, in one deterministic record: reports/provenance.json.

Packages, the scenario set and a hash of its rows, every config of the sweep (never a key),
each prompt template's version and hash, and the rules that turn verdicts into numbers;
nothing in it depends on when or how fast the run went, so a rerun writes the same bytes.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.catalog import CATALOG_PATH
from losona.core.config import AggregateSettings, JudgeConfig, without_password
from losona.core.errors import LosonaError
from losona.core.files import (
    display_path,
    read_json_object,
    read_yaml,
    require_outputs,
    sha256_file,
    sha256_text,
)
from losona.core.layout import RunLayout
from losona.generation import prompt as generator_prompt
from losona.judges import prompt as judge_prompt
from losona.judges.kinds import judge_kind
from losona.judges.rules import RULES_PATH
from losona.models import ModelSpec
from losona.prompts import subject as subject_prompt
from losona.results.metrics import UNSCORED_POLICY, UNSCORED_POLICY_ID, VOTE_RULE

# The distributions whose versions can change what a run writes (PyPI names).
PACKAGES = (
    "losona",
    "litellm",
    "dvc",
    "hydra-core",
    "omegaconf",
    "polars",
    "pyarrow",
    "numpy",
    "scipy",
    "matplotlib",
    "llama-cpp-python",
)

DATASET_HASH_METHOD = (
    "sha256 of the scenario rows as canonical JSON (sorted keys, one line per row, rows "
    "in scenario_id order): it depends on the rows' content, not on the Parquet writer"
)


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a run's outputs depend on, and Python's."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def scenarios_sha256(scenarios: pl.DataFrame) -> str:
    """The scenario table's content hash (see DATASET_HASH_METHOD)."""
    rows = scenarios.sort("scenario_id").iter_rows(named=True)
    return sha256_text("".join(f"{_canonical(row)}\n" for row in rows))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def template_hashes() -> dict[str, dict[str, str]]:
    """Each prompt template's version and the sha256 of every text it is built from."""
    parts: dict[str, tuple[str, dict[str, Any]]] = {
        "subject": (
            subject_prompt.SUBJECT_TEMPLATE_VERSION,
            {
                "SUBJECT_TEMPLATE": subject_prompt.SUBJECT_TEMPLATE,
                "CAST_LINE": subject_prompt.CAST_LINE,
                "CONDITION_PREFIXES": subject_prompt.CONDITION_PREFIXES,
            },
        ),
        "judge": (
            judge_prompt.JUDGE_TEMPLATE_VERSION,
            {
                "JUDGE_JSON_SHAPE": judge_prompt.JUDGE_JSON_SHAPE,
                "JUDGE_TEMPLATE": judge_prompt.JUDGE_TEMPLATE,
                "JUDGED_MESSAGE_FENCE": judge_prompt.JUDGED_MESSAGE_FENCE,
                "JUDGE_INSTRUCTIONS": judge_prompt.JUDGE_INSTRUCTIONS,
                "JUDGE_REPAIR_TEMPLATE": judge_prompt.JUDGE_REPAIR_TEMPLATE,
            },
        ),
        "generator": (
            generator_prompt.GENERATOR_TEMPLATE_VERSION,
            {
                "GENERATOR_TEMPLATE": generator_prompt.GENERATOR_TEMPLATE,
                "GENERATOR_JSON_SCHEMA": generator_prompt.GENERATOR_JSON_SCHEMA,
            },
        ),
    }
    hashes = {
        name: {"version": version, "sha256": sha256_text(_canonical(texts))}
        for name, (version, texts) in parts.items()
    }
    # The offline judge's rules and the taxonomy are data files, versioned like templates.
    for name, path in (("lexicon_rules", RULES_PATH), ("catalog", CATALOG_PATH)):
        hashes[name] = {"version": str(read_yaml(path)["version"]), "sha256": sha256_file(path)}
    return hashes


def model_record(spec: ModelSpec) -> dict[str, Any]:
    """What a model config says about the calls: provider string, endpoint(s), sampling."""
    return {
        "name": spec.name,
        "label": spec.display_name,
        "model": spec.model,
        "api_base": None if spec.api_base is None else without_password(spec.api_base),
        "endpoints": sorted(without_password(e) for e in spec.endpoints),
        "params": spec.params,
        "seed_per_trial": spec.seed_per_trial,
        "drop_params": list(spec.drop_params),
        "api_key_env": spec.api_key_env,
    }


def judge_record(config: Mapping[str, Any]) -> dict[str, Any]:
    """A judge config's record: its kind, its model if it names one, and what its kind
    records (its rules' version, its prompt's, or its members: losona/judges/kinds/)."""
    judge = JudgeConfig.from_config(config, origin=f"conf/judge/{config.get('name')}.yaml")
    record: dict[str, Any] = {"name": judge.name, "label": judge.display_name, "kind": judge.kind}
    if judge.model is not None:
        record["model"] = model_record(judge.model)
    return record | judge_kind(judge).record(judge)


def dataset_record(dataset: Mapping[str, Any], scenarios: pl.DataFrame) -> dict[str, Any]:
    """The dataset config, the sources its rows name, and their content hash."""
    return {
        "config": dict(dataset),
        "sources": sorted(scenarios["source"].unique().to_list()),
        "scenarios": scenarios.height,
        "content_sha256": scenarios_sha256(scenarios),
        "hash_method": DATASET_HASH_METHOD,
    }


def provenance(
    *,
    scenarios: pl.DataFrame,
    dataset: Mapping[str, Any],
    sweep: Mapping[str, Sequence[str]],
    models: Mapping[str, Mapping[str, Any]],
    judges: Mapping[str, Mapping[str, Any]],
    trials: int,
    bootstrap: AggregateSettings,
) -> dict[str, Any]:
    """The provenance record of a run, from plain config nodes and the scenario table."""
    return {
        "packages": package_versions(),
        "dataset": dataset_record(dataset, scenarios),
        "templates": template_hashes(),
        # Panels are recorded when a run has them (a run without keeps its record as it was).
        "sweep": {key: list(sweep[key]) for key in ("models", "conditions", "judges")}
        | ({"panels": list(sweep["panels"])} if sweep.get("panels") else {}),
        "models": {
            name: model_record(ModelSpec.from_config(dict(node), f"conf/model/{name}.yaml"))
            for name, node in models.items()
        },
        "judges": {name: judge_record(node) for name, node in judges.items()},
        "sampling": {"trials": trials},
        "aggregate": {
            "vote_rule": VOTE_RULE,
            "unscored_policy": UNSCORED_POLICY_ID,
            "unscored_policy_text": UNSCORED_POLICY,
            "bootstrap": {
                "resamples": bootstrap.resamples,
                "seed": bootstrap.seed,
                "confidence": bootstrap.confidence,
            },
        },
    }


# What every provenance record holds, each a mapping; each model and judge in it too.
SECTIONS = ("dataset", "templates", "sweep", "models", "judges", "aggregate")


def read_provenance(path: str | Path) -> dict[str, Any]:
    """The run's provenance record, refusing a missing or malformed file."""
    path = Path(path)
    require_outputs(path.parent, [path.name], "provenance")
    record = read_json_object(path, SECTIONS, remedy="rerun the provenance stage")
    for key in SECTIONS:
        if not isinstance(record[key], dict):
            raise LosonaError(
                f"{display_path(path)}: '{key}' is no mapping; rerun the provenance stage"
            )
    for key in ("models", "judges"):
        for name, node in record[key].items():
            if not isinstance(node, dict):
                raise LosonaError(
                    f"{display_path(path)}: '{key}.{name}' is no mapping; rerun the provenance "
                    "stage"
                )
    return record


def recorded_config(layout: RunLayout, record: Mapping[str, Any], group: str, name: str) -> Any:
    """A model or judge option as the run used it: the config stage's checked copy
    (data/configs/<group>/<name>.json), else what the provenance records of it; never
    conf/ as it is now."""
    path = layout.config(group, name)
    schema = ModelSpec if group == "model" else JudgeConfig
    key = f"{group}s"
    if path.is_file():
        node = read_json_object(path, (), f"rerun the {group}_config stage (dvc repro)")
        origin = display_path(path)
    elif (node := record.get(key, {}).get(name)) is not None:
        origin = f"{display_path(layout.provenance)} ({key}.{name})"
    else:
        raise LosonaError(
            f"{display_path(layout.provenance)}: no '{key}.{name}' and no {display_path(path)}: "
            "the run does not record the config it used; rerun the config and provenance stages"
        )
    return schema.from_config(_settings(node, schema), origin)


def _settings(node: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """A recorded config's settings: what the schema has and a value was given for (a record
    writes out unset ones as null and adds facts of its own, such as a judge's versions)."""
    settings = {k: v for k, v in node.items() if k in schema.model_fields and v is not None}
    if isinstance(settings.get("model"), Mapping):  # a judge's model
        settings["model"] = _settings(settings["model"], ModelSpec)
    return settings
