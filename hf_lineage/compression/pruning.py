"""Attention-head pruning, as Michel, Levy & Neubig (2019) "Are Sixteen Heads Really Better than One?" do it.

Each head of each layer gets a gate ξ (1 = on) that multiplies its output before the output projection; a head's
importance is the expected absolute gradient of the task loss with respect to its gate, |∂L/∂ξ|, over a data set
(their equation 2), normalised within each layer by the layer's L2 norm (their section 4.3). The least important
heads are then removed with the model's ``prune_heads`` (lineage BERT and GPT), which shrinks the matrices and
records the heads in ``config.pruned_heads`` so that the pruned model saves and loads.

The gates are forward pre-hooks on each layer's attention output projection, whose input is every head's output side
by side, so the same code scores lineage BERT and GPT and transformers' own BERT and OpenAI GPT, without a
``head_mask`` argument in any forward (transformers 5 removed it).

    importance = head_importance(model, batches)          # (layers, heads), NaN where a head is already pruned
    model.prune_heads(least_important_heads(importance, 0.25))
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import torch
from torch import nn


def attention_layers(model) -> list[tuple[nn.Module, nn.Module]]:
    """Per layer: (the self-attention module, the module whose input is the heads' outputs side by side)."""
    base = model.base_model
    if hasattr(base, "encoder") and hasattr(base.encoder, "layer"):  # lineage BERT, transformers' BERT
        return [(layer.attention, getattr(layer.attention, "dense", None) or layer.attention.output.dense)
                for layer in base.encoder.layer]
    if hasattr(base, "h"):  # lineage GPT, transformers' OpenAI GPT
        return [(block.attn, block.attn.c_proj) for block in base.h]
    raise ValueError(f"{type(model).__name__} has no BERT- or GPT-style attention layers to score or prune")


def layer_heads(model) -> list[list[int]]:
    """Per layer, the original numbers of the heads it still has (all of them unless pruned)."""
    total = model.config.num_attention_heads
    pruned = {int(layer): set(heads) for layer, heads in (getattr(model.config, "pruned_heads", None) or {}).items()}
    return [[head for head in range(total) if head not in pruned.get(layer, ())]
            for layer in range(len(attention_layers(model)))]


@contextmanager
def gated_heads(model, gates: list[torch.Tensor]):
    """Within the block, layer ``l``'s remaining heads are multiplied by ``gates[l]`` (one value per remaining head):
    0 switches a head off, 1 leaves it, a tensor that requires grad measures the loss's sensitivity to it."""
    hooks = []
    for (_, projection), layer_gates in zip(attention_layers(model), gates):
        def scale(module, args, layer_gates=layer_gates):
            heads_side_by_side = args[0]
            if layer_gates.numel() == 0:
                return None
            head_size = heads_side_by_side.shape[-1] // layer_gates.numel()
            gate = layer_gates.to(heads_side_by_side.dtype).repeat_interleave(head_size)
            return (heads_side_by_side * gate, *args[1:])

        hooks.append(projection.register_forward_pre_hook(scale))
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


def head_importance(model, batches, normalize_layers: bool = True) -> torch.Tensor:
    """(layers, num_attention_heads) importance scores: the mean |∂loss/∂gate| over ``batches`` (dicts the model
    takes, with labels, so that it returns a loss), each layer's scores divided by their L2 norm when
    ``normalize_layers``. Pruned heads are NaN. The model's weights and mode are left as they were."""
    heads = layer_heads(model)
    device = next(model.parameters()).device
    gates = [torch.ones(len(h), device=device, requires_grad=True) for h in heads]
    totals = [torch.zeros(len(h), device=device) for h in heads]
    was_training, n_batches = model.training, 0
    model.eval()  # dropout off: the gradient of the model that will be pruned, not of a noisy copy
    try:
        with gated_heads(model, gates):
            for batch in batches:
                loss = model(**batch).loss
                if loss is None:
                    raise ValueError("head_importance needs batches with labels: the model returned no loss")
                grads = torch.autograd.grad(loss, [g for g in gates if g.numel()], allow_unused=True)
                grads = iter(grads)
                for layer, gate in enumerate(gates):
                    if gate.numel():
                        grad = next(grads)
                        if grad is not None:
                            totals[layer] += grad.abs().detach()
                n_batches += 1
    finally:
        model.train(was_training)
    if n_batches == 0:
        raise ValueError("head_importance needs at least one batch")
    scores = torch.full((len(heads), model.config.num_attention_heads), float("nan"))
    for layer, (kept, total) in enumerate(zip(heads, totals)):
        layer_scores = total.cpu() / n_batches
        if normalize_layers and layer_scores.numel():
            layer_scores = layer_scores / layer_scores.norm().clamp_min(1e-20)
        scores[layer, kept] = layer_scores
    return scores


def least_important_heads(importance: torch.Tensor, fraction: float) -> dict[int, list[int]]:
    """The ``fraction`` of all heads (of the unpruned model: pruned ones count as removed) with the lowest scores,
    as ``{layer: [head, ...]}`` for ``prune_heads``. Ties break by (layer, head) order."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    total = importance.numel()
    already = int(torch.isnan(importance).sum())
    wanted = round(fraction * total) - already
    if wanted <= 0:
        return {}
    flat = importance.flatten()
    candidates = sorted((float(flat[i]), i) for i in range(total) if not torch.isnan(flat[i]))
    chosen = {}
    for _, index in candidates[:wanted]:
        layer, head = divmod(index, importance.shape[1])
        chosen.setdefault(layer, []).append(head)
    return {layer: sorted(heads) for layer, heads in sorted(chosen.items())}


def random_importance(importance: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """Scores in a random order (NaN kept where ``importance`` has it): the baseline a ranking must beat."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(importance.shape, generator=generator)
    return scores.masked_fill(torch.isnan(importance), float("nan"))


def pruning_curve(model, importance: torch.Tensor, fractions, evaluate, finetune=None) -> list[dict]:
    """For each fraction of heads removed (least important first): the pruned model's ``evaluate(model)`` score,
    and with ``finetune`` (a function that trains a model in place) the score after that short fine-tuning. Each
    point prunes a fresh copy of ``model``; ``model`` itself is not changed."""
    points = []
    for fraction in fractions:
        heads = least_important_heads(importance, fraction)
        pruned = copy.deepcopy(model)
        if heads:
            pruned.prune_heads(heads)
        point = {"fraction": fraction, "heads_removed": sum(map(len, heads.values())),
                 "heads_left": sum(map(len, layer_heads(pruned))),
                 "parameters": sum(p.numel() for p in pruned.parameters()), "score": evaluate(pruned)}
        if finetune is not None:
            finetune(pruned)
            point["score_after_finetune"] = evaluate(pruned)
        points.append(point)
    return points
