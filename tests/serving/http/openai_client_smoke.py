#!/usr/bin/env python3
"""fk serve driven by the official `openai` Python client: completions (text and token ids,
plain and streamed), chat completions through the chat template (content as a string or as
text parts), logprobs of both, models (listed and by id), and errors.

    openai_client_smoke.py PATH_TO_FK SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import openai


def main(fk, source):
    tmp = tempfile.mkdtemp(prefix="fk-openai-")
    try:
        tokenizer = os.path.join(source, "tests/data/tokenizers/bytelevel_llama3.json")
        spec = json.load(open(tokenizer))
        vocab = 1 + max(list(spec["model"]["vocab"].values()) + [t["id"] for t in spec["added_tokens"]])
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
               "vocab_size": vocab, "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
               "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
        json.dump(cfg, open(os.path.join(tmp, "config.json"), "w"))
        shutil.copy(tokenizer, os.path.join(tmp, "tokenizer.json"))
        template = open(os.path.join(source, "tests/data/chat_templates/llama3.jinja")).read()
        json.dump({"chat_template": template, "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
                  open(os.path.join(tmp, "tokenizer_config.json"), "w"))
        server = subprocess.Popen([fk, "serve", tmp, "--dummy-weights", "--device", "cpu", "--port", "0",
                                   "--num-pages", "64", "--served-model-name", "tiny"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            line = server.stdout.readline()
            port = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            assert port, f"server did not start: {line}"
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port.group(1)}/v1", api_key="none")
            assert [m.id for m in client.models.list().data] == ["tiny"]

            c = client.completions.create(model="tiny", prompt="Hello world", max_tokens=8, temperature=0,
                                          extra_body={"ignore_eos": True})
            assert c.choices[0].finish_reason == "length" and c.usage.completion_tokens == 8, c
            streamed = "".join(ch.choices[0].text for ch in client.completions.create(
                model="tiny", prompt="Hello world", max_tokens=8, temperature=0, stream=True,
                extra_body={"ignore_eos": True}) if ch.choices)
            assert streamed == c.choices[0].text, (streamed, c.choices[0].text)

            chat = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi!"}],
                                                  max_tokens=6, temperature=0, extra_body={"ignore_eos": True})
            assert chat.choices[0].message.role == "assistant" and chat.usage.completion_tokens == 6, chat
            deltas = "".join(ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
                model="tiny", messages=[{"role": "user", "content": "Hi!"}], max_tokens=6, temperature=0,
                stream=True, extra_body={"ignore_eos": True}) if ch.choices)
            assert deltas == chat.choices[0].message.content, (deltas, chat.choices[0].message.content)

            # Logprobs: the legacy completions format and the chat format, whole and streamed.
            c = client.completions.create(model="tiny", prompt="Hello world", max_tokens=6, temperature=0, logprobs=2,
                                          extra_body={"ignore_eos": True})
            lp = c.choices[0].logprobs
            assert len(lp.tokens) == 6 and len(lp.token_logprobs) == 6 and len(lp.text_offset) == 6, lp
            assert all(x <= 0 for x in lp.token_logprobs), lp
            for token, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
                assert token in top and top[token] == value == max(top.values()), (token, value, top)
            streamed = []
            for ch in client.completions.create(model="tiny", prompt="Hello world", max_tokens=6, temperature=0,
                                                logprobs=2, stream=True, extra_body={"ignore_eos": True}):
                if ch.choices and ch.choices[0].logprobs:
                    streamed += ch.choices[0].logprobs.token_logprobs
            assert streamed == lp.token_logprobs, (streamed, lp.token_logprobs)

            chat = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi!"}],
                                                  max_tokens=6, temperature=0, logprobs=True, top_logprobs=3,
                                                  extra_body={"ignore_eos": True})
            content = chat.choices[0].logprobs.content
            assert len(content) == 6, chat
            for entry in content:
                assert entry.bytes == list(entry.token.encode("utf-8")), entry
                assert len(entry.top_logprobs) == 3 and entry.top_logprobs[0].logprob == entry.logprob, entry
            streamed = []
            for ch in client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi!"}],
                                                     max_tokens=6, temperature=0, logprobs=True, top_logprobs=3,
                                                     stream=True, extra_body={"ignore_eos": True}):
                if ch.choices and ch.choices[0].logprobs:
                    streamed += [e.logprob for e in ch.choices[0].logprobs.content]
            assert streamed == [e.logprob for e in content], (streamed, content)
            # Content as a list of text parts (what the SDK's typed messages and `vllm bench
            # serve` send): the same prompt as the parts' texts joined with "\n".
            parts = client.chat.completions.create(
                model="tiny", temperature=0, max_completion_tokens=5, extra_body={"ignore_eos": True},
                messages=[{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}])
            joined = client.chat.completions.create(
                model="tiny", temperature=0, max_completion_tokens=5, extra_body={"ignore_eos": True},
                messages=[{"role": "user", "content": "Hi\nthere"}])
            assert parts.usage.completion_tokens == 5, parts
            assert parts.usage.prompt_tokens == joined.usage.prompt_tokens, (parts.usage, joined.usage)
            assert parts.choices[0].message.content == joined.choices[0].message.content, (parts, joined)
            try:
                client.chat.completions.create(model="tiny", max_tokens=2, messages=[{"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}]}])
                raise AssertionError("an image part was accepted by a text model")
            except openai.BadRequestError as e:
                assert "image_url" in str(e), e

            assert client.models.retrieve("tiny").id == "tiny"
            try:
                client.models.retrieve("no-such-model")
                raise AssertionError("an unknown model was found")
            except openai.NotFoundError as e:
                assert "no-such-model" in str(e), e

            try:
                client.completions.create(model="tiny", prompt="x", max_tokens=4, logprobs=21)
                raise AssertionError("logprobs=21 was accepted")
            except openai.BadRequestError as e:
                assert "logprobs" in str(e), e

            try:
                client.completions.create(model="tiny", prompt="x", max_tokens=4, temperature=-1)
                raise AssertionError("a negative temperature was accepted")
            except openai.BadRequestError as e:
                assert "temperature" in str(e), e
            print("openai client smoke test passed")
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
