"""The panel's two modal dialogs: a line of text (`Prompt`) and a yes/no question (`Confirm`)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from autodev.guard.display import line


class Prompt(ModalScreen[str | None]):
    """One line of text from the user; Enter submits, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", allow_empty: bool = False):
        super().__init__()
        self.title_text, self.placeholder, self.allow_empty = title, placeholder, allow_empty

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(line(self.title_text)))  # Text: a title is never read as markup
            yield Input(placeholder=self.placeholder, id="prompt-input")
            yield Label("Enter sends · Escape cancels", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip() or self.allow_empty:
            self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    BINDINGS = [Binding("y", "yes", "Yes"), Binding("n,escape", "no", "No")]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(line(self.question)))
            yield Label("y: yes · n: no", classes="hint")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)
