"""The tests' C builds: one compiler process per source, as many at once as there are cores
(aapcgen.codegen.compile, the way ``aapcgen build`` compiles), then one link. A generated folder
holds up to a hundred sources; one ``mpicc`` over all of them ran on one core of CI's two."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from aapcgen.codegen.compile import compile_objects

LINK_ONLY = ("-l", "-L", "-Wl,", "-shared", "-rdynamic")


def split(cmd: list[str]) -> tuple[str, list[str], list[str], list[str], str]:
    """A one-step compile-and-link command as (compiler, flags, sources, link inputs, output)."""
    compiler, rest = cmd[0], cmd[1:]
    flags: list[str] = []
    sources: list[str] = []
    inputs: list[str] = []
    output = ""
    args = iter(rest)
    for arg in args:
        if arg == "-o":
            output = next(args)
        elif arg.endswith(".c") and not arg.startswith("-"):
            sources.append(arg)
        elif arg.startswith("-"):
            (inputs if arg.startswith(LINK_ONLY) else flags).append(arg)
        else:
            inputs.append(arg)  # objects, archives, libraries
    if not output:
        raise ValueError(f"no -o in {cmd}")
    return compiler, flags, sources, inputs, output


def cc(cmd: list[str], timeout: float = 300) -> None:
    """Run ``cmd`` (``mpicc flags... sources... -o exe``) as parallel compiles and one link;
    a failed step raises BuildFailed with the compiler's output."""
    compiler, flags, sources, inputs, output = split(cmd)
    objdir = Path(output).with_name(Path(output).name + ".objs")
    objects, failed = compile_objects(compiler, flags, sources, objdir, timeout=timeout)
    if failed is not None:
        raise BuildFailed(failed.cmd, failed.proc)
    link = [compiler, *flags, *map(str, objects), *inputs, "-o", output]
    proc = subprocess.run(link, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise BuildFailed(link, proc)


class BuildFailed(AssertionError):
    """A compile or link of a test's C build failed: the command and the compiler's words."""

    def __init__(self, cmd: list[str], proc: subprocess.CompletedProcess[str]) -> None:
        said = (proc.stdout + proc.stderr)[-4000:]
        super().__init__(f"$ {shlex.join(cmd)}\n{said}")
