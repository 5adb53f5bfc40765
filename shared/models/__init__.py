"""Model building blocks in Flax NNX."""
