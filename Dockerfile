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

# Dependencies and package first (cached layer), then the crawl configuration. constraints.txt
# pins every runtime dependency to the version the test suite passed with, so an image built
# later gets the same Scrapy, Twisted, redis-py... (refresh: CONTRIBUTING.md).
COPY pyproject.toml README.md constraints.txt ./
COPY newscrawl ./newscrawl
# gcc builds the fingerprint path's C speedups (docs/design/fingerprint.md#the-c-speedups), and
# goes again in the same layer; the import check fails the build if they were not built.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install --no-compile -c constraints.txt . \
    && python -c "from newscrawl.simhash.core import speedups_status as s; assert s() == 'C speedups', s()" \
    && apt-get purge -y --auto-remove gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* /root/.cache

# jieba's IDF table, parsed once at build time into newscrawl's cache (read-only for the worker):
# a container then loads it in ~0.01-0.02 s instead of parsing 270k lines at every start.
ENV NEWSCRAWL_CACHE_DIR=/opt/newscrawl-cache
RUN python -c "from newscrawl.simhash.idf import load_idf; load_idf()" \
    && test -n "$(ls /opt/newscrawl-cache/idf-*.bin)" \
    && chmod -R a+rX /opt/newscrawl-cache

# No sites file in the image: docker-compose.yml mounts the host's ./sites.toml read-only at
# /app/sites.toml (edit it, no rebuild). Without one the crawl stops at once: "no such file:
# /app/sites.toml (the sites file)", exit 1.
COPY scrapy.cfg ./

RUN mkdir -p /data && chown newscrawl:newscrawl /data
ENV NEWSCRAWL_DATA_DIR=/data
VOLUME ["/data"]

USER newscrawl

# REDIS_URL comes from docker-compose.yml (or `docker run -e REDIS_URL=...`). `newscrawl crawl`
# is `scrapy crawl portal` with SIGTERM handled from its first instant (docker stop).
CMD ["newscrawl", "crawl"]
