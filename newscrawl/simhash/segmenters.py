"""The Chinese word segmenter: ``rjieba`` (the Rust port of jieba, with its HMM), and its version,
which is part of the fingerprint version.

See docs/design/fingerprint.md#segmenters.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Segmenter:
    name: str
    version: str
    hmm: bool
    cut: Callable[[str], list[str]]

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}{'+hmm' if self.hmm else ''}"


def _version(dist: str, module: ModuleType | None = None) -> str:
    """The installed version of ``dist`` (part of the fingerprint version string).

    First from the ``<dist>-<version>.dist-info`` directory beside the imported ``module`` (a
    directory listing: importing ``importlib.metadata`` costs start-up in every process that
    fingerprints), else from ``importlib.metadata``.
    """
    found = _version_beside(dist, module) if module is not None else None
    if found is not None:
        return found
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _version_beside(dist: str, module: ModuleType) -> str | None:
    """The ``Version:`` of the single ``<dist>-*.dist-info`` next to ``module``'s package, or
    None (not found, several, or unreadable: the caller asks importlib.metadata)."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    site = os.path.dirname(os.path.dirname(os.path.abspath(file)))
    prefix = dist.replace("-", "_").lower() + "-"
    try:
        infos = [
            n for n in os.listdir(site) if n.endswith(".dist-info") and n.lower().startswith(prefix)
        ]
        if len(infos) != 1:
            return None
        with open(os.path.join(site, infos[0], "METADATA"), encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip() or None
                if not line.strip():
                    break  # end of the headers
    except OSError:
        return None
    return None


def load_segmenter() -> Segmenter:
    """rjieba with its HMM (ImportError if it is not installed)."""
    import rjieba

    rcut = rjieba.cut

    def cut_rjieba(run: str) -> list[str]:
        return rcut(run, True)

    return Segmenter("rjieba", _version("rjieba", rjieba), True, cut_rjieba)
