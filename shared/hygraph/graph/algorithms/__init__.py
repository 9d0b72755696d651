"""Graph algorithms over arrays, each a plain function tested on hand-made graphs.

One module per algorithm family: personalized PageRank in both forms the methods use
(:mod:`.ppr`), Leiden communities through graspologic's native core (:mod:`.leiden`),
k-core and betweenness importance (:mod:`.importance`), exact and approximate kNN
graphs (:mod:`.knn`), K-means clustering for semantic matching (:mod:`.clustering`),
shortest paths (:mod:`.paths`) and whole-word name matching (:mod:`.exact_match`).
"""
