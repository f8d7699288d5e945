"""reasoning-gym's datasets as envworker environments, with no code from the user.

``npx envworker serve reasoning-gym`` serves this module: one environment per dataset in
reasoning-gym's registry (``reasoning_gym.factory.DATASETS``) that builds with its default config,
named ``rg-<dataset>`` in kebab case (``leg_counting`` is ``rg-leg-counting``). Each one has

* **args**: the dataset's config fields with reasoning-gym's defaults, checked by the config's own
  ``validate()`` when the args are parsed (a refused config is the client's 400); ``seed`` and
  ``size`` are not arguments (the episode's seed chooses the task), nor is anything without a JSON
  form (``board_format_opts``) or naming a file on the worker's disk (``data_file``);
* **the task**: ``reset(seed=s)`` is reasoning-gym's ``create_dataset(name, seed=0, size=N,
  **args)[s % N]`` (``index=i`` asks for item ``i``); N is 2**31 except for the four datasets
  whose construction does work per item (:data:`SIZES`). Datasets are built once per args and
  kept (:class:`_Cache`), so a reset costs one item, not a dataset. Python's global ``random`` is
  seeded from the item first (:func:`global_seed`): list_functions draws from it;
* **the system prompt**: reasoning-gym's default (``reasoning_gym.utils.SYSTEM_PROMPTS["default"]``,
  which asks for ``<answer>...</answer>``);
* **the reward** ``score_answer``: the dataset's own ``score_answer`` on the answer extracted from
  the completion as reasoning-gym's evaluations extract it (``reasoning_gym.utils.extract_answer``,
  the last ``<answer>`` block); an answer that makes ``score_answer`` raise scores 0. Where that
  scorer pays for a hack (a constant answer, any text), a hardened one scores instead
  (:data:`._hardened.HARDENED`); the argument ``faithful: true`` keeps reasoning-gym's own.

The example's ``info`` is ``{"dataset", "index"}``: ``POST /score`` with it (and the episode's
args) regenerates the same entry and gives the episode's reward, and a client's info can name an
item and nothing else (no metadata of its own for ``score_answer`` to chew on).

Five datasets choose with ``random.choice(list(a_set_of_strings))``, so their tasks depend on
Python's string hashing (:data:`HASH_DEPENDENT`): the same seed is the same task only in processes
with one ``PYTHONHASHSEED``. envworker's Python workers run with ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import json
import os
import random
import re
import sys
import sysconfig
import tempfile
import warnings
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..authoring import ArgsError, Environment, Example, Reward, SetupError
from ._config_args import ConfigField, args_class, config_fields, config_kwargs
from ._hardened import HARDENED

PREFIX = "rg-"
#: The virtual size of a dataset: how many distinct items the seeds reach (``seed % N``). Below
#: 2**32, because pool_matrix seeds numpy with ``seed + index``.
VIRTUAL_SIZE = 2**31
#: Datasets whose construction does work per item (a table of ``size`` entries, or the questions
#: themselves), with the size they are built at: acre draws its questions up front (about 1 ms
#: each), word_ladder refuses more than 20000, list_functions and gsm_symbolic keep a list of
#: ``size`` task choices.
SIZES = {"acre": 1000, "word_ladder": 20000, "list_functions": 2**20, "gsm_symbolic": 2**20}
#: Config fields that are not arguments, and why.
NOT_ARGS = {
    "seed": "the episode's seed chooses the task",
    "size": "the episode's seed chooses the task",
    "data_file": "a file on the worker's disk",
}
#: Arguments of the catalog's own, beside the config's: ``faithful`` scores with reasoning-gym's
#: own ``score_answer`` where :data:`HARDENED` has a scorer that pays only for the task (for parity
#: with reasoning-gym's published numbers); it changes no task.
CATALOG_ARGS = (("faithful", bool, False),)
_CATALOG_NAMES = frozenset(name for name, _, _ in CATALOG_ARGS)
#: Datasets whose tasks depend on Python's string hashing (tests/test_reasoning_gym.py checks the list).
#: list_functions is not among them: it also drew from the global random (see :func:`global_seed`).
HASH_DEPENDENT = frozenset({"isomorphic_strings", "knight_swap", "polynomial_multiplication", "ransom_note", "word_ladder"})
#: How many datasets and entries one worker keeps (a dataset per args; the entries just drawn, so
#: that scoring an episode does not draw its item again).
MAX_DATASETS = 64
MAX_ENTRIES = 1024

def install_hint(python: str = sys.executable) -> str:
    """What to run when reasoning-gym is missing from the workers' interpreter, in one line: pip into
    it, or, where pip may not install (PEP 668: Debian's python3), a venv every user can read."""
    head = f"reasoning-gym is not installed in {python}, the Python the workers run on (ENVWORKER_PYTHON; the server's first line says why this one)"
    managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) and sys.prefix == sys.base_prefix
    if not managed:
        return f"{head}: install it there with `{python} -m pip install reasoning-gym`, or set ENVWORKER_PYTHON to a Python that has it"
    return (
        f"{head}, and pip may not install into that one (PEP 668): make a venv every user can read and name it: "
        f"`{python} -m venv /opt/envworker-python && /opt/envworker-python/bin/pip install reasoning-gym`, "
        "then `export ENVWORKER_PYTHON=/opt/envworker-python/bin/python` (Debian: apt-get install python3-venv)"
    )


