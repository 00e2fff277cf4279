"""A hostile HTTP/S3 server for tests/integration/remote_hostile.sh (127.0.0.1 only).

  /redir-*/...       307 to the --redirect-to origin, same path (a cross-origin redirect)
  /cycle-bucket?...  an S3 ListObjectsV2 whose continuation tokens cycle A, B, A, ...
  /repeat-bucket?... an S3 ListObjectsV2 that sends the same page of keys under a new token each time
  /slow.tar          announces 1 MB and trickles one byte every 0.2 s
  /esc.tar           404 whose S3 error XML holds terminal escape sequences
  /endless-chunked.tar  200, chunked, zeros without end
  /endless-close.tar    200, no length, zeros until the client hangs up
  /huge.tar          Content-Length 10^15, 100 bytes, then the connection closes
  /norange.tar       ignores Range: 200 with the whole object (1,000,000 bytes announced, with
                     validators), closes after 100,000 bytes
  /size-bucket       S3: lists shards/a.tar as 1,000 bytes; its GET announces 5,000
  /short-bucket      S3: lists shards/a.tar as 10,000 bytes; its GET sends 5,000, chunked
Every request's method, path and headers are logged as JSON lines to --log (the victim role).
Usage: hostile_server.py PORT_FILE --log FILE [--redirect-to http://127.0.0.1:PORT]"""
import argparse
import time
import urllib.parse

import testserver

ap = argparse.ArgumentParser()
ap.add_argument("port_file")
ap.add_argument("--log")
ap.add_argument("--redirect-to", default="")
args = ap.parse_args()
log = testserver.RequestLog(args.log)


class Handler(testserver.QuietHandler):
    def do_GET(self):
        log.next_request()
        log.write({"method": "GET", "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path.startswith("/redir-") and args.redirect_to:
            self.send_response(307)
            self.send_header("Location", args.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif url.path.startswith("/cycle-bucket"):
            token = query.get("continuation-token", [""])[0]
            nxt = {"": "A", "A": "B", "B": "A"}[token]
            body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>cycle-bucket</Name>"
                    "<IsTruncated>true</IsTruncated><Contents><Key>shards/%s.tar</Key><Size>10240</Size>"
                    "<ETag>\"0\"</ETag></Contents><NextContinuationToken>%s</NextContinuationToken>"
                    "</ListBucketResult>" % (nxt, nxt)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif url.path.startswith("/repeat-bucket"):
            token = query.get("continuation-token", ["0"])[0]
            body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>repeat-bucket</Name>"
                    "<IsTruncated>true</IsTruncated>" +
                    "".join("<Contents><Key>shards/%s.tar</Key><Size>10240</Size><ETag>\"0\"</ETag></Contents>" % k for k in "abc") +
                    "<NextContinuationToken>%d</NextContinuationToken></ListBucketResult>" % (int(token) + 1)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif url.path in ("/endless-chunked.tar", "/endless-close.tar"):
            chunked = "chunked" in url.path
            self.send_response(200)
            self.send_header("ETag", '"endless"')
            self.send_header("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            block = b"\0" * 65536
            try:
                while True:
                    self.wfile.write((b"%x\r\n" % len(block) + block + b"\r\n") if chunked else block)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif url.path in ("/huge.tar", "/norange.tar"):
            huge = url.path == "/huge.tar"
            self.send_response(200)  # whatever Range asked for
            self.send_header("ETag", '"same"')
            self.send_header("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(10**15 if huge else 1000000))
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            try:
                self.wfile.write(b"\0" * (100 if huge else 100000))
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif url.path.startswith(("/size-bucket", "/short-bucket")):
            listed = 1000 if url.path.startswith("/size-bucket") else 10000
            if "list-type" in query:
                body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>b</Name>"
                        "<IsTruncated>false</IsTruncated><Contents><Key>shards/a.tar</Key><Size>%d</Size>"
                        "<ETag>\"0\"</ETag><LastModified>2006-01-02T15:04:05.000Z</LastModified></Contents>"
                        "</ListBucketResult>" % listed).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_response(200)
                self.send_header("ETag", '"0"')
                if listed == 1000:
                    self.send_header("Content-Length", "5000")
                    self.end_headers()
                    self.wfile.write(b"\0" * 5000)
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"%x\r\n" % 5000 + b"\0" * 5000 + b"\r\n0\r\n\r\n")
        elif url.path == "/slow.tar":
            self.send_response(200)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            try:
                for _ in range(1000000):
                    self.wfile.write(b"\0")
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            body = b"<Error><Code>\x1b[2J\x1b]0;pwned\x07</Code><Message>line1\nslip: info: fake</Message></Error>"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


testserver.serve(testserver.Server(("127.0.0.1", 0), Handler), args.port_file)
