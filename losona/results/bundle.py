"""A report bundle: what aggregate, dynamic_aggregate and audit each write to a reports folder
(named CSV tables, perhaps a Markdown text, and `metrics.json`), written and read one way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import polars as pl

from losona.core.files import (
    read_csv,
    read_json_object,
    read_text,
    require_outputs,
    write_json,
    write_text,
)

METRICS = "metrics.json"


@dataclass(frozen=True)
class BundleFiles:
    """The files one stage writes to its reports folder, and what reading them back checks:
    CSV `tables` by name with their schema, `texts`, and the `metrics_keys` it must have."""

    stage: str
    tables: Mapping[str, pl.Schema]
    texts: tuple[str, ...] = ()
    metrics_keys: tuple[str, ...] = ("settings",)

    @property
    def names(self) -> tuple[str, ...]:
        """Every file of the bundle, metrics.json last."""
        return (*self.tables, *self.texts, METRICS)


@dataclass(frozen=True)
class ReportBundle:
    """A stage's reports: CSV tables and texts by file name, and metrics.json's object."""

    tables: dict[str, pl.DataFrame]
    metrics: dict[str, Any]
    texts: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.tables[name]

    @property
    def confidence(self) -> str:
        """The intervals' confidence level as reports write it, e.g. "95%"."""
        return f"{self.metrics['settings']['confidence']:g}%"

    def write(self, folder: str | Path) -> None:
        """Every file under `folder`, each atomically: same bundle, same bytes."""
        root = Path(folder)
        for name, df in self.tables.items():
            write_text(df.write_csv(), root / name)
        for name, text in self.texts.items():
            write_text(text, root / name)
        write_json(self.metrics, root / METRICS)

    @classmethod
    def read(cls, folder: str | Path, files: BundleFiles) -> Self:
        """Read back what `write` wrote, refusing a missing file or a changed shape."""
        root = Path(folder)
        require_outputs(root, files.names, stage=files.stage)
        remedy = f"rerun {files.stage}"
        tables = {
            name: read_csv(root / name, schema, remedy) for name, schema in files.tables.items()
        }
        metrics = read_json_object(root / METRICS, files.metrics_keys, remedy)
        texts = {name: read_text(root / name, remedy) for name in files.texts}
        return cls(tables, metrics, texts)
