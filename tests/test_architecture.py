"""The package boundaries of ``docs/architecture.md``, checked on the source: which package
may import which, anywhere in a module (function-level imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: package -> top-level packages of this project it must never import
FORBIDDEN = {
    "hsched_env": ("lp_baseline", "agents", "hsched_cli"),
    "lp_baseline": ("agents", "hsched_cli"),
    "agents": ("hsched_cli",),
}
PROJECT = ("hsched_env", "lp_baseline", "agents", "hsched_cli")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import statement in ``path`` (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """(line, module) of every import statement of ``source``, a module of ``package``."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
    return out


def modules_of(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_import_only_what_they_may(package):
    bad = []
    for path in modules_of(package):
        for line, module in imported_modules(path):
            top = module.split(".")[0]
            if top in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_nothing_imports_the_cli():
    bad = [f"{p.relative_to(ROOT)}:{line}"
           for package in ("hsched_env", "lp_baseline", "agents")
           for p in modules_of(package)
           for line, module in imported_modules(p) if module.split(".")[0] == "hsched_cli"]
    assert not bad, bad


def test_no_module_reads_another_packages_private_names():
    """``from x import _name`` is allowed between sibling modules of one package (a package's
    private helpers), never from another package: a private name is its package's business."""
    bad = []
    for package in PROJECT:
        for path in modules_of(package):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            own = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom):
                    continue
                module = node.module or ""
                if node.level:                       # relative: resolve it against this package
                    base = own.split(".")[:len(own.split(".")) - node.level + 1]
                    module = ".".join(base + ([module] if module else []))
                sibling = module.rsplit(".", 1)[0] == own or module == own
                if module.split(".")[0] not in PROJECT or sibling:
                    continue
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports "
                                   f"{a.name} from {module}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_function_level_and_relative_imports():
    """The walk above would catch an import hidden in a function (it can fail)."""
    source = "def f():\n    from lp_baseline.policy import make_policy\n    from . import text\n"
    assert [m for _, m in imports_in(source, "hsched_env")] == ["lp_baseline.policy",
                                                                "hsched_env"]
