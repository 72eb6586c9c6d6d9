# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The monitoring scenario's stand-in for a dead man's switch service: an Alertmanager webhook receiver that
appends one JSON line per notification (its arrival time, status and alert names) to a file."""
import argparse
import http.server
import json
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9099)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            line = {"time": time.time(), "status": body.get("status"),
                    "alerts": sorted({a.get("labels", {}).get("alertname", "?") for a in body.get("alerts") or []}),
                    "firing": sorted({a.get("labels", {}).get("alertname", "?") for a in body.get("alerts") or []
                                      if a.get("status") == "firing"})}
            with open(args.log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args):
            pass

    http.server.ThreadingHTTPServer((args.listen, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
