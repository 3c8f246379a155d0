"""The benchmark's timing discipline, on the CPU with a stand-in timer: every function is warmed up,
then timed in interleaved rounds, each for its share of the calls; slow ones twice a round."""
from __future__ import annotations

from ops.bench import timing


def test_functions_are_timed_in_turns_and_slow_ones_sparingly():
    order = []
    warm = {"ours": 0, "peer": 0, "slow": 0}

    def timer(fn, count, slow_ms):
        order.append((fn.__name__, count))
        return [fn.cost] * count

    def make(name, cost):
        def fn():
            warm[name] += 1
        fn.__name__, fn.cost = name, cost
        return fn

    fns = {"ours": make("ours", 10.0), "peer": make("peer", 11.0), "slow": make("slow", 9000.0)}
    got = timing.interleaved_us(fns, warmup=2, repeat=30, rounds=3, slow_ms=3.0, times=timer)
    assert got == {"ours": 10.0, "peer": 11.0, "slow": 9000.0}
    assert warm == {"ours": 2, "peer": 2, "slow": 2}
    assert order == [("ours", 10), ("peer", 10), ("slow", 10)] + [("ours", 10), ("peer", 10), ("slow", 2)] * 2
