"""The synthetic task mixture (spec section 5): ICL tasks "x → y" and graph navigation traces.

Every sequence is a list of word tokens from one fixed vocabulary (`VOCAB`), so the decoder's
vocabulary never depends on the data drawn.

ICL: "<bos> x → y ; x → y ; ... ; x → y <eos>". Evaluated tasks (spec): increment (a number
0-98 -> +1), reverse-2 ("p q" -> "q p"), copy-first ("p q" -> "p"), successor-letter ("p q" ->
the letter after p). Two training-only distractors share the input formats, so the query alone
does not name the task: decrement (numbers) and copy-second ("p q" -> "q"). Without them a
two-letter query would name its task and zero-shot accuracy would say nothing about ICL.

Graph navigation: "<bos> graph A B , B C , ... ; path S → T : <steps> <eos>" on 8 nodes A-H
(a random spanning tree plus `EXTRA_EDGES` random edges). Each step is
"at X nb <neighbours, sorted> go Y ;" along a shortest path; at the target the step ends with
"check" (verification); in `DETOUR_P` of instances whose path passes a dead-end leaf the walker
first goes into the leaf and takes the step "at L nb X back X ;" (backtracking).
"""

from __future__ import annotations

import dataclasses
import string

import numpy as np

NODES = tuple("ABCDEFGH")
LETTERS = tuple(string.ascii_lowercase)
NUMBERS = tuple(str(i) for i in range(100))
WORDS = ("→", ";", ",", ":", "graph", "path", "at", "nb", "go", "back", "check")
RESERVED = ("<pad>", "<bos>", "<eos>")
VOCAB = RESERVED + NUMBERS + LETTERS + NODES + WORDS
ID = {w: i for i, w in enumerate(VOCAB)}
PAD, BOS, EOS = 0, 1, 2
STEP_WORDS = ("go", "back", "check")  # the decision token that names a step's type

ICL_TASKS = ("increment", "reverse2", "copy_first", "successor")
DISTRACTORS = ("decrement", "copy_second")  # training only
EXTRA_EDGES = 2
DETOUR_P = 0.45  # share of detour-eligible instances (about 45%) that detour: about 20% of all


def encode(words: list[str]) -> list[int]:
    return [ID[w] for w in words]


def decode(ids) -> list[str]:
    return [VOCAB[int(i)] for i in ids]


# ---------------------------------------------------------------- ICL tasks


