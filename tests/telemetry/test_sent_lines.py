"""telemetry.jsonl's bytes: a mark is written as main wrote it (key order included), from its
model, and read back into it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from autodev.records.exported import Exported
from autodev.telemetry.sent import Sent, destination

URL = "http://127.0.0.1:4318/v1/traces"
# As main (8bd0d8a) wrote it.
LINE = '{"id":"abcdef123456:r1:t1","type":"exported","dest":"abcdef123456","run":"r1","part":"t1","spans":3,"ts":1796472235.3342311}'


def test_a_line_main_wrote_is_read_and_written_back_byte_for_byte() -> None:
    mark = Exported.model_validate(json.loads(LINE))
    assert json.dumps(mark.dump(), ensure_ascii=False, separators=(",", ":")) == LINE


def test_a_mark_is_written_with_mains_keys_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.jsonl"
    sent = Sent(path, URL)
    sent.mark("r1", "t2", 5)
    sent.close()
    dest = destination(URL)
    text = path.read_text()
    assert re.fullmatch(
        rf'\{{"id":"{dest}:r1:t2","type":"exported","dest":"{dest}","run":"r1","part":"t2","spans":5,"ts":\d+\.\d+\}}\n',
        text,
    ), text
    assert Sent(path, URL).has("r1", "t2") and not Sent(path, "http://other/v1/traces").has("r1", "t2")
