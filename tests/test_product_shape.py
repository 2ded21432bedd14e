"""The package's shape: which layers may import the synthetic world, that nothing imports the research study, that
the files the package reads ship inside it, and that the lexicons cover the world's captions."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import avjudge
from avjudge.errors import AvjudgeError
from avjudge.llm.lexicons import LEXICONS
from avjudge.resources import FOLDERS, asset, resolve, shipped, shipped_folder
from avjudge.world import vocab

PACKAGE = Path(avjudge.__file__).parent
# the synthetic world is a test-clip generator: only these use it
WORLD_USERS = ("world/", "demo/", "bench/synthetic.py", "omni/benchmarks/questions/")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved to absolute names."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, (base, node.module)))
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}  # `from .. import world`
    return names


def test_the_import_scan_resolves_relative_imports(tmp_path):
    names = imported_modules(PACKAGE / "demo" / "run.py")
    assert "avjudge.world" in names and "avjudge.world.verify" in names and "avjudge.judges.tiny" in names


def test_no_product_layer_imports_the_world_and_nothing_imports_research():
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        names = imported_modules(path)
        assert not any(n == "research" or n.startswith("research.") for n in names), where
        if not where.startswith(WORLD_USERS):
            assert not any(n == "avjudge.world" or n.startswith("avjudge.world.") for n in names), where


def import_graph() -> dict[str, set[str]]:
    """Which of the package's files each file imports, function-level imports included; an import of a package's
    face (its ``__init__``, which re-exports) is no edge between files."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        files[name.removesuffix(".__init__")] = path
    graph = {name: set() for name in files}
    for name, path in files.items():
        for target in imported_modules(path):
            while target and target not in files:  # `from .x import a_function`: the file is x
                target = target.rpartition(".")[0]
            if target and target != name and files[target].name != "__init__.py":
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_files_import_each_other_not_even_inside_a_function():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the finder finds one
    graph = import_graph()
    assert "avjudge.runtime.engines" in graph["avjudge.runtime.jobs"] and "avjudge.scoring.core" in graph
    assert cycles(graph) == []


def layer_order(path: Path) -> list[str]:
    """The layer order a page writes down: "The layers import one way (...): media, runtime, ..., demo."."""
    text = " ".join(path.read_text().split())
    found = re.search(r"layers import one way[^:]*:\s*([a-z_, ]+?)\.", text)
    assert found, f"{path.name} states no layer order"
    return [name.strip() for name in found.group(1).split(",")]


def layer_of(module: str, order: list[str]) -> int:
    """A module's place in ``order``; -1 for the base modules (errors, config, jsonl, ...) any layer may import."""
    part = module.split(".")[1] if "." in module else ""
    return order.index(part) if part in order else -1


