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

The SDKs moved from ``httpx`` to its successor ``httpx2`` (anthropic 2.x,
openai 3.x refuse an ``httpx`` transport); the guard works with both. A
transport is built on ``httpx2`` when it is installed, else on ``httpx``;
``http="httpx"`` picks one, and a wrapped ``transport`` decides by its own
package.

Why a transport, not only an event hook: an httpx event hook can look at a
request and change it, but it cannot answer one. An exception raised from a
hook is not the provider's error to the SDKs: they retry it (twice, with
backoff) and then raise ``APIConnectionError``. The transport answers the
400 itself, which the SDKs do not retry. :func:`request_hook` is there for
clients whose transport you do not own; in ``"raise"`` mode it raises
:class:`Rejected`.
"""

from __future__ import annotations

import importlib
import json
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Union

from . import _native

__all__ = [
    "AsyncGuardTransport",
    "Guard",
    "GuardTransport",
    "ProviderWouldRejectWarning",
    "Rejected",
    "MAX_BODY",
    "Verdict",
    "async_client",
    "async_request_hook",
    "client",
    "request_hook",
]

Http = Union[str, ModuleType, None]


def _package(http: Http = None, like: Any = None) -> ModuleType:
    """The HTTP package to build on: given, the one ``like`` comes from,
    else ``httpx2`` when installed, else ``httpx``."""
    if isinstance(http, ModuleType):
        return http
    if http:
        return importlib.import_module(http)
    if like is not None:
        return importlib.import_module(type(like).__module__.partition(".")[0])
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


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
    #: For ``repair``: the body sent, as text, every part the repair left
    #: alone as the request wrote it (numbers, keys written twice).
    text: Optional[str] = None
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
        history_memory_mib: int = 1024,
    ) -> None:
        self.mode = mode
        # Recent conversations, so each next request is read only past
        # what it shares with the last (as the proxy's --history-memory).
        self._gate = _native.Gate(mode, on_unjudged, history_memory_mib)
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

    def judge_request(self, request: Any) -> Verdict:
        """Judges an ``httpx`` or ``httpx2`` request, reading its body (at
        most :data:`MAX_BODY` bytes: past them it is refused, as the proxy
        refuses it, without being read further)."""
        body = _read_bounded(request)
        if body is None:
            return self._too_large()
        return self.judge(request.method, _path(request), body)

    async def ajudge_request(self, request: Any) -> Verdict:
        """:meth:`judge_request` for an async request."""
        body = await _aread_bounded(request)
        if body is None:
            return self._too_large()
        return self.judge_request(request)

    def _too_large(self) -> Verdict:
        v = Verdict(
            action="block",
            provider=None,
            status=413,
            body={
                "type": "error",
                "error": {
                    "type": "request_too_large",
                    "message": f"loopdbg guard: the request body is over {MAX_BODY} bytes; not read further and not sent",
                },
            },
            unread="request body too large",
        )
        self.counts["block"] += 1
        self.last = v
        if self.on_verdict is not None:
            self.on_verdict(v)
        return v

    def remember(self, response: Any) -> None:
        """Keeps a non-streamed Responses API answer for the requests that
        continue it."""
        if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
            self._gate.remember(response.content)

    def refusal(self, request: Any, v: Verdict) -> Any:
        """The provider-shaped 400 for a blocked request, as a response of
        the request's own package."""
        headers = {"content-type": "application/json", "x-loopdbg": "blocked"}
        if v.bedrock:
            headers["x-amzn-errortype"] = "ValidationException"
        return _package(like=request).Response(
            v.status or 400,
            content=json.dumps(v.body).encode(),
            headers=headers,
            request=request,
        )


#: The largest request body the guard reads, as ``loopdbg proxy``: past
#: it the request is answered 413 in-process (a 300 MB streamed body was
#: read whole, 1.8 GB of memory, before anything was said).
MAX_BODY = 256 << 20


