"""Pre-training options: what ``--config tiny`` makes small, and that the lineage experiment sets for itself every
size the tiny defaults touch."""

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

import hf_lineage.pretraining.dispatch as dispatch
from hf_lineage.pretraining.cli import main
from hf_lineage.pretraining.arguments import given_options
from hf_lineage.lineage import pretraining
from hf_lineage.lineage.settings import SCALES, LineageArguments, default_families
from hf_lineage.objectives import objective_class
from hf_lineage.registry import FAMILIES, family_classes
from hf_lineage.pretraining.arguments import OBJECTIVE_OPTIONS, PretrainArguments, resolve_defaults


PAPER_CONFIG = {"bert": "base", "gpt": "gpt", "elmo": "original", "nnlm": "mlp1"}


def resolved(family, config="tiny", **given):
    args = PretrainArguments(family=family, output_dir="unused", config=config, **given)
    return resolve_defaults(args, objective_class(family)(args))


# The families with their own CPU trainer (word2vec, svd, glove): their "tiny" reads whole sentences and keeps
# min_count's vocabulary.
@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f].cpu_trainer is None])
def test_tiny_is_small_everywhere_and_the_named_sizes_keep_the_papers(family):
    tiny = resolved(family)
    # A smoke run on a laptop: a few sequences of a few dozen tokens per step, a small vocabulary.
    assert tiny.per_device_batch_size * tiny.max_seq_length <= 8 * 64 and tiny.vocab_size <= 8000
    paper = resolved(family, config=PAPER_CONFIG[family])
    assert paper.per_device_batch_size * paper.max_seq_length > tiny.per_device_batch_size * tiny.max_seq_length
    # What is given on the command line still wins.
    assert resolved(family, per_device_batch_size=3, max_seq_length=17).per_device_batch_size == 3


def test_tiny_gpt_warms_up_over_a_fraction_of_the_run_not_the_papers_2000_steps():
    tiny, paper = resolved("gpt"), resolved("gpt", config="gpt")
    assert (tiny.warmup_steps, tiny.warmup_ratio) == (None, 0.05)
    assert paper.warmup_steps == 2000 and (paper.per_device_batch_size, paper.max_seq_length) == (64, 512)
    assert resolved("gpt", warmup_steps=10).warmup_steps == 10
    assert resolved("elmo", config="small").per_device_batch_size == 128


def lineage_runs(scale, monkeypatch):
    """The PretrainArguments the lineage experiment hands the engine for every family, defaults resolved."""
    runs = {}

    class Captured(Exception):
        pass

    def capture(run):
        runs[run.family] = asdict(resolve_defaults(run, objective_class(run.family)(run)))
        raise Captured

    monkeypatch.setattr(dispatch, "pretrain", capture)
    corpus = {"train": ["train.txt"], "validation": ["valid.txt"], "train_words": 600_000}
    for family in default_families():
        with pytest.raises(Captured):
            pretraining.pretrain_family(family, SCALES[scale], LineageArguments(scale=scale), corpus, Path("unused"))
    return runs


@pytest.mark.parametrize("scale", ["tiny", "small"])
def test_the_lineage_sets_what_the_tiny_defaults_touch_so_its_runs_do_not_change(scale, monkeypatch):
    with_tiny_defaults = lineage_runs(scale, monkeypatch)
    for family in FAMILIES:
        monkeypatch.setattr(objective_class(family), "tiny_defaults", {})
    assert lineage_runs(scale, monkeypatch) == with_tiny_defaults
    assert with_tiny_defaults["gpt"]["per_device_batch_size"] == SCALES[scale].batch_size


# --------------------------------------------------------------------------- word2vec: every option honoured or refused

