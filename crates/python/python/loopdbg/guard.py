"""The proxy's gate inside an SDK client: each outgoing request is checked
before it leaves, by the same Rust code as ``loopdbg proxy --on-invalid``.

Three modes, as the proxy's:

``"warn"``
    send it anyway; a :class:`ProviderWouldRejectWarning` names the id and
    quotes the provider's words.
``"raise"``
    do not send it; answer the provider's own 400 locally, so the SDK raises
    the error it raises for the provider's (``anthropic.BadRequestError``,
    ``openai.BadRequestError``) before a token is spent.
``"repair"`` (or ``"repair=strip"``)
    send the history repaired as ``check --fix`` repairs it.

Both the ``anthropic`` and ``openai`` SDKs take an ``http_client``; give
them a guarded one::

    import anthropic, loopdbg.guard
    client = anthropic.Anthropic(
        http_client=anthropic.DefaultHttpxClient(transport=loopdbg.guard.GuardTransport("raise"))
    )
    # or, with httpx's defaults: http_client=loopdbg.guard.client("raise")

Why a transport, not only an event hook: an httpx event hook can look at a
request and change it, but it cannot answer one. An exception raised from a
hook is not the provider's error to the SDKs: they retry it (twice, with
backoff) and then raise ``APIConnectionError``. The transport answers the
400 itself, which the SDKs do not retry. :func:`request_hook` is there for
clients whose transport you do not own; in ``"raise"`` mode it raises
:class:`Rejected`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import httpx

from . import _native

__all__ = [
    "AsyncGuardTransport",
    "Guard",
    "GuardTransport",
    "ProviderWouldRejectWarning",
    "Rejected",
    "Verdict",
    "async_client",
    "async_request_hook",
    "client",
    "request_hook",
]


class ProviderWouldRejectWarning(UserWarning):
    """A request the provider would refuse was sent anyway (``"warn"``)."""


class Rejected(Exception):
    """Raised by :func:`request_hook` in ``"raise"`` mode: the request was
    not sent. ``verdict`` holds the findings and the provider-shaped body."""

    def __init__(self, verdict: "Verdict") -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


@dataclass
class Verdict:
    """What the gate made of one request."""

    #: ``forward``, ``block``, ``repair``, or ``unjudged`` (not a
    #: conversation request: models, token counts).
    action: str
    #: The provider its path and body name (``anthropic``, ``openai``, …).
    provider: Optional[str]
    #: Every finding, as ``check --format json`` lists them.
    findings: List[Dict[str, Any]] = field(default_factory=list)
    #: The first finding the provider refuses, if any.
    rejected: Optional[Dict[str, Any]] = None
    #: For ``block``: the HTTP status answered (400).
    status: Optional[int] = None
    #: For ``block``: the provider's error JSON; for ``repair``: the body sent.
    body: Any = None
    #: For ``repair``: how many calls or results were added or removed.
    changes: int = 0
    #: Why the body could not be read as a conversation, when it could not.
    unread: Optional[str] = None
    bedrock: bool = False

    @property
    def message(self) -> str:
        """The provider's words for the refusal (or why it was not judged)."""
        if self.rejected:
            return self.rejected["message"]
        if self.action == "block" and isinstance(self.body, dict):
            err = self.body.get("error")
            if isinstance(err, dict):
                return str(err.get("message", ""))
            return str(self.body.get("message", ""))
        return self.unread or ""


class Guard:
    """One gate, kept per client: a Responses request that continues a
    stored response (``previous_response_id``) is judged with the calls
    that response made, as the proxy judges it.

    ``on_verdict`` is called with every :class:`Verdict`; ``counts`` keeps
    how many requests were forwarded, warned about, blocked and repaired.
    """

    def __init__(
        self,
        mode: str = "warn",
        *,
        on_unjudged: str = "block",
        on_verdict: Optional[Callable[[Verdict], None]] = None,
    ) -> None:
        self.mode = mode
        self._gate = _native.Gate(mode, on_unjudged)
        self.on_verdict = on_verdict
        self.counts = {"forward": 0, "warn": 0, "block": 0, "repair": 0, "unjudged": 0}
        self.last: Optional[Verdict] = None

    def judge(self, method: str, path: str, body: bytes) -> Verdict:
        """Judges a request: its method, its path with the query, its body."""
        if method.upper() != "POST" or not body:
            v = Verdict(action="unjudged", provider=None)
        else:
            v = Verdict(**json.loads(self._gate.judge(path, body)))
        if v.action == "forward" and v.rejected:
            self.counts["warn"] += 1
            warnings.warn(
                f"loopdbg: the provider would reject this request: {v.rejected['message']}",
                ProviderWouldRejectWarning,
                stacklevel=4,
            )
        else:
            self.counts[v.action] += 1
        self.last = v
        if self.on_verdict is not None:
            self.on_verdict(v)
        return v

    def judge_request(self, request: httpx.Request) -> Verdict:
        return self.judge(request.method, _path(request), request.read())

    def remember(self, response: httpx.Response) -> None:
        """Keeps a non-streamed Responses API answer for the requests that
        continue it."""
        if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
            self._gate.remember(response.content)

    def refusal(self, request: httpx.Request, v: Verdict) -> httpx.Response:
        """The provider-shaped 400 for a blocked request."""
        headers = {"content-type": "application/json", "x-loopdbg": "blocked"}
        if v.bedrock:
            headers["x-amzn-errortype"] = "ValidationException"
        return httpx.Response(
            v.status or 400,
            content=json.dumps(v.body).encode(),
            headers=headers,
            request=request,
        )


