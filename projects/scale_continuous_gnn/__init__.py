"""Scale-continuous GNNs: embeddings that converge across graph resolutions."""
