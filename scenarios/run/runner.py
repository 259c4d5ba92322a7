"""Run an experiment: build the world and the market, step it, persist, summarise; or resume one."""

from __future__ import annotations

import math
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from agents.backends.factory import USAGE, label, usage
from market import Economy, MarketModel
from market.checkpoint import encode
from market.ledger import LedgerError
from market.population import HOUSE_ROW
from market.store import (RunStore, StoreError, get_run, load_episodes, load_heldout, load_transfers, load_usage,
                          make_engine, shown_url, stored_balances, stored_json)
from scenarios.run.config import ConfigError, Experiment, from_dict
from scenarios.run.curve import Curve
from scenarios.run import trust
from scenarios.run.interrupt import Interrupted, Stop


def default_db(out: Path) -> str:
    return f"sqlite:///{out / 'catallax.db'}"


def conservation_ok(model: MarketModel, replayed: dict[int, int]) -> bool:
    """All accounts sum to zero, and the stored log replayed from zero (``replayed``: balances by account id)
    gives every balance."""
    pop = model.population
    if int(pop.wealth.sum()) != 0:
        return False
    live = np.flatnonzero(pop.alive)
    expected = dict(zip(pop.ids[live].tolist(), pop.wealth[live].tolist()))
    return all(replayed.get(i, 0) == w for i, w in expected.items()) and all(
        v == 0 for i, v in replayed.items() if i not in expected
    )


def build_model(exp: Experiment) -> Economy:
    """The scenario's model for ``exp``, ready to step, with nothing persisted (``run_experiment`` persists).

    Args:
        exp: A validated experiment (``load``).

    Returns:
        A ``mesa.Model`` (``market.model.MarketModel`` for market scenarios; a scenario's own model, such as
        boltzmann's): ``model.step()`` plays one round, ``model.datacollector`` is Mesa's, ``model.ledger`` the money.
    """
    return exp.module.make_model(exp)


def run_experiment(exp: Experiment, db_url: str, progress: bool = True, run_id: str | None = None,
                   sweep: str | None = None, stop: Stop | None = None) -> dict:
    """Build the model first (a config that cannot be built writes nothing), then run and persist it.

    Args:
        exp: A validated experiment (``load``).
        db_url: Where the run is stored: an SQLAlchemy URL (``sqlite:///runs/catallax.db``, ``postgresql://...``).
        progress: Show a progress bar.
        run_id: The run's id (None: a new random one).
        sweep: The sweep the run belongs to, if any.
        stop: Signals caught by the caller (the CLI); the run then ends at a round boundary, checkpointed,
            with :class:`Interrupted`.

    Returns:
        The run's summary: ``run_id``, ``ledger_hash``, ``conservation_ok``, ``transfers``, ``house``, the
        population, and the scenario's own metrics ([summary keys](summary.md)).
    """
    model = build_model(exp)
    store = RunStore.create(db_url, exp.run.scenario, exp.run.seed, exp.to_dict() | trust.stamp(exp.run.scenario),
                            run_id=run_id, sweep=sweep)  # a plugin's hash: what a later resume may import
    return _drive(exp, model, store, [], progress, stop)


def resume_experiment(run_id: str, db_url: str, progress: bool = True, stop: Stop | None = None,
                      take_over: bool = False, scenario: str | None = None) -> dict:
    """Continue a run from its last checkpoint; it ends as the uninterrupted run would have.

    A finished run is not run again: its stored summary is returned and nothing is written.
    ``take_over``: the caller knows the run's last writer died (a sweep task Ray retried); see
    :meth:`RunStore.attach`. ``scenario``: the plugin the user named on the command line, trusted when
    the run names the same one (otherwise a stored plugin must match the hash stored at its start:
    scenarios/run/trust.py). The stored config is read, checked and built into a model before the run's
    lease is taken, and a resume that fails after it releases the lease (the run is then ``failed``)."""
    source = f"run {run_id}"
    engine = make_engine(db_url)
    try:
        row = get_run(engine, run_id)
    finally:
        engine.dispose()
    if row is None:
        raise StoreError(f"run {run_id}: not found in {shown_url(db_url)}")
    if row.status == "finished":
        return _finished(row)
    config = trust.checked(stored_json(row.config, f"{source}: run.config"), source, scenario)
    exp = from_dict(config, source=source)
    model = build_model(exp)
    try:
        store, run, state = RunStore.attach(db_url, run_id, take_over=take_over)
        if run.status == "finished":  # another resume finished it in between
            store.engine.dispose()
            return _finished(run)
        try:
            episodes = []
            if state is not None:  # else: killed before its first checkpoint, so start over with the same run id
                model.load_state_dict(state)
                model.ledger.restore(load_transfers(store.engine, run_id))
                _carry_usage(model, load_usage(store.engine, run_id))
                episodes = load_episodes(store.engine, run_id)
        except BaseException as err:
            store.fail(f"{type(err).__name__}: {err}")
            store.engine.dispose()
            raise
        return _drive(exp, model, store, episodes, progress, stop)
    except (ConfigError, StoreError, Interrupted):
        raise
    except STORED_DATA_ERRORS as err:  # rows that contradict each other (a foreign or edited database): the
        # run is marked failed (its lease released), and this is one line, not a traceback
        first = (str(err).strip().splitlines() or [""])[0][:160]
        raise StoreError(f"run {run_id}: its stored rows do not resume ({type(err).__name__}: {first})") from None


