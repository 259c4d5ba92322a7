"""What each planted skill costs on this world, and whether the validation set could see it.

A planted skill is meant to hurt, but how much it hurts depends on the data: a list cut to five items costs little
where the targets sit at the top anyway. A pruning rate over planted skills that did no measurable harm says as
much about the operators planted as about the credit. So each one is measured at the start, before any edit:

* **harm**: the start library without the skill minus the start library, NDCG@k per test user, paired (held-out:
  no arm ever reads these users), its mean and a 95% interval (mean ± 1.96 standard errors);
* **power**: the chance that the gate's test (one-sided, at ``skills.confidence``) on the validation users sees a
  gain as large as that harm from pruning it: ``Phi(harm / se_v - z_c)``, ``se_v`` the standard error of the same
  paired difference on the validation users, ``z_c`` the normal quantile of the confidence;
* **detectable**: power at least :data:`DETECTABLE` (0.8, the usual design power). Pruning statistics count only
  detectable planted skills; the others are reported as undetectable on that world.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from scenarios.recsys.data import TEST, VALIDATION
from scenarios.recsys.pipeline import Compiled

DETECTABLE = 0.8


def _paired(pipe, skills: list, without: list, users: np.ndarray) -> tuple[float, float]:
    d = pipe.run(Compiled.of(without), users).ndcg - pipe.run(Compiled.of(skills), users).ndcg
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0


def measure(world, skills: list, planted: list[str], confidence: float) -> list[dict]:
    """One row per planted skill the start library ``skills`` holds: harm (test), its 95% interval, the validation
    difference and standard error, the gate's power and whether it is detectable."""
    pipe, data = world.pipeline, world.data
    z = float(stats.norm.ppf(confidence))
    out = []
    for name in planted:
        if not any(s.name == name for s in skills):
            continue
        without = [s for s in skills if s.name != name]
        harm, se = _paired(pipe, skills, without, data.users(TEST))
        gain_v, se_v = _paired(pipe, skills, without, data.users(VALIDATION))
        power = float(stats.norm.cdf(harm / se_v - z)) if se_v > 0 else float(harm > 0)
        out.append({"skill": name, "harm": round(harm, 6), "low": round(harm - 1.96 * se, 6),
                    "high": round(harm + 1.96 * se, 6), "validation_gain": round(gain_v, 6),
                    "validation_se": round(se_v, 6), "power": round(power, 4), "detectable": power >= DETECTABLE})
    return out
