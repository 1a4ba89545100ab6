#include "data/segment_encoding.h"

#include <algorithm>
#include <string>

namespace hftrain::data {

EncodedSegments encode_segments(const tokenizer::Tokenizer& tokenizer, const Document& doc) {
  EncodedSegments out;
  for (const auto& segment : doc.segments) {
    std::vector<int32_t> ids = tokenizer.encode(segment.text, doc.special_tokens);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    out.segment_ends.push_back(static_cast<uint32_t>(out.ids.size()));
  }
  if (!doc.special_tokens || doc.segments.size() < 2) return out;

  std::string text;
  for (const auto& segment : doc.segments) text += segment.text;
  std::vector<int32_t> whole = tokenizer.encode(text, true);
  if (whole == out.ids) return out;

  // The whole text's ids; each boundary from the encoding of the text before it.
  size_t chars = 0;
  uint32_t previous = 0;
  for (size_t s = 0; s + 1 < doc.segments.size(); ++s) {
    chars += doc.segments[s].text.size();
    const std::vector<int32_t> prefix = tokenizer.encode(std::string_view(text).substr(0, chars), true);
    const size_t shared = static_cast<size_t>(
        std::mismatch(prefix.begin(), prefix.end(), whole.begin(), whole.end()).first - prefix.begin());
    size_t end = shared;
    // whole[shared] holds characters on both sides: it carries loss when either side does, so it
    // ends this segment when this one is a loss span and the next is not.
    if (shared < prefix.size() && shared < whole.size() && doc.segments[s].train && !doc.segments[s + 1].train)
      end = shared + 1;
    previous = static_cast<uint32_t>(std::clamp(end, static_cast<size_t>(previous), whole.size()));
    out.segment_ends[s] = previous;
  }
  out.segment_ends.back() = static_cast<uint32_t>(whole.size());
  out.ids = std::move(whole);
  return out;
}

}  // namespace hftrain::data
