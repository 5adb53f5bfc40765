"""The shared library of the monorepo: configs, training, data, models, metrics, results."""
