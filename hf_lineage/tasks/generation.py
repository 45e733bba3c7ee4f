"""Generation (translation on Multi30k, data-to-text on E2E, summarisation-style data) for every family, with
``Seq2SeqTrainer`` and ``--predict_with_generate``.

Two shapes of model, chosen from the checkpoint:

* **Decoder-only** (GPT, NNLM, word2vec's LSTM LM, ELMo's forward LM: any family with ``AutoModelForCausalLM``) —
  a causal LM reads ``source <eos> target <eos>``: the end-of-sequence token separates the two (for NNLM and
  word2vec ``</s>`` is what every pre-training sentence followed, so the target starts where sentences start) and
  the loss is on the target and its final ``<eos>`` only. At generation the prompt ``source <eos>`` is left-padded,
  the model continues it, and the prompt is cut off the generated ids. transformers' ``Seq2SeqTrainer`` does not
  do this for decoder-only models (its ``prediction_step`` would generate from the full training sequence, target
  included, and return prompt + continuation), so ``CausalLMGenerationTrainer`` overrides ``prediction_step``: the
  loss on the full sequence, generation from the prompt, the prompt stripped. The saved tokenizer ends every text
  with ``<eos>`` (``set_prompt_template``), so ``pipeline("text-generation", model=output_dir)`` continues the
  prompt the model was trained on (``return_full_text=False`` gives what ``generated_predictions.txt`` holds).
* **Encoder-decoder** (BERT) — ``transformers.EncoderDecoderModel``: the BERT checkpoint as encoder and, as decoder,
  ``--decoder_model_name_or_path`` (e.g. a lineage GPT, which gets cross-attention) or by default a BERT decoder
  warm-started from the same checkpoint (Rothe et al., 2020's BERT2BERT; the cross-attention is new). The decoder
  starts from ``[CLS]`` (BERT) or ``<|endoftext|>`` (GPT) and stops at ``[SEP]`` / ``<|endoftext|>``; these, and
  the padding id, are set explicitly in the model's config and generation config. A fine-tuned encoder-decoder
  folder can be passed back as ``--model_name_or_path`` (for --do_eval/--do_predict, or more training). When the
  decoder has its own tokenizer it is saved in ``decoder_tokenizer/``.

``--max_source_length``/``--max_target_length`` cut the two sides (for GPT the source is also cut so that prompt +
target fit ``max_position_embeddings``); ``--max_target_length`` is also the number of new tokens generated (for a
decoder-only model ``--generation_max_length`` means new tokens too). ``--generation_num_beams`` for beam search.

Evaluation groups identical sources, so an E2E meaning representation written by several people is generated once and
scored against all its references. Metrics: sacreBLEU (``bleu``) and ROUGE-1/2/L/Lsum F-measures (``rouge1`` ...),
the mean generated length (``gen_len``, in tokens). ``--do_predict`` writes ``generated_predictions.txt``, one line per
(distinct) test source.

Example::

    python recipes/generation.py --model_name_or_path out/gpt --train_file multi30k/train --source_lang de \\
        --target_lang en --validation_file multi30k/val --do_train --do_eval --predict_with_generate \\
        --output_dir ft/gpt-multi30k
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import torch
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    DataCollatorForSeq2Seq,
    EncoderDecoderModel,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    Trainer,
)

from .. import metrics as lineage_metrics
from ..folders.pretrained import generation_config_for
from . import training
from .recipe_arguments import parse_arguments
from .splits import Split, load_splits
from .training import RecipeTrainerMixin, family_of, family_rules, load_config, load_tokenizer, logits_of, require_auto_class

logger = logging.getLogger(__name__)

TASK = "generation"


class GenerationTrainer(RecipeTrainerMixin, Seq2SeqTrainer):
    """Seq2SeqTrainer for encoder-decoder models, with hf_lineage's model card.

    In distributed evaluation Seq2SeqTrainer gathers with ``accelerator.gather``, which keeps the repeated samples
    that fill the last batch of every process; the metrics here compare generations with the references by position,
    so the duplicates are dropped as Trainer itself does (``gather_for_metrics``)."""

    @property
    def gather_function(self):
        return self.accelerator.gather_for_metrics

    @gather_function.setter
    def gather_function(self, value):
        pass  # Seq2SeqTrainer.evaluate/predict set accelerator.gather: see the class docstring


class CausalLMGenerationTrainer(GenerationTrainer):
    """Seq2SeqTrainer for a decoder-only model trained on ``source <eos> target <eos>``: evaluation batches carry the
    full sequence (for the loss) and the left-padded prompt ``source <eos>`` (``prompt_input_ids``,
    ``prompt_attention_mask``) to generate from; the prompt is stripped from what ``generate`` returns."""

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        inputs = dict(inputs)
        prompt_ids = inputs.pop("prompt_input_ids", None)
        prompt_mask = inputs.pop("prompt_attention_mask", None)
        if not self.args.predict_with_generate or prediction_loss_only or prompt_ids is None:
            return Trainer.prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=ignore_keys)
        inputs = self._prepare_inputs(inputs)
        prompt_ids, prompt_mask = prompt_ids.to(self.args.device), prompt_mask.to(self.args.device)
        gen_kwargs = dict(gen_kwargs or getattr(self, "_gen_kwargs", {}))
        # A decoder-only model's prompt is part of its sequence: --generation_max_length counts new tokens here.
        max_new_tokens = gen_kwargs.pop("max_length", None) or self.model.generation_config.max_new_tokens
        if gen_kwargs.get("num_beams") is None:
            gen_kwargs.pop("num_beams", None)
        context = getattr(self.model.config, "max_position_embeddings", None)
        if context:
            max_new_tokens = min(max_new_tokens, context - prompt_ids.shape[1])
        with torch.no_grad():
            loss = None
            if "labels" in inputs:
                with self.compute_loss_context_manager():
                    loss = model(**inputs).loss.detach().mean()
            generated = self.generate_continuations(prompt_ids, prompt_mask, max_new_tokens=max_new_tokens,
                                                    **gen_kwargs)
        if self.args.prediction_loss_only:
            return loss, None, None
        return loss, generated, inputs.get("labels")

    def generate_continuations(self, prompt_ids, prompt_mask, **gen_kwargs):
        """(B, P) left-padded prompts → (B, new) generated ids, prompts removed, padded on the right."""
        model = self.model
        # A causal LM that cannot continue a left-padded prompt (ELMo's forward LSTM reads padding as input) has its
        # prompts generated in groups of equal length, unpadded.
        if family_rules(model.config).left_padding:
            generated = model.generate(input_ids=prompt_ids, attention_mask=prompt_mask, **gen_kwargs)
            return generated[:, prompt_ids.shape[1]:]
        # An LSTM reads padding as input: generate each group of equally long prompts without any.
        lengths = prompt_mask.sum(dim=1)
        rows_out = [None] * prompt_ids.shape[0]
        for length in lengths.unique().tolist():
            rows = (lengths == length).nonzero().squeeze(1)
            prompts = prompt_ids[rows][:, prompt_ids.shape[1] - length:]  # (b, length): the real tokens
            out = model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts), **gen_kwargs)
            for row, ids in zip(rows.tolist(), out[:, length:]):
                rows_out[row] = ids
        width = max(len(ids) for ids in rows_out)
        pad = model.generation_config.pad_token_id
        generated = torch.full((len(rows_out), width), pad, dtype=torch.long, device=prompt_ids.device)
        for row, ids in enumerate(rows_out):
            generated[row, : len(ids)] = ids
        return generated


@dataclass
class DataCollatorForCausalGeneration:
    """Pads ``input_ids``/``labels`` of ``source <eos> target <eos>`` sequences on the right (labels with -100), and
    ``prompt_input_ids`` on the left, where generation continues them."""

    pad_token_id: int

    def _pad(self, rows, value, left=False):
        width = max(len(r) for r in rows)
        out = torch.full((len(rows), width), value, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            span = slice(width - len(row), width) if left else slice(0, len(row))
            out[i, span] = torch.tensor(row, dtype=torch.long)
            mask[i, span] = 1
        return out, mask

    def __call__(self, features):
        batch = {}
        batch["input_ids"], batch["attention_mask"] = self._pad([f["input_ids"] for f in features], self.pad_token_id)
        if "labels" in features[0]:
            batch["labels"], _ = self._pad([f["labels"] for f in features], -100)
        if "prompt_input_ids" in features[0]:
            batch["prompt_input_ids"], batch["prompt_attention_mask"] = self._pad(
                [f["prompt_input_ids"] for f in features], self.pad_token_id, left=True)
        return batch


def group_references(dataset):
    """Distinct sources in order of first appearance, each with every target written for it (E2E has several
    references per meaning representation; sacreBLEU and ROUGE score against all of them)."""
    references: dict[str, list[str]] = {}
    has_target = "target" in dataset.column_names
    for row in dataset:
        references.setdefault(row["source"], [])
        if has_target:
            references[row["source"]].append(row["target"])
    sources = list(references)
    return sources, [references[s] for s in sources] if has_target else None


def make_compute_metrics(tokenizer, references):
    """sacreBLEU and ROUGE of the decoded generations against ``references`` (a list of reference lists, in the
    order of the evaluated examples)."""
    bleu, rouge = lineage_metrics.load("sacrebleu"), lineage_metrics.load("rouge")
    # sacreBLEU needs the same number of references everywhere: repeat a reference, which changes no score (n-gram
    # counts are clipped by the maximum over references, and the closest reference length is unchanged).
    most = max(len(r) for r in references)
    padded = [list(r) + [r[0]] * (most - len(r)) for r in references]

    def compute_metrics(prediction):
        ids = logits_of(prediction.predictions)
        texts = decode(tokenizer, ids)
        scores = {"bleu": bleu.compute(predictions=texts, references=padded)["score"]}
        scores.update(rouge.compute(predictions=texts, references=references))
        # Generated tokens, not counting padding, the decoder's start token or the final end token.
        counted = ~np.isin(np.asarray(ids), [-100, *tokenizer.all_special_ids])
        scores["gen_len"] = float(counted.sum(-1).mean())
        return scores

    return compute_metrics


def decode(tokenizer, ids) -> list[str]:
    ids = np.where(np.asarray(ids) == -100, tokenizer.pad_token_id, np.asarray(ids))  # Trainer pads with -100
    return [text.strip() for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]


def decoder_special_ids(tokenizer) -> dict[str, int]:
    """Where a decoder starts and stops: ``[CLS]``/``[SEP]`` for a BERT (WordPiece) tokenizer, bos/eos otherwise."""
    if tokenizer.cls_token_id is not None and tokenizer.sep_token_id is not None:
        start, end = tokenizer.cls_token_id, tokenizer.sep_token_id
    else:
        start, end = tokenizer.bos_token_id, tokenizer.eos_token_id
    if start is None or end is None or tokenizer.pad_token_id is None:
        raise ValueError(f"The decoder's tokenizer ({type(tokenizer).__name__}) needs start (cls or bos), end (sep or "
                         "eos) and pad tokens")
    return {"decoder_start_token_id": start, "bos_token_id": start, "eos_token_id": end,
            "pad_token_id": tokenizer.pad_token_id}


def load_generation_model(model_args, config):
    """(model, encoder tokenizer, decoder tokenizer, kind) for the checkpoint: "encoder-decoder" or "causal"."""
    path = model_args.model_name_or_path
    tokenizer = load_tokenizer(model_args)
    if config.model_type == "encoder-decoder":
        model = AutoModelForSeq2SeqLM.from_pretrained(path, **model_args.hub_kwargs())
        decoder_folder = os.path.join(path, "decoder_tokenizer")
        decoder_tokenizer = load_tokenizer(model_args, decoder_folder) if os.path.isdir(decoder_folder) else tokenizer
        return model, tokenizer, decoder_tokenizer, "encoder-decoder"
    if model_args.decoder_model_name_or_path or getattr(config, "is_decoder", None) is False:
        require_auto_class(config, AutoModel, TASK, path)  # the encoder
        decoder_path = model_args.decoder_model_name_or_path or path
        decoder_config = config if decoder_path == path else load_config(model_args, path=decoder_path)
        require_auto_class(decoder_config, AutoModelForCausalLM, TASK, decoder_path)
        decoder_tokenizer = tokenizer if decoder_path == path else load_tokenizer(model_args, decoder_path)
        # from_encoder_decoder_pretrained gives the decoder is_decoder=True and cross-attention (new weights).
        model = EncoderDecoderModel.from_encoder_decoder_pretrained(path, decoder_path)
        return model, tokenizer, decoder_tokenizer, "encoder-decoder"
    require_auto_class(config, AutoModelForCausalLM, TASK, path)
    model = AutoModelForCausalLM.from_pretrained(path, config=config, **model_args.hub_kwargs())
    if hasattr(model, "set_vocabulary_characters"):
        # ELMo reads words through their characters: the word → characters table lets it take (and generate) ids.
        model.set_vocabulary_characters(tokenizer)
    if tokenizer.eos_token_id is None or tokenizer.pad_token_id is None:
        raise ValueError(f"{path}: the tokenizer needs an eos token (the source/target separator) and a pad token")
    return model, tokenizer, tokenizer, "causal"


def set_prompt_template(tokenizer) -> None:
    """Make the tokenizer end every text with eos (``tokenizer(source)`` is ``source <eos>``, and
    ``tokenizer(source, target)`` the training sequence ``source <eos> target <eos>``), so the saved folder's
    ``pipeline("text-generation")`` builds the prompt the model was fine-tuned to continue. The recipe itself encodes
    with ``add_special_tokens=False``."""
    if hasattr(tokenizer, "mark_sentence_start"):
        # ELMo's tokenizers: ``source </S>`` instead of their default ``<S> source </S>``, a marked sentence, whose
        # ``</S>`` its causal LM's generate() drops to continue the words (the fast one rebuilds its template).
        tokenizer.mark_sentence_start = False
        return
    from tokenizers import processors

    eos = tokenizer.eos_token
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A {eos} $B:1 {eos}:1", special_tokens=[(eos, tokenizer.eos_token_id)])


def encode_encoder_decoder(examples, tokenizer, decoder_tokenizer, end_id, max_source, max_target):
    encoding = tokenizer(examples["source"], truncation=True, max_length=max_source)
    encoding.pop("token_type_ids", None)  # one segment; EncoderDecoderModel passes only what it is given
    if "target" in examples:
        targets = decoder_tokenizer(examples["target"], add_special_tokens=False, truncation=True,
                                    max_length=max_target - 1)["input_ids"]
        encoding["labels"] = [t + [end_id] for t in targets]  # the decoder start token is prepended by the shift
    return encoding


def encode_causal(examples, tokenizer, max_source, max_target, with_prompt):
    """``source <eos> target <eos>`` with labels on the target part only (-100 on the source and the separator);
    ``prompt_input_ids`` = ``source <eos>`` for generation."""
    eos = tokenizer.eos_token_id
    sources = tokenizer(examples["source"], add_special_tokens=False, truncation=True,
                        max_length=max_source)["input_ids"]
    if "target" not in examples:  # test data without references: the prompt is all there is
        return {"input_ids": [s + [eos] for s in sources], "prompt_input_ids": [s + [eos] for s in sources]}
    targets = tokenizer(examples["target"], add_special_tokens=False, truncation=True,
                        max_length=max_target - 1)["input_ids"]
    batch = {"input_ids": [], "labels": []}
    for source, target in zip(sources, targets):
        prompt = source + [eos]
        batch["input_ids"].append(prompt + target + [eos])
        # labels follow transformers' causal-LM convention (equal to input_ids, shifted inside the model).
        batch["labels"].append([-100] * len(prompt) + target + [eos])
    if with_prompt:
        batch["prompt_input_ids"] = [s + [eos] for s in sources]
    return batch


def main(argv=None) -> dict:
    """Run the recipe on a command line (default ``sys.argv[1:]``); returns the metrics of ``all_results.json``.

    >>> main(["--model_name_or_path", "out/gpt", "--train_file", "multi30k/train", "--source_lang", "de",
    ...       "--target_lang", "en", "--do_train", "--output_dir", "ft"])  # doctest: +SKIP
    """
    return run(*parse_arguments(argv, Seq2SeqTrainingArguments))


def special_ids_and_lengths(model, kind, tokenizer, decoder_tokenizer, max_source, max_target):
    """(the decoder's special ids, set in the model's config for an encoder-decoder; the source and target lengths,
    cut to what the model's positions hold). A causal LM's tokenizer is made to end every text with eos
    (``set_prompt_template``)."""
    if kind == "encoder-decoder":
        special = decoder_special_ids(decoder_tokenizer)
        for key, value in special.items():
            setattr(model.config, key, value)
        max_source = min(max_source, getattr(model.config.encoder, "max_position_embeddings", max_source))
        max_target = min(max_target, getattr(model.config.decoder, "max_position_embeddings", max_target + 1) - 1)
        return special, max_source, max_target
    special = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
               "pad_token_id": tokenizer.pad_token_id}
    context = getattr(model.config, "max_position_embeddings", None)
    if context is not None:
        # prompt (source + separator) + target + eos must fit the context.
        max_target = min(max_target, context // 2)
        max_source = min(max_source, context - max_target - 1)
    if tokenizer.is_fast or hasattr(tokenizer, "mark_sentence_start"):  # (ELMo's Python tokenizer too)
        set_prompt_template(tokenizer)
    return special, max_source, max_target


def grouped_splits(splits: dict[str, Split]) -> tuple[dict[str, Split], dict[str, list]]:
    """The splits with each evaluated source once, its first reference as target; and per evaluated split the
    references of every source (``group_references``). Training keeps every row."""
    grouped, references = {}, {}
    for name, split in splits.items():
        if name == "train":
            grouped[name] = split
            continue
        sources, references[name] = group_references(split.dataset)
        first_target = [refs[0] for refs in references[name]] if references[name] else None
        columns = {"source": sources, **({"target": first_target} if first_target else {})}
        grouped[name] = Split(split.dataset.from_dict(columns), split.source)
    return grouped, references


def run(model_args, data_args, training_args, callbacks=None) -> dict:
    """The recipe on parsed arguments (``ModelArguments``, ``DataTrainingArguments``, ``Seq2SeqTrainingArguments``);
    ``callbacks`` are extra ``TrainerCallback``s."""
    training.start(training_args)
    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    splits = load_splits(TASK, data_args, training_args)
    if "train" in splits and "target" not in splits["train"].dataset.column_names:
        raise ValueError(f"{splits['train'].source}: the training data has no targets")
    config = load_config(model_args)
    model, tokenizer, decoder_tokenizer, kind = load_generation_model(model_args, config)
    training.freeze_base_model(model, model_args.freeze_base)
    special, max_source, max_target = special_ids_and_lengths(model, kind, tokenizer, decoder_tokenizer,
                                                              data_args.max_source_length, data_args.max_target_length)
    # Neither the unknown-word token nor padding is ever generated: with a word-level vocabulary (NNLM, word2vec,
    # ELMo's softmax) <unk> is often the likeliest next token (every out-of-vocabulary name maps to it).
    model.generation_config = generation_config_for(
        decoder_tokenizer, special, max_new_tokens=max_target, num_beams=training_args.generation_num_beams or 1,
        do_sample=False)
    logger.info("%s (%s) as %s for generation", model_args.model_name_or_path, family_of(config), kind)

    grouped, references = grouped_splits(splits)
    if kind == "encoder-decoder":
        encoded = training.encode_splits(grouped, encode_encoder_decoder, dict(
            tokenizer=tokenizer, decoder_tokenizer=decoder_tokenizer, end_id=special["eos_token_id"],
            max_source=max_source, max_target=max_target), data_args)
        # No model: EncoderDecoderModel makes decoder_input_ids from the labels itself (and warns when given them).
        collator, trainer_class = DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100), GenerationTrainer
    else:
        encoded = {}
        for name, split in grouped.items():  # the evaluated splits carry the prompts that generation continues
            encoded |= training.encode_splits({name: split}, encode_causal, dict(
                tokenizer=tokenizer, max_source=max_source, max_target=max_target, with_prompt=name != "train"),
                data_args)
        collator, trainer_class = DataCollatorForCausalGeneration(tokenizer.pad_token_id), CausalLMGenerationTrainer
        # The prompt columns are not arguments of the model's forward: keep them for prediction_step.
        training_args.remove_unused_columns = False

    def metrics_for(split):
        refs = references.get(split)
        if not training_args.predict_with_generate or not refs:
            return None
        return make_compute_metrics(decoder_tokenizer, refs)

    card = training.card_info(
        TASK, model_args, data_args, config, splits, "AutoModelForSeq2SeqLM" if kind == "encoder-decoder"
        else "AutoModelForCausalLM", model=kind, max_source_length=max_source, max_target_length=max_target,
        num_beams=model.generation_config.num_beams, freeze_base=model_args.freeze_base)
    if model_args.decoder_model_name_or_path:
        card["base_model"] += f" + {model_args.decoder_model_name_or_path}"
    trainer = training.make_trainer(trainer_class, model, tokenizer, training_args, encoded, collator, card,
                                    compute_metrics=metrics_for("validation"), callbacks=callbacks)

    def write_predictions(trainer, test_dataset):
        trainer.compute_metrics = metrics_for("test")
        output = trainer.predict(test_dataset, metric_key_prefix="predict")
        if training_args.predict_with_generate and trainer.is_world_process_zero():
            with open(os.path.join(training_args.output_dir, "generated_predictions.txt"), "w",
                      encoding="utf-8") as f:
                f.writelines(" ".join(text.split()) + "\n"
                             for text in decode(decoder_tokenizer, logits_of(output.predictions)))
        elif not training_args.predict_with_generate:
            logger.warning("--do_predict without --predict_with_generate: loss only, no generated_predictions.txt")
        return output.metrics

    extra_tokenizers = [("decoder_tokenizer", decoder_tokenizer)] if decoder_tokenizer is not tokenizer else []
    return training.train_evaluate_predict(trainer, encoded, write_predictions, save_tokenizers=extra_tokenizers)
