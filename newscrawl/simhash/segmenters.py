"""Chinese word segmenters, selectable by name. Each takes one CJK-only run and returns its words.

* ``jieba`` (reference): ``jieba.Tokenizer.cut`` (accurate mode).
* ``rjieba``: the Rust port of jieba (same dictionary), about 20x faster.
* ``jieba_fast_dat``: optional, only when installed; ``initialize()`` is called before use.

All workers of a cluster must use the same segmenter: its name and package version are part of the
fingerprint version string, and the index refuses a worker whose version differs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

logger = logging.getLogger(__name__)

SEGMENTERS = ("jieba", "rjieba", "jieba_fast_dat")
_lock = threading.Lock()


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
    directory listing: importing ``importlib.metadata`` alone costs 20-35 ms of start-up in every
    process that fingerprints), else from ``importlib.metadata``.
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


def load_segmenter(name: str, hmm: bool = True) -> Segmenter:
    """Build the named segmenter; ValueError for an unknown name, ImportError if not installed."""
    if name == "jieba":
        import jieba

        tok = jieba.dt
        with _lock:
            if not tok.initialized:
                # jieba logs "Building prefix dict ..." on its own logger at DEBUG level.
                tok.initialize()

        def cut_jieba(run: str) -> list[str]:
            return list(tok.cut(run, HMM=hmm))

        return Segmenter("jieba", _version("jieba", jieba), hmm, cut_jieba)
    if name == "rjieba":
        import rjieba

        rcut = rjieba.cut

        def cut_rjieba(run: str) -> list[str]:
            return rcut(run, hmm)

        return Segmenter("rjieba", _version("rjieba", rjieba), hmm, cut_rjieba)
    if name == "jieba_fast_dat":
        import jieba_fast_dat

        with _lock:
            jieba_fast_dat.initialize()
        fcut = jieba_fast_dat.lcut

        def cut_fast(run: str) -> list[str]:
            return fcut(run, HMM=hmm)

        return Segmenter(
            "jieba_fast_dat", _version("jieba_fast_dat", jieba_fast_dat), hmm, cut_fast
        )
    raise ValueError(f"unknown segmenter {name!r}; choose one of {', '.join(SEGMENTERS)}")
