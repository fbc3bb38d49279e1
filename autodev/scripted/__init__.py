"""The scripted model (SPEC §11): steps per participant in a TOML script, answered offline.

- `script.py`: the script file, loaded and checked;
- `answers.py`: which step answers a request (the ledger) and what it answers with;
- `server.py`: the OpenAI-compatible HTTP server that litellm reaches (runs and end-to-end tests);
- `model.py`: the same script as an in-process `Model` (fast tests of the turn loop);
- `contract.py`, `contract_anthropic.py`, `contract_gemini.py`: servers on the same scripts that
  speak a provider's own protocol and refuse what it refuses (SPEC §13);
- `__main__.py`: `python -m autodev.scripted SCRIPT` serves one by hand.
"""

from autodev.scripted.script import Script, ScriptError, Step, ToolCallSpec, load_script
from autodev.scripted.server import ScriptedServer

__all__ = ["Script", "ScriptError", "ScriptedServer", "Step", "ToolCallSpec", "load_script"]
