"""Where every file of a run lives: one object made from the checked `paths` config.

Stages ask a `RunLayout` for a file rather than spelling its path; dvc.yaml spells the
same places with `${paths.*}`, and tests/test_layout.py holds the two together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, get_args

from losona.core.config import Paths

# The folders under calls_folder, one per stage that calls models.
SAMPLE_CALLS, JUDGE_CALLS, CONTROLS_CALLS = "sample", "judge", "judge_controls"
# The dynamic stages' (the group model's calls are written by dynamic_render: an empty
# table when the follow-ups are scripted).
DynamicCalls = Literal["dynamic_group", "dynamic_sample", "dynamic_judge"]
DYNAMIC_CALLS: tuple[DynamicCalls, ...] = get_args(DynamicCalls)
# A run log sits beside the table it was made with, or in a logs folder: it differs on
# every run, so it is never a DVC output.
LOG_SUFFIX = ".log.json"


class DynamicSweep(Protocol):
    """The cells the dynamic turn runs (DynamicSettings has them). Named by shape, not
    imported: the layout serves first-turn stages, which must not depend on the dynamic
    turn's settings."""

    @property
    def judges(self) -> Sequence[str]: ...
    @property
    def models(self) -> Sequence[str]: ...
    @property
    def conditions(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class GenerationFiles:
    """Every file the generation stages read or write: folders from conf/paths/, file names
    fixed here and in generation/dvc.yaml."""

    candidates: Path  # generate's candidate table
    screened: Path  # the candidate table with screening outcomes
    screen_verdicts: Path  # one verdict per candidate x baseline x trial
    run_logs: Path  # the folder of run logs (latency, cache hits, spend), not tracked
    generate_summary: Path
    screen_summary: Path
    cells: Path  # the per-cell counts
    review_html: Path
    review_csv: Path
    accept_list: Path
    generated_folder: Path  # curated scenario sets


@dataclass(frozen=True)
class RunLayout:
    """Every path of a run, from the checked `paths` node (conf/paths/default.yaml)."""

    paths: Paths
    # A scratch copy that reproduce replays the run in: every model call is answered from
    # the run's published calls alone, and none is made (losona/models/call_store.py).
    replaying: bool = False

    # -- the first stages ----------------------------------------------------------------------

    @property
    def configs_folder(self) -> Path:
        """Every checked config of the sweep (and preflight's mark)."""
        return Path(self.paths.configs_dir)

    @property
    def run_checked(self) -> Path:
        """preflight's mark: the whole run was checked."""
        return self.configs_folder / "run.checked"

    def config(self, group: str, name: str) -> Path:
        """One option of the sweep as checked (config stage): configs/<group>/<name>.json."""
        return self.configs_folder / group / f"{name}.json"

    @property
    def scenarios(self) -> Path:
        """fetch's scenario table."""
        return Path(self.paths.scenarios)

    @property
    def prompts(self) -> Path:
        """render's prompt table, every condition of the sweep."""
        return Path(self.paths.prompts)

    # -- sampling --------------------------------------------------------------------------

    @property
    def responses_folder(self) -> Path:
        """Every cell's responses, <model>/<condition>.parquet, and their run logs."""
        return Path(self.paths.responses_dir)

    def responses(self, model: str, condition: str) -> Path:
        """One cell's responses (sample)."""
        return self.responses_folder / model / f"{condition}.parquet"

    def sample_log(self, model: str, condition: str) -> Path:
        """One sample cell's run log, beside its responses."""
        return self.responses(model, condition).with_suffix(LOG_SUFFIX)

    # -- judging ---------------------------------------------------------------------------

    @property
    def verdicts_folder(self) -> Path:
        """Every judge's verdicts, <judge>/<model>/<condition>.parquet (subject verdicts only)."""
        return Path(self.paths.verdicts_dir)

    def judge_verdicts(self, judge: str) -> Path:
        """One judge's verdicts on every cell (a folder: what a panel writes whole)."""
        return self.verdicts_folder / judge

    def verdicts(self, judge: str, model: str, condition: str) -> Path:
        """One judge's verdicts on one cell (judge, or panel)."""
        return self.judge_verdicts(judge) / model / f"{condition}.parquet"

    @property
    def judge_logs_folder(self) -> Path:
        """The run logs of LLM judges: <judge>/<model>/<condition>.log.json and the rest."""
        return Path(self.paths.judge_logs_dir)

    def judge_log(self, judge: str, model: str, condition: str) -> Path:
        """One judge cell's run log."""
        return self.judge_logs_folder / judge / model / f"{condition}{LOG_SUFFIX}"

    def controls_log(self, judge: str) -> Path:
        """The run log of one judge's validity controls."""
        return self.judge_logs_folder / judge / f"controls{LOG_SUFFIX}"

    def determinism_log(self, judge: str) -> Path:
        """The run log of one judge judging again for the audit's determinism check."""
        return self.judge_logs_folder / judge / f"determinism{LOG_SUFFIX}"

    @property
    def controls_folder(self) -> Path:
        """Every judge's validity controls, <judge>.parquet."""
        return Path(self.paths.judge_controls_dir)

    def controls(self, judge: str) -> Path:
        """One judge's validity controls: one verdict per example response."""
        return self.controls_folder / f"{judge}.parquet"

    @property
    def controls_reports_folder(self) -> Path:
        """Every judge's control summary, <judge>.json (DVC metrics)."""
        return Path(self.paths.judge_controls_reports_dir)

    def controls_summary(self, judge: str) -> Path:
        """How many of its validity controls one judge got right (a DVC metric)."""
        return self.controls_reports_folder / f"{judge}.json"

    def panel_votes_folder(self, panel: str) -> Path:
        """Each member's votes as one panel reads them (panel_votes writes, panel reads)."""
        return Path(self.paths.panel_votes_dir) / panel

    def panel_votes(self, panel: str, member: str) -> Path:
        """One judge's verdicts on the sweep's cells, as a panel's votes (empty: no member)."""
        return self.panel_votes_folder(panel) / f"{member}.parquet"

    def panel_control_votes(self, panel: str, member: str) -> Path:
        """One judge's validity controls, as a panel's votes (empty: no member)."""
        return self.panel_votes_folder(panel) / f"{member}.controls.parquet"

    # -- calls -----------------------------------------------------------------------------

    @property
    def calls_folder(self) -> Path:
        """Every cell's calls files, one folder per stage that calls models."""
        return Path(self.paths.calls_dir)

    def sample_calls(self, model: str, condition: str) -> Path:
        """The calls one sample cell's responses were built from."""
        return self.calls_folder / SAMPLE_CALLS / model / f"{condition}.parquet"

    def judge_calls(self, judge: str, model: str, condition: str) -> Path:
        """The calls one judge cell's verdicts were built from (none for rules)."""
        return self.calls_folder / JUDGE_CALLS / judge / model / f"{condition}.parquet"

    def controls_calls(self, judge: str) -> Path:
        """The calls one judge's validity controls were built from."""
        return self.calls_folder / CONTROLS_CALLS / f"{judge}.parquet"

    def sweep_calls(self, sweep: Mapping[str, Sequence[str]]) -> list[Path]:
        """Every calls file a run of the sweep writes, in a fixed order."""
        models, conditions, judges = sweep["models"], sweep["conditions"], sweep["judges"]
        return [
            *(self.sample_calls(m, c) for m in models for c in conditions),
            *(self.judge_calls(j, m, c) for j in judges for m in models for c in conditions),
            *(self.controls_calls(j) for j in judges),
        ]

    @property
    def calls(self) -> Path | None:
        """The run's calls in one file (the calls stage); None: no published calls, on purpose."""
        return None if self.paths.calls is None else Path(self.paths.calls)

    @property
    def call_cache(self) -> str:
        """The user's call cache, as configured (outside the work tree; `~` allowed)."""
        return self.paths.call_cache

    # -- the dynamic extension -------------------------------------------------------------
    # Everything is kept under the first-turn judge that chose the arms, so that two
    # judges' second turns never mix.

    def dynamic_judge_folder(self, judge: str) -> Path:
        """Every dynamic table of one first-turn judge: <table>/<model>/<condition>.parquet."""
        return Path(self.paths.dynamic_dir) / judge

    def dynamic_prompts(self, judge: str, model: str, condition: str) -> Path:
        """One cell's second-turn prompts (dynamic_render)."""
        return self.dynamic_judge_folder(judge) / "prompts" / model / f"{condition}.parquet"

    def dynamic_responses(self, judge: str, model: str, condition: str) -> Path:
        """One cell's second replies (dynamic_sample)."""
        return self.dynamic_judge_folder(judge) / "responses" / model / f"{condition}.parquet"

    def dynamic_verdicts(self, judge: str, model: str, condition: str) -> Path:
        """One cell's second-turn verdicts (dynamic_judge)."""
        return self.dynamic_judge_folder(judge) / "verdicts" / model / f"{condition}.parquet"

    def dynamic_calls(self, stage: DynamicCalls, judge: str, model: str, condition: str) -> Path:
        """The calls a dynamic stage built one cell's table from."""
        return self.calls_folder / stage / judge / model / f"{condition}.parquet"

    def dynamic_log(self, stage: str, judge: str, model: str, condition: str) -> Path:
        """One dynamic cell's run log (stage: render, sample or judge), kept out of the
        dynamic folder, which dynamic_aggregate depends on as a whole."""
        root = Path(self.paths.dynamic_logs_dir)
        return root / judge / stage / model / f"{condition}{LOG_SUFFIX}"

    def dynamic_call_files(self, settings: DynamicSweep) -> list[Path]:
        """Every calls file the dynamic stages write (none while the extension is off)."""
        return [
            self.dynamic_calls(stage, judge, model, condition)
            for stage in DYNAMIC_CALLS
            for judge in settings.judges
            for model in settings.models
            for condition in settings.conditions
        ]

    @property
    def dynamic_reports_folder(self) -> Path:
        """Every first-turn judge's dynamic reports, one folder each."""
        return Path(self.paths.dynamic_reports_dir)

    def dynamic_reports(self, judge: str) -> Path:
        """The folder of one judge's dynamic tables, figure and metrics."""
        return self.dynamic_reports_folder / judge

    # -- reports ---------------------------------------------------------------------------

    @property
    def reports_folder(self) -> Path:
        """aggregate's tables, Table 1 and metrics (and the HTML report)."""
        return Path(self.paths.reports_dir)

    @property
    def report_page(self) -> Path:
        """The self-contained HTML report (plot)."""
        return self.reports_folder / "index.html"

    @property
    def figures_folder(self) -> Path:
        """The paper's figures (plot)."""
        return Path(self.paths.figures_dir)

    @property
    def audit_folder(self) -> Path:
        """The judge audit's tables and metrics."""
        return Path(self.paths.audit_dir)

    @property
    def provenance(self) -> Path:
        """What the run rests on (the provenance stage)."""
        return Path(self.paths.provenance)

    # -- the labelling workflow (kept in git) -----------------------------------------------

    @property
    def labels_folder(self) -> Path:
        """The labelling sheet, its key and the labels people return."""
        return Path(self.paths.labels_dir)

    @property
    def label_sheet(self) -> Path:
        """The sheet people label, as CSV."""
        return Path(self.paths.label_sheet)

    @property
    def label_sheet_html(self) -> Path:
        """The same sheet as a page to read."""
        return Path(self.paths.label_sheet_html)

    @property
    def label_key(self) -> Path:
        """From the sheet's item ids to the responses (never shown to labellers)."""
        return Path(self.paths.label_key)

    @property
    def labels(self) -> Path:
        """The labels people return."""
        return Path(self.paths.labels)

    # -- growing the benchmark (generation/dvc.yaml) -----------------------------------------

    @property
    def generation(self) -> GenerationFiles:
        """Every file of the generation project's stages."""
        data, reports = Path(self.paths.generation_dir), Path(self.paths.generation_reports_dir)
        return GenerationFiles(
            candidates=data / "candidates.parquet",
            screened=data / "screened.parquet",
            screen_verdicts=data / "screen_verdicts.parquet",
            run_logs=data / "logs",
            generate_summary=reports / "generate.json",
            screen_summary=reports / "screen.json",
            cells=reports / "cells.csv",
            review_html=reports / "review.html",
            review_csv=reports / "review.csv",
            accept_list=Path(self.paths.generation_accept),
            generated_folder=Path(self.paths.generated_dir),
        )
