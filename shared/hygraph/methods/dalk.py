"""``dalk``: DALK's LLM-filtered subgraph of the question's entities.

Spec 002 writes DALK as node Link + Onehop + Agent and subgraph KhopPath + AgentPath
over the KG (Table 3), with the question's entities extracted by an LLM (§1.1):

1. **question entities** by the LLM (our NER prompt, :mod:`hygraph.prompts.hipporag`),
   each linked to its nearest graph entity by vector (Link, top-1);
2. **path-based exploration** (``subgraph.khop_path``, KhopPath): paths of at most
   ``max_hops`` between the linked entities, found one after another and merged when
   one extends another (:mod:`hygraph.graph.algorithms.khop`);
3. **neighbour-based exploration**: the linked entities' one-hop neighbours
   (``node.onehop``, the ``neighbour_candidates`` most connected to them), of which
   the LLM keeps the ``neighbour_top_k`` that help (``node.agent``, Agent);
4. **path filtering** (``subgraph.agent_path``, AgentPath): the LLM keeps the
   ``path_top_k`` paths that help;
5. **context**: the filtered subgraph — the kept paths, then the edges joining the
   kept neighbours to the question's entities — as ``Ada -[founded]-> Bell`` chains
   (graph structure only, as the framework runs DALK, spec §4.6), each citing the
   chunks its edges came from, which is the passage ranking; ``passages=true`` also
   shows those chunks' texts.

Two LLM calls after the question's entities (the neighbour and path filters; none
when there is nothing to filter), within ``max_calls`` and ``max_tokens``. An
unusable filter reply keeps the first candidates unfiltered (logged); a readable one
keeping nothing keeps nothing. The spec gives no value for k, the number of paths or
neighbours: ours are in the config. DALK's own knowledge-graph construction (its
"co-augmentation" of the KG from literature) is out of scope: the KG is the entity
graph extracted from the documents.

**LLM.** Retrieval needs one: without a configured LLM the query fails with one
line; the filters use the configured LLM even when the index was opened without
``llm_in_retrieval`` (choosing this method asks for it).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.methods.base import MethodConfig, register
from hygraph.methods.tog import BUDGET, AgentMethod, check_agent_config
from hygraph.operators.recipe import Step


@dataclass
class DALKConfig(MethodConfig):
    """DALK in the unified framework (spec 002 §4.4, §4.6); the spec sets no numbers."""

    top_k: int = 5  # ours: passages shown with passages=true (as vanilla)
    query_entities: str = "llm"  # paper: Q entities by LLM (spec §1.1) | auto | offline | question
    max_hops: int = 3  # ours: hops per path (the spec's KhopPath leaves k open)
    paths_per_pair: int = 1  # ours: shortest paths per step (spec: "a k-hop path")
    path_candidates: int = 20  # ours: paths shown to the path filter at most
    path_top_k: int = 5  # ours: paths the filter keeps at most
    neighbour_candidates: int = 30  # ours: neighbours shown to the entity filter
    neighbour_top_k: int = 5  # ours: neighbours the filter keeps at most
    max_calls: int = 4  # ours: agent calls per query (the two filters need 2)
    max_tokens: int = 30000  # ours: agent tokens per query (the paper averages 2.5-4.7k)
    passages: bool = False  # paper: graph structure only (spec §4.6); true adds chunk texts

    def __post_init__(self) -> None:
        check_agent_config(self)
        if self.max_hops < 1 or self.paths_per_pair < 1:
            raise ConfigError("max_hops and paths_per_pair must be >= 1")


TITLES = {"paths": "Paths", "neighbours": "Neighbours", "chunks": "Sources"}


@register
class DALK(AgentMethod):
    """DALK: k-hop paths and neighbours of the question's entities, filtered by an LLM."""

    name = "dalk"
    Config = DALKConfig
    description = (
        "DALK: paths between the question's entities and their neighbours, each filtered by "
        "an LLM; the filtered subgraph as context"
    )
    layers = ("chunks", "entity-vectors")
    query_llm = "required: question entities, then the neighbour and path filters (2 calls)"
    recipe = (
        Step("question.entities", {"mode": "$query_entities", "prompt": "hipporag"}),
        Step("node.link"),
        Step("node.seeds"),
        Step("subgraph.khop_path", {"max_hops": "$max_hops", "per_pair": "$paths_per_pair",
                                    "limit": "$path_candidates"}),
        Step("node.onehop", {"k": "$neighbour_candidates", "keep_seeds": True}),
        Step("node.agent", {"k": "$neighbour_top_k", "source": "nodes",
                            "max_candidates": "$neighbour_candidates", **BUDGET}),
        Step("subgraph.agent_path", {"k": "$path_top_k", **BUDGET}),
        Step("subgraph.path_evidence", {"source": "paths", "into": "paths"}),
        Step("subgraph.path_evidence", {"source": "neighbours", "into": "neighbours"}),
        Step("chunk.from_evidence", {"sources": "paths+neighbours", "k": "$top_k"},
             when="passages"),
        Step("chunk.evidence", {"k": "$top_k", "into": "chunks"}, when="passages"),
        Step("merge.context", {"sections": "paths+neighbours", "titles": TITLES,
                               "ranking": "paths+neighbours"}, when="!passages"),
        Step("merge.context", {"sections": "paths+neighbours+chunks", "titles": TITLES,
                               "ranking": "paths+neighbours"}, when="passages"),
    )  # fmt: skip
