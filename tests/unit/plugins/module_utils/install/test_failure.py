# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Why a venv step failed (plugins/module_utils/install/failure.py) and the install_failure filter over it. pip's
output below is pip 23.0.1's (Debian 12's venv), captured from real failed installs: a tmpfs that filled up, an index
that refused connections, and one that stopped answering mid-download."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.pdserve.sglang.plugins.filter import install as F
from ansible_collections.pdserve.sglang.plugins.module_utils.install import failure as X

MIB = 2 ** 20
VENV = "/opt/sglang/venvs/sglang-90.0.4"
MARKER = VENV + "/pdserve-install-incomplete"
PIP = [VENV + "/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--index-url",
       "http://pdserve-multihost-router:18081/simple/", "--retries", "2", "--timeout", "5"]
FULL = {"name": "venv", "path": VENV, "checked": VENV, "free_bytes": 0, "size_bytes": 64 * MIB, "free_gb": 0.0,
        "filesystem": {"mount": VENV, "fstype": "tmpfs", "source": "pdserve-small"}}
ROOMY = dict(FULL, free_bytes=40 * 2 ** 30, size_bytes=100 * 2 ** 30, free_gb=40.0,
             filesystem={"mount": "/", "fstype": "overlay", "source": "overlay"})

NO_SPACE = {"rc": 1, "cmd": PIP + ["sglang==90.0.4"], "stdout": (
    "Installing collected packages: typing-extensions, tqdm, pyyaml, prometheus-client, packaging, idna, hf-xet\n"),
    "stderr": "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n"}
ENSUREPIP = {"rc": 1, "cmd": ["/usr/bin/python3", "-m", "venv", VENV], "stdout": "", "stderr": (
    "Error: Command '['%s/bin/python3', '-m', 'ensurepip', '--upgrade', '--default-pip']' returned non-zero exit "
    "status 1.\n" % VENV)}
REFUSED = {"rc": 1, "cmd": PIP + ["fastapi==0.165.0"], "stdout": "Looking in indexes: http://pdserve-multihost-router:18081/simple/\n",
           "stderr": (
    "WARNING: Retrying (Retry(total=1, connect=None, read=None, redirect=None, status=None)) after connection broken by "
    "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f71b8009b90>: Failed to establish "
    "a new connection: [Errno 111] Connection refused')': /simple/fastapi/\n"
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by "
    "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f71b6892550>: Failed to establish "
    "a new connection: [Errno 111] Connection refused')': /simple/fastapi/\n"
    "ERROR: Could not find a version that satisfies the requirement fastapi==0.165.0 (from versions: none)\n"
    "ERROR: No matching distribution found for fastapi==0.165.0\n")}
HUNG = {"rc": 1, "cmd": PIP + ["uvicorn==0.54.0"], "stdout": (
    "Collecting uvicorn==0.54.0\n"
    "  WARNING: Retrying (Retry(total=1, connect=None, read=None, redirect=None, status=None)) after connection broken "
    "by 'ReadTimeoutError(\"HTTPConnectionPool(host='pdserve-multihost-router', port=18081): Read timed out. (read "
    "timeout=5.0)\")': /files/uvicorn-0.54.0-py3-none-any.whl\n"
    "  WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken "
    "by 'ReadTimeoutError(\"HTTPConnectionPool(host='pdserve-multihost-router', port=18081): Read timed out. (read "
    "timeout=5.0)\")': /files/uvicorn-0.54.0-py3-none-any.whl\n"),
    "stderr": (
    "ERROR: Could not install packages due to an OSError: HTTPConnectionPool(host='pdserve-multihost-router', "
    "port=18081): Max retries exceeded with url: /files/uvicorn-0.54.0-py3-none-any.whl (Caused by "
    "ReadTimeoutError(\"HTTPConnectionPool(host='pdserve-multihost-router', port=18081): Read timed out. (read "
    "timeout=5.0)\"))\n")}
OTHER = {"rc": 1, "cmd": PIP + ["sglang==90.0.4"], "stdout": "",
         "stderr": "ERROR: Could not find a version that satisfies the requirement sglang==90.0.4 (from versions: 90.0.1)\n"}


def explain(result, entry=None, args=None):
    return X.explain(result, "decode", VENV, ROOMY if entry is None else entry, PIP if args is None else args, 2, 5,
                     MARKER)


