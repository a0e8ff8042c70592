"""loopdbg's check inside LiteLLM's proxy (the AI gateway), as a custom
guardrail: every request is judged before LiteLLM sends it, by the same
Rust code as ``loopdbg proxy --on-invalid``, and one the provider would
refuse (a tool call left without its result, a result for no call, …) is
blocked with the provider's own words, or repaired, before a token is
spent. In LiteLLM's ``config.yaml``::

    guardrails:
      - guardrail_name: loopdbg
        litellm_params:
          guardrail: loopdbg.litellm_guardrail.LoopdbgGuardrail
          mode: pre_call
          default_on: true
          on_invalid: block        # or: repair, repair=strip, warn

with ``pip install loopdbg`` in LiteLLM's environment.

``on_invalid`` is the proxy's: ``block`` answers HTTP 400 with the
provider's words (the request is not sent), ``repair`` sends the history
repaired as ``check --fix synthesize`` repairs it (``repair=strip``:
as ``--fix strip``), ``warn`` sends it and logs the finding.

What is judged is the request as LiteLLM holds it: OpenAI Chat Completions
messages for ``/chat/completions`` (whatever provider LiteLLM then
translates them for: the pairing rules are the same), Anthropic Messages
for ``/v1/messages``, the Responses API's items for ``/responses``. Other
calls (embeddings, images, …) pass unjudged.

The check runs on a worker thread (``asyncio.to_thread``), never on the
gateway's event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Dict, Optional, Tuple

from litellm.integrations.custom_guardrail import CustomGuardrail

from .guard import Guard, Verdict

__all__ = ["LoopdbgGuardrail", "request_of"]

log = logging.getLogger("loopdbg.litellm")

_MODES = {"block": "raise", "warn": "warn", "repair": "repair", "repair=strip": "repair=strip"}

_CHAT = {"completion", "acompletion", "text_completion", "atext_completion"}
_MESSAGES = {"anthropic_messages", "aanthropic_messages"}
_RESPONSES = {"responses", "aresponses"}


def request_of(data: Dict[str, Any], call_type: Optional[str]) -> Optional[Tuple[str, Dict[str, Any]]]:
    """The request LiteLLM is about to make, as the provider's API path and
    body the check reads, or ``None`` for a call with no conversation."""

    def kept(*keys: str) -> Dict[str, Any]:
        return {k: data[k] for k in keys if data.get(k) is not None}

    call = str(call_type or "")
    if call in _MESSAGES:
        return "/v1/messages", kept("model", "max_tokens", "system", "messages", "tools", "tool_choice", "thinking")
    if call in _RESPONSES:
        return "/v1/responses", kept("model", "input", "instructions", "tools", "previous_response_id", "conversation")
    if call in _CHAT or (not call and isinstance(data.get("messages"), list)):
        if not isinstance(data.get("messages"), list):
            return None
        return "/v1/chat/completions", kept("model", "messages", "tools", "tool_choice", "functions")
    return None


class LoopdbgGuardrail(CustomGuardrail):
    """The guardrail LiteLLM builds from ``config.yaml`` (see the module)."""

    def __init__(self, on_invalid: str = "block", history_memory_mib: int = 1024, **kwargs: Any) -> None:
        if on_invalid not in _MODES:
            raise ValueError(f"loopdbg guardrail: on_invalid is block, repair, repair=strip or warn, not {on_invalid!r}")
        super().__init__(**kwargs)
        self.on_invalid = on_invalid
        # What is not a conversation LiteLLM sends as it is.
        self.guard = Guard(_MODES[on_invalid], on_unjudged="forward", history_memory_mib=int(history_memory_mib))

    def judge(self, data: Dict[str, Any], call_type: Optional[str]) -> Optional[Verdict]:
        """The verdict on one request (``None``: not a conversation)."""
        request = request_of(data, call_type)
        if request is None:
            return None
        path, body = request
        return self.guard.judge("POST", path, json.dumps(body).encode())

    async def async_pre_call_hook(
        self,
        user_api_key_dict: Any,
        cache: Any,
        data: dict,
        call_type: Any,
    ) -> Optional[dict]:
        from litellm.types.guardrails import GuardrailEventHooks

        if self.should_run_guardrail(data=data, event_type=GuardrailEventHooks.pre_call) is not True:
            return data
        # The check is CPU work: off the gateway's event loop.
        v = await asyncio.to_thread(self.judge, data, getattr(call_type, "value", call_type))
        if v is None or v.action in ("forward", "unjudged"):
            if v is not None and v.rejected:
                log.warning("loopdbg: the provider would reject this request: %s", v.message)
            return data
        if v.action == "block":
            from fastapi import HTTPException

            raise HTTPException(
                status_code=v.status or 400,
                detail={
                    "error": f"loopdbg guardrail: {v.message}",
                    "loopdbg": {"kind": (v.rejected or {}).get("kind"), "ids": (v.rejected or {}).get("ids", [])},
                },
            )
        if v.action == "repair" and isinstance(v.body, dict):
            for key in ("messages", "input"):
                if key in v.body:
                    data[key] = v.body[key]
            log.info("loopdbg: repaired the request (%d change(s)) before it was sent", v.changes)
        return data
