"""An unknown flag is refused in one line that names the nearest flag of the command and the
command's own help, before any table is read."""

from __future__ import annotations

from soak_dask.app.cli import USAGE_ERROR, main


def test_an_unknown_flag_names_the_nearest_flag_of_its_command(capsys, tmp_path):
    missing = tmp_path / "not_read.csv"  # refused before the table would be opened
    argv = ["split-sensitivity", str(missing), "--label", "y", "--repeats", "3"]
    assert main(argv) == USAGE_ERROR
    assert capsys.readouterr().err == (
        "soak: error: unrecognized arguments: --repeats 3 (did you mean --n-repeats?) "
        "(see 'soak split-sensitivity --help')\n"
    )
    assert main(["info", str(missing), "--label", "y", "--zzz", "3"]) == USAGE_ERROR
    assert capsys.readouterr().err == (
        "soak: error: unrecognized arguments: --zzz 3 (see 'soak info --help')\n"
    )  # nothing near: no suggestion
    assert main(["run", str(missing), "--label", "y", "--fold-colunm", "k"]) == USAGE_ERROR
    assert "(did you mean --fold-column?)" in capsys.readouterr().err
