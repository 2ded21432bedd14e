"""The package's shape: which layers may import the synthetic world, that nothing imports the research study, that
the files the package reads ship inside it, and that the lexicons cover the world's captions."""

import ast
from pathlib import Path

import pytest

import avjudge
from avjudge.errors import AvjudgeError
from avjudge.llm.lexicons import LEXICONS
from avjudge.resources import asset, resolve, shipped
from avjudge.world import vocab

PACKAGE = Path(avjudge.__file__).parent
# the synthetic world is a test-clip generator: only these use it
WORLD_USERS = ("world/", "demo/", "bench/synthetic.py")


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


def test_shipped_files_are_found_inside_the_package_by_name_or_path(tmp_path):
    assert asset("checkpoint_manifest.yaml").is_file() and asset("tiny", "qwen2_5_omni_encoders.safetensors").is_file()
    assert asset().is_relative_to(PACKAGE)
    assert shipped("recipe") == ["avbench_at_100k", "avbench_av_100k", "avbench_vt_100k", "world_demo"]
    assert {"tiny_world_av", "av_qwen25omni_7b"} <= set(shipped("train_config"))
    assert shipped("deepspeed") == ["zero2", "zero3"]
    assert (
        resolve("world_demo", "recipe") == resolve("world_demo.yaml", "recipe") == asset("recipes", "world_demo.yaml")
    )
    mine = tmp_path / "world_demo.yaml"  # a file of the user's wins over a shipped one of the same name
    mine.write_text("name: mine\n")
    assert resolve(mine, "recipe") == mine
    with pytest.raises(AvjudgeError, match="none ships by that name.*world_demo"):
        resolve("wrold_demo", "recipe")
    with pytest.raises(AvjudgeError, match="no such recipe file"):  # a path is never taken for a shipped name
        resolve(tmp_path / "elsewhere" / "world_demo.yaml", "recipe")
