"""The sample portal of ``newscrawl demo``: the files under ``site/``, served on 127.0.0.1."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from importlib.abc import Traversable
from typing import Any

HOST = "127.0.0.1"
#: URL paths of article pages start with this
ARTICLES = "/news/"


@dataclass
class SamplePortal:
    """URL path -> the bytes served for it."""

    pages: dict[str, bytes]

    @property
    def articles(self) -> list[str]:
        return sorted(p for p in self.pages if p.startswith(ARTICLES))

    @classmethod
    def load(cls) -> SamplePortal:
        pages: dict[str, bytes] = {}

        def walk(node: Traversable, path: str) -> None:
            for child in node.iterdir():
                if child.is_dir():
                    walk(child, f"{path}{child.name}/")
                else:
                    url = path if child.name == "index.html" else f"{path}{child.name}"
                    pages[url] = child.read_bytes()

        walk(resources.files(__package__).joinpath("site"), "/")
        return cls(pages)


def sites_toml(base: str) -> str:
    """The sites file of the demo's crawl of the portal at ``base``."""
    template = resources.files(__package__).joinpath("demo-sites.toml").read_text(encoding="utf-8")
    return template.format(base=base, host=HOST)


class PortalServer:
    """The sample portal on ``127.0.0.1:port`` (0: a free port), counting requests per path."""

    def __init__(self, portal: SamplePortal, port: int) -> None:
        self.portal = portal
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.hits[path] += 1
                body = server.portal.pages.get(path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                # no charset in the header: the pages' own declarations are all there is
                kind = "text/plain" if path.endswith(".txt") else "text/html"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.httpd = ThreadingHTTPServer((HOST, port), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> PortalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def article_hits(self) -> int:
        with self._lock:
            return sum(n for path, n in self.hits.items() if path.startswith(ARTICLES))
