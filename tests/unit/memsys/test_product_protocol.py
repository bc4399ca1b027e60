"""The product worker line protocol: one reply per request, errors as one-line replies."""

import io
import json

from memharness.memsys.products.workers.protocol import handle_line, handlers_of, serve


def _boom(request):
    raise ValueError("bad\nthing")


HANDLERS = {"hello": lambda r: {"product": "echo"}, "search": _boom}


def test_handle_line_wraps_replies_and_errors():
    hello = {"ok": True, "product": "echo", "ops": ["close", "hello", "search"]}
    assert handle_line(HANDLERS, '{"op": "hello"}') == hello  # ops: what this worker serves
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


def test_handlers_of_serves_forget_only_where_the_worker_has_one():
    class Old:  # a worker written before forget: the adapter rebuilds it instead
        def hello(self, r):
            return {}

        def reset(self, r):
            return {}

        def ingest(self, r):
            return {}

        def search(self, r):
            return {}

        def stats(self, r):
            return {}

    class New(Old):
        def forget(self, r):
            return {"deleted": len(r["unit_ids"])}

    assert "forget" not in handlers_of(Old())
    assert "forget" not in handle_line(handlers_of(Old()), '{"op": "hello"}')["ops"]
    new = handlers_of(New())
    assert "forget" in handle_line(new, '{"op": "hello"}')["ops"]
    assert handle_line(new, '{"op": "forget", "unit_ids": ["u1"]}') == {"ok": True, "deleted": 1}
