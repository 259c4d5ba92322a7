"""Typed, validated configuration of the economy.

Each field documents itself; ranges and choices are checked when the config is
built (pydantic dataclasses), so a bad value fails before anything runs.
Amounts are in credits here and converted to integer micro-credits by the
model (see ``market/money.py``); each is at most ``MAX_CREDITS`` (1e9 credits),
so no single amount comes near int64, and the ledger refuses the transfer that
would take a balance past it. Floats must be finite (``allow_inf_nan=False``):
``rent = inf`` is refused here, not mid-run.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from pydantic.dataclasses import dataclass

from market.money import MAX_CREDITS
from market.strict import STRICT

MAX_BATCH = 65_536
"""market.batch at most: [B, N] arrays per step stay small (B = 65536 x 64 agents is 4 M entries)."""


@dataclass(config=STRICT)
class MarketConfig:
    """The auction, the payments and the house's rules (docs: concepts/index.md)."""

    batch: int = Field(1, ge=1, le=MAX_BATCH)
    """B: episodes run in lockstep over one population (1 = the sequential EoM economy); at most 65536."""
    clearing: Literal["first_price", "second_price", "softmax", "random"] = "first_price"
    """Clearing rule; see market/auction.py."""
    temperature: float = Field(0.05, gt=0, le=MAX_CREDITS)
    """Softmax clearing temperature, in credits (at most 1e9)."""
    bid_scheme: Literal["fixed", "fixed_with_eps", "holland", "policy", "learned"] = "fixed"
    """fixed: every agent bids base_bid; fixed_with_eps: a newborn bids max(others)+bid_eps, then
    keeps it; holland: bid = max(base_bid, holland_c x wealth); policy: the policy's
    ``bids(obs)`` ([N] or [B, N] credits: evolved or feature-conditioned bids); learned: the same
    hook, the policy being a trained bid head (agents/learners/policy.py composes it; unless the config sets
    ``market.clearing`` it clears by ``softmax``, which reinforce bids need, scenarios/run/derived.py).
    The one name of this knob: ``agents.bids``, its old second name, is read as this key with a warning."""
    base_bid: float = Field(0.05, ge=0, le=MAX_CREDITS)
    """Bid of the fixed scheme, and the floor of the holland scheme, in credits (at most 1e9)."""
    bid_eps: float = Field(0.01, ge=0, le=MAX_CREDITS)
    """Newcomer's increment over the highest bid (fixed_with_eps), in credits (at most 1e9)."""
    holland_c: float = Field(0.1, ge=0, le=1)
    """Holland's bid coefficient: the share of wealth bid."""
    bid_cap: float = Field(1.0, gt=0, le=1)
    """A bid never exceeds bid_cap x the bidder's wealth (1: its wealth). Below 1, an agent's track
    record limits how hard it can bid: a newcomer cannot outbid proven agents until it has earned."""
    payment: Literal["bucket_brigade", "final_only"] = "bucket_brigade"
    """bucket_brigade: the winner pays the previous owner (the first pays the house);
    final_only (ablation): every winner pays the house."""
    conserve: bool = True
    """True: the winner's payment is taken from it (money is conserved, Hayek). False (ablation,
    Holland-style): the house mints the payment to the previous owner; the winner pays nothing."""
    terminal: Literal["owner", "path"] = "owner"
    """Who gets the world's terminal reward: the final owner (Hayek) or the path's unique
    authors in equal integer shares (EoM)."""
    reward_scale: float = Field(1.0, ge=0, le=MAX_CREDITS)
    """Credits paid by the house per unit of world reward (at most 1e9)."""
    rent: float = Field(0.02, ge=0, le=MAX_CREDITS)
    """Rent each live agent pays the house every rent_interval episodes, in credits (at most 1e9)."""
    rent_interval: int = Field(1, ge=1)
    """Episodes between two rent payments (1: every episode)."""
    wealth_tax: float = Field(0.0, ge=0, lt=1)
    """Share of its (positive) wealth each agent pays the house with each rent (Holland's tax)."""
    action_fee: float = Field(0.0, ge=0, le=MAX_CREDITS)
    """Credits the winner pays the house for each action it takes (a tax on computation; at most 1e9)."""
    token_price: float = Field(0.0, ge=0, le=MAX_CREDITS)
    """Credits per 1000 LLM tokens (prompt + generated) an agent's own model calls used in a round (acting,
    wake-up scoring, rewriting its skills), charged to it at the round's end (Hayek's tax on computation:
    a long prompt costs its holder). Read only where the policy reports compute (LLM agents)."""
    token_prices: dict[str, Annotated[float, Field(ge=0, le=MAX_CREDITS)]] = Field(default_factory=dict)
    """Credits per 1000 tokens of one model, by its label (``hf:smollm2``: the summary's ``llm_usage`` keys), where
    a market mixes models (a role with a model of its own); a model not named costs ``token_price``."""


@dataclass(config=STRICT)
class PopulationConfig:
    """Initial population, births and bounds."""

    initial_agents: int = Field(20, ge=1)
    """Agents born at the start of the run, each with ``initial_wealth`` (random newcomers)."""
    initial_wealth: float = Field(0.5, ge=0, le=MAX_CREDITS)
    """Credits the house gives each newborn (initial agents included; at most 1e9)."""
    p_exploit: float = Field(0.3, ge=0, le=1)
    """Per episode: probability that the richest agent has a mutated child."""
    p_explore: float = Field(0.3, ge=0, le=1)
    """Per episode: probability that a bankrupt (else the poorest) agent is revised into a newborn."""
    birth_interval: int = Field(0, ge=0)
    """Every this many episodes a random newcomer is born (0: never)."""
    min_agents: int = Field(2, ge=0)
    """Floor: random newcomers fill the population up to this size."""
    max_agents: int = Field(64, ge=1)
    """Ceiling: births stop at this size."""
    child_share: float = Field(0.0, ge=0, lt=1)
    """0: the house funds every newborn with initial_wealth. Above 0 (Hayek): an exploit child is
    endowed by its parent with this share of the parent's wealth instead, so wealth turns into offspring."""
    births: bool = True
    """False (ablation): no births of any kind, floor included; the population only shrinks."""

    def __post_init__(self):
        if self.min_agents > self.max_agents:
            raise ValueError(f"min_agents ({self.min_agents}) exceeds max_agents ({self.max_agents})")
