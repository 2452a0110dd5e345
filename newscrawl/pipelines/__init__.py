"""Item pipelines of the ``portal`` crawl: near-duplicate check (300), then storage (800)."""

from __future__ import annotations

from newscrawl.pipelines.near_duplicates import AlreadyStored, NearDuplicate, NearDuplicatePipeline
from newscrawl.pipelines.store import StorePipeline

__all__ = ["AlreadyStored", "NearDuplicate", "NearDuplicatePipeline", "StorePipeline"]
