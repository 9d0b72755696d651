"""``hygraph methods --describe``: every config field of every method names its source.

A field's comment starts with a source tag (``paper:``, ``code:``, ``framework:``,
``ours:``, ``library:``; ``recipe:`` for a recipe file's options) that ``--describe``
shows as the field's source, with the rest of the comment as its meaning.
"""

from __future__ import annotations

import pytest

from hygraph.methods.base import METHOD_MODULES, available_methods
from hygraph.methods.describe import SOURCE_TAGS, describe, field_comments, render, split_source
from hygraph.methods.recipes import recipe_method


def _sources(name: str) -> dict[str, str]:
    return {row["name"]: row["source"] for row in describe(name)["fields"]}


@pytest.mark.parametrize("name", sorted(METHOD_MODULES))
def test_every_field_of_every_builtin_method_has_a_source_tag(name):
    assert name in available_methods()
    rows = describe(name)["fields"]
    untagged = [row["name"] for row in rows if row["source"] not in SOURCE_TAGS.values()]
    assert untagged == [], f"{name}: fields without a source tag: {untagged}"
    # Every field says what it is, and its meaning does not start with a second tag.
    assert all(row["meaning"] and not split_source(row["meaning"])[0] for row in rows), name


def test_known_sources_are_shown_as_tagged():
    hipporag2 = _sources("hipporag2")
    assert hipporag2["link_top_k"] == hipporag2["passage_weight"] == "authors' code"
    assert hipporag2["damping"] == "paper" and hipporag2["unfiltered_top_k"] == "ours"
    hybrid_ppr = _sources("hybrid-ppr")  # "(HippoRAG 2 code)" once showed as [library]
    assert hybrid_ppr["link_top_k"] == hybrid_ppr["synonym_max"] == "authors' code"
    assert _sources("kgp")["seed_passages"] == "framework code"
    assert _sources("g-retriever")["prize_entities"] == "framework code"
    assert _sources("noderag")["entry_points"] == "authors' code"
    assert _sources("bm25")["k1"] == "library" and _sources("vanilla")["top_k"] == "ours"
    assert _sources("hypergraph")["top_k"] == "paper"
    seeds = next(r for r in describe("kgp")["fields"] if r["name"] == "seed_passages")
    assert seeds["default"] == 10 and "KGPQuery.py:16" in seeds["meaning"]
    text = render(describe("hipporag2"))
    line = next(row for row in text.splitlines() if row.strip().startswith("link_top_k"))
    assert "[authors' code] facts linked" in line and "[library]" not in text


def test_tags_are_read_not_guessed():
    assert split_source("code: depth (HippoRAG.py:1)") == ("authors' code", "depth (HippoRAG.py:1)")
    assert split_source("framework: seeds (KGPQuery.py:16)")[0] == "framework code"
    # No tag, or a word that is not one: no source, whatever the words say.
    assert split_source("passages (reference code, bm25s default)")[0] == ""
    assert split_source("walk: weight of the dense seeds")[0] == ""


def test_comments_span_lines_and_sections_stand_alone():
    source = """
class Options:
    # -- search
    depth: int = 3  # framework: hops walked
    #   (Core/Query/X.py:12)
    # -- build
    mode: str = (
        "auto"  # ours: auto | llm
    )
    bare: int = 1
    seed: int = 7  # paper: the seed (Table 2)
"""
    assert field_comments(source) == {
        "depth": "framework: hops walked (Core/Query/X.py:12)",
        "mode": "ours: auto | llm",
        "seed": "paper: the seed (Table 2)",
    }


def test_a_recipe_files_options_show_as_recipe():
    data = {
        "name": "describe-probe", "layers": ["chunks"], "config": {"depth": 7},
        "steps": [{"op": "chunk.vdb", "params": {"k": "$depth"}},
                  {"op": "chunk.evidence", "params": {"k": "$top_k"}},
                  {"op": "merge.context", "params": {"sections": "chunks"}}],
    }  # fmt: skip
    recipe_method(data, origin="probe.yaml")
    rows = {row["name"]: row for row in describe("describe-probe")["fields"]}
    assert rows["depth"]["source"] == "recipe" and "probe.yaml" in rows["depth"]["meaning"]
    assert rows["top_k"]["source"] == "ours"  # not declared: the base config's comment
