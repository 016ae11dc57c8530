#!/usr/bin/env python3
"""Tests for tools/aobj_reqs.py and for the requirement structure of spec/*.md.

Run: python3 -m unittest discover -s tests/spec -p '*_test.py'

Requirement IDs in fixtures are assembled at run time (Rid()) so that this file does not cite
IDs that the real spec does not define when it is scanned by `aobj_reqs.py --cite-check`.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "aobj_reqs.py"
SPEC_DIR = ROOT / "spec"

_spec = importlib.util.spec_from_file_location("aobj_reqs", TOOL)
aobj_reqs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aobj_reqs)

PREFIX = "AOBJ" + "-"


def Rid(area, number):
    return "%s%s-%03d" % (PREFIX, area, number)


def RunTool(*args):
    return subprocess.run([sys.executable, str(TOOL)] + [str(a) for a in args],
                          capture_output=True, text=True)


class SpecFixture:
    """A temporary spec directory holding one markdown file."""

    def __init__(self, text):
        self.dir = tempfile.TemporaryDirectory()
        self.spec = Path(self.dir.name) / "spec"
        self.spec.mkdir()
        (self.spec / "doc.md").write_text(textwrap.dedent(text), encoding="utf-8")

    def Analyze(self):
        return aobj_reqs.analyze(sorted(self.spec.glob("*.md")), Path(self.dir.name))

    def Close(self):
        self.dir.cleanup()


def Analyze(text):
    fixture = SpecFixture(text)
    try:
        return fixture.Analyze()
    finally:
        fixture.Close()


VALID = """\
# Title

## 1. Introduction

### 1.1 Conventions

The key words "MUST", "MUST NOT", "SHOULD" and "MAY" are to be interpreted as in BCP 14.
Example: `[{a}] The server MUST ...`.

### 1.2 Terminology

- **Server**: the party that answers.

## 5. Sessions

[{a}] The server MUST select the highest version, and MAY log it.

Some explanation. It has no key words.

- [{b}] A client SHOULD NOT send more than max_in_flight requests.
  This continuation line belongs to the bullet.

```
Code MUST be ignored.
```

| A header MUST be ignored | Other |
|---|---|
| plain row | x |

| ID | Rule |
|---|---|
| [{c}] | A server MAY refuse. |

Text that cites {a} without brackets.

### 5.1 Lease

