"""Where each value of a composed config came from: an option's file, the run file, an
experiment, or a command-line override, so that a refusal names the place to fix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from losona.core.config.loading import ROOT_FILE, RUN_FILE, at_dotted, option_file
from losona.core.files import display_path, read_yaml

GLOBAL_NODES = {"generation": ("generate", "screen", "curate")}


def origin_of(dotted: str) -> str:
    """Where a stage's value at a dotted key came from: a file, or the command line."""
    return Sources.of_hydra().where(dotted)


@dataclass(frozen=True)
class Sources:
    """Where each value of a composed config came from: an option's file or an override."""

    choices: Mapping[str, str | None]
    overrides: tuple[str, ...]
    # Config folders added to conf/ with hydra.searchpath, where an option may live instead.
    searchpath: tuple[Path, ...] = ()

    @classmethod
    def of_hydra(cls) -> Sources:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():  # composed by a test, not by a stage script
            return cls({}, ())
        hydra = HydraConfig.get()
        added = tuple(
            Path(source.path)
            for source in hydra.runtime.config_sources
            if source.schema == "file" and source.provider != "main"
        )
        return cls(dict(hydra.runtime.choices), tuple(hydra.overrides.task), added)

    def file(self, group: str, name: str) -> str:
        """The file an option was read from: conf/ first, then the added folders."""
        path = option_file(group, name)
        if path.is_file():
            return str(path)
        added = (folder / group / f"{name}.yaml" for folder in self.searchpath)
        return next((display_path(found) for found in added if found.is_file()), str(path))

    def where(self, dotted: str) -> str:
        for override in reversed(self.overrides):
            key, equals, _ = override.partition("=")
            target = key.lstrip("~+")
            if target in self.choices:
                continue  # it chooses an option: the value comes from the option's file
            if dotted == target or dotted.startswith(f"{target}."):
                # The value is never repeated here: it may be a secret (+model.api_key=...).
                return f"the command line ({key}{'=...' if equals else ''})"
        top = dotted.split(".", 1)[0]
        group = next((g for g, nodes in GLOBAL_NODES.items() if top in nodes), top)
        experiment, name = self.choices.get("experiment"), self.choices.get(group)
        option = self.file(group, name) if name else None
        # Group options are composed after the run file, so a value an option's file sets
        # is its own; what it leaves out may come from the run file (K, the subset).
        files = [self.file("experiment", experiment) if experiment else None, option, str(RUN_FILE)]
        return next((f for f in files if f and _sets(Path(f), dotted)), option or str(ROOT_FILE))


def _sets(path: Path, dotted: str) -> bool:
    """Whether a YAML file sets the value at a dotted key (or a node above it)."""
    try:
        at_dotted(read_yaml(path) if path.is_file() else None, dotted)
    except KeyError:
        return False
    return True
