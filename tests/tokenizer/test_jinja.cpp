// The chat-template Jinja interpreter (lib/tokenizer/jinja): whitespace control, statements,
// expressions, Python printing, filters/tests/methods/globals, undefined values, {% generation %}
// spans, the transformers context, and errors (syntax with line, unsupported constructs named at
// parse time, raise_exception, runtime type errors, nesting and work limits). Byte-for-byte agreement
// with transformers on whole chat templates is checked by tests/conformance/chat_template_jinja.py.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/chat_context.h"
#include "tokenizer/jinja/template.h"

using hftrain::tokenizer::jinja::ChatTemplateInputs;
using hftrain::tokenizer::jinja::make_chat_context;
using hftrain::tokenizer::jinja::RenderResult;
using hftrain::tokenizer::jinja::Template;
using hftrain::tokenizer::jinja::TemplateError;
using Json = nlohmann::ordered_json;

namespace {

RenderResult render_full(const std::string& source, const std::string& context = "{}") {
  return Template::parse(source, "test").render(Json::parse(context));
}

std::string render(const std::string& source, const std::string& context = "{}") {
  return render_full(source, context).text;
}

TemplateError render_error(const std::string& source, const std::string& context = "{}") {
  try {
    render(source, context);
  } catch (const TemplateError& e) {
    return e;
  }
  FAIL("no TemplateError for: " << source);
  throw std::logic_error("unreachable");
}

const char* kMessages = R"({"messages": [{"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})";

}  // namespace

TEST_CASE("jinja: text, expressions and comments", "[tokenizer][jinja]") {
  CHECK(render("plain text") == "plain text");
  CHECK(render("{{ 'a' }}{# gone #}{{ \"b\" }}") == "ab");
  CHECK(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}") ==
        "7 9 3 -4 1 2");
  CHECK(render("{{ 7 / 2 }} {{ 6 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}") == "3.5 3.0 1024 0.5 64");
  CHECK(render("{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' + 'c' }} {{ 'x' * 3 }} {{ [1] + [2] }}") ==
        "a1NoneTrue abc xxx [1, 2]");
  CHECK(render("{{ 1 < 2 < 3 }} {{ 'a' in 'cat' }} {{ 3 not in [1, 2] }} {{ 1 == 1.0 }} {{ (1, 2) == [1, 2] }}") ==
        "True True True True False");
  CHECK(render("{{ 0 or 'x' }} {{ 'y' and 'z' }} {{ not [] }} {{ 1 if false else 2 }}|{{ 1 if false }}|") ==
        "x z True 2||");
  CHECK(render("{{ 'a\\nb\\t\\x41\\u00e9\\U0001F600\\d' }}") == "a\nb\tAé😀\\d");
  CHECK(render("{{ 'con' 'cat' }} {{ 1_000 + 0x10 }} {{ 1.5e3 }}") == "concat 1016 1500.0");
  CHECK(render("{{ [1, 2, 3][1:] }} {{ 'héllo'[::-1] }} {{ 'héllo'[1:3] }} {{ [1, 2, 3][-1] }}") ==
        "[2, 3] olléh él 3");
}

