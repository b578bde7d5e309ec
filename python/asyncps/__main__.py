"""python -m asyncps: what this installation is, and what it runs on.

Prints the version, the MPI it was compiled against and the one it runs on, the thread level MPI
gave it, the CPU kernel level its loops run at, and where the module lives. Exits 0; a problem
(ASYNCPS_CPU_KERNELS naming a level this CPU cannot run) is one `asyncps:` line and exit 1.
"""
import os
import sys

import asyncps
from asyncps import _asyncps


def main() -> int:
    info = _asyncps._build_info()
    print(f"asyncps {info['version']}")
    print(f"  module:       {os.path.dirname(os.path.abspath(_asyncps.__file__))}")
    print(f"  MPI compiled: {info['mpi_compiled_against']} (MPI {info['mpi_standard']})")
    print(f"  MPI running:  {info['mpi_running']}")
    print(f"  thread level: {info['thread_level']}")
    try:
        level = asyncps.cpu_kernel_level()
    except asyncps.ConfigError as e:
        print(f"asyncps: {e}".replace("asyncps: asyncps: ", "asyncps: "), file=sys.stderr)
        return 1
    print(f"  cpu kernels:  {level}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