STORED_DATA_ERRORS = (TypeError, ValueError, KeyError, IndexError, OverflowError, SQLAlchemyError, LedgerError)
"""What a resume of inconsistent stored rows raises (a mistyped checkpoint count, an agent row that is not there
at the end); a ConfigError is a ValueError too, and already one line."""


def _finished(run) -> dict:
    when = f" at {run.finished_at:%Y-%m-%d %H:%M:%S}" if isinstance(run.finished_at, datetime) else ""
    print(f"run {run.id} finished{when}; nothing to resume", file=sys.stderr)
    summary = stored_json(run.summary, f"run {run.id}: run.summary")
    if not isinstance(summary, dict):
        raise StoreError(f"run {run.id}: run.summary: not a JSON object")
    return summary


def _drive(exp: Experiment, model: Economy, store: RunStore, episodes: list[dict], progress: bool,
           stop: Stop | None) -> dict:
    """Step to the end; a run that raises is marked failed (and stays resumable from its checkpoint)."""
    try:
        if stop is not None:
            stop.started(store.run_id)
        model.attach(store)  # a model that keeps state in the run database too (recsys: skill libraries)
        return _steps(exp, model, store, episodes, progress, stop)
    except Interrupted:
        store.release("interrupted")
        raise
    except Exception as err:
        try:
            store.fail(f"{type(err).__name__}: {err}")
        except Exception as also:  # noqa: BLE001 (the database itself may be what failed: keep the first error)
            print(f"catallax: could not mark run {store.run_id} failed: {also}", file=sys.stderr)
        raise
    finally:
        store.engine.dispose()  # a sweep worker runs many experiments: leave no connections behind


def _steps(exp: Experiment, model: Economy, store: RunStore, episodes: list[dict], progress: bool,
           stop: Stop | None) -> dict:
    """Step round by round; at each checkpoint (every ``run.checkpoint_every`` rounds or ``run.checkpoint_seconds``,
    a signal's, the last round's) write the rounds since the one before, with it, in one transaction. The learning
    curve's points (scenarios/run/curve.py) are measured between rounds, inside the round's usage, and written with
    the round they follow (the point before the first round with the first)."""
    rounds = math.ceil(exp.run.episodes / exp.market.batch)
    done = model.episodes_done // exp.market.batch
    every, seconds = exp.run.checkpoint_every, exp.run.checkpoint_seconds
    unwritten, since = [], time.monotonic()  # the rounds since the last checkpoint, and when it was written
    bar = _progress(rounds, done, exp.run.scenario) if progress else None
    engines = _engines(model)
    curve = Curve(exp.run.eval_every, exp.run.scenario, rounds, load_heldout(store.engine, store.run_id) if done else [])
    extinct = extinct_at(episodes, exp.market.batch)  # a resumed run said so before
    try:
        for r in range(done, rounds):
            if _stopping(stop):  # a signal came between rounds: checkpoint the rounds so far (if any) and stop
                if unwritten:
                    store.write_rounds(unwritten, encode(model.state_dict()), model.episodes_done)
                raise Interrupted(store.run_id, stop.signum)
            first, before = model.episodes_done, _counters(engines)
            measured = curve.after(model, r)  # before the first round (a resumed run has its stored points)
            model.step()
            model.last_round.heldout = measured + curve.after(model, r + 1)
            model.last_round.usage = _used(engines, before, first)
            unwritten.append(model.last_round)
            episodes += model.last_round.episodes
            if extinct is None and (extinct := extinct_at(model.last_round.episodes, exp.market.batch)) is not None:
                print(f"catallax: warning: the population died out: no live agent at the end of episode {extinct} "
                      "(no one acts in a later episode)", file=sys.stderr)
            if (r + 1 == rounds or (every is not None and (r + 1) % every == 0)
                    or time.monotonic() - since >= seconds or _stopping(stop)):
                store.write_rounds(unwritten, encode(model.state_dict()), model.episodes_done)
                unwritten, since = [], time.monotonic()
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    return _finish(exp, model, store, episodes, curve, extinct)