def test_a_full_filesystem_is_named_with_its_free_space():
    message = explain(NO_SPACE, FULL)
    head = message.splitlines()[0]
    assert head == ("pip could not write %s on decode: no space left on the filesystem mounted at %s (tmpfs pdserve-small, "
                    "64 MiB in all), 0 B free now." % (VENV, VENV))
    assert X.cause(NO_SPACE, FULL) == "disk"
    # pip said so: it counts even when space came back meanwhile.
    assert X.cause(NO_SPACE, ROOMY) == "disk"
    assert "(the step did not say why" not in message
    assert "The venv is marked incomplete (%s): the next run installs it again." % MARKER in message
    assert "Free space there (or put sglang_install_venv on a larger filesystem), then run again." in message
    assert message.splitlines()[-1] == "  ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"


def test_a_venv_step_that_says_nothing_on_a_full_filesystem():
    message = explain(ENSUREPIP, dict(FULL, free_bytes=3 * MIB))
    assert message.startswith("the venv step could not write %s on decode: no space left on the filesystem mounted at %s"
                              % (VENV, VENV))
    assert "3 MiB free now (the step did not say why it failed; the filesystem is full)." in message
    # With room left, ensurepip's failure is not blamed on the disk.
    assert X.cause(ENSUREPIP, ROOMY) == "other"


@pytest.mark.parametrize("result, saw", [
    (REFUSED, "2 retries (Connection refused on /simple/fastapi/); ERROR: No matching distribution found for fastapi==0.165.0"),
    (HUNG, "2 retries (Read timed out on /files/uvicorn-0.54.0-py3-none-any.whl); ERROR: Could not install packages due "
           "to an OSError: HTTPConnectionPool(host='pdserve-multihost-router', port=18081): Max retries exceeded with url: "
           "/files/uvicorn-0.54.0-py3-none-any.whl (Read timed out)."),
])
def test_an_index_that_stops_answering_is_named_with_the_retries(result, saw):
    assert X.cause(result, ROOMY) == "index"
    message = explain(result)
    head = message.splitlines()[0]
    assert head.startswith("pip on decode could not download from the package index "
                           "http://pdserve-multihost-router:18081/simple/: it stopped answering, and pip gave up after at "
                           "most 2 retries per request (5 s timeout each; sglang_install_pip_retries, "
                           "sglang_install_pip_timeout). pip saw: " + saw), head
    assert "Bring the index back" in message and MARKER in message


def test_the_index_named_without_an_index_url_argument():
    # pip's own configuration: the pool in the error names host and port.
    assert "the package index pdserve-multihost-router:18081:" in explain(HUNG, args=PIP[:5])
    assert "the package index the package index of pip's own configuration" not in explain(REFUSED, args=PIP[:5])
    assert "from the package index of pip's own configuration: it stopped answering" in explain(REFUSED, args=PIP[:5])


def test_index_urls():
    assert X.index_urls(["--index-url", "https://mirror/simple", "--find-links", "/wheels", "-f", "http://h/w/",
                         "--extra-index-url=https://x/simple", "--index-url", "https://mirror/simple", "-i"]) == [
        "https://mirror/simple", "http://h/w/", "https://x/simple"]
    assert X.index_urls([]) == []


def test_anything_else_gives_pips_return_code_and_last_lines():
    message = explain(OTHER)
    assert message.splitlines()[0] == "pip failed on decode (rc 1) installing into %s." % VENV
    assert message.splitlines()[-1].endswith("(from versions: 90.0.1)")
    assert X.cause({"msg": "boom"}, None) == "other"
    assert X.explain({"msg": "boom"}, "decode", VENV, None, PIP, 2, 5, MARKER).splitlines()[-1] == "  boom"


def test_the_filter_reads_the_first_disk_entry_and_rejects_what_is_not_a_result():
    message = F.install_failure(NO_SPACE, "decode", VENV, {"disk": [FULL]}, PIP, 2, 5, MARKER)
    assert "64 MiB in all" in message
    assert "its filesystem, ? free now" in F.install_failure(NO_SPACE, "decode", VENV, {}, PIP, 2, 5, MARKER)
    with pytest.raises(AnsibleFilterError):
        F.install_failure("rc=1", "decode", VENV, {}, PIP, 2, 5, MARKER)
    with pytest.raises(AnsibleFilterError):
        F.install_failure(NO_SPACE, "decode", VENV, ["disk"], PIP, 2, 5, MARKER)
