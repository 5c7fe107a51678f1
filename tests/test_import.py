import subprocess
import sys


def test_import_skorg_pulls_no_optional_heavy_dependency():
    code = (
        "import sys, skorg\n"
        "heavy = [m for m in ('torch', 'transformers', 'matplotlib') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_public_names_are_exported():
    import skorg

    for name in skorg.__all__:
        assert hasattr(skorg, name), name
    for sub in (skorg.trees, skorg.metrics, skorg.organize, skorg.transforms, skorg.datasets):
        for name in sub.__all__:
            assert hasattr(sub, name), (sub.__name__, name)


def test_cli_demo_runs_and_bad_input_exits_2():
    ok = subprocess.run(
        [sys.executable, "-m", "skorg", "demo", "--synthetic", "--size", "24", "--n-iter", "1"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "questionnaire, ordering=emd_olo" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "skorg", "demo", "--synthetic", "--size", "2"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "must be at least 4" in bad.stderr
    assert "Traceback" not in bad.stderr
