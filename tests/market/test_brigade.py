"""The payment rule (market/brigade.py) on hand-written rounds, where every amount can be worked out on paper."""

import numpy as np

from market.brigade import Payments, sale, terminal_shares
from market.ledger import Reason
from market.population import HOUSE_ROW


def test_sale_pays_the_previous_owner_or_the_house():
    owner, winner, won = np.array([-1, 3, 3, 2]), np.array([1, 4, 3, 5]), np.array([True, True, True, False])
    payer, payee, pays = sale(owner, winner, won, "bucket_brigade", conserve=True)
    assert payee.tolist() == [HOUSE_ROW, 3, 3, 2] and payer.tolist() == [1, 4, 3, 5]
    assert pays.tolist() == [True, True, False, False]  # an owner that outbids everyone keeps it free; a forfeit pays nothing
    payer, payee, pays = sale(owner, winner, won, "final_only", conserve=True)
    assert (payee == HOUSE_ROW).all() and pays.tolist() == [True, True, True, False]
    payer, payee, pays = sale(owner, winner, won, "bucket_brigade", conserve=False)
    assert (payer == HOUSE_ROW).all() and pays.tolist() == [False, True, False, False]  # the house pays the seller


def test_terminal_shares_owner_or_equal_shares_to_the_authors():
    path = np.array([[1, 2], [3, -1], [1, 2]])  # world 0: authors 1 and 3; world 1: author 2
    owner, reward, worlds = np.array([1, 2]), np.array([7, 5]), np.array([0, 1])
    k, rows, amounts = terminal_shares(worlds, reward, owner, path, "owner")
    assert rows.tolist() == [1, 2] and amounts.tolist() == [7, 5] and k.tolist() == [0, 1]
    k, rows, amounts = terminal_shares(worlds, reward, owner, path, "path")
    assert k.tolist() == [0, 0, 1] and rows.tolist() == [1, 3, 2] and amounts.tolist() == [3, 3, 5]  # 7 // 2, remainder kept


def test_holdings_gather_each_payment_where_it_belongs():
    """One world: agent 1 buys from the house at t=0 for 10, acts again at t=1, forfeits nothing; agent 2
    buys from it at t=2 for 30 and finishes at t=3 (terminal reward 100); fee 1 per action."""
    path = np.array([[1], [1], [2], [2]])
    p = Payments()
    p.add(0, [0], [1], [HOUSE_ROW], [10], Reason.BID)
    for t, row in enumerate([1, 1, 2, 2]):
        p.add(t, [0], [row], [HOUSE_ROW], 1, Reason.FEE)
    p.add(2, [0], [2], [1], [30], Reason.BID)
    p.add(3, [0], [HOUSE_ROW], [2], [100], Reason.REWARD)
    p.add(3, [0], [HOUSE_ROW], [2], [0], Reason.REWARD)  # zero amounts are dropped, as by the ledger
    held, turn = p.holdings(path)
    assert held.agent.tolist() == [1, 2] and held.start.tolist() == [0, 2] and turn.tolist() == [0, 0, 1, 1]
    assert held.sold.tolist() == [30, 0] and held.bought.tolist() == [10, 30]
    assert held.fees.tolist() == [2, 2] and held.rewards.tolist() == [0, 100]


def test_a_terminal_share_goes_to_the_authors_latest_holding():
    path = np.array([[1], [2], [1], [3]])  # agent 1 holds twice; the world ends at t=3
    p = Payments()
    for row in (1, 3, 2):
        p.add(3, [0], [HOUSE_ROW], [row], [4], Reason.REWARD)
    held, _ = p.holdings(path)
    assert held.agent.tolist() == [1, 2, 1, 3] and held.rewards.tolist() == [0, 4, 4, 4]
