"""Task distillation: a fine-tuned teacher's softened predictions train a smaller student on the same task (Hinton,
Vinyals & Dean 2015), the way DistilBERT (Sanh et al. 2019) and Tang et al. (2019, "Distilling Task-Specific
Knowledge from BERT into Simple Neural Networks") do it.

The loss, per example (or per labelled token), with the teacher's logits ``t``, the student's ``s``, temperature
``T`` and the weight ``α`` of the soft targets::

    α · T² · KL(softmax(t / T) ‖ softmax(s / T))  +  (1 − α) · CE(s, gold label)

The T² keeps the soft term's gradients on the scale of the hard one's as T changes (Hinton et al., section 2).
Examples without a gold label (the unlabelled augmentation text, label -100) get only the soft term; the hard term
is the mean over the examples (tokens) of the batch that have a label.

* ``DistillationTrainer``: transformers' ``Trainer`` with that loss. The teacher's logits come either from a
  ``teacher`` model run on the same batch (in eval mode, without gradients) or from a ``teacher_logits`` column
  computed beforehand (``teacher_logits_for``), which lets teacher and student tokenize differently (a WordPiece
  BERT teaching a word-level BiLSTM). Sequence classification and sentence pairs: (B, C) logits; token
  classification: (B, T, C), distilled at the positions ``distill_mask`` marks (default: the labelled ones, so
  padding and non-first sub-tokens never count).
* ``bert_student``: a shallower copy of a lineage BERT (DistilBERT's initialisation): embeddings, every k-th layer
  and the task head taken from the teacher.
* ``static_student``: a BiLSTM (or the configured task encoder) over a static-vector family's word features —
  word2vec or NNLM vectors, or ELMo's biLM layers — i.e. the family's own ``StaticVectorsFor*Classification``
  head (``modeling_lineage_static.py``) with the teacher's labels.

    trainer = DistillationTrainer(model=bert_student(teacher, 1), teacher=teacher, temperature=2.0, alpha_soft=0.5,
                                  args=training_args, train_dataset=encoded, data_collator=collator)
    trainer.train()
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Trainer

# The columns a distillation batch carries besides the model's inputs.
TEACHER_LOGITS, DISTILL_MASK, TEACHER_POSITIONS = "teacher_logits", "distill_mask", "teacher_positions"



def static_model_types() -> tuple[str, ...]:
    """The model types whose task heads are word features → task encoder → classifier (modeling_lineage_static.py;
    each family's ``Family.static_task_heads``): what a BiLSTM student is built from."""
    from ..registry import FAMILIES

    return tuple(f"lineage-{name}" for name, spec in FAMILIES.items() if spec.static_task_heads)


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, labels: torch.Tensor | None = None,
                      temperature: float = 2.0, alpha_soft: float = 0.5,
                      mask: torch.Tensor | None = None) -> torch.Tensor:
    """The distillation loss of the module docstring. ``student_logits`` and ``teacher_logits``: (..., C), the same
    shape; ``labels``: the leading shape, -100 where there is no gold label; ``mask``: the leading shape, where the
    soft term applies (default everywhere). Each term is a mean over its own positions; a term without any (a batch
    of unlabelled text has no hard term) is 0. ``alpha_soft`` 0 is plain cross entropy, 1 pure T²-scaled KL."""
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {tuple(student_logits.shape)} and teacher logits "
                         f"{tuple(teacher_logits.shape)} differ in shape: do teacher and student have the same labels?")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if not 0.0 <= alpha_soft <= 1.0:
        raise ValueError(f"alpha_soft must be in [0, 1], got {alpha_soft}")
    classes = student_logits.shape[-1]
    student = student_logits.reshape(-1, classes).float()
    zero = student.sum() * 0.0  # keeps the graph (and the device) when a term is empty
    soft = hard = zero
    if alpha_soft > 0:
        teacher = teacher_logits.reshape(-1, classes).float().detach()
        keep = torch.ones(student.shape[0], dtype=torch.bool, device=student.device) if mask is None \
            else mask.reshape(-1).bool().to(student.device)
        if keep.any():
            log_p_student = F.log_softmax(student[keep] / temperature, dim=-1)
            log_p_teacher = F.log_softmax(teacher[keep] / temperature, dim=-1)
            kl = F.kl_div(log_p_student, log_p_teacher, log_target=True, reduction="none").sum(-1)  # per position
            soft = kl.mean() * temperature**2
    if alpha_soft < 1:
        if labels is None:
            raise ValueError("alpha_soft < 1 mixes in the hard labels: labels are needed")
        gold = labels.reshape(-1).to(student.device)
        if (gold != -100).any():
            hard = F.cross_entropy(student, gold, ignore_index=-100)
    return alpha_soft * soft + (1.0 - alpha_soft) * hard


