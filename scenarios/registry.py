"""Which scenarios exist, where their code is, and the interface a scenario module offers (version 1).

``[run] scenario`` (and ``catallax run NAME``) names one of

* a built-in scenario (``relay``, ``blocks``, ... below);
* a plugin registered by an installed package under the entry-point group ``catallax.scenarios``
  (``my_world = "my_lab.world"`` in its pyproject's ``[project.entry-points."catallax.scenarios"]``);
* a ``.py`` file (relative to the TOML file that names it, or to the working directory on the
  command line);
* a dotted module path importable from the working directory or ``sys.path`` (``my_lab.world``).

A scenario module provides

* ``Config``: a dataclass, its TOML section (named after the scenario: ``[world]`` for ``world.py`` or
  ``my_lab.world``, the entry point's name for a registered plugin);
* ``metrics(model, episodes, cfg) -> dict``: its part of the run's summary;
* ``build(cfg) -> (world, policy)`` (the market runs them: market.protocols.World and Policy), or
  ``make_model(exp)`` for a model of its own (boltzmann has no auction; recsys runs a team); or, for
  LLM agents, one ``scenarios.text.world.TextWorld`` subclass, for which the framework makes all three
  (scenarios/text/scenario.py);

and optionally

* ``validate(exp)``: how the sections fit together (raise ``ValueError`` naming the key);
* ``defaults(exp) -> dict``: its own defaults for platform keys, given its section (dotted key -> value; recsys's
  market mode: its auction, and the population its agents per role make), applied where the config does not set
  the key and shown by ``catallax config show`` as derived (scenarios/run/derived.py);
* ``SPEC``: a :class:`scenarios.spec.ScenarioSpec`, what its world and agents can do (credit and task signals,
  learned bid features and actions, a skill library, an oracle, branches, value-bid defaults); the config loader
  checks every key a run asks for against it before anything loads;
* ``CATALLAX_API = 1``: the interface version it was written against (refused if this catallax
  speaks another).

:func:`get_scenario` reads a module once into a :class:`Scenario`, defaults filled in, so the rest
of the code calls every hook without asking whether it exists. A module that cannot serve is a
:class:`ScenarioError`, one line naming the file (the CLI exits 2).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np

from market import MarketModel
from market.protocols import Policy, World
from scenarios.spec import LEGACY_FLAGS, ScenarioSpec

API = 1
SCENARIO_DIR = Path(__file__).parent
SCENARIOS = {"blocks": "scenarios.blocks", "relay": "scenarios.relay", "boltzmann": "scenarios.boltzmann",
             "recsys": "scenarios.recsys", "wordmath": "scenarios.wordmath", "procurement": "scenarios.procurement",
             "multihop": "scenarios.multihop", "plangrid": "scenarios.plangrid",
             "longlookup": "scenarios.longlookup", "errands": "scenarios.errands", "review": "scenarios.review",
             "desk": "scenarios.desk"}
ENTRY_POINTS = "catallax.scenarios"


class ScenarioError(ValueError):
    """A scenario that cannot be found or does not offer the interface; the message is one line."""


def _fits(exp) -> None:
    """The default ``validate``: the sections' own checks are all there is."""


def _no_defaults(exp) -> dict:
    """The default ``defaults``: the platform's own defaults for every key."""
    return {}