def _read_bounded(request: Any) -> Optional[bytes]:
    """The body of a sync request, read and kept as ``read()`` keeps it,
    or ``None`` once it passes :data:`MAX_BODY` (nothing more is read)."""
    if hasattr(request, "_content"):
        return request._content
    chunks, size = [], 0
    for chunk in request.stream:
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return _keep(request, b"".join(chunks))


async def _aread_bounded(request: Any) -> Optional[bytes]:
    """:func:`_read_bounded` for an async request."""
    if hasattr(request, "_content"):
        return request._content
    chunks, size = [], 0
    async for chunk in request.stream:
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return _keep(request, b"".join(chunks))


def _keep(request: Any, content: bytes) -> bytes:
    """Keeps a body read as the package's own ``read()`` does."""
    request._content = content
    request.stream = _package(like=request).ByteStream(content)
    return content


def _path(request: Any) -> str:
    return request.url.raw_path.decode("ascii", "replace")


def _content(v: "Verdict") -> bytes:
    """A repaired body as sent: its text, which keeps what the repair left
    alone as written (``json.dumps`` of ``v.body`` would write ``1e2`` as
    ``100.0``)."""
    if v.text is not None:
        return v.text.encode()
    return json.dumps(v.body, ensure_ascii=False, separators=(",", ":")).encode()


def _with_body(request: Any, content: bytes) -> Any:
    """The same request carrying ``content`` instead."""
    # The repaired body is sent whole, with its own length: a streamed
    # request's `Transfer-Encoding: chunked` went with it and the request
    # carried both (RFC 9112 forbids it; a server may take either).
    framing = ("content-length", "transfer-encoding")
    headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() not in framing]
    return _package(like=request).Request(
        request.method,
        request.url,
        headers=headers,
        content=content,
        extensions=request.extensions,
    )


def _replace_body(request: Any, content: bytes) -> None:
    """Changes ``request``'s body in place (an event hook gets no other way)."""
    request.stream = _package(like=request).ByteStream(content)
    request._content = content  # what request.read() and .content return
    if "Transfer-Encoding" in request.headers:
        del request.headers["Transfer-Encoding"]
    request.headers["Content-Length"] = str(len(content))


def _is_responses(request: Any) -> bool:
    return _path(request).split("?")[0].endswith("/responses")


class _Judging:
    """What both transports do around the one they wrap."""

    guard: Guard

    def _before(self, request: Any) -> "tuple[Verdict, Any]":
        v = self.guard.judge_request(request)
        if v.action == "repair":
            request = _with_body(request, _content(v))
        return v, request


class _SyncJudging(_Judging):
    def __init__(self, mode: str, transport: Any, guard: Optional[Guard], on_unjudged: str, http: ModuleType) -> None:
        self.guard = guard or Guard(mode, on_unjudged=on_unjudged)
        self._transport = transport if transport is not None else http.HTTPTransport()

    def handle_request(self, request: Any) -> Any:
        v, request = self._before(request)
        if v.action == "block":
            return self.guard.refusal(request, v)
        response = self._transport.handle_request(request)
        if v.provider == "responses" and _is_responses(request):
            if "json" in response.headers.get("content-type", ""):
                response.read()
                self.guard.remember(response)
        return response

    def close(self) -> None:
        self._transport.close()


class _AsyncJudging(_Judging):
    def __init__(self, mode: str, transport: Any, guard: Optional[Guard], on_unjudged: str, http: ModuleType) -> None:
        self.guard = guard or Guard(mode, on_unjudged=on_unjudged)
        self._transport = transport if transport is not None else http.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        if await _aread_bounded(request) is None:
            return self.guard.refusal(request, self.guard._too_large())
        v, request = self._before(request)
        if v.action == "block":
            return self.guard.refusal(request, v)
        response = await self._transport.handle_async_request(request)
        if v.provider == "responses" and _is_responses(request):
            if "json" in response.headers.get("content-type", ""):
                await response.aread()
                self.guard.remember(response)
        return response

    async def aclose(self) -> None:
        await self._transport.aclose()


