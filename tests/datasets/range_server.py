"""A small HTTP server on 127.0.0.1 for depbloom-data get's tests.

It serves byte strings held in memory, honours `Range: bytes=N-` (206 with Content-Range,
416 past the end), can cut a response half-way (the full Content-Length announced, then
the connection closed) and records every request's path and Range header.
"""
import http.server
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep the test output quiet
        pass

    def do_GET(self):
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        body = server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        ranged = self.headers.get("Range")
        if ranged and ranged.startswith("bytes=") and ranged.endswith("-"):
            start = int(ranged[len("bytes="):-1])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(body))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        rest = body[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(body) - 1, len(body)))
        self.send_header("Content-Length", str(len(rest)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        cut = server.cuts.pop(self.path, None)
        self.wfile.write(rest if cut is None else rest[:cut])
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True


class RangeServer:
    """Serves `files` ({path: bytes}) on 127.0.0.1 from a thread until stop()."""

    def __init__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.files = {}
        self.httpd.cuts = {}  # path: bytes sent before the next response to it is cut
        self.httpd.requests = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def files(self):
        return self.httpd.files

    @property
    def cuts(self):
        return self.httpd.cuts

    @property
    def requests(self):
        return self.httpd.requests

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.httpd.server_address[1], path)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
