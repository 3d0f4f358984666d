"""The env pipes' messages: each declared once, sent as plain tuples of plain values."""

from __future__ import annotations

import pickle

import numpy as np

from kit.rl import _protocol as protocol
from kit.rl._protocol import Op
from kit.rl.pool import EnvState, EnvStatus


def every_message() -> list[tuple[object, ...]]:
    state = EnvState(np.arange(4, dtype=np.float32), 1.0, False, True, {"k": 1}, EnvStatus.STEPPED)
    return [
        protocol.step(1),
        protocol.reset(7, {"o": 1}),
        protocol.rebuild(),
        protocol.close(),
        protocol.ready(),
        protocol.ready({"size": 8}),
        protocol.answer(state),
        protocol.run([(0, Op.STEP.value, 1)]),
        protocol.rebuilt(),
        protocol.answers([(0, protocol.SENT_STEPPED, True, None, None, None)]),
    ]


def test_every_message_starts_with_its_declared_op_as_a_plain_int() -> None:
    messages = every_message()
    assert all(type(message[0]) is int for message in messages)
    assert {Op(message[0]) for message in messages} == set(Op) - {Op.STEP_SHARED}
    # An enum member would be pickled by name, several times the cost of the tuple.
    assert all(b"Op" not in pickle.dumps(message) for message in messages)
    assert all(b"EnvStatus" not in pickle.dumps(message) for message in messages)


def test_an_answer_carries_the_state_and_its_array_observation_unchanged() -> None:
    obs = np.arange(6, dtype=np.int16).reshape(2, 3)
    state = EnvState(obs, 0.5, True, False, {"a": 2}, EnvStatus.STEPPED)
    back = protocol.read_answer(pickle.loads(pickle.dumps(protocol.answer(state))))
    assert back.obs.dtype == np.int16 and back.obs.tolist() == state.obs.tolist()
    assert back[1:] == state[1:]
    assert back.status is EnvStatus.STEPPED  # the plain value on the wire, the member here


def test_every_env_status_travels_as_its_plain_value_and_reads_back_as_its_member() -> None:
    for status in EnvStatus:
        sent = protocol.answer(EnvState(None, status=status, error="e"))
        assert type(sent[6]) is str
        assert protocol.read_answer(pickle.loads(pickle.dumps(sent))).status is status
