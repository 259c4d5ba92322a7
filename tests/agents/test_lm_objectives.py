"""agents.objective on the LoRA learner (agents/learners/hf_grpo.py HFGRPO, agents/learners/lm_grpo.py): each objective that
the LM learner's signals allow moves SmolLM2's rewarded completions up, and wordmath refuses the others."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from agents.learners import critic
from agents.credit.advantages import outcome_advantage
from agents.learners.hf_grpo import HFGRPO
from agents.learners.lm_grpo import effect_ids
from agents.objectives import make
from tests.agents.scoring import mean_logprob


@pytest.fixture(scope="module")
def backend():
    from agents.backends import BackendConfig
    from agents.backends.factory import make_backend

    return make_backend(BackendConfig(backend="hf", device="cpu"))


@pytest.mark.parametrize("name, updates", [("eapo", 1), ("empo", 1), ("tree_opsd", 1), ("pact", 1), ("focus", 1),
                                           ("sero", 1), ("tppo", 3), ("agentopsd", 1), ("trial", 1), ("cepo", 1),
                                           ("h2sd", 1), ("stop_segment", 1), ("rredcot", 1), ("alignopsd", 1),
                                           ("distil", 1), ("hint_sd", 1), ("diamond_sd", 1),
                                           ("evidence_diagnosis", 1)])
def test_updates_move_the_rewarded_completions_up(backend, name, updates):
    """Two prompts x two completions, one rewarded per group (the second group rewards the unlikely " green"):
    after one update of ``name`` (on a fresh adapter and critic) each rewarded completion gains on its sibling.
    tppo's zero critic first says 1/2 everywhere (every token's value change is 0): its first step trains
    the critic alone, the next ones move the policy. sero's oracle continues each step with the rewarded text."""
    torch.manual_seed(0)
    objective = make(name)
    grpo = HFGRPO(backend.model, backend.tokenizer, lr=2e-3, lora_rank=4, critic=critic.wanted(objective))
    try:
        ids = lambda text: backend.tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
        pairs = [(ids("2+2="), ids("4")), (ids("2+2="), ids("5")), (ids("Sky is"), ids(" blue")),
                 (ids("Sky is"), ids(" green"))]
        outcome = np.array([1.0, 0.0, 0.0, 1.0])
        fields = {"outcome": outcome, "group": np.array([0, 0, 1, 1]), "episode": np.arange(4),
                  "effect": effect_ids([("a", "s", "4"), ("a", "s", "5"), ("a", "t", "blue"), ("a", "t", "green")]),
                  "state": np.array([0, 0, 1, 1]),
                  "oracle": [ids("4"), ids("4"), ids(" green"), ids(" green")]}
        if name in ("agentopsd", "alignopsd", "trial", "cepo", "h2sd"):  # privileged per-token log-probs, right-aligned by the
            # learner: an informed teacher that finds the rewarded completions likelier than the agent does, the others less
            own, mask = grpo._scored(pairs)[:2]
            informed = [own[i][mask[i]].numpy() + v for i, v in enumerate((1.0, -1.0, -1.0, 1.0))]
            fields["privileged"] = {k: informed for k in objective.needs if k != "thought"}
        if name == "alignopsd":  # each group's two replies say the same kind of thing: matched to each other
            fields["thought"] = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        if name == "distil":  # the failures' teachers wrote the rewarded reply, verified; the successes' wrote none
            fields.update(teacher_sample=[[], ids("4"), ids(" green"), []], teacher_verified=np.array([False, True, True, False]))
        if name == "diamond_sd":  # the failures broke at their step, where an own success wrote the rewarded reply
            fields.update(subgoals=np.array([0, 0, 1, 1]), breakpoint=np.array([False, True, True, False]),
                          retrieved=[[], ids("4"), ids(" green"), []])
        if name == "hint_sd":  # the failures located; the hinted teacher disowns their tokens, agrees elsewhere
            own, mask = grpo._scored(pairs)[:2]
            fields.update(privileged={"hint_logp": [own[i][mask[i]].numpy() - v for i, v in enumerate((0.0, 1.0, 1.0, 0.0))]},
                          located=np.array([False, True, True, False]))
        if name in ("stop_segment", "rredcot", "evidence_diagnosis"):  # the gold answer's belief, one number per step:
            # the rewarded replies raise it
            fields["privileged"] = {"belief_before": np.full(4, -2.0), "belief_after": np.array([-1.0, -3.0, -3.0, -1.0])}
        if name == "evidence_diagnosis":  # every reply grounded; the failures' rubric rewrites are the rewarded replies
            fields.update(grounding=np.ones(4), rubric_sample=[[], ids("4"), ids(" green"), []],
                          rubric_sample_grounding=np.array([0.0, 1.0, 1.0, 0.0]))
        before = mean_logprob(grpo, pairs)
        for _ in range(updates):
            stats = grpo.update(pairs, outcome_advantage(outcome, 2, normalize=True), objective=objective, fields=fields)
        delta = (mean_logprob(grpo, pairs) - before).numpy()
        assert delta[0] > delta[1] and delta[3] > delta[2], delta
        assert stats["tokens"] == sum(len(p) + len(c) for p, c in pairs) and np.isfinite(stats["grad_norm"])
        if name == "tppo":  # the critic learned which completions succeed: 4 and " green" above 1/2
            _, mask, hidden = grpo.token_logprobs(pairs, hidden=True)
            assert mask.sum(1).tolist() == [1, 1, 1, 1]  # one token each: the prefix value is sigmoid(c)
            value = torch.sigmoid(grpo.critic(hidden)[:, -1]).detach().numpy()
            assert value[0] > 0.5 > value[1] and value[3] > 0.5 > value[2], value
        if name == "sero":
            assert stats["oracle_steps"] == 4 and stats["oracle_loss"] > 0
    finally:
        grpo.model.unload()  # the module's backend model, adapters removed, for the next case


