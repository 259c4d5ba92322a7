"""The paper index: every method Catallax can run, with the work it comes from, what of it is built, what is
left out, and what it logs. This module is the one home of that list; docs/concepts/papers.md shows it
(its ``<!-- generated: paper index -->`` marker is replaced at build time, docs/render_hooks.py), and
tests/test_papers.py fails when a registered method has no entry here.

A citation is given only where its title, authors and year could be checked against a public record (an older work
cited as it is commonly cited, its venue unchecked, says so: ``Paper.checked``); a method known to the project by
its name and idea alone has no ``Paper`` and says so (NOT_CONFIRMED) rather than carry an invented one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    title: str
    authors: str
    year: int
    where: str  # arXiv id, journal or proceedings
    checked: bool = True  # False: cited as it is commonly cited; its venue details were not checked here

    def markdown(self) -> str:
        where = f"[arXiv {self.where[6:]}](https://arxiv.org/abs/{self.where[6:]})" if self.where.startswith(
            "arXiv ") else self.where
        note = "" if self.checked else " (as commonly cited; venue and pages not confirmed here)"
        return f"{self.authors}, *{self.title}*, {self.year}, {where}{note}"


NOT_CONFIRMED = ("not confirmed: the method is known to the project by its name and idea; its title, authors "
                 "and arXiv id could not be checked here")

HOLLAND = Paper("Properties of the bucket brigade algorithm", "J. H. Holland", 1985,
                "Proceedings of the 1st International Conference on Genetic Algorithms, 1-7", checked=False)
BAUM = Paper("Toward a model of intelligence as an economy of agents", "E. B. Baum", 1999,
             "Machine Learning 35, 155-185")
BAUM_DURDANOVIC = Paper("Evolution of cooperative problem solving in an artificial economy",
                        "E. B. Baum, I. Durdanovic", 2000, "Neural Computation 12, 2743-2775")
EOM = Paper("Economy of Minds: Emerging Multi-Agent Intelligence with Economic Interactions",
            "Z. Qi, H. Su, A. Qu, C. Wang et al.", 2026, "arXiv 2606.02859")
DEEPSEEKMATH = Paper("DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models",
                     "Z. Shao, P. Wang, Q. Zhu et al.", 2024, "arXiv 2402.03300")
PPO = Paper("Proximal Policy Optimization Algorithms", "J. Schulman, F. Wolski, P. Dhariwal, A. Radford, O. Klimov",
            2017, "arXiv 1707.06347")
GAE = Paper("High-Dimensional Continuous Control Using Generalized Advantage Estimation",
            "J. Schulman, P. Moritz, S. Levine, M. Jordan, P. Abbeel", 2015, "arXiv 1506.02438")
XCS = Paper("Classifier fitness based on accuracy", "S. W. Wilson", 1995, "Evolutionary Computation 3(2), 149-175")
SHAPLEY = Paper("A value for n-person games", "L. S. Shapley", 1953,
                "Contributions to the Theory of Games II, Annals of Mathematics Studies 28, 307-317", checked=False)
VICKREY = Paper("Counterspeculation, auctions, and competitive sealed tenders", "W. Vickrey", 1961,
                "Journal of Finance 16(1), 8-37", checked=False)
WILLIAMS = Paper("Simple statistical gradient-following algorithms for connectionist reinforcement learning",
                 "R. J. Williams", 1992, "Machine Learning 8, 229-256", checked=False)


@dataclass(frozen=True)
class Method:
    name: str
    registry: str  # a key of REGISTRIES
    papers: tuple[Paper, ...]  # () : NOT_CONFIRMED
    implements: str
    leaves_out: str
    logs: tuple[str, ...] = ()  # metric names the method itself adds (an objective's stats, a summary's keys)


REGISTRIES = {
    "credit": "Credit estimators (`agents.credit`)",
    "objective": "Policy objectives (`agents.objective`)",
    "tasks": "Task samplers (`agents.tasks`)",
    "skills": "Skill credit (`skills.credit`)",
    "skills_mechanism": "The skill library's other mechanisms (`[skills]`)",
    "bid_scheme": "Bids (`market.bid_scheme`)",
    "bid_objective": "Learned bids (`agents.bid_objective`)",
    "clearing": "Clearing (`market.clearing`)",
    "payment": "Payment (`market.payment`)",
    "economy": "The economy's population mechanisms (`[population]`)",
}

GRPO_STATS = ("policy_loss", "ratio", "kl")
NOTHING_RECORDED = ("nothing recorded: built from the method's description; differences from its authors' code are "
                    "not known")
OUTCOME = "the run's outcome metrics only (the advantage feeds the objective, whose stats are logged)"


def _m(name, registry, papers, implements, leaves_out, logs=()):
    return Method(name, registry, tuple(papers), implements, leaves_out, tuple(logs))


METHODS: tuple[Method, ...] = (
    # --- credit estimators
    _m("grpo", "credit", [DEEPSEEKMATH], "the group-relative outcome advantage (r - mean)/(std + eps), the same for "
       "every step of a rollout", "the paper's process-supervision variant and its KL term (the KL is the objective's)"),
    _m("bucket_brigade", "credit", [HOLLAND, BAUM], "each winner's step profit read off the ledger: payment received "
       "from the next winner, plus reward, minus the price paid", "Holland's strength update and tax on every rule "
       "(the market's rent and wealth tax play that part); no normalisation"),
    _m("proas", "credit", [], "a reference graph of transitions seen in successes, kept online; steps that are in it "
       "or advance progress are shielded from a negative advantage; a failure's penalty spread by future drift",
       "the reported comparison with reward shaping; the reference graph is pruned by a deterministic hash, not "
       "learned"),
    _m("traj_graph", "credit", [], "the group's rollouts merged by exact state key; Bellman backups of the outcome "
       "give node values; step advantage = value(next) - value(state), normalised over a node's outgoing edges",
       "embedding clustering of near-identical states (exact keys only)"),
    _m("knowgpo", "credit", [], "steps grouped by the set of satisfied task conditions; process reward = gain in "
       "satisfied conditions, mixed with the outcome (omega = 0.3)", "conditions extracted by a model: the world "
       "supplies them"),
    _m("casi", "credit", [SHAPLEY], "exact Shapley values of a step's sub-actions (m <= 5) from cached coalition "
       "results, then bounded zero-sum shaping per rollout", "sampled Shapley for m > 5"),
    _m("delta_ttg", "credit", [], "a progress meter's drop c_t - c_{t+1} spreads the rollout's advantage over its "
       "steps, sign-aware, mixed with uniform (rho = 0.2), capped (M = 5)", "training the meter by regression inside "
       "the estimator: the world's exact meter is used"),
    _m("taspo", "credit", [], "the outcome's sign and sum kept; per-step weights in [1 - eps, 1 + eps] with mean 1 "
       "from a tanh of centred action scores", "-"),
    _m("depgpo", "credit", [], "a read/write dependency graph walked back from the checked steps; only steps the "
       "outcome depends on share its advantage", "-"),
    _m("graph_grpo", "credit", [], "the outcome advantage propagated back over dependency edges with one "
       "coefficient per edge kind, refitted per group by ridge regression", "coefficients trained with the policy "
       "loss (an estimator cannot reach the loss)"),
    _m("draco", "credit", [], "per-step quality from the pass/fail of the criteria a step owns; winners weighted by "
       "quality, losers by its complement; sum and sign kept", "a judge's k = 3 votes: the world's checks decide"),
    _m("triage", "credit", [], "step labels (progress, exploration, no-op, regression) with fixed process rewards "
       "added to the outcome advantage", "the paper's labeller: labels come from the world's progress signal; +0.5 "
       "for progress is Catallax's choice"),
    _m("scpo", "credit", [], "a failed step close (MiniLM cosine >= 0.9) to a successful sibling's step gets the "
       "successes' mean advantage", "-"),
    _m("steppo", "credit", [GAE], "return-to-go over steps with a per-step group baseline; the step as the unit of "
       "the MDP, its ratio length-normalised", "a learned value function (gamma = lambda = 1, outcome only)"),
    _m("cast", "credit", [], "an exact solver's state value; a step earns the change it makes", "no outcome term"),
    _m("mcgpo", "credit", [], "actions compared within matched (progress, state summary) contexts, estimated from "
       "the opposite fold, shrunk by n / (n + kappa)", "-"),
    _m("skillgate", "credit", [], "separate channels: selection steps credited +1/0 for choosing the right skill or "
       "agent, centred, no std; execution steps keep the outcome advantage", "-"),
    _m("credo", "credit", [], "stage rewards from intermediate evidence redistribute the outcome's weight, total "
       "conserved; an all-failed group still learns from evidence", "-"),
    _m("grse", "credit", [], "group-relative (agent, skill) attribution: a joint ridge fit of the advantage on "
       "centred skill-use columns with participation as nuisance columns", "the typed failure taxonomy's LLM "
       "diagnoser is optional (a rule diagnoser reads the trace's checks)"),
    _m("workrover_vtca", "credit", [], "a deterministic checker's per-turn progress gain, a share handed back to the "
       "earlier turns whose artifact it built on, centred and joined to the outcome", "-"),
    _m("sid_span", "credit", [], "a frozen retriever runs each query; above the group's mean, only the queries that "
       "hit (and non-query steps) keep the advantage", "-"),
    _m("abseeker", "credit", [], "a rubric scores each search step against the clue chain (+0.8 / -0.8 / 0), "
       "discounted (gamma = 0.25), centred, joined to the outcome", "the method's SFT term weighted by sigmoid(score)"),
    _m("pacpo", "credit", [], "paired worlds differing in one private condition; potential-based shaping on the "
       "divergence of what each state's standing submission would pay in either world", "-"),
    _m("dars", "credit", [], "soft planner/renderer credit from the within-plan outcome variance, plus a "
       "prefix-gated plan reward", "sampling extra plans and renders: the group's own repeats are read"),
    _m("self_credit", "credit", [], "the turns a compaction cites carry the outcome's advantage, dropped turns a "
       "quarter; failing searches repeated by failed siblings (Jaccard of retrieved ids) take 1.5x the blame",
       "annealing the repeated-failure weight over training (a setting here)"),
    # --- objectives
    _m("grpo", "objective", [DEEPSEEKMATH, PPO], "the clipped step-level surrogate with a length-normalised ratio and "
       "an optional k3 KL to a reference", "token-level ratios (the step is the unit)", GRPO_STATS),
    _m("empo", "objective", [], "completions with the same effect share one length-normalised ratio inside the "
       "clip", "-", ("effects",)),
    _m("tppo", "objective", [], "a token-level critic as cumulative logits, BCE on the outcome; a token earns its "
       "value change", "-", ("policy_loss", "critic_loss", "value")),
    _m("pact", "objective", [], "actor then critic, importance-corrected critic targets, BCE critic (GAE lambda = "
       "1)", "-", ("policy_loss", "critic_loss", "target")),
    _m("tree_opsd", "objective", [], "M rollouts + N prefix branches; a Bernoulli teacher from the tree's values "
       "against the step's ratio, forward KL", "-", ("policy_loss", "teacher", "student")),
    _m("eapo", "objective", [], "entropy-asymmetric token weights: unsure tokens of successes boosted, sure tokens "
       "of failures penalised", "-", ("policy_loss", "weight")),
    _m("focus", "objective", [], "branch where the critic's expected error drops most; blend critic and rollout "
       "mean by kappa / (kappa + n)", "-", ("critic_loss", "value", "rollouts")),
    _m("sero", "objective", [], "imitation of an executable oracle's continuation from reached states, weighted by "
       "the frozen policy's likelihood of its prefix", "-", ("oracle_loss", "oracle_steps")),
    _m("ca_pg", "objective", [], "the recall stage trained for the probability that its list contains the item "
       "(with-replacement bound), and its TOP1 variant", "the exact without-replacement probability (no closed "
       "form)", ("policy_loss", "hit")),
    _m("agentopsd", "objective", [], "a privileged teacher's per-turn log-prob gap drives a decayed Bayesian "
       "belief; turns that move it get more of the advantage, gated by B(1 - B)", "-",
       ("teacher_gap", "belief", "weight_max")),
    _m("trial", "objective", [], "turns rescored with the outcome in context; the signed gap gives turn weights "
       "with token-weighted mean 1", "-", ("hindsight_gap", "weight_max")),
    _m("alignopsd", "objective", [], "the teacher's gap at a turn against the same step of the task's other "
       "rollouts, matched by embedding cosine; spans cut at JSD jumps", "-", ("teacher_gap", "contrast", "matched")),
    _m("cepo", "objective", [], "token credit = log-prob with the correct answer minus with a failed sibling's, "
       "stop-grad, anchored to the outcome's sign", "the linear decay of lambda over training",
       ("policy_loss", "ratio", "weight_max")),
    _m("h2sd", "objective", [], "successes scaled by the informed teacher's likelihood; failures pulled to the "
       "teacher (reverse KL)", "the rephrasing model: the world's correct output, as it states it, is the teacher's prompt", ("reverse_kl", "success_weight_max")),
    _m("hint_sd", "objective", [], "feedback placed before the located failing steps; only those distilled",
       "an analyser model that writes the feedback: the world's fault locator places it and the correct output is the "
       "feedback; the teacher is an EMA of the policy, as in the method", ("located", "hint_reverse_kl")),
    _m("distil", "objective", [], "forward cross-entropy on the teacher's own verified samples with feedback in "
       "context", "-", ("teacher_samples", "teacher_verified")),
    _m("rredcot", "objective", [], "the reward redistributed over segments (one per reply) by how each moved the "
       "belief in the reference answer", "keyword and entropy segmentation; KV-cache reuse",
       ("belief_gain", "weight_max")),
    _m("stop_segment", "objective", [], "each commitment credited by whether it moved the belief toward the gold "
       "answer; redundant re-checks penalised", "a learned commitment extractor", ("belief_gain",)),
    _m("evidence_diagnosis", "objective", [], "faulty steps located by belief drift and grounding, rewritten "
       "against a rubric (cross-entropy), harmful drift penalised", "a separate SFT phase (one loss here)",
       ("located", "rubric_samples", "rewrites")),
    _m("diamond_sd", "objective", [], "a state lattice over order-free sub-goals; the first step leaving the "
       "success-reachable region is supervised from the agents' own verified success", "retrieval from an "
       "external store of trajectories", ("breakpoints", "recovery_steps")),
    _m("process_branching", "objective", [], "branch where entropy plus future likelihood gain is high; initial "
       "and branch rollouts normalised apart; future-aware advantage clipped at Omega", "-",
       ("critic_loss", "branch_steps")),
    _m("contextpilot", "objective", [], "extra branches at context edits; a snapshot's value is the mean reward of "
       "its continuations", "the planning and memory tools", ("edit_steps", "branch_steps")),
    # --- task samplers
    _m("uniform", "tasks", [], "every task equally likely, with replacement: the baseline", "a baseline or ablation of Catallax's own: no paper"),
    _m("rods", "tasks", [], "a buffer of live tasks drawn by reward variance; mastered and hopeless tasks retired",
       "synthesising isomorphic variants is the scenario's (a variant function it passes in)"),
    _m("scrl", "tasks", [], "a ladder of verifiable sub-problems per task, half of every draw from the ladder, "
       "rewards normalised per sub-problem", "-"),
    # --- skill credit
    _m("grse", "skills", [], "G full team rollouts per question; a joint ridge fit of the outcome on centred "
       "(agent, skill) use; support counted by distinct questions; typed diagnosis and an edit per blamed skill",
       "the paper's LLM critic baseline (MASkills) is not shipped; its prune threshold is a setting",
       ("edits_proposed", "edits_accepted", "edits_rejected", "edit_passes")),
    _m("presence", "skills", [], "presence-based credit: a skill's mean outcome when used; the baseline "
       "group-relative credit is measured against", "-", ("edits_proposed", "edits_accepted", "edits_rejected")),
    _m("memory_shapley", "skills", [SHAPLEY], "each skill's Shapley value from replays of the validation problems "
       "with subsets of the library (exact up to 4 skills, else 8 random orders); optional retrieval by overlap "
       "plus utility", "rules induced from cases (the items are the scenario's skills); "
       "similarity by word overlap rather than embeddings", ("edits_proposed", "edits_accepted", "edits_rejected")),
    _m("random", "skills", [], "skills to edit drawn at random: what the gate alone buys", "a baseline or ablation of Catallax's own: no paper",
       ("edits_proposed", "edits_accepted", "edits_rejected")),
    _m("none", "skills", [], "no edit pass: the library stays as it is", "a baseline or ablation of Catallax's own: no paper"),
    _m("gate", "skills_mechanism", [], "a candidate library replaces the current one only if a one-sided paired "
       "sign-flip test on fixed validation questions with common seeds passes; prunes get a one-standard-error "
       "allowance", "the held-out-reward tolerance rule of MASkills (0.02) is replaced by the test",
       ("edits_accepted", "edits_rejected")),
    _m("flowright", "skills_mechanism", [], "the trace of a team rollout as a DAG of role invocations; each role's "
       "share of failed nodes is a light penalty on the outcome (skills/workflow.py)", "-"),
    _m("imitation", "skills_mechanism", [], "blame moved to the line a failed output imitates (log-probability of "
       "the failed output against the correct one, each line shown alone)", "Catallax's own: no paper"),
    # --- market mechanisms
    _m("fixed", "bid_scheme", [EOM], "every agent bids base_bid", "nothing: EoM's scheme as described"),
    _m("fixed_with_eps", "bid_scheme", [EOM], "a newcomer bids the highest bid plus eps, then keeps it", "nothing: EoM's scheme as described"),
    _m("holland", "bid_scheme", [HOLLAND, EOM], "bid = max(base_bid, c x wealth), c = 0.1", "EoM's threshold (bid by wealth only once wealth >= 5): the floor base_bid plays that part"),
    _m("policy", "bid_scheme", [], "the policy's own bid (e.g. recsys evolves it)", "Catallax's own: no paper"),
    _m("learned", "bid_scheme", [], "a trained bid head per agent (value or REINFORCE objective); in the spirit of "
       "market-based post-training, whose architecture is not public", "the joint action-and-bid training of that "
       "work; ours is described in concepts/bids.md"),
    _m("value", "bid_objective", [XCS], "each agent bids what its turn is predicted to earn it; the prediction "
       "follows XCS's update (an exponential average per turn, a plain mean over the first 1/eta turns)",
       "XCS's accuracy-based fitness and genetic algorithm (births do that part)"),
    _m("reinforce", "bid_objective", [WILLIAMS], "bids trained through the softmax auction's probability of the "
       "winner, with an entropy bonus", "-"),
    _m("first_price", "clearing", [BAUM], "the highest eligible bid wins and pays its bid; ties at random", "nothing: the rule as it is classically stated"),
    _m("second_price", "clearing", [VICKREY], "the highest bid wins and pays the second-highest", "nothing: the rule as it is classically stated"),
    _m("softmax", "clearing", [], "the winner drawn with probability softmax(bid / temperature)", "Catallax's own: "
       "what REINFORCE bids need"),
    _m("random", "clearing", [], "a uniformly random eligible winner: the no-auction ablation", "a baseline or ablation of Catallax's own: no paper"),
    _m("bucket_brigade", "payment", [HOLLAND, BAUM, EOM], "the winner pays its bid to the previous owner (the "
       "house mints the first payment); the world pays the owner; money conserved in an integer ledger",
       "Holland's money creation: the ledger is exact and conserved"),
    _m("final_only", "payment", [], "only the final owner is paid: the ablation that shows credit must flow "
       "backwards", "a baseline or ablation of Catallax's own: no paper"),
    _m("births", "economy", [EOM, BAUM_DURDANOVIC], "exploit (richest agents get a mutated child), explore (a "
       "bankrupt or the poorest agent revised), periodic newcomers, a population floor", "the LLM rewrite of a "
       "skill is the scenario's mutation", ("population",)),
    _m("rent_and_bankruptcy", "economy", [BAUM, EOM], "rent every k episodes and an optional wealth tax; an agent "
       "below zero is bankrupt and removed", "EoM's rollback of survivors' wealth and task replay", ("population",)),
)


def by_registry() -> dict[str, list[Method]]:
    out: dict[str, list[Method]] = {key: [] for key in REGISTRIES}
    for method in METHODS:
        out[method.registry].append(method)
    return out


def markdown() -> str:
    parts = []
    for key, methods in by_registry().items():
        parts.append(f"## {REGISTRIES[key]}\n")
        for m in methods:
            cites = "; ".join(p.markdown() for p in m.papers) or NOT_CONFIRMED
            logs = ", ".join(f"`{x}`" for x in m.logs) or OUTCOME
            parts.append(f"### `{m.name}`\n\n- **Paper**: {cites}\n- **Implemented**: "
                         f"{m.implements}\n- **Left out**: {NOTHING_RECORDED if m.leaves_out == '-' else m.leaves_out}"
                         f"\n- **Logs**: {logs}\n")
    return "\n".join(parts)
