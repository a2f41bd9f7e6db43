"""Resume states of a CacheDataset: what they record, which readers may continue from them, and
how the states of every rank of a job combine to resume it on another world size.

A state records the settings that decide which rows a rank reads in which order (the dataset's
order key, seed, shuffle, shuffle sizes, batch size, share mode, world size and rank) and where
the rank is (the epoch and the rows of its share consumed, plus the earlier jobs of that epoch
when the job itself resumed one on another world size). A reader continues from a state only
when those settings match its own: otherwise it would read rows twice or never.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

STATE_VERSION = 2

# Settings that decide the rows of each rank and their order; a state and the reader resuming
# from it must agree on all of them.
ORDER_SETTINGS = ("seed", "shuffle", "window_rows", "chunk_rows", "batch_size", "shares")

# What a rank that finished its share consumed, for the server (which caps an offset at the
# share's size): the states of two ranks straddling an epoch's end combine without knowing the
# other ranks' share sizes.
WHOLE_SHARE = 1 << 62

State = Mapping[str, Any]


class Position:
    """Where a reader is: an epoch, the rows of its share consumed (offset), and the earlier jobs
    of that epoch (resumed: per job, the rows each of its ranks consumed)."""

    def __init__(self, epoch: int, offset: int = 0, resumed: Sequence[Sequence[int]] = ()):
        self.epoch, self.offset = int(epoch), int(offset)
        self.resumed: List[List[int]] = [[int(o) for o in job] for job in resumed]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Position) and (self.epoch, self.offset, self.resumed) == (other.epoch, other.offset, other.resumed)

    def __repr__(self) -> str:
        return f"Position(epoch={self.epoch}, offset={self.offset}, resumed={self.resumed})"


def encode_resumed(resumed: Sequence[Sequence[int]]) -> str:
    """The training read option ``resume``: jobs separated by ";", their ranks' offsets by ",",
    a run of k equal offsets n as "n*k"."""
    jobs = []
    for offsets in resumed:
        items: List[str] = []
        i = 0
        while i < len(offsets):
            j = i
            while j < len(offsets) and offsets[j] == offsets[i]:
                j += 1
            items.append(str(offsets[i]) if j - i == 1 else f"{offsets[i]}*{j - i}")
            i = j
        jobs.append(",".join(items))
    return ";".join(jobs)


def decode_resumed(text: str) -> List[List[int]]:
    """The inverse of encode_resumed."""
    jobs: List[List[int]] = []
    for job in text.split(";") if text else []:
        offsets: List[int] = []
        for item in job.split(","):
            value, _, times = item.partition("*")
            offsets.extend([int(value)] * (int(times) if times else 1))
        jobs.append(offsets)
    return jobs


def _check(state: State, reader: Mapping[str, Any]) -> None:
    """Refuses a state another reader saved: another order, or other settings."""
    if not isinstance(state, Mapping) or "epoch" not in state or "offset" not in state:
        raise ValueError(f"not a CacheDataset state: {state!r}")
    if "order_key" in state:
        if state["order_key"] != reader["order_key"]:
            raise ValueError(
                f"the state was saved reading dataset {state.get('dataset')!r} with order key {state['order_key']}; "
                f"{reader['dataset']!r} now has order key {reader['order_key']}: it was made again from another definition or "
                "snapshot, or into partitions of other sizes, so its epochs have another order and the state cannot continue on it"
            )
    elif state.get("dataset") != reader["dataset"] or state.get("generation") != reader["generation"]:
        # A state of an older client, without an order key: valid only for the generation it read.
        raise ValueError(
            f"the state was saved reading generation {state.get('generation')} of {state.get('dataset')!r} (and records no order key); "
            f"this reader reads generation {reader['generation']} of {reader['dataset']!r}"
        )
    for key in ORDER_SETTINGS:
        if key in state and state[key] != reader[key]:
            raise ValueError(
                f"the state was saved with {key}={state[key]!r}; this reader has {key}={reader[key]!r}: resuming would cut the epoch "
                f"differently (rows read twice or never); make the reader with {key}={state[key]!r}"
            )
    if "batch_size" not in state:
        raise ValueError("the state records no batch_size; it cannot be checked against this reader")


def _own(state: State) -> Position:
    """A state's position as the rank that saved it continues: a state of a finished epoch (an
    older client's "complete") continues with the next one."""
    if state.get("complete"):
        return Position(int(state["epoch"]) + 1)
    return Position(state["epoch"], state["offset"], state.get("resumed") or ())


