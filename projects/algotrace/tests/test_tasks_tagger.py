"""Label shuffling, the step tagger on hand-written traces, k-means, the mixture generator."""

import numpy as np

from projects.algotrace import tagger, tasks
from projects.algotrace.kmeans import kmeans, purity

EDGES = (("A", "B"), ("B", "C"), ("B", "D"), ("C", "E"))


def test_label_shuffling_keeps_multiset_and_changes_a_pairing():
    rng = np.random.default_rng(0)
    for task in tasks.ICL_TASKS:
        for _ in range(50):
            demos = [tasks.icl_pair(task, rng) for _ in range(10)]
            out = tasks.shuffle_labels(demos, rng)
            assert [x for x, _ in out] == [x for x, _ in demos]
            assert sorted(map(tuple, (y for _, y in out))) == sorted(
                map(tuple, (y for _, y in demos))
            )
            assert any(a[1] != b[1] for a, b in zip(out, demos))


def test_tagger_recognizes_each_step_type():
    words = ("at A nb B go B ; at B nb A C D go D ; at D nb B back B ; "
             "at B nb A C D go C ; at C nb B E go E ; at E nb C check <eos>").split()  # fmt: skip
    steps = tagger.split_steps(words)
    assert [s.label for s in steps] == ["path", "path", "back", "path", "path", "check"]
    assert steps[2].at == "D" and steps[2].dest == "B" and steps[1].neighbours == ("A", "C", "D")
    assert tagger.count_steps(words) == {"path": 4, "check": 1, "back": 1, "other": 0}
    labels = tagger.token_labels(words)
    assert labels[:6] == ["path"] * 6 and labels[-1] == "after_end"
    assert labels[words.index("back")] == "back"
    assert tagger.path_valid(words, EDGES, "A")
    assert tagger.task_success(words, EDGES, "A", "E")
    assert not tagger.task_success(words, EDGES, "A", "C")  # checked at the wrong node


def test_tagger_flags_malformed_and_invalid_steps():
    bad_edge = "at A nb B go C ; at C nb B E check <eos>".split()
    assert tagger.count_steps(bad_edge)["path"] == 1 and not tagger.path_valid(bad_edge, EDGES, "A")
    jump = "at A nb B go B ; at C nb B E check <eos>".split()  # not where the move led
    assert not tagger.path_valid(jump, EDGES, "A")
    garbled = "at A go ; nb B check check <eos>".split()
    assert [s.label for s in tagger.split_steps(garbled)] == ["other"]
    early = "at A nb B check at A nb B go B ; at B nb A C D check <eos>".split()
    assert tagger.count_steps(early)["check"] == 2
    assert not tagger.task_success(early, EDGES, "A", "B")
    no_end = "at A nb B go B ; at B nb A C D check".split()
    assert tagger.path_valid(no_end, EDGES, "A") and not tagger.task_success(
        no_end, EDGES, "A", "B"
    )


def test_reference_traces_are_valid_and_detours_near_20_percent():
    rng = np.random.default_rng(1)
    insts = [tasks.graph_instance(rng) for _ in range(600)]
    for inst in insts[:200]:
        words = inst.trace()
        assert tagger.task_success(words, inst.edges, inst.start, inst.target)
        assert tagger.count_steps(words)["other"] == 0
    share = np.mean([any(k == "back" for _, k, _ in i.steps) for i in insts])
    assert 0.12 < share < 0.28, share


def test_icl_query_format_is_shared_by_a_distractor():
    rng = np.random.default_rng(2)
    for task, other in (("increment", "decrement"), ("copy_first", "copy_second")):
        assert len(tasks.icl_pair(task, rng)[0]) == len(tasks.icl_pair(other, rng)[0])
    x, y = tasks.icl_pair("reverse2", rng)
    assert y == x[::-1]


def test_kmeans_is_deterministic_and_finds_separated_blobs():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, 5)) * 20
    x = np.concatenate([c + rng.normal(size=(40, 5)) for c in centres])
    labels = np.repeat(np.array(["a", "b", "c"]), 40)
    a1, c1 = kmeans(x, 3, seed=7)
    a2, c2 = kmeans(x, 3, seed=7)
    assert np.array_equal(a1, a2) and np.array_equal(c1, c2)
    assert purity(a1, labels)[0] == 1.0
    assert purity(np.zeros(120, int), labels)[0] == 1 / 3
