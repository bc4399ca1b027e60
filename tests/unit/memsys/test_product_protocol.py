"""The product worker line protocol: one reply per request, errors as one-line replies."""

import io
import json

from memharness.memsys.products.workers.protocol import handle_line, serve


def _boom(request):
    raise ValueError("bad\nthing")


HANDLERS = {"hello": lambda r: {"product": "echo"}, "search": _boom}


def test_handle_line_wraps_replies_and_errors():
    assert handle_line(HANDLERS, '{"op": "hello"}') == {"ok": True, "product": "echo"}
    err = handle_line(HANDLERS, '{"op": "search", "query": "q"}')
    assert err["ok"] is False and err["error"] == "ValueError: bad thing"
    assert "unknown op" in handle_line(HANDLERS, '{"op": "nope"}')["error"]
    assert "not JSON" in handle_line(HANDLERS, "{")["error"]


def test_serve_stops_at_close_and_ignores_blank_lines():
    stdin = io.StringIO('{"op": "hello"}\n\n{"op": "close"}\n{"op": "hello"}\n')
    stdout = io.StringIO()
    serve(HANDLERS, stdin=stdin, stdout=stdout)
    replies = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [r["ok"] for r in replies] == [True, True] and replies[1].get("closing") is True
