"""Blocks World's features and moves, one compiled pass per instance each (numba).

An observation of B = 8 instances on numpy is some thirty array operations over tiny arrays (masks of the
stacks, a cumulative product for the prefix, arg-reductions for the needed block), and a move a dozen more,
whose cost is all numpy's per-call overhead. Here each instance is read once, in the order a person would:
walk stack 1 up while it matches the goal, then look down each stack for the next block the goal needs.
"""

from __future__ import annotations

import numba

from scenarios.blocks.config import CLIP, PROGRESS

_NOT_FOUND = 10**9


@numba.njit(cache=True, nogil=True, inline="always")
def _prefix(stack, height, b) -> int:
    """Length of instance b's correct prefix: stack 1's blocks that match the goal's, from the bottom up."""
    k = 0
    while k < height[b, 1] and stack[b, 1, k] == stack[b, 0, k]:
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def prefixes(stack, height, out) -> None:
    """``out[b]``: instance b's correct prefix length."""
    for b in range(stack.shape[0]):
        out[b] = _prefix(stack, height, b)


@numba.njit(cache=True, nogil=True)
def features(stack, height, n, out) -> None:
    """``out[b]``: instance b's FEATURES (scenarios/blocks/config.py), in that order.

    The needed block is the goal's block just above the prefix; its copy that is cheapest to reach is the topmost
    one in stacks 2, 3 or 1 (above the prefix), fewest blocks on top first, ties going to stack 2, then 3, then 1.
    """
    for b in range(stack.shape[0]):
        prefix = _prefix(stack, height, b)
        need = stack[b, 0, prefix] if prefix < n[b] else 0
        need_at, need_depth, best = 0, 0, _NOT_FOUND
        if need > 0:
            for s in (2, 3, 1):
                bottom = prefix if s == 1 else 0
                for i in range(height[b, s] - 1, bottom - 1, -1):  # top down: the first copy found is the topmost
                    if stack[b, s, i] == need:
                        depth = height[b, s] - 1 - i
                        if depth < best:
                            need_at, need_depth, best = s, min(depth, CLIP), depth
                        break
        out[b, 0] = min(height[b, 1] - prefix, CLIP)  # wrong1: blocks on stack 1 above its correct prefix
        out[b, 1] = min(prefix, CLIP)
        out[b, 2] = PROGRESS * prefix // n[b]
        out[b, 3], out[b, 4], out[b, 5] = need_at, need_depth, need
        for s in range(1, 4):  # top1..top3: each stack's top block, 0 when empty
            out[b, 5 + s] = stack[b, s, height[b, s] - 1] if height[b, s] > 0 else 0


@numba.njit(cache=True, nogil=True)
def observe(stack, height, n, columns, features_out, out) -> None:
    """``out[b]``: instance b's FEATURES at ``columns`` (the rules' features), then the heights of stacks 1-3
    (the market's columns); ``features_out`` [B, len(FEATURES)] holds every feature on the way."""
    features(stack, height, n, features_out)
    for b in range(stack.shape[0]):
        for j in range(columns.size):
            out[b, j] = features_out[b, columns[j]]
        for s in range(1, 4):
            out[b, columns.size + s - 1] = height[b, s]


@numba.njit(cache=True, nogil=True)
def allowed(legal, action, holds) -> None:
    """``holds[b, n]`` stays only where rule n's move is legal in world b (``legal`` [B, moves]: what
    :func:`scenarios.blocks.world.legal_moves` says): numpy's pick by action and ``&`` in one pass."""
    for b in range(legal.shape[0]):
        for n in range(action.size):
            holds[b, n] = holds[b, n] and legal[b, action[n]]


@numba.njit(cache=True, nogil=True)
def step(stack, height, moves, actions, acting, n, limit, size_reward, t, over, solved, invalid, reward, done) -> bool:
    """One step of every instance still in play (not ``over``): where ``acting[b]``, the top block moves as
    ``moves[actions[b]]`` (from stack, to stack) says (an action off the table moves nothing, one from an empty
    stack moves nothing and counts in ``invalid[b]``); then its clock, whether stack 1 now holds the goal
    (solved: ``reward[b]`` is 1, or n under ``size_reward``) and whether it is ``done`` (solved or out of time).
    Returns whether every instance is over."""
    every = True
    for b in range(stack.shape[0]):
        live = not over[b]
        a = actions[b]
        if live and acting[b] and 0 <= a < moves.shape[0]:
            src, dst = moves[a, 0], moves[a, 1]
            if height[b, src] == 0:
                invalid[b] += 1
            else:
                height[b, src] -= 1
                stack[b, dst, height[b, dst]] = stack[b, src, height[b, src]]
                stack[b, src, height[b, src]] = 0
                height[b, dst] += 1
        t[b] += live
        won = live and height[b, 1] == n[b] and _prefix(stack, height, b) == n[b]
        solved[b] |= won
        done[b] = live and (won or t[b] >= limit[b])
        over[b] |= done[b]
        reward[b] = (n[b] if size_reward else 1) if won else 0
        every &= over[b]
    return every
