"""Operators: the small steps a method's recipe is made of.

Each operator is a plain function ``op(res, state, **params)`` over the query's
:class:`~hygraph.operators.state.State`, registered by ``element.name`` (question,
node, relationship, chunk, subgraph, merge) with the layers it reads
(:mod:`hygraph.operators.registry`). A recipe (:mod:`hygraph.operators.recipe`) lists
them top to bottom; running it traces every step's time, tokens and output.
"""
