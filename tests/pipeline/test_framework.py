"""Pipeline framework: ordering, synchronisation, bounds, back-pressure, flow limiting, errors,
close/drain, sources, tracing."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from typing import Any

import pytest

from gpulite.errors import CalculatorError, GraphStateError, GraphTimeoutError, TimestampError
from gpulite.pipeline import Calculator, CalculatorContext, Graph, GraphBuilder, Packet
from tests.pipeline import calcs  # noqa: F401  (registers the Test* calculators)
from tests.pipeline.calcs import GateOptions, RecordOptions


def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.0005)


def collect(g: Graph, stream: str) -> list[Packet]:
    out: list[Packet] = []
    g.observe(stream, out.append)
    return out


class Jitter(Calculator):
    """Copies IN to OUT after a seeded random sleep of 0-2 ms."""

    inputs = {"IN": Any}
    outputs = {"OUT": Any}

    def open(self, cc: CalculatorContext) -> None:
        self.rng = random.Random(cc.node_name)

    def process(self, cc: CalculatorContext) -> None:
        time.sleep(self.rng.uniform(0, 0.002))
        cc.output("OUT", cc.inputs["IN"])


def test_chain_keeps_order_and_values():
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestScale", inputs={"IN": "x"}, outputs={"OUT": "y"}, options={"factor": 3.0}, name="scale1")
    b.node(Jitter, inputs={"IN": "y"}, outputs={"OUT": "z"})
    b.node("TestScale", inputs={"IN": "z"}, outputs={"OUT": "w"})
    b.output_stream("w")
    g = b.build(max_queue_size=4)
    out = collect(g, "w")
    for i in range(40):
        g.add_packet("x", float(i), timestamp=10 * i)
    g.close()
    assert [p.timestamp for p in out] == [10 * i for i in range(40)]
    assert [p.payload for p in out] == [6.0 * i for i in range(40)]
    assert g.stats()["scale1"].processed == 40
    assert g.node_names == ["scale1", "Jitter", "TestScale"]


def _join_graph(every: int, gate: threading.Event | None = None) -> Graph:
    b = GraphBuilder()
    b.input_stream("x")
    b.node(Jitter, inputs={"IN": "x"}, outputs={"OUT": "a"})
    b.node("TestEvery", inputs={"IN": "x"}, outputs={"OUT": "b"}, options=GateOptions(every=every, gate=gate))
    b.node("TestJoin", inputs={"A": "a", "B": "b"}, outputs={"OUT": "ab"}, name="join")
    return b.build()


def test_join_synchronises_two_branches_by_timestamp():
    g = _join_graph(every=3)
    out = collect(g, "ab")
    for i in range(30):
        g.add_packet("x", i, timestamp=i)
    g.close()
    assert [p.timestamp for p in out] == list(range(30))
    assert [p.payload for p in out] == [(i, i if i % 3 == 0 else None) for i in range(30)]


def test_join_proceeds_when_a_branch_emits_nothing_before_close():
    """TestEvery emits nothing at odd timestamps; its bound still advances, so the join runs now."""
    g = _join_graph(every=1000)
    got = threading.Event()
    g.observe("ab", lambda p: got.set() if p.timestamp == 7 else None)
    for i in range(5, 8):
        g.add_packet("x", i, timestamp=i)
    assert got.wait(5), "join waited for a packet that the bound already ruled out"
    g.close()


def test_join_waits_for_a_slow_branch():
    gate = threading.Event()
    g = _join_graph(every=1, gate=gate)
    out = collect(g, "ab")
    g.add_packet("x", 1, timestamp=1)
    time.sleep(0.005)
    assert out == []                      # B has neither a packet nor a bound past 1 yet
    gate.set()
    g.close()
    assert [p.payload for p in out] == [(1, 1)]


class Interleave(Calculator):
    """Immediate policy: one call per arriving packet; emits (port, payload)."""

    inputs = {"A": Any, "B": Any}
    outputs = {"OUT": Any}
    input_policy = "immediate"
    timestamp_offset = None

    def open(self, cc: CalculatorContext) -> None:
        self.seen: list[tuple[str, int]] = []

    def process(self, cc: CalculatorContext) -> None:
        present = [p for p, v in cc.packets.items() if v is not None]
        assert len(present) >= 1
        self.seen += [(p, cc.timestamp) for p in present]

    def close(self, cc: CalculatorContext) -> None:
        cc.output("OUT", self.seen)


def test_immediate_policy_does_not_wait_for_other_inputs():
    b = GraphBuilder()
    b.input_stream("a")
    b.input_stream("b")
    b.node(Interleave, inputs={"A": "a", "B": "b"}, outputs={"OUT": "seen"})
    g = b.build()
    out = collect(g, "seen")
    for i in range(5):
        g.add_packet("a", i, timestamp=i)     # b never gets a packet nor a bound
    wait_for(lambda: g.stats()["Interleave"].processed == 5)
    g.add_packet("b", 0, timestamp=2)
    g.close()
    assert sorted(out[0].payload) == sorted([("A", i) for i in range(5)] + [("B", 2)])


def test_back_pressure_bounds_queues():
    added = processed = 0
    peak = 0
    lock = threading.Lock()

    class Slow(Calculator):
        inputs = {"IN": Any}
        outputs = {"OUT": Any}

        def process(self, cc: CalculatorContext) -> None:
            nonlocal processed, peak
            time.sleep(0.001)
            with lock:
                peak = max(peak, added - processed)
                processed += 1
            cc.output("OUT", cc.inputs["IN"])

    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestScale", inputs={"IN": "x"}, outputs={"OUT": "y"})
    b.node(Slow, inputs={"IN": "y"}, outputs={"OUT": "z"})
    g = b.build(max_queue_size=2)
    out = collect(g, "z")
    for i in range(60):
        g.add_packet("x", float(i), timestamp=i)
        with lock:
            added += 1
    g.close()
    assert len(out) == 60
    stats = g.stats()
    assert max(s.max_queue_depth for s in stats.values()) <= 2
    assert all(s.queue_growths == 0 for s in stats.values())
    # packets inside the graph: 2 queues x 2 + one being processed by each node + one popped for each
    assert peak <= 8, f"{peak} packets were in flight: queues do not bound memory"


def test_add_packet_times_out_with_a_clear_error():
    gate = threading.Event()
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestEvery", inputs={"IN": "x"}, outputs={"OUT": "y"}, options=GateOptions(every=1, gate=gate), name="stuck")
    g = b.build(max_queue_size=1)
    with pytest.raises(GraphTimeoutError, match=r"node 'stuck' input IN stayed full"):
        for i in range(5):
            g.add_packet("x", i, timestamp=i, timeout=0.05)
    gate.set()
    g.close()
    assert g.stats()["stuck"].processed >= 2


def test_idle_join_with_full_queue_grows_instead_of_deadlocking():
    """Feeding one input of a join far ahead of the other would deadlock; the queue grows."""
    b = GraphBuilder()
    b.input_stream("a")
    b.input_stream("b")
    b.node("TestJoin", inputs={"A": "a", "B": "b"}, outputs={"OUT": "ab"}, name="join")
    g = b.build(max_queue_size=2, add_packet_timeout=5)
    out = collect(g, "ab")
    for i in range(6):
        g.add_packet("a", i, timestamp=i)
    for i in range(6):
        g.add_packet("b", -i, timestamp=i)
    g.close()
    assert [p.payload for p in out] == [(i, -i) for i in range(6)]
    assert g.stats()["join"].queue_growths >= 1


FLOW_YAML = """
input_stream: "IMAGE:frames"
output_stream: "OUT:done"
node:
  - calculator: FlowLimiter
    name: limiter
    input_stream: ["IN:frames", "FINISHED:done"]
    input_stream_info: {FINISHED: {back_edge: true}}
    output_stream: ["OUT:throttled", "ALLOW:allowed"]
    options: {max_in_flight: 1}
  - calculator: TestEvery
    name: slow
    input_stream: "IN:throttled"
    output_stream: "OUT:done"
