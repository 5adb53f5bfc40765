"""Loaders of the pretrained models that ship inside PyPI packages (SmolLM2-135M, MiniLM-L6)."""
