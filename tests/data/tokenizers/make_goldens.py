#!/usr/bin/env python3
"""Trains small tokenizers with Hugging Face `tokenizers` and writes goldens for the C++ tests.

Run from anywhere: python3 make_goldens.py [NAME...] (no names: all of them). Needs
`pip install tokenizers` (only for regenerating; the C++ build and tests read the committed
outputs). Writes, next to this script, <name>.json (a tokenizer.json) and <name>.golden.json
({text, ids, ids_plain, decoded, decoded_skip} for every test string) for each tokenizer:
  bytelevel_llama3   ByteLevel BPE with the Llama 3 Split regex, ignore_merges, BOS template
  bytelevel_qwen2    NFC + Qwen2 Split regex + ByteLevel, no BOS (ByteLevel post-processor)
  bytelevel_gpt2     ByteLevel(add_prefix_space, use_regex) BPE, RobertaProcessing, lstrip <mask>
  sp_bpe_llama2      SentencePiece-style BPE: Prepend/Replace normalizer, byte_fallback, <s> template
  sp_unigram         Unigram with Metaspace(always), byte_fallback and <unk>
  wordpiece_bert     bert-base-uncased layout: BertNormalizer (lowercase, accents stripped),
                     BertPreTokenizer, WordPiece, [CLS] $A [SEP] template, WordPiece decoder
  wordpiece_bert_cased  the cased layout: no lowercasing or accent stripping, BertProcessing
HF's WordPiece trainer breaks ties in hash order, so each run of the wordpiece_* makers gives a
different (equally valid) vocab: regenerate only what changed, both files of a name together.
"""
import json
import pathlib
import sys

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

HERE = pathlib.Path(__file__).resolve().parent

LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
            r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's a test; we're sure they'll like it.",
    "I don't know what you've done, but I'd say it's GREAT!!! Isn't it? YOU'RE right.",
    "Tokenizers split text into tokens: words, sub-words and bytes.",
    "In 2024, 1234567 people paid $3.50 each (about 4,320,987.25 in total).",
    "Die Größe der Straße überrascht jeden Bürger. Äpfel, Öl und Übung schön.",
    "Schöne Grüße aus München! Wir fahren heute nach Köln und Düsseldorf.",
    "机器学习是人工智能的一个分支。我们今天学习中文分词。",
    "北京是中国的首都，上海是最大的城市。你好，世界！",
    "日本語のテキストも処理します。東京はとても大きな都市です。ひらがなとカタカナ。",
    "こんにちは、世界。今日はいい天気ですね。",
    "مرحبا بالعالم. هذه جملة باللغة العربية للاختبار.",
    "اللغة العربية جميلة جدا، والكتابة من اليمين إلى اليسار.",
    "Emoji time 😀😃🎉 and families 👨‍👩‍👧‍👦 with flags 🇩🇪🇯🇵 and 👍🏽 thumbs.",
    "def main():\n\tfor i in range(10):\n\t\tprint(i * 2)  # double\n\treturn 0\n",
    "int add(int a, int b) {\n    return a + b;\n}\n\n// end of file\n",
    "    leading spaces and trailing spaces    \n\n\nmultiple newlines\r\nwindows line\r\n",
    "Numbers: 0 1 12 123 1234 12345 3.14159 2e10 0xFF 42nd",
    "Mixed: naïve café résumé coöperate Ångström façade jalapeño",
    "Русский текст тоже бывает. Привет, мир!",
    "Ελληνικά γράμματα: αβγδε. Καλημέρα κόσμε.",
    "<html><body class=\"main\">Hello &amp; goodbye</body></html>",
    "user@example.com https://example.org/path?q=1&r=two#frag",
]

