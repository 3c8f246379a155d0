"""The benchmark's timing discipline, on the CPU with a stand-in timer: every function is warmed up,
then timed in interleaved rounds, each for its share of the calls; slow ones twice a round."""
from __future__ import annotations

import json
import math
import os
from types import SimpleNamespace
from pathlib import Path

import pytest

from ops.bench import timing
from ops.bench.cases import CPU_CASE_ELEMENTS


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


def test_an_ab_puts_each_tree_first_in_turn(monkeypatch, tmp_path):
    """`--ab`'s rounds alternate which tree runs first: a round's second process ran slower on the
    same plans, so a fixed order would lean every ratio one way."""
    from ops.bench import ab

    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "__init__.py").write_text("")
    order = []
    monkeypatch.setattr(ab, "_child", lambda tree, todo, gpu, repeat: order.append(tree) or {"c": 1.0})
    rows = ab.run(tmp_path, gpu=False, rounds=4, todo=[("c", "sum", (4, 4), (1,), "float32")])
    first = [order[2 * k] for k in range(1, 5)]  # the timed rounds' first trees
    assert first[0] == first[2] == tmp_path.resolve() != first[1] == first[3]
    assert rows[0]["ratio"] == 1.0 and len(rows[0]["a_all"]) == 4


def test_an_abs_processes_run_on_one_core(monkeypatch):
    """`--ab` pins every child process to the same core (`one_core`), where the system can pin: an
    unpinned second process ran host-bound calls slower whatever its tree's code."""
    from ops.bench import ab

    seen = {}

    def run(*args, preexec_fn=None, **kw):
        if preexec_fn is not None:
            seen["pin"] = preexec_fn
        return SimpleNamespace(returncode=0, stdout='{"case": "c", "us": 1.0}\n', stderr="")

    monkeypatch.setattr(ab.subprocess, "run", run)
    assert ab._child(Path("."), [], False, 1) == {"c": 1.0}
    if hasattr(os, "sched_getaffinity"):
        assert ab.one_core() in os.sched_getaffinity(0)
        pinned = []
        monkeypatch.setattr(ab.os, "sched_setaffinity", lambda pid, cores: pinned.append((pid, cores)))
        seen["pin"]()
        assert pinned == [(0, {ab.one_core()})]
    else:
        assert ab.one_core() is None and "pin" not in seen


def test_an_ab_times_each_tree_in_a_process_of_its_own(tmp_path):
    """`--ab`: this tree against a checkout of it, in turns, on the NumPy backend; a case a tree
    refuses is listed, not timed (an older tree lacks a dtype); a path that is no checkout is
    refused by name."""
    from ops.bench import ab

    here = Path(ab.__file__).resolve().parents[2]
    todo = [("rows", "sum", (64, 33), (1,), "float32"), ("cols", "mean", (33, 64), (0,), "float64"),
            ("complex", "var", (16, 33), (1,), "complex64"), ("no_axis_5", "sum", (4, 4), (5,), "float32")]
    rows = ab.run(here, gpu=False, rounds=2, repeat=3, todo=todo)
    assert [r["case"] for r in rows] == ["rows", "cols", "complex", "no_axis_5"]
    assert ab.timed(rows) == rows[:3] and rows[3]["refused"] == "A and B"
    for r in rows[:3]:
        assert len(r["a_all"]) == len(r["b_all"]) == 2 and r["ratio"] == r["b_us"] / r["a_us"] > 0
    assert "B / A" in ab.table(rows, here) and "refused by A and B" in ab.table(rows, here)
    with pytest.raises(SystemExit, match="not a checkout"):
        ab.run(tmp_path, gpu=False, todo=todo)
    assert all(len(shape) and math.prod(shape) <= CPU_CASE_ELEMENTS for _, _, shape, _, _ in ab.cases(False))
    assert {(op, dtype) for _, op, _, _, dtype in ab.cases(True)} >= set(ab.STATE_ROWS)


def test_an_ab_times_the_cases_of_a_file(tmp_path, capsys):
    """`--ab PATH --ab-cases FILE` times the file's cases, as given (a JSON list of [name, op, shape,
    axes, dtype]); a malformed file, an empty one, and --ab-cases without --ab are refused by name."""
    from ops.bench import ab, cli

    here = Path(ab.__file__).resolve().parents[2]
    good = tmp_path / "cases.json"
    good.write_text(json.dumps([["cols", "sum", [33, 8], [0], "float32"], ["all", "max", [5, 7], None, "float64"]]))
    assert ab.read_cases(good) == [("cols", "sum", (33, 8), (0,), "float32"), ("all", "max", (5, 7), None, "float64")]
    out = tmp_path / "rows.json"
    assert cli.main(["--ab", str(here), "--ab-cases", str(good), "--ab-rounds", "1", "--repeat", "2",
                     "--json", str(out)]) == 0
    assert [r["case"] for r in json.loads(out.read_text())] == ["cols", "all"]
    assert "; 0 refused by a tree" in capsys.readouterr().out
    for text, match in (("[[\"x\", \"sum\", [4]]]", "--ab-cases"), ("[]", "no case"), ("{", "--ab-cases")):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(SystemExit, match=match):
            ab.read_cases(bad)
    with pytest.raises(SystemExit, match="--ab PATH"):
        cli.main(["--ab-cases", str(good)])
