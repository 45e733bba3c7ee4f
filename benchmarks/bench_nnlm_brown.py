"""Bengio et al. (2003)'s Brown experiment: our NNLM against an interpolated Kneser-Ney trigram, on the same split
and the same tokens.

    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_nnlm_brown.py               # the chosen setting
    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_nnlm_brown.py --no-test \\
        --hidden-size 200 --epochs 5                                                      # a validation run

Data: ``../shared/data/brown/brown_sentences.txt`` (NLTK's Brown, one sentence per line, 1,161,192 tokens). The
paper's split: the first 800,000 words train, the next 200,000 validation, the rest test — cut at sentence ends
(the sentence holding word 800,000 goes to train, likewise at 1,000,000), so no sentence is split. Words seen at
most 3 times in the training part are merged into one symbol, ``<unk>`` (the paper's |V| was 16,383 with its own
tokenisation; NLTK's tokens give the |V| printed below).

Counting, the same for both models: every sentence is followed by ``</s>``, which is predicted and counted; each
split is one stream that starts with the context-start word (``</s>``) in every context slot, so the first word
is predicted as a sentence start. Perplexity = exp(mean negative log-likelihood over all predicted tokens).

Model selection uses the validation split only (``--no-test`` runs); the test split is read once, at the end of
the final run. Also reported: the paper's "mix" — the NNLM's and the trigram's probabilities averaged with a
weight chosen on validation (Table 1's MLP10 is such a mixture).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from hf_lineage import LineageNNLMConfig, LineageNNLMForCausalLM
from hf_lineage.minimal_pairs.kneser_ney import KneserNey
from hf_lineage.models.modeling_lineage_nnlm import shift_labels
from hf_lineage.objectives.nnlm import DataCollatorForNNLM, NNLMBlocks, word_stream
from hf_lineage.tokenization import train_wordlevel_tokenizer

BROWN = Path(__file__).resolve().parents[2] / "shared" / "data" / "brown" / "brown_sentences.txt"


def split_brown(path, train_words=800_000, valid_words=200_000):
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    splits, current, seen = {"train": [], "validation": [], "test": []}, "train", 0
    for line in lines:
        splits[current].append(line)
        seen += len(line.split())
        if current == "train" and seen >= train_words:
            current = "validation"
        elif current == "validation" and seen >= train_words + valid_words:
            current = "test"
    return splits


def streams(tokenizer, splits, context_size):
    eos = tokenizer.eos_token_id
    return {name: word_stream(tokenizer(lines, add_special_tokens=False)["input_ids"], eos, eos, context_size)
            for name, lines in splits.items()}


def batches(blocks, batch_size, collate, generator=None):
    order = torch.randperm(len(blocks), generator=generator) if generator is not None else torch.arange(len(blocks))
    for s in range(0, len(order), batch_size):
        yield collate([blocks[int(k)] for k in order[s : s + batch_size]])


@torch.no_grad()
def token_log_probs(model, blocks, bf16, batch_size=32):
    """Log-probability of every predicted token, in stream order."""
    model.eval()
    collate, out = DataCollatorForNNLM(), []
    for batch in batches(blocks, batch_size, collate):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(**batch).logits  # (N, V): predicted positions only, row-major = stream order
        targets = shift_labels(batch["labels"])
        targets = targets[targets != -100]
        out.append(torch.log_softmax(logits.float(), -1).gather(1, targets[:, None]).squeeze(1))
    model.train()
    return torch.cat(out).double().numpy()


def perplexity(log_probs):
    return math.exp(-float(np.mean(log_probs)))


def train_nnlm(config, train_blocks, valid_blocks, args):
    torch.manual_seed(args.seed)
    model = LineageNNLMForCausalLM(config)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    steps_per_epoch = math.ceil(len(train_blocks) / args.batch_size)
    total = steps_per_epoch * args.epochs
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1 - step / total))
    collate, generator = DataCollatorForNNLM(), torch.Generator().manual_seed(args.seed)
    best, best_state, history, started = float("inf"), None, [], time.time()
    for epoch in range(args.epochs):
        running, n = 0.0, 0
        for batch in batches(train_blocks, args.batch_size, collate, generator):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
                loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            running, n = running + loss.item(), n + 1
        valid = perplexity(token_log_probs(model, valid_blocks, args.bf16))
        history.append(valid)
        print(f"epoch {epoch + 1}: train loss {running / n:.4f} (ppl {math.exp(running / n):.1f}), "
              f"validation perplexity {valid:.2f} ({time.time() - started:.0f} s)", flush=True)
        if valid < best:  # early stopping on validation, as in the paper
            best, best_state = valid, {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    return model, time.time() - started, history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(BROWN))
    parser.add_argument("--context-size", type=int, default=4, help="n - 1")
    parser.add_argument("--embedding-size", type=int, default=60, help="m")
    parser.add_argument("--hidden-size", type=int, default=50, help="h")
    parser.add_argument("--no-direct", action="store_true", help="no direct connections W")
    parser.add_argument("--embedding-dropout", type=float, default=0.0)
    parser.add_argument("--hidden-dropout", type=float, default=0.0)
    parser.add_argument("--initializer-range", type=float, default=0.02)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--batch-size", type=int, default=16, help="blocks per step")
    parser.add_argument("--block-length", type=int, default=256, help="words per block, context included")
    parser.add_argument("--no-bf16", dest="bf16", action="store_false", help="train in float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-test", dest="test", action="store_false", help="validation only (model selection)")
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        sys.exit(f"{args.data} not found (see /work/shared/data/brown/README.md)")
    torch.manual_seed(args.seed)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, bf16 autocast: {args.bf16}")

    splits = split_brown(args.data)
    tokenizer = train_wordlevel_tokenizer(iterator=splits["train"], min_count=4)
    V = len(tokenizer)
    counts = {name: sum(len(line.split()) for line in lines) for name, lines in splits.items()}
    print(f"words: {counts}; sentences: { {k: len(v) for k, v in splits.items()} }; |V| = {V} "
          "(<pad> <unk> <s> </s> + words seen ≥ 4 times in train)")

    # ---- Kneser-Ney trigram
    started = time.time()
    kn_streams = streams(tokenizer, splits, context_size=2)
    kn = KneserNey(kn_streams["train"], order=3, vocab_size=V, modified=True)
    kn_plain = KneserNey(kn_streams["train"], order=3, vocab_size=V, modified=False)
    histories = [(3, 3), tuple(kn_streams["train"][100:102]), tuple(kn_streams["validation"][50:52]), (5, 1)]
    worst = max(kn.check_normalised(histories), kn_plain.check_normalised(histories))
    print(f"KN trigram: |Σ_w P(w|h) − 1| ≤ {worst:.1e}"
          f" over {len(histories)} contexts; built in {time.time() - started:.1f} s")
    kn_valid = kn.token_log_probs(kn_streams["validation"])
    print(f"KN trigram validation perplexity: modified {perplexity(kn_valid):.2f}, "
          f"plain {kn_plain.perplexity(kn_streams['validation']):.2f}")

    # ---- NNLM
    config = LineageNNLMConfig(
        vocab_size=V, context_size=args.context_size, embedding_size=args.embedding_size,
        hidden_size=args.hidden_size, direct_connections=not args.no_direct,
        embedding_dropout=args.embedding_dropout, hidden_dropout=args.hidden_dropout,
        initializer_range=args.initializer_range, context_start_token_id=tokenizer.eos_token_id,
    )
    nn_streams = streams(tokenizer, splits, context_size=args.context_size)
    blocks = {name: NNLMBlocks(s, args.context_size, args.block_length) for name, s in nn_streams.items()}
    for name in splits:  # the same tokens are predicted by both models
        assert blocks[name].num_predicted == len(kn_streams[name]) - 2, name
    model, seconds, history = train_nnlm(config, blocks["train"], blocks["validation"], args)
    n_params = sum(p.numel() for p in model.parameters())
    nn_valid = token_log_probs(model, blocks["validation"], bf16=False)  # float32 for the reported numbers
    # The paper's mixture: λ·P_nnlm + (1 − λ)·P_trigram, λ chosen on validation.
    lambdas = np.linspace(0, 1, 21)
    mix_valid = [perplexity(np.logaddexp(np.log(lam + 1e-300) + nn_valid, np.log(1 - lam + 1e-300) + kn_valid))
                 for lam in lambdas]
    lam = float(lambdas[int(np.argmin(mix_valid))])
    print(f"NNLM n={args.context_size + 1} m={args.embedding_size} h={args.hidden_size} "
          f"direct={not args.no_direct} dropout=({args.embedding_dropout}, {args.hidden_dropout}), "
          f"{n_params:,} parameters: validation perplexity {perplexity(nn_valid):.2f} after "
          f"{1 + int(np.argmin(history))} of {args.epochs} epochs; mix with KN (λ={lam:.2f}) {min(mix_valid):.2f}; "
          f"training {seconds / 60:.1f} min")
    if not args.test:
        return
    kn_test = kn.token_log_probs(kn_streams["test"])
    nn_test = token_log_probs(model, blocks["test"], bf16=False)
    mix_test = np.logaddexp(np.log(lam + 1e-300) + nn_test, np.log(1 - lam + 1e-300) + kn_test)
    print(f"\nTEST ({len(kn_test):,} predicted tokens, </s> included)")
    print(f"| model | test perplexity |\n|---|---|")
    print(f"| interpolated Kneser-Ney trigram (modified discounts) | {perplexity(kn_test):.1f} |")
    print(f"| interpolated Kneser-Ney trigram (one discount per order) | "
          f"{kn_plain.perplexity(kn_streams['test']):.1f} |")
    print(f"| NNLM (ours) | {perplexity(nn_test):.1f} |")
    print(f"| NNLM + KN trigram mix (λ = {lam:.2f}) | {perplexity(mix_test):.1f} |")
    print(f"NNLM training time: {seconds / 60:.1f} min on {torch.get_num_threads()} threads")


if __name__ == "__main__":
    main()
