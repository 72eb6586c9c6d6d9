# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ports table from one source host, in one round trip (system Python, standard library only).

Argument: JSON ``{"table": [{host, ports, from: [groups or hosts]}], "source": [this host's name and group] (or
one group), "self": host, "unauthenticated": [url]}``. Tries a TCP connection to every port of every other host of the
table (all at once, 3 s each): it must be accepted exactly when a name of ``source`` is in ``from``. GETs every URL
of ``unauthenticated`` without a key and expects 401. Prints JSON ``{"results": {"host:port": errno}, "statuses":
{url: status}, "wrong": [...]}`` (errno 0: accepted, 111: refused, as a TCP reset answers) and exits 1 when anything
is not as expected."""
import concurrent.futures
import json
import socket
import sys
import urllib.error
import urllib.request


def connect(host, port):
    with socket.socket() as sock:
        sock.settimeout(3)
        try:
            return sock.connect_ex((host, port))
        except OSError as exc:  # a name that does not resolve
            return exc.errno or -1


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError as exc:
        return "error: %s" % exc


def main(argv):
    spec = json.loads(argv[1])
    source = spec["source"] if isinstance(spec["source"], list) else [spec["source"]]
    expect = [(row["host"], int(port), any(name in row["from"] for name in source))
              for row in spec.get("table", []) if row["host"] != spec.get("self") for port in row["ports"]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        codes = list(pool.map(lambda item: connect(item[0], item[1]), expect))
    results = dict(("%s:%s" % (h, p), code) for (h, p, _o), code in zip(expect, codes))
    wrong = ["%s:%s %s (errno %s)" % (h, p, "should accept" if o else "should refuse", code)
             for (h, p, o), code in zip(expect, codes) if (code == 0) != o]
    statuses = dict((url, status(url)) for url in spec.get("unauthenticated", []))
    wrong += ["%s answered %s without a key, not 401" % (url, code) for url, code in statuses.items() if code != 401]
    print(json.dumps({"results": results, "statuses": statuses, "wrong": wrong}, sort_keys=True))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
