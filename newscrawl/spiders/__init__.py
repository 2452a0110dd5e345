"""Spiders of newscrawl (``scrapy crawl portal``)."""