TEST_CASE("jinja: values print as Python prints them", "[tokenizer][jinja]") {
  CHECK(render("{{ none }} {{ true }} {{ false }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-05 }} {{ -0.0 }}") ==
        "None True False 1.0 0.30000000000000004 1e+16 1e-05 -0.0");
  CHECK(render("{{ ['a', \"it's\", 1, 2.5, none, true] }}") == R"(['a', "it's", 1, 2.5, None, True])");
  CHECK(render("{{ {'k': {'n': [1]}, 'e': {}} }} {{ (1,) }} {{ () }}") == "{'k': {'n': [1]}, 'e': {}} (1,) ()");
  CHECK(render("{{ ['tab\\t', 'nl\\n', 'q\\'\"', '\\x00'] }}") == R"(['tab\t', 'nl\n', 'q\'"', '\x00'])");
  CHECK(render(R"({{ x }})", R"({"x": {"b": 1, "a": [true, null, 1.5]}})") == "{'b': 1, 'a': [True, None, 1.5]}");
}

TEST_CASE("jinja: trim_blocks, lstrip_blocks and whitespace control", "[tokenizer][jinja]") {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before one.
  CHECK(render("{% if true %}\n  x\n  {% endif %}\ny") == "  x\ny");
  CHECK(render("a\n    {% for i in [1, 2] %}\n    {{ i }}\n    {% endfor %}\nb") == "a\n    1\n    2\nb");
  // {{ }} is neither trimmed nor lstripped.
  CHECK(render("  {{ 'v' }}\n") == "  v");
  CHECK(render("a  {%- if true -%}  b  {%+ endif %}  c") == "ab    c");
  CHECK(render("x {{- ' y ' -}} z") == "x y z");
  CHECK(render("  {# comment #}\nz") == "z");
  CHECK(render("{% raw %}{{ not rendered }}{% endraw %}") == "{{ not rendered }}");
  // One trailing newline of the template is dropped (keep_trailing_newline=False), \r\n normalised.
  CHECK(render("a\r\nb\n") == "a\nb");
  CHECK(render("a\n\n") == "a\n");
}

TEST_CASE("jinja: if, for, loop variables, break and continue", "[tokenizer][jinja]") {
  CHECK(render("{% if 0 %}a{% elif none %}b{% elif 'x' %}c{% else %}d{% endif %}") == "c");
  CHECK(render("{% for i in [] %}x{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for i in range(5) if i is odd %}{{ loop.index }}/{{ loop.length }}:{{ i }} {% endfor %}") ==
        "1/2:1 2/2:3 ");
  CHECK(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})") == "b=1;a=2;");
  CHECK(render("{% for x in 'abc' %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.revindex }}"
               "{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('o', 'e') }} {% endfor %}") ==
        "0TrueFalse3bo 1FalseFalse2ace 2FalseTrue1bo ");
  CHECK(render("{% for i in range(9) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}"
               "{{ i }}{% endfor %}") == "023");
  // Each iteration has its own scope: {% set %} inside does not leak and does not carry over.
  CHECK(render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}") == "15151");
}

TEST_CASE("jinja: set, namespace, block set, with, filter block", "[tokenizer][jinja]") {
  CHECK(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}") == "12(1, 2)");
  CHECK(
      render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}") ==
      "6");
  CHECK(render("{% set ns = namespace(a=1) %}{{ ns }}") == "<Namespace {'a': 1}>");
  CHECK(render("{% set x %}  A {{ 1 }} {% endset %}[{{ x }}]{% set y | trim | upper %} b {% endset %}[{{ y }}]") ==
        "[  A 1 ][B]");
  CHECK(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]") == "3[]");
  CHECK(render("{% filter upper %}abc{% endfilter %}") == "ABC");
  CHECK(render("{% if true %}{% set inner = 1 %}{% endif %}{{ inner }}") == "1");
}

TEST_CASE("jinja: macros and call blocks", "[tokenizer][jinja]") {
  CHECK(render("{% macro f(a, b=2, c='x') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ f(1) }}|{{ f(1, c=3) }}|{{ f() }}") ==
        "12x|123|2x");
  CHECK(render("{% macro f(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, k=3) }}") == "(2,){'k': 3}");
  CHECK(render("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(4) }}") == "4321");
  CHECK(render("{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}body{% endcall %}") == "[body]");
  // Macros see the scope they were defined in, at call time.
  CHECK(render("{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}") == "2");
  CHECK_THROWS_AS(render("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}"), TemplateError);
}

TEST_CASE("jinja: undefined values behave as jinja2's default Undefined", "[tokenizer][jinja]") {
  CHECK(render("[{{ missing }}]{{ missing is defined }}{{ missing is undefined }}{{ missing | length }}") ==
        "[]FalseTrue0");
  CHECK(render("{{ missing | default('d') }}{{ '' | default('e', true) }}{{ d.nope is defined }}",
               R"({"d": {"a": 1}})") == "deFalse");
  CHECK(render("{% for x in missing %}x{% endfor %}{{ missing ~ 'y' }}{{ none.attr }}") == "y");
  // An attribute of an undefined value raises, naming it.
  CHECK_THAT(render_error("{{ missing.attr }}").message(), Catch::Contains("'missing' is undefined"));
  CHECK_THAT(render_error("{{ d.a.b.c }}", R"({"d": {}})").message(),
             Catch::Contains("'dict object' has no attribute 'a'"));
  CHECK_THROWS_AS(render("{{ missing + 1 }}"), TemplateError);
}

