"""Models of your own (`model.module`): a model written only against nxcc.nxd's documented
primitives, which nxcc has not seen (an MLP-Mixer, written here), trains on TP2 x PP2 x DP2
with sequence parallelism, ZeRO-1, recomputation and automatic or named cuts with the
losses of one rank; resumes under another layout; agrees across layouts in mixed precision;
and every mistake in the user's file, YAML or data ends in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

MIXER = '''
"""An MLP-Mixer classifier: token mixing across patches, channel mixing across features."""

from nxcc import nxd


def build(m, patches=8, features=6, channels=16, token_hidden=16, channel_hidden=32,
          layers=2, classes=4):
    b = m.b
    x = m.input("features", (patches, features), "float32")
    labels = m.input("labels", (), "int32")
    x = nxd.ColumnParallelLinear(m, "stem", features, channels, gather_output=True)(x)
    x = nxd.scatter_to_sequence_parallel_region(m, x)               # [B, P(/TP), C]
    nxd.pipeline_cut(m, "stem")
    for i in range(layers):
        with nxd.checkpoint(m, "full"):
            h = nxd.LayerNorm(m, f"mix.{i}.norm1", channels)(x)
            h = nxd.gather_from_sequence_parallel_region(m, h)       # [B, P, C], TP region
            h = b.transpose(h, permutation=(0, 2, 1))                # [B, C, P]
            t1 = nxd.ColumnParallelLinear(m, f"mix.{i}.token1", patches, token_hidden,
                                          gather_output=False)
            t2 = nxd.RowParallelLinear(m, f"mix.{i}.token2", token_hidden, patches,
                                       bias=False, input_is_parallel=True)
            y = t2.rows(nxd.gelu(m, t1.columns(h)))                   # partial [B, C, P]
            y = nxd.reduce_scatter_to_sequence_parallel_region(m, y, dim=2)
            x = b.add(x, b.transpose(y, permutation=(0, 2, 1)))
            h = nxd.LayerNorm(m, f"mix.{i}.norm2", channels)(x)
            c1 = nxd.ColumnParallelLinear(m, f"mix.{i}.channel1", channels, channel_hidden,
                                          gather_output=False, sequence_parallel_enabled=True)
            c2 = nxd.RowParallelLinear(m, f"mix.{i}.channel2", channel_hidden, channels,
                                       input_is_parallel=True, sequence_parallel_enabled=True)
            x = b.add(x, c2(nxd.gelu(m, c1(h))))
        nxd.pipeline_cut(m, f"mix.{i}")
    x = nxd.LayerNorm(m, "norm", channels)(x)
    x = nxd.gather_from_sequence_parallel_region(m, x, to_model_parallel=False)
    logits = nxd.ColumnParallelLinear(m, "head", channels, classes,
                                      gather_output=True)(nxd.mean(m, x, (1,)))
    logits = nxd.scatter_to_tensor_model_parallel_region(m, logits)  # this rank's classes
    return nxd.parallel_cross_entropy(m, logits, labels)
'''

YAML = """
name: mixer
seed: 7
trainer: {devices: 8, num_nodes: 1, max_steps: 4, log_every_n_steps: 1,
          gradient_clip_val: 1.0}
exp_manager:
  exp_dir: null
  resume_if_exists: false
  create_checkpoint_callback: true
  checkpoint_callback_params: {every_n_train_steps: 2}
distributed_strategy: {tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2,
                       zero1: true, sequence_parallel: true}
data: {micro_batch_size: 2, global_batch_size: 8, train_dir: data}
model:
  module: mixer.py:build
  module_args: {layers: 2, classes: 4}
  activations_checkpoint_granularity: full
  optim:
    name: adamw
    lr: 0.01
    weight_decay: 0.01
    betas: [0.9, 0.999]
    sched: {name: LinearAnnealingWithWarmUp, warmup_steps: 1, max_steps: 4}
