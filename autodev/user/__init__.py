"""What the user sees and does, shared by the CLI and the panel: the actions, status gathering
and rendering."""
