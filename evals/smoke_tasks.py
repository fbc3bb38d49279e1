"""The smoke suite's tasks as text: small Python projects, each with a bug to fix or a feature to
add, visible tests that pass at the base commit, hidden tests (the test patch) that fail there,
and a reference fix that makes them pass. `build_smoke.py` turns them into git repositories and
evals/smoke.jsonl; the reference fixes never reach the tasks file."""

from __future__ import annotations

TEST_COMMAND = "python3 -m unittest discover -s tests -t . -q"

TASKS: list[dict] = [
    {
        "id": "wordcount-spaces",
        "kind": "bug",
        "statement": (
            "textstats.word_count counts empty words when the text has several spaces in a row, "
            "tabs or newlines: word_count('a  b') returns 3. It must count words separated by any "
            "whitespace, and return 0 for blank text."
        ),
        "files": {
            "textstats.py": (
                '"""Small statistics over text."""\n\n\n'
                "def word_count(text):\n"
                '    return len(text.split(" "))\n\n\n'
                "def char_count(text):\n"
                "    return len(text)\n"
            ),
            "tests/test_textstats.py": (
                "import unittest\n\nfrom textstats import char_count, word_count\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_simple(self):\n"
                '        self.assertEqual(word_count("one two three"), 3)\n\n'
                "    def test_chars(self):\n"
                '        self.assertEqual(char_count("abc"), 3)\n'
            ),
        },
        "hidden": {
            "tests/test_hidden_wordcount.py": (
                "import unittest\n\nfrom textstats import word_count\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_runs_of_whitespace(self):\n"
                '        self.assertEqual(word_count("a  b\\tc\\nd"), 4)\n\n'
                "    def test_blank(self):\n"
                '        self.assertEqual(word_count("   "), 0)\n'
                '        self.assertEqual(word_count(""), 0)\n'
            )
        },
        "fix": {
            "textstats.py": (
                '"""Small statistics over text."""\n\n\n'
                "def word_count(text):\n"
                "    return len(text.split())\n\n\n"
                "def char_count(text):\n"
                "    return len(text)\n"
            )
        },
    },
    {
        "id": "intervals-merge",
        "kind": "bug",
        "statement": (
            "intervals.merge(pairs) must merge overlapping or touching [start, end] intervals and "
            "return them sorted. It gives wrong answers when the input is not sorted "
            "(merge([(5, 6), (1, 3), (2, 4)]) should be [(1, 4), (5, 6)]) and does not merge "
            "touching intervals ((1, 2) and (2, 3) make (1, 3))."
        ),
        "files": {
            "intervals.py": (
                "def merge(pairs):\n"
                "    out = []\n"
                "    for start, end in pairs:\n"
                "        if out and start < out[-1][1]:\n"
                "            out[-1] = (out[-1][0], max(out[-1][1], end))\n"
                "        else:\n"
                "            out.append((start, end))\n"
                "    return out\n"
            ),
            "tests/test_intervals.py": (
                "import unittest\n\nfrom intervals import merge\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_sorted_overlap(self):\n"
                "        self.assertEqual(merge([(1, 3), (2, 4)]), [(1, 4)])\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_intervals.py": (
                "import unittest\n\nfrom intervals import merge\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_unsorted(self):\n"
                "        self.assertEqual(merge([(5, 6), (1, 3), (2, 4)]), [(1, 4), (5, 6)])\n\n"
                "    def test_touching(self):\n"
                "        self.assertEqual(merge([(1, 2), (2, 3)]), [(1, 3)])\n\n"
                "    def test_empty(self):\n"
                "        self.assertEqual(merge([]), [])\n"
            )
        },
        "fix": {
            "intervals.py": (
                "def merge(pairs):\n"
                "    out = []\n"
                "    for start, end in sorted(pairs):\n"
                "        if out and start <= out[-1][1]:\n"
                "            out[-1] = (out[-1][0], max(out[-1][1], end))\n"
                "        else:\n"
                "            out.append((start, end))\n"
                "    return out\n"
            )
        },
    },
    {
        "id": "roman-parse",
        "kind": "feature",
        "statement": (
            "roman.py can write Roman numerals (to_roman) but not read them. Add from_roman(text) "
            "that returns the integer for a numeral such as 'MCMXCIV' (1994), accepting lower case "
            "too, and raising ValueError for text that is not a numeral."
        ),
        "files": {
            "roman.py": (
                "NUMERALS = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'),\n"
                "            (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]\n\n\n"
                "def to_roman(n):\n"
                "    out = ''\n"
                "    for value, letters in NUMERALS:\n"
                "        while n >= value:\n"
                "            out += letters\n"
                "            n -= value\n"
                "    return out\n"
            ),
            "tests/test_roman.py": (
                "import unittest\n\nfrom roman import to_roman\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_write(self):\n"
                "        self.assertEqual(to_roman(1994), 'MCMXCIV')\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_roman.py": (
                "import unittest\n\nfrom roman import from_roman, to_roman\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_read(self):\n"
                "        self.assertEqual(from_roman('MCMXCIV'), 1994)\n"
                "        self.assertEqual(from_roman('xiv'), 14)\n\n"
                "    def test_round_trip(self):\n"
                "        for n in range(1, 400):\n"
                "            self.assertEqual(from_roman(to_roman(n)), n)\n\n"
                "    def test_not_a_numeral(self):\n"
                "        with self.assertRaises(ValueError):\n"
                "            from_roman('ABC')\n"
            )
        },
        "fix": {
            "roman.py": (
                "NUMERALS = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'),\n"
                "            (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]\n\n\n"
                "def to_roman(n):\n"
                "    out = ''\n"
                "    for value, letters in NUMERALS:\n"
                "        while n >= value:\n"
                "            out += letters\n"
                "            n -= value\n"
                "    return out\n\n\n"
                "def from_roman(text):\n"
                "    rest, total = text.upper(), 0\n"
                "    if not rest:\n"
                "        raise ValueError('empty numeral')\n"
                "    for value, letters in NUMERALS:\n"
                "        while rest.startswith(letters):\n"
                "            total += value\n"
                "            rest = rest[len(letters):]\n"
                "    if rest:\n"
                "        raise ValueError(f'not a Roman numeral: {text!r}')\n"
                "    return total\n"
            )
        },
    },
    {
        "id": "slugify-separators",
        "kind": "bug",
        "statement": (
            "slug.slugify leaves runs of hyphens and hyphens at the ends: slugify('  Hello,  World! ') "
            "gives '--hello---world--' but must give 'hello-world'. Any run of characters that are "
            "not letters or digits becomes one hyphen, and none is left at either end."
        ),
        "files": {
            "slug.py": (
                "def slugify(text):\n    return ''.join(c if c.isalnum() else '-' for c in text.lower())\n"
            ),
            "tests/test_slug.py": (
                "import unittest\n\nfrom slug import slugify\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_word(self):\n"
                "        self.assertEqual(slugify('Hello'), 'hello')\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_slug.py": (
                "import unittest\n\nfrom slug import slugify\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_runs_and_ends(self):\n"
                "        self.assertEqual(slugify('  Hello,  World! '), 'hello-world')\n\n"
                "    def test_digits(self):\n"
                "        self.assertEqual(slugify('Top 10 tips'), 'top-10-tips')\n"
            )
        },
        "fix": {
            "slug.py": (
                "import re\n\n\n"
                "def slugify(text):\n"
                "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n"
            )
        },
    },
    {
        "id": "csv-column-sum",
        "kind": "bug",
        "statement": (
            "report.column_sum(path, column) fails with ValueError on every real file: it adds up the "
            "header row too. It must skip the header, find the column by its header name, and treat "
            "empty cells as 0."
        ),
        "files": {
            "report.py": (
                "import csv\n\n\n"
                "def column_sum(path, column):\n"
                "    with open(path, newline='') as f:\n"
                "        rows = list(csv.reader(f))\n"
                "    index = rows[0].index(column)\n"
                "    return sum(float(row[index]) for row in rows)\n"
            ),
            "tests/test_report.py": (
                "import unittest\n\nimport report\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_importable(self):\n"
                "        self.assertTrue(callable(report.column_sum))\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_report.py": (
                "import os\nimport tempfile\nimport unittest\n\nfrom report import column_sum\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def write(self, text):\n"
                "        fd, path = tempfile.mkstemp(suffix='.csv')\n"
                "        with os.fdopen(fd, 'w') as f:\n"
                "            f.write(text)\n"
                "        self.addCleanup(os.unlink, path)\n"
                "        return path\n\n"
                "    def test_sum(self):\n"
                "        path = self.write('name,amount\\na,1.5\\nb,2\\n')\n"
                "        self.assertEqual(column_sum(path, 'amount'), 3.5)\n\n"
                "    def test_empty_cells(self):\n"
                "        path = self.write('name,amount\\na,\\nb,4\\n')\n"
                "        self.assertEqual(column_sum(path, 'amount'), 4.0)\n"
            )
        },
        "fix": {
            "report.py": (
                "import csv\n\n\n"
                "def column_sum(path, column):\n"
                "    with open(path, newline='') as f:\n"
                "        rows = list(csv.reader(f))\n"
                "    index = rows[0].index(column)\n"
                "    return sum(float(row[index]) if row[index].strip() else 0.0 for row in rows[1:])\n"
            )
        },
    },
    {
        "id": "lru-recency",
        "kind": "bug",
        "statement": (
            "cache.LRUCache evicts the wrong entry: reading a key with get() does not make it recently "
            "used, so a key that was just read can be evicted before one that was never read again. "
            "get() must refresh the key's recency (and return None for a missing key)."
        ),
        "files": {
            "cache.py": (
                "from collections import OrderedDict\n\n\n"
                "class LRUCache:\n"
                "    def __init__(self, capacity):\n"
                "        self.capacity = capacity\n"
                "        self.data = OrderedDict()\n\n"
                "    def get(self, key):\n"
                "        return self.data.get(key)\n\n"
                "    def put(self, key, value):\n"
                "        self.data[key] = value\n"
                "        self.data.move_to_end(key)\n"
                "        if len(self.data) > self.capacity:\n"
                "            self.data.popitem(last=False)\n"
            ),
            "tests/test_cache.py": (
                "import unittest\n\nfrom cache import LRUCache\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_capacity(self):\n"
                "        c = LRUCache(1)\n"
                "        c.put('a', 1)\n"
                "        c.put('b', 2)\n"
                "        self.assertIsNone(c.get('a'))\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_cache.py": (
                "import unittest\n\nfrom cache import LRUCache\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_get_refreshes(self):\n"
                "        c = LRUCache(2)\n"
                "        c.put('a', 1)\n"
                "        c.put('b', 2)\n"
                "        self.assertEqual(c.get('a'), 1)\n"
                "        c.put('c', 3)\n"
                "        self.assertEqual(c.get('a'), 1)\n"
                "        self.assertIsNone(c.get('b'))\n"
            )
        },
        "fix": {
            "cache.py": (
                "from collections import OrderedDict\n\n\n"
                "class LRUCache:\n"
                "    def __init__(self, capacity):\n"
                "        self.capacity = capacity\n"
                "        self.data = OrderedDict()\n\n"
                "    def get(self, key):\n"
                "        if key not in self.data:\n"
                "            return None\n"
                "        self.data.move_to_end(key)\n"
                "        return self.data[key]\n\n"
                "    def put(self, key, value):\n"
                "        self.data[key] = value\n"
                "        self.data.move_to_end(key)\n"
                "        if len(self.data) > self.capacity:\n"
                "            self.data.popitem(last=False)\n"
            )
        },
    },
    {
        "id": "semver-compare",
        "kind": "bug",
        "statement": (
            "versions.newer(a, b) compares version strings as text, so newer('1.10.0', '1.9.0') is "
            "False. Compare the dot-separated parts as numbers; a missing part counts as 0 "
            "('1.2' equals '1.2.0', so neither is newer)."
        ),
        "files": {
            "versions.py": (
                'def newer(a, b):\n    """True when version a is newer than version b."""\n    return a > b\n'
            ),
            "tests/test_versions.py": (
                "import unittest\n\nfrom versions import newer\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_simple(self):\n"
                "        self.assertTrue(newer('2.0.0', '1.0.0'))\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_versions.py": (
                "import unittest\n\nfrom versions import newer\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_numeric(self):\n"
                "        self.assertTrue(newer('1.10.0', '1.9.0'))\n"
                "        self.assertFalse(newer('1.9.0', '1.10.0'))\n\n"
                "    def test_missing_parts(self):\n"
                "        self.assertFalse(newer('1.2', '1.2.0'))\n"
                "        self.assertFalse(newer('1.2.0', '1.2'))\n"
                "        self.assertTrue(newer('1.2.1', '1.2'))\n"
            )
        },
        "fix": {
            "versions.py": (
                "def _parts(v):\n"
                "    return [int(p) for p in v.split('.')]\n\n\n"
                "def newer(a, b):\n"
                '    """True when version a is newer than version b."""\n'
                "    pa, pb = _parts(a), _parts(b)\n"
                "    n = max(len(pa), len(pb))\n"
                "    return pa + [0] * (n - len(pa)) > pb + [0] * (n - len(pb))\n"
            )
        },
    },
    {
        "id": "todo-priority",
        "kind": "feature",
        "statement": (
            "Add priorities to todo.TodoList: add(title, priority=3) takes an optional priority from "
            "1 (most urgent) to 5, raising ValueError outside that range, and a new method "
            "by_priority() returns the titles, most urgent first, keeping the order they were added "
            "within one priority."
        ),
        "files": {
            "todo.py": (
                "class TodoList:\n"
                "    def __init__(self):\n"
                "        self.items = []\n\n"
                "    def add(self, title):\n"
                "        self.items.append(title)\n\n"
                "    def titles(self):\n"
                "        return list(self.items)\n"
            ),
            "tests/test_todo.py": (
                "import unittest\n\nfrom todo import TodoList\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_add(self):\n"
                "        t = TodoList()\n"
                "        t.add('milk')\n"
                "        self.assertEqual(t.titles(), ['milk'])\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_todo.py": (
                "import unittest\n\nfrom todo import TodoList\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_by_priority(self):\n"
                "        t = TodoList()\n"
                "        t.add('later')\n"
                "        t.add('now', priority=1)\n"
                "        t.add('soon', priority=2)\n"
                "        t.add('also later')\n"
                "        self.assertEqual(t.by_priority(), ['now', 'soon', 'later', 'also later'])\n"
                "        self.assertEqual(t.titles(), ['later', 'now', 'soon', 'also later'])\n\n"
                "    def test_range(self):\n"
                "        with self.assertRaises(ValueError):\n"
                "            TodoList().add('x', priority=0)\n"
                "        with self.assertRaises(ValueError):\n"
                "            TodoList().add('x', priority=6)\n"
            )
        },
        "fix": {
            "todo.py": (
                "class TodoList:\n"
                "    def __init__(self):\n"
                "        self.items = []\n\n"
                "    def add(self, title, priority=3):\n"
                "        if not 1 <= priority <= 5:\n"
                "            raise ValueError('priority must be 1 to 5')\n"
                "        self.items.append((title, priority))\n\n"
                "    def titles(self):\n"
                "        return [t for t, _ in self.items]\n\n"
                "    def by_priority(self):\n"
                "        return [t for t, _ in sorted(self.items, key=lambda item: item[1])]\n"
            )
        },
    },
    {
        "id": "temperature-kelvin",
        "kind": "feature",
        "statement": (
            "units.convert(value, src, dst) converts temperatures between 'C' and 'F'. Add Kelvin "
            "('K') in both directions, between any two of the three units, and raise ValueError "
            "for an unknown unit."
        ),
        "files": {
            "units.py": (
                "def convert(value, src, dst):\n"
                "    if src == dst:\n"
                "        return value\n"
                "    if (src, dst) == ('C', 'F'):\n"
                "        return value * 9 / 5 + 32\n"
                "    if (src, dst) == ('F', 'C'):\n"
                "        return (value - 32) * 5 / 9\n"
                "    raise ValueError(f'cannot convert {src} to {dst}')\n"
            ),
            "tests/test_units.py": (
                "import unittest\n\nfrom units import convert\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_c_f(self):\n"
                "        self.assertAlmostEqual(convert(100, 'C', 'F'), 212)\n"
                "        self.assertAlmostEqual(convert(32, 'F', 'C'), 0)\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_units.py": (
                "import unittest\n\nfrom units import convert\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_kelvin(self):\n"
                "        self.assertAlmostEqual(convert(0, 'C', 'K'), 273.15)\n"
                "        self.assertAlmostEqual(convert(273.15, 'K', 'C'), 0)\n"
                "        self.assertAlmostEqual(convert(212, 'F', 'K'), 373.15)\n"
                "        self.assertAlmostEqual(convert(373.15, 'K', 'F'), 212)\n\n"
                "    def test_unknown(self):\n"
                "        with self.assertRaises(ValueError):\n"
                "            convert(1, 'C', 'X')\n"
            )
        },
        "fix": {
            "units.py": (
                "TO_C = {'C': lambda v: v, 'F': lambda v: (v - 32) * 5 / 9, 'K': lambda v: v - 273.15}\n"
                "FROM_C = {'C': lambda v: v, 'F': lambda v: v * 9 / 5 + 32, 'K': lambda v: v + 273.15}\n\n\n"
                "def convert(value, src, dst):\n"
                "    if src not in TO_C or dst not in FROM_C:\n"
                "        raise ValueError(f'cannot convert {src} to {dst}')\n"
                "    return FROM_C[dst](TO_C[src](value))\n"
            )
        },
    },
    {
        "id": "wrap-long-words",
        "kind": "bug",
        "statement": (
            "wrap.wrap(text, width) returns lines one character longer than width, and loses a word "
            "longer than width. Every line must be at most width characters; a word longer than "
            "width goes on a line of its own, cut into pieces of width characters."
        ),
        "files": {
            "wrap.py": (
                "def wrap(text, width):\n"
                "    lines, line = [], ''\n"
                "    for word in text.split():\n"
                "        if len(word) > width:\n"
                "            continue\n"
                "        if line and len(line) + len(word) + 1 > width + 1:\n"
                "            lines.append(line)\n"
                "            line = word\n"
                "        else:\n"
                "            line = f'{line} {word}' if line else word\n"
                "    if line:\n"
                "        lines.append(line)\n"
                "    return lines\n"
            ),
            "tests/test_wrap.py": (
                "import unittest\n\nfrom wrap import wrap\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_short(self):\n"
                "        self.assertEqual(wrap('a b', 10), ['a b'])\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_wrap.py": (
                "import unittest\n\nfrom wrap import wrap\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_width(self):\n"
                "        self.assertEqual(wrap('aaa bbb ccc', 7), ['aaa bbb', 'ccc'])\n"
                "        for line in wrap('the quick brown fox jumps over the lazy dog', 9):\n"
                "            self.assertLessEqual(len(line), 9)\n\n"
                "    def test_long_word(self):\n"
                "        self.assertEqual(wrap('hi abcdefgh yo', 4), ['hi', 'abcd', 'efgh', 'yo'])\n"
            )
        },
        "fix": {
            "wrap.py": (
                "def wrap(text, width):\n"
                "    lines, line = [], ''\n"
                "    for word in text.split():\n"
                "        if len(word) > width:\n"
                "            if line:\n"
                "                lines.append(line)\n"
                "                line = ''\n"
                "            lines.extend(word[i:i + width] for i in range(0, len(word), width))\n"
                "            continue\n"
                "        if line and len(line) + len(word) + 1 > width:\n"
                "            lines.append(line)\n"
                "            line = word\n"
                "        else:\n"
                "            line = f'{line} {word}' if line else word\n"
                "    if line:\n"
                "        lines.append(line)\n"
                "    return lines\n"
            )
        },
    },
    {
        "id": "inventory-remove",
        "kind": "feature",
        "statement": (
            "inventory.Inventory has add(item, n) and count(item). Add remove(item, n) that takes n "
            "away, raising ValueError (and changing nothing) when fewer than n are in stock, and "
            "dropping the item from items() when its count reaches 0."
        ),
        "files": {
            "inventory.py": (
                "class Inventory:\n"
                "    def __init__(self):\n"
                "        self.stock = {}\n\n"
                "    def add(self, item, n=1):\n"
                "        self.stock[item] = self.stock.get(item, 0) + n\n\n"
                "    def count(self, item):\n"
                "        return self.stock.get(item, 0)\n\n"
                "    def items(self):\n"
                "        return sorted(self.stock)\n"
            ),
            "tests/test_inventory.py": (
                "import unittest\n\nfrom inventory import Inventory\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_add(self):\n"
                "        inv = Inventory()\n"
                "        inv.add('bolt', 3)\n"
                "        self.assertEqual(inv.count('bolt'), 3)\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_inventory.py": (
                "import unittest\n\nfrom inventory import Inventory\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_remove(self):\n"
                "        inv = Inventory()\n"
                "        inv.add('bolt', 3)\n"
                "        inv.remove('bolt', 2)\n"
                "        self.assertEqual(inv.count('bolt'), 1)\n"
                "        inv.remove('bolt', 1)\n"
                "        self.assertEqual(inv.items(), [])\n\n"
                "    def test_not_enough(self):\n"
                "        inv = Inventory()\n"
                "        inv.add('nut', 1)\n"
                "        with self.assertRaises(ValueError):\n"
                "            inv.remove('nut', 2)\n"
                "        self.assertEqual(inv.count('nut'), 1)\n"
            )
        },
        "fix": {
            "inventory.py": (
                "class Inventory:\n"
                "    def __init__(self):\n"
                "        self.stock = {}\n\n"
                "    def add(self, item, n=1):\n"
                "        self.stock[item] = self.stock.get(item, 0) + n\n\n"
                "    def remove(self, item, n=1):\n"
                "        have = self.stock.get(item, 0)\n"
                "        if have < n:\n"
                "            raise ValueError(f'only {have} {item} in stock')\n"
                "        if have == n:\n"
                "            del self.stock[item]\n"
                "        else:\n"
                "            self.stock[item] = have - n\n\n"
                "    def count(self, item):\n"
                "        return self.stock.get(item, 0)\n\n"
                "    def items(self):\n"
                "        return sorted(self.stock)\n"
            )
        },
    },
    {
        "id": "duration-parse",
        "kind": "feature",
        "statement": (
            "durations.parse(text) reads '90s' and '5m' into seconds. Make it read combined "
            "durations such as '1h30m', '2h', '1m30s' and '1h2m3s' too, and raise ValueError for "
            "anything else (e.g. '', '5x', 'm')."
        ),
        "files": {
            "durations.py": (
                "UNITS = {'s': 1, 'm': 60}\n\n\n"
                "def parse(text):\n"
                "    return int(text[:-1]) * UNITS[text[-1]]\n"
            ),
            "tests/test_durations.py": (
                "import unittest\n\nfrom durations import parse\n\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_single(self):\n"
                "        self.assertEqual(parse('90s'), 90)\n"
                "        self.assertEqual(parse('5m'), 300)\n"
            ),
        },
        "hidden": {
            "tests/test_hidden_durations.py": (
                "import unittest\n\nfrom durations import parse\n\n\n"
                "class Hidden(unittest.TestCase):\n"
                "    def test_combined(self):\n"
                "        self.assertEqual(parse('1h30m'), 5400)\n"
                "        self.assertEqual(parse('2h'), 7200)\n"
                "        self.assertEqual(parse('1m30s'), 90)\n"
                "        self.assertEqual(parse('1h2m3s'), 3723)\n\n"
                "    def test_bad(self):\n"
                "        for bad in ('', '5x', 'm', '1h30'):\n"
                "            with self.assertRaises(ValueError):\n"
                "                parse(bad)\n"
            )
        },
        "fix": {
            "durations.py": (
                "import re\n\n"
                "UNITS = {'h': 3600, 'm': 60, 's': 1}\n"
                "_FORM = re.compile(r'(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?')\n\n\n"
                "def parse(text):\n"
                "    m = _FORM.fullmatch(text)\n"
                "    if not text or not m:\n"
                "        raise ValueError(f'not a duration: {text!r}')\n"
                "    h, mins, s = (int(g) if g else 0 for g in m.groups())\n"
                "    return h * 3600 + mins * 60 + s\n"
            )
        },
    },
]