def against_the_order(imports: dict[str, set[str]], order: list[str]) -> list[str]:
    """Every import of a later layer (a base module importing any layer is one too)."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in imports.items()
        for target in targets
        if target.startswith("avjudge.") and layer_of(target, order) > layer_of(module, order)
    )


def test_every_import_follows_the_layer_order_contributing_writes_down():
    order = layer_order(PACKAGE.parent / "CONTRIBUTING.md")
    assert layer_order(PACKAGE.parent / "docs" / "architecture.md") == order
    layers = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} | {"filter"}
    assert set(order) == layers  # every package is placed, nothing gone is named
    assert against_the_order({"avjudge.media.x": {"avjudge.runtime.y", "avjudge.jsonl"}}, ["media", "runtime"]) == [
        "avjudge.media.x -> avjudge.runtime.y"
    ]  # the checker finds one
    assert against_the_order({"avjudge.jsonl": {"avjudge.media"}}, ["media"]) == ["avjudge.jsonl -> avjudge.media"]
    imports = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        imports[name] = imported_modules(path)  # function-level imports included
    assert against_the_order(imports, order) == []


def test_contributings_layout_names_every_part_of_the_tree_and_nothing_else():
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text()
    block = text.split("## Layout", 1)[1].split("```")[1]
    named = {m.group(1) for m in re.finditer(r"^  ([a-z_]+(?:\.py|/))", block, re.M)}
    parts = {p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    parts |= {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert named == parts
    folders = {m.group(1) for m in re.finditer(r"^([a-z_]+)/", block, re.M)} - {"avjudge"}
    assert all((PACKAGE.parent / folder).is_dir() for folder in folders) and set(FOLDERS) <= folders


def test_the_lexicons_hold_every_word_and_phrase_the_world_captions_use():
    words = set().union(*map(set, LEXICONS.values()))
    used = {
        *vocab.COLOURS,
        *vocab.SHAPES,
        *vocab.SIZES,
        *vocab.MOTION_PHRASES.values(),
        *vocab.EVENTS.values(),
        *vocab.TIMBRE_WORDS.values(),
        *vocab.AMBIENCE_PHRASES.values(),
        *vocab.REGISTER_WORDS,
        *(b["phrase"] for b in vocab.BACKGROUNDS.values()),
        *vocab.NUMBER_WORDS[1:11],
    }
    assert used - words == set()


def test_the_tiny_tokenizer_is_trained_on_the_world_captions_words_in_their_order():
    from avjudge.judges.tiny import CORPUS_WORDS

    assert list(CORPUS_WORDS) == [
        *vocab.COLOURS, *vocab.SHAPES, *vocab.SIZES, *vocab.MOTION_PHRASES.values(), *vocab.TIMBRE_WORDS.values(),
        *vocab.AMBIENCE_PHRASES.values(), *vocab.EVENTS.values(), *(b["phrase"] for b in vocab.BACKGROUNDS.values()),
        *vocab.NUMBER_WORDS,
    ]  # fmt: skip


def test_shipped_files_are_the_repositorys_top_level_folders_found_by_name_or_path(tmp_path):
    repo = PACKAGE.parent
    assert asset("checkpoints", "manifest.yaml").is_file()
    assert asset("checkpoints", "tiny", "qwen2_5_omni_encoders.safetensors").is_file()
    assert all(shipped_folder(name) == repo / name for name in FOLDERS)  # a checkout reads its own folders
    tracked = subprocess.run(
        ["git", "ls-files", *FOLDERS], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {"checkpoints/manifest.yaml", "checkpoints/README.md"} <= set(tracked)
    assert {"data_recipes/world_demo.yaml", "train_configs/tiny_world_av.yaml"} <= set(tracked)
    assert "train_configs/deepspeed/zero3.json" in tracked
    # the build maps every one of them into the wheel (avjudge/shipped/<folder>)
    setup = (repo / "setup.py").read_text()
    assert all(f'"{name}": ("{name}"' in setup for name in FOLDERS)
    assert shipped("recipe") == ["avbench_at_100k", "avbench_av_100k", "avbench_vt_100k", "world_demo"]
    assert {"tiny_world_av", "av_qwen25omni_7b"} <= set(shipped("train_config"))
    assert shipped("deepspeed") == ["zero2", "zero3"]
    assert (
        resolve("world_demo", "recipe")
        == resolve("world_demo.yaml", "recipe")
        == asset("data_recipes", "world_demo.yaml")
    )
    mine = tmp_path / "world_demo.yaml"  # a file of the user's wins over a shipped one of the same name
    mine.write_text("name: mine\n")
    assert resolve(mine, "recipe") == mine
    with pytest.raises(AvjudgeError, match="none ships by that name.*world_demo"):
        resolve("wrold_demo", "recipe")
    with pytest.raises(AvjudgeError, match="no such recipe file"):  # a path is never taken for a shipped name
        resolve(tmp_path / "elsewhere" / "world_demo.yaml", "recipe")


def test_old_import_paths_work_for_one_release_with_a_warning():
    script = """
import warnings
warnings.simplefilter("error", FutureWarning)
try:
    import avjudge.runtime.clip_jobs
except FutureWarning as warning:
    print("warned:", warning)
warnings.simplefilter("ignore", FutureWarning)
import avjudge.runtime.clip_jobs as old, avjudge.scoring.jobs as new
from avjudge.omni.sonicbench.stimuli import ATTRIBUTE_SPECS
from avjudge.omni.sonicbench import meters
from avjudge.omni.prise import make_prise
from avjudge.bench import parse_dimensions, load_suite
import avjudge.omni.benchmarks.sonicbench.stimuli as stimuli, avjudge.omni.meters as new_meters
import avjudge.scoring.dimensions as dimensions, avjudge.bench.prompt_files as prompt_files
print(old is new, ATTRIBUTE_SPECS is stimuli.ATTRIBUTE_SPECS, meters is new_meters)
print(parse_dimensions is dimensions.parse_dimensions, load_suite is prompt_files.load_prompts)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert (
        lines[0] == "warned: avjudge.runtime.clip_jobs moved to avjudge.scoring.jobs; the old path goes in avjudge 0.3"
    )
    assert lines[1:] == ["True True True", "True True"]
