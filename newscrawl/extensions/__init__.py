"""Scrapy extensions of the crawl (thin adapters over newscrawl's libraries)."""