@dataclass(frozen=True)
class Scenario:
    name: str  # what the config names: a built-in or entry-point name, a file's absolute path, a module path
    section: str  # its TOML section
    origin: str  # the file its code is in, for error messages
    description: str  # the module docstring's first line
    Config: type
    metrics: Callable
    build: Callable | None = None
    own_model: Callable | None = None  # the module's make_model, when it has a model of its own
    validate: Callable = _fits
    plugin: bool = False
    defaults: Callable = _no_defaults
    spec: ScenarioSpec = ScenarioSpec().resolved(own_model=True)  # what it can do, defaults filled in
    heldout_point: Callable | None = None  # model -> {success, reward, ...} on its fixed held-out set (a learning
    # curve's point, ``run.eval_every``; agents/heldout.py): a text world's; None where the world has no such set

    @classmethod
    def of(cls, name: str, module, section: str, plugin: bool) -> Scenario:
        if not (hasattr(module, "build") or hasattr(module, "make_model")):  # one TextWorld class: scenarios/text/world.py
            from scenarios.text.scenario import as_scenario

            try:
                module = as_scenario(module)
            except ValueError as err:  # a text world's module that cannot serve: one line
                raise ScenarioError(str(err)) from None
        origin = getattr(module, "__file__", None) or name
        api = getattr(module, "CATALLAX_API", API)
        if api != API:
            raise ScenarioError(f"{origin}: written for scenario interface {api}; this catallax speaks {API}")
        missing = [k for k in ("Config", "metrics") if not hasattr(module, k)]
        if not (hasattr(module, "build") or hasattr(module, "make_model")):
            missing.append("build (or make_model)")
        if missing:
            raise ScenarioError(f"{origin}: a scenario module defines {', '.join(missing)}; this one does not")
        if not is_dataclass(module.Config):
            raise ScenarioError(f"{origin}: Config must be a dataclass (e.g. pydantic.dataclasses.dataclass)")
        if flags := [k for k in LEGACY_FLAGS if k in vars(module)]:
            fields = ", ".join(f"{LEGACY_FLAGS[k]}=..." for k in flags)
            raise ScenarioError(f"{origin}: {', '.join(flags)}: module flags are no longer read; declare "
                                f"SPEC = ScenarioSpec({fields}) (from scenarios import ScenarioSpec)")
        spec = vars(module).get("SPEC", ScenarioSpec())
        if not isinstance(spec, ScenarioSpec):
            raise ScenarioError(f"{origin}: SPEC is a {type(spec).__name__}; expected a scenarios.ScenarioSpec")
        doc = (module.__doc__ or "").strip().splitlines()
        own = hasattr(module, "make_model")
        return cls(name, section, origin, doc[0] if doc else "", module.Config, module.metrics,
                   getattr(module, "build", None), getattr(module, "make_model", None),
                   getattr(module, "validate", _fits), plugin, getattr(module, "defaults", _no_defaults),
                   spec.resolved(own_model=own),
                   getattr(module, "heldout_point", None))

    def make_model(self, exp):
        """The model an experiment runs: the scenario's own, or the market over its world and policy
        (wrapped in a trained bid head / action logits when the run learns them)."""
        if self.own_model is not None:
            return self.own_model(exp)
        built = self.build(exp.scenario)
        if not (isinstance(built, tuple) and len(built) == 2):
            raise ScenarioError(f"{self.origin}: build(cfg) returned {type(built).__name__}; expected (world, policy)")
        world, policy = built
        if self.plugin:
            self._probe(world, exp.market.batch)
            _default_hooks(world, self.origin)
        key = "token_prices" if exp.market.token_prices else "token_price"
        if getattr(exp.market, key) and getattr(type(policy), "compute", Policy.compute) is Policy.compute:
            raise ScenarioError(f"market.{key} = {getattr(exp.market, key)!r}: scenario {self.name!r}'s policy "
                                f"({type(policy).__name__}) reports no LLM tokens to charge (its compute(), "
                                f"market/protocols.py Policy)")
        if exp.agents.tasks != "world":  # a sampler draws the training tasks (what it draws once: a stream of its own)
            world.draw_tasks(exp.agents.tasks, np.random.default_rng([exp.run.seed, 0x7A5C]),
                             exp.agents.sampler_settings())
        if hasattr(policy, "sampling_seed"):  # an LLM policy: its sampled completions differ from seed to seed
            policy.sampling_seed = exp.run.seed
        if self.spec.skill_library and exp.skills.credit != "none":  # LLM agents' lines: agents/llm/edit_pass.py
            if not hasattr(policy, "evolve_skills"):
                raise ScenarioError(f"{self.origin}: SPEC.skill_library, but its policy has no evolve_skills")
            policy.evolve_skills(exp.skills, exp.agents.group, seed=exp.run.seed)
            if exp.skills.evidence == "training":  # the credit reads the training rounds (a probe groups its own)
                world.group = exp.agents.group  # G consecutive worlds share a question
        if exp.market.bid_scheme == "learned" or exp.agents.actions == "grpo":
            from agents.learners.policy import LearnedPolicy  # imports torch: only runs that learn pay for it

            policy = LearnedPolicy(policy, exp.agents, seed=exp.run.seed, learned_bids=exp.market.bid_scheme == "learned",
                                   completions=self.spec.learned_actions == "lm")
            if exp.agents.needs_groups(exp.market.bid_scheme):
                world.group = exp.agents.group or 1  # G consecutive worlds share a task
        return MarketModel(world, policy, exp.market, exp.population, seed=exp.run.seed)

    def _probe(self, world, batch: int) -> None:
        """A plugin's world, on a copy, before the first round: reset, then one [B, F] numeric observation
        (built-in worlds are held to this by the test suite)."""
        try:
            probe = copy.deepcopy(world)
        except Exception:  # noqa: BLE001 (a world holding what cannot be copied is not probed)
            return
        for hook in ("reset", "observe", "step", "horizon"):
            if not hasattr(probe, hook):
                raise ScenarioError(f"{self.origin}: the world has no {hook} (see market/protocols.py World)")
        probe.reset(batch, np.random.default_rng(0))
        obs = np.asarray(probe.observe())
        if obs.ndim != 2 or obs.shape[0] != batch or not np.issubdtype(obs.dtype, np.number):
            raise ScenarioError(f"{self.origin}: world.observe() gave shape {obs.shape} ({obs.dtype}) for "
                                f"{batch} worlds; expected a numeric [B, F] array with B = market.batch = {batch}")


