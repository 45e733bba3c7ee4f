"""The losses of the lineage heads: token cross entropy (and its memory-lean form for a large vocabulary),
sequence classification's and extractive question answering's.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import torch
import torch.nn.functional as F


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
    """Token-level cross entropy ignoring -100, in float32.

    With ``num_items_in_batch`` (passed by Trainer under gradient accumulation) the sum is divided by the number of
    labelled tokens in the whole accumulated batch, so accumulation gives the same gradient as one big batch.
    """
    logits = logits.reshape(-1, logits.size(-1)).float()
    labels = labels.reshape(-1).to(logits.device)
    if num_items_in_batch is None:
        return F.cross_entropy(logits, labels, ignore_index=-100)
    loss = F.cross_entropy(logits, labels, ignore_index=-100, reduction="sum")
    if torch.is_tensor(num_items_in_batch):
        num_items_in_batch = num_items_in_batch.to(loss.device)
    return loss / num_items_in_batch


class _VocabularyCrossEntropy(torch.autograd.Function):
    """Mean (or sum / ``divisor``) token cross entropy of (N, V) logits, computed in float32 a block of rows at a
    time. ``F.cross_entropy`` materialises three more (N, V) tensors — float32 log-probabilities kept for the
    backward pass, zeros for the NLL gradient and the log-softmax gradient (plus a float32 copy of bf16 logits
    under autocast); for a language model's (B·T, vocabulary) logits those are the largest tensors of a training
    step. Here the forward keeps only a log-sum-exp per row and the backward writes softmax − one-hot straight
    into the one gradient tensor it returns, a block of rows at a time: each block (1 MB of float32) stays in the
    CPU's cache between the fused softmax and the scaling, where whole-tensor passes would each go to memory
    (``benchmarks/bench_vocabulary_loss.py``)."""

    ROW_BLOCK_ELEMENTS = 2**18

    @staticmethod
    def forward(ctx, logits, labels, divisor):
        N, V = logits.shape
        rows = max(1, _VocabularyCrossEntropy.ROW_BLOCK_ELEMENTS // V)
        valid = labels != -100
        target = labels.masked_fill(~valid, 0)
        lse = torch.empty(N, dtype=torch.float32, device=logits.device)
        for s in range(0, N, rows):
            lse[s : s + rows] = torch.logsumexp(logits[s : s + rows].float(), dim=-1)
        picked = logits.gather(1, target[:, None]).squeeze(1).float()  # logit of the right token, (N,)
        ctx.save_for_backward(logits, target, valid, torch.as_tensor(divisor, device=logits.device))
        return ((lse - picked) * valid).sum() / divisor

    @staticmethod
    def backward(ctx, grad_loss):
        logits, target, valid, divisor = ctx.saved_tensors
        N, V = logits.shape
        rows = max(1, _VocabularyCrossEntropy.ROW_BLOCK_ELEMENTS // V)
        scale = (grad_loss / divisor) * valid  # (N,): 0 for ignored rows
        grad = torch.empty_like(logits)
        in_place = grad.dtype == torch.float32
        for s in range(0, N, rows):
            block = logits[s : s + rows]
            if in_place:  # the softmax written into the gradient's own rows
                p = torch.ops.aten._softmax.out(block, -1, False, out=grad[s : s + rows])
            else:
                p = torch.softmax(block, dim=-1, dtype=torch.float32)  # (rows, V)
            p.mul_(scale[s : s + rows, None])
            p[torch.arange(p.shape[0], device=p.device), target[s : s + rows]] -= scale[s : s + rows]
            if not in_place:
                grad[s : s + rows] = p
        return grad, None, None


def vocabulary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
    """``cross_entropy`` (-100 ignored, float32 maths, ``num_items_in_batch`` as there) for logits over a large
    vocabulary; same value and gradient on every device.

    The path is picked by device. On the CPU, ``_VocabularyCrossEntropy``: a block of rows at a time, without the
    (N, V) temporaries of ``F.cross_entropy``. Anywhere else (CUDA), ``F.cross_entropy`` itself: its fused kernels
    take the whole (N, V) tensor in a few launches, where the CPU path's small blocks would launch thousands of
    kernels a step (about 25,000 for GPT's 8,192 × 40,478 logits) and leave the GPU waiting on them (issue 33).
    Under ``torch.compile`` too: the compiler fuses ``F.cross_entropy`` itself.
    """
    if logits.device.type != "cpu" or torch.compiler.is_compiling():
        return cross_entropy(logits, labels, num_items_in_batch)
    logits = logits.reshape(-1, logits.size(-1))
    labels = labels.reshape(-1).to(logits.device)
    divisor = (labels != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return _VocabularyCrossEntropy.apply(logits, labels, divisor)


def sequence_classification_loss(config, logits, labels):
    """Regression (1 label), single-label or multi-label classification, chosen as transformers does."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        return F.mse_loss(logits.squeeze(-1).float(), labels.squeeze(-1).float())
    if config.problem_type == "single_label_classification":
        if labels.numel() and (int(labels.max()) >= config.num_labels or int(labels.min()) < -100):
            raise ValueError(f"labels contain {int(labels.max())}, but the model has num_labels={config.num_labels}")
        return cross_entropy(logits, labels.view(-1))
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


def span_loss(start_logits, end_logits, start_positions, end_positions):
    """Extractive QA's loss as transformers' BertForQuestionAnswering computes it: the mean of the start and end
    cross-entropies over (B, T) logits. Positions outside the (truncated) input are clamped to T and ignored."""
    T = start_logits.size(1)
    start = start_positions.view(-1).clamp(0, T)
    end = end_positions.view(-1).clamp(0, T)
    return (F.cross_entropy(start_logits.float(), start, ignore_index=T)
            + F.cross_entropy(end_logits.float(), end, ignore_index=T)) / 2
