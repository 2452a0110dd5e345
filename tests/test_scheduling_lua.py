"""The scheduler's Lua return codes and the Python constants that read them cannot drift apart."""

from __future__ import annotations

import pytest

from newscrawl.scheduling import lists, queue, run
from newscrawl.scheduling.lua import load


@pytest.mark.parametrize(("module", "names", "constant"), [
    (queue, ("lib.lua", "push.lua"), "FILTERED_PENDING"),
    (queue, ("lib.lua", "push.lua"), "MAX_PRIORITY"),
    (queue, ("lib.lua", "push.lua"), "MODE_ONCE"),
    (queue, ("ack.lua",), "ACK_GAVE_UP"),
    (lists, ("reserve.lua",), "OVER_CAP"),
    (run, ("claim.lua",), "RUN_STARTED"),
])
def test_a_constant_changed_on_one_side_is_refused(module: object, names: tuple[str, ...],
                                                   constant: str) -> None:
    constants = vars(module)
    assert load(*names, constants=constants)  # as the module loads it
    changed = {**constants, constant: constants[constant] + constants[constant]}
    with pytest.raises(RuntimeError, match=constant):
        load(*names, constants=changed)
    with pytest.raises(RuntimeError, match=f"{constant} = .* in Lua but None in Python"):
        load(*names, constants={k: v for k, v in constants.items() if k != constant})
