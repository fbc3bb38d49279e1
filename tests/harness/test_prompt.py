"""The turn prompt is bounded: its size does not grow with the thread."""

from __future__ import annotations

import re

import pytest

from autodev.harness.prompt import (
    INDEX_LINES,
    LINE_CHARS,
    USER_CHARS,
    build_turn_prompt,
    index_line,
    render_index,
)
from autodev.records import Post

TAIL = 200  # what the daemon hands the prompt builder (the thread's newest records)
SPEAKERS = ("ann", "bob", "user")


def post(seq: int, frm: str | None = None, text: str | None = None, **extra) -> Post:
    frm = frm or SPEAKERS[seq % 3]
    kind = extra.pop("kind", "say")
    return Post.model_validate(
        {
            "seq": seq,
            "from": frm,
            "kind": kind,
            "text": text if text is not None else f"post {seq} from {frm} " + "lorem ipsum " * 40,
            "handoff": extra.pop("handoff", None),
            "ts": "2026-01-01T00:00:00.000Z",
            **extra,
        }
    )


def thread_tail(n: int) -> list[Post]:
    return [post(s) for s in range(max(1, n - TAIL + 1), n + 1)]


def prompt(n: int, cursor: int = 0, tail: list[Post] | None = None, **kw) -> str:
    return build_turn_prompt(
        name="ann",
        turn=7,
        last_seq=n,
        cursor=cursor,
        objective="Build the thing",
        tail=thread_tail(n) if tail is None else tail,
        **kw,
    )


def index_section(text: str) -> list[str]:
    after = text.split("New on the thread since your last turn:\n", 1)[1]
    return [line for line in after.splitlines() if line.startswith(("#", "("))]


def test_length_does_not_grow_with_the_thread():
    sizes = {n: len(prompt(n)) for n in (10, 1_000, 10_000)}
    # Only the digits of the seq numbers may differ.
    assert max(sizes.values()) - min(sizes.values()) < 100, sizes
    assert max(sizes.values()) < 6_000, sizes
    # Same for a participant that spoke recently on a long thread.
    assert abs(len(prompt(10_000, cursor=9_990)) - sizes[10]) < 100


@pytest.mark.parametrize("n", [10, 1_000, 10_000])
def test_index_has_at_most_8_short_lines(n):
    lines = [ln for ln in index_section(prompt(n)) if ln.startswith("#")]
    assert len(lines) == INDEX_LINES
    assert all(len(ln) <= LINE_CHARS for ln in lines), [len(ln) for ln in lines]
    assert [int(ln[1:].split()[0]) for ln in lines] == list(range(n - 7, n + 1))
    assert all(ln.endswith("…") for ln in lines)  # the long texts were cut


@pytest.mark.parametrize("n, cursor", [(10, 0), (1_000, 0), (10_000, 0), (10_000, 4_321)])
def test_older_new_posts_collapse_into_a_count_with_the_call(n, cursor):
    text = prompt(n, cursor=cursor)
    first_shown = n - INDEX_LINES + 1
    older = n - cursor - INDEX_LINES
    expected = f"({older} earlier new posts: read_thread(from_seq={cursor + 1}, to_seq={first_shown - 1}))"
    assert expected in text
    assert index_section(text)[0] == expected


def test_few_new_posts_have_no_count_line():
    text = prompt(50, cursor=45)
    idx = index_section(text)
    assert [ln.split()[0] for ln in idx] == ["#46", "#47", "#48", "#49", "#50"]
    assert "earlier new posts" not in text


def test_nothing_new():
    text = prompt(50, cursor=50)
    assert "(nothing new)" in text
    assert render_index([], 0, 50) == "(nothing new)"


def test_long_user_message_is_cut_at_4000_with_a_note():
    body = "A" * USER_CHARS + "B" * 6_000
    tail = [post(s) for s in range(1, 20)] + [post(20, "user", body)]
    text = prompt(20, cursor=0, tail=tail)
    assert "A" * USER_CHARS + "\n[cut at 4000 characters; read_thread(from_seq=20) for all of it]" in text
    assert "AB" not in text and "BBBB" not in text


def test_short_user_message_arrives_whole():
    body = "please add a --verbose flag\nand document it"
    tail = [post(1, "bob"), post(2, "user", body)]
    text = prompt(2, cursor=0, tail=tail)
    assert body in text
    assert "[cut at" not in text


def test_only_the_newest_three_user_messages_in_full():
    tail = []
    for s in range(1, 31):
        if s % 5 == 0:  # user messages at 5, 10, ..., 30
            tail.append(post(s, "user", f"MSG{s:02d} " + f"<body {s}> " * 60))
        else:
            tail.append(post(s, "bob"))
    text = prompt(30, cursor=0, tail=tail)
    for s in (20, 25, 30):
        assert f"MSG{s:02d} " + f"<body {s}> " * 60 in text
    for s in (5, 10, 15):
        assert f"<body {s}> " * 60 not in text
    # Newest last.
    assert text.index("MSG20") < text.index("MSG25") < text.index("MSG30")


def test_user_messages_already_seen_are_not_repeated():
    tail = [post(1, "user", "OLD-ASK " * 20), post(2, "ann"), post(3, "bob")]
    text = prompt(3, cursor=2, tail=tail)
    assert "OLD-ASK" not in text
    assert "Messages from the user" not in text


def test_index_line_shape():
    line = index_line(
        post(
            12,
            "ann",
            "did the\n  thing",
            kind="work_done",
            handoff="bob",
            credit={"commits": ["abc"], "files": []},
        )
    )
    assert line == "#12 ann work_done→bob (credited): did the thing"
    assert (
        index_line(post(3, "bob", "x", kind="work_done", credit=None)) == "#3 bob work_done (not credited): x"
    )
    long = index_line(post(4, "bob", "word " * 100))
    assert len(long) == LINE_CHARS and long.endswith("…")


def test_objective_is_bounded_and_notes_appear():
    text = build_turn_prompt(
        name="ann",
        turn=1,
        last_seq=0,
        cursor=0,
        objective="O" * 50_000,
        tail=[],
        notes=["the audit reopened: tests fail"],
    )
    assert "O" * 4000 in text and "O" * 4001 not in text
    assert "Note: the audit reopened: tests fail" in text
    assert len(text) < 5_000
    assert not re.search(r"\{\{\w+\}\}", text)