class DistillationTrainer(Trainer):
    """``Trainer`` whose training loss is ``distillation_loss`` between the model (the student) and a teacher.

    ``teacher``: a model of the same task and labels that reads the same batches; it is put in eval mode, on the
    training device, with gradients off, and run under ``torch.no_grad``. Without one, every training batch must
    carry ``teacher_logits`` (and for token classification ``distill_mask``; ``DistillationCollator`` builds both
    from precomputed columns). In evaluation without teacher logits the loss is the student's own cross entropy
    against the gold labels, so ``eval_loss`` compares with any fine-tuned model's."""

    def __init__(self, *args, teacher: nn.Module | None = None, temperature: float = 2.0, alpha_soft: float = 0.5,
                 **kwargs):
        super().__init__(*args, **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if not 0.0 <= alpha_soft <= 1.0:
            raise ValueError(f"alpha_soft must be in [0, 1], got {alpha_soft}")
        self.temperature, self.alpha_soft = float(temperature), float(alpha_soft)
        self.teacher = teacher
        if teacher is not None:
            teacher.to(self.args.device).eval()
            for param in teacher.parameters():
                param.requires_grad_(False)
        # compute_loss returns a per-batch mean: Trainer divides it by the gradient-accumulation steps itself.
        self.loss_is_scaled_for_ga = False

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        self._signature_columns += [c for c in (TEACHER_LOGITS, DISTILL_MASK, TEACHER_POSITIONS)
                                    if c not in self._signature_columns]

    def teacher_logits(self, inputs: dict) -> torch.Tensor:
        self.teacher.eval()  # Trainer's train() puts only the student in training mode; keep the teacher out of it
        with torch.no_grad():
            return self.teacher(**inputs).logits

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        inputs = dict(inputs)
        teacher_logits = inputs.pop(TEACHER_LOGITS, None)
        mask = inputs.pop(DISTILL_MASK, None)
        labels = inputs.pop("labels", None)
        outputs = model(**inputs)
        student_logits = outputs.logits
        if teacher_logits is None and self.teacher is not None:
            teacher_logits = self.teacher_logits(inputs)
        if teacher_logits is None:
            if model.training or labels is None:
                raise ValueError("distillation needs the teacher's logits: pass teacher= or give the batches "
                                 f"a {TEACHER_LOGITS!r} column")
            loss = F.cross_entropy(student_logits.reshape(-1, student_logits.shape[-1]).float(),
                                   labels.reshape(-1), ignore_index=-100)
        else:
            if student_logits.dim() == 3 and mask is None:  # token classification: the labelled tokens
                if labels is None:
                    raise ValueError(f"token-level distillation needs labels or a {DISTILL_MASK!r} to know which "
                                     "tokens to distil")
                mask = labels != -100
            loss = distillation_loss(student_logits, teacher_logits.to(student_logits.device), labels,
                                     self.temperature, self.alpha_soft, mask)
        return (loss, outputs) if return_outputs else loss


class DistillationCollator:
    """Wraps a task's collator: the features' precomputed ``teacher_logits`` become a (B, C) tensor, or for token
    classification, with ``teacher_positions`` (each word's token in the student's encoding, -1 where cut off), a
    (B, T, C) tensor with a ``distill_mask`` (B, T) of the positions that have one. Features without them (the
    validation data) pass through as the wrapped collator makes them."""

    def __init__(self, collator, num_labels: int, padding_side: str = "right"):
        self.collator, self.num_labels, self.padding_side = collator, num_labels, padding_side

    def __call__(self, features):
        features = [dict(f) for f in features]
        soft = [f.pop(TEACHER_LOGITS, None) for f in features]
        positions = [f.pop(TEACHER_POSITIONS, None) for f in features]
        lengths = [len(f["input_ids"]) for f in features]
        batch = self.collator(features)
        if all(s is None for s in soft):
            return batch
        if any(s is None for s in soft):
            raise ValueError(f"some examples of the batch have {TEACHER_LOGITS!r} and some do not")
        if all(p is None for p in positions):
            batch[TEACHER_LOGITS] = torch.tensor(soft, dtype=torch.float32).reshape(len(soft), self.num_labels)
            return batch
        rows, width = len(features), batch["input_ids"].shape[1]
        logits = torch.zeros(rows, width, self.num_labels)
        mask = torch.zeros(rows, width, dtype=torch.bool)
        for i, (row_logits, row_positions) in enumerate(zip(soft, positions)):
            shift = width - lengths[i] if self.padding_side == "left" else 0
            for position, word_logits in zip(row_positions, row_logits):
                if position >= 0:
                    logits[i, position + shift] = torch.as_tensor(word_logits, dtype=torch.float32)
                    mask[i, position + shift] = True
        batch[TEACHER_LOGITS], batch[DISTILL_MASK] = logits, mask
        return batch


# --------------------------------------------------------------------------- students


def spaced_layers(total: int, kept: int) -> list[int]:
    """``kept`` of ``total`` layers, every k-th (k = total / kept) counted down from the top one, which the teacher's
    head was trained on: 12 → 6 keeps 1, 3, 5, 7, 9, 11; 6 → 2 keeps 2, 5; 2 → 1 keeps 1."""
    if not 1 <= kept <= total:
        raise ValueError(f"a student keeps between 1 and {total} of the teacher's {total} layers, not {kept}")
    step = total / kept
    return sorted(total - 1 - round(i * step) for i in range(kept))


def bert_student(teacher, num_layers: int, layers: list[int] | None = None):
    """DistilBERT's student: a copy of the lineage BERT ``teacher`` (any task head) with ``num_layers`` of its
    layers — ``layers`` (teacher layer numbers, ascending), by default ``spaced_layers`` — and its embeddings, pooler
    and classifier. Width, heads and vocabulary stay the teacher's; pruned heads stay pruned. The teacher is not
    changed. (The config records no layer numbers: lineage configs refuse fields they do not know, and a saved
    student must load without hf_lineage's help; the recipe writes them to ``distillation.json``.)"""
    if teacher.config.model_type != "lineage-bert":
        raise ValueError("a layer-subset student is built from a lineage-bert teacher, not "
                         f"{teacher.config.model_type!r}")
    total = teacher.config.num_hidden_layers
    layers = spaced_layers(total, num_layers) if layers is None else list(layers)
    if len(layers) != num_layers or sorted(set(layers)) != layers or not all(0 <= i < total for i in layers):
        raise ValueError(f"layers {layers} are not {num_layers} distinct ascending layers of the teacher's {total}")
    student = copy.deepcopy(teacher)
    encoder = student.base_model.encoder
    encoder.layer = nn.ModuleList(encoder.layer[i] for i in layers)
    for new, layer in enumerate(encoder.layer):  # the cache (for a decoder) is indexed by the layer's position
        for module in layer.modules():
            if hasattr(module, "layer_idx"):
                module.layer_idx = new
    config = student.config  # deepcopy gave the student a config of its own
    config.num_hidden_layers = num_layers
    if config.pruned_heads:
        config.pruned_heads = {new: heads for new, old in enumerate(layers)
                               for layer, heads in config.pruned_heads.items() if int(layer) == old}
    return student


def static_student(path: str, auto_class, id2label: dict[int, str], hub_kwargs: dict | None = None, **overrides):
    """A static-vector family's task head (word2vec, GloVe, svd, NNLM or ELMo features → task encoder, a BiLSTM by default →
    classifier) from the pretrained checkpoint ``path``, with the teacher's labels; ``overrides`` set config fields
    such as ``task_hidden_size`` or ``freeze_vectors``."""
    from transformers import AutoConfig

    hub_kwargs = hub_kwargs or {}
    config = AutoConfig.from_pretrained(path, **hub_kwargs)
    if config.model_type not in static_model_types():
        raise ValueError(f"{path} is a {config.model_type!r} model; a BiLSTM student reads the features of one of "
                         f"{', '.join(static_model_types())}")
    id2label = {int(i): name for i, name in id2label.items()}
    return auto_class.from_pretrained(path, id2label=id2label, label2id={n: i for i, n in id2label.items()},
                                      **overrides, **hub_kwargs)


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())