TEST_CASE("jinja: filters", "[tokenizer][jinja]") {
  CHECK(
      render(
          "{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}") ==
      "a b|a|Hello World|Hello");
  CHECK(render("{{ 'abc' | upper }}{{ 'ABC' | lower }}{{ 'aXa' | replace('a', 'b') }}{{ [1, 2] | join('-') }}") ==
        "ABCabcbXb1-2");
  CHECK(render("{{ [3, 1, 2] | sort }}{{ [3, 1, 2] | sort(reverse=true) }}{{ ['b', 'A', 'a'] | sort }}"
               "{{ ['a', 'A', 'b'] | unique | list }}") == "[1, 2, 3][3, 2, 1]['A', 'a', 'b']['a', 'b']");
  CHECK(render("{{ x | first }}{{ x | last }}{{ x | length }}{{ x | count }}{{ x | sum }}{{ x | max }}{{ x | min }}"
               "{{ x | reverse | list }}",
               R"({"x": [1, 3, 2]})") == "1233631[2, 3, 1]");
  const char* people = R"({"p": [{"n": "b", "a": 2}, {"n": "a", "a": 1}, {"n": "c"}]})";
  CHECK(render("{{ p | sort(attribute='n') | map(attribute='n') | join }}", people) == "abc");
  CHECK(render("{{ p | selectattr('a') | map(attribute='n') | list }}", people) == "['b', 'a']");
  CHECK(render("{{ p | rejectattr('a', 'defined') | map(attribute='n') | list }}", people) == "['c']");
  CHECK(render("{{ p | selectattr('n', 'equalto', 'a') | list | length }}", people) == "1");
  CHECK(render("{{ [1, 2, 3, 4] | select('even') | list }}{{ [0, 1, ''] | select | list }}"
               "{{ ['a'] | map('upper') | list }}") == "[2, 4][1]['A']");
  CHECK(render("{{ {'b': 1, 'a': 2} | items | list }}{{ {'b': 1, 'a': 2} | dictsort }}{{ 'ab' | list }}") ==
        "[('b', 1), ('a', 2)][('a', 2), ('b', 1)]['a', 'b']");
  CHECK(render(
            "{{ '3.7' | int }}{{ 'x' | int }}{{ '2' | float }}{{ 2.5 | round }}{{ 2.675 | round(2) }}{{ -3 | abs }}") ==
        "302.02.02.673");
  CHECK(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}") == "a\n  b\n\n  c|  a\n  b");
  CHECK(render("{{ none | string }}{{ 1 | string }}{{ 'x' | safe }}{{ '<&>' | e }}") == "None1x&lt;&amp;&gt;");
  // Generators, as in jinja2: truthy, single pass, no len().
  CHECK(render("{% set g = [1, 2] | select %}{% for a in g %}{{ a }}{% endfor %}{% for a in g %}{{ a }}{% endfor %}") ==
        "12");
  CHECK_THROWS_AS(render("{{ [1] | select | length }}"), TemplateError);
}

TEST_CASE("jinja: tojson as transformers overrides it", "[tokenizer][jinja]") {
  CHECK(render("{{ x | tojson }}", R"({"x": {"b": [1, 2.0, null, true], "a": "é<>'&\n"}})") ==
        R"({"b": [1, 2.0, null, true], "a": "é<>'&\n"})");
  CHECK(render("{{ {'b': 1, 'a': []} | tojson(indent=2, sort_keys=true) }}") == "{\n  \"a\": [],\n  \"b\": 1\n}");
  CHECK(render("{{ [1, {'a': 'x'}] | tojson(separators=(',', ':')) }}") == R"([1,{"a":"x"}])");
  CHECK(render("{{ 'é😀' | tojson(ensure_ascii=true) }}") == R"("\u00e9\ud83d\ude00")");
  CHECK_THAT(render_error("{{ missing | tojson }}").message(), Catch::Contains("not JSON serializable"));
}

TEST_CASE("jinja: tests", "[tokenizer][jinja]") {
  CHECK(render("{{ 1 is number }}{{ true is number }}{{ 1.0 is integer }}{{ 1 is integer }}{{ 1.5 is float }}") ==
        "TrueTrueFalseTrueTrue");
  CHECK(render("{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ 3 is odd }}"
               "{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 2 is in [1, 2] }}") == "TrueTrueTrueTrueTrueTrueTrueTrue");
  CHECK(render("{{ none is none }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ true is boolean }}") ==
        "TrueTrueFalseTrueTrue");
  CHECK(render("{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is gt 1 }}{{ 1 is le 1 }}"
               "{{ 1 is ge 2 }}{{ x is not defined }}") == "TrueFalseTrueTrueTrueTrueFalseTrue");
}

TEST_CASE("jinja: methods of strings, dicts and lists", "[tokenizer][jinja]") {
  CHECK(render("{{ '  ab  '.strip() }}|{{ 'xxab'.lstrip('x') }}|{{ 'ab  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}"
               "|{{ 'a b  c'.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a.b.c'.rsplit('.', 1) }}") ==
        "ab|ab|ab|['a', 'b', '', 'c']|['a', 'b', 'c']|['a', 'b,c']|['a.b', 'c']");
  CHECK(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('bc') }}"
               "{{ 'héllo'.find('l') }}{{ 'abcb'.count('b') }}{{ '-'.join(['a', 'b']) }}{{ 'ab'.upper() }}") ==
        "TrueTrueTrue22a-bAB");
  CHECK(render("{{ \"they're\".title() }} {{ 'x{}y{n}'.format(1, n=2) }} {{ 'a=b'.partition('=') }}") ==
        "They'Re x1y2 ('a', '=', 'b')");
  CHECK(render("{{ d.get('a') }}{{ d.get('z', 'def') }}{{ d.get('z') }}{{ d.keys() | list }}{{ d.items() | list }}",
               R"({"d": {"a": 1}})") == "1defNone['a'][('a', 1)]");
  // `.` finds a dict's method before its key, `[]` the key before the method (jinja2's rules).
  CHECK(render("{{ d['items'] }} {{ d.items is defined }}", R"({"d": {"items": 5}})") == "5 True");
  CHECK(render("{{ [1, 2, 2].count(2) }}{{ [1, 2].index(2) }}") == "21");
  // Mutation is refused, as in ImmutableSandboxedEnvironment.
  CHECK_THAT(render_error("{{ x.append(3) }}", R"({"x": [1]})").message(), Catch::Contains("unsafe"));
  CHECK_THAT(render_error("{{ 'a'.encode() }}").message(), Catch::Contains("unsupported method `str.encode`"));
}