def _matplotlib_dir() -> None:
    """reasoning-gym imports matplotlib (through cellpylib), which refuses to start without a
    writable directory for its config and cache. envworker's confined worker has no HOME and no
    /tmp; /dev/shm is bubblewrap's own tmpfs there, so matplotlib gets a folder in it."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    try:
        tempfile.gettempdir()  # matplotlib falls back to a temporary folder by itself
        return
    except FileNotFoundError:
        pass
    if os.access("/dev/shm", os.W_OK):
        os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="matplotlib-", dir="/dev/shm")


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """reasoning-gym's import says a dozen lines every worker start that are not the user's to act on:
    cellpylib's SyntaxWarnings (compiled anew: the worker writes no bytecode), Fontconfig's complaints
    from matplotlib's font scan (the worker has no font cache to write). Its errors are exceptions."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _import_reasoning_gym() -> Any:
    _matplotlib_dir()
    try:
        with _quiet_stderr():
            import reasoning_gym
    except ImportError as err:
        if err.name not in ("reasoning_gym", None):
            raise  # reasoning-gym is there but one of its own imports failed: that error says more
        raise SetupError(install_hint()) from None
    return reasoning_gym


def env_name(dataset: str) -> str:
    """The environment's name for a reasoning-gym dataset: ``rg-`` and the name in kebab case."""
    return PREFIX + dataset.replace("_", "-").lower()


def global_seed(dataset: str, index: int) -> str:
    """What Python's global random is seeded with before item ``index`` of ``dataset`` is drawn."""
    return f"{dataset}:{index}"


def _camel(dataset: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_\W]+", dataset) if part)


