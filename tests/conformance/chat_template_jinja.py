"""ctest "tokenizer: chat template conformance": hftrain's Jinja interpreter against Python jinja2
configured exactly as transformers configures it (transformers.utils.chat_template_utils
.render_jinja_template: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
{% generation %}, raise_exception, strftime_now, its tojson).

Every template in tests/fixtures/chat_templates renders every conversation below, with and without
add_generation_prompt. The rendered text must be byte-identical; the {% generation %} spans (Python
gives character offsets, converted here to UTF-8 byte offsets) must be identical; where Python raises,
hftrain must fail too, and for raise_exception() with the same message.

Usage: chat_template_jinja.py <path to jinja_tool> [-v]
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

import transformers
from transformers.utils import logging
from transformers.utils import chat_template_utils
from transformers.utils.chat_template_utils import render_jinja_template

logging.set_verbosity_error()  # return_assistant_tokens_mask warns for templates without {% generation %}

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATES = os.path.join(ROOT, "tests", "fixtures", "chat_templates")

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.\nUse it before answering.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web ✓",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {"type": "array", "items": {"type": "object", "properties": {
                    "key": {"type": "string"}, "value": {"type": ["string", "number"]}}}},
                "safe": {"type": "boolean"},
                "score": {"type": "number"},
            },
            "required": ["query", "safe"],
        },
        "return": {"type": "string"},
    },
}


def call(name, arguments, call_id="call12345"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATIONS = {
    "one_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
    ],
    "multi_turn": [
        {"role": "system", "content": "You are a helpful assistant.\nAnswer briefly."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."},
        {"role": "assistant", "content": "Why did the chicken cross the road?"},
        {"role": "user", "content": "Why?"},
    ],
    "no_system_many": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ],
    "empty_content": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "   "},
    ],
    "unicode": [
        {"role": "system", "content": "Réponds en français 🇫🇷. «Guillemets» — ok"},
        {"role": "user", "content": "héllo 👋 世界\n\ttab \"quotes\" 'single' back\\slash {{ not_jinja }} {% raw %}"},
        {"role": "assistant", "content": "  Ça va ? 😀\u2028ligne\u00a0nbsp  "},
        {"role": "user", "content": "Ελληνικά ΣΊΣΥΦΟΣ, кириллица, ß, İstanbul, ﬁ"},
    ],
    "whitespace": [
        {"role": "user", "content": "\n\n  leading and trailing  \n"},
        {"role": "assistant", "content": "\tanswer\r\nwith crlf\n"},
        {"role": "user", "content": "line1\nline2\n\nline4"},
    ],
    "tool_call": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "22°C, sunny"},
        {"role": "assistant", "content": "It is 22°C and sunny in Paris."},
    ],
    "tool_calls_many": [
        {"role": "user", "content": "Compare Paris and Tōkyō."},
        {"role": "assistant", "content": "Let me check both.", "tool_calls": [
            call("get_weather", {"city": "Paris", "days": 3}, "call00001"),
            call("get_weather", {"city": "Tōkyō", "unit": "fahrenheit", "nested": {"a": [1, 2.5, None, True]}},
                 "call00002")]},
        {"role": "tool", "tool_call_id": "call00001", "content": "{\"temp\": 21}"},
        {"role": "tool", "tool_call_id": "call00002", "content": "{\"temp\": 75}"},
        {"role": "assistant", "content": "Paris 21°C, Tōkyō 75°F."},
        {"role": "user", "content": "Thanks"},
    ],
    "reasoning": [
        {"role": "user", "content": "Think first: 17*3?"},
        {"role": "assistant", "reasoning_content": "17*3 = 51.", "content": "<think>scratch</think>51"},
        {"role": "user", "content": "And 17*4?"},
        {"role": "assistant", "thinking": "  17*4 = 68  ", "content": "68"},
    ],
    "not_alternating": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ],
    "content_parts": [
        {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "image"},
                                     {"type": "text", "text": "this: it's \"fine\""}]},
        {"role": "assistant", "content": "A cat."},
    ],
}

# Tool lists per conversation (None: the conversation is rendered without tools).
TOOLS = {"tool_call": [WEATHER_TOOL], "tool_calls_many": [WEATHER_TOOL, SEARCH_TOOL]}

KWARGS = {
    "chatml_tools": {},
    "llama31": {"bos_token": "<|begin_of_text|>", "date_string": "21 Nov 2026"},
    "mistral": {"bos_token": "<s>", "eos_token": "</s>"},
    "gemma": {"bos_token": "<bos>"},
    "phi3": {"eos_token": "<|endoftext|>"},
    "zephyr": {"eos_token": "</s>"},
    "deepseek": {"bos_token": "<｜begin▁of▁sentence｜>"},
    "generation": {},
    "generation_macro": {},
    "schema_tools": {},
}


def python_render(source, messages, tools, add_generation_prompt, kwargs):
    try:
        texts, spans = render_jinja_template(
            conversations=[copy.deepcopy(messages)], tools=copy.deepcopy(tools), chat_template=source,
            add_generation_prompt=add_generation_prompt, return_assistant_tokens_mask=True, **kwargs)
    except Exception as e:  # the template refused the conversation, or failed
        return {"error": {"type": type(e).__name__, "message": str(e)}}
    text = texts[0]

    def byte(i):
        return len(text[:i].encode("utf-8"))

    return {"text": text, "generation_spans": [[byte(b), byte(e)] for b, e in spans[0]]}


def hftrain_render(tool, template_path, inputs, tmp):
    path = os.path.join(tmp, "inputs.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(inputs, f, ensure_ascii=False)
    out = subprocess.run([tool, template_path, path], check=True, capture_output=True)
    return [json.loads(line) for line in out.stdout.decode("utf-8").split("\n") if line]


def compare(expected, got):
    if "error" in expected:
        if "error" not in got:
            return f"Python raised {expected['error']}, hftrain rendered {got.get('text')!r}"
        # raise_exception() raises jinja2's TemplateError itself: same cause, same message.
        if expected["error"]["type"] == "TemplateError":
            want, have = expected["error"]["message"], got["error"]
            if have["cause"] != "raised" or have["message"] != want:
                return f"raise_exception({want!r}) in Python, hftrain: {have}"
        return None
    if "error" in got:
        return f"hftrain failed: {got['error']}"
    if expected["text"] != got["text"]:
        e, g = expected["text"], got["text"]
        i = next((k for k in range(min(len(e), len(g))) if e[k] != g[k]), min(len(e), len(g)))
        return (f"text differs at character {i}:\n  python: {e[max(0, i - 40):i + 40]!r}\n"
                f"  hftrain: {g[max(0, i - 40):i + 40]!r}")
    if expected["generation_spans"] != got["generation_spans"]:
        return f"generation spans: Python {expected['generation_spans']}, hftrain {got['generation_spans']}"
    return None


# hftrain builds the render context as the pinned transformers does (tests/requirements-oracles.txt),
# which gives a message's reasoning under `thinking` and `reasoning_content` whichever of them it used
# (_alias_reasoning_fields). An older transformers (5.17 on the lent GPU machines) renders such
# messages without the alias: those cases are not comparable there and are left out, with a note.
ALIASES_REASONING = hasattr(chat_template_utils, "_alias_reasoning_fields")
NEEDS_REASONING_ALIAS = {"reasoning"}


def main():
    tool = sys.argv[1]
    verbose = "-v" in sys.argv[2:]
    conversations = {k: v for k, v in CONVERSATIONS.items() if ALIASES_REASONING or k not in NEEDS_REASONING_ALIAS}
    if len(conversations) < len(CONVERSATIONS):
        print(f"NOTE: transformers {transformers.__version__} predates the reasoning-field aliases of the pinned "
              f"version: conversations {sorted(NEEDS_REASONING_ALIAS)} are left out")
    names = sorted(n[:-len(".jinja")] for n in os.listdir(TEMPLATES) if n.endswith(".jinja"))
    cases = failures = raised = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            template_path = os.path.join(TEMPLATES, name + ".jinja")
            with open(template_path, encoding="utf-8") as f:
                source = f.read()
            kwargs = KWARGS.get(name, {})
            inputs, labels, expected = [], [], []
            for conv_name, messages in conversations.items():
                for add_generation_prompt in (False, True):
                    tools = TOOLS.get(conv_name)
                    inputs.append({"messages": messages, "tools": tools, "add_generation_prompt": add_generation_prompt,
                                   "kwargs": kwargs})
                    labels.append(f"{name} x {conv_name} (add_generation_prompt={add_generation_prompt})")
                    expected.append(python_render(source, messages, tools, add_generation_prompt, kwargs))
            for label, want, got in zip(labels, expected, hftrain_render(tool, template_path, inputs, tmp)):
                cases += 1
                raised += "error" in want
                problem = compare(want, got)
                if problem:
                    failures += 1
                    print(f"DIFF {label}: {problem}")
                elif verbose:
                    print(f"same {label}: " + ("error " + want["error"]["message"] if "error" in want else
                                               f"{len(want['text'])} chars, spans {want['generation_spans']}"))
    print(f"{cases} template x conversation cases ({len(names)} templates, {len(conversations)} conversations, "
          f"with and without add_generation_prompt; {raised} where Python raises): {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
