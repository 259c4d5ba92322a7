"""NDCG@k, Recall@k and coverage against cases computed by hand."""

import numpy as np
import pytest

from scenarios.recsys.ranking import coverage, ndcg, recall


def test_ndcg_by_hand():
    ranked = np.array([[7, 3, 9, 1],     # targets at positions 0 and 2
                       [1, 2, 3, 4],     # no target
                       [5, 6, 8, -1],    # the only target at position 2, an empty slot after
                       [4, 8, 6, 2]])    # a target at position 3, beyond k = 3
    targets = np.array([[9, 7, -1], [10, 11, -1], [8, -1, -1], [2, -1, -1]])
    dcg = [1 + 1 / np.log2(4), 0.0, 1 / np.log2(4), 0.0]
    idcg = [1 + 1 / np.log2(3), 1 + 1 / np.log2(3), 1.0, 1.0]
    assert ndcg(ranked, targets, k=3) == pytest.approx(np.divide(dcg, idcg))
    assert ndcg(ranked, targets, k=4)[3] == pytest.approx(1 / np.log2(5))
    assert ndcg(ranked[:1], targets[:1], k=1)[0] == pytest.approx(1.0)  # DCG@1 = IDCG@1 = 1: two targets, one slot
    assert ndcg(ranked[1:2], targets[1:2], k=1)[0] == 0.0
    perfect = ndcg(np.array([[9, 7, 1]]), targets[:1], k=3)
    assert perfect[0] == pytest.approx(1.0)


def test_ndcg_ignores_padding_and_users_without_targets():
    assert ndcg(np.array([[-1, -1]]), np.array([[-1, -1]]), k=2).tolist() == [0.0]
    assert ndcg(np.array([[3, -1]]), np.array([[3, -1]]), k=10).tolist() == [1.0]


def test_recall_by_hand():
    ranked = np.array([[1, 2, 3, 4, 5], [9, 8, 7, 6, 5]])
    targets = np.array([[5, 2, 11], [1, -1, -1]])
    assert recall(ranked, targets, k=2).tolist() == pytest.approx([1 / 3, 0.0])
    assert recall(ranked, targets, k=5).tolist() == pytest.approx([2 / 3, 0.0])


def test_coverage_counts_distinct_items_in_everyones_top_k():
    ranked = np.array([[0, 1, 2], [1, 2, 3], [-1, 5, 1]])
    assert coverage(ranked, n_items=10, k=2) == pytest.approx(4 / 10)  # {0, 1, 2, 5}
    assert coverage(ranked, n_items=10, k=3) == pytest.approx(5 / 10)