def extinct_at(episodes: list[dict], batch: int) -> int | None:
    """The episodes done at the end of the first round that left no live agent (its episodes' ``population``), or
    None: the summary's ``population_extinct_at_episode``."""
    first = next((e["episode"] for e in episodes if e.get("population") == 0), None)
    return None if first is None else first - first % batch + batch


def _engines(model: Economy) -> list:
    """The LLM engines the model's agents call: the policy's ``engines()`` (an LLM policy's shared engine and
    those of roles with a model of their own), else its ``backend``, if any."""
    policy = getattr(model, "policy", None)
    policy = getattr(policy, "unwrapped", policy)
    if callable(getattr(policy, "all_engines", None)):
        return policy.all_engines()
    backend = getattr(policy, "backend", None)
    return [backend] if backend is not None and hasattr(backend, "stats") else []


def _counters(engines: list) -> dict[str, tuple]:
    return {name: tuple(row[k] for k in USAGE) for name, row in usage(engines).items()}


def _used(engines: list, before: dict[str, tuple], episode: int) -> list[dict]:
    """The round's usage rows: what each model's counters moved by since ``before`` (none where nothing moved)."""
    rows = []
    for name, now in _counters(engines).items():
        moved = [a - b for a, b in zip(now, before[name])]
        if any(moved):
            rows.append({"episode": episode, "backend": name, **dict(zip(USAGE, moved))})
    return rows


def _carry_usage(model: Economy, stored: dict[str, dict]) -> None:
    """A resumed run's engines start from what the rounds before its checkpoint used, so the counters its summary
    reads (``llm_tokens``, ``backend_seconds``, ``llm_usage``) are the whole run's, as an uninterrupted run's are
    (a model's stored usage goes to its first engine: the summary sums them)."""
    first: dict[str, object] = {}
    for engine in _engines(model):
        first.setdefault(label(engine), engine)
    for name, engine in first.items():
        for key, value in stored.get(name, {}).items():
            setattr(engine.stats, key, getattr(engine.stats, key) + value)


def _progress(rounds: int, done: int, name: str):
    """A progress bar on stderr. Made only when shown: tqdm's lock starts multiprocessing's resource tracker
    (a second Python process) even for a disabled bar."""
    from tqdm import tqdm

    return tqdm(total=rounds, initial=done, desc=name, unit="round", file=sys.stderr)


def _stopping(stop: Stop | None) -> bool:
    return stop is not None and stop.signum is not None


def _finish(exp: Experiment, model: Economy, store: RunStore, episodes: list[dict], curve: Curve,
            extinct: int | None) -> dict:
    """The run's summary, stored with its final balances: the runner's keys, the scenario's metrics, a learner's
    counts and the learning curve (what each key means: scenarios/run/summary_keys.py)."""
    pop = model.population
    live = np.flatnonzero(pop.traders)
    summary = {
        "run_id": store.run_id,
        "scenario": exp.run.scenario,
        "seed": exp.run.seed,
        "episodes": model.episodes_done,
        "ledger_hash": model.ledger.hash,
        "conservation_ok": conservation_ok(model, stored_balances(store.engine, store.run_id)),
        "transfers": model.ledger.count,
        "house": int(pop.wealth[HOUSE_ROW]),
        **exp.module.metrics(model, episodes, exp.scenario),
        **getattr(getattr(model, "policy", None), "report", dict)(),  # a learner's counts (agents/learners/policy.py)
        **curve.summary(),
        "population_extinct_at_episode": extinct,
    }
    ids = pop.ids[live].tolist()
    tokens = dict(zip(ids, pop.tokens[live].tolist()))
    store.finish(summary, dict(zip(ids, pop.wealth[live].tolist())), tokens)
    return summary
