"""Negative sampling from the ground up (graph-based recommendation): LightGCN + BPR samplers."""
