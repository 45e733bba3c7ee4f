"""Benchmark: ELMo biLM training throughput — ``LineageElmoForPreTraining`` vs a plain ``nn.LSTM`` biLM of equal
size, on the same batches of Penn Treebank sentences, side by side in one process.

Both models: word embedding (vocabulary V) of size P → 2 LSTM layers per direction with C cells projected to P →
one softmax over V shared by the two directions; loss = forward next-word + backward previous-word cross entropy.
Ours is the lineage model with ``use_char_inputs=False`` and no clipping (so its layers run as fused ``nn.LSTM``s),
with ELMo's residual connection between the layers. The reference is what a PyTorch user writes: one
``nn.LSTM(num_layers=2, proj_size=P)`` per direction over packed sequences (the backward one over each sentence
reversed within its length) and ``F.cross_entropy`` over the padded (B, T, V) logits with ``ignore_index``. Same
parameter count (the residual connection has no weights).

A step is forward + backward + ``Adam.step()`` + ``zero_grad()`` on a batch of ``--batch`` random sentences
(``<S> ... </S>``, right-padded). The two models run interleaved (ours first on even repetitions), on identical
batches; tokens/s counts real (non-padding) tokens; medians over ``--repeats`` steps after ``--warmup``.

    flock /tmp/hf_lineage_bench.lock env PYTHONPATH=. python benchmarks/bench_elmo_bilm.py --json bilm.json
"""

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hf_lineage.models import LineageElmoConfig, LineageElmoForPreTraining  # noqa: E402

PTB = Path(__file__).resolve().parents[2] / "shared" / "data" / "ptb"


class PlainBiLM(nn.Module):
    """The reference: embedding → one 2-layer nn.LSTM per direction (packed sequences; a biLM cannot use
    ``bidirectional=True`` with 2 layers, whose second layer would let the forward LM see the future) → shared
    softmax over every position with ``ignore_index``."""

    def __init__(self, V, C, P, layers):
        super().__init__()
        self.embedding = nn.Embedding(V, P)
        proj = P if P < C else 0
        self.forward_lstm = nn.LSTM(P, C, num_layers=layers, proj_size=proj, batch_first=True)
        self.backward_lstm = nn.LSTM(P, C, num_layers=layers, proj_size=proj, batch_first=True)
        self.softmax = nn.Linear(P, V)

    def run(self, lstm, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]

    def forward(self, input_ids, attention_mask):
        lengths = attention_mask.sum(1)
        T = input_ids.shape[1]
        # Reverse each sentence within its length (padding stays at the end) for the backward LSTM.
        positions = torch.arange(T)[None]
        reverse = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)
        x = self.embedding(input_ids)
        forward = self.run(self.forward_lstm, x, lengths.cpu())
        backward = self.run(self.backward_lstm, x.gather(1, reverse[..., None].expand_as(x)), lengths.cpu())
        backward = backward.gather(1, reverse[..., None].expand_as(backward))
        labels = input_ids.masked_fill(attention_mask == 0, -100)
        next_words = F.pad(labels[:, 1:], (0, 1), value=-100)
        previous_words = F.pad(labels[:, :-1], (1, 0), value=-100).masked_fill(attention_mask == 0, -100)
        V = self.softmax.out_features
        loss_f = F.cross_entropy(self.softmax(forward).view(-1, V), next_words.view(-1), ignore_index=-100)
        loss_b = F.cross_entropy(self.softmax(backward).view(-1, V), previous_words.view(-1), ignore_index=-100)
        return loss_f + loss_b


def sentences(path, vocab_size):
    lines = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    counts = {}
    for words in lines:
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    vocab = {w: i + 4 for i, w in enumerate(sorted(counts, key=lambda w: (-counts[w], w))[: vocab_size - 4])}
    return [[2] + [vocab.get(w, 1) for w in words] + [3] for words in lines]  # <S>=2 ... </S>=3, <UNK>=1


def make_batch(rows):
    T = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    mask = torch.zeros(len(rows), T, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(PTB / "ptb.train.txt"))
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--cells", type=int, default=512)
    parser.add_argument("--projection", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)

    data = sentences(args.data, args.vocab)
    config = LineageElmoConfig(
        vocab_size=args.vocab, use_char_inputs=False, lstm_cell_size=args.cells, projection_size=args.projection,
        num_lstm_layers=args.layers, cell_clip=None, proj_clip=None, dropout=0.0, pad_token_id=0, bos_token_id=2,
        eos_token_id=3,
    )
    ours = LineageElmoForPreTraining(config).train()
    theirs = PlainBiLM(args.vocab, args.cells, args.projection, args.layers).train()
    n_ours = sum(p.numel() for p in ours.parameters() if p.requires_grad)
    n_theirs = sum(p.numel() for p in theirs.parameters())
    assert n_ours == n_theirs, (n_ours, n_theirs)
    optimizers = {"ours": torch.optim.Adam([p for p in ours.parameters() if p.requires_grad], lr=1e-3),
                  "nn.LSTM": torch.optim.Adam(theirs.parameters(), lr=1e-3)}

    def step(name, ids, mask):
        if name == "ours":
            loss = ours(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
        else:
            loss = theirs(ids, mask)
        loss.backward()
        optimizers[name].step()
        optimizers[name].zero_grad(set_to_none=True)
        return loss.item()

    rng = random.Random(0)
    times = {"ours": [], "nn.LSTM": []}
    tokens = []
    for r in range(args.warmup + args.repeats):
        ids, mask = make_batch(rng.sample(data, args.batch))
        order = ["ours", "nn.LSTM"] if r % 2 == 0 else ["nn.LSTM", "ours"]
        for name in order:
            start = time.perf_counter()
            step(name, ids, mask)
            if r >= args.warmup:
                times[name].append(time.perf_counter() - start)
        if r >= args.warmup:
            tokens.append(int(mask.sum()))
    result = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
                         f"{torch.__version__}, {args.threads} threads", "args": vars(args), "parameters": n_ours}
    # tokens/s of a step = its real tokens / its time; median over the steps.
    for name in times:
        rates = [t / s for t, s in zip(tokens, times[name])]
        result[name] = {"median_step_seconds": statistics.median(times[name]),
                        "median_tokens_per_second": statistics.median(rates)}
    ratios = [a / b for a, b in zip(times["nn.LSTM"], times["ours"])]
    result["ratio_ours_over_nn_lstm"] = statistics.median(ratios)
    print(f"{result['machine']}; {n_ours:,} parameters; batch {args.batch} sentences "
          f"(median {statistics.median(tokens)} real tokens)")
    for name in times:
        print(f"{name:8s} median step {result[name]['median_step_seconds'] * 1e3:7.1f} ms   "
              f"{result[name]['median_tokens_per_second']:8.0f} tokens/s")
    print(f"ours / nn.LSTM throughput: {result['ratio_ours_over_nn_lstm']:.2f}x (median of per-step ratios)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
