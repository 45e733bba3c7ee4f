"""``import hf_lineage`` registers every family with transformers' Auto classes lazily: it imports neither torch nor
any modeling file (nor transformers' Auto modules), and a model class is imported on its first lookup
(``hf_lineage.registry``: an import hook runs the registrations when transformers' Auto modules load; the model
classes are held by name until read), and the command line's help and families table import no torch either. Each
check runs in a fresh interpreter, since a module once imported stays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest


def _run(code: str, env: dict | None = None) -> dict:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600,
                         env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_importing_the_package_imports_no_torch_and_no_modeling_file():
    out = _run("""
        import json, sys
        import hf_lineage
        loaded = sorted(m for m in sys.modules if m.startswith("hf_lineage.models.")
                        or m in ("torch", "transformers.modeling_utils", "transformers.models.auto.modeling_auto"))
        print(json.dumps({"loaded": loaded, "names": set(hf_lineage.__all__) <= set(dir(hf_lineage))}))
    """)
    assert out == {"loaded": [], "names": True}


def test_a_model_loads_through_the_auto_classes_importing_its_own_modeling_file_alone():
    out = _run("""
        import json, sys
        import hf_lineage
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer
        folder = str(hf_lineage.checkpoints.path("gpt"))
        config = AutoConfig.from_pretrained(folder)
        after_config = sorted(m for m in sys.modules if m.startswith("hf_lineage.models.modeling_lineage_"))
        model = AutoModel.from_pretrained(folder)
        lm = AutoModelForCausalLM.from_config(config)
        tokenizer = AutoTokenizer.from_pretrained(str(hf_lineage.checkpoints.path("elmo")))
        print(json.dumps({
            "config": type(config).__name__, "model": type(model).__name__, "lm": type(lm).__name__,
            "tokenizer": type(tokenizer).__name__, "auto_class": type(lm)._auto_class,
            "config_auto_class": type(config)._auto_class, "after_config": after_config,
            "modeling": sorted(m for m in sys.modules if m.startswith("hf_lineage.models.modeling_lineage_")
                               and m != "hf_lineage.models.modeling_lineage_intent_and_slots")}))
    """)
    assert out == {"config": "LineageGPTConfig", "model": "LineageGPTModel", "lm": "LineageGPTForCausalLM",
                   "tokenizer": "LineageElmoTokenizerFast", "auto_class": "AutoModelForCausalLM",
                   "config_auto_class": "AutoConfig", "after_config": [],
                   "modeling": ["hf_lineage.models.modeling_lineage_gpt", "hf_lineage.models.modeling_lineage_static",
                                "hf_lineage.models.modeling_lineage_utils"]}


def test_registration_works_whichever_is_imported_first_and_reads_like_eager_registration():
    """transformers' Auto modules imported before hf_lineage; every family's classes found in every mapping, as
    ``register_family`` registers them; the lazy entries never leak out as names."""
    out = _run("""
        import json
        import transformers
        from transformers import AutoConfig, AutoModelForMaskedLM
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING
        import hf_lineage
        from hf_lineage import registry
        missing = []
        for family in registry.FAMILIES:
            config_class, modeling = registry.family_classes(family)
            if AutoConfig.for_model(f"lineage-{family}").__class__ is not config_class:
                missing.append(("AutoConfig", family))
            for auto_name, class_name in modeling.AUTO_CLASSES.items():
                if getattr(transformers, auto_name)._model_mapping[config_class] is not getattr(modeling, class_name):
                    missing.append((auto_name, family))
            for auto_name, class_name in modeling.LINEAGE_AUTO_CLASSES.items():
                if registry.LINEAGE_AUTO_CLASSES[auto_name]._model_mapping[config_class] is not getattr(modeling,
                                                                                                      class_name):
                    missing.append((auto_name, family))
        values = MODEL_FOR_CAUSAL_LM_MAPPING.values()
        print(json.dumps({"missing": missing, "all_classes": all(isinstance(v, type) for v in values),
                          "intent": hf_lineage.AutoModelForIntentAndSlots is registry.AutoModelForIntentAndSlots}))
    """)
    assert out == {"missing": [], "all_classes": True, "intent": True}


def test_the_pipeline_and_the_names_of_the_package_still_work():
    out = _run("""
        import json, sys
        import hf_lineage
        from hf_lineage import LineageBertConfig, WordVectors
        from transformers import pipeline
        from transformers.pipelines import PIPELINE_REGISTRY
        task = PIPELINE_REGISTRY.supported_tasks["question-answering"]["impl"].__name__
        generator = pipeline("text-generation", model=str(hf_lineage.checkpoints.path("gpt")))
        text = generator("the", max_new_tokens=2, do_sample=False)[0]["generated_text"]
        print(json.dumps({"task": task, "text": isinstance(text, str), "config": LineageBertConfig.model_type,
                          "vectors": WordVectors.__name__}))
    """)
    assert out == {"task": "LineageQuestionAnsweringPipeline", "text": True, "config": "lineage-bert",
                   "vectors": "WordVectors"}


def _subcommands() -> list[list[str]]:
    """Every ``hf-lineage`` subcommand and every subcommand of one (``analyze attention``, ``checkpoints build``,
    ...), as the command line's own parser lists them (a new one is checked too). ``finetune TASK --help`` has a test
    of its own below: its options are transformers' ``TrainingArguments``, whose module imports torch, so only the
    text once made is printed without it."""
    import argparse

    from hf_lineage import cli

    def subparsers(parser):
        return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})

    commands = []
    for name, parser in subparsers(cli.build_parser()).items():
        commands += [[name], *([name, sub] for sub in subparsers(parser))]
    return commands


# What parsing arguments must not import: torch, and what stands on it or is slow to import.
HEAVY = ("torch", "transformers.modeling_utils", "transformers.configuration_utils", "datasets", "accelerate",
         "sklearn", "scipy")


@pytest.mark.parametrize("argv", [["--help"], ["families"], *([*names, "--help"] for names in _subcommands())],
                         ids=" ".join)
def test_the_command_line_help_and_the_families_table_import_no_torch(argv):
    """``hf-lineage --help``, every subcommand's ``--help`` and ``hf-lineage families`` build their parsers (and the
    table) from plain data: the task and family tables name their classes by "module:Name", and each command imports
    what it runs when it runs (the timings: docs/benchmarks.md, "Start-up")."""
    out = _run(f"""
        import contextlib, io, json, sys
        from hf_lineage import cli
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            try:
                code = cli.main({argv!r})
            except SystemExit as exit_:
                code = exit_.code
        print(json.dumps({{"code": code, "shown": shown.getvalue()[:200],
                          "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
    """)
    assert out["code"] in (0, None) and out["shown"], out
    assert out["heavy"] == [], f"hf-lineage {' '.join(argv)} imported {out['heavy']}"


def test_a_modeling_file_imported_first_still_registers_its_own_classes():
    """A family's modeling file imported before transformers' Auto model module: it imports that module before its
    own ``AUTO_CLASSES`` is defined, which sets off the registration mid-import; the registry then reads the table
    from the source, so every Auto class still has the family (BERT went missing from all of them once)."""
    out = _run("""
        import json
        import hf_lineage
        from hf_lineage.models import LineageBertForPreTraining  # before transformers' modeling_auto
        import transformers
        from hf_lineage.models.modeling_lineage_bert import AUTO_CLASSES, LineageBertConfig
        found = {name: LineageBertConfig in getattr(transformers, name)._model_mapping for name in AUTO_CLASSES}
        print(json.dumps(found))
    """)
    assert out and all(out.values()), out


def test_saving_a_model_first_registers_the_question_answering_pipeline_without_a_circular_import():
    """``save_pretrained`` imports our pipeline module before ``transformers.pipelines``: the module's own import of
    transformers' ``Pipeline`` sets off the pipeline registration while the module is half-run, which once raised
    ``ImportError: ... partially initialized module`` in every save (transformers' common tests caught it)."""
    out = _run("""
        import json, tempfile
        import hf_lineage
        from hf_lineage.models import LineageBertConfig, LineageBertForQuestionAnswering
        config = LineageBertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16, max_position_embeddings=16)
        with tempfile.TemporaryDirectory() as folder:
            LineageBertForQuestionAnswering(config).save_pretrained(folder)
        from transformers import pipelines
        impl = pipelines.PIPELINE_REGISTRY.supported_tasks["question-answering"]["impl"].__name__
        # REMOVED_TASKS is not in every supported release (5.16 has none); where it is, registering empties it
        print(json.dumps({"impl": impl, "removed": "question-answering" in getattr(pipelines, "REMOVED_TASKS", {})}))
    """)
    assert out == {"impl": "LineageQuestionAnsweringPipeline", "removed": False}


def test_a_recipes_help_is_its_parsers_own_text_and_later_calls_print_it_without_torch(tmp_path):
    """``hf-lineage finetune TASK --help``: the first call makes the text with transformers' ``HfArgumentParser`` (it
    imports torch) and keeps it under ``$HF_LINEAGE_CACHE/help``; a later call prints the same text importing none of
    the heavy libraries; the text is exactly what the real parser prints, and a terminal of another width, for which
    argparse wraps differently, is kept apart."""
    task = "generation"  # Seq2SeqTrainingArguments: the task table's arguments, not a default set
    env = {**os.environ, "HF_LINEAGE_CACHE": str(tmp_path), "COLUMNS": "100"}

    def help_run(then=""):
        return _run(f"""
            import contextlib, io, json, os, sys
            from hf_lineage import cli
            with contextlib.redirect_stdout(io.StringIO()) as shown:
                try:
                    code = cli.main(["finetune", {task!r}, "--help"])
                except SystemExit as exit_:
                    code = exit_.code
            out = {{"code": code, "shown": shown.getvalue(), "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}
            {then}
            print(json.dumps(out))
        """, env)

    first = help_run(f"""
            from transformers import HfArgumentParser
            from hf_lineage.tasks import TASKS, command_line
            out["real"] = HfArgumentParser(TASKS[{task!r}].arguments).format_help()
            out["kept"] = str(command_line.help_path({task!r}))
            os.environ["COLUMNS"] = "60"
            out["narrow"] = str(command_line.help_path({task!r}))""")
    again = help_run()
    assert first["code"] == again["code"] == 0 and "torch" in first["heavy"], first["heavy"]
    assert first["shown"] == first["real"] and "--predict_with_generate" in first["real"]  # Seq2Seq's own option
    assert again["heavy"] == [] and again["shown"] == first["shown"]
    assert [str(path) for path in (tmp_path / "help").iterdir()] == [first["kept"]] and first["narrow"] != first["kept"]
