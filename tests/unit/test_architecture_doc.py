"""docs/architecture.md holds to the code where it makes a claim a test can hold: the modules its
layer tree names (and the areas, which must be the registry's), the paths it names, the Area fields its
recipe lists, the make targets it names."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from conformance.areas import AREAS
from conformance.catalog.area import Area

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def layer_tree() -> list[tuple[str, list[str]]]:
    """The `conformance/` tree of "## The layers": (package folder, the module names its line lists)."""
    fence = PAGE.split("## The layers", 1)[1].split("```", 2)[1]
    entries: list[tuple[str, str]] = []
    for line in fence.splitlines():
        m = re.match(r"^  (\w+/|\w+\.py)\s+(.*)$", line)
        if m:
            entries.append((m.group(1), m.group(2)))
        elif entries and line.startswith("     ") and line.split("tests/")[0].strip():
            entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
        if line.startswith("tests/"):
            break
    out = []
    for folder, text in entries:
        text = re.sub(r"`[^`]*`", "", text)
        while re.search(r"\([^()]*\)", text):
            text = re.sub(r"\([^()]*\)", "", text)
        listed = (text.split(":", 1)[1] if ":" in text else text).split(";")[0] if folder.endswith("/") else ""
        # a list item is one name (its gloss in parentheses is gone); longer items are prose
        names = [part.strip() for part in re.split(r",|\+| and ", listed)]
        out.append((folder, [n for n in names if re.fullmatch(r"\w+/?", n)]))
    return out


def test_every_module_the_layer_tree_names_exists() -> None:
    missing = []
    for folder, names in layer_tree():
        base = ROOT / "conformance" / folder
        if folder.endswith(".py"):
            assert base.is_file(), folder
            continue
        assert base.is_dir(), folder
        for name in names:
            if not ((base / f"{name}.py").is_file() or (base / name.rstrip("/")).is_dir()):
                missing.append(f"{folder}{name}")
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_the_layer_tree_names_every_package() -> None:
    listed = {folder.rstrip("/") for folder, _ in layer_tree()}
    packages = {p.name for p in (ROOT / "conformance").iterdir() if (p / "__init__.py").is_file()}
    assert packages <= listed, f"packages docs/architecture.md does not list: {sorted(packages - listed)}"


def test_every_path_the_page_names_exists() -> None:
    paths = set(re.findall(r"(?<![\w/.])((?:conformance|tests|docs|tiers|schemas|benchmarks)/[\w./-]*[\w/])", PAGE))
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_add_an_area_recipe_lists_every_area_field() -> None:
    recipe = PAGE.split("### Add an area", 1)[1].split("###", 1)[0]
    listed = set(re.search(r"its `Area` \(([^)]*)\)", recipe.replace("\n", " ")).group(1).replace(" ", "").split(","))
    fields = {f.name for f in dataclasses.fields(Area)} - {"name", "prefix"}
    assert listed == fields, f"the recipe's Area fields differ from catalog/area.py: {sorted(listed ^ fields)}"


def test_every_make_target_the_page_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"`make ([\w-]+)", PAGE))
    assert named <= targets, f"docs/architecture.md names make targets that do not exist: {sorted(named - targets)}"


def test_the_layer_tree_lists_the_areas_of_the_registry() -> None:
    line = PAGE.split("one package per area:", 1)[1].split("—", 1)[0]
    assert re.findall(r"(\w+)/", line) == [a.name for a in AREAS], \
        "docs/architecture.md's areas/ line (the layer tree) lists other areas than AREAS: name them there, in its order"
