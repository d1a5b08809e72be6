"""``reduction.list_call``: its items and dask arguments computed, its plain arguments passed
as they are, never walked by dask; and the scoring pass's node of models built with it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import dask
import pytest

from soak_dask.reduction import list_call
from soak_dask.run.strategies import models_node


@dataclass(frozen=True)
class Spec:
    rows: tuple


def joined(items: list, *args: object) -> tuple:
    return tuple(items), args


def test_dask_arguments_are_computed_in_their_places() -> None:
    parts = [dask.delayed(n) for n in range(3)]
    lazy = dask.delayed(lambda: "lazy")()
    spec = Spec((1, 2))
    got = list_call(joined, parts, "a", lazy, spec, 4, pure=True).compute()
    assert got == ((0, 1, 2), ("a", "lazy", spec, 4))


def test_plain_arguments_are_not_walked(monkeypatch) -> None:
    """Dask's walk of call arguments does not grow with a plain argument's size (a spec of
    thousands of rows, the run's options): it is not walked at all."""
    module = importlib.import_module("dask.delayed")  # dask.delayed is also the function
    calls = {"n": 0}
    walk = module.unpack_collections

    def counted(*args, **kwargs):
        calls["n"] += 1
        return walk(*args, **kwargs)

    monkeypatch.setattr(module, "unpack_collections", counted)
    parts = [dask.delayed(n) for n in range(3)]
    walked = {}
    for size in (1, 5_000):
        calls["n"] = 0
        spec = Spec(tuple((i, str(i)) for i in range(size)))
        node = list_call(joined, parts, spec, pure=True, dask_key_name=f"joined-{size}")
        walked[size] = calls["n"]
        assert node.compute() == ((0, 1, 2), (spec,))
    assert walked[5_000] == walked[1] < 20, walked


def test_a_future_argument_is_computed() -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, dashboard_address=":0") as client:
        future = client.submit(lambda: 10)
        node = list_call(
            lambda items, k: k * sum(items), [dask.delayed(1), dask.delayed(2)], future
        )
        assert client.compute(node).result() == 30


def test_models_node_puts_the_task_made_models_among_the_client_made_ones() -> None:
    """Models made by tasks (delayed) and fitted on the client (plain) come out as one dict,
    in the order given, each with its spec."""
    fitted = {
        (0, "a"): ("plain-0", Spec((0,))),
        (1, "b"): (dask.delayed(lambda: "task-1")(), Spec((1,))),
        (2, "a"): ("plain-2", Spec((2,))),
    }
    out = models_node(fitted, "models-test").compute()
    assert list(out) == list(fitted)
    assert out == {
        (0, "a"): ("plain-0", Spec((0,))),
        (1, "b"): ("task-1", Spec((1,))),
        (2, "a"): ("plain-2", Spec((2,))),
    }
