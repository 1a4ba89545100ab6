"""Emits the Unicode tables of hftrain's tokenizers, so that hftrain links no ICU:

  lib/tokenizer/generated/unicode_tables.cpp       code point ranges: the general categories L and N (\\p{L}, \\p{N}
                                    of the GPT-2 pattern, from Python's unicodedata), and the
                                    character classes the Hugging Face normalizers and
                                    pre-tokenizers use (accents StripAccents removes, the control
                                    characters BertNormalizer drops, CJK ideographs, punctuation,
                                    digits, regex \\w)
  lib/tokenizer/generated/unicode_norm_tables.cpp  decompositions (NFD, NFKD), canonical combining classes,
                                    primary compositions (NFC, NFKC) and lowercase mappings

The character classes and mappings are taken from the `tokenizers` library itself (one call per
code point), so they follow the Unicode version of the Rust crates it was built with rather
than Python's (combining classes are measured by how its NFD orders marks); Python's unicodedata
gives the one-step canonical decompositions that compositions are made of. Run from the
repository root:

    .venv/bin/python tests/conformance/tokenizer_gen_unicode_tables.py
"""
import os
import sys
import unicodedata

import tokenizers
from tokenizers import normalizers, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]  # Rust strings hold no surrogates
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3  # decomposed and composed by formula, not by table


def ranges_of(members):
    out = []
    start = prev = None
    for cp in sorted(members):
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            out.append((start, prev))
            start = prev = cp
    if start is not None:
        out.append((start, prev))
    return out


def rows(items, per_row):
    lines = []
    for i in range(0, len(items), per_row):
        lines.append("    " + ", ".join(items[i:i + per_row]) + ",")
    return "\n".join(lines)


def emit_ranges(name, members, doc):
    rs = ranges_of(members)
    items = [f"{{0x{a:X}, 0x{b:X}}}" for a, b in rs]
    return (f"// {doc}\nconst CodeRange {name}[] = {{\n{rows(items, 6)}\n}};\n"
            f"const size_t {name}Size = sizeof({name}) / sizeof({name}[0]);\n")


def category_members(prefix):
    return [cp for cp in range(0x110000) if unicodedata.category(chr(cp)).startswith(prefix)]


def tokenizer_classes():
    strip = normalizers.StripAccents()
    bert_strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                                            lowercase=False)
    nfd = normalizers.NFD()
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=False)
    chinese = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False,
                                         lowercase=False)
    punct = pre_tokenizers.Punctuation()
    digits = pre_tokenizers.Digits(individual_digits=True)
    words = pre_tokenizers.Whitespace()
    out = {"marks": [], "nonspacing": [], "control": [], "chinese": [], "punct": [], "digits": [], "word": []}
    for cp in CODE_POINTS:
        ch = chr(cp)
        if strip.normalize_str(ch) == "":
            out["marks"].append(cp)
        if nfd.normalize_str(ch) == ch and bert_strip.normalize_str(ch) == "":
            out["nonspacing"].append(cp)
        if clean.normalize_str(ch) == "":
            out["control"].append(cp)
        if chinese.normalize_str(ch) == f" {ch} ":
            out["chinese"].append(cp)
        if len(punct.pre_tokenize_str(f"a{ch}a")) == 3:
            out["punct"].append(cp)
        if len(digits.pre_tokenize_str(f"a{ch}")) == 2:
            out["digits"].append(cp)
        if [p for p, _ in words.pre_tokenize_str(f"a{ch}")] == [f"a{ch}"]:
            out["word"].append(cp)
    return out


def emit_classes():
    c = tokenizer_classes()
    parts = [
        emit_ranges("kLetters", category_members("L"), "General category L (Python's unicodedata)."),
        emit_ranges("kNumbers", category_members("N"), "General category N (Python's unicodedata)."),
        emit_ranges("kCombiningMarks", c["marks"], "What StripAccents removes (M*)."),
        emit_ranges("kNonspacingMarks", c["nonspacing"], "What BertNormalizer's strip_accents removes after NFD (Mn)."),
        emit_ranges("kBertControl", c["control"], "What BertNormalizer's clean_text removes (NUL, U+FFFD, C* but \\t\\n\\r)."),
        emit_ranges("kChinese", c["chinese"], "What BertNormalizer's handle_chinese_chars pads with spaces."),
        emit_ranges("kPunctuation", c["punct"], "Punctuation for BertPreTokenizer and Punctuation (ASCII punctuation and P*)."),
        emit_ranges("kNumeric", c["digits"], "What the Digits pre-tokenizer splits off (Rust char::is_numeric)."),
        emit_ranges("kWord", c["word"], "Regex \\w (Rust regex crate): single_word added tokens, the Whitespace pre-tokenizer."),
    ]
    return f"""// Generated by tests/conformance/tokenizer_gen_unicode_tables.py (Python {sys.version.split()[0]}, unicodedata
// {unicodedata.unidata_version}; tokenizers {tokenizers.__version__}); do not edit. Sorted, disjoint, inclusive ranges.
#include "tokenizer/unicode_tables.h"

namespace hftrain::tokenizer::unicode_tables {{

{chr(10).join(parts)}
}}  // namespace hftrain::tokenizer::unicode_tables
"""


# One mark for each combining class, all in Unicode since 6.0, to probe the library's classes with.
def reference_marks():
    refs = {}
    for cp in range(0x300, 0x20000):
        ch = chr(cp)
        v = unicodedata.combining(ch)
        if v and v not in refs and unicodedata.decomposition(ch) == "" and unicodedata.category(ch) == "Mn":
            refs[v] = ch
    return sorted(refs.items())


