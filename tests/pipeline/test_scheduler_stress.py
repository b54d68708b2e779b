"""Scheduler stress: seeded random graphs (joins, drops, immediate sinks, flow limiters, tiny queues)
with random 0-2 ms sleeps and injected failures. Every run must end within its timeouts and
either deliver exactly the packets a sequential simulation predicts or raise the injected error."""

from __future__ import annotations

import random
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import pytest

from gpulite.errors import CalculatorError
from gpulite.pipeline import Calculator, CalculatorContext, GraphBuilder, Packet

N_PACKETS = 30
TIMEOUT_S = 20.0


class InjectedError(RuntimeError):
    pass


def _h(*parts: Any) -> int:
    return zlib.crc32(repr(parts).encode())


@dataclass(frozen=True)
class WorkOptions:
    seed: int = 0
    keep_mod: int = 1            # emit at T only when _h(seed, name, T) % keep_mod != keep_mod - 1 (1: always)
    max_sleep_s: float = 0.002
    fail_at: int | None = None


class Work(Calculator):
    """Default policy, 1-3 inputs: sleeps, then emits a digest of its inputs (or drops T)."""

    inputs = {"IN": Any}
    outputs = {"OUT": int}
    options = WorkOptions

    def process(self, cc: CalculatorContext) -> None:
        o, t = cc.options, cc.timestamp
        time.sleep(random.Random(_h(o.seed, cc.node_name, t)).uniform(0, o.max_sleep_s))
        if t == o.fail_at:
            raise InjectedError(f"{cc.node_name} at {t}")
        if keep(o, cc.node_name, t):
            cc.output("OUT", digest(cc.node_name, t, [cc.inputs[p] for p in sorted(cc.inputs)]))


def fed(stream: str, t: int) -> int:
    return _h(stream, t) & 0xFF


def keep(o: WorkOptions, name: str, t: int) -> bool:
    return o.keep_mod == 1 or _h(o.seed, name, t) % o.keep_mod != o.keep_mod - 1


def digest(name: str, t: int, values: list[Any]) -> int:
    return _h(name, t, values) & 0xFFFF


class Tally(Calculator):
    """Immediate policy sink: counts packets per port and emits the counts at close."""

    inputs = {"IN": Any}
    outputs = {"COUNTS": dict}
    input_policy = "immediate"
    timestamp_offset = None

    def open(self, cc: CalculatorContext) -> None:
        self.counts = dict.fromkeys(cc.inputs, 0)

    def process(self, cc: CalculatorContext) -> None:
        time.sleep(0.0005)
        for port, p in cc.packets.items():
            self.counts[port] += p is not None

    def close(self, cc: CalculatorContext) -> None:
        cc.output("COUNTS", dict(self.counts))


@dataclass
class Case:
    builder: GraphBuilder
    inputs: list[str]
    feeds: dict[str, list[int]]                     # graph input -> timestamps fed
    works: list[tuple[str, dict[str, str], str, WorkOptions]] = field(default_factory=list)
    tallies: list[tuple[str, dict[str, str], str]] = field(default_factory=list)
    limiter: tuple[str, str, str] | None = None     # (name, in stream, allow stream)
    fail_node: str | None = None


def make_case(seed: int, *, with_limiter: bool) -> Case:
    rng = random.Random(seed)
    b = GraphBuilder()
    inputs = [b.input_stream(f"in{i}") for i in range(rng.choice([1, 1, 2]))]
    feeds = {s: sorted(rng.sample(range(N_PACKETS * 2), N_PACKETS)) for s in inputs}
    case = Case(b, inputs, feeds)
    streams = list(inputs)
    if with_limiter:
        case.limiter = ("limiter", inputs[0], "allow")
        b.node("FlowLimiter", name="limiter", inputs={"IN": inputs[0], "FINISHED": "finished"}, back_edges={"FINISHED"},
               outputs={"OUT": "throttled", "ALLOW": "allow"}, options={"max_in_flight": rng.choice([1, 2])})
        streams = ["throttled"] if len(inputs) == 1 else ["throttled", *inputs[1:]]
    for k in range(rng.randint(2, 7)):
        name = f"w{k}"
        srcs = rng.sample(streams, min(len(streams), rng.choice([1, 1, 2, 3])))
        ports = {"IN" if i == 0 else f"IN:{i}": s for i, s in enumerate(srcs)}
        opts = WorkOptions(seed=seed, keep_mod=rng.choice([1, 1, 2, 4]), max_sleep_s=rng.choice([0.0, 0.001, 0.002]))
        b.node(Work, name=name, inputs=ports, outputs={"OUT": name}, options=opts)
        case.works.append((name, ports, name, opts))
        streams.append(name)
    if with_limiter:   # FINISHED: the last node's output, re-emitted by a pass-through node
        last = case.works[-1][0]
        b.node(Work, name="finish", inputs={"IN": last}, outputs={"OUT": "finished"}, options=WorkOptions(seed=seed))
        case.works.append(("finish", {"IN": last}, "finished", WorkOptions(seed=seed)))
    srcs = rng.sample(streams, min(len(streams), 3))
    ports = {"IN" if i == 0 else f"IN:{i}": s for i, s in enumerate(srcs)}
    b.node(Tally, name="tally", inputs=ports, outputs={"COUNTS": "counts"})
    case.tallies.append(("tally", ports, "counts"))
    return case


