#!/usr/bin/env python3
"""Extracts and checks the normative requirements of the AOBJ/1 specification.

The specification (spec/*.md) tags every normative sentence, bullet or table row with a
requirement ID written as a bracketed tag at its start: "[<ID>] The server MUST ...", where an ID
has the form AOBJ-<AREA>-<NNN> (spec section 1.1, "Conventions"). This tool:

  * extracts every requirement (id, area, level, section, text) and prints or writes it as JSON;
  * --check: fails (exit 1) on duplicate IDs, malformed IDs, BCP 14 keywords in a sentence,
    bullet or table row without an ID, tags without a keyword, tags not at the start of a
    sentence, and references to IDs the spec does not define;
  * --verify-json FILE: fails when FILE (the checked-in requirements.json) is stale;
  * --cite-check DIR...: lists requirement IDs cited in source files that the spec does not
    define (fail) and reports how many requirements the sources cite.

Skipped when looking for requirements: the "Conventions" section (it quotes the keywords),
the "Retired requirement IDs" section (it lists IDs that may never be reused), fenced code blocks,
inline code spans, headings and table header rows.

Stdlib only. Exit status: 0 success, 1 check failures, 2 usage or I/O errors.
"""

import argparse
import json
import os
import re
import sys
from pathlib import Path