_classes: Dict[Any, type] = {}


def _transport_class(http: ModuleType, asynchronous: bool) -> type:
    """The guard's transport class on ``http``'s own base class (the SDKs
    check which package a transport comes from)."""
    key = (http.__name__, asynchronous)
    if key not in _classes:
        base = http.AsyncBaseTransport if asynchronous else http.BaseTransport
        mixin = _AsyncJudging if asynchronous else _SyncJudging
        name = "AsyncGuardTransport" if asynchronous else "GuardTransport"
        _classes[key] = type(name, (mixin, base), {"__module__": __name__})
    return _classes[key]


def _guard_transport(asynchronous: bool, mode: str, transport: Any, guard: Optional[Guard], on_unjudged: str, http: Http) -> Any:
    package = _package(http, transport)
    cls = _transport_class(package, asynchronous)
    return cls(mode, transport, guard, on_unjudged, package)


def GuardTransport(  # noqa: N802  (used as a class)
    mode: str = "raise",
    transport: Any = None,
    *,
    guard: Optional[Guard] = None,
    on_unjudged: str = "block",
    http: Http = None,
) -> Any:
    """A transport that judges each request before ``transport`` (by
    default the package's ``HTTPTransport()``) sends it; a subclass of
    ``httpx2.BaseTransport`` or ``httpx.BaseTransport`` (see the module's
    note). ``.guard`` is its :class:`Guard`."""
    return _guard_transport(False, mode, transport, guard, on_unjudged, http)


def AsyncGuardTransport(  # noqa: N802  (used as a class)
    mode: str = "raise",
    transport: Any = None,
    *,
    guard: Optional[Guard] = None,
    on_unjudged: str = "block",
    http: Http = None,
) -> Any:
    """:func:`GuardTransport` for async clients (``AsyncAnthropic``,
    ``AsyncOpenAI``)."""
    return _guard_transport(True, mode, transport, guard, on_unjudged, http)


def client(mode: str = "raise", *, on_unjudged: str = "block", http: Http = None, **kwargs: Any) -> Any:
    """A ``Client`` (of ``httpx2``, else ``httpx``) whose requests pass the
    guard; ``kwargs`` go to the client (a ``transport`` there is wrapped)."""
    inner = kwargs.pop("transport", None)
    package = _package(http, inner)
    guarded = GuardTransport(mode, inner, on_unjudged=on_unjudged, http=package)
    return package.Client(transport=guarded, **kwargs)


def async_client(mode: str = "raise", *, on_unjudged: str = "block", http: Http = None, **kwargs: Any) -> Any:
    """:func:`client` for asyncio."""
    inner = kwargs.pop("transport", None)
    package = _package(http, inner)
    guarded = AsyncGuardTransport(mode, inner, on_unjudged=on_unjudged, http=package)
    return package.AsyncClient(transport=guarded, **kwargs)


def request_hook(mode: str = "warn", *, guard: Optional[Guard] = None) -> Callable[[Any], None]:
    """An httpx ``event_hooks={"request": [...]}`` hook: ``"warn"`` warns,
    ``"repair"`` rewrites the body in place, ``"raise"`` raises
    :class:`Rejected` (see the module's note on SDK retries)."""
    g = guard or Guard(mode)

    def hook(request: Any) -> None:
        _apply(g, request, g.judge_request(request))

    hook.guard = g  # type: ignore[attr-defined]
    return hook


def async_request_hook(
    mode: str = "warn", *, guard: Optional[Guard] = None
) -> Callable[[Any], Any]:
    """:func:`request_hook` for ``httpx.AsyncClient``."""
    g = guard or Guard(mode)

    async def hook(request: Any) -> None:
        _apply(g, request, await g.ajudge_request(request))

    hook.guard = g  # type: ignore[attr-defined]
    return hook


def _apply(g: Guard, request: Any, v: Verdict) -> None:
    if v.action == "block":
        raise Rejected(v)
    if v.action == "repair":
        _replace_body(request, _content(v))