"""


def test_flow_limiter_drops_and_counts_while_busy():
    gate, finished, decided = threading.Event(), threading.Event(), threading.Event()
    g = Graph.from_config(FLOW_YAML)
    g._plan.nodes[1].options = GateOptions(every=1, gate=gate)
    done, allowed = collect(g, "done"), collect(g, "allowed")
    g.observe("done", lambda p: finished.set())
    g.observe("allowed", lambda p: decided.set() if p.timestamp == 4 else None)
    g.add_packet("frames", "f0", timestamp=0)
    for i in range(1, 5):
        g.add_packet("frames", f"f{i}", timestamp=i)     # f0 is stuck in 'slow': these are dropped
    assert decided.wait(5)
    gate.set()
    assert finished.wait(5)
    g.add_packet("frames", "f5", timestamp=5)            # f0 finished: this one passes
    g.close()
    assert [p.payload for p in done] == ["f0", "f5"]
    assert [p.payload for p in allowed] == [True, False, False, False, False, True]
    assert g.stats()["limiter"].dropped == 4
    assert g.stats()["slow"].processed == 2


def test_flow_limiter_releases_a_frame_that_produced_nothing():
    """FINISHED's bound passing a frame finishes it even without a packet."""
    g = Graph.from_config(FLOW_YAML)
    g._plan.nodes[1].options = GateOptions(every=1000)   # emits only at t=0
    done, allowed = collect(g, "done"), collect(g, "allowed")
    for k, t in enumerate(range(0, 40, 2)):
        g.add_packet("frames", t, timestamp=t)
        wait_for(lambda k=k: len(allowed) == k + 1 and g.stats()["slow"].processed == k + 1)
    g.close()
    assert g.stats()["limiter"].dropped == 0, "a frame that produced nothing stayed in flight"
    assert [p.payload for p in allowed] == [True] * 20
    assert [p.payload for p in done] == [0]


