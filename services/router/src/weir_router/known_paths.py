"""What a run has already seen of a file system: allowed roots and listed files.

Filesystem-like MCP servers answer `list_allowed_directories` with "Allowed directories:" and
one absolute path per line, and `list_directory` with lines such as `[FILE] falcon.txt` and
`[DIR] notes`. The offline planner resolves the file a message names ("read falcon.txt")
against these, so it never guesses a path the server has not shown.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from weir_common.events import Observation

_ABSOLUTE = re.compile(r"(?<![\w.])(/[\w.@+-]+(?:/[\w.@+-]+)*/?)")
_ENTRY = re.compile(r"^\s*\[(FILE|DIR)\]\s+(.+?)\s*$", re.MULTILINE)
_ROOTS_HEADING = re.compile(r"allowed director|roots?\b", re.IGNORECASE)
_PATH_ARGUMENTS = ("path", "directory", "dir", "folder")


@dataclass(frozen=True, slots=True)
class KnownPaths:
    """Roots the server allows, and files and directories it listed, as absolute paths."""

    roots: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    directories: tuple[str, ...] = ()

    @classmethod
    def seen_in(cls, observations: Iterable[Observation]) -> KnownPaths:
        """Everything the successful observations of a run showed."""
        roots: list[str] = []
        files: list[str] = []
        directories: list[str] = []
        for obs in observations:
            if obs.is_error:
                continue
            if _ROOTS_HEADING.search(obs.tool) or _ROOTS_HEADING.search(obs.content[:80]):
                roots += [p.rstrip("/") or "/" for p in _ABSOLUTE.findall(obs.content)]
            listed = _listed_directory(obs)
            for kind, name in _ENTRY.findall(obs.content):
                if listed is None:
                    continue
                full = posixpath.join(listed, name)
                (files if kind == "FILE" else directories).append(full)
        return cls(_unique(roots), _unique(files), _unique(directories))

    def resolve_file(self, name: str) -> str | None:
        """The absolute path of the file `name` (a base name or a relative path): a listed
        file that ends with it, else the name under the only allowed root."""
        if name.startswith("/"):
            return name
        wanted = "/" + name.lstrip("./")
        for path in self.files:
            if path.endswith(wanted) or path == wanted:
                return path
        if len(self.roots) == 1:
            return posixpath.join(self.roots[0], name)
        return None

    def only_root(self) -> str | None:
        """The allowed root when there is exactly one."""
        return self.roots[0] if len(self.roots) == 1 else None


def _listed_directory(obs: Observation) -> str | None:
    for key in _PATH_ARGUMENTS:
        value = obs.arguments.get(key)
        if isinstance(value, str) and value.startswith("/"):
            return value.rstrip("/") or "/"
    return None


def _unique(paths: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))