def _path(request: httpx.Request) -> str:
    return request.url.raw_path.decode("ascii", "replace")


def _with_body(request: httpx.Request, body: Any) -> httpx.Request:
    """The same request carrying ``body`` instead."""
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
    return httpx.Request(
        request.method,
        request.url,
        headers=headers,
        content=content,
        extensions=request.extensions,
    )


def _replace_body(request: httpx.Request, body: Any) -> None:
    """Changes ``request``'s body in place (an event hook gets no other way)."""
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    request.stream = httpx.ByteStream(content)
    request._content = content  # what request.read() and .content return
    request.headers["Content-Length"] = str(len(content))


def _is_responses(request: httpx.Request) -> bool:
    return _path(request).split("?")[0].endswith("/responses")


class GuardTransport(httpx.BaseTransport):
    """An httpx transport that judges each request before ``transport``
    (by default ``httpx.HTTPTransport()``) sends it."""

    def __init__(
        self,
        mode: str = "raise",
        transport: Optional[httpx.BaseTransport] = None,
        *,
        guard: Optional[Guard] = None,
        on_unjudged: str = "block",
    ) -> None:
        self.guard = guard or Guard(mode, on_unjudged=on_unjudged)
        self._transport = transport or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        v = self.guard.judge_request(request)
        if v.action == "block":
            return self.guard.refusal(request, v)
        if v.action == "repair":
            request = _with_body(request, v.body)
        response = self._transport.handle_request(request)
        if v.provider == "responses" and _is_responses(request):
            if "json" in response.headers.get("content-type", ""):
                response.read()
                self.guard.remember(response)
        return response

    def close(self) -> None:
        self._transport.close()


class AsyncGuardTransport(httpx.AsyncBaseTransport):
    """:class:`GuardTransport` for ``httpx.AsyncClient`` (``AsyncAnthropic``,
    ``AsyncOpenAI``)."""

    def __init__(
        self,
        mode: str = "raise",
        transport: Optional[httpx.AsyncBaseTransport] = None,
        *,
        guard: Optional[Guard] = None,
        on_unjudged: str = "block",
    ) -> None:
        self.guard = guard or Guard(mode, on_unjudged=on_unjudged)
        self._transport = transport or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        v = self.guard.judge_request(request)
        if v.action == "block":
            return self.guard.refusal(request, v)
        if v.action == "repair":
            request = _with_body(request, v.body)
        response = await self._transport.handle_async_request(request)
        if v.provider == "responses" and _is_responses(request):
            if "json" in response.headers.get("content-type", ""):
                await response.aread()
                self.guard.remember(response)
        return response

    async def aclose(self) -> None:
        await self._transport.aclose()


def client(mode: str = "raise", *, on_unjudged: str = "block", **kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` whose requests pass the guard; ``kwargs`` go to
    ``httpx.Client`` (a ``transport`` there is the one wrapped)."""
    inner = kwargs.pop("transport", None)
    return httpx.Client(transport=GuardTransport(mode, inner, on_unjudged=on_unjudged), **kwargs)


def async_client(mode: str = "raise", *, on_unjudged: str = "block", **kwargs: Any) -> httpx.AsyncClient:
    """:func:`client` for asyncio."""
    inner = kwargs.pop("transport", None)
    return httpx.AsyncClient(
        transport=AsyncGuardTransport(mode, inner, on_unjudged=on_unjudged), **kwargs
    )


def request_hook(mode: str = "warn", *, guard: Optional[Guard] = None) -> Callable[[httpx.Request], None]:
    """An httpx ``event_hooks={"request": [...]}`` hook: ``"warn"`` warns,
    ``"repair"`` rewrites the body in place, ``"raise"`` raises
    :class:`Rejected` (see the module's note on SDK retries)."""
    g = guard or Guard(mode)

    def hook(request: httpx.Request) -> None:
        _apply(g, request, g.judge_request(request))

    hook.guard = g  # type: ignore[attr-defined]
    return hook


def async_request_hook(
    mode: str = "warn", *, guard: Optional[Guard] = None
) -> Callable[[httpx.Request], Any]:
    """:func:`request_hook` for ``httpx.AsyncClient``."""
    g = guard or Guard(mode)

    async def hook(request: httpx.Request) -> None:
        await request.aread()
        _apply(g, request, g.judge_request(request))

    hook.guard = g  # type: ignore[attr-defined]
    return hook


def _apply(g: Guard, request: httpx.Request, v: Verdict) -> None:
    if v.action == "block":
        raise Rejected(v)
    if v.action == "repair":
        _replace_body(request, v.body)