def test_calculator_error_names_node_and_stops_graph():
    log: list = []
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestRecord", inputs={"IN": "x"}, outputs={"OUT": "y"}, options=RecordOptions(log=log, fail_at=3),
           name="fragile")
    b.node(Jitter, inputs={"IN": "y"}, outputs={"OUT": "z"})
    g = b.build()
    with pytest.raises(CalculatorError, match=r"node 'fragile' \(TestRecord\) failed in process\(\) at timestamp 3"
                                              r": ValueError: injected failure at 3") as info:
        for i in range(100):
            g.add_packet("x", i, timestamp=i)
            time.sleep(0.001)
        g.close()
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.node == "fragile"
    with pytest.raises(CalculatorError, match="fragile"):
        g.wait_until_done(timeout=5)
    with pytest.raises(CalculatorError):
        g.add_packet("x", 1000, timestamp=1000)
    assert [e for e in log if e[0] == "close"] == [("close", 3)]        # close() still ran, once
    assert ("process", 4) not in log


def test_a_calculator_error_raised_to_the_caller_is_not_logged_too(caplog):
    """The error reaches the user once, as the exception; only a graph left by another exception logs it."""
    def fragile() -> Graph:
        b = GraphBuilder()
        b.input_stream("x")
        b.node("TestRecord", inputs={"IN": "x"}, outputs={"OUT": "y"}, options=RecordOptions(log=[], fail_at=0),
               name="fragile")
        return b.build()

    with caplog.at_level("DEBUG", logger="gpulite"), pytest.raises(CalculatorError, match="injected failure"):
        with fragile() as g:
            g.add_packet("x", 0, timestamp=0)
            g.close()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert any("pipeline stopped" in r.getMessage() for r in caplog.records), "kept at debug level"
    caplog.clear()
    with caplog.at_level("WARNING", logger="gpulite"), pytest.raises(KeyError):
        with fragile() as g:
            g.add_packet("x", 0, timestamp=0)
            wait_for(lambda: g._run is not None and g._run.error is not None)
            raise KeyError("the caller's own error")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "pipeline stopped: node 'fragile' (TestRecord) failed in process() at timestamp 0: "
        "ValueError: injected failure at 0"]
    with pytest.raises(CalculatorError, match="injected failure"):  # a run that ended failed before the exit
        with fragile() as g:
            g.add_packet("x", 0, timestamp=0)
            wait_for(lambda: g._run is not None and g._run.done)


def test_open_error_raises_from_start():
    class BadOpen(Calculator):
        inputs = {"IN": Any}

        def open(self, cc: CalculatorContext) -> None:
            raise RuntimeError("no model")

        def process(self, cc: CalculatorContext) -> None:
            pass

    b = GraphBuilder()
    b.input_stream("x")
    b.node(BadOpen, inputs={"IN": "x"}, name="loader")
    g = b.build()
    with pytest.raises(CalculatorError, match=r"node 'loader' \(BadOpen\) failed in open\(\): RuntimeError: no model"):
        g.add_packet("x", 1, timestamp=0)
    with pytest.raises(CalculatorError):
        g.close(timeout=5)


