// Floating-point numbers of a tokenizer.json as the `tokenizers` library reads them. Its JSON
// reader (serde_json without the float_roundtrip feature) computes a decimal d1..dn x 10^e as
// the double of the integer d1..dn, then one multiplication or division by 10^|e|: that is the
// correctly rounded value unless the digits make an integer above 2^53, and then it can be one
// unit in the last place off ("-0.43561181362301915" reads as -0.4356118136230191). Unigram's
// Viterbi search compares sums of such scores, so a tie must stay a tie.
#pragma once

namespace hftrain::tokenizer::hf {

// The double `tokenizers` reads for a number whose correctly rounded value is `value`, assuming
// the file spells it with the fewest digits that round-trip (as `tokenizers`, Python's json and
// transformers write every float).
double tokenizers_double(double value);

}  // namespace hftrain::tokenizer::hf