SAMPLES = Path(__file__).resolve().parents[1] / "hf_lineage" / "samples" / "lineage"
# What word2vec's CPU trainer (``--backend cpu``, and ``auto`` on a CPU machine) does with each option it uses.
CPU_TRAINER_USES = {
    "family", "output_dir", "config", "overrides", "train_file", "tokenizer", "vocab_size", "seed", "num_epochs",
    "overwrite_output_dir", "backend",
    # evaluation after training, as the engine reports it
    "validation_file", "per_device_eval_batch_size", "max_eval_batches", "preprocessing_num_workers",
    # the CPU trainer logs through `logging` and writes no tracker logs or checkpoints: nothing to set
    "report_to", "log_every", "keep_checkpoints",
    # float32 only: a note says so (the lineage's bf16 scales run word2vec there on a CPU machine)
    "mixed_precision",
    # the saved folder is pushed after either backend (engine.push_if_asked, called by pretraining.dispatch)
    "push_to_hub", "hub_model_id",
    # with --dataset-name only, which the CPU trainer refuses
    "dataset_config", "text_column",
}


def test_every_pretrain_option_is_either_used_by_the_word2vec_cpu_trainer_or_sends_the_run_to_the_engine():
    from dataclasses import fields

    word2vec = objective_class("word2vec")
    names = {f.name for f in fields(PretrainArguments)}
    # A new option must be decided on here: used by the CPU trainer, or one that makes --backend auto take the
    # engine (and --backend cpu refuse it), or one neither path uses (refused: plain SGD has no weight decay).
    # BERT's objective switches (OBJECTIVE_OPTIONS) are refused for every other family.
    assert names == (CPU_TRAINER_USES | set(word2vec.cpu_backend_ignores) | set(word2vec.unused_options)
                     | set(OBJECTIVE_OPTIONS))
    assert not CPU_TRAINER_USES & set(word2vec.cpu_backend_ignores)


@pytest.fixture(scope="module")
def w2v_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("w2v")
    lines = (SAMPLES / "corpus.train.txt").read_text(encoding="utf-8").splitlines()
    (root / "train.txt").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    (root / "valid.txt").write_text("\n".join(lines[300:340]) + "\n", encoding="utf-8")
    return root


def w2v(corpus, out, *extra):
    return main(["word2vec", "--config", "tiny", "--train-file", str(corpus / "train.txt"), "--output-dir",
                        str(out),
                        "--report-to", "none", "--set", "min_count=2", *extra])


def test_word2vec_max_steps_and_validation_send_auto_to_the_engine_which_honours_them(w2v_corpus, tmp_path):
    out = tmp_path / "steps"
    assert w2v(w2v_corpus, out, "--max-steps", "2", "--validation-file", str(w2v_corpus / "valid.txt"),
               "--max-seq-length", "5", "--checkpoint-every", "1") == 0
    results = json.loads((out / "train_results.json").read_text())
    assert results["step"] == 2 and results["eval"]["loss"] > 0  # the engine's numbers
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_00000001", "step_00000002"]


