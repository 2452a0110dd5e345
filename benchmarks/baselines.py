"""Reference fingerprinters for benchmarks (not used by the crawler).

* ``SeedsRecipe``: the recipe of the project's seeds: jieba ``extract_tags`` top-20 keywords with
  their TF-IDF weights, MD5 per keyword (low 64 bits), weighted vote.
* ``PypiSimhash``: the PyPI ``simhash`` package with its defaults (character 4-shingles of the
  lower-cased text without non-word characters); only if that package is installed.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from newscrawl.simhash.core import simhash_from_features  # noqa: E402


class SeedsRecipe:
    version = "seeds: jieba extract_tags top-20, md5, weighted vote"

    def __init__(self, top_k: int = 20) -> None:
        import jieba.analyse

        self.top_k = top_k
        self._extract = jieba.analyse.extract_tags

    def fingerprint(self, text: str) -> int | None:
        tags = self._extract(text, topK=self.top_k, withWeight=True)
        if not tags:
            return None
        mask = (1 << 64) - 1
        return simhash_from_features(
            (int(hashlib.md5(w.encode("utf-8")).hexdigest(), 16) & mask, float(wt))
            for w, wt in tags
        )


class PypiSimhash:
    version = "PyPI simhash (defaults: char 4-shingles)"

    def __init__(self) -> None:
        from simhash import Simhash

        self._cls = Simhash

    def fingerprint(self, text: str) -> int | None:
        return int(self._cls(text).value) if text.strip() else None