TESTS = [
    "", " ", "  ", "\n", "\t", "a", "Hello", " Hello", "Hello world", " Hello  world  ",
    "Hello\nworld", "Hello\n\nworld\n", "\r\n\r\n", "trailing space ", "   three leading",
    "It's", "IT'S", "they'll we've I'm you'd she's DON'T", "'s alone", "rock'n'roll",
    "123", "1234567890", "3.14159", "$1,000,000.00", "x1y22z333", "٣٤٥ Arabic digits", "½ ¾ ²",
    "The quick brown fox jumps over the lazy dog.",
    "Die Größe der Straße überrascht jeden Bürger.",
    "机器学习是人工智能的一个分支。", "你好，世界！", "日本語のテキスト", "こんにちは、世界。",
    "مرحبا بالعالم", "Привет, мир!", "Καλημέρα κόσμε", "한국어 텍스트는 학습에 없습니다", "हिन्दी पाठ",
    "😀", "😀😃🎉", "👨‍👩‍👧‍👦", "👍🏽", "🇩🇪🇯🇵", "emoji👨‍👩‍👧‍👦inside", "🦀 crab",
    "def f(x):\n\treturn x\n", "\tindented\n\t\tmore\n", "a  b   c    d", "spaces     \n  then",
    "int main() { return 0; }", "x = [1, 2, 3]; y = {'a': 1}", "if (a && b || !c) {}",
    "e\u0301", "\u0301", "\u0301\u0301abc", "cafe\u0301", "A\u030a", "\u1100\u1161", "naïve café",
    "\u200d", "\u200b zero width", "\ufeffBOM", "\u00a0nbsp\u00a0", "\u3000ideographic space",
    "\u2028line sep", "tab\there", "<|begin_of_text|>", "<|begin_of_text|>Hello",
    "Hello<|end_of_text|>", "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|><|im_end|>", "text <|im_start|> spaced", "<s>", "</s>", "<s>Hello</s>",
    "Hello <s> world", "<unk>", "<mask>", "Hello <mask> world", "a<mask>b", "<mask> <mask>",
    "<tool>call</tool>", "x<tool>y", "hello_world", "say hello_world now", "xhello_worldx",
    "<0x41>", "<|begin_of_text", "<|im_end|", "▁", "▁▁leading", "a▁b", "__init__",
    "user@example.com", "https://example.org/path?q=1&r=two#frag", "C:\\path\\to\\file",
    "ALL CAPS SENTENCE", "MiXeD CaSe", "ﬁ ligature", "Ⅻ roman", "ǅ titlecase",
    "very long word: Donaudampfschifffahrtsgesellschaftskapitän",
    "repeated " * 12, "!!!???...", "---===+++", "\x7f\x01control",
]

# What BERT's normalizer, pre-tokenizer, WordPiece and its decoder do differently: control and
# format characters, CJK ideograph blocks (HF starts Extension E at U+2B920, BERT at U+2B820),
# accents, full lowercasing, characters the unicode_categories crate (Unicode 8.0) does not know,
# over-long words, ## in the input and the decoder's cleanup rules.
BERT_TESTS = [
    "\x00nul\ufffdreplacement", "soft\u00adhyphen", "a\u200bb\u200cc\u200dd", "\ue000private use",
    "x\x85y\x0bz\x0cw", "\u2028\u2029", "中文", "ab中cd", "\u3400\u4dbf", "\uf900\ufaff\u2f00",
    "\U00020000\U0002a6df", "\U0002b820\U0002b91f\U0002b920", "\U0002f800x", "ｱｲｳ ＡＢＣ",
    "Ångström façade NAÏVE Éclair", "e\u0301\u0327", "İstanbul", "ΟΔΟΣ Σ", "ŉ ǅ ß ẞ", "ﬁ ﬂ ﬃ",
    "ひらがな がぎぐ", "हिन्दी", "x\u1abfy", "a\u2e52b", "a\u0890b", "a\u166db", "a\U000111c9b",
    "a$b+c<d=e>f^g`h|i~j", "a_b", "«quotes» „low“ ‘single’ — dash … ellipsis", "¿Qué? ¡Sí!",
    "x" * 100, "y" * 101, "é" * 101, "thequickbrownfoxjumpsoverthelazydog",
    "##ing", "un##known", "[CLS]", "[SEP] [MASK]", "a[MASK]b", "[mask]", "[UNK]", "[unused0]",
    "I don't know. Isn't it? Yes! No, I'm sure it's 'fine'.", "I do not think they've or we're",
    "can't won't shouldn't", "a . b ? c ! d , e", "He said ' hello ' there", "U.S.A. e.g. i.e.",
    "3.14 1,000 $5", "email: a.b@c.de", "C++ C# F#", "snake_case camelCase kebab-case",
]


def special_tokens_llama3():
    return [AddedToken("<|begin_of_text|>", special=True), AddedToken("<|end_of_text|>", special=True),
            AddedToken("<|im_start|>", special=True), AddedToken("<|im_end|>", special=True)]


def train_bytelevel(split_re, add_prefix_space, use_regex, ignore_merges, normalizer=None):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if normalizer is not None:
        tok.normalizer = normalizer
    if split_re is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space,
                                                     use_regex=use_regex)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split_re), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=use_regex)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


