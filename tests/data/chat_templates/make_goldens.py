#!/usr/bin/env python3
"""Writes the chat-template goldens of tests/text/template/: the chat templates of the model
families the engine supports (written here after the public structure of those models'
templates), each rendered over a set of conversations, and small expression/statement
cases. Rendering uses Jinja2 configured as Hugging Face's apply_chat_template configures it
(immutable sandbox, trim_blocks, lstrip_blocks, loopcontrols, raise_exception,
strftime_now, a tojson without HTML escaping). Run from anywhere:
    python3 tests/data/chat_templates/make_goldens.py
"""
import copy
import datetime
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
# strftime_now() reads this instant (UTC); the C++ tests inject the same one.
FIXED_NOW = datetime.datetime(2024, 7, 26, 12, 30, 45)


def make_env(trim_blocks=True, lstrip_blocks=True):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=trim_blocks, lstrip_blocks=lstrip_blocks,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


def render(env, source, context):
    try:
        return {"expected": env.from_string(source).render(**context)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error": str(e), "error_kind": "syntax", "error_line": e.lineno}
    except Exception as e:  # noqa: BLE001 - any render error is a golden "error"
        return {"error": str(e), "error_kind": type(e).__name__}


# ---------------------------------------------------------------------------------------
# Chat templates (one per family), written after the structure of the public ones.
TEMPLATES = {}

TEMPLATES["llama2"] = """{% if messages[0]['role'] == 'system' %}
{% set loop_messages = messages[1:] %}
{% set system_message = messages[0]['content'] %}
{% else %}
{% set loop_messages = messages %}
{% set system_message = false %}
{% endif %}
{% for message in loop_messages %}
{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
{% endif %}
{% if loop.index0 == 0 and system_message != false %}
{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}
{% else %}
{% set content = message['content'] %}
{% endif %}
{% if message['role'] == 'user' %}
{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}
{% elif message['role'] == 'assistant' %}
{{ ' '  + content.strip() + ' ' + eos_token }}
{% endif %}
{% endfor %}"""

TEMPLATES["llama3"] = """{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"""

TEMPLATES["llama3_1"] = """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = strftime_now("%d %b %Y") %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- Pull the system message out of the turns, if there is one #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools go into the first user message #}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable and message.content is not string %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

TEMPLATES["qwen2_5"] = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

TEMPLATES["qwen3"] = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""

TEMPLATES["mistral_v0_3"] = """{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {{- tool | tojson }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
            {%- endfor %}
            {{- "][/AVAILABLE_TOOLS]" }}
        {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""

TEMPLATES["gemma2"] = """{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"""

TEMPLATES["gemma3"] = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

SPECIAL_TOKENS = {
    "llama2": ("<s>", "</s>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_1": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwen2_5": (None, "<|im_end|>"),
    "qwen3": (None, "<|im_end|>"),
    "mistral_v0_3": ("<s>", "</s>"),
    "gemma2": ("<bos>", "<eos>"),
    "gemma3": ("<bos>", "<eos>"),
}

TOOL_CALL = {"id": "call12345", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}

CONVERSATIONS = {
    "single_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [{"role": "system", "content": "You are a terse assistant."},
                    {"role": "user", "content": "What is 2+2?"}],
    "multi_turn": [{"role": "user", "content": "Hi"},
                   {"role": "assistant", "content": "Hello! How can I help?"},
                   {"role": "user", "content": "Tell me a joke."}],
    "system_multi_turn": [{"role": "system", "content": "Be kind."},
                          {"role": "user", "content": "First question"},
                          {"role": "assistant", "content": "First answer"},
                          {"role": "user", "content": "Second question"},
                          {"role": "assistant", "content": "Second answer"}],
    "unicode": [{"role": "user", "content": "héllo wörld 世界 🎉 \"quotes\" 'single' back\\slash <tag> & \t tab"}],
    "empty_content": [{"role": "user", "content": ""},
                      {"role": "assistant", "content": ""},
                      {"role": "user", "content": "again"}],
    "tool_calls": [{"role": "user", "content": "Weather in Paris?"},
                   {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
                   {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                    "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
                   {"role": "assistant", "content": "It is 21.5°C and clear in Paris."}],
    "whitespace": [{"role": "system", "content": "  padded system \n"},
                   {"role": "user", "content": "\n\n  lots of space  \n\n"}],
    "thinking": [{"role": "user", "content": "Why is the sky blue?"},
                 {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of Rayleigh scattering."},
                 {"role": "user", "content": "And sunsets?"}],
    "not_alternating": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    "content_parts": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " Describe this. "}]}],
}


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"},
                                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"]}}}]

# Renders with more variables than apply_chat_template passes (tools, template switches):
# (family, conversation, extra variables).
WITH_CONTEXT = [(family, conv, {"tools": TOOLS})
                for family in ("llama3_1", "qwen2_5", "qwen3", "mistral_v0_3")
                for conv in ("single_user", "system_user", "tool_calls")]
WITH_CONTEXT += [("llama3_1", "tool_calls", {"tools": TOOLS, "tools_in_user_message": False}),
                 ("llama3_1", "system_user", {"date_string": "01 Jan 2025"}),
                 ("qwen3", "single_user", {"enable_thinking": False}),
                 ("qwen3", "thinking", {"enable_thinking": False}),
                 ("qwen3", "thinking", {"enable_thinking": True})]


def family_goldens():
    out = []
    for family, source in TEMPLATES.items():
        with open(os.path.join(HERE, family + ".jinja"), "w") as f:
            f.write(source)
        bos, eos = SPECIAL_TOKENS[family]
        # The template itself lives in <family>.jinja; tests put it into the config.
        config = {"eos_token": eos}
        if bos is not None:
            config["bos_token"] = bos
        env = make_env()
        for conv_name, messages in CONVERSATIONS.items():
            for gen in (False, True):
                context = {"messages": messages, "add_generation_prompt": gen, "tools": None,
                           "documents": None, "eos_token": eos}
                if bos is not None:
                    context["bos_token"] = bos
                case = {"name": f"{family}/{conv_name}/{'gen' if gen else 'nogen'}", "family": family,
                        "tokenizer_config": config, "messages": messages,
                        "add_generation_prompt": gen}
                case.update(render(env, source, context))
                out.append(case)
    for family, conv_name, extra in WITH_CONTEXT:
        bos, eos = SPECIAL_TOKENS[family]
        env = make_env()
        for gen in (False, True):
            context = {"messages": CONVERSATIONS[conv_name], "add_generation_prompt": gen,
                       "tools": None, "documents": None, "eos_token": eos}
            if bos is not None:
                context["bos_token"] = bos
            context.update(extra)
            case = {"name": f"{family}/{conv_name}+{'+'.join(sorted(extra))}/{'gen' if gen else 'nogen'}",
                    "family": family, "context": context}
            case.update(render(env, TEMPLATES[family], context))
            out.append(case)
    return out


# ---------------------------------------------------------------------------------------
# Small cases: (name, template, context[, env options]).
CASES = [
    ("text", "plain text\n", {}),
    ("output_int", "{{ 1 + 2 }}", {}),
    ("output_float", "{{ 1.5 * 2 }} {{ 1 / 2 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 3.0 }} {{ 1e-5 }}", {}),
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7.5 // 2 }} {{ 10 - 3 * 2 }}", {}),
    ("string_escapes", "{{ 'a\\'b' }} {{ \"tab\\there\" }} {{ 'nl\\nx' }} {{ '\\u00e9' }}", {}),
    ("literals", "{{ [1, 'a', none, true, False, None, 2.5] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) | list }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ undefined_var }}|{{ 'x' + 'y' }}", {}),
    ("compare", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ [1,2] == [1,2] }} {{ 3 > 2 >= 2 }}", {}),
    ("logic", "{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ '' or 0 or 'last' }} {{ 0 and 1 }}", {}),
    ("in_not_in", "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'z' not in d }} {{ 3 not in [1] }}", {"d": {"k": 1}}),
    ("ternary", "{{ 'yes' if x else 'no' }} {{ 'yes' if y else 'no' }} [{{ 'only' if y }}]", {"x": 1, "y": 0}),
    ("attr_item", "{{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ l[0] }} {{ l[-1] }} {{ l.1 }}", {"m": {"role": "user", "content": "hi"}, "l": [1, 2, 3]}),
    ("undefined_renders_empty", "[{{ nope }}][{{ m.nope }}][{{ m.nope | length }}]", {"m": {}}),
    ("undefined_attr_error", "{{ nope.attr }}", {}),
    ("slicing", "{{ s[1:] }} {{ s[:-1] }} {{ s[::-1] }} {{ l[1:3] }} {{ l[::2] }} {{ l[::-1] }} {{ l[-2:] }} {{ s[10:] }}|", {"s": "héllo", "l": [1, 2, 3, 4, 5]}),
    ("tests", "{{ x is defined }} {{ y is undefined }} {{ n is none }} {{ 's' is string }} {{ 1 is number }} {{ d is mapping }} {{ l is iterable }} {{ l is sequence }} {{ true is true }} {{ false is false }} {{ 2 is even }} {{ 3 is odd }} {{ 1 is not string }}", {"x": 1, "n": None, "d": {}, "l": []}),
    ("tests_args", "{{ 6 is divisibleby 3 }} {{ 'a' is equalto 'a' }} {{ 1 is eq(2) }} {{ 2 is gt 1 }} {{ 'a' is in 'abc' }}", {}),
    ("if_elif_else", "{% for v in [1, 2, 3] %}{% if v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }} {% endfor %}", {}),
    ("for_else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for_filter", "{% for m in ms if m.role != 'system' %}{{ loop.index }}:{{ m.role }}{{ ',' if not loop.last }}{% endfor %}", {"ms": [{"role": "system"}, {"role": "user"}, {"role": "assistant"}]}),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("for_previtem_cycle", "{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a','b') }} {% endfor %}", {}),
    ("for_nested_loop", "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("loop_scope", "{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}", {}),
    ("break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("set_and_namespace", "{% set ns = namespace(count=0, found=false) %}{% for i in range(4) %}{% set ns.count = ns.count + i %}{% endfor %}{{ ns.count }} {{ ns.found }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", {}),
    ("set_block", "{% set body %}inner {{ 1 + 1 }}{% endset %}[{{ body }}]", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', punct='?') }}", {}),
    ("macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("raw", "{% raw %}{{ not rendered }}{% endraw %}", {}),
    ("comment", "a{# a comment #}b", {}),
    ("ws_control", "a  {{- 'b' -}}  c {%- if true -%}  d  {%- endif -%}  e", {}),
    ("trim_lstrip_hf", "<ul>\n  {% for i in [1, 2] %}\n    <li>{{ i }}</li>\n  {% endfor %}\n</ul>\n", {}),
    ("trim_lstrip_off", "<ul>\n  {% for i in [1, 2] %}\n    <li>{{ i }}</li>\n  {% endfor %}\n</ul>\n", {}, {"trim_blocks": False, "lstrip_blocks": False}),
    ("lstrip_plus", "x\n  {%+ if true %}y{% endif %}\n", {}),
    ("filters_string", "{{ '  hi  ' | trim }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|{{ 'hello world' | capitalize }}|{{ 'hello big-world' | title }}|{{ 'a-b-c' | replace('-', '+') }}", {}),
    ("filters_list", "{{ l | length }} {{ l | count }} {{ l | first }} {{ l | last }} {{ l | join(', ') }} {{ l | reverse | list }} {{ l | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [1, 2, 1] | unique | list }}", {"l": [3, 1, 2]}),
    ("filter_default", "{{ nope | default('dflt') }} {{ x | d('other') }} {{ '' | default('empty', true) }} {{ none | default('n') }}", {"x": "set"}),
    ("filter_tojson", "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ 'é<>&\\'' | tojson }}|{{ [] | tojson }}|{{ {} | tojson(indent=2) }}", {"d": {"b": [1, 2.5, None, True], "a": "x\ny", "u": "日本"}}),
    ("filter_conversions", "{{ '42' | int + 1 }} {{ 3.9 | int }} {{ 'x' | int }} {{ '2.5' | float }} {{ 5 | string ~ '!' }} {{ 'ab' | list }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(0, 'ceil') }}", {}),
    ("filter_items", "{% for k, v in d | items %}{{ k }}:{{ v }} {% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("filter_selectattr", "{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|{{ ms | rejectattr('role', 'equalto', 'user') | list | length }}|{{ ms | selectattr('tool') | list | length }}", {"ms": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b", "tool": 1}, {"role": "user", "content": "c"}]}),
    ("filter_map_filter", "{{ ['a', 'b'] | map('upper') | join }}", {}),
    ("filter_sort_attr", "{{ l | sort(attribute='n') | map(attribute='n') | list }}", {"l": [{"n": 2}, {"n": 1}, {"n": 3}]}),
    ("filter_indent", "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}", {}),
    ("filter_escape_safe", "{{ '<a href=\"x\">&' | e }} {{ '<b>' | safe }} {{ '<i>' | escape }}", {}),
    ("filter_sum_min_max", "{{ [1, 2, 3] | sum }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }}", {}),
    ("string_methods", "{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ '\\nq'.lstrip('\\n') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith('bc') }}|{{ 'aXbX'.replace('X', '-') }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}|{{ 'hello there'.title() }}|{{ 'Hi {}, {name}'.format('A', name='B') }}", {}),
    ("split_last", "{{ s.split('</think>')[-1].lstrip('\\n') }}|{{ s.split('</think>')[0].split('<think>')[-1] }}", {"s": "<think>\nr\n</think>\n\nanswer"}),
    ("dict_methods", "{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }} {{ d.items() | list }}", {"d": {"a": 1, "b": [2]}}),
    ("globals_range", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }}", {}),
    ("globals_dict_namespace", "{% set d = dict(a=1, b='x') %}{{ d }} {{ namespace(a=1).a }}", {}),
    ("strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M:%S %d %b %Y') }}", {}),
    ("raise_exception", "{% if true %}{{ raise_exception('Custom failure: roles must alternate') }}{% endif %}", {}),
    ("repr_values", "{{ l }} {{ d }} {{ s }} {{ t }} {{ n }}", {"l": ["it's", "say \"hi\"", "both ' \"", "nl\n", 1.0, None], "d": {"a": {"b": []}}, "s": "plain", "t": True, "n": None}),
    ("unary_neg_filter", "{{ -x | abs }} {{ -(2 + 3) }} {{ +4 }} {{ not x == 3 }}", {"x": 3}),
    ("string_mult", "{{ 'ab' * 3 }} {{ [0] * 2 }} {{ 3 * '-' }}", {}),
    ("list_concat", "{{ [1] + [2, 3] }} {{ (l + [4]) | length }}", {"l": [1, 2]}),
    ("nested_data", "{% for m in ms %}{% for c in m.content %}{{ c.type }}{% if c.text is defined %}={{ c.text }}{% endif %};{% endfor %}{% endfor %}", {"ms": [{"content": [{"type": "image"}, {"type": "text", "text": "t"}]}]}),
    ("is_string_iterable", "{{ x is iterable and x is not string }} {{ l is iterable and l is not string }} {{ d is iterable }}", {"x": "s", "l": [], "d": {}}),
    ("none_compare", "{{ x is not none }} {{ x == none }} {{ y is none }}", {"x": None, "y": 0}),
    ("ws_plus_end", "{% if true +%}\nx{% endif %}\n{% if true %}\ny{% endif %}", {}),
    ("raw_whitespace", "a\n  {% raw %}\n{{x}}\n  {% endraw %}\nb", {}),
    ("dict_literal_output", "{{ {'a': {'b': 1}} }}", {}),
    ("set_in_if_visible", "{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("for_unicode_chars", "{% for c in 'hé🎉' %}[{{ c }}]{% endfor %} {{ 'hé🎉' | length }} {{ 'hé🎉'[1] }}", {}),
    ("is_defined_attr", "{{ m.tool_calls is defined }} {{ m.content is defined }} {{ m.content is not none }}", {"m": {"content": None}}),
    ("tojson_nested_indent", "{{ t | tojson(indent=4) }}", {"t": {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer", "enum": [1, 2]}}, "required": []}}}}),
    ("float_edges", "{{ 1e16 }} {{ 1e15 }} {{ 123456789.123 }} {{ -0.0 }} {{ 1 / 3 }} {{ 2.0 ** 0.5 }} {{ 10 / 4 }} {{ 0.00001234 }} {{ 1.5e300 * 1e10 }}", {}),
    ("int_ops", "{{ 2 ** -1 }} {{ 7 / 7 }} {{ -7 // 2.0 }} {{ 7 % 2.5 }} {{ true + 1 }}", {}),
    ("join_attribute", "{{ l | join(',', attribute='n') }}|{{ [] | join(',') }}|{{ none | string }}", {"l": [{"n": 1}, {"n": "b"}]}),
    ("selectattr_defined", "{{ ms | selectattr('content', 'defined') | list | length }} {{ ms | selectattr('content', 'none') | list | length }}", {"ms": [{"content": "a"}, {}, {"content": None}]}),
    ("items_tojson", "{{ d.items() | list | tojson }} {{ d | items | list }}", {"d": {"a": 1}}),
    ("lstrip_comment_var", "a\n    {# c #}\n  {{ 1 }}\n{{ 2 }}\n", {}),
    ("sort_unique_case", "{{ ['b', 'A', 'a', 'C'] | sort }} {{ ['b', 'A'] | sort(case_sensitive=true) }} {{ ['a', 'A', 'b'] | unique | list }}", {}),
    ("default_missing_attr", "{{ m.x | default('d') }} {{ m.y | default('e', true) }}", {"m": {"y": ""}}),
    ("first_of_string", "{{ 'abc' | first }} {{ 'abc' | last }}", {}),
    ("round_int", "{{ 5 | round }} {{ 5 | round(1) }} {{ 2.675 | round(2) }}", {}),
    ("ternary_nested", "{% for x in [1, 2, 3] %}{{ 'a' if x == 1 else 'b' if x == 2 else 'c' }}{% endfor %}", {}),
    ("slice_more", "{{ [1,2,3,4,5][4:1:-2] }} {{ 'abcdef'[-3:] }} {{ l[:100] }} {{ l[5:1] }}", {"l": [1, 2]}),
    ("string_repr_escapes", "{{ ['a\\b', 'tab\t', 'q\'q'] }}", {}),
    ("loop_in_macro", "{% macro m(xs) %}{% for x in xs %}{{ loop.index }}{{ x }}{% endfor %}{% endmacro %}{% for y in [1] %}{{ m(['a', 'b']) }}{{ loop.index }}{% endfor %}", {}),
    ("macro_sees_globals", "{% macro m() %}{{ g }}{{ range(2) | list }}{% endmacro %}{{ m() }}", {"g": "G"}),
    ("whitespace_dash_var", "x   {{- 1 -}}   y\n  {{- 2 }}", {}),
    ("title_filter_vs_method", "{{ \"it's o'neil\" | title }} {{ \"it's o'neil\".title() }}", {}),
    ("in_dict_keys", "{{ 'a' in d.keys() }} {{ 'b' in d.values() }}", {"d": {"a": "b"}}),
    ("counter_via_namespace", "{% set ns = namespace(i=0, seen=[]) %}{% for m in ms %}{% if m.role == 'user' %}{% set ns.i = ns.i + 1 %}{% endif %}{% endfor %}{{ ns.i }}", {"ms": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]}),
    ("tojson_options", "{{ d | tojson(sort_keys=true) }}|{{ d | tojson(ensure_ascii=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ d | tojson(indent=1, sort_keys=true) }}", {"d": {"z": "é🎉", "a": [1, {"c": None, "b": 2}]}}),
    ("undefined_through_filters", "[{{ u | first }}][{{ u | sum }}][{{ u | list }}][{{ u | items | list }}][{{ u | reverse | list }}][{{ u | join(',') }}][{{ u | upper }}][{{ [] | last }}]", {}),
    ("even_odd_bool_float", "{{ true is odd }} {{ false is even }} {{ 4.0 is even }} {{ 3.0 is odd }} {{ -3 is odd }}", {}),
    ("abs_round_bool", "{{ true | abs }} {{ false | round }}", {}),
    ("call_block", "{% macro box(title) %}[{{ title }}: {{ caller() }}]{% endmacro %}{% call box('T') %}body {{ x }}{% endcall %}", {"x": 1}),
    ("call_block_args", "{% macro each(xs) %}{% for v in xs %}{{ caller(v) }}{% endfor %}{% endmacro %}{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}", {}),
    ("filter_block", "{% filter upper %}hello {{ x }}{% endfilter %}|{% filter replace('a', 'o') | trim %}  banana  {% endfilter %}", {"x": "you"}),
    ("unicode_case", "{{ 'héllo wörld ÿ' | upper }} {{ 'ÀÉÎ ΑΒΓ АБВ Ł' | lower }} {{ 'élan vital' | capitalize }} {{ 'émile zola-ève 世a' | title }} {{ 'émile zola 世a'.title() }} {{ 'ÉCOLE'.lower() }} {{ 'straße'.upper() == 'STRASSE' }}", {}),
    ("for_else_scope", "{% set s = 1 %}{% for i in [] %}{% else %}{% set s = 2 %}{{ s }}{% endfor %}{{ s }}", {}),
    ("error_type_add", "{{ 1 + 'a' }}", {}),
    ("error_none_iter", "{% for x in n %}{% endfor %}", {"n": None}),
    ("error_syntax_unclosed", "line one\n{% if x %}\nno end", {}),
    ("error_syntax_bad_expr", "a\nb {{ 1 + }}", {}),
    ("error_syntax_unknown_tag", "{% frobnicate %}", {}),
    ("error_undefined_call", "{{ nope() }}", {}),
    ("error_div_zero", "{{ 1 / 0 }}", {}),
]


def expression_goldens():
    out = []
    for case in CASES:
        name, source, context = case[:3]
        options = case[3] if len(case) > 3 else {}
        env = make_env(**options)
        entry = {"name": name, "template": source, "context": context}
        if options:
            entry["options"] = options
        entry.update(render(env, source, context))
        out.append(entry)
    return out


# ---------------------------------------------------------------------------------------
# Random cases, fixed seeds: expressions built from atoms, operators, filters, tests and
# methods, and statement soups mixing text, whitespace control, if/for/set. They pin down
# the many small rules (operator results, str() of values, whitespace) jointly. Filters
# whose Jinja2 result is a lazy generator (select, unique, ...) are left out: their printed
# form is a Python object address.
R_ATOMS = ["x", "s", "l", "d", "n", "u", "1", "0", "-2", "2.5", "'ab'", "'A b'", "none", "true",
           "false", "[1, 2]", "[]", "{'k': 1}", "''", "'é'"]
R_BINS = ["+", "-", "*", "/", "//", "~", "==", "!=", "<", ">=", "and", "or", "in", "not in"]
R_FILTERS = ["length", "trim", "upper", "lower", "capitalize", "title", "first", "last", "list",
             "string", "int", "float", "sort", "tojson", "join(',')", "default('z')", "abs",
             "round", "e", "indent(2)", "count", "sum", "min", "max", "replace('a', 'b')"]
R_TESTS = ["defined", "undefined", "none", "string", "number", "mapping", "iterable", "sequence",
           "true", "false", "even", "odd", "integer", "float", "boolean", "lower", "upper"]
R_METHODS = [".strip()", ".upper()", ".split()", ".startswith('a')", ".endswith('b')",
             ".replace('a', 'X')", ".title()", ".lstrip('a')", ".get('k')", ".get('q', 3)",
             ".split('b')", ".rstrip()"]
R_CONTEXT = {"x": 3, "s": "a b", "l": [3, 1, 2], "d": {"k": "v", "a": 1}, "n": None}


def random_expr(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(R_ATOMS)
    if r < 0.5:
        return f"({random_expr(rng, depth + 1)} {rng.choice(R_BINS)} {random_expr(rng, depth + 1)})"
    if r < 0.65:
        return f"({random_expr(rng, depth + 1)} | {rng.choice(R_FILTERS)})"
    if r < 0.75:
        neg = "not " if rng.random() < 0.3 else ""
        return f"({random_expr(rng, depth + 1)} is {neg}{rng.choice(R_TESTS)})"
    if r < 0.85:
        return rng.choice(["s", "d", "'aXb'"]) + rng.choice(R_METHODS)
    if r < 0.9:
        return f"({random_expr(rng, depth + 1)} if {random_expr(rng, depth + 1)} else {random_expr(rng, depth + 1)})"
    if r < 0.95:
        return rng.choice(["s", "l", "'hello'"]) + "[" + rng.choice(["0", "-1", "1:", ":-1", "::-1", "::2", "5"]) + "]"
    return f"(not {random_expr(rng, depth + 1)})"


R_TEXTS = ["", "a", " ", "\n", "  \n", "\n  ", "x\n", "  y  ", "\t", "\n\n"]
R_OUT = ["i", "loop.index", "x", "ns.c", "s", "'q'", "i * 2", "loop.last", "m.role", "m.content | trim"]


def random_block(rng, depth=0):
    def mark():
        return rng.choice(["", "-", "+"]) if rng.random() < 0.4 else ""

    def tag(body):
        return "{%" + mark() + " " + body + " " + mark() + "%}"

    def var(e):
        return "{{" + ("-" if rng.random() < 0.2 else "") + " " + e + " " + ("-" if rng.random() < 0.2 else "") + "}}"

    out = ""
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        out += rng.choice(R_TEXTS)
        if depth > 2 or r < 0.35:
            out += var(rng.choice(R_OUT))
        elif r < 0.55:
            cond = rng.choice(["i", "x", "loop.first", "not loop.last", "m.role == 'user'", "false"])
            out += tag("if " + cond) + random_block(rng, depth + 1)
            if rng.random() < 0.5:
                out += tag("else") + random_block(rng, depth + 1)
            out += tag("endif")
        elif r < 0.75:
            head = rng.choice(["i in range(3)", "m in ms", "i in []", "m in ms if m.role != 'system'"])
            out += tag("for " + head) + random_block(rng, depth + 1)
            if rng.random() < 0.3:
                out += tag("else") + random_block(rng, depth + 1)
            out += tag("endfor")
        elif r < 0.85:
            out += tag("set ns.c = ns.c + 1")
        elif r < 0.92:
            out += tag("set s = 'v' ~ x")
        else:
            out += "{#" + mark() + " c " + mark() + "#}"
        out += rng.choice(R_TEXTS)
    return out


def random_goldens(count=300):
    import random
    rng = random.Random(20240726)
    out = []
    while len([c for c in out if c["name"].startswith("expr")]) < count:
        src = "{{ " + random_expr(rng) + " }}"
        r = render(make_env(), src, copy.deepcopy(R_CONTEXT))
        if "expected" in r:
            out.append({"name": f"expr{len(out)}", "template": src, "context": R_CONTEXT, **r})
    ctx = {"x": 1, "ms": [{"role": "system", "content": " sys "}, {"role": "user", "content": "u\n"}]}
    n = 0
    while n < count:
        src = "{% set ns = namespace(c=0) %}" + random_block(rng) + rng.choice(["", "\n", "\n\n"])
        for opts in ({}, {"trim_blocks": False, "lstrip_blocks": False}):
            r = render(make_env(**opts), src, copy.deepcopy(ctx))
            if "expected" in r:
                out.append({"name": f"stmt{n}", "template": src, "context": ctx, "options": opts, **r})
                n += 1
    return out


def main():
    fam = family_goldens()
    exprs = expression_goldens()
    with open(os.path.join(HERE, "family_goldens.json"), "w") as f:
        json.dump(fam, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(HERE, "expression_goldens.json"), "w") as f:
        json.dump(exprs, f, indent=1, ensure_ascii=False)
        f.write("\n")
    rand = random_goldens()
    with open(os.path.join(HERE, "random_goldens.json"), "w") as f:
        json.dump(rand, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print(f"{len(fam)} family goldens, {len(exprs)} expression goldens, {len(rand)} random goldens")


if __name__ == "__main__":
    main()
