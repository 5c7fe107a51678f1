import subprocess
import sys

# a finder that refuses torch, as if it were not installed (a None entry in sys.modules would
# trip libraries that look torch up there)
BLOCK_TORCH = """
import sys


class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NoTorch())
try:
    import skorg.specialization
except ImportError as exc:
    print(exc)
"""


def test_import_without_torch_names_the_extra():
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH], capture_output=True, text=True, check=True
    )
    assert "pip install skorg[torch]" in out.stdout


def test_skorg_does_not_import_torch():
    code = "import sys, skorg; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