WORLD_NEEDS = ("reset", "observe", "step", "horizon", "solved")
"""What interface 1 asks of every world; the rest of market.protocols.World is optional hooks with defaults."""


def _default_hooks(world, origin: str) -> None:
    """A plugin world written as a plain class (not a subclass of market.protocols.World) gets the optional
    hooks' defaults a subclass inherits (a checkpoint's ``state_dict``: nothing to carry; ``oracle``: none ...),
    so the market calls them on either alike; one that cannot take them (``__slots__``) is refused, naming one."""
    for name, default in vars(World).items():
        if name.startswith("_") or name in WORLD_NEEDS or hasattr(world, name):
            continue
        try:
            setattr(world, name, types.MethodType(default, world) if callable(default) else default)
        except AttributeError:
            raise ScenarioError(f"{origin}: the world has no {name} (market/protocols.py World) and cannot be given "
                                f"the default; define it, or subclass market.World") from None


def _import(name: str, base: Path | None) -> tuple[str, object, str, bool]:
    """(the name to store, the module, its TOML section, whether it is a plugin) for a scenario reference."""
    if name in SCENARIOS:
        return name, importlib.import_module(SCENARIOS[name]), name, False
    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINTS)}
    try:
        if name in plugins:
            return name, plugins[name].load(), name, True
        if name.endswith(".py"):
            path = Path(name) if Path(name).is_absolute() else (base or Path.cwd()) / name
            if not path.is_file():
                raise ScenarioError(f"{path}: no such scenario file")
            path = path.resolve()
            return str(path), _plugin_file(path), path.stem, True
        if "." in name:
            if str(Path.cwd()) not in sys.path:  # the console script does not put the working directory there
                sys.path.insert(0, str(Path.cwd()))
            if importlib.util.find_spec(name.split(".")[0]) is not None:
                return name, importlib.import_module(name), name.rsplit(".", 1)[-1], True
    except ScenarioError:
        raise
    except Exception as err:  # noqa: BLE001 (the plugin's own import failed: its last line is the news)
        last = (str(err).strip().splitlines() or [""])[-1]
        raise ScenarioError(f"{name}: does not import: {type(err).__name__}: {last}") from None
    known = sorted({*SCENARIOS, *plugins})
    raise ScenarioError(f"unknown scenario (known: {', '.join(known)}; or a .py file or a dotted module path)")


_PLUGIN_FILES: dict[tuple[Path, str], types.ModuleType] = {}
"""(resolved path, sha256 of its bytes) -> the module a .py plugin's file executed: the one import of it per process."""


def _plugin_file(path: Path) -> types.ModuleType:
    """The module of the .py scenario file at ``path`` (resolved), its body executed once per process and content:
    a run names its scenario to the loader, the rules and the runner, and each gets this one module (its
    ``Config`` one class). An edited file is a new key, so it is imported again."""
    key = (path, hashlib.sha256(path.read_bytes()).hexdigest())
    if key not in _PLUGIN_FILES:
        module_name = f"catallax_plugin_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses and pickling look their module up here
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        _PLUGIN_FILES[key] = module
    module = _PLUGIN_FILES[key]
    sys.modules[module.__name__] = module  # the current content's module, where an edit replaced it
    return module


def plugin_names() -> list[str]:
    """The scenarios installed packages register (entry points), without importing any of them."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINTS))


def get_scenario(name: str, base: Path | None = None) -> Scenario:
    """The scenario ``name`` (a built-in, an entry point, a .py file relative to ``base``, a module path)."""
    return Scenario.of(*_import(name, base))


def available() -> list[tuple[str, str, str]]:
    """(name, kind, one-line description) of every scenario that can be named without a path: the
    built-ins, their extra scenario files (``recsys_large.toml``), and the installed plugins."""
    out = []
    for name in sorted(SCENARIOS):
        out.append((name, "built-in", get_scenario(name).description))
    for toml in sorted(SCENARIO_DIR.glob("*.toml")):
        if toml.stem not in SCENARIOS:
            first = next((line.lstrip("# ").strip() for line in toml.read_text().splitlines() if line.startswith("#")), "")
            out.append((toml.stem, "scenario file", first))
    for ep in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        try:
            description = get_scenario(ep.name).description
        except ScenarioError as err:
            description = f"(broken: {err})"
        out.append((ep.name, f"plugin ({ep.value})", description))
    return out