def simulate(case: Case, passed: list[int] | None) -> dict[str, list[tuple[int, Any]]]:
    """Expected (timestamp, payload) per stream, computed sequentially."""
    got: dict[str, list[tuple[int, Any]]] = {s: [(t, fed(s, t)) for t in ts] for s, ts in case.feeds.items()}
    if case.limiter is not None:
        got["throttled"] = [(t, fed(case.inputs[0], t)) for t in (passed or [])]
    for name, ports, out, opts in case.works:
        by_port = {p: dict(got[s]) for p, s in ports.items()}
        times = sorted({t for d in by_port.values() for t in d})
        vals = []
        for t in times:
            if keep(opts, name, t):
                vals.append((t, digest(name, t, [by_port[p].get(t) for p in sorted(ports)])))
        got[out] = vals
    for _name, ports, out in case.tallies:
        got[out] = [(-1, {p: len(got[s]) for p, s in ports.items()})]
    return got


def run_case(seed: int, *, with_limiter: bool) -> None:
    rng = random.Random(seed * 7919 + 1)
    case = make_case(seed, with_limiter=with_limiter)
    fail = rng.random() < 0.3
    if fail:   # make one node fail at a timestamp it is sure to process (without a limiter in front)
        expected = simulate(case, None)
        candidates = [(i, w) for i, w in enumerate(case.works) if w[0] != "finish"
                      and not (with_limiter and any(s == "throttled" for s in w[1].values()))]
        if candidates:
            i, (name, ports, out, opts) = rng.choice(candidates)
            times = sorted({t for s in ports.values() for t, _ in expected[s]})
            if times:
                opts = WorkOptions(opts.seed, opts.keep_mod, opts.max_sleep_s, fail_at=rng.choice(times))
                case.works[i] = (name, ports, out, opts)
                case.builder.config.nodes[[n.name for n in case.builder.config.nodes].index(name)].options = opts
                case.fail_node = name
    g = case.builder.build(max_queue_size=rng.choice([1, 2, 4]), num_threads=rng.choice([0, 2, 3, 8]),
                           add_packet_timeout=TIMEOUT_S)
    seen: dict[str, list[Packet]] = {}
    for s in [*case.inputs, *(w[2] for w in case.works), "counts", *(["throttled", "allow"] if with_limiter else [])]:
        seen[s] = []
        g.observe(s, seen[s].append)
    order = sorted((t, s) for s, ts in case.feeds.items() for t in ts)
    t0 = time.monotonic()
    try:
        for t, s in order:
            g.add_packet(s, fed(s, t), timestamp=t)
        g.close(timeout=TIMEOUT_S)
    except CalculatorError as e:
        assert case.fail_node is not None, f"seed {seed}: unexpected failure {e!r}"
        assert e.node == case.fail_node and isinstance(e.__cause__, InjectedError), f"seed {seed}: {e!r}"
        return
    finally:
        assert time.monotonic() - t0 < 2 * TIMEOUT_S
    assert case.fail_node is None, f"seed {seed}: node {case.fail_node} should have failed"
    for s, packets in seen.items():
        ts = [p.timestamp for p in packets]
        assert ts == sorted(set(ts)), f"seed {seed}: stream {s} out of order: {ts}"
    passed = None
    if with_limiter:
        passed = [p.timestamp for p in seen["allow"] if p.payload]
        assert [p.timestamp for p in seen["allow"]] == case.feeds[case.inputs[0]]
        assert g.stats()["limiter"].dropped == N_PACKETS - len(passed)
        assert [p.timestamp for p in seen["throttled"]] == passed
        assert passed, f"seed {seed}: the limiter passed nothing"
    expected = simulate(case, passed)
    for name, _ports, out, _opts in case.works:
        got = [(p.timestamp, p.payload) for p in seen[out]]
        assert got == expected[out], f"seed {seed}: node {name} emitted {got[:5]}..., expected {expected[out][:5]}..."
        assert g.stats()[name].processed == len({t for s in _ports.values() for t, _ in expected[s]})
    assert [p.payload for p in seen["counts"]] == [expected["counts"][0][1]], f"seed {seed}: tally"


@pytest.mark.parametrize("seed", range(40))
def test_random_graphs(seed: int) -> None:
    run_case(seed, with_limiter=False)


@pytest.mark.parametrize("seed", range(100, 120))
def test_random_graphs_with_flow_limiter(seed: int) -> None:
    run_case(seed, with_limiter=True)
