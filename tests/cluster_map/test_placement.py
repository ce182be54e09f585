"""The cluster map's controller (quarry.cluster.placement): a simulated cluster run through `step`.

The properties drive a small cluster (1 to 16 partitions, 1 to 3 replicas, up to 6 index nodes)
through random sequences of events: a node joins, a node dies (stops heartbeating), a dead node
comes back, time passes (around and beyond the drain grace and the node-left delay), nodes report
some of their catching-up partitions caught up, and controllers step. After every step they check
what a user of a replicated search cluster relies on: replicas on distinct nodes, none on a node
gone past the delay; an active replica leaves only through draining, and only once the partition
has enough other active replicas on live nodes, so the controller never lowers availability; moves
are rate-limited; the step is deterministic, whatever the order of its inputs. Once events stop,
the cluster settles on exactly the rendezvous placement, and a join or a departure moves only the
partitions it must. The example tests at the end walk through the same behaviour on a three- and
four-node cluster, and pin two bugs found while writing these tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from quarry.cluster.placement import (
    ACTIVE,
    CATCHING_UP,
    DRAINING,
    STATES,
    NodeView,
    Placement,
    Policy,
    Replica,
    desired_nodes,
    eligibility,
    step,
)

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = tuple(f"index-{i}" for i in range(6))
START_MS = 1_750_000_000_000
SETTLE_LIMIT = 400  # steps; a settle needs about 3 per batch of max_moves partitions


def moving(replicas: Iterable[Replica]) -> bool:
    """A partition is moving when it catches up a replica while it already has an active one."""
    states = {r.state for r in replicas}
    return CATCHING_UP in states and ACTIVE in states


def moving_count(placement: Mapping[int, tuple[Replica, ...]]) -> int:
    return sum(1 for replicas in placement.values() if moving(replicas))


# ---------------------------------------------------------------- the simulated cluster


@dataclass
class Cluster:
    """Index nodes heartbeating into views, a clock, and the placement the controllers write."""

    partitions: int
    policy: Policy
    now_ms: int = START_MS
    nodes: dict[str, NodeView] = field(default_factory=dict)
    placement: Placement = field(default_factory=dict)

    def alive(self) -> list[str]:
        return [name for name, view in self.nodes.items() if view.alive]

    def dead(self) -> list[str]:
        return [name for name, view in self.nodes.items() if not view.alive]

    def join(self, name: str | None = None) -> str | None:
        name = name or next((n for n in NAMES if n not in self.nodes), None)
        if name is not None:
            self.nodes[name] = NodeView(name, alive=True, last_seen_ms=self.now_ms)
        return name

    def die(self, name: str) -> None:
        """It stops heartbeating: its last_seen_ms stays where it was."""
        self.nodes[name] = replace(self.nodes[name], alive=False)

    def revive(self, name: str) -> None:
        self.nodes[name] = replace(self.nodes[name], alive=True, last_seen_ms=self.now_ms)

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        for name in self.alive():
            self.nodes[name] = replace(self.nodes[name], last_seen_ms=self.now_ms)

    def catching_up_on(self, name: str) -> set[int]:
        return {
            p for p, replicas in self.placement.items() for r in replicas if r.node == name and r.state == CATCHING_UP
        }

    def catch_up(self, name: str, partitions: Iterable[int] | None = None) -> None:
        """A live node reports caught up some (default: all) of the partitions it is catching up."""
        view = self.nodes[name]
        if not view.alive:
            return
        held = self.catching_up_on(name)
        done = held if partitions is None else held & set(partitions)
        self.nodes[name] = replace(view, caught_up=view.caught_up | done)

    def catch_up_everywhere(self) -> None:
        for name in self.alive():
            self.catch_up(name)

    def step(self) -> Placement:
        """One controller step, checked against the invariants; the nodes then forget partitions
        they no longer hold (a replica assigned again later has to catch up again)."""
        out = step(self.partitions, self.placement, self.nodes, self.policy, self.now_ms)
        assert_step_is_safe(self, out)
        self.placement = out
        for name, view in self.nodes.items():
            held = {p for p, replicas in out.items() for r in replicas if r.node == name}
            self.nodes[name] = replace(view, caught_up=view.caught_up & held)
        return out

    def settle(self, watch: Mapping[int, tuple[Replica, ...]] | None = None) -> int:
        """Events stop: the dead stay dead past the delay, the living stay alive and report every
        catch-up, time passes. Steps until one changes nothing; returns how many it took. With
        `watch`, asserts at every step that those partitions stay exactly as given."""
        self.advance(max(self.policy.node_left_delay_ms, self.policy.drain_grace_ms))
        for steps in range(1, SETTLE_LIMIT + 1):
            before = self.placement
            self.catch_up_everywhere()
            self.step()
            for p, replicas in (watch or {}).items():
                assert self.placement[p] == replicas, f"partition {p} moved: {replicas} -> {self.placement[p]}"
            if self.placement == before:
                return steps
            self.advance(max(self.policy.drain_grace_ms, 1))
        raise AssertionError(f"no fixpoint after {SETTLE_LIMIT} steps: {self.placement}")


def assert_step_is_safe(cluster: Cluster, out: Placement) -> None:
    """What one step may do to the placement `cluster` holds, given its nodes, policy and clock."""
    current, nodes, policy, now = cluster.placement, cluster.nodes, cluster.policy, cluster.now_ms

    # Deterministic: the same inputs give the same output, whatever the order of the mappings.
    assert step(cluster.partitions, current, nodes, policy, now) == out
    assert step(cluster.partitions, current, dict(reversed(nodes.items())), policy, now) == out
    assert step(cluster.partitions, dict(reversed(current.items())), dict(sorted(nodes.items())), policy, now) == out

    assert set(out) == set(range(cluster.partitions))
    allowed = eligibility(nodes, policy, now)
    eligible = set(allowed.nodes)
    live = {n for n, view in nodes.items() if view.alive}
    already_moving = started = 0
    for p in range(cluster.partitions):
        old = {r.node: r for r in current.get(p, ())}
        new = {r.node: r for r in out[p]}
        assert len(new) == len(out[p]), f"partition {p} has two replicas on one node: {out[p]}"
        assert all(r.state in STATES for r in out[p])
        assert set(new) <= eligible, f"partition {p} kept a replica on a node gone past the delay: {out[p]}"

        desired = desired_nodes(p, allowed.nodes, policy.replicas)
        serving = sum(1 for n in desired if n in new and n in live and new[n].state == ACTIVE)
        enough = serving >= min(policy.replicas, len(desired))  # active desired replicas on live nodes
        for node, before in old.items():
            if node not in eligible:
                continue  # its node has been gone longer than the delay: dropped
            after = new.get(node)
            if after is None:  # the controller removed a replica from a node it may use
                assert node not in desired and enough, f"partition {p}: {before} removed too early"
                assert before.state == CATCHING_UP or (
                    before.state == DRAINING and now - before.since_ms >= policy.drain_grace_ms
                ), f"partition {p}: {before} removed without draining first"
                continue
            caught_up = nodes[node].alive and p in nodes[node].caught_up
            if before.state == ACTIVE:
                assert after.state in (ACTIVE, DRAINING)
            if before.state == CATCHING_UP and after.state != CATCHING_UP:
                assert caught_up, f"partition {p}: {after} promoted without catching up"
            if after.state == DRAINING and before.state != DRAINING:  # caught up and surplus at once: drains
                assert node not in desired and enough, f"partition {p}: {after} too early"
            # A state's clock starts when the replica enters it (the drain grace counts from there).
            assert after.since_ms == (before.since_ms if after.state == before.state else now)
        for node, after in new.items():
            if node not in old:
                assert node in desired and after == Replica(node, CATCHING_UP, now)

        # The controller never lowers availability: after a step the partition has fewer active
        # replicas on live nodes only when what it drained was surplus to as many as it should have.
        live_active_before = sum(1 for n, r in old.items() if r.state == ACTIVE and n in live)
        live_active_after = sum(1 for r in out[p] if r.state == ACTIVE and r.node in live)
        if live_active_after < live_active_before:
            assert live_active_after >= min(policy.replicas, len(desired)), (
                f"partition {p}: {current.get(p)} -> {out[p]} lowered availability"
            )

        # What the step starts from: replicas on usable nodes, the caught-up ones promoted.
        staged = [
            ACTIVE if r.state == CATCHING_UP and nodes[n].alive and p in nodes[n].caught_up else r.state
            for n, r in old.items()
            if n in eligible
        ]
        already_moving += CATCHING_UP in staged and ACTIVE in staged
        started += ACTIVE in staged and CATCHING_UP not in staged and moving(out[p])

    # Rate limit: a partition that has an active replica starts moving (catches up another) only
    # while fewer than max_moves partitions are moving. One with no active replica is not limited,
    # so partitions bootstrapped together may all be moving once one of their replicas is active.
    assert started <= max(policy.max_moves - already_moving, 0), f"{started} started, {already_moving} moving: {out}"


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class Join:
    pass


@dataclass(frozen=True)
class Die:
    pick: int  # which of the live nodes


@dataclass(frozen=True)
class Revive:
    pick: int  # which of the dead nodes


@dataclass(frozen=True)
class Advance:
    span: str  # a duration named relative to the policy (see `span_ms`)


@dataclass(frozen=True)
class CatchUp:
    pick: int  # which of the nodes
    partitions: frozenset[int] | None  # None: all it is catching up


@dataclass(frozen=True)
class Step:
    pass


Event = Join | Die | Revive | Advance | CatchUp | Step

SPANS = ("tick", "grace-1", "grace", "grace+1", "delay-1", "delay", "delay+1", "twice the delay")


def span_ms(span: str, policy: Policy) -> int:
    grace, delay = policy.drain_grace_ms, policy.node_left_delay_ms
    return {
        "tick": 1,
        "grace-1": max(grace - 1, 0),
        "grace": grace,
        "grace+1": grace + 1,
        "delay-1": delay - 1,
        "delay": delay,
        "delay+1": delay + 1,
        "twice the delay": 2 * delay,
    }[span]


def apply(cluster: Cluster, event: Event) -> None:
    match event:
        case Join():
            cluster.join()
        case Die(pick) if cluster.alive():
            cluster.die(cluster.alive()[pick % len(cluster.alive())])
        case Revive(pick) if cluster.dead():
            cluster.revive(cluster.dead()[pick % len(cluster.dead())])
        case Advance(span):
            cluster.advance(span_ms(span, cluster.policy))
        case CatchUp(pick, partitions) if cluster.nodes:
            cluster.catch_up(sorted(cluster.nodes)[pick % len(cluster.nodes)], partitions)
        case Step():
            cluster.step()


policies = st.builds(
    Policy,
    replicas=st.integers(1, 3),
    max_moves=st.integers(1, 4),
    node_left_delay_ms=st.sampled_from([1_000, 60_000]),
    drain_grace_ms=st.sampled_from([0, 500, 5_000, 90_000]),
)

events = st.one_of(
    st.builds(Join),
    st.builds(Die, st.integers(0, 5)),
    st.builds(Revive, st.integers(0, 5)),
    st.builds(Advance, st.sampled_from(SPANS)),
    st.builds(
        CatchUp, st.integers(0, 5), st.none() | st.frozensets(st.integers(0, 3)) | st.frozensets(st.integers(0, 15))
    ),
    st.builds(Step),
    st.builds(Step),
)


@dataclass(frozen=True)
class History:
    """A cluster's first nodes and the events after them; `play` leaves it anywhere: mid-move,
    with nodes dead or back, replicas draining."""

    partitions: int
    policy: Policy
    first_nodes: int
    events: tuple[Event, ...]

    def play(self) -> Cluster:
        cluster = Cluster(self.partitions, self.policy)
        for _ in range(self.first_nodes):
            cluster.join()
        for event in self.events:
            apply(cluster, event)
        return cluster


histories = st.builds(
    History,
    partitions=st.integers(1, 16),
    policy=policies,
    first_nodes=st.integers(0, 6),
    events=st.lists(events, max_size=40).map(tuple),
)


def assert_settled(cluster: Cluster) -> None:
    """Every partition on exactly its rendezvous nodes among the live ones, all active."""
    alive = cluster.alive()
    for p in range(cluster.partitions):
        desired = desired_nodes(p, alive, cluster.policy.replicas)
        assert len(desired) == min(cluster.policy.replicas, len(alive))
        assert tuple(r.node for r in cluster.placement[p]) == desired
    assert caught_up_everywhere(cluster.placement)
    assert (
        step(cluster.partitions, cluster.placement, cluster.nodes, cluster.policy, cluster.now_ms) == cluster.placement
    )


# ---------------------------------------------------------------- properties


@_SETTINGS
@given(histories)
@example(  # found by this property: partitions half-way through a bootstrap did not count as moving
    History(
        partitions=5,
        policy=Policy(replicas=2, max_moves=1, node_left_delay_ms=1000, drain_grace_ms=0),
        first_nodes=2,
        events=(Join(), Die(0), Step(), Die(0), Revive(0), Advance("delay"), CatchUp(0, None), Step()),
    )
)
@example(  # a live replica was drained in favour of a desired node that was briefly gone
    History(
        partitions=3,
        policy=Policy(replicas=1, max_moves=4, node_left_delay_ms=1000, drain_grace_ms=5000),
        first_nodes=1,
        events=(
            *(Step(), CatchUp(0, None), Step(), Join(), Step(), CatchUp(1, None), Step(), Join(), Step()),
            *(Die(2), Advance("delay-1"), Die(1), Advance("tick"), Step()),
        ),
    )
)
def test_every_step_of_any_history_is_safe_and_once_events_stop_the_cluster_settles_on_rendezvous_placement(
    history: History,
) -> None:
    cluster = history.play()
    cluster.settle()
    assert_settled(cluster)


@_SETTINGS
@given(histories)
def test_a_node_joining_a_settled_cluster_moves_only_the_partitions_whose_top_ranks_it_enters(history: History) -> None:
    cluster = history.play()
    cluster.settle()
    before = dict(cluster.placement)
    old_alive = cluster.alive()
    newcomer = cluster.join()
    if newcomer is None:
        return  # all six names taken
    affected = {p for p in before if newcomer in desired_nodes(p, [*old_alive, newcomer], cluster.policy.replicas)}
    cluster.settle(watch={p: replicas for p, replicas in before.items() if p not in affected})
    assert_settled(cluster)
    for p in affected:
        old, new = {r.node for r in before[p]}, {r.node for r in cluster.placement[p]}
        assert new - old == {newcomer}
        assert len(old - new) == (1 if len(old_alive) >= cluster.policy.replicas else 0)


@_SETTINGS
@given(histories, st.integers(0, 5))
def test_a_node_leaving_a_settled_cluster_moves_only_its_own_partitions_and_only_after_the_delay(
    history: History, pick: int
) -> None:
    cluster = history.play()
    cluster.settle()
    if not cluster.alive():
        return
    before = dict(cluster.placement)
    leaver = cluster.alive()[pick % len(cluster.alive())]
    cluster.die(leaver)
    cluster.advance(cluster.policy.node_left_delay_ms - 1)
    assert cluster.step() == before  # briefly gone: nothing moves away from it
    held = {p for p, replicas in before.items() if any(r.node == leaver for r in replicas)}
    cluster.settle(watch={p: replicas for p, replicas in before.items() if p not in held})
    assert_settled(cluster)
    for p in held:
        old, new = {r.node for r in before[p]}, {r.node for r in cluster.placement[p]}
        assert leaver not in new and old - new == {leaver}
        assert len(new - old) == (1 if len(cluster.alive()) >= cluster.policy.replicas else 0)


# ---------------------------------------------------------------- examples


def three_nodes(max_moves: int = 4) -> Cluster:
    cluster = Cluster(partitions=16, policy=Policy(replicas=2, max_moves=max_moves))
    for name in ("a", "b", "c"):
        cluster.join(name)
    return cluster


def test_three_nodes_with_sixteen_partitions_and_two_replicas_converge_from_nothing() -> None:
    cluster = three_nodes(max_moves=1)
    first = cluster.step()
    # No partition has an active replica yet, so all of them start at once, max_moves or not.
    for p, replicas in first.items():
        assert replicas == tuple(Replica(n, CATCHING_UP, cluster.now_ms) for n in desired_nodes(p, "abc", 2))
    cluster.catch_up("a")
    cluster.advance(1_000)
    second = cluster.step()
    assert all(r.state == (ACTIVE if r.node == "a" else CATCHING_UP) for rs in second.values() for r in rs)
    cluster.catch_up_everywhere()
    cluster.advance(1_000)
    third = cluster.step()
    assert caught_up_everywhere(third)
    assert cluster.step() == third  # settled: nothing left to do
    assert_settled(cluster)


def test_a_fourth_node_takes_its_partitions_with_at_most_max_moves_moving_at_once() -> None:
    cluster = three_nodes(max_moves=2)
    cluster.settle()
    before = dict(cluster.placement)
    cluster.join("d")
    ranked_d = {p for p in range(16) if "d" in desired_nodes(p, "abcd", 2)}
    assert len(ranked_d) > 2  # enough to be rate-limited
    seen_moving = 0
    for _ in range(40):
        out = cluster.step()
        assert moving_count(out) <= 2
        seen_moving = max(seen_moving, moving_count(out))
        cluster.catch_up_everywhere()
        cluster.advance(cluster.policy.drain_grace_ms)
    assert seen_moving == 2
    assert_settled(cluster)
    assert {p for p in range(16) if cluster.placement[p] != before[p]} == ranked_d
    assert {p for p, replicas in cluster.placement.items() if any(r.node == "d" for r in replicas)} == ranked_d


def test_a_dead_nodes_partitions_are_re_replicated_only_after_node_left_delay_ms() -> None:
    cluster = three_nodes()
    cluster.settle()
    before = dict(cluster.placement)
    held_by_c = {p for p, replicas in before.items() if any(r.node == "c" for r in replicas)}
    cluster.die("c")
    died_at = cluster.nodes["c"].last_seen_ms
    cluster.advance(cluster.policy.node_left_delay_ms - 1)
    assert cluster.step() == before  # it may be restarting: its partitions wait for it
    cluster.advance(1)
    out = cluster.step()
    assert cluster.now_ms - died_at == cluster.policy.node_left_delay_ms
    # c's replicas are dropped; each of its partitions keeps its active replica on a or b, and
    # the first max_moves of them start a new one on the other (the rest wait their turn).
    assert len(held_by_c) > cluster.policy.max_moves
    for p in range(16):
        if p not in held_by_c:
            assert out[p] == before[p]
            continue
        survivor = next(r for r in before[p] if r.node != "c")
        newcomer = Replica(({"a", "b"} - {survivor.node}).pop(), CATCHING_UP, cluster.now_ms)
        first = p in sorted(held_by_c)[: cluster.policy.max_moves]
        assert set(out[p]) == ({survivor, newcomer} if first else {survivor})
    cluster.settle()
    assert_settled(cluster)


def test_a_draining_replica_is_dropped_drain_grace_ms_after_it_started_draining() -> None:
    cluster = Cluster(partitions=1, policy=Policy(replicas=1, drain_grace_ms=5_000))
    cluster.join("a")
    cluster.join("b")
    (winner,) = desired_nodes(0, "ab", 1)
    loser = "a" if winner == "b" else "b"
    cluster.placement = {0: (Replica(loser, ACTIVE, 0),)}  # from before `winner` joined
    assert cluster.step() == {0: (Replica(winner, CATCHING_UP, START_MS), Replica(loser, ACTIVE, 0))}
    cluster.catch_up(winner)
    cluster.advance(100)
    drained_at = cluster.now_ms
    assert cluster.step() == {0: (Replica(winner, ACTIVE, drained_at), Replica(loser, DRAINING, drained_at))}
    cluster.advance(4_999)
    assert cluster.step()[0][1] == Replica(loser, DRAINING, drained_at)  # queries are moving off it
    cluster.advance(1)
    assert cluster.step() == {0: (Replica(winner, ACTIVE, drained_at),)}


def test_a_draining_replica_is_active_again_when_its_partition_loses_the_replica_that_replaced_it() -> None:
    cluster = Cluster(partitions=1, policy=Policy(replicas=1, node_left_delay_ms=1_000, drain_grace_ms=5_000))
    cluster.join("a")
    cluster.join("b")
    (winner,) = desired_nodes(0, "ab", 1)
    loser = "a" if winner == "b" else "b"
    cluster.placement = {0: (Replica(winner, ACTIVE, 0), Replica(loser, DRAINING, START_MS))}
    cluster.die(winner)
    cluster.advance(1_000)
    assert cluster.step() == {0: (Replica(loser, ACTIVE, cluster.now_ms),)}  # it still holds everything


def test_a_partition_that_caught_up_in_this_very_step_counts_against_max_moves() -> None:
    cluster = Cluster(partitions=3, policy=Policy(replicas=2, max_moves=1))
    for name in ("a", "b", "c"):
        cluster.join(name)
    cluster.step()  # every partition bootstraps on its two nodes
    assert desired_nodes(2, "abc", 2) == ("b", "c") and desired_nodes(2, "abcd", 2) == ("b", "d")
    cluster.catch_up("b", {2})
    cluster.catch_up("c", {2})
    before = cluster.step()[2]
    cluster.join("d")  # partition 2 would move from c to d
    cluster.catch_up("a", {0, 1})  # partitions 0 and 1 now have an active replica and one catching up
    out = cluster.step()
    assert moving(out[0]) and moving(out[1])
    assert out[2] == before  # so partition 2 waits: max_moves partitions are moving already


def test_a_live_replica_is_not_drained_for_a_desired_node_that_is_briefly_gone() -> None:
    cluster = Cluster(partitions=1, policy=Policy(replicas=1, node_left_delay_ms=60_000))
    for name in ("a", "b", "c"):
        cluster.join(name)
    first, second, third = desired_nodes(0, "abc", 3)
    # `first` joined last and is catching up; `second` and `third` both still serve the partition.
    cluster.placement = {0: (Replica(first, CATCHING_UP, 0), Replica(second, ACTIVE, 0), Replica(third, ACTIVE, 0))}
    cluster.die(first)
    cluster.advance(59_000)
    cluster.die(second)  # restarting, say
    cluster.advance(1_000)
    # `first` is gone; `second` is desired again, but serves nothing until it is back: `third` stays.
    assert cluster.step() == {0: (Replica(second, ACTIVE, 0), Replica(third, ACTIVE, 0))}
    cluster.revive(second)
    assert cluster.step() == {0: (Replica(second, ACTIVE, 0), Replica(third, DRAINING, cluster.now_ms))}


def caught_up_everywhere(layout: Mapping[int, tuple[Replica, ...]]) -> bool:
    return all(r.state == ACTIVE for replicas in layout.values() for r in replicas)
