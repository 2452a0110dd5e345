"""Scrapy commands of newscrawl (``COMMANDS_MODULE``): ``crawl`` with meaningful exit codes."""
