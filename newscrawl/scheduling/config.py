"""Settings of the Redis scheduler, read once per crawl."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from newscrawl.crawler_redis import RedisConfig

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DEFAULTS: dict[str, float | int] = {
    "NEWSCRAWL_LEASE_SECONDS": 120,
    "NEWSCRAWL_MAX_ATTEMPTS": 3,
    "NEWSCRAWL_REDIS_RETRY_SECONDS": 60,
    "NEWSCRAWL_URL_RETENTION_DAYS": 365,
    "NEWSCRAWL_RUN_TTL": 900,
    "NEWSCRAWL_IDLE_EXIT_SECONDS": 10,
    "NEWSCRAWL_DEADLETTER_MAX": 10000,
}


@dataclass(frozen=True)
class SchedulingConfig:
    prefix: str
    persist: bool
    lease_seconds: float
    max_attempts: int
    redis_retry_seconds: float
    url_retention_days: int
    run_ttl: int
    idle_exit_seconds: float
    deadletter_max: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SchedulingConfig:
        def num(name: str) -> float:
            value = settings.getfloat(name, float(DEFAULTS[name]))
            if value < 0:
                raise ValueError(f"{name} must not be negative (got {value})")
            return value

        config = cls(
            # the same resolution as the crawl's Redis client (setting, then environment)
            prefix=RedisConfig.from_settings(settings).prefix,
            persist=settings.getbool("SCHEDULER_PERSIST", True),
            lease_seconds=num("NEWSCRAWL_LEASE_SECONDS"),
            max_attempts=int(num("NEWSCRAWL_MAX_ATTEMPTS")),
            redis_retry_seconds=num("NEWSCRAWL_REDIS_RETRY_SECONDS"),
            url_retention_days=int(num("NEWSCRAWL_URL_RETENTION_DAYS")),
            run_ttl=int(num("NEWSCRAWL_RUN_TTL")),
            idle_exit_seconds=num("NEWSCRAWL_IDLE_EXIT_SECONDS"),
            deadletter_max=int(num("NEWSCRAWL_DEADLETTER_MAX")),
        )
        if config.lease_seconds < 1:
            raise ValueError("NEWSCRAWL_LEASE_SECONDS must be at least 1")
        if config.max_attempts < 1:
            raise ValueError("NEWSCRAWL_MAX_ATTEMPTS must be at least 1")
        if config.run_ttl < 1:
            raise ValueError("NEWSCRAWL_RUN_TTL must be at least 1")
        return config

    @property
    def reap_interval(self) -> float:
        """Seconds between lease renewals / reaping: a quarter of the lease, 0.5 s .. 30 s."""
        return min(30.0, max(0.5, self.lease_seconds / 4))
