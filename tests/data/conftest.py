"""Fixtures for the dataset tests: paths of the shared real data and a local HTTP server."""

import http.server
import os
import socket
import threading

import pytest

SHARED = "/work/shared/data"
PLANETOID = os.path.join(SHARED, "planetoid")
GEOM_GCN = os.path.join(SHARED, "geom-gcn")
GNN_BENCHMARK = os.path.join(SHARED, "gnn-benchmark", "npz")


def _require(path):
    if not os.path.isdir(path):
        pytest.skip(f"shared data not available at {path}")
    return path


@pytest.fixture
def planetoid_dir():
    return _require(PLANETOID)


@pytest.fixture
def geom_gcn_dir():
    return _require(GEOM_GCN)


@pytest.fixture
def gnn_benchmark_dir():
    return _require(GNN_BENCHMARK)


@pytest.fixture(autouse=True)
def _isolated_download_dir(tmp_path, monkeypatch):
    """Never touch ~/.mpgraph or the network from a test."""
    monkeypatch.setenv("MPGRAPH_DOWNLOAD_DIR", str(tmp_path / "download_root"))
    monkeypatch.setenv("MPGRAPH_DATA_URL", f"http://127.0.0.1:{closed_port()}/")
    monkeypatch.delenv("MPGRAPH_OFFLINE", raising=False)


def closed_port():
    """A local TCP port with nothing listening (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def refused_url():
    """Base URL of a local port with nothing listening."""
    return f"http://127.0.0.1:{closed_port()}/"


class Route:
    """What the server does for one path.

    ``body``: the bytes to serve. ``truncate_first``: the number of requests whose
    body is cut after half (with the full Content-Length announced, then the
    connection closed). ``fail_first``: the number of requests answered 503.
    ``status``: a fixed error status instead of the body.
    """

    def __init__(self, body=b"", truncate_first=0, fail_first=0, status=None):
        self.body = body
        self.truncate_first = truncate_first
        self.fail_first = fail_first
        self.status = status
        self.requests = 0


class LocalServer:
    def __init__(self):
        self.routes = {}
        routes = self.routes

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                route = routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                route.requests += 1
                if route.status is not None:
                    self.send_error(route.status)
                    return
                if route.requests <= route.fail_first:
                    self.send_error(503)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                if route.requests <= route.fail_first + route.truncate_first:
                    self.wfile.write(route.body[: len(route.body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(route.body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def add(self, path, body=b"", **behaviour):
        """Serve ``body`` at ``path`` with the :class:`Route` ``behaviour``; return the route."""
        self.routes[path] = Route(body, **behaviour)
        return self.routes[path]

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def http_server():
    server = LocalServer()
    yield server
    server.close()
