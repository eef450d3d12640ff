"""`Supervisor.tree` and `describe_tree`: the shape the server logs at start (design §4)."""

from __future__ import annotations

import trio

from auto_runtime.supervision import ChildContext, ChildSpec, Restart, Strategy, Supervisor, describe_tree


async def idle(ctx: ChildContext) -> None:
    ctx.started()
    await trio.sleep_forever()


def test_a_tree_lists_children_in_start_order_and_nested_supervisors_with_theirs() -> None:
    inner = Supervisor("pool", [ChildSpec("worker-1", idle, restart=Restart.TRANSIENT)], strategy=Strategy.REST_FOR_ONE)
    root = Supervisor(
        "root",
        [ChildSpec("first", idle), inner.child_spec(), ChildSpec("last", idle, restart=Restart.TEMPORARY)],
    )
    assert root.tree() == {
        "name": "root",
        "strategy": "one_for_one",
        "children": [
            {"name": "first", "restart": "permanent"},
            {
                "name": "pool",
                "restart": "permanent",
                "strategy": "rest_for_one",
                "children": [{"name": "worker-1", "restart": "transient"}],
            },
            {"name": "last", "restart": "temporary"},
        ],
    }
    assert describe_tree(root.tree()) == (
        "root (one_for_one) [first permanent, pool permanent rest_for_one [worker-1 transient], last temporary]"
    )


async def test_a_child_started_later_shows_in_the_tree_of_its_supervisor() -> None:
    inner = Supervisor("pool")
    root = Supervisor("root", [inner.child_spec()])
    async with trio.open_nursery() as nursery:
        await nursery.start(root.run)
        await inner.start_child(ChildSpec("worker-1", idle))
        assert root.tree()["children"][0]["children"] == [{"name": "worker-1", "restart": "permanent"}]
        await root.stop()