def test_word2vec_cpu_trainer_evaluates_the_validation_file(w2v_corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # auto: the CPU trainer, as on a laptop
    out = tmp_path / "cpu"
    assert w2v(w2v_corpus, out, "--validation-file", str(w2v_corpus / "valid.txt"), "--mixed-precision", "bf16") == 0
    results = json.loads((out / "train_results.json").read_text())
    assert results["backend"] == "cpu" and 0 < results["eval"]["loss"] < 10
    assert "--mixed-precision bf16 does not apply to word2vec's CPU trainer" in capsys.readouterr().err


def test_word2vec_streams(w2v_corpus, tmp_path):
    out = tmp_path / "stream"
    assert w2v(w2v_corpus, out, "--streaming", "--max-steps", "3", "--per-device-batch-size", "4") == 0
    results = json.loads((out / "train_results.json").read_text())
    assert results["step"] == 3 and results["examples_seen"] == 12
    assert (out / "model.safetensors").is_file()


def test_word2vec_sentences_are_cut_at_max_seq_length(w2v_corpus):
    import datasets

    from hf_lineage.tokenization import train_wordlevel_tokenizer

    args = PretrainArguments(family="word2vec", output_dir="unused", max_seq_length=4)
    objective = objective_class("word2vec")(resolve_defaults(args, objective_class("word2vec")(args)))
    tokenizer = train_wordlevel_tokenizer(iterator=["a b c d e f g h i j"], min_count=1)
    examples = objective.prepare(datasets.Dataset.from_dict({"text": ["a b c d e f g h i j"]}), tokenizer, "train")
    assert [len(e) for e in examples["input_ids"]] == [4, 4, 2]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--backend", "cpu", "--max-steps", "2"], "--backend cpu (word2vec's own trainer) does not use --max-steps"),
        (["--backend", "cpu", "--learning-rate", "0.1", "--checkpoint-every", "5"],
         "does not use --checkpoint-every, --learning-rate"),
        (["--weight-decay", "0.01"], "word2vec pre-training does not use --weight-decay"),
        (["--backend", "engine", "--adam-beta1", "0.8"], "does not use --adam-beta1"),
        (["--num-epochs", "1.5"], "--num-epochs must be a whole number, got 1.5"),
        (["--num-epochs", "2", "--set", "epochs=3"], "--num-epochs 2 and --set epochs=3 disagree"),
    ],
)
def test_word2vec_refuses_what_it_would_ignore_before_writing(w2v_corpus, tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    assert w2v(w2v_corpus, out, *extra) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("scale", ["tiny", "small"])
def test_the_lineage_still_runs_word2vec_on_its_cpu_trainer_on_a_cpu_machine(scale, monkeypatch):
    chosen = []

    class Captured(Exception):
        pass

    def capture(run):
        objective = objective_class(run.family)(run)
        chosen.append(dispatch.use_cpu_backend(run, objective, given_options(run)))
        raise Captured

    monkeypatch.setattr(dispatch, "pretrain", capture)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    corpus = {"train": ["train.txt"], "validation": ["valid.txt"], "train_words": 600_000}
    with pytest.raises(Captured):
        pretraining.pretrain_family("word2vec", SCALES[scale], LineageArguments(scale=scale), corpus, Path("unused"))
    assert chosen == [True]


# --------------------------------------------------------------------------- the backend, pretrain()'s first step


class EngineStarted(Exception):
    pass


@pytest.fixture
def backends(tmp_path, monkeypatch):
    """pretrain() with both trainers replaced by recorders: the CPU trainers (``hf_lineage.word_vector_trainers``)
    note what they were given, the engine stops where it would build its Accelerator. Returns a function of the
    arguments that runs pretrain() and returns which one ran, and the list of (family, the trainer's own arguments)
    the CPU trainers got."""
    from hf_lineage.engine import loop
    from hf_lineage.word_vector_trainers import svd, word2vec

    corpus = tmp_path / "train.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 5, encoding="utf-8")  # min_count 5
    trained = []
    for family, module, name in (("word2vec", word2vec, "pretrain_word2vec"), ("svd", svd, "pretrain_svd")):
        monkeypatch.setattr(module, name, lambda args, family=family: trained.append((family, args)) or "cpu")

    def start_accelerator(args):
        raise EngineStarted

    monkeypatch.setattr(loop, "start_accelerator", start_accelerator)  # run_engine imports it from there
    monkeypatch.delenv("WORLD_SIZE", raising=False)

    def run(family, gpu=False, **given):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
        args = PretrainArguments(family=family, output_dir=str(tmp_path / "out"), train_file=[str(corpus)], **given)
        try:
            return dispatch.pretrain(args)
        except EngineStarted:
            return "engine"

    return run, trained


@pytest.mark.parametrize("family, gpu, given, backend", [
    ("word2vec", False, {}, "cpu"),  # auto on a laptop: the CPU trainer
    ("word2vec", True, {}, "engine"),  # auto with a GPU visible: the engine
    ("word2vec", False, {"max_steps": 2}, "engine"),  # auto, an option only the engine honours
    ("word2vec", False, {"backend": "engine"}, "engine"),
    ("word2vec", True, {"backend": "cpu"}, "cpu"),  # asked for, even with a GPU
    ("svd", True, {}, "cpu"),  # auto: svd has no engine path at all
    ("svd", False, {"backend": "cpu"}, "cpu"),
    ("gpt", False, {}, "engine"),  # no CPU trainer: always the engine
])
def test_pretrain_picks_the_backend_as_documented(backends, family, gpu, given, backend):
    run, trained = backends
    assert run(family, gpu, **given) == backend
    assert [f for f, _ in trained] == ([family] if backend == "cpu" else [])


def test_the_backend_is_chosen_from_the_arguments_as_given_before_they_are_settled(backends, monkeypatch):
    """pretrain()'s first step: the choice reads the options as given (``--learning-rate`` given or not), not after
    the family's defaults have filled them in; only then are they settled and the chosen trainer called with its own
    arguments, built from the settled ones. Moving the choice back inside ``settle_arguments`` (or after it) fails
    here."""
    from hf_lineage.models import LineageWord2VecConfig
    from hf_lineage.word_vector_trainers.word2vec import Word2VecTrainingArguments

    run, trained = backends
    choice = dispatch.use_cpu_backend
    seen = []
    monkeypatch.setattr(dispatch, "use_cpu_backend",
                        lambda args, objective, given: seen.append(args.learning_rate) or choice(args, objective, given))
    assert run("word2vec", seed=7) == "cpu"
    assert seen == [None]  # unsettled: no default filled in yet
    (family, args), = trained
    # Typed, and from the settled arguments: --config's default (the paper's size) filled in before it was read.
    assert isinstance(args, Word2VecTrainingArguments) and args.seed == 7 and args.validation is None
    assert args.config_fields == LineageWord2VecConfig.named_sizes["mikolov2013"]


@pytest.mark.parametrize("family, given, message", [
    ("svd", {"backend": "engine"}, "svd is not trained by the engine: use --backend cpu (or auto)"),
    ("gpt", {"backend": "cpu"}, "gpt has no CPU backend; use --backend engine"),
    ("word2vec", {"backend": "cpu", "max_steps": 2}, "--backend cpu (word2vec's own trainer) does not use --max-steps"),
    ("word2vec", {"backend": "gpu"}, "--backend must be one of auto, engine, cpu, got 'gpu'"),
])
def test_a_backend_the_arguments_rule_out_is_refused_before_either_trainer_starts(backends, tmp_path, family, given,
                                                                                  message):
    run, trained = backends
    with pytest.raises(dispatch.PretrainError, match=re.escape(message)):
        run(family, **given)
    assert trained == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_family_named_without_a_config_is_its_papers(family):
    """``hf-lineage pretrain FAMILY`` trains the paper's configuration (BERT-base, GPT, ELMo original, ...), as
    ``BertConfig()`` and gensim's ``Word2Vec()`` do; ``--config tiny`` is asked for, and only it makes the run small."""
    args = PretrainArguments(family=family, output_dir="unused")
    resolve_defaults(args, objective_class(family)(args))
    config_class, _ = family_classes(family)
    assert args.config == FAMILIES[family].paper_size != "tiny" and args.config in config_class.named_sizes
    objective = objective_class(family)
    assert all(getattr(args, k) == v for k, v in objective.defaults.items()), "the paper's defaults, not tiny's"


# --------------------------------------------------------------------------- BERT's objective switches (issue 45)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert_corpus")
    train, valid = root / "train.txt", root / "valid.txt"
    train.write_text((SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[:30_000], encoding="utf-8")
    valid.write_text((SAMPLES / "corpus.validation.txt").read_text(encoding="utf-8")[:15_000], encoding="utf-8")
    return {"train": str(train), "valid": str(valid)}


def bert_run(corpus, out, *extra, family="bert"):
    return main([family, "--config", "tiny", "--train-file", corpus["train"], "--validation-file", corpus["valid"],
                 "--vocab-size", "400", "--output-dir", str(out), "--report-to", "none", "--per-device-batch-size",
                 "4", "--max-steps", "3", *extra])


def test_the_objective_switches_parse_and_default_to_the_papers():
    from hf_lineage.pretraining.cli import build_parser

    given = vars(build_parser().parse_args(["bert", "--output-dir", "o", "--no-next-sentence-prediction",
                                            "--mlm-probability", "0.2", "--mask-split", "0.5,0.25,0.25"]))
    assert (given["next_sentence_prediction"], given["mlm_probability"], given["mask_split"]) == (False, 0.2,
                                                                                                   (0.5, 0.25, 0.25))
    unset = vars(build_parser().parse_args(["bert", "--output-dir", "o"]))
    assert [unset[name] for name in OBJECTIVE_OPTIONS] == [None, None, None]  # the family's: given_options sees none
    paper = resolved("bert")
    assert (paper.next_sentence_prediction, paper.mlm_probability, paper.mask_split) == (True, 0.15, (0.8, 0.1, 0.1))
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["bert", "--output-dir", "o", "--mask-split", "most,some,rest"])
    assert exit_.value.code == 2


@pytest.mark.parametrize("family, extra, message", [
    ("bert", ["--mask-split", "0.8,0.1,0.2"], "--mask-split takes three shares >= 0 that sum to 1"),
    ("bert", ["--mask-split", "0.8,0.2"], "--mask-split takes three shares"),
    ("bert", ["--mask-split", "1.1,-0.1,0"], "--mask-split takes three shares >= 0"),
    ("bert", ["--mlm-probability", "0"], "--mlm-probability must be in (0, 1)"),
    ("bert", ["--mlm-probability", "1.5"], "--mlm-probability must be in (0, 1)"),
    ("bert", ["--set", "is_decoder=true"], "add --no-next-sentence-prediction"),
    ("bert", ["--set", "is_decoder=true", "--no-next-sentence-prediction", "--mlm-probability", "0.2"],
     "nothing is masked, drop --mlm-probability"),
    ("bert", ["--set", "next_sentence_prediction=false"], "use --no-next-sentence-prediction"),
    ("gpt", ["--no-next-sentence-prediction"], "--no-next-sentence-prediction: BERT's pre-training objective"),
    ("elmo", ["--mask-split", "0.8,0.1,0.1", "--mlm-probability", "0.15"],
     "--mask-split, --mlm-probability: BERT's pre-training objective"),
])
def test_bad_objective_switches_and_other_families_exit_2_and_write_nothing(small_corpus, tmp_path, capsys, family,
                                                                            extra, message):
    out = tmp_path / "out"
    assert bert_run(small_corpus, out, *extra, family=family) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_without_nsp_the_model_the_record_and_the_card_say_so_and_no_nsp_loss_is_trained(small_corpus, tmp_path):
    out = tmp_path / "no_nsp"
    assert bert_run(small_corpus, out, "--no-next-sentence-prediction", "--mlm-probability", "0.2",
                    "--mask-split", "0.6,0.2,0.2") == 0
    config = json.loads((out / "config.json").read_text())
    assert config["next_sentence_prediction"] is False and config["architectures"] == ["LineageBertForPreTraining"]
    record = json.loads((out / "pretraining.json").read_text())["objective"]
    assert record["next_sentence_prediction"] is False and record["mlm_probability"] == 0.2
    assert record["mask_split"] == [0.6, 0.2, 0.2]
    assert "no next-sentence prediction" in (out / "README.md").read_text()
    assert "20 % of tokens" in (out / "README.md").read_text()
    evaluation = json.loads((out / "train_results.json").read_text())["eval"]
    assert "mlm_loss" in evaluation and "nsp_loss" not in evaluation  # no NSP labels, so no NSP term at all
    # The same command with NSP (the default) has the NSP numbers, and its card says it trained NSP.
    with_nsp = tmp_path / "nsp"
    assert bert_run(small_corpus, with_nsp) == 0
    assert "nsp_loss" in json.loads((with_nsp / "train_results.json").read_text())["eval"]
    assert "+ next-sentence prediction" in (with_nsp / "README.md").read_text()
    assert json.loads((with_nsp / "config.json").read_text()).get("next_sentence_prediction", True) is True


def test_bert_left_to_right_is_the_same_architecture_as_a_causal_lm_on_the_same_examples(small_corpus, tmp_path):
    out = tmp_path / "ltr"
    assert bert_run(small_corpus, out, "--no-next-sentence-prediction", "--set", "is_decoder=true") == 0
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LineageBertForCausalLM"] and config["is_decoder"] is True
    results = json.loads((out / "train_results.json").read_text())
    assert results["perplexity_of"] == "lm_loss" and "lm_perplexity" in results["eval"]
    assert "left-to-right LM" in (out / "README.md").read_text()


def test_a_run_recorded_before_the_switches_existed_resumes_as_the_papers_objective(tmp_path):
    from hf_lineage.engine.resume import RUN_FILE, run_identity
    from hf_lineage.pretraining.arguments import check_arguments

    train = tmp_path / "train.txt"
    train.write_text("a b c.\n\nd e f.\n")
    args = resolved("bert", train_file=[str(train)], resume_from="latest")
    args.output_dir = str(tmp_path / "out")
    (tmp_path / "out").mkdir()
    old = {k: v for k, v in run_identity(args).items() if k not in OBJECTIVE_OPTIONS}
    (tmp_path / "out" / RUN_FILE).write_text(json.dumps(old))
    check_arguments(args, objective_class("bert")(args))  # the paper's objective: the same run
    args.next_sentence_prediction = False
    with pytest.raises(dispatch.PretrainError, match="holds a different run"):
        check_arguments(args, objective_class("bert")(args))


def test_the_lineage_pretrains_berts_ablations_at_its_size_data_and_budget_with_one_ingredient_changed(monkeypatch):
    from hf_lineage.lineage.experiment import plan_cells
    from hf_lineage.lineage.settings import LineageError, check_arguments

    runs = {}

    class Captured(Exception):
        pass

    def capture(run):
        runs[run.output_dir] = asdict(resolve_defaults(run, objective_class(run.family)(run)))
        raise Captured

    monkeypatch.setattr(dispatch, "pretrain", capture)
    corpus = {"train": ["train.txt"], "validation": ["valid.txt"], "train_words": 600_000}
    families = ["bert", "bert-no-nsp", "bert-ltr"]
    args = LineageArguments(families=families, pretrain=True)
    assert check_arguments(args).name == "tiny"
    for family in families:
        with pytest.raises(Captured):
            pretraining.pretrain_family(family, SCALES["tiny"], args, corpus, Path(family))
    bert, no_nsp, ltr = (runs[str(Path(family) / "model")] for family in families)
    assert bert["family"] == no_nsp["family"] == ltr["family"] == "bert"
    assert (bert["next_sentence_prediction"], no_nsp["next_sentence_prediction"],
            ltr["next_sentence_prediction"]) == (True, False, False)
    assert (bert["overrides"], no_nsp["overrides"], ltr["overrides"]) == ({}, {}, {"is_decoder": True})
    same = lambda run: {k: v for k, v in run.items()  # noqa: E731
                        if k not in ("output_dir", "overrides", "next_sentence_prediction")}
    assert same(bert) == same(no_nsp) == same(ltr)  # the same size, data, budget (epochs of the corpus), seed
    assert bert["num_epochs"] == pytest.approx(1_850_000 / 600_000)
    # Fine-tuned like every family: the same cells for the three.
    cells = plan_cells(["labeling", "order_pairs"], families, ["frozen", "finetuned"], 1000, [100], ("labeling",))
    per_family = {family: sorted((t, v, n) for t, f, v, n in cells if f == family) for family in families}
    assert per_family["bert"] == per_family["bert-no-nsp"] == per_family["bert-ltr"] and per_family["bert"]
    # Nothing ships for them: without --pretrain (or their folders) the run is refused before it starts.
    with pytest.raises(LineageError, match="bert-no-nsp, bert-ltr: BERT's ablations have no shipped checkpoint"):
        check_arguments(LineageArguments(families=families))
