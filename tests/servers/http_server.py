#!/usr/bin/python3
"""A real HTTP/1.1 file server for slip's remote-source tests, with the faults they need.

Serves a directory like `python3 -m http.server`, plus what a download client must cope with:
single-range requests (206 / Content-Range / If-Range), conditional requests (ETag,
If-None-Match, If-Modified-Since -> 304), and injected faults:
  --rate B          send at most B bytes/s per response (so a test can kill the server mid-transfer)
  --truncate-at N   never send byte N or later of any file: the connection closes early
                    although Content-Length promised more
  --fail-first K    answer the first K GETs with 503 (Retry-After: 0)
  --stall-after N   send N bytes of each body, then nothing (the connection stays open)
  --head-status C   answer every HEAD with status C (405: a server that refuses HEAD)
  --head-lies-by D  HEAD answers announce a Content-Length D bytes off the file's size
  --head-length T   HEAD answers announce the literal Content-Length T (e.g. one that overflows)
  --last-modified T every answer carries Last-Modified T instead of the file's time
Every request is appended to --log as one JSON line (method, path, range, status, bytes sent).
The chosen port is written to --port-file (use --port 0 for a free one). --tls CERT KEY serves
HTTPS instead.
"""
import argparse
import email.utils
import http.server
import os
import ssl
import sys
import time
import urllib.parse

from testserver import QuietHandler, RequestLog, Server, serve

ARGS = None
REQUESTS = None


def log(entry):
    REQUESTS.write(entry)


class Handler(QuietHandler):
    def do_HEAD(self):
        if ARGS.head_status:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            return self.reply_status(ARGS.head_status, None, {"method": "HEAD", "path": path, "range": None})
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def reply_status(self, status, extra=None, entry=None):
        body = (http.server.BaseHTTPRequestHandler.responses.get(status, ("",))[0] + "\n").encode()
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        entry = dict(entry or {}, status=status)
        log(entry)

    def serve(self, head):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        entry = {"method": self.command, "path": path, "range": self.headers.get("Range")}
        n = REQUESTS.next_request()
        if n <= ARGS.fail_first:
            return self.reply_status(503, {"Retry-After": "0"}, entry)
        full = os.path.realpath(os.path.join(ARGS.root, path.lstrip("/")))
        if not full.startswith(os.path.realpath(ARGS.root) + os.sep) or not os.path.isfile(full):
            return self.reply_status(404, None, entry)
        st = os.stat(full)
        size = st.st_size
        etag = '"%x-%x"' % (size, st.st_mtime_ns)
        last_modified = ARGS.last_modified or email.utils.formatdate(st.st_mtime, usegmt=True)
        validators = {"ETag": etag, "Last-Modified": last_modified, "Accept-Ranges": "bytes"}
        inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        if inm is not None:
            if etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*":
                return self.reply_status(304, validators, entry)
        elif ims is not None:
            try:
                if int(st.st_mtime) <= email.utils.parsedate_to_datetime(ims).timestamp():
                    return self.reply_status(304, validators, entry)
            except (TypeError, ValueError):
                pass
        start, end, status = 0, size - 1, 200
        rng, if_range = self.headers.get("Range"), self.headers.get("If-Range")
        if rng and (if_range is None or if_range in (etag, last_modified)):
            spec = rng.strip()
            if not spec.startswith("bytes=") or "," in spec:
                return self.reply_status(416, {"Content-Range": "bytes */%d" % size}, entry)
            a, _, b = spec[6:].partition("-")
            if a == "":
                start = max(0, size - int(b))
            else:
                start = int(a)
                end = min(int(b), size - 1) if b else size - 1
            if start >= size or start > end:
                return self.reply_status(416, {"Content-Range": "bytes */%d" % size}, entry)
            status = 206
        length = end - start + 1
        self.send_response(status)
        for k, v in validators.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/octet-stream")
        announced = str(length + (ARGS.head_lies_by if head else 0))
        self.send_header("Content-Length", ARGS.head_length if head and ARGS.head_length is not None else announced)
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        sent = 0
        if not head:
            stop = end + 1
            if ARGS.truncate_at is not None:
                stop = min(stop, ARGS.truncate_at)
            if ARGS.stall_after is not None:
                stop = min(stop, start + ARGS.stall_after)
            with open(full, "rb") as f:
                f.seek(start)
                pos = start
                began = time.monotonic()
                while pos < stop:
                    chunk = f.read(min(65536, stop - pos))
                    if not chunk:
                        break
                    try:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        break
                    pos += len(chunk)
                    sent += len(chunk)
                    if ARGS.rate:
                        ahead = sent / ARGS.rate - (time.monotonic() - began)
                        if ahead > 0:
                            time.sleep(ahead)
            if ARGS.stall_after is not None and sent < length:
                log(dict(entry, status=status, sent=sent, start=start, stalled=True))
                time.sleep(3600)  # a server that stops sending but never hangs up
            if sent < length:
                self.close_connection = True
        entry.update(status=status, sent=sent, start=start)
        log(entry)


def main():
    global ARGS, REQUESTS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--log")
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--truncate-at", type=int)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--stall-after", type=int)
    p.add_argument("--head-status", type=int, default=0)
    p.add_argument("--head-lies-by", type=int, default=0)
    p.add_argument("--head-length")
    p.add_argument("--last-modified")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ARGS = p.parse_args()
    REQUESTS = RequestLog(ARGS.log)
    server = Server(("127.0.0.1", ARGS.port), Handler)
    if ARGS.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*ARGS.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    serve(server, ARGS.port_file)


if __name__ == "__main__":
    sys.exit(main())
