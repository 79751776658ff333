"""The compiler refuses a program whose peak HBM exceeds its core's, in one line naming the
estimate and the limit, and writes nothing; otherwise each subgraph carries its estimate,
which `inspect-neff` shows."""

from __future__ import annotations

import json
from pathlib import Path

from nxcc.backend.neff import read_neff
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

MLP = REPO / "examples" / "mlp.onnx"


def _compile(tmp_path: Path, name: str, *flags: str, limit: str | None = None):
    env = {"NXCC_HBM_LIMIT": limit} if limit is not None else {}
    out = tmp_path / name
    return neuronx_cc("compile", str(MLP), "--output", str(out), *flags, env=env,
                      cwd=tmp_path), out


def test_the_estimate_is_in_the_neff_and_inspect_shows_it(tmp_path: Path) -> None:
    result, out = _compile(tmp_path, "mlp.neff", "--target", "trn1")
    assert result.returncode == 0, result.stderr
    (sg,) = read_neff(str(out)).manifest["subgraphs"]
    peak = sg["estimate"]["peak_hbm_bytes"]
    assert peak["weights"] == 4000 and peak["inputs"] > 0 and peak["arena"] > 0
    assert peak["total"] == sum(v for k, v in peak.items() if k != "total")
    assert sg["estimate"]["hbm_limit_bytes"] == 16 * 2**30
    assert sg["estimate"]["device_seconds"] > 0
    shown = neuronx_cc("inspect-neff", str(out), cwd=tmp_path)
    assert "estimate on trn1: peak HBM" in shown.stdout and "device time" in shown.stdout
    as_json = json.loads(neuronx_cc("inspect-neff", str(out), "--json", cwd=tmp_path).stdout)
    assert as_json["subgraphs"][0]["estimate"] == sg["estimate"]


def test_over_the_limit_is_refused_and_nothing_written(tmp_path: Path) -> None:
    result, out = _compile(tmp_path, "mlp.neff", "--target", "trn1", limit="4K")
    line = assert_one_line_error(result, "[NCC_EOOM001] Estimated peak HBM usage (",
                                 "exceeds 4096 bytes", "Neff won't be able to load on chip",
                                 "weights 3.91 KiB")
    assert line.startswith("ERROR: ") and result.returncode == 1
    assert not out.exists() and not list(tmp_path.glob("*.neff"))


def test_a_logical_core_sums_its_physical_cores(tmp_path: Path) -> None:
    result, out = _compile(tmp_path, "two.neff", "--target", "trn2", "-lnc", "2")
    assert result.returncode == 0, result.stderr
    peaks = [sg["estimate"]["peak_hbm_bytes"]["total"]
             for sg in read_neff(str(out)).manifest["subgraphs"]]
    assert len(peaks) == 2
    between = max(peaks) + 64
    assert between < sum(peaks)
    refused, again = _compile(tmp_path, "two_again.neff", "--target", "trn2", "-lnc", "2",
                              limit=str(between))
    assert_one_line_error(refused, "NCC_EOOM001", f"exceeds {between} bytes")
    assert not again.exists()


def test_a_bad_limit_is_a_bad_argument(tmp_path: Path) -> None:
    result, out = _compile(tmp_path, "mlp.neff", "--target", "trn1", limit="lots")
    assert_one_line_error(result, "NCC_EARG001", "NXCC_HBM_LIMIT='lots'")
    assert result.returncode == 2 and not out.exists()
