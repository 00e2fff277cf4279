"""What slip's test servers share: a threaded HTTP/1.1 server on 127.0.0.1, a JSON-lines request
log, a counter for injected faults, and publishing the chosen port."""
import http.server
import json
import os
import socketserver
import threading


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class QuietHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass


class RequestLog:
    """Appends one JSON object per line to `path` (nothing when path is None); counts requests."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.count = 0

    def next_request(self):
        with self.lock:
            self.count += 1
            return self.count

    def write(self, entry):
        if self.path:
            with self.lock, open(self.path, "a") as f:
                f.write(json.dumps(entry) + "\n")


def serve(server, port_file):
    """Writes the bound port to port_file (atomically) and serves until killed."""
    if port_file:
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
