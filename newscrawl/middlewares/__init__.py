"""Downloader middlewares of newscrawl."""
