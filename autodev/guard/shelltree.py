"""The syntax tree tree-sitter-bash makes of a command line, for `shellparse` to walk; past the
parser's known misreadings (non-ASCII bytes, `==` read as a test operator in a plain command, a
backtick inside single quotes), and, for a tree with errors, the reason the line cannot be read.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tree_sitter import Language, Node, Parser

from autodev.guard.shellwords import UnparseableCommand, open_quote

GLOB = re.compile(r"[*?]|\[[^\s;&|()<>\[]*\]")
BRACE = re.compile(r"\{[^\s{}]*(,|\.\.)[^\s{}]*\}")
_ASCII_ONLY = bytes(range(128)) + b"a" * 128
MAX_REPARSES = 8  # a line read again with its `==` / `=~` words masked, at most


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_bash

    return Parser(Language(tree_sitter_bash.language()))


def syntax_tree(src: bytes) -> Node:
    """The tree of the command line `src` (UTF-8 bytes): node offsets are those of `src`, whose
    words are read from `src` itself. Raises UnparseableCommand for a tree with errors."""
    # tree-sitter-bash's scanner can read outside its tables on non-ASCII input and crash the
    # process (tree-sitter-bash#337: `{` then a 4-byte character). Bash treats those bytes as
    # word characters, so the parser sees an ASCII letter in their place; offsets are kept and
    # words are read from the original bytes.
    text = src.translate(_ASCII_ONLY)
    root = _parser().parse(text).root_node
    # tree-sitter-bash reads `==` and `=~` in a plain command as test operators: what follows
    # becomes a `regex` that can swallow the rest of a subshell (`( echo == x; git push )`
    # hid the push) or a number that takes a redirection's descriptor (`git == 2>&1`). Bash
    # sees plain words there, so the parser is given letters in their place (words are
    # still read from the original bytes) until no command holds such an operator.
    for _ in range(MAX_REPARSES):
        operators = _command_operators(root)
        if not operators:
            break
        masked = bytearray(text)
        for start, end in operators:
            masked[start:end] = b"q" * (end - start)
        text = bytes(masked)
        root = _parser().parse(text).root_node
    else:
        raise UnparseableCommand("`==` or `=~` used as words too many times in one line")
    if root.has_error and b"`" in text:
        root, text = _quoted_backticks(root, text)
    if root.has_error:
        raise _diagnose(src, root)
    return root


def destinations(redirect: Node) -> list[Node]:
    return [
        d
        for i, d in enumerate(redirect.children)
        if redirect.field_name_for_child(i) == "destination" or (d.is_named and d.type != "file_descriptor")
    ]


def _raw_strings(root: Node) -> set[tuple[int, int]]:
    found: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "raw_string":
            found.add((n.start_byte, n.end_byte))
        stack.extend(n.children)
    return found


def _quoted_backticks(root: Node, text: bytes) -> tuple[Node, bytes]:
    """tree-sitter-bash can misread a backtick inside single quotes after a backtick substitution
    (`b `ls` && c '` '` fails where `b `ls` && c '`'` parses; make fuzz found it). In single
    quotes a backtick is a plain character, so the parser is given a letter in its place. The
    new tree is taken only if it has no error and sees each masked string as single-quoted too;
    else the first tree stands (and the command is unparseable)."""
    quoted = {r for r in _raw_strings(root) if b"`" in text[r[0] : r[1]]}
    if not quoted:
        return root, text
    masked = bytearray(text)
    for start, end in quoted:
        masked[start:end] = text[start:end].replace(b"`", b"q")
    again = _parser().parse(bytes(masked)).root_node
    if again.has_error or not quoted <= _raw_strings(again):
        return root, text
    return again, bytes(masked)


def contains(node: Node, types: set[str]) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            return True
        stack.extend(n.children)
    return False


def _command_operators(root: Node) -> list[tuple[int, int]]:
    """Byte ranges of the `==` / `=~` tokens tree-sitter put directly in a simple command."""
    found: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("==", "=~") and n.parent is not None and n.parent.type == "command":
            found.append((n.start_byte, n.end_byte))
        stack.extend(n.children)
    return found


def _diagnose(raw: bytes, root: Node) -> UnparseableCommand:
    """Say why the tree has errors, as precisely as the first bad node allows."""
    bad = None
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_error or n.is_missing:
            bad = n
            break
        if n.has_error:
            stack.extend(reversed(n.children))
    src = raw.decode("utf-8", "surrogatepass")
    quote = open_quote(src)
    if quote:
        return UnparseableCommand(quote)
    if bad is not None and bad.is_missing:
        tok = bad.type
        parent = bad.parent
        if tok == ")" and parent is not None and parent.type == "subshell" and parent.parent is not None:
            if parent.parent.type == "command":
                return UnparseableCommand("a `(` appears in the middle of a command")
        if tok == "}" and parent is not None and parent.type == "expansion":
            return UnparseableCommand("a `${` is not closed")
        if tok == ")":
            return UnparseableCommand("a `)` is missing (unbalanced parentheses)")
        return UnparseableCommand(f"a `{tok}` is missing")
    text = (
        raw[bad.start_byte : bad.end_byte].decode("utf-8", "surrogatepass").strip() if bad is not None else ""
    )
    if text.startswith(")"):
        return UnparseableCommand("a `)` has no matching `(`")
    if re.fullmatch(r"\d*[<>&|]+", text):
        return UnparseableCommand("a redirection has no target")
    line_start = src.rfind("\n", 0, bad.start_byte if bad is not None else 0) + 1
    first = re.match(r"[ \t]*([^\s;&|<>()]+)", src[line_start:])
    if first and (GLOB.search(first.group(1)) or BRACE.search(first.group(1))):
        return UnparseableCommand(
            f"the command name `{first.group(1)}` is only known at run time", opaque=True
        )
    return UnparseableCommand(f"the shell parser cannot read `{text[:60] or src[:60]}`")
