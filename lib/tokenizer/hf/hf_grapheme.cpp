#include "tokenizer/hf/hf_grapheme.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {
namespace {

using GB = GraphemeBreak;

enum class Conjunct : uint8_t { kNone, kLinker, kConsonant, kExtend };  // Indic_Conjunct_Break

struct Props {
  GB gb = GB::kOther;
  bool pictographic = false;  // Extended_Pictographic
  Conjunct conjunct = Conjunct::kNone;
};

Props props_of(uint32_t cp) {
  if (cp < 0x80) {
    if (cp == '\r') return {GB::kCr};
    if (cp == '\n') return {GB::kLf};
    return {cp < 0x20 || cp == 0x7F ? GB::kControl : GB::kOther};
  }
  const GraphemeRange* end = kGraphemeRanges + kGraphemeRangesSize;
  const GraphemeRange* r = std::upper_bound(
      kGraphemeRanges, end, cp, [](uint32_t c, const GraphemeRange& g) { return c < g.first; });
  if (r == kGraphemeRanges || cp > (r - 1)->last) return {};
  const uint8_t p = (r - 1)->props;
  return {static_cast<GB>(p & 0xF), (p & 0x10) != 0, static_cast<Conjunct>((p >> 5) & 3)};
}

bool is_control(GB gb) {
  return gb == GB::kCr || gb == GB::kLf || gb == GB::kControl;
}

// What the rules with context (GB9c, GB11, GB12/13) need to know about the cluster so far. The
// sequences they look back over are joined by GB9, so they never reach before the cluster.
struct Context {
  bool emoji = false;      // ends in Extended_Pictographic Extend*
  bool emoji_zwj = false;  // ends in Extended_Pictographic Extend* ZWJ
  int regional = 0;        // regional indicators at its end
  int conjunct = 0;        // ends in Consonant [Extend Linker]*: 1, with a Linker among them: 2

  void add(const Props& p) {
    emoji_zwj = emoji && p.gb == GB::kZwj;
    emoji = p.pictographic || (emoji && p.gb == GB::kExtend);
    regional = p.gb == GB::kRegionalIndicator ? regional + 1 : 0;
    if (p.conjunct == Conjunct::kConsonant) {
      conjunct = 1;
    } else if (conjunct > 0 && p.conjunct == Conjunct::kLinker) {
      conjunct = 2;
    } else if (conjunct == 0 || p.conjunct != Conjunct::kExtend) {
      conjunct = 0;
    }
  }
};

// Whether UAX #29 breaks between `before` and `after` (extended clusters).
bool breaks(const Props& before, const Props& after, const Context& c) {
  const GB b = before.gb, a = after.gb;
  if (b == GB::kCr && a == GB::kLf) return false;                                    // GB3
  if (is_control(b) || is_control(a)) return true;                                   // GB4, GB5
  if (b == GB::kL && (a == GB::kL || a == GB::kV || a == GB::kLv || a == GB::kLvt))  // GB6
    return false;
  if ((b == GB::kLv || b == GB::kV) && (a == GB::kV || a == GB::kT)) return false;  // GB7
  if ((b == GB::kLvt || b == GB::kT) && a == GB::kT) return false;                  // GB8
  if (a == GB::kExtend || a == GB::kZwj || a == GB::kSpacingMark) return false;     // GB9, 9a
  if (b == GB::kPrepend) return false;                                              // GB9b
  if (c.conjunct == 2 && after.conjunct == Conjunct::kConsonant) return false;      // GB9c
  if (c.emoji_zwj && after.pictographic) return false;                              // GB11
  if (b == GB::kRegionalIndicator && a == GB::kRegionalIndicator && c.regional % 2 == 1)
    return false;  // GB12, GB13
  return true;     // GB999
}

}  // namespace

size_t grapheme_end(std::string_view text, size_t begin) {
  size_t len = 1;
  Props before = props_of(unicode::decode(text, begin, len));
  Context context;
  context.add(before);
  size_t pos = begin + len;
  while (pos < text.size()) {
    const Props after = props_of(unicode::decode(text, pos, len));
    if (breaks(before, after, context)) break;
    context.add(after);
    before = after;
    pos += len;
  }
  return pos;
}

}  // namespace hftrain::tokenizer::hf