TEST_CASE("jinja: globals", "[tokenizer][jinja]") {
  CHECK(render("{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ dict(a=1) }}{{ dict([('b', 2)]) }}") ==
        "[0, 1, 2][1, 3, 5]{'a': 1}{'b': 2}");
  CHECK(render("{{ strftime_now('%Y') | length }}") == "4");
  CHECK_THROWS_AS(render("{{ range(200000) }}"), TemplateError);
  const TemplateError e = render_error("line1\n{% if true %}{{ raise_exception('Roles must alternate') }}{% endif %}");
  CHECK(e.message() == "Roles must alternate");
  CHECK(e.cause() == TemplateError::Cause::kRaised);
  CHECK(e.line() == 2);
  CHECK(e.name() == "test");
}

TEST_CASE("jinja: unicode strings work in code points", "[tokenizer][jinja]") {
  CHECK(render("{{ s | length }} {{ s[0] }} {{ s[-1] }} {{ s | reverse }} {{ s | upper }}", R"({"s": "é😀ß"})") ==
        "3 é ß ß😀é É😀SS");
  CHECK(render("{{ 'ÀÉÎ ΑΒΓ АБВ' | lower }} {{ 'àéî αβγ абв' | upper }}") == "àéî αβγ абв ÀÉÎ ΑΒΓ АБВ");
}

TEST_CASE("jinja: generation blocks give byte spans of what the assistant wrote", "[tokenizer][jinja]") {
  const std::string source =
      "{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
      "{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}";
  const auto t = Template::parse(source, "gen");
  CHECK(t.has_generation_blocks());
  const auto r = t.render(Json::parse(R"({"messages": [{"role": "user", "content": "é"},
      {"role": "assistant", "content": "😀 ok"}, {"role": "user", "content": "x"},
      {"role": "assistant", "content": "fine"}]})"));
  REQUIRE(r.generation_spans.size() == 2);
  CHECK(r.text.substr(r.generation_spans[0].first, r.generation_spans[0].second - r.generation_spans[0].first) ==
        "😀 ok");
  CHECK(r.text.substr(r.generation_spans[1].first, r.generation_spans[1].second - r.generation_spans[1].first) ==
        "fine");
  CHECK_FALSE(Template::parse("{{ 1 }}", "plain").has_generation_blocks());
  // A set inside the block stays inside it (it is a caller macro in transformers).
  CHECK(render("{% generation %}{% set z = 1 %}{{ z }}{% endgeneration %}[{{ z }}]") == "1[]");
}

TEST_CASE("jinja: the chat context is built as transformers builds it", "[tokenizer][jinja]") {
  ChatTemplateInputs in;
  in.messages = Json::parse(R"([{"role": "assistant", "content": "a", "reasoning": "r"}])");
  in.add_generation_prompt = true;
  in.extra = Json{{"bos_token", "<s>"}};
  const Json ctx = make_chat_context(in);
  CHECK(ctx["tools"].is_null());
  CHECK(ctx["documents"].is_null());
  CHECK(ctx["add_generation_prompt"] == true);
  CHECK(ctx["bos_token"] == "<s>");
  CHECK(ctx["messages"][0].dump() ==
        R"({"thinking":"r","role":"assistant","content":"a","reasoning":"r","reasoning_content":"r"})");
  const auto t = Template::parse(
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"
      "{% if tools is none %} no tools{% endif %}",
      "ctx");
  CHECK(t.render(make_chat_context(
                     ChatTemplateInputs{Json::parse(kMessages)["messages"], {}, {}, false, Json{{"bos_token", "<s>"}}}))
            .text == "<s>system:Be brief.user:Hiassistant:Hello no tools");
}

TEST_CASE("jinja: syntax errors name the template and the line", "[tokenizer][jinja]") {
  try {
    Template::parse("line one\n{% if x %}\nthree {{ 1 + }}\n{% endif %}", "my_template");
    FAIL("parsed");
  } catch (const TemplateError& e) {
    CHECK(e.cause() == TemplateError::Cause::kSyntax);
    CHECK(e.line() == 3);
    CHECK(e.name() == "my_template");
    CHECK_THAT(std::string(e.what()), Catch::Contains("my_template") && Catch::Contains("line 3"));
  }
  CHECK_THROWS_AS(Template::parse("{% if x %}never closed", "t"), TemplateError);
  CHECK_THROWS_AS(Template::parse("{{ x ", "t"), TemplateError);
  CHECK_THROWS_AS(Template::parse("{% endfor %}", "t"), TemplateError);
  CHECK_THROWS_AS(Template::parse("{% break %}", "t"), TemplateError);
  CHECK_THROWS_AS(Template::parse("{{ (1 ] }}", "t"), TemplateError);
  CHECK_THROWS_AS(Template::parse("{# unclosed", "t"), TemplateError);
}