def test_effect_ids_name_the_same_action_at_the_same_state_once():
    ids = effect_ids([("extractor", "s0", "4 + 3"), ("extractor", "s0", "4 + 3"), ("extractor", "s0", None),
                      ("answerer", "s2", "7"), ("extractor", "s0", None)])
    assert ids.tolist() == [0, 0, 1, 2, 1]


@pytest.mark.parametrize("name, missing", [("ca_pg", "item_logits"), ("diamond_sd", "subgoals")])
def test_objectives_needing_what_the_lm_learner_lacks_are_refused_on_wordmath(name, missing):
    done = subprocess.run([sys.executable, "-m", "scenarios.cli.main", "run", "wordmath", "--set", "agents.actions=grpo",
                           "--set", f"agents.objective={name}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and f"agents.objective = {name!r}" in done.stderr and missing in done.stderr, done.stderr


def test_an_objective_step_in_chunks_moves_the_adapter_as_one_pass_over_the_batch(backend):
    """The batch scored without grad, the loss differentiated at its log-probabilities, each chunk backpropagated
    from its share: chunks of 1 and one chunk of 4 give the same loss terms and the same gradient norm (sero: the
    oracle's leaf too; KL on). Adam's first step is lr x sign(g), so the adapters themselves differ wherever a
    gradient entry is float noise around 0: the norm is what is compared."""
    ids = lambda text: backend.tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    pairs = [(ids("2+2="), ids("4")), (ids("2+2="), ids(" five")), (ids("Sky is"), ids(" blue")),
             (ids("Sky is"), ids(" green today"))]
    outcome = np.array([1.0, 0.0, 0.0, 1.0])
    fields = {"outcome": outcome, "group": np.array([0, 0, 1, 1]), "episode": np.arange(4),
              "oracle": [ids("4"), ids("4"), ids(" green"), ids(" green")]}
    runs = []
    for chunk in (1, 4):
        torch.manual_seed(0)
        grpo = HFGRPO(backend.model, backend.tokenizer, lr=2e-3, lora_rank=4, kl=0.1, chunk=chunk)
        try:
            runs.append(grpo.update(pairs, outcome_advantage(outcome, 2, normalize=True), objective=make("sero"),
                                    fields=fields))
        finally:
            grpo.model.unload()
    one, whole = runs
    assert one["grad_norm"] > 0 and one.keys() == whole.keys()
    for key in one:  # the module's model is bfloat16: its backward sums per chunk, rounded (0.3% apart here)
        assert one[key] == pytest.approx(whole[key], rel=1e-2 if key == "grad_norm" else 1e-4, abs=1e-7), key
