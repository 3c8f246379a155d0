"""The code's shape, read from the source (nothing imported): no import circle between the modules
of kps/, kernels/ and ops/ (imports inside functions count: a lazy import is still a dependency),
and the packages' layering: kps imports nothing from kernels or ops, kernels nothing from ops.

`from kernels import config` is an edge into the module `kernels.config`; `from kernels import
capturing` (a name the package gives) one into the package's `__init__`."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("kps", "kernels", "ops")

def _modules() -> dict:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return found


def _imported(name: str, path: pathlib.Path, mods) -> set:
    """The project's modules `name` imports, anywhere in the file: `from pkg import x` is an edge
    into the module `pkg.x` where there is one, else into `pkg` (relative imports resolved)."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    dotted = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            dotted.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            dotted.update(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names)
    out = set()
    for d in dotted:
        while d and d not in mods:  # a name inside a module: the module
            d = d.rpartition(".")[0]
        if d and d != name:
            out.add(d)
    return out


def _graph() -> dict:
    """module -> the project's modules it imports."""
    mods = _modules()
    return {name: _imported(name, path, mods) for name, path in mods.items()}


def _circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_between_modules():
    circles = _circles(_graph())
    assert not circles, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in circles)


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_packages_are_layered():
    """kps imports nothing from kernels or ops; kernels nothing from ops (at any depth)."""
    banned = {"kps": ("kernels", "ops"), "kernels": ("ops",), "ops": ()}
    for name, deps in _graph().items():
        for dep in deps:
            assert dep.split(".")[0] not in banned[name.split(".")[0]], f"{name} imports {dep}"
