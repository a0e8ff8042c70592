"""The guard inside the real anthropic and openai SDKs, against the fake
provider on loopback: a request the provider would refuse is answered by
the guard in the provider's own 400 (the SDK raises its BadRequestError)
and never reaches the fake; warned about and sent; or repaired and sent."""

from __future__ import annotations

import asyncio
import copy
import json
import warnings

import anthropic
import httpx
import httpx2
import openai
import pytest

import loopdbg
from loopdbg.guard import (
    AsyncGuardTransport,
    GuardTransport,
    ProviderWouldRejectWarning,
    Rejected,
    request_hook,
)
from test_check import UNANSWERED

KEY = "sk-ant-api03-guard-test-secret-0123456789"

CHAT_UNANSWERED = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "user", "content": "Weather in Beijing and the USD/CNY rate?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_w1", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
                {"id": "call_f1", "type": "function", "function": {"name": "fx", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_w1", "content": "18°C"},
    ],
}


def anthropic_client(fake, transport):
    return anthropic.Anthropic(
        api_key=KEY,
        base_url=fake.url,
        http_client=anthropic.DefaultHttpxClient(transport=transport),
    )


def openai_client(fake, transport):
    return openai.OpenAI(
        api_key=KEY,
        base_url=fake.url + "/v1",
        http_client=openai.DefaultHttpxClient(transport=transport),
    )


def send_anthropic(client, body=UNANSWERED):
    body = copy.deepcopy(body)
    return client.messages.create(**body)


def test_raise_answers_anthropics_400_in_process_and_nothing_is_sent(fake):
    transport = GuardTransport("raise")
    client = anthropic_client(fake, transport)
    with pytest.raises(anthropic.BadRequestError) as raised:
        send_anthropic(client)
    e = raised.value
    assert e.status_code == 400
    assert e.body["error"]["type"] == "invalid_request_error"
    assert "toolu_f1" in e.message and "without `tool_result` blocks" in e.message
    assert "blocked by loopdbg" in e.message
    assert fake.served() == 0
    # A 400 is not retried: judged once.
    assert transport.guard.counts["block"] == 1
    assert KEY not in json.dumps(transport.guard.last.body)


def test_raise_answers_openais_400_in_process_and_nothing_is_sent(fake):
    transport = GuardTransport("raise")
    client = openai_client(fake, transport)
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(**copy.deepcopy(CHAT_UNANSWERED))
    assert raised.value.status_code == 400
    assert "call_f1" in raised.value.message
    assert fake.served() == 0
    assert transport.guard.counts["block"] == 1


def test_raise_blocks_a_responses_call_left_without_its_output(fake):
    client = openai_client(fake, GuardTransport("raise"))
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(
            model="gpt-4o-mini",
            input=[
                {"role": "user", "content": "weather?"},
                {"type": "function_call", "call_id": "call_r1", "name": "weather", "arguments": "{}"},
            ],
        )
    assert "call_r1" in raised.value.message
    assert fake.served() == 0


def test_raise_stops_a_stream_before_it_starts(fake):
    client = anthropic_client(fake, GuardTransport("raise"))
    with pytest.raises(anthropic.BadRequestError, match="toolu_f1"):
        with client.messages.stream(**copy.deepcopy(UNANSWERED)) as stream:
            for _ in stream:
                pass
    assert fake.served() == 0


def test_a_valid_request_passes_every_mode_untouched(fake):
    body = copy.deepcopy(UNANSWERED)
    body["messages"][2]["content"].append({"type": "tool_result", "tool_use_id": "toolu_f1", "content": "7.12"})
    for n, mode in enumerate(["warn", "raise", "repair"], start=1):
        transport = GuardTransport(mode)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            reply = send_anthropic(anthropic_client(fake, transport), body)
        assert reply.type == "message"
        assert transport.guard.last.action == "forward"
        assert fake.served() == n


def test_warn_sends_it_and_says_which_id(fake):
    transport = GuardTransport("warn")
    client = anthropic_client(fake, transport)
    with pytest.warns(ProviderWouldRejectWarning, match="toolu_f1") as caught:
        # The fake refuses it as Anthropic does: the SDK raises the real 400.
        with pytest.raises(anthropic.BadRequestError) as raised:
            send_anthropic(client)
    assert "blocked by loopdbg" not in raised.value.message
    assert fake.served() == 1
    assert transport.guard.counts["warn"] == 1
    assert all(KEY not in str(w.message) for w in caught)


@pytest.mark.parametrize("mode", ["repair", "repair=strip"])
def test_repair_sends_a_history_the_provider_accepts(fake, mode):
    transport = GuardTransport(mode)
    reply = send_anthropic(anthropic_client(fake, transport))
    assert reply.type == "message"
    assert fake.served() == 1
    assert transport.guard.last.action == "repair"
    assert transport.guard.last.changes >= 1
    assert loopdbg.check(transport.guard.last.body)["problems"] == 0


