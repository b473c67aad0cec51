"""Season finals rules (pure): the cut after each round, the rounds' sizes and the final table."""

from __future__ import annotations

import pytest

from tournament_manager.finals import FinalistLine, FinalsRules, final_table, order_by_rating


def test_rounds_halve_the_field_down_to_the_last_round():
    rules = FinalsRules(cut=0.5, last=4)
    assert rules.rounds(16) == [16, 8, 4]
    assert rules.rounds(8) == [8, 4]
    assert rules.rounds(5) == [5, 4]  # the cut never goes below the last round's size
    assert rules.rounds(4) == [4] and rules.rounds(3) == [3]
    assert rules.rounds(1) == [] and rules.rounds(0) == []
    assert FinalsRules(cut=0.25, last=2).rounds(10) == [10, 8, 6, 5, 4, 3, 2]
    assert rules.kept_after(4) == 0 and rules.kept_after(9) == 5


@pytest.mark.parametrize("cut,last", [(0.0, 4), (1.0, 4), (0.5, 1)])
def test_rules_refuse_cuts_that_never_end_or_empty_the_field(cut, last):
    with pytest.raises(ValueError):
        FinalsRules(cut=cut, last=last)


def test_rating_order_breaks_ties_by_seed():
    lines = [
        FinalistLine("a", 2, 25.0, 1.0),
        FinalistLine("b", 1, 25.0, 1.0),
        FinalistLine("c", 3, 30.0, 1.0),
    ]
    assert [f.id for f in order_by_rating(lines)] == ["c", "b", "a"]


def test_final_table_ranks_the_last_round_first_then_later_cuts_before_earlier_ones():
    lines = [
        FinalistLine("cut1-strong", 1, 40.0, 1.0, cut_after_round=1),  # higher rating, cut earlier
        FinalistLine("cut2", 5, 20.0, 1.0, cut_after_round=2),
        FinalistLine("last-b", 4, 22.0, 1.0),
        FinalistLine("last-a", 3, 24.0, 1.0),
        FinalistLine("cut1-weak", 2, 10.0, 1.0, cut_after_round=1),
    ]
    assert [f.id for f in final_table(lines)] == ["last-a", "last-b", "cut2", "cut1-strong", "cut1-weak"]