def test_bad_output_timestamp_and_type_are_errors():
    class Backwards(Calculator):
        inputs = {"IN": Any}
        outputs = {"OUT": int}

        def process(self, cc: CalculatorContext) -> None:
            cc.output("OUT", cc.inputs["IN"], timestamp=cc.timestamp - 1 if cc.timestamp else 0)

    for payload, cause in ((1, TimestampError), ("text", TypeError)):
        b = GraphBuilder()
        b.input_stream("x")
        b.node(Backwards, inputs={"IN": "x"}, outputs={"OUT": "y"})
        g = b.build()
        with pytest.raises(CalculatorError, match="Backwards") as info:
            g.add_packet("x", payload, timestamp=0)
            g.add_packet("x", payload, timestamp=1)
            g.close(timeout=5)
        assert isinstance(info.value.__cause__, cause)


def test_input_timestamps_must_increase():
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestScale", inputs={"IN": "x"}, outputs={"OUT": "y"})
    g = b.build()
    g.add_packet("x", 1.0, timestamp=5)
    for bad in (5, 4):
        with pytest.raises(TimestampError, match="next allowed: 6"):
            g.add_packet("x", 1.0, timestamp=bad)
    with pytest.raises(TypeError, match="int"):
        g.add_packet("x", 1.0, timestamp=6.5)
    g.add_packet("x", 2.0)                       # default: previous + 1
    out = collect(Graph(g.config), "y")
    g.close()
    assert g.stats()["TestScale"].processed == 2
    assert out == []


def test_close_drains_then_closes_calculators_and_runs_again():
    log: list = []
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestRecord", inputs={"IN": "x"}, outputs={"OUT": "y", "COUNT": "n"}, options=RecordOptions(log=log))
    b.node(Jitter, inputs={"IN": "y"}, outputs={"OUT": "z"})
    g = b.build()
    z, n = collect(g, "z"), collect(g, "n")
    for i in range(20):
        g.add_packet("x", i, timestamp=i)
    with pytest.raises(GraphStateError, match="still open"):
        g.wait_until_done()
    g.close()
    assert len(z) == 20
    assert n == [Packet(20, 20)]                  # emitted by close() at one past the last timestamp
    assert log[0][0] == "open" and log[-1] == ("close", 20)
    assert [e[1] for e in log if e[0] == "process"] == list(range(20))
    with pytest.raises(GraphStateError, match="finished"):
        g.add_packet("x", 21, timestamp=21)
    g.start()                                     # a second run: fresh calculators, timestamps restart
    g.add_packet("x", 0, timestamp=0)
    g.close()
    assert n[-1] == Packet(1, 1)


def test_source_node_runs_until_stop():
    b = GraphBuilder()
    b.node("TestCounter", outputs={"OUT": "n"}, options={"n": 7})
    b.node(Jitter, inputs={"IN": "n"}, outputs={"OUT": "m"})
    b.output_stream("m")
    g = b.build(max_queue_size=2)
    out = collect(g, "m")
    g.start()
    g.wait_until_done(timeout=10)
    assert [p.payload for p in out] == list(range(7))
    assert g.stats()["Jitter"].max_queue_depth <= 2          # the source is throttled too


def test_observer_error_stops_graph():
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestScale", inputs={"IN": "x"}, outputs={"OUT": "y"})
    g = b.build()
    g.observe("y", lambda p: 1 / 0)
    with pytest.raises(CalculatorError, match=r"node 'TestScale' \(TestScale\) failed in observer of 'y' at timestamp 0"
                                              r": ZeroDivisionError") as info:
        g.add_packet("x", 1.0, timestamp=0)
        g.close(timeout=5)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_tracing_writes_spans_for_every_node(tmp_path):
    g = _join_graph(every=2)
    path = tmp_path / "trace.json"
    g.enable_tracing(path)
    for i in range(10):
        g.add_packet("x", i, timestamp=i)
    g.close()
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    spans = {e["name"] for e in events if e["ph"] == "X" and e["cat"] == "process"}
    assert spans == set(g.node_names)
    assert {e["cat"] for e in events if e["ph"] == "X"} == {"open", "process", "close"}
    assert any(e["ph"] == "C" and e["name"] == "queue join" for e in events)
    assert all(e["dur"] >= 0 for e in events if e["ph"] == "X")


def test_runs_leave_no_threads_behind():
    before = threading.active_count()
    for fail_at in (None, 2, None, 0):
        b = GraphBuilder()
        b.input_stream("x")
        b.node("TestRecord", inputs={"IN": "x"}, outputs={"OUT": "y"}, options=RecordOptions(fail_at=fail_at))
        b.node(Jitter, inputs={"IN": "y"}, outputs={"OUT": "z"})
        g = b.build(num_threads=3)
        try:
            for i in range(5):
                g.add_packet("x", i, timestamp=i)
            g.close(timeout=5)
        except CalculatorError:
            assert fail_at is not None
            with pytest.raises(CalculatorError):
                g.close(timeout=5)                               # raises again, joins the workers
    wait_for(lambda: threading.active_count() == before)


