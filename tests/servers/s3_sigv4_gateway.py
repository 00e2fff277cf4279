#!/usr/bin/python3
"""An S3 front door that checks AWS Signature V4 the way S3 does, in front of s3rver.

s3rver (npm) is a real S3 implementation (buckets, ListObjectsV2 with continuation tokens,
ETags, Range), but it does not verify V4 signatures. This gateway does, with botocore's own
signer (Debian's python3-botocore: AWS's reference implementation, independent of slip's):
for every request it rebuilds the canonical request from what arrived on the wire, signs it
with the secret of the access key in the Credential scope and compares. Then it forwards the
request to s3rver. Like S3 it answers, in S3's XML error format:
  403 InvalidAccessKeyId     unknown access key
  403 SignatureDoesNotMatch  wrong secret, or anything signed differs from what was sent
  403 RequestTimeTooSkewed   x-amz-date more than 15 minutes from now
  400 AuthorizationHeaderMalformed  wrong region in the scope
  403 AccessDenied           an anonymous request to a bucket not made --public
Options: --credentials AK:SECRET (repeatable), --region, --public BUCKET (repeatable),
--max-keys N (forces ListObjectsV2 pagination by capping every page), --fail-first K
(the first K requests get 503 SlowDown), --corrupt TEXT (object bodies whose path contains
TEXT arrive with their first byte flipped, ETag unchanged), --hold TEXT --hold-seconds S (object
GETs whose path contains TEXT are answered S seconds late: a slow object among fast ones), --log
FILE (one JSON line per request).
"""
import argparse
import datetime
import http.client
import http.server
import sys
import time
import urllib.parse

from testserver import QuietHandler, RequestLog, Server, serve

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ARGS = None
REQUESTS = None
FORWARD_HEADERS = ("range", "if-range", "if-none-match", "if-modified-since", "content-length", "content-type")


def log(entry):
    REQUESTS.write(entry)


class Handler(QuietHandler):
    def error(self, status, code, message, entry):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>' % (code, message)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)
        entry.update(status=status, error=code)
        log(entry)

    def check_signature(self, entry):
        """None when the request may proceed, else (status, code, message)."""
        auth = self.headers.get("Authorization")
        bucket = urllib.parse.urlsplit(self.path).path.lstrip("/").split("/", 1)[0]
        if auth is None:
            entry["auth"] = "anonymous"
            if bucket in ARGS.public:
                return None
            return (403, "AccessDenied", "Access Denied")
        entry["auth"] = "sigv4"
        try:
            algorithm, rest = auth.split(" ", 1)
            fields = dict(part.strip().split("=", 1) for part in rest.split(","))
            access_key, date, region, service, terminal = fields["Credential"].split("/")
            signed = fields["SignedHeaders"].split(";")
            provided = fields["Signature"]
        except (ValueError, KeyError):
            return (400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
        if algorithm != "AWS4-HMAC-SHA256" or service != "s3" or terminal != "aws4_request":
            return (400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
        if region != ARGS.region:
            return (400, "AuthorizationHeaderMalformed", "the region '%s' is wrong; expecting '%s'" % (region, ARGS.region))
        secret = ARGS.secrets.get(access_key)
        if secret is None:
            return (403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        amz_date = self.headers.get("x-amz-date", "")
        try:
            when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            return (403, "AccessDenied", "x-amz-date is missing or malformed")
        if abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) > 900 or amz_date[:8] != date:
            return (403, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.")
        if "host" not in signed or "x-amz-date" not in signed:
            return (403, "SignatureDoesNotMatch", "host and x-amz-date must be signed")
        headers = {}
        for name in signed:
            value = self.headers.get(name)
            if value is None:
                return (403, "SignatureDoesNotMatch", "signed header %s is missing" % name)
            headers[name] = value
        request = AWSRequest(method=self.command, url="http://%s%s" % (headers["host"], self.path), headers=headers)
        request.context["timestamp"] = amz_date
        signer = S3SigV4Auth(Credentials(access_key, secret), "s3", region)
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        if expected != provided:
            entry["canonical_request"] = canonical
            return (403, "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        return None

    def handle_any(self):
        entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range")}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        n = REQUESTS.next_request()
        if n <= ARGS.fail_first:
            return self.error(503, "SlowDown", "Please reduce your request rate.", entry)
        problem = self.check_signature(entry)
        if problem:
            return self.error(*problem, entry)
        path = self.path
        if ARGS.max_keys and "list-type=2" in path:
            parts = urllib.parse.urlsplit(path)
            query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True) if k != "max-keys"]
            query.append(("max-keys", str(ARGS.max_keys)))
            path = urllib.parse.urlunsplit(("", "", parts.path, urllib.parse.urlencode(query, quote_via=urllib.parse.quote), ""))
        if ARGS.hold and ARGS.hold in path and "list-type" not in path and self.command == "GET":
            time.sleep(ARGS.hold_seconds)
            entry["held"] = ARGS.hold_seconds
        headers = {k: v for k, v in self.headers.items() if k.lower() in FORWARD_HEADERS}
        upstream = http.client.HTTPConnection("127.0.0.1", ARGS.upstream_port, timeout=60)
        upstream.request(self.command, path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        if ARGS.corrupt and ARGS.corrupt in path and "list-type" not in path and response.status in (200, 206) and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
            entry["corrupted"] = True
        self.send_response(response.status)
        for k, v in response.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        upstream.close()
        entry.update(status=response.status, sent=len(data))
        log(entry)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = handle_any


def main():
    global ARGS, REQUESTS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--upstream-port", type=int, required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--credentials", action="append", default=[])
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--public", action="append", default=[])
    p.add_argument("--max-keys", type=int, default=0)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--corrupt")
    p.add_argument("--hold")
    p.add_argument("--hold-seconds", type=float, default=0)
    p.add_argument("--log")
    ARGS = p.parse_args()
    REQUESTS = RequestLog(ARGS.log)
    ARGS.secrets = dict(c.split(":", 1) for c in ARGS.credentials)
    server = Server(("127.0.0.1", ARGS.port), Handler)
    serve(server, ARGS.port_file)


if __name__ == "__main__":
    sys.exit(main())
