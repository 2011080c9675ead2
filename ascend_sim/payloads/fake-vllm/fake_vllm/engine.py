"""Deterministic "inference": tokens and logprobs derived from the weights' content hash.

Token ``i`` of an answer is drawn from sha256(model hash, prompt, sampling parameters, i), so the same weights
give the same answer and logprobs for the same request (and streamed == non-streamed, and a shorter
``max_tokens`` gives a prefix of a longer one), while other weights give other answers. Each answer also
has a natural length (8..64 tokens): reaching it ends with ``finish_reason`` "stop", ``max_tokens`` first
with "length". The ``wrong_answers`` fault salts the hash; the ``logprob_shift`` fault keeps the text and
scales every logprob by (1 + shift). Tokens are words of a small vocabulary with a
leading space; prompts are counted with a whitespace tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VOCAB_FILE = Path(__file__).resolve().parent / "vocab.txt"
"""The fake tokenizer's words, one per line; the simulator's checkpoint generator writes the same words into
tokenizer.json (ascend_sim/checkpoint.py reads this file)."""
VOCAB: tuple[str, ...] = tuple(dict.fromkeys(VOCAB_FILE.read_text(encoding="utf-8").split()))
TOP_CANDIDATES = 20
_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "stop",
)


@dataclass(frozen=True)
class Token:
    text: str
    logprob: float
    top: tuple[tuple[str, float], ...]  # best first; top[0] is this token


def count_tokens(text: str) -> int:
    return len(text.split())


def params_key(request: dict[str, Any]) -> str:
    """The sampling parameters that change an answer (not max_tokens, n, stream or logprobs)."""
    return json.dumps({k: request.get(k) for k in _PARAMS}, sort_keys=True, default=str)


class Generator:
    def __init__(self, model_hash: str) -> None:
        self.model_hash = model_hash

    def _digest(self, *parts: str) -> bytes:
        return hashlib.sha256("\x00".join((self.model_hash, *parts)).encode()).digest()

    def natural_length(self, prompt: str, params: str, salt: str) -> int:
        return 8 + int.from_bytes(self._digest(prompt, params, salt, "length")[:4], "big") % 57

    def token(self, prompt: str, params: str, salt: str, i: int) -> Token:
        rng = random.Random(int.from_bytes(self._digest(prompt, params, salt, str(i)), "big"))
        words = rng.sample(range(len(VOCAB)), TOP_CANDIDATES)
        logprob = -round(rng.uniform(0.001, 1.2), 6)
        top = []
        for word in words:
            top.append((" " + VOCAB[word], logprob))
            logprob = round(logprob - rng.uniform(0.05, 1.5), 6)
        return Token(text=top[0][0], logprob=top[0][1], top=tuple(top))

    def generate(
        self,
        prompt: str,
        params: str,
        max_tokens: int,
        *,
        wrong: bool = False,
        shift: float = 0.0,
        choice: int = 0,
        stop: list[str] | None = None,
    ) -> Iterator[tuple[Token, str | None, str | None]]:
        """Yield (token, finish_reason, stop_reason); finish_reason is set on the last token only.

        A stop string ends the answer before it ("stop", stop_reason = the string), as vLLM does.
        """
        salt = f"choice{choice}" + (":wrong" if wrong else "")
        natural = self.natural_length(prompt, params, salt)
        limit = min(max_tokens, natural)
        text = ""
        for i in range(limit):
            tok = self.token(prompt, params, salt, i)
            if shift:
                top = tuple((w, round(lp * (1 + shift), 6)) for w, lp in tok.top)
                tok = Token(text=tok.text, logprob=top[0][1], top=top)
            for s in stop or []:
                if s and s in text + tok.text:
                    cut = (text + tok.text).index(s) - len(text)
                    yield Token(tok.text[: max(cut, 0)], tok.logprob, tok.top), "stop", s
                    return
            text += tok.text
            last = i == limit - 1
            reason = ("stop" if natural <= max_tokens else "length") if last else None
            yield tok, reason, None


_IDS = {word: i for i, word in enumerate(VOCAB)}


def token_id(text: str) -> int:
    """The fake tokenizer's id of a generated token (its word's line in vocab.txt)."""
    return _IDS.get(text.strip(), 0)
