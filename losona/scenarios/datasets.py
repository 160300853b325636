"""Where scenarios come from: the bundled set, a user's file, or the Hugging Face release.

Each loader turns its source into (origin, row) pairs in the scenario contract; fetch
validates all of them and only then builds the table, so bad input never reaches disk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.catalog import Catalog, Norm, load_catalog
from losona.core.config import DatasetConfig
from losona.core.contracts import SCENARIO_SCHEMA, subset_source, table
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_yaml, sha256_file, sha256_text
from losona.core.formatting import counted
from losona.scenarios.followups import FIELD as FOLLOWUP
from losona.scenarios.followups import Followup, check_followups
from losona.scenarios.validate import JUDGE_FIELDS, Problem, ScenarioError, check_scenarios

Rows = list[tuple[str, dict[str, Any]]]

BUNDLED_DIR = Path(str(resources.files("losona") / "data" / "scenarios"))
CONTRACT_FIELDS = frozenset(SCENARIO_SCHEMA.names()) - {"source"}

# The authoring format of a bundled scenario file (see losona/data/scenarios/README.md): the
# contract's fields with the elicitor as one mapping, the judge fields left to the catalog,
# and the dynamic extension's material (checked, kept out of the table).
_ELICITOR_FIELDS = {"elicitor_index", "elicitor_actor", "elicitor_content"}
_BUNDLED_KEYS = (CONTRACT_FIELDS - _ELICITOR_FIELDS - set(JUDGE_FIELDS)) | {"elicitor", FOLLOWUP}
_LOCAL_KEYS = CONTRACT_FIELDS | {"source", FOLLOWUP}


def fetch_scenarios(
    dataset: DatasetConfig | Mapping[str, Any],
    *,
    origin: Callable[[str], str] | None = None,
) -> pl.DataFrame:
    """Load the configured dataset, validate every row (follow-ups too, then left out), and
    return the sorted scenario table; `origin`: where each dotted key's value came from."""
    dataset = _checked(dataset)
    rows = [
        {key: value for key, value in row.items() if key != FOLLOWUP}
        for _, row in _validated_rows(dataset)
    ]
    return table(_subset(rows, dataset, origin), SCENARIO_SCHEMA, sort_by=["scenario_id"])


def fetch_followups(dataset: DatasetConfig | Mapping[str, Any]) -> dict[str, Followup]:
    """Every scenario's follow-up material, by scenario id, checked against its scenario as
    fetch reads the whole dataset; scenarios without any are absent."""
    dataset = _checked(dataset)
    found = {}
    for _, row in _validated_rows(dataset):
        if row.get(FOLLOWUP) is not None:
            source = followup_version() if dataset.kind == "bundled" else str(row["source"])
            found[str(row["scenario_id"])] = Followup.of(row[FOLLOWUP], source)
    return found


def _checked(dataset: DatasetConfig | Mapping[str, Any]) -> DatasetConfig:
    if isinstance(dataset, DatasetConfig):
        return dataset
    # Plain values: checked before any loading.
    return DatasetConfig.from_config(dataset, origin=f"conf/dataset/{dataset.get('name')}.yaml")


def _validated_rows(dataset: DatasetConfig) -> Rows:
    catalog = load_catalog()
    if dataset.kind == "bundled":
        rows = load_bundled(catalog)
    elif dataset.kind == "local":
        rows = load_local(Path(str(dataset.path)))
    else:
        rows = load_huggingface(dataset, catalog)
    check_scenarios(rows, catalog)
    check_followups(rows)
    return rows


