"""The architecture is in the folders: each package imports only the layers below it.

Checked on the source (every import, lazy ones and ``TYPE_CHECKING`` ones included), so a new
import that crosses a boundary fails here. docs/architecture.md draws the same picture.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gatekeeper"

#: package -> the gatekeeper packages its modules may import (their own included).
ALLOWED: dict[str, frozenset[str]] = {
    # the pure core: periods, records, readiness, planning, recovery, validation, errors, clock
    "core": frozenset({"core"}),
    "ledger": frozenset({"core", "ledger"}),
    "report": frozenset({"core", "ledger", "report"}),
    # integrations that observe or emit: below the Luigi adapter, which calls lineage
    "integrations.lineage": frozenset({"core", "ledger", "integrations.lineage"}),
    "integrations.collectors": frozenset({"core", "ledger", "integrations.collectors"}),
    "luigi": frozenset({"core", "ledger", "luigi", "integrations.lineage"}),
    # Delta's task is a GatedTask: its own layer, above the adapter
    "delta": frozenset({"core", "ledger", "luigi", "delta"}),
    # gatekeeper serve's application (the web extra), started by the cli; never the cli
    "web": frozenset({"core", "ledger", "report", "luigi", "web"}),
    "cli": frozenset(
        {
            "core",
            "ledger",
            "report",
            "luigi",
            "integrations.collectors",
            "cli",
            "web",
        }
    ),
}

#: packages that never import Luigi itself (the adapter and what sits on it do)
WITHOUT_LUIGI = ("core", "ledger", "report", "integrations.lineage", "integrations.collectors")


def layer_of(dotted: str) -> str | None:
    """The layer of ``gatekeeper.<dotted>`` (longest ALLOWED key that prefixes it)."""
    best = None
    for layer in ALLOWED:
        if (dotted == layer or dotted.startswith(layer + ".")) and (
            best is None or len(layer) > len(best)
        ):
            best = layer
    return best


def imports(path: Path, *, typing_only: bool = True) -> Iterator[str]:
    """Every module (or ``module.name``) the file imports, absolute, lazy ones included, and
    those under ``if TYPE_CHECKING:`` unless ``typing_only`` is false."""
    tree = ast.parse(path.read_text())
    if not typing_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def gatekeeper_layers(path: Path) -> set[str]:
    """The layers ``path`` imports; ``gatekeeper`` itself (the public API) as ``"__init__"``."""
    found = set()
    for name in imports(path):
        parts = name.split(".")
        if parts[0] != "gatekeeper":
            continue
        rest = ".".join(parts[1:])
        found.add(layer_of(rest) or layer_of(".".join(parts[1:-1])) or "__init__")
    return found


def modules() -> list[Path]:
    """Every module in a layer (not gatekeeper/__init__.py, the public API over all of them,
    nor the empty gatekeeper/integrations/__init__.py)."""
    return sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if p.parent != PACKAGE and p.parent != PACKAGE / "integrations"
    )


def module_layer(path: Path) -> str:
    dotted = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    layer = layer_of(dotted)
    assert layer is not None, f"{path} is in no layer: add its package to ALLOWED"
    return layer


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layering_a_module_imports_only_its_layer_and_below(path: Path) -> None:
    layer = module_layer(path)
    wrong = gatekeeper_layers(path) - ALLOWED[layer]
    assert not wrong, f"{path.relative_to(PACKAGE.parent)} ({layer}) imports {sorted(wrong)}"


@pytest.mark.parametrize(
    "path",
    [p for p in modules() if module_layer(p) in WITHOUT_LUIGI],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_layering_the_core_the_ledger_and_the_report_never_import_luigi(path: Path) -> None:
    assert not [n for n in imports(path) if n == "luigi" or n.startswith("luigi.")]


def test_layering_every_folder_is_a_layer() -> None:
    folders = {
        ".".join(p.relative_to(PACKAGE).parts)
        for p in PACKAGE.rglob("*")
        if p.is_dir() and p.name != "__pycache__"
    } - {"integrations"}
    assert {layer_of(f) for f in folders} <= set(ALLOWED)
    assert all(layer_of(f) for f in folders), folders


#: the period kinds, one module each: each binds to calendars through business.py's BaseKind
KIND_MODULES = ("daily", "hourly", "weekly", "monthly", "quarterly")


def test_layering_each_period_kind_imports_its_calendar_binding() -> None:
    """The binding of a kind to a calendar is an import the graph shows (no hook set at
    import time): each kind's module imports ``core/periods/business.py``."""
    graph = module_graph()
    for kind in KIND_MODULES:
        assert "gatekeeper.core.periods.business" in graph[f"gatekeeper.core.periods.{kind}"]


