"""The README's DBF sweep numbers are the ones `benchmarks/dbf_sweep.py` prints from the runs'
logs in benchmarks/data (a number typed by hand, or a log replaced, fails here)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_sweep():
    spec = importlib.util.spec_from_file_location("dbf_sweep", ROOT / "benchmarks" / "dbf_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section() -> str:
    text = (ROOT / "README.md").read_text()
    a = text.index("### Training DBF: what a short sweep")
    return text[a:text.index("### ", a + 4)]


def test_the_readme_sweep_numbers_come_from_the_logs():
    sweep = load_sweep()
    readme = section()
    short = {n: sweep.summary(n, r) for n, r in sweep.read_archive(sweep.DEFAULT[0]).items()}
    long = {n: sweep.summary(n, r) for n, r in sweep.read_archive(sweep.DEFAULT[1]).items()}
    assert len(short) == 15 and len(long) == 13
    # the paired table and the entropy sentence: updates 11-20
    for name in ("v01base", "v02lr1e-4", "v03ent.001", "v04ent0", "v05lr1e-4ent.001", "v09ent.003",
                 "v10ent.001mb512", "v12lr3e-5ent.001", "v13ent.001s1", "v14lr1e-4ent.001s1",
                 "v15base-s1"):
        assert f"{short[name]['awt_11_20']:,.0f}" in readme, name
    # a KL stop at 0.01 that never triggered: its run is the entropy-0.001 run exactly
    assert short["v07ent.001kl.01"]["awt_11_20"] == short["v03ent.001"]["awt_11_20"]
    # updates 41-50 of the three seeds of each window
    for prefix in ("m32lr1e-4", "m64lr1e-4", "m128lr1e-4", "m32lr3e-5"):
        line = ", ".join(f"{long[f'{prefix}s{k}']['awt_41_50']:,.0f}" for k in range(3))
        assert line in readme.replace("\n", " "), prefix
    vals = sorted(v for n, s in long.items() if not n.startswith("m10t1")
                  for v in [s["val_min"]])
    assert f"{vals[0]:,.0f} s" in readme and f"{vals[1]:,.0f} s" in readme
    m10 = long["m10t1lr1e-4s0"]
    assert f"{m10['val_min']:,.0f}-{m10['val_max']:,.0f} s" in readme


def test_the_readme_mask_runs_come_from_their_logs():
    """The two CPU runs (`--validate-masked`, `--mask`): their validations, in order, and the
    sampled AWT over updates 11-20, as the script prints them."""
    sweep = load_sweep()
    readme = section().replace("\n  ", " ").replace("\n", " ")
    runs = {n: sweep.summary(n, r) for n, r in
            sweep.read_archive(sweep.HERE / "data" / "dbf_cpu_mask_runs.tar.gz").items()}
    assert set(runs) == {"m64-vmask", "m64-mask"}
    vmask, mask = runs["m64-vmask"], runs["m64-mask"]
    assert vmask["changed"]["validate_masked"] is True and mask["changed"]["mask"] is True
    assert (vmask["updates"], mask["updates"]) == (74, 77)
    v = [f"{x:,.0f}" for x in vmask["val_all"]]
    assert ", ".join(v[:4]) + ", **" + v[4] + "** (update 25), " + ", ".join(v[5:12]) in readme
    assert f"then {v[12]} and {v[13]} s at updates 65 and 70" in readme
    assert vmask["val_min"] == vmask["val_all"][4]
    m = sorted(mask["val_all"])
    assert f"stayed at {m[0]:,.0f}-{m[-3]:,.0f} s apart from two stalls ({m[-2]:,.0f} and " \
           f"{m[-1]:,.0f} s" in readme
    assert f"{mask['awt_11_20']:,.0f} s against {vmask['awt_11_20']:,.0f} s" in readme