TEST_CASE("jinja: constructs outside the subset are refused at parse time, named", "[tokenizer][jinja]") {
  auto unsupported = [](const std::string& source) {
    try {
      Template::parse(source, "t");
    } catch (const TemplateError& e) {
      CHECK(e.cause() == TemplateError::Cause::kUnsupported);
      return std::string(e.message()) + " @" + std::to_string(e.line());
    }
    return std::string("parsed");
  };
  CHECK(unsupported("a\n{{ x | wordwrap(5) }}") == "unsupported filter `wordwrap` @2");
  CHECK(unsupported("{% if x is divisible %}{% endif %}") == "unsupported test `divisible` @1");
  CHECK(unsupported("{% include 'other.jinja' %}") == "unsupported tag `include` @1");
  CHECK(unsupported("{% for x in y recursive %}{% endfor %}") == "unsupported recursive for loop (`loop(...)`) @1");
  CHECK(unsupported("{{ f(*args) }}") == "unsupported `*args`/`**kwargs` in a call @1");
}

TEST_CASE("jinja: runtime errors name the line", "[tokenizer][jinja]") {
  const TemplateError e = render_error("ok\n\n{{ 'a' + 1 }}");
  CHECK(e.line() == 3);
  CHECK(e.cause() == TemplateError::Cause::kRuntime);
  CHECK_THAT(e.message(), Catch::Contains("can only concatenate str"));
  CHECK(render_error("{% for x in none %}{% endfor %}").message() == "'NoneType' object is not iterable");
  CHECK_THROWS_AS(render("{{ 1 // 0 }}"), TemplateError);
  CHECK_THROWS_AS(render("{{ 'a' < 1 }}"), TemplateError);
  CHECK_THROWS_AS(render("{{ 9223372036854775807 + 1 }}"), TemplateError);
  CHECK_THROWS_AS(render("{{ x }}", "[1]"), TemplateError);  // the context must be an object
}

TEST_CASE("jinja: hostile templates hit the limits cleanly", "[tokenizer][jinja]") {
  const std::string deep = "{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}";
  CHECK(Template::parse("{{ " + std::string(100, '(') + "1" + std::string(100, ')') + " }}", "t")
            .render(Json::object())
            .text == "1");
  CHECK_THROWS_AS(Template::parse(deep, "t"), TemplateError);
  std::string chain = "{{ 1";
  for (int i = 0; i < 400; ++i) chain += " + 1";
  CHECK_THROWS_AS(Template::parse(chain + " }}", "t"), TemplateError);
  std::string nested;
  for (int i = 0; i < 300; ++i) nested += "{% if true %}";
  CHECK_THROWS_AS(Template::parse(nested, "t"), TemplateError);
  // Unbounded macro recursion and runaway loops fail with a limit error, not a crash.
  CHECK(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").cause() == TemplateError::Cause::kLimit);
  CHECK(render_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}").cause() ==
        TemplateError::Cause::kLimit);
  // The step limit: 1.2 million iterations are refused, 300 x 300 render (the libFuzzer artifact
  // that timed out was 10^10 iterations writing one byte each, bounded only at 10 million steps).
  CHECK_THAT(render_error("{% for a in range(1200) %}{% for b in range(1000) %}{% endfor %}{% endfor %}").what(),
             Catch::Matchers::Contains("more than 1000000 statements and loop iterations"));
  CHECK(render("{% for a in range(300) %}{% for b in range(300) %}x{% endfor %}{% endfor %}").size() == 90000);
  CHECK_THROWS_AS(render("{{ 'x' * 1000000000000 }}"), TemplateError);
  CHECK_THROWS_AS(render("{{ ('a' * 1000) | replace('a', 'b' * 1000000) }}"), TemplateError);
  CHECK_THROWS_AS(render("{{ 'a' | center(10 ** 12) }}"), TemplateError);
  CHECK_THROWS_AS(render("{{ [1] * 100000000 }}"), TemplateError);
  // Reference cycles through namespaces and macros are freed after the render (LeakSanitizer checks).
  CHECK(render("{% set ns = namespace() %}{% set ns.me = ns %}{% macro m() %}{{ ns.me.me is defined }}{% endmacro %}"
               "{% set ns.m = m %}{{ ns.m() }}") == "True");
  CHECK(render_error("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}")
            .cause() == TemplateError::Cause::kRuntime);
}