def _subset(
    rows: list[dict[str, Any]], dataset: DatasetConfig, origin: Callable[[str], str] | None
) -> list[dict[str, Any]]:
    """Part of a dataset, to try a provider or a judge for cents: the `scenario_ids` named,
    then `limit` of them, norms taking turns in an order fixed by the seed and the ids; each
    row's `source` says how it was chosen (by default the keys come from the dataset's file)."""
    name = str(dataset.name or dataset.kind)
    where = origin or (lambda key: f"conf/dataset/{name}.yaml")
    ids, limit = dataset.scenario_ids, dataset.limit
    total, notes = len(rows), []
    of_what = f"of dataset '{name}'"
    if ids:
        known = {row["scenario_id"] for row in rows}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise LosonaError(
                f"{where('dataset.scenario_ids')}: 'dataset.scenario_ids': expected "
                f"ids of the dataset's scenarios (it has {total}, named in the scenario_id "
                f"column of a full fetch), found ids not in the dataset: {unknown}"
            )
        rows = [row for row in rows if row["scenario_id"] in ids]
        notes.append(f"{len(rows)} scenario_ids")
        of_what = f"{of_what} that 'dataset.scenario_ids' keeps"
    if limit is not None and limit > len(rows):
        # A limit is there to spend less: one past the size would run, and pay for,
        # every scenario while the run's settings read as a subset.
        raise LosonaError(
            f"{where('dataset.limit')}: 'dataset.limit': {limit} is more than "
            f"the {counted(len(rows), 'scenario')} {of_what}; set a smaller limit, or null "
            "for every scenario"
        )
    if limit is not None and limit < len(rows):
        rows = _stratified(rows, limit, dataset.limit_seed)
        notes.append(f"limit {limit} stratified by norm, seed {dataset.limit_seed}")
    if not notes:
        return rows
    how = ", ".join(notes)
    return [{**row, "source": subset_source(row["source"], total, how)} for row in rows]


def _stratified(rows: list[dict[str, Any]], limit: int, seed: int) -> list[dict[str, Any]]:
    def rank(value: str) -> str:
        return hashlib.sha256(f"{seed}:{value}".encode()).hexdigest()

    by_norm: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: rank(r["scenario_id"])):
        by_norm.setdefault(row["norm_id"], []).append(row)
    turns = [by_norm[norm] for norm in sorted(by_norm, key=rank)]
    rounds = itertools.zip_longest(*turns)  # norms take turns, each giving its next
    return [row for round_ in rounds for row in round_ if row is not None][:limit]


def bundled_version() -> str:
    """The bundled set's name@version from its manifest, as recorded in `source`."""
    manifest = read_yaml(BUNDLED_DIR / "manifest.yaml")
    return f"{manifest['name']}@{manifest['version']}"


def followup_version() -> str:
    """The bundled follow-up material's own source, e.g. bundled:losona-bundled-followups@1:
    versioned apart, as the scenarios' version is in every row of every run."""
    path = BUNDLED_DIR / "manifest.yaml"
    manifest = read_yaml(path)
    version = manifest.get("followup_version") if isinstance(manifest, dict) else None
    if version is None:
        raise LosonaError(
            f"{display_path(path)}: 'followup_version': expected the version of the "
            "follow-up material (bump it whenever a followup: block changes), found nothing"
        )
    return f"bundled:{manifest['name']}-followups@{version}"


def bundled_files() -> list[Path]:
    """Every scenario file of the bundled set, sorted by name."""
    return sorted(p for p in BUNDLED_DIR.glob("*.yaml") if p.name != "manifest.yaml")


def load_bundled(catalog: Catalog) -> Rows:
    """The bundled scenario files as contract rows, with judge fields from the catalog."""
    source = f"bundled:{bundled_version()}"
    rows: Rows = []
    problems: list[Problem] = []
    for path in bundled_files():
        raw = read_yaml(path)
        origin = display_path(path)
        if not isinstance(raw, dict):
            problems.append(Problem(origin, None, "(file)", "a YAML mapping", type(raw).__name__))
            continue
        sid = raw.get("scenario_id") if isinstance(raw.get("scenario_id"), str) else None
        problems += _unknown(origin, raw, _BUNDLED_KEYS, f"one of {sorted(_BUNDLED_KEYS)}")
        if sid is not None and sid != path.stem:
            problems.append(
                Problem(origin, sid, "scenario_id", f"the file name '{path.stem}'", repr(sid))
            )
        rows.append((origin, bundled_row(raw, catalog, source)))
    if problems:
        raise ScenarioError(problems)
    return rows


def _unknown(
    origin: str, record: Mapping[str, Any], known: frozenset[str], expected: str
) -> list[Problem]:
    """A problem for each field of a record that its format does not have."""
    sid = record.get("scenario_id") if isinstance(record.get("scenario_id"), str) else None
    return [
        Problem(origin, sid, key, expected, "an unknown field")
        for key in sorted(set(record) - known)
    ]


