"""``soak_dask.compiled`` (run by ``make`` after installing) reaches every numba kernel of the
package, so that none is left to compile in each fresh process of a run."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from numba.core.registry import CPUDispatcher

import soak_dask
from soak_dask.compiled import compile_all


def kernels() -> dict[str, CPUDispatcher]:
    """Every numba kernel defined in a module of soak_dask, by its qualified name."""
    found = {}
    for info in pkgutil.walk_packages(soak_dask.__path__, "soak_dask."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return found


def test_compile_all_compiles_every_kernel_of_the_package():
    found = kernels()
    assert len(found) >= 30, sorted(found)  # the lasso, tree, neighbour and share kernels
    assert compile_all() > 0
    sources = {name: inspect.getsource(kernel.py_func) for name, kernel in found.items()}

    def reached(name: str) -> bool:
        """Compiled for a call from Python, or called by another kernel (then compiled, and
        cached, as part of that one: its own dispatcher records no signature)."""
        short = name.rsplit(".", 1)[1] + "("
        called = any(short in text for other, text in sources.items() if other != name)
        return bool(found[name].signatures) or called

    missed = sorted(name for name in found if not reached(name))
    assert missed == [], f"add a call reaching these kernels to soak_dask.compiled: {missed}"
