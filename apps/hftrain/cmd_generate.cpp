// `hftrain generate CHECKPOINT --prompt TEXT [sampling options]`: loads a model directory (or the
// newest model of a run directory) and prints prompt + continuation for each sample on stdout,
// streamed token by token; what was loaded and why each sample stopped go to stderr.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/types.h>
#include <CLI/CLI.hpp>

#include "commands.h"
#include "data/source.h"
#include "train/task/adapter_model.h"
#include "model/decoder/sampling.h"
#include "model/weights/saved_model.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

struct GenerateArgs {
  std::string checkpoint;
  std::string prompt;
  model::SamplingOptions sampling;
  int64_t num_samples = 1;
  std::string device = "cpu";
  bool chat = false;                  // --prompt is a user message, rendered with the chat template
  std::string system;                 // an optional system message before it
  std::string chat_template = "auto";  // as data.chat_template
};

// The prompt a chat model sees for --chat, and the token that ends its turn (the first token of
// what the template writes after an assistant message's content, when that is a special token;
// else the end-of-text token).
struct ChatPrompt {
  std::string text;
  std::optional<int64_t> stop_id;
};

ChatPrompt chat_prompt(const GenerateArgs& a, const std::filesystem::path& model_dir, const tokenizer::Tokenizer& tok) {
  using Json = nlohmann::ordered_json;
  const auto tmpl = tokenizer::resolve_chat_template(a.chat_template, model_dir / model::kTokenizerFile);
  Json messages = Json::array();
  if (!a.system.empty()) messages.push_back(Json{{"role", "system"}, {"content", a.system}});
  messages.push_back(Json{{"role", "user"}, {"content", a.prompt}});
  ChatPrompt out;
  if (!tmpl) {
    // hftrain's own format (data/source.h's ChatTemplate), which ends a conversation with eot.
    const data::ChatTemplate own;
    for (const auto& m : messages) {
      out.text += own.role_prefix + m["role"].get<std::string>() + own.role_suffix + m["content"].get<std::string>() +
                  own.message_end;
    }
    out.text += own.role_prefix + own.train_role + own.role_suffix;
    return out;
  }
  out.text = tmpl->render_prompt(messages);
  const std::string probe = "hftrain-probe-7f3a";
  Json turn = messages;
  turn.push_back(Json{{"role", "assistant"}, {"content", probe}});
  const tokenizer::ChatRendering r = tmpl->render_for_training(turn, nullptr);
  const size_t at = r.text.rfind(probe);
  if (at != std::string::npos && !r.train_spans.empty()) {
    const size_t end = r.train_spans.back().second;
    if (at + probe.size() < end) {
      const auto ids = tok.encode(r.text.substr(at + probe.size(), end - at - probe.size()), true);
      if (!ids.empty() && tok.special_id(tok.decode(std::vector<int32_t>{ids[0]}))) out.stop_id = ids[0];
    }
  }
  return out;
}

torch::Device parse_device(const std::string& name) {
  std::optional<torch::Device> device;
  try {
    device = torch::Device(name);
  } catch (const std::exception&) {
    throw util::UsageError("--device '" + name + "' is not a device", "use cpu, cuda or cuda:N");
  }
  if (device->is_cuda() && !torch::cuda::is_available()) {
    throw util::UsageError("--device " + name + ": no CUDA device is available to this build",
                           "use --device cpu");
  }
  if (!device->is_cpu() && !device->is_cuda())
    throw util::UsageError("--device must be cpu or cuda[:N]");
  return *device;
}

std::string describe_stop(model::StopReason reason, const model::ModelSpec& spec) {
  switch (reason) {
    case model::StopReason::kMaxNewTokens:
      return "reached --max-new-tokens";
    case model::StopReason::kEndOfText:
      return "the model ended the text (end-of-text token)";
    case model::StopReason::kMaxSeqLen:
      return "reached the model's max_seq_len of " + std::to_string(spec.max_seq_len) +
             " tokens (prompt included)";
  }
  return "";
}

std::string format_seconds(double s) {
  std::ostringstream out;
  out.precision(s < 10 ? 2 : 1);
  out << std::fixed << s << " s";
  return out.str();
}

