"""Secrets named by the environment never reach records: nested values are redacted."""

from __future__ import annotations

import json

from autodev.guard.redact import Redactor, secret_names
from autodev.records.events import UnknownEvent
from autodev.store.events import Events

KEY = "sk-test-0123456789abcdef"
TOKEN = "ghp_abcdefghijklmnop"
ENV = {
    "FOO_API_KEY": KEY,
    "GITHUB_TOKEN": TOKEN,
    "MY_SECRET": "hunter2hunter2",
    "SHORT_API_KEY": "abc",  # too short to redact safely
    "PATH": "/usr/bin:/bin",  # not a secret name
    "HOME": "/home/someone",
    "CUSTOM_VAR": "custom-value-123456",
}


def test_secret_names_from_env_and_extras():
    names = secret_names(ENV, extra=["CUSTOM_VAR", ""])
    assert names == {"FOO_API_KEY", "GITHUB_TOKEN", "MY_SECRET", "SHORT_API_KEY", "CUSTOM_VAR"}
    assert "PATH" not in names and "HOME" not in names
    assert secret_names(
        {"AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "y", "HF_TOKEN": "z", "API_KEY_FILE": "w"}
    ) == {"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "HF_TOKEN"}


def test_values_replaced_in_nested_dicts_and_lists():
    r = Redactor.from_env(environ=ENV)
    rec = {
        "type": "tool",
        "args": {"cmd": f"curl -H 'Authorization: Bearer {KEY}'"},
        "out": [f"token={TOKEN}", {"deep": [f"x{KEY}y{KEY}", 42, None, True]}],
        "n": 3,
    }
    out = r(rec)
    dumped = json.dumps(out)
    assert KEY not in dumped and TOKEN not in dumped
    assert out["args"]["cmd"] == "curl -H 'Authorization: Bearer [redacted]'"
    assert out["out"][0] == "token=[redacted]"
    assert out["out"][1]["deep"] == ["x[redacted]y[redacted]", 42, None, True]
    assert out["n"] == 3 and out["type"] == "tool"
    # The original record is not modified in place.
    assert KEY in rec["args"]["cmd"]


def test_short_values_are_not_redacted():
    r = Redactor.from_env(environ=ENV)
    assert r("abc is an ordinary word; abcdef too") == "abc is an ordinary word; abcdef too"
    assert "abc" not in r.values


def test_extra_names_are_redacted_too():
    r = Redactor.from_env(["CUSTOM_VAR"], environ=ENV)
    assert r("value custom-value-123456 here") == "value [redacted] here"
    assert Redactor.from_env(environ=ENV)("custom-value-123456") == "custom-value-123456"


def test_longer_secret_wins_over_its_prefix():
    r = Redactor(["abcdefgh12", "abcdefgh1234567890"])
    assert r("k=abcdefgh1234567890;") == "k=[redacted];"
    assert "1234567890" not in r("k=abcdefgh1234567890;")


def test_no_secrets_returns_input_unchanged():
    r = Redactor.from_env(environ={"PATH": "/bin"})
    rec = {"a": ["b"]}
    assert r(rec) is rec


def test_values_inside_tuples_are_redacted():
    r = Redactor([KEY])
    assert KEY not in json.dumps(r({"argv": ("curl", KEY)}))


def test_events_log_never_holds_the_secret(tmp_path):
    p = tmp_path / "events.jsonl"
    ev = Events(p, "run-1", redact=Redactor.from_env(environ=ENV))
    rec = ev.emit(UnknownEvent(type="tool_started", tool="run_command", args={"cmd": f"echo {KEY}"}))
    ev.close()
    text = p.read_text()
    assert KEY not in text
    assert "[redacted]" in text
    on_disk = json.loads(text)
    assert on_disk == rec
    assert on_disk["type"] == "tool_started" and on_disk["run"] == "run-1" and on_disk["ts"]


def test_learn_adds_values_and_keeps_the_longest_first():
    from autodev.guard.redact import Redactor

    r = Redactor(["first-secret-1"])
    r.learn(["another-longer-secret-2", "short"])
    assert r({"a": "first-secret-1 and another-longer-secret-2 and short"}) == {
        "a": "[redacted] and [redacted] and short"
    }


# -- one policy: the same names are scrubbed from commands and masked in records ---------------

from autodev.guard.redact import MASK, is_secret_name, scrubbed_env  # noqa: E402

SECRETS = [
    "DB_TOKEN",
    "FOO_SECRET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "MY_SECRET_KEY",
    "LITELLM_MASTER_KEY",
    "OPENAI_API_KEY",
    "GITHUB_PAT",
    "db_token",
    "foo_secret",
    "openai_api_key",
    "Service-Password",
]
NOT_SECRETS = ["PATH", "HOME", "PWD", "OLDPWD", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "API_KEY_FILE"]


def test_one_list_decides_scrubbing_and_masking():
    env = {n: f"value-of-{n}-0123456789" for n in SECRETS + NOT_SECRETS}
    scrubbed = scrubbed_env(base=env)
    r = Redactor.from_env(environ=env)
    for n in SECRETS:
        assert is_secret_name(n), n
        assert n not in scrubbed, f"{n} reached a command's environment"
        assert r(f"x {env[n]} y") == f"x {MASK} y", f"{n} was not masked"
    for n in NOT_SECRETS:
        assert not is_secret_name(n), n
        assert scrubbed[n] == env[n]
        assert r(env[n]) == env[n]


def test_extra_names_are_matched_whatever_their_case():
    assert is_secret_name("my_custom_cred", ["MY_CUSTOM_CRED"])
    assert "MY_CUSTOM_CRED" not in scrubbed_env(["my_custom_cred"], base={"MY_CUSTOM_CRED": "x"})


def test_common_encodings_of_a_key_are_masked():
    import base64
    import textwrap

    r = Redactor([KEY])
    assert MASK in r(KEY[::-1])  # `| rev`
    assert MASK in r(KEY.encode().hex()) and MASK in r(KEY.encode().hex().upper())  # `| xxd -p`
    # `tr '\0' '\n' < /proc/$PPID/environ | base64`: the key sits at any offset of a longer
    # stream, and base64 wraps its lines at 76 characters.
    for prefix in ("", "A", "AB", "PATH=/usr/bin\nHOME=/root\nDEMO_API_KEY="):
        for n in range(3):
            stream = (prefix + "x" * n + KEY + "\nNEXT=1\n").encode()
            encoded = base64.encodebytes(stream).decode()  # wrapped at 76 characters
            out = r(encoded)
            assert MASK in out, (prefix, n)
            # what is left cannot be decoded back to the key
            left = out.replace(MASK, "").replace("\n", "")
            assert KEY not in base64.b64decode(left + "===", validate=False).decode("latin-1")
        wrapped_hex = "\n".join(textwrap.wrap((prefix + KEY).encode().hex(), 60))  # xxd -p wraps
        assert MASK in r(wrapped_hex)
    assert MASK in r(base64.urlsafe_b64encode(KEY.encode()).decode())


def test_masking_is_fast_enough_for_every_record():
    import time

    r = Redactor([f"secret-value-{i}-0123456789abcdef" for i in range(8)])
    text = "ordinary tool output line\n" * 800  # ~20 KB, a long tool result
    t0 = time.perf_counter()
    for _ in range(10):
        r(text)
    assert (time.perf_counter() - t0) / 10 < 0.05
