# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Demo without a GPU: emulated SGLang prefill + decode behind the real sglang-router (PD mode).

Starts everything on free loopback ports, sends "What is 17*23? Number only." and a thinking
request through the router, prints the parsed answers, stops everything. Exit status 0 only when
the answers are right.

    .venv/bin/python scripts/demo_emulated.py
"""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import stack  # noqa: E402

QUESTION = "What is 17*23? Number only."


def ask(router_url, model, thinking):
    body = {"model": model, "messages": [{"role": "user", "content": QUESTION}],
            "max_tokens": 256}
    if thinking:
        body["chat_template_kwargs"] = {"thinking": True}
    status, payload, dummy_headers = stack.post_json(router_url + "/v1/chat/completions", body, timeout=60)
    if status != 200:
        raise RuntimeError("router answered %s: %s" % (status, payload))
    return payload["choices"][0]["message"]


def main():
    pd = stack.PDStack()
    print("Starting emulated prefill (%s, bootstrap port %s), decode (%s) and the real "
          "sglang-router (%s) ..." % (pd.prefill.url, pd.prefill.bootstrap_port,
                                      pd.decode.url, pd.router.url))
    ok = True
    try:
        pd.start(timeout=120)
        workers = pd.router.workers() or {}
        stats = workers.get("stats", {})
        print("Router workers: %s prefill, %s decode" % (stats.get("prefill_count"),
                                                         stats.get("decode_count")))
        plain = ask(pd.router_url, pd.model, thinking=False)
        print("\nQ: %s\nA: %s" % (QUESTION, plain["content"]))
        ok &= plain["content"] == "391"
        thought = ask(pd.router_url, pd.model, thinking=True)
        print("\nQ (thinking): %s\n  reasoning_content: %s\n  content:           %s"
              % (QUESTION, (thought.get("reasoning_content") or "").strip(), thought["content"]))
        ok &= thought["content"] == "391" and bool(thought.get("reasoning_content"))
    except Exception as exc:  # pylint: disable=broad-except
        print("\nFAILED: %s\n%s" % (exc, pd.logs()), file=sys.stderr)
        ok = False
    finally:
        pd.stop()
    print("\nResult: %s" % ("OK, the router serves parsed answers" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
