"""Build docs/modules.md, a page per physics module, from the registry of
galaxyview/engines/modules.py (integrators, boundaries, collisions).

For each module and engine kind: the class, its docstring (else its file's), the Params fields
and sheet attributes its file (and the module files it imports) reads, its GPU kernels file and
the gravity it needs. Classes are read with ast, never imported, so GPU modules need no pycuda.

    python tools/module_docs.py          # write docs/modules.md
    python tools/module_docs.py --check  # exit 1 if docs/modules.md is not what this makes
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("galaxyview") is None:  # run from a checkout without an install
    sys.path.insert(0, str(ROOT))

from galaxyview.engines import modules  # noqa: E402
from galaxyview.model.params import Params  # noqa: E402
from galaxyview.model.sheet import Sheet  # noqa: E402

OUTPUT = ROOT / "docs" / "modules.md"
PARAMS = [f.name for f in dataclasses.fields(Params)]
SHEET = [f.name for f in dataclasses.fields(Sheet)]
SHEET_METHODS = sorted(n for n, v in vars(Sheet).items()
                       if callable(v) and not n.startswith("_"))
SECTIONS = (("integrator", "Integrators", "`integrator = \"NAME\"`"),
            ("boundary", "Boundaries", "`boundary = \"NAME\"`"),
            ("collision", "Collisions", "`collision = \"NAME\"`"))
# the class attributes of modules.py's bases, which a module class inherits unless it sets them
BASE_ATTRS = {"gravity": None, "kernels": None, "uses_eta": False}


def _file_of(module: str) -> Path:
    return ROOT / Path(*module.split(".")).with_suffix(".py")


class SourceFile:
    """One module file read with ast: its classes, imports and the parameters it reads."""

    def __init__(self, path: Path):
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.imports = {}  # name -> module it comes from (galaxyview.engines.* only)
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "galaxyview.engines."):
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = node.module

    def params_read(self) -> tuple[set, set]:
        """(Params fields, sheet attributes) read anywhere in the file: `X.params.F`,
        `p.F` / `params.F` for a Params field F; `sheet.A`, `sheet_of(...).A`, `X.sheet.A`."""
        fields, sheet = set(), set()
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Attribute):
                continue
            value = node.value
            if node.attr in PARAMS and (
                    (isinstance(value, ast.Name) and value.id in ("p", "params"))
                    or (isinstance(value, ast.Attribute) and value.attr == "params")):
                fields.add(node.attr)
            if node.attr in SHEET + SHEET_METHODS and (
                    (isinstance(value, ast.Name) and value.id == "sheet")
                    or (isinstance(value, ast.Attribute) and value.attr == "sheet")
                    or (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                        and value.func.id == "sheet_of")):
                sheet.add(node.attr)
        return fields, sheet


_FILES: dict[Path, SourceFile] = {}


def source(path: Path) -> SourceFile:
    if path not in _FILES:
        _FILES[path] = SourceFile(path)
    return _FILES[path]


def class_attr(src: SourceFile, name: str, attr: str):
    """A class attribute's literal value, following the bases through the file's imports
    (modules.py's bases give BASE_ATTRS)."""
    node = src.classes.get(name)
    if node is None:
        module = src.imports.get(name)
        if module is None or module == "galaxyview.engines.modules":
            return BASE_ATTRS[attr]
        return class_attr(source(_file_of(module)), name, attr)
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
            return ast.literal_eval(stmt.value)
    for base in node.bases:
        if isinstance(base, ast.Name):
            return class_attr(src, base.id, attr)
    return BASE_ATTRS[attr]


def reads(src: SourceFile, cls: str, seen=None) -> tuple[set, set]:
    """Params fields and sheet attributes read by the class's file and by the files of its
    bases (followed through the file's imports; modules.py's bases read nothing)."""
    seen = seen if seen is not None else set()
    seen.add(src.path)
    fields, sheet = src.params_read()
    node = src.classes.get(cls)
    bases = [b.id for b in node.bases if isinstance(b, ast.Name)] if node else []
    for base in bases:
        if base in src.classes:
            more = reads(src, base, seen) if src.path not in seen else (set(), set())
        else:
            module = src.imports.get(base)
            path = _file_of(module) if module else None
            if module in (None, modules.__name__) or path in seen or not path.exists():
                continue
            more = reads(source(path), base, seen)
        fields |= more[0]
        sheet |= more[1]
    return fields, sheet


def registry_comment(what: str, name: str) -> str:
    """The comment on the registry's `add` line for `name` (the base classes' only text)."""
    registry = {"integrator": "INTEGRATORS", "boundary": "BOUNDARIES", "collision": "COLLISIONS"}
    for line in inspect.getsource(modules).splitlines():
        if line.startswith(f'{registry[what]}.add("{name}"') and "#" in line:
            return line.split("#", 1)[1].strip()
    return ""


def describe(what: str, name: str, impl) -> dict:
    """What the page says of one (module, engine kind): class, text, reads, kernels, gravity."""
    if isinstance(impl, str):
        module, _, cls = impl.partition(":")
    else:
        module, cls = impl.__module__, impl.__qualname__
    src = source(_file_of(module))
    node = src.classes[cls]
    if module == modules.__name__:  # the bases themselves: the registry line's comment
        text = ast.get_docstring(node) or registry_comment(what, name)
        fields, sheet = set(), set()
    else:  # the file's summary (its docstring's first paragraph), then the class's docstring
        lead = (ast.get_docstring(src.tree) or "").split("\n\n")[0]
        text = "\n\n".join(t for t in (lead if ast.get_docstring(node) else
                                        ast.get_docstring(src.tree),
                                        ast.get_docstring(node)) if t)
        fields, sheet = reads(src, cls)
    return {"class": f"{module}:{cls}", "path": src.path.relative_to(ROOT).as_posix(),
            "text": text, "params": sorted(fields - {"sheet"}, key=PARAMS.index),
            "sheet": sorted(a + "()" if a in SHEET_METHODS else a for a in sheet),
            "kernels": class_attr(src, cls, "kernels"),
            "gravity": class_attr(src, cls, "gravity") if what == "integrator" else None,
            "uses_eta": class_attr(src, cls, "uses_eta") if what == "integrator" else False}


def _quote(text: str) -> list[str]:
    return ["> " + line if line else ">" for line in text.splitlines()]


def render() -> str:
    out = ["# Physics modules", "",
           "Generated by `python tools/module_docs.py` from the registry of",
           "`galaxyview/engines/modules.py`; do not edit by hand (tests/test_module_docs.py",
           "fails when this page and the registry differ). A scene or `Params` chooses one",
           "integrator, one boundary and one collision module by name; docs/architecture.md",
           "(Physics modules) explains the interface and how to add one.", "",
           "*Reads*: the `Params` fields (model/params.py) and shearing-sheet settings",
           "(model/sheet.py, a ring scene's `[sheet]`) that the module's code reads; every",
           "integrator also takes `dt` from the engine's step. *Gravity*: what the engine runs",
           "for the integrator (`tree` unless the scheme needs another).", ""]
    for what, title, key in SECTIONS:
        registry = modules.REGISTRIES[what]
        out += [f"## {title}", "", f"Chosen by {key} in a scene's `[params]` or in `Params`.", ""]
        for name in registry.names():
            entry = registry.entry(name)
            out += [f"### `{name}`", "",
                    "Runs on: " + ", ".join(f"{k.upper()} engine" for k in modules.KINDS
                                           if k in entry) + ".", ""]
            for kind in modules.KINDS:
                if kind not in entry:
                    continue
                d = describe(what, name, entry[kind])
                out += [f"**{kind.upper()}**: `{d['class']}` ({d['path']})", ""]
                out += _quote(d["text"]) + [""]
                facts = []
                if what == "integrator":
                    facts.append(f"gravity: {d['gravity'] or 'tree'}")
                    if d["uses_eta"]:
                        facts.append("individual time steps from `eta`")
                facts.append("reads: " + (", ".join(f"`{p}`" for p in d["params"]) or "nothing"))
                if d["sheet"]:
                    facts.append("sheet: " + ", ".join(f"`{s}`" for s in d["sheet"]))
                if d["kernels"]:
                    facts.append(f"kernels: `kernels/{d['kernels']}`")
                out += ["- " + f for f in facts] + [""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/modules.md differs from what would be written")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run python tools/module_docs.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
