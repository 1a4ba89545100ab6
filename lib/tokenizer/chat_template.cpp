#include "tokenizer/chat_template.h"

#include <algorithm>
#include <system_error>

#include "tokenizer/jinja/chat_context.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json_depth.h"

namespace hftrain::tokenizer {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kChatml =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The special tokens a template may use, from tokenizer_config.json ("</s>" or {"content": "</s>"}).
Json special_variables(const Json& config) {
  Json vars = Json::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    auto it = config.find(key);
    if (it == config.end()) continue;
    if (it->is_string()) vars[key] = *it;
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) vars[key] = (*it)["content"];
  }
  return vars;
}

Json read_json(const fs::path& file) {
  const std::string text = util::read_file<util::DataError>(file, "tokenizer config");
  return util::parse_json_or_throw<util::DataError, Json>(text, file.string(), file.string() + " is not valid JSON",
                                                          "fix or replace the file");
}

// The chat_template of a tokenizer_config.json: a string, or [{"name": ..., "template": ...}].
std::optional<std::string> config_template(const Json& config, const fs::path& file) {
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    const Json* chosen = nullptr;
    for (const auto& entry : *it) {
      if (!entry.is_object() || !entry.contains("template") || !entry["template"].is_string()) continue;
      if (chosen == nullptr || entry.value("name", "") == "default") chosen = &entry;
      if (entry.value("name", "") == "default") break;
    }
    if (chosen != nullptr) return (*chosen)["template"].get<std::string>();
  }
  throw util::DataError(file.string() + ": \"chat_template\" is neither a string nor a list of "
                            "{\"name\", \"template\"} objects",
                        "fix the file, or set data.chat_template to a template file");
}

std::shared_ptr<const ChatTemplate> from_dir(const fs::path& dir, bool required, const std::string& what) {
  const fs::path config_file = dir / "tokenizer_config.json";
  const fs::path jinja_file = dir / "chat_template.jinja";
  std::error_code ec;
  Json config = fs::is_regular_file(config_file, ec) ? read_json(config_file) : Json::object();
  if (fs::is_regular_file(jinja_file, ec)) {
    return std::make_shared<const ChatTemplate>(util::read_file<util::DataError>(jinja_file, "chat template"),
                                                jinja_file.string(), special_variables(config));
  }
  if (auto source = config_template(config, config_file)) {
    return std::make_shared<const ChatTemplate>(*source, config_file.string(), special_variables(config));
  }
  if (required) {
    throw util::DataError(what + " has no chat template (no chat_template.jinja, no \"chat_template\" in "
                              "tokenizer_config.json)",
                          "name a template file, or data.chat_template=chatml or hftrain");
  }
  return nullptr;
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, std::string name, Json variables)
    : template_(jinja::Template::parse(source, name)),
      source_(source),
      name_(std::move(name)),
      variables_(std::move(variables)) {}

std::string ChatTemplate::render(const Json& messages, const Json& tools, bool prompt,
                                 jinja::RenderResult* full) const {
  jinja::ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.tools = tools;
  inputs.add_generation_prompt = prompt;
  inputs.extra = variables_;
  jinja::RenderResult result = template_.render(jinja::make_chat_context(inputs));
  if (full != nullptr) *full = result;
  return std::move(result.text);
}

ChatRendering ChatTemplate::render_for_training(const Json& messages, const Json& tools) const {
  ChatRendering out;
  jinja::RenderResult full;
  out.text = render(messages, tools, false, &full);
  if (has_generation_blocks()) {
    // Blocks finish in any order (a block inside a macro): sorted and merged.
    auto spans = full.generation_spans;
    std::sort(spans.begin(), spans.end());
    for (const auto& span : spans) {
      if (span.second <= span.first) continue;
      if (!out.train_spans.empty() && span.first <= out.train_spans.back().second) {
        out.train_spans.back().second = std::max(out.train_spans.back().second, span.second);
      } else {
        out.train_spans.push_back(span);
      }
    }
  } else {
    for (size_t i = 0; i < messages.size(); ++i) {
      if (!messages[i].is_object() || messages[i].value("role", "") != "assistant") continue;
      const Json before(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(i));
      const Json through(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      const std::string prompt = render(before, tools, true);
      const std::string turn = render(through, tools, false);
      size_t end = turn.size();
      if (out.text.compare(0, end, turn) != 0) {
        // A template may close the whole conversation with a special token (Phi-3: eos_token); it
        // belongs to the last turn only.
        for (const auto& [key, value] : variables_.items()) {
          if (!value.is_string()) continue;
          const auto& v = value.get_ref<const std::string&>();
          if (!v.empty() && v.size() <= end && turn.compare(end - v.size(), v.size(), v) == 0 &&
              out.text.compare(0, end - v.size(), turn, 0, end - v.size()) == 0) {
            end -= v.size();
            break;
          }
        }
      }
      if (turn.compare(0, prompt.size(), prompt) != 0 || out.text.compare(0, end, turn, 0, end) != 0) {
        throw util::DataError("chat template " + name_ + ": the assistant message " + std::to_string(i) +
                                  " cannot be located, because rendering the conversation up to it does not "
                                  "give a prefix of the whole (the template rewrites earlier turns)",
                              "add {% generation %} ... {% endgeneration %} around the assistant content in a "
                              "copy of the template and name it in data.chat_template");
      }
      if (end > prompt.size()) out.train_spans.emplace_back(prompt.size(), end);
    }
  }
  if (out.train_spans.empty()) {
    throw util::DataError("chat template " + name_ + ": the conversation has no assistant text to train on",
                          "each record needs at least one non-empty assistant message");
  }
  return out;
}

std::string ChatTemplate::render_prompt(const Json& messages) const { return render(messages, nullptr, true); }

std::string ChatTemplate::fingerprint() const {
  return "jinja " + std::to_string(util::hash64(source_)) + " " + variables_.dump();
}

std::shared_ptr<const ChatTemplate> resolve_chat_template(const std::string& choice, const fs::path& tokenizer_file) {
  if (choice == "hftrain") return nullptr;
  if (choice == "chatml") return std::make_shared<const ChatTemplate>(kChatml, "chatml (built in)", Json::object());
  if (choice == "auto") {
    if (tokenizer_file.empty()) return nullptr;
    return from_dir(tokenizer_file.parent_path(), false, "");
  }
  const fs::path file(choice);
  std::error_code ec;
  if (fs::is_directory(file, ec)) return from_dir(file, true, "data.chat_template " + choice);
  if (!fs::exists(file, ec)) {
    throw util::ConfigError(
        "data.chat_template: `" + choice + "` is neither auto, hftrain, chatml nor an existing file",
        "name a Jinja file, a tokenizer_config.json or a model directory");
  }
  if (file.extension() == ".json") {
    const Json config = read_json(file);
    auto source = config_template(config, file);
    if (!source) {
      throw util::DataError(file.string() + " has no \"chat_template\"", "name a file that has one");
    }
    return std::make_shared<const ChatTemplate>(*source, file.string(), special_variables(config));
  }
  // A Jinja file: the special tokens come from a tokenizer_config.json beside the tokenizer.
  Json vars = Json::object();
  const fs::path config_file =
      tokenizer_file.empty() ? fs::path() : tokenizer_file.parent_path() / "tokenizer_config.json";
  if (!config_file.empty() && fs::is_regular_file(config_file, ec)) vars = special_variables(read_json(config_file));
  return std::make_shared<const ChatTemplate>(util::read_file<util::DataError>(file, "chat template"), file.string(),
                                              std::move(vars));
}

}  // namespace hftrain::tokenizer