def import_time_calls(tree: ast.Module) -> Iterator[ast.Call]:
    """The calls a module makes when it is imported (not those inside its functions)."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def test_layering_named_calendars_are_filled_where_used_never_at_import() -> None:
    """``core/periods/registry.py``'s ``DEFINED`` is the one registry of named calendars:
    only the Luigi adapter's calendar config fills it (``use_defined_calendars``), and no module
    fills it, or sets any other hook, when it is imported."""
    fillers, at_import = set(), []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        name = str(path.relative_to(PACKAGE))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "DEFINED.use":
                fillers.add(name)
        at_import += [
            f"{name}: {ast.unparse(call.func)}"
            for call in import_time_calls(tree)
            if ast.unparse(call.func).endswith(("DEFINED.use", "set_binder", "set_definitions"))
        ]
    assert fillers == {"luigi/calendar_config.py"}
    assert not at_import


def test_layering_check_sees_an_import() -> None:
    """The checker itself: it finds imports this repository is known to have."""
    assert "core" in gatekeeper_layers(PACKAGE / "ledger" / "attempts.py")
    assert "integrations.lineage" in gatekeeper_layers(PACKAGE / "luigi" / "attempt_run.py")
    assert "luigi" in gatekeeper_layers(PACKAGE / "delta" / "task.py")
    assert layer_of("luigi.fill.chunks") == "luigi"


def module_graph() -> dict[str, set[str]]:
    """module -> the gatekeeper modules it imports when it runs (lazy imports included;
    annotations-only imports under ``TYPE_CHECKING`` are not imports at run time)."""
    names = {
        ".".join(("gatekeeper",) + p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(
            ".__init__"
        ): p
        for p in PACKAGE.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        graph[name] = set()
        for imported in imports(path, typing_only=False):
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported != "gatekeeper":
                graph[name].add(imported)
    return graph


def test_layering_no_import_cycles() -> None:
    """No module reaches itself through the imports of others (lazy imports included)."""
    graph = module_graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


#: The only modules outside gatekeeper/luigi/fill/ that may import it: the range adapter.
FILL_USERS = {"luigi/range.py", "luigi/range_session.py"}


def test_layering_only_the_range_reaches_into_the_fill_machinery() -> None:
    """Everything that runs or reports periods outside Luigi's own worker lives in
    gatekeeper/luigi/fill/; the rest of gatekeeper does not reach into it (docs/inline.md)."""
    users = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if any(n.startswith("gatekeeper.luigi.fill") for n in imports(path))
        and path.parent.name != "fill"
    }
    assert users == FILL_USERS


def test_layering_the_fill_machinery_never_drives_the_range() -> None:
    for path in (PACKAGE / "luigi" / "fill").glob("*.py"):
        wrong = [
            n
            for n in imports(path)
            if n.startswith(("gatekeeper.luigi.range", "gatekeeper.luigi.gated"))
        ]
        assert not wrong, f"{path.name} imports {wrong}"


# --- Luigi's internals: only gatekeeper/luigi/compat/ touches them ---------------------------
#: Luigi modules whose contents are internals (the worker, luigid's client and protocol, the
#: command line, the run's settings, the execution summary): only compat imports them.
LUIGI_INTERNAL_MODULES = (
    "luigi.worker",
    "luigi.rpc",
    "luigi.interface",
    "luigi.cmdline_parser",
    "luigi.execution_summary",
)
COMPAT = PACKAGE / "luigi" / "compat"


def luigi_private_names() -> set[str]:
    """Every ``_name`` attribute Luigi's own source sets or defines (not dunders)."""
    import luigi

    found: set[str] = set()
    for path in Path(luigi.__file__).resolve().parent.rglob("*.py"):
        text = path.read_text(errors="replace")
        found.update(re.findall(r"\.(_[A-Za-z]\w*)\s*=", text))
        found.update(re.findall(r"def (_[A-Za-z]\w*)\(", text))
    return {name for name in found if not name.startswith("__")}


