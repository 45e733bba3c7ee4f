"""Attention-head pruning: the models' ``prune_heads`` and the helpers their attention layers cut themselves with.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import torch
from torch import nn

from .configuration_lineage_utils import check_pruned_heads


class HeadPruningMixin:
    """Gives every lineage model ``prune_heads`` (transformers 5 dropped its own); the model's base model
    cuts the layers (``_prune_heads``, BERT's and GPT's) with ``pruned_head_index`` and ``pruned_linear``."""

    def prune_heads(self, heads_to_prune: dict[int, list[int]]) -> None:
        """Remove attention heads, ``{layer: [head, ...]}`` in the original numbering (as transformers 4.x's
        ``prune_heads``): their rows of the query, key and value projections and their columns of the output
        projection go, so the model is smaller and faster. The heads are added to ``config.pruned_heads``, which
        ``from_pretrained`` reads to build the pruned shapes; pruning a head twice is a no-op."""
        if not hasattr(self.base_model, "_prune_heads"):
            raise NotImplementedError(f"{type(self).__name__} has no attention heads to prune")
        pruned = {int(layer): set(heads) for layer, heads in (self.config.pruned_heads or {}).items()}
        for layer, heads in heads_to_prune.items():
            pruned.setdefault(int(layer), set()).update(int(head) for head in heads)
        previous, self.config.pruned_heads = self.config.pruned_heads, pruned
        try:
            check_pruned_heads(self.config)  # validates and normalises before anything is cut
        except ValueError:
            self.config.pruned_heads = previous
            raise
        self.base_model._prune_heads({int(layer): set(heads) for layer, heads in heads_to_prune.items()})


def pruned_head_index(heads: set, num_heads: int, head_size: int, already_pruned: set) -> tuple[set, torch.Tensor]:
    """The heads of ``heads`` not yet pruned, and the (kept) positions of a layer's concatenated head outputs once
    they are gone. Head numbers are the original ones; the layer's current heads are those not in ``already_pruned``,
    in order."""
    heads = set(heads) - already_pruned
    current = [head for head in range(num_heads + len(already_pruned)) if head not in already_pruned]
    index = [i * head_size + j for i, head in enumerate(current) if head not in heads for j in range(head_size)]
    # On the CPU explicitly: from_pretrained builds the model under a meta-device context.
    return heads, torch.tensor(index, dtype=torch.long, device="cpu")


def pruned_linear(layer: nn.Linear, index: torch.Tensor, dim: int = 0) -> nn.Linear:
    """A copy of ``layer`` keeping only ``index`` along ``dim`` of its weight (0: outputs, 1: inputs), with the
    layer's dtype, device and requires_grad (transformers' ``prune_linear_layer`` makes a float32 layer)."""
    index = index.to(layer.weight.device)
    new = nn.Linear(1, 1, bias=layer.bias is not None, device="meta")  # shapes and values come from ``layer``
    new.in_features, new.out_features = (layer.in_features, len(index)) if dim == 0 else (len(index), layer.out_features)
    requires_grad = layer.weight.requires_grad
    new.weight = nn.Parameter(layer.weight.detach().index_select(dim, index).clone(), requires_grad=requires_grad)
    if layer.bias is not None:
        bias = layer.bias.detach() if dim == 1 else layer.bias.detach()[index]
        new.bias = nn.Parameter(bias.clone(), requires_grad=requires_grad)
    return new
