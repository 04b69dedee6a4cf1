#!/usr/bin/env python3
"""fk agent over real HTTP: fk serve runs a tiny random-weight model (a byte-level BPE
tokenizer and the Llama 3 chat template) on the CPU backend, and `fk agent --strategy
single` asks it for an rms_norm kernel. The tiny model answers gibberish, so the attempt is
a code-less outcome; the trajectory and summary must record the call (prompt, response,
token usage) and that outcome.

    serve_smoke.py PATH_TO_FK SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def make_model(tmp, source):
    tokenizer = os.path.join(source, "tests/data/tokenizers/bytelevel_llama3.json")
    spec = json.load(open(tokenizer))
    vocab = 1 + max(list(spec["model"]["vocab"].values()) + [t["id"] for t in spec["added_tokens"]])
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": vocab, "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    model = os.path.join(tmp, "model")
    os.makedirs(model)
    json.dump(cfg, open(os.path.join(model, "config.json"), "w"))
    shutil.copy(tokenizer, os.path.join(model, "tokenizer.json"))
    template = open(os.path.join(source, "tests/data/chat_templates/llama3.jinja")).read()
    json.dump({"chat_template": template, "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
              open(os.path.join(model, "tokenizer_config.json"), "w"))
    return model


def main(fk, source):
    tmp = tempfile.mkdtemp(prefix="fk-agent-serve-")
    try:
        model = make_model(tmp, source)
        server = subprocess.Popen([fk, "serve", model, "--dummy-weights", "--device", "cpu", "--port", "0",
                                   "--num-pages", "2048", "--max-num-batched-tokens", "2048",
                                   "--served-model-name", "tiny"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            line = server.stdout.readline()
            port = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            assert port, f"server did not start: {line}"
            out = os.path.join(tmp, "out")
            env = dict(os.environ, FK_AGENT_API_KEY="unused-by-fk-serve")
            run = subprocess.run([fk, "agent", "--task", "rms_norm", "--tasks-dir",
                                  os.path.join(source, "tests/data/tasks_cpu"), "--backend", "cpu",
                                  "--endpoint", f"http://127.0.0.1:{port.group(1)}/v1", "--model", "tiny",
                                  "--strategy", "single", "--out", out, "--max-completion-tokens", "12",
                                  "--temperature", "0", "--timed-calls", "5", "--request-timeout", "240",
                                  "--retries", "1", "--no-db"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=280)
            assert run.returncode == 0, run.stdout
            summary = json.load(open(os.path.join(out, "summary.json")))
            task = summary["tasks"][0]
            assert task["task"] == "rms_norm" and len(task["attempts"]) == 1, summary
            attempt = task["attempts"][0]
            assert attempt["outcome"] == "no_code", attempt
            assert summary["tokens"]["completion"] == 12 and summary["tokens"]["prompt"] > 1000, summary["tokens"]
            records = [json.loads(l) for l in open(os.path.join(out, "trajectory.jsonl"))]
            calls = [r for r in records if r["type"] == "model_call"]
            assert len(calls) == 1 and calls[0]["ok"], calls
            call = calls[0]
            assert "struct RmsNormArgs" in call["messages"][1]["content"], call["messages"]
            assert call["response"] and not call["extraction"]["found"], call
            assert call["endpoint"]["usage"]["completion_tokens"] == 12, call["endpoint"]
            assert "unused-by-fk-serve" not in open(os.path.join(out, "trajectory.jsonl")).read()
            print("fk agent against fk serve: code-less outcome recorded")
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
