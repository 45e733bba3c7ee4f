"""The optimiser and the learning-rate schedule's position: shared by the engine and the objectives (a family may
build its own optimiser, and the default one is this), so it sits below both and imports neither."""

from __future__ import annotations

import torch


def build_optimizer(model, args):
    """AdamW without weight decay on biases and LayerNorm weights (as BERT and GPT did)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    settings = dict(lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2), eps=args.adam_epsilon)
    try:  # one fused kernel for all parameters (what Trainer's default "adamw_torch_fused" uses), where torch has one
        return torch.optim.AdamW(groups, fused=True, **settings)
    except RuntimeError:  # a device or dtype without the fused kernel
        return torch.optim.AdamW(groups, **settings)


# The positions a clock-driven learning-rate schedule is laid out over (--max-train-seconds): fine enough that the
# learning rate moves smoothly, whatever the number of steps the budget turns out to hold.
CLOCK_POSITIONS = 10_000


def set_schedule_position(scheduler, position: int) -> None:
    """Put a ``LambdaLR`` schedule at ``position`` (instead of stepping it once) and apply its learning rates."""
    scheduler.last_epoch = position
    rates = [base * schedule(position) for base, schedule in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    for group, lr in zip(scheduler.optimizer.param_groups, rates):
        group["lr"] = lr
    scheduler._last_lr = rates
