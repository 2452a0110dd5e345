"""Reference fingerprinters the benchmarks compare with (the seeds' recipe, PyPI simhash).

docs/design/fingerprint.md.
"""

from __future__ import annotations

import hashlib

import _common  # noqa: F401  (tests/ and this tree on sys.path)

from newscrawl.simhash.core import simhash_from_features


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
