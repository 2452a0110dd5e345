# newscrawl crawler worker image: `docker compose build crawler` (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# An unprivileged user; it may write only to its home (library caches: tldextract, jieba) and
# to the data directory. The code in /app stays root-owned and read-only for it.
RUN groupadd --system --gid 10001 newscrawl \
    && useradd --system --uid 10001 --gid newscrawl --create-home --home-dir /home/newscrawl \
       --shell /usr/sbin/nologin newscrawl

WORKDIR /app

# Dependencies and package first (cached layer), then the crawl configuration.
COPY pyproject.toml README.md ./
COPY newscrawl ./newscrawl
RUN pip install --no-compile . \
    && rm -rf /root/.cache

COPY scrapy.cfg sites.toml ./

RUN mkdir -p /data && chown newscrawl:newscrawl /data
ENV NEWSCRAWL_DATA_DIR=/data
VOLUME ["/data"]

USER newscrawl

# REDIS_URL comes from docker-compose.yml (or `docker run -e REDIS_URL=...`).
CMD ["scrapy", "crawl", "portal"]