def test_repair_makes_openais_history_whole(fake):
    transport = GuardTransport("repair")
    reply = openai_client(fake, transport).chat.completions.create(**copy.deepcopy(CHAT_UNANSWERED))
    assert reply.choices[0].message is not None
    sent = transport.guard.last.body
    assert [m.get("tool_call_id") for m in sent["messages"] if m["role"] == "tool"] == ["call_w1", "call_f1"]
    assert fake.served() == 1


def test_the_async_clients_are_guarded_too(fake):
    async def main():
        a = anthropic.AsyncAnthropic(
            api_key=KEY,
            base_url=fake.url,
            http_client=anthropic.DefaultAsyncHttpxClient(transport=AsyncGuardTransport("raise")),
        )
        with pytest.raises(anthropic.BadRequestError, match="toolu_f1"):
            await a.messages.create(**copy.deepcopy(UNANSWERED))
        o = openai.AsyncOpenAI(
            api_key=KEY,
            base_url=fake.url + "/v1",
            http_client=openai.DefaultAsyncHttpxClient(transport=AsyncGuardTransport("repair")),
        )
        reply = await o.chat.completions.create(**copy.deepcopy(CHAT_UNANSWERED))
        assert reply.choices

    asyncio.run(main())
    assert fake.served() == 1


def test_client_builds_a_guarded_httpx_client(fake):
    http = loopdbg.guard.client("raise")
    client = anthropic.Anthropic(api_key=KEY, base_url=fake.url, http_client=http)
    with pytest.raises(anthropic.BadRequestError):
        send_anthropic(client)
    assert fake.served() == 0


