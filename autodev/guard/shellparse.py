"""Which simple commands a bash command line would run, read from tree-sitter-bash's syntax tree.

The command guard (`gates.py`) matches gateRequired patterns against simple commands, so it must
see through compound commands (`cd x && git push`), pipes, subshells, command substitution
(also inside double quotes and here-documents) and the wrappers that run another command
(`sudo`, `env`, `timeout`, `xargs`, `find -exec`, `sh -c '...'`, `eval`, git aliases given with
`-c`). tree-sitter-bash gives the structure (`shelltree`); this module turns it into parts: each simple command's
words after quote removal, and the chain of commands it unwraps to. What a command runs inside
it (`sh -c`, `eval`, `xargs`, `find -exec`, ...) is read by `shellnested`.

Anything the tree cannot vouch for is refused, never guessed: a tree with ERROR or MISSING nodes
(unbalanced quotes, a stray `)`), a command name computed at run time, `eval` or `sh -c` of
computed text, a shell reading its commands from input, `case`, a substitution inside arithmetic,
git configuration that runs programs (`-c core.hooksPath=...`). `UnparseableCommand.opaque` marks
those where code runs that no parser could read from the command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from autodev.guard.shellnested import assignment, command
from autodev.guard.shelltree import BRACE, GLOB, contains, destinations, syntax_tree
from autodev.guard.shellwords import (
    QUOTED,
    Part,
    UnparseableCommand,
    Word,
    c_unescape,
    dq_unescape,
    unescape,
)

__all__ = ["MAX_DEPTH", "MAX_OPEN", "Part", "UnparseableCommand", "Word", "parse"]

MAX_DEPTH = 8  # nested sh -c / eval / alias levels before we give up (and refuse when relevant)
MAX_OPEN = 64  # nested ( / $( / ${ inside one script


_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
_SUBSTITUTIONS = {"command_substitution", "process_substitution"}
_WORDLIKE = {
    "word",
    "string",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "simple_expansion",
    "expansion",
    "arithmetic_expansion",
    "number",
    "test_operator",
    *_SUBSTITUTIONS,
}


def parse(command: str) -> list[Part]:
    """The simple commands `command` would run, outer commands before the ones they contain.
    Raises UnparseableCommand when that cannot be determined."""
    try:
        return _Walker(command).parse()
    except RecursionError:  # MAX_OPEN bounds the walk; a caller deep in its own stack may still hit this
        raise UnparseableCommand(f"more than {MAX_OPEN} nested parentheses") from None


@dataclass
class _Flags:
    """What the pieces of one word have shown so far."""

    dynamic: bool = False  # an expansion or substitution: the value is known at run time
    brace: bool = False  # a brace expression: the shell may make several words of it


class _Walker:
    def __init__(self, src: str, depth: int = 0, open_: int = 0):
        if depth > MAX_DEPTH:
            raise UnparseableCommand(f"commands nested more than {MAX_DEPTH} levels deep")
        self.depth = depth
        self.src = src.encode("utf-8", "surrogatepass")
        self.open = open_  # tree levels being walked, nested scripts included

    def text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def _adjacent(self, nodes: list[Node]) -> list[list[Node]]:
        """Group nodes that make one shell word: touching (tree-sitter sometimes splits `$"..."`),
        or separated only by backslash-newlines, which bash removes (`gi\\<newline>t` is `git`;
        tree-sitter takes them for blanks)."""
        groups: list[list[Node]] = []
        for n in nodes:
            gap = self.src[groups[-1][-1].end_byte : n.start_byte] if groups else b" "
            if not gap.replace(b"\\\n", b""):
                groups[-1].append(n)
            else:
                groups.append([n])
        return groups

    def parse(self) -> list[Part]:
        root = syntax_tree(self.src)
        out: list[Part] = []
        self._walk(root, out)
        return out

    # - structure -

    def _walk(self, node: Node, out: list[Part]) -> None:
        self.open += 1
        if self.open > 2 * MAX_OPEN:  # bounded so deep nesting cannot exhaust Python's stack
            raise UnparseableCommand(f"more than {MAX_OPEN} nested parentheses")
        try:
            self._node(node, out)
        finally:
            self.open -= 1

    def _node(self, node: Node, out: list[Part]) -> None:
        t = node.type
        if t == "comment":
            return
        if t == "command":
            self._simple(node.children, out)
            return
        if t == "command_substitution" and node.child_count and node.children[0].type == "`":
            # bash removes one level of \` \$ \\ escapes, then parses: nested backticks run too
            inner = self.text(node)[1:-1] if self.text(node).endswith("`") else self.text(node)[1:]
            self.nested(re.sub(r"\\([$`\\])", r"\1", inner), out)
            return
        if t == "redirected_statement":
            body = node.child_by_field_name("body")
            rest = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) != "body"]
            if body is not None and body.type == "command":
                self._simple([*body.children, *rest], out)
                return
            self._redirected(body, rest, out)
            return
        if t == "case_statement":
            raise UnparseableCommand("`case` statements are not analysed")
        if t == "arithmetic_expansion" or (
            t in ("compound_statement", "c_style_for_statement")
            and node.child_count
            and node.children[0].type in ("((", "for")
        ):
            for c in node.named_children:
                if c.type == "do_group":
                    self._walk(c, out)
                elif contains(c, _SUBSTITUTIONS):
                    raise UnparseableCommand("a command substitution inside arithmetic")
            return
        if t == "test_command" and node.child_count and node.children[0].type == "[":
            self._bracket_test(node, out)
            return
        if t == "function_definition":  # the body runs when called: its commands count now
            self._redirected(
                node.child_by_field_name("body"), [c for c in node.children if c.type in _REDIRECTS], out
            )
            return
        if t == "heredoc_redirect":
            self._heredoc(node, out)
            return
        if t == "variable_assignment":
            name = node.child_by_field_name("name")
            value = [c for c in node.children[2:] if c.type != "comment"]
            if name is None or not value:
                return
            if any(c.type == "array" for c in value):
                for c in value:
                    self._walk(c, out)
                return
            word = self._word(value, out)  # walks the substitutions in the value
            assignment(self, self.text(name), word, out)
            return
        for c in node.named_children:
            self._walk(c, out)

    def _redirected(self, body: Node | None, redirects: list[Node], out: list[Part]) -> None:
        """A compound command with redirections: no word may follow them (`{ a; } > f b`)."""
        if body is not None:
            self._walk(body, out)
        stray = [d for r in redirects if r.type == "file_redirect" for d in destinations(r)[1:]]
        if stray:
            raise UnparseableCommand(f"`{self.text(stray[0])}` follows the redirection of a compound command")
        self._simple(redirects, out)

    def _simple(self, children: list[Node], out: list[Part]) -> None:
        """A simple command: its words, then what its substitutions and redirections run."""
        nested: list[Part] = []
        word_nodes: list[Node] = []
        assigns: list[str] = []
        stdin: Word | None = None
        for c in children:
            t = c.type
            if t == "variable_assignment":
                assigns.append(self.text(c))
                self._walk(c, nested)
            elif t == "heredoc_redirect":
                stdin = self._heredoc(c, nested)
            elif t == "herestring_redirect":
                given = [n for n in c.named_children if n.type != "file_descriptor"]
                stdin = self._word(given, nested) if given else None
            elif t == "file_redirect":
                dests = destinations(c)
                for d in dests[:1]:
                    self._walk(d, nested)
                word_nodes.extend(dests[1:])  # `> f y`: y is an argument, not the target
            elif t in _REDIRECTS:
                self._walk(c, nested)
            elif t == "subshell":
                raise UnparseableCommand("a `(` appears in the middle of a command")
            elif t == "comment":
                continue
            elif t == "command_name":
                word_nodes.extend(c.children)
            else:
                word_nodes.append(c)
        words = tuple(self._word(g, nested) for g in self._adjacent(word_nodes))
        if words:
            command(self, words, out, assigns=assigns, stdin=stdin)
        out.extend(nested)

    def _bracket_test(self, node: Node, out: list[Part]) -> None:
        """`[ -f x ]` is the command `[` (tree-sitter reads it as a test expression)."""
        leaves: list[Node] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type in _WORDLIKE or not n.children:
                leaves.append(n)
            else:
                stack.extend(reversed(n.children))
        nested: list[Part] = []
        words = tuple(self._word(g, nested) for g in self._adjacent(leaves))
        command(self, words, out)
        out.extend(nested)

    def _heredoc(self, node: Node, out: list[Part]) -> Word:
        """A here-document is data, but the shell expands its $(...) and `...` unless the
        delimiter is quoted. tree-sitter-bash does not parse backticks (nor `<<-` bodies) there,
        so the body is read again as the inside of a double-quoted word. Returns the text the
        command reads (`dynamic` when expansions change it)."""
        for c in node.named_children:
            if c.type not in ("heredoc_start", "heredoc_end", "heredoc_body"):
                self._walk(c, out)  # the rest of the command line after `<<EOF` (a pipe, ...)
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = "".join(self.text(c) for c in node.children if c.type == "heredoc_body")
        if any(c.type == "<<-" for c in node.children):
            body = re.sub(r"(?m)^\t+", "", body)
        if start is not None and re.search(r"['\"\\]", self.text(start)):
            return Word(body, body)
        if "$" not in body and "`" not in body:
            return Word(re.sub(r"\\([$`\\])|\\\n", r"\1", body), body)
        escaped = re.sub(
            r'(\\*)"', lambda m: m.group(1) + ("\\" if len(m.group(1)) % 2 == 0 else "") + '"', body
        )
        parts = _Walker(f'echo "{escaped}"', self.depth, self.open).parse()
        out.extend(parts[1:])
        return Word(body, body, dynamic=True)

    # - words -

    def _word(self, nodes: list[Node], nested: list[Part]) -> Word:
        text: list[str] = []
        skeleton: list[str] = []
        flags = _Flags()
        for i, n in enumerate(nodes):
            if n.type == "$" and i + 1 < len(nodes) and nodes[i + 1].type == "string":
                continue  # $"...": a translatable string, otherwise double-quoted
            self._piece(n, text, skeleton, nested, flags)
        unquoted = "".join(skeleton)
        raw = self.src[nodes[0].start_byte : nodes[-1].end_byte].decode("utf-8", "surrogatepass")
        return Word(
            "".join(text),
            raw,
            dynamic=flags.dynamic,
            glob=bool(GLOB.search(unquoted)),
            brace=flags.brace or bool(BRACE.search(unquoted)),
        )

    def _piece(
        self, n: Node, text: list[str], skeleton: list[str], nested: list[Part], flags: _Flags
    ) -> None:
        t = n.type
        raw = self.text(n)
        if t == "concatenation":
            for c in n.children:
                self._piece(c, text, skeleton, nested, flags)
        elif t == "raw_string":
            text.append(raw[1:-1])
            skeleton.append(QUOTED)
        elif t == "ansi_c_string":
            text.append(c_unescape(raw[2:-1]))
            skeleton.append(QUOTED)
        elif t in ("string", "translated_string"):
            text.append(self._double_quoted(n, nested, flags))
            skeleton.append(QUOTED)
        elif t in ("simple_expansion", "expansion", "arithmetic_expansion", *_SUBSTITUTIONS):
            self._walk(n, nested)
            text.append(raw)
            skeleton.append(QUOTED)
            flags.dynamic = True
        elif t == "brace_expression":
            text.append(raw)
            skeleton.append(raw)
            flags.brace = True
        else:  # word, number and the like: unquoted text with backslash escapes
            plain, skel = unescape(raw)
            text.append(plain)
            skeleton.append(skel)

    def _double_quoted(self, node: Node, nested: list[Part], flags: _Flags) -> str:
        """Quote removal inside "...": `\\` escapes only $ ` " \\ and newline there."""
        out: list[str] = []
        start = node.start_byte + 1
        for c in node.children:
            if c.type == '"' or c.type == "$":
                continue
            if c.type == "string_content":
                continue  # read with the gaps below, from the source
            out.append(dq_unescape(self.src[start : c.start_byte].decode("utf-8", "surrogatepass")))
            self._walk(c, nested)
            out.append(self.text(c))
            flags.dynamic = True
            start = c.end_byte
        end = node.end_byte - 1 if self.src[node.end_byte - 1 : node.end_byte] == b'"' else node.end_byte
        out.append(dq_unescape(self.src[start:end].decode("utf-8", "surrogatepass")))
        return "".join(out)

    def nested(self, script: str, out: list[Part]) -> None:
        """The parts of a script this line runs (`sh -c`, `eval`, a backtick body, ...)."""
        out.extend(_Walker(script, self.depth + 1, self.open).parse())
