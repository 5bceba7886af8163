"""prism: a superoptimizer for tensor programs on NVIDIA GPUs (docs/api.md, "Python").

    import prism
    b = prism.ProgramBuilder()
    x = b.input("X", "f16", [8, 4096])
    w = b.input("W", "f16", [4096, 4096])
    y = b.matmul(b.rms_norm(x, -1), w)
    b.set_name(y, "Y")
    b.output(y)
    result = prism.optimize(b.build(), gpu="off")   # cost model, no device touched
    print(result.kernels[0].grid, result.kernels[0].block)
    result.write("out/")                            # kernel.cu, launch.json, host.h, ...
    saved = prism.load_result("out/")               # the files back, JSON parsed
    assert prism.audit("out/").ok                   # re-checks the report (prism audit)

Errors raise prism.Error (a RuntimeError): str(e) is prism's message, e.code the status code
("INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "UNAVAILABLE", ...).
"""

import json as _json
import os as _os

from ._prism import (  # noqa: F401  (re-exported)
    Error,
    KernelArg,
    KernelLaunch,
    Plan,
    Program,
    ProgramBuilder,
    ProofSummary,
    Report,
    Result,
    Tensor,
    AuditResult,
    __version__,
    audit,
    check_proof,
    data_dir,
    optimize,
    optimize_parts,
    parse_program,
    workload,
    workload_names,
)


class SavedResult:
    """The files of an optimize result as written by Result.write / `prism optimize --out`.

    Attributes: directory, cuda_source (kernel.cu), host_header (host.h), launch (launch.json,
    parsed), family (family.json, parsed), report (report.json parsed, or None when the
    directory has no report).
    """

    def __init__(self, directory, cuda_source, host_header, launch, family, report):
        self.directory = directory
        self.cuda_source = cuda_source
        self.host_header = host_header
        self.launch = launch
        self.family = family
        self.report = report


def _read(directory, name, required=True):
    path = _os.path.join(directory, name)
    if not _os.path.isfile(path):
        if not required:
            return None
        raise Error(
            "cannot load a result from '%s': it has no %s (write one with Result.write(dir) "
            "or `prism optimize --out DIR`)" % (directory, name))
    with open(path, encoding="utf-8") as f:
        return f.read()


def _parse(directory, name, text):
    try:
        return _json.loads(text)
    except ValueError as e:
        raise Error("cannot load a result from '%s': %s is not JSON: %s" % (directory, name, e))


def load_result(directory):
    """Reads a result directory back (SavedResult); prism.Error names a missing or bad file."""
    if not _os.path.isdir(directory):
        raise Error("cannot load a result from '%s': no such directory" % directory)
    launch = _parse(directory, "launch.json", _read(directory, "launch.json"))
    family = _parse(directory, "family.json", _read(directory, "family.json"))
    report_text = _read(directory, "report.json", required=False)
    report = None if report_text is None else _parse(directory, "report.json", report_text)
    return SavedResult(directory, _read(directory, "kernel.cu"), _read(directory, "host.h"),
                       launch, family, report)
