"""The referee raises the garbage collector's generation-0 threshold while a duel plays and puts back
exactly what was there afterwards, whatever happens; a disabled or less eager collector is left alone.
What each match leaves is frozen (out of the collector's walks) until the duel ends, unless the process
froze objects itself."""

from __future__ import annotations

import gc
import threading

import pytest
from run_duel_helpers import RANDOM

from run_duel.referee import PLAY_GC_THRESHOLD, _fewer_collections, play_duel
from run_duel.sandbox.base import LaunchSpec, Limits
from run_duel.sandbox.inprocess import InProcessSandbox

LIMITS = Limits(move_timeout=5.0, init_timeout=10.0)


@pytest.fixture
def threshold():
    saved = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    yield
    gc.set_threshold(*saved)
    gc.unfreeze()
    gc.enable()


def duel(on_match=None) -> dict:
    spec = LaunchSpec(agent=str(RANDOM), limits=LIMITS)
    return play_duel(
        "connect-four",
        InProcessSandbox(),
        spec,
        spec,
        matches=2,
        limits=LIMITS,
        pin_cpus=False,
        on_match=on_match,
    )


def test_raised_while_playing_then_restored(threshold):
    gc.set_threshold(500, 7, 9)
    seen = []
    result = duel(on_match=lambda index, match: seen.append(gc.get_threshold()))
    assert result["num_matches"] == 2 and result["result"] != "ERROR"
    assert seen == [(PLAY_GC_THRESHOLD, 7, 9)] * 2
    assert gc.get_threshold() == (500, 7, 9)


def test_restored_when_the_duel_raises(threshold):
    gc.set_threshold(700, 10, 10)

    def fail(index, match):
        raise RuntimeError("a callback failed")

    with pytest.raises(RuntimeError):
        duel(on_match=fail)
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("value", [(0, 10, 10), (PLAY_GC_THRESHOLD * 2, 10, 10)])
def test_disabled_or_less_eager_left_alone(threshold, value):
    gc.set_threshold(*value)
    seen = []
    duel(on_match=lambda index, match: seen.append(gc.get_threshold()))
    assert seen == [value] * 2
    assert gc.get_threshold() == value


def test_overlapping_duels_restore_once_the_last_ends(threshold):
    gc.set_threshold(700, 10, 10)
    first_in, second_in, release = threading.Event(), threading.Event(), threading.Event()

    def first():
        with _fewer_collections():
            first_in.set()
            release.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    with _fewer_collections():
        second_in.set()
        assert gc.get_threshold()[0] == PLAY_GC_THRESHOLD
    assert gc.get_threshold()[0] == PLAY_GC_THRESHOLD  # the first duel still plays
    release.set()
    thread.join(10)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_threshold_changed_meanwhile_is_kept(threshold):
    gc.set_threshold(700, 10, 10)
    with _fewer_collections():
        gc.set_threshold(1234, 10, 10)
    assert gc.get_threshold() == (1234, 10, 10)


def test_each_match_frozen_while_playing_then_unfrozen(threshold):
    gc.set_threshold(700, 10, 10)
    frozen = []
    result = duel(on_match=lambda index, match: frozen.append(gc.get_freeze_count()))
    assert result["num_matches"] == 2 and result["result"] != "ERROR"
    assert all(count > 0 for count in frozen)
    assert gc.get_freeze_count() == 0


def test_unfrozen_when_the_duel_raises(threshold):
    gc.set_threshold(700, 10, 10)

    def fail(index, match):
        assert gc.get_freeze_count() > 0
        raise RuntimeError("a callback failed")

    with pytest.raises(RuntimeError):
        duel(on_match=fail)
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_is_left_alone(threshold):
    gc.set_threshold(700, 10, 10)
    gc.freeze()
    before = gc.get_freeze_count()
    frozen = []
    duel(on_match=lambda index, match: frozen.append(gc.get_freeze_count()))
    # Frozen objects may be freed meanwhile (the count then drops), but the referee freezes none of its own
    # (a match's states are thousands of objects) and never unfreezes the process's.
    assert len(frozen) == 2 and max(frozen) <= before, frozen
    assert 0 < gc.get_freeze_count() <= before


@pytest.mark.parametrize("value", [(0, 10, 10), (PLAY_GC_THRESHOLD * 2, 10, 10), None])
def test_nothing_frozen_when_the_collector_is_left_alone(threshold, value):
    if value is None:
        gc.set_threshold(700, 10, 10)
        gc.disable()
    else:
        gc.set_threshold(*value)
    frozen = []
    duel(on_match=lambda index, match: frozen.append(gc.get_freeze_count()))
    assert frozen == [0, 0]
    assert gc.get_freeze_count() == 0


def test_overlapping_duels_each_unfreeze_at_their_end(threshold):
    gc.set_threshold(700, 10, 10)
    first_in, release = threading.Event(), threading.Event()

    def first():
        with _fewer_collections() as settle:
            settle()
            first_in.set()
            release.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    with _fewer_collections() as settle:
        assert gc.get_freeze_count() > 0
        settle()
    assert gc.get_freeze_count() == 0  # the second duel's end unfreezes; the first freezes again later
    release.set()
    thread.join(10)
    assert gc.get_freeze_count() == 0
