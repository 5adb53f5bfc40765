"""Graph learning in JAX: batching (padded dense adjacency for small graphs, segment-sum message
passing for large sparse ones), message-passing layers and seeded graph generators.

Import the modules directly (`from shared.graph import batching, layers`); nothing is
re-exported here.
"""
