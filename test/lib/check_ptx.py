#!/usr/bin/env python3
"""Assembles the PTX that `tessel-compile --emit ptx` printed with ptxas,
one module per architecture ("// ---- sm_NN" starts each), with warnings
as errors and spills reported (-Werror -warn-spills): a kernel that spills
registers to local memory fails. Prints one line per architecture:
`sm_80: 57 kernels accepted by ptxas`."""

import argparse
import os
import re
import subprocess
import sys
import tempfile


def main():
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("ptx")
    arguments.add_argument("--ptxas", required=True)
    args = arguments.parse_args()
    with open(args.ptx) as stream:
        text = stream.read()
    modules = re.split(r"^// ---- (sm_\d+)\n", text, flags=re.MULTILINE)[1:]
    if not modules:
        sys.exit("%s: no '// ---- sm_NN' module" % args.ptx)
    status = 0
    with tempfile.TemporaryDirectory() as work:
        for architecture, module in zip(modules[0::2], modules[1::2]):
            source = os.path.join(work, architecture + ".ptx")
            with open(source, "w") as stream:
                stream.write(module)
            process = subprocess.run(
                [args.ptxas, "-arch=" + architecture, "-Werror", "-warn-spills",
                 source, "-o", os.path.join(work, architecture + ".cubin")],
                capture_output=True, text=True)
            kernels = len(re.findall(r"^\.visible \.entry ", module, flags=re.MULTILINE))
            if process.returncode != 0:
                print("%s: ptxas refused the module:\n%s" % (architecture,
                                                             process.stdout + process.stderr))
                status = 1
            else:
                print("%s: %d kernels accepted by ptxas" % (architecture, kernels))
    sys.exit(status)


if __name__ == "__main__":
    main()
