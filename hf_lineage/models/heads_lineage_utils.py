"""Small pieces the task heads of several families share: a sentence's mean vector, a sentence pair's features
and the dropout before a classifier.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import torch
from torch import nn


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, C), (B, T) -> (B, C): the mean of the states where ``mask`` is true (zeros for a row with none)."""
    weights = mask.unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(B, C), (B, C) -> (B, 4C): ``[u, v, |u − v|, u * v]``, what a siamese pair classifier reads of two sentence
    vectors (Conneau et al. 2017; Reimers & Gurevych 2019)."""
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def classifier_dropout(config) -> nn.Dropout:
    """Dropout before a task classifier: ``config.classifier_dropout``, else the hidden dropout."""
    return nn.Dropout(config.classifier_dropout if config.classifier_dropout is not None
                      else config.hidden_dropout_prob)
