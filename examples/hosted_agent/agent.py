"""A reference hosted agent for AgentClash (docs/hosted-agents.md), standard library only.

It accepts each case POSTed to it (202), then, on its own thread, posts back ``run_started``, a
``tool.call.started`` / ``tool.call.completed`` pair (a "lookup" of its answer), ``final_answer``
and ``run_finished`` to the case's callback URL with the case's bearer token.

The answer comes from the inputs: ``--answers answers.json`` ({"<case key>": "answer"}) when that
names the case, else the value of the case's first input. A real agent would call its model here.

    python examples/hosted_agent/agent.py --port 8765 [--answers answers.json] [--black-box]
"""

from __future__ import annotations

import argparse
import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_CASE_BYTES = 1_000_000


def post(case: dict, event_id: str, kind: str, payload: dict) -> int:
    body = json.dumps({"event_id": event_id, "type": kind, "payload": payload}).encode()
    request = urllib.request.Request(case["callback_url"], data=body, method="POST")  # noqa: S310 - the platform's URL
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {case['token']}")
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the platform's URL
        return response.status


def answer(case: dict, answers: dict[str, str]) -> str:
    if case["case_key"] in answers:
        return answers[case["case_key"]]
    inputs = case.get("inputs") or []
    first = inputs[0] if isinstance(inputs, list) and inputs else {}
    return str(first.get("value", "")) if isinstance(first, dict) else str(first)


def solve(case: dict, answers: dict[str, str], black_box: bool) -> None:
    text = answer(case, answers)
    post(case, "start", "run_started", {"agent_name": "reference-agent", "agent_version": "1"})
    if not black_box:
        args = {"case_key": case["case_key"]}
        post(case, "lookup-1", "tool.call.started", {"tool_call_id": "1", "tool_name": "lookup", "arguments": args})
        post(case, "lookup-2", "tool.call.completed", {"tool_call_id": "1", "tool_name": "lookup", "arguments": args, "result": text})
    post(case, "answer", "final_answer", {"output": text})
    post(case, "done", "run_finished", {})


def handler(answers: dict[str, str], black_box: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_CASE_BYTES:
                self.send_error(413)
                return
            case = json.loads(self.rfile.read(size))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            threading.Thread(target=solve, args=(case, answers, black_box), daemon=True).start()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def serve(host: str, port: int, answers: dict[str, str] | None = None, black_box: bool = False) -> ThreadingHTTPServer:
    return ThreadingHTTPServer((host, port), handler(answers or {}, black_box))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--answers", help="JSON file: {case_key: answer}")
    parser.add_argument("--black-box", action="store_true", help="post only the final answer (no trace events)")
    options = parser.parse_args()
    table = json.load(open(options.answers)) if options.answers else {}
    server = serve(options.host, options.port, table, options.black_box)
    print(f"reference hosted agent on http://{options.host}:{server.server_port}")
    server.serve_forever()
