"""Damaged or inconsistent model files are refused in one line naming the file and what is wrong,
by every loader (`rl:`, `inspect:`, `deeprm:`, `dras:` policies and `--resume`), before anything is
built or run from them; the shipped models pass every check and decide as before."""

from __future__ import annotations

import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hpcsched.modelfile import ModelFileError, load_checkpoint
from hpcsched.agents.rlscheduler_policy import load_policy
from hpcsched.cli import main
from hpcsched.experiments.policyspec import PRETRAINED

SHIPPED = {  # kind -> (a shipped model, a config change its weights cannot fit)
    "rl": ("lublin-1-bsld", lambda ck: ck["config"].update(fairness=True)),  # 9 features, not 8
    "inspect": ("inspect-lublin-1-sjf", lambda ck: ck["config"].update(features="paper")),
    "deeprm": ("deeprm-load-70", lambda ck: ck["config"].update(hidden=21)),
    "dras": ("dras-pg-hpc2n-capacity",
             lambda ck: ck["learner_config"].update(fc1=ck["learner_config"]["fc1"] + 1)),
}
SWF = ("; MaxNodes: 4\n; MaxProcs: 4\n"
       "1 0 -1 10 3 -1 -1 3 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
       "2 1 -1 10 3 -1 -1 3 20 -1 1 1 1 -1 -1 -1 -1 -1\n")


def data_offset(path: Path, member: str) -> tuple[int, int]:
    """(first byte, size) of a stored member's data in the zip file (its local header read)."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith(member))
    h = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[h + 26:h + 30])
    return h + 30 + name_len + extra_len, info.file_size


def flipped(src: Path, dest: Path, pattern: bytes | None = None) -> Path:
    """A copy of `src` with bytes of its first tensor record changed in place (one byte inverted,
    or `pattern` written over): the zip still opens and torch still reads it."""
    start, size = data_offset(src, "data/0")
    data = bytearray(src.read_bytes())
    at = start + size // 2 // 4 * 4
    if pattern is None:
        data[at] ^= 0xFF
    else:
        data[at:at + len(pattern)] = pattern
    dest.write_bytes(bytes(data))
    return dest


def rewritten(src: Path, dest: Path, change) -> Path:
    """A sound checkpoint (a valid zip, checksums right) with `change(ck)` applied."""
    ck = torch.load(src, map_location="cpu", weights_only=True)
    change(ck)
    torch.save(ck, dest)
    return dest


def first_weight_nan(ck) -> None:
    weights = next(iter(ck["weights"].values()))
    name = next(iter(weights))
    weights[name] = weights[name].clone()
    weights[name].view(-1)[0] = float("nan")


DAMAGES = {  # name -> (make the file, what the one line must say)
    "flipped byte": (lambda src, dest: flipped(src, dest), "fails its zip checksum"),
    "NaN bytes": (lambda src, dest: flipped(src, dest, struct.pack("<f", float("nan"))),
                  "fails its zip checksum"),
    "NaN weight": (lambda src, dest: rewritten(src, dest, first_weight_nan),
                   "holds NaN or infinite values"),
    "inf weight": (lambda src, dest: rewritten(src, dest, lambda ck: (
        first_weight_nan(ck), _nan_to_inf(ck))), "holds NaN or infinite values"),
    "truncated": (lambda src, dest: dest.write_bytes(src.read_bytes()[:src.stat().st_size * 6
                                                                        // 10]) and dest,
                  "is not an hpcsched model checkpoint (unreadable"),
    "not a model": (lambda src, dest: dest.write_text("hello, I am a text file\n") and dest,
                    "is not an hpcsched model checkpoint (unreadable"),
}


def _nan_to_inf(ck) -> None:
    weights = next(iter(ck["weights"].values()))
    w = weights[next(iter(weights))]
    w.view(-1)[0] = float("-inf")


def damaged(tmp_path: Path, kind: str, damage: str) -> Path:
    src = PRETRAINED / f"{SHIPPED[kind][0]}.pt"
    dest = tmp_path / f"{kind}-{damage.replace(' ', '-')}.pt"
    if damage == "config":
        return rewritten(src, dest, SHIPPED[kind][1])
    return DAMAGES[damage][0](src, dest)


def load(kind: str, path: Path):
    """The `kind:` policy loader's view of `path`."""
    if kind == "rl":
        return load_policy(path)
    if kind == "inspect":
        from hpcsched.agents.inspector_policy import load_inspector

        return load_inspector(path)
    if kind == "deeprm":
        from hpcsched.agents.deeprm_policy import load_deeprm_policy

        return load_deeprm_policy(path)
    from hpcsched.experiments.dras_training import load_agent

    return load_agent(path)


