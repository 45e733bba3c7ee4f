"""BERT's pre-training objective: masked LM + next sentence prediction on document-structured text."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..data import DataCollatorForCausalLM, DataCollatorForMaskedLM, next_sentence_examples_from_ids
from ..data.examples import named_languages
from ..data.next_sentence import looks_like_wikitext, split_line
from ..models import LineageBertConfig
from ..models.modeling_lineage_gpt import shift_labels
from ..tokenization import train_wordpiece_tokenizer
from . import PretrainingObjective


class BertObjective(PretrainingObjective):
    """Devlin et al. (2018), appendix A.2: Adam with lr 1e-4, β = (0.9, 0.999), L2 weight decay 0.01, warmup over the
    first 10,000 of 1M steps (1 %) then linear decay; sequences of 128 tokens for most of training. Google's code
    uses ε = 1e-6 and clips the global gradient norm at 1.0.

    Input text is BERT's format: one sentence (or paragraph) per line, blank lines between documents.

    Multilingual BERT: given language-tagged files (``--train-file en=en.txt --train-file de=de.txt``), one WordPiece
    vocabulary is trained on text in which each language's words are drawn with probability ∝ q^α
    (``--language-alpha``, 0.7) and the pre-training sequences are drawn the same way (``hf_lineage.data.languages``);
    a document never spans two languages.

    Its ablations (Devlin et al. 2018, section 5.1), each on the same examples: ``--no-next-sentence-prediction``
    drops the NSP loss and label and keeps the [CLS] A [SEP] B [SEP] pairs ("No NSP"); ``--set is_decoder=true``
    (with no NSP) trains the same architecture as a left-to-right LM, ``LineageBertForCausalLM``, predicting every
    next token of those sequences ("LTR & No NSP"): only the direction differs. ``--mlm-probability`` and
    ``--mask-split`` set the masking (15 %; 80 % [MASK], 10 % random, 10 % unchanged).
    """

    family = "bert"
    model_class_name = "LineageBertForPreTraining"
    defaults = dict(
        PretrainingObjective.defaults, learning_rate=1e-4, weight_decay=0.01, adam_epsilon=1e-6,
        warmup_ratio=0.01, lr_scheduler="linear", max_grad_norm=1.0, max_seq_length=128, vocab_size=30522,
        next_sentence_prediction=True, mlm_probability=0.15, mask_split=(0.8, 0.1, 0.1),
    )
    objective_options = ("next_sentence_prediction", "mlm_probability", "mask_split")
    perplexity_of = "mlm_loss"
    multilingual = True
    # The vocabulary projection only at the ~15 % labelled positions: prediction_logits (num_masked, V).
    forward_kwargs = {"sparse_logits": True}

    def __init__(self, args):
        super().__init__(args)
        # BERT's architecture as a left-to-right LM (``--set is_decoder=true``): the causal-LM head and loss, every
        # position's logits.
        self.left_to_right = bool(args.overrides.get("is_decoder"))
        if self.left_to_right:
            self.model_class_name, self.forward_kwargs, self.perplexity_of = "LineageBertForCausalLM", {}, "lm_loss"

    def train_tokenizer(self, files, texts):
        if named_languages(self.args.train_file):
            files, texts = None, self._smoothed_text()
        return train_wordpiece_tokenizer(files=files, iterator=texts, vocab_size=self.args.vocab_size,
                                         model_max_length=self.args.max_seq_length)

    def _smoothed_text(self):
        """mBERT's vocabulary sample: each language's words weighted by q^α; the words per language (as given) go in
        the report the model card shows."""
        from ..data.languages import read_language_lines, smoothed_text

        lines = read_language_lines(named_languages(self.args.train_file))
        texts, report = smoothed_text(lines, self.args.language_alpha, self.args.seed)
        self.language_report = {language: {"words": entry["words"], "share": entry["share"],
                                           "probability": entry["probability"],
                                           "vocabulary_sample_words": entry["words_drawn"]}
                                for language, entry in report.items()}
        return texts

    def build_config(self, size, tokenizer, overrides):
        config = LineageBertConfig.from_named(
            size, **{"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, **overrides,
                     "next_sentence_prediction": self.args.next_sentence_prediction}
        )
        if self.args.max_seq_length > config.max_position_embeddings:
            raise ValueError(
                f"--max-seq-length {self.args.max_seq_length} exceeds the config's max_position_embeddings "
                f"{config.max_position_embeddings}"
            )
        return config

    def _tokenized(self, dataset, tokenizer, split, first_lines):
        """Each line as (does it start a document?, its sentences as token ids); ``datasets.map``, so cached and
        parallel for files, lazy for streams. A multilingual corpus's format (WikiText or BERT's) is told apart per
        language: ``first_lines`` maps each language to its first lines."""
        if isinstance(first_lines, dict):
            wikitext = {language: looks_like_wikitext(lines) for language, lines in first_lines.items()}
        else:
            wikitext = {None: looks_like_wikitext(first_lines)}

        def tokenize(batch):
            languages = batch.get("language") or [None] * len(batch["text"])
            starts, sentences = zip(*(split_line(line, wikitext[language])
                                      for line, language in zip(batch["text"], languages)))
            flat = [s for line in sentences for s in line]
            ids = iter(tokenizer(flat, add_special_tokens=False, verbose=False)["input_ids"] if flat else [])
            return {"starts_document": list(starts), "sentences": [[next(ids) for _ in line] for line in sentences]}

        kwargs = {} if self.args.streaming else dict(num_proc=self.args.preprocessing_num_workers,
                                                     desc=f"Tokenizing {split}")
        return dataset.map(tokenize, batched=True, remove_columns=["text"], **kwargs)

    @staticmethod
    def _documents(rows, with_language=False):
        """Group tokenized lines into documents (lists of sentences), yielding each when the next one starts (or the
        language changes); with ``with_language``, (language, document) pairs."""
        document, language = [], None
        for row in rows:
            if (row["starts_document"] or row.get("language") != language) and document:
                yield (language, document) if with_language else document
                document = []
            language = row.get("language")
            document.extend(s for s in row["sentences"] if s)
        if document:
            yield (language, document) if with_language else document

    def _examples(self, documents, seed):
        examples = next_sentence_examples_from_ids(
            documents, self.tokenizer_ids[0], self.tokenizer_ids[1], max_seq_length=self.args.max_seq_length,
            seed=seed,
        )
        if not self.args.next_sentence_prediction:  # the same pairs, drawn the same way; no label, so no NSP loss
            for example in examples:
                del example["next_sentence_label"]
        return examples

    def prepare(self, dataset, tokenizer, split):
        self.tokenizer_ids = (tokenizer.cls_token_id, tokenizer.sep_token_id)
        import datasets

        if "language" in dataset.column_names:
            first_lines = {language: dataset.filter(lambda row, lang=language: row["language"] == lang)[:1000]["text"]
                           for language in dict.fromkeys(dataset["language"])}
        else:
            first_lines = dataset[:1000]["text"]
        tokenized = self._tokenized(dataset, tokenizer, split, first_lines)

        if split == "train" and "language" in tokenized.column_names:
            return datasets.Dataset.from_list(self._smoothed_examples(tokenized))
        documents = list(self._documents(tokenized))
        if not documents:
            raise ValueError(f"The {split} text has no tokens after tokenization")
        return datasets.Dataset.from_list(self._examples(documents, self.args.seed + (split != "train")))

    def _smoothed_examples(self, tokenized):
        """A multilingual corpus's sequences: each language's NSP examples made from its own documents, then drawn
        so that language i makes up p_i ∝ q_i^α of them (q_i: its share of all sequences)."""
        by_language = {}
        for language, document in self._documents(tokenized, with_language=True):
            by_language.setdefault(language, []).append(document)
        examples = {}
        for i, (language, documents) in enumerate(by_language.items()):
            try:
                examples[language] = self._examples(documents, self.args.seed + i)
            except ValueError as error:  # e.g. one document: NSP draws its random segments from another
                raise ValueError(f"the {language} training text: {error} Separate its documents with blank lines"
                                 ) from None
            if not examples[language]:
                raise ValueError(f"the {language} training text makes no pre-training sequence")
        if self.language_report is None:  # the tokenizer was given or resumed, not trained here: count the words
            self._smoothed_text()
        from ..data.languages import smoothed_draw

        drawn, report = smoothed_draw(examples, self.args.language_alpha, self.args.seed)
        for language, entry in report.items():
            self.language_report.setdefault(language, {}).update(
                sequences=entry["items"], sequence_share=entry["share"], sequences_drawn=entry["drawn"],
                sequence_probability=entry["probability"])
        return [examples[language][int(i)] for language, indices in drawn.items() for i in indices]

    def prepare_stream(self, dataset, tokenizer, split):
        """For corpora streamed from disk or the Hub: NSP examples are built from buffers of
        ``stream_buffer_documents`` consecutive documents (random segments B come from the same buffer)."""
        self.tokenizer_ids = (tokenizer.cls_token_id, tokenizer.sep_token_id)
        first_lines = [row["text"] for row in dataset.take(1000)]
        if not any(split_line(line, looks_like_wikitext(first_lines))[1] for line in first_lines):
            raise ValueError(f"The {split} text has no tokens after tokenization (first 1000 lines)")
        tokenized = self._tokenized(dataset, tokenizer, split, first_lines)
        buffer_size = self.args.stream_buffer_documents

        def examples(epoch):
            buffer, chunk = [], 0
            for document in self._documents(tokenized):
                buffer.append(document)
                if len(buffer) == buffer_size:
                    yield from self._examples(buffer, self.args.seed + 7919 * (epoch * 1_000_003 + chunk))
                    buffer, chunk = [], chunk + 1
            if len(buffer) >= 2:
                yield from self._examples(buffer, self.args.seed + 7919 * (epoch * 1_000_003 + chunk))

        return examples

    def collator(self, tokenizer):
        if self.left_to_right:
            return LeftToRightCollator(pad_token_id=tokenizer.pad_token_id)
        mask, random, _ = self.args.mask_split
        return DataCollatorForMaskedLM(tokenizer, mlm_probability=self.args.mlm_probability, mask_replace_prob=mask,
                                       random_replace_prob=random)

    def objective_record(self):
        if self.left_to_right:
            return {"objective": "left-to-right LM", "next_sentence_prediction": False,
                    "description": "left-to-right LM (BERT's architecture with a causal mask, is_decoder): every "
                                   "next token of the [CLS] A [SEP] B [SEP] sequences, no next-sentence prediction"}
        mask, random, kept = self.args.mask_split
        nsp = self.args.next_sentence_prediction
        return {"objective": "masked LM" + (" + next-sentence prediction" if nsp else ""),
                "next_sentence_prediction": nsp, "mlm_probability": self.args.mlm_probability,
                "mask_split": list(self.args.mask_split),
                "description": f"masked LM ({percent(self.args.mlm_probability)} of tokens predicted: "
                               f"{percent(mask)} [MASK], {percent(random)} a random token, {percent(kept)} unchanged)"
                               + (" + next-sentence prediction" if nsp else ", no next-sentence prediction (the same "
                                  "[CLS] A [SEP] B [SEP] pairs, no NSP loss)")}

    def loss_counts(self, batch):
        if self.left_to_right:  # every position but a row's last predicts the next token
            return {"num_items_in_batch": (shift_labels(batch["labels"]) != -100).sum()}
        return {
            "num_items_in_batch": (batch["labels"] != -100).sum(),
            # torch.full, not torch.tensor: a fill on the device, where a copy from the host would wait for the GPU
            "num_sequences_in_batch": torch.full((), batch["input_ids"].shape[0], device=batch["input_ids"].device),
        }

    def eval_sums(self, outputs, batch):
        if self.left_to_right:
            return _left_to_right_sums(outputs, batch)
        labels = batch["labels"]
        masked = labels != -100
        example = masked.nonzero()[:, 0]  # which example each (sparse) prediction_logits row belongs to
        B = labels.shape[0]
        token_loss = F.cross_entropy(outputs.prediction_logits.float(), labels[masked], reduction="none")
        token_correct = (outputs.prediction_logits.argmax(-1) == labels[masked]).float()
        per_example = lambda values: torch.zeros(B, device=labels.device).index_add_(0, example, values)  # noqa: E731
        n_masked = masked.sum(1).float()
        sums = {"mlm_loss": (per_example(token_loss), n_masked), "mlm_accuracy": (per_example(token_correct), n_masked)}
        if "next_sentence_label" not in batch:  # pre-trained without NSP: its head is untrained, nothing to report
            return sums
        nsp_logits = outputs.seq_relationship_logits.float()
        nsp_labels = batch["next_sentence_label"]
        ones = torch.ones(B, device=labels.device)
        return {
            **sums,
            "nsp_loss": (F.cross_entropy(nsp_logits, nsp_labels, reduction="none"), ones),
            "nsp_accuracy": ((nsp_logits.argmax(-1) == nsp_labels).float(), ones),
        }


def percent(share: float) -> str:
    return f"{share * 100:.3g} %"


def _left_to_right_sums(outputs, batch):
    """The left-to-right LM's next-token loss and accuracy per example (as GPT's)."""
    labels = shift_labels(batch["labels"])  # (B, T)
    logits = outputs.logits.float()  # (B, T, V)
    token_loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100, reduction="none")
    predicted = labels != -100
    count = predicted.sum(1).float()
    correct = ((logits.argmax(-1) == labels) & predicted).float()
    return {"lm_loss": (token_loss.sum(1), count), "lm_accuracy": (correct.sum(1), count)}


@dataclass
class LeftToRightCollator(DataCollatorForCausalLM):
    """The causal-LM batch (``labels`` are the inputs, -100 on padding) of BERT's [CLS] A [SEP] B [SEP] examples, with
    their ``token_type_ids`` (the segments), so that the left-to-right ablation reads the same input as BERT."""

    def __call__(self, examples):
        batch = super().__call__(examples)
        segments = torch.zeros_like(batch["input_ids"])
        for i, example in enumerate(examples):
            segments[i, : len(example["token_type_ids"])] = torch.as_tensor(example["token_type_ids"])
        return {**batch, "token_type_ids": segments}
