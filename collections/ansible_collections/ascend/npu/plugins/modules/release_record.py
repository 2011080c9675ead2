#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.release_record: write one container's release record (JSON) in one round trip."""

from __future__ import annotations

DOCUMENTATION = r"""
module: release_record
short_description: Write a serving container's release record on its server
description:
  - Writes I(record) as indented JSON with sorted keys to I(dest), atomically (a file beside it, then a
    rename), owner root, mode 0644; unchanged content is left alone.
  - One module run where C(ansible.builtin.copy) with C(content) takes three (a stat, the file's transfer, the
    copy), and a rollout writes one record per member after every replica it rolls.
  - The records are what C(orchestrator rollback), heal and the startup timeouts read (C(current),
    C(previous)).
options:
  dest:
    description: The record's path on the server (its directory must exist).
    type: path
    required: true
  record:
    description: The record.
    type: dict
    required: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Release record
  ascend.npu.release_record:
    dest: /var/lib/ascend-orchestrator/releases/vllm-r0.json
    record: {current: {release: abc123}, previous: null}
"""

RETURN = r"""
dest:
  description: I(dest).
  returned: always
  type: str
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


def render(record: dict[str, object]) -> str:
    """The file's text, byte for byte what ansible.builtin.copy writes from to_nice_json(indent=2,
    sort_keys=true) (roles/vllm_serve/tasks/release.yml writes a first release's records so)."""
    return json.dumps(record, indent=2, sort_keys=True, separators=(",", ": "))


def write(dest: str, text: str) -> bool:
    """True when the file changed."""
    try:
        with open(dest, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest) or ".", prefix=".release-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path", "required": True},
            "record": {"type": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    dest, text = module.params["dest"], render(module.params["record"])
    if module.check_mode:
        try:
            with open(dest, encoding="utf-8") as f:
                same = f.read() == text
        except OSError:
            same = False
        module.exit_json(changed=not same, dest=dest)
    try:
        changed = write(dest, text)
    except OSError as exc:
        module.fail_json(msg=f"cannot write the release record {dest}: {exc}", dest=dest)
    module.exit_json(changed=changed, dest=dest)


if __name__ == "__main__":
    main()