[{d}] A server MUST NOT expire a session early.
"""


def Valid(**overrides):
    ids = {"a": Rid("SES", 2), "b": Rid("FLO", 1), "c": Rid("OBJ", 8), "d": Rid("SES", 18)}
    ids.update(overrides)
    return VALID.format(**ids)


class ExtractionTest(unittest.TestCase):

    def test_ExtractsRequirementsWithLevelAndSection(self):
        result = Analyze(Valid())
        self.assertEqual(result.errors, [])
        got = [(r["id"], r["level"], r["section"], r["section_title"]) for r in result.requirements]
        self.assertEqual(got, [
            (Rid("SES", 2), "MUST", "5", "Sessions"),
            (Rid("FLO", 1), "SHOULD NOT", "5", "Sessions"),
            (Rid("OBJ", 8), "MAY", "5", "Sessions"),
            (Rid("SES", 18), "MUST NOT", "5.1", "Lease"),
        ])

    def test_TextDropsTheTagAndJoinsContinuationLines(self):
        result = Analyze(Valid())
        first, second = result.requirements[0], result.requirements[1]
        self.assertEqual(first["text"], "The server MUST select the highest version, and MAY log it.")
        self.assertEqual(first["keywords"], ["MUST", "MAY"])
        self.assertEqual(second["text"],
                         "A client SHOULD NOT send more than max_in_flight requests.")

    def test_StrongestKeywordWins(self):
        result = Analyze("## 2. X\n\n[%s] A client MAY retry, and the server MUST answer.\n\n"
                         "[%s] It is NOT RECOMMENDED to do that.\n" % (Rid("ERR", 7), Rid("ERR", 8)))
        self.assertEqual(result.errors, [])
        self.assertEqual([r["level"] for r in result.requirements], ["MUST", "NOT RECOMMENDED"])

    def test_AppendixSectionNumbers(self):
        result = Analyze("## Appendix A. Worked\n\n### A.2 Session\n\n[%s] X MUST hold.\n"
                         % Rid("SEC", 1))
        self.assertEqual(result.requirements[0]["section"], "A.2")
        self.assertEqual(result.requirements[0]["section_title"], "Session")

    def test_BlockQuoteAndBoldTag(self):
        result = Analyze("## 14. Sec\n\n> **[%s] The server MUST check\n> every bound.**\n"
                         % Rid("SEC", 1))
        self.assertEqual(result.errors, [])
        self.assertEqual(result.requirements[0]["text"], "The server MUST check every bound.")

    def test_AbbreviationsDoNotSplitSentences(self):
        result = Analyze("## 3. X\n\n[%s] The path (e.g. `/a/B`) MUST be sent, i.e. Always.\n"
                         % Rid("CTL", 1))
        self.assertEqual(result.errors, [])
        self.assertEqual(len(result.requirements), 1)


class CheckTest(unittest.TestCase):

    def assertOneError(self, text, *fragments):
        result = Analyze(text)
        self.assertEqual(len(result.errors), 1, result.errors)
        for fragment in fragments:
            self.assertIn(fragment, result.errors[0])

    def test_DuplicateIds(self):
        text = Valid(d=Rid("SES", 2))
        lines = [i + 1 for i, line in enumerate(text.splitlines())
                 if line.startswith("[%s]" % Rid("SES", 2))]
        self.assertEqual(len(lines), 2)
        result = Analyze(text)
        self.assertEqual(len(result.errors), 1, result.errors)
        self.assertIn("duplicate requirement ID " + Rid("SES", 2), result.errors[0])
        self.assertTrue(result.errors[0].startswith("spec/doc.md:%d:" % lines[1]))
        self.assertIn("first defined at spec/doc.md:%d" % lines[0], result.errors[0])

    def test_MalformedIdInTag(self):
        bad = PREFIX + "SES-02"
        result = Analyze("## 5. S\n\n[%s] The server MUST do it.\n" % bad)
        self.assertTrue(any("malformed requirement ID '%s'" % bad in e and "doc.md:3" in e
                            for e in result.errors), result.errors)

    def test_MalformedArea(self):
        bad = PREFIX + "FOO-001"
        result = Analyze("## 5. S\n\nSee %s for details.\n" % bad)
        self.assertEqual(len(result.errors), 1, result.errors)
        self.assertIn("malformed", result.errors[0])

    def test_KeywordWithoutId(self):
        self.assertOneError("## 5. S\n\nFirst line.\nThe server MUST do it.\n",
                            "doc.md:4", "keyword MUST", "without a requirement ID")

    def test_SecondSentenceOfTaggedParagraphNeedsItsOwnId(self):
        self.assertOneError("## 5. S\n\n[%s] The server MUST do it. The client SHOULD too.\n"
                            % Rid("SES", 1), "keyword SHOULD", "The client SHOULD too.")

    def test_KeywordInBulletWithoutId(self):
        self.assertOneError("## 5. S\n\n- a bullet that MAY do things\n", "keyword MAY")

    def test_TableRowWithKeywordNeedsId(self):
        self.assertOneError("## 5. S\n\n| a | b |\n|---|---|\n| x | y MUST z |\n",
                            "doc.md:5", "table row")

    def test_TagWithoutKeyword(self):
        self.assertOneError("## 5. S\n\n[%s] The server selects a version.\n" % Rid("SES", 2),
                            "has no BCP 14 keyword")

    def test_TagNotAtStart(self):
        self.assertOneError("## 5. S\n\nThe server [%s] MUST do it.\n" % Rid("SES", 2),
                            "not at the start")

    def test_TwoTagsInOneSentence(self):
        result = Analyze("## 5. S\n\n[%s] [%s] The server MUST do it.\n"
                         % (Rid("SES", 2), Rid("SES", 3)))
        self.assertIn("more than one requirement tag", result.errors[0])

    def test_LowerCaseKeywordsAreNotNormative(self):
        self.assertEqual(Analyze("## 5. S\n\nThe server must and may and should.\n").errors, [])

    def test_InlineCodeAndIdentifiersAreIgnored(self):
        self.assertEqual(Analyze("## 5. S\n\nThe value `MUST` and ERROR_CODE_MAY_X are fine.\n"
                                 ).errors, [])

    def test_InlineCodeAcrossLineBreakDoesNotHideKeywords(self):
        result = Analyze("## 6. A\n\n[%s] The key MUST be `f(a,\nb)` and the signature MUST be\n"
                         "`g(c)`. The client SHOULD check.\n" % Rid("AUTH", 3))
        self.assertEqual(len(result.errors), 1, result.errors)
        self.assertIn("keyword SHOULD", result.errors[0])
        self.assertEqual(result.requirements[0]["keywords"], ["MUST"])
        self.assertEqual(len(aobj_reqs.KEYWORD_RE.findall(
            aobj_reqs.strip_inline_code(result.requirements[0]["text"]))), 2)

    def test_ReferenceToUndefinedId(self):
        self.assertOneError("## 5. S\n\nSee %s.\n" % Rid("MEM", 99),
                            "reference to undefined requirement " + Rid("MEM", 99))

    def test_RetiredIdMayNotBeReused(self):
        text = ("## 5. S\n\n[%s] The server MUST do it.\n\n"
                "## Appendix C. Retired requirement IDs\n\n| ID | Why |\n|---|---|\n"
                "| %s | replaced; it MUST NOT return |\n" % (Rid("SES", 5), Rid("SES", 5)))
        self.assertOneError(text, "is retired")

    def test_RetiredIdMayBeCited(self):
        text = ("## 5. S\n\nFormerly %s.\n\n## Appendix C. Retired requirement IDs\n\n"
                "| ID | Why |\n|---|---|\n| %s | gone |\n" % (Rid("SES", 5), Rid("SES", 5)))
        self.assertEqual(Analyze(text).errors, [])


class CommandLineTest(unittest.TestCase):

    def setUp(self):
        self.fixture = SpecFixture(Valid())
        self.addCleanup(self.fixture.Close)
        self.tmp = Path(self.fixture.dir.name)

    def test_CheckPassesAndSummarizes(self):
        r = RunTool("--spec", self.fixture.spec, "--check")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("4 requirements", r.stdout)

    def test_CheckFailsWithLineNumbers(self):
        (self.fixture.spec / "doc.md").write_text("## 5. S\n\nThe server MUST.\n")
        r = RunTool("--spec", self.fixture.spec, "--check")
        self.assertEqual(r.returncode, 1)
        self.assertIn("spec/doc.md:3", r.stdout)

    def test_OutAndVerifyJson(self):
        out = self.tmp / "reqs.json"
        self.assertEqual(RunTool("--spec", self.fixture.spec, "--out", out).returncode, 0)
        records = json.loads(out.read_text())
        self.assertEqual([r["id"] for r in records][0], Rid("SES", 2))
        self.assertEqual(set(records[0]), {"id", "area", "level", "keywords", "section",
                                           "section_title", "text", "file"})
        self.assertEqual(RunTool("--spec", self.fixture.spec, "--verify-json", out).returncode, 0)
        out.write_text("[]\n")
        r = RunTool("--spec", self.fixture.spec, "--verify-json", out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("stale", r.stdout)

    def test_CiteCheck(self):
        src = self.tmp / "src"
        src.mkdir()
        (src / "a.cc").write_text("// %s: checked here\n" % Rid("SES", 2))
        (src / "b.txt").write_text("// %s: not a source file\n" % Rid("MEM", 99))
        r = RunTool("--spec", self.fixture.spec, "--cite-check", src)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("cited: 1 of 4", r.stdout)
        (src / "c.h").write_text("// %s and %s\n" % (Rid("MEM", 99), PREFIX + "MEM-1"))
        r = RunTool("--spec", self.fixture.spec, "--cite-check", src, "--list-uncited")
        self.assertEqual(r.returncode, 1)
        self.assertIn("c.h:1: cites %s, which the spec does not define" % Rid("MEM", 99), r.stdout)
        self.assertIn("malformed", r.stdout)
        self.assertIn("uncited " + Rid("FLO", 1), r.stdout)


# IDs that the implementation cites and the brief of the first draft fixed in meaning. They must
# stay defined (a meaning change would retire them instead).
FIXED_IDS = {
    "CTL": [1, 2, 3, 4, 5],
    "EXT": [1, 2, 3, 4],
    "SES": list(range(1, 15)),
    "AUTH": list(range(1, 11)),
    "MEM": list(range(1, 14)),
    "DAT": list(range(1, 13)) + [20, 21, 30],
    "OBJ": [1, 2, 3, 4, 5, 6, 10, 11, 12],
    "ERR": [1, 2, 3],
    "TRN": [1, 2, 3, 4, 5],
    "SEC": [1, 2],
}


class RealSpecTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.result = aobj_reqs.analyze(sorted(SPEC_DIR.glob("*.md")), ROOT)

    def test_SpecPassesCheck(self):
        self.assertEqual(self.result.errors, [])

    def test_FixedIdsAreDefined(self):
        # Each ID fixed at the first draft is still defined, or was retired in Appendix C (an ID
        # whose meaning changed), never silently dropped.
        known = {r["id"] for r in self.result.requirements} | set(self.result.retired)
        for area, numbers in FIXED_IDS.items():
            for n in numbers:
                self.assertIn(Rid(area, n), known)

    def test_RequirementsJsonIsCurrent(self):
        current = (SPEC_DIR / "requirements.json").read_text(encoding="utf-8")
        self.assertEqual(current, aobj_reqs.render_json(self.result.requirements),
                         "regenerate with: python3 tools/aobj_reqs.py --out spec/requirements.json")

    def test_EveryAreaHasRequirements(self):
        areas = {r["area"] for r in self.result.requirements}
        self.assertEqual(areas, set(aobj_reqs.AREAS))


if __name__ == "__main__":
    unittest.main()