def resume_position(states: Union[State, Sequence[State]], reader: Mapping[str, Any]) -> Position:
    """Where a reader (its settings: dataset, generation, order_key, ORDER_SETTINGS, world_size,
    rank) continues from one rank's state, or from the states of every rank of a job.

    One state must be of the reader's world size and rank. The states of every rank of a job
    (a list, any order) resume it on any world size: on the same one, each rank takes its own;
    on another, the reader shares with the other new ranks the rows the old ranks left
    (the server re-slices them; docs/training.md, "Resume on another world size").
    """
    if isinstance(states, Mapping):
        states = [states]
    states = list(states)
    if not states:
        raise ValueError("no state to resume from")
    for s in states:
        _check(s, reader)
    worlds = {int(s["world_size"]) for s in states}
    if len(worlds) != 1:
        raise ValueError(f"the states are of jobs of world sizes {sorted(worlds)}: give the states of every rank of one job")
    world = worlds.pop()
    ranks = sorted(int(s["rank"]) for s in states)
    if len(states) == 1:
        (s,) = states
        if world != reader["world_size"]:
            raise ValueError(
                f"the state was saved by rank {s['rank']} of a job of world_size {world}; this reader is rank {reader['rank']} of "
                f"{reader['world_size']}: to resume on another world size give the states of all {world} ranks of the job (a list)"
            )
        if int(s["rank"]) != reader["rank"]:
            raise ValueError(f"the state was saved by rank {s['rank']}; this reader is rank {reader['rank']}: each rank resumes from its own state")
        return _own(s)
    if ranks != list(range(world)):
        raise ValueError(f"the states are of ranks {ranks} of a job of world_size {world}: give each rank's state once")
    by_rank = sorted(states, key=lambda s: int(s["rank"]))
    if world == reader["world_size"]:
        return _own(by_rank[reader["rank"]])
    positions = [_own(s) for s in by_rank]
    epoch = min(p.epoch for p in positions)
    offsets: List[int] = []
    resumed: Tuple[Tuple[int, ...], ...] = ()
    seen_resumed = None
    for rank, p in enumerate(positions):
        if p.epoch == epoch:
            offsets.append(p.offset)
            key = tuple(tuple(job) for job in p.resumed)
            if seen_resumed is not None and key != seen_resumed:
                raise ValueError("the states record different earlier jobs of the epoch: they are not of one job")
            seen_resumed = resumed = key
        elif p.epoch == epoch + 1 and p.offset == 0 and not p.resumed:
            # This rank had finished the epoch the others were still reading.
            offsets.append(WHOLE_SHARE)
        else:
            raise ValueError(
                f"rank {rank}'s state is at epoch {p.epoch} row {p.offset}, another rank's at epoch {epoch}: the states are not of one moment of one job"
            )
    if not resumed and all(o == 0 for o in offsets):
        return Position(epoch)
    return Position(epoch, 0, [list(job) for job in resumed] + [offsets])


def state_of(reader: Mapping[str, Any], position: Position, complete: bool) -> Dict[str, Any]:
    """The state a reader saves: its settings and where it is; at the end of its share, the
    beginning of the next epoch."""
    if complete:
        position = Position(position.epoch + 1)
    state: Dict[str, Any] = {"version": STATE_VERSION}
    for key in ("dataset", "generation", "order_key", *ORDER_SETTINGS, "world_size", "rank"):
        state[key] = reader[key]
    state.update(epoch=position.epoch, offset=position.offset, resumed=[list(job) for job in position.resumed])
    return state