// What the chat template fuzzer (tests/fuzz/chat_template_fuzz.cpp) found; each input is also a seed in
// tests/fuzz/corpus-chat-template. The expected results are what transformers renders.
TEST_CASE("jinja: generation spans come in the order their blocks finished, as in transformers", "[tokenizer][jinja]") {
  using Spans = std::vector<std::pair<size_t, size_t>>;
  // Inside a macro nothing reaches the top level before the macro returns: both blocks start at 0.
  RenderResult r = render_full(
      "{% macro m() %}{% generation %}ab{% endgeneration %}{% generation %}c{% endgeneration %}{% endmacro %}"
      "{{ m() }}");
  CHECK(r.text == "abc");
  CHECK(r.generation_spans == Spans{{0, 2}, {0, 1}});
  // A nested block finishes before the block around it.
  r = render_full("{% generation %}a{% generation %}b{% endgeneration %}c{% endgeneration %}");
  CHECK(r.generation_spans == Spans{{0, 1}, {0, 3}});
  r = render_full(
      "x{% set s %}{% generation %}ab{% endgeneration %}{% endset %}{% generation %}c{% endgeneration %}{{ s }}");
  CHECK(r.text == "xcab");
  CHECK(r.generation_spans == Spans{{1, 3}, {1, 2}});
}

TEST_CASE("jinja: numbers past 64 bits in format fields, attribute paths, ranges and slices", "[tokenizer][jinja]") {
  // str.format reads a field's index as Python does (a Py_ssize_t).
  CHECK(render_error("{{ '{99999999999999999999999}'.format(1) }}").message() ==
        "Too many decimal digits in format string");
  CHECK(render_error("{{ '{9223372036854775807}'.format(1) }}").message() ==
        "Replacement index 9223372036854775807 out of range");
  CHECK(render("{{ '{01}{0}'.format('a', 'b') }}") == "ba");
  // A part of digits in an attribute path is an int: past 64 bits, the interpreter's integer limit.
  const TemplateError attr = render_error("{{ messages | map(attribute='99999999999999999999') | list }}", kMessages);
  CHECK(attr.cause() == TemplateError::Cause::kUnsupported);
  CHECK_THAT(attr.message(), Catch::Contains("integer overflow") && Catch::Contains("'99999999999999999999'"));
  CHECK(render("{{ messages | map(attribute='0') | list }}", kMessages) == "[Undefined, Undefined, Undefined]");
  // range() counts its items without overflowing, at the extremes of int64 too.
  CHECK_THAT(render_error("{{ range(-9223372036854775807, 9223372036854775807) }}").message(),
             Catch::Contains("Range too big"));
  CHECK(render("{{ range(9223372036854775807, -9223372036854775807, -9223372036854775807) | list }}") ==
        "[9223372036854775807, 0]");
  CHECK(render("{{ range(-9223372036854775807 - 1, 9223372036854775807, 9223372036854775807) | list }}") ==
        "[-9223372036854775808, -1, 9223372036854775806]");
  CHECK(render("{{ range(5, -9223372036854775807 - 1, -9223372036854775807 - 1) | list }}") ==
        "[5, -9223372036854775803]");
  // Slices with huge steps and bounds select what Python selects.
  CHECK(render("{{ [1, 2, 3][1::9223372036854775807] }}{{ [1, 2, 3][::-9223372036854775807 - 1] }}"
               "{{ 'abc'[::-9223372036854775807] }}") == "[2][3]c");
  CHECK(render("{{ 'abcdef'[-9223372036854775807 - 1:9223372036854775807:2] }}"
               "{{ 'abcdef'[9223372036854775807:-9223372036854775807 - 1:-2] }}"
               "{{ [1, 2, 3, 4, 5][4:0:-3] }}{{ [1, 2, 3, 4, 5][1:5:3] }}") == "acefdb[5, 2][2, 5]");
  CHECK(render("{{ messages[1::9223372036854775807] | map(attribute='role') | list }}", kMessages) == "['user']");
}

TEST_CASE("jinja: a namespace that holds itself prints as Python prints it", "[tokenizer][jinja]") {
  CHECK(render("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns }}") == "<Namespace {'x': <Namespace {...}>}>");
  CHECK(render("{% set ns = namespace(x=1) %}{% set l = [ns] %}{% set ns.x = l %}{{ l }}|{{ ns }}") ==
        "[<Namespace {'x': [...]}>]|<Namespace {'x': [<Namespace {...}>]}>");
  CHECK(render("{% set ns = namespace(x=1) %}{% set ns.t = (ns, 1) %}{% set ns.d = {'a': ns} %}"
               "{% set ns.v = ns.d.values() %}{{ ns }}") ==
        "<Namespace {'x': 1, 't': (<Namespace {...}>, 1), 'd': {'a': <Namespace {...}>}, "
        "'v': dict_values([<Namespace {...}>])}>");
  CHECK(render("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}{{ [a, b] }}") ==
        "[<Namespace {'b': <Namespace {'a': <Namespace {...}>}>}>, "
        "<Namespace {'a': <Namespace {'b': <Namespace {...}>}>}>]");
  // copy() makes a new list or dict, as in Python (a copy is not the same object).
  CHECK(render("{% set ns = namespace(l=[1]) %}{% set ns.c = ns.l.copy() %}{{ ns.c is sameas ns.l }}"
               "{% set d = {'a': 1} %}{{ d.copy() is sameas d }}{{ d.copy() }}") == "FalseFalse{'a': 1}");
  // A chain of namespaces prints up to the value depth limit, and frees without recursion.
  const std::string chain =
      "{% set ns = namespace(v=none) %}{% for i in range(100000) %}{% set ns.v = namespace(p=ns.v) %}{% endfor %}";
  CHECK(render(chain + "{{ ns.v.p.p.p.p.p is defined }}") == "True");
  CHECK(render_error(chain + "{{ ns }}").message() == "value nests too deep to print");
}

