"""Tabular Markov decision processes: environments, exact evaluation, sampling, features."""
