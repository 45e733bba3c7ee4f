"""Joint intent classification and slot filling for every family (Chen, Zhuo & Wang 2019, *BERT for Joint Intent
Classification and Slot Filling*): one model gives an utterance its intent and each of its words a BIO slot tag,
trained on the sum of the two losses (``hf_lineage.AutoModelForIntentAndSlots``: ``<Family>ForIntentAndSlots``).

Data, in either of the formats ATIS and SNIPS are passed around in (``hf_lineage.data.readers``):

* a folder as Goo et al. (2018) and JointBERT ship them, ``--train_file data/atis/train`` holding the line-aligned
  files ``seq.in`` (words), ``seq.out`` (BIO tags) and ``label`` (intent);
* a ``.jsonl`` file of ``{"words": [...], "slots": [...], "intent": "..."}`` lines.

Words come pre-split; a word's tag is put on its first sub-token (BERT, as the paper; one token per word for the
word-level families), on its last for a left-to-right model (GPT, NNLM: only there has it read the whole word), -100
elsewhere, as in ``labeling``. GPT reads ``<s> words <e>`` and takes the intent from ``<e>``; BERT from [CLS]; the
static families and ELMo from their task encoder's max-pooled states.

Metrics: ``intent_accuracy``; ``slot_f1`` (with ``slot_precision``, ``slot_recall``: seqeval's entity scores,
through the shipped metric module); ``exact_match``, the share of utterances whose intent and every slot tag are
right (Goo et al.'s "sentence accuracy"). ``--do_predict`` writes ``predictions.jsonl``, one line per utterance in
input order: ``words``, the predicted ``intent`` and ``slots`` (and ``gold_intent`` / ``gold_slots`` when the test
data has them). A word cut off by ``--max_seq_length`` gets ``O``.

Labels come from the training data; a validation or test intent or tag the model does not know is an error naming
the file and the label.

Example::

    python recipes/intent_and_slots.py --model_name_or_path out/bert --train_file data/atis/train \\
        --validation_file data/atis/dev --test_file data/atis/test --do_train --do_eval --do_predict \\
        --output_dir ft/bert-atis
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter

import datasets
import numpy as np
from transformers import DataCollatorForTokenClassification, Trainer, TrainingArguments

from .. import metrics as lineage_metrics
from ..data.readers import DataFormatError, read_intent_and_slots
from ..models.modeling_lineage_intent_and_slots import INTENT_AND_SLOTS_LOSS_KEYS
from ..registry import AutoModelForIntentAndSlots
from . import training
from .recipe_arguments import parse_arguments
from .classification import uses_gpt_transformations
from .splits import Split, _sorted_labels, wanted_splits
from .labeling import reads_left_to_right, tokenize_and_align, word_predictions
from .training import RecipeTrainerMixin, family_of

logger = logging.getLogger(__name__)

TASK = "intent_and_slots"


# --------------------------------------------------------------------------- data


def load_splits(data_args, training_args) -> dict[str, Split]:
    """The splits the run needs (``train`` for --do_train, ``validation`` for --do_eval, ``test`` for
    --do_predict) read from local files, columns ``words``, ``slots``, ``intent`` (the last two may be missing
    from the test data), cut to ``--max_*_samples``."""
    if data_args.dataset_name is not None:
        raise ValueError("intent and slots reads local files (a seq.in/seq.out/label folder or .jsonl); "
                         "--dataset_name is not supported")
    splits = {}
    for split, file, limit, flag, option in wanted_splits(data_args, training_args):
        if file is None:
            raise ValueError(f"{flag} needs {option}")
        dataset = read_intent_and_slots(file)
        if split != "test" and not {"slots", "intent"} <= set(dataset.column_names):
            raise DataFormatError(file, None, f"the {split} data needs slot tags and intents")
        if limit is not None:
            dataset = dataset.select(range(min(limit, len(dataset))))
        splits[split] = Split(dataset, str(file))
    return splits


def label_maps(splits: dict[str, Split], config) -> tuple[list[str], list[str]]:
    """(intent names, slot tags), each in id order: from the training data (sorted), or without training from a
    fine-tuned checkpoint (``config.intent_labels``, ``config.id2label``); a checkpoint that knows every training
    label keeps its order. A validation or test label outside them is an error naming the file and the label."""
    known_intents = list(getattr(config, "intent_labels", None) or [])
    known_tags = [name for _, name in sorted((getattr(config, "id2label", None) or {}).items(),
                                             key=lambda kv: int(kv[0]))] if known_intents else []
    if "train" in splits:
        train = splits["train"].dataset
        intents = _sorted_labels(train["intent"])
        tags = _sorted_labels(t for row in train["slots"] for t in row)
        if known_intents and set(intents) <= set(known_intents) and set(tags) <= set(known_tags):
            intents, tags = known_intents, known_tags
    elif known_intents:
        intents, tags = known_intents, known_tags
    else:
        raise ValueError("Without --do_train the model must be a fine-tuned intent-and-slots checkpoint (its config "
                         "names intent_labels and id2label); this one has none")
    for name, split in splits.items():
        if name == "train":
            continue
        columns = split.dataset.column_names
        for value in split.dataset["intent"] if "intent" in columns else ():
            if value not in intents:
                raise ValueError(f"{split.source}: intent {value!r} does not occur in the training data; known "
                                 f"intents: {', '.join(intents)}")
        for row in split.dataset["slots"] if "slots" in columns else ():
            for value in row:
                if value not in tags:
                    raise ValueError(f"{split.source}: slot tag {value!r} does not occur in the training data; "
                                     f"known tags: {', '.join(tags)}")
    return intents, tags


def encode(examples, tokenizer, slot2id, intent2id, max_length, last_token):
    """Tokenize pre-split words (``labeling.tokenize_and_align``): ``slot_labels`` holds each word's tag id at the
    token its family labels and -100 elsewhere, ``first_tokens`` that token's position per word (-1 when cut off);
    ``intent_labels`` the intent id."""
    batch = {"tokens": examples["words"]}
    if "slots" in examples:
        batch["tags"] = examples["slots"]
    encoding = tokenize_and_align(batch, tokenizer, slot2id, max_length, last_token=last_token)
    if "labels" in encoding:
        encoding["slot_labels"] = encoding.pop("labels")
    if "intent" in examples:
        encoding["intent_labels"] = [intent2id[name] for name in examples["intent"]]
    return encoding


class DataCollatorForIntentAndSlots:
    """Pads like ``DataCollatorForTokenClassification`` (``slot_labels`` with -100, on the tokenizer's padding side);
    ``intent_labels`` become a (B,) tensor."""

    def __init__(self, tokenizer):
        self.token_collator = DataCollatorForTokenClassification(tokenizer)

    def __call__(self, features):
        features = [{("labels" if k == "slot_labels" else k): v for k, v in f.items()} for f in features]
        batch = self.token_collator(features)
        if "labels" in batch:
            batch["slot_labels"] = batch.pop("labels")
        return batch


class IntentAndSlotsTrainer(RecipeTrainerMixin, Trainer):
    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        # Only the two logits are gathered: the separate losses are scalars, which Trainer cannot concatenate.
        ignore_keys = INTENT_AND_SLOTS_LOSS_KEYS if ignore_keys is None else ignore_keys
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)


# --------------------------------------------------------------------------- metrics


def scores(predicted_intents, gold_intents, predicted_slots, gold_slots) -> dict[str, float]:
    """``intent_accuracy``, seqeval's ``slot_precision`` / ``slot_recall`` / ``slot_f1`` over the BIO tags, and
    ``exact_match``: the share of utterances whose intent is right and every tag too. Lists of names, one item
    (intent) or one list of tags per utterance."""
    if not (len(predicted_intents) == len(gold_intents) == len(predicted_slots) == len(gold_slots)):
        raise ValueError("scores: predictions and references must have one item per utterance")
    if not gold_intents:
        raise ValueError("scores: no utterances")
    for i, (p, g) in enumerate(zip(predicted_slots, gold_slots)):
        if len(p) != len(g):
            raise ValueError(f"scores: utterance {i} has {len(p)} predicted tags for {len(g)} gold tags")
    seqeval = lineage_metrics.load("seqeval").compute(predictions=[list(p) for p in predicted_slots],
                                                      references=[list(g) for g in gold_slots])
    intent_right = [p == g for p, g in zip(predicted_intents, gold_intents)]
    exact = [i and list(p) == list(g) for i, p, g in zip(intent_right, predicted_slots, gold_slots)]
    return {"intent_accuracy": float(np.mean(intent_right)), "slot_precision": float(seqeval["overall_precision"]),
            "slot_recall": float(seqeval["overall_recall"]), "slot_f1": float(seqeval["overall_f1"]),
            "exact_match": float(np.mean(exact))}


def _split_outputs(predictions, label_ids=None):
    """(intent logits (N, I), slot logits (N, T, S)) and, given, (intent ids (N,), slot ids (N, T)), told apart by
    their number of axes (Trainer gives them in the model's order)."""
    logits = predictions if isinstance(predictions, tuple) else (predictions,)
    intent_logits = next(np.asarray(x) for x in logits if np.asarray(x).ndim == 2)
    slot_logits = next(np.asarray(x) for x in logits if np.asarray(x).ndim == 3)
    if label_ids is None:
        return intent_logits, slot_logits, None, None
    labels = label_ids if isinstance(label_ids, tuple) else (label_ids,)
    intent_ids = next(np.asarray(x) for x in labels if np.asarray(x).ndim == 1)
    slot_ids = next(np.asarray(x) for x in labels if np.asarray(x).ndim == 2)
    return intent_logits, slot_logits, intent_ids, slot_ids


def make_compute_metrics(intents: list[str], tags: list[str]):
    def compute_metrics(prediction):
        intent_logits, slot_logits, intent_ids, slot_ids = _split_outputs(prediction.predictions,
                                                                          prediction.label_ids)
        best = slot_logits.argmax(-1)
        predicted_slots, gold_slots = [], []
        for row, gold in zip(best, slot_ids):
            keep = gold != -100
            predicted_slots.append([tags[i] for i in row[: len(gold)][keep[: len(row)]]])
            gold_slots.append([tags[i] for i in gold[keep]])
        return scores([intents[i] for i in intent_logits.argmax(-1)], [intents[i] for i in intent_ids],
                      predicted_slots, gold_slots)

    return compute_metrics


def majority_baselines(train: datasets.Dataset, evaluation: datasets.Dataset) -> dict[str, float]:
    """The scores of two trivial predictors learned from ``train``: every utterance gets the most frequent intent,
    and every word the tag it had most often in training (``O`` for a word never seen) — the floor a model must
    clear. Keys as ``scores`` gives them."""
    majority = Counter(train["intent"]).most_common(1)[0][0]
    by_word: dict[str, Counter] = {}
    for words, row in zip(train["words"], train["slots"]):
        for word, tag in zip(words, row):
            by_word.setdefault(word.lower(), Counter())[tag] += 1
    tagged = [[by_word[w.lower()].most_common(1)[0][0] if w.lower() in by_word else "O" for w in words]
              for words in evaluation["words"]]
    # A word's most frequent tag may be an I- tag with no B- before it; seqeval reads that as the start of a span.
    return scores([majority] * len(evaluation), evaluation["intent"], tagged, evaluation["slots"])


# --------------------------------------------------------------------------- the recipe


def main(argv=None) -> dict:
    """Run the recipe on a command line (default ``sys.argv[1:]``); returns the metrics of ``all_results.json``."""
    return run(*parse_arguments(argv, TrainingArguments))


def run(model_args, data_args, training_args, callbacks=None) -> dict:
    """The recipe on parsed arguments (``ModelArguments``, ``DataTrainingArguments``, ``TrainingArguments``)."""
    training.start(training_args)
    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    splits = load_splits(data_args, training_args)
    config = training.checked_config(model_args, AutoModelForIntentAndSlots, TASK)
    intents, tags = label_maps(splits, config)
    if len(intents) < 2 and "train" in splits:
        raise ValueError(f"{splits['train'].source}: only one intent ({intents[0]!r}) in the training data")
    slot2id, intent2id = {t: i for i, t in enumerate(tags)}, {n: i for i, n in enumerate(intents)}
    config = training.task_config(model_args, config, id2label=dict(enumerate(tags)), label2id=slot2id)
    config.intent_labels = intents  # not a field of a pre-training config: AutoConfig would drop it as a kwarg
    # GPT reads <s> words <e>: the intent is read at <e>.
    model, tokenizer = training.load_model(model_args, AutoModelForIntentAndSlots, config,
                                           gpt_task_tokens=uses_gpt_transformations(config))
    max_length = training.sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    logger.info("%s (%s) for %s: %d intents, %d slot tags", model_args.model_name_or_path, family_of(config), TASK,
                len(intents), len(tags))

    encoded = training.encode_splits(splits, encode, dict(
        tokenizer=tokenizer, slot2id=slot2id, intent2id=intent2id, max_length=max_length,
        last_token=reads_left_to_right(config)), data_args)
    card = training.card_info(TASK, model_args, data_args, config, splits, "AutoModelForIntentAndSlots",
                              max_seq_length=max_length, freeze_base=model_args.freeze_base,
                              intents=" ".join(intents), slot_tags=" ".join(tags))
    trainer = training.make_trainer(IntentAndSlotsTrainer, model, tokenizer, training_args, encoded,
                                    DataCollatorForIntentAndSlots(tokenizer), card,
                                    compute_metrics=make_compute_metrics(intents, tags), callbacks=callbacks)

    def write_predictions(trainer, test_dataset):
        test = splits["test"].dataset
        has_gold = {"slots", "intent"} <= set(test.column_names)
        output = training.predict(trainer, test_dataset, scored=has_gold)
        intent_logits, slot_logits, _, _ = _split_outputs(output.predictions)
        predicted, missing = word_predictions(slot_logits, test_dataset["first_tokens"], tags,
                                              "O" if "O" in slot2id else tags[0])
        if trainer.is_world_process_zero():
            with open(os.path.join(training_args.output_dir, "predictions.jsonl"), "w", encoding="utf-8") as f:
                for i, (words, intent_id, row) in enumerate(zip(test["words"], intent_logits.argmax(-1), predicted)):
                    record = {"words": words, "intent": intents[int(intent_id)], "slots": row}
                    if has_gold:
                        record.update(gold_intent=test["intent"][i], gold_slots=test["slots"][i])
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
        return {**output.metrics, "predict_words_truncated": missing}

    return training.train_evaluate_predict(trainer, encoded, write_predictions)
