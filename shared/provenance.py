"""Which code produced a result: the git revision, whether the tree is clean, and the fingerprint
of the repository modules a run imported.

A run's fingerprint is the sha256 of the source of every module of this repository that was
loaded when it finished (the library `shared`, the kernels `kernels_pallas` and the run's own
project; other projects never count). An edit anywhere on the run's path changes it; an edit in an
unrelated project does not.
"""

from __future__ import annotations

import hashlib
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
LIBRARY_PACKAGES = ("shared", "kernels_pallas")
# Generated outputs and prose: writing a table or editing a README does not make code dirty.
NOT_CODE = (":!projects/*/results/*", ":!*.md")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def head_revision() -> str:
    """Short hash of HEAD, or "unknown" outside a git checkout."""
    try:
        return _git("rev-parse", "--short", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def dirty_paths() -> list[str]:
    """Code paths that differ from HEAD: modified, staged or untracked (ignored files excluded);
    tables, figures and markdown do not count."""
    try:
        out = _git("status", "--porcelain", "--untracked-files=all", "--", ".", *NOT_CODE)
    except (OSError, subprocess.CalledProcessError):
        return ["(not a git checkout)"]
    return [line[3:] for line in out.splitlines() if line.strip()]


def git_revision() -> str:
    """HEAD's short hash, with "-dirty" when code differs from it."""
    rev = head_revision()
    return rev + ("-dirty" if rev != "unknown" and dirty_paths() else "")


def file_digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _owner(relative: pathlib.Path) -> str | None:
    """'shared', 'kernels_pallas' or 'projects/<name>' for a path inside the repo, else None."""
    parts = relative.parts
    if parts and parts[0] in LIBRARY_PACKAGES:
        return parts[0]
    if len(parts) > 1 and parts[0] == "projects":
        return f"projects/{parts[1]}"
    return None


def imported_modules(project: str) -> dict[str, str]:
    """{repo-relative path: sha256 of its source} for the loaded modules of the library, the
    kernels and `project` (projects/<project>)."""
    wanted = {*LIBRARY_PACKAGES, f"projects/{project}"}
    out = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        path = pathlib.Path(file).resolve()
        try:
            rel = path.relative_to(REPO_ROOT)
        except ValueError:
            continue
        if _owner(rel) in wanted and path.exists():
            out[rel.as_posix()] = file_digest(path)
    return dict(sorted(out.items()))


def fingerprint(modules: dict[str, str]) -> str:
    """One short digest for a {path: sha256} map."""
    text = "\n".join(f"{p} {h}" for p, h in sorted(modules.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def changed_since(modules: dict[str, str]) -> list[str]:
    """The recorded modules whose source differs now (or that no longer exist)."""
    changed = []
    for rel, digest in modules.items():
        path = REPO_ROOT / rel
        if not path.exists() or file_digest(path) != digest:
            changed.append(rel)
    return changed
