"""The economy: Mesa model, auction, integer ledger, rent, bankruptcy, births, persistence."""

from market.auction import CLEARING_RULES, clear
from market.config import MarketConfig, PopulationConfig
from market.ledger import Ledger, LedgerError, Reason, replay
from market.model import MarketModel, gini
from market.money import MICRO, to_credits, to_micro
from market.population import HOUSE_ROW, Population
from market.protocols import Economy, Policy, PolicyWrapper, World

__all__ = [
    "CLEARING_RULES", "HOUSE_ROW", "MICRO", "Economy", "Ledger", "LedgerError", "MarketConfig", "MarketModel",
    "Policy", "PolicyWrapper", "Population", "PopulationConfig", "Reason", "World", "clear", "gini", "replay", "to_credits", "to_micro",
]
