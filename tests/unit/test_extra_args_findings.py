"""serving.extra_args findings, whole (path, message, fix, code), for each way vLLM v0.23.0's parser treats
an argument (the pinned release of vllm-ascend v0.23.0, orchestrator/catalog/data/vllm_flags/v0.23.0.json):
a config file, a flag the plan owns (turned off, or with a value vLLM would refuse), a bad value, a stray
word, an unknown or ambiguous option, a repeated option and an abbreviation."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import validate_data
from tests.spec_text import Described, described

CODE = "vllm-args"
REPEAT = "extra_args may not repeat or contradict the plan"


def _findings(data: dict[str, Any], args: list[str]) -> list[Described]:
    data["serving"]["extra_args"] = args
    return [described(f) for f in validate_data(data).findings if f.path[:2] == ("serving", "extra_args")]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--config", "x.yaml"],
            [
                (
                    "serving.extra_args[0]",
                    "--config makes vLLM read more options from a YAML file that validation cannot see, "
                    "so it could override the plan",
                    "move the file's options into serving.extra_args (or the matching spec fields)",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["--no-enable-expert-parallel"],
            [
                (
                    "serving.extra_args[0]",
                    "--no-enable-expert-parallel turns off --enable-expert-parallel, which is set by "
                    f"serving.parallelism.ep; {REPEAT}",
                    "remove --no-enable-expert-parallel from extra_args and set serving.parallelism.ep",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["--tensor-parallel-size", "x"],
            [
                (
                    "serving.extra_args[0]",
                    f"--tensor-parallel-size is set by serving.parallelism.tp; {REPEAT} (and vLLM v0.23.0 "
                    "would refuse the value: 'x' is not an integer)",
                    "remove --tensor-parallel-size from extra_args and set serving.parallelism.tp",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["--seed", "abc"],
            [
                (
                    "serving.extra_args[0]",
                    "--seed abc: 'abc' is not an integer (vLLM v0.23.0: its parser refuses it)",
                    "give --seed a valid value",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["foo"],
            [
                (
                    "serving.extra_args[0]",
                    "'foo' is neither a `vllm serve` option nor the value of one; vLLM v0.23.0's parser "
                    "stops with 'unrecognized arguments'",
                    "remove it, or put it after the option it belongs to",
                    CODE,
                    [],
                )
            ],
        ),
        (
            # the value after an unknown option is not reported again
            ["--bogus", "1"],
            [
                (
                    "serving.extra_args[0]",
                    "--bogus is not a `vllm serve` option of vLLM v0.23.0",
                    "set serving.allow_unknown_args: true if your vLLM build has it",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["--max", "1"],
            [
                (
                    "serving.extra_args[0]",
                    "--max: ambiguous option: --max could match --max-cpu-loras, "
                    "--max-cudagraph-capture-size, --max-log-len, --max-logprobs, "
                    "--max-long-partial-prefills, --max-lora-rank and 6 more "
                    "(vLLM v0.23.0)",
                    "write the option in full",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["--seed", "1", "--seed", "2"],
            [
                (
                    "serving.extra_args[2]",
                    "--seed sets --seed again (already set by --seed); vLLM keeps the last one",
                    "keep one of them",
                    CODE,
                    [],
                )
            ],
        ),
        (
            ["--enable-prefix-cach"],
            [
                (
                    "serving.extra_args[0]",
                    "--enable-prefix-cach is an abbreviation of --enable-prefix-caching; vLLM v0.23.0 "
                    "accepts it only while no other option starts the same way",
                    "write --enable-prefix-caching",
                    CODE,
                    [],
                )
            ],
        ),
        (
            # upstream vllm/entrypoints/chat_utils.py: ChatTemplateContentFormatOption is
            # Literal["auto", "string", "openai"]
            ["--chat-template-content-format", "xml"],
            [
                (
                    "serving.extra_args[0]",
                    "--chat-template-content-format xml: 'xml' is not one of auto, openai, string "
                    "(vLLM v0.23.0: its parser refuses it)",
                    "use one of: auto, openai, string",
                    CODE,
                    [],
                )
            ],
        ),
    ],
)
def test_extra_args_findings(pair: dict[str, Any], args: list[str], expected: list[Described]) -> None:
    assert _findings(pair, args) == expected


def test_unknown_options_are_warnings_when_allowed(pair: dict[str, Any]) -> None:
    pair["serving"]["allow_unknown_args"] = True
    assert _findings(pair, ["--bogus", "1"]) == [
        (
            "serving.extra_args[0]",
            "--bogus is not a `vllm serve` option of vLLM v0.23.0 (allowed by serving.allow_unknown_args)",
            None,
            CODE,
            [],
        )
    ]