class _Cache:
    """A bounded least-recently-used map."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: "OrderedDict[Any, Any]" = OrderedDict()

    def get(self, key: Any, make: Any) -> Any:
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        value = make()
        self.items[key] = value
        if len(self.items) > self.limit:
            self.items.popitem(last=False)
        return value


_datasets = _Cache(MAX_DATASETS)
_entries = _Cache(MAX_ENTRIES)


class Served:
    """One reasoning-gym dataset as an environment: its args, how its items are drawn and scored."""

    def __init__(self, rg: Any, dataset: str) -> None:
        self.rg = rg
        self.dataset = dataset
        self.dataset_cls, self.config_cls = rg.factory.DATASETS[dataset]
        self.size = SIZES.get(dataset, VIRTUAL_SIZE)
        self.fields, self.fixed = config_fields(self.config_cls, NOT_ARGS)
        self.args_cls = args_class(f"{_camel(dataset)}Args", self.fields, self._check, CATALOG_ARGS)
        # The default config must pass its own validate(): the catalog lists a dataset that fails
        # (composite needs datasets named) instead of serving one whose every reset fails.
        self.args_cls()

    # -- args ------------------------------------------------------------------------------------

    def _config(self, args: Any) -> Any:
        return self.config_cls(**config_kwargs(args, self.fields), seed=0, size=self.size)

    def _check(self, args: Any) -> None:
        try:
            config = self._config(args)
            if callable(getattr(config, "validate", None)):
                config.validate()
        except ArgsError:
            raise
        except (AssertionError, ValueError, TypeError, KeyError) as err:
            raise ArgsError(f"reasoning-gym's {self.dataset} refuses these args: {err or type(err).__name__}") from None

    @staticmethod
    def args_key(args: Any) -> str:
        """The config's args (the catalog's own left out: they choose no task)."""
        config = {k: v for k, v in dataclasses.asdict(args).items() if k not in _CATALOG_NAMES}
        return json.dumps(config, sort_keys=True)

    # -- items -----------------------------------------------------------------------------------

    def dataset_for(self, args: Any) -> Any:
        key = (self.dataset, self.args_key(args))
        return _datasets.get(key, lambda: self.dataset_cls(config=self._config(args)))

    def entry(self, args: Any, index: int) -> Dict[str, Any]:
        """reasoning-gym's item ``index`` of this dataset with ``args`` (drawn once, then kept)."""
        key = (self.dataset, self.args_key(args), index)
        return _entries.get(key, lambda: self._draw(args, index))

    def _draw(self, args: Any, index: int) -> Dict[str, Any]:
        # list_functions draws some numbers from Python's global random, which every process seeds
        # at random: seeded here from the item (a string seed hashes the same in every process).
        random.seed(global_seed(self.dataset, index))
        return self.dataset_for(args)[index]

    def index_of(self, seed: int, index: Optional[int]) -> int:
        if index is None:
            return seed % self.size
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.size:
            raise ValueError(f"index must be an integer from 0 to {self.size - 1} ({self.dataset} has {self.size} items)")
        return index

    def generate(self, ctx: Any) -> Example:
        index = self.index_of(ctx.seed, ctx.index)
        entry = self.entry(ctx.args, index)
        answer = entry.get("answer")
        return Example(
            prompt=str(entry["question"]),
            answer="" if answer is None else str(answer),
            info={"dataset": self.dataset, "index": index},
            id=index,
        )

    # -- the reward ------------------------------------------------------------------------------

    def item_of(self, info: Any) -> int:
        """The item a client's info names (only that: anything else in it is ignored)."""
        if not isinstance(info, dict) or info.get("dataset") != self.dataset:
            raise ValueError(f'info must be the example\'s: {{"dataset": "{self.dataset}", "index": N}}')
        return self.index_of(0, info.get("index"))

    def score(self, completion_text: str, info: Dict[str, Any], args: Any) -> float:
        entry = self.entry(args, self.item_of(info))
        answer = self.rg.utils.extract_answer(completion_text)
        hardened = None if args.faithful else HARDENED.get(self.dataset)
        score_answer = hardened.score if hardened else self.dataset_cls.score_answer
        try:
            # A copy: a score_answer that edits its entry must not change the kept one.
            return float(score_answer(self.dataset_for(args), answer, copy.deepcopy(entry)))
        except Exception:  # noqa: BLE001
            # Some score_answer functions raise on an answer they cannot read (prime_factorization
            # on a word): that is a wrong answer, not the environment failing.
            return 0.0

    def environment(self) -> Environment:
        doc = inspect.getdoc(self.dataset_cls) or ""
        summary = doc.split("\n\n")[0].replace("\n", " ").strip()
        description = f"reasoning-gym's {self.dataset}" + (f": {summary}" if summary else "")
        return Environment(
            name=env_name(self.dataset),
            description=description,
            version=_version(),
            args=self.args_cls,
            generate=self.generate,
            system_prompt=self.rg.utils.SYSTEM_PROMPTS["default"],
            max_turns=1,
            rubric=[Reward("score_answer", self.score)],
            documentation_url="https://github.com/open-thought/reasoning-gym",
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reasoning-gym")
    except PackageNotFoundError:
        return "0.0.0"


def build(datasets: Optional[List[str]] = None) -> Tuple[Dict[str, Served], Dict[str, str]]:
    """The served datasets (name to :class:`Served`) and the ones not served, with why. ``datasets``
    selects (reasoning-gym's names, or environment names); unknown names are a ValueError."""
    rg = _import_reasoning_gym()
    from . import _answer_guard

    _answer_guard.install()
    registry = sorted(rg.factory.DATASETS)
    if datasets is None:
        chosen = registry
    else:
        by_env = {env_name(d): d for d in registry}
        chosen = []
        unknown = []
        for d in datasets:
            name = d if d in rg.factory.DATASETS else by_env.get(d)
            (chosen if name else unknown).append(name or d)
        if unknown:
            raise ValueError(f"reasoning-gym has no dataset {', '.join(unknown)} (it has {', '.join(registry)})")
    served: Dict[str, Served] = {}
    skipped: Dict[str, str] = {}
    for dataset in chosen:
        try:
            served[dataset] = Served(rg, dataset)
        except Exception as err:  # noqa: BLE001 (a dataset that cannot build is listed, not fatal)
            skipped[dataset] = f"its default config is refused: {type(err).__name__}: {err}"
    return served, skipped


SERVED, NOT_SERVED = build()
#: What ``envworker serve reasoning-gym`` serves: every dataset that builds with its default config.
environments = [s.environment() for s in SERVED.values()]