def bundled_row(raw: Mapping[str, Any], catalog: Catalog, source: str) -> dict[str, Any]:
    """Turn one authored scenario into a contract row: turns numbered from 1, the elicitor
    after them, judge fields filled; malformed parts are left for the validator to name."""
    turns = raw.get("turns")
    if isinstance(turns, list):
        turns = [
            {
                "index": i,
                "actor": t.get("actor"),
                "content": t.get("content"),
                "is_demo": t.get("is_demo", False),
            }
            if isinstance(t, dict)
            else t
            for i, t in enumerate(turns, start=1)
        ]
    elicitor: dict[str, Any] = raw["elicitor"] if isinstance(raw.get("elicitor"), dict) else {}
    norm = catalog.norms.get(str(raw.get("norm_id")))
    row: dict[str, Any] = {key: raw.get(key) for key in CONTRACT_FIELDS}
    row.update(
        turns=turns,
        elicitor_index=len(turns) + 1 if isinstance(turns, list) else None,
        elicitor_actor=elicitor.get("actor"),
        elicitor_content=elicitor.get("content"),
        source=source,
    )
    if FOLLOWUP in raw:  # kept beside the row for its own checks, never in the table
        row[FOLLOWUP] = raw[FOLLOWUP]
    # The catalog is the one place for norm text; a bundled file never repeats it.
    row.update(_from_catalog(norm, JUDGE_FIELDS))
    return row


def _from_catalog(norm: Norm | None, fields: Iterable[str]) -> dict[str, Any]:
    """The contract fields a norm of the catalog gives (its `statement` is `norm_statement`)."""
    return {
        field: getattr(norm, "statement" if field == "norm_statement" else field, None)
        for field in fields
    }


def load_local(path: Path) -> Rows:
    """A user's scenario file in the contract's shape: .jsonl (one object a line) or .parquet."""
    if not path.is_file():
        raise LosonaError(
            f"{path}: scenario file not found (set dataset.path to a .jsonl or .parquet file)"
        )
    source = f"local:{path.name}@sha256:{sha256_file(path)[:16]}"
    if path.suffix == ".jsonl":
        records = list(_read_jsonl(path))
    elif path.suffix == ".parquet":
        records = [(f"{path}:row {i + 1}", r) for i, r in enumerate(_read_parquet(path))]
    else:
        raise LosonaError(f"{path}: expected a .jsonl or .parquet file, found '{path.suffix}'")
    problems: list[Problem] = []
    rows: Rows = []
    for origin, record in records:
        if isinstance(record, dict):
            problems += _unknown(origin, record, _LOCAL_KEYS, "a field of the scenario contract")
            extra = {FOLLOWUP: record[FOLLOWUP]} if record.get(FOLLOWUP) is not None else {}
            record = {key: record.get(key) for key in CONTRACT_FIELDS} | {"source": source}
            record |= extra
        rows.append((origin, record))
    if problems:
        raise ScenarioError(problems)
    return rows


def _read_jsonl(path: Path) -> Iterable[tuple[str, Any]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LosonaError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    problems: list[Problem] = []
    records: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        origin = f"{path}:{number}"
        try:
            records.append((origin, json.loads(line)))
            continue
        except json.JSONDecodeError as exc:
            found = f"invalid JSON ({exc.msg} at column {exc.colno})"
        except RecursionError:
            found = "JSON nested too deeply"
        problems.append(Problem(origin, None, "(line)", "one JSON object", found))
    if problems:
        raise ScenarioError(problems)
    if not records:
        raise LosonaError(f"{path}: no scenarios in the file")
    return records


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        rows = pl.read_parquet(path).to_dicts()
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise LosonaError(f"{path}: cannot be read as Parquet ({exc})") from None
    if not rows:
        raise LosonaError(f"{path}: no scenarios in the file")
    return rows


def load_huggingface(dataset: DatasetConfig, catalog: Catalog) -> Rows:
    """The released set from a Hub snapshot (downloaded, or a local copy), mapped to the contract
    by conf/dataset/losona_hf.yaml; each expected column that is absent is named."""
    repo_id, revision = str(dataset.repo_id), str(dataset.revision)
    local_dir = dataset.local_dir
    if local_dir:
        root = Path(str(local_dir))
        if not root.is_dir():
            raise LosonaError(f"dataset.local_dir={root}: no such folder")
        files = _data_files(root, dataset)
        digest = sha256_text("".join(sha256_file(f) for f in files))[:16]
        source = f"hf:{repo_id}@{revision}:local-copy-sha256:{digest}"
    else:
        root = _download_snapshot(repo_id, revision)
        files = _data_files(root, dataset)
        # The snapshot folder is named after the exact commit the revision resolved to.
        source = f"hf:{repo_id}@{root.name}"
    records: list[tuple[str, dict[str, Any]]] = []
    for path in files:
        try:
            frame = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_ndjson(path)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise LosonaError(f"{path}: cannot be read as {path.suffix[1:]} data ({exc})") from None
        records += [(f"{path}:row {i + 1}", r) for i, r in enumerate(frame.to_dicts())]
    mapping = _Mapping(dataset, catalog)
    return [(origin, mapping.apply(record, source)) for origin, record in records]


def _download_snapshot(repo_id: str, revision: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision))
    except Exception as exc:
        raise LosonaError(
            f"could not download the dataset {repo_id} at revision {revision} from the Hugging "
            f"Face Hub ({type(exc).__name__}: {exc}).\n"
            "Expected: a reachable Hub (or HF_ENDPOINT mirror) and, for a gated dataset, "
            "HF_TOKEN in the environment.\n"
            "To use a copy you already have, point the loader at it: "
            "python stages/fetch.py dataset=losona_hf dataset.local_dir=/path/to/snapshot"
        ) from None


