"""Small generated corpora, each with the shape of a corpus the default method must serve.

They stand in for corpora this repository cannot hold (news articles, entity-heavy
records, Wikipedia two-hop questions, long documents); each is deterministic and built
so that one behaviour is what decides its top ranks:

- :func:`work_orders`: records that read alike and differ in codes and names, where a
  rare code in the question is the only way to the right record (BM25 wins there; a
  small embedder sees near-duplicates). Shared sites and technicians make graph hubs.
- :func:`two_hop`: Wikipedia-style film and person pages, where the question names a
  film and asks about its director, so the second page is reached only through the
  entity the first page names; and comparison questions naming two films, where both
  pages match the question and the walk has nothing to add.
- :func:`long_articles`: a few long articles (many chunks each) that repeat the
  question's entity, beside the short one that answers it.

Each returns ``(documents, questions)`` with ``documents`` as ``(id, title, text)`` and
``questions`` as ``(question, gold document ids)``.
"""

from __future__ import annotations

import random

Corpus = tuple[list[tuple[str, str, str]], list[tuple[str, list[str]]]]

_SITES = ["Brenmoor", "Calloway Ridge", "Dunhollow", "Easterling", "Fairbeck"]
_TECHS = ["Ilsa Varga", "Tomas Reiner", "Odile Marsh", "Kwame Asante"]
_PARTS = [
    ("coolant pump", "a seized bearing"),
    ("feed valve", "a cracked seat"),
    ("pressure sensor", "drifting readings"),
    ("drive belt", "fraying along one edge"),
    ("control board", "a burnt capacitor"),
    ("intake filter", "heavy clogging"),
]


def work_orders(n: int = 30, seed: int = 7) -> Corpus:
    """``n`` maintenance records that differ mainly in their work-order codes."""
    rng = random.Random(seed)
    codes = rng.sample(range(10000, 99999), n)
    docs, questions = [], []
    for i, code in enumerate(codes):
        site, tech = _SITES[i % len(_SITES)], _TECHS[i % len(_TECHS)]
        part, fault = _PARTS[(i * 7) % len(_PARTS)]
        text = (
            f"Work order WO-{code} was opened at the {site} substation. The {part} was "
            f"replaced after the crew found {fault}. {tech} inspected the repair and closed "
            f"work order WO-{code}. The {site} substation returned to service the same day."
        )
        docs.append((f"wo{code}", f"Work order WO-{code}", text))
        if i % 3 == 0:
            questions.append((f"What was replaced under work order WO-{code}?", [f"wo{code}"]))
    return docs, questions


_FIRST = ["Alden", "Brisa", "Corvin", "Delphine", "Emeric", "Fenna", "Gideon", "Halvard"]
_LAST = ["Ashgrove", "Belmonte", "Castellan", "Dunmore", "Everly", "Falkner", "Grantham"]
_FILMS = ["The Salt Road", "Winter Orchard", "A Lamp in Kessel", "Northbound Hours",
          "The Glass Ferry", "Quiet Harbour", "Ember Street", "The Long Meadow"]  # fmt: skip
_CITIES = ["Lisbon", "Oslo", "Tallinn", "Porto", "Ghent", "Turin", "Krakow", "Lyon"]


def two_hop(seed: int = 3) -> Corpus:
    """Film pages naming their director, person pages with the director's facts."""
    rng = random.Random(seed)
    people = [
        f"{f} {last}" for f, last in zip(_FIRST, rng.sample(_LAST * 2, len(_FIRST)), strict=True)
    ]
    docs, questions = [], []
    for i, film in enumerate(_FILMS):
        director, actor = people[i], people[(i + 3) % len(people)]
        year = 1960 + 3 * i
        docs.append((
            f"film{i}", film,
            f"{film} is a {year} drama film directed by {director}. It stars {actor} as a "
            f"ferry pilot who returns to her home town. The film premiered at a festival "
            f"and was praised for its photography.",
        ))  # fmt: skip
        city = _CITIES[i]
        spouse = people[(i + 5) % len(people)]
        docs.append((
            f"person{i}", director,
            f"{director} is a film director and screenwriter born in {city}. {director} "
            f"studied painting before turning to cinema and is married to {spouse}. Their "
            f"early short films were shown on national television.",
        ))  # fmt: skip
        questions.append((f"In which city was the director of {film} born?",
                          [f"film{i}", f"person{i}"]))  # fmt: skip
    for i in range(0, len(_FILMS) - 1, 2):  # comparisons: both pages match the question
        a, b = _FILMS[i], _FILMS[i + 1]
        questions.append((f"Which film came out first, {a} or {b}?", [f"film{i}", f"film{i + 1}"]))
    return docs, questions


def long_articles(paragraphs: int = 14, seed: int = 5) -> Corpus:
    """Three long articles about a river port that repeat its name, and short answers."""
    rng = random.Random(seed)
    topics = ["trade", "floods", "bridges", "markets", "shipping", "festivals", "schools"]
    docs = []
    for a in range(3):
        paras = []
        for p in range(paragraphs):
            topic = rng.choice(topics)
            paras.append(
                f"Vellmouth's {topic} changed again in the {1850 + 10 * p + a}s. Reports "
                f"from Vellmouth describe how the {topic} of the river port grew, and how "
                f"the council of Vellmouth argued over the {topic} for many years while "
                f"merchants from upstream towns kept arriving in Vellmouth."
            )
        docs.append((f"article{a}", f"Vellmouth history, part {a + 1}", "\n\n".join(paras)))
    docs.append((
        "lighthouse", "Vellmouth lighthouse keeper",
        "The Vellmouth lighthouse was kept from 1902 to 1931 by Agnes Thornbury, who "
        "logged every passing vessel in a green ledger now held by the town museum.",
    ))  # fmt: skip
    docs.append((
        "bridge", "Orrin Bridge",
        "Orrin Bridge, the first iron bridge at Vellmouth, was designed by the engineer "
        "Matthias Orrin and opened in 1879 after two winters of work.",
    ))  # fmt: skip
    questions = [
        ("Who kept the Vellmouth lighthouse?", ["lighthouse"]),
        ("Who designed the first iron bridge at Vellmouth?", ["bridge"]),
    ]
    return docs, questions