def icl_pair(task: str, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """One (x, y) pair of `task` as word lists."""
    if task in ("increment", "decrement"):
        n = int(rng.integers(1, 99))
        return [str(n)], [str(n + 1 if task == "increment" else n - 1)]
    p, q = rng.choice(25, size=2, replace=False)  # letters a-y, so every p has a successor
    p, q = LETTERS[p], LETTERS[q]
    y = {
        "reverse2": [q, p],
        "copy_first": [p],
        "copy_second": [q],
        "successor": [LETTERS[LETTERS.index(p) + 1]],
    }[task]
    return [p, q], y


def icl_prompt(demos: list[tuple[list[str], list[str]]], query: list[str]) -> list[str]:
    """<bos> x → y ; ... ; x_q →  (the answer follows)."""
    out = ["<bos>"]
    for x, y in demos:
        out += [*x, "→", *y, ";"]
    return out + [*query, "→"]


def icl_sequence(task: str, shots: int, rng: np.random.Generator) -> list[str]:
    pairs = [icl_pair(task, rng) for _ in range(shots + 1)]
    return icl_prompt(pairs[:-1], pairs[-1][0]) + pairs[-1][1] + ["<eos>"]


def shuffle_labels(
    demos: list[tuple[list[str], list[str]]], rng: np.random.Generator
) -> list[tuple[list[str], list[str]]]:
    """Todd's corrupted demonstrations: the same inputs and the same multiset of labels, with
    the labels permuted so that at least one pairing changes (when two labels differ)."""
    labels = [y for _, y in demos]
    if len({tuple(y) for y in labels}) < 2:
        raise ValueError("label shuffling needs at least two different labels")
    while True:
        perm = rng.permutation(len(labels))
        shuffled = [labels[i] for i in perm]
        if shuffled != labels:
            return [(x, y) for (x, _), y in zip(demos, shuffled)]


# ---------------------------------------------------------------- graph navigation


@dataclasses.dataclass(frozen=True)
class GraphInstance:
    edges: tuple[tuple[str, str], ...]
    start: str
    target: str
    steps: tuple[tuple[str, str, str], ...]  # (at, kind in STEP_WORDS, destination or "")

    def neighbours(self, node: str) -> list[str]:
        return sorted(
            {b for a, b in self.edges if a == node} | {a for a, b in self.edges if b == node}
        )

    def prompt(self) -> list[str]:
        out = ["<bos>", "graph"]
        for i, (a, b) in enumerate(self.edges):
            out += [a, b] + ([","] if i < len(self.edges) - 1 else [";"])
        return out + ["path", self.start, "→", self.target, ":"]

    def trace(self) -> list[str]:
        """The reference steps after the prompt, <eos> included."""
        out = []
        for at, kind, dest in self.steps:
            out += ["at", at, "nb", *self.neighbours(at), kind]
            out += [dest, ";"] if dest else []
        return out + ["<eos>"]


def _random_graph(rng: np.random.Generator) -> tuple[tuple[str, str], ...]:
    order = rng.permutation(len(NODES))
    edges = set()
    for i in range(1, len(order)):  # random tree: each node joins an earlier one
        a, b = NODES[order[i]], NODES[order[rng.integers(0, i)]]
        edges.add(tuple(sorted((a, b))))
    while len(edges) < len(NODES) - 1 + EXTRA_EDGES:
        a, b = rng.choice(len(NODES), 2, replace=False)
        edges.add(tuple(sorted((NODES[a], NODES[b]))))
    edges = sorted(edges)
    return tuple(edges[i] for i in rng.permutation(len(edges)))


def _shortest_path(inst_edges, start: str, target: str) -> list[str]:
    nb = {n: set() for n in NODES}
    for a, b in inst_edges:
        nb[a].add(b)
        nb[b].add(a)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for n in frontier:
            for m in sorted(nb[n]):
                if m not in prev:
                    prev[m] = n
                    nxt.append(m)
        frontier = nxt
    path = [target]
    while path[-1] != start:
        path.append(prev[path[-1]])
    return path[::-1]


def graph_instance(rng: np.random.Generator, detour_p: float = DETOUR_P) -> GraphInstance:
    """A random graph, a start/target pair at distance >= 2, and the reference steps."""
    edges = _random_graph(rng)
    while True:
        s, t = rng.choice(len(NODES), 2, replace=False)
        path = _shortest_path(edges, NODES[s], NODES[t])
        if len(path) >= 3:
            break
    probe = GraphInstance(edges, path[0], path[-1], ())
    leaves = {n for n in NODES if len(probe.neighbours(n)) == 1}
    eligible = [
        (i, leaf)
        for i, node in enumerate(path[:-1])
        for leaf in probe.neighbours(node)
        if leaf in leaves and leaf not in path
    ]
    detour = None
    if eligible and rng.random() < detour_p:
        detour = eligible[rng.integers(len(eligible))]
    steps = []
    for i, node in enumerate(path[:-1]):
        if detour is not None and detour[0] == i:
            steps += [(node, "go", detour[1]), (detour[1], "back", node)]
        steps.append((node, "go", path[i + 1]))
    steps.append((path[-1], "check", ""))
    return GraphInstance(edges, path[0], path[-1], tuple(steps))


def graph_sequence(rng: np.random.Generator) -> list[str]:
    inst = graph_instance(rng)
    return inst.prompt() + inst.trace()


# ---------------------------------------------------------------- the training mixture


def mixture_stream(n_sequences: int, seed: int, icl_share: float = 0.5) -> np.ndarray:
    """`n_sequences` sequences (ICL with 1-12 shots over all six ICL tasks, or graph traces),
    concatenated -> [n_tokens] int32 (each sequence runs from <bos> to <eos>)."""
    rng = np.random.default_rng(seed)
    tasks = ICL_TASKS + DISTRACTORS
    ids = []
    for _ in range(n_sequences):
        if rng.random() < icl_share:
            seq = icl_sequence(tasks[rng.integers(len(tasks))], int(rng.integers(1, 13)), rng)
        else:
            seq = graph_sequence(rng)
        ids += encode(seq)
    return np.asarray(ids, np.int32)


def windows(stream: np.ndarray, seq_len: int) -> np.ndarray:
    """Non-overlapping windows [n, seq_len + 1] of the token stream."""
    n = len(stream) // (seq_len + 1)
    return stream[: n * (seq_len + 1)].reshape(n, seq_len + 1)