def test_graph_is_a_context_manager_that_closes():
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestScale", inputs={"IN": "x"}, outputs={"OUT": "y"})
    with b.build() as g:
        out = collect(g, "y")
        g.add_packet("x", 2.0, timestamp=0)
    assert [p.payload for p in out] == [4.0]


class Quiet(Calculator):
    """timestamp_offset=None: the graph does not advance its bound; it may promise one itself."""

    inputs = {"IN": Any}
    outputs = {"OUT": Any}
    options = GateOptions                 # every=1: promise the next bound, every=0: promise nothing
    timestamp_offset = None

    def process(self, cc: CalculatorContext) -> None:
        if cc.options.every:
            cc.set_next_timestamp_bound("OUT", cc.timestamp + 1)


def test_bounds_of_offset_none_calculators_are_their_own():
    for promise in (1, 0):
        b = GraphBuilder()
        b.input_stream("x")
        b.node(Quiet, inputs={"IN": "x"}, outputs={"OUT": "q"}, options=GateOptions(every=promise))
        b.node("TestJoin", inputs={"A": "x", "B": "q"}, outputs={"OUT": "ab"})
        g = b.build()
        out = collect(g, "ab")
        for i in range(3):
            g.add_packet("x", i, timestamp=i)
        if promise:
            wait_for(lambda out=out: len(out) == 3)
        else:
            time.sleep(0.005)
            assert out == []              # without a promise the join waits for Quiet to close
        g.close()
        assert [p.payload for p in out] == [(0, None), (1, None), (2, None)]


def test_num_threads_0_runs_the_nodes_on_the_callers_thread():
    before = threading.active_count()
    b = GraphBuilder()
    b.input_stream("x")
    b.node("TestRecord", inputs={"IN": "x"}, outputs={"OUT": "y"})
    b.node(Jitter, inputs={"IN": "y"}, outputs={"OUT": "z"})
    g = b.build(num_threads=0, max_queue_size=2)
    threads: list[str] = []
    g.observe("z", lambda p: threads.append(threading.current_thread().name))
    out = collect(g, "z")
    g.add_packet("x", 0, timestamp=0)
    g.wait_for(["z"], 0, timeout=5)                      # frame by frame, as the solutions run
    assert [p.timestamp for p in out] == [0]
    assert threading.active_count() == before            # no workers were started
    for i in range(1, 9):                                # queues of 2: add_packet runs nodes to make room
        g.add_packet("x", i, timestamp=i)
    g.close(timeout=5)
    assert [(p.timestamp, p.payload) for p in out] == [(i, i) for i in range(9)]
    assert set(threads) == {threading.current_thread().name}


class Held(Calculator):
    """Copies IN to OUT; its first ``process`` waits until the test lets it go."""

    inputs = {"IN": Any}
    outputs = {"OUT": Any}
    started = threading.Event()
    release = threading.Event()

    def process(self, cc: CalculatorContext) -> None:
        if not Held.started.is_set():
            Held.started.set()
            assert Held.release.wait(5)
        cc.output("OUT", cc.inputs["IN"])

    def close(self, cc: CalculatorContext) -> None:
        cc.output("OUT", "closed", timestamp=cc.timestamp)


def test_inputs_that_change_while_a_node_runs_are_seen_after_its_step():
    # While the node runs its first step, the next packet comes and its input ends: after that
    # step it must run the second one and then close (the scheduler looks at a node again after
    # its step only when packets wait or every input ended; here one, then the other).
    Held.started.clear()
    Held.release.clear()
    b = GraphBuilder()
    b.input_stream("x")
    b.node(Held, inputs={"IN": "x"}, outputs={"OUT": "y"})
    g = b.build(num_threads=1)
    out = collect(g, "y")
    g.add_packet("x", "a", timestamp=5)
    assert Held.started.wait(5)
    g.add_packet("x", "b", timestamp=9)
    g.close_input_stream("x")
    Held.release.set()
    g.wait_until_done(timeout=5)
    assert [(p.timestamp, p.payload) for p in out] == [(5, "a"), (9, "b"), (10, "closed")]