AREAS = ("CTL", "EXT", "SES", "AUTH", "MEM", "DAT", "OBJ", "ERR", "TRN", "SEC", "FLO", "OPS")
ID_RE = re.compile(r"^AOBJ-(?:%s)-\d{3}$" % "|".join(AREAS))
# Anything that looks like an attempt at an ID (upper-case prefix, then a hyphen).
ID_LIKE_RE = re.compile(r"(?<![A-Za-z0-9_])AOBJ-[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
TAG_RE = re.compile(r"\[\s*(AOBJ-[^\]\s]*)\s*\]")
LEADING_TAG_RE = re.compile(r"^\s*(?:\*\*|__)?\[\s*(AOBJ-[^\]\s]*)\s*\](?:\*\*|__)?\s*")

# BCP 14 keywords (RFC 2119, RFC 8174), longest alternatives first so that "MUST NOT" wins over
# "MUST" at the same position.
KEYWORD_RE = re.compile(
    r"(?<![A-Za-z0-9_])(MUST NOT|SHALL NOT|SHOULD NOT|NOT RECOMMENDED|MUST|REQUIRED|SHALL|"
    r"SHOULD|RECOMMENDED|MAY|OPTIONAL)(?![A-Za-z0-9_])")
STRENGTH = {
    "MUST": 3, "MUST NOT": 3, "REQUIRED": 3, "SHALL": 3, "SHALL NOT": 3,
    "SHOULD": 2, "SHOULD NOT": 2, "RECOMMENDED": 2, "NOT RECOMMENDED": 2,
    "MAY": 1, "OPTIONAL": 1,
}

HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SECTION_NUMBER_RE = re.compile(
    r"^(Appendix\s+[A-Z](?:\.\d+)*|[A-Z](?:\.\d+)+|\d+(?:\.\d+)*)\.?\s+(.*)$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
LIST_ITEM_RE = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")
TABLE_ROW_RE = re.compile(r"^\s*\|")
TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
INLINE_CODE_RE = re.compile(r"(`+)(.+?)\1", re.S)  # spans may cross line breaks
SKIPPED_SECTION_RE = re.compile(r"\b(Conventions|Retired requirement IDs)\b", re.IGNORECASE)
RETIRED_SECTION_RE = re.compile(r"\bRetired requirement IDs\b", re.IGNORECASE)

# Abbreviations whose period does not end a sentence.
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "resp.")
SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\[A-Z0-9`(\"*_\x01])")

SOURCE_EXTENSIONS = (".cc", ".h", ".py", ".proto")
SKIPPED_DIRS = {".git", "__pycache__", "node_modules"}


class Unit:
    """One sentence container: a paragraph, a list item or a table row."""

    def __init__(self, kind, text, line, section, section_title, skipped, header=False):
        self.kind = kind            # "paragraph", "item" or "row"
        self.text = text            # lines joined with "\n"
        self.line = line            # 1-based line of the first line
        self.section = section
        self.section_title = section_title
        self.skipped = skipped      # inside Conventions / Retired
        self.header = header        # a table header row


class Document:
    def __init__(self, path, display):
        self.path = path
        self.display = display
        self.units = []
        self.retired = {}           # id -> line
        self.references = []        # (id, line) every ID-like token outside code blocks


def parse_heading(text):
    m = SECTION_NUMBER_RE.match(text)
    if m:
        number = m.group(1)
        if number.startswith("Appendix"):
            number = number.split()[-1]
        return number, m.group(2).strip()
    return "", text.strip()


def read_document(path, display):
    doc = Document(path, display)
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    section, title = "", ""
    skip_level = None               # heading level of the skipped section we are in
    retired = False
    in_code = False
    i = 0
    current = None                  # Unit being collected (paragraph or item)
    item_indent = 0

    def flush():
        nonlocal current
        if current is not None:
            doc.units.append(current)
            current = None

    def record_references(text, lineno):
        stripped_line = text
        for m in ID_LIKE_RE.finditer(stripped_line):
            doc.references.append((m.group(0), lineno))
            if retired:
                doc.retired.setdefault(m.group(0), lineno)

    while i < len(lines):
        raw = lines[i]
        lineno = i + 1
        if FENCE_RE.match(raw):
            flush()
            in_code = not in_code
            i += 1
            continue
        if in_code:
            i += 1
            continue
        h = HEADING_RE.match(raw)
        if h:
            flush()
            level = len(h.group(1))
            number, heading_title = parse_heading(h.group(2))
            if skip_level is not None and level <= skip_level:
                skip_level = None
                retired = False
            if skip_level is None and SKIPPED_SECTION_RE.search(heading_title):
                skip_level = level
                retired = bool(RETIRED_SECTION_RE.search(heading_title))
            section, title = number, heading_title
            record_references(raw, lineno)
            i += 1
            continue
        record_references(raw, lineno)
        skipped = skip_level is not None
        line = raw[1:].lstrip() if raw.lstrip().startswith(">") else raw
        if not line.strip():
            flush()
            i += 1
            continue
        if TABLE_ROW_RE.match(line):
            flush()
            if TABLE_SEPARATOR_RE.match(line):
                i += 1
                continue
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            header = bool(TABLE_SEPARATOR_RE.match(nxt)) and TABLE_ROW_RE.match(nxt) is not None
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            doc.units.append(Unit("row", " | ".join(cells), lineno, section, title, skipped,
                                  header=header))
            i += 1
            continue
        m = LIST_ITEM_RE.match(line)
        if m:
            flush()
            item_indent = len(m.group(1))
            current = Unit("item", line[m.end():], lineno, section, title, skipped)
            i += 1
            continue
        if current is not None and current.kind == "item":
            # A continuation line of a list item is indented past the marker.
            indent = len(line) - len(line.lstrip())
            if indent > item_indent:
                current.text += "\n" + line.strip()
                i += 1
                continue
            flush()
        if current is None:
            current = Unit("paragraph", line.strip(), lineno, section, title, skipped)
        else:
            current.text += "\n" + line.strip()
        i += 1
    flush()
    return doc


def strip_inline_code(text):
    """Replaces inline code spans by a placeholder of the same length (offsets stay valid)."""
    return INLINE_CODE_RE.sub(lambda m: "\x01" * len(m.group(0)), text)


def split_sentences(text):
    """Returns (offset, sentence) pairs. Table rows and items are split like paragraphs."""
    masked = strip_inline_code(text)
    for abbreviation in ABBREVIATIONS:
        masked = masked.replace(abbreviation, abbreviation.replace(".", "\x00"))
    result = []
    start = 0
    for m in SENTENCE_END_RE.finditer(masked):
        result.append((start, text[start:m.start()], masked[start:m.start()]))
        start = m.end()
    if start < len(text):
        result.append((start, text[start:], masked[start:]))
    return result


def normalize(text):
    text = re.sub(r"(\*\*|__)", "", text)
    return " ".join(text.split())


def strongest_keyword(keywords):
    best = None
    for keyword in keywords:
        if best is None or STRENGTH[keyword] > STRENGTH[best]:
            best = keyword
    return best


class Result:
    def __init__(self):
        self.requirements = []
        self.errors = []
        self.retired = {}           # id -> "file:line"
        self.references = []        # (id, "file:line")
        self.tagged = set()         # every ID in a tag, well placed or not


def analyze(paths, root):
    result = Result()
    for path in paths:
        display = os.path.relpath(path, root) if root else str(path)
        doc = read_document(path, display)
        for rid, line in doc.retired.items():
            result.retired.setdefault(rid, "%s:%d" % (display, line))
        for rid, line in doc.references:
            result.references.append((rid, "%s:%d" % (display, line)))
        for unit in doc.units:
            if unit.skipped or unit.header:
                continue
            analyze_unit(unit, display, result)
    seen = {}
    for req in result.requirements:
        where = "%s:%d" % (req["file"], req["line"])
        if req["id"] in seen:
            result.errors.append("%s: duplicate requirement ID %s (first defined at %s)"
                                 % (where, req["id"], seen[req["id"]]))
        else:
            seen[req["id"]] = where
        if req["id"] in result.retired:
            result.errors.append("%s: requirement ID %s is retired (%s) and must not be reused"
                                 % (where, req["id"], result.retired[req["id"]]))
    for rid, where in result.references:
        if not ID_RE.match(rid):
            result.errors.append("%s: malformed requirement ID %r (expected AOBJ-<AREA>-<NNN>, "
                                 "AREA one of %s)" % (where, rid, ", ".join(AREAS)))
        elif rid not in seen and rid not in result.retired and rid not in result.tagged:
            # (A misplaced or keyword-less tag is reported once, above, not again here.)
            result.errors.append("%s: reference to undefined requirement %s" % (where, rid))
    return result


def analyze_unit(unit, display, result):
    if unit.kind == "row":
        # A table row is one unit; its tag opens one of its cells (the first, customarily).
        pieces = [(0, unit.text, strip_inline_code(unit.text))]
    else:
        pieces = split_sentences(unit.text)
    for offset, sentence, masked in pieces:
        line = unit.line + unit.text[:offset].count("\n")
        where = "%s:%d" % (display, line)
        keywords = [m.group(1) for m in KEYWORD_RE.finditer(masked)]
        tags = list(TAG_RE.finditer(masked))
        result.tagged.update(t.group(1) for t in tags)
        leading = LEADING_TAG_RE.match(masked)
        if unit.kind == "row" and tags and not leading:
            cell_starts = [0] + [m.end() for m in re.finditer(r"\|", masked)]
            for start in cell_starts:
                leading = LEADING_TAG_RE.match(masked, start)
                if leading:
                    break
        if len(tags) > 1:
            result.errors.append("%s: more than one requirement tag in one sentence (%s); write "
                                 "one requirement per sentence" % (
                                     where, ", ".join(t.group(1) for t in tags)))
            continue
        if tags and not leading:
            result.errors.append("%s: requirement tag [%s] is not at the start of the sentence "
                                 "(cite requirements without brackets)" % (where, tags[0].group(1)))
            continue
        if not tags:
            if keywords:
                result.errors.append("%s: BCP 14 keyword %s in a %s without a requirement ID: %s"
                                     % (where, "/".join(dict.fromkeys(keywords)),
                                        "table row" if unit.kind == "row" else "sentence",
                                        shorten(sentence)))
            continue
        rid = leading.group(1)
        if not keywords:
            result.errors.append("%s: requirement %s has no BCP 14 keyword (MUST, SHOULD, MAY, "
                                 "...): %s" % (where, rid, shorten(sentence)))
            continue
        text = sentence[:leading.start()] + " " + sentence[leading.end():]
        if unit.kind == "row":
            text = " | ".join(c.strip() for c in text.split("|") if c.strip())
        area = rid.split("-")[1] if rid.count("-") >= 2 else ""
        result.requirements.append({
            "id": rid,
            "area": area,
            "level": strongest_keyword(keywords),
            "keywords": sorted(set(keywords), key=lambda k: (-STRENGTH[k], k)),
            "section": unit.section,
            "section_title": unit.section_title,
            "text": normalize(text),
            "file": display,
            "line": line,
        })


def shorten(text, limit=100):
    text = normalize(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def json_records(requirements):
    """The records written to JSON: everything but the line number, which churns on edits."""
    return [{k: v for k, v in r.items() if k != "line"} for r in requirements]


def render_json(requirements):
    return json.dumps(json_records(requirements), indent=2, ensure_ascii=False) + "\n"


def summary(requirements):
    by_area = {}
    by_level = {}
    for r in requirements:
        by_area[r["area"]] = by_area.get(r["area"], 0) + 1
        by_level[r["level"]] = by_level.get(r["level"], 0) + 1
    areas = ", ".join("%s %d" % (a, by_area[a]) for a in AREAS if a in by_area)
    levels = ", ".join("%s %d" % (k, by_level[k]) for k in STRENGTH if k in by_level)
    return "%d requirements; by area: %s; by level: %s" % (len(requirements), areas, levels)


def iter_sources(dirs):
    for d in dirs:
        p = Path(d)
        if p.is_file():
            yield p
            continue
        if not p.is_dir():
            raise OSError("no such directory: %s" % d)
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(n for n in dirnames
                                 if n not in SKIPPED_DIRS and not n.startswith("build"))
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXTENSIONS):
                    yield Path(dirpath) / name


def cite_check(dirs, requirements, retired, list_uncited):
    defined = {r["id"] for r in requirements}
    cited = {}
    failures = []
    for path in iter_sources(dirs):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            failures.append("%s: cannot read: %s" % (path, e))
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in ID_LIKE_RE.finditer(line):
                rid = m.group(0)
                where = "%s:%d" % (path, lineno)
                if not ID_RE.match(rid):
                    failures.append("%s: malformed requirement ID %r" % (where, rid))
                elif rid in retired:
                    failures.append("%s: cites retired requirement %s" % (where, rid))
                elif rid not in defined:
                    failures.append("%s: cites %s, which the spec does not define" % (where, rid))
                else:
                    cited.setdefault(rid, []).append(where)
    for f in failures:
        print("FAIL " + f)
    total = len(defined)
    pct = 100.0 * len(cited) / total if total else 0.0
    print("cited: %d of %d spec requirements (%.0f%%) in %s"
          % (len(cited), total, pct, " ".join(str(d) for d in dirs)))
    if list_uncited:
        for r in requirements:
            if r["id"] not in cited:
                print("uncited %s (%s, section %s)" % (r["id"], r["level"], r["section"]))
    return not failures


def main(argv=None):
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", default=str(here.parent / "spec"),
                        help="directory holding the spec's *.md files, or one .md file "
                             "(default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="fail on malformed/duplicate IDs and untagged BCP 14 keywords")
    parser.add_argument("--out", metavar="FILE", help="write the requirements as JSON to FILE")
    parser.add_argument("--verify-json", metavar="FILE",
                        help="fail when FILE differs from the JSON this spec produces")
    parser.add_argument("--cite-check", nargs="+", metavar="DIR",
                        help="check requirement IDs cited in *.cc, *.h, *.py, *.proto under DIR")
    parser.add_argument("--list-uncited", action="store_true",
                        help="with --cite-check, list requirements no source cites")
    parser.add_argument("--summary", action="store_true", help="print counts by area and level")
    args = parser.parse_args(argv)

    spec = Path(args.spec)
    if spec.is_dir():
        paths = sorted(spec.glob("*.md"))
        root = spec.resolve().parent
    elif spec.is_file():
        paths = [spec]
        root = spec.resolve().parent.parent
    else:
        print("error: no such spec directory or file: %s" % spec, file=sys.stderr)
        return 2
    if not paths:
        print("error: no *.md files in %s" % spec, file=sys.stderr)
        return 2
    result = analyze([p.resolve() for p in paths], root)

    ok = True
    if args.check:
        for e in result.errors:
            print("ERROR " + e)
        if result.errors:
            print("spec check failed: %d error(s)" % len(result.errors))
            ok = False
        else:
            print("spec check passed: " + summary(result.requirements))
    elif args.summary:
        print(summary(result.requirements))
    if args.out:
        Path(args.out).write_text(render_json(result.requirements), encoding="utf-8")
    if args.verify_json:
        try:
            current = Path(args.verify_json).read_text(encoding="utf-8")
        except OSError as e:
            print("ERROR cannot read %s: %s" % (args.verify_json, e))
            return 1
        if current != render_json(result.requirements):
            print("ERROR %s is stale: regenerate it with tools/aobj_reqs.py --out %s"
                  % (args.verify_json, args.verify_json))
            ok = False
    if args.cite_check:
        try:
            ok = cite_check(args.cite_check, result.requirements, result.retired,
                            args.list_uncited) and ok
        except OSError as e:
            print("error: %s" % e, file=sys.stderr)
            return 2
    if not (args.check or args.out or args.verify_json or args.cite_check or args.summary):
        sys.stdout.write(render_json(result.requirements))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
