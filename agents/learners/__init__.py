"""Learners: what trains agents' bids and actions from the rounds they play.

* ``policy.py``: :class:`LearnedPolicy` wraps any policy with the learners ``learners()`` picks from the
  config;
* ``base.py``: the hooks every learner declares (``RoundLearner``), the one Adam step over their summed
  losses (``AdamStep``), the device and autocast;
* bid learners: value bids (``value_bids.py``), REINFORCE bids (``reinforce_bids.py``), the market's own
  bids (``market_bids.py``), on the bid head of ``bid_head.py``;
* action learners: logits over a rule world's actions (``action_logits.py``), the LoRA adapter of a shared
  language model (``lm_grpo.py``, with the transformers engine's pass in ``hf_grpo.py``);
* what they share: the critic (``critic.py``) and EMA weights (``ema_weights.py``); what a round earned they read
  from ``agents/credit/advantages.py`` and the KL to a reference from ``agents/objectives/kl.py``.

Everything here imports torch: ``import agents`` does not load this package.
"""