def library_combining_classes():
    """The canonical combining class of every code point as the library's NFD orders them. Python's
    unicodedata is older than the Rust crates, so classes are measured: a character with class c
    swaps with a following mark of a lower class and a preceding mark of a higher one."""
    nfd = normalizers.NFD()
    refs = reference_marks()
    low, high = refs[0][1], refs[-1][1]
    out = {}
    for cp in CODE_POINTS:
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        ch = chr(cp)
        if nfd.normalize_str(ch) != ch:
            continue  # decomposed before ordering: its own class never matters
        swaps_after = nfd.normalize_str(ch + low) == low + ch  # class(ch) > class(low)
        swaps_before = nfd.normalize_str(high + ch) == ch + high  # 0 < class(ch) < class(high)
        if not swaps_after and not swaps_before:
            continue
        py = unicodedata.combining(ch)
        lower = [v for v, m in refs if nfd.normalize_str(ch + m) == m + ch]
        higher = [v for v, m in refs if nfd.normalize_str(m + ch) == ch + m]
        if not lower and not higher:
            continue  # a starter to the library, whatever Python says (its tables are older there)
        lo = max(lower) if lower else 0
        hi = min(higher) if higher else 256
        equal = [v for v, _ in refs if lo < v < hi]
        out[cp] = py if lo < py < hi else (equal[0] if equal else (lo + hi) // 2)
    return out


def emit_norm():
    nfd, nfkd, lower, nfc = normalizers.NFD(), normalizers.NFKD(), normalizers.Lowercase(), normalizers.NFC()
    pool = []
    pool_index = {}

    def intern(s):
        key = tuple(ord(ch) for ch in s)
        if key not in pool_index:
            pool_index[key] = len(pool)
            pool.extend(key)
        return pool_index[key], len(key)

    canonical, compat, lowers, comps = [], [], [], []
    for cp in CODE_POINTS:
        ch = chr(cp)
        if not HANGUL_FIRST <= cp <= HANGUL_LAST:
            d = nfd.normalize_str(ch)
            if d != ch:
                canonical.append((cp, *intern(d)))
            k = nfkd.normalize_str(ch)
            if k != ch:
                compat.append((cp, *intern(k)))
            one_step = unicodedata.decomposition(ch)
            parts = None
            if one_step and not one_step.startswith("<"):
                parts = [int(p, 16) for p in one_step.split()]
            elif unicodedata.category(ch) == "Cn" and d != ch:
                # Newer than Python's tables: the composite of all but the last character, then it.
                head = nfc.normalize_str(d[:-1])
                parts = [ord(head), ord(d[-1])] if len(head) == 1 else None
            if parts and len(parts) == 2 and nfc.normalize_str(ch) == ch and nfc.normalize_str(d) == ch:
                comps.append((parts[0], parts[1], cp))
        lo = lower.normalize_str(ch)
        if lo != ch:
            lowers.append((cp, *intern(lo)))
    comps.sort()
    ccc = []
    classes = library_combining_classes()
    for cp in range(0x110000):
        v = classes.get(cp, 0)
        if v:
            if ccc and ccc[-1][1] == cp - 1 and ccc[-1][2] == v:
                ccc[-1] = (ccc[-1][0], cp, v)
            else:
                ccc.append((cp, cp, v))

    def mapping(name, entries, doc):
        items = [f"{{0x{cp:X}, {off}, {n}}}" for cp, off, n in entries]
        return (f"// {doc}\nconst Mapping {name}[] = {{\n{rows(items, 6)}\n}};\n"
                f"const size_t {name}Size = sizeof({name}) / sizeof({name}[0]);\n")

    pool_items = [f"0x{cp:X}" for cp in pool]
    ccc_items = [f"{{0x{a:X}, 0x{b:X}, {v}}}" for a, b, v in ccc]
    comp_items = [f"{{0x{a:X}, 0x{b:X}, 0x{c:X}}}" for a, b, c in comps]
    return f"""// Generated by tests/conformance/tokenizer_gen_unicode_tables.py (Python {sys.version.split()[0]}, unicodedata
// {unicodedata.unidata_version}; tokenizers {tokenizers.__version__}); do not edit.
#include "tokenizer/unicode_tables.h"

namespace hftrain::tokenizer::unicode_tables {{

// The code points the mappings below point into.
const uint32_t kMappingPool[] = {{
{rows(pool_items, 10)}
}};

{mapping("kCanonicalDecompositions", canonical, "Full canonical decomposition (NFD of one code point), Hangul syllables excluded.")}
{mapping("kCompatDecompositions", compat, "Full compatibility decomposition (NFKD of one code point), Hangul syllables excluded.")}
{mapping("kLowercase", lowers, "Lowercase (Rust char::to_lowercase, as the Lowercase normalizer applies it).")}
// Canonical combining classes other than 0 (as the library orders marks).
const CccRange kCombiningClasses[] = {{
{rows(ccc_items, 6)}
}};
const size_t kCombiningClassesSize = sizeof(kCombiningClasses) / sizeof(kCombiningClasses[0]);

// Primary composites (NFC), sorted by (first, second); Hangul excluded.
const Composition kCompositions[] = {{
{rows(comp_items, 5)}
}};
const size_t kCompositionsSize = sizeof(kCompositions) / sizeof(kCompositions[0]);

}}  // namespace hftrain::tokenizer::unicode_tables
"""


def main():
    out = os.path.join(ROOT, "lib", "tokenizer", "generated")
    for name, text in (("unicode_tables.cpp", emit_classes()), ("unicode_norm_tables.cpp", emit_norm())):
        path = os.path.join(out, name)
        with open(path, "w") as f:
            f.write(text)
        print("wrote", path)


if __name__ == "__main__":
    main()
