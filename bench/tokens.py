"""One way to count a chat request's prompt tokens, used on both sides of every comparison:
litellm.token_counter for one model, applied to the OpenAI-style messages actually sent.

Long runs send the same messages in many requests (a full-history peer resends all of them every
time), so tokens are counted once per distinct message and summed. That sum is exact, not an
estimate: token_counter charges a fixed priming per request plus a per-message amount, which
`PromptCounter` measures at start and `check` verifies against a direct count."""

from __future__ import annotations

import json
import os

TOKEN_MODEL = "gpt-4o"  # a common tokenizer; the same for both sides is what matters


class PromptCounter:
    def __init__(self, model: str = TOKEN_MODEL):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        self.model = model
        self._tc = litellm.token_counter
        self._memo: dict[str, int] = {}
        self._tools: dict[str, int] = {}
        a = {"role": "user", "name": "probe", "content": "first probe message"}
        b = {"role": "assistant", "content": "second probe message"}
        self.priming = self._direct([a]) + self._direct([b]) - self._direct([a, b])

    def _direct(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        if tools:
            return self._tc(model=self.model, messages=messages, tools=tools)
        return self._tc(model=self.model, messages=messages)

    def message(self, m: dict) -> int:
        """Tokens one message adds to a request."""
        key = json.dumps(m, sort_keys=True, ensure_ascii=False)
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = self._direct([m]) - self.priming
        return n

    def messages(self, messages: list[dict]) -> int:
        """Tokens of a request's messages (tool schemas apart)."""
        return self.priming + sum(self.message(m) for m in messages)

    def tools(self, tools: list[dict] | None) -> int:
        """Tokens the tool schemas add to a request."""
        if not tools:
            return 0
        key = json.dumps(tools, sort_keys=True)
        n = self._tools.get(key)
        if n is None:
            probe = [{"role": "user", "content": "x"}]
            n = self._tools[key] = self._direct(probe, tools) - self._direct(probe)
        return n

    def check(self, messages: list[dict]) -> None:
        """Raise if the per-message sum differs from counting the request whole."""
        summed, direct = self.messages(messages), self._direct(messages)
        if summed != direct:
            raise RuntimeError(
                f"token counts disagree for a {len(messages)}-message request: summed per message "
                f"{summed}, counted whole {direct} (model {self.model})"
            )


_SHARED: PromptCounter | None = None


def shared() -> PromptCounter:
    """One counter per process, so its memo serves every benchmark."""
    global _SHARED
    if _SHARED is None:
        _SHARED = PromptCounter()
    return _SHARED