def make_llama3():
    tok = train_bytelevel(LLAMA3_RE, False, False, True)
    tok.add_special_tokens(special_tokens_llama3())
    tok.add_tokens([AddedToken("<tool>", normalized=True), AddedToken("</tool>", normalized=True)])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
        special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def make_qwen2():
    tok = train_bytelevel(QWEN2_RE, False, False, False, normalizers.NFC())
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True), AddedToken("<|im_start|>", special=True),
                            AddedToken("<|im_end|>", special=True)])
    tok.add_tokens([AddedToken("hello_world", single_word=True)])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def make_gpt2():
    tok = train_bytelevel(None, True, True, False)
    tok.add_special_tokens([AddedToken("<s>", special=True), AddedToken("</s>", special=True),
                            AddedToken("<mask>", special=True, lstrip=True, rstrip=False)])
    tok.add_tokens([AddedToken("<tool>", rstrip=True, normalized=False)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    return tok


BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


def drop_added(tok, names):
    """Removes names from added_tokens (they stay in the model vocab), as Llama 2 files have it."""
    j = json.loads(tok.to_str())
    j["added_tokens"] = [t for t in j["added_tokens"] if t["content"] not in names]
    return j


def make_llama2():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    trainer = trainers.BpeTrainer(vocab_size=1100, limit_alphabet=150, show_progress=False,
                                  special_tokens=["<unk>", "<s>", "</s>"] + BYTE_TOKENS)
    tok.train_from_iterator(CORPUS * 3, trainer)
    j = drop_added(tok, set(BYTE_TOKENS))
    j["model"]["byte_fallback"] = True
    tok = Tokenizer.from_str(json.dumps(j))
    # Llama 2 layout: no pre-tokenizer, the normalizer makes the spaces into ▁.
    tok.pre_tokenizer = None
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_tokens([AddedToken("<tool>", normalized=False)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


def make_unigram():
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=900, show_progress=False, unk_token="<unk>",
                                      special_tokens=["<pad>", "</s>", "<unk>"] + BYTE_TOKENS)
    tok.train_from_iterator(CORPUS * 3, trainer)
    j = drop_added(tok, set(BYTE_TOKENS))
    j["model"]["byte_fallback"] = True
    tok = Tokenizer.from_str(json.dumps(j))
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True), AddedToken("<|im_end|>", special=True)])
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return tok


BERT_SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(lowercase, strip_accents):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=strip_accents, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    trainer = trainers.WordPieceTrainer(vocab_size=1000, special_tokens=BERT_SPECIALS,
                                        continuing_subword_prefix="##", show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


def make_bert():
    tok = train_wordpiece(lowercase=True, strip_accents=None)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def make_bert_cased():
    tok = train_wordpiece(lowercase=False, strip_accents=False)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    return tok


MAKERS = {"bytelevel_llama3": make_llama3, "bytelevel_qwen2": make_qwen2, "bytelevel_gpt2": make_gpt2,
          "sp_bpe_llama2": make_llama2, "sp_unigram": make_unigram, "wordpiece_bert": make_bert,
          "wordpiece_bert_cased": make_bert_cased}
EXTRA_TESTS = {"wordpiece_bert": BERT_TESTS, "wordpiece_bert_cased": BERT_TESTS}


def main(names):
    unknown = [n for n in names if n not in MAKERS]
    if unknown:
        sys.exit(f"unknown tokenizer(s) {', '.join(unknown)}; known: {', '.join(MAKERS)}")
    for name in names or MAKERS:
        tok = MAKERS[name]()
        text = tok.to_str()
        (HERE / f"{name}.json").write_text(text, encoding="utf-8")
        tok = Tokenizer.from_str(text)  # goldens from exactly what the C++ side loads
        cases = []
        for t in TESTS + EXTRA_TESTS.get(name, []):
            ids = tok.encode(t, add_special_tokens=True).ids
            plain = tok.encode(t, add_special_tokens=False).ids
            cases.append({"text": t, "ids": ids, "ids_plain": plain,
                          "decoded": tok.decode(ids, skip_special_tokens=False),
                          "decoded_skip": tok.decode(ids, skip_special_tokens=True)})
        (HERE / f"{name}.golden.json").write_text(
            json.dumps({"tokenizer": f"{name}.json", "cases": cases}, ensure_ascii=False, indent=0) + "\n",
            encoding="utf-8")
        print(name, len(text) // 1024, "KiB,", len(cases), "cases, vocab", tok.get_vocab_size())


if __name__ == "__main__":
    main(sys.argv[1:])
