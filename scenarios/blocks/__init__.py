"""Scenario ``blocks``: Baum's Hayek Blocks World, learned by an economy of rule agents.

The world (Baum 1999; Baum & Durdanovic 2000). Four stacks of coloured blocks.
Stack 0 is the goal, read-only: n blocks in ``colours`` colours. Stacks 1..3
hold the same multiset of blocks in random order. One step moves the top block
of one of stacks 1..3 onto another of them (6 actions, ``1to2`` ... ``3to2``);
moving from an empty stack is an *invalid action*: the world is unchanged, the
step is spent, and it is counted. The task is to make stack 1 equal the goal,
bottom to top. The world pays only then (no reward on the way): 1 credit
(``reward = "unit"``, the default) or n credits, one per goal block
(``reward = "size"``). An episode that has not finished after
``horizon_factor x n`` steps has failed.

Observation features (what a Hayek user hands its agents; small bounded
integers, so a rule's condition ``feature OP int`` means the same at every n):

==============  ======  ====================================================
feature         range   meaning
==============  ======  ====================================================
``wrong1``      0..3    blocks on stack 1 above its correct prefix (3: 3 or more)
``prefix``      0..3    length of stack 1's correct prefix (3: 3 or more)
``progress``    0..10   tenths of the goal in place: floor(10 x prefix / n)
``need_at``     0..3    stack holding the nearest copy of the next needed
                        block (goal[prefix]), looking at stacks 2, 3 and the
                        wrong part of stack 1; ties go to 2, then 3, then 1;
                        0: nothing needed (stack 1 is complete)
``need_depth``  0..3    blocks above that copy (0: it is on top; 3: 3 or more)
``next``        0..C    colour of the next needed block (0: none)
``top1..top3``  0..C    colour of each stack's top block (0: empty)
==============  ======  ====================================================

Six rules solve every instance (see ``SOLUTION``): clear stack 1 while it is
wrong; once it is a correct prefix, move the needed block onto it when it is
on top of stack 2 or 3, else dig it out onto the other stack. The economy is
not told them: it starts from random rules and must find them from the
reward at completion alone.

Agents are rules of the DSL (agents/rules.py) that bid what their turns have
earned them (``BlocksPolicy``): the bucket brigade then prices each state by
how near the goal it leads, so where several rules wake the one whose move
leads nearest wins. Births (market/births.py):
*exploit* mutates a rich agent's rule (a term, a threshold, an operator or
the move); *explore* revises a bankrupt agent's rule from the state where its
move preceded a failure (``revise`` below: a different legal move there, or
the condition narrowed to that state); *periodic* births add rules covering states of failed episodes where
some legal move had no bidder.
*Curriculum*: training sizes unlock one at a time as the success rate passes
a threshold. Held-out instances come from ``heldout_seed``, a seed stream that
training (the model's RNG) never draws from.

*Task samplers* (``agents.tasks``, agents/tasks): the curriculum still draws each group's size, and
that size's sampler draws the instance, from ``task_pool`` instances of the size (drawn once from the
run's seed). rods's isomorphic variant of an instance permutes its colours (the same stacks: with
the default colour-blind features its rules see the same states); scrl's sub-problems are the goal's
prefixes (stack 1 must equal the goal's first quarter, half, three quarters, every block still in
play, within the full instance's step budget); rods is fed the goal's share in place at the end,
scrl whether the (sub-)goal was reached.
"""

from scenarios.blocks.config import ACTIONS, FEATURES, MARKET_COLUMNS, MOVES, SOLUTION, Config
from scenarios.blocks.policy import BlocksPolicy
from scenarios.blocks.scenario import build, evaluate, metrics, validate
from scenarios.blocks.signals import RECORDED_SIGNALS, SIGNALS, BlocksRecorder, credit_signals, solution_moves
from scenarios.blocks.world import SOLVER_FEATURES, SPEC, BlocksWorld, Instance, generate, heldout, legal_moves

__all__ = [
    "ACTIONS", "FEATURES", "MARKET_COLUMNS", "MOVES", "SOLUTION", "BlocksPolicy", "BlocksRecorder",
    "BlocksWorld", "Config", "Instance", "build", "credit_signals", "evaluate", "generate", "heldout", "legal_moves",
    "metrics", "RECORDED_SIGNALS", "SIGNALS", "SOLVER_FEATURES", "SPEC", "solution_moves", "validate",
]
