# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A directory of wheels served as a PEP 503 simple index, for the multihost stand's dead-index stage.

    python3 stand_index.py --root /opt/pdserve/stand-wheelhouse --port 18081 --log /var/tmp/index.log \
        [--hold 'sglang-90[.]0[.]5-']

``/simple/`` lists the projects, ``/simple/<project>/`` links each of its wheels (``/files/<wheel>``, with its
sha256), ``/files/<wheel>`` serves it. Every request is logged, one line each (``<epoch> <status> <path>``),
flushed at once, so a test can follow the install. A request whose path matches ``--hold`` gets no answer at all: the
connection stays open and silent until the server stops (the stage stops it there, mid-install; pip's client then
meets its timeout, retries against a server that is gone, and gives up). Standard library only: it runs with the
stand's Debian Python.
"""

import argparse
import hashlib
import html
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


def canonical(name):
    """PEP 503's normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(filename):
    """The project a wheel or sdist file belongs to (``fastapi-0.165.0-py3-none-any.whl`` -> ``fastapi``)."""
    if filename.endswith(".whl"):
        return canonical(filename.split("-", 1)[0])
    stem = re.sub(r"\.(tar\.gz|zip)$", "", filename)
    return canonical(stem.rsplit("-", 1)[0])


def scan(root):
    """``{project: [filename, ...]}`` of the wheels and sdists in ``root`` (links followed)."""
    projects = {}
    for name in sorted(os.listdir(root)):
        if name.endswith((".whl", ".tar.gz", ".zip")) and os.path.isfile(os.path.join(root, name)):
            projects.setdefault(project_of(name), []).append(name)
    return projects


def sha256(path, cache={}):  # pylint: disable=dangerous-default-value
    if path not in cache:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        cache[path] = digest.hexdigest()
    return cache[path]


def page(title, links):
    body = "".join('<a href="%s">%s</a><br/>\n' % (html.escape(href, quote=True), html.escape(text)) for href, text in links)
    return ("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\"><title>%s</title>"
            "</head><body>\n%s</body></html>\n" % (html.escape(title), body)).encode()


def make_handler(root, hold, log):
    lock = threading.Lock()

    def note(status, path):
        with lock:
            log.write("%.3f %s %s\n" % (time.time(), status, path))
            log.flush()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # the log file has every request already
            pass

        def _send(self, status, body, ctype="text/html"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (http.server's name)
            path = unquote(self.path.split("?", 1)[0])
            if hold and hold.search(path):
                note("hold", path)
                # No answer, ever: the server is to be stopped while this request waits.
                while True:
                    time.sleep(3600)
            projects = scan(root)
            if path in ("/simple", "/simple/"):
                note(200, path)
                return self._send(200, page("Simple index", [("/simple/%s/" % p, p) for p in sorted(projects)]))
            match = re.fullmatch(r"/simple/([^/]+)/?", path)
            if match:
                files = projects.get(canonical(match.group(1)))
                if not files:
                    note(404, path)
                    return self._send(404, b"not found\n", "text/plain")
                note(200, path)
                return self._send(200, page("Links for %s" % match.group(1), [
                    ("/files/%s#sha256=%s" % (name, sha256(os.path.join(root, name))), name) for name in files]))
            match = re.fullmatch(r"/files/([^/]+)", path)
            if match and os.path.isfile(os.path.join(root, match.group(1))):
                with open(os.path.join(root, match.group(1)), "rb") as handle:
                    data = handle.read()
                note(200, path)
                return self._send(200, data, "application/octet-stream")
            note(404, path)
            return self._send(404, b"not found\n", "text/plain")

    return Handler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--root", required=True, help="the directory of wheels")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bind", default="0.0.0.0")
    parser.add_argument("--log", required=True, help="one line per request")
    parser.add_argument("--hold", default="", help="a regular expression: requests whose path matches get no answer")
    args = parser.parse_args(argv)
    hold = re.compile(args.hold) if args.hold else None
    with open(args.log, "a") as log:
        server = ThreadingHTTPServer((args.bind, args.port), make_handler(args.root, hold, log))
        server.daemon_threads = True
        log.write("%.3f start %s:%d root %s hold %r\n" % (time.time(), args.bind, args.port, args.root, args.hold))
        log.flush()
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
