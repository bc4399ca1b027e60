"""The endpoint refuses other local processes (issue 43 case 1): every request is sent over real HTTP
from a second process, as another user of the machine would."""

import json
import socket
import subprocess
import sys
import time

import pytest
from memharness.memsys.products import endpoint as endpoint_module
from memharness.memsys.products.endpoint import MAX_BODY_BYTES, Endpoint
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat

# the second process: sends each request of argv[1] with http.client, prints [status, body] each
CLIENT = """
import http.client, json, sys
port, requests = int(sys.argv[1]), json.loads(sys.argv[2])
out = []
for r in requests:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.putrequest(r["method"], r["path"], skip_host=True, skip_accept_encoding=True)
    for name, value in r["headers"].items():
        conn.putheader(name, value)
    body = r["body"].encode() if r["body"] is not None else b""
    if r.get("length") is not None or r["body"] is not None:
        conn.putheader("Content-Length", str(r.get("length") or len(body)))
    conn.endheaders(body if r["body"] is not None else None)
    reply = conn.getresponse()
    out.append([reply.status, reply.read().decode(), dict(reply.getheaders())])
    conn.close()
print(json.dumps(out))
"""
# a sender whose body never arrives: headers, one byte of a 100-byte body, then silence
STALL = """
import socket, sys
port, token = sys.argv[1], sys.argv[2]
head = (
    f"POST /v1/chat/completions HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n"
    f"Authorization: Bearer {token}\\r\\nContent-Type: application/json\\r\\n"
    "Content-Length: 100\\r\\n\\r\\n{"
)
s = socket.create_connection(("127.0.0.1", int(port)))
s.sendall(head.encode())
print(s.recv(4096).split()[1].decode())
"""
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}


@pytest.fixture
def served():
    chat = ScriptedChat(default="plain")
    llm = LLM(chat, meter=Meter(), progress=False)
    endpoint = Endpoint(llm, Embedder(HashingEmbedder(dim=4)))
    endpoint.start()
    yield endpoint, chat
    endpoint.stop()
    llm.close()


def send(endpoint, *requests):
    """The requests, sent from another process: [(status, body text, headers), ...]."""
    port = endpoint._server.server_address[1]
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, str(port), json.dumps(requests)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def request(endpoint, path="/v1/chat/completions", body=CHAT, token=True, host=None, **extra):
    port = endpoint._server.server_address[1]
    headers = {"Host": host or f"127.0.0.1:{port}", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {endpoint.token if token is True else token}"
    headers.update(extra.pop("headers", {}))
    text = body if isinstance(body, str) or body is None else json.dumps(body)
    return {"method": "POST" if body is not None else "GET", "path": path, "headers": headers,
            "body": text, **extra}  # fmt: skip


def test_only_the_token_holder_on_a_local_host_is_served(served):
    endpoint, chat = served
    replies = send(
        endpoint,
        request(endpoint, "/v1/models", body=None, token=False),
        request(endpoint, "/v1/models", body=None, token="memharness-local"),
        request(endpoint, token=False),
        request(endpoint, token=endpoint.token[:-1] + "x"),
        request(endpoint, host="evil.example:80"),  # a web page through DNS rebinding
        request(endpoint, "/v1/models", body=None),
        request(endpoint),
    )
    assert [r[0] for r in replies] == [401, 401, 401, 401, 403, 200, 200]
    for _, text, headers in replies[:5]:  # nothing says what is listening
        assert "fake-chat" not in text and "memharness" not in text and "error" not in text
        assert "Python" not in headers.get("Server", "")
    assert "fake-chat" in replies[5][1]
    assert chat.calls == 1
    stats = endpoint.stats()
    assert stats["unauthorized_401"] == 4 and stats["unauthorized_403"] == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_tokens": -5}, "max_tokens must be an integer from 1"),
        ({"max_tokens": 10**12}, "max_tokens must be an integer from 1"),
        ({"max_completion_tokens": 2.5}, "max_completion_tokens must be an integer"),
        ({"temperature": float("nan")}, "temperature must be a number from 0 to 2"),
        ({"temperature": 7}, "temperature must be a number from 0 to 2"),
        ({"temperature": "hot"}, "temperature must be a number from 0 to 2"),
        ({"n": 3}, "n must be an integer from 1 to 1"),
        ({"seed": "s"}, "seed must be an integer"),
        ({"stop": [1]}, "stop must be a string or a list of strings"),
    ],
)
def test_out_of_range_fields_are_refused(served, change, message):
    endpoint, chat = served
    ((status, text, _),) = send(endpoint, request(endpoint, body=json.dumps({**CHAT, **change})))
    assert status == 400 and message in json.loads(text)["error"]["message"]
    assert chat.calls == 0


def test_non_json_and_oversized_bodies_are_refused(served):
    endpoint, chat = served
    too_big = request(endpoint, body="", length=MAX_BODY_BYTES + 1)  # announced, never sent
    replies = send(
        endpoint,
        request(endpoint, headers={"Content-Type": "text/plain"}),
        request(endpoint, headers={"Content-Type": "application/x-www-form-urlencoded"}),
        too_big,
        request(endpoint, body="[1, 2]"),
    )
    assert [r[0] for r in replies] == [400, 400, 400, 400]
    assert "Content-Type must be application/json" in replies[0][1]
    assert f"at most {MAX_BODY_BYTES}" in replies[2][1]
    assert chat.calls == 0 and endpoint.stats()["refused"] == 4


def test_a_body_that_never_arrives_is_cut_and_stop_keeps_its_deadline(monkeypatch):
    monkeypatch.setattr(endpoint_module, "READ_TIMEOUT_S", 1.0)
    chat = ScriptedChat(default="late", latency_s=8.0)
    llm = LLM(chat, meter=Meter(), progress=False)
    endpoint = Endpoint(llm, Embedder(HashingEmbedder(dim=4)))
    port = int(endpoint.start().split(":")[2].split("/")[0])
    stalled = subprocess.run(
        [sys.executable, "-c", STALL, str(port), endpoint.token],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert stalled.stdout.strip() == "408", stalled.stderr
    assert endpoint.stats()["read_timeouts"] == 1
    slow = subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(port), json.dumps([request(endpoint)])]
    )
    until = time.monotonic() + 20
    while endpoint.in_flight == 0 and time.monotonic() < until:  # the 8 s model call started
        time.sleep(0.05)
    started = time.monotonic()
    endpoint.stop(deadline_s=1.0)
    assert time.monotonic() - started < 5 and endpoint.stats()["stopped_in_flight"] == 1
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    slow.kill()
    slow.wait()
