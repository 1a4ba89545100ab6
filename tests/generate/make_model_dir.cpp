// Writes a tiny random model directory for tests/e2e/generate_test.sh, through the same
// save_model_dir the trainer uses:
//   hftrain_make_model_dir OUT [--arch gpt2|llama] [--tokenizer byte|TOKENIZER_JSON] [--vocab N]
//                              [--max-seq-len N] [--seed N] [--always ID]
// --always ID (gpt2) makes the model predict token ID from every position, so the text `generate`
// prints is known exactly: the final LayerNorm outputs its bias, set to ID's (enlarged) embedding,
// and the tied head then scores ID far above every other token (by ~100 logits).
#include <iostream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tokenizer/tokenizer_json.h"
#include "model/weights/saved_model.h"
#include "util/error.h"

using namespace hftrain;

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args.size() % 2 != 1) {
      std::cerr << "usage: hftrain_make_model_dir OUT [--arch gpt2|llama] [--tokenizer byte|FILE] "
                   "[--vocab N] "
                   "[--max-seq-len N] [--seed N] [--always ID]\n";
      return 2;
    }
    std::string arch = "gpt2", tokenizer_arg = "byte";
    int64_t vocab = 0, max_seq_len = 32, seed = 1, always = -1;
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      const std::string& key = args[i];
      const std::string& value = args[i + 1];
      if (key == "--arch")
        arch = value;
      else if (key == "--tokenizer")
        tokenizer_arg = value;
      else if (key == "--vocab")
        vocab = std::stoll(value);
      else if (key == "--max-seq-len")
        max_seq_len = std::stoll(value);
      else if (key == "--seed")
        seed = std::stoll(value);
      else if (key == "--always")
        always = std::stoll(value);
      else
        throw util::UsageError("unknown option " + key);
    }
    tokenizer::TokenizerKind kind = tokenizer::TokenizerKind::kByte;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer;
    if (tokenizer_arg != "byte") {
      tokenizer = tokenizer::load_tokenizer_json(tokenizer_arg);
      kind = tokenizer::TokenizerKind::kBpe;
    }
    model::ModelSpec s;
    s.arch = arch == "llama" ? config::ModelArch::kLlama : config::ModelArch::kGpt2;
    s.n_layer = 2, s.n_head = 4, s.n_kv_head = arch == "llama" ? 2 : 4, s.d_model = 32, s.d_ff = 64;
    s.max_seq_len = max_seq_len;
    s.vocab_size = vocab > 0 ? vocab : (tokenizer ? tokenizer->vocab_size() : 258);
    s.tie_embeddings = arch != "llama";
    torch::manual_seed(static_cast<uint64_t>(seed));
    model::Transformer m(s);
    if (always >= 0) {
      if (arch != "gpt2") throw util::UsageError("--always needs --arch gpt2");
      torch::NoGradGuard no_grad;
      for (auto& [name, p] : m->parameters_by_name()) {
        if (name == "embed_tokens.weight") p[always].mul_(10.0);
      }
      torch::Tensor row;
      for (auto& [name, p] : m->parameters_by_name()) {
        if (name == "embed_tokens.weight") row = p[always].clone();
      }
      for (auto& [name, p] : m->parameters_by_name()) {
        if (name == "final_norm.weight") p.zero_();
        if (name == "final_norm.bias")
          p.copy_(row * 100.0);  // a margin no sampling setting overcomes
      }
    }
    model::save_model_dir(args[0], m, kind, tokenizer.get());
    return 0;
  } catch (const util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  }
}
