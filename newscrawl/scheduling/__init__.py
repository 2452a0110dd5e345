"""Reliable, incremental scheduling in Redis: the Scrapy scheduler (``scheduler``), its leased
queue (``queue``), the dupefilter's records (``dupefilter``), the run's life (``run``), per-host
politeness (``politeness``), stopping on a fault (``stopping``), the list-page walks (``lists``)
and the links waiting for discovery (``waiting``); their Lua in ``lua/``.
See docs/design/scheduling.md. Importing the package imports none of them.
"""
