"""Writing tables: a table written chunk by chunk is byte for byte the table written whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet
import pytest
import yaml
from conftest import REPO

from losona.core.contracts import CALL_SCHEMA, PROMPT_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import ONE_ROW_GROUP, Chunks, read_yaml, row_group_sizes, write_parquet


def calls(rows: int) -> pl.DataFrame:
    """A calls table of `rows` distinct rows, sorted by key, with nulls and varied lengths."""
    index = pl.int_range(rows, eager=True).alias("i").to_frame()
    frame = index.select(
        key=pl.col("i").hash(seed=1).cast(pl.String).str.zfill(20),
        model=pl.lit("hosted_vllm/scale-test"),
        text=pl.lit("reply ").repeat_by(pl.col("i") % 17).list.join("")
        + pl.col("i").cast(pl.String),
        finish_reason=pl.when(pl.col("i") % 5 == 0).then(None).otherwise(pl.lit("stop")),
        prompt_tokens=pl.col("i") * 3,
        completion_tokens=pl.col("i") % 101,
        cost_usd=pl.col("i").cast(pl.Float64) / 7,
    )
    return frame.select([pl.col(name).cast(dtype) for name, dtype in CALL_SCHEMA.items()]).sort(
        "key"
    )


def in_chunks(whole: pl.DataFrame, size: int) -> Chunks:
    def produce() -> Iterator[pl.DataFrame]:
        for start in range(0, whole.height, size):
            yield whole.slice(start, size).clone()

    return Chunks(whole.schema, whole.height, produce)


@pytest.mark.parametrize(
    ("rows", "chunk"),
    [(0, 10), (1, 1), (999, 7), (122_881, 5_000), (245_761, 50_000), (300_000, 4_999)],
)
def test_a_table_written_in_chunks_is_byte_for_byte_the_whole_table(
    tmp_path: Path, rows: int, chunk: int
) -> None:
    whole = calls(rows)
    write_parquet(whole, tmp_path / "whole.parquet")
    write_parquet(in_chunks(whole, chunk), tmp_path / "chunks.parquet")
    assert (tmp_path / "chunks.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    groups = pyarrow.parquet.ParquetFile(tmp_path / "chunks.parquet").metadata.num_row_groups
    assert groups == len(row_group_sizes(rows)) if rows else groups == 0
    if rows > 200_000:
        assert groups > 1  # sizes above one row group are covered
    assert in_chunks(whole, chunk).collect().equals(whole)


def test_nested_columns_in_chunks_match_the_table_a_stage_built_whole(tmp_path: Path) -> None:
    """The prompt table (a list of structs), built as `table()` builds it today."""
    rows = [
        {
            "scenario_id": f"s{i:05d}",
            "condition": condition,
            "template_version": "v1",
            "messages": [{"role": "user", "content": f"Prompt {i} {condition} \u2013 " * (i % 9)}],
            "prompt_sha256": f"{i:064d}",
        }
        for i in range(2_000)
        for condition in ("naive", "norm_informed")
    ]
    whole = table(rows, PROMPT_SCHEMA, sort_by=["scenario_id", "condition"])
    write_parquet(whole, tmp_path / "whole.parquet")
    write_parquet(in_chunks(whole, 333), tmp_path / "chunks.parquet")
    assert (tmp_path / "chunks.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


def test_chunks_that_do_not_add_up_write_nothing(tmp_path: Path) -> None:
    whole = calls(100)
    short = Chunks(whole.schema, 101, in_chunks(whole, 30).produce)
    with pytest.raises(ValueError, match="held 100 rows, expected 101"):
        write_parquet(short, tmp_path / "short.parquet")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("rows", [1, 70_000, ONE_ROW_GROUP])
def test_polars_writes_a_table_of_up_to_one_row_group_s_rows_in_one(
    tmp_path: Path, rows: int
) -> None:
    """What `row_group_sizes` takes without asking polars."""
    write_parquet(calls(rows), tmp_path / "whole.parquet")
    assert pyarrow.parquet.ParquetFile(tmp_path / "whole.parquet").metadata.num_row_groups == 1


def test_every_yaml_file_of_the_repository_reads_as_pyyamls_own_loader_reads_it() -> None:
    files = sorted({*REPO.glob("conf/**/*.yaml"), *REPO.glob("losona/data/**/*.yaml")})
    assert len(files) > 50
    for path in files:
        assert read_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("a: 1\nb:\n  c: 2\n  c: 3\n", "duplicate key 'c'\n  in \"{path}\", line 4, column 3"),
        # libyaml words this "did not find expected node content": the message is PyYAML's.
        ("sweep: [\n", "expected the node content, but found '<stream end>'\n  in \"{path}\""),
    ],
)
def test_a_yaml_file_that_cannot_be_read_is_named_with_its_line(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LosonaError) as refused:
        read_yaml(path)
    assert str(refused.value).startswith(f"{path}: invalid YAML: ")
    assert said.format(path=path) in str(refused.value)
