"""``tog``: Think-on-Graph, an LLM beam search over the knowledge graph.

Spec 002 writes ToG as node Link + Onehop + Agent and relationship Onehop + Agent
over the KG (Table 3), an iterative beam search over entities and relations driven
by the LLM, ``width`` 3 and ``depth`` 3 in the reference code (§4.6):

1. **topic entities**: the question's entities, by the LLM (spec §1.1; our NER prompt,
   :mod:`hygraph.prompts.hipporag`), each linked to its nearest graph entity by
   vector (Link, top-1) — the first frontier (``node.seeds``);
2. **at each depth**, up to ``depth``:

   a. *relation exploration and pruning* (``relationship.agent``): the relations of
      each frontier entity (Onehop over its relation edges, by label and direction)
      are scored by the LLM, ``width`` kept per entity;
   b. *entity exploration and pruning* (``node.agent``): the entities each kept
      relation leads to are scored by the LLM, one call per relation; an entity
      scores relation score × entity score and the ``width`` best over all are the
      next frontier, each with its reasoning path one hop longer;
   c. *evidence check* (``subgraph.agent_check``, ToG's reasoning step): the LLM says
      whether the paths found so far are enough; yes ends the search. It is not asked
      after the last depth, where its answer could change nothing (ours: one call
      less; ToG's code asks there too, to decide how to answer);

3. **context**: the reasoning paths, deepest first, as ``Ada -[founded]-> Bell``
   chains (the paper's methods send graph structure only, spec §4.6), each citing the
   chunks its edges were extracted from, which is the passage ranking;
   ``passages=true`` (ours) also shows those chunks' texts.

**Bounds.** The search stops at ``depth``, keeps ``width`` relations per entity and
``width`` entities per depth, and its agent calls share a budget of ``max_calls``
calls and ``max_tokens`` tokens (:mod:`hygraph.operators.agents`); the question-entity
call is one more. It also stops when nothing is chosen, so a model whose replies
never say "enough" still ends by depth.

**Failures** (as ToG's code): an unusable relation reply drops that entity's
relations; an unusable entity reply scores the relation's candidates equally; an
unusable check reply means "not enough". None of them fails the query.

**What replaces what.** ToG searched Freebase / Wikidata through SPARQL; here the KG
is the entity graph extracted from the documents, its relation labels the
relations (every label an edge was extracted with). Candidate entities per relation
are capped at ``max_candidates``, most connected first (deterministic), and
relations per entity at ``max_relations``. ToG answers with its own prompt; here the
answer is the shared direct answer over the context.

**LLM.** Retrieval needs one: without a configured LLM the query fails with one
line. The agent steps use the configured LLM even when the index was opened without
``llm_in_retrieval`` (choosing this method asks for it). ``query_entities=offline``
takes the topic entities from the offline rule extractor instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step
from hygraph.operators.recipe import run as run_steps
from hygraph.operators.state import State

if TYPE_CHECKING:
    from hygraph.resources import Resources

QUESTION_MODES = ("llm", "auto", "offline", "question")
BUDGET = {"max_calls": "$max_calls", "max_tokens": "$max_tokens"}
AGENT_LLM = "required: the retrieval agent (at most max_calls calls a query)"


def check_agent_config(config: MethodConfig) -> None:
    """One-line errors for the options every agent method shares."""
    mode = getattr(config, "query_entities", "llm")
    if mode not in QUESTION_MODES:
        raise ConfigError(f"query_entities must be one of {', '.join(QUESTION_MODES)}")
    for name in ("max_calls", "max_tokens"):
        if int(getattr(config, name)) < 0:
            raise ConfigError(f"{name} must be >= 0 (0: no bound)")


class AgentMethod(Method):
    """A method whose retrieval is an LLM agent: it checks for an LLM before anything runs."""

    query_llm = AGENT_LLM

    def run(self, res: Resources, question: str, top_k: int | None = None) -> State:
        from hygraph.operators.agents import require_llm

        require_llm(res, self.name)
        return super().run(res, question, top_k)


@dataclass
class ToGConfig(MethodConfig):
    """Think-on-Graph in the unified framework; defaults from spec 002 (reference code)."""

    top_k: int = 5  # ours: passages shown with passages=true (as vanilla)
    query_entities: str = "llm"  # paper: Q entities by LLM (spec §1.1) | auto | offline | question
    depth: int = 3  # framework: search depth (Config/QueryConfig.py:49; ToG.yaml:57)
    width: int = 3  # framework: relations per entity, entities per depth
    #   (Config/QueryConfig.py:50; Option/Method/ToG.yaml:56; spec 002 §4.1)
    max_relations: int = 30  # ours: candidate relations shown per entity
    max_candidates: int = 20  # ours: candidate entities shown per relation
    max_calls: int = 50  # ours: agent calls a query (defaults, 4 question entities: <= 42)
    max_tokens: int = 80000  # ours: agent tokens per query (the paper averages 10-17k)
    passages: bool = False  # paper: paths only (spec §4.6); true adds their chunks' texts

    def __post_init__(self) -> None:
        check_agent_config(self)
        if self.depth < 1 or self.width < 1:
            raise ConfigError("depth and width must be >= 1")


START = (
    Step("question.entities", {"mode": "$query_entities", "prompt": "hipporag"}),
    Step("node.link"),
    Step("node.seeds"),
)
ROUND = (
    Step("relationship.agent", {"width": "$width", "max_relations": "$max_relations", **BUDGET}),
    Step("node.agent", {"k": "$width", "source": "relationships",
                        "max_candidates": "$max_candidates", **BUDGET}),
)  # fmt: skip
CHECK = (Step("subgraph.agent_check", BUDGET),)
TITLES = {"paths": "Reasoning paths", "chunks": "Sources"}
CONTEXT = (
    Step("subgraph.path_evidence", {"order": "deepest", "into": "paths"}),
    Step("chunk.from_evidence", {"sources": "paths", "k": "$top_k"}, when="passages"),
    Step("chunk.evidence", {"k": "$top_k", "into": "chunks"}, when="passages"),
    Step("merge.context", {"sections": "paths", "titles": TITLES, "ranking": "paths"},
         when="!passages"),
    Step("merge.context", {"sections": "paths+chunks", "titles": TITLES, "ranking": "paths"},
         when="passages"),
)  # fmt: skip


@register
class ToG(AgentMethod):
    """Think-on-Graph: LLM-pruned beam search over relations and entities (module docstring)."""

    name = "tog"
    Config = ToGConfig
    description = (
        "Think-on-Graph: LLM beam search from the question's entities, relations then "
        "entities pruned to width 3 per depth, up to depth 3 (steps 4-6 repeat)"
    )
    layers = ("chunks", "entity-vectors")
    recipe = (*START, *ROUND, *CHECK, *CONTEXT)
    query_llm = "required: the beam search (question entities, then at most max_calls calls)"

    def run(self, res: Resources, question: str, top_k: int | None = None) -> State:
        """The recipe with steps 4-6 repeated per depth until the search stops."""
        from hygraph.operators.agents import agent_run, require_llm

        require_llm(res, self.name)
        config = self.config
        state = State(question=question, top_k=top_k or config.top_k)
        run_steps(res, state, START, config)
        for depth in range(1, config.depth + 1):
            run_steps(res, state, ROUND, config)
            if agent_run(state).stop or depth == config.depth:
                break
            run_steps(res, state, CHECK, config)
            if agent_run(state).stop:
                break
        return run_steps(res, state, CONTEXT, config)
