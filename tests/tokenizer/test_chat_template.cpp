// Chat templates for training: where a template comes from (data.chat_template), the loss spans
// from {% generation %} blocks and from the prefix rule, and the refusals.
#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "helpers.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

using namespace hftrain;
using Json = nlohmann::ordered_json;

namespace {

Json conversation() {
  return Json::array({Json{{"role", "system"}, {"content", "Be brief."}},
                      Json{{"role", "user"}, {"content", "Hi"}},
                      Json{{"role", "assistant"}, {"content", "Hello"}},
                      Json{{"role", "user"}, {"content", "Bye"}},
                      Json{{"role", "assistant"}, {"content", "Bye!"}}});
}

std::vector<std::string> spans_text(const tokenizer::ChatRendering& r) {
  std::vector<std::string> out;
  for (const auto& [b, e] : r.train_spans) out.push_back(r.text.substr(b, e - b));
  return out;
}

}  // namespace

TEST_CASE("chat template: chatml's spans are each assistant turn with its end-of-turn token", "[tokenizer][chat]") {
  auto chatml = tokenizer::resolve_chat_template("chatml", "");
  REQUIRE(chatml);
  const auto r = chatml->render_for_training(conversation(), nullptr);
  CHECK(r.text ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        "Hello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\nBye!<|im_end|>\n");
  CHECK(spans_text(r) == std::vector<std::string>{"Hello<|im_end|>\n", "Bye!<|im_end|>\n"});
  CHECK(chatml->render_prompt(Json::array({Json{{"role", "user"}, {"content", "Hi"}}})) ==
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat template: generation blocks give the spans", "[tokenizer][chat]") {
  const std::string src =
      "{% for m in messages %}[{{ m.role }}]{% if m.role == 'assistant' %}{% generation %}{{ m.content }}</s>"
      "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}";
  tokenizer::ChatTemplate t(src, "test", Json{{"eos_token", "</s>"}});
  CHECK(t.has_generation_blocks());
  const auto r = t.render_for_training(conversation(), nullptr);
  CHECK(spans_text(r) == std::vector<std::string>{"Hello</s>", "Bye!</s>"});
}

TEST_CASE("chat template: where auto finds it, and the refusals", "[tokenizer][chat]") {
  test::TempDir dir;
  const auto tok = dir.write("m/tokenizer.json", "{}");
  CHECK(tokenizer::resolve_chat_template("auto", tok) == nullptr);  // no config: hftrain's own format
  CHECK(tokenizer::resolve_chat_template("auto", "") == nullptr);
  CHECK(tokenizer::resolve_chat_template("hftrain", tok) == nullptr);

  dir.write("m/tokenizer_config.json",
            R"({"eos_token": {"content": "<E>"}, "chat_template": [{"name": "tool_use", "template": "T"},
    {"name": "default", "template": "{{ eos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}]})");
  auto from_config = tokenizer::resolve_chat_template("auto", tok);
  REQUIRE(from_config);
  CHECK(from_config->render_prompt(Json::array({Json{{"role", "user"}, {"content", "x"}}})) == "<E>x");

  dir.write("m/chat_template.jinja", "J{{ bos_token | default('-') }}");
  auto from_jinja = tokenizer::resolve_chat_template("auto", tok);
  REQUIRE(from_jinja);
  CHECK(from_jinja->render_prompt(Json::array()) == "J-");
  CHECK(from_jinja->fingerprint() != from_config->fingerprint());

  const auto file = dir.write("t.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  CHECK(tokenizer::resolve_chat_template(file.string(), tok)->name() == file.string());

  CHECK_THROWS_AS(tokenizer::resolve_chat_template("no-such-template", tok), util::ConfigError);
  dir.write("empty/tokenizer_config.json", "{}");
  CHECK_THAT(test::data_error([&] { tokenizer::resolve_chat_template((dir.path() / "empty").string(), tok); }),
             Catch::Contains("has no chat template"));
  const auto bad = dir.write("bad.jinja", "{% for m in messages %}");
  CHECK_THAT(test::data_error([&] { tokenizer::resolve_chat_template(bad.string(), tok); }),
             Catch::Contains("bad.jinja"));
}

TEST_CASE("chat template: a template that rewrites earlier turns needs generation blocks", "[tokenizer][chat]") {
  // Only the last assistant turn is shown in full: the prefix rule cannot place the first one.
  const std::string src =
      "{% for m in messages %}{% if m.role == 'assistant' and not loop.last %}[old]{% else %}{{ m.content }}"
      "{% endif %}{% endfor %}{% if add_generation_prompt %}>{% endif %}";
  tokenizer::ChatTemplate t(src, "rewriting", Json::object());
  CHECK_THAT(test::data_error([&] { t.render_for_training(conversation(), nullptr); }),
             Catch::Contains("rewriting") && Catch::Contains("rewrites earlier turns"));
  tokenizer::ChatTemplate chat(src, "rewriting", Json::object());
  CHECK_THAT(test::data_error([&] {
               chat.render_for_training(Json::array({Json{{"role", "user"}, {"content", "only a question"}}}), nullptr);
             }),
             Catch::Contains("no assistant text"));
}