def _data_files(root: Path, dataset: DatasetConfig) -> list[Path]:
    pattern = str(dataset.data_files)
    files = sorted(p for p in root.glob(pattern) if p.is_file())
    if not files:
        present = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())[:20]
        raise LosonaError(
            f"{root}: expected data files matching '{pattern}' (dataset.data_files), "
            f"found none; files present: {present or 'none'}"
        )
    return files


class _Mapping:
    """Applies the release-to-contract column mapping of the dataset config."""

    def __init__(self, dataset: DatasetConfig, catalog: Catalog) -> None:
        self.dataset, self.catalog = dataset, catalog
        self.where = f"conf/dataset/{dataset.name}.yaml"

    def _get(self, record: Mapping[str, Any], column: str, field: str, origin: str) -> Any:
        if column not in record:
            raise LosonaError(
                f"{origin}: expected the release column '{column}' (mapped to the contract "
                f"field '{field}' in {self.where}), found columns {sorted(record)}. Fix the "
                f"mapping in {self.where} or point the loader at a local copy with "
                "dataset.local_dir=..."
            )
        return record[column]

    def apply(self, record: Mapping[str, Any], source: str) -> dict[str, Any]:
        # The schema requires the three mappings of kind huggingface.
        columns = self.dataset.columns or {}
        cast_fields, turn_fields = self.dataset.cast_fields or {}, self.dataset.turn_fields or {}
        origin = str(record.get(columns.get("scenario_id", ""), "?"))
        row: dict[str, Any] = {
            field: self._get(record, column, field, origin) for field, column in columns.items()
        }
        # Anything but a list is passed through unchanged, for the validator to name.
        if isinstance(row["cast"], list):
            row["cast"] = [self._sub(m, cast_fields, "cast", origin) for m in row["cast"]]
        if isinstance(row["turns"], list):
            row["turns"] = [self._sub(t, turn_fields, "turns", origin) for t in row["turns"]]
        turns = row["turns"]
        if self.dataset.elicitor_is_last_turn and isinstance(turns, list) and turns:
            if not isinstance(turns[-1], Mapping):
                raise LosonaError(
                    f"{origin}: the last turn is the elicitor (elicitor_is_last_turn in "
                    f"{self.where}), so it must be a mapping with index, actor and content, "
                    f"found {turns[-1]!r:.60}"
                )
            last = turns.pop()
            row.update({f"elicitor_{key}": last[key] for key in ("index", "actor", "content")})
        norm = self.catalog.norms.get(str(row.get("norm_id")))
        row.update(_from_catalog(norm, self.dataset.fill_from_catalog))
        row.setdefault("end_goal", None)
        row["source"] = source
        return row

    def _sub(self, item: Any, fields: Mapping[str, str], name: str, origin: str) -> Any:
        if not isinstance(item, Mapping):
            return item
        return {
            field: self._get(item, column, f"{name}.{field}", origin)
            for field, column in fields.items()
        }
