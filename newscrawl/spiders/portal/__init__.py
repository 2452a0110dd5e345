"""The ``portal`` spider (:class:`PortalSpider`), one module per part: ``spider`` (settings,
start, callbacks wiring), ``walks`` and ``pagebar`` (list pages), ``articles``, ``sources``
(sitemaps, feeds), ``queueing`` (waiting and pushed links), ``outcomes`` (failures, summary).
Design: docs/design/architecture.md.
"""

from __future__ import annotations

from newscrawl.spiders.portal.outcomes import failure_reason
from newscrawl.spiders.portal.spider import PortalSpider

__all__ = ["PortalSpider", "failure_reason"]