int run_generate(const GenerateArgs& a) {
  // Everything that can be checked without the model is checked before loading it.
  model::validate_sampling_options(a.sampling);
  if (a.num_samples < 1) {
    throw util::UsageError("--num-samples is " + std::to_string(a.num_samples) +
                           ", it must be at least 1");
  }
  if (a.prompt.empty())
    throw util::UsageError("the prompt is empty", "give some text: --prompt \"Once upon a time\"");
  const torch::Device device = parse_device(a.device);

  const auto load_start = std::chrono::steady_clock::now();
  // A LoRA run's adapters (its final/ or a checkpoint) run on the base model they name.
  const std::filesystem::path named(a.checkpoint);
  const std::filesystem::path adapter = train::is_adapter_dir(named / "final") ? named / "final" : named;
  model::LoadedModel loaded = train::is_adapter_dir(adapter) ? train::load_adapter_model(adapter, /*merge=*/false)
                                                             : model::load_model_dir(a.checkpoint);
  const model::ModelSpec& spec = loaded.model->spec();
  if (spec.score_outputs > 0) {
    throw util::UsageError(loaded.dir.string() + " is a reward model (a score head, no output layer over the "
                                                 "vocabulary): it scores sequences and does not generate",
                           "generate with a language model; score with transformers' "
                           "AutoModelForSequenceClassification on its export (run.export_hf)");
  }
  int64_t n_params = 0;
  for (const auto& p : loaded.model->parameters()) n_params += p.numel();
  loaded.model->to(device);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  std::cerr << "loaded " << loaded.dir.string() << ": "
            << (spec.arch == config::ModelArch::kGpt2 ? "gpt2" : "llama") << ", " << spec.n_layer
            << " layers, " << n_params << " parameters, vocab " << spec.vocab_size
            << ", max_seq_len " << spec.max_seq_len << "; tokenizer "
            << (loaded.tokenizer_kind == tokenizer::TokenizerKind::kByte ? "byte" : "bpe") << " ("
            << loaded.tokenizer->vocab_size() << " tokens); on " << device.str() << " in "
            << format_seconds(load_s) << "\n";

  // Special-token text in the prompt ("<|endoftext|>") becomes the token, as Hugging Face
  // tokenizers encode by default: a prompt may start a new document on purpose.
  ChatPrompt chat;
  if (a.chat) chat = chat_prompt(a, loaded.dir, *loaded.tokenizer);
  const std::string& prompt = a.chat ? chat.text : a.prompt;
  const std::vector<int32_t> prompt_ids = loaded.tokenizer->encode(prompt, /*allow_special=*/true);
  if (static_cast<int64_t>(prompt_ids.size()) > spec.max_seq_len) {
    throw util::UsageError("the prompt is " + std::to_string(prompt_ids.size()) +
                               " tokens, longer than the model's max_seq_len of " +
                               std::to_string(spec.max_seq_len),
                           "shorten the prompt");
  }
  model::GenerateRequest request;
  request.prompt.assign(prompt_ids.begin(), prompt_ids.end());
  request.stop_id = chat.stop_id.value_or(loaded.tokenizer->eot_id());
  request.vocab_limit = loaded.tokenizer->vocab_size();

  // One generator for all samples: sample i is the same whatever --num-samples is.
  at::Generator generator = model::make_sampling_generator(a.sampling.seed);
  for (int64_t i = 0; i < a.num_samples; ++i) {
    if (a.num_samples > 1) {
      if (i > 0) std::cout << "\n";
      std::cout << "----- sample " << (i + 1) << "/" << a.num_samples << " -----\n";
    }
    std::cout << prompt << std::flush;
    const auto start = std::chrono::steady_clock::now();
    // Tokens are decoded in context, prompt included: a WordPiece "##ing" joins the word before
    // it and a Metaspace "▁cat" becomes " cat" only next to what precedes them. Each step prints
    // what the whole text gained (for byte-level tokens, exactly that token's bytes).
    std::vector<int32_t> context(prompt_ids.begin(), prompt_ids.end());
    std::string printed = loaded.tokenizer->decode(context);
    auto stream = [&](int64_t token) {
      context.push_back(static_cast<int32_t>(token));
      const std::string text = loaded.tokenizer->decode(context);
      size_t common = 0;
      while (common < printed.size() && common < text.size() && printed[common] == text[common]) ++common;
      std::cout << text.substr(common) << std::flush;
      printed = text;
    };
    const model::Generation g =
        model::generate(loaded.model, request, a.sampling, generator, stream);
    std::cout << "\n" << std::flush;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ostringstream rate;
    rate.precision(1);
    rate << std::fixed << (s > 0 ? static_cast<double>(g.tokens.size()) / s : 0.0);
    std::cerr << "sample " << (i + 1) << "/" << a.num_samples << ": " << prompt_ids.size()
              << " prompt + " << g.tokens.size() << " new tokens in " << format_seconds(s) << " ("
              << rate.str() << " tokens/s); stopped: " << describe_stop(g.reason, spec) << "\n";
  }
  return util::kExitOk;
}

}  // namespace

void add_generate_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand(
      "generate",
      "Generate text from a trained model (a model directory, or a run directory's newest model)");
  sub->add_option(
         "checkpoint", a->checkpoint,
         "CHECKPOINT: a model directory (model.safetensors, model.json, tokenizer.json), or a run "
         "directory (uses final/, else the highest checkpoint-N/)")
      ->required();
  sub->add_option("--prompt", a->prompt,
                  "The text to continue (special tokens such as <|endoftext|> are honoured)")
      ->required();
  sub->add_option("--max-new-tokens", a->sampling.max_new_tokens,
                  "Most tokens to generate per sample")
      ->capture_default_str();
  sub->add_option("--temperature", a->sampling.temperature, "Softmax temperature; 0 means greedy")
      ->capture_default_str();
  sub->add_option("--top-k", a->sampling.top_k,
                  "Sample only from the K most likely tokens; 0 = off")
      ->capture_default_str();
  sub->add_option(
         "--top-p", a->sampling.top_p,
         "Nucleus sampling: the smallest set of tokens whose probability reaches P; 1 = off")
      ->capture_default_str();
  sub->add_option("--seed", a->sampling.seed,
                  "Seed of the sampler: the same seed gives the same text")
      ->capture_default_str();
  sub->add_option("--num-samples", a->num_samples, "How many continuations to generate")
      ->capture_default_str();
  sub->add_flag("--greedy", a->sampling.greedy, "Always pick the most likely token (no sampling)");
  sub->add_option("--device", a->device, "Where the model runs: cpu, cuda or cuda:N")
      ->capture_default_str();
  sub->add_flag("--chat", a->chat,
                "--prompt is a user message: render it with the model's chat template (and the generation "
                "prompt), and stop at the template's end-of-turn token");
  sub->add_option("--system", a->system, "With --chat: a system message before the prompt");
  sub->add_option("--template", a->chat_template,
                  "With --chat: as data.chat_template (auto: the model directory's own; hftrain; chatml; a file "
                  "or directory)")
      ->capture_default_str();
  sub->callback([a, &runner] { runner = [a] { return run_generate(*a); }; });
}

}  // namespace hftrain::app