precision: {type: fp32}
"""

ONE_RANK = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1",
            "distributed_strategy.pipeline_model_parallel_size=1")


@pytest.fixture(scope="module")
def mixer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the model, its YAML and its data (the class: which third of the
    features is largest on average, plus noise)."""
    folder = tmp_path_factory.mktemp("mixer")
    (folder / "mixer.py").write_text(MIXER)
    (folder / "mixer.yaml").write_text(YAML)
    rng = np.random.default_rng(0)
    features = rng.normal(0, 1, (32, 8, 6)).astype(np.float32)
    labels = (features.mean(axis=1)[:, :4].argmax(axis=1)).astype(np.int32)
    (folder / "data").mkdir()
    np.save(folder / "data" / "features.npy", features)
    np.save(folder / "data" / "labels.npy", labels)
    return folder


def _train(folder: Path, exp: Path, *overrides: str) -> dict:
    config = load_config(str(folder / "mixer.yaml"), (f"exp_manager.exp_dir={exp}",
                                                      *overrides))
    return run_training(config, lambda _: None)


@pytest.fixture(scope="module")
def one_rank(mixer: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _train(mixer, tmp_path_factory.mktemp("one"), *ONE_RANK)


def test_tp2_pp2_dp2_with_sp_zero1_recompute_keeps_the_one_rank_curve(
        mixer: Path, one_rank: dict, tmp_path: Path) -> None:
    run = _train(mixer, tmp_path)
    assert run["tp"] == 2 and run["pp"] == 2 and run["dp"] == 2
    assert len(run["pipeline_cut_pieces"]) == 1 and len(run["stage_flops"]) == 2
    assert one_rank["losses"][-1] < one_rank["losses"][0]
    np.testing.assert_allclose(run["losses"], one_rank["losses"], rtol=1e-5)


@pytest.mark.usefixtures("any_even_ranks")  # TP2 x PP3: 6 ranks
def test_named_cuts_and_three_stages(mixer: Path, one_rank: dict, tmp_path: Path) -> None:
    run = _train(mixer, tmp_path, "trainer.devices=6",
                 "distributed_strategy.pipeline_model_parallel_size=3",
                 "distributed_strategy.tensor_model_parallel_size=2",
                 "+model.pipeline_cuts=[stem,mix.0]",
                 "model.activations_checkpoint_granularity=selective")
    assert run["pipeline_cut_pieces"] == [1, 2]
    np.testing.assert_allclose(run["losses"], one_rank["losses"], rtol=1e-5)


def test_resume_under_another_layout(mixer: Path, one_rank: dict, tmp_path: Path) -> None:
    _train(mixer, tmp_path, "trainer.max_steps=2")
    rest = _train(mixer, tmp_path, *ONE_RANK, "exp_manager.resume_if_exists=true")
    assert rest["first_step"] == 3
    np.testing.assert_allclose(rest["losses"], one_rank["losses"][2:], rtol=1e-5)


def test_layouts_agree_in_mixed_precision(mixer: Path, tmp_path: Path) -> None:
    one = _train(mixer, tmp_path / "one", *ONE_RANK, "precision.type=mixed_precision")
    eight = _train(mixer, tmp_path / "eight", "precision.type=mixed_precision")
    np.testing.assert_allclose(eight["losses"], one["losses"], rtol=2e-4)
    sr = _train(mixer, tmp_path / "sr", "precision.type=bf16SR")
    assert all(np.isfinite(sr["losses"]))


def test_dry_run_names_the_stages_and_groups(mixer: Path) -> None:
    r = neuronx_cc("train", str(mixer / "mixer.yaml"), "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("pipeline stages (balanced by FLOPs): stem..") for line in lines)
    assert "TP groups: [0,1] [2,3] [4,5] [6,7]" in lines
    assert "PP groups: [0,4] [1,5] [2,6] [3,7]" in lines
    assert any("mixer.py:build(layers=2, classes=4); inputs features f32[8,6], labels s32[]"
               in line for line in lines)


@pytest.mark.parametrize(("edit", "overrides", "fragments"), [
    (None, ("model.module=mixer.py:nope",), ("model.module", "no function 'nope'")),
    (None, ("model.module=missing.py:build",), ("model.module", "no such file")),
    (None, ("model.module=mixer.py",), ("is not FILE.py:FUNCTION",)),
    (None, ("+model.hidden_size=64",), ("model.hidden_size", "key of the built-in decoder")),
    (None, ("+model.module_args.heads=4",), ("TypeError", "unexpected keyword argument")),
    (None, ("+model.pipeline_cuts=[mix.9]",), ("'mix.9' is not a cut point", "stem, mix.0")),
    ("raise", (), ("mixer.py line 10: ValueError: bad size",)),
    ("syntax", (), ("mixer.py line", "SyntaxError")),
    ("labels", (), ("labels.npy holds id 7, outside [0, 4)",)),
    ("shape", (), ("features.npy has shape [32, 8, 5]", "takes [N, 8, 6]")),
])
def test_mistakes_end_in_one_line(mixer: Path, tmp_path: Path, edit: str | None,
                                  overrides: tuple, fragments: tuple) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    source = MIXER
    if edit == "raise":
        source = source.replace('    b = m.b\n', '    b = m.b\n    raise ValueError("bad size")\n')
    elif edit == "syntax":
        source = source.replace("def build(", "def build((")
    (folder / "mixer.py").write_text(source)
    (folder / "mixer.yaml").write_text(YAML)
    (folder / "data").mkdir()
    features = np.load(mixer / "data" / "features.npy")
    labels = np.load(mixer / "data" / "labels.npy")
    if edit == "labels":
        labels = labels.copy()
        labels[3] = 7
    if edit == "shape":
        features = features[:, :, :5]
    np.save(folder / "data" / "features.npy", features)
    np.save(folder / "data" / "labels.npy", labels)
    r = neuronx_cc("train", str(folder / "mixer.yaml"), "--dry-run", *overrides)
    assert_one_line_error(r, *fragments)
    assert r.returncode == 2



TOKEN_LM = '''
from nxcc import nxd


def build(m, seq=16, vocab=256, hidden=32):
    tokens = m.input("tokens", (seq,), "int32")
    labels = m.input("labels", (seq,), "int32")
    x = nxd.ParallelEmbedding(m, "embed", vocab, hidden, sequence_parallel_enabled=True)(tokens)
    nxd.pipeline_cut(m, "embed")
    h = nxd.RMSNorm(m, "norm", hidden)(x)
    up = nxd.ColumnParallelLinear(m, "up", hidden, 4 * hidden, gather_output=False,
                                  sequence_parallel_enabled=True)
    down = nxd.RowParallelLinear(m, "down", 4 * hidden, hidden, input_is_parallel=True,
                                 sequence_parallel_enabled=True)
    x = m.b.add(x, down(nxd.silu(m, up(h))))
    head = nxd.ColumnParallelLinear(m, "head", hidden, vocab, bias=False, gather_output=False,
                                    sequence_parallel_enabled=True)
    return nxd.parallel_cross_entropy(m, head(x), labels)
'''


@pytest.mark.parametrize("vocab", [256, 64])
def test_a_token_model_reads_the_token_data(tmp_path: Path, vocab: int) -> None:
    """A model whose inputs are `tokens` and `labels` trains on the decoder's token data
    (the example corpus), its ids checked against its embedding."""
    (tmp_path / "lm.py").write_text(TOKEN_LM)
    corpus = REPO / "examples" / "train" / "data"
    yaml = YAML.replace("mixer.py:build", "lm.py:build").replace(
        "module_args: {layers: 2, classes: 4}", f"module_args: {{vocab: {vocab}}}").replace(
        "train_dir: data}", f"train_dir: {corpus}, seq_length: 16}}")
    (tmp_path / "lm.yaml").write_text(yaml)
    common = (f"exp_manager.exp_dir={tmp_path / 'exp'}", "trainer.max_steps=2")
    if vocab == 64:  # the corpus holds letters, ids beyond 64
        r = neuronx_cc("train", str(tmp_path / "lm.yaml"), "--dry-run", *common)
        assert_one_line_error(r, "outside [0, 64)")
        return
    one = run_training(load_config(str(tmp_path / "lm.yaml"), (*common, *ONE_RANK)),
                       lambda _: None)
    eight = run_training(load_config(str(tmp_path / "lm.yaml"), (
        f"exp_manager.exp_dir={tmp_path / 'eight'}", "trainer.max_steps=2")), lambda _: None)
    np.testing.assert_allclose(eight["losses"], one["losses"], rtol=1e-5)