TEST_CASE("jinja: loop variables and bound methods count in the value depth limit", "[tokenizer][jinja]") {
  // Lists that hold loop variables or bound methods, which hold lists again: without the limit a
  // chain of 100000 overflowed the stack when it was freed.
  const std::string kTooDeep = "value nests deeper than 512 levels";
  CHECK_THAT(render_error("{% set ns = namespace(v=[]) %}{% for i in range(100000) %}{% for x in [ns.v] %}"
                          "{% set ns.v = [loop] %}{% endfor %}{% endfor %}")
                 .message(),
             Catch::StartsWith(kTooDeep));
  CHECK_THAT(render_error("{% set ns = namespace(v=[]) %}{% for i in range(100000) %}{% set ns.v = [ns.v.count] %}"
                          "{% endfor %}")
                 .message(),
             Catch::StartsWith(kTooDeep));
  CHECK_THAT(render_error("{% set ns = namespace(v=[]) %}{% for i in range(100000) %}{% for x in [ns.v] %}"
                          "{% set ns.v = [loop.cycle] %}{% endfor %}{% endfor %}")
                 .message(),
             Catch::StartsWith(kTooDeep));
  CHECK(render("{% set ns = namespace(v=[]) %}{% for i in range(100) %}{% set ns.v = [ns.v.count] %}{% endfor %}"
               "{{ ns.v | length }}") == "1");
  // loop.changed() remembers what it saw; values nesting past the loop's depth are refused, the loop
  // variable itself among them (it would hold itself).
  CHECK(render("{% for x in [1, 1, 2] %}{{ loop.changed(x) }}{% endfor %}") == "TrueFalseTrue");
  CHECK(render("{% for i in range(2) %}{{ loop.changed(messages[0]) }}{% endfor %}", kMessages) == "TrueFalse");
  const TemplateError changed = render_error("{% for x in [1] %}{{ loop.changed(loop) }}{% endfor %}");
  CHECK(changed.cause() == TemplateError::Cause::kUnsupported);
  CHECK_THAT(changed.message(), Catch::StartsWith("loop.changed() remembers values nesting at most 31 levels"));
}

TEST_CASE("jinja: map() applying map() recursively hits the nesting limit", "[tokenizer][jinja]") {
  std::string source = "{{ ['a'] | map('upper'";
  for (int i = 0; i < 1100; ++i) source.insert(source.size() - 7, "'map', ");
  source += ") | list }}";
  const TemplateError e = render_error(source);
  CHECK(e.cause() == TemplateError::Cause::kLimit);
  CHECK_THAT(e.message(), Catch::StartsWith("rendering nests deeper than 1024 levels"));
  CHECK(render("{{ ['ab'] | map('map', 'upper') | map('list') | list }}") == "[['A', 'B']]");
}

TEST_CASE("jinja: round() with negative digits rounds as Python does", "[tokenizer][jinja]") {
  CHECK(render("{{ 15 | round(-1) }}|{{ 25 | round(-1) }}|{{ -25 | round(-1) }}|{{ -35 | round(-1) }}") ==
        "20|20|-20|-40");
  CHECK(render("{{ 9223372036854775807 | round(-18) }}|{{ (-9223372036854775807 - 1) | round(-18) }}|"
               "{{ 5000000000000000000 | round(-19) }}|{{ 5 | round(-30) }}|{{ true | round(-1) }}") ==
        "9000000000000000000|-9000000000000000000|0|0|0");
  CHECK(render("{{ 5 | round(-9223372036854775807 - 1) }}|{{ 1.5 | round(-9223372036854775807 - 1) }}") == "0|0.0");
  CHECK(render("{{ 1.5 | round(-400) }}|{{ -1.5 | round(-400) }}|{{ 1234.5 | round(-2) }}") == "0.0|-0.0|1200.0");
  // Python's int gives 10000000000000000000; the interpreter's ints are 64-bit.
  CHECK_THAT(render_error("{{ 9000000000000000000 | round(-19) }}").message(), Catch::StartsWith("integer overflow"));
  CHECK(render_error("{{ 1.7e308 | round(-308) }}").message() == "rounded value too large to represent");
}