def simulate_argv(kind: str, path: Path, swf: Path) -> list[str]:
    profile = {"rl": ["--profile", "rlscheduler"], "inspect": [],
               "deeprm": ["--profile", "deeprm"], "dras": ["--profile", "dras", "--backfill",
                                                           "easy"]}[kind]
    return ["simulate", str(swf), *profile, "--policy", f"{kind}:{path}", "--jobs", "2"]


def one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hpcsched: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_every_shipped_model_passes_the_checks_and_the_damage_is_real(tmp_path):
    """The checks refuse nothing sound: every shipped model loads (checksums right, every tensor
    finite). And the damaged copies are damaged where torch does not look: the flipped-byte copy
    loads in torch as it is, with a weight changed."""
    for path in sorted(PRETRAINED.glob("*.pt")):
        load_checkpoint(path)
    src = PRETRAINED / "lublin-1-bsld.pt"
    bad = flipped(src, tmp_path / "flipped.pt")
    a = torch.load(src, weights_only=True)["weights"]["policy"]
    b = torch.load(bad, weights_only=True)["weights"]["policy"]  # torch itself does not notice
    assert any(not torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("kind", sorted(SHIPPED))
@pytest.mark.parametrize("damage", [*DAMAGES, "config"])
def test_a_damaged_or_inconsistent_model_is_refused_naming_the_file(tmp_path, kind, damage):
    path = damaged(tmp_path, kind, damage)
    expected = DAMAGES[damage][1] if damage != "config" else "weights do not match its config"
    with pytest.raises(ModelFileError) as info:
        load(kind, path)
    message = str(info.value)
    assert str(path) in message and expected in message and "\n" not in message


@pytest.mark.parametrize("kind", sorted(SHIPPED))
@pytest.mark.parametrize("damage", ["flipped byte", "NaN weight", "truncated", "config"])
def test_the_cli_refuses_a_damaged_policy_in_one_line(tmp_path, capsys, kind, damage):
    swf = tmp_path / "small.swf"
    swf.write_text(SWF)
    path = damaged(tmp_path, kind, damage)
    line = one_line_error(capsys, main(simulate_argv(kind, path, swf)))
    expected = DAMAGES[damage][1] if damage != "config" else "weights do not match its config"
    assert str(path) in line and expected in line


def test_a_sound_copy_of_a_shipped_model_loads_and_decides_as_the_original(tmp_path):
    """The checks change nothing for a sound file: a byte-identical copy gives the same picks."""
    from hpcsched.sim.run import prepare, simulate

    copy = tmp_path / "copy.pt"
    shutil.copy(PRETRAINED / "lublin-1-bsld.pt", copy)
    prepared = prepare("lublin-1", "rlscheduler")
    a = simulate(prepared, load_policy(PRETRAINED / "lublin-1-bsld.pt"), start=0, jobs=128)
    b = simulate(prepared, load_policy(copy), start=0, jobs=128)
    assert np.array_equal(a.start, b.start)


def test_a_config_that_cannot_be_built_is_refused_in_one_line(tmp_path):
    path = rewritten(PRETRAINED / "lublin-1-bsld.pt", tmp_path / "odd.pt",
                     lambda ck: ck["config"].update(policy="no-such-net"))
    with pytest.raises(ModelFileError, match="its config is not valid") as info:
        load_policy(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_deeprm_models_folder_with_a_damaged_model_is_refused(tmp_path):
    """The load sweep's model finder reads every deeprm-*.pt of --models: a damaged one is an
    error, not a model silently passed over; another learner's model is passed over."""
    from hpcsched.experiments.deeprm import model_loads

    shutil.copy(PRETRAINED / "deeprm-load-70.pt", tmp_path / "deeprm-load-70.pt")
    (tmp_path / "rl").mkdir()
    shutil.copy(PRETRAINED / "lublin-1-bsld.pt", tmp_path / "rl" / "best.pt")
    assert model_loads(tmp_path) == {0.7: tmp_path / "deeprm-load-70.pt"}
    flipped(PRETRAINED / "deeprm-load-110.pt", tmp_path / "deeprm-load-110.pt")
    with pytest.raises(ModelFileError, match="deeprm-load-110.pt is damaged"):
        model_loads(tmp_path)
