# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A Hugging Face hub on loopback for the install tests: one gated model repository served from a directory, with the
endpoints huggingface_hub's ``model_info`` and ``snapshot_download`` use (1.x): ``/api/models/<repo>/revision/<rev>``,
``/api/models/<repo>/tree/<rev>`` and ``/<repo>/resolve/<rev>/<file>`` (HEAD and GET, with the X-Repo-Commit and
ETag headers the client reads). Like a gated repository it answers 401 to a request without the token, and 404 to
another repository or revision. Every request is logged as one JSON line (method, path, whether the token matched;
never the token itself) to ``--log``, so a test can show the token reached the hub and nothing else.

Usage: python fake_hf_hub.py --repo ORG/NAME --dir MODEL_DIR --token-file FILE --port PORT --log FILE [--bind ADDR]
"""
import argparse
import hashlib
import http.server
import json
import os
import re
import urllib.parse


def _tree(directory):
    files = []
    for root, _dirs, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            files.append(os.path.relpath(path, directory))
    return sorted(files)


def _sha1(data):
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


class Repository:
    """The served repository: its files, and a commit derived from their names and contents (stable across runs)."""

    def __init__(self, repo_id, directory):
        self.repo_id = repo_id
        self.directory = directory
        self.files = {}
        for name in _tree(directory):
            with open(os.path.join(directory, name), "rb") as handle:
                self.files[name] = handle.read()
        digest = hashlib.sha1(usedforsecurity=False)
        for name, data in sorted(self.files.items()):
            digest.update(name.encode() + b"\0" + data + b"\0")
        self.commit = digest.hexdigest()

    def resolves(self, revision):
        return revision in ("main", self.commit)

    def info(self):
        return {"id": self.repo_id, "modelId": self.repo_id, "sha": self.commit, "private": False, "gated": "manual",
                "siblings": [{"rfilename": name} for name in sorted(self.files)]}

    def tree(self):
        return [{"type": "file", "path": name, "size": len(data), "oid": _sha1(data)}
                for name, data in sorted(self.files.items())]


def handler_for(repository, token, log_path):
    api = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/?]+)")
    resolve = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            return

        def _record(self, status, authorized):
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"method": self.command, "path": self.path, "status": status,
                                         "authorized": authorized}) + "\n")

        def _send(self, status, body=b"", headers=None, head=False):
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _json(self, status, payload, head=False):
            self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"}, head)

        def _answer(self, head):
            authorized = self.headers.get("Authorization", "") == "Bearer " + token
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            if not authorized:
                self._record(401, False)
                self._json(401, {"error": "Access to model %s is restricted. You must have access to it and be "
                                          "authenticated to access it. Please log in." % repository.repo_id}, head)
                return
            match = api.match(path)
            if match and match["repo"] == repository.repo_id and repository.resolves(match["rev"]):
                self._record(200, True)
                self._json(200, repository.info() if match["kind"] == "revision" else repository.tree(), head)
                return
            match = resolve.match(path)
            if (match and match["repo"] == repository.repo_id and repository.resolves(match["rev"])
                    and match["file"] in repository.files):
                data = repository.files[match["file"]]
                self._record(200, True)
                self._send(200, data, {"Content-Type": "application/octet-stream", "X-Repo-Commit": repository.commit,
                                       "ETag": '"%s"' % _sha1(data)}, head)
                return
            self._record(404, True)
            self._json(404, {"error": "Entry not found"}, head)

        def do_GET(self):  # noqa: N802 (the base class's name)
            self._answer(head=False)

        def do_HEAD(self):  # noqa: N802 (the base class's name)
            self._answer(head=True)

    return Handler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    args = parser.parse_args(argv)
    with open(args.token_file, encoding="utf-8") as handle:
        token = handle.read().strip()
    server = http.server.ThreadingHTTPServer((args.bind, args.port),
                                             handler_for(Repository(args.repo, args.dir), token, args.log))
    server.serve_forever()


if __name__ == "__main__":
    main()
