"""ascend.npu.weights_fanout: the rounds in which servers that hold verified weights seed the others."""

from __future__ import annotations

from typing import Any

DOCUMENTATION = r"""
name: weights_fanout
short_description: Plan the copy rounds of model weights (controller seeds, then server-to-server doubling)
description:
  - Input - the servers that need a copy (sorted by the caller); O(holders) - the servers that hold verified
    weights. Output - a list of rounds; a round maps each receiving server to its source (a server name, or
    C(controller)).
  - With no holder, a first round copies from the controller to O(seeds) servers (none when
    O(controller=false), for example staged weights, and then every needer is left out of the plan).
  - Each later round pairs every holder with one needer, so the holders double each round - N servers
    take ceil(log2(N)) + 1 rounds from the controller instead of N.
options:
  _input:
    description: The servers that need a copy.
    type: list
    elements: str
    required: true
  holders:
    description: The servers that hold verified weights.
    type: list
    elements: str
    required: true
  seeds:
    description: How many servers the controller seeds in the first round.
    type: int
    default: 1
  controller:
    description: Whether the controller holds the weights (source controller or url).
    type: bool
    default: true
"""

EXAMPLES = r"""
rounds: "{{ needers | ascend.npu.weights_fanout(holders, seeds=1) }}"
# needers [b, c, d, e], holders [a] -> [{b: a}, {c: a, d: b}, {e: a}]
"""

RETURN = r"""
_value:
  description: The rounds, each a dict receiver -> source (a server, or controller).
  type: list
  elements: dict
"""


def weights_fanout(
    needers: list[str], holders: list[str], seeds: int = 1, controller: bool = True
) -> list[dict[str, str]]:
    # sorted: the caller's holders come from a set difference (no order), and the plan must not change
    # from one run to the next (check mode names the same seeders every time)
    have = sorted(h for h in holders if h not in needers)
    todo = [n for n in needers if n not in have]
    rounds: list[dict[str, str]] = []
    if not have and todo and controller:
        first = todo[: max(1, seeds)]
        rounds.append(dict.fromkeys(first, "controller"))
        have, todo = list(first), todo[len(first) :]
    if not have:
        return rounds
    while todo:
        pairs = dict(zip(todo, have))
        rounds.append(pairs)
        have += list(pairs)
        todo = todo[len(pairs) :]
    return rounds


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"weights_fanout": weights_fanout}