def private_luigi_uses(source: str, private: set[str]) -> list[str]:
    """Private Luigi uses in ``source``: an import of (or from) an internal module, a ``_name``
    reached from a luigi import or imported from luigi, ``__self__`` of a bound method,
    getattr/hasattr/setattr of a Luigi private name, an attribute named as one of Luigi's
    privates on anything but ``self``/``cls``."""
    tree = ast.parse(source)
    roots: set[str] = set()
    uses: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(LUIGI_INTERNAL_MODULES):
                    uses.append(f"line {node.lineno}: import {alias.name}")
                if alias.name.split(".")[0] == "luigi":
                    roots.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "luigi":
            module = node.module or ""
            names = [f"{module}.{a.name}" for a in node.names]
            uses += [
                f"line {node.lineno}: from {module} import {name.rsplit('.', 1)[1]}"
                for name in names
                if name.startswith(LUIGI_INTERNAL_MODULES) or name.rsplit(".", 1)[1][0] == "_"
            ]
            roots.update(a.asname or a.name for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            root: ast.AST = node
            while isinstance(root, ast.Attribute):
                root = root.value
            dotted = ast.unparse(node)
            private_attr = node.attr.startswith("_") and not node.attr.endswith("__")
            own = isinstance(root, ast.Name) and root.id in ("self", "cls") and root is node.value
            if (
                node.attr == "__self__"
                or (private_attr and isinstance(root, ast.Name) and root.id in roots)
                or (node.attr in private and not own)
                or dotted.startswith(LUIGI_INTERNAL_MODULES)
            ):
                uses.append(f"line {node.lineno}: {dotted}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr", "delattr"}
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private | {"__self__"}
        ):
            uses.append(f"line {node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return sorted(set(uses))


def test_layering_only_compat_touches_luigi_internals() -> None:
    """No module but gatekeeper/luigi/compat/ imports luigi.worker, luigi.rpc,
    luigi.interface, luigi.cmdline_parser or luigi.execution_summary, or names a private
    Luigi attribute: each use is an accessor there, with a probe (test_luigi_compat.py)."""
    private = luigi_private_names()
    found = {
        str(path.relative_to(PACKAGE.parent)): uses
        for path in modules()
        if COMPAT not in path.parents
        if (uses := private_luigi_uses(path.read_text(), private))
    }
    assert not found, f"Luigi internals outside gatekeeper/luigi/compat/: {found}"


@pytest.mark.parametrize(
    "snippet",
    [
        "from luigi.task_register import Register\nRegister._Register__instance_cache\n",
        "import luigi\nluigi.task_register.Register._Register__instance_cache\n",
        "def f(task):\n    return getattr(task.set_status_message, '__self__', None)\n",
        "def f(reporter):\n    return getattr(reporter, '_scheduler', None)\n",
        "def f(worker):\n    worker._add_task_history = []\n",
        "def f(worker):\n    return worker._get_work_response_history\n",
        "from luigi.parameter import _no_value\n",
        "import luigi.worker as w\nw.TaskProcess._run_get_new_deps\n",
        "import luigi.worker\n",
        "import luigi.rpc\n",
        "from luigi.cmdline_parser import CmdlineParser\n",
        "from luigi import interface\n",
        "import luigi\nluigi.execution_summary.summary(w)\n",
        "import luigi\nluigi.interface.core()\n",
    ],
)
def test_layering_private_luigi_uses_finds_the_known_patterns(snippet: str) -> None:
    assert private_luigi_uses(snippet, luigi_private_names()), snippet


def test_layering_private_luigi_uses_leaves_public_api_and_own_attributes_alone() -> None:
    snippet = (
        "import luigi\nimport luigi.scheduler\nfrom luigi.task_register import Register\n"
        "from luigi.scheduler import DONE\n"
        "Register.clear_instance_cache()\nluigi.task_register.load_task('m', 'T', {})\n"
        "class T:\n    def f(self):\n        self._scheduler = 1\n        return self._gk_clock\n"
        "def g(found):\n    return found._gk_recorded\n"
    )
    assert private_luigi_uses(snippet, luigi_private_names()) == []