TEST_CASE("jinja: builders refuse results past the size limits", "[tokenizer][jinja]") {
  const auto limit = [](const std::string& source) {
    const TemplateError e = render_error(source);
    CHECK(e.cause() == TemplateError::Cause::kUnsupported);
    return e.message();
  };
  const std::string kTooLong = "(the limit is 268435456)";
  // The padding width was multiplied by the fill's size and wrapped around.
  CHECK_THAT(limit("{{ 'a'.center(4611686018427387904, 'é') }}"), Catch::EndsWith(kTooLong));
  CHECK_THAT(limit("{{ 'a'.ljust(4611686018427387904) }}"), Catch::EndsWith(kTooLong));
  CHECK(render("{{ 'ab'.center(7, 'é') }}|{{ 'ab'.rjust(5, '-') }}|{{ 'ab'.ljust(3) }}|") == "éééabéé|---ab|ab |");
  CHECK_THAT(limit("{{ range(1000) | list | tojson(indent=200000000) }}"), Catch::EndsWith(kTooLong));
  CHECK(render("{{ [[1, [2]], {'a': [3]}] | tojson(indent='\\t', separators=(',', ':')) }}") ==
        "[\n\t[\n\t\t1,\n\t\t[\n\t\t\t2\n\t\t]\n\t],\n\t{\n\t\t\"a\":[\n\t\t\t3\n\t\t]\n\t}\n]");
  CHECK(limit("{% set l = [0] * 8388609 %}{{ (l + l) | length }}") == "a list of more than 16777216 items");
  CHECK_THAT(limit("{% set s = 'x' * 90000000 %}{{ (s ~ ',').join([s, s, s]) }}"), Catch::EndsWith(kTooLong));
  CHECK_THAT(limit("{% set s = 'x' * 90000000 %}{{ '{0}{0}{0}'.format(s) }}"), Catch::EndsWith(kTooLong));
  CHECK_THAT(limit("{{ ('a\\n' * 1000) | indent(1000000) }}"), Catch::EndsWith(kTooLong));
  CHECK(render("{{ ('a\\n' * 1000) | indent(100, true, true) | length }}") == "102100");
  CHECK(render("{{ 'a\\n\\nb' | indent(2, true, true) }}|{{ 'a\\n\\nb' | indent('>') }}") == "  a\n  \n  b|a\n\n>b");
  CHECK_THAT(limit("{% set s = 'x' * 90000000 %}{{ [s, s, s] }}"), Catch::EndsWith(kTooLong));
  CHECK_THAT(limit("{{ (['x' * 90000000] * 3) | tojson }}"), Catch::EndsWith(kTooLong));
  // sum() of lists adds them up in one buffer (`+` would copy the sum at every item).
  CHECK(render("{{ [[1], [2, 3], []] | sum(start=[]) }}{{ [(1,), (2,)] | sum(start=()) }}") == "[1, 2, 3](1, 2)");
  CHECK(render_error("{{ [[1], [2], (3,)] | sum(start=[]) }}").message() ==
        "can only concatenate list (not \"tuple\") to list");
  // strftime: a field width makes a short format long; an empty result is not a result too long.
  CHECK(limit("{{ strftime_now('%_999999999Y') }}") == "strftime_now() result longer than 268435456 bytes");
  CHECK(render("{{ strftime_now('') | length }}|{{ strftime_now('%Y-%m') | length }}|{{ strftime_now('%%') }}") ==
        "0|7|%");
  CHECK(render_error("{{ strftime_now('x\\x00y') }}").message() == "embedded null character");
}

TEST_CASE("jinja: a string is taken apart into at most 2^20 pieces", "[tokenizer][jinja]") {
  const auto limit = [](const std::string& source) {
    const TemplateError e = render_error(source);
    CHECK(e.cause() == TemplateError::Cause::kUnsupported);
    return e.message();
  };
  // Each piece is a value of its own: twenty million characters would take gigabytes.
  CHECK(limit("{% for c in 'x' * 2000000 %}{% endfor %}") ==
        "iterating a string into 2000000 pieces (at most 1048576)");
  CHECK(limit("{{ ('x' * 2000000) | list | length }}") == "iterating a string into 2000000 pieces (at most 1048576)");
  CHECK(limit("{{ ('a,' * 1500000).split(',') | length }}") ==
        "splitting a string into 1500001 pieces (at most 1048576)");
  CHECK(limit("{{ ('a ' * 1500000).split() | length }}") == "splitting a string into 1500000 pieces (at most 1048576)");
  CHECK_THAT(limit("{{ ('a\\n' * 1500000).splitlines() | length }}"),
             Catch::StartsWith("splitting a string's lines into"));
  // Long strings in few pieces, and maxsplit, are fine.
  CHECK(render("{{ ('x' * 3000000).split(',') | length }}|{{ ('a,' * 1500000).split(',', 2) | length }}") == "1|3");
  CHECK(render("{{ ('é' * 1000000) | list | length }}") == "1000000");
}