@pytest.mark.parametrize("http", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_the_event_hook_warns_repairs_or_raises(fake, http):
    url = fake.url + "/v1/messages"
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with http.Client(event_hooks={"request": [request_hook("raise")]}) as c:
        with pytest.raises(Rejected, match="toolu_f1") as raised:
            c.post(url, json=UNANSWERED, headers=headers)
        assert raised.value.verdict.status == 400
    assert fake.served() == 0
    hook = request_hook("repair")
    with http.Client(event_hooks={"request": [hook]}) as c:
        r = c.post(url, json=UNANSWERED, headers=headers)
    assert r.status_code == 200, r.text
    assert hook.guard.last.action == "repair"
    assert fake.served() == 1
    with http.Client(event_hooks={"request": [request_hook("warn")]}) as c:
        with pytest.warns(ProviderWouldRejectWarning):
            r = c.post(url, json=UNANSWERED, headers=headers)
    assert r.status_code == 400
    assert fake.served() == 2


@pytest.mark.parametrize("http", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_other_traffic_is_not_judged(fake, http):
    transport = GuardTransport("raise", http=http)
    assert isinstance(transport, http.BaseTransport)
    with http.Client(transport=transport) as c:
        c.get(fake.url + "/v1/models")
        c.post(fake.url + "/v1/messages/count_tokens", json={"model": "m", "messages": []})
    assert transport.guard.counts["block"] == 0
    assert fake.served() == 2


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="warn, raise, repair"):
        GuardTransport("block")


def test_a_plain_httpx_client_is_guarded_with_httpx_transports(fake):
    transport = GuardTransport("raise", http="httpx")
    assert isinstance(transport, httpx.BaseTransport)
    with httpx.Client(transport=transport) as c:
        r = c.post(fake.url + "/v1/messages", json=UNANSWERED, headers={"x-api-key": KEY})
    assert r.status_code == 400 and r.headers["x-loopdbg"] == "blocked"
    assert "toolu_f1" in r.json()["error"]["message"]
    assert fake.served() == 0


def _chunks(data: bytes, size: int = 64):
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.parametrize("http", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_repaired_streamed_body_is_sent_with_its_length_alone(http):
    """A body the SDK streamed (``Transfer-Encoding: chunked``) and the
    guard repaired goes with ``Content-Length`` only: both together is a
    request RFC 9112 forbids."""
    seen = []

    def upstream(request):
        seen.append((dict(request.headers), request.read()))
        return http.Response(200, json={"type": "message", "content": []})

    body = json.dumps(UNANSWERED).encode()
    headers = {"content-type": "application/json", "x-api-key": KEY}
    url = "https://api.anthropic.com/v1/messages"
    transport = GuardTransport("repair", http.MockTransport(upstream), http=http)
    with http.Client(transport=transport) as c:
        c.post(url, content=_chunks(body), headers=headers)
    hook = request_hook("repair")
    with http.Client(transport=http.MockTransport(upstream), event_hooks={"request": [hook]}) as c:
        c.post(url, content=_chunks(body), headers=headers)
    assert len(seen) == 2
    for sent_headers, sent in seen:
        lowered = {k.lower(): v for k, v in sent_headers.items()}
        assert "transfer-encoding" not in lowered, lowered
        assert int(lowered["content-length"]) == len(sent)
        assert loopdbg.check(json.loads(sent))["problems"] == 0


@pytest.mark.parametrize("http", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_streamed_body_past_the_limit_is_answered_413_without_being_read(http, monkeypatch):
    """Past ``MAX_BODY`` the guard stops reading: it answers 413 itself,
    as the proxy does, and nothing is sent."""
    monkeypatch.setattr(loopdbg.guard, "MAX_BODY", 10_000)
    pulled = []

    def endless():  # a hundred times the limit: finite, so a guard that reads on fails, not hangs
        for _ in range(1000):
            pulled.append(1)
            yield b"x" * 1000

    sent = []
    transport = GuardTransport("warn", http.MockTransport(lambda r: sent.append(r) or http.Response(200)), http=http)
    url = "https://api.anthropic.com/v1/messages"
    with http.Client(transport=transport) as c:
        r = c.post(url, content=endless(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert "over 10000 bytes" in r.json()["error"]["message"]
    assert len(pulled) == 11, "read on past the limit"
    assert not sent
    assert transport.guard.counts["block"] == 1

    async def main():
        async def aendless():
            for _ in range(1000):
                pulled.append(1)
                yield b"x" * 1000

        pulled.clear()
        inner = http.MockTransport(lambda r: http.Response(200))
        async with http.AsyncClient(transport=AsyncGuardTransport("warn", inner, http=http)) as c:
            r = await c.post(url, content=aendless())
        assert r.status_code == 413
        assert len(pulled) == 11

    asyncio.run(main())


@pytest.mark.parametrize("http", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_repair_sends_what_it_left_alone_as_written(http):
    """Numbers the repair did not touch go as the request wrote them
    (``json.dumps`` of the parsed body wrote ``1e3`` as ``1000.0``), and so
    does a key written twice."""
    seen = []

    def upstream(request):
        seen.append(request.read().decode())
        return http.Response(200, json={"type": "message", "content": []})

    body = json.dumps(UNANSWERED)[:-1] + ', "seed": 123456789012345678901234567890, "top_k": 1e3, "metadata": {"k": 1, "k": 2}}'
    transport = GuardTransport("repair", http.MockTransport(upstream), http=http)
    hook = request_hook("repair")
    url = "https://api.anthropic.com/v1/messages"
    headers = {"content-type": "application/json"}
    with http.Client(transport=transport) as c:
        c.post(url, content=body.encode(), headers=headers)
    with http.Client(transport=http.MockTransport(upstream), event_hooks={"request": [hook]}) as c:
        c.post(url, content=body.encode(), headers=headers)
    assert len(seen) == 2
    for sent in seen:
        for kept in ["123456789012345678901234567890", "1e3", '{"k": 1, "k": 2}']:
            assert kept in sent, f"{kept} lost: {sent}"
        assert loopdbg.check(json.loads(sent))["problems"] == 0


def test_a_growing_history_gets_the_same_verdicts_remembered_or_read_whole():
    """A client's session as a loop sends it: each request the last one and
    more, one refused (a call left without its result), then mended. With
    recent conversations remembered (each next request read only past what
    it shares with the last) the verdicts are those of reading every
    request whole (history_memory_mib=0)."""
    from loopdbg.guard import Guard

    user = {"role": "user", "content": "Weather in Beijing and the USD/CNY rate?"}
    calls = CHAT_UNANSWERED["messages"][1]
    one = CHAT_UNANSWERED["messages"][2]
    other = {"role": "tool", "tool_call_id": "call_f1", "content": "7.12"}
    answer = {"role": "assistant", "content": "18°C, and 7.12."}
    more = {"role": "user", "content": "And tomorrow?"}
    session = [
        [user],
        [user, calls, one],
        [user, calls, one],
        [user, calls, one, other],
        [user, calls, one, other, answer, more],
    ]
    remembering, whole = Guard("raise"), Guard("raise", history_memory_mib=0)
    seen = []
    for messages in session:
        body = json.dumps({"model": "gpt-4o-mini", "messages": messages}).encode()
        a = remembering.judge("POST", "/v1/chat/completions", body)
        b = whole.judge("POST", "/v1/chat/completions", body)
        assert (a.action, a.rejected, a.findings) == (b.action, b.rejected, b.findings)
        seen.append(a.action)
    assert seen == ["forward", "block", "block", "forward", "forward"]
