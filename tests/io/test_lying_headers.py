"""A .npy (alone or in a .npz) whose header claims more data than the file holds."""

import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy_format

from skorg.io import ReadError, read_array


def _liar(shape=(10**6, 10**6), data=80):
    import io

    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buf.getvalue() + b"\0" * data


def test_a_208_byte_npy_claiming_a_terabyte_is_a_read_error(tmp_path):
    path = tmp_path / "liar.npy"
    path.write_bytes(_liar())
    assert path.stat().st_size == 208
    # was MemoryError: 7.28 TiB
    with pytest.raises(
        ReadError,
        match=r"liar.npy is not a valid .npy file: its header claims an array of shape "
        r"\(1000000, 1000000\) and dtype float64 \(8,000,000,000,000 bytes\) but "
        r"the file holds 80 bytes of data",
    ):
        read_array(path)


def test_the_same_inside_an_npz_and_honest_files_still_read(tmp_path):
    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X.npy", _liar((4, 5), data=8 * 19))  # one value short
    with pytest.raises(
        ReadError,
        match=r"liar.npz\['X'\] is not a valid .npy file: its header claims .* "
        r"\(160 bytes\) but the file holds 152",
    ):
        read_array(path)
    X = np.arange(20.0).reshape(4, 5)
    np.save(tmp_path / "ok.npy", X)
    np.savez(tmp_path / "ok.npz", X=X)
    assert np.array_equal(read_array(tmp_path / "ok.npy").X, X)
    assert np.array_equal(read_array(tmp_path / "ok.npz").X, X)
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    with pytest.raises(ReadError, match=r"junk\.npy is not a valid \.npy file"):
        read_array(tmp_path / "junk.npy")
